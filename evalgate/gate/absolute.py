"""The absolute verdict (ADK semantics: every case passes every threshold), and the words on thresholds
and NOT_EVALUATED cases that the regression verdict shares.

A suite fails when its status is FAILED (which includes NOT_EVALUATED cases under
`not_evaluated: fail`). Used with no baseline, in `mode: absolute`, and for what has no
baseline to compare with (a new suite, a new criterion, a suite with no case in common).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Optional

from evalgate.gate.model import CriterionComparison, Verdict
from evalgate.gate.values import criteria_of, is_evaluated
from evalgate.i18n import _, n_, p_
from evalgate.reasons import shown as shown_reason
from evalgate.results import Status, SuiteResult


# "turn N" since issue 35; "invocation N" (0-based) in results that older versions wrote.
_INVOCATION_PREFIX = re.compile(r"^(\d+ of \d+ (?:invocations|turns) not evaluated: )?((?:invocation|turn) \d+: )?")


def _reason(error: Optional[str]) -> str:
    """A NOT_EVALUATED record's reason without per-invocation numbering, to group cases."""
    if not error:
        return _("not evaluated")
    parts = [shown_reason(_INVOCATION_PREFIX.sub("", p.strip())) for p in error.split("; ")]
    return p_("between reasons", "; ").join(dict.fromkeys(p for p in parts if p)) or _("not evaluated")


def skipped(suite: SuiteResult) -> list[str]:
    reasons: dict[str, Counter[str]] = {}
    for case in suite.cases:
        for name, result in case.criteria.items():
            if result.status is Status.NOT_EVALUATED:
                reasons.setdefault(name, Counter())[_reason(result.error)] += 1
    out = []
    for name in sorted(reasons):
        counts = reasons[name]
        n = sum(counts.values())
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        if len(ranked) == 1:
            out.append(n_("{criterion}: {reason} ({n} case NOT_EVALUATED)", "{criterion}: {reason} ({n} cases NOT_EVALUATED)", n, criterion=name, reason=ranked[0][0]))
        else:
            shown = p_("between reasons", "; ").join(f"{r} ({c})" for r, c in ranked[:3])
            if len(ranked) > 3:
                shown = _("{reasons}; {others} other reasons", reasons=shown, others=len(ranked) - 3)
            out.append(n_("{criterion}: {n} case NOT_EVALUATED: {reasons}", "{criterion}: {n} cases NOT_EVALUATED: {reasons}", n, criterion=name, reasons=shown))
    return out


def not_evaluated_reasons(suite: SuiteResult) -> tuple[bool, list[str]]:
    """(fails the suite, reasons) for cases with a NOT_EVALUATED criterion, under the suite's policy."""
    n = suite.counts.incomplete
    if not n:
        return False, []
    fields = dict(incomplete=n, cases=n_("{n} case", "{n} cases", suite.counts.cases))
    if suite.not_evaluated_policy == "fail":
        return True, [_("{incomplete} of {cases} with criteria NOT_EVALUATED, and the suite's not_evaluated policy is `fail`", **fields)]
    if suite.not_evaluated_policy == "warn":
        return False, [_("{incomplete} of {cases} with criteria NOT_EVALUATED (not_evaluated: warn)", **fields)]
    return False, []


def failing(suite: SuiteResult, name: str) -> tuple[int, int]:
    """(cases that FAILED the criterion, cases that have it)."""
    results = [c.criteria[name] for c in suite.cases if name in c.criteria]
    return sum(r.status is Status.FAILED for r in results), len(results)


def below(failed: int, total: int, threshold: float) -> str:
    return _("{failed} of {cases} below the threshold {threshold}", failed=failed, cases=n_("{n} case", "{n} cases", total), threshold=f"{threshold:g}")


def absolute_criterion(suite: SuiteResult, name: str, threshold: float, judge: bool) -> CriterionComparison:
    scores = [r.score for c in suite.cases if is_evaluated(r := c.criteria.get(name))]
    failed, total = failing(suite, name)
    return CriterionComparison(
        suite=suite.name,
        criterion=name,
        threshold=threshold,
        judge=judge,
        n_pairs=0,
        baseline_mean=None,
        current_mean=sum(scores) / len(scores) if scores else None,  # type: ignore[arg-type]
        delta=None,
        ci_low=None,
        ci_high=None,
        p_value=None,
        p_adjusted=None,
        # Nothing scored is nothing passed: the row says INCONCLUSIVE, never PASS over no case.
        status=Verdict.FAIL if failed else (Verdict.PASS if scores else Verdict.INCONCLUSIVE),
        reasons=[below(failed, total, threshold)] if failed else ([] if scores else [_("no case was evaluated")]),
        evaluated=len(scores),
    )


def absolute_verdict(suite: SuiteResult) -> tuple[Verdict, list[str]]:
    """ADK semantics: the suite's own status decides."""
    if not suite.cases:
        return Verdict.ERROR, [_("the suite has no cases")]
    if suite.agent_error:
        return Verdict.ERROR, [_(suite.agent_error)]  # English in results.json; a marked one in the report's language
    fails_ne, ne_reasons = not_evaluated_reasons(suite)
    if suite.status is Status.FAILED:
        reasons = []
        for name, (threshold, _judge, _version) in sorted(criteria_of(suite).items()):
            failed, total = failing(suite, name)
            if failed:
                reasons.append(f"{name}: {below(failed, total, threshold)}")
        return Verdict.FAIL, reasons + (ne_reasons if fails_ne else [])
    # Under `warn`, what was not evaluated makes the verdict INCONCLUSIVE: it passes, and says so.
    unheard = Verdict.INCONCLUSIVE if ne_reasons else Verdict.PASS
    if suite.status is Status.NOT_EVALUATED:
        return unheard, [_("no case was evaluated")] + ne_reasons
    evaluated = suite.counts.cases - suite.counts.not_evaluated
    return unheard, [n_("all {n} evaluated case pass their thresholds", "all {n} evaluated cases pass their thresholds", evaluated)] + ne_reasons
