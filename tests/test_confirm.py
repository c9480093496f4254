"""Confirmation runs (gate.confirm, evalgate.gate.confirm), by hand: which cases are suspects and
the cap, each case's own chance of failing its re-runs from a ledger, a stable case counted broken
when every re-run fails and newly flaky when some do, a flaky one that passes on re-run not counted, and what the
comment says. The end-to-end runs (a real agent through the command runner, `evalgate gate`
and the action's PR path) are in tests/test_confirm_e2e.py."""

from __future__ import annotations

import math

import pytest

from evalgate.gate import GatePolicy, Verdict, compare, ledger_key
from evalgate.gate.confirm import ConfirmPolicy, suspects, verdicts, words
from evalgate.engine import case_status
from evalgate.reports.markdown import render_comment
from evalgate.results import CriterionResult, InvocationResult, Rerun, RunResults, Status
from test_compare import K, crit, one

IDS = [f"c{i:03d}" for i in range(40)]


def _binomial_sf(k: int, n: int, q: float) -> float:
    return sum(math.comb(n, j) * q**j * (1 - q) ** (n - j) for j in range(k, n + 1))


def _rerun(i: int, value: float, name: str = "traj") -> Rerun:
    criteria = {name: crit(value)}
    return Rerun(run=i, how="agent", status=case_status(criteria), criteria=criteria)


def _with_reruns(results, reruns: dict[str, list[float]]):
    for case in results.suites[0].cases:
        if case.eval_id in reruns:
            case.reruns = [_rerun(i, v) for i, v in enumerate(reruns[case.eval_id], start=1)]
    return results


def _ledger(history, ids=IDS, name="traj"):
    return {ledger_key(K(e), name): list(history) for e in ids}


BROKE = ("c001", "c007", "c009")


def _current():
    return one({e: {"traj": 0.0 if e in BROKE else 1.0} for e in IDS})


def _graded_tail(n: int, a: float, b: float, w1: float, w2: float, observed: float) -> float:
    """P(w1 * n1 + w2 * n2 >= observed) by enumeration: n cases, each in grade 1 with chance a,
    grade 2 with chance b, else none (multinomial), independently."""
    total = 0.0
    for n1 in range(n + 1):
        for n2 in range(n - n1 + 1):
            if w1 * n1 + w2 * n2 >= observed - 1e-9:
                total += math.factorial(n) / (math.factorial(n1) * math.factorial(n2) * math.factorial(n - n1 - n2)) * a**n1 * b**n2 * (1 - a - b) ** (n - n1 - n2)
    return total


def test_a_stable_case_counts_broken_when_every_re_run_fails_and_newly_flaky_when_some_do():
    base = one({e: {"traj": 1.0} for e in IDS})
    ledger = _ledger([1.0] * 10)  # 400 case-runs, never a failure: every case's rate the floor 1/402, no clustering
    first = compare(base, _current(), GatePolicy(), ledger=ledger).suites[0].criteria[0]
    assert first.broken == [K(e) for e in BROKE] and first.confirm_runs == 0  # no re-runs yet: the first run's test
    assert first.breakage_p == pytest.approx(_binomial_sf(3, 40, 1 / 402))

    # c001 and c007 failed both re-runs; c009 failed one of two: newly flaky, weighed.
    cur = _with_reruns(_current(), {"c001": [0.0, 0.0], "c007": [0.0, 0.0], "c009": [0.0, 1.0]})
    comp = compare(base, cur, GatePolicy(), ledger=ledger)
    c = comp.suites[0].criteria[0]
    assert (c.broken, c.newly_flaky, c.flaky, c.confirm_runs) == ([K("c001"), K("c007")], [K("c009")], [], 2)
    p = 1 / 402
    a, b = 2 * p**2 * (1 - p), p**3  # each case: broke now and failed 1 (a) or 2 (b) of 2 re-runs, by hand
    w1, w2 = math.log1p(0.1 * 0.125 / a), math.log1p(0.1 * 0.5625 / b)  # the alternative: half broken, half failing half the time
    assert c.expected_breaks == pytest.approx(40 * b)
    assert c.breakage_p == pytest.approx(_graded_tail(40, a, b, w1, w2, 2 * w2 + w1), rel=1e-6)
    assert c.breakage_p < 1e-9 and c.chance_each == pytest.approx(b) and c.streak_each == 10
    assert [ch.kind for ch in comp.suites[0].changes] == ["broken_stable", "broken_stable", "regressed"]
    text = next(r for r in c.reasons if "stable cases broke" in r)
    assert "each failed all 2 re-runs" in text and "1 newly flaky (broke now and failed 1 of 2 re-runs" in text
    assert "by its own history (no failure in its last 10 runs), an unchanged agent does that about once in 65,000,000 pull requests" in text

    # Every broken one passed both re-runs: nothing counts, and the reasons say so.
    all_flaky = compare(base, _with_reruns(_current(), {e: [1.0, 1.0] for e in BROKE}), GatePolicy(), ledger=ledger)
    c = all_flaky.suites[0].criteria[0]
    # Not FAIL; the mean drop (first run only: 3 of 40 cases) still leaves it INCONCLUSIVE.
    assert (c.broken, c.newly_flaky, c.breakage_p, all_flaky.verdict) == ([], [], 1.0, Verdict.INCONCLUSIVE)
    assert any("3 stable cases broke and passed on re-run: flaky, not counted" in r for r in c.reasons)


