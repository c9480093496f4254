"""The results file (`results.json`): typed models, deterministic writing, reading back.

The comparable payload is everything but `run` and the cases' `agent_logs` and `agent_attempts`: sorted, stable,
free of timestamps, so two runs over the same data and config produce the same bytes there.
`run` and the logs carry what legitimately differs between runs (when, how long, what the
agent printed).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
from enum import Enum
from pathlib import Path
from typing import Any, Iterator, Literal, Optional

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from evalgate import __version__

SCHEMA_VERSION = 1


class Status(str, Enum):
    PASSED = "PASSED"
    FAILED = "FAILED"
    NOT_EVALUATED = "NOT_EVALUATED"
    # ADK's fourth status: a value shown, never a verdict (a custom metric may return it).
    # A case's status ignores it, as ADK's does.
    INFORMATIONAL = "INFORMATIONAL"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InvocationResult(_Model):
    score: Optional[float] = None
    status: Status
    details: dict[str, Any] = Field(default_factory=dict)
    error: Optional[str] = None


class CriterionResult(_Model):
    score: Optional[float] = Field(None, description="Mean over evaluated invocations; null when none was evaluated.")
    status: Status
    threshold: float
    per_invocation: list[InvocationResult] = Field(default_factory=list)
    error: Optional[str] = Field(None, description="Why the criterion was not (fully) evaluated.")
    unavailable: Optional[Literal["judge", "vertex"]] = Field(
        None,
        exclude_if=lambda v: v is None,
        description="Not evaluated because its service was down (unreachable, overloaded, out of time, no or refused credentials): "
        "judge or vertex. Absent when it was evaluated, or when the service answered and refused the case's data, which the gate "
        "counts against the run where the baseline evaluated it.",
    )
    runs: Optional[list[Optional[float]]] = Field(
        None,
        exclude_if=lambda v: v is None,  # absent with one run: single-run results stay as they were
        description="With several agent runs (num_runs): each run's score, in run order (null: not evaluated). "
        "`score` is then the mean over every evaluated invocation of every run, and `per_invocation` holds the runs' invocations in run order.",
    )


class InvocationSummary(_Model):
    """What a reader needs to see a case: the user's message, expected and actual output."""

    user: str
    expected_response: Optional[str] = None
    actual_response: str
    expected_tools: Optional[list[dict[str, Any]]] = None
    actual_tools: list[dict[str, Any]] = Field(default_factory=list)
    actual_tool_results: list[dict[str, Any]] = Field(
        default_factory=list,
        exclude_if=lambda v: not v,  # absent without tool results: results without tools stay as they were
        description="The actual tool results in order, {name, response} (a response over 2,000 characters of JSON "
        "is kept as its first 2,000, with truncated: true): what a pairwise judge shows beside the calls. "
        "Absent in results written before evalgate kept them.",
    )


class EfficiencyValue(_Model):
    value: Optional[float] = Field(None, description="The value; null when not available (never 0 for unknown).")
    details: dict[str, Optional[float]] = Field(
        default_factory=dict,
        exclude_if=lambda v: not v,
        description="token_usage_v1: the tokens by kind (ADK's TokenUsageDetails); invocation_duration_v1: "
        "total, model, tool and framework seconds (ADK's DurationDetails).",
    )


class EfficiencyResult(EfficiencyValue):
    """One of ADK's informational efficiency metrics on a case: per turn, and the case's value
    (ADK's aggregation). Shown, never a verdict."""

    per_invocation: list[EfficiencyValue] = Field(default_factory=list)
    runs: Optional[list[Optional[float]]] = Field(
        None,
        exclude_if=lambda v: v is None,
        description="With several agent runs: each run's value (null: the run failed or had none). `value` then "
        "applies ADK's rule to the invocations of every run together, and `per_invocation` holds them in run order.",
    )


class AgentLog(_Model):
    """What the agent, its tools and ADK wrote during one run of the case (logging records,
    stdout and stderr; a command's stderr; an API server's error answer): the last lines."""

    run: int = Field(ge=1, description="Which run of the case (num_runs).")
    text: str = Field(
        description="The run's output, its last 200 lines and at most 20,000 characters (a first line says how many "
        "earlier lines were not kept); values of secret-looking environment variables are replaced by ${NAME}."
    )


