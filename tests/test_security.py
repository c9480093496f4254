"""Issue 26: what a pull request must not be able to change, tried the way an attacker would.

Each test here failed on the code before issue 26: planted judge verdicts, planted markers,
the token reaching the agent, secrets in the outputs, headers that name the token or
follow a redirect elsewhere, paths out of the repository, pull_request_target.
"""

from __future__ import annotations

import json
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