def test_a_case_that_broke_without_its_re_runs_keeps_the_first_runs_test():
    base = one({e: {"traj": 1.0} for e in IDS})
    ledger = _ledger([1.0] * 10)
    # c009 was not re-run (beyond max_cases, say): the criterion keeps the first run's test.
    cur = _with_reruns(_current(), {"c001": [0.0, 0.0], "c007": [0.0, 0.0]})
    c = compare(base, cur, GatePolicy(), ledger=ledger).suites[0].criteria[0]
    assert (c.confirm_runs, len(c.broken), c.breakage_p) == (0, 3, pytest.approx(_binomial_sf(3, 40, 1 / 402)))
    # A re-run that was not evaluated confirms nothing either.
    cur = _with_reruns(_current(), {"c001": [0.0, 0.0], "c007": [0.0, 0.0], "c009": [0.0, 0.0]})
    cur.suites[0].cases[9].reruns[1].criteria["traj"] = crit(None)
    assert compare(base, cur, GatePolicy(), ledger=ledger).suites[0].criteria[0].confirm_runs == 0
    # gate.confirm.runs: 0 turns it off: re-runs in the results are not read.
    cur = _with_reruns(_current(), {e: [1.0, 1.0] for e in BROKE})
    off = GatePolicy(confirm=ConfirmPolicy(runs=0))
    assert compare(base, cur, off, ledger=ledger).suites[0].criteria[0].broken == [K(e) for e in BROKE]


def test_each_cases_own_history_weighs_its_confirmed_break():
    """Half the cases failed once in history: the population holds rates above the floor, so a
    stable case's chance of failing three times is larger than with a clean history, yet three
    confirmed breaks among the stable half are still strong evidence (no pooled repeat chance)."""
    base = one({e: {"traj": 1.0} for e in IDS})
    ledger = _ledger([1.0] * 10, IDS[:20])
    for i, e in enumerate(IDS[20:]):  # each fails once, two cases in each run: failures do not cluster
        ledger.update(_ledger([0.0 if t == i % 10 else 1.0 for t in range(10)], [e]))
    cur = _with_reruns(_current(), {"c001": [0.0, 0.0], "c007": [0.0, 0.0], "c009": [0.0, 0.0]})
    c = compare(base, cur, GatePolicy(), ledger=ledger).suites[0].criteria[0]
    clean = compare(base, cur, GatePolicy(), ledger=_ledger([1.0] * 10)).suites[0].criteria[0]
    assert c.stable == 20 and len(c.broken) == 3 and c.breakage_p < 1e-4
    assert c.chance_each > 10 * clean.chance_each  # failures in the population make a repeat likelier

    # The same failures all in one run (a judge's bad day, a tool down): failures cluster within
    # a run, so a run and its re-runs failing together is far likelier, and the same breaks say less.
    clustered = _ledger([1.0] * 10, IDS[:20])
    clustered.update(_ledger([1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], IDS[20:]))
    d = compare(base, cur, GatePolicy(), ledger=clustered).suites[0].criteria[0]
    assert d.chance_each > 50 * c.chance_each and d.breakage_p > 100 * c.breakage_p