class Rerun(_Model):
    """One confirmation run of a suspect case (`gate.confirm`, evalgate.gate.confirm): scored apart
    from the case's first run, which alone the ledger, the mean-drop and the partial-drop
    tests read."""

    run: int = Field(ge=1, description="Which confirmation run, 1 to gate.confirm.runs.")
    how: Literal["agent", "judge"] = Field(
        description="agent: the agent ran the case again in a fresh session and every criterion was scored afresh; "
        "judge: the same outputs, judge samples drawn afresh (a judge-only suspect, or recorded outputs)."
    )
    status: Status
    criteria: dict[str, CriterionResult]
    invocations: list[InvocationSummary] = Field(
        default_factory=list, exclude_if=lambda v: not v, description="What the agent did in this run (how: agent)."
    )
    error: Optional[str] = Field(None, exclude_if=lambda v: v is None, description="The agent run failed: why.")


class CaseResult(_Model):
    eval_set_id: str
    eval_id: str
    expected_digest: str = Field(description="sha256 of the case's expected data; a changed case has a new digest.")
    parts: Optional[dict[str, str]] = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="sha256 of each part of the case's data its suite's criteria read (`run`: what the agent's run reads; "
        "`tool_uses`, `final_response`, `intermediate`, `rubrics`; `*`: all of it but the final session state): the gate "
        "pairs the case with its baseline by the parts the criteria both runs share read, so a field no criterion reads "
        "does not unpair it.",
    )
    status: Status
    criteria: dict[str, CriterionResult]
    invocations: list[InvocationSummary] = Field(default_factory=list)
    source: dict[str, str] = Field(default_factory=dict, description="Files the case and its actual outputs came from.")
    judge_cache_hits: Optional[int] = Field(
        None,
        exclude_if=lambda v: v is None,
        description="How many of the case's judge verdicts were read from the judge cache instead of asked (absent: none).",
    )
    conversation_end: Optional[str] = Field(
        None,
        exclude_if=lambda v: v is None,
        description="A simulated conversation (conversation_scenario): why it ended, 'stop signal' or 'turn limit' (the first run's).",
    )
    efficiency: dict[str, EfficiencyResult] = Field(
        default_factory=dict,
        exclude_if=lambda v: not v,
        description="ADK's informational efficiency metrics (tool_call_count_v1, inference_call_count_v1, token_usage_v1, "
        "invocation_duration_v1) of the actual invocations, as ADK computes them: values per turn, never a verdict "
        "(they do not decide the case, enter the gate or change counts). Absent without actual invocations.",
    )
    agent_logs: list[AgentLog] = Field(
        default_factory=list,
        exclude_if=lambda v: not v,
        description="The agent ran here: what it wrote during each run that wrote anything, as pytest keeps a test's "
        "output. Not part of the comparable payload (logs differ from run to run).",
    )
    agent_error: Optional[str] = Field(
        None,
        exclude_if=lambda v: v is None,
        description="The agent's run of this case failed (it raised, exited with an error or timed out): why, the "
        "first failed run's reason. That run's criteria are NOT_EVALUATED; unlike a criterion's own error (a judge or "
        "API failure, the judge's not the agent's), the gate re-runs such a case when the baseline passed it "
        "(gate.confirm). Absent when every run of the case ran.",
    )
    agent_attempts: Optional[list[int]] = Field(
        None,
        exclude_if=lambda v: v is None,
        description="How many times each run of the case was started (one number per run, in run order): more than 1 "
        "where a run failed on a transient error (HTTP 429 or 5xx, a dropped connection, a client's timeout) and was "
        "started again (agent.max_attempts). Absent when every run took one attempt. Not part of the comparable payload.",
    )
    reruns: Optional[list[Rerun]] = Field(
        None,
        exclude_if=lambda v: v is None,
        description="A suspect the gate confirmed (gate.confirm): each confirmation run, apart from the first run above. "
        "Absent for cases that were not suspects.",
    )


