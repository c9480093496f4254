"""A pull request's agent outputs re-scored under trusted config: the publish half of the fork-safe flow.

A fork's run (phase 1) is the fork's own: whatever it uploads, it could have written by
hand. The only part of it that is inherently the fork's to give is what its agent said: the
invocations in `inference.jsonl`. Everything else (which suites and cases exist, their
expected data, criteria, thresholds, statuses, counts, the policy) is taken here from the
trusted checkout (the default branch's config and eval sets) and computed anew by the
engine, with the trusted job's judge credentials.

So: every trusted case gets the runs the artifact holds for it (at most the suite's
`num_runs`, matched by suite, eval set and case, and only when they ran on the same
expected data); a trusted case the artifact lacks is NOT_EVALUATED with the reason, and so
is one whose record cannot be a run of it (no turn, other turns or other user messages than
the case's, a simulated conversation that does not start with its starting prompt:
`not_a_run`); a suite for which the artifact holds nothing, lacks a case, or has such a
case or one whose run failed, is an agent error (the gate's verdict for it is ERROR): a
fork's outputs cannot show that a failure was not made. Rubrics inside the artifact's invocations are dropped (a fork could plant easy
ones); the trusted case's rubrics are attached as a run of the agent would. Trace suites
read their traces from files, which phase 2 does not have from the pull request, so their
cases are NOT_EVALUATED.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Iterator, Optional

from pydantic import ValidationError

from evalgate.engine import AgentRun, CaseInput, SuitePlan
from evalgate.errors import InputError, Problem, display_path
from evalgate.i18n import _, mark
from evalgate.loaders.actual import InferenceRecord, record_keys
from evalgate.reading import ignored_note, validate_known
from evalgate.untrusted import checked, cost

# Size limits on what is read from the artifact (a fork chooses its size): the whole file,
# one line, and the records kept per case (num_runs is at most 100). And a memory budget
# (evalgate.untrusted.cost: what a line takes once parsed, bounded from its bytes): for one
# line, and for all the records kept. Depth and text limits: evalgate.untrusted.checked.
MAX_OUTPUTS_BYTES = 512 * 1024 * 1024
MAX_LINE_BYTES = 32 * 1024 * 1024
MAX_RUNS = 100
MAX_RECORD_COST = 256 * 1024 * 1024
MAX_RECORD_ERRORS = 1000  # unknown keys and malformed fields in one record (each costs an error record while read)
MAX_OUTPUTS_COST = 4 * 1024 * 1024 * 1024
MAX_PR_JSON_BYTES = 64 * 1024
FORK_NOTE = "the agent's outputs came from the pull request's own run (a fork): re-scored here under the default branch's config and eval sets"

CaseKey = tuple[str, str]  # (eval_set_id, eval_id)


@dataclass
class Outputs:
    """The artifact's inference records, by suite and case. Records that name no suite
    (older evalgate) are kept apart and serve any suite that has the case."""

    by_suite: dict[str, dict[CaseKey, list[InferenceRecord]]] = field(default_factory=dict)
    unnamed: dict[CaseKey, list[InferenceRecord]] = field(default_factory=dict)
    skipped: int = 0  # lines that were not records
    first_skipped: Optional[str] = None  # why the first line beyond a limit was skipped, with its line number
    over_budget: bool = False  # reading stopped: the records kept would have taken more than MAX_OUTPUTS_COST
    unknown_cases: int = 0  # records of suites or cases the trusted config does not have (not kept)
    ignored_keys: Optional[str] = None  # the warning about keys this evalgate does not know, if any had them

    def of(self, suite: str, key: CaseKey) -> list[InferenceRecord]:
        named = self.by_suite.get(suite)
        if named is not None:
            return named.get(key, [])
        return self.unnamed.get(key, [])

    def has_suite(self, suite: str) -> bool:
        return suite in self.by_suite or bool(self.unnamed)

    def skip(self, line: int, why: str) -> None:
        """A line that is not taken as a record because it is beyond a limit: counted, and the
        first one's reason kept for the report."""
        self.skipped += 1
        if self.first_skipped is None:
            self.first_skipped = f"line {line}: {why}"


def known_cases(plans: list[SuitePlan]) -> dict[str, set[CaseKey]]:
    """The trusted config's cases, by suite: the only records `read_outputs` keeps."""
    return {plan.name: {(case.eval_set_id, case.eval_id) for case in plan.cases} for plan in plans}


