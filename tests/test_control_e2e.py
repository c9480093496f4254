"""The base commit as a control, end to end (issue 37, evalgate.gate.control): on the first
day (one baseline run, no history), a suspect that fails every re-run on the pull request is
run at the base commit too, from a git worktree of it, with the same `command` runner. A real
agent (one process per case run) writes which tree it ran from into a log outside the
repository, so the base commit's runs are counted, not inferred.

(a) the pull request breaks two cases: they fail every re-run while the base commit passes
    every one of its runs beside them: FAIL, the cases named, the base runs counted;
(b) a tool is down for both (the outage is outside the repository): the base commit fails
    too: the environment's doing, said, and not a FAIL;
(c) recorded outputs (`actual:`): no agent to run at the base commit: a note says so, no
    base run, and the gate decides as without the control;
(d) one broken case of ten: too few to FAIL the criterion on the first day, so not re-run,
    and the reasons say so and why;
(e) an in-process ADK agent: the control imports the base commit's modules, not the pull
    request's already imported ones;
(f) a sharded pull request: the merge job runs the control from its checkout, or says why
    not (a shallow checkout) and decides without it.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fake_github import fake_github  # noqa: F401  (fixture)
from test_local_gate import _git, _turn, main_with_baseline

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

CASES = 10  # item-0 .. item-9; the pull request breaks item-1 and item-2

AGENT = '''\
"""A stock agent speaking agent-io: one JSON line in per turn, one out. It logs the tree it ran from."""
import json
import sys
from pathlib import Path

LOG = {log!r}
OUTAGE = {outage!r}
BROKEN = ()
FLIPPY = ()  # wrong on every other run (the first one included)

here = str(Path(__file__).resolve().parent)
for raw in sys.stdin.buffer:
    if not raw.strip():
        continue
    text = json.loads(raw.decode("utf-8"))["user_content"]["parts"][0]["text"]
    item = text.split()[-1]
    down = Path(OUTAGE).exists() and item in ("1", "2")  # the inventory tool is down for these
    flip = False
    if item in FLIPPY:  # runs may overlap: the count is read and bumped under a lock
        import fcntl
        with open(LOG + ".flips", "a+", encoding="utf-8") as counter:
            fcntl.flock(counter, fcntl.LOCK_EX)
            counter.seek(0)
            seen = len(counter.read())
            counter.write("x")
        flip = seen % 2 == 0
    tool = "guess_stock" if item in BROKEN or down or flip else "lookup_stock"
    with open(LOG, "a", encoding="utf-8") as log:
        log.write(here + "\\n")
    answer = {{"final_response": {{"role": "model", "parts": [{{"text": "Item " + item + " is in stock."}}]}},
              "intermediate_data": {{"tool_uses": [{{"name": tool, "args": {{"item": item}}}}]}}}}
    print(json.dumps(answer), flush=True)
'''

EVALSET = {
    "eval_set_id": "stock",
    "eval_cases": [
        {"eval_id": f"item-{k}", "conversation": [_turn(f"Is this in stock: item {k}", f"Item {k} is in stock.", {"name": "lookup_stock", "args": {"item": str(k)}})]}
        for k in range(CASES)
    ],
}

CONFIG = f"""\
agent: {{command: [{json.dumps(sys.executable)}, agent.py]}}
suites:
  - name: shop
    evalsets: [evals]
    criteria:
      tool_trajectory_avg_score: {{threshold: 1.0, match_type: IN_ORDER}}