class CriterionSpec(_Model):
    threshold: float
    version: str
    judge: bool = Field(False, description="Noisy LLM-judged criterion (true) or deterministic (false).")
    stats: dict[str, int] = Field(
        default_factory=dict,
        description="Judge criteria: requests, cache_hits, retries, failures and tokens spent on this suite.",
    )
    options: dict[str, Any] = Field(default_factory=dict)
    reads: Optional[list[str]] = Field(
        None,
        exclude_if=lambda v: v is None,
        description="The parts of a case's expected data the criterion reads (see CaseResult.parts); [\"*\"]: all of it.",
    )
    sampling: Optional[Literal["early_stop"]] = Field(
        None,
        description="Judge criteria decided by a majority vote: \"early_stop\" when samples stopped once the "
        "majority was decided (judge.early_stop), so details.samples holds the samples drawn; absent when "
        "every sample was drawn. compare does not mix the two on sample means.",
        exclude_if=lambda v: v is None,
    )
    no_threshold: bool = Field(
        False,
        exclude_if=lambda v: not v,
        description="A criterion without a threshold (agents-cli's metrics): a scored case is PASSED with its score; "
        "the gate compares the scores with the baseline's. `threshold` is then not used. Absent when false.",
    )
    score_range: Optional[list[Optional[float]]] = Field(
        None,
        exclude_if=lambda v: v is None,
        min_length=2,
        max_length=2,
        description="The scale of the criterion's scores, [lowest, highest] (null at an unbounded end), when it is the "
        "criterion's own (agents-cli's metrics); the gate's margins are fractions of it. Absent: the criterion's kind says.",
    )


class Counts(_Model):
    cases: int = 0
    passed: int = 0
    failed: int = 0
    not_evaluated: int = 0
    incomplete: int = Field(
        0,
        description="Cases with at least one criterion NOT_EVALUATED, whatever their status: a passing "
        "deterministic criterion must not hide a judge that was never heard. The suite's "
        "not_evaluated policy applies to these.",
    )

    @classmethod
    def of(cls, cases: list["CaseResult"]) -> "Counts":
        return cls(
            cases=len(cases),
            passed=sum(c.status is Status.PASSED for c in cases),
            failed=sum(c.status is Status.FAILED for c in cases),
            not_evaluated=sum(c.status is Status.NOT_EVALUATED for c in cases),
            incomplete=sum(any(r.status is Status.NOT_EVALUATED for r in c.criteria.values()) for c in cases),
        )


class SuiteResult(_Model):
    name: str
    status: Status
    not_evaluated_policy: str
    counts: Counts
    criteria: dict[str, CriterionSpec] = Field(
        default_factory=dict, description="Criteria in use, keyed by name; per eval set when they differ (see cases)."
    )
    warnings: list[str] = Field(default_factory=list)
    agent_error: Optional[str] = Field(
        None,
        exclude_if=lambda v: v is None,
        description="The suite runs its agent and every case run failed: why. The gate's verdict for the suite is then ERROR.",
    )
    cases: list[CaseResult] = Field(default_factory=list)


class ShardInfo(_Model):
    """Which shard of a sharded run (`evalgate run --shard K/N`) these results hold."""

    index: int = Field(ge=1, description="K: this shard's number, 1 to count.")
    count: int = Field(ge=1, description="N: how many shards the run was split into.")
    commit: Optional[str] = Field(None, description="The commit evaluated (GITHUB_SHA, or the checkout's HEAD); shards of different commits are not merged.")


class SelectionInfo(_Model):
    """Which cases `evalgate run --case PATTERN` chose: these results are not the whole run's."""

    patterns: list[str] = Field(description="The --case patterns, globs on eval_id, as given.")
    cases: int = Field(ge=0, description="How many cases they chose.")
    of: int = Field(ge=0, description="How many cases the config holds.")


