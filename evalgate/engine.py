"""Scoring: apply each suite's criteria to its cases and build the results.

The engine owns what is the same for every criterion: thresholds, averaging invocations,
turning a criterion's exception into a NOT_EVALUATED record, the case status rule, and the
suite's NOT_EVALUATED policy. Criteria only score.
"""

from __future__ import annotations

import contextvars
import json
import threading
import time
from dataclasses import dataclass, field, replace
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from datetime import datetime, timezone
from typing import Any, Callable, Literal, Optional

from evalgate import efficiency, i18n, reasons
from evalgate.adk import Invocation
from evalgate.criteria.base import CaseOutcome, Criterion, Outcome
from evalgate.judge.request import CASE_TALLY, CaseTally
from evalgate.results import (
    AgentLog,
    CaseResult,
    CriterionResult,
    CriterionSpec,
    Counts,
    InvocationSummary,
    RunInfo,
    RunResults,
    Status,
    SuiteResult,
)

NotEvaluatedPolicy = Literal["fail", "warn", "ignore"]


@dataclass
class AgentRun:
    """One run of the agent on a case: its invocations, or why there are none."""

    invocations: list[Invocation] | None
    error: str | None = None  # the run failed: every criterion of it is NOT_EVALUATED with this reason
    run: int = 1
    duration_s: float | None = None  # wall time of the whole case run (not part of the comparable payload)
    ended: str | None = None  # a simulated conversation: why it ended ("stop signal" or "turn limit")
    replayed: dict[str, int] = field(default_factory=dict)  # tools: replay counts, where the runner knows them
    expected_digest: str | None = None  # the case's data it ran on (a resumed run reuses it only if unchanged)
    log: str | None = None  # the tail of what the agent, its tools and ADK wrote during the run (evalgate.agents.capture)
    trace: dict[str, Any] | None = None  # an agents-cli case: this run as `eval generate` writes it (evalgate.agents_cli)
    attempts: int = 1  # how many times the case run was started: more after a transient failure (evalgate.infer)


@dataclass
class CaseInput:
    """One case, ready to score: expected data, actual outputs, and its criteria."""

    eval_set_id: str
    eval_id: str
    criteria: dict[str, Criterion]
    expected_digest: str
    expected: list[Invocation] | None = None  # None: no static conversation (traces, scenarios)
    actual: list[Invocation] | None = None
    trace: Any = None
    source: dict[str, str] = field(default_factory=dict)
    session: dict[str, Any] = field(default_factory=dict)  # ADK session_input, for ADK-shaped output
    # Several runs of the agent (num_runs, or recorded with run numbers). When set, they are
    # what is scored and `actual` is the first run's invocations; when empty, `actual` is
    # the one run.
    runs: list[AgentRun] = field(default_factory=list)
    scenario: dict[str, Any] | None = None  # a conversation_scenario (no expected turns; a simulated user plays it)
    simulator: Any = None  # evalgate.simulated_user.UserSimulatorConfig for a scenario case (None: ADK's defaults)
    rubrics: list[Any] = field(default_factory=list)  # case-level rubrics, for invocations generated later
    parts: dict[str, str] = field(default_factory=dict)  # digests of its expected data, part by part (evalgate.loaders.evalsets.part_digests)
    acli: dict[str, Any] | None = None  # an agents-cli dataset case as written (evalgate.agents_cli.cases.case_dump); None for ADK cases
    history: list[dict[str, Any]] = field(default_factory=list)  # ADK events to seed the session with before the first turn (an N+1 case)
    # Scored while the agent still ran other cases (`Ahead`): a Future of `_score_case`'s
    # result, which `score_suite` takes instead of scoring the case again.
    ahead: Any = field(default=None, repr=False, compare=False)

    def agent_runs(self) -> list[AgentRun]:
        return self.runs or [AgentRun(self.actual)]


@dataclass
class SuitePlan:
    name: str
    cases: list[CaseInput]
    not_evaluated: NotEvaluatedPolicy = "warn"
    warnings: list[str] = field(default_factory=list)
    agent: Any = None  # evalgate.config.AgentConfig: run it to get the actual outputs (evalgate.infer)
    agent_where: tuple = ()  # its place in the config (a JSON path), for messages
    agent_error: str | None = None  # the agent failed on every case run: why


def _status_for(score: float | None, threshold: float) -> Status:
    if score is None:
        return Status.NOT_EVALUATED
    return Status.PASSED if score >= threshold else Status.FAILED


