"""The refusal test: a criterion the baseline evaluated that is not evaluated now, its judge and service up.

A criterion is NOT_EVALUATED when its judge or service gives no verdict, and under the
default `not_evaluated: warn` that alone lets a pull request pass (INCONCLUSIVE). A judge
refuses some inputs: a prompt its filters block, an input over its token limit, an answer
it cannot read. So a pull request whose wrong answers are ones the judge refuses (made
so, or by a fork that writes its own outputs) would turn its regressions into
NOT_EVALUATED. Hence: on a case both runs share (same data, evalgate.gate.values.same_data)
whose agent ran (a failed run is the crash test's, evalgate.gate.crash), a criterion the
baseline evaluated (PASSED or FAILED) that is NOT_EVALUATED now counts against the pull
request, as a failure does, and FAILs the suite, named with the first reason. Such a case is
a confirmation suspect (evalgate.gate.confirm), as a crashed one is: a re-run that passes
the criterion shows the first was a fluke of the judge (a reply it could not read), not
counted.

Unless the service was down: the judge or Vertex AI could not be reached, timed out, was
overloaded, ran out of the run's deadline, or had no or refused credentials (the engine
records it as the criterion's `unavailable`, from the runtime's classification of each
failed request, evalgate.judge.retry.Outcome.down). That is not the pull request's doing;
such criteria stay under the `not_evaluated` policy, and a warning says which service was
down.
"""

from __future__ import annotations

from typing import Optional

from evalgate.gate.model import CaseKey, Refused
from evalgate.gate.words import case_names
from evalgate.i18n import _, n_, p_
from evalgate.reasons import shown as shown_reason
from evalgate.results import CaseResult, Status

MAX_ERROR = 160  # characters of the criterion's error shown in a reason


def measure(keys: list[CaseKey], base_cases: dict[CaseKey, CaseResult], cur_cases: dict[CaseKey, CaseResult], shared: list[str]) -> list[Refused]:
    """The criteria of the paired cases `keys` the baseline evaluated that are not evaluated now."""
    from evalgate.gate.confirm import passed_again

    out = []
    for k in keys:
        cur, base = cur_cases[k], base_cases[k]
        if cur.agent_error is not None:
            continue  # the agent's failure: evalgate.gate.crash
        for n in shared:
            b, c = base.criteria.get(n), cur.criteria.get(n)
            if b is None or c is None or b.status not in (Status.PASSED, Status.FAILED) or c.status is not Status.NOT_EVALUATED:
                continue
            if passed_again(cur.reruns, n):
                continue
            out.append(Refused(key=k, criterion=n, error=shown_reason(c.error) or _("not evaluated"), service=c.unavailable))
    return out


def _error(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_ERROR else line[: MAX_ERROR - 1] + "…"


def _names(items: list[Refused]) -> str:
    """`criterion: set/a, set/b; other: set/c`: the cases of each criterion, criteria sorted."""
    by_criterion: dict[str, list[CaseKey]] = {}
    for r in items:
        by_criterion.setdefault(r.criterion, []).append(r.key)
    return p_("between reasons", "; ").join(f"{name}: {case_names(sorted(keys))}" for name, keys in sorted(by_criterion.items()))


def decide(refused: list[Refused]) -> tuple[Optional[str], list[str]]:
    """(why the suite FAILs: criteria not evaluated now with their service up, or None;
    warnings: those whose service was down, by service)."""
    counted = [r for r in refused if r.service is None]
    fail = None
    if counted:
        fail = n_(
            "{n} criterion the baseline evaluated was not evaluated now, though its judge or service was up ({error}), "
            "which counts against the change as a failure does: {items}",
            "{n} criteria the baseline evaluated were not evaluated now, though their judge or service was up (the first: {error}), "
            "which counts against the change as a failure does: {items}",
            len(counted),
            items=_names(counted),
            error=_error(counted[0].error),
        )
    warnings = []
    for service in ("judge", "vertex"):
        down = [r for r in refused if r.service == service]
        if not down:
            continue
        what = _("judge") if service == "judge" else _("Vertex AI service")
        warnings.append(
            n_(
                "warning: {n} criterion the baseline evaluated was not evaluated now because the {service} was unavailable ({error}), "
                "which is not counted against the change: {items}",
                "warning: {n} criteria the baseline evaluated were not evaluated now because the {service} was unavailable (the first: {error}), "
                "which is not counted against the change: {items}",
                len(down),
                service=what,
                items=_names(down),
                error=_error(down[0].error),
            )
        )
    return fail, warnings
