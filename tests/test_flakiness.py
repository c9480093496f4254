"""Each case's own flakiness (evalgate.gate.flakiness), the base commit as a control
(evalgate.gate.control) and the first day (evalgate.gate.firstday), by hand: the run
intensity's factorial moments, a case's chances under a two-point population, the graded
test against enumeration, the first-day bound against random populations, and compare()
on hand-built results."""

from __future__ import annotations

import math
import random

import pytest

from evalgate.engine import case_status
from evalgate.gate import GatePolicy, Verdict, compare
from evalgate.gate.control import EXTEND_P, base_says, classify, extension, more, wanted
from evalgate.gate.flakiness import (
    _worst,
    alternative,
    case_chances,
    first_day_chance,
    graded_test,
    odds,
    repeat_given_break,
    run_intensity,
)
from evalgate.gate.stats import beta_quantile, break_test
from evalgate.results import Rerun
from test_compare import K, crit, one


def test_run_intensity_is_the_factorial_moments_of_failures_per_run():
    # Failures per run (aligned from the end): 0, 0, 6 -> mean 2; E[F(F-1)] = 30/3, E[F(F-1)(F-2)] = 120/3.
    rows = [[1.0, 1.0, 0.0]] * 6 + [[1.0, 1.0, 1.0]] * 10
    assert run_intensity(rows, 3) == pytest.approx([1.0, 10 / 4, 40 / 8])
    # Failures spread one per run: no clustering, kappa 1 (a factorial moment below the square is floored at 1).
    spread = [[0.0 if t == i else 1.0 for t in range(5)] for i in range(5)]
    assert run_intensity(spread, 3) == [1.0, 1.0, 1.0]
    # Cases failing every run are broken all along, not chance: left out. Fewer than 3 runs: nothing measured.
    assert run_intensity([[0.0, 0.0, 0.0]] * 4 + spread, 3) == [1.0, 1.0, 1.0]
    assert run_intensity([[0.0, 1.0]] * 5, 3) == [1.0, 1.0, 1.0]


def test_a_cases_chances_under_a_two_point_population_by_hand():
    grid, weights = [0.01, 0.3], [0.9, 0.1]
    post = [0.9 * 0.99**10, 0.1 * 0.7**10]
    post = [x / sum(post) for x in post]  # 10 clean runs: mostly robust, a little lucky-flaky
    kappa = [1.0, 2.0, 3.0]
    chances = case_chances(grid, weights, 10, 2, kappa)
    by_hand = [math.comb(2, j) * kappa[j] * sum(w * p ** (1 + j) * (1 - p) ** (2 - j) for w, p in zip(post, grid)) for j in range(3)]
    assert chances == pytest.approx(by_hand, rel=1e-12)
    first = sum(w * p for w, p in zip(post, grid))
    assert repeat_given_break(grid, weights, 10, 2, kappa) == pytest.approx([c / first for c in by_hand], rel=1e-12)
    # The pooled repeat chance of the flaky cases would make the 3-in-a-row chance first * q^2;
    # a stable case's own is far smaller (its lucky-flaky share is small).
    assert chances[2] / kappa[2] < first * 0.3**2 / 10


def test_the_graded_test_is_the_break_test_with_one_grade_and_exact_with_two():
    rng = random.Random(3)
    hazards = [rng.uniform(0.001, 0.05) for _ in range(30)]
    broken = [i in (2, 5, 11) for i in range(30)]
    assert graded_test([0 if b else None for b in broken], [[h] for h in hazards], [[1.0]] * 30) == pytest.approx(break_test(broken, hazards), rel=1e-12)
    # Two grades, 6 cases, every outcome enumerated (weights far from the grid's rounding).
    chances = [[0.01, 0.001], [0.02, 0.0005], [0.005, 0.002], [0.01, 0.001], [0.03, 0.003], [0.001, 0.0001]]
    alt = alternative(2)[1:]
    assert alt == [0.125, 0.5625]
    grades = [1, None, 0, None, None, None]
    weights = [[math.log1p(0.1 * a / c) for a, c in zip(alt, cs)] for cs in chances]
    observed = weights[0][1] + weights[2][0]
    tail = 0.0

    def walk(i: int, prob: float, total: float) -> None:
        nonlocal tail
        if i == len(chances):
            tail += prob if total >= observed - 1e-9 else 0.0
            return
        walk(i + 1, prob * (1 - sum(chances[i])), total)
        for g, c in enumerate(chances[i]):
            walk(i + 1, prob * c, total + weights[i][g])

    walk(0, 1.0, 0.0)
    assert graded_test(grades, chances, [alt] * 6) == pytest.approx(tail, rel=0.02)  # the weights on a 0.05 grid


