"""Run the agent on every case of the suites that have one: the `infer` step.

It fills each case's `runs` with what `actual:` files would have given (one `AgentRun`
per run, in run order), so scoring never knows which it got. Case runs of all suites go
through one event loop, at most `concurrency` in flight per configured agent. A failed run
(an exception in the agent or a tool, a timeout, a crashed command, an HTTP error, a turn
the agent did not answer) is recorded with its reason and never stops the others; setup
problems (the agent cannot be loaded or reached) are input errors, raised before any case
runs.

A case run that fails on a transient error (HTTP 429 or 5xx from the model or the server, a
reset or dropped connection, a client's own timeout; a command exiting with 75, EX_TEMPFAIL)
is started again, up to `agent.max_attempts` times, after a backoff or as long as the
server's Retry-After asks (`transient`). With `score_ahead`, each case is scored as soon as
its last run ends (evalgate.engine.Ahead), while others still run. When the judge and the
agent share a model (and so its quota), case runs and judge requests share one budget of
slots (evalgate.judge.pool.Budget), the larger of `agent.concurrency` and
`judge.concurrency`: never more in flight on that model than when the two steps ran one after
the other, and either side uses the slots the other leaves free. Otherwise each keeps its
own limit.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, TextIO

from pydantic import ValidationError

from evalgate.agents import AgentError, CaseRun, Runner, capture, make_runner
from evalgate.efficiency import token_details
from evalgate.engine import AgentRun, CaseInput, SuitePlan
from evalgate.config import LoadedConfig
from evalgate.errors import InputError, Problem, ProblemCollector, display_path
from evalgate.i18n import _
from evalgate.judge.pool import IN_CASE_RUN
from evalgate.loaders.actual import InferenceRecord
from evalgate.reading import validate_known
from evalgate.simulated_user import CRITERION as SIMULATOR
from evalgate.simulated_user import Scenario, SimulatedUser, SimulationError, UserSimulatorConfig
from evalgate.untrusted import writable


def runners_for(plans: list[SuitePlan], loaded: LoadedConfig) -> dict[int, Runner]:
    """One runner per configured agent (suites sharing the top-level agent share one), keyed
    by id() of the agent config."""
    out: dict[int, Runner] = {}
    for plan in plans:
        if plan.agent is not None and id(plan.agent) not in out:
            loc = plan.agent_where
            out[id(plan.agent)] = make_runner(plan.agent, loaded.base, loaded.shown, lambda *keys, loc=loc: loaded.where(*loc, *keys))
    return out


def check(plans: list[SuitePlan], loaded: LoadedConfig) -> None:
    """The cheap setup checks (`evalgate validate`): nothing is loaded or called."""
    problems = ProblemCollector()
    for runner in runners_for(plans, loaded).values():
        problems.extend(runner.check())
    problems.raise_if_any()


def total_runs(plans: list[SuitePlan]) -> int:
    return sum(len(p.cases) * p.agent.num_runs for p in plans if p.agent is not None)


RunKey = tuple[str, str, str, int]  # (suite, eval_set_id, eval_id, run)
RESUME_FILE = "resume.json"


class Journal:
    """`<out>/inference.jsonl` written as the run goes: each case run is appended the moment
    it ends, so an interrupted run leaves every finished case run behind, and
    `<out>/resume.json` says which config, commit and shard they belong to. At the end
    `write_inference` rewrites the file in case order."""

    def __init__(self, out: Path, config_digest: str, commit: Optional[str], shard: Optional[str]):
        from evalgate import writing

        state = {"config_digest": config_digest, "commit": commit, "shard": shard}
        writing.write_text(out / RESUME_FILE, json.dumps(state, indent=2) + "\n")
        self._file = writing.open_stream(out / "inference.jsonl")

    def add(self, suite: str, case: CaseInput, run: AgentRun) -> None:
        self._file.write(inference_line(suite, case, run) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def resumable(folder: Path, config_digest: str, commit: Optional[str]) -> dict[RunKey, AgentRun]:
    """The finished case runs of an earlier run in `folder` (interrupted, or with failed case
    runs), for `run --resume`: every run that succeeded there, keyed by suite, case and run
    number. Failed runs are not reused (they run again). The earlier run must have had the
    same config digest and commit; a case whose data changed since is run again (its
    expected_digest differs)."""
    shown = display_path(folder)
    state_path = folder / RESUME_FILE
    if not state_path.is_file():
        raise InputError(
            Problem(shown, None, f"has no {RESUME_FILE}, so it is not the output folder of a run that ran the agent", "Pass --resume the --out folder of an earlier `evalgate run` of this config (evalgate 0.x writes resume.json beside inference.jsonl), or run without --resume.")
        )
    try:
        state = json.loads(state_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(Problem(display_path(state_path), None, f"cannot be read ({e})", "Run without --resume.")) from None
    if state.get("config_digest") != config_digest:
        raise InputError(
            Problem(display_path(state_path), "config_digest", "the earlier run had another config (its suites, criteria, num_runs or tools differ), so its agent runs do not answer this run's question", "Run without --resume.")
        )
    if commit and state.get("commit") and state["commit"] != commit:
        raise InputError(
            Problem(display_path(state_path), "commit", f"the earlier run evaluated commit {state['commit'][:12]}, this is {commit[:12]}: its agent runs are of other code", "Run without --resume.")
        )
    out: dict[RunKey, AgentRun] = {}
    path = folder / "inference.jsonl"
    if not path.is_file():
        return out
    for line in path.read_text(encoding="utf-8", errors="replace").split("\n"):
        try:
            rec, _ = validate_known(InferenceRecord, json.loads(line))  # keys of another evalgate version: not needed here
        except (ValidationError, ValueError, RecursionError):
            continue  # a blank line, or the last line of a run stopped while writing it
        if rec.error is not None or rec.suite is None or rec.run is None or rec.expected_digest is None:
            continue
        out[(rec.suite, rec.eval_set_id, rec.eval_id, rec.run)] = AgentRun(
            rec.invocations, run=rec.run, ended=rec.ended, expected_digest=rec.expected_digest, log=rec.log, attempts=rec.attempts or 1
        )
    return out


@dataclass
class Usage:
    """What running the agent cost, per suite (goes to results.json's `run`, not compared)."""

    case_runs: int = 0
    failed: int = 0
    duration_s: float = 0.0  # the sum of case-run wall times
    tokens: dict[str, int] = field(default_factory=dict)
    replayed: dict[str, int] = field(default_factory=dict)
    reused: int = 0  # case runs taken from an earlier run (run --resume), not run again
    retried: int = 0  # case runs started more than once (a transient failure)

    def add(self, run: AgentRun) -> None:
        self.case_runs += 1
        self.failed += run.error is not None
        self.retried += run.attempts > 1
        self.duration_s += run.duration_s or 0.0
        for inv in run.invocations or []:
            # Counted as ADK's token_usage_v1 counts them (evalgate.efficiency): input is
            # prompt and tool-use prompt, output is candidates and thoughts; the backend's own
            # total_token_count is not used.
            tokens = token_details(inv)
            for k, name in (("prompt", "input_tokens"), ("output", "output_tokens"), ("total", "total_tokens")):
                if tokens[name] is not None:
                    self.tokens[k] = self.tokens.get(k, 0) + int(tokens[name])
        for k, v in run.replayed.items():
            self.replayed[k] = self.replayed.get(k, 0) + v

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"case_runs": self.case_runs, "failed": self.failed, "duration_s": round(self.duration_s, 3)}
        if self.tokens:
            out["tokens"] = dict(sorted(self.tokens.items()))
        if self.replayed:
            out["tools"] = dict(sorted(self.replayed.items()))
        if self.reused:
            out["reused"] = self.reused
        if self.retried:
            out["retried"] = self.retried
        return out


