"""Confirmation runs, run: each suspect the gate picked (evalgate.gate.confirm.suspects) run
again, its agent re-run or its judge samples re-drawn, and scored afresh into the results.

The pipeline's confirmation step (evalgate.pipeline.confirm) calls `rerun`; what the re-runs
mean for the verdict is the gate's (evalgate.gate.confirm.verdicts, evalgate.gate.stats).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Optional

from evalgate.gate.confirm import Suspect, how


def _plan_case(plans: list, s: Suspect) -> tuple[Any, Any]:
    plan = next(p for p in plans if p.name == s.suite)
    case = next(c for c in plan.cases if (c.eval_set_id, c.eval_id) == (s.eval_set_id, s.eval_id))
    return plan, case


def rerun(
    chosen: list[Suspect],
    plans: list,
    loaded: Any,
    runs: int,
    make_runtime: Callable[[], tuple[Any, int]],
    current: Any,
    secrets: tuple[str, ...] = (),
    agents: bool = True,
    *,
    kept: Optional[dict] = None,
    into: Any = None,
    only_agent: bool = False,
) -> dict[str, int]:
    """Re-run the suspects `runs` times and put each re-run into `current`'s case results
    (`reruns`). `plans` are the run's plans after `evalgate run` scored them (each case's
    first runs in `case.runs`); `make_runtime()` gives (judge runtime or None, workers).
    Returns {"agent": case runs made, "judge": cases re-judged, "none": suspects with nothing
    to re-run, "unstarted": suspects whose agent could not start here (and "why")}. Without
    `agents` (the trusted publish job, whose outputs are a pull request's) no agent runs: a
    suspect is confirmed as recorded outputs are, its judge samples re-drawn.

    `kept` ({} the first time, the same dict after): each suspect's agent re-runs so far;
    a suspect found there gets `runs` more, appended to its `reruns` and numbered on
    (evalgate.gate.control.more). `into`: the results the re-runs go to instead of
    `current` (the baseline's, for re-runs at the base commit: `loaded` is then the config
    read inside the base commit's tree), with `only_agent` (no judge re-draws there)."""
    from evalgate import infer
    from evalgate.engine import SuitePlan, needs_judge
    from evalgate.errors import InputError

    counts = {"agent": 0, "judge": 0, "none": 0, "unstarted": 0}
    if runs < 1 or not chosen:
        return counts
    sub: dict[str, Any] = {}
    reuse: dict = {}
    work: list[tuple[Suspect, Any, Any, str]] = []
    kept = {} if kept is None else kept
    target = current if into is None else into
    before: dict[tuple[str, str, str], int] = {}  # agent re-runs a suspect had before this call
    for s in chosen:
        plan, case = _plan_case(plans, s)
        kind = how(plan, s)
        if kind == "agent" and not agents:
            kind = "judge" if s.judged and not s.crashed else None
        if kind == "judge" and only_agent:
            kind = None
        if kind is None:
            counts["none"] += 1
            continue
        work.append((s, plan, case, kind))
        if kind == "agent":
            key = (plan.name, case.eval_set_id, case.eval_id)
            earlier = kept.get(key, [])
            before[key] = len(earlier)
            first = plan.agent.num_runs if case.runs and into is None else 0  # a sharded run's merge job holds no runs: all are new
            copy = replace(case, runs=[], actual=None)
            sub.setdefault(plan.name, {})[case.eval_set_id, case.eval_id] = (plan, copy, first + len(earlier) + runs)
            for n, old in enumerate(case.runs[:first], start=1):  # the first runs stand; only the re-runs run
                reuse[(plan.name, case.eval_set_id, case.eval_id, n)] = replace(old, expected_digest=case.expected_digest)
            for n, old in enumerate(earlier, start=first + 1):  # and the re-runs made before
                reuse[(plan.name, case.eval_set_id, case.eval_id, n)] = replace(old, expected_digest=case.expected_digest)
    sub = _by_count(sub)
    copies = {(p.name, c.eval_set_id, c.eval_id): c for p in sub for c in p.cases}
    runtime, _ = make_runtime() if needs_judge([p for _, p, _, _ in work]) or infer.needs_simulator(sub) else (None, 1)
    try:
        if sub:
            try:
                infer.run_agents(sub, loaded, runtime=runtime, reuse=reuse, secrets=secrets)
            except InputError as e:  # the agent cannot start here (a merge job without its dependencies): the first run stands
                counts["unstarted"] = len(copies)
                counts["why"] = e.problems[0].what  # type: ignore[assignment]
                work = [w for w in work if w[3] != "agent"]
        by_suite = {s.name: {(c.eval_set_id, c.eval_id): c for c in s.cases} for s in target.suites}
        for s, plan, case, kind in work:
            if runtime is not None:
                for crit in case.criteria.values():
                    if crit.judge:
                        crit.bind(runtime)
            result = by_suite[s.suite][(s.eval_set_id, s.eval_id)]
            if kind == "agent":
                key = (s.suite, s.eval_set_id, s.eval_id)
                copy = copies[key]
                done = copy.runs[len(copy.runs) - runs :]
                had = before[key]
                kept[key] = kept.get(key, []) + list(done)
                fresh = [_scored(case, r, i, "agent", result) for i, r in enumerate(done, start=had + 1)]
                result.reruns = (list(result.reruns or []) + fresh) if had else fresh
                counts["agent"] += len(done)
            else:
                result.reruns = [_scored(case, None, i, "judge", result) for i in range(1, runs + 1)]
                counts["judge"] += 1
    finally:
        if runtime is not None:
            runtime.close()
    return counts


def _by_count(cases: dict) -> list:
    """One SuitePlan per suite and number of runs (a suspect re-run again has more runs than
    one re-run the first time), each with the suite's agent set to that many runs."""
    from evalgate.engine import SuitePlan

    out: dict[tuple[str, int], Any] = {}
    for name, found in cases.items():
        for plan, copy, n in found.values():
            sub = out.get((name, n))
            if sub is None:
                agent = plan.agent.model_copy(update={"num_runs": n})
                sub = out[name, n] = SuitePlan(plan.name, [], plan.not_evaluated, agent=agent, agent_where=plan.agent_where)
            sub.cases.append(copy)
    return list(out.values())


def _scored(case: Any, run: Any, i: int, kind: str, first: Any) -> Any:
    """One re-run of a case scored: every criterion on the new agent run, or the judge
    criteria re-drawn on the same outputs (the others as the first run had them)."""
    from evalgate.engine import case_status, score_case
    from evalgate.judge.request import REDRAW
    from evalgate.results import Rerun

    token = REDRAW.set(i)
    try:
        if kind == "agent":
            scored = score_case(replace(case, runs=[run], actual=run.invocations if run.error is None else None))
            criteria = scored.criteria
            invocations = scored.invocations
        else:
            judged = {n: c for n, c in case.criteria.items() if c.judge}
            criteria = dict(first.criteria)
            criteria.update(score_case(replace(case, criteria=judged)).criteria)
            invocations = []
    finally:
        REDRAW.reset(token)
    return Rerun(run=i, how=kind, status=case_status(criteria), criteria=dict(sorted(criteria.items())), invocations=invocations,
                 error=run.error if run is not None else None)