def test_the_first_day_bound_holds_whatever_the_cases_rates():
    assert _worst(2, False) == pytest.approx(4 / 27) and _worst(2, True) == pytest.approx(0.6**3 * 0.4**2)
    assert first_day_chance((5, 150), 2, False) == pytest.approx(beta_quantile(6.0, 145.0, 0.95) * 4 / 27)
    rng = random.Random(7)
    for _ in range(200):  # random populations of rates: the true chances never exceed the bound at their mean
        rates = [rng.random() ** rng.uniform(0.5, 6) for _ in range(20)]
        mean = sum(rates) / len(rates)
        no_control = sum((1 - p) * p**3 for p in rates) / len(rates)
        control = sum((1 - p) ** 3 * p**3 for p in rates) / len(rates)
        assert no_control <= mean * _worst(2, False) + 1e-15 and control <= mean * _worst(2, True) + 1e-15


def test_odds_read_as_a_developer_would():
    assert (odds(1 / 8123.0), odds(0.5), odds(1 / 65_000_000.0)) == ("8,100", "2.0", "65,000,000")


def _rerun(i: int, values: dict[str, float]) -> Rerun:
    criteria = {n: crit(v) for n, v in values.items()}
    return Rerun(run=i, how="agent", status=case_status(criteria), criteria=criteria)


def test_the_control_decides_from_plain_outcomes():
    assert classify([0.0, 0.0, 0.0], [1.0, 1.0]) == "pr"  # the base passes, the PR fails: the PR broke it
    assert classify([0.0, 0.0, 0.0], [0.0, 1.0]) == "environment"  # both fail: not blamed
    assert classify([0.0, 1.0, 0.0], [1.0, 1.0]) == "flaky"
    assert classify([0.0, 0.0, 0.0], []) == "unconfirmed"
    reruns = [_rerun(1, {"traj": 1.0}), _rerun(2, {"traj": 1.0})]
    assert base_says(reruns, "traj", False) == "pr" and base_says(None, "traj", False) == "none"
    assert base_says([_rerun(1, {"traj": 1.0}), _rerun(2, {"traj": 0.0})], "traj", False) == "environment"
    assert base_says([_rerun(1, {"traj": None})], "traj", False) == "environment"  # not evaluated on the base: an outage too
    assert wanted([_rerun(1, {"traj": 0.0}), _rerun(2, {"traj": 0.0})], ["traj"], {}) is True
    assert wanted([_rerun(1, {"traj": 0.0}), _rerun(2, {"traj": 1.0})], ["traj"], {}) is False
    assert wanted(None, ["traj"], {}) is False


IDS = [f"c{i:03d}" for i in range(60)]
BROKE = ("c001", "c007", "c009", "c013", "c021", "c040")


def _with(results, reruns: dict[str, list[float]]):
    for case in results.suites[0].cases:
        if case.eval_id in reruns:
            case.reruns = [_rerun(i, {"traj": v}) for i, v in enumerate(reruns[case.eval_id], start=1)]
    return results