def needs_simulator(plans: list[SuitePlan]) -> bool:
    """Whether any suite runs its agent on a conversation_scenario case."""
    return any(p.agent is not None and c.scenario is not None for p in plans for c in p.cases)


def needs_runtime(plans: list[SuitePlan]) -> bool:
    """Whether the run needs the judge runtime: for judge criteria or simulated users."""
    from evalgate.engine import needs_judge

    return needs_judge(plans) or needs_simulator(plans)


async def _infer(
    plans: list[SuitePlan],
    runners: dict[int, Runner],
    progress: Optional[Callable[[int], None]],
    runtime: Any,
    journal: Optional["Journal"],
    reuse: dict[RunKey, AgentRun],
    logs: "LogOptions",
    secrets: tuple[str, ...] = (),
    ahead: Any = None,
    clock: Optional["RunClock"] = None,
) -> dict[str, Usage]:
    problems = ProblemCollector()
    clock = clock or RunClock()
    # Every case run starts as "not run"; those an earlier run finished (`reuse`) are taken
    # from it before any runner starts, so a resumed run with nothing left loads no agent.
    todo: list[tuple[SuitePlan, CaseInput, int]] = []
    reused: Counter = Counter()
    for plan in plans:
        if plan.agent is None:
            continue
        for case in plan.cases:
            case.runs = [AgentRun(None, "not run", run=n) for n in range(1, plan.agent.num_runs + 1)]
            for n in range(1, plan.agent.num_runs + 1):
                old = reuse.get((plan.name, case.eval_set_id, case.eval_id, n))
                if old is None or old.expected_digest != case.expected_digest:
                    todo.append((plan, case, n))
                    continue
                case.runs[n - 1] = old
                reused[plan.name] += 1
                if journal is not None:
                    journal.add(plan.name, case, old)
                if progress is not None:
                    progress(1)
    wanted = {id(plan.agent) for plan, _, _ in todo}
    runners = {key: r for key, r in runners.items() if key in wanted}
    # Each case is finished (its actual outputs chosen, handed to `ahead`) once, when its last
    # run ends; cases with nothing to run, after the runs.
    left: Counter = Counter(id(case) for _plan, case, _n in todo)
    plan_of = {id(case): plan for plan in plans if plan.agent is not None for case in plan.cases}
    infos: dict[int, tuple[Optional[str], dict[str, Any]]] = {}
    done: set[int] = set()

    def finished(case: CaseInput) -> None:
        left[id(case)] -= 1
        if left[id(case)] <= 0:
            _finish_case(plan_of[id(case)], case, infos, ahead, done)

    started: list[Runner] = []
    try:
        for runner in runners.values():
            try:
                await runner.start()
                started.append(runner)
            except InputError as e:
                problems.extend(e.problems)
        problems.raise_if_any()
        limits = {key: asyncio.Semaphore(r.spec.concurrency) for key, r in runners.items()}
        budget = None
        if ahead is not None and runners and _shares_a_model(plans, runners):
            from evalgate.judge.pool import Budget

            # One model, one quota: as many in flight on it as the larger of the two limits
            # allowed when the agent ran first and the judge after it, either side using what
            # the other leaves free (the judge, until the run ends).
            budget = Budget(max([r.spec.concurrency for r in runners.values()] + [ahead.runtime.concurrency]))
            ahead.runtime.share(budget)
            clock.shared = budget.size
        clock.concurrency = max((r.spec.concurrency for r in runners.values()), default=None)
        for plan in plans:
            if runtime is not None and plan.agent is not None and any(c.scenario is not None for c in plan.cases):
                reason = runtime.credentials()
                if reason:
                    plan.warnings.append(_("simulated users: {reason}; conversation_scenario cases were not run", reason=reason))
        hidden = _known_secrets(secrets)
        # What agents-cli traces record of the agent (its root's name, its tree), asked once
        # per runner that runs dataset cases.
        acli = {id(p.agent) for p, case, _n in todo if case.acli is not None}
        infos.update({key: await _agent_info(r) for key, r in runners.items() if key in acli})
        await asyncio.gather(
            *(
                _one(runners[id(p.agent)], limits[id(p.agent)], p, case, n, progress, runtime, journal, logs, hidden, infos.get(id(p.agent)), budget, clock, finished)
                for p, case, n in todo
            )
        )
    finally:
        for runner in started:
            try:
                await runner.stop()
            except Exception:
                pass
    for plan in plans:
        for case in plan.cases if plan.agent is not None else []:
            if id(case) not in done:
                _finish_case(plan, case, infos, ahead, done)
    usage: dict[str, Usage] = {}
    for plan in plans:
        if plan.agent is None:
            continue
        u = usage.setdefault(plan.name, Usage(reused=reused[plan.name]))
        for case in plan.cases:
            for run in case.runs:
                u.add(run)
        if u.case_runs and u.failed == u.case_runs:
            plan.agent_error = agent_error(Counter(r.error or "" for case in plan.cases for r in case.runs))
    return usage


