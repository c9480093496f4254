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

from evalgate.adk import Invocation
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
    reads: ClassVar[frozenset[str]] = frozenset({"tool_uses"})

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
        # Calls compare as (name, args) tuples, or names alone: == on these is exactly
        # "names equal and args equal" (the tools themselves are in the case summary).
        if self.ignore_args:
            got, want = actual.call_names, expected.call_names
        else:
            got, want = actual.call_keys, expected.call_keys
        if self.match_type is MatchType.EXACT:
            ok = got == want
        elif self.match_type is MatchType.IN_ORDER:
            ok = _in_order(got, want)
        else:
            ok = _any_order(got, want)
        return Outcome(1.0 if ok else 0.0)


def _in_order(got: list, want: list) -> bool:
    """Is `want` a subsequence of `got`? Greedy: take each call that matches the next one wanted."""
    i, n = 0, len(want)
    for call in got:
        if i == n:
            break
        if call == want[i]:
            i += 1
    return i == n


def _any_order(got: list, want: list) -> bool:
    """Multiset containment: each wanted call needs its own matching call. Equality is an
    equivalence relation, so removing the first match never blocks a later one."""
    unused = list(got)
    for call in want:
        try:
            unused.remove(call)
        except ValueError:
            return False
    return True