def test_first_day_suspects_are_decided_with_and_without_the_control():
    base = one({e: {"traj": 0.0 if e in ("c050", "c051") else 1.0} for e in IDS})  # 2 of 60 failed in the baseline
    current = lambda: one({e: {"traj": 0.0 if e in BROKE or e in ("c050", "c051") else 1.0} for e in IDS})  # noqa: E731
    first = compare(base, current(), GatePolicy()).suites[0].criteria[0]
    assert first.first_day == [K(e) for e in BROKE] and first.breakage_p is None  # suspects; not re-run yet: no test
    # Every suspect failed both PR re-runs: bounded by the baseline's failed share, 6 of 60 cases.
    pr_only = compare(base, _with(current(), {e: [0.0, 0.0] for e in BROKE}), GatePolicy()).suites[0].criteria[0]
    chance = first_day_chance((2, 60), 2, False)
    assert pr_only.first_day_broken == [K(e) for e in BROKE] and not pr_only.first_day_control
    assert pr_only.breakage_p == pytest.approx(break_test([True] * 6 + [False] * 54, [chance] * 60))
    # With the base commit's re-runs passing beside them (the control), the bound is tighter: FAIL.
    baseline = _with(one({e: {"traj": 0.0 if e in ("c050", "c051") else 1.0} for e in IDS}), {e: [1.0, 1.0] for e in BROKE})
    comparison = compare(baseline, _with(current(), {e: [0.0, 0.0] for e in BROKE}), GatePolicy())
    c = comparison.suites[0].criteria[0]
    assert c.first_day_control and c.breakage_p == pytest.approx(break_test([True] * 6 + [False] * 54, [first_day_chance((2, 60), 2, True)] * 60))
    assert c.breakage_p < pr_only.breakage_p / 100 and comparison.verdict is Verdict.FAIL
    text = next(r for r in c.reasons if r.startswith("first day"))
    assert "6 cases the baseline passed broke and failed every one of 2 re-runs while the base commit passed" in text
    # A tool outage: the base fails its re-runs too. Said, not blamed.
    down = _with(one({e: {"traj": 0.0 if e in ("c050", "c051") else 1.0} for e in IDS}), {e: [0.0, 0.0] for e in BROKE})
    comparison = compare(down, _with(current(), {e: [0.0, 0.0] for e in BROKE}), GatePolicy())
    c = comparison.suites[0].criteria[0]
    assert c.environment == [K(e) for e in BROKE] and c.first_day_broken == [] and c.breakage_p is None
    assert any("failed now and on the base commit's re-runs too: the environment's doing" in r for r in c.reasons)
    assert comparison.verdict is not Verdict.FAIL


def test_first_day_suspects_that_could_not_fail_the_criterion_are_not_re_run():
    from evalgate.gate.confirm import suspects
    from evalgate.gate.firstday import could_decide

    # 6 of 60 failed in the baseline: one more chance failure, even failing every re-run beside a
    # passing base, is p = P(Bin(60, chance) >= 1), far above alpha: not worth an agent run.
    failing = {f"c05{i}" for i in range(6)}
    base = one({e: {"traj": 0.0 if e in failing else 1.0} for e in IDS})
    chance = first_day_chance((6, 60), 2, True)
    assert not could_decide(1, (6, 60), 2, 0.01) and break_test([True] + [False] * 59, [chance] * 60) >= 0.01
    current = one({e: {"traj": 0.0 if e in failing or e == "c001" else 1.0} for e in IDS})
    comparison = compare(base, current, GatePolicy())
    assert comparison.suites[0].criteria[0].first_day == [] and suspects(comparison, current, 20, flips=False)[0] == []
    # Six such cases could FAIL it (with the control's bound): they stay suspects and are re-run.
    assert could_decide(6, (6, 60), 2, 0.01)
    current = one({e: {"traj": 0.0 if e in failing or e in BROKE else 1.0} for e in IDS})
    comparison = compare(base, current, GatePolicy())
    assert comparison.suites[0].criteria[0].first_day == [K(e) for e in BROKE]
    assert [s.eval_id for s in suspects(comparison, current, 20, flips=False)[0]] == list(BROKE)


def test_newly_flaky_stable_cases_are_weighed_and_an_outage_on_the_base_is_not():
    from test_confirm import _ledger

    base = one({e: {"traj": 1.0} for e in IDS})
    ledger = _ledger([1.0] * 10, IDS)
    broke = ("c001", "c007", "c009")
    current = lambda: one({e: {"traj": 0.0 if e in broke else 1.0} for e in IDS})  # noqa: E731
    # Each broke now and failed 1 of 2 re-runs: once "flaky, not counted", now evidence.
    c = compare(base, _with(current(), {e: [0.0, 1.0] for e in broke}), GatePolicy(), ledger=ledger).suites[0].criteria[0]
    assert c.newly_flaky == [K(e) for e in broke] and c.broken == [] and c.breakage_p < 1e-6
    assert any("3 newly flaky (broke now and failed 1 of 2 re-runs" in r for r in c.reasons)
    # Passing both re-runs still counts for nothing.
    c = compare(base, _with(current(), {e: [1.0, 1.0] for e in broke}), GatePolicy(), ledger=ledger).suites[0].criteria[0]
    assert c.flaky == [K(e) for e in broke] and c.breakage_p == 1.0
    # The base commit failed its re-runs of them too (an outage): not counted against the PR.
    outage = _with(one({e: {"traj": 1.0} for e in IDS}), {e: [0.0, 0.0] for e in broke})
    comparison = compare(outage, _with(current(), {e: [0.0, 0.0] for e in broke}), GatePolicy(), ledger=ledger)
    c = comparison.suites[0].criteria[0]
    assert c.environment == [K(e) for e in broke] and c.broken == [] and c.breakage_p == 1.0
    assert any("failed on the base commit's re-runs too: the environment's doing" in r for r in c.reasons)


