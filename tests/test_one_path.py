"""One gate path: the same change gated through every way in decides alike.

A real agent (the `command` runner: one process per case run, speaking agent-io) whose pull
request breaks two stable cases, drops a detail from an answer (a loss the side-by-side judge
sees), makes a tool call more on every turn (a cost rise), crashes on one case and fails a
case the flake ledger knows as flaky, while its own config loosens the gate (judged by the
base's). It is gated by `evalgate gate`, the action's `pr`, `merge_group`, a sharded run with
its merge job, and the fork-safe two-phase publish, against the fake GitHub API and a fake
Gemini judge at the wire. The verdict, each suite's reasons and the lists of cases are the
same on every path, and the judge is asked the same questions. What differs is the path's
own: the publish job never shows the pull request's own policy (its config is the trusted
one), and reads a fork's failed run as no run at all, so the crash's suite is ERROR there
(docs/workflows.md: a fork's outputs cannot show whether its agent failed a case); the
crash has a suite of its own so that the rest is compared on that path too.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from fake_gemini import fake_gemini, prompt_text  # noqa: F401  (fixture)
from fake_github import fake_github  # noqa: F401  (fixture)
from pairwise_judges import answers
from test_entrypoint import PR, Action, _pull_request
from test_local_gate import _git
from test_merge_queue import _merge_group

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

AGENT = '''\
"""A home agent speaking agent-io: one JSON line in per turn, one out."""
import json
import sys
from pathlib import Path

BROKEN = set()  # cases whose room the change gets wrong
TERSE = set()  # cases whose answer the change shortens (the room left out)
CRASH = set()  # cases the change crashes on
EXTRA = False  # the change logs every turn: one tool call more

for raw in sys.stdin.buffer:
    if not raw.strip():
        continue
    line = json.loads(raw.decode("utf-8"))
    case, text = line["eval_id"], line["user_content"]["parts"][0]["text"]
    if case in CRASH:
        raise SystemExit("the door controller is not configured")
    device, room = text.split(" @ ")
    if case in BROKEN:
        room = "attic"
    if case == "blinds" and Path(__file__).with_name("flaky-fail").exists():
        room = "cellar"  # the flaky case: wrong whenever the state file says so
    answer = f"The {device} in the {room} is off." if case not in TERSE else f"The {device} in {room} is off."
    calls = [{"name": "switch_off", "args": {"device": device, "room": room}}]
    if EXTRA:
        calls.append({"name": "log_event", "args": {"case": case}})
    print(json.dumps({"final_response": {"role": "model", "parts": [{"text": answer}]}, "intermediate_data": {"tool_uses": calls}}), flush=True)
'''

CASES = {  # eval_id: (device, room)
    "lamp": ("lamp", "bedroom"),
    "fan": ("fan", "study"),
    "heater": ("heater", "거실"),
    "radio": ("radio", "kitchen"),
    "tv": ("tv", "den"),
    "kettle": ("kettle", "kitchen"),
    "oven": ("oven", "kitchen"),
    "blinds": ("blinds", "study"),
    "printer": ("printer", "office"),
    "heater-2": ("heater", "침실"),
}
DOORS = {"door": ("door", "hall"), "porch": ("light", "porch")}  # a suite of its own: the change crashes on door
BROKEN, TERSE, CRASHED, FLAKY = ("fan", "heater"), ("lamp",), "door", "blinds"


def _turn(device: str, room: str) -> dict:
    return {
        "user_content": {"role": "user", "parts": [{"text": f"{device} @ {room}"}]},
        "final_response": {"role": "model", "parts": [{"text": f"The {device} in the {room} is off."}]},
        "intermediate_data": {"tool_uses": [{"name": "switch_off", "args": {"device": device, "room": room}}]},
    }


EVALSETS = {
    name: {"eval_set_id": name, "eval_cases": [{"eval_id": k, "conversation": [_turn(*v)]} for k, v in cases.items()]}
    for name, cases in (("home", CASES), ("doors", DOORS))
}

BASE_CONFIG = f"""\
agent: {{command: [{json.dumps(sys.executable)}, agent.py]}}
suites:
  - name: home
    evalsets: [evals/home]
    criteria: &criteria
      tool_trajectory_avg_score: {{threshold: 1.0, match_type: IN_ORDER}}
      response_match_score: 0.8
  - name: doors
    evalsets: [evals/doors]
    criteria: *criteria