def _shares_a_model(plans: list[SuitePlan], runners: dict[int, Runner]) -> bool:
    """Whether a judge criterion asks a Gemini model an agent calls too (so they share its
    quota): known for in-process agents; an API server's or a command's models are not."""
    judges = {
        crit.judge_model_options.judge_model.rsplit("/", 1)[-1]
        for plan in plans
        for case in plan.cases
        for crit in case.criteria.values()
        if crit.judge and crit.service == "gemini" and hasattr(crit, "judge_model_options")
    }
    for runner in runners.values():
        models = runner.models()
        if models and models & judges:
            return True
    return False


def _finish_case(plan: SuitePlan, case: CaseInput, infos: dict[int, tuple[Optional[str], dict[str, Any]]], ahead: Any, done: set[int]) -> None:
    """A case whose runs have all ended: its actual outputs (the first successful run's), its
    rubrics on them, the traces of runs an earlier run (--resume) made; then, with `ahead`,
    scored at once (its suite's plan-level warnings are the suite's, added when it is scored)."""
    done.add(id(case))
    if id(plan.agent) in infos and case.acli is not None:
        # Runs taken from an earlier run (--resume) kept no trace: made now, with what this
        # run learnt of the agent (when none of its runs ran here, write_traces makes them
        # without it).
        for run in case.runs:
            if run.trace is None and run.error is None and run.invocations is not None:
                run.trace = case_trace(plan, case, run, *infos[id(plan.agent)])
    ok = next((r for r in case.runs if r.error is None), None)
    case.actual = ok.invocations if ok is not None else None
    if case.rubrics and case.expected is None:
        _rubrics_on_generated(case)
    if ahead is not None and any(c.judge for c in case.criteria.values()):
        ahead.submit(case)