def test_a_continuous_cases_own_level_makes_its_repeats_likelier():
    """ROUGE-like scores (threshold 0.5): half the cases sit at 0.9 (sd 0.01), half just above
    the threshold at 0.53 (sd 0.02: their noise takes them under it now and then). Three cases of each kind
    break now and fail 1 of 2 re-runs: for the cases near the threshold that is what their own
    noise does, so it weighs far less than for the cases far above it."""
    from evalgate.gate.ledger import ledger_key, value_key

    rng = random.Random(5)
    levels = {e: (0.9 if i < 30 else 0.53) for i, e in enumerate(IDS)}
    ledger: dict = {}
    for e in IDS:
        values = [round(levels[e] + rng.gauss(0, 0.01 if levels[e] > 0.8 else 0.02), 4) for _ in range(10)]
        ledger[ledger_key(K(e), "rouge")] = [1.0] * 10
        ledger[value_key(K(e), "rouge")] = values
    base = one({e: {"rouge": levels[e]} for e in IDS})

    def breaking(cases):
        cur = one({e: {"rouge": 0.45 if e in cases else levels[e] + 0.001} for e in IDS})
        for case in cur.suites[0].cases:
            if case.eval_id in cases:
                case.reruns = [_rerun(1, {"rouge": 0.45}), _rerun(2, {"rouge": levels[case.eval_id]})]
        return compare(base, cur, GatePolicy(), ledger=ledger).suites[0].criteria[0]

    high, near = breaking(("c001", "c002", "c003")), breaking(("c031", "c032", "c033"))
    assert high.hazards_from == near.hazards_from == "values"
    assert len(high.newly_flaky) == len(near.newly_flaky) == 3
    # Near the threshold the case's own chance repeats: 3 such cases are unremarkable at the
    # gate's alpha (p 0.003; from the population's repeat chance alone it was 2e-6, a FAIL).
    assert near.breakage_p > 0.001 and high.breakage_p < 1e-9
    assert near.chance_each > 100 * high.chance_each


def test_a_newly_flaky_suspect_gets_more_re_runs_once_and_all_of_them_are_read():
    from test_confirm import _ledger

    mixed, clean = [_rerun(1, {"traj": 0.0}), _rerun(2, {"traj": 1.0})], [_rerun(1, {"traj": 0.0}), _rerun(2, {"traj": 0.0})]
    assert more(mixed, ["traj"], {}, 2) == 2 and more(clean, ["traj"], {}, 2) == 0 and more(None, ["traj"], {}, 2) == 0
    assert more(mixed + clean, ["traj"], {}, 2) == 0  # once
    passed = [_rerun(1, {"traj": 1.0}), _rerun(2, {"traj": 1.0})]
    assert more(passed, ["traj"], {}, 2) == 0  # passed both: flaky, not re-run (bench_gate --sharper: 2 more cost false FAILs)
    assert more(mixed, ["traj"], {}, 2, stable=False) == 0  # a first day's suspect: a mixed re-run is not weighed
    base = one({e: {"traj": 1.0} for e in IDS})
    ledger = _ledger([1.0] * 10, IDS)
    cur = one({e: {"traj": 0.0 if e == "c001" else 1.0} for e in IDS})
    two = compare(base, _with(cur, {"c001": [0.0, 1.0]}), GatePolicy(), ledger=ledger).suites[0].criteria[0]
    cur = one({e: {"traj": 0.0 if e == "c001" else 1.0} for e in IDS})
    four = compare(base, _with(cur, {"c001": [0.0, 1.0, 0.0, 1.0]}), GatePolicy(), ledger=ledger).suites[0].criteria[0]
    p = 1 / 602  # the population's floor: 600 clean case-runs
    assert two.chance_each == pytest.approx(2 * p**2 * (1 - p)) and four.chance_each == pytest.approx(6 * p**3 * (1 - p) ** 2)
    assert four.newly_flaky == [K("c001")] and four.breakage_p < two.breakage_p / 100
    assert any("1 newly flaky (broke now and failed 2 of 4 re-runs" in r for r in four.reasons)


