"""`evalgate gate`: the action's PR path on a developer's machine, in a real git repository
with a real agent (the `command` runner) and a dir baseline store saved by `evalgate baseline save`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalgate.reports.markdown import marker

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

AGENT = '''\
"""A home agent speaking agent-io: one JSON line in per turn, one out."""
import json
import sys

HEATING_ROOM = "거실"

for raw in sys.stdin.buffer:
    if not raw.strip():
        continue
    text = json.loads(raw.decode("utf-8"))["user_content"]["parts"][0]["text"]
    if "난방" in text:
        call, answer = {"name": "set_heating", "args": {"room": HEATING_ROOM, "on": True}}, f"{HEATING_ROOM} 난방을 켰습니다."
    else:
        call, answer = {"name": "set_light", "args": {"room": "bedroom", "on": False}}, "The bedroom light is off."
    print(json.dumps({"final_response": {"role": "model", "parts": [{"text": answer}]}, "intermediate_data": {"tool_uses": [call]}}), flush=True)
'''


def _turn(user: str, answer: str, call: dict) -> dict:
    return {
        "user_content": {"role": "user", "parts": [{"text": user}]},
        "final_response": {"role": "model", "parts": [{"text": answer}]},
        "intermediate_data": {"tool_uses": [call]},
    }


EVALSET = {
    "eval_set_id": "home",
    "eval_cases": [
        {"eval_id": "lights-en", "conversation": [_turn("Turn off the bedroom light.", "The bedroom light is off.", {"name": "set_light", "args": {"room": "bedroom", "on": False}})]},
        {"eval_id": "난방-ko", "conversation": [_turn("거실 난방을 켜 줘.", "거실 난방을 켰습니다.", {"name": "set_heating", "args": {"room": "거실", "on": True}})]},
    ],
}

CONFIG = f"""\
agent: {{command: [{json.dumps(sys.executable)}, agent.py]}}
suites:
  - name: home
    evalsets: [evals]
    criteria:
      tool_trajectory_avg_score: {{threshold: 1.0, match_type: IN_ORDER}}
      response_match_score: 0.8
gate:
  deterministic_flips: fail
"""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def _regress(repo: Path) -> None:
    """The working tree's agent turns on the bedroom's heating instead of the living room's."""
    agent = repo / "agent.py"
    agent.write_text(agent.read_text(encoding="utf-8").replace('HEATING_ROOM = "거실"', 'HEATING_ROOM = "침실"'), encoding="utf-8")


def _project(root: Path) -> Path:
    (root / "evals").mkdir(parents=True)
    (root / "evals" / "home.evalset.json").write_text(json.dumps(EVALSET, ensure_ascii=False, indent=1), encoding="utf-8")
    (root / "agent.py").write_text(AGENT, encoding="utf-8")
    (root / "evalgate.yaml").write_text(CONFIG, encoding="utf-8")
    (root / ".gitignore").write_text("evalgate-results/\n.evalgate/\nbase-out/\n", encoding="utf-8")
    return root


@pytest.fixture
def repo(cli, tmp_path):
    """A repository whose main has one commit with its baseline saved in the dir store, and a
    branch `feature` checked out on top of it. Returns (repo, base sha)."""
    return _repo(cli, tmp_path)


def main_with_baseline(cli, repo: Path, runs: int = 1) -> str:
    """Make the project at `repo` a repository whose main has one commit, run evalgate there
    (into base-out/) and save that run as main's baseline `runs` times (the ledger). Returns
    the commit."""
    _git(repo, "init", "-q")
    _git(repo, "symbolic-ref", "HEAD", "refs/heads/main")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "base")
    base = _git(repo, "rev-parse", "HEAD")
    code, _, err = cli("run", "--out", "base-out", "--quiet", cwd=repo)
    assert code == 0, err
    for _ in range(runs):
        code, _, err = cli("baseline", "save", "--results", "base-out/results.json", "--commit", base, "--ref", "refs/heads/main", cwd=repo)
        assert code == 0, err
    return base


def _repo(cli, tmp_path):
    repo = _project(tmp_path / "repo")
    base = main_with_baseline(cli, repo)
    _git(repo, "checkout", "-q", "-b", "feature")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "work")
    return repo, base


def _comment(repo: Path, out: str = "evalgate-results") -> str:
    return (repo / out / "comment.md").read_text(encoding="utf-8")


