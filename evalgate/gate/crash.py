"""The crash test: a case the baseline passed whose agent run fails now (it raised, exited with an error, timed out).

Such a case's criteria are NOT_EVALUATED, and under the default `not_evaluated: warn` that
alone would let the pull request pass: a change that makes the agent crash would look like
one that was not heard. Only the agent's failures count here (the case's `agent_error`); a
criterion left NOT_EVALUATED by its judge or API (the criterion's own `error`) is the judge's
failure, not the agent's, and stays under the `not_evaluated` policy.

`measure` finds them: paired cases (same expected data) with an agent error now whose
baseline PASSED some criterion the failed run left NOT_EVALUATED. They are confirmation
suspects (evalgate.gate.confirm) like stable cases that broke. A re-run *fails* when the
agent fails again or fails one of those criteria, and *passes* when the agent runs and passes
them. Where the flake ledger has seen the case fail a criterion, failing it again is no news,
and only a repeated agent failure counts for it.

`decide` then, more directly than the breakage test: a case that failed in the run and in
every re-run FAILs the suite, whatever the ledger holds. Why not weigh it in the pooled
breakage test like a broken stable case: a crash has no chance model (the ledger records a
failed run as nothing, so history cannot say how often the agent crashes by chance), the
breakage test needs several cases and a ledger where one crash that repeats is already the
evidence (three failures in three runs where the baseline passed), and a crash is most often
code the pull request changed (a tool that raises). A chance failure of the agent (a time-out,
a rate limit) would have to repeat in every re-run to be counted; one that does not is flaky,
not counted. A case nothing re-ran (`gate.confirm.runs: 0`, recorded outputs, beyond
`max_cases`, an agent that cannot start here) is a warning naming it; `not_evaluated: fail`
fails on it as before.
"""

from __future__ import annotations

from typing import Optional

from evalgate.gate.ledger import Ledger, ledger_key
from evalgate.gate.model import CaseKey, Crash, GatePolicy
from evalgate.gate.stats import failed as failed_outcome
from evalgate.gate.words import case_names
from evalgate.i18n import _, n_
from evalgate.results import CaseResult, Status

MAX_ERROR = 160  # characters of the agent's error shown in a reason


def measure(
    keys: list[CaseKey],
    base_cases: dict[CaseKey, CaseResult],
    cur_cases: dict[CaseKey, CaseResult],
    shared: list[str],
    policy: GatePolicy,
    ledger: Optional[Ledger],
) -> list[Crash]:
    """The paired cases `keys` whose agent failed now where the baseline passed, with what
    their confirmation runs showed (module docstring)."""
    out = []
    for k in keys:
        cur, base = cur_cases[k], base_cases[k]
        if cur.agent_error is None:
            continue
        names = [
            n
            for n in shared
            if n in base.criteria and n in cur.criteria
            and base.criteria[n].status is Status.PASSED and cur.criteria[n].status is Status.NOT_EVALUATED
        ]
        if not names:
            continue
        crash = Crash(key=k, criteria=names, error=cur.agent_error)
        _confirm(crash, cur, policy, _seen_failing(k, names, ledger))
        out.append(crash)
    return out


def _seen_failing(k: CaseKey, names: list[str], ledger: Optional[Ledger]) -> set[str]:
    """The criteria the ledger has seen this case fail (a run without a passing majority)."""
    if not ledger:
        return set()
    return {n for n in names if any(o is not None and failed_outcome(float(o)) for o in ledger.get(ledger_key(k, n), []))}


def _confirm(crash: Crash, case: CaseResult, policy: GatePolicy, known: set[str]) -> None:
    reruns = [r for r in case.reruns or [] if r.how == "agent"]
    if not reruns:
        return
    passed = evaluated = 0
    for r in reruns:
        if r.error is not None:  # the agent failed again
            evaluated += 1
            crash.failed += 1
            continue
        results = [r.criteria.get(n) for n in crash.criteria]
        if any(x is not None and x.status is Status.FAILED and n not in known for n, x in zip(crash.criteria, results)):
            evaluated += 1
            crash.failed += 1
        elif all(x is not None and x.status in (Status.PASSED, Status.FAILED) for x in results):
            evaluated += 1
            passed += 1
        # else: a criterion of the re-run not evaluated (its judge failed): it tells nothing
    crash.reruns = evaluated
    if passed:
        crash.verdict = "flaky"
    elif evaluated == len(reruns) and evaluated >= max(policy.confirm.runs, 1):
        crash.verdict = "broken"
    else:
        crash.verdict = "unconfirmed"


