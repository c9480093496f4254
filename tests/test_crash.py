"""An agent that fails on a case the baseline passed (evalgate.gate.crash), by hand: such a case is a
confirmation suspect, counts against the gate when the agent fails again in every re-run, is
flaky when a re-run passes, and is a warning when nothing re-ran it; a judge's failure (a
criterion's own error) is not the agent's and stays under the `not_evaluated` policy. The runs
of a real agent are in tests/test_crash_e2e.py."""

from __future__ import annotations

from evalgate.engine import case_status
from evalgate.gate import GatePolicy, Verdict, compare, ledger_key
from evalgate.gate.confirm import ConfirmPolicy, lines, suspects
from evalgate.reports.markdown import render_comment
from evalgate.results import Counts, Rerun, Status
from test_compare import K, crit, one

IDS = [f"c{i:03d}" for i in range(6)]
CRASH = "the agent run failed: ValueError: 東京 has no weather station"


def _current(judge_outage: bool = False, policy: str = "warn"):
    """c002's agent run failed (or, with judge_outage, its criterion's judge did)."""
    results = one({e: {"traj": None if e == "c002" else 1.0} for e in IDS}, policy=policy)
    case = results.suites[0].cases[2]
    if judge_outage:
        case.criteria["traj"].error = "the judge's API answered 503"
        case.criteria["traj"].unavailable = "judge"  # as the engine records a service failure
    else:
        case.criteria["traj"].error = CRASH
        case.agent_error = "ValueError: 東京 has no weather station"
    return results


def _baseline():
    return one({e: {"traj": 1.0} for e in IDS})


def _rerun(i: int, value, error: str | None = None) -> Rerun:
    criteria = {"traj": crit(value, error=CRASH if error else "the judge's API answered 503")}
    return Rerun(run=i, how="agent", status=case_status(criteria), criteria=criteria, error=error)


def _with(results, *reruns: Rerun):
    results.suites[0].cases[2].reruns = list(reruns)
    return results


def test_an_agent_failure_on_a_case_the_baseline_passed_is_a_suspect_a_judge_failure_is_not():
    comparison = compare(_baseline(), _current(), GatePolicy())
    [c] = comparison.suites[0].crashes
    assert (c.key, c.criteria, c.verdict) == (K("c002"), ["traj"], "not_rerun")
    chosen, left = suspects(comparison, _current(), 20, flips=False)
    assert [(s.eval_id, s.criteria, s.crashed) for s in chosen] == [("c002", ["traj"], True)] and left == 0

    outage = compare(_baseline(), _current(judge_outage=True), GatePolicy())
    assert outage.suites[0].crashes == [] and suspects(outage, _current(judge_outage=True), 20, flips=False) == ([], 0)
    assert outage.verdict is Verdict.INCONCLUSIVE  # not_evaluated: warn, as before

    # A case the baseline did not pass is not one: nothing the pull request broke.
    failing = one({e: {"traj": 0.0 if e == "c002" else 1.0} for e in IDS})
    assert compare(failing, _current(), GatePolicy()).suites[0].crashes == []


def test_a_case_the_agent_fails_in_the_run_and_every_re_run_fails_the_gate():
    """Crashed in both re-runs, or crashed once and failed the criterion once: broken."""
    for reruns in ((_rerun(1, None, "ValueError: again"), _rerun(2, None, "ValueError: again")), (_rerun(1, None, "boom"), _rerun(2, 0.0))):
        current = _with(_current(), *reruns)
        comparison = compare(_baseline(), current, GatePolicy())
        assert comparison.verdict is Verdict.FAIL
        suite = comparison.suites[0]
        assert suite.reasons[0] == (
            "set/c002: the agent failed on this case in the run and in 2 of 2 re-runs, where the baseline passed it "
            "(ValueError: 東京 has no weather station)"
        )
        assert [(ch.key, ch.kind) for ch in suite.changes] == [(K("c002"), "regressed")]
        [line] = lines(comparison, current)
        assert line.text == "the agent failed on this case in the run and in 2 of 2 re-runs: broken (ValueError: 東京 has no weather station)"
        comment = render_comment(comparison, current)
        assert "the agent failed on this case in the run and in 2 of 2 re-runs" in comment


def test_a_crash_that_does_not_repeat_is_flaky_and_a_re_run_the_judge_failed_confirms_nothing():
    current = _with(_current(), _rerun(1, 1.0), _rerun(2, None, "ValueError: again"))
    comparison = compare(_baseline(), current, GatePolicy())
    assert comparison.verdict is Verdict.INCONCLUSIVE  # the first run's NOT_EVALUATED, under warn
    assert comparison.suites[0].crashes[0].verdict == "flaky"
    assert "the agent failed on 1 case in this run and it passed on re-run: flaky, not counted: set/c002" in comparison.suites[0].reasons
    assert lines(comparison, current)[0].text.startswith("the agent failed on this case in the run and passed on re-run: flaky")

    current = _with(_current(), _rerun(1, None), _rerun(2, None, "ValueError: again"))  # re-run 1: its judge failed
    comparison = compare(_baseline(), current, GatePolicy())
    assert comparison.verdict is Verdict.INCONCLUSIVE and comparison.suites[0].crashes[0].verdict == "unconfirmed"


def test_a_case_the_ledger_has_seen_fail_counts_only_repeated_agent_failures():
    ledger = {ledger_key(K(e), "traj"): [1.0, 0.0, 1.0, 1.0, 1.0, 1.0] if e == "c002" else [1.0] * 6 for e in IDS}
    current = _with(_current(), _rerun(1, 0.0), _rerun(2, 0.0))  # ran, and failed as it sometimes does
    comparison = compare(_baseline(), current, GatePolicy(), ledger=ledger)
    assert comparison.suites[0].crashes[0].verdict == "flaky" and comparison.verdict is not Verdict.FAIL
    current = _with(_current(), _rerun(1, None, "ValueError"), _rerun(2, None, "ValueError"))
    assert compare(_baseline(), current, GatePolicy(), ledger=ledger).verdict is Verdict.FAIL


def test_without_re_runs_the_comment_warns_and_not_evaluated_fail_still_fails():
    policy = GatePolicy(confirm=ConfirmPolicy(runs=0))
    current = _current()
    comparison = compare(_baseline(), current, policy)
    assert comparison.verdict is Verdict.INCONCLUSIVE
    warning = (
        "warning: 1 case the baseline passed was not evaluated: the agent failed on it in this run and it was not re-run "
        "(gate.confirm.runs is 0): set/c002 (ValueError: 東京 has no weather station)"
    )
    assert comparison.suites[0].reasons[0] == warning
    assert warning in render_comment(comparison, current)

    strict = _current(policy="fail")
    strict.suites[0].status, strict.suites[0].counts = Status.FAILED, Counts.of(strict.suites[0].cases)
    comparison = compare(_baseline(), strict, policy)
    assert comparison.verdict is Verdict.FAIL
    assert any("not_evaluated policy is `fail`" in r for r in comparison.suites[0].reasons)