def test_a_regressed_working_tree_fails_against_the_merge_base_baseline(cli, repo):
    repo, base = repo
    _regress(repo)
    code, out, err = cli("gate", cwd=repo)
    assert code == 1, out + err
    assert "evalgate gate: FAIL against the baseline" in out
    assert f"base: {base[:12]} (the merge-base of HEAD and main)" in err
    assert f"baseline of {base[:12]}: from the folder .evalgate/baselines" in err
    assert "home: home/난방-ko regressed" in out
    comment = _comment(repo)
    assert comment.startswith(marker("evalgate"))  # the PR comment, marker and all
    assert "FAIL" in comment and "난방-ko" in comment and base[:12] in comment
    assert "changes the gate" not in comment and "configuration changed" not in comment
    page = (repo / "evalgate-results" / "report.html").read_text(encoding="utf-8")
    assert ">FAIL<" in page and '"ch":"regressed"' in page and '"id":"난방-ko"' in page
    assert "comment: evalgate-results/comment.md  report: evalgate-results/report.html" in out


def test_case_gates_the_chosen_cases_against_the_same_cases_of_the_baseline(cli, repo):
    repo, base = repo
    _regress(repo)  # 난방-ko regressed; lights-en unchanged
    code, out, err = cli("gate", "--case", "lights-*", cwd=repo)
    assert code == 0, out + err
    comment = _comment(repo)
    assert "PASS" in comment and "Removed cases" not in comment and "난방-ko" not in comment
    code, out, err = cli("gate", "--case", "난방*", cwd=repo)
    assert code == 1, out + err
    assert "home: home/난방-ko regressed" in out and "Removed cases" not in _comment(repo)


def test_an_unchanged_working_tree_passes(cli, repo):
    repo, base = repo
    code, out, err = cli("gate", "--out", "gated", cwd=repo)
    assert code == 0, out + err
    assert "evalgate gate: PASS against the baseline" in out
    comment = _comment(repo, "gated")
    assert comment.startswith(marker("evalgate")) and "PASS" in comment
    results = json.loads((repo / "gated" / "results.json").read_text(encoding="utf-8"))
    assert {c["eval_id"] for c in results["suites"][0]["cases"]} == {"lights-en", "난방-ko"}


def test_base_sha_takes_a_revision_and_walks_first_parents(cli, repo):
    repo, base = repo
    _regress(repo)
    code, out, err = cli("gate", "--base-sha", "feature", cwd=repo)  # no baseline of its own: one commit back
    assert code == 1, out + err
    assert "(--base-sha feature)" in err and f"baseline of {base[:12]}, 1 commit before it" in err
    code, out, err = cli("gate", "--base-sha", "no-such-branch", cwd=repo)
    assert code == 2 and "git knows no commit 'no-such-branch'" in err and "Traceback" not in err


def test_baseline_file_results_or_saved(cli, repo):
    repo, base = repo
    _regress(repo)
    code, out, err = cli("gate", "--baseline", "base-out/results.json", cwd=repo)
    assert code == 1, out + err
    assert "home: home/난방-ko regressed" in out and "baseline: from base-out/results.json" in err
    saved = repo / ".evalgate" / "baselines" / "baselines" / "evalgate" / f"{base}.json.gz"
    code, out, err = cli("gate", "--baseline", str(saved), "--out", "o2", cwd=repo)
    assert code == 1, out + err
    assert f"base: {base[:12]} (the commit {saved} was saved for)" in err
    assert "난방-ko" in _comment(repo, "o2")


def test_no_baseline_is_judged_on_absolute_thresholds_and_said_plainly(cli, tmp_path):
    repo = _project(tmp_path / "fresh")
    _git(repo, "init", "-q")
    _git(repo, "symbolic-ref", "HEAD", "refs/heads/main")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "base")
    code, out, err = cli("gate", cwd=repo)
    assert code == 0, out + err
    assert "no baseline for" in err and "judged on absolute thresholds" in err
    assert "evalgate gate: PASS against absolute thresholds (no baseline)" in out
    _regress(repo)
    code, out, err = cli("gate", cwd=repo)
    assert code == 1 and "evalgate gate: FAIL against absolute thresholds" in out
    assert "난방-ko" in _comment(repo)
    # Outside git there is no base commit at all.
    plain = _project(tmp_path / "plain")
    code, out, err = cli("gate", "--quiet", cwd=plain)
    assert code == 0, out + err
    assert "not in a git checkout" in err and out.strip() == "evalgate gate: PASS against absolute thresholds (no baseline)"


LOOSER = (
    ("  deterministic_flips: fail\n", "  deterministic_flips: test\n  margin_deterministic: 1.0\n"),
    ("tool_trajectory_avg_score: {threshold: 1.0,", "tool_trajectory_avg_score: {threshold: 0.0,"),
)