async def _agent_info(runner: Runner) -> tuple[Optional[str], dict[str, Any]]:
    try:
        return await runner.agent_info()
    except Exception:  # the traces go without it, as agents-cli's do when /app-info fails
        return None, {}


# What made a case run fail, read from the exception's type and HTTP status as `_describe`
# wrote them ("ClientError: 403 PERMISSION_DENIED. ..."), in the order they are tried: a
# missing key, a refused one, a spent quota, a host out of reach, a timeout, a failing service.
_CAUSES: list[tuple[str, re.Pattern[str]]] = [
    ("missing_key", re.compile(r"No API key was provided|Missing key inputs argument|default credentials were not found|DefaultCredentialsError", re.I)),
    ("refused_key", re.compile(r"(?:^|: |HTTP )40[13]\b|UNAUTHENTICATED|PERMISSION_DENIED|API_KEY_INVALID|API key not valid", re.I)),
    ("quota", re.compile(r"(?:^|: )429\b|RESOURCE_EXHAUSTED|HTTP 429")),
    ("unreachable", re.compile(
        r"^(?:ConnectError|ClientConnectorError|ClientConnectorDNSError|ConnectionRefusedError|ConnectionResetError|ConnectionError|"
        r"ServerDisconnectedError|RemoteProtocolError|ReadError|WriteError|ClientOSError|gaierror)\b|Cannot connect to host|Connection refused|Name or service not known|"
        r"nodename nor servname|Temporary failure in name resolution|All connection attempts failed"
    )),
    ("timeout", re.compile(r"^(?:TimeoutError|ReadTimeout|ConnectTimeout|TimeoutException|ServerTimeoutError)\b|timed out after", re.I)),
    ("service", re.compile(r"(?:^|: )5\d\d\b|\bUNAVAILABLE\b|\bINTERNAL\b|HTTP 5\d\d")),
]


def failure_cause(error: str) -> Optional[str]:
    """Why a case run failed, from its recorded error (`TypeName: message`): "missing_key",
    "refused_key", "quota", "unreachable", "timeout", "service", or None for anything else
    (the agent's or a tool's own exception)."""
    for cause, pattern in _CAUSES:
        if pattern.search(error):
            return cause
    return None


def agent_error(reasons: Counter) -> str:
    """The suite's error when the agent failed on every case run, from the count of each
    failure reason: what the most common one says the cause was (a missing key, a refused
    one, a quota, a host out of reach, a timeout, the model's service), said plainly, besides
    every case's own NOT_EVALUATED reason. Ties go to the reason that sorts first, so the
    text does not depend on the order runs ended."""
    common, n = max(sorted(reasons.items()), key=lambda item: item[1])
    fields = {"n": n, "runs": sum(reasons.values()), "error": common}
    cause = failure_cause(common)
    if cause == "missing_key":
        return _(
            "the agent failed on every case run, so nothing it does was scored; without its model's key (a fork's "
            "pull request has no secrets) the gate cannot judge it here. The error of {n} of {runs} runs: {error}",
            **fields,
        )
    if cause == "refused_key":
        return _(
            "the agent failed on every case run, so nothing it does was scored: its credentials were refused "
            "(the key is set, but wrong, expired or without permission). The error of {n} of {runs} runs: {error}",
            **fields,
        )
    if cause == "quota":
        return _(
            "the agent failed on every case run, so nothing it does was scored: the model's quota ran out "
            "(lower agent.concurrency, or raise the quota). The error of {n} of {runs} runs: {error}",
            **fields,
        )
    if cause == "unreachable":
        return _(
            "the agent failed on every case run, so nothing it does was scored: the model's host could not be "
            "reached (an outage, a proxy or a wrong endpoint; not a missing key). The error of {n} of {runs} runs: {error}",
            **fields,
        )
    if cause == "timeout":
        return _(
            "the agent failed on every case run, so nothing it does was scored: the runs timed out "
            "(a slow or stalled model; raise agent.timeout_s if it is only slow). The error of {n} of {runs} runs: {error}",
            **fields,
        )
    if cause == "service":
        return _(
            "the agent failed on every case run, so nothing it does was scored: the model's service failed "
            "(an error on its side; run again later). The error of {n} of {runs} runs: {error}",
            **fields,
        )
    return _("the agent failed on every case run, so nothing it does was scored. The error of {n} of {runs} runs: {error}", **fields)


@dataclass
class LogOptions:
    """What happens to the output of the agent, its tools and ADK while case runs go on
    (see `evalgate.agents.capture`): always kept per case run (`AgentRun.log`); with `live`
    (a stream, the real stderr) also written there at once, line by line, for debugging.
    `failed(suite, case, run)` is called as each failed case run ends."""

    live: Optional[TextIO] = None
    failed: Optional[Callable[[str, CaseInput, AgentRun], None]] = None


