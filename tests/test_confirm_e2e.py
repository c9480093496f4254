"""Confirmation runs end to end: a real agent (the `command` runner, one process per case run)
whose working tree breaks one case for good and makes another flaky (wrong on its first run
only). Through `evalgate gate` and through the action's PR path against the fake GitHub API:
the broken case FAILs after failing both re-runs, the flaky one passes on re-run and is not
blamed, and the comment says both."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from fake_github import fake_github  # noqa: F401  (fixture)
from test_entrypoint import Action, _pull_request, _push
from test_local_gate import CONFIG as LOCAL_CONFIG
from test_local_gate import EVALSET as LOCAL_EVALSET
from test_local_gate import _git, _turn, main_with_baseline

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

AGENT = '''\
"""A home agent speaking agent-io: one JSON line in per turn, one out."""
import json
import sys
from pathlib import Path

HEATING_ROOM = "거실"
FLAKY = False

for raw in sys.stdin.buffer:
    if not raw.strip():
        continue
    text = json.loads(raw.decode("utf-8"))["user_content"]["parts"][0]["text"]
    if "난방" in text:
        call, answer = {"name": "set_heating", "args": {"room": HEATING_ROOM, "on": True}}, f"{HEATING_ROOM} 난방을 켰습니다."
    elif "blinds" in text:
        seen = Path(__file__).with_name("flaky-state")
        wrong = FLAKY and not seen.exists()  # wrong on the first run after the change only
        seen.write_text("seen", encoding="utf-8")
        call = {"name": "set_blinds", "args": {"room": "study", "open": not wrong}}
        answer = "The study blinds are closed." if wrong else "The study blinds are open."
    else:
        call, answer = {"name": "set_light", "args": {"room": "bedroom", "on": False}}, "The bedroom light is off."
    print(json.dumps({"final_response": {"role": "model", "parts": [{"text": answer}]}, "intermediate_data": {"tool_uses": [call]}}), flush=True)
'''


# The local gate's two cases, and a third whose agent answer can be made flaky.
EVALSET = {
    **LOCAL_EVALSET,
    "eval_cases": LOCAL_EVALSET["eval_cases"]
    + [{"eval_id": "blinds", "conversation": [_turn("Open the study blinds.", "The study blinds are open.", {"name": "set_blinds", "args": {"room": "study", "open": True}})]}],
}

# Three cases are too few for the pooled breakage test to tell one broken case from noise:
# a deterministic flip fails the gate, once confirmation runs confirm it.
CONFIG = LOCAL_CONFIG

HISTORY = 6  # default-branch runs: every case stable (stable_min_runs 5)


def _project(root: Path, config: str = CONFIG) -> Path:
    (root / "evals").mkdir(parents=True)
    (root / "evals" / "home.evalset.json").write_text(json.dumps(EVALSET, ensure_ascii=False, indent=1), encoding="utf-8")
    (root / "agent.py").write_text(AGENT, encoding="utf-8")
    (root / "evalgate.yaml").write_text(config, encoding="utf-8")
    (root / ".gitignore").write_text("evalgate-results/\n.evalgate/\nbase-out/\nflaky-state\n", encoding="utf-8")
    return root


def _change(root: Path) -> None:
    """The pull request: the heating goes to the bedroom (broken for good), the blinds go
    wrong on their first run only (flaky)."""
    agent = root / "agent.py"
    text = agent.read_text(encoding="utf-8").replace('HEATING_ROOM = "거실"', 'HEATING_ROOM = "침실"').replace("FLAKY = False", "FLAKY = True")
    agent.write_text(text, encoding="utf-8")
    (root / "flaky-state").unlink(missing_ok=True)


def _check(comment: str, results: dict) -> None:
    assert "### Confirmation runs" in comment
    assert "- home/난방-ko (tool\\_trajectory\\_avg\\_score): failed 2 of 2 re-runs: broken" in comment
    assert "- home/blinds (tool\\_trajectory\\_avg\\_score): passed on re-run: flaky, not counted (2 of 2 passed)" in comment
    assert "1 case went from PASSED to FAILED (a deterministic criterion: no noise to allow for): home/난방-ko" in comment
    assert "blinds went from" not in comment
    # blinds is named only as the case its re-runs cleared, never among the broken ones.
    assert "stable cases broke (each passed all of its last 5+ runs): home/난방-ko;" in comment
    assert "flaky, not counted: home/blinds" in comment
    cases = {c["eval_id"]: c for c in results["suites"][0]["cases"]}
    assert "reruns" not in cases["lights-en"]
    heating, blinds = cases["난방-ko"], cases["blinds"]
    assert heating["status"] == "FAILED" and blinds["status"] == "FAILED"  # the first run, kept as it was
    assert [(r["run"], r["how"], r["status"]) for r in heating["reruns"]] == [(1, "agent", "FAILED"), (2, "agent", "FAILED")]
    assert [(r["run"], r["how"], r["status"]) for r in blinds["reruns"]] == [(1, "agent", "PASSED"), (2, "agent", "PASSED")]
    assert heating["reruns"][0]["invocations"][0]["actual_response"] == "침실 난방을 켰습니다."


def test_evalgate_gate_confirms_the_broken_case_and_clears_the_flaky_one(cli, tmp_path):
    repo = _project(tmp_path / "repo")
    base = main_with_baseline(cli, repo, HISTORY)  # the ledger: six default-branch runs of the same results
    _git(repo, "checkout", "-q", "-b", "feature")
    _change(repo)

    code, out, err = cli("gate", cwd=repo)
    assert code == 1, out + err
    assert "evalgate gate: FAIL against the baseline" in out
    assert "confirmation: 2 suspect case(s) re-run 2 time(s) each (4 agent runs, 0 judge re-draws)" in err
    assert "home: home/난방-ko broke (a stable case)" in out
    assert "home: home/blinds regressed" in out  # its first run did
    assert "home: home/blinds re-run: passed on re-run: flaky, not counted (2 of 2 passed)" in out
    assert "home: home/난방-ko re-run: failed 2 of 2 re-runs: broken" in out
    out_dir = repo / "evalgate-results"
    results = json.loads((out_dir / "results.json").read_text(encoding="utf-8"))
    _check((out_dir / "comment.md").read_text(encoding="utf-8"), results)
    html = (out_dir / "report.html").read_text(encoding="utf-8")
    assert '"rr":' in html and "agent re-run" in html  # each re-run, drawn with its case

    # gate.confirm.runs: 0: nothing is re-run, and the flaky case's flip fails the gate too.
    _change(repo)
    (repo / "evalgate.yaml").write_text(CONFIG + "  confirm: {runs: 0}\n", encoding="utf-8")
    code, out, err = cli("gate", "--baseline", "base-out/results.json", cwd=repo)  # the working tree's policy
    assert code == 1 and "confirmation" not in err
    comment = (out_dir / "comment.md").read_text(encoding="utf-8")
    assert "Confirmation runs" not in comment and "2 cases went from PASSED to FAILED" in comment


def test_the_actions_pr_path_confirms_before_it_comments(fake_github, tmp_path, capsys):  # noqa: F811
    ws = _project(tmp_path / "ws")
    action = Action(fake_github, ws, tmp_path, capsys)
    main_commits = fake_github.linear_history(HISTORY)
    for sha in main_commits:  # each push saves a baseline and a run of the ledger
        assert action("push", _push(sha), sha=sha) == 0, action.stdout
    _change(ws)
    head = fake_github.add_commit([main_commits[-1]], "PR head")
    code = action("pull_request", _pull_request(head, main_commits[-1]), sha=head, ref="refs/pull/7/merge")
    assert code == 1, action.stdout
    assert "confirmation: 2 suspect case(s) re-run 2 time(s) each (4 agent runs, 0 judge re-draws)" in action.stdout
    # This workspace is no git checkout of the base commit (a shallow clone would not hold it either): said, and decided without it.
    assert (f"confirmation: 1 suspect case(s) could not be run at the base commit as a control (the base commit {main_commits[-1][:12]} "
            "is not in this clone: actions/checkout with fetch-depth: 0 fetches the history): decided without it") in action.stdout
    [comment] = fake_github.issue_comments(7)
    results = json.loads((ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    _check(comment["body"], results)
    assert [s["state"] for s in fake_github.statuses[head]] == ["failure"]


def test_a_sharded_pull_request_is_confirmed_by_the_merge_job(fake_github, tmp_path, capsys):  # noqa: F811
    """The merge job holds the checkout and the agent: it re-runs the suspects of every leg,
    each from scratch (it has none of the legs' runs), and gives one verdict."""
    ws = _project(tmp_path / "ws")
    action = Action(fake_github, ws, tmp_path, capsys)
    main_commits = fake_github.linear_history(HISTORY)
    for sha in main_commits:
        assert action("push", _push(sha), sha=sha) == 0, action.stdout
    _change(ws)
    head = fake_github.add_commit([main_commits[-1]], "PR head")
    event, ref = _pull_request(head, main_commits[-1]), "refs/pull/7/merge"
    for k in (1, 2):
        assert action("pull_request", event, sha=head, ref=ref, shard=f"{k}/2", out=f"legs/leg-{k}") == 0, action.stdout
    (ws / "flaky-state").write_text("seen", encoding="utf-8")  # the merge job's re-runs of the flaky case pass
    code = action("pull_request", event, sha=head, ref=ref, mode="merge", shards="legs")
    assert code == 1, action.stdout
    assert "confirmation: 2 suspect case(s) re-run 2 time(s) each (4 agent runs, 0 judge re-draws)" in action.stdout
    [comment] = fake_github.issue_comments(7)
    results = json.loads((ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    _check(comment["body"], results)
    assert [s["index"] for s in results["run"]["shards"]] == [1, 2]