class RunInfo(_Model):
    """Not part of the comparable payload."""

    started_at: Optional[str] = None
    duration_seconds: Optional[float] = None
    shards: list[dict[str, Any]] = Field(
        default_factory=list,
        exclude_if=lambda v: not v,
        description="Merged results (`evalgate merge`): each shard's index, cases, commit, started_at and duration_seconds.",
    )
    agent: dict[str, Any] = Field(
        default_factory=dict,
        exclude_if=lambda v: not v,
        description="Running the agent: seconds (wall time of the whole step), concurrency (agent.concurrency), "
        "shared_slots (case runs and judge requests in flight at most, together, while cases were scored as their runs "
        "ended: the larger of agent.concurrency and judge.concurrency), waited_s (case runs waiting for a slot, added up), "
        "backoff_s (waiting before starting a case run again after a transient failure, added up) and, per suite, "
        "case_runs, failed, duration_s (sum of case-run wall times), retried (case runs started more than once), "
        "tokens (the agent's model tokens), tools (replayed / live calls under tools: replay).",
    )
    judge: dict[str, Any] = Field(
        default_factory=dict,
        exclude_if=lambda v: not v,
        description="Where the judge's time went (judge and Vertex AI requests, the simulated user's included), seconds "
        "added up over requests: requests_s (in the requests, every attempt), slot_wait_s (waiting for a free slot), "
        "rate_wait_s (waiting for judge.rpm), backoff_s (waiting before a retry), and concurrency (judge.concurrency).",
    )
    outputs: Optional[str] = Field(
        None,
        exclude_if=lambda v: v is None,
        description="Where the agent's outputs came from when not from this run: mode publish re-scores a pull request's "
        "uploaded outputs (a fork's) under the trusted config, and says so here.",
    )
    scoring: dict[str, Any] = Field(
        default_factory=dict,
        exclude_if=lambda v: not v,
        description="Scoring time per suite: seconds (the suite's wall time) and criteria (per criterion, the seconds "
        "spent scoring it, added up over cases; with judge threads they can exceed the wall time). Merged runs add the legs' up.",
    )


class RunResults(_Model):
    schema_version: int = SCHEMA_VERSION
    evalgate_version: str = __version__
    config_digest: str
    status: Status
    counts: Counts
    suites: list[SuiteResult]
    shard: Optional[ShardInfo] = Field(
        None,
        exclude_if=lambda v: v is None,
        description="Set when these results are one shard of a run: merge the shards (`evalgate merge`) before comparing.",
    )
    selection: Optional[SelectionInfo] = Field(
        None,
        exclude_if=lambda v: v is None,
        description="Set when `evalgate run --case` ran only some cases: the config digest is then the selection's, "
        "and `evalgate baseline save` refuses these results.",
    )
    run: RunInfo = Field(default_factory=RunInfo)
    _read_note: Optional[str] = PrivateAttr(None)  # keys of its file this evalgate ignored (evalgate.reading)

    def comparable(self) -> dict[str, Any]:
        """The payload two runs can be compared on: everything but `run`, the agent's logs and,
        like `run`'s times, the wall-clock seconds measured per turn (efficiency invocation_duration_v1)."""
        data = self.model_dump(mode="json", exclude={"run"})
        for suite in data["suites"]:
            for case in suite["cases"]:
                case.get("efficiency", {}).pop("invocation_duration_v1", None)
                case.pop("agent_logs", None)
                case.pop("agent_attempts", None)
        return data


def canonical_json(value: Any) -> str:
    """A value's canonical JSON: sorted keys, no spaces, not ASCII-escaped."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def digest(value: Any) -> str:
    """sha256 of a value's canonical JSON (sorted keys, no spaces, UTF-8)."""
    return "sha256:" + hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def _not_serializable(o: Any) -> Any:
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


class _NotPlain(Exception):
    """A value the fast writers do not take on (a non-string key): json.dumps writes it."""


_CONTAINERS = (dict, list, tuple)
_encode_str = json.encoder.encode_basestring  # the C function json.dumps uses (ensure_ascii=False)


