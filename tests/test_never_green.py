"""Never green for what was not evaluated (issue 35, items 1 and 2).

A real ADK agent (the weather agent, a real Python tool) runs in-process; its model is the
fake Gemini on 127.0.0.1, or nothing at all. When the agent never ran, `run` must not exit 0,
its JUnit must not read green, and the warning must name the real cause, read from the
exception the run raised, not guessed.
"""

from __future__ import annotations

import socket
import xml.etree.ElementTree as ET

import pytest

from agent_project import agent_model_server, make_project
from fake_gemini import clear_judge_env, error

from evalgate.infer import _describe, failure_cause


def _junit_counts(project) -> dict[str, str]:
    root = ET.parse(project.out / "junit.xml").getroot()
    return {k: root.get(k) for k in ("tests", "failures", "errors", "skipped")}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_agent_without_its_key_is_no_pass(cli, tmp_path, monkeypatch):
    project = make_project(tmp_path, agent={"adk": "weather_agent"})
    clear_judge_env(monkeypatch)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("ADK_DISABLE_LOAD_DOTENV", "1")
    code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out), "--no-color")
    assert code == 1, out + err
    assert "overall: NOT_EVALUATED" in out
    # Every case is an error for a CI reporter, none "skipped" (which reads green).
    assert _junit_counts(project) == {"tests": "3", "failures": "0", "errors": "3", "skipped": "0"}
    assert "without its model's key" in out
    # compare and gate read it the same way.
    code, _, _ = cli("compare", "--current", str(project.out / "results.json"), "--config", str(project.config), "--output", str(tmp_path / "c.md"))
    assert code == 1
    # ... and the comment does not contradict itself (item 4): no criterion PASSes over no
    # case, and without a baseline no case is "added".
    comment = (tmp_path / "c.md").read_text(encoding="utf-8")
    assert "| response\\_match\\_score | 0.80 | 0 | – | **INCONCLUSIVE** |" in comment
    assert "PASS |" not in comment and "Added cases" not in comment


def test_a_legacy_case_is_named_once():
    from evalgate.gate.model import CaseKey
    from evalgate.reports.markdown import _label

    path = "evals/legacy/home_legacy.test.json"
    assert _label(CaseKey("home", path, path), show_suite=True) == f"home: {path}"
    assert _label(CaseKey("home", "set", "case"), show_suite=False) == "set / case"


def test_an_unreachable_model_is_named_as_such_not_as_a_missing_key(cli, tmp_path, monkeypatch):
    project = make_project(tmp_path, agent={"adk": "weather_agent"})
    clear_judge_env(monkeypatch)
    monkeypatch.setenv("GOOGLE_API_KEY", "a-key-that-is-set")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.setenv("ADK_DISABLE_LOAD_DOTENV", "1")
    code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out), "--no-color")
    assert code == 1, out + err
    assert "the model's host could not be reached" in out
    assert "model's key" not in out


def test_a_refused_key_is_named_as_such(cli, tmp_path, monkeypatch):
    project = make_project(tmp_path, agent={"adk": "weather_agent"})
    with agent_model_server(monkeypatch) as fake:
        fake.queue(error(403, "Permission denied: API key not valid."), times=1000)
        code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out), "--no-color")
    assert code == 1, out + err
    assert "its credentials were refused" in out
    assert "model's key" not in out


def test_one_suite_that_never_ran_is_not_hidden_by_another_that_passed(cli, tmp_path, monkeypatch):
    """A second suite of recorded outputs passes; the agent's suite was not evaluated: the
    run is NOT_EVALUATED and exits 1, not PASSED and 0."""
    project = make_project(tmp_path, agent={"adk": "weather_agent"})
    with agent_model_server(monkeypatch):  # a first run records what the agent answers
        assert cli("run", "--config", str(project.config), "--out", str(project.root / "rec"))[0] == 0
    import yaml

    config = yaml.safe_load(project.config.read_text(encoding="utf-8"))
    recorded = dict(config["suites"][0], name="recorded", actual=["rec/inference.jsonl"])
    recorded.pop("agent")
    config["suites"].append(recorded)
    project.config.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    clear_judge_env(monkeypatch)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("ADK_DISABLE_LOAD_DOTENV", "1")
    code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out), "--no-color")
    assert "recorded: PASSED" in out and "weather: NOT_EVALUATED" in out, err
    assert "overall: NOT_EVALUATED" in out
    assert code == 1
    assert _junit_counts(project) == {"tests": "6", "failures": "0", "errors": "3", "skipped": "0"}


