"""examples/quickstart: it validates from any folder, and scores to exactly the documented result."""

from __future__ import annotations

import json

import pytest

from conftest import REPO

EXAMPLE = REPO / "examples" / "quickstart"
CONFIG = EXAMPLE / "evalgate.yaml"
LEGACY_ID = "evals/legacy/home_legacy.test.json"  # relative to the config's folder, wherever evalgate runs

# The documented outcome (examples/quickstart/README.md).
EXPECTED = {
    "support-agent": {
        "status": "FAILED",
        "PASSED": {"order-status-en", "return-en", "return-ko", "faq-ko", "order-status-ja", "faq-ja"},
        "FAILED": {"capabilities-en", "order-status-ko", "return-ja"},
    },
    "home-automation-legacy": {
        "status": "PASSED",
        "PASSED": {LEGACY_ID},
        "FAILED": set(),
    },
}

# Scores as ADK 2.13 computes them (response_match_score checked against ADK's own
# ROUGE code when this example was written); each far enough from its threshold that
# the intended side is unambiguous.
SCORES = {
    ("support-agent", "order-status-en"): {"response_match_score": 0.8000, "tool_trajectory_avg_score": 1.0},
    ("support-agent", "return-en"): {"response_match_score": 0.7953, "tool_trajectory_avg_score": 1.0},
    ("support-agent", "capabilities-en"): {"response_match_score": 0.2034, "tool_trajectory_avg_score": 1.0},
    ("support-agent", "order-status-ko"): {"response_match_score": 0.4356, "tool_trajectory_avg_score": 0.0},
    ("support-agent", "return-ko"): {"response_match_score": 0.9006, "tool_trajectory_avg_score": 1.0},
    ("support-agent", "faq-ko"): {"response_match_score": 0.7520, "tool_trajectory_avg_score": 1.0},
    ("support-agent", "order-status-ja"): {"response_match_score": 0.8163, "tool_trajectory_avg_score": 1.0},
    ("support-agent", "return-ja"): {"response_match_score": 0.8767, "tool_trajectory_avg_score": 0.0},
    ("support-agent", "faq-ja"): {"response_match_score": 0.8413, "tool_trajectory_avg_score": 1.0},
    ("home-automation-legacy", LEGACY_ID): {"response_match_score": 0.9309, "tool_trajectory_avg_score": 1.0},
}


def _by_status(suite) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {"PASSED": set(), "FAILED": set(), "NOT_EVALUATED": set()}
    for case in suite["cases"]:
        out[case["status"]].add(case["eval_id"])
    return out


@pytest.mark.parametrize("where", ["repo root", "example folder", "elsewhere"])
def test_validates_from_any_folder(cli, tmp_path, where):
    cwd, config = {
        "repo root": (REPO, "examples/quickstart/evalgate.yaml"),
        "example folder": (EXAMPLE, "evalgate.yaml"),
        "elsewhere": (tmp_path, str(CONFIG)),
    }[where]
    code, out, err = cli("validate", "--config", config, cwd=cwd)
    assert (code, err) == (0, "")
    assert "OK, 2 suites, 10 cases" in out


def test_scores_without_the_cli(monkeypatch, tmp_path):
    """The scoring alone (config, plans, engine), from a folder that is not the repo."""
    from evalgate import engine
    from evalgate.config import load_config
    from evalgate.plan import build_plans, config_digest

    monkeypatch.chdir(tmp_path)
    loaded = load_config(CONFIG)
    plans = build_plans(loaded)
    run = engine.run(plans, config_digest(loaded, plans))
    data = run.model_dump(mode="json")

    assert data["status"] == "FAILED"
    assert data["counts"] == {"cases": 10, "passed": 7, "failed": 3, "not_evaluated": 0, "incomplete": 0}
    assert [s["name"] for s in data["suites"]] == list(EXPECTED)
    for suite in data["suites"]:
        want = EXPECTED[suite["name"]]
        assert suite["status"] == want["status"]
        assert suite["warnings"] == []
        got = _by_status(suite)
        assert (got["PASSED"], got["FAILED"], got["NOT_EVALUATED"]) == (want["PASSED"], want["FAILED"], set())
        for case in suite["cases"]:
            scores = {name: c["score"] for name, c in case["criteria"].items()}
            assert scores == pytest.approx(SCORES[(suite["name"], case["eval_id"])], abs=1e-4)


def test_run_writes_the_documented_results(cli, tmp_path):
    out = tmp_path / "evalgate-results"
    code, stdout, err = cli("run", "--config", "examples/quickstart/evalgate.yaml", "--out", str(out), "--no-color", cwd=REPO)
    assert code == 1, err  # a suite failed: the gate blocks
    assert "support-agent" in stdout and "home-automation-legacy" in stdout and "FAILED" in stdout

    raw = (out / "results.json").read_text(encoding="utf-8")
    results = json.loads(raw)
    assert results["status"] == "FAILED"
    assert {s["name"]: s["status"] for s in results["suites"]} == {n: w["status"] for n, w in EXPECTED.items()}
    for suite in results["suites"]:
        got = _by_status(suite)
        assert got["PASSED"] == EXPECTED[suite["name"]]["PASSED"]
        assert got["FAILED"] == EXPECTED[suite["name"]]["FAILED"]
        assert got["NOT_EVALUATED"] == set()

    # Korean and Japanese text round-trips: written as UTF-8 text, not \u escapes, and equal to the source.
    source = json.loads((EXAMPLE / "evals" / "support.evalset.json").read_text(encoding="utf-8"))
    conversations = {c["eval_id"]: c["conversation"] for c in source["eval_cases"]}
    cases = {c["eval_id"]: c for s in results["suites"] for c in s["cases"]}
    for eval_id in ("return-ko", "order-status-ko", "faq-ja", "return-ja"):
        for summary, expected in zip(cases[eval_id]["invocations"], conversations[eval_id]):
            user = expected["user_content"]["parts"][0]["text"]
            reference = expected["final_response"]["parts"][0]["text"]
            assert summary["user"] == user
            assert summary["expected_response"] == reference
            assert user in raw and reference in raw
    assert "감사합니다!" in raw and "注文番号C3048の荷物はいつ届きますか？" in raw
    assert "\\u" not in raw

    assert (out / "junit.xml").is_file()


def test_example_files_are_valid_adk():
    """What the example calls ADK data, ADK itself reads."""
    pytest.importorskip("google.adk")
    from google.adk.evaluation.eval_case import Invocation
    from google.adk.evaluation.eval_result import EvalSetResult
    from google.adk.evaluation.eval_set import EvalSet

    eval_set = EvalSet.model_validate_json((EXAMPLE / "evals" / "support.evalset.json").read_text(encoding="utf-8"))
    assert len(eval_set.eval_cases) == 9
    history = EvalSetResult.model_validate_json((EXAMPLE / "runs" / "home_legacy.evalset_result.json").read_text(encoding="utf-8"))
    assert [r.eval_id for r in history.eval_case_results] == [LEGACY_ID]
    shapes = set()
    for line in (EXAMPLE / "runs" / "support.inference.jsonl").read_text(encoding="utf-8").splitlines():
        for invocation in json.loads(line)["invocations"]:
            shapes.add(type(Invocation.model_validate(invocation).intermediate_data).__name__)
    assert shapes == {"IntermediateData", "InvocationEvents"}  # both intermediate-data shapes appear
