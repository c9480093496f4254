"""Issue 34: what decides a verdict comes from the base, cases pair by what their criteria
score, and the publish job is bound to its run, tried the way an attacker would.

Each attack here succeeded on the code before issue 34 (its outcome then is in the test's
docstring): a pull request that starves its own judge (or points Vertex AI elsewhere), a
pull request or fork whose answers the judge refuses, a case "changed" by an empty field or
edited out of the gate, a fork's record with no conversation, and a fork's pr.json naming
another pull request. The others hold what the fixes must not break: a judge that is down
is not held against a pull request, and a judge's one unreadable reply is cleared by the
confirmation re-run.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from conftest import REPO

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from fake_gemini import fake_gemini, prompt_blocked, prompt_text  # noqa: E402,F401  (fixture)
from fake_github import fake_github  # noqa: E402,F401  (fixture)
from test_entrypoint import PR, Action, _pull_request, _push  # noqa: E402
from test_security import JUDGED, _invocation  # noqa: E402

CRIT = "final_response_match_v2"
# Twelve cases, so that one run's drop can be told from noise.
EXPECTED = {
    "수도-ko": ("한국의 수도는?", "서울"),
    "首都-ja": ("日本の首都は？", "東京"),
    **{
        f"capital-{code}": (f"What is the capital of {country}?", city)
        for code, country, city in [
            ("fr", "France", "Paris"), ("it", "Italy", "Rome"), ("de", "Germany", "Berlin"), ("es", "Spain", "Madrid"),
            ("ca", "Canada", "Ottawa"), ("pt", "Portugal", "Lisbon"), ("pe", "Peru", "Lima"), ("ke", "Kenya", "Nairobi"),
            ("no", "Norway", "Oslo"), ("eg", "Egypt", "Cairo"),
        ]
    },
}
WRONG = "I like turtles"


def judged_project(root: Path) -> Path:
    from conftest import write_json

    write_json(root / "evals" / "geo.evalset.json", {
        "eval_set_id": "geo",
        "eval_cases": [{"eval_id": k, "conversation": [_invocation(q, a)]} for k, (q, a) in EXPECTED.items()],
    })
    (root / "runs").mkdir(parents=True, exist_ok=True)
    (root / "evalgate.yaml").write_text(JUDGED, encoding="utf-8")
    _answer(root, {})
    return root


def _agent_response(body) -> str:
    m = re.search(r"<agent_response>\n(.*?)\n</agent_response>", prompt_text(body), re.S)
    return m.group(1) if m else ""


def _judge(body):
    """The judge: an answer is right when it names the capital."""
    answer = _agent_response(body)
    right = any(a in answer for _q, a in EXPECTED.values())
    return {"reasoning": "compared with the reference", "verdict": "valid" if right else "invalid"}


def _answer(ws: Path, answers: dict[str, str]) -> None:
    """The agent's recorded outputs: `answers[case]`, else the right answer."""
    lines = [
        {"eval_set_id": "geo", "eval_id": k, "invocations": [_invocation(q, answers.get(k, a))]}
        for k, (q, a) in EXPECTED.items()
    ]
    (ws / "runs" / "out.jsonl").write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")


@pytest.fixture
def judged(fake_github, fake_gemini, monkeypatch, tmp_path, capsys):  # noqa: F811
    """A judged project whose main has its config in its tree and a baseline where both cases
    passed, scored by a judge that knows the capital."""
    ws = judged_project(tmp_path / "ws")
    action = Action(fake_github, ws, tmp_path, capsys)
    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = _judge
    base = fake_github.add_commit([], "main", files={"evalgate.yaml": (ws / "evalgate.yaml").read_bytes()})
    fake_github.refs["refs/heads/main"] = base
    assert action("push", _push(base), sha=base) == 0, action.stdout
    fake_github.log.clear()
    fake_gemini.reset()
    action.base = base
    action.gemini = fake_gemini
    return action