def run_agents(
    plans: list[SuitePlan],
    loaded: LoadedConfig,
    progress: Optional[Callable[[int], None]] = None,
    runtime: Any = None,
    journal: Optional["Journal"] = None,
    reuse: Optional[dict[RunKey, AgentRun]] = None,
    logs: Optional[LogOptions] = None,
    secrets: tuple[str, ...] = (),
    score_ahead: bool = False,
) -> dict[str, Any]:
    """Run every agent suite's cases `num_runs` times; fills `case.runs` and `case.actual`.
    `runtime` (the judge runtime) plays the simulated user of scenario cases. Each finished
    case run goes to `journal` at once; case runs found in `reuse` (an earlier run's, see
    `resumable`) are taken from there and not run. What the agent writes meanwhile is
    captured per case run (`logs` says what else to do with it). What an agent run gives
    back (its invocations, its error) is written nowhere before the values of secret-looking
    environment variables and `secrets` (the GitHub token, say) are replaced in it.

    With `score_ahead` (and a judge runtime), each case with judge criteria is scored as
    soon as its last run ends, on the runtime's threads, while others still run; the caller
    then scores with `evalgate.engine.run`, which takes those results (in case order, the
    same as scoring them afterwards). Leave it off when the caller scores the cases itself.

    Returns what goes into results.json's `run.agent` ({} when no suite runs an agent):
    the step's wall time, the usage per suite, where the time went (waiting for a slot,
    backing off before a new attempt), and the simulated users' requests, cache hits and
    tokens when there were any."""
    t0 = time.perf_counter()
    runners = runners_for(plans, loaded)
    if not runners:
        return {}
    ahead = None
    if score_ahead and runtime is not None:
        from evalgate.engine import Ahead, needs_judge

        if needs_judge(plans):
            ahead = Ahead(runtime, runtime.concurrency * 4)  # as many case threads as `evalgate run` scores on
    clock = RunClock()
    try:
        with capture.capture():
            usage = asyncio.run(_infer(plans, runners, progress, runtime, journal, reuse or {}, logs or LogOptions(), tuple(secrets), ahead, clock))
    finally:
        if ahead is not None:
            ahead.close()
    out: dict[str, Any] = {"seconds": round(time.perf_counter() - t0, 3), "suites": {name: u.as_dict() for name, u in usage.items()}}
    out.update(clock.record())
    simulator = runtime.stats().get(SIMULATOR) if runtime is not None else None
    if simulator:
        out["simulator"] = simulator
    return out


def write_inference(plans: list[SuitePlan], path: Path) -> None:
    """`<out>/inference.jsonl`: the outputs of every case scored (see inference_lines); not
    written when there are none (a run of trace suites only)."""
    lines = inference_lines(plans)
    if not lines and not path.exists():
        return
    from evalgate import writing

    writing.write_text(path, "".join(line + "\n" for line in lines))


async def _one(
    runner: Runner,
    limit: asyncio.Semaphore,
    plan: SuitePlan,
    case: CaseInput,
    n: int,
    progress: Optional[Callable[[int], None]],
    runtime: Any = None,
    journal: Optional["Journal"] = None,
    logs: Optional[LogOptions] = None,
    hidden: Optional[list[tuple[str, str]]] = None,
    info: Optional[tuple[Optional[str], dict[str, Any]]] = None,
    budget: Any = None,
    clock: Optional["RunClock"] = None,
    finished: Optional[Callable[[CaseInput], None]] = None,
) -> None:
    spec = plan.agent
    logs = logs or LogOptions()
    clock = clock or RunClock()
    root, agents = info or (None, {})
    queued = time.monotonic()
    async with limit:
        if budget is not None:
            await budget.acquire_async()
        token = IN_CASE_RUN.set(budget is not None)
        try:
            t0 = time.monotonic()
            clock.waited += t0 - queued
            log = _case_log(plan, case, n, logs, _known_secrets(()) if hidden is None else hidden)
            attempt = 0
            while True:
                attempt += 1
                state: dict[str, Any] = {"turn": 0}
                retry: Optional[float] = None
                try:
                    invocations = await asyncio.wait_for(_logged(log, _converse(runner, case, n, spec, state, runtime, root)), timeout=spec.timeout_s)
                    result = AgentRun(invocations, run=n, ended=state.get("ended"))
                except asyncio.TimeoutError:
                    of = f" of {len(case.expected)}" if case.expected is not None else ""
                    result = AgentRun(None, f"timed out after {spec.timeout_s:g} s (timeout_s), in turn {state['turn']}{of}", run=n)
                except (AgentError, SimulationError) as e:
                    result = AgentRun(None, str(e), run=n)
                    retry = _retry_wait(e, attempt, spec)
                except Exception as e:  # the agent's, a tool's or a client's exception: this run's failure only
                    result = AgentRun(None, _describe(e), run=n)
                    retry = _retry_wait(e, attempt, spec)
                if retry is None:
                    break
                # Transient: started again after the wait, in the same slot (a server asking
                # to slow down gets less, not more, from this run meanwhile).
                log.write(f"evalgate: attempt {attempt} of {spec.max_attempts} failed on a transient error ({result.error}); "
                          f"starting the case run again in {retry:.1f} s\n")
                clock.backoff += retry
                await asyncio.sleep(retry)
            if result.error is not None and attempt > 1:
                result.error += f" (gave up after {attempt} attempts)"
        finally:
            IN_CASE_RUN.reset(token)
            if budget is not None:
                budget.release()
        if result.invocations:
            beyond = _bounded(result.invocations)
            if beyond is not None:
                result = AgentRun(None, f"the agent's output is beyond evalgate's limits: {beyond}", run=n)
        result.attempts = attempt
        hidden = _known_secrets(()) if hidden is None else hidden
        if result.error is not None:
            result.error = writable(_redact(result.error, hidden))  # an exception may quote a lone surrogate
        result.log = log.close()
        if result.invocations:
            result.invocations = _redact_invocations(result.invocations, hidden)
        if case.acli is not None and result.error is None:
            result.trace = case_trace(plan, case, result, root, agents)
        result.duration_s = round(time.monotonic() - t0, 3)
        result.replayed = state.get("replayed") or {}
        result.expected_digest = case.expected_digest
        case.runs[n - 1] = result
        if journal is not None:
            journal.add(plan.name, case, result)
        if finished is not None:
            finished(case)
    if result.error is not None and logs.failed is not None:
        logs.failed(plan.name, case, result)
    if progress is not None:
        progress(1)