def test_a_suggestive_breakage_test_re_runs_its_undecided_suspects_with_a_full_window_further():
    """control.extension: after the second compare, a criterion whose breakage test is below
    EXTEND_P but does not FAIL the gate has its stable suspects that passed some re-run re-run
    further, where their clean streak fills the ledger's window; not when the gate FAILs,
    not a suspect that failed every re-run (broken: nothing to tell), not one whose streak is
    shorter (a ledger filled at setup), not a suspect that is not stable."""
    from evalgate.gate.confirm import suspects

    from test_confirm import _ledger

    base = one({e: {"traj": 1.0} for e in IDS})
    judge = {"s": {"traj": False}}

    def decided(reruns: dict[str, list[float]], history: int = 10, alpha: float = 1e-12, unrun: tuple[str, ...] = ()):
        cur = one({e: {"traj": 0.0 if e in reruns or e in unrun else 1.0} for e in IDS})
        policy, ledger = GatePolicy(alpha=alpha), _ledger([1.0] * history, IDS)
        chosen, _ = suspects(compare(base, cur, policy, ledger=ledger), cur, 20)  # the first run's, as the pipeline picks them
        comparison = compare(base, _with(cur, reruns), policy, ledger=ledger)  # ... compared again with their re-runs
        by_id = {c.eval_id: c for c in cur.suites[0].cases}
        picked = extension(comparison, chosen, lambda s: by_id[s.eval_id].reruns, judge)
        return comparison, [s.eval_id for s in picked]

    comparison, picked = decided({"c001": [0.0, 1.0, 0.0, 1.0], "c002": [1.0, 1.0]})
    comp = comparison.suites[0].criteria[0]
    assert comparison.verdict != Verdict.FAIL and comp.breakage_p < EXTEND_P  # suggestive, not decisive at this alpha
    assert comp.full_streak == [K("c001"), K("c002")] and picked == ["c001", "c002"]
    comparison, picked = decided({"c001": [0.0, 1.0, 0.0, 1.0], "c003": [0.0, 0.0]}, alpha=1e-15)
    assert comparison.verdict != Verdict.FAIL and comparison.suites[0].criteria[0].full_streak == [K("c001"), K("c003")]
    assert picked == ["c001"]  # c003 failed both re-runs: broken already, nothing to tell
    comparison, picked = decided({"c001": [0.0, 1.0, 0.0, 1.0], "c003": [0.0, 0.0]}, alpha=0.01)
    assert comparison.verdict == Verdict.FAIL and picked == []  # decided: nothing to gain
    comparison, picked = decided({"c001": [0.0, 1.0, 0.0, 1.0], "c002": [1.0, 1.0]}, history=6)
    assert comparison.suites[0].criteria[0].full_streak == [] and picked == []  # 6 of the window's 10 runs recorded
    # A stable case that broke was not re-run (max_cases): the test is the first run's, which
    # further re-runs cannot move, however low its p.
    comparison, picked = decided({"c001": [0.0, 1.0, 0.0, 1.0], "c002": [1.0, 1.0]}, unrun=("c003",))
    comp = comparison.suites[0].criteria[0]
    assert comp.confirm_runs == 0 and comp.breakage_p < EXTEND_P and picked == []
    comparison, picked = decided({"c002": [1.0, 1.0]})  # passed both: flaky, not counted: no test to suggest anything
    assert comparison.suites[0].criteria[0].breakage_p == 1.0 and picked == []
    comparison, picked = decided({"c001": [0.0, 1.0, 0.0, 1.0]})
    cur = one({e: {"traj": 0.0 if e == "c001" else 1.0} for e in IDS})
    chosen, _ = suspects(compare(base, cur, GatePolicy(alpha=1e-12), ledger=_ledger([1.0] * 10, IDS)), cur, 20)
    assert picked == ["c001"] and [s.stable for s in chosen] == [True]
    chosen[0].stable = False  # a first day's suspect, or a flip: its mixed re-runs are not weighed
    assert extension(comparison, chosen, lambda s: [_rerun(1, {"traj": 0.0}), _rerun(2, {"traj": 1.0})], judge) == []