def _error(text: str) -> str:
    line = text.strip().splitlines()[-1] if text.strip() else text
    return line if len(line) <= MAX_ERROR else line[: MAX_ERROR - 1] + "…"


def words(crash: Crash, runs: int) -> str:
    """What a crashed case's re-runs showed, for the confirmation section and the terminal."""
    if crash.verdict == "broken":
        return _("the agent failed on this case in the run and in {failed} of {runs} re-runs: broken ({error})",
                 failed=crash.failed, runs=crash.reruns, error=_error(crash.error))
    if crash.verdict == "flaky":
        return _("the agent failed on this case in the run and passed on re-run: flaky, not counted ({passed} of {runs} passed)",
                 passed=crash.reruns - crash.failed, runs=crash.reruns)
    if crash.verdict == "unconfirmed":
        return _("the agent failed on this case in the run; {missing} of {runs} re-runs not evaluated: not confirmed, a warning",
                 missing=max(runs, crash.reruns) - crash.reruns, runs=max(runs, crash.reruns))
    return _("the agent failed on this case in the run and it was not re-run ({error})", error=_error(crash.error))


def decide(crashes: list[Crash], policy: GatePolicy) -> tuple[Optional[str], list[str]]:
    """(why the suite FAILs: cases the agent failed in the run and every re-run, or None;
    warnings: cases the baseline passed that were not evaluated and not confirmed)."""
    broken = [c for c in crashes if c.verdict == "broken"]
    fail = None
    if len(broken) == 1:
        c = broken[0]
        fail = _("{case}: the agent failed on this case in the run and in {failed} of {runs} re-runs, where the baseline passed it ({error})",
                 case=case_names([c.key]), failed=c.failed, runs=c.reruns, error=_error(c.error))
    elif broken:
        fail = n_("{n} case the baseline passed: the agent failed on it in the run and in every re-run: {cases}",
                  "{n} cases the baseline passed: the agent failed on each in the run and in every re-run: {cases}",
                  len(broken), cases=case_names(sorted(c.key for c in broken)))
    warnings = []
    left = sorted(c.key for c in crashes if c.verdict == "not_rerun")
    if left:
        why = " " + _("(gate.confirm.runs is 0)") if policy.confirm.runs < 1 else ""
        first = next(c for c in crashes if c.verdict == "not_rerun")
        warnings.append(n_(
            "warning: {n} case the baseline passed was not evaluated: the agent failed on it in this run and it was not re-run{why}: {cases} ({error})",
            "warning: {n} cases the baseline passed were not evaluated: the agent failed on them in this run and they were not re-run{why}: {cases} (the first: {error})",
            len(left), why=why, cases=case_names(left), error=_error(first.error)))
    unsure = sorted(c.key for c in crashes if c.verdict == "unconfirmed")
    if unsure:
        warnings.append(n_(
            "warning: {n} case the baseline passed was not evaluated: the agent failed on it in this run and its re-runs could not all be evaluated: {cases}",
            "warning: {n} cases the baseline passed were not evaluated: the agent failed on them in this run and their re-runs could not all be evaluated: {cases}",
            len(unsure), cases=case_names(unsure)))
    flaky = sorted(c.key for c in crashes if c.verdict == "flaky")
    if flaky:
        warnings.append(n_(
            "the agent failed on {n} case in this run and it passed on re-run: flaky, not counted: {cases}",
            "the agent failed on {n} cases in this run and they passed on re-run: flaky, not counted: {cases}",
            len(flaky), cases=case_names(flaky)))
    return fail, warnings