def _invocation_result(outcome: Outcome, threshold: float) -> dict[str, Any]:
    # A dict, validated once with its criterion result: one pydantic call per criterion
    # instead of one per invocation (scoring time is mostly object building otherwise).
    return {
        "score": outcome.score,
        "status": outcome.status or _status_for(outcome.score, threshold),
        "details": outcome.details,
        "error": outcome.error if outcome.score is None else None,
    }


def _mean(scores: list[float]) -> float:
    """The mean, added left to right as ADK adds: Python >= 3.12's sum() compensates rounding
    and can differ from ADK in the last bit, which can flip a status at the threshold."""
    total = 0.0
    for value in scores:
        total += value
    return total / len(scores)


def aggregate(outcomes: list[Outcome], threshold: float) -> CriterionResult:
    """Per-invocation outcomes to a criterion result, as ADK aggregates them.

    The score is the mean over evaluated invocations. A criterion with no evaluated
    invocation is NOT_EVALUATED. A partly evaluated one may fail but never pass: if it
    would pass, it is NOT_EVALUATED, with the reason.
    """
    per = [_invocation_result(o, threshold) for o in outcomes]
    scores = [o.score for o in outcomes if o.score is not None]
    # Turns counted from 1, as the reports count them.
    missing = [reasons.TURN.format(n=i + 1, reason=o.error or reasons.NOT_EVALUATED) for i, o in enumerate(outcomes) if o.score is None]
    score, error = None, None
    if scores:
        score = _mean(scores)
    status = _status_for(score, threshold)
    if not scores:
        error = "; ".join(missing) if missing else reasons.NOTHING
    elif missing:
        error = reasons.SOME_TURNS.format(missing=len(missing), total=len(outcomes), reason="; ".join(missing))
        if status is Status.PASSED:
            status = Status.NOT_EVALUATED
    return CriterionResult.model_validate(
        {"score": score, "status": status, "threshold": threshold, "per_invocation": per, "error": error}
    )


def case_outcome_result(result: CaseOutcome, threshold: float) -> CriterionResult:
    """A whole-case criterion's result: its overall outcome is the case's score and status
    (the threshold applied unless the criterion set a status), its turns are kept as given."""
    overall = result.overall
    return CriterionResult.model_validate(
        {
            "score": overall.score,
            "status": overall.status or _status_for(overall.score, threshold),
            "threshold": threshold,
            "per_invocation": [_invocation_result(o, threshold) for o in result.per_invocation],
            "error": overall.error if overall.score is None else None,
        }
    )


def _failed(threshold: float, error: str) -> CriterionResult:
    return CriterionResult(score=None, status=Status.NOT_EVALUATED, threshold=threshold, error=error)


def score_criterion(crit: Criterion, case: CaseInput) -> CriterionResult:
    """Score one criterion on one case; exceptions become NOT_EVALUATED with the error."""
    try:
        if crit.input_kind == "acli":  # one run of an agents-cli case: its trace, one score (evalgate.criteria.acli)
            return case_outcome_result(crit.score_acli(case, case.agent_runs()[0]), crit.threshold)
        if crit.input_kind == "trace":
            if case.trace is None:
                return _failed(crit.threshold, reasons.NO_TRACE)
            return aggregate([crit.score_trace(case.trace)], crit.threshold)
        if case.actual is None:
            return _failed(crit.threshold, reasons.NO_ACTUAL)
        if getattr(crit, "needs_scenario", False):
            if case.scenario is None:
                return _failed(crit.threshold, reasons.NO_SCENARIO)
            outcomes = crit.score_scenario(case.actual, case.scenario)
            if len(outcomes) != len(case.actual):
                raise RuntimeError(f"{crit.name} gave {len(outcomes)} outcomes for {len(case.actual)} invocations")
            return aggregate(outcomes, crit.threshold)
        if crit.needs_expected and case.expected is None:
            return _failed(crit.threshold, reasons.NO_EXPECTED)
        if case.expected is not None and len(case.expected) != len(case.actual):
            return _failed(
                crit.threshold,
                reasons.COUNT_MISMATCH.format(actual=len(case.actual), expected=len(case.expected)),
            )
        if crit.scope == "case":
            whole = crit.score_case(case.actual, case.expected, case.scenario)
            if len(whole.per_invocation) != len(case.actual):
                raise RuntimeError(f"{crit.name} gave {len(whole.per_invocation)} outcomes for {len(case.actual)} invocations")
            return case_outcome_result(whole, crit.threshold)
        outcomes = crit.score_invocations(case.actual, case.expected)
        if len(outcomes) != len(case.actual):
            raise RuntimeError(f"{crit.name} gave {len(outcomes)} outcomes for {len(case.actual)} invocations")
        return aggregate(outcomes, crit.threshold)
    except Exception as e:  # a criterion's failure is a record, never a crash or a pass
        return _failed(crit.threshold, f"{type(e).__name__}: {e}")


