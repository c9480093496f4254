"""Criteria, one module each, registered under their ADK metric names."""

from evalgate.criteria.base import REGISTRY, Criterion, Outcome, criterion

# Importing a criterion's module registers it (custom_metric is not registered: its names
# are the user's, declared in custom_metrics). Heavy SDKs are imported inside the
# criteria that need them, never at module level.
from evalgate.criteria import (  # noqa: F401,E402
    custom_metric,
    final_response_match_v2,
    hallucinations,
    per_turn_user_simulator,
    response_evaluation_score,
    response_match,
    rubric_final_response,
    rubric_multi_turn_trajectory,
    rubric_tool_use,
    tool_trajectory,
    trace_value,
    trajectory_overlap,
    trajectory_single_tool_use,
    vertex_metrics,
    vertex_multi_turn,
)

__all__ = ["REGISTRY", "Criterion", "Outcome", "criterion", "scales"]


def scales() -> dict[str, tuple[float, float]]:
    """The registered criteria whose scores are not 0 to 1, by name: their `score_range`,
    which the gate is handed (evalgate.gate.compare's `scales`)."""
    return {name: cls.score_range for name, cls in sorted(REGISTRY.items()) if tuple(cls.score_range) != (0.0, 1.0)}
