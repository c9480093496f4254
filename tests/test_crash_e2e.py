"""An agent that crashes on a case the baseline passed, end to end (evalgate.gate.crash).

`evalgate gate` with a real ADK agent (tests/agents/weather_agent, in-process, its model the
fake Gemini): the pull request's tool raises for 서울. The case is NOT_EVALUATED in the run,
which `not_evaluated: warn` used to let pass; now it is re-run, fails again in both re-runs,
and fails the gate, and the comment says so. A tool that raises only once is flaky and not
counted; with `gate.confirm.runs: 0` the comment warns. The action's PR path and a sharded
run's merge job, with the `command` runner's agent that exits with an error on one case, follow.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from agent_project import agent_model_server, make_project
from fake_github import fake_github  # noqa: F401  (fixture)
from test_confirm_e2e import CONFIG as COMMAND_CONFIG
from test_confirm_e2e import HISTORY
from test_confirm_e2e import _project as command_project
from test_entrypoint import Action, _pull_request, _push

pytest.importorskip("google.adk")

BROKEN = '''
def get_weather(city: str) -> dict:
    """Returns the current weather in a city."""
    if city == "서울":
        raise RuntimeError("서울 forecast service moved")
'''

ONCE = '''
def get_weather(city: str) -> dict:
    """Returns the current weather in a city."""
    import pathlib
    seen = pathlib.Path(__file__).with_name("crashed-once")
    if city == "서울" and not seen.exists():
        seen.write_text("yes", encoding="utf-8")
        raise RuntimeError("서울 forecast service timed out")
'''

HEAD = '''
def get_weather(city: str) -> dict:
    """Returns the current weather in a city."""
'''


def _tool(project, body: str) -> None:
    agent = project.agent_dir / "agent.py"
    text = (project.agent_dir.parent.parent / "original.py").read_text(encoding="utf-8")
    assert HEAD in text
    agent.write_text(text.replace(HEAD, body), encoding="utf-8")
    (project.agent_dir / "crashed-once").unlink(missing_ok=True)


def _gate_config(project, **gate) -> None:
    data = yaml.safe_load(project.config.read_text(encoding="utf-8"))
    data["gate"] = gate
    project.config.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")


@pytest.fixture
def project(tmp_path, cli, monkeypatch):
    """The weather agent's project with a baseline of its unchanged run (every case PASSED)."""
    project = make_project(tmp_path, agent={"adk": "weather_agent"})
    shutil.copy(project.agent_dir / "agent.py", tmp_path / "original.py")
    with agent_model_server(monkeypatch):
        code, out, err = cli("run", "--config", str(project.config), "--out", str(project.root / "base-out"), "--quiet", cwd=project.root)
        assert code == 0, out + err
        base = json.loads((project.root / "base-out" / "results.json").read_text(encoding="utf-8"))
        assert {c["eval_id"]: c["status"] for c in base["suites"][0]["cases"]} == {"paris": "PASSED", "seoul_ko": "PASSED", "two_turns": "PASSED"}
        yield project


def _gate(cli, project):
    code, out, err = cli("gate", "--config", str(project.config), "--baseline", "base-out/results.json", cwd=project.root)
    out_dir = project.root / "evalgate-results"
    comment = (out_dir / "comment.md").read_text(encoding="utf-8")
    results = json.loads((out_dir / "results.json").read_text(encoding="utf-8"))
    return code, out + err, comment, {c["eval_id"]: c for c in results["suites"][0]["cases"]}


def test_a_tool_that_now_raises_on_a_case_the_baseline_passed_fails_the_gate(cli, project):
    _tool(project, BROKEN)
    code, out, comment, cases = _gate(cli, project)
    assert code == 1, out
    assert "confirmation: 1 suspect case(s) re-run 2 time(s) each (2 agent runs, 0 judge re-draws)" in out
    assert "weather: FAIL: weather/seoul_ko: the agent failed on this case in the run and in 2 of 2 re-runs, where the baseline passed it (RuntimeError: 서울 forecast service moved)" in out
    assert "- weather/seoul\\_ko (response\\_match\\_score, tool\\_trajectory\\_avg\\_score): the agent failed on this case in the run and in 2 of 2 re-runs: broken" in comment
    seoul = cases["seoul_ko"]
    assert seoul["agent_error"] == "RuntimeError: 서울 forecast service moved"
    assert {c["status"] for c in seoul["criteria"].values()} == {"NOT_EVALUATED"}  # the first run, kept as it was
    assert [(r["run"], r["how"], r["error"]) for r in seoul["reruns"]] == [(1, "agent", "RuntimeError: 서울 forecast service moved")] * 1 + [
        (2, "agent", "RuntimeError: 서울 forecast service moved")
    ]
    assert "agent_error" not in cases["paris"] and "reruns" not in cases["paris"]