@dataclass
class RunClock:
    """Where the agent step's time went besides the case runs themselves, added up over case
    runs: waiting for a slot (the agent's concurrency, or the budget it shares with the
    judge) and waiting before starting a case run again after a transient failure."""

    waited: float = 0.0
    backoff: float = 0.0
    concurrency: Optional[int] = None  # agent.concurrency (the largest, with several agents)
    shared: Optional[int] = None  # the budget shared with the judge, when there was one

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"waited_s": round(self.waited, 3)}
        if self.backoff:
            out["backoff_s"] = round(self.backoff, 3)
        if self.concurrency is not None:
            out["concurrency"] = self.concurrency
        if self.shared is not None:
            out["shared_slots"] = self.shared
        return out


# --- retrying a case run that failed on a transient error ---------------------------------------

RETRY_INITIAL_S = 1.0  # before the second attempt, without Retry-After; doubled for each next one
RETRY_QUOTA_S = 4.0  # the same after a 429 that did not say how long: a quota needs longer
RETRY_MAX_S = 30.0
# The HTTP clients agents use: a connection or protocol error of theirs is the network's, not the agent's.
_CLIENT_MODULES = ("httpx", "httpcore", "aiohttp", "requests", "urllib3", "google", "litellm", "openai", "anthropic", "grpc")
_DROPPED = re.compile(
    r"^(?:ReadError|WriteError|RemoteProtocolError|ConnectError|ServerDisconnectedError|ClientConnectionError|ClientOSError|"
    r"ClientPayloadError|ProtocolError|ChunkedEncodingError|ConnectionError|IncompleteRead|"
    r"ReadTimeout|WriteTimeout|ConnectTimeout|PoolTimeout|TimeoutException|ServerTimeoutError|Timeout|APITimeoutError|APIConnectionError)$"
)


def _quota(e: BaseException) -> bool:
    current: Optional[BaseException] = e
    for _ in range(8):
        if current is None:
            return False
        if getattr(current, "code", None) == 429 or getattr(current, "status_code", None) == 429:
            return True
        if isinstance(current, AgentError) and " HTTP 429" in str(current):
            return True
        current = current.__cause__ or current.__context__
    return False


def transient(e: BaseException) -> tuple[bool, Optional[float]]:
    """Whether a case run's failure is worth another attempt, and the wait the server asked
    for (Retry-After), if any. Transient: a runner's TransientAgentError; an HTTP status of
    429, 408, 409 or 5xx but 501 on an HTTP client's error (google-genai's APIError, httpx,
    aiohttp, requests, LiteLLM, ...); a dropped, reset or refused connection; an HTTP
    client's own timeout. Looked for along the exception's causes too (ADK and tools wrap).
    Everything else (the agent's or a tool's own exception, a 4xx) is not."""
    from evalgate.agents import TransientAgentError
    from evalgate.judge.retry import retry_after, retryable_status

    seen = 0
    current: Optional[BaseException] = e
    while current is not None and seen < 8:
        seen += 1
        if isinstance(current, TransientAgentError):
            return True, current.retry_after
        module = type(current).__module__.split(".")[0]
        if module in _CLIENT_MODULES:
            code = getattr(current, "code", None)
            if not isinstance(code, int):
                code = getattr(current, "status_code", None) or getattr(current, "status", None)
            if isinstance(code, int) and 100 <= code <= 599:
                return (retryable_status(code), retry_after(current)) if retryable_status(code) else (False, None)
            if _DROPPED.match(type(current).__name__):
                return True, None
        if isinstance(current, (ConnectionError, EOFError)):  # reset, refused, broken pipe, aborted
            return True, None
        current = current.__cause__ or current.__context__
    return False, None


