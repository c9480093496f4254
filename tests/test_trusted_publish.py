"""The fork-safe flow's trusted half re-scores the pull request's outputs: forged artifacts never pass.

Each test is an attack a fork can make on the artifact its own run uploads. Before the
trusted re-scoring, the publish job believed the artifact's results.json, and every one of
these turned a regressed pull request's `failure` into `success` on the `evalgate` context.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_entrypoint import PR, _artifact, _pull_request, _writes, action, baseline, history, ws  # noqa: F401  (fixtures)
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
    event = {"action": "completed", "workflow_run": {"id": 99, "event": "pull_request", "head_sha": head, "head_branch": "feature", "head_repository": {"full_name": "someone/hello"}, "pull_requests": []}}
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


def _fail_case(artifact: Path) -> None:
    _write_records(artifact, [dict(r, invocations=[], error="the agent raised") if r["eval_id"] == "lights-en" else r for r in _records(artifact)])


def _no_turns(artifact: Path) -> None:
    _write_records(artifact, [dict(r, invocations=[]) if r["eval_id"] == "lights-en" else r for r in _records(artifact)])


def _two_turns(artifact: Path) -> None:
    _write_records(artifact, [dict(r, invocations=r["invocations"] * 2) if r["eval_id"] == "lights-en" else r for r in _records(artifact)])


def _other_user(artifact: Path) -> None:
    """The failing case's record answers a question the eval case does not ask."""
    records = _records(artifact)
    for r in records:
        if r["eval_id"] == "lights-en":
            r["invocations"][0]["user_content"]["parts"][0]["text"] = "Turn off the kitchen light."
    _write_records(artifact, records)


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
        # NOT_EVALUATED instead of FAILED: under the default `not_evaluated: warn` these passed.
        pytest.param(_fail_case, "1 of 2 cases failed to run", id="the failing case marked as a failed run"),
        pytest.param(_no_turns, "1 of 2 cases hold no run of their eval case in the pull request's outputs (the first: it holds no turn)", id="the failing case with no invocations"),
        pytest.param(_two_turns, "(the first: it has 2 turns, the eval case 1)", id="the failing case with other turns"),
        pytest.param(_other_user, "(the first: turn 1 answers another user message than the eval case's)", id="the failing case answering another question"),
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


# --- the base's policy (PR mode) ----------------------------------------------------------------


@pytest.fixture
def based(action):
    """main's commit carries the config in its tree (the contents API serves it at that sha),
    and has a baseline; the PR's agent then regresses lights-en."""
    from test_entrypoint import _set_outputs, main_with_baseline

    base = main_with_baseline(action)
    _set_outputs(action.ws, regressed=True)
    return base


LOOSER = {
    "no flips rule, huge margin": ("  deterministic_flips: fail\n", "  deterministic_flips: test\n  margin_deterministic: 1.0\n"),
    "alpha 1e-9": ("  deterministic_flips: fail\n", "  deterministic_flips: test\n  alpha: 1.0e-9\n"),
    "threshold zeroed": ("tool_trajectory_avg_score: {threshold: 1.0,", "tool_trajectory_avg_score: {threshold: 0.0,"),
    "criterion dropped": ("      tool_trajectory_avg_score: {threshold: 1.0, match_type: IN_ORDER}\n", ""),
}


@pytest.mark.parametrize("old, new", list(LOOSER.values()), ids=list(LOOSER))
def test_a_pull_request_that_loosens_its_own_gate_is_judged_by_its_base(action, based, old, new):
    config = action.ws / "evalgate.yaml"
    text = config.read_text(encoding="utf-8")
    assert old in text
    config.write_text(text.replace(old, new), encoding="utf-8")
    head = action.fake.add_commit([based], "loosen the gate")
    assert action("pull_request", _pull_request(head, based), sha=head) == 1, action.stdout
    [status] = action.fake.statuses[head]
    assert status["state"] == "failure"
    [comment] = action.fake.issue_comments(PR)
    body = comment["body"]
    assert "This pull request changes the gate" in body and "```diff" in body
    removed = [line for line in body.splitlines() if line.startswith("-") and not line.startswith("---")]
    assert removed, body  # the base's side of the change is shown