def test_suspects_stable_breaks_first_then_flips_at_most_max_cases():
    base = one({e: {"traj": 1.0, "rouge": 0.9} for e in IDS})
    ledger = _ledger([1.0] * 10)
    ledger.update(_ledger([1.0, 0.0] * 5, IDS, "rouge"))  # rouge fails every other run on main: c000, c020 only flipped
    cur = one({e: {"traj": 0.0 if e in BROKE else 1.0, "rouge": 0.1 if e in ("c000", "c020") else 0.9} for e in IDS})
    comparison = compare(base, cur, GatePolicy(), ledger=ledger)
    chosen, left = suspects(comparison, cur, 20)
    assert [(s.eval_id, s.stable, s.criteria) for s in chosen] == [
        ("c001", True, ["traj"]), ("c007", True, ["traj"]), ("c009", True, ["traj"]),
        ("c000", False, ["rouge"]), ("c020", False, ["rouge"]),
    ]
    assert left == 0
    chosen, left = suspects(comparison, cur, 4)
    assert [s.eval_id for s in chosen] == ["c001", "c007", "c009", "c000"] and left == 1
    # Flips decide nothing unless deterministic_flips is `fail`: then only the stable breaks.
    chosen, left = suspects(comparison, cur, 20, flips=False)
    assert [s.eval_id for s in chosen] == ["c001", "c007", "c009"] and left == 0
    # A judge criterion's flip is never a suspect by itself (its flips decide nothing).
    base = one({e: {"judge": [1.0] * 5} for e in IDS})
    cur = one({e: {"judge": [0.0] * 5 if e == "c003" else [1.0] * 5} for e in IDS})
    assert suspects(compare(base, cur, GatePolicy(), ledger=_ledger([1.0, 0.4] * 5, IDS, "judge")), cur, 20) == ([], 0)
    # On the first days (no case with 5 runs of history) the cases the baseline passed that broke now are suspects,
    # when they could FAIL the criterion at all (evalgate.gate.firstday.could_decide): three of 60 could...
    cur = one({e: {"judge": [0.0] * 5 if e in ("c003", "c004", "c005") else [1.0] * 5} for e in IDS})
    chosen, left = suspects(compare(base, cur, GatePolicy()), cur, 20, flips=False)
    assert [(s.eval_id, s.stable, s.criteria) for s in chosen] == [
        ("c003", False, ["judge"]), ("c004", False, ["judge"]), ("c005", False, ["judge"])] and left == 0
    # ... one could not (p = 0.1 even failing every re-run beside a passing base): not re-run.
    cur = one({e: {"judge": [0.0] * 5 if e == "c003" else [1.0] * 5} for e in IDS})
    assert suspects(compare(base, cur, GatePolicy()), cur, 20) == ([], 0)


def test_verdicts_and_words():
    keys = [K("a"), K("b"), K("c")]
    reruns = {K("a"): [_rerun(1, 0.0), _rerun(2, 0.0)], K("b"): [_rerun(1, 1.0), _rerun(2, 0.0)]}
    assert verdicts([True, True, False], keys, reruns, "traj", False, 2) == [True, False, False]
    assert verdicts([True, True, True], keys, reruns, "traj", False, 2) is None  # c broke, not re-run
    assert verdicts([True, True, False], keys, reruns, "traj", False, 0) is None  # off
    assert words(reruns[K("a")], ["traj"], {}) == "failed 2 of 2 re-runs: broken"
    assert words(reruns[K("b")], ["traj"], {}) == "passed on re-run: flaky, not counted (1 of 2 passed)"
    assert words(reruns[K("b")], ["traj"], {}, newly=True) == "failed 1 of 2 re-runs: newly flaky, weighed as evidence"
    assert words(reruns[K("a")], ["traj"], {}, newly=True) == "failed 2 of 2 re-runs: broken"
    assert words([_rerun(1, 1.0), _rerun(2, 1.0)], ["traj"], {}, newly=True) == "passed on re-run: flaky, not counted (2 of 2 passed)"
    assert words(None, ["traj"], {}) == "not re-run"