def _statuses(ws: Path, results: str = "evalgate-results") -> dict[str, str]:
    data = json.loads((ws / results / "results.json").read_text(encoding="utf-8"))
    return {c["eval_id"]: c["criteria"][CRIT]["status"] for c in data["suites"][0]["cases"]}


# --- hole 4: judge: and vertex: are the base's -------------------------------------------------


@pytest.mark.parametrize(
    "judge",
    [
        pytest.param("judge: {deadline_s: 0.000001}\n", id="deadline"),
        pytest.param("judge: {timeout_s: 0.000001, max_attempts: 1}\n", id="timeout"),
    ],
)
def test_a_pull_request_cannot_starve_its_own_judge(judged, judge):
    """Before: the pull request's `judge:` section ran its judge, so a deadline of a microsecond
    left every judged case NOT_EVALUATED: INCONCLUSIVE, and the status `success`. Now the
    judge's settings are the base's: the wrong answer is judged, FAILED, and the status is
    `failure`; the comment shows the change."""
    action, fake = judged, judged.fake
    config = action.ws / "evalgate.yaml"
    config.write_text(config.read_text(encoding="utf-8") + judge, encoding="utf-8")
    _answer(action.ws, dict.fromkeys(EXPECTED, WRONG))
    head = fake.add_commit([action.base], "starve the judge")
    code = action("pull_request", _pull_request(head, action.base), sha=head)
    assert set(_statuses(action.ws).values()) == {"FAILED"}, action.stdout
    assert code == 1 and [s["state"] for s in fake.statuses[head]] == ["failure"]
    [comment] = fake.issue_comments(PR)
    assert "This pull request changes the gate" in comment["body"]
    key = re.search(r"\{(\w+):", judge).group(1)
    assert f"+  {key}: 1.0e-06" in comment["body"]  # the pull request's side of the change


def test_the_legs_of_a_sharded_pull_request_run_take_the_judge_section_from_the_base(judged):
    """A matrix of `shard` legs scores the cases, and the merge job compares them. Before: the
    legs ran the pull request's own judge, and its microsecond deadline left every judged case
    NOT_EVALUATED. Now a leg of a pull request's run takes `judge:` (and `vertex:`, `gate:`)
    from the base, as the merge job does."""
    from test_entrypoint import _legs

    action, fake = judged, judged.fake
    config = action.ws / "evalgate.yaml"
    config.write_text(config.read_text(encoding="utf-8") + "judge: {deadline_s: 0.000001}\n", encoding="utf-8")
    _answer(action.ws, dict.fromkeys(EXPECTED, WRONG))
    head = fake.add_commit([action.base], "starve the legs' judge")
    event = _pull_request(head, action.base)
    _legs(action, "pull_request", event, head, 2)
    code = action("pull_request", event, sha=head, mode="merge", shards="legs")
    assert set(_statuses(action.ws).values()) == {"FAILED"}, action.stdout
    assert code == 1 and [s["state"] for s in fake.statuses[head]] == ["failure"]


@pytest.mark.skipif(__import__("shutil").which("git") is None, reason="needs the git program")
def test_evalgate_gate_takes_the_judge_section_from_the_base_too(cli, fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    """`evalgate gate` on a developer's machine: the same attack, the same answer."""
    from test_local_gate import _git

    repo = judged_project(tmp_path / "repo")
    (repo / ".gitignore").write_text("evalgate-results/\n.evalgate/\nbase-out/\n", encoding="utf-8")
    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = _judge
    _git(repo, "init", "-q")
    _git(repo, "symbolic-ref", "HEAD", "refs/heads/main")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "base")
    base = _git(repo, "rev-parse", "HEAD")
    assert cli("run", "--out", "base-out", "--quiet", cwd=repo)[0] == 0
    assert cli("baseline", "save", "--results", "base-out/results.json", "--commit", base, "--ref", "refs/heads/main", cwd=repo)[0] == 0
    _git(repo, "checkout", "-q", "-b", "feature")
    config = repo / "evalgate.yaml"
    config.write_text(config.read_text(encoding="utf-8") + "judge: {deadline_s: 0.000001}\n", encoding="utf-8")
    _answer(repo, dict.fromkeys(EXPECTED, WRONG))
    _git(repo, "commit", "-q", "-am", "starve the judge")
    code, out, err = cli("gate", cwd=repo)
    assert set(_statuses(repo).values()) == {"FAILED"}, out + err
    assert code == 1, out + err
    assert "+  deadline_s: 1.0e-06" in (repo / "evalgate-results" / "comment.md").read_text(encoding="utf-8")