judge:
  cache: false
gate:
  deterministic_flips: fail
  confirm: {{runs: 0}}
  pairwise: {{enabled: true, judge_model: gemini-2.5-flash}}
  efficiency: {{tool_call_count_v1: 0.1}}
  baseline: {{store: dir}}
"""
# The change loosens its own gate: flips tested, any number of tool calls tolerated.
PR_CONFIG = BASE_CONFIG.replace("deterministic_flips: fail", "deterministic_flips: test").replace("tool_call_count_v1: 0.1", "tool_call_count_v1: 10.0")


def _project(root: Path, config: str) -> Path:
    for name, evalset in EVALSETS.items():
        (root / "evals" / name).mkdir(parents=True)
        (root / "evals" / name / f"{name}.evalset.json").write_text(json.dumps(evalset, ensure_ascii=False, indent=1), encoding="utf-8")
    (root / "agent.py").write_text(AGENT, encoding="utf-8")
    (root / "evalgate.yaml").write_text(config, encoding="utf-8")
    (root / ".gitignore").write_text("evalgate-results/\n.evalgate/\nh-*/\nlocal-out/\nlegs/\nevalgate-artifact/\nflaky-fail\n", encoding="utf-8")
    return root


def _change(repo: Path, config: str) -> None:
    text = (repo / "agent.py").read_text(encoding="utf-8")
    text = text.replace("BROKEN = set()", f"BROKEN = {set(BROKEN)!r}").replace("TERSE = set()", f"TERSE = {set(TERSE)!r}")
    text = text.replace("CRASH = set()", f"CRASH = {{{CRASHED!r}}}").replace("EXTRA = False", "EXTRA = True")
    (repo / "agent.py").write_text(text, encoding="utf-8")
    (repo / "evalgate.yaml").write_text(config, encoding="utf-8")


def _longer_answer_wins(body):
    """The fake judge: the answer that says more serves the user better; equal lengths tie."""
    a = answers(body)
    if len(a["A"]) == len(a["B"]):
        return {"reason": "Both say as much.", "better": "equal"}
    better = "A" if len(a["A"]) > len(a["B"]) else "B"
    return {"reason": f"Answer {better} names the room (방 이름을 말합니다).", "better": better}


def decided(markdown: str) -> dict:
    """What the gate decided, read from a rendered report (a comment, comment.md or the job
    summary): the verdict; per suite its verdict and reasons (the summary's line and the
    section's bullets); each case the report lists, with how it changed. Code blocks (the
    policy diff, the cases' texts), links and the path's own notes are not in it."""
    verdict = re.search(r"\*\*evalgate (PASS|FAIL|INCONCLUSIVE|ERROR)\*\*", markdown)
    suites: dict[str, dict] = {}
    section, fenced = None, False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        top = re.match(r"- (\w+): (PASS|FAIL|INCONCLUSIVE|ERROR): (.*)", line)
        if top and section is None:
            suites.setdefault(top.group(1), {"verdict": top.group(2), "reasons": []})
            continue
        head = re.match(r"### (\w+): \*\*(\w+)\*\*", line)
        if head:
            section = head.group(1)
            suites.setdefault(section, {"verdict": head.group(2), "reasons": []})
            continue
        if line.startswith("### "):
            section = ""  # a section about cases, not a suite's
        elif section and line.startswith("- "):
            suites[section]["reasons"].append(line[2:])
    cases = sorted((kind, suite, f"{evalset}/{case}") for kind, suite, evalset, case in re.findall(r"<summary><b>([^<]+)</b> (\w+): (\w+) / ([^\s:(<]+)", markdown))
    return {"verdict": verdict.group(1) if verdict else None, "suites": suites, "cases": cases}


def _prompts(fake) -> list[str]:
    return sorted(prompt_text(r.body) for r in fake.requests)


@pytest.mark.parametrize("confirm_runs", [0, 2])
def test_every_way_in_gates_the_change_alike(cli, fake_github, fake_gemini, tmp_path, capsys, monkeypatch, confirm_runs):  # noqa: F811
    """With gate.confirm on, the suspects are re-run on every path that may run the agent; the
    publish job never runs one (the fork's agent is not there): its suspects of deterministic
    criteria keep their first run, so its reasons are compared with confirmation off."""
    confirm = f"confirm: {{runs: {confirm_runs}}}"
    base_config, pr_config = BASE_CONFIG.replace("confirm: {runs: 0}", confirm), PR_CONFIG.replace("confirm: {runs: 0}", confirm)
    repo = _project(tmp_path / "repo", base_config)
    _git(repo, "init", "-q")
    _git(repo, "symbolic-ref", "HEAD", "refs/heads/main")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "base")
    base = _git(repo, "rev-parse", "HEAD")
    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = _longer_answer_wins

    # The default branch's history: six runs, the flaky case failing in two of them.
    assert cli("run", "--out", "h-good", "--quiet", cwd=repo)[0] == 0
    (repo / "flaky-fail").write_text("", encoding="utf-8")
    assert cli("run", "--out", "h-flaky", "--quiet", cwd=repo)[0] == 1
    runs = ["h-good", "h-flaky", "h-good", "h-flaky", "h-good", "h-good"]
    code, _, err = cli("baseline", "save", "--results", *(f"{r}/results.json" for r in runs), "--commit", base, "--ref", "refs/heads/main", cwd=repo)
    assert code == 0, err

    _git(repo, "checkout", "-q", "-b", "feature")
    _change(repo, pr_config)  # flaky-fail stays: the flaky case fails in the change's runs
    _git(repo, "commit", "-q", "-am", "the change")
    head = _git(repo, "rev-parse", "HEAD")
    assert fake_gemini.requests == []
    seen: dict[str, dict] = {}
    asked: dict[str, int] = {}

    # 1. evalgate gate
    code, out, err = cli("gate", "--base-sha", "main", "--out", "local-out", cwd=repo)
    assert code == 1, out + err
    comment = (repo / "local-out" / "comment.md").read_text(encoding="utf-8")
    seen["gate"], asked["gate"] = decided(comment), _prompts(fake_gemini)
    assert "judged side by side" in comment  # gate.pairwise: asked as the action asks
    changes = "**This pull request changes the gate.**"  # its own policy, shown against the base's that judged it
    assert changes in comment and "+  deterministic_flips: test" in comment

    # The fake GitHub holds the same commits, each with its config.
    fake = fake_github
    fake.add_commit([], "base", sha=base, files={"evalgate.yaml": base_config.encode()})
    fake.add_commit([base], "the change", sha=head, files={"evalgate.yaml": pr_config.encode()})
    fake.refs["refs/heads/main"] = base
    action = Action(fake, repo, tmp_path, capsys)
    store = {"baseline_store": "dir"}

    # 2. the action's pull request run
    fake_gemini.reset()
    event, ref = _pull_request(head, base), f"refs/pull/{PR}/merge"
    assert action("pull_request", event, sha=head, ref=ref, **store) == 1, action.stdout
    [pr_comment] = fake.issue_comments(PR)
    seen["pr"], asked["pr"] = decided(pr_comment["body"]), _prompts(fake_gemini)
    assert changes in pr_comment["body"]
    artifact = repo / "evalgate-artifact"  # what a fork's run uploads: its outputs and pr.json
    artifact.mkdir()
    shutil.copy(repo / "evalgate-results" / "inference.jsonl", artifact / "inference.jsonl")
    (artifact / "pr.json").write_text(json.dumps({"number": PR, "head_sha": head, "base_sha": base}), encoding="utf-8")

    # 3. the merge queue
    fake_gemini.reset()
    group = fake.add_commit([base, head], "merge group", files={"evalgate.yaml": pr_config.encode()})
    payload = _merge_group(group, base)
    assert action("merge_group", payload, sha=group, ref=payload["merge_group"]["head_ref"], **store) == 1, action.stdout
    seen["merge_group"], asked["merge_group"] = decided(action.summary), _prompts(fake_gemini)

    # 4. a sharded run: two legs, then the merge job
    fake_gemini.reset()
    for k in (1, 2):
        assert action("pull_request", event, sha=head, ref=ref, shard=f"{k}/2", out=f"legs/leg-{k}", **store) == 0, action.stdout
    assert fake_gemini.requests == []  # a leg scores; the merge job compares
    assert action("pull_request", event, sha=head, ref=ref, mode="merge", shards="legs", **store) == 1, action.stdout
    [merged] = fake.issue_comments(PR)
    seen["merge"], asked["merge"] = decided(merged["body"]), _prompts(fake_gemini)
    assert changes in merged["body"]

    # 5. the fork-safe flow's trusted half: the default branch checked out, the fork's outputs re-scored
    fake_gemini.reset()
    _git(repo, "checkout", "-q", "main")
    fake.add_pull(PR, head, base, fork=True)
    run = {"id": 99, "event": "pull_request", "head_sha": head, "head_branch": "feature", "head_repository": {"full_name": "someone/hello"}, "pull_requests": []}
    code = action("workflow_run", {"action": "completed", "workflow_run": run}, sha=base, artifact_dir="evalgate-artifact", **store)
    [published] = fake.issue_comments(PR)
    seen["publish"], asked["publish"] = decided(published["body"]), _prompts(fake_gemini)
    assert "running the agent" not in action.stdout  # the trusted job runs no agent, confirming or not
    assert changes not in published["body"]  # its config is the trusted one: no pull request's policy to show

    assert seen["gate"]["verdict"] == "FAIL" and set(seen["gate"]["suites"]) == {"home", "doors"}
    for path in ("pr", "merge_group", "merge"):
        assert seen[path] == seen["gate"], path
    # What the scenario holds, as every path decided it.
    kinds = {(k, s, c) for k, s, c in seen["gate"]["cases"] if s == "home"}  # (confirmed, the crash is listed too)
    assert kinds == {("broken stable", "home", "home/fan"), ("broken stable", "home", "home/heater"), ("regressed", "home", "home/blinds"), ("worse", "home", "home/lamp")}, kinds
    reasons = " ".join(seen["gate"]["suites"]["home"]["reasons"])
    assert "tool calls per turn +50%" in reasons and "stable cases broke (each passed all of its last 5+ runs): home/fan, home/heater" in reasons, reasons
    assert "flaky on the default branch" in (repo / "local-out" / "comment.md").read_text(encoding="utf-8")  # blinds
    # The side-by-side judge was asked the same questions on every path, `evalgate gate` included.
    assert len(asked["gate"]) == 8 + 6  # 4 changed answers in both orders; 3 whose verdicts all picked one side, again (confirm)
    assert asked["pr"] == asked["gate"] == asked["merge_group"] == asked["merge"] == asked["publish"]
    if confirm_runs:
        assert "### Confirmation runs" in comment and "failed 2 of 2 re-runs: broken" in comment
        assert "suspect case(s) of recorded outputs and deterministic criteria: nothing to re-run, the first run stands" in action.stdout
        assert seen["publish"]["verdict"] == seen["gate"]["verdict"] == "FAIL"
        return
    # The publish job: the same decision on the suite the fork's outputs hold whole.
    assert seen["publish"]["suites"]["home"] == seen["gate"]["suites"]["home"]
    assert seen["publish"]["cases"] == [c for c in seen["gate"]["cases"] if c[1] == "home"]
    assert seen["publish"]["verdict"] == seen["gate"]["verdict"]
    assert seen["publish"]["suites"]["doors"]["verdict"] == "ERROR" and seen["gate"]["suites"]["doors"]["verdict"] != "ERROR"
    assert "a fork's outputs cannot show whether its agent failed them" in seen["publish"]["suites"]["doors"]["reasons"][0]
    assert "the agent failed on it in this run" in " ".join(seen["gate"]["suites"]["doors"]["reasons"])  # the crash (doors/door)