def _retry_wait(e: BaseException, attempt: int, spec: Any) -> Optional[float]:
    """Seconds to wait before attempt `attempt + 1` of a case run that failed with `e`, or
    None when it is not started again (not transient, the last attempt, or a server asking
    for longer than evalgate waits)."""
    from evalgate.judge.retry import MAX_RETRY_AFTER_S

    ok, asked = transient(e)
    if not ok or attempt >= spec.max_attempts:
        return None
    if asked is not None and asked > 0:
        if asked > MAX_RETRY_AFTER_S:
            return None
        return asked * (1.0 + 0.1 * random.random())  # honour the server, de-synchronised a little
    delay = min(RETRY_MAX_S, (RETRY_QUOTA_S if _quota(e) else RETRY_INITIAL_S) * 2 ** (attempt - 1))
    return delay * (0.5 + 0.5 * random.random())  # "equal jitter": at least half the delay


def _case_log(plan: SuitePlan, case: CaseInput, n: int, logs: LogOptions, hidden: Optional[list[tuple[str, str]]] = None) -> capture.CaseLog:
    label = f"{plan.name}/{case.eval_id}" + (f" run {n}" if plan.agent.num_runs > 1 else "")
    return capture.CaseLog(capture.echo_to(logs.live, label) if logs.live is not None else None, redact=lambda text: _redact(text, hidden))


async def _logged(log: capture.CaseLog, conversation: Any) -> Any:
    """The conversation, run with `log` as the current case run's log."""
    with capture.case_log(log):
        return await conversation


async def _converse(runner: Runner, case: CaseInput, n: int, spec: Any, state: dict[str, Any], runtime: Any = None, root: Optional[str] = None) -> list[Any]:
    from evalgate.agents_cli.traces import rewrite_model_authors

    run = CaseRun(
        eval_set_id=case.eval_set_id,
        eval_id=case.eval_id,
        run=n,
        session_input=case.session,
        expected=case.expected,
        replay=spec.tools == "replay",
        history=rewrite_model_authors(case.history, root),
    )
    conversation = await runner.open(run)
    invocations: list[Any] = []
    try:
        if case.expected is not None:
            for i, turn in enumerate(case.expected, start=1):
                state["turn"] = i
                invocation = await conversation.send(turn.user_content)
                if invocation is None:
                    raise AgentError(f"the agent produced no events for turn {i} of {len(case.expected)}")
                invocations.append(invocation)
        else:
            user = SimulatedUser(case.simulator or UserSimulatorConfig(), Scenario.of(case.scenario or {}), runtime, sample=n)
            while True:
                state["turn"] += 1
                turn = await user.next_turn(invocations)
                if turn.content is None:
                    state["ended"] = turn.ended
                    break
                invocation = await conversation.send(turn.content)
                if invocation is None:
                    raise AgentError(f"the agent produced no events for simulated turn {state['turn']}")
                invocations.append(invocation)
    finally:
        state["replayed"] = conversation.replayed()
        await conversation.close()
    return invocations


_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)


def _known_secrets(extra: tuple[str, ...]) -> list[tuple[str, str]]:
    """(value, what replaces it), longest first: the values of secret-looking environment
    variables (shown as ${NAME}), then `extra` values (shown as ***). Short values are not
    secrets worth hiding, and replacing them would garble ordinary text."""
    found = {value: f"${{{name}}}" for name, value in os.environ.items() if len(value) >= 8 and _SECRET_NAME.search(name)}
    for value in extra:
        if value and len(value) >= 8:
            found.setdefault(value, "***")
    return sorted(found.items(), key=lambda item: -len(item[0]))


def _redact(text: str, hidden: Optional[list[tuple[str, str]]] = None) -> str:
    """An error message without known secret values: the agent's stderr or an exception may
    quote its own key, and errors go to results and the PR comment."""
    for value, shown in _known_secrets(()) if hidden is None else hidden:
        if value in text:
            text = text.replace(value, shown)
    return text


def _bounded(invocations: list[Any]) -> Optional[str]:
    """Why the agent's invocations are beyond evalgate.untrusted's depth and text limits (its
    tools' arguments and answers are the agent's to choose, as a fork's outputs are), or None;
    lone surrogates in their text become U+FFFD, so that results can be written."""
    from evalgate.untrusted import MAX_DEPTH, checked, may_hold_surrogates

    for i, inv in enumerate(invocations):
        try:
            data = inv.model_dump(mode="json", by_alias=False, exclude_none=True)
        except ValueError:  # pydantic's serializer: nested deeper than it goes
            return f"nested deeper than {MAX_DEPTH} levels"
        surrogates = may_hold_surrogates(json.dumps(data, ensure_ascii=False))
        data, beyond = checked(data)
        if beyond is not None:
            return beyond
        if surrogates:
            invocations[i] = type(inv).model_validate(data)
    return None


