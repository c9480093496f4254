"""examples/quickstart: it validates from any folder, and scores to exactly the documented result."""

from __future__ import annotations

import gzip
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
        "PASSED": {"order-status-en", "return-en", "return-ko", "return-ja", "order-status-ja", "faq-ja"},
        "FAILED": {"capabilities-en", "order-status-ko", "faq-ko"},
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
    ("support-agent", "faq-ko"): {"response_match_score": 0.3725, "tool_trajectory_avg_score": 0.0},
    ("support-agent", "order-status-ja"): {"response_match_score": 0.8163, "tool_trajectory_avg_score": 1.0},
    ("support-agent", "return-ja"): {"response_match_score": 0.8767, "tool_trajectory_avg_score": 1.0},
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


# main's baseline in the store the example ships (examples/quickstart/main/regenerate.py).
MAIN_BASELINE = "examples/quickstart/main/store/baselines/evalgate/3832eed6a8ce36e43c268dbb5a3d7a83d18bd21c.json.gz"


def test_gate_against_mains_baseline_tells_the_story(cli, tmp_path):
    """The README's first command: the pull request's outputs against main's baseline and
    ledger. Two Korean cases that passed in every one of main's runs broke (FAIL), a Japanese
    case was fixed, and the English case that fails on main every other run is named flaky."""
    out = tmp_path / "gate"
    code, stdout, err = cli("gate", "--config", "examples/quickstart/evalgate.yaml", "--baseline", MAIN_BASELINE, "--out", str(out), "--no-color", cwd=REPO)
    assert code == 1, err
    assert "evalgate gate: FAIL against the baseline" in stdout
    assert "2 of 8 stable cases broke" in stdout and "shop_support/faq-ko, shop_support/order-status-ko" in stdout
    assert "shop_support/order-status-ko broke (a stable case)" in stdout
    assert "shop_support/capabilities-en regressed (flaky on the default branch: passed 5 of its last 8 runs there)" in stdout
    assert f"comment: {out / 'comment.md'}  report: {out / 'report.html'}" in stdout
    assert "with the flake ledger of examples/quickstart/main/store" in err
    assert "the baseline's commit 3832eed6a8ce is not in this clone" in err or "not in this clone" not in err

    comment = (out / "comment.md").read_text(encoding="utf-8")
    assert comment.splitlines()[1].startswith("**evalgate FAIL** · 3 regressed cases (2 broken stable) · 1 fixed case")
    assert "주문번호 B2019 배송이 어디쯤 왔는지 알려주세요." in comment  # Korean as written
    assert "return-ja" in comment.split("Fixed cases")[1]
    assert (out / "report.html").is_file() and "注文C3051" in (out / "report.html").read_text(encoding="utf-8")


def test_shipped_store_is_what_the_script_makes(tmp_path):
    """main/store is current: regenerating it from the recorded outputs gives the same bytes."""
    import os
    import shutil
    import subprocess
    import sys

    copy = tmp_path / "quickstart"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("store"))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, str(copy / "main" / "regenerate.py")], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    made = sorted(p.relative_to(copy / "main" / "store") for p in (copy / "main" / "store").rglob("*") if p.is_file())
    shipped = sorted(p.relative_to(EXAMPLE / "main" / "store") for p in (EXAMPLE / "main" / "store").rglob("*") if p.is_file())
    assert made == shipped
    for rel in made:
        # The same content, whichever evalgate version wrote it.
        new, old = (_without_version(json.loads(gzip.decompress((root / rel).read_bytes()))) for root in (copy / "main" / "store", EXAMPLE / "main" / "store"))
        assert new == old, f"examples/quickstart/main/store/{rel} is stale: run python examples/quickstart/main/regenerate.py"


def _without_version(value):
    if isinstance(value, dict):
        return {k: _without_version(v) for k, v in value.items() if k not in ("evalgate_version", "lock")}
    if isinstance(value, list):
        return [_without_version(v) for v in value]
    return value