def case_status(criteria: dict[str, CriterionResult]) -> Status:
    """ADK's rule: FAILED if any criterion failed, else PASSED if any passed, else NOT_EVALUATED."""
    statuses = {c.status for c in criteria.values()}
    if Status.FAILED in statuses:
        return Status.FAILED
    if Status.PASSED in statuses:
        return Status.PASSED
    return Status.NOT_EVALUATED


def _summaries(case: CaseInput) -> list[InvocationSummary]:
    if case.actual is None:
        return []
    out = []
    for i, actual in enumerate(case.actual):
        expected = case.expected[i] if case.expected and i < len(case.expected) else None
        out.append(
            InvocationSummary(
                user=actual.user_text() or (expected.user_text() if expected else ""),
                expected_response=expected.final_text() if expected else None,
                actual_response=actual.final_text(),
                expected_tools=[{"name": c.name, "args": c.args} for c in expected.tool_calls()] if expected else None,
                actual_tools=[{"name": c.name, "args": c.args} for c in actual.tool_calls()],
                actual_tool_results=[_tool_result(r.name, r.response) for r in actual.tool_responses()],
            )
        )
    return out


TOOL_RESULT_CHARS = 2000  # of a tool result's JSON kept in the summaries (a pairwise judge reads them)


def _tool_result(name: Optional[str], response: Any) -> dict[str, Any]:
    text = json.dumps(response, ensure_ascii=False, sort_keys=True, default=str)
    if len(text) <= TOOL_RESULT_CHARS:
        return {"name": name, "response": response}
    return {"name": name, "response": text[:TOOL_RESULT_CHARS], "truncated": True}


def score_runs(crit: Criterion, case: CaseInput) -> CriterionResult:
    """Score a criterion on every run of a case. One run: `score_criterion`. Several: ADK's
    AgentEvaluator rule, the mean of every evaluated invocation's score across all runs,
    with each run's own score in `runs`; a run that failed or was not fully evaluated
    makes the criterion NOT_EVALUATED where it would pass, and its reason is kept."""
    runs = case.agent_runs()
    if len(runs) == 1:
        run = runs[0]
        if run.error is not None and crit.input_kind != "trace":
            return _failed(crit.threshold, reasons.AGENT_FAILED.format(error=run.error))
        return score_criterion(crit, case)
    each = []
    for run in runs:
        if run.error is not None:
            each.append(_failed(crit.threshold, reasons.AGENT_FAILED.format(error=run.error)))
        else:
            each.append(score_criterion(crit, replace(case, actual=run.invocations, runs=[run])))
    per = [inv for r in each for inv in r.per_invocation]
    scores = [inv.score for inv in per if inv.score is not None]
    missing = [reasons.RUN.format(n=run.run, reason=r.error) for run, r in zip(runs, each) if r.error]
    score = _mean(scores) if scores else None
    status = _status_for(score, crit.threshold) if crit.has_threshold else (Status.PASSED if score is not None else Status.NOT_EVALUATED)
    error = "; ".join(missing) if missing else None
    if missing and status is Status.PASSED:
        status = Status.NOT_EVALUATED
    statuses = {r.status for r in each}
    if Status.INFORMATIONAL in statuses and not statuses & {Status.PASSED, Status.FAILED}:
        # A value shown, never a verdict, however many runs (as ADK's AgentEvaluator treats it).
        status = Status.INFORMATIONAL
    return CriterionResult(
        score=score,
        status=status,
        threshold=crit.threshold,
        per_invocation=per,
        error=error,
        runs=[r.score for r in each],
    )


