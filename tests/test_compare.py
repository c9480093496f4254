"""The gate's comparison: pairing, statistics (exact p-values by hand), Holm, verdict rules, ledger."""

from __future__ import annotations

import copy
import math
import random

import pytest

from evalgate.compare import (
    BaselineInfo,
    CaseKey,
    GatePolicy,
    Verdict,
    case_samples,
    compare,
    ledger_key,
    outcome,
    update_ledger,
)
from evalgate.engine import case_status, suite_status
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
from evalgate.stats import holm, mean_interval, sign_flip_p

# --- building results by hand ---------------------------------------------------------
#
# A suite is {eval_id: {criterion: value}}, where a value is a score, None (NOT_EVALUATED,
# with an error), or a list of sample scores (a judge criterion: one invocation whose
# score is the majority vote of its samples).

JUDGE = {"judge", "judge2"}  # criteria named here are judge criteria; the rest are deterministic
THRESHOLD = 0.5


def crit(value, threshold: float = THRESHOLD, error: str = "no judge credentials") -> CriterionResult:
    if value is None:
        return CriterionResult(score=None, status=Status.NOT_EVALUATED, threshold=threshold, error=error)
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


# --- the permutation test: exact p-values computed by hand ------------------------------


@pytest.mark.parametrize(
    "diffs, p",
    [
        # 3 differences of -1: 2^3 sign patterns, only all-negative reaches -3.
        ([-1, -1, -1], 1 / 8),
        # signed squares -0.25, 0.25, -1 (observed -1); the 8 sums of +-0.25 +-0.25 +-1 are
        # 1.5, 1, 1, 0.5, -0.5, -1, -1, -1.5: three are <= -1.
        ([-0.5, 0.5, -1], 3 / 8),
        # signed squares -1, 0.25, 0.25 (observed -0.5); sums 1.5, 1, 1, 0.5, -0.5, -1, -1,
        # -1.5: four are <= -0.5. (The plain sum would give 5/8: the statistic is d*|d|.)
        ([-1, 0.5, 0.5], 4 / 8),
        # zeros carry no sign: one non-zero difference, p = P(-1 <= -1) = 1/2.
        ([0, 0, -1, 0], 1 / 2),
        # four -1 and one +1 (observed -3): at least four of five signs negative: (5 + 1) / 32.
        ([-1, -1, -1, -1, 1], 6 / 32),
        # signed squares -0.04, -0.16 (observed -0.2); sums 0.2, 0.12, -0.12, -0.2: one of four.
        ([-0.2, -0.4], 1 / 4),
        # nothing moved, or everything improved: no evidence of a drop.
        ([0, 0, 0], 1.0),
        ([], 1.0),
        ([1, 1, 1], 1.0),
        # 20 differences of -1 are one group: exact (21 patterns), 2^-20.
        ([-1] * 20, 2.0**-20),
    ],
)
def test_sign_flip_exact(diffs, p):
    assert sign_flip_p(diffs) == pytest.approx(p, rel=1e-12)


def test_sign_flip_exact_agrees_with_brute_force():
    rng = random.Random(7)
    for _ in range(30):
        diffs = [rng.choice([-1, -0.6, -0.2, 0, 0.2, 0.4, 1]) for _ in range(rng.randint(1, 12))]
        observed = sum(d * abs(d) for d in diffs)
        nz = [d * abs(d) for d in diffs if d]
        hits = 0
        for mask in range(1 << len(nz)):
            s = sum(abs(v) * (-1 if mask >> i & 1 else 1) for i, v in enumerate(nz))
            hits += s <= observed + 1e-9
        assert sign_flip_p(diffs) == pytest.approx(hits / (1 << len(nz)), rel=1e-12)


