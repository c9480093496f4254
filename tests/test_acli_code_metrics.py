"""agents-cli's local code metrics: evalgate's per-case scores equal `agents-cli eval grade`'s on the same traces.

The peer is google-agents-cli 1.11.0 itself, run as a user runs it (a subprocess, a dummy
Application Default Credentials file, no network): `agents-cli eval grade --traces ... --config
...` writes `results_<ts>.json`, and evalgate scores the same traces with the same config
(tests/acli_metrics/: the scaffold's two metrics, its LLM judge `response_quality.py` pointed
at the fake Gemini, and metrics that read every part of the instance, return each kind of
result, raise or return the wrong type). The traces hold Korean and Japanese text, tool
calls and results, an "N+1" case with history turns, a content-less event (grade drops it),
an extra case field and a case without a response.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agentplatform")
AGENTS_CLI = Path(sys.executable).with_name("agents-cli")
if not AGENTS_CLI.exists():
    pytest.skip("agents-cli (google-agents-cli) is not installed beside this Python", allow_module_level=True)

from evalgate import engine  # noqa: E402
from evalgate.agents_cli.cases import trace_invocations  # noqa: E402
from evalgate.config import read_test_config  # noqa: E402
from evalgate.results import Status  # noqa: E402
from fake_gemini import FAKE_API_KEY, JUDGE_ENV_VARS, FakeGemini, prompt_text  # noqa: E402

HERE = Path(__file__).parent / "acli_metrics"


def judge_answer(body: Any) -> dict[str, Any]:
    """The fake judge's verdict depends on the whole prompt the metric built: equal prompts, equal scores."""
    text = prompt_text(body)
    return {"score": 1 + len(text) % 5, "explanation": f"길이 {len(text)}"}


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("acli")
    for name in ("eval_config.yaml", "metrics.py", "response_quality.py"):
        shutil.copy(HERE / name, root / name)
    (root / "traces").mkdir()
    shutil.copy(HERE / "traces.json", root / "traces" / "traces_20261127_100000.json")
    return root


