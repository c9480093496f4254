"""`trajectory_single_tool_use`: did the agent call the named tool? Vertex AI's metric, computed locally.

Per invocation 1.0 when any actual tool call has the name `tool_name` (exact, case-sensitive),
else 0.0, as Vertex defines it: neither order nor how often the tool was called counts, and
arguments are not read. The engine averages invocations, so a case's score is the share of
its turns that called the tool. It needs no expected conversation, so it also scores
simulated conversations (`conversation_scenario`).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, field_validator

from evalgate.adk import Invocation
from evalgate.criteria.base import Criterion, Outcome, criterion


@criterion
class TrajectorySingleToolUse(Criterion):
    """Per invocation 1 if the named tool was called, else 0 (Vertex AI `trajectory_single_tool_use`)."""

    name: ClassVar[str] = "trajectory_single_tool_use"
    reads: ClassVar[frozenset[str]] = frozenset()  # only what the run reads: no expected data
    needs_expected: ClassVar[bool] = False

    tool_name: str = Field(description="The tool that must be called, exactly as the agent names it.")

    @field_validator("tool_name")
    @classmethod
    def _named(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("tool_name is empty; name the tool the agent must call")
        return value

    def score_invocation(self, actual: Invocation, expected: Invocation | None) -> Outcome:
        calls = actual.call_names
        return Outcome(1.0 if self.tool_name in calls else 0.0, {"calls": calls.count(self.tool_name)})
