"""The gate's comparison: pairing, statistics (exact p-values by hand), Holm, verdict rules, ledger."""

from __future__ import annotations

import copy
import math
import random
from statistics import NormalDist

import pytest

from evalgate.gate import (
    BaselineInfo,
    CaseKey,
    GatePolicy,
    Verdict,
    case_samples,
    compare,
    ledger_key,
    outcome,
    update_ledger,
    value_key,
)
from evalgate.engine import case_status, suite_status
from evalgate.gate.ledger import own_histories
from evalgate.reports.markdown import render_comment
from evalgate.results import (
    CaseResult,
    Counts,
    CriterionResult,
    CriterionSpec,
    InvocationResult,
    RunResults,
    Status,
    SuiteResult,
)
from evalgate.gate.stats import (
    BREAK_SHARE,
    SHIFT_Z,
    WEIGHT_STEP,
    beta_quantile,
    binomial_half_sf,
    break_hazards,
    break_share,
    break_test,
    case_scales,
    dip_hazards,
    drop_interval,
    drop_test,
    fail_hazards,
    holm,
    level_differences,
    level_start,
    lopsided_test,
    run_variance,
    share_break_test,
    steady_drop_test,
    steady_run_variance,
    steady_weights,
    t_quantile,
    t_sf,
)

# --- building results by hand ---------------------------------------------------------
#
# A suite is {eval_id: {criterion: value}}, where a value is a score, None (NOT_EVALUATED,
# with an error), or a list of sample scores (a judge criterion: one invocation whose
# score is the majority vote of its samples).

JUDGE = {"judge", "judge2"}  # criteria named here are judge criteria; the rest are deterministic
THRESHOLD = 0.5


def crit(value, threshold: float = THRESHOLD, error: str = "no judge credentials") -> CriterionResult:
    if value is None:
        # Without judge credentials the engine marks the judge as unavailable (evalgate.gate.refused).
        unavailable = "judge" if error.startswith("no judge credentials") else None
        return CriterionResult(score=None, status=Status.NOT_EVALUATED, threshold=threshold, error=error, unavailable=unavailable)
    if isinstance(value, list):
        valid = [s for s in value if s is not None]
        score = 1.0 if sum(s >= threshold for s in valid) * 2 > len(valid) else 0.0
        inv = InvocationResult(score=score, status=Status.PASSED if score >= threshold else Status.FAILED, details={"samples": value})
        return CriterionResult(score=score, status=inv.status, threshold=threshold, per_invocation=[inv])
    status = Status.PASSED if value >= threshold else Status.FAILED
    return CriterionResult(
        score=value, status=status, threshold=threshold, per_invocation=[InvocationResult(score=value, status=status)]
    )


def suite(name: str, cases: dict, digests: dict | None = None, policy: str = "warn", set_id: str = "set", thresholds=None) -> SuiteResult:
    results = []
    for eval_id, criteria in cases.items():
        built = {c: crit(v, (thresholds or {}).get(c, THRESHOLD)) for c, v in criteria.items()}
        results.append(
            CaseResult(
                eval_set_id=set_id,
                eval_id=eval_id,
                expected_digest=(digests or {}).get(eval_id, "d"),
                status=case_status(built),
                criteria=built,
            )
        )
    names = sorted({c for criteria in cases.values() for c in criteria})
    specs = {
        c: CriterionSpec(threshold=(thresholds or {}).get(c, THRESHOLD), version="1", judge=c in JUDGE) for c in names
    }
    counts = Counts.of(results)
    return SuiteResult(
        name=name,
        status=suite_status(counts, policy),  # type: ignore[arg-type]
        not_evaluated_policy=policy,
        counts=counts,
        criteria=specs,
        cases=results,
    )


def run(*suites: SuiteResult, config: str = "cfg") -> RunResults:
    statuses = {s.status for s in suites}
    overall = Status.FAILED if Status.FAILED in statuses else Status.PASSED
    return RunResults(
        config_digest=config,
        status=overall,
        counts=Counts.of([c for s in suites for c in s.cases]),
        suites=list(suites),
    )


def one(cases: dict, **kw) -> RunResults:
    return run(suite("s", cases, **kw))


def scores(criterion: str, values: list) -> dict:
    return {f"c{i:03d}": {criterion: v} for i, v in enumerate(values)}


POLICY = GatePolicy()
K = lambda eval_id, s="s": CaseKey(s, "set", eval_id)  # noqa: E731


# --- the statistics, against independent computations -------------------------------------


def _t_sf_by_integration(t: float, df: float) -> float:
    """P(T >= t) by Simpson's rule on Student's density: independent of the incomplete beta."""
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    f = lambda x: c * (1 + x * x / df) ** (-(df + 1) / 2)  # noqa: E731
    lo, hi, n = min(t, 0.0), max(t, 0.0), 20000
    h = (hi - lo) / n
    area = f(lo) + f(hi) + sum((4 if i % 2 else 2) * f(lo + i * h) for i in range(1, n))
    between = area * h / 3
    return 0.5 - between if t >= 0 else 0.5 + between


@pytest.mark.parametrize("t, df", [(2.0, 10), (-1.0, 5), (2.262157, 9), (0.3, 1), (3.5, 40), (1.0, 2.5)])
def test_t_sf_matches_numerical_integration(t, df):
    assert t_sf(t, df) == pytest.approx(_t_sf_by_integration(t, df), abs=1e-9)
    assert t_quantile(1 - t_sf(t, df), df) == pytest.approx(t, abs=1e-7)


def test_t_quantiles_from_tables():
    assert t_quantile(0.975, 9) == pytest.approx(2.262, abs=5e-4)
    assert t_quantile(0.95, 9) == pytest.approx(1.833, abs=5e-4)
    assert t_quantile(0.99, math.inf) == pytest.approx(2.326, abs=5e-4)


def test_drop_test_by_hand():
    # Five of ten cases lost a whole point; margin 0, no run variance: the statistic is the
    # mean -0.5, its sign-flip variance sum(d^2) / n^2 = 5 / 100, t = -0.5 / sqrt(0.05) on
    # n - 1 = 9 degrees of freedom.
    p, se, df = drop_test([-1.0] * 5 + [0.0] * 5, 0.0)
    assert (se, df) == (pytest.approx(math.sqrt(0.05)), 9)
    assert p == pytest.approx(_t_sf_by_integration(0.5 / math.sqrt(0.05), 9), abs=1e-9)
    # The margin shifts the hypothesis: a drop of 0.05 on every case, margin 0.02.
    p, se, df = drop_test([-0.05] * 20, 0.02)
    assert se == pytest.approx(0.03 / math.sqrt(20)) and p == pytest.approx(1 - t_sf(-0.03 / se, 19))
    # A run variance of 0.01 estimated from 4 runs (3 df): Welch-Satterthwaite by hand.
    p, se, df = drop_test([-0.1, 0.1, -0.2, 0.0], 0.0, 0.01, 3)
    within = (0.01 + 0.01 + 0.04) / 16
    assert se == pytest.approx(math.sqrt(within + 0.01))
    assert df == pytest.approx((within + 0.01) ** 2 / (within**2 / 3 + 0.01**2 / 3))
    assert p == pytest.approx(1 - t_sf(-0.05 / se, df))
    # An assumed (known) run variance has infinite degrees of freedom.
    assert drop_test([0.0, 0.0], 0.0, 0.01)[2] == math.inf
    # Nothing moved and no run variance: no evidence of a drop.
    assert drop_test([0.0, 0.0, 0.0], 0.0)[0] == 1.0


def test_run_variance_by_hand_and_in_simulation():
    # Two cases, three runs: run means 0.5, 0.7, 0.3 (variance 0.04); the residuals of the
    # additive model are zero, so sigma_r^2 is 0.04 exactly.
    assert run_variance([[0.4, 0.6, 0.2], [0.6, 0.8, 0.4]]) == (pytest.approx(0.04), 2, 0)
    # Run means 0.50, 0.52, 0.48, 0.50, then 0.80, 0.82, 0.78, 0.80: the branch moved four runs
    # back (t = 33 on 6 df, beyond MOVE_ALPHA), so sigma_r^2 is the spread around each level,
    # (4 x 0.02^2) / (8 - 2), not the 0.0257 around one mean.
    means = [0.50, 0.52, 0.48, 0.50, 0.80, 0.82, 0.78, 0.80]
    assert run_variance([[m - 0.1 for m in means], [m + 0.1 for m in means]]) == (pytest.approx(4 * 0.0004 / 6), 6, 4)
    # Only case noise, no run effect: the estimate averages near zero; with a run effect of
    # sd 0.05 it averages near 0.0025.
    rng = random.Random(7)
    for sd in (0.0, 0.05):
        estimates = []
        for _ in range(200):
            shift = [rng.gauss(0, sd) for _ in range(10)]
            rows = [[0.7 + shift[t] + rng.gauss(0, 0.2) for t in range(10)] for _ in range(100)]
            estimates.append(run_variance(rows)[0])
        assert sum(estimates) / len(estimates) == pytest.approx(sd * sd, abs=2.5e-4)
    with pytest.raises(ValueError):
        run_variance([[1.0, 0.0]])


