"""The mean-drop test: did a criterion's mean fall by more than its margin, beyond what the run-to-run variation explains?

Statistics (regression mode; also computed, for information, in absolute mode)
    Per suite and criterion, over the cases both runs scored (neither NOT_EVALUATED) and
    whose expected data did not change. Every choice and its reason is in the docstring
    of `evalgate.gate.stats`; in short:

    - The compared per-case value is the criterion's score, or, for a judge criterion
      whose cases all carry samples in both runs, the case's mean sample score
      (`basis = "samples"`): it estimates the same quality as the majority vote with a
      fraction of its noise, because a vote turns one doubtful sample into a whole point.
      With `judge.early_stop` a case's samples are those drawn until its majority was
      decided (the criterion's `sampling` says so); a baseline and a run that drew them by
      different rules are compared on scores (the majority votes, which both rules decide
      alike), and the reasons say so.
    - delta = mean(current - baseline) over the pairs. The drop test asks whether the
      drop is bigger than the margin, against two kinds of variation: the cases' own
      (the paired differences) and the run-to-run variation of the criterion's mean (a
      judge's mood, a serving change: every case at once). The latter is measured on the
      ledger's values of these cases over the last runs (`run_sd`, `history` runs), or,
      with fewer than 3 runs, assumed: `run_sd_judge` / `run_sd_deterministic`. Student's
      t with Welch-Satterthwaite degrees of freedom; closed form, no randomness.
    - The 95% interval of delta inverts the same test; its one-sided 95% lower bound
      (`lower_bound`) is what a PASS needs above -resolution when there is no history
      (with history, evalgate.gate.level).
    - A criterion FAILs when the drop test has p_adjusted < alpha (Holm, evalgate.gate.compare).
      It is INCONCLUSIVE when it dropped by more than its margin, not significantly, and the
      run cannot rule out a drop bigger than `resolution` (the one-sided 95% lower bound of
      delta is below -max(resolution, margin); with history, of the drop against the default
      branch's level): the reasons say what would settle it.
"""

from __future__ import annotations

import math
from typing import Optional

from evalgate.gate import level
from evalgate.gate.ledger import Ledger, value_key
from evalgate.gate.model import CaseKey, CriterionComparison, GatePolicy
from evalgate.gate.stats import MIN_HISTORY, drop_interval, drop_test, run_variance
from evalgate.gate.words import fmt, fmt_p
from evalgate.i18n import _, n_


def _run_spread(keys: list[CaseKey], criterion: str, ledger: Optional[Ledger]) -> Optional[tuple[float, int, int, float]]:
    """(sigma_r^2, runs, runs back the branch moved or 0, the sd of these cases' mean across
    those runs) measured on the ledger's value histories of these cases
    (evalgate.gate.stats.run_variance), or None when fewer than MIN_HISTORY runs are complete
    for at least half of them (and 2). sigma_r is the part of the mean's movement that moves
    every case at once; the mean's own sd also holds single cases' ups and downs (a flaky
    case), which the paired test already sees in the differences."""
    if not ledger:
        return None
    histories = [ledger.get(value_key(k, criterion)) or [] for k in keys]
    longest = max((len(h) for h in histories), default=0)
    for runs in range(longest, MIN_HISTORY - 1, -1):
        rows = [[float(v) for v in h[-runs:]] for h in histories if len(h) >= runs and all(v is not None for v in h[-runs:])]
        if len(rows) >= max(2, len(keys) / 2):
            variance, _df, start = run_variance(rows)
            means = [sum(r[t] for r in rows) / len(rows) for t in range(runs)]
            grand = sum(means) / runs
            mean_sd = math.sqrt(sum((m - grand) ** 2 for m in means) / (runs - 1))
            return variance, runs, runs - start if start else 0, mean_sd
    return None


def measure(comp: CriterionComparison, diffs: list[float], keys: list[CaseKey], policy: GatePolicy, ledger: Optional[Ledger]) -> None:
    """The drop test of one criterion, with the run-to-run variation it allows for (evalgate.gate.stats)."""
    measured = _run_spread(keys, comp.criterion, ledger)
    if measured is not None:
        sigma2, comp.history, comp.run_moved, comp.mean_sd = measured
    else:
        sigma2 = policy.run_sd(comp.judge, comp.span) ** 2
        comp.history = 0
    comp.run_sd = math.sqrt(sigma2)
    run_df = level.run_df(comp)
    if len(diffs) < 2:
        comp.reasons.append(_("one case compared: too few to test"))
        return
    comp.p_value, comp.se, df = drop_test(diffs, policy.margin(comp.judge, comp.span), 2 * sigma2, run_df)
    limit = comp.span if comp.bounded else None
    comp.ci_low, comp.ci_high = drop_interval(diffs, 2 * sigma2, df, limit=limit)
    comp.lower_bound, _upper = drop_interval(diffs, 2 * sigma2, df, level=0.90, limit=limit)