def _genai_error(code: int, status: str):
    from google.genai import errors

    cls = errors.ClientError if code < 500 else errors.ServerError
    return cls(code, {"error": {"code": code, "message": "m", "status": status}})


@pytest.mark.parametrize(
    "make, cause",
    [
        (lambda: ValueError("No API key was provided. Please pass a valid API key."), "missing_key"),
        (lambda: _genai_error(401, "UNAUTHENTICATED"), "refused_key"),
        (lambda: _genai_error(403, "PERMISSION_DENIED"), "refused_key"),
        (lambda: _genai_error(429, "RESOURCE_EXHAUSTED"), "quota"),
        (lambda: _genai_error(503, "UNAVAILABLE"), "service"),
        (lambda: __import__("httpx").ConnectError("[Errno 111] Connection refused"), "unreachable"),
        (lambda: __import__("httpx").ReadError(""), "unreachable"),
        (lambda: __import__("httpx").ReadTimeout("timed out"), "timeout"),
        (lambda: KeyError("city"), None),  # the agent's or a tool's own bug: no cause guessed
    ],
)
def test_the_cause_is_read_from_the_exception(make, cause):
    assert failure_cause(_describe(make())) == cause


# --- every place that takes a commit takes any revision git resolves (item 3) ---------------

import shutil  # noqa: E402
import subprocess  # noqa: E402
from pathlib import Path  # noqa: E402

QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart"


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True, env=env).stdout.strip()


@pytest.fixture
def repo(tmp_path, cli):
    """The bundled example in a git repository of its own: main at one commit, with an empty
    store and the example's results."""
    root = tmp_path / "repo"
    shutil.copytree(QUICKSTART, root, ignore=shutil.ignore_patterns("store", "regenerate.py"))
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "main")
    code, out, err = cli("run", "--out", str(root / "out"), "--no-color", "--quiet", cwd=root)
    assert code in (0, 1), err
    return root


def test_commits_are_any_revision_git_resolves(cli, repo):
    head = _git(repo, "rev-parse", "HEAD")
    code, out, err = cli("baseline", "save", "--results", "out/results.json", "--commit", "main", cwd=repo)
    assert code == 0, err
    assert f"saved the baseline of {head} " in out
    assert "DirStore(" not in out and "main/store" in out  # a path, not a Python object
    for ref in ("main", head[:7], "HEAD", head.upper()):
        code, out, err = cli("baseline", "show", "--commit", ref, cwd=repo)
        assert code == 0, (ref, err)
        assert f"baseline {head[:12]}" in out
        code, _, err = cli("compare", "--base-sha", ref, "--current", "out/results.json", "--output", "c.md", cwd=repo)
        assert code in (0, 1) and "internal error" not in err, (ref, err)
    for ref in ("no-such-branch", "-x", ""):
        code, _, err = cli("baseline", "show", f"--commit={ref}", cwd=repo)
        assert code == 2 and "--commit" in err and "internal error" not in err, (ref, err)


def test_a_revision_outside_a_checkout_is_an_input_error(cli, tmp_path):
    root = tmp_path / "plain"
    shutil.copytree(QUICKSTART, root, ignore=shutil.ignore_patterns("store", "regenerate.py"))
    code, _, err = cli("baseline", "show", "--commit", "main", cwd=root)
    assert code == 2 and "not in a git checkout" in err and "full 40-character sha" in err
    code, out, err = cli("baseline", "show", "--commit", "0" * 40, cwd=root)
    # A full sha needs no git to be taken; looking for its ancestors does, and says so.
    assert code == 2 and "not a full commit sha" not in err and "git cannot find commit" in err


# --- a sweep of every command's file and commit arguments with odd values: none is exit 3 ---

