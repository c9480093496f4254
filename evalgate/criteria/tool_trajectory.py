"""`tool_trajectory_avg_score`: did the agent call the expected tools, ADK 2.13 semantics.

Each invocation scores 1.0 when its tool calls match the expected ones, else 0.0; the
engine averages invocations. Two calls match when their names are equal and, unless
`ignore_args`, their arguments are equal as Python values (so 1 == 1.0, and None differs
from {}). Match types:

- EXACT: the same calls in the same order, nothing extra or missing;
- IN_ORDER: the expected calls appear in the actual ones in order, extras allowed between;
- ANY_ORDER: every expected call has its own distinct matching actual call (multiset
  containment), extras allowed.

An empty expected list passes IN_ORDER and ANY_ORDER, and EXACT only when no tool was
called.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, ClassVar

from pydantic import Field, field_validator

from evalgate.adk import FunctionCall, Invocation
from evalgate.criteria.base import Criterion, Outcome, criterion


class MatchType(str, Enum):
    EXACT = "EXACT"
    IN_ORDER = "IN_ORDER"
    ANY_ORDER = "ANY_ORDER"


_BY_NUMBER = {0: MatchType.EXACT, 1: MatchType.IN_ORDER, 2: MatchType.ANY_ORDER}


@criterion
class ToolTrajectory(Criterion):
    """Tool-call trajectory match, averaged over invocations (ADK `tool_trajectory_avg_score`)."""

    name: ClassVar[str] = "tool_trajectory_avg_score"

    match_type: MatchType = Field(
        default=MatchType.EXACT,
        description="EXACT, IN_ORDER or ANY_ORDER (any casing), or 0, 1, 2 as in ADK.",
    )
    ignore_args: bool = Field(default=False, description="Compare tool names only.")

    @field_validator("match_type", mode="before")
    @classmethod
    def _coerce_match_type(cls, value: Any) -> Any:
        if isinstance(value, bool):
            return value  # rejected below: True is not a match type
        if isinstance(value, int) and value in _BY_NUMBER:
            return _BY_NUMBER[value]
        if isinstance(value, str):
            normal = value.strip().upper().replace("-", "_").replace(" ", "_")
            if normal in MatchType.__members__:
                return MatchType[normal]
            raise ValueError(f"unknown match_type '{value}'; use EXACT, IN_ORDER or ANY_ORDER")
        return value

    def score_invocation(self, actual: Invocation, expected: Invocation | None) -> Outcome:
        assert expected is not None
        got = actual.tool_calls()
        want = expected.tool_calls()
        if self.match_type is MatchType.EXACT:
            ok = self._exact(got, want)
        elif self.match_type is MatchType.IN_ORDER:
            ok = self._in_order(got, want)
        else:
            ok = self._any_order(got, want)
        details = {"expected_tools": _describe(want), "actual_tools": _describe(got)}
        return Outcome(1.0 if ok else 0.0, details)

    def _same(self, a: FunctionCall, b: FunctionCall) -> bool:
        return a.name == b.name and (self.ignore_args or a.args == b.args)

    def _exact(self, got: list[FunctionCall], want: list[FunctionCall]) -> bool:
        return len(got) == len(want) and all(self._same(a, b) for a, b in zip(got, want))

    def _in_order(self, got: list[FunctionCall], want: list[FunctionCall]) -> bool:
        # Greedy subsequence: take each actual call that matches the next expected one.
        i = 0
        for call in got:
            if i == len(want):
                break
            if self._same(call, want[i]):
                i += 1
        return i == len(want)

    def _any_order(self, got: list[FunctionCall], want: list[FunctionCall]) -> bool:
        # "Same call" is an equivalence relation, so taking the first unused match for
        # each expected call never blocks a later one: greedy is exact here.
        unused = list(got)
        for w in want:
            for j, call in enumerate(unused):
                if self._same(call, w):
                    del unused[j]
                    break
            else:
                return False
        return True


def _describe(calls: list[FunctionCall]) -> list[dict[str, Any]]:
    return [{"name": c.name, "args": c.args} for c in calls]