def outputs_file(path: Path) -> Path:
    """`path`, the artifact's `inference.jsonl`, when it exists within the size limit; else
    an input error naming the step to fix."""
    shown = display_path(path)
    if not path.is_file():
        raise InputError(
            Problem(
                shown,
                None,
                "the artifact has no inference.jsonl (the agent's outputs), which is all the publish mode takes from a pull request's run",
                "In the pull request's workflow, copy the output folder's inference.jsonl into the artifact beside pr.json (docs/workflows.md, fork-safe flow).",
            )
        )
    size = path.stat().st_size
    if size > MAX_OUTPUTS_BYTES:
        raise InputError(Problem(shown, None, f"is {size:,} bytes, over the {MAX_OUTPUTS_BYTES:,}-byte limit for a pull request's outputs", "Upload only the run's inference.jsonl."))
    return path


def read_outputs(path: Path, known: Optional[dict[str, set[CaseKey]]] = None) -> Outputs:
    """The artifact's `inference.jsonl` (see `outputs_file`), streamed: a bad line is skipped
    (counted), never trusted. With `known` (`known_cases`), only the records of those suites'
    cases are kept (a record naming no suite: of any suite's case); the others are counted,
    so memory is bounded by the trusted cases, not by the file. Keys this evalgate does not
    know (another version wrote them) are ignored; they never reach scoring."""
    shown = display_path(outputs_file(path))
    any_suite = set().union(*known.values()) if known is not None else set()
    out = Outputs()
    first_ignored, more_ignored = None, 0  # the first line with unknown keys (line, keys), and how many more
    kept = 0  # the memory the records kept take, at most (evalgate.untrusted.cost)
    with open(path, "rb") as f:
        for n, raw in _lines(f):
            if raw is None:
                out.skip(n, f"longer than {MAX_LINE_BYTES:,} bytes")
                continue
            if not raw.strip():
                continue
            size = cost(raw)
            if size > MAX_RECORD_COST:
                out.skip(n, f"would take more than {MAX_RECORD_COST // 2**20:,} MiB of memory once read ({len(raw):,} bytes of densely structured JSON)")
                continue
            try:
                data = json.loads(raw)
            except (ValueError, RecursionError):
                out.skipped += 1
                continue
            if not isinstance(data, dict) or not isinstance(data.get("eval_set_id"), str) or not isinstance(data.get("eval_id"), str):
                out.skipped += 1
                continue
            suite, key = data.get("suite"), (data["eval_set_id"], data["eval_id"])
            if known is not None:
                named = isinstance(suite, str) and suite in known
                if named:
                    # A suite whose records are all of other cases still named its own:
                    # its cases do not take the records that name no suite.
                    out.by_suite.setdefault(suite, {})
                if not (key in known[suite] if named else suite is None and key in any_suite):
                    out.unknown_cases += 1
                    continue
            data, beyond = checked(data)
            if beyond is not None:
                out.skip(n, beyond)
                continue
            try:
                rec, unknown = validate_known(InferenceRecord, data, record_keys, MAX_RECORD_ERRORS)
            except ValidationError as e:
                if e.error_count() > MAX_RECORD_ERRORS:
                    out.skip(n, f"{e.error_count():,} unknown keys or malformed fields, over the limit of {MAX_RECORD_ERRORS:,}")
                else:
                    out.skipped += 1
                continue
            del data
            if unknown and first_ignored is None:
                first_ignored = (n, unknown)
            elif unknown:
                more_ignored += 1
            table = out.unnamed if rec.suite is None else out.by_suite.setdefault(rec.suite, {})
            runs = table.setdefault(key, [])
            if len(runs) < MAX_RUNS:
                if kept + size > MAX_OUTPUTS_COST:
                    out.over_budget = True  # the rest is not read: every suite is ERROR (attach_outputs)
                    break
                kept += size
                runs.append(rec)
    if first_ignored is not None:
        out.ignored_keys = ignored_note(shown, f"line {first_ignored[0]}", first_ignored[1], more_ignored)
    return out


def _lines(f: BinaryIO) -> Iterator[tuple[int, Optional[bytes]]]:
    """(line number, line) of a binary file; None for a line over MAX_LINE_BYTES, which is
    read past in pieces, never held whole."""
    n = 0
    while raw := f.readline(MAX_LINE_BYTES + 1):
        n += 1
        if len(raw) > MAX_LINE_BYTES:
            while not raw.endswith(b"\n") and (raw := f.readline(1 << 20)):
                pass
            yield n, None
        else:
            yield n, raw