import os  # noqa: E402

ODD_FILES = {
    "missing": None,
    "empty": b"",
    "binary": b"\x00\xff\xfe garbage \x80",
    "a list": b"[]",
    "a number": b"7",
    "not utf-8 json": b'{"a": "\xff"}',
    "deep": b"[" * 5000 + b"]" * 5000,
}


def _odd(tmp: Path, kind: str, name: str = "odd.json") -> str:
    if kind == "a folder":
        (tmp / "folder").mkdir(exist_ok=True)
        return str(tmp / "folder")
    if kind == "non-utf-8 name":
        path = os.path.join(os.fsencode(tmp), b"\xff\xfe.json")
        with open(path, "wb") as f:
            f.write(b"{}")
        return os.fsdecode(path)
    path = tmp / f"{kind.replace(' ', '_')}-{name}"
    if ODD_FILES[kind] is not None:
        path.write_bytes(ODD_FILES[kind])
    return str(path)


COMMANDS = {
    "validate --config": lambda f: ["validate", "--config", f],
    "run --config": lambda f: ["run", "--config", f, "--out", "o"],
    "compare --current": lambda f: ["compare", "--current", f, "--baseline", "out/results.json", "--output", "c.md"],
    "compare --baseline": lambda f: ["compare", "--current", "out/results.json", "--baseline", f, "--output", "c.md"],
    "merge": lambda f: ["merge", f, "out", "--out", "m"],
    "baseline save --results": lambda f: ["baseline", "save", "--results", f, "--commit", "HEAD"],
    "gate --baseline": lambda f: ["gate", "--baseline", f, "--out", "g"],
    "init": lambda f: ["init", f],
}


