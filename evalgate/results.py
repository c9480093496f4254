"""The results file (`results.json`): typed models, deterministic writing, reading back.

The comparable payload is everything but `run`: sorted, stable, free of timestamps, so two
runs over the same data and config produce the same bytes there. `run` carries what
legitimately differs between runs (when, how long).
"""

from __future__ import annotations

import hashlib
import json
from enum import Enum
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from evalgate import __version__

SCHEMA_VERSION = 1


class Status(str, Enum):
    PASSED = "PASSED"
    FAILED = "FAILED"
    NOT_EVALUATED = "NOT_EVALUATED"


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


class CaseResult(_Model):
    eval_set_id: str
    eval_id: str
    expected_digest: str = Field(description="sha256 of the case's expected data; a changed case has a new digest.")
    status: Status
    criteria: dict[str, CriterionResult]
    invocations: list[InvocationSummary] = Field(default_factory=list)
    source: dict[str, str] = Field(default_factory=dict, description="Files the case and its actual outputs came from.")
    conversation_end: Optional[str] = Field(
        None,
        exclude_if=lambda v: v is None,
        description="A simulated conversation (conversation_scenario): why it ended, 'stop signal' or 'turn limit' (the first run's).",
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
    sampling: Optional[Literal["early_stop"]] = Field(
        None,
        description="Judge criteria decided by a majority vote: \"early_stop\" when samples stopped once the "
        "majority was decided (judge.early_stop), so details.samples holds the samples drawn; absent when "
        "every sample was drawn. compare does not mix the two on sample means.",
        exclude_if=lambda v: v is None,
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
        description="Running the agent: seconds (wall time of the whole step) and, per suite, case_runs, failed, "
        "duration_s (sum of case-run wall times), tokens (the agent's model tokens), tools (replayed / live calls under tools: replay).",
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
    run: RunInfo = Field(default_factory=RunInfo)

    def comparable(self) -> dict[str, Any]:
        """The payload two runs can be compared on: everything but `run`."""
        return self.model_dump(mode="json", exclude={"run"})


def digest(value: Any) -> str:
    """sha256 of a value's canonical JSON (sorted keys, no spaces, UTF-8)."""
    data = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return "sha256:" + hashlib.sha256(data.encode("utf-8")).hexdigest()


def dumps(results: RunResults) -> str:
    return json.dumps(results.model_dump(mode="json"), sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def write(results: RunResults, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(results), encoding="utf-8")


def read(path: Path) -> RunResults:
    """Read a results file back, with a clear error when it is not one."""
    from evalgate.errors import InputError, load_json_file, problems_from_validation
    from pydantic import ValidationError

    data = load_json_file(path)
    try:
        return RunResults.model_validate(data)
    except ValidationError as e:
        raise InputError(problems_from_validation(e, str(path))) from None


def json_schema() -> dict[str, Any]:
    schema = RunResults.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "evalgate results"
    return schema
