"""Actual outputs: ADK eval history (`*.evalset_result.json`), evalgate's inference JSONL, and
agents-cli traces (`traces_<time>.json`, by content: `evalgate.agents_cli.traces`).

Inference JSONL, one line per case: `{"eval_set_id": ..., "eval_id": ..., "invocations":
[<ADK Invocation>, ...]}`. ADK eval history holds the actual invocations inside each case
result's per-invocation metric results; ADK <= 1.20 wrote it double-encoded (a JSON string
holding the JSON), which is read too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalgate.adk import EvalSetResult, Invocation, field_names
from evalgate.errors import InputError, Problem, ProblemCollector, display_path, parse_json, problems_from_validation, read_jsonl, read_text
from evalgate.reading import ignored_note, validate_known


class InferenceRecord(BaseModel):
    """One line of evalgate's inference JSONL. Strict on what it knows (it is our format);
    read with `evalgate.reading.validate_known`, so a field another evalgate version wrote is
    ignored with a warning, not an error."""

    model_config = ConfigDict(extra="forbid")

    suite: Optional[str] = Field(
        None,
        description="The suite whose agent produced it (evalgate writes it). When a file's records name suites, a suite reading it takes only its own records and those that name none.",
    )
    eval_set_id: str = Field(description="The eval set's eval_set_id (for a legacy *.test.json file: its path).")
    eval_id: str = Field(min_length=1, description="The eval case's eval_id.")
    run: Optional[int] = Field(
        None, ge=1, description="Which run of the case (num_runs); records of one case with different runs are scored together."
    )
    invocations: list[Invocation] = Field(default_factory=list, description="The agent's invocations, in ADK's Invocation shape, in order.")
    error: Optional[str] = Field(None, description="The run failed: why (its criteria are NOT_EVALUATED with this reason).")
    ended: Optional[str] = Field(None, description="A simulated conversation (conversation_scenario): why it ended, 'stop signal' or 'turn limit'.")
    attempts: Optional[int] = Field(
        None, ge=1, description="How many times the case run was started (evalgate writes it when more than once: a transient failure was retried)."
    )
    expected_digest: Optional[str] = Field(
        None, description="The case's expected_digest when it ran (evalgate writes it): `run --resume` reruns a case whose data changed since."
    )
    log: Optional[str] = Field(
        None,
        description="What the agent, its tools and ADK wrote during the run (logging records, stdout, stderr; a command's "
        "stderr; an API server's error answer): its last 200 lines, at most 20,000 characters. Absent when it wrote nothing.",
    )


@dataclass
class ActualRecord:
    eval_set_id: str
    eval_id: str
    invocations: list[Invocation]
    shown: str  # the file, as shown in messages
    place: str  # where inside it
    timestamp: float | None  # eval history's creation time; None for inference JSONL
    path: Path | None = None
    run: int | None = None  # inference JSONL's run number, when it has one
    error: str | None = None  # the run failed
    suite: str | None = None  # inference JSONL: the suite that ran it, when recorded
    ended: str | None = None  # inference JSONL: why a simulated conversation ended
    log: str | None = None  # inference JSONL: what the agent wrote during the run
    trace: dict[str, Any] | None = None  # agents-cli traces: the trace case (`case_dump`); eval_set_id "" when it names none
    other_runs: list["ActualRecord"] = field(default_factory=list)  # the case's other runs


# What a folder or glob in `actual` is searched for; a `.json` other than eval history is
# taken only when it holds agents-cli traces (`recorded_outputs`).
ACTUAL_SUFFIXES = (".evalset_result.json", ".jsonl", ".json")


def recorded_outputs(found: list[Path]) -> tuple[list[Path], str]:
    """Of the files a folder or glob in `actual` matched: eval history and inference JSONL by
    name, agents-cli traces by content (other JSON beside them is skipped); and what was
    looked for, for the message when nothing is left."""
    from evalgate.agents_cli.dataset import is_dataset_file

    kept = [p for p in found if p.name.endswith((".evalset_result.json", ".jsonl")) or is_dataset_file(p)]
    return kept, "ADK eval history (*.evalset_result.json), inference JSONL (*.jsonl) nor agents-cli traces (traces_<time>.json)"


def load_actual(path: Path, warnings: list[str] | None = None) -> list[ActualRecord]:
    """The actual records of an eval history or inference JSONL file. Keys of an inference
    record that this evalgate does not know are ignored, and one warning about them is
    appended to `warnings`."""
    shown = display_path(path)
    text = read_text(path, shown)
    if path.name.endswith(".jsonl"):
        return _with_path(_from_jsonl(text, shown, warnings if warnings is not None else []), path)
    data = parse_json(text, shown)
    if isinstance(data, str):  # double-encoded eval history from ADK <= 1.20
        data = parse_json(data, shown)
    if isinstance(data, dict) and ({"eval_case_results", "evalCaseResults"} & data.keys()):
        return _with_path(_from_history(data, shown), path)
    from evalgate.agents_cli.cases import looks_like_dataset

    if looks_like_dataset(data):
        from evalgate.agents_cli.traces import trace_records

        return trace_records(data, path, shown, ActualRecord)
    raise InputError(
        Problem(
            shown,
            None,
            "not ADK eval history, evalgate inference JSONL nor agents-cli traces",
            "Point 'actual' at *.evalset_result.json files from ADK's eval history, at a .jsonl file with one {eval_set_id, eval_id, invocations} per line, "
            "or at agents-cli traces (traces_<time>.json, or their folder).",
        )
    )


def _with_path(records: list[ActualRecord], path: Path) -> list[ActualRecord]:
    for r in records:
        r.path = path
    return records


def _from_history(data: dict[str, Any], shown: str) -> list[ActualRecord]:
    try:
        result = EvalSetResult.model_validate(data)
    except ValidationError as e:
        raise InputError(problems_from_validation(e, shown, valid_keys_for=lambda loc: field_names())) from None
    records = []
    for i, case in enumerate(result.eval_case_results):
        invocations = [p.actual_invocation for p in case.eval_metric_result_per_invocation]
        records.append(
            ActualRecord(
                eval_set_id=case.eval_set_id or result.eval_set_id,
                eval_id=case.eval_id,
                invocations=invocations,
                shown=shown,
                place=f"eval_case_results[{i}]",
                timestamp=result.creation_timestamp,
            )
        )
    return records


def _from_jsonl(text: str, shown: str, warnings: list[str]) -> list[ActualRecord]:
    problems = ProblemCollector()
    records = []
    ignored: list[tuple[int, list[str]]] = []  # (line, unknown keys)
    for n, data in read_jsonl(text, shown):
        try:
            rec, unknown = validate_known(InferenceRecord, data, record_keys)
        except ValidationError as e:
            problems.extend(problems_from_validation(e, shown, prefix=f"line {n}: ", valid_keys_for=record_keys))
            continue
        if unknown:
            ignored.append((n, unknown))
        records.append(ActualRecord(rec.eval_set_id, rec.eval_id, rec.invocations, shown, f"line {n}", None, run=rec.run, error=rec.error, suite=rec.suite, ended=rec.ended, log=rec.log))
    problems.raise_if_any()
    if ignored:
        warnings.append(ignored_note(shown, f"line {ignored[0][0]}", ignored[0][1], len(ignored) - 1))
    return records


def record_keys(loc: tuple) -> list[str]:
    """The field names at a place in an inference record: the record's own at its top level,
    else ADK's (to name the closest to a typo)."""
    return list(InferenceRecord.model_fields) if not loc else field_names()


def inference_schema() -> dict[str, Any]:
    """JSON Schema of one inference JSONL line."""
    # snake_case, as ADK and evalgate write these files (reading accepts camelCase too).
    schema = InferenceRecord.model_json_schema(by_alias=False)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "evalgate inference record (one JSONL line)"
    return schema