def test_an_unchanged_policy_shows_no_gate_change(action, based):
    head = action.fake.add_commit([based], "same config")
    assert action("pull_request", _pull_request(head, based), sha=head) == 1
    [comment] = action.fake.issue_comments(PR)
    assert "changes the gate" not in comment["body"]
    assert "configuration changed" not in comment["body"]


def test_a_stricter_pull_request_is_still_judged_by_its_base_and_told_so(action, based):
    from test_entrypoint import _set_outputs

    _set_outputs(action.ws, regressed=False)
    config = action.ws / "evalgate.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("response_match_score: 0.8", "response_match_score: 0.95"), encoding="utf-8")
    head = action.fake.add_commit([based], "stricter")
    assert action("pull_request", _pull_request(head, based), sha=head) == 0, action.stdout
    results = json.loads((action.ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    assert results["suites"][0]["criteria"]["response_match_score"]["threshold"] == 0.8  # the base's
    [comment] = action.fake.issue_comments(PR)
    assert "+      threshold: 0.95" in comment["body"] or "threshold: 0.95" in comment["body"]


def test_removed_cases_fail_when_the_base_says_so(action, history):
    """gate.removed_cases: fail (opt-in): a pull request cannot pass by deleting the case it breaks."""
    from test_entrypoint import _push
    from test_inputs import CASES

    fake = action.fake
    config = action.ws / "evalgate.yaml"
    config.write_text(config.read_text(encoding="utf-8") + "  removed_cases: fail\n", encoding="utf-8")
    base = fake.add_commit([history[1]], "main", files={"evalgate.yaml": config.read_bytes()})
    assert action("push", _push(base), sha=base) == 0, action.stdout
    evals = action.ws / "evals" / "home.evalset.json"
    data = json.loads(evals.read_text(encoding="utf-8"))
    data["eval_cases"] = [c for c in data["eval_cases"] if c["eval_id"] != "lights-en"]
    evals.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    assert set(CASES) == {"lights-en", "난방-ko"}
    head = fake.add_commit([base], "drop the case")
    assert action("pull_request", _pull_request(head, base), sha=head) == 1, action.stdout
    [comment] = fake.issue_comments(PR)
    assert "1 baseline case removed (gate.removed\\_cases: fail)" in comment["body"], comment["body"]


def test_a_pull_request_that_renames_its_config_is_still_judged_by_its_base(action, based):
    """evalgate.yaml -> evalgate.yml with a looser gate: the base has no evalgate.yml, and the
    pull request must not be taken for one that adds evalgate (its own gate then silently used)."""
    old = action.ws / "evalgate.yaml"
    text = old.read_text(encoding="utf-8")
    old.unlink()
    (action.ws / "evalgate.yml").write_text(text.replace("  deterministic_flips: fail\n", "  deterministic_flips: test\n  margin_deterministic: 1.0\n"), encoding="utf-8")
    head = action.fake.add_commit([based], "rename and loosen")
    assert action("pull_request", _pull_request(head, based), sha=head) == 1, action.stdout
    [status] = action.fake.statuses[head]
    assert status["state"] == "failure"
    [comment] = action.fake.issue_comments(PR)
    assert "This pull request changes the gate" in comment["body"], comment["body"]


def test_a_committed_baseline_folder_is_read_as_the_base_commit_has_it(action, history):
    """baseline-store: dir with the folder committed: the pull request's tree holds its own copy
    of the base's baseline, which it can rewrite (here: re-recorded from the regressed agent).
    Tracked baseline files are read at the base commit, not from the pull request's checkout."""
    import subprocess

    from test_entrypoint import _push, _set_outputs

    fake, ws = action.fake, action.ws
    base = history[1]
    assert action("push", _push(base), sha=base, baseline_store="dir") == 0, action.stdout
    rel = f".evalgate/baselines/baselines/evalgate/{base}.json.gz"
    files = {"evalgate.yaml": (ws / "evalgate.yaml").read_bytes(), rel: (ws / rel).read_bytes()}
    for extra in (ws / ".evalgate" / "baselines").rglob("*.gz"):
        files[extra.relative_to(ws).as_posix()] = extra.read_bytes()
    fake.commits[base]["tree"] = fake.commits[fake.add_commit([], "tree", files=files)]["tree"]
    # The pull request re-records "the base's baseline" from its regressed agent and commits it.
    _set_outputs(ws, regressed=True)
    assert action("push", _push(base), sha=base, baseline_store="dir") == 1, action.stdout
    assert (ws / rel).read_bytes() != files[rel]
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(ws)]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A", "-f"], check=True)
    subprocess.run(git + ["commit", "-qm", "pr"], check=True)
    head = fake.add_commit([base], "forged baseline")
    assert action("pull_request", _pull_request(head, base), sha=head, baseline_store="dir") == 1, action.stdout
    assert [s["state"] for s in fake.statuses[head]] == ["failure"]


def test_a_suite_with_a_custom_metric_is_still_judged_by_the_baselines_criteria(action):
    """The baseline records a custom metric (a name evalgate's registry does not know). That one
    criterion cannot be rebuilt from the baseline alone; the suite's other criteria still must be
    the baseline's, not the pull request's (here: its tool trajectory threshold zeroed)."""
    pytest.importorskip("google.adk")
    from test_entrypoint import _push, _set_outputs

    fake, ws = action.fake, action.ws
    (ws / "review_always_one.py").write_text(
        "from google.adk.evaluation.eval_metrics import EvalStatus\n"
        "from google.adk.evaluation.evaluator import EvaluationResult\n"
        "def one(eval_metric, actual_invocations, expected_invocations, conversation_scenario):\n"
        "    return EvaluationResult(overall_score=1.0, overall_eval_status=EvalStatus.PASSED)\n",
        encoding="utf-8",
    )
    config = ws / "evalgate.yaml"
    text = config.read_text(encoding="utf-8").replace(
        "      response_match_score: 0.8\n",
        "      response_match_score: 0.8\n      always_one: 0.5\n    custom_metrics:\n      always_one: {code_config: {name: review_always_one.one}}\n",
    )
    config.write_text(text, encoding="utf-8")
    base = fake.add_commit([], "main", files={"evalgate.yaml": text.encode("utf-8")})
    fake.refs["refs/heads/main"] = base
    assert action("push", _push(base), sha=base) == 0, action.stdout
    _set_outputs(ws, regressed=True)
    config.write_text(text.replace("tool_trajectory_avg_score: {threshold: 1.0,", "tool_trajectory_avg_score: {threshold: 0.0,"), encoding="utf-8")
    head = fake.add_commit([base], "loosen")
    assert action("pull_request", _pull_request(head, base), sha=head) == 1, action.stdout
    results = json.loads((ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    assert results["suites"][0]["criteria"]["tool_trajectory_avg_score"]["threshold"] == 1.0


def test_a_pull_request_cannot_turn_off_its_bases_not_evaluated_policy(action, history):
    """The base fails a suite on NOT_EVALUATED cases; the pull request sets `not_evaluated: ignore`
    and its agent fails on the case it breaks (NOT_EVALUATED, not FAILED). The suite's
    not_evaluated policy is the base's (the baseline records it), like its criteria."""
    from test_entrypoint import _lines, _push

    fake, ws = action.fake, action.ws
    config = ws / "evalgate.yaml"
    text = config.read_text(encoding="utf-8").replace("    actual: runs/out.jsonl\n", "    actual: runs/out.jsonl\n    not_evaluated: fail\n")
    config.write_text(text, encoding="utf-8")
    base = fake.add_commit([history[1]], "main", files={"evalgate.yaml": text.encode("utf-8")})
    assert action("push", _push(base), sha=base) == 0, action.stdout
    lines = _lines(False, "lights-en", "kitchen")
    for line in lines:
        if line["eval_id"] == "lights-en":
            line["invocations"], line["error"] = [], "the agent raised"
    (ws / "runs" / "out.jsonl").write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    config.write_text(text.replace("not_evaluated: fail", "not_evaluated: ignore"), encoding="utf-8")
    head = fake.add_commit([base], "ignore what I break")
    assert action("pull_request", _pull_request(head, base), sha=head) == 1, action.stdout
    [comment] = fake.issue_comments(PR)
    assert "This pull request changes the gate" in comment["body"]


def _agent_project(root: Path, num_runs: int) -> Path:
    """The documented example weather agent (a command agent) on tests/agents/evals, run num_runs times."""
    import shutil
    import sys

    from conftest import REPO

    shutil.copytree(REPO / "tests" / "agents" / "evals", root / "evals")
    shutil.copy(REPO / "docs" / "examples" / "weather_agent.py", root / "agent.py")
    config = {"agent": {"command": [sys.executable, "agent.py"], "num_runs": num_runs},
              "suites": [{"name": "weather", "evalsets": "evals", "criteria": {"tool_trajectory_avg_score": 1.0}}]}
    (root / "evalgate.yaml").write_text(json.dumps(config), encoding="utf-8")
    return root


@pytest.mark.parametrize("num_runs", [1, 3])
def test_a_fork_run_of_an_agent_suite_is_re_scored_run_by_run(fake_github, tmp_path, capsys, num_runs):  # noqa: F811
    """A suite that runs its agent (num_runs of it): phase 1 runs the fork's agent, phase 2 takes
    every run of every case from inference.jsonl and scores them under the trusted config."""
    from evalgate.cli import main as cli
    from test_entrypoint import Action

    ws = _agent_project(tmp_path / "ws", num_runs)
    action = Action(fake_github, ws, tmp_path, capsys)
    fake = action.fake
    base, _ = fake.linear_history(2)
    head = fake.add_commit([base], "fork head")
    fake.add_pull(PR, head, base, fork=True)
    artifact = ws / "evalgate-artifact"
    assert cli(["run", "--config", str(ws / "evalgate.yaml"), "--out", str(artifact), "--quiet"]) == 0
    (artifact / "pr.json").write_text(json.dumps({"number": PR, "head_sha": head}))
    records = _records(artifact)
    assert sorted({r.get("run") or 1 for r in records}) == list(range(1, num_runs + 1))
    capsys.readouterr()
    event = {"action": "completed", "workflow_run": {"id": 99, "event": "pull_request", "head_sha": head, "head_branch": "feature", "head_repository": {"full_name": "someone/hello"}, "pull_requests": []}}
    assert action("workflow_run", event, sha=base, artifact_dir="evalgate-artifact") == 0, action.stdout
    [status] = fake.statuses[head]
    assert status["state"] == "success"
    results = json.loads((ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    [suite] = results["suites"]
    assert {c["status"] for c in suite["cases"]} == {"PASSED"}
    assert suite["counts"]["cases"] == 3


def test_a_pull_request_cannot_run_its_agent_fewer_times_than_its_base(fake_github, tmp_path, capsys):  # noqa: F811
    """num_runs decides how much evidence a regression test has: a pull request that lowers it
    (3 -> 1) would make a real drop look inconclusive. Its suites run at least as many times
    as the baseline's did."""
    from test_entrypoint import Action, _push

    ws = _agent_project(tmp_path / "ws", 3)
    action = Action(fake_github, ws, tmp_path, capsys)
    fake = action.fake
    text = (ws / "evalgate.yaml").read_text(encoding="utf-8")
    base = fake.add_commit([], "main", files={"evalgate.yaml": text.encode("utf-8")})
    assert action("push", _push(base), sha=base) == 0, action.stdout
    (ws / "evalgate.yaml").write_text(text.replace('"num_runs": 3', '"num_runs": 1'), encoding="utf-8")
    head = fake.add_commit([base], "fewer runs")
    action("pull_request", _pull_request(head, base), sha=head)
    records = _records(ws / "evalgate-results")
    assert sorted({r.get("run") or 1 for r in records}) == [1, 2, 3], action.stdout


# --- records another evalgate version wrote ------------------------------------------------------


def _newer_fields(artifact: Path) -> None:
    """Fields a newer evalgate writes, at the record's top level and inside its invocations."""
    records = _records(artifact)
    for r in records:
        r["cost"] = {"usd": 0.01, "note": "新しいフィールド"}
        for inv in r.get("invocations", []):
            inv["app_details_v2"] = {"名前": "家"}
    _write_records(artifact, records)


def test_records_with_a_newer_evalgates_fields_are_scored_and_the_fields_named(action, baseline):  # noqa: F811
    """Before: every record failed validation (extra keys forbidden), so the suite was ERROR
    ("2 of 2 cases have no output"). Now they are scored as the agent said, and one warning
    names the file, the first line and the keys."""
    code, head = _publish(action, baseline, _newer_fields)
    assert code == 1, action.stdout
    states = {s["context"]: s["state"] for s in action.fake.statuses[head]}
    assert states == {"evalgate": "failure", "evalgate/home": "failure"}
    results = json.loads((action.ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    assert {c["eval_id"]: c["status"] for c in results["suites"][0]["cases"]} == {"lights-en": "FAILED", "난방-ko": "PASSED"}
    assert "have no output" not in action.stdout
    [warning] = [line for line in action.stdout.splitlines() if "which this evalgate does not know" in line]
    assert "evalgate-artifact/inference.jsonl: line 1: ignored keys" in warning
    assert "'cost'" in warning and "'invocations[0].app_details_v2'" in warning and "1 more place" in warning


def _score_fields(artifact: Path) -> None:
    """A record of the failing case that claims, in fields evalgate does not have, that it passed."""
    records = _records(artifact)
    for r in records:
        if r["eval_id"] == "lights-en":
            r["score"] = 1.0
            r["status"] = "PASSED"
            r["criteria"] = {"response_match_score": {"score": 1.0, "status": "PASSED", "threshold": 0.0}}
            r["rubrics"] = [{"rubric_id": "easy", "rubric_content": {"text_property": "always true"}}]
            for inv in r.get("invocations", []):
                inv["score"] = 1.0
    _write_records(artifact, records)


def test_an_unknown_field_that_looks_like_a_score_is_not_believed(action, baseline):  # noqa: F811
    code, head = _publish(action, baseline, _score_fields)
    assert code == 1, action.stdout
    states = {s["context"]: s["state"] for s in action.fake.statuses[head]}
    assert states == {"evalgate": "failure", "evalgate/home": "failure"}
    results = json.loads((action.ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    [suite] = results["suites"]
    lights = next(c for c in suite["cases"] if c["eval_id"] == "lights-en")
    assert lights["status"] == "FAILED"
    assert all(crit["score"] < 1.0 for crit in lights["criteria"].values() if crit["status"] == "FAILED")
    assert "'score'" in action.stdout and "'status'" in action.stdout
    written = _records(action.ws / "evalgate-results")  # the re-scored run's own records: no trace of them
    assert not any(k in r for r in written for k in ("score", "status", "criteria", "rubrics"))


def test_a_malformed_known_field_beside_an_unknown_one_is_still_not_a_record(action, baseline):  # noqa: F811
    def forge(artifact: Path) -> None:
        _write_records(artifact, [dict(r, run=0, cost=1) if r["eval_id"] == "lights-en" else r for r in _records(artifact)])

    code, head = _publish(action, baseline, forge)
    assert code != 0
    [comment] = action.fake.issue_comments(PR)
    assert "1 of 2 cases have no output" in comment["body"]
    assert "1 lines of the pull request's inference.jsonl were not inference records" in action.stdout


def test_records_of_unknown_cases_are_counted_not_kept(action, baseline):  # noqa: F811
    """Records of suites and cases the trusted config does not have (here in Japanese) are
    ignored while reading and counted once; the verdict is that of the known cases."""

    def pad(artifact: Path) -> None:
        records = _records(artifact)
        [ko] = [r for r in records if r["eval_id"] == "난방-ko"]
        extra = [dict(ko, eval_id=f"照明-{i}") for i in range(5)] + [dict(ko, suite="他のスイート")] * 2
        _write_records(artifact, records + extra)

    code, head = _publish(action, baseline, pad)
    assert code == 1, action.stdout
    assert "7 records of unknown cases ignored" in action.stdout
    results = json.loads((action.ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    assert {c["eval_id"] for c in results["suites"][0]["cases"]} == {"lights-en", "난방-ko"}


def test_read_outputs_keeps_only_the_known_cases(tmp_path):
    from evalgate.trusted import read_outputs

    inv = {"invocation_id": "i1", "user_content": {"parts": [{"text": "難しい質問"}]}, "final_response": {"parts": [{"text": "답변"}]}}
    lines = [{"suite": "home", "eval_set_id": "set", "eval_id": "난방-ko", "invocations": [inv]}]
    lines += [{"suite": "home", "eval_set_id": "set", "eval_id": f"未知-{i}", "invocations": [inv]} for i in range(50)]
    lines += [{"eval_set_id": "set", "eval_id": "未知-x", "invocations": [inv]}, {"suite": "other", "eval_set_id": "set", "eval_id": "난방-ko", "invocations": [inv]}]
    path = tmp_path / "inference.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines), encoding="utf-8")

    outputs = read_outputs(path, {"home": {("set", "난방-ko")}})
    assert outputs.unknown_cases == 52 and outputs.skipped == 0
    assert list(outputs.by_suite) == ["home"] and list(outputs.by_suite["home"]) == [("set", "난방-ko")]
    assert outputs.unnamed == {}
    [rec] = outputs.of("home", ("set", "난방-ko"))
    assert rec.invocations[0].user_content.parts[0].text == "難しい質問"

    everything = read_outputs(path)  # without the trusted cases: every record kept
    assert everything.unknown_cases == 0 and len(everything.by_suite["home"]) == 51


def test_an_over_long_line_is_read_past_and_the_next_record_kept(tmp_path, monkeypatch):
    from evalgate import trusted

    monkeypatch.setattr(trusted, "MAX_LINE_BYTES", 200)
    inv = {"invocation_id": "i1", "user_content": {"parts": [{"text": "火"}]}}
    known = {"suite": "home", "eval_set_id": "set", "eval_id": "난방-ko", "invocations": [inv], "新": 1}
    long_line = json.dumps(dict(known, eval_id="長い", pad="あ" * 3000), ensure_ascii=False)
    path = tmp_path / "inference.jsonl"
    path.write_text(long_line + "\n" + json.dumps(known, ensure_ascii=False) + "\n", encoding="utf-8")
    outputs = trusted.read_outputs(path, {"home": {("set", "난방-ko")}})
    assert outputs.skipped == 1 and outputs.unknown_cases == 0
    assert len(outputs.of("home", ("set", "난방-ko"))) == 1
    assert outputs.ignored_keys is not None and "inference.jsonl: line 2: ignored key '新'" in outputs.ignored_keys
