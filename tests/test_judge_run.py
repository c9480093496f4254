"""Judge criteria through `evalgate run`: the real runtime and google-genai client, a fake Gemini."""

from __future__ import annotations

import json
import re

import pytest

from fake_gemini import clear_judge_env, fake_gemini, prompt_text  # noqa: F401  (fixture)
from test_inputs import CASES, make_project

CONFIG = """suites:
  - name: home
    evalsets: [evals/*.evalset.json]
    actual: runs/out.jsonl
    criteria:
      response_match_score: 0.5
      final_response_match_v2: {threshold: 0.5, judge_model_options: {num_samples: 3}}
judge: {concurrency: 2}
"""


def _valid_unless_korean(body):
    # The Korean case's response is judged invalid, the English one valid.
    return {"reasoning": "checked", "verdict": "invalid" if re.search("[가-힣]", prompt_text(body)) else "valid"}


def _results(root):
    return json.loads((root / "out" / "results.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("sampling", ["early_stop", "no_confirm", "full"])
def test_judge_suite_scores_caches_and_reports_usage(cli, fake_gemini, monkeypatch, tmp_path, sampling):  # noqa: F811
    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = _valid_unless_korean
    early_stop = sampling != "full"
    config = {"early_stop": CONFIG, "no_confirm": CONFIG + "gate: {confirm: {runs: 0}}\n",
              "full": CONFIG.replace("judge: {concurrency: 2}", "judge: {concurrency: 2, early_stop: false}")}[sampling]
    root = make_project(tmp_path, config=config)
    code, out, err = cli("run", "--out", "out", "--no-color", cwd=root)
    assert code == 1, out + err  # the Korean case fails the judge
    suite = _results(root)["suites"][0]
    by_id = {c["eval_id"]: c["criteria"]["final_response_match_v2"] for c in suite["cases"]}
    assert by_id["lights-en"]["score"] == 1.0 and by_id["난방-ko"]["score"] == 0.0
    spec = suite["criteria"]["final_response_match_v2"]
    # 3 samples: with early stopping (the default) 2 valid samples decide, the third is not
    # asked; 2 invalid ones decide too while gate.confirm re-runs suspects (the default), and
    # without confirmation runs samples that all fail are drawn to the end (the gate then
    # reads "every sample failed" from one run).
    drawn = 2 if early_stop else 3
    failing = 2 if sampling == "early_stop" else 3
    assert by_id["lights-en"]["per_invocation"][0]["details"]["samples"] == [1.0] * drawn
    assert by_id["난방-ko"]["per_invocation"][0]["details"]["samples"] == [0.0] * failing
    assert spec.get("sampling") == ("early_stop" if early_stop else None)  # absent with full sampling
    assert spec["stats"]["requests"] == drawn + failing
    assert len(fake_gemini.requests) == drawn + failing and fake_gemini.max_in_flight <= 2

    # An unchanged rerun: zero requests, every verdict from the cache, the same results.
    fake_gemini.reset()
    code, _, _ = cli("run", "--out", "out2", "--quiet", cwd=root)
    assert code == 1 and fake_gemini.requests == []
    again = json.loads((root / "out2" / "results.json").read_text(encoding="utf-8"))
    # The same results; each case now says how many of its verdicts came from the cache.
    assert [c.pop("judge_cache_hits") for c in again["suites"][0]["cases"]] == [drawn, failing]
    assert again["suites"][0]["cases"] == suite["cases"]
    assert again["suites"][0]["criteria"]["final_response_match_v2"]["stats"]["cache_hits"] == drawn + failing

    # --no-cache asks again.
    code, _, _ = cli("run", "--out", "out3", "--quiet", "--no-cache", cwd=root)
    assert len(fake_gemini.requests) == drawn + failing


def test_no_credentials_is_not_evaluated_with_one_warning(cli, fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    clear_judge_env(monkeypatch, tmp_path)
    root = make_project(tmp_path, config=CONFIG)
    code, out, err = cli("run", "--out", "out", "--no-color", cwd=root)
    assert (out + err).count("warning: judge criteria: no judge credentials") == 1, out + err  # one clear warning
    suite = _results(root)["suites"][0]
    for case in suite["cases"]:
        judged = case["criteria"]["final_response_match_v2"]
        assert judged["status"] == "NOT_EVALUATED" and "no judge credentials" in judged["error"]
        assert case["criteria"]["response_match_score"]["status"] == "PASSED"  # deterministic criteria still run
    assert any("no judge credentials" in w for w in suite["warnings"])
    assert code == 0  # NOT_EVALUATED under the default `warn` policy: never a pass of the judge, never a crash
    assert fake_gemini.requests == []
    # The status lines count the cases the judge never saw (they used to end "0 not evaluated)").
    incomplete = "2 passed, 0 failed, 0 not evaluated; 2 incomplete, with a criterion not evaluated)"
    assert f"overall: PASSED (2 cases in 1 suite: {incomplete}" in out
    code, out, _ = cli("run", "--out", "out-quiet", "--quiet", cwd=root)
    assert out.strip() == f"evalgate: PASSED ({incomplete}"


def test_not_evaluated_fail_policy_is_not_hidden_by_a_passing_criterion(cli, fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    """response_match passes, the judge is never heard: under `not_evaluated: fail` the suite fails."""
    clear_judge_env(monkeypatch, tmp_path)
    root = make_project(tmp_path, config=CONFIG.replace("    criteria:", "    not_evaluated: fail\n    criteria:"))
    code, out, err = cli("run", "--out", "out", "--no-color", cwd=root)
    assert code == 1, out + err
    suite = _results(root)["suites"][0]
    assert suite["status"] == "FAILED" and suite["counts"]["incomplete"] == 2 and suite["counts"]["passed"] == 2


def test_case_rubrics_reach_the_judge_for_scenario_cases(cli, fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    """ADK copies case rubrics onto the invocations judged: for a scenario case, the actual ones."""
    fake_gemini.use_gemini_api(monkeypatch)
    seen = []

    def answer(body):
        seen.append(prompt_text(body))
        ids = body["generationConfig"]["responseJsonSchema"]["properties"]["verdicts"]["items"]["properties"]["rubric_id"]["enum"]
        return {"verdicts": [{"rubric_id": i, "verdict": "yes", "rationale": "ok"} for i in ids]}

    fake_gemini.responder = answer
    case = {
        "eval_id": "scenario",
        "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "ask about heating"},
        "rubrics": [{"rubric_id": "no_pii", "type": "FINAL_RESPONSE_QUALITY", "rubric_content": {"text_property": "No personal data is revealed."}}],
    }
    lines = [{"eval_set_id": "home", "eval_id": "scenario", "invocations": CASES["lights-en"]}]
    config = (
        "suites:\n  - name: s\n    evalsets: [evals/*.evalset.json]\n    actual: runs/out.jsonl\n"
        "    criteria:\n      rubric_based_final_response_quality_v1: {threshold: 0.5, judge_model_options: {num_samples: 1}}\n"
    )
    root = make_project(tmp_path, eval_set={"eval_set_id": "home", "eval_cases": [case]}, actual_lines=lines, config=config)
    code, out, err = cli("run", "--out", "out", "--no-color", cwd=root)
    assert code == 0, out + err
    assert len(seen) == 1 and "No personal data is revealed." in seen[0]
