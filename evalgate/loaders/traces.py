"""KnowledgePulse ReasoningTrace files: one trace object, a JSON list of traces, or JSONL.

The model is tolerant the way real traces need: unknown keys are kept, and only what
scoring uses is checked. What KnowledgePulse's own schema requires and gives no default
for (`metadata.success`, `outcome.confidence`) is required here too; a missing
`metadata.task_domain` scores with the default weights, as KnowledgePulse's scorer does.
Step types are KnowledgePulse's four, so a misspelt `error_recovery` is an error rather
than a silently different score.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

from evalgate.errors import InputError, Problem, ProblemCollector, did_you_mean, parse_json, problems_from_validation, read_jsonl, read_text

STEP_TYPES = ("thought", "tool_call", "observation", "error_recovery")
StepType = Literal["thought", "tool_call", "observation", "error_recovery"]

_JSONL_SUFFIXES = (".jsonl", ".ndjson")
TOP_LEVEL = "(top level)"


class _TraceModel(BaseModel):
    # Traces carry much more than scoring reads (@context, created_at, latency_ms, ...).
    model_config = ConfigDict(extra="allow")


class ToolRef(_TraceModel):
    name: Optional[str] = None


class TraceStep(_TraceModel):
    type: StepType
    content: Optional[str] = None
    # Any object, even {}, means the step used a tool; null means it did not.
    tool: Optional[ToolRef] = None


class TraceMetadata(_TraceModel):
    task_domain: Optional[str] = None
    # Strict: "false" is truthy in KnowledgePulse's JavaScript, so no string may stand in.
    success: StrictBool


class TraceTask(_TraceModel):
    objective: Optional[str] = None


class TraceOutcome(_TraceModel):
    confidence: Annotated[float, Field(strict=True, ge=0.0, le=1.0)]
    result_summary: Optional[str] = None


class ReasoningTrace(_TraceModel):
    """A KnowledgePulse ReasoningTrace, as much of it as evalgate reads."""

    id: Annotated[str, Field(strict=True, min_length=1)]
    metadata: TraceMetadata
    task: TraceTask = Field(default_factory=TraceTask)
    steps: list[TraceStep]
    outcome: TraceOutcome


def load_traces(path: Path, shown: str) -> list[tuple[str, ReasoningTrace]]:
    """Every trace in `path` with where it sits in the file, in file order.

    The place is `(top level)` for a file holding one object, `[i]` for a JSON list and
    `line n` for JSONL. A `.jsonl` or `.ndjson` file is JSONL; any other is read as JSON,
    unless it fails as JSON only because a complete object ends its first line (then it
    is JSONL). Every problem in the file is raised together in one InputError.
    """
    text = read_text(path, shown)
    if path.suffix.lower() in _JSONL_SUFFIXES:
        values, problems = _jsonl_values(text, shown)
    else:
        values, problems = _json_values(text, shown)
    traces = []
    for where, value in values:
        trace = _validate(value, where, shown, problems)
        if trace is not None:
            traces.append((where, trace))
    if not values and not problems.problems:
        problems.add(shown, None, "holds no traces", "Add at least one ReasoningTrace object, or leave this file out.")
    problems.raise_if_any()
    return traces


def _json_values(text: str, shown: str) -> tuple[list[tuple[str, Any]], ProblemCollector]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        if e.msg == "Extra data" and _first_line_is_object(text):
            return _jsonl_values(text, shown)
        raise InputError(Problem(shown, f"line {e.lineno}, column {e.colno}", f"invalid JSON: {e.msg}", "Fix the JSON syntax at that place.")) from None
    except (ValueError, RecursionError):
        data = parse_json(text, shown)  # raises the shared message for absurd numbers and nesting
    problems = ProblemCollector()
    if isinstance(data, list):
        return [(f"[{i}]", item) for i, item in enumerate(data)], problems
    if isinstance(data, dict):
        return [(TOP_LEVEL, data)], problems
    problems.add(shown, None, f"holds {_kind(data)}, not a trace", "Give one ReasoningTrace object, a list of them, or JSONL with one per line.")
    return [], problems


def _first_line_is_object(text: str) -> bool:
    first = next((line for line in text.split("\n") if line.strip()), "")
    try:
        return isinstance(json.loads(first), dict)
    except (ValueError, RecursionError):
        return False


def _jsonl_values(text: str, shown: str) -> tuple[list[tuple[str, Any]], ProblemCollector]:
    return [(f"line {n}", value) for n, value in read_jsonl(text, shown)], ProblemCollector()


def _validate(value: Any, where: str, shown: str, problems: ProblemCollector) -> ReasoningTrace | None:
    if not isinstance(value, dict):  # only list items and JSONL lines get here
        problems.add(shown, where, f"is {_kind(value)}, not a trace object", "Each trace must be one JSON object with id, metadata, steps and outcome.")
        return None
    try:
        return ReasoningTrace.model_validate(value)
    except ValidationError as e:
        found = problems_from_validation(e, shown, _path_prefix(where))
        # One problem per pydantic error, in the same order, so the two pair up.
        problems.extend(dataclasses.replace(p, fix=_fix_for(err) or p.fix) for err, p in zip(e.errors(include_url=False), found))
        return None


def _path_prefix(where: str) -> str:
    """How a field path inside a trace continues its place: `[2].steps[0]`, `line 3: steps[0]`."""
    if where == TOP_LEVEL:
        return ""
    if where.startswith("line "):
        return f"{where}: "
    return where


# Fixes that say more than the generic ones, keyed by (error type, last named field).
_FIXES = {
    ("missing", "id"): "Give the trace a unique id, such as 'kp:trace:<uuid>'.",
    ("string_too_short", "id"): "Give the trace a unique id, such as 'kp:trace:<uuid>'.",
    ("missing", "metadata"): "Add a metadata object with success (true or false) and task_domain.",
    ("missing", "success"): "Add metadata.success, true or false; KnowledgePulse requires it and has no default.",
    ("missing", "outcome"): "Add an outcome object with confidence, a number from 0 to 1.",
    ("missing", "confidence"): "Add outcome.confidence, a number from 0 to 1; KnowledgePulse requires it and has no default.",
    ("missing", "steps"): "Add steps, the list of the trace's steps.",
}


def _fix_for(err: dict[str, Any]) -> str | None:
    kind = err.get("type", "")
    names = [part for part in err.get("loc", ()) if isinstance(part, str)]
    last = names[-1] if names else ""
    if (kind, last) in _FIXES:
        return _FIXES[(kind, last)]
    if kind == "literal_error" and last == "type":
        return "Use one of KnowledgePulse's step types. " + did_you_mean(str(err.get("input")), STEP_TYPES)
    if last == "confidence" and kind in ("greater_than_equal", "less_than_equal"):
        return "Give a number from 0 to 1."
    return None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"