class _IndentedJson:
    """The text of `json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)`, faster.

    The standard library's C encoder cannot indent, so json.dumps(indent=...) runs its
    pure-Python encoder, one generator step per value. Here Python walks only the
    containers that hold containers; a container of scalars goes to the C encoder in one
    call, with that depth's indentation as its item separator. Strings, numbers and key
    order come from the same C code json.dumps uses, so the text is the same, byte for byte.
    """

    def __init__(self) -> None:
        self._flat: list[Any] = []  # depth -> a C encoder whose item separator indents at that depth
        self._inner: list[str] = []  # depth -> newline and the indentation of its items

    def _encoder(self, depth: int) -> Any:
        while len(self._flat) <= depth:
            inner = "\n" + "  " * (len(self._flat) + 1)
            self._inner.append(inner)
            self._flat.append(
                json.encoder.c_make_encoder(  # type: ignore[attr-defined]
                    None, _not_serializable, _encode_str, None, ": ", "," + inner, True, False, True
                )
            )
        return self._flat[depth]

    def chunks(self, value: Any, depth: int, out: list[str]) -> None:
        is_dict = isinstance(value, dict)
        if not is_dict and not isinstance(value, (list, tuple)):
            out.extend(self._encoder(depth)(value, 0))
            return
        if not value:
            out.append("{}" if is_dict else "[]")
            return
        encoder = self._encoder(depth + 1)
        inner, closing = self._inner[depth], "\n" + "  " * depth + ("}" if is_dict else "]")
        for v in value.values() if is_dict else value:
            if isinstance(v, _CONTAINERS):
                break
        else:  # scalars only: one C call
            flat = "".join(self._flat[depth](value, 0))
            out.append(flat[0] + inner + flat[1:-1] + closing)
            return
        separator, between = ("{" if is_dict else "[") + inner, "," + inner
        if is_dict:
            for k, v in sorted(value.items()):
                if type(k) is not str:
                    raise _NotPlain
                if type(v) is str:  # the commonest value: one C call, no list
                    out.append(separator + _encode_str(k) + ": " + _encode_str(v))
                elif isinstance(v, _CONTAINERS):
                    out.append(separator + _encode_str(k) + ": ")
                    self.chunks(v, depth + 1, out)
                else:
                    out.append(separator + _encode_str(k) + ": ")
                    out.extend(encoder(v, 0))
                separator = between
        else:
            for v in value:
                if type(v) is str:
                    out.append(separator + _encode_str(v))
                elif isinstance(v, _CONTAINERS):
                    out.append(separator)
                    self.chunks(v, depth + 1, out)
                else:
                    out.append(separator)
                    out.extend(encoder(v, 0))
                separator = between
        out.append(closing)


# Where pydantic's JSON writer may spell a float unlike Python's repr (1e-05 as 0.00001,
# 2.5e-07 as 2.5e-7): an exponent (always signed, in both), or a fraction below 1e-4. A
# candidate is a number only if the rest of its line is the rest of a number (in a string,
# the closing quote is still to come on that line).
_FLOAT_MARKS = (b"e-", b"e+", b"0.0000")
_REST_OF_NUMBER = re.compile(rb"[0-9eE+.-]*,?")


def _floats_unlike_repr(data: bytes) -> bool:
    for mark in _FLOAT_MARKS:
        at = data.find(mark)
        while at >= 0:
            end = data.find(b"\n", at)
            if _REST_OF_NUMBER.fullmatch(data, at, len(data) if end < 0 else end):
                return True
            at = data.find(mark, at + 1)
    return False


def _sorted_copy(value: Any) -> Any:
    """The value with every dict's keys in sorted order (tuples as lists), for a writer that
    keeps insertion order; _NotPlain for what json.dumps would write otherwise (keys that
    are not strings, subclasses of dict or list)."""
    kind = type(value)
    if kind is dict:
        items = sorted(value.items())
        for k, _ in items:
            if type(k) is not str:
                raise _NotPlain
        return {k: _sorted_copy(v) if isinstance(v, _CONTAINERS) else v for k, v in items}
    if kind is list or kind is tuple:
        return [_sorted_copy(v) if isinstance(v, _CONTAINERS) else v for v in value]
    raise _NotPlain