def test_a_working_tree_that_loosens_its_own_config_is_judged_by_the_base(cli, repo):
    repo, base = repo
    _regress(repo)
    config = repo / "evalgate.yaml"
    text = config.read_text(encoding="utf-8")
    for old, new in LOOSER:
        assert old in text
        text = text.replace(old, new)
    config.write_text(text, encoding="utf-8")
    _git(repo, "commit", "-q", "-am", "loosen the gate")
    code, out, err = cli("gate", cwd=repo)
    assert code == 1, out + err
    assert "changes the gate's policy: judged under the base's" in out
    comment = _comment(repo)
    assert "This pull request changes the gate" in comment and "```diff" in comment
    assert "-  deterministic_flips: fail" in comment and "+  deterministic_flips: test" in comment
    assert "-      threshold: 1.0" in comment and "+      threshold: 0.0" in comment
    results = json.loads((repo / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    assert results["suites"][0]["criteria"]["tool_trajectory_avg_score"]["threshold"] == 1.0  # the base's
    # Without the base's policy (its own config as the baseline's) the loosened gate would pass.
    code, out, err = cli("compare", "--current", "evalgate-results/results.json", "--baseline", "base-out/results.json", cwd=repo)
    assert code == 0, out + err


def test_the_data_branch_of_the_github_store_is_read_through_git_once_fetched(cli, repo, tmp_path):
    """The action keeps baselines on the data branch; a clone that fetched it gates against them."""
    origin, base = repo
    _git(origin, "checkout", "-q", "main")
    store = origin / ".evalgate" / "baselines"
    _git(origin, "checkout", "-q", "--orphan", "evalgate-data")
    _git(origin, "rm", "-rq", "--cached", ".")
    _git(origin, "--work-tree", str(store), "add", "-A", ".")
    _git(origin, "--work-tree", str(store), "commit", "-q", "-m", "baselines")
    _git(origin, "checkout", "-q", "-f", "main")
    clone = tmp_path / "clone"
    _git(tmp_path, "clone", "-q", f"file://{origin}", str(clone))
    _git(clone, "checkout", "-q", "-b", "feature")
    _regress(clone)
    code, out, err = cli("gate", cwd=clone)
    assert code == 1, out + err
    assert f"base: {base[:12]} (the merge-base of HEAD and origin/main)" in err
    assert f"baseline of {base[:12]}: from the data branch origin/evalgate-data (through git)" in err
    assert "home: home/난방-ko regressed" in out
    # Not fetched: said plainly, and judged on absolute thresholds.
    _git(clone, "branch", "-q", "-r", "-D", "origin/evalgate-data")
    code, out, err = cli("gate", cwd=clone)
    assert code == 1 and "against absolute thresholds" in out
    assert "the action's baselines are on the data branch evalgate-data unless it is told otherwise: git fetch origin evalgate-data" in err


def test_a_shard_is_gated_against_the_same_cases_of_the_baseline(cli, repo):
    from evalgate.shards import shard_of

    repo, base = repo
    _regress(repo)
    for index in (1, 2):
        holds = [e for e in ("lights-en", "난방-ko") if shard_of("home", "home", e, 2) == index]
        code, out, err = cli("gate", "--shard", f"{index}/2", "--out", f"s{index}", cwd=repo)
        results = json.loads((repo / f"s{index}" / "results.json").read_text(encoding="utf-8"))
        assert sorted(c["eval_id"] for c in results["suites"][0]["cases"]) == sorted(holds)
        assert f"(shard {index}/2: its cases only)" in out
        comment = _comment(repo, f"s{index}")
        assert "removed" not in comment.lower()  # the other shard's cases are not missing, only not held
        if "난방-ko" in holds:
            assert code == 1 and "home: home/난방-ko regressed" in out, out + err
        else:
            assert code == 0 and "evalgate gate: PASS against the baseline" in out, out + err


HOSTILE_ID = "난방-ko\x1b[2J\x1b]0;pwned\x07\r\n::error::forged"


@pytest.mark.parametrize("code", ["en", "ko", "ja"])
def test_a_hostile_case_id_cannot_drive_the_terminal_in_any_language(cli, tmp_path, monkeypatch, code):
    """A case id from the pull request's eval set, with terminal escapes, a carriage return and
    a forged workflow command in it: every line `evalgate gate` prints (the regressed cases,
    the verdict's reasons) shows it on one line with no control character, in every language."""
    hostile = json.loads(json.dumps(EVALSET))
    hostile["eval_cases"][1]["eval_id"] = HOSTILE_ID
    monkeypatch.setattr(sys.modules[__name__], "EVALSET", hostile)
    repo, _base = _repo(cli, tmp_path)
    _regress(repo)
    code_, out, err = cli("gate", "--language", code, cwd=repo)
    assert code_ == 1, out + err
    assert "2J" in out  # the case is named (its escapes taken out)
    for text in (out, err):
        assert not any(ord(ch) < 32 and ch not in "\n" for ch in text), repr(text)
        assert not any(line.startswith("::") for line in text.splitlines()), text