class Timing:
    """Where a suite's scoring time went: its wall time, and per criterion the seconds spent
    scoring it, added up over cases (on several threads, they can exceed the wall time).
    Thread-safe; it goes into `run.scoring`, outside the comparable payload."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.criteria: dict[str, float] = {}
        self.seconds = 0.0

    def add(self, name: str, seconds: float) -> None:
        with self._lock:
            self.criteria[name] = self.criteria.get(name, 0.0) + seconds

    def record(self) -> dict[str, Any]:
        return {"seconds": round(self.seconds, 3), "criteria": {k: round(v, 3) for k, v in sorted(self.criteria.items())}}


def part_digests(case: CaseInput) -> dict[str, str] | None:
    """The digests of the parts of the case's data its criteria read, and of what its agent's
    run reads (`run`): the gate pairs a case with its baseline by those the criteria both runs
    share read (evalgate.gate.values.same_data). None without part digests."""
    if not case.parts:
        return None
    reads = set().union(*(crit.reads for crit in case.criteria.values())) if case.criteria else {"*"}
    names = {"run", "*"} if "*" in reads else {"run", *reads}
    return {name: case.parts[name] for name in sorted(names) if name in case.parts}


def score_case(case: CaseInput, timing: Timing | None = None) -> CaseResult:
    result, seconds, _stats = _score_case(case)
    if timing is not None:
        for name, value in seconds.items():
            timing.add(name, value)
    return result


Scored = tuple[CaseResult, dict[str, float], dict[str, dict[str, int]]]


def _score_case(case: CaseInput) -> Scored:
    """The case's result, the seconds spent on each criterion, and the judge runtime's counts
    for it per criterion (evalgate.judge.request.CaseTally)."""
    results = {}
    seconds: dict[str, float] = {}
    tally = CaseTally()
    token = CASE_TALLY.set(tally)
    try:
        for name, crit in sorted(case.criteria.items()):
            t0 = time.perf_counter()
            results[name] = score_runs(crit, case)
            seconds[name] = time.perf_counter() - t0
    finally:
        CASE_TALLY.reset(token)
    for name, service in tally.down.items():  # the service was down, not the case's data refused
        if name in results and results[name].status is Status.NOT_EVALUATED:
            results[name].unavailable = service  # type: ignore[assignment]
    attempts = [r.attempts for r in case.runs]
    result = CaseResult(
        judge_cache_hits=tally.cache_hits or None,
        eval_set_id=case.eval_set_id,
        eval_id=case.eval_id,
        expected_digest=case.expected_digest,
        parts=part_digests(case),
        status=case_status(results),
        criteria=results,
        invocations=_summaries(case),
        source=case.source,
        conversation_end=next((r.ended for r in case.runs if r.ended), None) if case.scenario is not None else None,
        # Informational: shown beside the criteria, never part of the case's status.
        efficiency=efficiency.compute(r.invocations if r.error is None else None for r in case.agent_runs()),
        agent_logs=_agent_logs(case),
        agent_error=next((r.error for r in case.runs if r.error is not None), None),
        agent_attempts=attempts if any(n > 1 for n in attempts) else None,
    )
    return result, seconds, tally.stats


def _agent_logs(case: CaseInput) -> list[AgentLog]:
    return [AgentLog(run=r.run, text=r.log) for r in case.runs if r.log]


def suite_status(counts: Counts, policy: NotEvaluatedPolicy) -> Status:
    """FAILED on any failed case, or under policy `fail` on any case with a criterion that was
    not evaluated; NOT_EVALUATED when nothing passed; PASSED otherwise."""
    if counts.failed or (policy == "fail" and counts.incomplete):
        return Status.FAILED
    if counts.passed == 0:
        return Status.NOT_EVALUATED
    return Status.PASSED


def _specs(cases: list[CaseInput]) -> dict[str, CriterionSpec]:
    specs: dict[str, CriterionSpec] = {}
    for case in cases:
        for name, crit in case.criteria.items():
            if name not in specs:  # the first case's; built once, not once a case
                scale = crit.scale()
                specs[name] = CriterionSpec(
                    threshold=crit.threshold, version=crit.version, judge=crit.judge, options=crit.options(), sampling=crit.sampling(),
                    reads=sorted(crit.reads),
                    no_threshold=not crit.has_threshold, score_range=list(scale) if scale is not None else None,
                )
    return dict(sorted(specs.items()))


def score_suite(
    plan: SuitePlan,
    progress: Callable[[int], None] | None = None,
    runtime: Any = None,
    workers: int = 1,
    timing: Timing | None = None,
) -> SuiteResult:
    """Score a suite's cases, in (eval_set_id, eval_id) order.

    With judge criteria, cases are scored on `workers` threads: a judge criterion spends
    its time waiting for the judge. Its samples run as jobs on the runtime's one executor
    (`JudgeRuntime.map`), and the runtime bounds the requests in flight. Results
    are collected in case order, so they never depend on completion order. `timing`, when
    given, receives the suite's wall time and each criterion's scoring time.
    """
    t0 = time.perf_counter()
    ordered = sorted(plan.cases, key=lambda c: (c.eval_set_id, c.eval_id))
    judged = any(c.judge for case in ordered for c in case.criteria.values())
    # Cases scored while the agent ran (evalgate.infer, `Ahead`) are taken as they were; the
    # others are scored now.
    futures = {id(case): case.ahead for case in ordered if case.ahead is not None}
    pool = None
    if judged and workers > 1 and len(futures) < len(ordered):
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="evalgate-case")
    try:
        if pool is not None or futures:
            for case in ordered:
                if id(case) not in futures:
                    futures[id(case)] = pool.submit(_score_case, case) if pool is not None else _done(_score_case(case))
            if progress:
                for _ in as_completed(futures.values()):
                    progress(1)
            scored = [futures[id(case)].result() for case in ordered]
        else:
            scored = []
            for case in ordered:
                scored.append(_score_case(case))
                if progress:
                    progress(1)
    finally:
        if pool is not None:
            pool.shutdown()
    results = [result for result, _seconds, _counts in scored]
    if timing is not None:
        for _result, seconds, _counts in scored:
            for name, value in seconds.items():
                timing.add(name, value)
    warnings = list(plan.warnings)
    specs = _specs(ordered)
    if judged and runtime is not None:
        counted: dict[str, dict[str, int]] = {}
        for _result, _seconds, counts in scored:  # in case order: the sums never depend on when a case was scored
            for name, values in counts.items():
                total = counted.setdefault(name, {})
                for key, value in values.items():
                    total[key] = total.get(key, 0) + value
        for name, spec in specs.items():
            if spec.judge:
                spec.stats = dict(sorted(counted.get(name, {}).items()))
        warnings.extend(credential_warnings(runtime, ordered))
        refused = sum(spec.stats.get("cache_refused", 0) for spec in specs.values())
        if refused:
            warnings.append(cache_warning(refused))
    if timing is not None:
        timing.seconds = time.perf_counter() - t0
    return finish_suite(plan.name, plan.not_evaluated, results, specs, warnings, plan.agent_error)


INCOMPLETE = i18n.mark("{incomplete} of {cases} cases have criteria that were not evaluated")


def incomplete_warning(counts: Counts, code: Optional[str] = None) -> str:
    """The suite's warning about its incomplete cases, in the current language (or `code`'s)."""
    text = i18n.translations(code).gettext(INCOMPLETE) if code else i18n._(INCOMPLETE)
    return text.format(incomplete=counts.incomplete, cases=counts.cases)


def derived_warnings(suite: SuiteResult) -> set[str]:
    """The warnings of a stored suite that `finish_suite` derives from its cases (the agent
    error, the incomplete cases), in whichever language the run that wrote it used: whoever
    derives a suite again from some of its cases drops these first, so they are not doubled."""
    derived = {incomplete_warning(suite.counts, code) for code in i18n.LANGUAGES}
    if suite.agent_error:
        derived.add(suite.agent_error)
    return derived


def finish_suite(
    name: str,
    policy: NotEvaluatedPolicy,
    cases: list[CaseResult],
    specs: dict[str, CriterionSpec],
    warnings: list[str],
    agent_error: str | None,
) -> SuiteResult:
    """A suite's result from its scored cases: what follows from the cases alone (counts,
    status, the agent-error and incomplete-cases warnings) is derived here, for a scored
    suite and for merged shards alike."""
    counts = Counts.of(cases)
    warnings = list(warnings)
    if agent_error:
        warnings.append(agent_error)
    if counts.incomplete and policy == "warn":
        warnings.append(incomplete_warning(counts))
    return SuiteResult(
        name=name,
        status=suite_status(counts, policy),
        not_evaluated_policy=policy,
        counts=counts,
        criteria=specs,
        warnings=warnings,
        agent_error=agent_error,
        cases=cases,
    )


def finish_run(suites: list[SuiteResult], config_digest: str, info: RunInfo) -> RunResults:
    """The run's result from its suites: overall counts and status. A suite that nothing was
    scored in (its agent never ran) makes the run NOT_EVALUATED, never PASSED: one suite's
    pass must not hide another that was not evaluated."""
    total = Counts.of([case for s in suites for case in s.cases])
    statuses = {s.status for s in suites if s.counts.cases}  # a shard may hold none of a suite's cases
    overall = Status.FAILED if Status.FAILED in statuses else (
        Status.NOT_EVALUATED if Status.NOT_EVALUATED in statuses or not statuses else Status.PASSED
    )
    return RunResults(config_digest=config_digest, status=overall, counts=total, suites=suites, run=info)


def credential_warnings(runtime: Any, cases: list[CaseInput]) -> list[str]:
    """One warning per remote service these cases need and the runtime cannot reach."""
    services = sorted({c.service for case in cases for c in case.criteria.values() if c.judge and c.service})
    check = {"gemini": runtime.credentials, "vertex": runtime.vertex_credentials}
    out = []
    for service in services:
        reason = check[service]()
        if reason:
            if service == "gemini":
                out.append(i18n._("judge criteria: {reason}; only cached results were used", reason=reason))
            else:
                out.append(i18n._("Vertex AI criteria: {reason}; only cached results were used", reason=reason))
    return out


def cache_warning(refused: int) -> str:
    """The suite's warning when stored judge verdicts were found but not believed."""
    return i18n.n_(
        "judge cache: {n} stored verdict was not believed (a file tracked by git, or written by a run this one "
        "does not trust: pull request runs believe only what default-branch runs wrote); the judge was asked "
        "instead. Keep the cache out of the repository (git rm -r --cached it) and let actions/cache restore it.",
        "judge cache: {n} stored verdicts were not believed (a file tracked by git, or written by a run this one "
        "does not trust: pull request runs believe only what default-branch runs wrote); the judge was asked "
        "instead. Keep the cache out of the repository (git rm -r --cached it) and let actions/cache restore it.",
        refused,
    )


