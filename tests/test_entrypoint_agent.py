"""The Action runs the pull request's agent: a real ADK agent whose tool code lives in the
repository, answering through a fake Gemini, gated against the fake GitHub API.

A pull request that changes the tool's code so an answer changes is caught (the comment
names the case, the status fails), and the fix passes. A fork's run, which has no model
key, says plainly that the agent could not run instead of passing. `install` brings the
agent's dependencies into the container before anything is loaded.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

pytest.importorskip("google.adk")

from agent_project import agent_model_server, make_project  # noqa: E402
from fake_github import fake_github  # noqa: F401,E402  (fixture)
from test_entrypoint import Action, _pull_request, _push  # noqa: E402

PR = 7


@pytest.fixture
def project(tmp_path):
    # One flip of a deterministic criterion fails: three cases are too few for the test to
    # tell one broken case from noise, and this agent's model is deterministic.
    return make_project(tmp_path, agent={"adk": "weather_agent"}, top={"gate": {"deterministic_flips": "fail"}})


@pytest.fixture
def action(fake_github, project, tmp_path, capsys):  # noqa: F811
    return Action(fake_github, project.root, tmp_path, capsys)


def _change_paris(project, forecast: str) -> None:
    agent_py = project.agent_dir / "agent.py"
    text = agent_py.read_text(encoding="utf-8")
    start = text.index('"Paris": "') + len('"Paris": "')
    end = text.index('"', start)
    agent_py.write_text(text[:start] + forecast + text[end:], encoding="utf-8")


def test_a_pull_request_that_breaks_a_tool_is_caught_and_the_fix_passes(action, project, monkeypatch):
    fake = action.fake
    main_commits = fake.linear_history(2)
    with agent_model_server(monkeypatch) as model:
        assert action("push", _push(main_commits[1]), sha=main_commits[1]) == 0, action.stdout
        assert "running the agent: 3 case runs" in action.stdout
        assert (project.root / "evalgate-results" / "inference.jsonl").is_file()
        baseline_requests = len(model.requests)

        _change_paris(project, "rain, 12 C")  # the PR's tool code: Paris answers change
        head = fake.add_commit([main_commits[1]], "PR head")
        code = action("pull_request", _pull_request(head, main_commits[1]), sha=head, ref=f"refs/pull/{PR}/merge")
        assert code == 1, action.stdout
        assert len(model.requests) > baseline_requests  # the agent ran again, on the PR's code
        [comment] = fake.issue_comments(PR)
        body = comment["body"]
        assert "paris" in body and "FAIL" in body and "rain, 12 C" in body
        assert "### Agent runs" in body
        assert [s["state"] for s in fake.statuses[head]] == ["failure"]

        _change_paris(project, "sunny, 21 C")  # the fix
        head2 = fake.add_commit([head], "fix")
        assert action("pull_request", _pull_request(head2, main_commits[1]), sha=head2) == 0, action.stdout
        [edited] = fake.issue_comments(PR)
        assert "PASS" in edited["body"]
        assert [s["state"] for s in fake.statuses[head2]] == ["success"]


def test_a_fork_without_the_model_key_says_the_agent_could_not_run(action, project, monkeypatch):
    fake = action.fake
    main_commits = fake.linear_history(2)
    with agent_model_server(monkeypatch):
        assert action("push", _push(main_commits[1]), sha=main_commits[1]) == 0, action.stdout
        monkeypatch.delenv("GOOGLE_API_KEY")  # a fork's pull request: no secrets
        head = fake.add_commit([main_commits[1]], "fork PR")
        code = action("pull_request", _pull_request(head, main_commits[1]), sha=head)
    assert action.outputs["verdict"] == "FAIL" and code == 1  # a suite that is an ERROR fails the gate
    body = fake.issue_comments(PR)[0]["body"]
    assert "ERROR" in body
    assert "weather: ERROR: the agent failed on every case run, so nothing it does was scored; without its model's key" in body
    assert "The error of 3 of 3 runs: ValueError: No API key was provided" in (project.root / "evalgate-results" / "results.json").read_text(encoding="utf-8")
    assert [s["state"] for s in fake.statuses[head]] == ["failure"]


@pytest.fixture
def dependency(tmp_path):
    """A tiny wheel the agent imports (built by hand: a wheel is a zip), uninstalled afterwards."""
    wheel = tmp_path / "evalgate_test_forecasts-0-py3-none-any.whl"
    files = {
        "evalgate_test_forecasts/__init__.py": "SOURCE = 'installed'\n",
        "evalgate_test_forecasts-0.dist-info/METADATA": "Metadata-Version: 2.1\nName: evalgate-test-forecasts\nVersion: 0\n",
        "evalgate_test_forecasts-0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},,\n" for name in files) + "evalgate_test_forecasts-0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(wheel, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
        z.writestr("evalgate_test_forecasts-0.dist-info/RECORD", record)
    yield wheel
    subprocess.run([sys.executable, "-m", "pip", "uninstall", "-y", "-q", "evalgate-test-forecasts"], capture_output=True)


def test_install_brings_the_agents_dependencies(action, project, monkeypatch, dependency):
    agent_py = project.agent_dir / "agent.py"
    agent_py.write_text("import evalgate_test_forecasts  # noqa: F401\n" + agent_py.read_text(encoding="utf-8"), encoding="utf-8")
    fake = action.fake
    main_commits = fake.linear_history(2)
    with agent_model_server(monkeypatch):
        assert action("push", _push(main_commits[1]), sha=main_commits[1]) == 2
        assert "No module named 'evalgate_test_forecasts'" in action.stdout and "install" in action.stdout

        bad = action("push", _push(main_commits[1]), sha=main_commits[1], install="-r no-such-requirements.txt")
        assert bad == 2
        errors = [line for line in action.stdout.splitlines() if line.startswith("::error")]
        assert len(errors) == 1 and "input 'install' (EVALGATE_INSTALL)" in errors[0] and "failed (exit 1)" in errors[0]

        args = f"--no-deps --no-index {dependency}"
        assert action("push", _push(main_commits[1]), sha=main_commits[1], install=args) == 0, action.stdout
    assert "::group::pip install --no-deps" in action.stdout


def test_a_re_run_leg_reuses_its_earlier_attempts_finished_runs(action, project, monkeypatch):
    import json

    sha = action.fake.linear_history(1)[0]
    (project.root / "prev").mkdir()  # restored from an attempt that stopped before the agent ran
    with agent_model_server(monkeypatch) as model:
        assert action("push", _push(sha), sha=sha, shard="1/1", out="prev", resume="prev") == 0, action.stdout
        assert "holds no finished agent runs" in action.stdout
        first = len(model.requests)
        assert first > 0 and (project.root / "prev" / "resume.json").is_file()

        assert action("push", _push(sha), sha=sha, shard="1/1", out="prev", resume="prev") == 0, action.stdout
        assert len(model.requests) == first  # the re-run's agent made no model call: every case run was reused
    results = json.loads((project.root / "prev" / "results.json").read_text(encoding="utf-8"))
    assert results["run"]["agent"]["suites"]["weather"]["reused"] == 3 and results["counts"]["passed"] == 3