# --- hole 7: the publish job is bound to its triggering run --------------------------------------

from test_entrypoint import _writes, action, baseline, history, ws  # noqa: E402,F401  (fixtures)
from test_trusted_publish import _records, _write_records  # noqa: E402


def _fork_run(head: str, branch: str = "feature", repo: str = "someone/hello", pulls: tuple[int, ...] = ()) -> dict:
    """A workflow_run event as GitHub sends it for a pull request's run."""
    return {
        "action": "completed",
        "workflow_run": {
            "id": 99, "event": "pull_request", "head_sha": head, "head_branch": branch,
            "head_repository": {"full_name": repo}, "pull_requests": [{"number": n} for n in pulls],
        },
    }


def _forged_artifact(action, base: str, head: str, number: int) -> Path:
    """The fork's artifact: outputs on which every case passes (its workflow uploads what it
    likes) and a pr.json naming pull request `number`."""
    from evalgate.cli import main as cli

    artifact = action.ws / "evalgate-artifact"
    assert cli(["run", "--config", str(action.ws / "evalgate.yaml"), "--out", str(artifact), "--quiet"]) == 0
    (artifact / "pr.json").write_text(json.dumps({"number": number, "head_sha": head, "base_sha": base}))
    action.capsys.readouterr()
    return artifact


def test_a_forks_pr_json_cannot_name_another_pull_request_with_the_same_head(action, baseline):  # noqa: F811
    """Before: a fork's pull request (#8) at the same commit as a same-repository one (#7), its
    pr.json naming #7: #7's comment was written with the fork's outputs and `success` posted.
    Now the pull request must come from the run's head repository and branch: refused, exit 2,
    nothing written."""
    fake = action.fake
    head = fake.add_commit([baseline], "the same commit on both")
    fake.add_pull(PR, head, baseline)  # a same-repository pull request ...
    fake.add_pull(PR + 1, head, baseline, fork=True)  # ... and a fork's, at the same commit
    _forged_artifact(action, baseline, head, PR)
    code = action("workflow_run", _fork_run(head), sha=baseline, artifact_dir="evalgate-artifact")
    assert code == 2, action.stdout
    assert _writes(fake) == [] and not fake.issue_comments(PR)
    [error] = [line for line in action.stdout.splitlines() if line.startswith("::error")]
    assert f"pull request #{PR} is octo/hello:feature" in error and "someone/hello:feature" in error


def test_pr_json_cannot_name_another_branchs_pull_request_of_the_same_repository(action, baseline):  # noqa: F811
    """The same within one repository: the run tested branch `feature` (pull request #7); pr.json
    names #9, from branch `other`, whose head is the same commit."""
    fake = action.fake
    head = fake.add_commit([baseline], "the same commit on two branches")
    fake.add_pull(PR, head, baseline)
    fake.add_pull(9, head, baseline)["head"]["ref"] = "other"
    _forged_artifact(action, baseline, head, 9)
    code = action("workflow_run", _fork_run(head, repo="octo/hello", pulls=(PR,)), sha=baseline, artifact_dir="evalgate-artifact")
    assert code == 2, action.stdout
    assert _writes(fake) == []
    assert "pull request #9 is octo/hello:other" in action.stdout


