"""The fork-safe flow's trusted half re-scores the pull request's outputs: forged artifacts never pass.

Each test is an attack a fork can make on the artifact its own run uploads. Before the
trusted re-scoring, the publish job believed the artifact's results.json, and every one of
these turned a regressed pull request's `failure` into `success` on the `evalgate` context.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_entrypoint import PR, _artifact, _writes, action, baseline, history, ws  # noqa: F401  (fixtures)
from fake_github import fake_github  # noqa: F401  (fixture)
from evalgate.reports.markdown import marker


def _records(artifact: Path) -> list[dict]:
    return [json.loads(line) for line in (artifact / "inference.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]


def _write_records(artifact: Path, records: list[dict]) -> None:
    (artifact / "inference.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")


def _forge_results_as_passed(artifact: Path) -> None:
    """Everything in results.json a fork could flip: statuses, thresholds, counts, digest."""
    data = json.loads((artifact / "results.json").read_text(encoding="utf-8"))
    data["status"] = "PASSED"
    data["config_digest"] = "0" * 64
    data["counts"] = {"cases": 999, "passed": 999, "failed": 0, "not_evaluated": 0, "incomplete": 0}
    for suite in data["suites"]:
        suite["status"] = "PASSED"
        suite["not_evaluated_policy"] = "ignore"
        suite["counts"] = dict(data["counts"])
        for spec in suite["criteria"].values():
            spec["threshold"] = 0.0
        for case in suite["cases"]:
            case["status"] = "PASSED"
            for crit in case["criteria"].values():
                crit["status"], crit["threshold"], crit["score"] = "PASSED", 0.0, 1.0
    (artifact / "results.json").write_text(json.dumps(data), encoding="utf-8")


def _publish(action, baseline: str, forge=None) -> tuple[int, str]:  # noqa: F811
    fake = action.fake
    head = fake.add_commit([baseline], "fork head")
    fake.add_pull(PR, head, baseline, fork=True)
    artifact = _artifact(action, baseline, head)  # the fork's run: lights-en regressed
    if forge is not None:
        forge(artifact)
    event = {"action": "completed", "workflow_run": {"id": 99, "event": "pull_request", "head_sha": head, "pull_requests": []}}
    code = action("workflow_run", event, sha=baseline, artifact_dir="evalgate-artifact", status_per_suite="true")
    return code, head


def test_a_regressed_fork_run_fails_and_says_its_outputs_were_re_scored(action, baseline):  # noqa: F811
    code, head = _publish(action, baseline)
    assert code == 1, action.stdout
    [status, suite_status] = action.fake.statuses[head]
    assert (status["context"], status["state"]) == ("evalgate", "failure")
    assert status["description"].startswith("evalgate failed (fork's outputs, re-scored): 1 passed, 1 failed")
    assert suite_status["context"] == "evalgate/home"
    [comment] = action.fake.issue_comments(PR)
    assert comment["body"].startswith(marker("evalgate"))
    assert "came from the pull request's own run (a fork)" in comment["body"]
    results = json.loads((action.ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    assert results["run"]["outputs"].startswith("the agent's outputs came from the pull request's own run")


@pytest.mark.parametrize(
    "forge",
    [
        pytest.param(_forge_results_as_passed, id="results.json says everything passed"),
        pytest.param(lambda a: (a / "results.json").unlink(), id="no results.json at all"),
    ],
)
def test_nothing_in_results_json_is_believed(action, baseline, forge):  # noqa: F811
    code, head = _publish(action, baseline, forge)
    assert code == 1, action.stdout
    states = {s["context"]: s["state"] for s in action.fake.statuses[head]}
    assert states == {"evalgate": "failure", "evalgate/home": "failure"}
    [comment] = action.fake.issue_comments(PR)
    assert "999" not in comment["body"] and "1 failed" in comment["body"]
    assert "configuration changed" not in comment["body"]  # the digest is the trusted config's own


def _drop_case(artifact: Path) -> None:
    _write_records(artifact, [r for r in _records(artifact) if r["eval_id"] != "lights-en"])


def _rename_case(artifact: Path) -> None:
    _write_records(artifact, [dict(r, eval_id="lights-en-2") if r["eval_id"] == "lights-en" else r for r in _records(artifact)])


def _other_digest(artifact: Path) -> None:
    _write_records(artifact, [dict(r, expected_digest="f" * 64) if r["eval_id"] == "lights-en" else r for r in _records(artifact)])


def _rename_suite(artifact: Path) -> None:
    _write_records(artifact, [dict(r, suite="evil") for r in _records(artifact)])


def _empty(artifact: Path) -> None:
    (artifact / "inference.jsonl").write_text("not json\n", encoding="utf-8")


@pytest.mark.parametrize(
    "forge, reason",
    [
        pytest.param(_drop_case, "1 of 2 cases have no output", id="the failing case dropped"),
        pytest.param(_rename_case, "1 of 2 cases have no output", id="the failing case renamed"),
        pytest.param(_other_digest, "1 of 2 cases have no output", id="the failing case's digest changed"),
        pytest.param(_rename_suite, "hold nothing for this suite", id="the suite renamed"),
        pytest.param(_empty, "hold nothing for this suite", id="no records"),
    ],
)
def test_a_case_or_suite_taken_out_of_the_outputs_cannot_pass(action, baseline, forge, reason):  # noqa: F811
    code, head = _publish(action, baseline, forge)
    assert code != 0, action.stdout
    states = {s["context"]: s["state"] for s in action.fake.statuses[head]}
    assert states["evalgate"] in ("failure", "error") and "success" not in states.values()
    assert set(states) == {"evalgate", "evalgate/home"}  # contexts from the trusted config's suites, never "evil"
    [comment] = action.fake.issue_comments(PR)
    assert reason in comment["body"]


def test_planted_rubrics_and_an_unchanged_case_are_taken_as_the_agent_said(action, baseline):  # noqa: F811
    """Only the invocations' own content counts: rubrics in them are dropped, and a case the fork
    did not touch scores as in its own run (here: the Korean case passes)."""

    def plant(artifact: Path) -> None:
        records = _records(artifact)
        for r in records:
            for inv in r.get("invocations", []):
                inv["rubrics"] = [{"rubric_id": "easy", "rubric_content": {"text_property": "always true"}}]
        _write_records(artifact, records)

    code, _ = _publish(action, baseline, plant)
    assert code == 1
    results = json.loads((action.ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    [suite] = results["suites"]
    statuses = {c["eval_id"]: c["status"] for c in suite["cases"]}
    assert statuses == {"lights-en": "FAILED", "난방-ko": "PASSED"}
    written = _records(action.ws / "evalgate-results")
    assert all("rubrics" not in inv for r in written for inv in r.get("invocations", []))


def test_an_artifact_without_outputs_is_an_input_error_naming_the_step(action, baseline):  # noqa: F811
    code, head = _publish(action, baseline, lambda a: (a / "inference.jsonl").unlink())
    assert code == 2
    assert "inference.jsonl" in action.stdout and "docs/workflows.md" in action.stdout
    assert _writes(action.fake) == []