"""


def _project(where: Path, root: Path, ignored: str, gate: str = "") -> tuple[Path, Path]:
    """The stock project at `where`, its agent logging each run's tree to root/runs.log and
    failing items 1 and 2 while root/outage exists; `gate`: the config's gate section, if
    any. Returns (the log, the outage switch)."""
    log, outage = root / "runs.log", root / "outage"
    (where / "evals").mkdir(parents=True)
    (where / "evals" / "stock.evalset.json").write_text(json.dumps(EVALSET, indent=1), encoding="utf-8")
    (where / "agent.py").write_text(AGENT.format(log=str(log), outage=str(outage)), encoding="utf-8")
    (where / "evalgate.yaml").write_text(CONFIG + gate, encoding="utf-8")
    (where / ".gitignore").write_text(ignored, encoding="utf-8")
    return log, outage


def _pushed_first_day(fake_github, tmp_path: Path, capsys, where: Path, ignored: str):
    """The stock project committed at `where` as the base commit, its one baseline run saved by
    the action's push (the first day), then broken in the working tree (not committed).
    Returns (the action at `where`, the runs log, the base commit)."""
    from test_entrypoint import Action, _push

    log, _outage = _project(where, tmp_path, ignored)
    _git(where, "init", "-q")
    _git(where, "add", ".")
    _git(where, "commit", "-q", "-m", "base")
    base = _git(where, "rev-parse", "HEAD")
    fake_github.add_commit([], "base", sha=base, files={"evalgate.yaml": CONFIG.encode("utf-8")})
    action = Action(fake_github, where, tmp_path / "runs", capsys)
    (tmp_path / "runs").mkdir()
    assert action("push", _push(base), sha=base) == 0, action.stdout  # the first day: one baseline run
    _break(where)
    return action, log, base


def _first_day(cli, root: Path, history: int = 1, gate: str = "") -> tuple[Path, str, Path, Path]:
    """A repository whose main has one baseline run (the first day; or `history` runs), and a feature branch."""
    repo = root / "repo"
    log, outage = _project(repo, root, "evalgate-results/\n.evalgate/\nbase-out/\npr-out/\n", gate)
    base = main_with_baseline(cli, repo, history)
    _git(repo, "checkout", "-q", "-b", "feature")
    log.unlink()
    return repo, base, log, outage


def _break(repo: Path) -> None:
    agent = repo / "agent.py"
    agent.write_text(agent.read_text(encoding="utf-8").replace("BROKEN = ()", 'BROKEN = ("1", "2")'), encoding="utf-8")


def _trees(log: Path, repo: Path) -> tuple[int, int]:
    """(case runs from the working tree, case runs from any other tree: the base commit's)."""
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    here = str(repo.resolve())
    return sum(line == here for line in lines), sum(line != here for line in lines)


def _worktrees(repo: Path) -> list[str]:
    return [line for line in _git(repo, "worktree", "list", "--porcelain").splitlines() if line.startswith("worktree ")]


def test_first_day_two_broken_cases_fail_with_the_base_commit_as_the_control(cli, tmp_path):
    repo, base, log, _outage = _first_day(cli, tmp_path)
    _break(repo)

    code, out, err = cli("gate", cwd=repo)
    assert code == 1, out + err
    assert "evalgate gate: FAIL against the baseline" in out
    here, there = _trees(log, repo)
    assert (here, there) == (CASES + 2 * 2, 2 * 2)  # the run, 2 re-runs of each suspect; 2 runs of each at the base commit
    assert f"confirmation: 2 suspect case(s) that failed every re-run also run 2 time(s) each at the base commit {base[:12]}, as a control (4 agent runs)" in err
    assert ("first day (no history yet): 2 cases the baseline passed broke and failed every one of 2 re-runs while the base commit "
            "passed every one of its 2 re-runs beside them: stock/item-1, stock/item-2") in out
    assert len(_worktrees(repo)) == 1  # the base commit's worktree is gone
    results = json.loads((repo / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    assert results["run"]["agent"]["confirm"]["base"] == 4 and results["run"]["agent"]["confirm"]["agent"] == 4
    baseline = json.loads((repo / "base-out" / "results.json").read_text(encoding="utf-8"))
    assert not any(c.get("reruns") for s in baseline["suites"] for c in s["cases"])  # the control is never saved
    stored = list((repo / ".evalgate" / "baselines" / "baselines").rglob("*.json.gz"))
    assert stored and not any(b'"reruns"' in gzip.decompress(p.read_bytes()) for p in stored)

    # Without the base commit as a control (the gate told nothing of it: --baseline FILE), the
    # same failures are 2 of 10 cases that an unchanged agent might fail by chance: not a FAIL.
    log.unlink()
    code, out, err = cli("gate", "--baseline", "base-out/results.json", cwd=repo)
    assert code == 0, out + err
    assert _trees(log, repo)[1] == 0
    assert "could not be run at the base commit as a control (no base commit is known here)" in err
    comment = (repo / "evalgate-results" / "comment.md").read_text(encoding="utf-8")
    assert "first day (no history yet): 2 cases the baseline passed broke and failed every one of 2 re-runs: stock/item-1, stock/item-2" in comment
    assert "not significant at alpha 0.01" in comment


def test_first_day_a_tool_outage_on_both_commits_is_the_environments(cli, tmp_path):
    repo, base, log, outage = _first_day(cli, tmp_path)
    outage.write_text("down", encoding="utf-8")  # the pull request changes nothing; the tool is down

    code, out, err = cli("gate", cwd=repo)
    assert code == 0, out + err
    assert "FAIL" not in out.split("\n", 1)[0]
    here, there = _trees(log, repo)
    assert (here, there) == (CASES + 2 * 2, 2 * 2)
    assert f"at the base commit {base[:12]}, as a control (4 agent runs)" in err
    assert "evalgate gate: INCONCLUSIVE against the baseline" in out  # the mean's drop cannot be ruled out; no case is blamed
    comment = (repo / "evalgate-results" / "comment.md").read_text(encoding="utf-8")
    assert ("2 cases the baseline passed failed now and on the base commit's re-runs too: the environment's doing, not counted "
            "against the pull request: stock/item-1, stock/item-2") in comment
    assert "first day (no history yet)" not in comment
    assert ("stock/item-1 (tool\\_trajectory\\_avg\\_score): failed 2 of 2 re-runs, and the base commit's re-runs beside them failed too: "
            "the environment's doing, not counted") in comment
    assert "broken" not in comment


def test_first_day_recorded_outputs_have_no_base_commit_to_run(cli, tmp_path):
    repo, _base, log, _outage = _first_day(cli, tmp_path)
    _break(repo)
    code, _, err = cli("run", "--out", "pr-out", "--quiet", cwd=repo)  # the pull request's outputs, recorded
    assert code in (0, 1), err
    (repo / "evalgate.yaml").write_text(CONFIG.replace("    evalsets: [evals]\n", "    evalsets: [evals]\n    actual: pr-out/inference.jsonl\n")
                                        .replace(f"agent: {{command: [{json.dumps(sys.executable)}, agent.py]}}\n", ""), encoding="utf-8")
    log.unlink()

    code, out, err = cli("gate", cwd=repo)
    assert not log.exists()  # no agent ran, on either commit
    assert "confirmation: 2 suspect case(s) could not be run at the base commit as a control (their outputs were recorded: no agent runs here): decided without it" in err
    assert code == 0, out + err  # decided as without the control: the first run alone proves nothing on the first day
    assert "FAIL" not in out.split("\n", 1)[0]


def test_a_stable_case_that_failed_some_re_runs_is_re_run_as_often_again(cli, tmp_path):
    """With history (every case stable), a case the pull request makes fail every other run
    fails its run, passes one re-run and fails the other: newly flaky or a chance; it gets 2
    more re-runs, appended (evalgate.gate.control.more), and no base commit run (it did not
    fail every re-run)."""
    repo, _base, log, _outage = _first_day(cli, tmp_path, history=6)
    agent = repo / "agent.py"
    agent.write_text(agent.read_text(encoding="utf-8").replace("FLIPPY = ()", 'FLIPPY = ("3",)'), encoding="utf-8")

    code, out, err = cli("gate", cwd=repo)
    assert "confirmation: 1 suspect case(s) re-run 2 time(s) each (4 agent runs, 0 judge re-draws)" in err, err
    assert "confirmation: 1 suspect case(s) failed some re-runs and passed others: re-run 2 time(s) more each (2 agent runs, counted above)" in err
    assert "at the base commit" not in err
    assert _trees(log, repo) == (CASES + 4, 0)
    results = json.loads((repo / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    item = next(c for c in results["suites"][0]["cases"] if c["eval_id"] == "item-3")
    assert [r["run"] for r in item["reruns"]] == [1, 2, 3, 4]
    statuses = [r["status"] for r in item["reruns"]]  # each pair: one of its two runs was wrong (they may run at once)
    assert sorted(statuses[:2]) == sorted(statuses[2:]) == ["FAILED", "PASSED"]
    assert results["run"]["agent"]["confirm"]["more"] == 2


def test_a_suggestive_breakage_test_re_runs_the_undecided_suspect_further(cli, tmp_path):
    """The same newly flaky case, its ledger's window full (6 runs, `history_runs: 6`), at an
    alpha of 1e-5: after its 4 re-runs (2 of 4 failed) the breakage test is suggestive (p ~1e-4
    after Holm, < 0.02 before) but not decisive, so the pipeline re-runs it 2 x 2 times more
    (evalgate.gate.control.extension), appended as runs 5-8, and compares a third time: 4 of 8
    failed FAILs the gate (p ~5e-7 after Holm)."""
    repo, _base, log, _outage = _first_day(cli, tmp_path, history=6, gate="gate: {alpha: 0.00001, history_runs: 6}\n")
    agent = repo / "agent.py"
    agent.write_text(agent.read_text(encoding="utf-8").replace("FLIPPY = ()", 'FLIPPY = ("3",)'), encoding="utf-8")

    code, out, err = cli("gate", cwd=repo)
    assert "re-run 2 time(s) more each (2 agent runs, counted above)" in err, err
    assert ("confirmation: the breakage test was suggestive but not decisive (p < 0.02 before Holm): 1 suspect case(s) that "
            "passed some re-runs re-run 4 time(s) more each (4 agent runs)") in err
    assert _trees(log, repo) == (CASES + 8, 0)
    results = json.loads((repo / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    item = next(c for c in results["suites"][0]["cases"] if c["eval_id"] == "item-3")
    assert [r["run"] for r in item["reruns"]] == list(range(1, 9))
    assert sorted(r["status"] for r in item["reruns"]) == ["FAILED"] * 4 + ["PASSED"] * 4
    assert results["run"]["agent"]["confirm"]["further"] == 4 and results["run"]["agent"]["confirm"]["agent"] == 8
    assert "stock/item-3 re-run: failed 4 of 8 re-runs: newly flaky, weighed as evidence" in out, out
    # The verdict is the third compare's: it read all 8 re-runs (the second's read 4 and did not FAIL).
    assert code == 1, out + err
    assert "evalgate gate: FAIL against the baseline" in out
    assert "1 newly flaky (broke now and failed 4 of 8 re-runs, where history never saw them fail), weighed as evidence: stock/item-3" in out


def test_the_actions_pr_and_merge_queue_run_the_base_commit_from_the_checkout(fake_github, tmp_path, capsys):  # noqa: F811
    """The action's checkout (fetch-depth: 0) holds the base commit: the pull request's and
    the merge queue's confirmation run the suspects there too, and say it in the log."""
    from test_entrypoint import _pull_request

    ws = tmp_path / "ws"
    action, log, base = _pushed_first_day(fake_github, tmp_path, capsys, ws, "evalgate-results/\n")
    log.unlink()

    head = fake_github.add_commit([base], "PR head")
    code = action("pull_request", _pull_request(head, base), sha=head, ref="refs/pull/7/merge")
    assert code == 1, action.stdout
    assert f"confirmation: 2 suspect case(s) that failed every re-run also run 2 time(s) each at the base commit {base[:12]}, as a control (4 agent runs)" in action.stdout
    assert _trees(log, ws) == (CASES + 4, 4)
    [comment] = fake_github.issue_comments(7)
    assert "while the base commit passed every one of its 2 re-runs beside them: stock/item-1, stock/item-2" in comment["body"]
    assert [s["state"] for s in fake_github.statuses[head]] == ["failure"]
    assert len(_worktrees(ws)) == 1

    log.unlink()
    group = fake_github.add_commit([base], "merge group")
    event = {"merge_group": {"head_sha": group, "base_sha": base, "head_ref": "gh-readonly-queue/main/pr-7"},
             "repository": {"full_name": "octo/hello", "default_branch": "main"}}
    assert action("merge_group", event, sha=group, ref="refs/heads/gh-readonly-queue/main/pr-7") == 1, action.stdout
    assert _trees(log, ws) == (CASES + 4, 4)
    assert [s["state"] for s in fake_github.statuses[group]] == ["failure"]


def _break_one(repo: Path) -> None:
    agent = repo / "agent.py"
    agent.write_text(agent.read_text(encoding="utf-8").replace("BROKEN = ()", 'BROKEN = ("1",)'), encoding="utf-8")


def test_first_day_one_broken_case_of_ten_is_not_re_run_and_says_why(cli, tmp_path):
    """On the first day, one case of ten the baseline passed fails now: even failing every
    re-run beside a base commit that passes it could not FAIL the criterion (it would take 2;
    evalgate.gate.firstday.could_decide), so no agent runs again, on either commit, and the
    verdict says which case was the suspect, that it was not re-run, and why, in English and
    in Korean."""
    repo, _base, log, _outage = _first_day(cli, tmp_path)
    _break_one(repo)

    code, out, err = cli("gate", cwd=repo)
    assert code == 0, out + err
    assert _trees(log, repo) == (CASES, 0)  # the run only: no re-run, no base commit run
    assert "confirmation: 1 first-day suspect case(s) not re-run: too few to FAIL their criterion without history" in err
    reason = ("first day (no history yet): 1 case the baseline passed failed now, not re-run as a first-day suspect: stock/item-1; "
              "even failing every re-run, it would take 2 such cases to FAIL this criterion without history; more baseline runs "
              "on the default branch (the flake ledger) let the gate decide on fewer")
    comment = (repo / "evalgate-results" / "comment.md").read_text(encoding="utf-8")
    assert reason in comment, comment  # the criterion's reasons; the terminal says the verdict's and the note above

    log.unlink()
    code, out, err = cli("gate", "--language", "ko", cwd=repo)
    assert code == 0, out + err
    assert _trees(log, repo) == (CASES, 0)
    assert ("첫날(아직 이전 실행 기록 없음): 베이스라인에서 통과한 케이스 1개가 이번에 실패했지만 첫날 의심 케이스로 재실행하지 않았습니다. "
            "대상: stock/item-1. 모든 재실행에서 실패하더라도, 이전 실행 기록 없이 이 기준을 FAIL로 판정하려면 그런 케이스가 2개 있어야 "
            "합니다. 기본 브랜치에서 베이스라인 실행이 더 쌓이면(flaky 기록) 더 적은 케이스로도 판정할 수 있습니다"
            ) in (repo / "evalgate-results" / "comment.md").read_text(encoding="utf-8")
    assert "확인 실행: 첫날 의심 케이스 1개는 재실행하지 않음" in err


# --- an in-process ADK agent at the base commit -------------------------------------------

ADK_TOOLS = '''\
"""The shop's stock tool: a top-level module beside the agent's package (`from tools import lookup_stock`)."""
from pathlib import Path

ROOT = str(Path(__file__).resolve().parent)
OUT = ()  # sold out


def lookup_stock(item: str) -> dict:
    return {"item": item, "stock": "sold out" if item in OUT else "in stock"}
'''

ADK_CATALOG = '''\
"""Items the shop no longer lists: a module of the agent's own package (`from shop_agent.catalog import HIDDEN`)."""
from pathlib import Path

ROOT = str(Path(__file__).resolve().parent.parent)
HIDDEN = ()
'''

ADK_AGENT = '''\
"""A real ADK agent whose Python tool reads a top-level sibling module and a module of its own package."""
from pathlib import Path

from google.adk.agents import Agent

import tools
from shop_agent import catalog
from shop_agent.catalog import HIDDEN
from tools import lookup_stock as _lookup

LOG = {log!r}
ROOT = str(Path(__file__).resolve().parent.parent)


def lookup_stock(item: str) -> dict:
    """Returns whether an item is in stock."""
    with open(LOG, "a", encoding="utf-8") as log:  # the trees this run's code came from
        log.write(" ".join((ROOT, tools.ROOT, catalog.ROOT)) + "\\n")
    found = _lookup(item)
    return dict(found, stock="not listed") if item in HIDDEN else found


root_agent = Agent(name="shop", model="gemini-2.5-flash", instruction="Answer stock questions with the tool.", tools=[lookup_stock])
'''

ADK_CONFIG = """\
suites:
  - name: shop
    agent: {adk: shop_agent}
    evalsets: [evals]
    criteria:
      response_match_score: {threshold: 1.0}
"""


def _shop_model(body: dict) -> "object":
    """The agent's model at the fake Gemini: "item N" asks lookup_stock; its answer becomes the reply."""
    from agent_model import _reply

    parts = ((body or {}).get("contents") or [{}])[-1].get("parts") or []
    answers = [p["functionResponse"] for p in parts if "functionResponse" in p]
    if answers:
        data = answers[0].get("response") or {}
        return _reply([{"text": f"Item {data.get('item')} is {data.get('stock')}."}])
    item = " ".join(p.get("text", "") for p in parts).split()[-1]
    return _reply([{"functionCall": {"name": "lookup_stock", "args": {"item": item}}}])


@pytest.fixture
def shop_model(monkeypatch):
    """A fake Gemini for the shop agent; the interpreter's module table and import path as they were, after."""
    from fake_gemini import FakeGemini, clear_judge_env

    fake = FakeGemini(_shop_model).start()
    fake.api_key = None
    clear_judge_env(monkeypatch)
    monkeypatch.setenv("GOOGLE_API_KEY", "fake-agent-key")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
    monkeypatch.setenv("ADK_DISABLE_LOAD_DOTENV", "1")
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = dict(sys.modules)
    try:
        yield fake
    finally:
        fake.stop()
        for name in set(sys.modules) - set(before):
            del sys.modules[name]
        sys.modules.update(before)  # and those the runner forgot


def _adk_lines(log: Path) -> list[tuple[str, ...]]:
    return [tuple(line.split(" ")) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []


def test_an_in_process_adk_agent_runs_the_base_commits_own_modules_as_the_control(cli, tmp_path, shop_model):
    """The pull request changes a top-level module beside the agent's package (`tools.py`:
    item 1 sold out) and a module of the package itself (`shop_agent/catalog.py`: item 2 not
    listed). The control runs the same in-process runner in the base commit's tree: every
    module of the project must come from that tree, not from the pull request's run that
    imported them first, or the base commit would fail items 1 and 2 too and the breakage
    would read as the environment's. The tool logs the trees its agent, `tools` and
    `catalog` came from on every call. A second gate in the same process runs the pull
    request's code again."""
    repo = tmp_path / "repo"
    log = tmp_path / "tools.log"
    (repo / "evals").mkdir(parents=True)
    evalset = {"eval_set_id": "stock", "eval_cases": [
        {"eval_id": f"item-{k}", "conversation": [_turn(f"Is this in stock: item {k}", f"Item {k} is in stock.",
                                                        {"name": "lookup_stock", "args": {"item": str(k)}})]}
        for k in range(CASES)]}
    (repo / "evals" / "stock.evalset.json").write_text(json.dumps(evalset, indent=1), encoding="utf-8")
    (repo / "shop_agent").mkdir()
    (repo / "shop_agent" / "__init__.py").write_text("from . import agent  # noqa: F401\n", encoding="utf-8")
    (repo / "shop_agent" / "agent.py").write_text(ADK_AGENT.format(log=str(log)), encoding="utf-8")
    (repo / "shop_agent" / "catalog.py").write_text(ADK_CATALOG, encoding="utf-8")
    (repo / "tools.py").write_text(ADK_TOOLS, encoding="utf-8")
    (repo / "evalgate.yaml").write_text(ADK_CONFIG, encoding="utf-8")
    (repo / ".gitignore").write_text("evalgate-results/\n.evalgate/\nbase-out/\n__pycache__/\n", encoding="utf-8")
    base = main_with_baseline(cli, repo)
    _git(repo, "checkout", "-q", "-b", "feature")
    here = str(repo.resolve())
    assert set(_adk_lines(log)) == {(here, here, here)}
    log.unlink()
    tools = repo / "tools.py"
    tools.write_text(tools.read_text(encoding="utf-8").replace("OUT = ()", 'OUT = ("1",)'), encoding="utf-8")
    catalog = repo / "shop_agent" / "catalog.py"
    catalog.write_text(catalog.read_text(encoding="utf-8").replace("HIDDEN = ()", 'HIDDEN = ("2",)'), encoding="utf-8")

    code, out, err = cli("gate", cwd=repo)
    lines = _adk_lines(log)
    trees = {line[0] for line in lines}
    assert all(len(set(line)) == 1 for line in lines), lines  # agent, tools and catalog from one tree in every call
    assert len(trees) == 2 and here in trees, trees
    assert sum(line[0] == here for line in lines) == CASES + 2 * 2 and sum(line[0] != here for line in lines) == 2 * 2
    assert f"confirmation: 2 suspect case(s) that failed every re-run also run 2 time(s) each at the base commit {base[:12]}, as a control (4 agent runs)" in err
    assert ("first day (no history yet): 2 cases the baseline passed broke and failed every one of 2 re-runs while the base commit "
            "passed every one of its 2 re-runs beside them: stock/item-1, stock/item-2") in out, out
    assert code == 1, out + err

    log.unlink()  # the pull request's code again, in the same process, after the control imported the base's
    code, out, err = cli("gate", cwd=repo)
    lines = _adk_lines(log)
    assert sum(line == (here, here, here) for line in lines) == CASES + 2 * 2, lines
    assert code == 1 and "while the base commit passed every one of its 2 re-runs beside them: stock/item-1, stock/item-2" in out


def test_the_merge_job_of_a_sharded_first_day_pull_request_runs_the_control_from_the_checkout(fake_github, tmp_path, capsys):  # noqa: F811
    """A sharded pull request's legs score their shards (no re-run: the merge job decides);
    the merge job, whose checkout (fetch-depth: 0) holds the base commit, re-runs the
    suspects and runs them at the base commit as the control, as the unsharded run does."""
    from test_entrypoint import _pull_request

    ws = tmp_path / "ws"
    action, log, base = _pushed_first_day(fake_github, tmp_path, capsys, ws, "evalgate-results/\nlegs/\n")
    log.unlink()

    head = fake_github.add_commit([base], "PR head")
    event, ref = _pull_request(head, base), "refs/pull/7/merge"
    for k in (1, 2):
        assert action("pull_request", event, sha=head, ref=ref, shard=f"{k}/2", out=f"legs/leg-{k}") == 0, action.stdout
        assert "confirmation" not in action.stdout
    assert _trees(log, ws) == (CASES, 0)
    assert fake_github.issue_comments(7) == []

    assert action("pull_request", event, sha=head, ref=ref, mode="merge", shards="legs") == 1, action.stdout
    assert "confirmation: 2 suspect case(s) re-run 2 time(s) each (4 agent runs, 0 judge re-draws)" in action.stdout
    assert f"confirmation: 2 suspect case(s) that failed every re-run also run 2 time(s) each at the base commit {base[:12]}, as a control (4 agent runs)" in action.stdout
    assert _trees(log, ws) == (CASES + 4, 4)
    merged = json.loads((ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    assert merged["run"]["agent"]["confirm"]["base"] == 4 and merged["run"]["agent"]["confirm"]["base_commit"] == base
    [comment] = fake_github.issue_comments(7)
    assert "while the base commit passed every one of its 2 re-runs beside them: stock/item-1, stock/item-2" in comment["body"]
    assert [s["state"] for s in fake_github.statuses[head]] == ["failure"]
    assert len(_worktrees(ws)) == 1


def test_the_merge_job_of_a_shallow_checkout_says_it_decided_without_the_control(fake_github, tmp_path, capsys):  # noqa: F811
    """The merge job checked out without history (fetch-depth 1): no base commit to run, a
    note says why, and the gate decides as without the control (the suspects re-run only)."""
    from test_entrypoint import Action, _pull_request

    full = tmp_path / "full"
    _, log, base = _pushed_first_day(fake_github, tmp_path, capsys, full, "evalgate-results/\nlegs/\n")
    _git(full, "commit", "-q", "-am", "PR")
    ws = tmp_path / "ws"  # the pull request's commit alone, as actions/checkout fetches it by default
    _git(tmp_path, "clone", "-q", "--depth", "1", f"file://{full}", str(ws))
    assert subprocess.run(["git", "-C", str(ws), "cat-file", "-e", f"{base}^{{commit}}"], capture_output=True).returncode != 0
    action = Action(fake_github, ws, tmp_path / "runs", capsys)
    action.n = 1
    log.unlink()

    head = fake_github.add_commit([base], "PR head")
    event, ref = _pull_request(head, base), "refs/pull/7/merge"
    for k in (1, 2):
        assert action("pull_request", event, sha=head, ref=ref, shard=f"{k}/2", out=f"legs/leg-{k}") == 0, action.stdout
    assert action("pull_request", event, sha=head, ref=ref, mode="merge", shards="legs") == 0, action.stdout
    assert ("confirmation: 2 suspect case(s) could not be run at the base commit as a control (the base commit "
            f"{base[:12]} is not in this clone: actions/checkout with fetch-depth: 0 fetches the history): decided without it") in action.stdout
    assert _trees(log, ws) == (CASES + 4, 0)
    [comment] = fake_github.issue_comments(7)
    assert "first day (no history yet): 2 cases the baseline passed broke and failed every one of 2 re-runs: stock/item-1, stock/item-2" in comment["body"]
    assert "not significant at alpha 0.01" in comment["body"]