def test_sign_flip_random_when_too_many_patterns():
    # 17 distinct magnitudes: 2^17 patterns > 2^16, so B random flips. All negative: the
    # observed statistic is the minimum, and no random pattern in 100 reaches it here, so
    # p = (1 + 0) / (1 + 100).
    diffs = [-(i + 1) / 100 for i in range(17)]
    assert sign_flip_p(diffs, permutations=100, seed=1) == 1 / 101
    # Seeded: same seed, same answer; and close to the exact value for a middling case.
    mixed = [(-1) ** i * (i + 1) / 20 for i in range(17)] + [-0.9]
    a = sign_flip_p(mixed, permutations=4000, seed=3)
    assert a == sign_flip_p(mixed, permutations=4000, seed=3)
    assert 0.05 < a < 0.5


# --- Holm and the interval ----------------------------------------------------------------


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


def test_interval_inverts_the_normal_sign_flip_test():
    diffs = [-1.0] + [0.0] * 9
    lo, hi = mean_interval(diffs)
    # mean -0.1, population variance 0.09: -0.1 +- 1.96 * sqrt(0.09 / (10 - 1.96^2)).
    half = 1.959963984540054 * math.sqrt(0.09 / (10 - 1.959963984540054**2))
    assert (lo, hi) == pytest.approx((-0.1 - half, -0.1 + half))
    for s in (lo, hi):  # at each end, the standardized statistic is exactly 1.96
        num = abs(sum(d - s for d in diffs))
        assert num == pytest.approx(1.959963984540054 * math.sqrt(sum((d - s) ** 2 for d in diffs)))
    assert mean_interval([0.0] * 8) == (0.0, 0.0)
    assert mean_interval([-1.0, 0.0, 1.0]) == (None, None)  # too few pairs to exclude any shift


# --- judge samples ----------------------------------------------------------------------


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
    # b and d fail but are not gated in regression mode: listed, with a warning.
    assert s.verdict is Verdict.PASS
    assert any("2 added or changed cases fail, not gated" in r and "set/b, set/d" in r for r in s.reasons)
    assert s.changes == []


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
        # One deterministic pass -> fail: by default weighed like any drop (p = 1/2): inconclusive...
        ("tool", STABLE, [0.0] + STABLE[1:], POLICY, Verdict.INCONCLUSIVE, Verdict.INCONCLUSIVE, "not significant"),
        # ... and a regression when the agent's outputs are replayed (no noise to allow for).
        ("tool", STABLE, [0.0] + STABLE[1:], GatePolicy(deterministic_flips="fail"), Verdict.FAIL, Verdict.FAIL, "1 case went from PASSED to FAILED"),
        # A deterministic score drop without a flip, significant: -0.2 on 10 of 40 cases.
        ("rouge", [0.9] * 40, [0.7] * 10 + [0.9] * 30, POLICY, Verdict.FAIL, Verdict.FAIL, "dropped by 0.050"),
        # Judge: 10 of 40 cases broke (p = 2^-10 after Holm): FAIL.
        ("judge", STABLE, [0.0] * 10 + STABLE[10:], POLICY, Verdict.FAIL, Verdict.FAIL, "dropped by 0.250"),
        # Judge: 2 of 40 broke: -0.05 beyond the 0.02 margin, p = 1/4: INCONCLUSIVE, passes.
        ("judge", STABLE, [0.0] * 2 + STABLE[2:], POLICY, Verdict.INCONCLUSIVE, Verdict.INCONCLUSIVE, "not significant"),
        # ... or fails when configured so.
        ("judge", STABLE, [0.0] * 2 + STABLE[2:], GatePolicy(inconclusive="fail"), Verdict.FAIL, Verdict.INCONCLUSIVE, "not significant"),
        # A significant drop within the margin passes.
        ("judge", STABLE, [0.0] * 10 + STABLE[10:], GatePolicy(margin_judge=0.3), Verdict.PASS, Verdict.PASS, "no drop beyond the margin"),
        # A looser alpha makes a smaller drop significant: 5 broke, p = 2^-5 < 0.05.
        ("judge", STABLE, [0.0] * 5 + STABLE[5:], GatePolicy(alpha=0.05), Verdict.FAIL, Verdict.FAIL, "p = 0.031"),
        ("judge", STABLE, [0.0] * 5 + STABLE[5:], POLICY, Verdict.INCONCLUSIVE, Verdict.INCONCLUSIVE, "p = 0.031"),
        # Noise both ways: 20 flips each way on a judge criterion, mean unchanged.
        ("judge", HALF, HALF[1:] + HALF[:1], POLICY, Verdict.PASS, Verdict.PASS, "no drop beyond the margin"),
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
    assert crit_.p_value == crit_.p_adjusted == 2.0**-10
    assert crit_.ci_low < -0.25 < crit_.ci_high < 0
    assert crit_.judge and crit_.basis == "scores"
    assert c.mode == "regression" and not c.config_changed
    same = _verdict(scores("judge", STABLE), scores("judge", STABLE))
    assert same.verdict is Verdict.PASS and same.reasons == []
    assert same.suites[0].reasons == ["no drop beyond the margin in 1 criterion over 40 cases compared"]