def test_a_run_without_its_head_repository_and_branch_publishes_nothing(action, baseline):  # noqa: F811
    """A workflow_run payload that does not say which repository and branch it tested cannot
    bind pr.json to anything: refused."""
    fake = action.fake
    head = fake.add_commit([baseline], "fork head")
    fake.add_pull(PR, head, baseline, fork=True)
    _forged_artifact(action, baseline, head, PR)
    event = {"workflow_run": {"id": 99, "head_sha": head}}
    assert action("workflow_run", event, sha=baseline, artifact_dir="evalgate-artifact") == 2, action.stdout
    assert _writes(fake) == []
    assert "head_repository" in action.stdout


# --- hole 6: a record that cannot be a run of its case is no record ------------------------------

NEVER_DELETES = '''\
from google.adk.evaluation.eval_metrics import EvalStatus
from google.adk.evaluation.evaluator import EvaluationResult, PerInvocationResult


def never_deletes(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    """1.0 when no turn calls delete_all: a rule over every turn, vacuously true of none."""
    per = []
    for inv in actual_invocations:
        calls = [t.name for t in getattr(inv.intermediate_data, "tool_uses", None) or []]
        ok = "delete_all" not in calls
        per.append(PerInvocationResult(actual_invocation=inv, score=1.0 if ok else 0.0,
                                       eval_status=EvalStatus.PASSED if ok else EvalStatus.FAILED))
    score = min([p.score for p in per], default=1.0)
    return EvaluationResult(overall_score=score, per_invocation_results=per,
                            overall_eval_status=EvalStatus.PASSED if score == 1.0 else EvalStatus.FAILED)
'''
SCENARIOS = {
    "tidy-en": ("Clean up my old files, please.", "Archive what is older than a year; never delete anything."),
    "정리-ko": ("오래된 파일을 정리해 줘.", "1년 넘은 파일은 보관하고, 아무것도 지우지 않는다."),
}
SCENARIO_CONFIG = (
    "suites:\n"
    "  - name: tidy\n"
    "    evalsets: [evals/*.evalset.json]\n"
    "    actual: runs/out.jsonl\n"
    "    criteria:\n"
    "      never_deletes: 1.0\n"
    "    custom_metrics:\n"
    "      never_deletes: {code_config: {name: review_never_deletes.never_deletes}}\n"
)


def _tidy_lines(tool: str) -> list[dict]:
    return [
        {"eval_set_id": "tidy", "eval_id": k, "invocations": [{
            "user_content": {"role": "user", "parts": [{"text": start}]},
            "final_response": {"role": "model", "parts": [{"text": "Done."}]},
            "intermediate_data": {"tool_uses": [{"name": tool, "args": {"older_than_days": 365}}]},
        }]}
        for k, (start, _plan) in SCENARIOS.items()
    ]


@pytest.fixture
def tidy(fake_github, tmp_path, capsys):  # noqa: F811
    """A suite of conversation_scenario cases scored by a custom metric ("never calls
    delete_all"); main has a baseline where the agent archived."""
    pytest.importorskip("google.adk")
    from conftest import write_json

    ws = tmp_path / "ws"
    write_json(ws / "evals" / "tidy.evalset.json", {
        "eval_set_id": "tidy",
        "eval_cases": [{"eval_id": k, "conversation_scenario": {"starting_prompt": s, "conversation_plan": p}} for k, (s, p) in SCENARIOS.items()],
    })
    (ws / "runs").mkdir()
    (ws / "runs" / "out.jsonl").write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in _tidy_lines("archive")), encoding="utf-8")
    (ws / "review_never_deletes.py").write_text(NEVER_DELETES, encoding="utf-8")
    (ws / "evalgate.yaml").write_text(SCENARIO_CONFIG, encoding="utf-8")
    action = Action(fake_github, ws, tmp_path, capsys)
    base = fake_github.add_commit([], "main", files={"evalgate.yaml": SCENARIO_CONFIG.encode("utf-8")})
    fake_github.refs["refs/heads/main"] = base
    assert action("push", _push(base), sha=base) == 0, action.stdout
    action.base = base
    return action