def _done(value: Any) -> Future:
    future: Future = Future()
    future.set_result(value)
    return future


class Ahead:
    """Scoring cases while the agent still runs others (evalgate.infer): each case is handed
    over as its last run ends and scored on `workers` threads; its result waits on the case
    (`CaseInput.ahead`) for `score_suite`, which keeps case order. Judge criteria are bound
    to `runtime` first, as `run` binds them."""

    def __init__(self, runtime: Any, workers: int):
        self.runtime = runtime
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="evalgate-ahead")

    def submit(self, case: CaseInput) -> None:
        for crit in case.criteria.values():
            if crit.judge:
                crit.bind(self.runtime)
        # The caller's context (evalgate.judge.request.REDRAW, say) goes with the case.
        case.ahead = self._pool.submit(contextvars.copy_context().run, _score_case, case)

    def close(self) -> None:
        """No more cases: the threads end once the handed-over ones are scored (not waited for here)."""
        self._pool.shutdown(wait=False)


def judge_waits(runtime: Any) -> dict[str, Any]:
    """Where the judge's time went in this run, for `run.judge` ({} without requests): seconds
    added up over requests (in requests, waiting for a slot, for the rate cap, backing off)
    and the concurrency they shared."""
    waits = getattr(runtime, "waits", None)
    if waits is None:
        return {}
    seconds = waits()
    if not any(seconds.values()):
        return {}
    return {**seconds, "concurrency": runtime.concurrency}


