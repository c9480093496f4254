"""ADK events (as JSON) to evalgate Invocations, by ADK 2.13's rules; shared by the runners.

The in-process runner dumps each google-adk `Event` to JSON and the API-server runner
receives the same JSON from `POST /run`, so both build their invocations here, the same
way, from the same shape. The rules are ADK's (`EvaluationGenerator`, `Event`):

- events are grouped by `invocationId`, in order of first appearance; one group is one
  invocation, whose `user_content` is the (last) event authored by "user";
- every other event that has a function call, a function response, text or inline data in
  its parts, or grounding metadata, is an intermediate event;
- the final response is the content of the last such event that is a final response (no
  function calls or responses, not partial, not ending in a code-execution result; or
  `skipSummarization`, long-running tools, an error code), except that a final response
  with text is not replaced by one without;
- the final-response event appears among the intermediate events with no content (its
  text is in `final_response` already), unless it also calls a function.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Optional

from evalgate.adk import Content, Invocation

USER = "user"


def _get(d: Optional[dict[str, Any]], camel: str, snake: str) -> Any:
    if not isinstance(d, dict):
        return None
    value = d.get(camel)
    return d.get(snake) if value is None else value


def _parts(event: dict[str, Any]) -> list[dict[str, Any]]:
    content = event.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    return [p for p in parts or [] if isinstance(p, dict)]


def _has(parts: list[dict[str, Any]], camel: str, snake: str) -> bool:
    return any(_get(p, camel, snake) for p in parts)


def is_final_response(event: dict[str, Any]) -> bool:
    """ADK's `Event.is_final_response`, on an event's JSON."""
    parts = _parts(event)
    calls = _has(parts, "functionCall", "function_call")
    actions = event.get("actions") or {}
    if _get(actions, "skipSummarization", "skip_summarization") or _get(event, "longRunningToolIds", "long_running_tool_ids"):
        return True
    partial = bool(event.get("partial"))
    if _get(event, "errorCode", "error_code") and not partial and not calls:
        return True
    trailing_code_result = bool(parts) and _get(parts[-1], "codeExecutionResult", "code_execution_result") is not None
    return not calls and not _has(parts, "functionResponse", "function_response") and not partial and not trailing_code_result


def _worth_keeping(parts: list[dict[str, Any]]) -> bool:
    return any(
        _get(p, "functionCall", "function_call") or _get(p, "functionResponse", "function_response") or p.get("text") or _get(p, "inlineData", "inline_data")
        for p in parts
    )


def _snake(value: Any) -> Any:
    """Keys in snake_case, as ADK writes these metadata in eval history, whichever casing
    the events came in (the API server answers in camelCase)."""
    if isinstance(value, dict):
        return {re.sub(r"(?<!^)([A-Z])", r"_\1", k).lower(): _snake(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_snake(v) for v in value]
    return value


def group_by_invocation(events: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        groups.setdefault(str(_get(event, "invocationId", "invocation_id") or ""), []).append(event)
    return groups


def to_invocations(
    events: Iterable[dict[str, Any]],
    app_details: Optional[dict[str, dict[str, Any]]] = None,
    durations: Optional[dict[str, float]] = None,
    split: Optional[dict[str, tuple[float, float]]] = None,
) -> list[Invocation]:
    """One Invocation per invocation id in `events` (ADK event JSON, either casing).

    `app_details`, `durations` (seconds) and `split` (seconds awaiting the model, and in
    tools beyond that: ADK's model_duration and tool_duration) are keyed by invocation id,
    when the runner knows them.
    """
    out = []
    for invocation_id, group in group_by_invocation(events).items():
        user_content: Any = {"parts": []}
        timestamp = 0.0
        final: Optional[dict[str, Any]] = None
        kept: list[dict[str, Any]] = []
        for event in group:
            if (event.get("author") or "agent").lower() == USER:
                if event.get("content") is not None:
                    user_content = event["content"]
                    timestamp = float(event.get("timestamp") or 0.0)
                continue
            parts = _parts(event)
            grounding = _get(event, "groundingMetadata", "grounding_metadata")
            if parts:
                if is_final_response(event):
                    final_has_text = final is not None and any(p.get("text") for p in _parts(final))
                    if not final_has_text or any(p.get("text") for p in parts):
                        final = event
                if grounding is not None or _worth_keeping(parts):
                    kept.append(event)
            elif grounding is not None:
                kept.append(event)
        intermediate = [
            {
                "author": e.get("author"),
                "content": e.get("content") if e is not final or _has(_parts(e), "functionCall", "function_call") else None,
                "grounding_metadata": _snake(_get(e, "groundingMetadata", "grounding_metadata")),
                "usage_metadata": _snake(_get(e, "usageMetadata", "usage_metadata")),
                "model_version": _get(e, "modelVersion", "model_version"),
            }
            for e in kept
        ]
        out.append(
            Invocation.model_validate(
                {
                    "invocation_id": invocation_id,
                    "user_content": user_content,
                    "final_response": final.get("content") if final is not None else None,
                    "intermediate_data": {"invocation_events": intermediate},
                    "creation_timestamp": timestamp,
                    "duration": (durations or {}).get(invocation_id),
                    "model_duration": (split or {}).get(invocation_id, (None, None))[0],
                    "tool_duration": (split or {}).get(invocation_id, (None, None))[1],
                    "app_details": (app_details or {}).get(invocation_id),
                }
            )
        )
    return out


def user_event(content: Content, invocation_id: str, timestamp: float) -> dict[str, Any]:
    """The user's turn as ADK records it: an event authored by "user" in the agent's invocation."""
    return {
        "author": USER,
        "invocationId": invocation_id,
        "content": content.model_dump(mode="json", by_alias=True, exclude_none=True),
        "timestamp": timestamp,
    }