def test_the_further_round_re_runs_only_suspects_whose_agent_it_re_ran():
    """evalgate.pipeline.further: a suspect the extension names whose re-runs were judge
    re-draws (recorded outputs, or the trusted publish job: not in `kept`) is not re-run
    further (evalgate.rerun would replace its re-draws, not append), and nothing is logged."""
    from evalgate.gate.confirm import suspects
    from evalgate.pipeline import Confirmation, further

    from test_confirm import _ledger

    class Sink:
        def __init__(self):
            self.lines = []

        def log(self, text):
            self.lines.append(text)

        def rewrote(self, current):
            self.lines.append("rewrote")

    base, ledger, policy = one({e: {"traj": 1.0} for e in IDS}), _ledger([1.0] * 10, IDS), GatePolicy(alpha=1e-12)
    cur = one({e: {"traj": 0.0 if e == "c001" else 1.0} for e in IDS})
    chosen, _ = suspects(compare(base, cur, policy, ledger=ledger), cur, 20)
    comparison = compare(base, _with(cur, {"c001": [0.0, 1.0, 0.0, 1.0]}), policy, ledger=ledger)
    by_id = {c.eval_id: c for c in cur.suites[0].cases}
    judge = {"s": {"traj": False}}
    assert [s.eval_id for s in extension(comparison, chosen, lambda s: by_id[s.eval_id].reruns, judge)] == ["c001"]
    sink = Sink()
    done = Confirmation(chosen, {}, judge, lambda s: by_id[s.eval_id].reruns, {"agent": 0}, [], None, 2, lambda: (None, 1), cur, (), False)
    assert further(done, comparison, sink) is False and sink.lines == []
    assert len(by_id["c001"].reruns) == 4


def test_a_newly_flaky_cases_line_counts_the_re_runs_of_the_criteria_it_is_newly_flaky_on():
    """confirm.lines: c001 is stable on `traj` and fails 1 of its 2 re-runs there (newly flaky);
    `rouge`, never stable for it, fails both. Its line counts `traj`, as the reason does."""
    from evalgate.gate.confirm import lines

    from test_confirm import _ledger

    ledger = {**_ledger([1.0] * 10, IDS), **_ledger([1.0, 0.0] * 5, ["c001"], name="rouge"), **_ledger([1.0] * 10, [e for e in IDS if e != "c001"], name="rouge")}
    base = one({e: {"traj": 1.0, "rouge": 1.0} for e in IDS})
    cur = one({e: {"traj": 0.0 if e == "c001" else 1.0, "rouge": 0.0 if e == "c001" else 1.0} for e in IDS})
    cur.suites[0].cases[IDS.index("c001")].reruns = [_rerun(1, {"traj": 0.0, "rouge": 0.0}), _rerun(2, {"traj": 1.0, "rouge": 0.0})]
    comparison = compare(base, cur, GatePolicy(), ledger=ledger)
    traj = next(c for c in comparison.suites[0].criteria if c.criterion == "traj")
    assert traj.newly_flaky == [K("c001")]
    [line] = lines(comparison, cur)
    assert line.text == "failed 1 of 2 re-runs: newly flaky, weighed as evidence" and line.stable


def test_the_prior_is_the_fitted_mixture_smoothed_by_a_normal_kernel_on_its_grid():
    from collections import Counter

    from evalgate.gate.flakiness import SMOOTH, population, smooth
    from evalgate.gate.stats import rate_mixture

    point = [0.0] * 40
    point[20] = 1.0
    out = smooth(point, 4.0)
    assert sum(out) == pytest.approx(1.0, rel=1e-12)
    # A normal kernel of sd 4 steps: 4 steps away, exp(-1/2) of the centre; 8 away, exp(-2); symmetric.
    assert out[24] / out[20] == pytest.approx(math.exp(-0.5), rel=1e-12) and out[12] / out[20] == pytest.approx(math.exp(-2.0), rel=1e-12)
    assert out[17] == pytest.approx(out[23], rel=1e-12)
    # At the grid's end the kernel is cut and renormalized: the point keeps its mass, none leaks.
    edge = smooth([0.7] + [0.0] * 38 + [0.3], 4.0)
    assert sum(edge) == pytest.approx(1.0, rel=1e-12) and sum(edge[:20]) == pytest.approx(0.7, abs=1e-3)
    assert smooth([0.2, 0.8], 0.0) == [0.2, 0.8] and smooth([1.0], 4.0) == [1.0]
    # population() is rate_mixture's fit, smoothed.
    rng = random.Random(2)
    histories = [[0.0 if rng.random() < (0.3 if i < 15 else 0.002) else 1.0 for _ in range(10)] for i in range(100)]
    grid, weights = rate_mixture(Counter((10, sum(o == 0.0 for o in h)) for h in histories))
    assert population(histories) == (grid, pytest.approx(smooth(weights, SMOOTH), rel=1e-12))