def _redact_invocations(invocations: list[Any], hidden: list[tuple[str, str]]) -> list[Any]:
    """The agent's invocations with known secret values replaced wherever they occur (an
    agent that prints its environment must not publish the token in the PR comment)."""
    out = []
    for inv in invocations:
        text = json.dumps(inv.model_dump(mode="json", by_alias=False), ensure_ascii=False)
        found = [(json.dumps(v, ensure_ascii=False)[1:-1], json.dumps(r, ensure_ascii=False)[1:-1]) for v, r in hidden]
        if not any(v in text for v, _ in found):
            out.append(inv)
            continue
        for value, shown in found:
            text = text.replace(value, shown)
        out.append(type(inv).model_validate(json.loads(text)))
    return out


def _describe(e: BaseException) -> str:
    text = str(e).strip() or repr(e)
    if len(text) > 2000:
        text = text[:2000] + " ..."
    return f"{type(e).__name__}: {text}"


def _rubrics_on_generated(case: CaseInput) -> None:
    for run in case.runs:
        for inv in run.invocations or []:
            inv.rubrics = list(case.rubrics) + list(inv.rubrics or [])


# --- agents-cli traces ----------------------------------------------------------------------


def case_trace(plan: SuitePlan, case: CaseInput, run: AgentRun, root: Optional[str] = None, agents: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """A dataset case's run as the trace `agents-cli eval generate` writes (evalgate.agents_cli.traces)."""
    from evalgate.agents_cli.traces import run_trace

    assert case.acli is not None
    several = plan.agent is not None and plan.agent.num_runs > 1
    return run_trace(case.acli, run.invocations or [], eval_set_id=case.eval_set_id, eval_id=case.eval_id, suite=plan.name, run=run.run if several else None, root=root, agents=agents)


def write_traces(plans: list[SuitePlan], folder: Path) -> Optional[Path]:
    """`<out>/traces/traces_<time>.json`: the trace of every successful run of the agent on an
    agents-cli dataset case, in case order (failed runs left out, as agents-cli leaves them
    out); nothing when there is none. A run taken from an earlier run (`--resume`) that kept
    no trace gets one built from its invocations."""
    from evalgate.agents_cli.traces import write_traces as write

    traces = []
    for plan in plans:
        if plan.agent is None:
            continue
        for case in plan.cases:
            if case.acli is None:
                continue
            for run in case.runs:
                if run.error is None and run.invocations is not None:
                    traces.append(run.trace if run.trace is not None else case_trace(plan, case, run))
    return write(traces, folder)


# --- inference.jsonl -------------------------------------------------------------------------


def inference_lines(plans: list[SuitePlan]) -> list[str]:
    """evalgate inference JSONL for every agent run: {eval_set_id, eval_id, run, invocations}
    or, for a failed run, {..., error}. Read back with `actual:`, it scores the same. Suites
    of recorded outputs are written too, so that the file holds every output scored (the
    fork-safe flow's trusted job re-scores them from it); trace suites have none."""
    lines = []
    for plan in plans:
        for case in sorted(plan.cases, key=lambda c: (c.eval_set_id, c.eval_id)):
            if plan.agent is None and case.actual is None:
                continue
            for run in (case.runs if plan.agent is not None else case.agent_runs()):
                lines.append(inference_line(plan.name, case, run))
    return lines


def inference_record(suite: str, case: CaseInput, run: AgentRun) -> dict[str, Any]:
    """One case run as an inference record: {suite, eval_set_id, eval_id, run,
    expected_digest, invocations (and ended, for a simulated conversation)} or, for a
    failed run, {..., error}; with `log` when the run wrote anything."""
    record: dict[str, Any] = {"suite": suite, "eval_set_id": case.eval_set_id, "eval_id": case.eval_id, "run": run.run}
    if run.expected_digest is not None or not case.runs:  # recorded outputs: scored against this case's data
        record["expected_digest"] = run.expected_digest or case.expected_digest
    if run.ended is not None:
        record["ended"] = run.ended
    if run.log is not None:
        record["log"] = run.log
    if run.attempts > 1:
        record["attempts"] = run.attempts
    if run.error is not None:
        record["error"] = run.error
    else:
        record["invocations"] = [
            inv.model_dump(mode="json", exclude_none=True, exclude={"rubrics"} if case.rubrics and case.expected is None else None)
            for inv in run.invocations or []
        ]
    return record


def inference_line(suite: str, case: CaseInput, run: AgentRun) -> str:
    return json.dumps(inference_record(suite, case, run), ensure_ascii=False, sort_keys=True)