def json_chunks(value: Any, sort_keys: bool) -> list[Any]:
    """`json.dumps(value, indent=2, ensure_ascii=False, sort_keys=sort_keys) + "\\n"` of JSON
    data (what model_dump(mode="json") gives), in pieces (str, or UTF-8 bytes): the same
    text, written several times faster.

    pydantic's JSON writer (Rust) writes the same text as json.dumps but for how it spells
    some floats; so it writes (for sorted keys, a sorted copy of) the value, and its output
    is kept unless it holds such a float. Then, for sorted keys, `_IndentedJson` writes it
    (2x json.dumps' speed, exact); else, and for anything unusual, json.dumps itself.
    """
    try:
        plain = _sorted_copy(value) if sort_keys and isinstance(value, _CONTAINERS) else value
        data = pydantic_core.to_json(plain, indent=2, inf_nan_mode="constants")
        if not _floats_unlike_repr(data):
            return [data, b"\n"]
        if sort_keys and getattr(json.encoder, "c_make_encoder", None) is not None:
            out: list[Any] = []
            _IndentedJson().chunks(value, 0, out)
            out.append("\n")
            return ["".join(out)]  # one write, not a million small ones
    except (_NotPlain, pydantic_core.PydanticSerializationError, RecursionError):
        pass
    return [json.dumps(value, indent=2, ensure_ascii=False, sort_keys=sort_keys), "\n"]


def write_json(value: Any, path: Path, sort_keys: bool = False) -> None:
    """Write `value` as `json.dumps(value, indent=2, ensure_ascii=False, sort_keys=sort_keys)`
    and a newline, UTF-8, as `Path.write_text` would."""
    from evalgate import writing

    chunks = json_chunks(value, sort_keys)
    with writing.replacing(path) as f:
        for chunk in chunks:
            if isinstance(chunk, str):
                f.write(chunk)
            elif os.linesep == "\n":  # nothing to translate: the UTF-8 bytes as they are, no decoded copy
                f.flush()
                f.buffer.write(chunk)
            else:
                f.write(chunk.decode("utf-8"))


def _json_text(value: Any) -> str:
    """`json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)`, by `json_chunks`."""
    return "".join(c if isinstance(c, str) else c.decode("utf-8") for c in json_chunks(value, sort_keys=True))[:-1]


def _results_text(results: RunResults) -> Iterator[str]:
    """results.json's text (`json.dumps(dump, indent=2, ensure_ascii=False, sort_keys=True)`
    and a newline), one case at a time: the whole run is never dumped at once."""
    marker = f"evalgate-cases-{secrets.token_hex(16)}-"  # stands for a suite's cases in the rest's text
    head = results.model_dump(mode="json", exclude={"suites": {"__all__": {"cases"}}})
    for i, suite in enumerate(head["suites"]):
        suite["cases"] = f"{marker}{i}"
    rest = _json_text(head) + "\n"
    item = "\n" + "  " * 4  # a case's depth: {"suites": [{"cases": [case
    for i, suite in enumerate(results.suites):
        before, rest = rest.split(f'"{marker}{i}"', 1)
        yield before
        if not suite.cases:
            yield "[]"
            continue
        yield "["
        for j, case in enumerate(suite.cases):
            # Newlines in JSON text are all between values (a string's are escaped), so
            # indenting every line puts the case's text at its depth.
            yield ("," if j else "") + item + _json_text(case.model_dump(mode="json")).replace("\n", item)
        yield "\n" + "  " * 3 + "]"
    yield rest


def dumps(results: RunResults) -> str:
    return "".join(_results_text(results))


def write(results: RunResults, path: Path) -> None:
    """results.json, as a new file renamed into place (evalgate.writing)."""
    from evalgate import writing

    with writing.replacing(path) as f:
        f.writelines(_results_text(results))


def read(path: Path) -> RunResults:
    """Read a results file back, with a clear error when it is not one. Keys another evalgate
    version wrote are ignored, and named in `evalgate.reading.read_note(value)`."""
    from evalgate.errors import InputError, load_json_file, problems_from_validation
    from pydantic import ValidationError

    from evalgate.reading import read_known

    data = load_json_file(path)
    try:
        return read_known(RunResults, data, str(path))
    except ValidationError as e:
        raise InputError(problems_from_validation(e, str(path))) from None


def json_schema() -> dict[str, Any]:
    schema = RunResults.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "evalgate results"
    return schema
