"""ADK 2.13's Vertex AI multi-turn metrics: one evaluateInstances request judges a whole conversation.

`multi_turn_task_success_v1`, `multi_turn_trajectory_quality_v1` and
`multi_turn_tool_use_quality_v1` (also addressed as `vertexai:<name>`) send what ADK 2.13 sends
(`vertex_ai_eval_facade.py::_MultiTurnVertexiAiEvalFacade` through the Vertex SDK's
`PredefinedMetricHandler`), so a case costs one request, through the run's Vertex runtime
(pool, rate cap, retries, cache; `evalgate.vertex.service`):

- `metrics`: the predefined metric by its versioned name;
- `instance.prompt`: empty contents (ADK sends the conversation only as agent data);
- `instance.agent_eval_data.agents`: agent name -> {agent_id, instruction, tools} from the
  actual invocations' `app_details.agent_details`; the first description of a name wins;
- `instance.agent_eval_data.turns`: one per actual invocation, {turn_index (from 0), turn_id
  (the invocation_id), events}; the events are the user's content, every recorded
  `invocation_events` entry that has content (tool calls, tool responses, texts, thoughts;
  authors as recorded), then {author "agent", content: final_response}. Contents go as
  recorded, with every part field evalgate's data model keeps (text, thought,
  thought_signature, function calls and responses, inline and file data, executable code and
  its result); rarer google-genai fields (video_metadata, display_name, ...) are not sent.
  The older `intermediate_data` shape (tool_uses, ...) contributes no events, as in ADK.
Not sent, as in ADK: the expected invocations, the conversation scenario, rubrics, session state.

Reading the reply as ADK reads it: the score as the service gives it (no default threshold;
the criterion's threshold decides); a row-level or HTTP error, or no score, is NOT_EVALUATED
with the reason. The verdict sits on the last turn, which carries the score, the explanation and
the rubric verdicts (`rubric_id` = the rubric's description, else its id, else `rubric_<i>`;
score 1.0 for a met rubric, else 0.0; rationale = the service's reasoning); earlier turns are
NOT_EVALUATED placeholders with no score, and the case's score and status are the last turn's.
"""

from __future__ import annotations

from typing import Any, ClassVar, Optional

from evalgate import reasons
from evalgate.adk import Content, Invocation, InvocationEvents
from evalgate.criteria.base import CaseOutcome, Outcome, Scope, criterion
from evalgate.criteria.vertex_metrics import VertexCriterion, _app_agents, _without_nulls, numeric_score
from evalgate.vertex.service import EvalReply

FINAL_AUTHOR = "agent"  # ADK's author of the final response in the agent data


class AdkMultiTurnMetric(VertexCriterion):
    """Base of ADK's Vertex multi-turn metrics: the conversation in one request, judged as a whole."""

    scope: ClassVar[Scope] = "case"
    mapping_version: ClassVar[str] = "adk-multi-turn-1"

    def score_case(self, actual: list[Invocation], expected: Optional[list[Invocation]],
                   scenario: Optional[dict[str, Any]]) -> CaseOutcome:
        if not actual:
            return CaseOutcome(Outcome(None, {"metric": self.metric}, error=reasons.CASE_NO_INVOCATIONS), [])
        last = read_adk_reply(self.metric, self.runtime.evaluate(self.request(conversation_instance(actual))))
        # As ADK: the conversation is judged once, on the last turn; earlier turns get no verdict.
        return CaseOutcome(last, [Outcome(None) for _ in actual[:-1]] + [last])

    def score_invocations(self, actual: list[Invocation], expected: Optional[list[Invocation]]) -> list[Outcome]:
        return self.score_case(actual, expected, None).per_invocation


def conversation_instance(actual: list[Invocation]) -> dict[str, Any]:
    """The evaluateInstances instance ADK 2.13 builds for a conversation (REST JSON, snake_case)."""
    return {
        "prompt": {"contents": {"contents": []}},
        "agent_eval_data": {
            "agents": _agents(actual),
            "turns": [_turn(k, inv) for k, inv in enumerate(actual)],
        },
    }


def _agents(actual: list[Invocation]) -> dict[str, Any]:
    agents: dict[str, Any] = {}
    for inv in actual:
        for key, info in _app_agents(inv):
            if key in agents:
                continue
            tools = info.get("tool_declarations", info.get("toolDeclarations"))
            agents[key] = {
                # ADK's AgentDetails requires `name`; a file without one is read leniently.
                "agent_id": info.get("name", key),
                "instruction": info.get("instructions", ""),
                "tools": [_tool(t) for t in tools] if isinstance(tools, list) else [],
            }
    return agents


def _tool(tool: Any) -> Any:
    """A recorded tool declaration as ADK sends it: the Vertex SDK reads it as a google-genai
    Tool, which drops unset fields and spells schema types in upper case."""
    tool = _without_nulls(tool)
    if not isinstance(tool, dict):
        return tool
    for key in ("function_declarations", "functionDeclarations"):
        declarations = tool.get(key)
        for d in declarations if isinstance(declarations, list) else []:
            if isinstance(d, dict):
                for field in ("parameters", "response"):
                    if field in d:
                        d[field] = _upper_types(d[field])
    return tool


