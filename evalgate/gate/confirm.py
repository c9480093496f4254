"""Confirmation runs (`gate.confirm`): re-run the cases a pull request's run suspects, so a
broken case is told from a chance failure before the gate decides.

After the run is compared (evalgate.gate.compare), `suspects` picks the cases the ledger calls
stable that broke now, then the cases that went from PASSED to FAILED, at most `max_cases`,
in that order. `rerun` runs each suspect's agent again `runs` times (fresh sessions, the same
runner: the infer step's machinery, the first run's case runs reused so only the new ones
run) and scores every re-run afresh, judge samples included (never from the cache:
evalgate.judge.request.REDRAW). Where the outputs are recorded (`actual:`) there is no
agent to re-run: a suspect whose suspect criteria are judged re-draws judge samples on the
same outputs, and one of a deterministic criterion is left as the first run had it. The
re-runs go into the results (`CaseResult.reruns`), apart from the first run, and the gate is
compared again: `verdicts` is what the breakage test then reads (evalgate.gate.stats says how a
confirmed break is weighed). `lines` says per suspect what the re-runs showed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Optional

from evalgate.gate.model import ConfirmPolicy  # noqa: F401  (its home was here; the config's gate section holds it)
from evalgate.i18n import _


@dataclass
class Suspect:
    suite: str
    eval_set_id: str
    eval_id: str
    criteria: list[str]  # the criteria that made it a suspect
    stable: bool  # a stable case that broke (else it went from PASSED to FAILED, or crashed)
    judged: list[str] = field(default_factory=list)  # of `criteria`, the judge criteria
    crashed: bool = False  # the agent failed on it where the baseline passed (evalgate.gate.crash)

    @property
    def name(self) -> str:
        return f"{self.eval_set_id}/{self.eval_id}"


def suspects(comparison: Any, current: Any, max_cases: int, flips: bool = True) -> tuple[list[Suspect], int]:
    """(the suspects to re-run, in priority order, at most max_cases; how many were left out).
    Stable cases that broke come first, those of the most significant breakage test first;
    then, on the first days (no case stable yet: evalgate.gate.firstday), the cases the
    baseline passed that broke now, where they could FAIL their criterion at all
    (evalgate.gate.firstday.could_decide; comp.first_day is empty otherwise);
    then cases the baseline passed whose agent run failed now (evalgate.gate.crash: "agent
    run failed on a case the baseline passed"; a judge's failure is not one) and cases with a
    criterion the baseline evaluated that is not evaluated now, its service up
    (evalgate.gate.refused); then, with
    `flips`, cases whose deterministic criteria went from PASSED to FAILED, by suite and name. The gate asks for flips only under `deterministic_flips: fail`, where a
    flip decides the verdict: elsewhere the tests that read flips (the mean drop) read the
    first run only, so their re-runs would change nothing and cost agent runs (bench_gate
    --confirm, unchanged PRs of its flaky agent: 12% more agent runs with every flip a
    suspect, 2% without)."""
    found: dict[tuple[str, str, str], Suspect] = {}
    ranked: list[tuple[tuple, tuple[str, str, str]]] = []

    def suspect(key: tuple[str, str, str], rank: tuple[int, float], names: list[str], stable: bool = False) -> Suspect:
        """The case's suspect, made (and ranked by `rank`) the first time it is named; `names`
        added to its criteria."""
        s = found.get(key)
        if s is None:
            s = found[key] = Suspect(*key, criteria=[], stable=stable)
            ranked.append(((*rank, key), key))
        s.criteria += [n for n in names if n not in s.criteria]
        return s

    for suite in comparison.suites:
        judge = {c.criterion: c.judge for c in suite.criteria}
        result = next((r for r in current.suites if r.name == suite.name), None)
        cases = {(c.eval_set_id, c.eval_id): c for c in (result.cases if result is not None else [])}
        for comp in sorted(suite.criteria, key=lambda c: (c.breakage_p if c.breakage_p is not None else 1.0, c.criterion)):
            for k in sorted(comp.broken):
                p = comp.breakage_p if comp.breakage_p is not None else 1.0
                suspect((k.suite, k.eval_set_id, k.eval_id), (0, p), [comp.criterion], stable=True)
        for comp in sorted(suite.criteria, key=lambda c: c.criterion):  # the first days: the cases the baseline passed that broke now
            for k in sorted(comp.first_day):
                suspect((k.suite, k.eval_set_id, k.eval_id), (0, 1.0), [comp.criterion])
        for c in suite.crashes:
            suspect((c.key.suite, c.key.eval_set_id, c.key.eval_id), (1, 1.0), list(c.criteria)).crashed = True
        for r in suite.refused:  # not evaluated now, its service up (evalgate.gate.refused)
            if r.service is None:
                suspect((r.key.suite, r.key.eval_set_id, r.key.eval_id), (1, 1.0), [r.criterion])
        for change in suite.changes if flips else []:
            if change.kind not in ("regressed", "broken_stable"):
                continue
            k = change.key
            now = cases.get((k.eval_set_id, k.eval_id))
            fell = [n for n in change.criteria if n in judge and not judge[n] and now is not None and n in now.criteria and now.criteria[n].status.value == "FAILED"]
            suspect((k.suite, k.eval_set_id, k.eval_id), (2, 1.0), fell)
        for s in found.values():
            if s.suite == suite.name:
                s.judged = [n for n in s.criteria if judge.get(n)]
    ranked.sort()
    chosen = [found[key] for _, key in ranked if found[key].criteria]
    return chosen[:max_cases], max(0, len(chosen) - max_cases)


def how(plan: Any, s: Suspect) -> Optional[Literal["agent", "judge"]]:
    """How a suspect is confirmed: its agent re-run; its judge samples re-drawn on recorded
    outputs (evalgate.gate.stats says why not on an agent's); None: nothing to re-run."""
    if plan.agent is not None:
        return "agent"
    return "judge" if s.judged and not s.crashed else None  # a failed run's outputs: nothing to re-judge


# --- what the breakage test reads, and what the reports say ------------------------------


def rerun_outcomes(reruns: Optional[list], criterion: str, judge: bool) -> Optional[list[float]]:
    """The criterion's outcome in each re-run (evalgate.gate.values.outcome), or None when a
    re-run did not evaluate it."""
    from evalgate.gate import outcome

    out = []
    for r in reruns or []:
        result = r.criteria.get(criterion)
        o = outcome(result, judge) if result is not None else None
        if o is None:
            return None
        out.append(o)
    return out


def passed_again(reruns: Optional[list], criterion: str) -> bool:
    """Whether some re-run passed the (deterministic) criterion: a flip that was flaky."""
    return any(r.criteria.get(criterion) is not None and r.criteria[criterion].status.value == "PASSED" for r in reruns or [])


def verdicts(broken: list[bool], keys: list, reruns: dict, criterion: str, judge: bool, runs: int) -> Optional[list[bool]]:
    """Per stable case, whether it counts as broken after confirmation: broke now and failed
    in every one of `runs` re-runs. None when confirmation is off or some case that broke
    has not `runs` evaluated re-runs: the breakage test then reads the first run alone."""
    from evalgate.gate.stats import failed

    seen = _broken_reruns(broken, keys, reruns, criterion, judge, runs)
    return None if seen is None else [o is not None and all(failed(x) for x in o[:runs]) for o in seen]


def grades(broken: list[bool], keys: list, reruns: dict, criterion: str, judge: bool, runs: int) -> Optional[list[Optional[tuple[int, int]]]]:
    """Per stable case, what its confirmation runs showed: None when it did not break now,
    else (re-runs that failed the criterion, re-runs evaluated): all failed, broken; some,
    newly flaky; none, flaky. Every evaluated re-run counts, so a case the pipeline re-ran
    again (evalgate.gate.control.more) is read whole. None overall, as `verdicts`, when
    confirmation is off or some case that broke has not `runs` evaluated re-runs
    (evalgate.gate.flakiness.graded_test weighs them)."""
    from evalgate.gate.stats import failed

    seen = _broken_reruns(broken, keys, reruns, criterion, judge, runs)
    return None if seen is None else [None if o is None else (sum(failed(x) for x in o), len(o)) for o in seen]


def _broken_reruns(broken: list[bool], keys: list, reruns: dict, criterion: str, judge: bool, runs: int) -> Optional[list[Optional[list]]]:
    """Per stable case, the outcomes of its re-runs when it broke now (None when it did not);
    None overall when confirmation is off, nothing broke, or some case that broke has fewer
    than `runs` evaluated re-runs (what `verdicts` and `grades` read)."""
    if runs < 1 or not any(broken):
        return None
    out: list[Optional[list]] = []
    for b, k in zip(broken, keys):
        if not b:
            out.append(None)
            continue
        outcomes = rerun_outcomes(reruns.get(k), criterion, judge)
        if outcomes is None or len(outcomes) < runs:
            return None
        out.append(outcomes)
    return out


def words(reruns: Optional[list], criteria: list[str], judge: dict[str, bool], newly: bool = False) -> str:
    """What a suspect's re-runs showed: "failed 2 of 2 re-runs: broken", "passed on re-run:
    flaky, not counted", or why they tell nothing; with `newly` (the breakage test weighed
    the case as newly flaky: a stable case that failed some of its re-runs), "failed 3 of 8
    re-runs: newly flaky, weighed as evidence"."""
    from evalgate.gate.stats import failed

    if not reruns:
        return _("not re-run")
    judged = reruns[0].how == "judge"
    fails = evaluated = 0
    for r in reruns:
        outs = [rerun_outcomes([r], n, judge.get(n, False)) for n in criteria]
        if any(o is None for o in outs):
            continue
        evaluated += 1
        fails += any(failed(o[0]) for o in outs if o)
    n = len(reruns)
    if evaluated < n:
        if judged:
            return _("{missing} of {n} re-draws of the judge not evaluated: not confirmed, the first run stands", missing=n - evaluated, n=n)
        return _("{missing} of {n} re-runs not evaluated: not confirmed, the first run stands", missing=n - evaluated, n=n)
    if fails == n:
        return _("failed {fails} of {n} re-draws of the judge: broken", fails=fails, n=n) if judged else _("failed {fails} of {n} re-runs: broken", fails=fails, n=n)
    if newly and fails:
        if judged:
            return _("failed {fails} of {n} re-draws of the judge: newly flaky, weighed as evidence", fails=fails, n=n)
        return _("failed {fails} of {n} re-runs: newly flaky, weighed as evidence", fails=fails, n=n)
    if judged:
        return _("passed on re-draw: flaky, not counted ({passed} of {n} passed)", passed=n - fails, n=n)
    return _("passed on re-run: flaky, not counted ({passed} of {n} passed)", passed=n - fails, n=n)


@dataclass
class Line:
    suite: str
    case: str
    criteria: list[str]
    stable: bool
    text: str


def lines(comparison: Any, current: Any) -> list[Line]:
    """One line per case the gate re-ran, in suite and case order: what its re-runs showed
    for the criteria it was suspected on (the comparison's broken / flaky lists)."""
    from evalgate.gate import crash

    out = []
    for suite in comparison.suites:
        judge = {c.criterion: c.judge for c in suite.criteria}
        crashes = {(c.key.eval_set_id, c.key.eval_id): c for c in suite.crashes}
        result = next((s for s in current.suites if s.name == suite.name), None)
        if result is None:
            continue
        for case in result.cases:
            if not case.reruns:
                continue
            crashed = crashes.get((case.eval_set_id, case.eval_id))
            if crashed is not None:  # the agent failed on it in the run (evalgate.gate.crash)
                out.append(Line(suite.name, f"{case.eval_set_id}/{case.eval_id}", crashed.criteria, False, crash.words(crashed, len(case.reruns))))
                continue
            names = sorted(n for n in case.criteria if case.criteria[n].status.value == "FAILED" and n in judge)
            stable = any(c.criterion in names and _among(case, c.broken + c.newly_flaky + c.flaky) for c in suite.criteria)
            newly = [c.criterion for c in suite.criteria if c.criterion in names and _among(case, c.newly_flaky)]
            broken = any(c.criterion in names and _among(case, c.broken) for c in suite.criteria)
            # Newly flaky (and broken on none): its re-runs counted on the criteria it is newly
            # flaky on, as their reasons count them, not on another criterion's failures.
            text = words(case.reruns, newly, judge, newly=True) if newly and not broken else words(case.reruns, names, judge)
            if any(k.eval_id == case.eval_id and k.eval_set_id == case.eval_set_id for c in suite.criteria for k in c.environment):
                text = _("failed {n} of {n} re-runs, and the base commit's re-runs beside them failed too: the environment's doing, not counted", n=len(case.reruns))
            out.append(Line(suite.name, f"{case.eval_set_id}/{case.eval_id}", names, stable, text))
    return out


def _among(case: Any, keys: list) -> bool:
    return any(k.eval_id == case.eval_id and k.eval_set_id == case.eval_set_id for k in keys)


def rerun_any(current: Any) -> bool:
    return any(c.reruns for s in current.suites for c in s.cases)