def test_a_tool_that_raises_once_is_flaky_and_without_re_runs_the_comment_warns(cli, project):
    _tool(project, ONCE)
    code, out, comment, cases = _gate(cli, project)
    assert code == 0, out
    assert "the agent failed on this case in the run and passed on re-run: flaky, not counted (2 of 2 passed)" in comment
    assert [r["status"] for r in cases["seoul_ko"]["reruns"]] == ["PASSED", "PASSED"]

    _gate_config(project, confirm={"runs": 0})
    _tool(project, BROKEN)
    code, out, comment, cases = _gate(cli, project)
    assert code == 0, out  # not_evaluated: warn, as before; but it says so
    assert "reruns" not in cases["seoul_ko"]
    assert (
        "warning: 1 case the baseline passed was not evaluated: the agent failed on it in this run and it was not re-run "
        "(gate.confirm.runs is 0): weather/seoul\\_ko (RuntimeError: 서울 forecast service moved)"
    ) in comment



# --- the action: a same-repository pull request, and a sharded one ------------------------

CRASHING = '''
    if "난방" in text and HEATING_ROOM == "침실":
        sys.exit("heating controller: 침실 not wired")
'''


def _crash(ws: Path) -> None:
    """The pull request: the agent exits with an error on the heating case."""
    agent = ws / "agent.py"
    text = agent.read_text(encoding="utf-8").replace('HEATING_ROOM = "거실"', 'HEATING_ROOM = "침실"')
    text = text.replace('    text = json.loads(raw.decode("utf-8"))["user_content"]["parts"][0]["text"]\n',
                        '    text = json.loads(raw.decode("utf-8"))["user_content"]["parts"][0]["text"]\n' + CRASHING.lstrip("\n"))
    assert "sys.exit" in text
    agent.write_text(text, encoding="utf-8")


def _pushed(fake_github, tmp_path, capsys, config: str = COMMAND_CONFIG):
    ws = command_project(tmp_path / "ws", config)
    action = Action(fake_github, ws, tmp_path, capsys)
    main_commits = fake_github.linear_history(HISTORY)
    for sha in main_commits:
        assert action("push", _push(sha), sha=sha) == 0, action.stdout
    _crash(ws)
    head = fake_github.add_commit([main_commits[-1]], "PR head")
    return ws, action, head, _pull_request(head, main_commits[-1])


WORDS = "the agent failed on this case in the run and in 2 of 2 re-runs"


def test_the_actions_pr_path_fails_a_pull_request_whose_agent_crashes(fake_github, tmp_path, capsys):  # noqa: F811
    ws, action, head, event = _pushed(fake_github, tmp_path, capsys)
    code = action("pull_request", event, sha=head, ref="refs/pull/7/merge")
    assert code == 1, action.stdout
    assert "confirmation: 1 suspect case(s) re-run 2 time(s) each (2 agent runs, 0 judge re-draws)" in action.stdout
    [comment] = fake_github.issue_comments(7)
    assert f"- home/난방-ko (response\\_match\\_score, tool\\_trajectory\\_avg\\_score): {WORDS}: broken" in comment["body"]
    assert [s["state"] for s in fake_github.statuses[head]] == ["failure"]


def test_a_sharded_pull_request_whose_agent_crashes_fails_in_the_merge_job(fake_github, tmp_path, capsys):  # noqa: F811
    ws, action, head, event = _pushed(fake_github, tmp_path, capsys)
    ref = "refs/pull/7/merge"
    for k in (1, 2):
        assert action("pull_request", event, sha=head, ref=ref, shard=f"{k}/2", out=f"legs/leg-{k}") == 0, action.stdout
    code = action("pull_request", event, sha=head, ref=ref, mode="merge", shards="legs")
    assert code == 1, action.stdout
    [comment] = fake_github.issue_comments(7)
    assert f"{WORDS}: broken" in comment["body"]
    results = json.loads((ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    heating = next(c for c in results["suites"][0]["cases"] if c["eval_id"] == "난방-ko")
    assert heating["agent_error"] and len(heating["reruns"]) == 2


def test_without_re_runs_the_action_passes_with_a_warning_line(fake_github, tmp_path, capsys):  # noqa: F811
    ws, action, head, event = _pushed(fake_github, tmp_path, capsys, COMMAND_CONFIG + "  confirm: {runs: 0}\n")
    code = action("pull_request", event, sha=head, ref="refs/pull/7/merge")
    assert code == 0, action.stdout
    [comment] = fake_github.issue_comments(7)
    assert "warning: 1 case the baseline passed was not evaluated: the agent failed on it in this run and it was not re-run (gate.confirm.runs is 0): home/난방-ko" in comment["body"]