def test_interval_inverts_the_drop_test():
    rng = random.Random(3)
    diffs = [rng.choice([-1.0, -0.2, 0.0, 0.0, 0.2]) for _ in range(30)]
    low, high = drop_interval(diffs, 0.001, 50)
    mean = sum(diffs) / len(diffs)
    assert low < mean < high
    # At either end the two-sided test, run as the one-sided drop test shifted there, sits at 2.5%.
    for end, sign in ((low, 1), (high, -1)):
        shifted = [sign * (d - end) for d in diffs]
        n = len(shifted)
        stat = sum(shifted) / n
        se = math.sqrt(sum(s * s for s in shifted) / (n * n) + 0.001)
        assert t_sf(abs(stat) / se, 50) == pytest.approx(0.025, abs=1e-9)
    assert drop_interval([0.5, -0.5, 0.1], 0.0, 2) == (None, None)  # n <= q^2: no shift excluded


def test_break_test_against_enumeration():
    """p is the exact tail of the breaks' summed weights (log(1 + BREAK_SHARE / hazard), on
    the WEIGHT_STEP grid) over every pattern of breaks; with equal hazards, of their count."""
    hazards = [0.1, 0.02, 0.3, 0.05, 0.5, 0.004]
    units = [max(1, round(math.log1p(BREAK_SHARE / h) / WEIGHT_STEP)) for h in hazards]
    for observed in range(1 << len(hazards)):
        broken = [bool(observed >> i & 1) for i in range(len(hazards))]
        target = sum(u for u, b in zip(units, broken) if b)
        brute = 0.0
        for pattern in range(1 << len(hazards)):
            prob = 1.0
            for i, q in enumerate(hazards):
                prob *= q if pattern >> i & 1 else 1 - q
            brute += prob if sum(u for i, u in enumerate(units) if pattern >> i & 1) >= target else 0.0
        assert break_test(broken, hazards) == pytest.approx(min(1.0, brute) if any(broken) else 1.0, abs=1e-12)
    for k in range(5):
        assert break_test([True] * k + [False] * (12 - k), [0.03] * 12) == pytest.approx(_binomial_sf(k, 12, 0.03), abs=1e-12)
    # One break: of a case that hardly ever breaks, strong evidence; of one that often does, weak.
    assert break_test([True, False], [0.001, 0.2]) < 0.01 < 0.2 < break_test([False, True], [0.001, 0.2])