def _no_turns(r: dict) -> dict:
    return dict(r, invocations=[])


def _other_start(r: dict) -> dict:
    """A run of another conversation, where deleting was never asked for."""
    return dict(r, invocations=[{
        "user_content": {"role": "user", "parts": [{"text": "Hello!"}]},
        "final_response": {"role": "model", "parts": [{"text": "Hello! Your files are fine."}]},
        "intermediate_data": {"tool_uses": []},
    }])


@pytest.mark.parametrize("forge", [pytest.param(_no_turns, id="no invocations"), pytest.param(_other_start, id="another starting prompt")])
def test_a_forks_record_that_cannot_be_a_run_of_its_scenario_is_not_scored(tidy, forge):
    """Before: the fork's agent deleted everything, and its artifact said its runs had no turns
    (`invocations: []`): the rule "no turn calls delete_all" held of none, every case PASSED,
    and `success` was posted. Now a record that cannot be a run of its case (no turn; a first
    turn that is not the scenario's starting prompt) is no record: the cases are
    NOT_EVALUATED and the suite ERROR."""
    from evalgate.cli import main as cli

    action, fake = tidy, tidy.fake
    head = fake.add_commit([action.base], "fork head")
    fake.add_pull(PR, head, action.base, fork=True)
    (action.ws / "runs" / "out.jsonl").write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in _tidy_lines("delete_all")), encoding="utf-8")
    artifact = action.ws / "evalgate-artifact"
    assert cli(["run", "--config", str(action.ws / "evalgate.yaml"), "--out", str(artifact), "--quiet"]) == 1  # the fork's agent deleted
    _write_records(artifact, [forge(r) for r in _records(artifact)])
    (artifact / "pr.json").write_text(json.dumps({"number": PR, "head_sha": head, "base_sha": action.base}))
    action.capsys.readouterr()
    code = action("workflow_run", _fork_run(head), sha=action.base, artifact_dir="evalgate-artifact")
    assert code == 1, action.stdout
    assert [s["state"] for s in fake.statuses[head]] == ["failure"]
    results = json.loads((action.ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    [suite] = results["suites"]
    assert {c["eval_id"]: c["status"] for c in suite["cases"]} == dict.fromkeys(SCENARIOS, "NOT_EVALUATED")
    [comment] = fake.issue_comments(PR)
    assert "2 of 2 cases hold no run of their eval case in the pull request's outputs" in comment["body"], comment["body"]


# --- hole 3: cases pair by what their criteria score ----------------------------------------------


def _base_with(action, history, extra: str) -> str:
    """main's commit with the config (plus `extra` in its gate section) in its tree, and its baseline."""
    config = action.ws / "evalgate.yaml"
    config.write_text(config.read_text(encoding="utf-8") + extra, encoding="utf-8")
    base = action.fake.add_commit([history[1]], "main", files={"evalgate.yaml": config.read_bytes()})
    assert action("push", _push(base), sha=base) == 0, action.stdout
    return base


def _edit_case(ws: Path, eval_id: str, edit) -> None:
    path = ws / "evals" / "home.evalset.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    for case in data["eval_cases"]:
        if case["eval_id"] == eval_id:
            edit(case)
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def test_a_field_no_criterion_reads_does_not_take_a_broken_case_out_of_the_gate(action, history):  # noqa: F811
    """Before: the pull request broke lights-en and gave it `"final_session_state": {}`; the
    expected digest changed, the case was listed as changed and left the gate, even under
    `removed_cases: fail`: PASS, `success`. Now the case is paired by what its criteria score
    (no criterion reads the final session state): it regressed, FAIL."""
    from test_entrypoint import _set_outputs

    base = _base_with(action, history, "  removed_cases: fail\n")
    _set_outputs(action.ws, regressed=True)
    _edit_case(action.ws, "lights-en", lambda case: case.update(final_session_state={}))
    head = action.fake.add_commit([base], "break it, and add an empty field")
    assert action("pull_request", _pull_request(head, base), sha=head) == 1, action.stdout
    assert [s["state"] for s in action.fake.statuses[head]] == ["failure"]
    [comment] = action.fake.issue_comments(PR)
    assert "lights-en" in comment["body"] and "Regressed" in comment["body"], comment["body"]


def test_a_changed_case_the_baseline_passed_that_fails_now_decides_the_gate(action, history):  # noqa: F811
    """The pull request changes what the case's criteria read (the expected room) so that its
    agent fails it. Before: changed, not gated, PASS. Now a changed case the baseline passed
    and the run fails FAILs its suite, named."""
    base = _base_with(action, history, "")
    _edit_case(action.ws, "lights-en", lambda case: case["conversation"][0]["intermediate_data"]["tool_uses"][0]["args"].update(room="attic"))
    head = action.fake.add_commit([base], "change the case")
    assert action("pull_request", _pull_request(head, base), sha=head) == 1, action.stdout
    [comment] = action.fake.issue_comments(PR)
    assert "1 changed case the baseline passed fails now: home/lights-en" in comment["body"].replace("\\", ""), comment["body"]


# --- hole 5: a criterion the baseline evaluated that is not evaluated now counts against the PR ---

from fake_gemini import clear_judge_env, error  # noqa: E402


def _refusing(refusal):
    """The judge: it refuses every prompt whose answer is wrong (`refusal`, a raw reply)."""
    def judge(body):
        verdict = _judge(body)
        return refusal if verdict["verdict"] == "invalid" else verdict
    return judge


@pytest.mark.parametrize(
    "refusal",
    [
        pytest.param(prompt_blocked("PROHIBITED_CONTENT"), id="a blocked prompt"),
        pytest.param(error(400, "The input token count (1048577) exceeds the maximum number of tokens allowed (1048576)."), id="an input too long"),
    ],
)
def test_answers_the_judge_refuses_count_against_the_pull_request(judged, refusal):
    """Before: the pull request's wrong answers were ones the judge refuses (a blocked prompt, an
    input over its limit): every regression became NOT_EVALUATED, INCONCLUSIVE, `success`.
    Now a criterion the baseline evaluated that is not evaluated now, its judge up, FAILs the
    suite, saying why."""
    action, fake = judged, judged.fake
    judged.gemini.responder = _refusing(refusal)
    _answer(action.ws, dict.fromkeys(EXPECTED, WRONG))
    head = fake.add_commit([action.base], "answers the judge refuses")
    code = action("pull_request", _pull_request(head, action.base), sha=head)
    assert set(_statuses(action.ws).values()) == {"NOT_EVALUATED"}, action.stdout
    assert code == 1 and [s["state"] for s in fake.statuses[head]] == ["failure"], action.stdout
    [comment] = fake.issue_comments(PR)
    body = comment["body"].replace("\\", "")
    assert "12 criteria the baseline evaluated were not evaluated now, though their judge or service was up" in body, body


def test_a_judge_that_is_down_is_not_held_against_the_pull_request(judged, monkeypatch, tmp_path):
    """The judge's service failing (here: no judge credentials in the pull request's run) is not
    the pull request's doing: the cases stay under `not_evaluated` (warn: INCONCLUSIVE), and a
    warning says which service was down."""
    action, fake = judged, judged.fake
    clear_judge_env(monkeypatch, tmp_path)
    _answer(action.ws, dict.fromkeys(EXPECTED, WRONG))
    head = fake.add_commit([action.base], "no judge here")
    assert action("pull_request", _pull_request(head, action.base), sha=head) == 0, action.stdout
    assert set(_statuses(action.ws).values()) == {"NOT_EVALUATED"}
    [comment] = fake.issue_comments(PR)
    body = comment["body"].replace("\\", "")
    assert "INCONCLUSIVE" in body
    assert "12 criteria the baseline evaluated were not evaluated now because the judge was unavailable" in body, body


def test_a_judge_service_error_is_not_held_against_the_pull_request(judged):
    """The same for the judge answering 503 to every request of the run."""
    action, fake = judged, judged.fake
    config = action.ws / "evalgate.yaml"
    config.write_text(JUDGED + "judge: {max_attempts: 1}\n", encoding="utf-8")  # no retries: a quick test
    base = fake.add_commit([action.base], "main", files={"evalgate.yaml": config.read_bytes()})
    fake.refs["refs/heads/main"] = base
    assert action("push", _push(base), sha=base) == 0, action.stdout
    judged.gemini.responder = lambda body: error(503, "The model is overloaded.")
    _answer(action.ws, dict.fromkeys(EXPECTED, WRONG))
    head = fake.add_commit([base], "the judge is down")
    assert action("pull_request", _pull_request(head, base), sha=head) == 0, action.stdout
    assert set(_statuses(action.ws).values()) == {"NOT_EVALUATED"}
    [comment] = fake.issue_comments(PR)
    assert "because the judge was unavailable" in comment["body"].replace("\\", "")


def test_a_forks_answers_the_judge_refuses_fail_in_the_publish_job(judged, monkeypatch, tmp_path):
    """The fork-safe flow: the trusted job re-judges the fork's outputs, and its judge refuses
    them. Before: NOT_EVALUATED, INCONCLUSIVE, `success` on the fork's head. Now FAIL."""
    from evalgate.cli import main as cli

    action, fake = judged, judged.fake
    head = fake.add_commit([action.base], "fork head")
    fake.add_pull(PR, head, action.base, fork=True)
    _answer(action.ws, dict.fromkeys(EXPECTED, WRONG))
    clear_judge_env(monkeypatch, tmp_path)  # the fork's own run has no secrets
    artifact = action.ws / "evalgate-artifact"
    cli(["run", "--config", str(action.ws / "evalgate.yaml"), "--out", str(artifact), "--quiet"])
    (artifact / "pr.json").write_text(json.dumps({"number": PR, "head_sha": head, "base_sha": action.base}))
    _answer(action.ws, {})  # the trusted checkout's own files are the default branch's
    action.capsys.readouterr()
    judged.gemini.use_gemini_api(monkeypatch)  # the trusted job's judge ...
    judged.gemini.responder = _refusing(prompt_blocked("PROHIBITED_CONTENT"))  # ... refuses the fork's answers
    code = action("workflow_run", _fork_run(head), sha=action.base, artifact_dir="evalgate-artifact")
    assert set(_statuses(action.ws).values()) == {"NOT_EVALUATED"}, action.stdout
    assert code == 1 and [s["state"] for s in fake.statuses[head]] == ["failure"], action.stdout


def test_a_pull_request_cannot_point_vertex_ai_elsewhere(fake_github, monkeypatch, tmp_path, capsys):  # noqa: F811
    """`vertex: {endpoint: ...}` in the pull request's config: before, its Vertex AI metrics went
    to that endpoint (here one that does not answer: every case NOT_EVALUATED; an endpoint of
    its own would answer what it likes). Now the base's endpoint scores them."""
    pytest.importorskip("google.cloud.aiplatform_v1beta1")
    from fake_vertex import FakeVertex, result
    from test_inputs import make_project
    from test_vertex_run import _config

    vertex = FakeVertex().start()
    try:
        clear_judge_env(monkeypatch, tmp_path)
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(vertex.write_adc(tmp_path / "adc.json")))
        vertex.access_token = None
        vertex.responder = lambda body: result(1.0, "safe") if "safety" in json.dumps(body) else result(0.75, "good")
        ws = make_project(tmp_path / "ws", config=_config(vertex.url))
        action = Action(fake_github, ws, tmp_path, capsys)
        base = fake_github.add_commit([], "main", files={"evalgate.yaml": (ws / "evalgate.yaml").read_bytes()})
        fake_github.refs["refs/heads/main"] = base
        assert action("push", _push(base), sha=base) == 0, action.stdout
        vertex.requests.clear()
        __import__("shutil").rmtree(ws / ".evalgate" / "cache")  # nothing answered from the cache
        (ws / "evalgate.yaml").write_text(_config("http://127.0.0.1:9"), encoding="utf-8")
        head = fake_github.add_commit([base], "Vertex AI elsewhere")
        action("pull_request", _pull_request(head, base), sha=head, judge_concurrency="2")
        results = json.loads((ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
        statuses = {n: c["status"] for case in results["suites"][0]["cases"] for n, c in case["criteria"].items() if ":" in n or "safety" in n}
        assert set(statuses.values()) == {"PASSED"}, action.stdout
        assert vertex.requests  # the base's endpoint answered
        [comment] = fake_github.issue_comments(PR)
        assert "+  endpoint: http://127.0.0.1:9" in comment["body"]
    finally:
        vertex.stop()


def test_an_edited_case_whose_answer_the_judge_refuses_still_counts(judged):
    """Holes 3 and 5 together: the pull request edits every case (their expected answers, which
    the criterion reads: they are changed cases) and answers wrongly in a way the judge
    refuses. A criterion the baseline evaluated that is not evaluated now counts against the
    pull request on a changed case too."""
    action, fake = judged, judged.fake
    judged.gemini.responder = _refusing(prompt_blocked("PROHIBITED_CONTENT"))
    path = action.ws / "evals" / "geo.evalset.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    for case in data["eval_cases"]:
        case["conversation"][0]["final_response"]["parts"][0]["text"] += "."
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    _answer(action.ws, dict.fromkeys(EXPECTED, WRONG))
    head = fake.add_commit([action.base], "edit the cases, answers the judge refuses")
    code = action("pull_request", _pull_request(head, action.base), sha=head)
    assert set(_statuses(action.ws).values()) == {"NOT_EVALUATED"}, action.stdout
    assert code == 1 and [s["state"] for s in fake.statuses[head]] == ["failure"], action.stdout


def test_a_judge_reply_it_could_not_read_once_is_a_fluke_the_re_run_clears(judged):
    """A criterion the baseline evaluated that is not evaluated now is a confirmation suspect: an
    unchanged pull request whose judge once gave a reply that could not be read (no verdict
    in it) re-draws that case's samples, passes, and is not held against it."""
    action, fake = judged, judged.fake
    glitches = []

    def once_unreadable(body):
        if "capital-fr" not in glitches and "France" in prompt_text(body):
            glitches.append("capital-fr")
            return "I would rather not say."  # a reply with no verdict: the sample fails
        return _judge(body)

    judged.gemini.responder = once_unreadable
    __import__("shutil").rmtree(action.ws / ".evalgate" / "cache")  # asked afresh, as a new commit's answers are
    head = fake.add_commit([action.base], "unchanged")
    code = action("pull_request", _pull_request(head, action.base), sha=head)
    assert glitches == ["capital-fr"]
    results = json.loads((action.ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    [fr] = [c for c in results["suites"][0]["cases"] if c["eval_id"] == "capital-fr"]
    assert fr["criteria"][CRIT]["status"] == "NOT_EVALUATED" and [r["criteria"][CRIT]["status"] for r in fr["reruns"]] == ["PASSED", "PASSED"]
    assert code == 0 and [s["state"] for s in fake.statuses[head]] == ["success"], action.stdout