def needs_judge(plans: list[SuitePlan]) -> bool:
    return any(c.judge for p in plans for case in p.cases for c in case.criteria.values())


def run(
    plans: list[SuitePlan],
    config_digest: str,
    progress: Callable[[int], None] | None = None,
    runtime: Any = None,
    workers: int = 1,
) -> RunResults:
    """Score every suite. Suites keep config order; cases are sorted by (eval_set_id, eval_id).

    `runtime` (a judge runtime) is bound to every judge criterion; without one, judge
    criteria are NOT_EVALUATED with the reason.
    """
    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    if runtime is not None:
        for p in plans:
            for case in p.cases:
                for crit in case.criteria.values():
                    if crit.judge:
                        crit.bind(runtime)
    timings = {p.name: Timing() for p in plans}
    suites = [score_suite(p, progress, runtime, workers, timings[p.name]) for p in plans]
    for p in plans:
        for case in p.cases:
            case.ahead = None  # taken: a later scoring of these plans (a confirmation run) scores afresh
    info = RunInfo(
        started_at=started.isoformat(timespec="seconds"),
        duration_seconds=round(time.perf_counter() - t0, 3),
        scoring={name: t.record() for name, t in timings.items()},
        judge=judge_waits(runtime),
    )
    return finish_run(suites, config_digest, info)