@pytest.mark.parametrize("kind", [*ODD_FILES, "a folder", "non-utf-8 name"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_no_odd_argument_is_an_internal_error(cli, repo, command, kind):
    code, out, err = cli(*COMMANDS[command](_odd(repo, kind)), cwd=repo)
    assert code != 3 and "internal error" not in err and "Traceback" not in err, (code, err[-2000:])


@pytest.mark.parametrize("argv", [["baseline", "show", "--commit", "HEAD~999"], ["compare", "--base-sha", "v9.9", "--current", "out/results.json"]])
def test_odd_revisions_are_input_errors(cli, repo, argv):
    code, out, err = cli(*argv, cwd=repo)
    assert code == 2 and "internal error" not in err and "git knows no commit" in err, err


def test_an_unknown_schema_is_named_in_words(cli, capsys):
    with pytest.raises(SystemExit) as e:
        cli("schema", "bogus")
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "argument SCHEMA: invalid choice: 'bogus'" in err and "argument which" not in err


# --- ADK's files read as ADK reads them (item 9) -------------------------------------------


def test_an_unknown_option_in_adks_test_config_is_a_warning_not_an_error(cli, tmp_path):
    """graceliu/vid2trip's test_config.json: `adk eval` runs it, so evalgate must too."""
    import json

    root = tmp_path / "qs"
    shutil.copytree(QUICKSTART, root)
    path = root / "evals" / "legacy" / "test_config.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["criteria"]["response_match_score"] = {"threshold": 0.5, "criteria": "Semantic Similarity"}
    path.write_text(json.dumps(data), encoding="utf-8")
    code, out, err = cli("validate", cwd=root)
    assert code == 0, err
    assert "option 'criteria' is not one of response_match_score's, so it is ignored" in out + err
    # evalgate's own config stays strict: there a typo is an error.
    config = (root / "evalgate.yaml").read_text(encoding="utf-8")
    (root / "evalgate.yaml").write_text(config.replace("response_match_score: 0.5", "response_match_score: {threshold: 0.5, criteria: x}"), encoding="utf-8")
    code, out, err = cli("validate", cwd=root)
    assert code == 2 and "unknown option 'criteria' for response_match_score" in err


def test_every_workflow_we_show_pins_one_version_of_each_action():
    """The docs, the README, init's workflows and our own CI name one version of each GitHub
    action (item 10: artifact actions were @v4 in the docs and @v7/@v8 in init's workflows)."""
    import re

    repo = Path(__file__).resolve().parents[1]
    files = [repo / "README.md", repo / "action.yml", *sorted((repo / "docs").glob("*.md")), *sorted((repo / ".github").rglob("*.yml")),
             *sorted((repo / "evalgate").rglob("*.py")), *sorted((repo / "tests" / "e2e").glob("*.yml"))]
    versions: dict[str, set[str]] = {}
    for f in files:
        for name, version in re.findall(r"(?<![\w-])(actions/[a-z-]+)@(v\d+)", f.read_text(encoding="utf-8")):
            versions.setdefault(name, set()).add(version)
    assert "actions/upload-artifact" in versions and "actions/download-artifact" in versions
    assert {name: v for name, v in versions.items() if len(v) > 1} == {}


def test_the_comments_numbers_agree_with_its_trend(cli, tmp_path):
    """Item 5: the bundled example's comment said "run-to-run sd 0.000 from 8 runs of history"
    beside a trend of the same mean moving between 0.763 and 0.847. The shared part (what the
    test allows for) and the mean's own sd (what the trend shows) are both said now."""
    import re

    root = tmp_path / "qs"
    shutil.copytree(QUICKSTART, root)
    baseline = next((root / "main" / "store" / "baselines" / "evalgate").glob("*.json.gz"))
    code, out, err = cli("gate", "--baseline", str(baseline), "--out", "o", "--no-color", cwd=root)
    assert code == 1, err
    comment = (root / "o" / "comment.md").read_text(encoding="utf-8")
    row = next(line for line in comment.splitlines() if line.startswith("| response\\_match\\_score | 0.50 | 9 |"))
    shared, mean_sd = map(float, re.search(r"run sd ([\d.]+) shared, ([\d.]+) for the mean \(8 runs of history\)", row).groups())
    low, high = map(float, re.search(r"below ([\d.]+)–([\d.]+)", row).groups())
    assert shared == 0.0 and 0 < mean_sd < high - low  # the trend's range holds the sd the row names


# --- the first day (item 7) -----------------------------------------------------------------


def test_several_runs_fill_the_ledger_on_the_first_day(cli, repo):
    """`baseline save --results r1 r2 ...`: each run of main goes into the flake ledger, so
    the gate has the history it needs to call cases stable before main has had 5 pushes."""
    from evalgate.baselines import DirStore
    from evalgate.gate.ledger import stable_history
    from evalgate.gate.model import GatePolicy

    for k in range(2, 6):
        assert cli("run", "--out", f"out{k}", "--quiet", cwd=repo)[0] in (0, 1)
    results = ["out/results.json", *(f"out{k}/results.json" for k in range(2, 6))]
    code, out, err = cli("baseline", "save", "--results", *results, "--commit", "HEAD", cwd=repo)
    assert code == 0, err
    assert "and 5 runs into the flake ledger" in out
    ledger = DirStore(repo / "main" / "store", "evalgate").load_ledger("evalgate")
    histories = [h for key, h in ledger.items() if key.count("\x1f") == 3]
    assert histories and all(len(h) == 5 for h in histories)
    stable = [h for h in histories if stable_history(h, GatePolicy()) is not None]
    assert stable  # cases that passed all 5 runs count as stable at once
    # --store: the same into a checkout of the action's data branch (the dir store's layout).
    code, out, err = cli("baseline", "save", "--results", *results, "--commit", "HEAD", "--store", "data-branch", cwd=repo)
    assert code == 0 and "data-branch" in out, err
    assert DirStore(repo / "data-branch", "evalgate").load_ledger("evalgate") == ledger
    # Runs of another config are not one commit's history.
    (repo / "evalgate.yaml").write_text((repo / "evalgate.yaml").read_text(encoding="utf-8").replace("response_match_score: 0.5", "response_match_score: 0.6"), encoding="utf-8")
    assert cli("run", "--out", "other", "--quiet", cwd=repo)[0] in (0, 1)
    code, out, err = cli("baseline", "save", "--results", "out/results.json", "other/results.json", "--commit", "HEAD", cwd=repo)
    assert code == 2 and "different configs" in err