def test_holm_spans_all_criteria_of_all_suites():
    # Two suites, two criteria each, all four dropping 5 of 40: p = 2^-5 each; Holm: 4 * 2^-5.
    drop = [0.0] * 5 + STABLE[5:]
    both = lambda v: {f"c{i:03d}": {"judge": v[i], "judge2": v[i]} for i in range(40)}  # noqa: E731
    base = run(suite("s", both(STABLE)), suite("t", both(STABLE)))
    cur = run(suite("s", both(drop)), suite("t", both(drop)))
    c = compare(base, cur, GatePolicy(alpha=0.1))
    ps = [(x.p_value, x.p_adjusted) for s in c.suites for x in s.criteria]
    assert ps == [(2.0**-5, 4 * 2.0**-5)] * 4
    assert c.verdict is Verdict.INCONCLUSIVE  # 0.125 >= 0.1: each alone would have failed
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
    assert c.suites[0].criteria[0].p_value == 0.5
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
        score=None, status=Status.NOT_EVALUATED, threshold=0.5, error="invocation 0: timeout; invocation 1: timeout"
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


def test_broken_stable_case_fails_with_its_own_p_value():
    ids = [f"c{i:03d}" for i in range(40)]
    base = one({e: {"judge": GOOD} for e in ids})
    cur = one({e: {"judge": BAD if e == "c007" else GOOD} for e in ids})
    ledger = _ledger(ids, [1.0] * 5)
    c = compare(base, cur, POLICY, ledger=ledger)
    s = c.suites[0]
    assert s.verdict is Verdict.FAIL
    (change,) = s.changes
    assert (change.key, change.kind, change.criteria) == (K("c007"), "broken_stable", {"judge": (1.0, 0.0)})
    # 5 runs x 5 samples, none failed: r ~ Beta(1, 26); 5 failing samples now:
    # E[r^5] = (1*2*3*4*5) / (27*28*29*30*31) = 120 / 20389320.
    assert change.p_value == pytest.approx(120 / 20389320)
    # Weighted Holm: the criterion's test (weight 1, p = 1/2 on samples 1.0 -> 0.0 for one
    # case) and 40 stable cases sharing weight 1: c007 first, p / (1/40) * 2.
    assert change.p_adjusted == pytest.approx(120 / 20389320 * 40 * 2)
    crit_ = s.criteria[0]
    assert crit_.basis == "samples" and crit_.status is Verdict.FAIL
    assert any(r.startswith("judge: broken stable case set/c007 passed its last 5 runs and now fails all 5 samples") for r in s.reasons)
    # Without the ledger one case of 40 is noise-sized: INCONCLUSIVE at most.
    assert compare(base, cur, POLICY).suites[0].verdict is Verdict.INCONCLUSIVE


