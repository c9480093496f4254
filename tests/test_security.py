"""Issue 26: what a pull request must not be able to change, tried the way an attacker would.

Each test here failed on the code before issue 26: planted judge verdicts, planted markers,
the token reaching the agent, secrets in the outputs, headers that name the token or
follow a redirect elsewhere, paths out of the repository, pull_request_target.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, write_json
from fake_gemini import clear_judge_env, fake_gemini  # noqa: F401  (fixture)

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="needs the git program")


def _invocation(user: str, response: str) -> dict:
    return {
        "user_content": {"role": "user", "parts": [{"text": user}]},
        "final_response": {"role": "model", "parts": [{"text": response}]},
        "intermediate_data": {"tool_uses": []},
    }


JUDGED = (
    "suites:\n"
    "  - name: geo\n"
    "    evalsets: [evals/*.evalset.json]\n"
    "    actual: runs/out.jsonl\n"
    "    criteria:\n"
    "      final_response_match_v2: {threshold: 0.5, judge_model_options: {num_samples: 1}}\n"
)
EXPECTED = {"capital-en": ("What is the capital of France?", "Paris"), "수도-ko": ("프랑스의 수도는?", "파리")}


def judged_project(root: Path, answer: str = "I like turtles") -> Path:
    """One eval set whose expected answers are Paris / 파리; the agent answered `answer`."""
    write_json(root / "evals" / "geo.evalset.json", {
        "eval_set_id": "geo",
        "eval_cases": [{"eval_id": k, "conversation": [_invocation(q, a)]} for k, (q, a) in EXPECTED.items()],
    })
    lines = [{"eval_set_id": "geo", "eval_id": k, "invocations": [_invocation(q, answer)]} for k, (q, _) in EXPECTED.items()]
    (root / "runs").mkdir(parents=True, exist_ok=True)
    (root / "runs" / "out.jsonl").write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n", encoding="utf-8")
    (root / "evalgate.yaml").write_text(JUDGED, encoding="utf-8")
    return root


def git(root: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@example.com", "HOME": str(root), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([GIT, "-c", "init.defaultBranch=main", *args], cwd=root, env=env, capture_output=True, text=True, check=True)
    return out.stdout


def verdicts(root: Path, out: str = "out") -> dict[str, str]:
    data = json.loads((root / out / "results.json").read_text(encoding="utf-8"))
    return {c["eval_id"]: c["criteria"]["final_response_match_v2"]["status"] for c in data["suites"][0]["cases"]}


def _always_valid(body):
    return {"reasoning": "looks right to me", "verdict": "valid"}


# --- part 3: judge verdicts cannot be planted ---------------------------------------------


@needs_git
def test_committed_judge_cache_is_not_believed(cli, fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    """The attack from the issue: verdicts made with the attacker's own endpoint, committed
    under .evalgate/cache, made a run without judge credentials report PASSED for
    "I like turtles" against "Paris"."""
    root = judged_project(tmp_path / "repo")
    # The attacker's endpoint says "valid" to everything; their run fills the cache.
    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = _always_valid
    code, out, err = cli("run", "--out", "attacker", "--quiet", cwd=root)
    assert verdicts(root, "attacker") == {"capital-en": "PASSED", "수도-ko": "PASSED"}, out + err
    assert list((root / ".evalgate" / "cache").rglob("*.json"))
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "add the cache")
    assert ".evalgate/cache/" in git(root, "ls-files")

    # The gate's own run has no judge credentials: nothing may pass on the planted verdicts.
    clear_judge_env(monkeypatch, tmp_path)
    code, out, err = cli("run", "--out", "out", "--no-color", cwd=root)
    assert verdicts(root) == {"capital-en": "NOT_EVALUATED", "수도-ko": "NOT_EVALUATED"}, out + err
    results = json.loads((root / "out" / "results.json").read_text(encoding="utf-8"))
    suite = results["suites"][0]
    assert suite["criteria"]["final_response_match_v2"]["stats"]["cache_refused"] == 2
    assert suite["criteria"]["final_response_match_v2"]["stats"]["cache_hits"] == 0
    assert any("judge cache: 2 stored verdicts were not believed" in w for w in suite["warnings"])


@needs_git
def test_an_untracked_cache_in_a_repository_is_still_used(cli, fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    """The cache restored by actions/cache (ignored, not committed) keeps working."""
    root = judged_project(tmp_path / "repo", answer="Paris")
    git(root, "init", "-q")
    (root / ".gitignore").write_text(".evalgate/\nout*/\n", encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "project")
    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = _always_valid
    cli("run", "--out", "out1", "--quiet", cwd=root)
    assert len(fake_gemini.requests) == 2
    fake_gemini.reset()
    cli("run", "--out", "out2", "--quiet", cwd=root)
    assert fake_gemini.requests == []  # every verdict from the cache
    assert verdicts(root, "out2") == {"capital-en": "PASSED", "수도-ko": "PASSED"}


# --- the action, against the fake GitHub ---------------------------------------------------

from fake_github import BOT, FakeGitHub, fake_github  # noqa: E402,F401  (fixture)
from test_entrypoint import PR, Action, _pull_request, _push  # noqa: E402


@pytest.fixture
def action(fake_github, tmp_path, capsys):  # noqa: F811
    return Action(fake_github, judged_project(tmp_path / "ws"), tmp_path, capsys)


def _cache_writers(ws: Path) -> set[str]:
    return {json.loads(p.read_text(encoding="utf-8"))["writer"]["kind"] for p in (ws / ".evalgate" / "cache").rglob("*.json")}


def test_a_pull_request_run_believes_only_what_default_branch_runs_cached(action, fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    fake = action.fake
    base, _ = fake.linear_history(2)
    head = fake.add_commit([base], "PR head")
    cache = action.ws / ".evalgate" / "cache"

    # A pull request run with credentials caches its own verdicts (the turtles are "valid" on
    # its endpoint) ...
    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = _always_valid
    action("pull_request", _pull_request(head, base), sha=head, ref=f"refs/pull/{PR}/merge")
    assert _cache_writers(action.ws) == {"pull_request"}
    # ... and a later pull request run without credentials does not take them as the judge's.
    clear_judge_env(monkeypatch, tmp_path)
    action("pull_request", _pull_request(head, base), sha=head, ref=f"refs/pull/{PR}/merge")
    results = json.loads((action.ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    assert {c["criteria"]["final_response_match_v2"]["status"] for c in results["suites"][0]["cases"]} == {"NOT_EVALUATED"}
    assert results["suites"][0]["criteria"]["final_response_match_v2"]["stats"]["cache_refused"] == 2
    # Hand-made entries without a writer (or an older evalgate's) are not believed either.
    for path in cache.rglob("*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        del data["writer"]
        path.write_text(json.dumps(data), encoding="utf-8")
    action("pull_request", _pull_request(head, base), sha=head, ref=f"refs/pull/{PR}/merge")
    results = json.loads((action.ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    assert {c["criteria"]["final_response_match_v2"]["status"] for c in results["suites"][0]["cases"]} == {"NOT_EVALUATED"}

    # What a push to the default branch cached is believed by the pull request run.
    shutil.rmtree(cache)
    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.reset()
    assert action("push", _push(base), sha=base) == 0, action.stdout
    assert _cache_writers(action.ws) == {"default"}
    assert len(fake_gemini.requests) == 2
    clear_judge_env(monkeypatch, tmp_path)
    action("pull_request", _pull_request(head, base), sha=head, ref=f"refs/pull/{PR}/merge")
    results = json.loads((action.ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    assert {c["criteria"]["final_response_match_v2"]["status"] for c in results["suites"][0]["cases"]} == {"PASSED"}
    assert results["suites"][0]["criteria"]["final_response_match_v2"]["stats"]["cache_hits"] == 2


# --- part 5: the token never reaches the agent; secrets never reach the outputs --------------

AGENT_EVALS = REPO / "tests" / "agents" / "evals"
LEAKY_AGENT = '''import json, os, sys
# Dumps what it was given, then answers with the secrets it got hold of (its own model key,
# and the GitHub token, as an agent that read it from somewhere would).
with open(sys.argv[1], "a", encoding="utf-8") as f:
    f.write(json.dumps(dict(os.environ)) + "\\n")
for line in sys.stdin:
    text = "key " + os.environ.get("GOOGLE_API_KEY", "none") + " token " + TOKEN
    print(json.dumps({"final_response": {"parts": [{"text": text}], "role": "model"}}), flush=True)
'''


def leaky_project(root: Path, token: str) -> Path:
    shutil.copytree(AGENT_EVALS, root / "evals")
    (root / "agent.py").write_text(f"TOKEN = {token!r}\n" + LEAKY_AGENT, encoding="utf-8")
    config = {"version": 1, "agent": {"command": [sys.executable, "agent.py", str(root / "env.jsonl")]},
              "suites": [{"name": "weather", "evalsets": "evals", "criteria": {"response_match_score": 0.5}}]}
    (root / "evalgate.yaml").write_text(json.dumps(config), encoding="utf-8")
    return root


def test_the_token_never_reaches_the_agent_and_secrets_never_reach_the_outputs(fake_github, tmp_path, capsys, monkeypatch):  # noqa: F811
    token = fake_github.token
    key = "AIzaFAKE-agent-model-key-0123456789"
    ws = leaky_project(tmp_path / "ws", token)
    action = Action(fake_github, ws, tmp_path, capsys)
    # What a container action's process has: the token under several names, the runner's credentials.
    for name, value in {
        "EVALGATE_GITHUB_TOKEN": token, "GITHUB_TOKEN": token, "INPUT_GITHUB-TOKEN": token, "MY_COPY": token,
        "ACTIONS_RUNTIME_TOKEN": "runtime-0123456789abcdef", "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "oidc-0123456789abcdef",
        "ACTIONS_ID_TOKEN_REQUEST_URL": "https://pipelines.example/idtoken", "GOOGLE_API_KEY": key,
    }.items():
        monkeypatch.setenv(name, value)
    base, _ = fake_github.linear_history(2)
    head = fake_github.add_commit([base], "PR head")
    action("pull_request", _pull_request(head, base), sha=head, ref=f"refs/pull/{PR}/merge")

    seen = [json.loads(line) for line in (ws / "env.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(seen) == 3  # one process per case run
    for env in seen:
        assert not [k for k in env if k.startswith(("ACTIONS_", "INPUT_")) or k in ("GITHUB_TOKEN", "EVALGATE_GITHUB_TOKEN")]
        assert token not in env.values()  # not under another name either
        assert env["GOOGLE_API_KEY"] == key  # the agent's own key stays: it needs it

    written = [p for p in (ws / "evalgate-results").rglob("*") if p.is_file()]
    assert {"inference.jsonl", "results.json", "report.md", "report.html"} <= {p.name for p in written}
    texts = [p.read_text(encoding="utf-8") for p in written] + [action.summary] + [c["body"] for c in fake_github.comments.values()]
    for text in texts:
        assert token not in text and key not in text
    inference = (ws / "evalgate-results" / "inference.jsonl").read_text(encoding="utf-8")
    assert "key ${GOOGLE_API_KEY} token " in inference  # each secret replaced by its name (or ***)


def test_the_install_step_does_not_get_the_token(fake_github, tmp_path, capsys, monkeypatch):  # noqa: F811
    """`pip install .` runs the project's setup.py: it must not find the token either."""
    token = fake_github.token
    ws = judged_project(tmp_path / "ws", answer="Paris")
    seen = ws / "install-env.json"
    (ws / "setup.py").write_text(
        "import json, os\n"
        f"open({str(seen)!r}, 'w').write(json.dumps(dict(os.environ)))\n"
        "from setuptools import setup\nsetup(name='leaky', version='0', py_modules=[])\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("GITHUB_TOKEN", token)
    monkeypatch.setenv("ACTIONS_RUNTIME_TOKEN", "runtime-0123456789abcdef")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    action = Action(fake_github, ws, tmp_path, capsys)
    base, _ = fake_github.linear_history(2)
    action("push", {**_push(base), "ref": "refs/heads/feature"}, sha=base, ref="refs/heads/feature", install="--dry-run --no-deps --no-build-isolation .")
    assert seen.is_file(), action.stdout
    env = json.loads(seen.read_text(encoding="utf-8"))
    assert "GITHUB_TOKEN" not in env and "ACTIONS_RUNTIME_TOKEN" not in env and token not in env.values()


def test_pull_request_target_is_refused_with_the_safe_flow_named(fake_github, tmp_path, capsys):  # noqa: F811
    ws = judged_project(tmp_path / "ws", answer="Paris")
    (ws / "setup.py").write_text("raise SystemExit('the project code ran')\n", encoding="utf-8")
    action = Action(fake_github, ws, tmp_path, capsys)
    base, _ = fake_github.linear_history(2)
    head = fake_github.add_commit([base], "PR head")
    code = action("pull_request_target", _pull_request(head, base), sha=base, install=".")
    assert code == 2
    [error] = [line for line in action.stdout.splitlines() if line.startswith("::error")]
    assert "evalgate does not run on pull_request_target" in error
    assert "two-phase flow (docs/workflows.md)" in error and "workflow_run job with mode: publish" in error
    assert "the project code ran" not in action.stdout  # refused before the install step
    assert not fake_github.comments and not fake_github.statuses


# --- the url runner's headers ---------------------------------------------------------------

from fake_http import Reply  # noqa: E402
from test_runner_api_server import APP, ECHO_CASES, FakeApiServer, write_config, write_evalset  # noqa: E402


@pytest.mark.parametrize("var", ["GITHUB_TOKEN", "EVALGATE_GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "EVALGATE_CONFIG", "INPUT_GITHUB_TOKEN", "GH_TOKEN"])
def test_a_header_may_not_name_the_token_or_evalgates_variables(cli, tmp_path, monkeypatch, var):
    monkeypatch.setenv(var, "ghs_would-be-sent-0123456789")
    evals = write_evalset(tmp_path / "evals" / "echo.evalset.json", "echo", ECHO_CASES).parent
    server = FakeApiServer()
    try:
        config = write_config(tmp_path / "c.yaml", evals, f'{{url: "{server.url}", app: {APP}, headers: {{Authorization: "Bearer ${{{var}}}"}}}}')
        code, out, err = cli("validate", "--config", str(config))
        assert code == 2, out + err
        [line] = [x for x in err.splitlines() if x.startswith("error:")]
        assert f"${{{var}}} is the GitHub token or one of evalgate's or the runner's own variables" in line
        assert "headers.Authorization" in line and "c.yaml" in line
        code, _, _ = cli("run", "--config", str(config), "--out", str(tmp_path / "out"))
        assert code == 2 and server.seen == []  # nothing was sent
    finally:
        server.stop()


def test_headers_do_not_follow_a_redirect_to_another_host(cli, tmp_path, monkeypatch):
    token = "agent-credential-0123456789"
    monkeypatch.setenv("AGENT_TEST_TOKEN", token)
    evals = write_evalset(tmp_path / "evals" / "echo.evalset.json", "echo", ECHO_CASES).parent
    api, elsewhere = FakeApiServer(), FakeApiServer()
    try:
        api.list_apps = Reply(307, "", {"Location": f"{elsewhere.url}/list-apps"})
        config = write_config(tmp_path / "c.yaml", evals, f'{{url: "{api.url}", app: {APP}, headers: {{X-Api-Key: "${{AGENT_TEST_TOKEN}}"}}}}')
        code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / "out"))
        assert code == 2, out + err
        assert elsewhere.seen == []  # the key never went to the other host
        assert [s.headers.get("x-api-key") for s in api.seen] == [token]
        assert "redirected to another host" in err and token not in err
    finally:
        api.stop()
        elsewhere.stop()


# --- config and data paths stay inside the project ---------------------------------------------

from test_inputs import CONFIG as PLAIN_CONFIG, make_project  # noqa: E402


def _one_error(cli, root: Path) -> str:
    code, out, err = cli("validate", cwd=root)
    assert code == 2, out + err
    assert "Traceback" not in err
    [line] = [x for x in err.splitlines() if x.startswith("error:")]
    return line


@pytest.mark.parametrize("actual", ["/proc/self/environ", "../outside/out.jsonl", "linked/out.jsonl"])
def test_data_paths_may_not_lead_outside_the_project(cli, tmp_path, actual):
    root = make_project(tmp_path / "project")
    (tmp_path / "outside").mkdir()
    shutil.copy(root / "runs" / "out.jsonl", tmp_path / "outside" / "out.jsonl")
    (root / "linked").symlink_to(tmp_path / "outside", target_is_directory=True)
    (root / "evalgate.yaml").write_text(PLAIN_CONFIG.replace("actual: runs/out.jsonl", f"actual: {actual}"), encoding="utf-8")
    line = _one_error(cli, root)
    assert f"evalgate.yaml: suites[0].actual[0]: '{actual}'" in line
    assert "leads outside the project" in line and "inside the repository" in line
    code, _, _ = cli("run", "--out", "out", cwd=root)
    assert code == 2 and not (root / "out" / "results.json").exists()


@pytest.mark.parametrize("key, value, place", [
    ("evalsets", "['{outside}/*.evalset.json']", "suites[0].evalsets[0] (line 3)"),
    ("criteria", "../test_config.json", "suites[0].criteria (line 5)"),
])
def test_suite_paths_outside_are_errors(cli, tmp_path, key, value, place):
    root = make_project(tmp_path / "project")
    (tmp_path / "test_config.json").write_text('{"criteria": {"response_match_score": 0.1}}', encoding="utf-8")
    shutil.copytree(root / "evals", tmp_path / "outside")
    lines = PLAIN_CONFIG.splitlines()
    if key == "evalsets":
        lines[2] = "    evalsets: " + value.format(outside=tmp_path / "outside")
    else:
        lines = lines[:4] + [f"    criteria: {value}"]
    (root / "evalgate.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, err = cli("validate", cwd=root)
    assert code == 2 and f"evalgate.yaml: {place}" in err and "leads outside the project" in err, err


@pytest.mark.parametrize("section", ["judge:\n  cache_dir: /tmp/elsewhere-cache\n", "gate:\n  baseline: {store: dir, path: ../baselines}\n"])
def test_cache_and_baseline_folders_outside_are_errors(cli, tmp_path, section):
    root = make_project(tmp_path / "project", config=PLAIN_CONFIG + section)
    line = _one_error(cli, root)
    assert ("judge.cache_dir" in line or "gate.baseline.path" in line) and "leads outside the project" in line
    # The baseline commands read the same config: the same error, nothing read or written.
    code, out, err = cli("baseline", "show", "--commit", "a" * 40, cwd=root)
    assert code == 2 and "leads outside the project" in err
    assert not (tmp_path / "baselines").exists()


@needs_git
def test_inside_a_git_work_tree_the_whole_tree_is_the_project(cli, tmp_path):
    """A monorepo: a config in a subfolder may use eval sets from a sibling folder."""
    repo = tmp_path / "repo"
    make_project(repo / "shared")
    (repo / "svc").mkdir()
    (repo / "svc" / "evalgate.yaml").write_text(
        PLAIN_CONFIG.replace("evals/*.evalset.json", "../shared/evals/*.evalset.json").replace("runs/out.jsonl", "../shared/runs/out.jsonl"),
        encoding="utf-8",
    )
    git(repo, "init", "-q")
    code, out, err = cli("validate", cwd=repo / "svc")
    assert code == 0, err
    # ... but not beyond the work tree.
    (repo / "svc" / "evalgate.yaml").write_text(PLAIN_CONFIG.replace("runs/out.jsonl", "../../elsewhere.jsonl"), encoding="utf-8")
    shutil.copy(repo / "shared" / "runs" / "out.jsonl", tmp_path / "elsewhere.jsonl")
    shutil.copytree(repo / "shared" / "evals", repo / "svc" / "evals")
    assert "leads outside the project" in _one_error(cli, repo / "svc")


def test_cache_hits_on_added_cases_are_reported(fake_github, fake_gemini, monkeypatch, tmp_path, capsys):  # noqa: F811
    ws = judged_project(tmp_path / "ws", answer="Paris")
    evalset = ws / "evals" / "geo.evalset.json"
    full = json.loads(evalset.read_text(encoding="utf-8"))
    action = Action(fake_github, ws, tmp_path, capsys)
    c1, c2 = fake_github.linear_history(2)
    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = _always_valid
    # c1's baseline knows only the English case; a later default-branch run judges both.
    write_json(evalset, {**full, "eval_cases": full["eval_cases"][:1]})
    assert action("push", _push(c1), sha=c1) == 0, action.stdout
    write_json(evalset, full)
    assert action("push", _push(c2), sha=c2) == 0, action.stdout
    # A pull request on c1 that adds the Korean case: its verdict comes from c2's run's cache.
    clear_judge_env(monkeypatch, tmp_path)
    head = fake_github.add_commit([c1], "PR head")
    action("pull_request", _pull_request(head, c1), sha=head)
    results = json.loads((ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    hits = {c["eval_id"]: c.get("judge_cache_hits") for c in results["suites"][0]["cases"]}
    assert hits == {"capital-en": 1, "수도-ko": 1}
    [comment] = fake_github.issue_comments(PR)
    assert "judge cache: 1 verdict of 1 added or changed case came from the cache, not from the judge" in comment["body"].replace("\\", "")


@needs_git
@pytest.mark.parametrize("index_version", [2, 3, 4])
@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_the_index_is_read_as_git_lists_it(tmp_path, index_version, object_format):
    """Without a git program (the action's image has none) the tracked files come from the
    index file itself: the same list as `git ls-files`."""
    from evalgate.judge.cache import read_index

    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", f"--object-format={object_format}")
    names = ["a.txt", ".evalgate/cache/ab/" + "ab" * 32 + ".json", "평가/케이스.json", "日本語/テスト.json", "deep/" + "x" * 150 + ".json", "b"]
    for name in names:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(name, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "files")
    (repo / "intent.txt").write_text("later", encoding="utf-8")
    git(repo, "add", "-N", "intent.txt")  # an extended-flags entry
    git(repo, "update-index", "--index-version", str(index_version))
    listed = set(git(repo, "-c", "core.quotePath=false", "ls-files", "-z").split("\0")) - {""}
    assert read_index(repo) == listed and "평가/케이스.json" in listed


@needs_git
def test_without_git_a_committed_cache_is_still_not_believed(cli, fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    """The same attack where no git program is installed: the index file says what is tracked,
    also from a linked worktree."""
    main = judged_project(tmp_path / "repo")
    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = _always_valid
    cli("run", "--out", "attacker", "--quiet", cwd=main)
    git(main, "init", "-q")
    git(main, "add", "evals", "runs", "evalgate.yaml", ".evalgate")
    git(main, "commit", "-q", "-m", "add the cache")
    git(main, "worktree", "add", "-q", str(tmp_path / "wt"))
    clear_judge_env(monkeypatch, tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "no-programs-here"))
    assert shutil.which("git") is None
    for root in (main, tmp_path / "wt"):
        cli("run", "--out", "out", "--quiet", cwd=root)
        assert verdicts(root) == {"capital-en": "NOT_EVALUATED", "수도-ko": "NOT_EVALUATED"}, root


def move_as_default_writer(cache: Path, planted: Path) -> None:
    """Move a pull request's judge cache to `planted`, every entry claiming a default-branch
    writer: what a planting build step brings back in."""
    shutil.move(str(cache), str(planted))
    for path in planted.rglob("*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["writer"] = {"kind": "default", "event": "push", "ref": "refs/heads/main"}
        path.write_text(json.dumps(data), encoding="utf-8")


def planting_build_backend(ws: Path, plant: str) -> None:
    """Make the project at `ws` installable by a build backend of its own (project code, as a
    setup.py is) that runs `plant` (Python, with os and shutil imported) when pip prepares its
    metadata: what `install: --dry-run --no-deps --no-build-isolation .` runs."""
    (ws / "pyproject.toml").write_text('[build-system]\nrequires = []\nbuild-backend = "planter"\nbackend-path = ["."]\n', encoding="utf-8")
    (ws / "planter.py").write_text(
        "import os, shutil\n"
        + plant
        + "def get_requires_for_build_wheel(config_settings=None):\n    return []\n"
        "def prepare_metadata_for_build_wheel(directory, config_settings=None):\n"
        "    os.makedirs(os.path.join(directory, 'planter-0.dist-info'))\n"
        "    open(os.path.join(directory, 'planter-0.dist-info', 'METADATA'), 'w').write('Metadata-Version: 2.1\\nName: planter\\nVersion: 0\\n')\n"
        "    return 'planter-0.dist-info'\n",
        encoding="utf-8",
    )


def _plant_entry(root: Path, key: str, text: str) -> None:
    """A judge cache entry claiming a default-branch writer (entries are not signed), as a
    pull request's code could write one."""
    from evalgate.judge.cache import CACHE_FORMAT

    path = root / key[:2] / f"{key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {"format": CACHE_FORMAT, "key": key, "text": text, "usage": {}, "writer": {"kind": "default", "event": "push", "ref": "refs/heads/main"}}
    path.write_text(json.dumps(entry), encoding="utf-8")


def test_an_entry_written_after_the_cache_was_opened_is_not_believed_by_a_pull_request_run(tmp_path):
    """The agent runs in the pull request's job before the judge reads the cache, and an
    entry's writer is not signed: an entry that appears (or is rewritten) after the cache was
    opened, claiming a default-branch writer, is refused under a pull request's policy;
    entries that were there before, and the run's own, are read."""
    from evalgate.judge.cache import CachePolicy, JudgeCache

    root = tmp_path / "cache"

    def plant(key: str, text: str) -> None:
        _plant_entry(root, key, text)

    before, after, rewritten = "a" * 64, "b" * 64, "c" * 64
    plant(before, "from main")
    plant(rewritten, "from main")
    pr = JudgeCache(root, CachePolicy("pull_request", "pull_request", "refs/pull/7/merge", frozenset({"default"})))
    plant(after, "planted by the agent")  # the agent's files, written after the cache was opened
    plant(rewritten, "planted over main's")
    pr.put("d" * 64, "the run's own", {})

    assert pr.get(before).text == "from main"
    assert pr.get(after) is None and pr.get(rewritten) is None
    assert pr.get("d" * 64).text == "the run's own"
    assert pr.refused == {"late": 2}
    # A default-branch or local run believes every untracked entry, whenever it was written.
    local = JudgeCache(root, CachePolicy())
    assert local.get(after).text == "planted by the agent"


def test_a_merge_queue_run_believes_only_what_default_branch_runs_cached(action, fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    """A merge group's head holds the pull request's code, and its agent runs in the job before
    the judge reads the cache, as in a pull request run: its policy is a pull request's. Here
    the entries a pull request's run cached (its endpoint says the turtles are "valid") must
    not pass the merge queue's required status."""
    fake = action.fake
    base, _ = fake.linear_history(2)
    head = fake.add_commit([base], "queue head")
    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = _always_valid
    action("pull_request", _pull_request(head, base), sha=head, ref=f"refs/pull/{PR}/merge")
    assert _cache_writers(action.ws) == {"pull_request"}
    clear_judge_env(monkeypatch, tmp_path)
    event = {"merge_group": {"head_sha": head, "base_sha": base, "head_ref": "refs/heads/gh-readonly-queue/main/pr-7"},
             "repository": {"full_name": "octo/hello", "default_branch": "main"}}
    action("merge_group", event, sha=head, ref="refs/heads/gh-readonly-queue/main/pr-7")
    results = json.loads((action.ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    assert {c["criteria"]["final_response_match_v2"]["status"] for c in results["suites"][0]["cases"]} == {"NOT_EVALUATED"}, action.stdout
    assert results["suites"][0]["criteria"]["final_response_match_v2"]["stats"]["cache_refused"] == 2


def test_a_test_config_beside_the_eval_sets_may_not_lead_outside_the_project(cli, tmp_path):
    """The test_config.json next to an eval set is read as the suite's criteria (and user
    simulator): as a symbolic link out of the project it is refused like any other path."""
    root = make_project(tmp_path / "project")
    outside = tmp_path / "outside" / "test_config.json"
    outside.parent.mkdir()
    outside.write_text(json.dumps({"criteria": {"response_match_score": 0.0}}), encoding="utf-8")
    (root / "evals" / "test_config.json").symlink_to(outside)
    (root / "evalgate.yaml").write_text(PLAIN_CONFIG.replace("    criteria:\n      tool_trajectory_avg_score: {threshold: 1.0, match_type: IN_ORDER}\n      response_match_score: 0.8\n", ""), encoding="utf-8")
    line = _one_error(cli, root)
    assert "test_config.json" in line and "leads outside the project" in line, line


def test_a_cache_opened_later_in_the_run_does_not_believe_what_the_agent_planted(tmp_path):
    """gate.pairwise opens its own cache after the agent ran. Had it taken the folder as it then
    found it, an entry the agent planted (claiming a default-branch writer) would count as one
    that was there before: within one run (the action's `session`), every cache of a pull
    request's policy sees the folder as the first one found it, and what any of them wrote."""
    from evalgate.judge.cache import CachePolicy, JudgeCache, session

    root = tmp_path / "cache"
    policy = CachePolicy("pull_request", "pull_request", "refs/pull/7/merge", frozenset({"default"}))

    def plant(key: str, text: str) -> None:
        _plant_entry(root, key, text)

    before, planted, own = "a" * 64, "b" * 64, "c" * 64
    plant(before, "from main")
    with session():
        scoring = JudgeCache(root, policy)
        plant(planted, "A wins")  # the agent, while it runs
        scoring.put(own, "the judge's answer", {})
        pairwise = JudgeCache(root, policy)  # opened after the agent ran
        assert pairwise.get(before).text == "from main"
        assert pairwise.get(planted) is None and pairwise.refused == {"late": 1}
        assert pairwise.get(own).text == "the judge's answer"
    # A new run (a new session) finds the folder anew.
    with session():
        assert JudgeCache(root, policy).get(planted).text == "A wins"


def test_a_copy_of_the_token_does_not_reach_the_agent_when_evalgate_runs_in_the_real_environment(fake_github, tmp_path, capsys, monkeypatch):  # noqa: F811
    """As in the container: the entrypoint reads and cleans `os.environ` itself (env=None). Once
    it has removed GITHUB_TOKEN & co. from it, a copy of the token under another name must still
    be recognised as the token and withheld from a command agent."""
    from entrypoint.main import main

    token = fake_github.token
    ws = leaky_project(tmp_path / "ws", token)
    base, _ = fake_github.linear_history(2)
    head = fake_github.add_commit([base], "PR head")
    (tmp_path / "event.json").write_text(json.dumps(_pull_request(head, base)), encoding="utf-8")
    for name, value in {
        "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(tmp_path / "event.json"), "GITHUB_REPOSITORY": fake_github.repository,
        "GITHUB_API_URL": fake_github.url, "GITHUB_SERVER_URL": "https://github.com", "GITHUB_RUN_ID": "1", "GITHUB_REF": f"refs/pull/{PR}/merge",
        "GITHUB_SHA": head, "GITHUB_OUTPUT": str(tmp_path / "output"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GITHUB_WORKSPACE": str(ws), "EVALGATE_GITHUB_TOKEN": token, "GITHUB_TOKEN": token, "MY_COPY": token,
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(ws)
    main([])
    seen = [json.loads(line) for line in (ws / "env.jsonl").read_text(encoding="utf-8").splitlines()]
    assert seen and all(token not in env.values() for env in seen), [k for env in seen for k, v in env.items() if v == token]
    assert "MY_COPY" not in os.environ  # nor does an in-process agent find it in evalgate's own environment


def test_entries_the_install_step_plants_are_not_believed_by_a_pull_request_run(action, fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    """`pip install .` runs the pull request's setup.py before the judge cache is opened: entries
    it copies in, claiming a default-branch writer, must count as written after the run began."""
    fake = action.fake
    ws = action.ws
    base, _ = fake.linear_history(2)
    head = fake.add_commit([base], "PR head")
    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = _always_valid
    action("pull_request", _pull_request(head, base), sha=head, ref=f"refs/pull/{PR}/merge")
    cache, planted = ws / ".evalgate" / "cache", ws / "planted"
    move_as_default_writer(cache, planted)
    # The project's own build backend (project code, as a setup.py is) plants them.
    planting_build_backend(ws, f"shutil.copytree({str(planted)!r}, {str(cache)!r}, dirs_exist_ok=True)\n")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    clear_judge_env(monkeypatch, tmp_path)
    action("pull_request", _pull_request(head, base), sha=head, ref=f"refs/pull/{PR}/merge", install="--dry-run --no-deps --no-build-isolation .")
    assert action.code in (0, 1) and list(cache.rglob("*.json")), action.stdout  # setup.py ran and planted them
    results = json.loads((ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    assert {c["criteria"]["final_response_match_v2"]["status"] for c in results["suites"][0]["cases"]} == {"NOT_EVALUATED"}


@needs_git
def test_a_repository_made_inside_the_cache_during_the_run_does_not_hide_committed_entries(tmp_path):
    """Which entries git tracks was asked lazily, at the first read, of the nearest `.git`:
    project code running before that (install, a custom metric module, the agent) could
    `git init` inside the cache folder, and the committed entries then looked untracked.
    It is asked when the run takes the cache's view, before any project code runs."""
    from evalgate.judge.cache import CachePolicy, JudgeCache, session, snapshot

    repo = tmp_path / "repo"
    root = repo / ".evalgate" / "cache"
    key = "e" * 64
    _plant_entry(root, key, "planted")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "commit the cache")
    policy = CachePolicy("pull_request", "pull_request", "refs/pull/7/merge", frozenset({"default"}))
    with session():
        snapshot(root)  # the action, before install
        git(root, "init", "-q")  # the project's code, later
        cache = JudgeCache(root, policy)
        assert cache.get(key) is None and cache.refused == {"tracked": 1}
