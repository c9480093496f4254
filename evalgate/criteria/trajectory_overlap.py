"""`trajectory_precision` and `trajectory_recall`: how far the actual tool calls overlap the expected ones.

Vertex AI's computation-based trajectory metrics, under Vertex's names, computed here (local,
free, offline). Vertex defines precision as the share of predicted (actual) tool calls that
appear in the reference (expected) trajectory, and recall as the share of reference calls that
appear in the predicted one. Both are one count, the overlap, over two different totals, so
the two criteria share this module.

Each invocation is scored on its own and the engine averages invocations, as for
`tool_trajectory_avg_score`. Within an invocation:

- Two calls match as in `tool_trajectory_avg_score`: equal names and, unless `ignore_args`,
  arguments equal as values (1 == 1.0; None differs from {}). Order does not matter.
- Duplicates count as a multiset: each expected call matches at most one actual call and
  each actual call at most one expected call (the ANY_ORDER rule). So actual [a, a] against
  expected [a] is precision 1/2, recall 1; actual [a] against expected [a, a] is precision 1,
  recall 1/2. Vertex's wording leaves repeats open; counting each once per expected
  occurrence is what makes a repeated call cost precision.
- Empty lists: both empty is 1.0 for both (the trajectories agree). When exactly one is
  empty nothing overlaps and both are 0.0, so neither criterion alone passes an agent that
  called no tool when tools were expected, or called tools when none were. Vertex does not
  define these cases.

Vertex receives arguments as JSON text; here they compare as values, exactly as
`tool_trajectory_avg_score` compares them, so the two criteria agree on what a match is.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from evalgate.adk import Invocation
from evalgate.criteria.base import Criterion, Outcome, criterion


def overlap(got: list[Any], want: list[Any]) -> tuple[int, list[Any], list[Any]]:
    """(matched, actual calls left over, expected calls left over) under multiset matching.

    Equality of calls is an equivalence relation, so taking the first equal expected call
    for each actual call gives the largest matching.
    """
    left = list(want)
    extra = []
    for call in got:
        for i, candidate in enumerate(left):
            if candidate == call:
                del left[i]
                break
        else:
            extra.append(call)
    return len(got) - len(extra), extra, left


def _ratio(matched: int, total: int, other_total: int) -> float:
    if total:
        return matched / total
    return 1.0 if other_total == 0 else 0.0


def _shown(calls: list[Any]) -> list[Any]:
    """Calls as they go into details: names, or {name, args}."""
    return [c if not isinstance(c, tuple) else {"name": c[0], "args": c[1]} for c in calls]


class _Overlap(Criterion):
    reads: ClassVar[frozenset[str]] = frozenset({"tool_uses"})
    ignore_args: bool = Field(default=False, description="Compare tool names only.")

    def _counts(self, actual: Invocation, expected: Invocation | None) -> tuple[int, int, int, dict[str, Any]]:
        assert expected is not None
        if self.ignore_args:
            got, want = actual.call_names, expected.call_names
        else:
            got, want = actual.call_keys, expected.call_keys
        matched, extra, missing = overlap(got, want)
        details = {"matched": matched, "actual_calls": len(got), "expected_calls": len(want)}
        if extra:
            details["unexpected"] = _shown(extra)
        if missing:
            details["missing"] = _shown(missing)
        return matched, len(got), len(want), details


@criterion
class TrajectoryPrecision(_Overlap):
    """Share of the actual tool calls that match an expected call, per invocation (Vertex AI `trajectory_precision`)."""

    name: ClassVar[str] = "trajectory_precision"

    def score_invocation(self, actual: Invocation, expected: Invocation | None) -> Outcome:
        matched, n_actual, n_expected, details = self._counts(actual, expected)
        return Outcome(_ratio(matched, n_actual, n_expected), details)


@criterion
class TrajectoryRecall(_Overlap):
    """Share of the expected tool calls that an actual call matches, per invocation (Vertex AI `trajectory_recall`)."""

    name: ClassVar[str] = "trajectory_recall"

    def score_invocation(self, actual: Invocation, expected: Invocation | None) -> Outcome:
        matched, n_actual, n_expected, details = self._counts(actual, expected)
        return Outcome(_ratio(matched, n_expected, n_actual), details)