@pytest.mark.parametrize(
    "history, samples_now, verdict",
    [
        ([1.0] * 4, BAD, Verdict.INCONCLUSIVE),  # 4 runs are not enough to be stable
        ([1.0] * 4 + [None], BAD, Verdict.INCONCLUSIVE),  # NOT_EVALUATED runs do not count
        ([1.0] * 4 + [0.4], BAD, Verdict.INCONCLUSIVE),  # failed once: not stable
        # 4 of 5 samples fail: the vote flips, but the case did not fail every sample.
        ([1.0] * 5, [0.0, 0.0, 0.0, 1.0, 0.0], Verdict.PASS),
        # Stable but flaky: 10 runs with 1 of 5 samples failing, F = 10 of N = 50:
        # p = (11*12*13*14*15) / (52*53*54*55*56) = 7.9e-4; 40 stable cases share weight 1
        # of 2: 7.9e-4 * 40 * 2 = 0.063 < 0.2.
        ([0.8] * 10, BAD, Verdict.FAIL),
        # Flakier, 2 of 5 failing each run: p = (21*...*25) / (52*...*56) = 0.014; adjusted 1.
        ([0.6] * 10, BAD, Verdict.INCONCLUSIVE),
    ],
)
def test_broken_stable_rules(history, samples_now, verdict):
    ids = [f"c{i:03d}" for i in range(40)]
    base = one({e: {"judge": GOOD} for e in ids})
    cur = one({e: {"judge": samples_now if e == "c000" else GOOD} for e in ids})
    ledger = _ledger(ids, history)
    s = compare(base, cur, GatePolicy(alpha=0.2), ledger=ledger).suites[0]
    assert s.verdict is verdict, s.reasons


def test_broken_stable_without_samples_has_one_sample():
    ids = [f"c{i:03d}" for i in range(10)]
    base = one({e: {"judge": 1.0} for e in ids})
    cur = one({e: {"judge": 0.0 if e == "c000" else 1.0} for e in ids})
    c = compare(base, cur, POLICY, ledger=_ledger(ids, [1.0] * 10))
    (change,) = c.suites[0].changes
    # one sample now, 10 runs of one sample, none failed: p = E[r] = 1/12: not significant.
    assert change.kind == "broken_stable" and change.p_value == pytest.approx(1 / 12)
    assert c.verdict is Verdict.INCONCLUSIVE  # from the mean: 1 of 10 cases dropped, p = 1/2
    assert not any("broken" in r for r in c.suites[0].reasons)
    assert any(r.startswith("possibly broken stable case: set/c000") for r in c.suites[0].criteria[0].reasons)


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


def test_broken_stable_not_significant_is_listed_and_decides_nothing():
    ids = [f"c{i:03d}" for i in range(60)]
    base = one({e: {"judge": GOOD} for e in ids})
    cur = one({e: {"judge": BAD if e == "c000" else GOOD} for e in ids})
    # A flaky history: 2 of 5 samples failed in each of 10 runs; p = 0.014, adjusted 1.
    c = compare(base, cur, POLICY, ledger=_ledger(ids, [0.6] * 10))
    s = c.suites[0]
    assert c.verdict is Verdict.PASS  # and the mean moved by 1/60 < the margin
    (change,) = s.changes
    assert change.kind == "broken_stable" and change.p_adjusted == 1.0
    assert change.p_value == pytest.approx(21 * 22 * 23 * 24 * 25 / (52 * 53 * 54 * 55 * 56))


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
    s = c.suites[0]
    broken = [ch for ch in s.changes if ch.kind == "broken_stable"]
    assert [ch.key for ch in broken] == [K("c005")]
    # 10 runs x 3 samples, none failed: r ~ Beta(1, 32); 3 failing runs now: 1*2*3 / (32*33*34).
    assert broken[0].p_value == pytest.approx(6 / (32 * 33 * 34))
    # Weighted Holm: 10 stable cases share weight 1 with the criterion's test: p * 10 * 2 < 0.01.
    assert s.verdict is Verdict.FAIL, s.reasons
    # One run per case (no runs): the broken-stable test does not apply; flips are weighed as before.
    single = compare(one({e: {"traj": 1.0} for e in ids}), one({e: {"traj": 0.0 if e == "c005" else 1.0} for e in ids}), POLICY, ledger=ledger)
    assert not [ch for ch in single.suites[0].changes if ch.kind == "broken_stable"]
    # The ledger records the share of runs that passed.
    new = update_ledger(None, cur, 10)
    assert new[ledger_key(K("c006"), "traj")] == [pytest.approx(2 / 3)]