# A suite's agent error: recorded in results.json in English, shown in the report's language
# (evalgate.gate.absolute and verdict translate it where it becomes a reason).
TRACES_NOT_RESCORED = mark(
    "trace suites are not re-scored from a fork's run: their traces are files of the pull request, which the trusted job does not read"
)
NOTHING_FOR_SUITE = mark("the pull request's outputs hold nothing for this suite, so none of its cases was scored")
OVER_BUDGET = mark(
    "the pull request's inference.jsonl holds more outputs of this config's cases than the trusted job reads (its memory "
    "budget), so no suite can be judged from it"
)
NO_RUN = "the pull request's outputs have no run of this case"
OTHER_DATA = "the pull request's run used other data for this case (its eval set differs from the default branch's)"


def _missing(n: int, why: str) -> AgentRun:
    return AgentRun(None, why, run=n)


def _runs_for(case: CaseInput, records: list[InferenceRecord], num_runs: int) -> list[AgentRun]:
    """The case's runs 1..num_runs from the artifact's records: one per run number, the
    first record of each; a run it lacks, or that ran on other expected data, is missing."""
    by_run: dict[int, InferenceRecord] = {}
    for rec in records:
        n = rec.run or 1
        if 1 <= n <= num_runs and n not in by_run:
            by_run[n] = rec
    runs = []
    for n in range(1, num_runs + 1):
        rec = by_run.get(n)
        if rec is None:
            runs.append(_missing(n, NO_RUN))
        elif rec.expected_digest is not None and rec.expected_digest != case.expected_digest:
            runs.append(_missing(n, OTHER_DATA))
        elif rec.error is not None:
            runs.append(AgentRun(None, rec.error[:2000], run=n, expected_digest=case.expected_digest))
        elif (why := not_a_run(case, rec.invocations)) is not None:
            runs.append(AgentRun(None, why, run=n, expected_digest=case.expected_digest))
        else:
            for inv in rec.invocations:
                inv.rubrics = None  # the trusted case's rubrics only (below)
            runs.append(AgentRun(rec.invocations, run=n, ended=rec.ended, expected_digest=case.expected_digest))
    if case.rubrics and case.expected is None:
        for run in runs:
            for inv in run.invocations or []:
                inv.rubrics = list(case.rubrics)
    return runs


NOT_A_RUN = "the pull request's record of this case is no run of its eval case"


def not_a_run(case: CaseInput, invocations: list) -> Optional[str]:
    """Why a record's turns cannot be a run of `case` (None when they can be): a run of an
    eval case answers its user turns, in order, one invocation each; a simulated
    conversation starts with its scenario's starting prompt, verbatim, and has at most the
    simulator's turns. A record that is none of these would be scored as if it were one: a
    rule over every turn ("never calls delete_all") holds of no turns, and a judge reads the
    user messages the record gives. So it is not a record: its case is NOT_EVALUATED."""
    if not invocations:
        return f"{NOT_A_RUN}: it holds no turn"
    if case.expected is not None:
        if len(invocations) != len(case.expected):
            return f"{NOT_A_RUN}: it has {len(invocations)} turns, the eval case {len(case.expected)}"
        for i, (got, wanted) in enumerate(zip(invocations, case.expected)):
            if got.user_text() != wanted.user_text():
                return f"{NOT_A_RUN}: turn {i + 1} answers another user message than the eval case's"
    elif case.scenario is not None:
        from evalgate.simulated_user import Scenario

        if invocations[0].user_text() != Scenario.of(case.scenario).starting_prompt:
            return f"{NOT_A_RUN}: its first turn is not the scenario's starting prompt"
        limit = case.simulator.max_allowed_invocations if case.simulator is not None else None
        if limit is not None and limit > 0 and len(invocations) > limit:
            return f"{NOT_A_RUN}: it has {len(invocations)} turns, more than the user simulator's {limit}"
    return None


def _unscorable(case: CaseInput, run: AgentRun) -> bool:
    """A run whose criteria cannot score it: it failed, or it is no run of the eval case."""
    return run.error is not None


