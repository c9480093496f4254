"""Criteria, one module each, registered under their ADK metric names."""

from evalgate.criteria.base import REGISTRY, Criterion, Outcome, criterion

# Importing a criterion's module registers it. Heavy SDKs are imported inside the
# criteria that need them, never at module level.
from evalgate.criteria import final_response_match_v2, hallucinations, per_turn_user_simulator, response_match, rubric_final_response, rubric_tool_use, response_evaluation_score, tool_trajectory, trace_value, vertex_metrics, vertex_multi_turn  # noqa: F401,E402

__all__ = ["REGISTRY", "Criterion", "Outcome", "criterion"]