def mean_moved_more(comp: CriterionComparison) -> bool:
    """Did the mean move across the history clearly more than its shared run-to-run part (a
    flaky case moving it alone)? Then a reader of the trend would doubt the shared sd alone."""
    sd = comp.run_sd or 0.0
    return comp.mean_sd is not None and comp.mean_sd >= 1.5 * sd + 0.005


def _variation_words(comp: CriterionComparison) -> str:
    """The run-to-run variation a criterion's test allowed for, and where it came from."""
    sd = comp.run_sd or 0.0
    if comp.history and comp.run_moved:
        return n_(
            "run-to-run sd {sd} from {n} run of history, around the default branch's level before and after it moved {moved} runs back",
            "run-to-run sd {sd} from {n} runs of history, around the default branch's level before and after it moved {moved} runs back",
            comp.history,
            sd=f"{sd:.3f}",
            moved=comp.run_moved,
        )
    if comp.history and mean_moved_more(comp):
        # The trend chart shows the mean moving; say how much, beside the shared part the test allows for.
        return n_(
            "run-to-run sd {sd} shared, {mean_sd} for the mean, from {n} run of history",
            "run-to-run sd {sd} shared, {mean_sd} for the mean, from {n} runs of history",
            comp.history,
            sd=f"{sd:.3f}",
            mean_sd=f"{comp.mean_sd:.3f}",
        )
    if comp.history:
        return n_("run-to-run sd {sd} from {n} run of history", "run-to-run sd {sd} from {n} runs of history", comp.history, sd=f"{sd:.3f}")
    return _("run-to-run sd {sd} assumed (no history yet)", sd=f"{sd:.3f}") if sd else _("no run-to-run variation assumed (no history yet)")


def _drop_words(comp: CriterionComparison, policy: GatePolicy) -> str:
    assert comp.delta is not None
    margin = policy.margin(comp.judge, comp.span)
    samples = comp.basis == "samples"
    if comp.delta < 0:
        by = f"{-comp.delta:.3f}"
        moved = _("mean sample score dropped by {by}", by=by) if samples else _("mean score dropped by {by}", by=by)
    elif comp.delta > 0:
        by = f"{comp.delta:.3f}"
        moved = _("mean sample score rose by {by}", by=by) if samples else _("mean score rose by {by}", by=by)
    else:
        moved = _("mean sample score did not move") if samples else _("mean score did not move")
    means = dict(baseline=fmt(comp.baseline_mean), current=fmt(comp.current_mean))
    if comp.ci_low is not None:
        span = _("{baseline} to {current}, 95% CI [{low}, {high}]", **means, low=fmt(comp.ci_low), high=fmt(comp.ci_high))
    else:
        span = _("{baseline} to {current}", **means)
    # TRANSLATORS: {moved}: "mean score dropped by 0.172"; {span}: "0.843 to 0.671, 95% CI [...]"; {variation}: the run-to-run sd.
    return _("{moved} ({span}; margin {margin}; {variation})", moved=moved, span=span, margin=f"{margin:g}", variation=_variation_words(comp))


def decide(comp: CriterionComparison, policy: GatePolicy) -> tuple[Optional[str], Optional[str]]:
    """(why the criterion FAILs, why it is INCONCLUSIVE), each None when not, after Holm; the
    reasons go to comp.reasons too. FAIL against the baseline run; INCONCLUSIVE against the
    default branch's level when measured (evalgate.gate.level), else against the baseline run."""
    margin = policy.margin(comp.judge, comp.span)
    if comp.delta is not None and comp.p_adjusted is not None:
        what = _drop_words(comp, policy)
        if comp.p_adjusted < policy.alpha:
            text = _("{what}: a significant drop, p = {p} after Holm", what=what, p=fmt_p(comp.p_adjusted))
            comp.reasons.append(text)
            return text, None
        if level.unsure(comp, policy):
            text = _(
                "{what}{level}: this run cannot rule out a drop bigger than {resolution} (95% lower bound {bound}); {settle}",
                what=what,
                level=level.words(comp),
                resolution=f"{max(policy.resolution_of(comp.span), margin):g}",
                bound=fmt(level.lower(comp)),
                settle=level.what_would_settle(comp),
            )
            comp.reasons.append(text)
            return None, text
        if comp.delta < -margin or (comp.level_delta is not None and comp.level_delta < -margin):
            comp.reasons.append(
                _("{what}{level}: within what an unchanged agent does (p = {p} after Holm)", what=what, level=level.words(comp), p=fmt_p(comp.p_adjusted))
            )
    elif comp.delta is not None and comp.n_pairs < 2 and comp.delta < 0:
        text = _("one case compared, and it dropped: too few to tell")
        comp.reasons.append(text)
        return None, text
    return None, None