def _upper_types(schema: Any) -> Any:
    """A Gemini Schema with its `type` names in upper case (google-genai reads them case-insensitively)."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    if isinstance(out.get("type"), str):
        out["type"] = out["type"].upper()
    if isinstance(out.get("properties"), dict):
        out["properties"] = {k: _upper_types(v) for k, v in out["properties"].items()}
    if "items" in out:
        out["items"] = _upper_types(out["items"])
    for key in ("any_of", "anyOf"):
        if isinstance(out.get(key), list):
            out[key] = [_upper_types(v) for v in out[key]]
    return out


def _turn(index: int, inv: Invocation) -> dict[str, Any]:
    events = [{"author": "user", "content": _recorded(inv.user_content)}]
    if isinstance(inv.intermediate_data, InvocationEvents):
        for event in inv.intermediate_data.invocation_events:
            if event.content is not None:
                events.append({"author": event.author, "content": _recorded(event.content)})
    final: dict[str, Any] = {"author": FINAL_AUTHOR}
    if inv.final_response is not None:
        final["content"] = _recorded(inv.final_response)
    events.append(final)
    return {"turn_index": index, "turn_id": inv.invocation_id, "events": events}


# Fields of a part as the service's Part has them (display_name is google-genai's own).
_PART_FIELDS = {
    "function_call": ("id", "name", "args"),
    "function_response": ("id", "name", "response"),
    "inline_data": ("mime_type", "data"),
    "file_data": ("mime_type", "file_uri"),
}


def _recorded(content: Content) -> dict[str, Any]:
    """A content as recorded: every set field, thoughts included (ADK sends them verbatim)."""
    out: dict[str, Any] = {}
    if content.parts is not None:
        parts = []
        for p in content.parts:
            part: dict[str, Any] = {}
            if p.text is not None:
                part["text"] = p.text
            for name in ("thought", "thought_signature", "executable_code", "code_execution_result"):
                if getattr(p, name) is not None:
                    part[name] = getattr(p, name)
            for name, fields in _PART_FIELDS.items():
                value = getattr(p, name)
                if value is not None:
                    part[name] = {f: getattr(value, f) for f in fields if getattr(value, f) is not None}
            parts.append(part)
        out["parts"] = parts
    if content.role is not None:
        out["role"] = content.role
    return out


def read_adk_reply(metric: str, reply: EvalReply) -> Outcome:
    """The service's reply as ADK 2.13 reads it (`_get_score`, `_get_rubric_scores`)."""
    details: dict[str, Any] = {"metric": metric}
    rubrics = [_adk_rubric(k, v) for k, v in enumerate(reply.rubric_verdicts)]
    if rubrics:
        details["rubrics"] = rubrics
    if reply.explanation:
        details["explanation"] = reply.explanation
    if reply.error:
        return Outcome(None, details, error=reply.error)
    score = numeric_score(reply)
    if score is None:
        return Outcome(None, details, error=reasons.SERVICE_NO_SCORE.format(metric=metric))
    return Outcome(score, details)


def _adk_rubric(k: int, verdict: dict[str, Any]) -> dict[str, Any]:
    met = verdict.get("verdict") is True  # the service leaves `verdict` out for a rubric not met
    return {
        "rubric_id": verdict.get("description") or verdict.get("rubric_id") or f"rubric_{k}",
        "verdict": "yes" if met else "no",
        "score": 1.0 if met else 0.0,
        "rationale": verdict.get("reasoning") or None,
    }


# --- the registered metrics --------------------------------------------------------------------


@criterion
class MultiTurnTaskSuccessV1(AdkMultiTurnMetric):
    """Vertex AI multi_turn_task_success_v1 (ADK): whether the agent achieved the conversation's goals; one request per case."""

    name: ClassVar[str] = "multi_turn_task_success_v1"
    metric: ClassVar[str] = "multi_turn_task_success_v1"


@criterion
class MultiTurnTrajectoryQualityV1(AdkMultiTurnMetric):
    """Vertex AI multi_turn_trajectory_quality_v1 (ADK): the quality of the agent's path through the conversation; one request per case."""

    name: ClassVar[str] = "multi_turn_trajectory_quality_v1"
    metric: ClassVar[str] = "multi_turn_trajectory_quality_v1"


@criterion
class MultiTurnToolUseQualityV1(AdkMultiTurnMetric):
    """Vertex AI multi_turn_tool_use_quality_v1 (ADK): how well the agent used its tools over the conversation; one request per case."""

    name: ClassVar[str] = "multi_turn_tool_use_quality_v1"
    metric: ClassVar[str] = "multi_turn_tool_use_quality_v1"


# The same metrics under the names evalgate gives Vertex AI's other managed metrics.
for _adk in (MultiTurnTaskSuccessV1, MultiTurnTrajectoryQualityV1, MultiTurnToolUseQualityV1):
    criterion(type(f"Vertex{_adk.__name__}", (_adk,), {
        "__annotations__": {"name": ClassVar[str]},
        "name": f"vertexai:{_adk.metric}",
        "__doc__": _adk.__doc__,
        "__module__": __name__,
    }))
del _adk