def test_dip_hazards_weigh_each_stable_case_by_its_level_and_its_dips():
    """A continuous criterion's population: cases wobble by their own sd, and now and then
    dip by U(0.2, 0.5) (an off run), most cases rarely, a tenth often. A stable case's chance
    of falling under the threshold depends on how far above it sits and how often it dips;
    over the stable cases it is about the true chance, erring high."""
    rng = random.Random(3)
    cases = []
    for i in range(1500):
        level, sd, rate = rng.uniform(0.55, 0.95), rng.uniform(0.01, 0.04), (0.3 if i % 10 == 0 else 0.005)
        values = [level + rng.gauss(0, sd) - (rng.uniform(0.2, 0.5) if rng.random() < rate else 0.0) for _ in range(10)]
        cases.append((level, sd, rate, values))
    population = [v for *_, v in cases]
    stable = [c for c in cases if min(c[3]) >= 0.5]
    hazards = dip_hazards(population, [v for *_, v in stable], 0.5)
    normal = NormalDist()

    def truth(level, sd, rate):
        deeper = sum(normal.cdf((0.5 - level + 0.2 + 0.3 * (j + 0.5) / 100) / sd) for j in range(100)) / 100
        return rate * deeper + (1 - rate) * normal.cdf((0.5 - level) / sd)

    true = [truth(*c[:3]) for c in stable]
    # Never below the truth (that would fail unchanged PRs); above it by the mixture's
    # smoothing and the noisy spread of ten runs (1.27x here).
    assert sum(true) < sum(hazards) < 1.4 * sum(true)
    by_level = sorted(zip([c[0] for c in stable], hazards, true))
    low, high = by_level[: len(by_level) // 4], by_level[-len(by_level) // 4 :]
    assert sum(h for _, h, _ in low) > 2 * sum(h for _, h, _ in high)  # near the threshold, more likely to fall under it
    # Same level, one case dipped twice in its ten runs, the other never: the first is likelier to break.
    steady = [0.8, 0.81, 0.79, 0.8, 0.82, 0.78, 0.8, 0.81, 0.79, 0.8]
    dipping = [0.8, 0.81, 0.55, 0.8, 0.82, 0.78, 0.52, 0.81, 0.79, 0.8]
    quiet, jumpy = dip_hazards(population, [steady, dipping], 0.5)
    assert jumpy > 3 * quiet
    # Replayed outputs score the same every run: no dips, the rate at its floor (one
    # pseudo-dip in 212 case-runs), half a pseudo-dip deeper; float noise is no dip.
    same = [[0.9] * 10] * 20 + [[0.9 + 1e-13] * 5 + [0.9] * 5]
    assert dip_hazards(same, [[0.9] * 10], 0.5) == [pytest.approx(0.5 / 212)]


def test_break_hazards():
    def hazards(histories, streaks):
        return break_hazards(fail_hazards(histories, streaks), break_share(histories))

    # Every case alike, two breaks in 100 case-runs: about the pooled rate for all.
    same = [[1.0] * 9 + [0.0]] * 2 + [[1.0] * 10] * 8
    h = hazards(same, [10, 10])
    assert h[0] == h[1] and 0.005 < h[0] < 3 / 102
    # Breaks concentrated in two flaky cases: the rest are safer than the average, and the
    # longer a case's clean streak the lower its hazard.
    flaky = [[1.0, 0.0] * 5] * 2 + [[1.0] * 10] * 38
    h5, h10 = hazards(flaky, [5, 10])
    assert h10 < h5 < 11 / 402
    # No history of a break: small, never zero (one pseudo-break in runs + 2).
    assert hazards([[1.0] * 10] * 5, [10]) == [pytest.approx(1 / 52)]
    # A judge's outcomes are shares of samples: 0.6 passed; 0.4 failed, but not every sample.
    assert hazards([[0.6] * 10] * 5, [10]) == hazards([[1.0] * 10] * 5, [10])
    soft = [[0.4] + [1.0] * 9] * 5
    assert fail_hazards(soft, [10])[0] > 1 / 52
    # Five rare failures, none of every sample: the share that breaks is Beta(0 + 1, 5 + 1)
    # (uniform prior), its mean 1/7; the expected chance is the failing one times that.
    assert break_share(soft) == (1.0, 6.0)
    assert hazards(soft, [10])[0] == pytest.approx(fail_hazards(soft, [10])[0] / 7)
    # With one sample (outcomes 0 or 1) every failure is a break: the share is 1.
    assert break_share([[0.0] + [1.0] * 9] * 5) is None
    assert hazards([[0.0] + [1.0] * 9] * 5, [10]) == fail_hazards([[0.0] + [1.0] * 9] * 5, [10])


def test_share_break_test_averages_over_what_history_says_of_the_share():
    """The share of failures that break is uncertain (few rare failures measure it): p is the
    average over its Beta's quantiles, between the p at its mean and at its upper tail."""
    fails, broken = [0.01] * 100, [True] * 4 + [False] * 96
    share = (3.0, 8.0)  # 2 of 9 rare failures broke
    p = share_break_test(broken, fails, share)
    points = [beta_quantile(3, 8, (g + 0.5) / 20) for g in range(20)]
    assert p == pytest.approx(sum(_binomial_sf(4, 100, 0.01 * x) for x in points) / 20, rel=1e-9)
    assert break_test(broken, [0.01 * 3 / 11] * 100) < p < break_test(broken, [0.01 * beta_quantile(3, 8, 0.9)] * 100)
    assert share_break_test(broken, fails, None) == pytest.approx(_binomial_sf(4, 100, 0.01))


def test_break_hazards_recover_a_two_humped_population():
    """Robust cases (rate 0.005) and flaky ones (0.3), 10 runs each: the mixture's chance for a
    case with 10 clean runs is the true one (the flaky share that survives 10 runs is small),
    where the mean rate (0.05) would overstate it tenfold."""
    import random

    rng = random.Random(7)
    rates = [0.3 if i % 10 == 0 else 0.005 for i in range(2000)]
    histories = [[0.0 if rng.random() < r else 1.0 for _ in range(10)] for r in rates]
    [h] = break_hazards(fail_hazards(histories, [10]), break_share(histories))
    robust, flaky = 0.9 * 0.995**10, 0.1 * 0.7**10
    truth = (robust * 0.005 + flaky * 0.3) / (robust + flaky)
    assert truth == pytest.approx(0.0060, abs=1e-4)
    assert h == pytest.approx(truth, rel=0.3)


@pytest.mark.parametrize(
    "tests, adjusted",
    [
        # Holm: sorted 0.01, 0.03, 0.04 times 3, 2, 1 = 0.03, 0.06, 0.04 -> monotone 0.03, 0.06, 0.06.
        ({"a": (0.01, 1), "b": (0.04, 1), "c": (0.03, 1)}, {"a": 0.03, "b": 0.06, "c": 0.06}),
        ({"a": (0.5, 1), "b": (0.6, 1)}, {"a": 1.0, "b": 1.0}),
        ({"a": (0.02, 1)}, {"a": 0.02}),
        # Weighted: total weight 2; by p/w: b1 (2e-6), a (1e-3), b2 (2).
        # b1: 1e-6 / 0.5 * 2 = 4e-6; a: 1e-3 / 1 * 1.5 = 1.5e-3; b2: 1 / 0.5 * 0.5 = 1.
        ({"a": (1e-3, 1), "b1": (1e-6, 0.5), "b2": (1.0, 0.5)}, {"a": 1.5e-3, "b1": 4e-6, "b2": 1.0}),
    ],
)
def test_holm(tests, adjusted):
    out = holm(tests)
    assert out.keys() == adjusted.keys()
    for k in adjusted:
        assert out[k] == pytest.approx(adjusted[k], rel=1e-12)


def test_case_samples_contract():
    two = CriterionResult(
        score=0.5,
        status=Status.PASSED,
        threshold=0.5,
        per_invocation=[
            InvocationResult(score=1.0, status=Status.PASSED, details={"samples": [1.0, 1.0, None]}),
            InvocationResult(score=0.0, status=Status.FAILED, details={"samples": [0.0, 1.0, None]}),
        ],
    )
    # sample j = mean over invocations of their j-th samples; a failed sample is left out.
    assert case_samples(two) == [0.5, 1.0]
    mixed = CriterionResult(
        score=0.5,
        status=Status.PASSED,
        threshold=0.5,
        per_invocation=[
            InvocationResult(score=1.0, status=Status.PASSED, details={"samples": [0.0, 1.0]}),
            InvocationResult(score=0.0, status=Status.FAILED),  # no samples: its score, in every sample
        ],
    )
    assert case_samples(mixed) == [0.0, 0.5]
    assert case_samples(crit(0.75)) == [0.75]  # no samples anywhere: one sample, the score
    assert case_samples(crit(None)) == []
    assert outcome(crit([1.0, 1.0, 0.0, 1.0, None]), judge=True) == 0.75
    assert outcome(crit(0.7), judge=False) == 1.0
    assert outcome(crit(0.2), judge=False) == 0.0
    assert outcome(crit(None), judge=True) is None


# --- pairing ------------------------------------------------------------------------------


def test_pairing_changed_added_removed():
    base = one({"a": {"tool": 1.0}, "b": {"tool": 1.0}, "c": {"tool": 1.0}}, digests={"b": "old"})
    cur = one({"a": {"tool": 1.0}, "b": {"tool": 0.0}, "d": {"tool": 0.0}}, digests={"b": "new"})
    s = compare(base, cur, POLICY).suites[0]
    assert s.changed == [K("b")]
    assert s.added == [K("d")]
    assert s.removed == [K("c")]
    assert s.criteria[0].n_pairs == 1  # only a is compared
    # d fails but is not gated (no baseline to compare with): listed, with a warning. b changed,
    # and the baseline passed it: failing now decides the gate (issue 34: a case does not leave
    # the gate by being edited).
    assert s.verdict is Verdict.FAIL
    assert s.reasons[0] == "1 changed case the baseline passed fails now: set/b (its expected data changed in this run; a case does not leave the gate by being edited)"
    assert any("1 added or changed case fail, not gated" in r and "set/d" in r for r in s.reasons)
    assert s.changes == []
    # A changed case that failed in the baseline too, or passes now, decides nothing.
    base = one({"a": {"tool": 1.0}, "b": {"tool": 0.0}, "c": {"tool": 1.0}}, digests={"b": "old", "c": "old"})
    cur = one({"a": {"tool": 1.0}, "b": {"tool": 0.0}, "c": {"tool": 1.0}}, digests={"b": "new", "c": "new"})
    assert compare(base, cur, POLICY).suites[0].verdict is Verdict.PASS


def test_cases_pair_by_what_their_criteria_read():
    """A case pairs by the parts of its data that the criteria both runs share read (and what
    its run reads): a change to a part no shared criterion reads does not unpair it; a run
    that does not record them (an older baseline) pairs by the whole expected data."""
    def with_parts(results: RunResults, parts: dict, reads: list[str] | None = ["tool_uses"]) -> RunResults:  # noqa: B006
        for case in results.suites[0].cases:
            case.parts = parts.get(case.eval_id)
        for spec in results.suites[0].criteria.values():
            spec.reads = reads
        return results

    same, other = {"run": "r", "tool_uses": "t"}, {"run": "r", "tool_uses": "t", "final_response": "f2"}
    base = with_parts(one({"a": {"tool": 1.0}, "b": {"tool": 1.0}}, digests={"b": "old"}), {"a": same, "b": {**same, "final_response": "f1"}})
    cur = with_parts(one({"a": {"tool": 1.0}, "b": {"tool": 0.0}}, digests={"b": "new"}), {"a": same, "b": other})
    s = compare(base, cur, POLICY).suites[0]
    assert s.changed == [] and s.criteria[0].n_pairs == 2 and [c.key for c in s.changes] == [K("b")]
    # The part the criterion reads changed: another case.
    moved = with_parts(one({"a": {"tool": 1.0}, "b": {"tool": 0.0}}, digests={"b": "new"}), {"a": same, "b": {"run": "r", "tool_uses": "t2"}})
    assert compare(base, moved, POLICY).suites[0].changed == [K("b")]
    # What the run reads changed: another case too.
    asked = with_parts(one({"a": {"tool": 1.0}, "b": {"tool": 0.0}}, digests={"b": "new"}), {"a": same, "b": {"run": "r2", "tool_uses": "t"}})
    assert compare(base, asked, POLICY).suites[0].changed == [K("b")]
    # A baseline that does not say what its criteria read pairs by the whole expected data.
    older = with_parts(one({"a": {"tool": 1.0}, "b": {"tool": 1.0}}, digests={"b": "old"}), {}, reads=None)
    assert compare(older, cur, POLICY).suites[0].changed == [K("b")]


def test_cases_pair_across_eval_sets_and_suites_by_full_key():
    base = run(suite("s", {"x": {"tool": 1.0}}, set_id="one"), suite("t", {"x": {"tool": 1.0}}))
    cur = run(suite("s", {"x": {"tool": 1.0}}, set_id="two"), suite("t", {"x": {"tool": 1.0}}))
    s, t = compare(base, cur, POLICY).suites
    assert s.added == [CaseKey("s", "two", "x")] and s.removed == [CaseKey("s", "one", "x")]
    assert s.reasons[0].startswith("no case in common with the baseline")
    assert t.criteria[0].n_pairs == 1 and t.added == t.removed == []


# --- per-case changes ---------------------------------------------------------------------


def test_flips_and_score_moves_regressed_first():
    base = one(
        {
            "a": {"rouge": 0.9, "tool": 1.0},
            "b": {"rouge": 0.4, "tool": 1.0},
            "c": {"rouge": 0.9, "tool": 1.0},
            "d": {"rouge": 0.6, "tool": 1.0},
            "e": {"rouge": 0.7, "tool": 1.0},
        }
    )
    cur = one(
        {
            "a": {"rouge": 0.9, "tool": 1.0},  # unchanged
            "b": {"rouge": 0.8, "tool": 1.0},  # fixed
            "c": {"rouge": 0.2, "tool": 1.0},  # regressed
            "d": {"rouge": 0.55, "tool": 1.0},  # score drop, still passing
            "e": {"rouge": 0.7 + 1e-9, "tool": 1.0},  # rounding, not a change
        }
    )
    changes = compare(base, cur, POLICY).suites[0].changes
    assert [(c.key.eval_id, c.kind) for c in changes] == [("c", "regressed"), ("b", "fixed"), ("d", "score_drop")]
    assert changes[0].criteria == {"rouge": (0.9, 0.2)}
    assert changes[2].criteria == {"rouge": (0.6, 0.55)}


# --- verdict rules ------------------------------------------------------------------------

STABLE = [1.0] * 40
HALF = [1.0, 0.0] * 20


def _verdict(base_cases, cur_cases, policy=POLICY, **kw):
    return compare(one(base_cases, **kw), one(cur_cases, **kw), policy)


@pytest.mark.parametrize(
    "criterion, base, cur, policy, verdict, status, reason",
    [
        # One deterministic pass -> fail of 40: weighed like any drop, and the interval rules
        # out a drop of 0.1 (the resolution): a calm PASS...
        ("tool", STABLE, [0.0] + STABLE[1:], POLICY, Verdict.PASS, Verdict.PASS, "no drop beyond the margin"),
        # ... and a regression when the agent's outputs are replayed (no noise to allow for).
        ("tool", STABLE, [0.0] + STABLE[1:], GatePolicy(deterministic_flips="fail"), Verdict.FAIL, Verdict.FAIL, "1 case went from PASSED to FAILED"),
        # A deterministic score drop without a flip, significant: -0.2 on 10 of 40 cases.
        ("rouge", [0.9] * 40, [0.7] * 10 + [0.9] * 30, POLICY, Verdict.FAIL, Verdict.FAIL, "dropped by 0.050"),
        # Judge: 10 of 40 cases broke: significant beyond the run-to-run variation assumed.
        ("judge", STABLE, [0.0] * 10 + STABLE[10:], POLICY, Verdict.FAIL, Verdict.FAIL, "dropped by 0.250"),
        # Judge: 2 of 40 broke: not significant, and 40 cases cannot rule out a drop of 0.1.
        ("judge", STABLE, [0.0] * 2 + STABLE[2:], POLICY, Verdict.INCONCLUSIVE, Verdict.INCONCLUSIVE, "cannot rule out a drop bigger than 0.1"),
        # ... which fails when configured so.
        ("judge", STABLE, [0.0] * 2 + STABLE[2:], GatePolicy(inconclusive="fail"), Verdict.FAIL, Verdict.INCONCLUSIVE, "cannot rule out"),
        # A drop within a wide margin that the interval rules out beyond it passes.
        ("judge", STABLE, [0.0] * 10 + STABLE[10:], GatePolicy(margin_judge=0.5), Verdict.PASS, Verdict.PASS, "no drop beyond the margin"),
        # A looser alpha makes a smaller drop significant: 5 broke.
        ("judge", STABLE, [0.0] * 5 + STABLE[5:], GatePolicy(alpha=0.05), Verdict.FAIL, Verdict.FAIL, "a significant drop, p = 0.047"),
        ("judge", STABLE, [0.0] * 5 + STABLE[5:], POLICY, Verdict.INCONCLUSIVE, Verdict.INCONCLUSIVE, "cannot rule out"),
        # Noise both ways: 20 flips each way, mean unchanged: no drop, nothing to doubt.
        ("judge", HALF, HALF[1:] + HALF[:1], POLICY, Verdict.PASS, Verdict.PASS, "no drop beyond the margin"),
        # The same noise with one more case down (-0.025): 40 cases that all flip cannot tell
        # it from a drop of 0.1, and the comment says what would narrow it.
        ("judge", HALF, [0.0, 0.0] + (HALF[1:] + HALF[:1])[2:], POLICY, Verdict.INCONCLUSIVE, Verdict.INCONCLUSIVE, "more cases, num_samples"),
        # Improvements never fail.
        ("judge", [0.0] * 40, STABLE, POLICY, Verdict.PASS, Verdict.PASS, "no drop beyond the margin"),
        # Absolute mode: ADK semantics, a failing case fails, whatever the baseline did.
        ("judge", [0.0] + STABLE[1:], [0.0] + STABLE[1:], GatePolicy(mode="absolute"), Verdict.FAIL, Verdict.FAIL, "1 of 40 cases below"),
    ],
)
def test_verdict_rules(criterion, base, cur, policy, verdict, status, reason):
    c = _verdict(scores(criterion, base), scores(criterion, cur), policy)
    s = c.suites[0]
    assert s.verdict is verdict, s.reasons
    assert c.verdict is (Verdict.FAIL if verdict is Verdict.FAIL else verdict)
    assert s.criteria[0].status is status
    assert any(reason in r for r in s.reasons + s.criteria[0].reasons), (s.reasons, s.criteria[0].reasons)


def test_regression_statistics_fields():
    c = _verdict(scores("judge", STABLE), scores("judge", [0.0] * 10 + STABLE[10:]))
    crit_ = c.suites[0].criteria[0]
    assert (crit_.n_pairs, crit_.baseline_mean, crit_.current_mean, crit_.delta) == (40, 1.0, 0.75, -0.25)
    # The drop test against the margin 0.02, with the run-to-run sd 0.02 assumed (no history).
    p, se, _ = drop_test([-1.0] * 10 + [0.0] * 30, 0.02, 2 * 0.02**2)
    assert crit_.p_value == crit_.p_adjusted == p < 0.01
    assert (crit_.run_sd, crit_.history) == (0.02, 0)
    assert crit_.se == pytest.approx(se)
    assert crit_.ci_low < crit_.lower_bound < -0.25 < crit_.ci_high < 0
    assert crit_.judge and crit_.basis == "scores"
    assert c.mode == "regression" and not c.config_changed
    same = _verdict(scores("judge", STABLE), scores("judge", STABLE))
    assert same.verdict is Verdict.PASS and same.reasons == []
    assert same.suites[0].reasons == ["no drop beyond the margin in 1 criterion over 40 cases compared"]


def _sampled(results: RunResults, sampling: str | None) -> RunResults:
    out = copy.deepcopy(results)
    for s in out.suites:
        for name, spec in s.criteria.items():
            if spec.judge:
                spec.sampling = sampling  # type: ignore[assignment]
    return out


@pytest.mark.parametrize("base_rule, cur_rule", [(None, "early_stop"), ("early_stop", None), ("early_stop", "early_stop"), (None, None)])
def test_samples_drawn_by_different_rules_compare_on_scores_and_say_so(base_rule, cur_rule):
    # The baseline's samples split 3-2 (mean 0.6), the current's were stopped at 3-0 (mean 1.0):
    # the same majority verdicts; on sample means the current would look better than it is.
    base = _sampled(one({f"c{i:03d}": {"judge": [1.0, 1.0, 0.0, 1.0, 0.0]} for i in range(30)}), base_rule)
    cur = _sampled(one({f"c{i:03d}": {"judge": [1.0, 1.0, 1.0]} for i in range(30)}), cur_rule)
    comp = compare(base, cur, POLICY).suites[0].criteria[0]
    mixed = base_rule != cur_rule
    assert comp.basis == ("scores" if mixed else "samples")
    assert (comp.baseline_mean, comp.current_mean) == ((1.0, 1.0) if mixed else (0.6, 1.0))
    said = [r for r in comp.reasons if "judge samples were drawn differently" in r]
    assert len(said) == (1 if mixed else 0)
    if mixed:
        shown = {None: "every sample", "early_stop": "early_stop"}
        assert f"(baseline: {shown[base_rule]}, current: {shown[cur_rule]})" in said[0]
        assert "set judge.early_stop the same for both runs" in said[0]


def test_holm_spans_all_criteria_of_all_suites():
    # Two suites, two criteria each, all four dropping 5 of 40: the same p each; Holm: 4 * p.
    drop = [0.0] * 5 + STABLE[5:]
    both = lambda v: {f"c{i:03d}": {"judge": v[i], "judge2": v[i]} for i in range(40)}  # noqa: E731
    base = run(suite("s", both(STABLE)), suite("t", both(STABLE)))
    cur = run(suite("s", both(drop)), suite("t", both(drop)))
    c = compare(base, cur, GatePolicy(alpha=0.1))
    ps = [(x.p_value, x.p_adjusted) for s in c.suites for x in s.criteria]
    p = ps[0][0]
    assert 0.1 / 4 < p < 0.1 / 2
    assert ps == [(p, pytest.approx(4 * p))] * 4
    assert c.verdict is Verdict.INCONCLUSIVE  # 4p >= 0.1, and 40 cases cannot rule out 0.1; each alone would have failed
    assert compare(run(suite("s", both(STABLE))), run(suite("s", both(drop))), GatePolicy(alpha=0.1)).verdict is Verdict.FAIL


def test_no_baseline_is_absolute():
    cur = one(scores("tool", [1.0, 0.0]))
    c = compare(None, cur, GatePolicy(mode="regression"))
    assert c.mode == "absolute" and c.baseline is None
    assert c.reasons[0] == "no baseline found: absolute thresholds only"
    assert c.verdict is Verdict.FAIL
    assert c.suites[0].reasons == ["tool: 1 of 2 cases below the threshold 0.5"]
    assert compare(None, one(scores("tool", [1.0, 1.0])), POLICY).verdict is Verdict.PASS


def test_absolute_mode_with_baseline_still_lists_regressions():
    base = one(scores("judge", [1.0, 1.0, 1.0]))
    cur = one(scores("judge", [1.0, 1.0, 0.0]))
    c = compare(base, cur, GatePolicy(mode="absolute"), baseline_info=BaselineInfo("abc", "def", 2, None))
    assert c.mode == "absolute" and c.verdict is Verdict.FAIL
    assert [(x.key.eval_id, x.kind) for x in c.suites[0].changes] == [("c002", "regressed")]
    assert 0 < c.suites[0].criteria[0].p_value < 1  # computed, for information
    assert c.baseline == BaselineInfo("abc", "def", 2, None)


def test_not_evaluated_is_skipped_and_the_suite_policy_decides():
    base = {"a": {"tool": 1.0, "judge": 1.0}, "b": {"tool": 1.0, "judge": 1.0}, "c": {"tool": 1.0, "judge": 1.0}}
    cur = {"a": {"tool": 1.0, "judge": None}, "b": {"tool": 1.0, "judge": None}, "c": {"judge": None}}
    # A passing deterministic criterion must not hide a judge that was never heard: the
    # policy applies to every case with a NOT_EVALUATED criterion (warn: INCONCLUSIVE).
    for policy, verdict in (("warn", Verdict.INCONCLUSIVE), ("ignore", Verdict.PASS), ("fail", Verdict.FAIL)):
        c = compare(one(base, policy=policy), one(cur, policy=policy), POLICY)
        s = c.suites[0]
        assert s.verdict is verdict, (policy, s.reasons)
        assert s.skipped_criteria == ["judge: no judge credentials (3 cases NOT_EVALUATED)"]
        judge = next(x for x in s.criteria if x.criterion == "judge")
        assert judge.n_pairs == 0 and judge.p_value is None
        assert "not compared: no case was evaluated in both runs" in judge.reasons
        if policy == "fail":
            assert "3 of 3 cases with criteria NOT_EVALUATED, and the suite's not_evaluated policy is `fail`" in s.reasons
        # The absolute mode respects the same policy, through the suite's status.
        assert compare(None, one(cur, policy=policy), POLICY).suites[0].verdict is verdict


def test_not_evaluated_reasons_grouped_without_invocation_numbers():
    res = one({"a": {"judge": 1.0}})
    case = res.suites[0].cases[0]
    case.criteria["judge"] = CriterionResult(
        score=None, status=Status.NOT_EVALUATED, threshold=0.5, error="turn 1: timeout; turn 2: timeout"
    )
    assert compare(None, res, POLICY).suites[0].skipped_criteria == ["judge: timeout (1 case NOT_EVALUATED)"]


def test_config_changed_new_and_removed_criteria():
    base = one({"a": {"tool": 1.0, "old": 1.0}, "b": {"tool": 1.0, "old": 1.0}})
    cur = run(suite("s", {"a": {"tool": 1.0, "new": 0.0}, "b": {"tool": 1.0, "new": 1.0}}), config="other")
    c = compare(base, cur, POLICY)
    assert c.config_changed
    assert "the config changed since the baseline: compared on the criteria both share" in c.reasons
    s = c.suites[0]
    new = next(x for x in s.criteria if x.criterion == "new")
    assert new.n_pairs == 0 and new.status is Verdict.FAIL and new.baseline_mean is None and new.current_mean == 0.5
    assert s.verdict is Verdict.FAIL
    assert "new: new criterion, 1 of 2 cases below the threshold 0.5" in s.reasons
    assert "not in this run, not compared: old" in s.reasons


def test_threshold_change_is_stated():
    base = one(scores("tool", [0.9, 0.9]), thresholds={"tool": 0.8})
    cur = one(scores("tool", [0.9, 0.9]), thresholds={"tool": 0.95})
    s = compare(base, cur, GatePolicy(deterministic_flips="fail")).suites[0]
    assert "threshold changed from 0.8 to 0.95" in s.criteria[0].reasons
    assert s.verdict is Verdict.FAIL  # both cases now fail the raised bar: deterministic flips
    assert compare(base, cur, POLICY).suites[0].verdict is Verdict.PASS  # the scores did not drop


def test_new_removed_and_empty_suites():
    base = run(suite("kept", scores("tool", [1.0])), suite("gone", scores("tool", [1.0, 1.0])))
    cur = run(suite("kept", scores("tool", [1.0])), suite("fresh", scores("tool", [0.0])), suite("empty", {}))
    c = compare(base, cur, POLICY)
    by = {s.name: s for s in c.suites}
    assert [s.name for s in c.suites] == ["kept", "fresh", "empty", "gone"]
    assert by["kept"].verdict is Verdict.PASS
    assert by["fresh"].verdict is Verdict.FAIL
    assert by["fresh"].reasons[0] == "new suite (not in the baseline): judged on absolute thresholds"
    assert by["empty"].verdict is Verdict.ERROR and by["empty"].reasons == ["the suite has no cases"]
    assert by["gone"].verdict is Verdict.PASS and by["gone"].removed == [K("c000", "gone"), K("c001", "gone")]
    assert c.verdict is Verdict.FAIL
    assert "empty: ERROR: the suite has no cases" in c.reasons
    # ERROR alone fails overall too.
    assert compare(None, run(suite("empty", {})), POLICY).verdict is Verdict.FAIL


# --- broken stable cases --------------------------------------------------------------------

GOOD = [1.0] * 5
BAD = [0.0] * 5


def _ledger(eval_ids, runs):
    return {ledger_key(K(e), "judge"): list(runs) for e in eval_ids}


def _binomial_sf(k: int, n: int, q: float) -> float:
    return sum(math.comb(n, j) * q**j * (1 - q) ** (n - j) for j in range(k, n + 1))


def test_stable_cases_breaking_are_tested_together():
    ids = [f"c{i:03d}" for i in range(40)]
    base = one({e: {"judge": GOOD} for e in ids})
    ledger = _ledger(ids, [1.0] * 10)  # 40 cases x 10 runs, never a break
    # Without a single break in 400 case-runs every stable case's hazard is (0 + 1) / (400 + 2);
    # the number breaking by chance is binomial. One of 40 breaking: p = 1 - (401/402)^40.
    one_broken = compare(base, one({e: {"judge": BAD if e == "c007" else GOOD} for e in ids}), POLICY, ledger=ledger)
    crit_ = one_broken.suites[0].criteria[0]
    assert (crit_.stable, crit_.broken, crit_.expected_breaks) == (40, [K("c007")], pytest.approx(40 / 402))
    assert crit_.breakage_p == pytest.approx(_binomial_sf(1, 40, 1 / 402))
    (change,) = one_broken.suites[0].changes
    assert (change.key, change.kind, change.criteria) == (K("c007"), "broken_stable", {"judge": (1.0, 0.0)})
    assert not any("broke" in r for r in one_broken.suites[0].reasons)  # listed, decides nothing
    assert any("not significant" in r for r in crit_.reasons)
    # Three of 40 together: strong evidence; Holm over the drop test and this one.
    cur = one({e: {"judge": BAD if e in ("c001", "c007", "c009") else GOOD} for e in ids})
    three = compare(base, cur, POLICY, ledger=ledger)
    s = three.suites[0]
    crit_ = s.criteria[0]
    assert crit_.breakage_p == pytest.approx(_binomial_sf(3, 40, 1 / 402))
    assert crit_.breakage_p_adjusted == pytest.approx(2 * crit_.breakage_p)
    assert s.verdict is Verdict.FAIL, s.reasons
    assert any(r.startswith("judge: 3 of 40 stable cases broke") and "set/c001, set/c007, set/c009" in r for r in s.reasons)
    assert [c.kind for c in s.changes] == ["broken_stable"] * 3
    assert all(c.p_value == crit_.breakage_p for c in s.changes)
    # Without the ledger nothing is known to be stable: the drop test alone decides.
    assert compare(base, cur, POLICY).suites[0].criteria[0].stable == 0


@pytest.mark.parametrize(
    "history, now, tested, broken",
    [
        ([1.0] * 4, BAD, 0, 0),  # 4 runs are not enough to be stable
        ([1.0] * 4 + [None], BAD, 0, 0),  # NOT_EVALUATED runs do not count
        ([1.0] * 4 + [0.4], BAD, 0, 0),  # failed once: not stable
        ([0.8] * 10, BAD, 40, 1),  # a majority passed in every run: stable
        # 4 of 5 samples fail: the vote flips, but the case did not fail every sample.
        ([1.0] * 5, [0.0, 0.0, 0.0, 1.0, 0.0], 40, 0),
    ],
)
def test_what_is_stable_and_what_is_broken(history, now, tested, broken):
    ids = [f"c{i:03d}" for i in range(40)]
    base = one({e: {"judge": GOOD} for e in ids})
    cur = one({e: {"judge": now if e == "c000" else GOOD} for e in ids})
    crit_ = compare(base, cur, POLICY, ledger=_ledger(ids, history)).suites[0].criteria[0]
    assert (crit_.stable, len(crit_.broken)) == (tested, broken)


def test_a_flaky_history_makes_breaks_expected():
    ids = [f"c{i:03d}" for i in range(40)]
    base = one({e: {"tool": 1.0} for e in ids})
    # Ten cases broke twice in ten runs; thirty never did. The ten are not stable; the thirty
    # are, and the history says breaks happen: two of them breaking is weaker evidence.
    ledger = {ledger_key(K(e), "tool"): ([0.0, 0.0] + [1.0] * 8 if i < 10 else [1.0] * 10) for i, e in enumerate(ids)}
    quiet = {ledger_key(K(e), "tool"): [1.0] * 10 for e in ids}
    cur = one({e: {"tool": 0.0 if e in ("c020", "c021") else 1.0} for e in ids})
    flaky = compare(base, cur, POLICY, ledger=ledger).suites[0].criteria[0]
    calm = compare(base, cur, POLICY, ledger=quiet).suites[0].criteria[0]
    assert (flaky.stable, calm.stable) == (30, 40)
    assert flaky.breakage_p > 10 * calm.breakage_p


def test_a_continuous_criterion_weighs_each_break_by_its_own_chance():
    """Two stable cases fall under the threshold. Ten sit just above it, thirty far above,
    and the near ones dipped under now and then in history: two far ones falling is strong
    evidence, two near ones weak, though both are two breaks of the same stable cases."""
    rng = random.Random(5)
    ids = [f"c{i:03d}" for i in range(40)]
    level = {e: 0.58 if i < 10 else 0.95 for i, e in enumerate(ids)}

    def values(fallen=()):
        return scores("score", [0.3 if e in fallen else level[e] + rng.gauss(0, 0.005) for e in ids])

    ledger: dict = {}
    for t in range(10):
        baseline = one(values())
        ledger = update_ledger(ledger, baseline, 10)
    # The near cases' histories: a dip of 0.05, still above the threshold in
    # these stable ones (two near cases dipped under it and are not stable).
    for i, e in enumerate(ids[:10]):
        history = ledger[value_key(K(e), "score")]
        history[i % 10] -= 0.05 if i >= 2 else 0.12
        ledger[ledger_key(K(e), "score")][i % 10] = 1.0 if history[i % 10] >= 0.5 else 0.0
    far = compare(baseline, one(values({"c020", "c021"})), POLICY, ledger=ledger).suites[0]
    near = compare(baseline, one(values({"c002", "c003"})), POLICY, ledger=ledger).suites[0]
    f, n = far.criteria[0], near.criteria[0]
    assert (f.stable, n.stable, f.hazards_from, n.hazards_from) == (38, 38, "values", "values")
    assert len(f.broken) == len(n.broken) == 2
    assert f.expected_breaks == pytest.approx(n.expected_breaks)  # the same stable cases
    assert f.breakage_p < 0.001 < n.breakage_p and n.breakage_p > 5 * f.breakage_p
    assert any("each case's chance its own, from its level and dips in history" in r for r in f.reasons)
    # A pass/fail criterion's stable cases all have the same chance for the same streak.
    flat = compare(one(scores("tool", [1.0] * 40)), one(scores("tool", [0.0, 0.0] + [1.0] * 38)), POLICY,
                   ledger={ledger_key(K(e), "tool"): [1.0] * 10 for e in ids}).suites[0].criteria[0]
    assert flat.hazards_from == "outcomes"


def test_agent_runs_are_the_samples_of_a_deterministic_criterion():
    ids = [f"c{i:03d}" for i in range(10)]
    base = _with_runs(one({e: {"traj": 1.0} for e in ids}), {e: [1.0, 1.0, 1.0] for e in ids})
    # c005 now fails all 3 runs; c006 fails 1 of 3 (agent nondeterminism, not breakage).
    cur_runs = {e: [1.0, 1.0, 1.0] for e in ids} | {"c005": [0.0, 0.0, 0.0], "c006": [1.0, 0.0, 1.0]}
    cur = _with_runs(one({e: {"traj": 1.0} for e in ids}), cur_runs)
    assert case_samples(cur.suites[0].cases[5].criteria["traj"]) == [0.0, 0.0, 0.0]
    assert outcome(cur.suites[0].cases[6].criteria["traj"], judge=False) == pytest.approx(2 / 3)
    ledger = {ledger_key(K(e), "traj"): [1.0] * 10 for e in ids}
    c = compare(base, cur, POLICY, ledger=ledger)
    crit_ = c.suites[0].criteria[0]
    assert crit_.broken == [K("c005")]  # c006 passed 2 of 3 runs: not broken
    assert crit_.breakage_p == pytest.approx(_binomial_sf(1, 10, 1 / 102))
    # The ledger records the share of runs that passed.
    new = update_ledger(None, cur, 10)
    assert new[ledger_key(K("c006"), "traj")] == [pytest.approx(2 / 3)]


def test_run_to_run_variation_from_history_keeps_a_wobble_calm():
    """The issue's false failure: one run's judge is a little stricter for every case at
    once. With the ledger's values the gate allows for it; told there is none, it fails."""
    rng = random.Random(11)
    ids = [f"c{i:03d}" for i in range(200)]
    level = {e: rng.uniform(0.6, 1.0) for e in ids}
    ledger: dict = {}
    baseline = None
    for mood in (0.03, -0.04, 0.05, -0.02, 0.04, -0.05, 0.0, 0.03, -0.03, 0.04):  # sd ~0.035 per run
        baseline = one({e: {"judge": [1.0 if rng.random() < min(1, level[e] + mood) else 0.0 for _ in range(5)]} for e in ids})
        ledger = update_ledger(ledger, baseline, 10)
    cur = one({e: {"judge": [1.0 if rng.random() < level[e] - 0.05 else 0.0 for _ in range(5)]} for e in ids})
    with_history = compare(baseline, cur, POLICY, ledger=ledger).suites[0].criteria[0]
    assert with_history.history == 10 and with_history.run_sd > 0.02
    assert with_history.status is not Verdict.FAIL, with_history.reasons
    # The same pair, told the run-to-run variation is nil: the wobble reads as a drop.
    blind = compare(baseline, cur, GatePolicy(run_sd_judge=0.0)).suites[0].criteria[0]
    assert blind.status is Verdict.FAIL and blind.p_value < with_history.p_value / 100


# --- the default branch's level ------------------------------------------------------------


def test_level_differences_by_hand():
    # Levels: (0.4 + 0.5 + 0.6) / 3 = 0.5 and (0.6 + 0.7 + 0.8) / 3 = 0.7, so both cases sit on them.
    earlier = [[0.4, 0.5], [0.6, 0.7]]
    diffs, run_var, runs = level_differences([0.5, 0.7], [0.6, 0.8], earlier, 1e-4)
    assert diffs == pytest.approx([0.0, 0.0]) and run_var == pytest.approx(1e-4 * (1 + 1 / 3)) and runs == 3
    with pytest.raises(ValueError):
        level_differences([0.5], [0.6], [[0.4]], 1e-4)


def test_level_start_finds_where_the_branch_last_moved():
    steady = [0.70, 0.72, 0.69, 0.71, 0.70, 0.72, 0.69, 0.71]
    assert level_start(steady) == 0
    assert level_start(steady[:5] + [0.80, 0.82, 0.81]) == 5  # the last three runs sit 0.1 higher
    assert level_start(steady[:7] + [0.80]) == 7  # the baseline run alone
    assert level_start([0.7, 0.9, 0.7]) == 0  # 3 runs: no spread to judge a split by
    # The split's t on the pooled spread, against t(0.995, L - 2): here L = 6, split after 3.
    means = [0.70, 0.71, 0.72, 0.75, 0.76, 0.77]
    t = 0.05 / math.sqrt((0.0002 + 0.0002) / 4 * (1 / 3 + 1 / 3))
    assert t > t_quantile(0.995, 4) and level_start(means) == 3
    assert level_start([0.70, 0.71, 0.72, 0.73, 0.74, 0.75]) == 0  # a slow drift is no split at 1%


def _moody(moods: list[float], now: float, drop: float = 0.0, seed: int = 11):
    """A judge criterion over 200 cases: one default-branch run per mood (every case's
    sample pass rate moved by it), the last the baseline; then the pull request's run."""
    rng = random.Random(seed)
    ids = [f"c{i:03d}" for i in range(200)]
    level = {e: rng.uniform(0.6, 0.95) for e in ids}
    draw = lambda mood: one({e: {"judge": [1.0 if rng.random() < level[e] + mood else 0.0 for _ in range(5)]} for e in ids})  # noqa: E731
    ledger: dict = {}
    for mood in moods:
        baseline = draw(mood)
        ledger = update_ledger(ledger, baseline, 10)
    return baseline, draw(now - drop), ledger


MOODS = [0.03, -0.04, 0.05, -0.02, 0.04, -0.05, 0.0, 0.03, -0.03]  # sd ~0.035 per run


def test_a_lenient_baseline_run_is_not_taken_for_the_default_branchs_level():
    """The baseline's judge was lenient that day (+0.06): the pull request's ordinary run
    reads as a 0.06 drop against it alone, which one run cannot tell from 0.1. Against the
    level of the default branch's last 10 runs it sits where it always does: PASS."""
    baseline, current, ledger = _moody(MOODS + [0.06], now=0.0)
    comp = compare(baseline, current, POLICY, ledger=ledger).suites[0].criteria[0]
    assert comp.delta < -0.04 and comp.lower_bound < -0.1  # alone, the baseline would leave it open
    assert (comp.level_runs, comp.level_cases, comp.level_shift) == (10, 200, False)
    assert abs(comp.level_delta) < 0.02 and comp.level_lower_bound > -0.1
    assert comp.status is Verdict.PASS, comp.reasons
    assert any("the default branch's level (its last 10 runs, baseline included, over the 200 cases they share)" in r for r in comp.reasons)


def test_a_strict_run_is_inconclusive_against_the_level_and_says_so():
    baseline, current, ledger = _moody(MOODS + [0.0], now=-0.08)
    result = compare(baseline, current, POLICY, ledger=ledger).suites[0]
    comp = result.criteria[0]
    assert comp.level_delta < -0.05 and comp.level_lower_bound < -0.1 and not comp.level_shift
    assert comp.status is Verdict.INCONCLUSIVE and result.verdict is Verdict.INCONCLUSIVE
    text = next(r for r in comp.reasons if "cannot rule out" in r)
    assert f"{-comp.level_delta:.3f} below the default branch's level" in text
    assert f"95% lower bound {comp.level_lower_bound:.3f}" in text


def test_a_move_of_the_default_branch_starts_a_new_level():
    """The default branch moved (its runs 0.25 lower before): runs before the move would drag
    the level down and hide a drop, so the level spans the runs since; a move at the last run
    leaves the baseline run alone."""
    moved = [m - 0.25 for m in MOODS[:7]] + MOODS[7:] + [0.0]
    baseline, current, ledger = _moody(moved, now=0.0)
    comp = compare(baseline, current, POLICY, ledger=ledger).suites[0].criteria[0]
    assert (comp.level_runs, comp.level_shift) == (3, True) and comp.status is Verdict.PASS
    assert abs(comp.level_delta) < 0.02  # against all 10 runs it would read about 0.17 above
    baseline, current, ledger = _moody(moved, now=0.0, drop=0.06)
    comp = compare(baseline, current, POLICY, ledger=ledger).suites[0].criteria[0]
    # The run-to-run sd is measured around each level (the moods' own sd, about 0.035), not
    # across the move (0.126); one run still cannot rule a 0.06 drop in or out.
    assert comp.run_moved == 3 and comp.run_sd < 0.05
    assert any("around the default branch's level before and after it moved 3 runs back" in r for r in comp.reasons)
    assert comp.status is Verdict.INCONCLUSIVE and comp.level_delta < -0.04
    assert any("baseline included, since it moved 3 runs back, over the 200 cases they share)" in r for r in comp.reasons)

    baseline, current, ledger = _moody([m - 0.25 for m in MOODS] + [0.0], now=0.0, drop=0.06)
    comp = compare(baseline, current, POLICY, ledger=ledger).suites[0].criteria[0]
    assert (comp.level_runs, comp.level_shift) == (1, True) and comp.level_delta == pytest.approx(comp.delta)
    assert comp.status is Verdict.INCONCLUSIVE, comp.reasons
    assert any("the default branch moved at its last run, so the baseline run alone is its level" in r for r in comp.reasons)


# --- partial drops of continuous criteria --------------------------------------------------


def test_case_scales_by_hand():
    # Three cases over four runs; run effects are the median deviation of each run's cases.
    rows = [[0.5, 0.6, 0.5, 0.6], [0.8, 0.8, 0.8, 0.8], [0.2, 0.3, 0.2, 0.3]]
    # Case means 0.55, 0.8, 0.25; deviations per run: (-0.05, 0, -0.05), (0.05, 0, 0.05), ...:
    # the medians are -0.05, 0.05, -0.05, 0.05, so cases 1 and 3 fit exactly and case 2 is off
    # by 0.05 every run: variances 0, 0.01/3, 0; median 0; pulled toward it by 3 pseudo-runs.
    assert case_scales(rows) == pytest.approx([0.0, math.sqrt((3 * 0.01 / 3) / 6), 0.0])
    with pytest.raises(ValueError):
        case_scales([[0.5, 0.6], [0.5]])


def test_binomial_half_sf_against_enumeration():
    for n in range(0, 12):
        for k in range(-1, n + 2):
            expected = sum(math.comb(n, j) for j in range(max(k, 0), n + 1)) / 2**n if k <= n else 0.0
            assert binomial_half_sf(k, n) == pytest.approx(expected)


def test_lopsided_test_counts_moves_beyond_each_cases_own_spread():
    scales = [0.01] * 20 + [0.1] * 20
    # Every case moved up by 0.05 (the run's shift); then cases 0-5 (spread 0.01) fell 0.05
    # more: beyond 2.5 * 0.01 * sqrt 2 = 0.035. Case 20 (spread 0.1) fell 0.2: within its own
    # 0.35. Case 7 rose 0.04 beyond the shift.
    diffs = [0.05] * 40
    for i in range(6):
        diffs[i] = 0.0
    diffs[20] = -0.15
    diffs[7] = 0.09
    p, fell, rose = lopsided_test(diffs, scales)
    assert (fell, rose) == (6, 1) and p == pytest.approx(binomial_half_sf(6, 7))
    # A margin tolerates falls up to it beyond the spread, not rises.
    assert lopsided_test(diffs, scales, margin=0.02)[1:] == (0, 1)
    # Symmetric moves: no evidence either way.
    assert lopsided_test([0.1, -0.1, 0.1, -0.1, 0.0, 0.0], [0.01] * 6)[0] == pytest.approx(binomial_half_sf(2, 4))


def test_steady_weights_by_hand():
    # 1 / scale, scaled to a mean of 1: a case that moves a tenth as much weighs ten times more.
    assert steady_weights([0.01, 0.01, 0.01, 0.1]) == pytest.approx([40 / 31, 40 / 31, 40 / 31, 4 / 31])
    assert steady_weights([0.0, 0.0]) == pytest.approx([1.0, 1.0])  # replayed outputs: no spread anywhere


def test_steady_drop_test_by_hand():
    diffs, scales = [-0.02, -0.01, 0.3, 0.0], [0.01, 0.01, 0.01, 0.1]
    weights = [40 / 31, 40 / 31, 40 / 31, 4 / 31]
    unit = [s * math.sqrt(2) for s in scales]
    z = [d / u for d, u in zip(diffs, unit)]
    psi = [w * max(-2.5, min(2.5, x)) for w, x in zip(weights, z)]  # the 0.3 rise counts 2.5 (weighted), not 21
    t = sum(psi) / math.sqrt(sum(x * x for x in psi))
    assert steady_drop_test(diffs, scales) == pytest.approx(1 - t_sf(t, 3))  # n - 1 df without a run part
    # A run-level variance (of the mean weighted, clipped value per case and run) adds n^2 times itself, with its df.
    within, run = sum(x * x for x in psi) / 16, 0.02
    df = (within + run) ** 2 / (within**2 / 3 + run**2 / 9)
    assert steady_drop_test(diffs, scales, run_var=0.02, run_df=9) == pytest.approx(1 - t_sf(sum(psi) / math.sqrt(sum(x * x for x in psi) + 16 * 0.02), df))


def test_steady_run_variance_by_hand():
    # Each value in units of its case's scale from the case's median, clipped at 2.5 (case 2's
    # off run, -0.3 or 30 of its units, counts -2.5), weighted 1 / scale with mean 1 (0.6, 1.2,
    # 1.2); then the run-level variance of those.
    rows = [[0.50, 0.52, 0.48, 0.50], [0.80, 0.81, 0.79, 0.50], [0.30, 0.30, 0.32, 0.30]]
    scales = [0.02, 0.01, 0.01]
    units = [[0.0, 0.6, -0.6, 0.0], [0.6, 1.8, -0.6, -3.0], [0.0, 0.0, 2.4, 0.0]]
    var, df, _ = run_variance(units)
    assert steady_run_variance(rows, scales) == pytest.approx((var, df))
    with pytest.raises(ValueError):
        steady_run_variance(rows, scales[:2])


def test_steady_run_variance_sees_a_drift_and_not_a_flaky_cases_off_runs():
    """Off runs of flaky cases move the run means as a drift would; in each case's own units,
    clipped, they do not. A drift that moves every case is seen in both."""
    rng = random.Random(3)
    n, runs = 200, 9
    spread = [rng.uniform(0.01, 0.04) for _ in range(n)]
    flaky = [i < 30 for i in range(n)]

    def rows_of(drift: float) -> list[list[float]]:
        shifts = [rng.gauss(0, drift) for _ in range(runs)]
        return [
            [0.7 + shifts[t] + rng.gauss(0, spread[i]) - (rng.uniform(0.2, 0.5) if flaky[i] and rng.random() < 0.3 else 0.0) for t in range(runs)]
            for i in range(n)
        ]

    quiet = [steady_run_variance(rows, case_scales(rows))[0] for rows in (rows_of(0.0) for _ in range(10))]
    raw = [run_variance(rows)[0] for rows in (rows_of(0.0) for _ in range(10))]
    drifting = [steady_run_variance(rows, case_scales(rows))[0] for rows in (rows_of(0.01) for _ in range(10))]
    # In the test's units (a shift r counts r / scale per case, weighted 1 / scale with mean 1),
    # a drift of sd 0.01 is a variance near 0.25 (measured 0.23: the most precise cases clip);
    # without a drift, about 70x less.
    assert sum(drifting) / 10 > 0.1 and sum(quiet) < sum(drifting) / 20, (quiet, drifting)
    # The raw values' run-level variance, in the same units (x (mean(1/scale^2) / mean(1/scale))^2),
    # is larger (measured 2.2x): the flaky cases' off runs pass for a drift.
    per_unit = sum(1 / s**2 for s in spread) / sum(1 / s for s in spread)
    assert sum(raw) * per_unit**2 > 1.5 * sum(quiet), (raw, quiet)


def _rouge_world(rng: random.Random, n: int, drift: float, flaky: float):
    """A continuous criterion: case levels, own spreads, a run-wide drift, and flaky cases
    that now and then fall far (an agent's off run)."""
    level = [rng.uniform(0.55, 0.95) for _ in range(n)]
    spread = [rng.uniform(0.01, 0.04) for _ in range(n)]
    off = [rng.uniform(0.1, 0.4) if rng.random() < flaky else 0.0 for _ in range(n)]

    def draw(drop: set[int] = frozenset()) -> dict:  # type: ignore[assignment]
        shift = rng.gauss(0, drift)
        values = []
        for i in range(n):
            v = level[i] + shift + rng.gauss(0, spread[i]) - (rng.uniform(0.2, 0.5) if rng.random() < off[i] else 0.0)
            values.append(min(1.0, max(0.0, v - (0.1 if i in drop else 0.0))))
        return scores("rouge", values)

    return draw


def _history(draw, runs: int = 10) -> tuple[RunResults, dict]:
    """(the last run, the ledger of all of them): `runs` default-branch runs of `draw`."""
    ledger: dict = {}
    for _ in range(runs):
        baseline = one(draw())
        ledger = update_ledger(ledger, baseline, 10)
    return baseline, ledger


def test_some_cases_falling_is_caught_through_a_drift_that_hides_it_from_the_mean():
    """A quarter of the cases fell by 0.1 (a mean drop of 0.025) in a run whose serving
    drifted: the mean drop test allows for the drift and cannot tell; the cases that fell
    beyond their own spread, with as many rising as an unchanged agent would, can."""
    rng = random.Random(5)
    draw = _rouge_world(rng, 200, drift=0.012, flaky=0.1)
    baseline, ledger = _history(draw)
    fell = compare(baseline, one(draw(set(range(0, 200, 4)))), POLICY, ledger=ledger).suites[0]
    comp = fell.criteria[0]
    assert comp.partial_cases == 200 and comp.fell > 20 * max(comp.rose, 1) / 4, (comp.fell, comp.rose)
    assert comp.partial_p_adjusted is not None and comp.partial_p_adjusted < POLICY.alpha
    assert fell.verdict is Verdict.FAIL
    assert any(r.startswith("rouge: some cases fell:") and f"{SHIFT_Z:g} times their own run-to-run spread" in r for r in fell.reasons)
    # The drift (sd 0.012 on cases of spread 0.01-0.04) is what the steady-case test allowed
    # for, in units of the cases' spreads, measured on the 9 runs before the baseline's.
    assert comp.partial_runs == 9 and 0.2 < comp.steady_run_sd < 1.0, comp.steady_run_sd
    assert any(f"allowing runs to move them by {comp.steady_run_sd:.2f} of a spread (sd, from 9 runs)" in r for r in fell.reasons)
    # The comment's criterion row shows the p-value of the test that decided it (here breakage: cases fell below 0.5).
    current = one(draw(set(range(0, 200, 4))))
    comparison = compare(baseline, current, POLICY, ledger=ledger)
    comp = comparison.suites[0].criteria[0]
    row = next(line for line in render_comment(comparison, current).splitlines() if line.startswith("| rouge"))
    deciding = min(p for p in (comp.p_adjusted, comp.breakage_p_adjusted, comp.partial_p_adjusted) if p is not None)
    assert deciding < comp.p_adjusted  # not the drop test's
    shown = "p&lt;0.001" if deciding < 0.001 else f"p={deciding:.3f}"
    assert f"**FAIL** ({shown})" in row, row
    # Without the ledger there are no spreads: no partial-drop test.
    assert compare(baseline, current, POLICY).suites[0].criteria[0].partial_p is None


def test_an_unchanged_agent_rarely_looks_lopsided():
    """Twenty unchanged runs against one history, with drift and flaky cases: the
    partial-drop test's p is spread out and never below alpha."""
    rng = random.Random(9)
    draw = _rouge_world(rng, 200, drift=0.01, flaky=0.15)
    baseline, ledger = _history(draw)
    ps = []
    for _ in range(20):
        comp = compare(baseline, one(draw()), POLICY, ledger=ledger).suites[0].criteria[0]
        assert comp.partial_cases == 200 and comp.partial_p is not None
        ps.append(comp.partial_p)
    assert min(ps) > POLICY.alpha and max(ps) > 0.5, ps


def test_the_baselines_own_run_does_not_measure_spreads():
    """A case's spread comes from the runs before the baseline's: measured with it, a case
    whose baseline was an outlier would look ordinary when the pull request's run falls."""
    keys = [K(f"c{i:03d}") for i in range(12)]
    runs = [[0.5 + 0.01 * ((i + t) % 3) for i in range(12)] for t in range(5)]
    ledger = {value_key(k, "rouge"): [run[i] for run in runs] for i, k in enumerate(keys)}
    chosen, rows = own_histories(keys, "rouge", ledger, runs[-1])  # the ledger's last run is the baseline's
    assert chosen == list(range(12)) and rows == [[run[i] for run in runs[:-1]] for i in range(12)]
    chosen, rows = own_histories(keys, "rouge", ledger, runs[2])  # the ledger has two newer runs
    assert rows == [[runs[t][i] for t in (0, 1, 3, 4)] for i in range(12)]
    other = [0.9] * 12  # a baseline the ledger does not hold: every run measures
    assert own_histories(keys, "rouge", ledger, other)[1] == [[run[i] for run in runs] for i in range(12)]
    assert own_histories(keys[:3], "rouge", ledger, other) == ([], [])  # fewer than PARTIAL_MIN_CASES


def test_the_partial_drop_test_is_for_continuous_criteria_that_are_not_judged():
    ids = [f"c{i:03d}" for i in range(40)]
    binary = {e: {"traj": 0.0 if e == "c003" else 1.0} for e in ids}
    base = one(binary)
    ledger = update_ledger(None, base, 10)
    for _ in range(5):
        ledger = update_ledger(ledger, base, 10)
    assert compare(base, one(binary), POLICY, ledger=ledger).suites[0].criteria[0].partial_p is None
    judged = {e: {"judge": [1.0, 1.0, 0.0]} for e in ids}
    ledger = update_ledger(None, one(judged), 10)
    for _ in range(5):
        ledger = update_ledger(ledger, one(judged), 10)
    assert compare(one(judged), one(judged), POLICY, ledger=ledger).suites[0].criteria[0].partial_p is None


# --- the ledger ---------------------------------------------------------------------------


def test_update_ledger_appends_trims_and_drops():
    res = one({"a": {"judge": [1.0, 1.0, 0.0, 1.0], "tool": 0.0}, "b": {"judge": None}})
    old = {
        ledger_key(K("a"), "judge"): [0.1, 0.2, 0.3],
        ledger_key(K("a"), "tool"): [1.0],
        ledger_key(K("gone"), "judge"): [1.0],
    }
    frozen = copy.deepcopy(old)
    new = update_ledger(old, res, 3)
    assert old == frozen  # pure
    assert new == {
        ledger_key(K("a"), "judge"): [0.2, 0.3, 0.75],
        ledger_key(K("a"), "tool"): [1.0, 0.0],
        ledger_key(K("b"), "judge"): [None],
        # Values start with this run (the old ledger had none): the mean sample score, the score.
        value_key(K("a"), "judge"): [0.75],
        value_key(K("a"), "tool"): [0.0],
        value_key(K("b"), "judge"): [None],
    }
    assert list(new) == sorted(new)
    assert update_ledger(None, res, 1)[ledger_key(K("a"), "judge")] == [0.75]
    with pytest.raises(ValueError):
        update_ledger(None, res, 0)


# --- determinism ----------------------------------------------------------------------------


def _big(seed: int):
    rng = random.Random(seed)
    cases_b, cases_c = {}, {}
    for i in range(60):
        cases_b[f"c{i:03d}"] = {"rouge": rng.random(), "judge": [float(rng.random() < 0.8) for _ in range(5)]}
        cases_c[f"c{i:03d}"] = {"rouge": rng.random() * 0.95, "judge": [float(rng.random() < 0.75) for _ in range(5)]}
    return one(cases_b), one(cases_c), _ledger(list(cases_b), [1.0] * 6)


def _reordered(results: RunResults) -> RunResults:
    data = results.model_dump()
    for s in data["suites"]:
        s["cases"].reverse()
        for case in s["cases"]:
            case["criteria"] = dict(reversed(list(case["criteria"].items())))
        s["criteria"] = dict(reversed(list(s["criteria"].items())))
    return RunResults.model_validate(data)


def test_deterministic_and_independent_of_order():
    base, cur, ledger = _big(5)
    policy = GatePolicy(permutations=500)
    first = compare(base, cur, policy, ledger)
    assert first.suites[0].criteria[1].criterion == "rouge"
    assert first.suites[0].criteria[1].p_value is not None  # continuous scores: the random path
    assert compare(base, cur, policy, ledger) == first
    shuffled_ledger = dict(reversed(list(ledger.items())))
    assert compare(_reordered(base), _reordered(cur), policy, shuffled_ledger) == first
    # A different seed may move a random p-value, never an exact one.
    other = compare(base, cur, GatePolicy(permutations=500, seed=1), ledger)
    assert other.suites[0].criteria[0].p_value == first.suites[0].criteria[0].p_value


# --- agent runs (num_runs) are samples --------------------------------------------------


def _with_runs(results: RunResults, runs_by_id: dict[str, list]) -> RunResults:
    """Give the deterministic criterion 'traj' of the named cases several agent runs."""
    out = copy.deepcopy(results)
    for case in out.suites[0].cases:
        runs = runs_by_id.get(case.eval_id)
        if runs is None:
            continue
        c = case.criteria["traj"]
        c.runs = runs
        c.per_invocation = [InvocationResult(score=r, status=Status.PASSED if r >= THRESHOLD else Status.FAILED) for r in runs]
        c.score = sum(runs) / len(runs)
        c.status = Status.PASSED if c.score >= THRESHOLD else Status.FAILED
        case.status = case_status(case.criteria)
    return out


# (the agent-runs test is above, beside the other breakage tests)


def test_an_informational_criterion_is_shown_never_compared_nor_recorded_as_failing():
    """A custom metric may return INFORMATIONAL (ADK's fourth status): it never decides a case,
    so the gate neither tests it for a drop nor records it in the ledger as a failure."""
    from evalgate.gate import outcome
    from evalgate.results import CriterionResult, Status

    info = CriterionResult(score=0.2, status=Status.INFORMATIONAL, threshold=0.5)
    assert outcome(info, judge=False) is None
    scored = CriterionResult(score=0.2, status=Status.FAILED, threshold=0.5)
    assert outcome(scored, judge=False) == 0.0


def test_a_regressed_case_that_fails_on_the_default_branch_too_carries_its_record():
    """A case that passed in the baseline and fails now is 'regressed'; when the ledger shows
    it failing on the default branch too, the change carries its record there (the comment
    and `evalgate gate` call it flaky); a clean record, or none, carries nothing."""
    ids = ["날씨-서울", "天気-東京", "weather-ny"]
    base = one({e: {"tool": 1.0} for e in ids})
    cur = one({e: {"tool": 0.0} for e in ids})
    ledger = {
        ledger_key(K("날씨-서울"), "tool"): [1.0, 0.0, 1.0, 0.0, 1.0],  # flaky: 3 of 5
        ledger_key(K("天気-東京"), "tool"): [1.0, 1.0, 1.0, 1.0],  # passed all 4: too few to be stable, not flaky
        ledger_key(K("weather-ny"), "tool"): [0.0, 1.0],  # too short a record to call
    }
    changes = {c.key.eval_id: c for c in compare(base, cur, POLICY, ledger=ledger).suites[0].changes}
    assert {k: c.kind for k, c in changes.items()} == dict.fromkeys(ids, "regressed")
    assert {k: c.flaky_history for k, c in changes.items()} == {"날씨-서울": (3, 5), "天気-東京": None, "weather-ny": None}
    assert compare(base, cur, POLICY).suites[0].changes[0].flaky_history is None  # no ledger: nothing said

    from evalgate.reports.markdown import render_comment

    comment = render_comment(compare(base, cur, POLICY, ledger=ledger), cur, gate_id="evalgate")
    assert comment.count("flaky on the default branch") == 1
    assert "flaky on the default branch: passed 3 of its last 5 runs there" in comment