def attach_outputs(plans: list[SuitePlan], outputs: Outputs) -> list[str]:
    """Give every trusted case its runs from the artifact (see the module's docstring).
    Returns notes for the report: what could not be taken from the artifact."""
    notes = []
    for plan in plans:
        num_runs = plan.agent.num_runs if plan.agent is not None else 1
        if any(case.trace is not None for case in plan.cases):
            for case in plan.cases:
                case.trace = None  # the checkout's traces are the default branch's, not the pull request's
            plan.agent_error = TRACES_NOT_RESCORED
            notes.append(_("suite {suite}: {error}", suite=plan.name, error=_(plan.agent_error)))
            continue
        if not outputs.has_suite(plan.name):
            plan.agent_error = NOTHING_FOR_SUITE
            for case in plan.cases:
                case.runs = [_missing(n, NO_RUN) for n in range(1, num_runs + 1)]
                case.actual = None
            notes.append(_("suite {suite}: {error}", suite=plan.name, error=_(plan.agent_error)))
            continue
        reasons: Counter = Counter()
        for case in plan.cases:
            case.runs = _runs_for(case, outputs.of(plan.name, (case.eval_set_id, case.eval_id)), num_runs)
            first = next((r for r in case.runs if r.error is None), None)
            case.actual = first.invocations if first is not None else None
            reasons.update(r.error for r in case.runs if r.error is not None)
        runs = sum(len(case.runs) for case in plan.cases)
        missing = sum(1 for case in plan.cases if any(r.error in (NO_RUN, OTHER_DATA) for r in case.runs))
        forged = [r.error for case in plan.cases for r in case.runs if r.error is not None and r.error.startswith(NOT_A_RUN)]
        if missing:
            # A run of evalgate writes a record for every case run, failed or not: a case
            # without one was dropped from the artifact, or the pull request changed its
            # data. Either way the suite cannot pass on what is left.
            plan.agent_error = (
                f"{missing} of {len(plan.cases)} cases have no output in the pull request's run, or ran on other "
                "eval data than the default branch's, so the suite cannot be judged from it"
            )
        elif forged:
            # Records that are no run of their case: not a failure the agent could have had.
            cases = sum(1 for case in plan.cases if any(r.error is not None and r.error.startswith(NOT_A_RUN) for r in case.runs))
            plan.agent_error = (
                f"{cases} of {len(plan.cases)} cases hold no run of their eval case in the pull request's outputs "
                f"(the first: {forged[0][len(NOT_A_RUN) + 2:]}), so the suite cannot be judged from them"
            )
        elif runs and sum(reasons.values()) == runs:
            from evalgate.infer import agent_error

            plan.agent_error = agent_error(reasons)
        else:
            # A case the outputs say failed to run, or that ran other turns than its eval
            # case has, scores NOT_EVALUATED, which the suite's not_evaluated policy (warn, by
            # default) lets pass. From a fork's uploaded outputs, a run that failed cannot be
            # told from one made to fail: as for a dropped case, the suite cannot pass on them.
            failed = sum(1 for case in plan.cases if any(_unscorable(case, r) for r in case.runs))
            if failed:
                plan.agent_error = (
                    f"{failed} of {len(plan.cases)} cases failed to run, or ran other turns than their eval case has, in the "
                    "pull request's outputs; a fork's outputs cannot show whether its agent failed them, so the suite cannot be judged from them"
                )
    if outputs.over_budget:
        for plan in plans:
            plan.agent_error = OVER_BUDGET
        notes.append(_("{error} (at most {mib} MiB, as evalgate measures the records it keeps)", error=_(OVER_BUDGET), mib=MAX_OUTPUTS_COST // 2**20))
    if outputs.skipped:
        notes.append(_("{n} lines of the pull request's inference.jsonl were not inference records and were skipped", n=outputs.skipped))
    if outputs.first_skipped:
        notes.append(_("the first line beyond the limits on what a pull request's outputs may cost: {reason}", reason=outputs.first_skipped))
    if outputs.unknown_cases:
        notes.append(
            _(
                "{n} records of unknown cases ignored: the pull request's inference.jsonl holds them for suites "
                "or cases the default branch's config does not have",
                n=outputs.unknown_cases,
            )
        )
    if outputs.ignored_keys:
        notes.append(outputs.ignored_keys)
    return notes


def read_pr_json(path: Path) -> dict:
    """The artifact's pr.json, within its size limit."""
    from evalgate.errors import load_json_file

    if path.is_file() and path.stat().st_size > MAX_PR_JSON_BYTES:
        raise InputError(Problem(display_path(path), None, f"is over {MAX_PR_JSON_BYTES:,} bytes", 'Write {"number": N, "head_sha": "..."} only.'))
    data = load_json_file(path)
    if not isinstance(data, dict):
        return {}
    number = data.get("number")
    if "number" in data and (isinstance(number, bool) or not isinstance(number, int) or not 0 < number < 2**31):
        # Only a JSON integer names a pull request: not a float (Infinity, 1e300), true, or text.
        raise InputError(Problem(display_path(path), "number", "needs 'number' and 'head_sha': 'number' must be the pull request's number, a positive integer", 'Write {"number": N, "head_sha": "...", "base_sha": "..."} in the pull request run.'))
    return data

