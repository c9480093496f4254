"""The drop against the default branch's level, which PASS and INCONCLUSIVE go by once the ledger has history.

With history (the run-to-run variation measured, and at least PARTIAL_MIN_CASES cases with
MIN_HISTORY runs before the baseline's), PASS and INCONCLUSIVE go by the drop against the
default branch's *level*: each case's current value less the mean of its baseline value and
its values in those earlier runs (`level_delta`, `level_lower_bound`, over `level_runs` runs
and `level_cases` cases). One run's mood then weighs 1/L in the reference instead of all of
it. When the run means show the branch moved within the window (`level_shift`), only the
runs since count (the baseline run alone when it moved at the last run). Not for a judge
compared on scores (the ledger holds sample means). The FAIL test stays against the baseline
run alone (evalgate.gate.drop): a regression merged earlier within the window must not be
blamed on this pull request.
"""

from __future__ import annotations

import math
from typing import Optional

from evalgate.gate.model import CriterionComparison, GatePolicy
from evalgate.gate.stats import drop_interval, level_differences, satterthwaite
from evalgate.i18n import _, n_


def run_df(comp: CriterionComparison) -> float:
    """Degrees of freedom of the run-to-run variance: runs less the levels it was measured
    around; infinite when assumed (no history)."""
    return comp.history - (2 if comp.run_moved else 1) if comp.history else math.inf


def measure(comp: CriterionComparison, base_values: list[float], cur_values: list[float], own: tuple[list[int], list[list[float]]]) -> None:
    """The drop against the default branch's level: the current run less the mean of the
    baseline's and the ledger's earlier runs (`own`: own_histories), case by case
    (evalgate.gate.stats: level_differences). The caller checks that the run-to-run variance
    was measured (comp.history) and that the values mean what the ledger's mean (a
    judge's sample means: basis "samples")."""
    chosen, rows = own
    if not chosen:
        return
    sigma2 = (comp.run_sd or 0.0) ** 2
    diffs, run_var, comp.level_runs = level_differences([cur_values[i] for i in chosen], [base_values[i] for i in chosen], rows, sigma2)
    comp.level_shift = comp.level_runs <= len(rows[0])  # runs before a move of the branch were left out
    n = len(diffs)
    mean = sum(diffs) / n
    within = sum((d - mean) ** 2 for d in diffs) / (n * n)
    df = satterthwaite(within, n, run_var, run_df(comp))
    comp.level_cases = n
    comp.level_delta = mean
    comp.level_se = math.sqrt(within + run_var)
    comp.level_lower_bound, _upper = drop_interval(diffs, run_var, df, level=0.90, limit=comp.span if comp.bounded else None)


def by_level(comp: CriterionComparison) -> bool:
    """Whether PASS and INCONCLUSIVE go by the default branch's level rather than by the
    baseline run alone."""
    return comp.level_delta is not None


def lower(comp: CriterionComparison) -> Optional[float]:
    """The one-sided 95% lower bound PASS needs above -resolution: against the level when measured."""
    return comp.level_lower_bound if by_level(comp) else comp.lower_bound


def unsure(comp: CriterionComparison, policy: GatePolicy) -> bool:
    """The drop is beyond the margin and the run cannot rule out one beyond the resolution."""
    margin = policy.margin(comp.judge, comp.span)
    drop = comp.level_delta if by_level(comp) else comp.delta
    bound = lower(comp)
    return drop is not None and drop < -margin and (bound is None or bound < -max(policy.resolution_of(comp.span), margin))


def words(comp: CriterionComparison) -> str:
    """`; 0.040 below the default branch's level (...)`, or "" when the level was not measured."""
    if comp.level_delta is None:
        return ""
    below = comp.level_delta < 0
    by = f"{abs(comp.level_delta):.3f}"
    if comp.level_runs == 1:
        if below:
            return _("; the default branch moved at its last run, so the baseline run alone is its level ({by} below it)", by=by)
        return _("; the default branch moved at its last run, so the baseline run alone is its level ({by} above it)", by=by)
    fields = dict(by=by, runs=comp.level_runs, cases=n_("{n} case", "{n} cases", comp.level_cases or 0))
    if comp.level_shift and below:
        return _("; {by} below the default branch's level (its last {runs} runs, baseline included, since it moved {runs} runs back, over the {cases} they share)", **fields)
    if comp.level_shift:
        return _("; {by} above the default branch's level (its last {runs} runs, baseline included, since it moved {runs} runs back, over the {cases} they share)", **fields)
    if below:
        return _("; {by} below the default branch's level (its last {runs} runs, baseline included, over the {cases} they share)", **fields)
    return _("; {by} above the default branch's level (its last {runs} runs, baseline included, over the {cases} they share)", **fields)


def what_would_settle(comp: CriterionComparison) -> str:
    """What would narrow an interval too wide to call: the larger part of its variance names it."""
    levelled = by_level(comp)
    se = comp.level_se if levelled else comp.se
    run_var = (comp.run_sd or 0.0) ** 2 * ((1 + 1 / comp.level_runs) if levelled else 2)
    if lower(comp) is None or not se:
        return n_("{n} cases are too few for an interval: add cases", "{n} cases are too few for an interval: add cases", comp.n_pairs)
    if run_var >= se**2 / 2:  # run-to-run variation is at least half of it
        if comp.history:
            return _(
                "most of the width is run-to-run variation, which more cases cannot average away: "
                "it narrows as the ledger holds more runs, or with a steadier judge (temperature 0, a fixed model version)"
            )
        return _("most of the width is the run-to-run variation assumed without history: it is measured once the ledger holds 3 runs")
    return _("more cases, num_samples (judge criteria) or num_runs would narrow it")
