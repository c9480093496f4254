"""The partial-drop test: some cases of a continuous criterion fell while the rest held.

Partial drops (continuous criteria that are not judged, with a ledger)
    Some cases falling while the rest hold: the ledger's values give each case its own
    run-to-run spread (from the runs before the baseline's). Two tests, one entry in Holm
    (`partial_p`): how many cases fell beyond SHIFT_Z of their spread against how many
    rose, the run's common shift set aside (`fell`, `rose`, `lopsided_p`; it sees through
    a drift), and the drop in units of each case's spread with outliers capped
    (`steady_p`; it sees past the flaky cases' outliers). At least PARTIAL_MIN_CASES cases
    with MIN_HISTORY runs before the baseline's. A criterion FAILs when `partial_p` has
    p_adjusted < alpha.
"""

from __future__ import annotations

import math
from typing import Optional

from evalgate.gate.model import CriterionComparison, GatePolicy
from evalgate.gate.stats import SHIFT_Z, case_scales, lopsided_test, steady_drop_test, steady_run_variance
from evalgate.gate.words import fmt_p
from evalgate.i18n import n_


def measure(comp: CriterionComparison, diffs: list[float], own: tuple[list[int], list[list[float]]], policy: GatePolicy) -> None:
    """The partial-drop test of a continuous criterion (evalgate.gate.stats: case_scales,
    lopsided_test, steady_drop_test) on the cases' own histories (`own`: own_histories):
    some cases falling while the run's common shift and the flaky cases' outliers are set aside."""
    chosen, rows = own
    if not chosen:
        return
    scales = case_scales(rows)
    moved = [diffs[i] for i in chosen]
    margin = policy.margin(comp.judge, comp.span)
    comp.partial_cases, comp.partial_runs = len(chosen), len(rows[0])
    comp.lopsided_p, comp.fell, comp.rose = lopsided_test(moved, scales, margin)
    run_var, run_df = steady_run_variance(rows, scales)
    comp.steady_run_sd = math.sqrt(run_var)
    comp.steady_p = steady_drop_test(moved, scales, margin, run_var, run_df)
    comp.partial_p = min(1.0, 2 * min(comp.lopsided_p, comp.steady_p))


def _partial_words(comp: CriterionComparison) -> str:
    assert comp.lopsided_p is not None and comp.steady_p is not None and comp.partial_p_adjusted is not None
    return n_(
        "some cases fell: {fell} of {cases} cases fell by more than {z} times their own "
        "run-to-run spread and {rose} rose, the run's common shift set aside (p = {p_lopsided}); "
        "in units of each case's spread, outliers capped, allowing runs to move them by {sd} "
        "of a spread (sd, from {n} run), the scores fell with p = {p_steady}; "
        "together p = {p} after Holm",
        "some cases fell: {fell} of {cases} cases fell by more than {z} times their own "
        "run-to-run spread and {rose} rose, the run's common shift set aside (p = {p_lopsided}); "
        "in units of each case's spread, outliers capped, allowing runs to move them by {sd} "
        "of a spread (sd, from {n} runs), the scores fell with p = {p_steady}; "
        "together p = {p} after Holm",
        comp.partial_runs or 0,
        fell=comp.fell,
        cases=comp.partial_cases,
        z=f"{SHIFT_Z:g}",
        rose=comp.rose,
        p_lopsided=fmt_p(comp.lopsided_p),
        sd=f"{comp.steady_run_sd or 0.0:.2f}",
        p_steady=fmt_p(comp.steady_p),
        p=fmt_p(comp.partial_p_adjusted),
    )


def decide(comp: CriterionComparison, policy: GatePolicy) -> Optional[str]:
    """Why the criterion FAILs on a partial drop (after Holm), else None; the reason goes to comp.reasons too."""
    if comp.partial_p_adjusted is not None and comp.partial_p_adjusted < policy.alpha:
        text = _partial_words(comp)
        comp.reasons.append(text)
        return text
    return None