@pytest.fixture(scope="module")
def gemini():
    fake = FakeGemini(judge_answer).start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def theirs(project, gemini) -> dict[str, dict[str, Any]]:
    """agents-cli's results file, per case id and metric."""
    adc = project / "adc.json"
    adc.write_text(json.dumps({"type": "authorized_user", "client_id": "x", "client_secret": "y", "refresh_token": "z"}))
    env = {k: v for k, v in os.environ.items() if k not in JUDGE_ENV_VARS}
    env.update(
        GOOGLE_APPLICATION_CREDENTIALS=str(adc), GOOGLE_CLOUD_PROJECT="fake-project", DO_NOT_TRACK="1",
        GEMINI_API_KEY=FAKE_API_KEY, GOOGLE_GEMINI_BASE_URL=gemini.url, HOME=str(project),
    )
    done = subprocess.run(
        [str(AGENTS_CLI), "eval", "grade", "--traces", "traces", "--config", "eval_config.yaml", "--output", "out"],
        cwd=project, env=env, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [results] = (project / "out").glob("results_*.json")
    data = json.loads(results.read_text(encoding="utf-8"))
    cases = data["evaluation_dataset"][0]["eval_cases"]
    out = {}
    for row in data["eval_case_results"]:
        [candidate] = row["response_candidate_results"]
        out[cases[row["eval_case_index"]]["eval_case_id"]] = candidate["metric_results"]
    return out


@pytest.fixture(scope="module")
def ours(project, gemini) -> dict[str, Any]:
    """evalgate's results for the same traces, scored by the engine (one run per case)."""
    criteria = read_test_config(project / "eval_config.yaml")
    traces = json.loads((project / "traces" / "traces_20261127_100000.json").read_text(encoding="utf-8"))["eval_cases"]
    with pytest.MonkeyPatch.context() as mp:
        for name in JUDGE_ENV_VARS:
            mp.delenv(name, raising=False)
        mp.setenv("GEMINI_API_KEY", FAKE_API_KEY)
        mp.setenv("GOOGLE_GEMINI_BASE_URL", gemini.url)
        out = {}
        for trace in traces:
            out[trace["eval_case_id"]] = engine.score_case(acli_case(trace, criteria))
    return out


def acli_case(trace: dict[str, Any], criteria: dict[str, Any], runs: list[dict[str, Any]] | None = None) -> engine.CaseInput:
    """A case read from traces as recorded outputs: each run's trace and its invocations."""
    invocations = trace_invocations(trace)
    case = engine.CaseInput("traces", trace["eval_case_id"], criteria, "d", actual=invocations)
    case.acli = trace
    agent_runs = []
    for k, t in enumerate(runs or [trace]):
        run = engine.AgentRun(trace_invocations(t), run=k + 1)
        run.trace = t
        agent_runs.append(run)
    case.runs = agent_runs
    return case


def _function_repr(text: str | None) -> str | None:
    # The SDK names a function by its repr there, memory address included.
    return re.sub(r"<function (\w+) at 0x[0-9a-f]+>", r"\1", text) if text else text


CASES = ["weather-ko", "order-ja", "capital-en", "no-answer"]
METRICS = ["custom_response_quality", "agent_turn_count", "tool_calls", "matches_reference", "response_length",
           "keeps_extras", "sees_everything", "breaks_on_english", "wrong_type", "text_score"]


@pytest.mark.parametrize("case_id", CASES)
def test_per_case_scores_equal_agents_clis(theirs, ours, case_id):
    mine = ours[case_id].criteria
    assert sorted(mine) == sorted(theirs[case_id]) == sorted(METRICS)  # the names as agents-cli resolves them
    for metric in METRICS:
        want, got = theirs[case_id][metric], mine[metric]
        assert got.score == want.get("score"), (case_id, metric)
        assert (got.per_invocation[-1].details.get("explanation") if got.per_invocation else None) == want.get("explanation"), (case_id, metric)
        if (want.get("error_message") or "").startswith("Error executing metric"):  # the SDK's own model refused the score
            assert "'many'" in want["error_message"] and "the score 'many' is not a finite number" in got.error
        else:
            assert _function_repr(got.error) == _function_repr(want.get("error_message")), (case_id, metric)
        assert got.status is (Status.PASSED if want.get("score") is not None else Status.NOT_EVALUATED)


def test_the_comparison_covers_what_matters(theirs):
    """The peer's own results exercise every path: scores of each kind, errors of each kind, Korean text."""
    assert theirs["weather-ko"]["tool_calls"]["explanation"] == "서울"
    assert theirs["order-ja"]["tool_calls"]["score"] == 2.0  # N+1: the history turn's calls are in agent_data too
    assert theirs["weather-ko"]["keeps_extras"]["score"] == 3.0  # the extra case field reaches the instance
    assert theirs["order-ja"]["breaks_on_english"]["error_message"] == "CustomFunctionError(evaluate): 'prompt'"
    assert "English prompt" in theirs["capital-en"]["breaks_on_english"]["error_message"]
    assert theirs["no-answer"]["agent_turn_count"]["error_message"].startswith("No response found")
    assert len({theirs[c]["sees_everything"]["score"] for c in CASES[:3]}) == 3
    assert {theirs[c]["custom_response_quality"]["score"] for c in CASES[:3]} - {None}


def test_no_threshold_a_scored_case_passes_and_the_suite_says_so(ours):
    result = ours["weather-ko"]
    assert result.criteria["agent_turn_count"].status is Status.PASSED
    assert result.criteria["wrong_type"].status is Status.NOT_EVALUATED
    assert result.status is Status.PASSED  # nothing failed; some criteria were not evaluated


def test_several_runs_are_scored_each_and_averaged(project):
    criteria = read_test_config(project / "eval_config.yaml")
    traces = json.loads((project / "traces" / "traces_20261127_100000.json").read_text(encoding="utf-8"))["eval_cases"]
    ja = traces[1]
    shorter = json.loads(json.dumps(ja))
    shorter["agent_data"]["turns"] = shorter["agent_data"]["turns"][-1:]
    scored = engine.score_case(acli_case(ja, {"agent_turn_count": criteria["agent_turn_count"]}, runs=[ja, shorter, ja]))
    result = scored.criteria["agent_turn_count"]
    assert result.runs == [2.0, 1.0, 2.0]
    assert result.score == pytest.approx(5 / 3)
    assert result.status is Status.PASSED


def test_results_record_no_threshold_and_the_metrics_scale(project):
    criteria = read_test_config(project / "eval_config.yaml")
    traces = json.loads((project / "traces" / "traces_20261127_100000.json").read_text(encoding="utf-8"))["eval_cases"]
    plan = engine.SuitePlan("app", [acli_case(traces[2], {k: criteria[k] for k in ("agent_turn_count", "tool_calls")})])
    suite = engine.score_suite(plan)
    assert suite.criteria["agent_turn_count"].no_threshold is True
    assert suite.criteria["agent_turn_count"].score_range == [0.0, None]
    assert suite.criteria["tool_calls"].score_range is None  # not declared: the gate takes (0, 1), the metric's units
    dumped = suite.model_dump(mode="json")
    assert dumped["criteria"]["agent_turn_count"]["no_threshold"] is True
