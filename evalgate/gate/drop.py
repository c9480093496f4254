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
from evalgate.gate.words import fmt, fmt_p, plural


def _run_spread(keys: list[CaseKey], criterion: str, ledger: Optional[Ledger]) -> Optional[tuple[float, int, int]]:
    """(sigma_r^2, runs, runs back the branch moved or 0) measured on the ledger's value
    histories of these cases (evalgate.gate.stats.run_variance), or None when fewer than
    MIN_HISTORY runs are complete for at least half of them (and 2)."""
    if not ledger:
        return None
    histories = [ledger.get(value_key(k, criterion)) or [] for k in keys]
    longest = max((len(h) for h in histories), default=0)
    for runs in range(longest, MIN_HISTORY - 1, -1):
        rows = [[float(v) for v in h[-runs:]] for h in histories if len(h) >= runs and all(v is not None for v in h[-runs:])]
        if len(rows) >= max(2, len(keys) / 2):
            variance, _, start = run_variance(rows)
            return variance, runs, runs - start if start else 0
    return None


def measure(comp: CriterionComparison, diffs: list[float], keys: list[CaseKey], policy: GatePolicy, ledger: Optional[Ledger]) -> None:
    """The drop test of one criterion, with the run-to-run variation it allows for (evalgate.gate.stats)."""
    measured = _run_spread(keys, comp.criterion, ledger)
    if measured is not None:
        sigma2, comp.history, comp.run_moved = measured
    else:
        sigma2 = policy.run_sd(comp.judge, comp.span) ** 2
        comp.history = 0
    comp.run_sd = math.sqrt(sigma2)
    run_df = level.run_df(comp)
    if len(diffs) < 2:
        comp.reasons.append("one case compared: too few to test")
        return
    comp.p_value, comp.se, df = drop_test(diffs, policy.margin(comp.judge, comp.span), 2 * sigma2, run_df)
    comp.ci_low, comp.ci_high = drop_interval(diffs, 2 * sigma2, df)
    comp.lower_bound, _ = drop_interval(diffs, 2 * sigma2, df, level=0.90)


def _variation_words(comp: CriterionComparison) -> str:
    """The run-to-run variation a criterion's test allowed for, and where it came from."""
    sd = comp.run_sd or 0.0
    if comp.history:
        moved = f", around the default branch's level before and after it moved {comp.run_moved} runs back" if comp.run_moved else ""
        return f"run-to-run sd {sd:.3f} from {plural(comp.history, 'run')} of history{moved}"
    return f"run-to-run sd {sd:.3f} assumed (no history yet)" if sd else "no run-to-run variation assumed (no history yet)"


def _drop_words(comp: CriterionComparison, policy: GatePolicy) -> str:
    assert comp.delta is not None
    margin = policy.margin(comp.judge, comp.span)
    interval = f", 95% CI [{fmt(comp.ci_low)}, {fmt(comp.ci_high)}]" if comp.ci_low is not None else ""
    moved = f"dropped by {-comp.delta:.3f}" if comp.delta < 0 else f"rose by {comp.delta:.3f}" if comp.delta > 0 else "did not move"
    return (
        f"mean {'sample score' if comp.basis == 'samples' else 'score'} {moved} "
        f"({fmt(comp.baseline_mean)} to {fmt(comp.current_mean)}{interval}; margin {margin:g}; {_variation_words(comp)})"
    )


def decide(comp: CriterionComparison, policy: GatePolicy) -> tuple[Optional[str], Optional[str]]:
    """(why the criterion FAILs, why it is INCONCLUSIVE), each None when not, after Holm; the
    reasons go to comp.reasons too. FAIL against the baseline run; INCONCLUSIVE against the
    default branch's level when measured (evalgate.gate.level), else against the baseline run."""
    margin = policy.margin(comp.judge, comp.span)
    if comp.delta is not None and comp.p_adjusted is not None:
        what = _drop_words(comp, policy)
        if comp.p_adjusted < policy.alpha:
            text = f"{what}: a significant drop, p = {fmt_p(comp.p_adjusted)} after Holm"
            comp.reasons.append(text)
            return text, None
        if level.unsure(comp, policy):
            text = f"{what}{level.words(comp)}: this run cannot rule out a drop bigger than {max(policy.resolution_of(comp.span), margin):g} " + (
                f"(95% lower bound {fmt(level.lower(comp))}); {level.what_would_settle(comp)}"
            )
            comp.reasons.append(text)
            return None, text
        if comp.delta < -margin or (comp.level_delta is not None and comp.level_delta < -margin):
            comp.reasons.append(f"{what}{level.words(comp)}: within what an unchanged agent does (p = {fmt_p(comp.p_adjusted)} after Holm)")
    elif comp.delta is not None and comp.n_pairs < 2 and comp.delta < 0:
        text = "one case compared, and it dropped: too few to tell"
        comp.reasons.append(text)
        return None, text
    return None, None