def test_the_comment_says_per_suspect_what_the_re_runs_showed():
    base = one({e: {"traj": 1.0} for e in IDS})
    cur = _with_reruns(_current(), {"c001": [0.0, 0.0], "c007": [1.0, 1.0], "c009": [0.0, 1.0]})
    comparison = compare(base, cur, GatePolicy(), ledger=_ledger([1.0] * 10))
    comment = render_comment(comparison, cur)
    assert "### Confirmation runs" in comment
    assert "- set/c001 (traj): failed 2 of 2 re-runs: broken" in comment
    assert "- set/c007 (traj): passed on re-run: flaky, not counted (2 of 2 passed)" in comment
    # A stable case that failed some re-runs: the breakage test weighs it, and its line says so (it said "flaky, not counted").
    assert comparison.suites[0].criteria[0].newly_flaky == [K("c009")]
    assert "- set/c009 (traj): failed 1 of 2 re-runs: newly flaky, weighed as evidence" in comment


# --- several agent runs per case (num_runs): pass/fail runs, not a score -----------------


def _runs(*outcomes: float) -> CriterionResult:
    """A deterministic criterion over len(outcomes) agent runs (threshold 1), as engine.score_runs writes it."""
    per = [InvocationResult(score=o, status=Status.PASSED if o >= 1.0 else Status.FAILED) for o in outcomes]
    mean = sum(outcomes) / len(outcomes)
    return CriterionResult(score=mean, status=Status.PASSED if mean >= 1.0 else Status.FAILED, threshold=1.0, per_invocation=per, runs=list(outcomes))


def _three_runs(now: dict[str, tuple]) -> "RunResults":
    results = one({e: {"traj": 1.0} for e in IDS}, thresholds={"traj": 1.0})
    for case in results.suites[0].cases:
        case.criteria["traj"] = _runs(*now.get(case.eval_id, (1.0, 1.0, 1.0)))
        case.status = case_status(case.criteria)
    return results


def test_with_num_runs_a_case_broke_when_most_of_its_runs_failed_and_hazards_come_from_outcomes():
    """Run means 0, 1/3, 2/3, 1 are shares of runs that passed, not scores: the breakage test
    reads them as pass/fail (a broken case failed most of its runs), not as a continuous value
    whose every dip under a threshold of 1 is a chance break."""
    flaky = {"c030": (1.0, 0.0, 1.0), "c031": (1.0, 1.0, 0.0)}  # one run of three failed: not broken
    broke = {"c001": (0.0, 0.0, 0.0), "c007": (0.0, 0.0, 0.0), "c009": (0.0, 1.0, 0.0)}  # two of three: broken
    ledger = {}
    for e in IDS:
        history = [1.0, 2 / 3, 1.0, 1.0, 2 / 3, 1.0, 1.0, 1.0, 1.0, 1.0] if e in ("c020", "c021", "c022") else [1.0] * 10
        ledger[ledger_key(K(e), "traj")] = history
        ledger[ledger_key(K(e), "traj") + "\x1fvalue"] = history
    policy = GatePolicy(confirm=ConfirmPolicy(runs=0))
    comparison = compare(_three_runs({}), _three_runs({**flaky, **broke}), policy, ledger=ledger)
    [comp] = comparison.suites[0].criteria
    assert comp.hazards_from == "outcomes" and comp.partial_p is None  # pass/fail, no partial-drop test
    assert sorted(k.eval_id for k in comp.broken) == ["c001", "c007", "c009"] and comp.stable == 40
    assert comp.breakage_p_adjusted is not None and comp.breakage_p_adjusted < policy.alpha
    assert any("3 of 40 stable cases broke" in r for r in comp.reasons)
