"""Vertex AI Gen AI evaluation managed metrics: ADK's `safety_v1` and `vertexai:<metric>`.

Each criterion maps every invocation to one evaluateInstances `instance` (REST JSON, the shape
in shared/notes/wire-protocols.md), sends it through the bound runtime
(`evalgate.vertex.service`: `runtime.evaluate(EvalRequest) -> EvalReply`, which owns retries,
rate limits and the cache) and reads the reply into an `Outcome`. The metric name is always
the versioned one: unversioned names resolve differently across SDK versions.

The instance, field by field:
- `prompt`: the user content; for `multi_turn_*` metrics the conversation so far (each earlier
  invocation's user content and final response, then this invocation's user content).
- `response`: the final response; `reference`: the expected invocation's final response,
  when the eval set has one.
- `otherData.map_instance.context`: the criterion's `context` option.
- `agent_eval_data.agents`: the agents of the invocation's `app_details` (ADK's AppDetails:
  name, instructions, tool declarations); the criterion's `developer_instruction` and
  `tool_declarations` options replace theirs.
- `agent_eval_data.turns[].events`: per turn, the user's message, the intermediate events
  in order (tool calls, tool responses, text; authors as recorded), then the final response
  (author "model"). One turn, or for `multi_turn_*` metrics every turn so far.
- `rubricGroups`: the criterion's `rubric_groups` as written, plus the case's and the
  invocation's ADK rubrics grouped by rubric type ("adk_rubrics" when untyped), as the
  Vertex SDK converts an ADK eval set.
The instance is serialised canonically (sorted keys, non-ASCII text kept), so an unchanged
invocation makes the same cache key.
"""

from __future__ import annotations

import json
import math
from typing import Any, Callable, ClassVar, Iterator, Optional, Protocol, Sequence, TypeVar

from pydantic import Field, PrivateAttr, field_validator

from evalgate.adk import Content, IntermediateData, Invocation, InvocationEvents, Part, Rubric
from evalgate.criteria.base import Criterion, Outcome, criterion
from evalgate.vertex.service import EvalReply, EvalRequest

ADK_RUBRIC_GROUP = "adk_rubrics"  # the Vertex SDK's group key for ADK rubrics without a type
MODEL = "model"  # author of the final response and of tool events recorded without an author
T = TypeVar("T")


class InstanceError(ValueError):
    """This invocation cannot be mapped to an instance the metric can rate; says why."""


class VertexEvaluator(Protocol):
    """What a Vertex criterion needs from the runtime (`JudgeRuntime.evaluate`, `JudgeRuntime.map`)."""

    def evaluate(self, request: EvalRequest) -> EvalReply: ...

    def map(self, jobs: Sequence[Callable[[], T]]) -> list[T]: ...


# --- the criteria's common part ----------------------------------------------------------


class VertexCriterion(Criterion):
    """Base of the criteria that delegate to a Vertex AI managed metric.

    The engine binds the run's runtime before scoring (`crit.bind(runtime)`), as for the
    LLM-judge criteria; scoring without one raises, which the engine records as NOT_EVALUATED.
    Invocations are scored together (`score_invocations`) because multi-turn metrics need
    the conversation so far; every invocation is still one request and one outcome.
    """

    judge: ClassVar[bool] = True
    service: ClassVar[str | None] = "vertex"
    needs_expected: ClassVar[bool] = False
    metric: ClassVar[str]  # the versioned managed metric, e.g. "general_quality_v1"
    # Part of every request's cache key: bump it whenever the instance mapping changes.
    mapping_version: ClassVar[str] = "1"

    _runtime: Optional[VertexEvaluator] = PrivateAttr(default=None)

    def bind(self, runtime: VertexEvaluator) -> "VertexCriterion":
        """Attach the run's runtime; returns self."""
        self._runtime = runtime
        return self

    @property
    def runtime(self) -> VertexEvaluator:
        if self._runtime is None:
            raise RuntimeError(f"{self.name}: no runtime bound (the engine calls bind(runtime) before scoring)")
        return self._runtime

    def instance(self, actual: list[Invocation], expected: Optional[list[Invocation]], i: int) -> dict[str, Any]:
        """The evaluateInstances instance for invocation `i` (REST JSON); InstanceError when there is none."""
        raise NotImplementedError

    def request(self, instance: dict[str, Any]) -> EvalRequest:
        return EvalRequest(
            criterion=self.name,
            metric=self.metric,
            instance_json=canonical_json(instance),
            prompt_version=self.mapping_version,
        )

    def score_invocations(self, actual: list[Invocation], expected: Optional[list[Invocation]]) -> list[Outcome]:
        runtime = self.runtime

        def one(i: int) -> Outcome:
            try:
                instance = self.instance(actual, expected, i)
            except InstanceError as e:
                return Outcome(None, {"metric": self.metric}, error=str(e))
            return read_reply(self.metric, runtime.evaluate(self.request(instance)))

        return runtime.map([lambda i=i: one(i) for i in range(len(actual))])

    def score_invocation(self, actual: Invocation, expected: Optional[Invocation]) -> Outcome:
        return self.score_invocations([actual], None if expected is None else [expected])[0]


def canonical_json(value: Any) -> str:
    """One spelling per instance: sorted keys, no spaces, non-ASCII text as it is."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def numeric_score(reply: EvalReply) -> Optional[float]:
    """The reply's score when it is a real number (not a bool, not NaN), else None."""
    score = reply.score
    if score is None or isinstance(score, bool) or not isinstance(score, (int, float)) or math.isnan(score):
        return None
    return float(score)


def read_reply(metric: str, reply: EvalReply) -> Outcome:
    """A service reply as an outcome: the score with the explanation and rubric verdicts, or
    NOT_EVALUATED with the service's message (never a pass)."""
    details: dict[str, Any] = {"metric": metric}
    if reply.explanation:
        details["explanation"] = reply.explanation
    rubrics = [_verdict(k, v) for k, v in enumerate(reply.rubric_verdicts)]
    if rubrics:
        details["rubrics"] = rubrics
    if reply.error:
        return Outcome(None, details, error=reply.error)
    score = reply.score
    if score is None or isinstance(score, bool) or not isinstance(score, (int, float)):
        return Outcome(None, details, error=f"the evaluation service returned no score for {metric}")
    if math.isnan(score) or not 0.0 <= score <= 1.0:
        return Outcome(None, details, error=f"the evaluation service returned score {score} for {metric}, outside [0, 1]")
    return Outcome(float(score), details)


def _verdict(k: int, verdict: dict[str, Any]) -> dict[str, Any]:
    # Generated rubrics may come without an id: then the description names them (as ADK does).
    description = verdict.get("description") or ""
    out = {
        "rubric_id": verdict.get("rubric_id") or description or f"rubric_{k}",
        # The service omits `verdict` for a rubric that is not met.
        "verdict": "yes" if verdict.get("verdict") is True else "no",
        "rationale": verdict.get("reasoning") or "",
    }
    if description:
        out["description"] = description
    return out


# --- ADK's safety_v1 ---------------------------------------------------------------------------


@criterion
class SafetyV1(VertexCriterion):
    """Vertex AI safety_v1: 1.0 when the response is safe, 0.0 when it violates a policy (ADK `safety_v1`).

    As ADK 2.13 sends it: the user's text as the prompt, the final response's text as the
    response, and the expected final response's text as the reference when the eval set has
    one; one request per invocation, and the case scores the mean over its invocations.
    Needs the Vertex AI evaluation service (see docs/criteria.md: Vertex AI managed metrics).
    """

    name: ClassVar[str] = "safety_v1"
    metric: ClassVar[str] = "safety_v1"

    def instance(self, actual: list[Invocation], expected: Optional[list[Invocation]], i: int) -> dict[str, Any]:
        inv = actual[i]
        prompt, response = _text_content(inv.user_text()), _text_content(inv.final_text())
        out: dict[str, Any] = {
            "prompt": _instance_data([prompt]),
            "response": _instance_data([response]),
            "agent_eval_data": {"turns": [_turn(0, [{"author": "user", "content": prompt}, {"author": MODEL, "content": response}])]},
        }
        reference = expected[i].final_text() if expected is not None and i < len(expected) else ""
        if reference:
            out["reference"] = _instance_data([_text_content(reference)])
        return out


def _text_content(text: str) -> dict[str, Any]:
    return {"parts": [{"text": text}]}


# --- vertexai:<metric> -------------------------------------------------------------------------


class VertexMetric(VertexCriterion):
    """A Vertex AI managed metric. Options (all optional):

    - `context`: text the response should be grounded in (for example the documents of a
      RAG agent); ADK eval sets have no such field, so it is the criterion's.
    - `developer_instruction`: the agent's instructions. Default: the `instructions` in the
      invocation's `app_details` (ADK records them), per agent.
    - `tool_declarations`: the tools the agent had, as Gemini tool JSON (`{"function_declarations":
      [...]}`) or bare function declarations (`{"name", "description", "parameters"}`;
      `parameters` is a Gemini Schema with upper-case types, `parameters_json_schema` takes
      JSON Schema). Default: the `tool_declarations` in the invocation's `app_details`.
    - `rubric_groups`: rubric groups passed to the service as written:
      `{key: {"rubrics": [{"rubric_id", "content": {"property": {"description"}}}]}}`. The
      case's and the invocation's ADK rubrics are passed too, grouped by type.
    `include_intermediate_responses_in_final` is accepted and ignored: the service sees the
    intermediate events anyway.
    """

    multi_turn: ClassVar[bool] = False  # the prompt is the conversation so far
    needs_rubrics: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # A managed metric is addressed as "vertexai:<metric>": the name follows from it.
        super().__init_subclass__(**kwargs)
        if "metric" in cls.__dict__:
            cls.name = f"vertexai:{cls.metric}"
    media: ClassVar[Optional[str]] = None  # "image" / "video": the response must carry one

    context: Optional[str] = Field(default=None, description="Context the response is rated against (otherData.context).")
    developer_instruction: Optional[str] = Field(
        default=None, description="The agent's instructions; default: those in the invocation's app_details."
    )
    tool_declarations: Optional[list[dict[str, Any]]] = Field(
        default=None,
        description="The agent's tools (Gemini tool JSON or function declarations); default: those in the invocation's app_details.",
    )
    rubric_groups: Optional[dict[str, dict[str, Any]]] = Field(
        default=None,
        description="Rubric groups passed on as written: {key: {rubrics: [{rubric_id, content: {property: {description}}}]}}.",
    )

    @field_validator("tool_declarations")
    @classmethod
    def _tools_readable(cls, value: Optional[list[dict[str, Any]]]) -> Optional[list[dict[str, Any]]]:
        for k, tool in enumerate(value or []):
            if not tool:
                raise ValueError(f"tool_declarations[{k}] is empty. Write a function declaration "
                                 "({name, description, parameters}) or a tool ({function_declarations: [...]}).")
            declarations = [tool] if "name" in tool else tool.get("function_declarations", tool.get("functionDeclarations")) or []
            for d in declarations if isinstance(declarations, list) else []:
                bad = _lower_case_type(d.get("parameters")) if isinstance(d, dict) else None
                if bad:
                    raise ValueError(
                        f"tool_declarations[{k}]: '{d.get('name')}' parameters use type '{bad}'; the service reads `parameters` "
                        "as a Gemini Schema with upper-case types (OBJECT, STRING, ...). Write them in upper case, or "
                        "give JSON Schema as `parameters_json_schema`."
                    )
        return value

    @field_validator("rubric_groups")
    @classmethod
    def _groups_hold_rubrics(cls, value: Optional[dict[str, dict[str, Any]]]) -> Optional[dict[str, dict[str, Any]]]:
        for key, group in (value or {}).items():
            rubrics = group.get("rubrics")
            if not isinstance(rubrics, list) or not rubrics or not all(isinstance(r, dict) for r in rubrics):
                raise ValueError(
                    f"rubric_groups.{key} holds no rubrics. Write {{rubrics: [{{rubric_id: r1, content: "
                    "{property: {description: ...}}}]}, or remove the group."
                )
        if cls.needs_rubrics and value is not None and not value:
            raise ValueError(f"{cls.metric} rates the response against rubrics, and rubric_groups is empty. "
                             "Add a group with rubrics, or remove rubric_groups to use the eval case's rubrics.")
        return value

    def instance(self, actual: list[Invocation], expected: Optional[list[Invocation]], i: int) -> dict[str, Any]:
        inv = actual[i]
        exp = expected[i] if expected is not None and i < len(expected) else None
        response = _content(inv.final_response, MODEL)
        if self.media:
            _require_media(self.name, self.media, inv.final_response)
        if response is None:
            raise InstanceError("the invocation has no final response to rate")
        reference = _content(exp.final_response, MODEL) if exp is not None else None
        if reference is None and self.needs_expected:
            raise InstanceError(f"{self.metric} compares the response with the expected one, "
                                "and the expected invocation has no final_response")

        turns = actual[: i + 1] if self.multi_turn else [inv]
        prompt: list[dict[str, Any]] = []
        if self.multi_turn:
            for earlier in actual[:i]:
                prompt.append(_user_content(earlier))
                said = _content(earlier.final_response, MODEL)
                if said is not None:
                    prompt.append(said)
        prompt.append(_user_content(inv))

        agent_data: dict[str, Any] = {"turns": [_turn(k, _events(t)) for k, t in enumerate(turns)]}
        agents = self._agents(turns)
        if agents:
            agent_data["agents"] = agents
        out: dict[str, Any] = {
            "prompt": _instance_data(prompt),
            "response": _instance_data([response]),
            "agent_eval_data": agent_data,
        }
        if reference is not None:
            out["reference"] = _instance_data([reference])
        if self.context is not None:
            out["otherData"] = {"map_instance": {"context": {"text": self.context}}}
        groups = self._rubric_groups(inv, exp)
        if groups:
            out["rubricGroups"] = groups
        elif self.needs_rubrics:
            raise InstanceError(
                f"{self.metric} rates the response against rubrics, and there are none: the criterion has no "
                "rubric_groups and neither the eval case nor the invocation has rubrics. Add rubrics to the case, "
                "or rubric_groups to the criterion."
            )
        return out

    def _agents(self, turns: list[Invocation]) -> dict[str, Any]:
        """Agent configs from app_details (first description of an agent wins), options on top."""
        agents: dict[str, dict[str, Any]] = {}
        for inv in turns:
            for name, info in _app_agents(inv):
                if name in agents:
                    continue
                config: dict[str, Any] = {"agent_id": name}
                instruction = info.get("instructions")
                if isinstance(instruction, str) and instruction.strip():
                    config["instruction"] = instruction
                tools = info.get("tool_declarations", info.get("toolDeclarations"))
                if isinstance(tools, list) and tools:
                    config["tools"] = [_without_nulls(t) for t in tools]
                agents[name] = config
        if self.developer_instruction is None and self.tool_declarations is None:
            return agents
        # The options describe the agent under test: they replace what app_details says of
        # every agent; without app_details, the agent is the author of the model's events.
        if not agents:
            agents[MODEL] = {"agent_id": MODEL}
        for config in agents.values():
            if self.developer_instruction is not None:
                config["instruction"] = self.developer_instruction
            if self.tool_declarations is not None:
                config["tools"] = _tools(self.tool_declarations)
        return agents

    def _rubric_groups(self, actual: Invocation, expected: Optional[Invocation]) -> dict[str, Any]:
        groups: dict[str, Any] = dict(self.rubric_groups or {})
        seen: dict[str, Rubric] = {}
        adk: dict[str, list[dict[str, Any]]] = {}
        for inv in (expected, actual):
            for r in (inv.rubrics or []) if inv is not None else []:
                known = seen.get(r.rubric_id)
                if known is not None:
                    if known.rubric_content.text_property != r.rubric_content.text_property or known.type != r.type:
                        raise InstanceError(f"two different rubrics have rubric_id '{r.rubric_id}' (eval case and invocation); rename one")
                    continue
                if not (r.rubric_content.text_property or "").strip():
                    raise InstanceError(f"rubric '{r.rubric_id}' has no rubric_content.text_property")
                seen[r.rubric_id] = r
                adk.setdefault(r.type or ADK_RUBRIC_GROUP, []).append(_rubric(r))
        for key, rubrics in adk.items():
            if key in groups:
                raise InstanceError(
                    f"rubric group '{key}' is given by the criterion's rubric_groups and by the eval case's "
                    f"rubrics of type {key}; rename the criterion's group"
                )
            groups[key] = {"rubrics": rubrics}
        return groups


def _lower_case_type(schema: Any) -> Optional[str]:
    """The first JSON-Schema-style (lower-case) type in a Gemini Schema, or None."""
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if isinstance(kind, str) and kind != kind.upper():
        return kind
    nested = list((schema.get("properties") or {}).values()) if isinstance(schema.get("properties"), dict) else []
    nested += [schema.get("items")] + list(schema.get("any_of") or schema.get("anyOf") or [])
    return next((t for t in map(_lower_case_type, nested) if t), None)


def _rubric(r: Rubric) -> dict[str, Any]:
    """An ADK rubric as the service's Rubric (REST JSON)."""
    out: dict[str, Any] = {"rubric_id": r.rubric_id, "content": {"property": {"description": r.rubric_content.text_property}}}
    if r.type:
        out["type"] = r.type
    return out


def _require_media(name: str, kind: str, response: Optional[Content]) -> None:
    found = []
    for p in (response.parts or []) if response is not None else []:
        for blob in (p.file_data, p.inline_data):
            if blob is not None:
                if (blob.mime_type or "").startswith(f"{kind}/"):
                    return
                found.append(blob.mime_type or "no mime_type")
    has = f"its media parts are {', '.join(found)}" if found else "it has none"
    raise InstanceError(
        f"{name} rates a generated {kind} against its prompt: the final response must carry the {kind} as a part "
        f'with file_data or inline_data and a {kind}/* mime_type (e.g. {{"file_data": {{"mime_type": '
        f'"{"image/png" if kind == "image" else "video/mp4"}", "file_uri": "gs://..."}}}}), and {has}. '
        f"Use this metric only for text-to-{kind} agents."
    )


def _app_agents(inv: Invocation) -> list[tuple[str, dict[str, Any]]]:
    details = inv.app_details if isinstance(inv.app_details, dict) else {}
    agents = details.get("agent_details", details.get("agentDetails"))
    if not isinstance(agents, dict):
        return []
    return [(str(name), info) for name, info in agents.items() if isinstance(info, dict)]


def _tools(declarations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tools as the service takes them: a tool as written; bare function declarations in one tool."""
    tools = [_without_nulls(d) for d in declarations if "name" not in d]
    bare = [_without_nulls(d) for d in declarations if "name" in d]
    return tools + ([{"function_declarations": bare}] if bare else [])


def _without_nulls(value: Any) -> Any:
    # ADK dumps tool declarations with every unset field as null; the service wants them absent.
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


# --- contents and events as REST JSON ------------------------------------------------------------


def _instance_data(contents: list[dict[str, Any]]) -> dict[str, Any]:
    return {"contents": {"contents": contents}}


def _turn(index: int, events: list[dict[str, Any]]) -> dict[str, Any]:
    return {"turn_index": index, "turn_id": f"turn_{index}", "events": events}


def _parts(p: Part) -> Iterator[dict[str, Any]]:
    """A part as the service's Part(s); the agent's thoughts are not part of what it said.
    A part is a oneof on the wire: a (malformed) part with two kinds of data becomes two."""
    if p.thought:
        return
    if p.text:
        yield {"text": p.text}
    if p.function_call is not None:
        c = p.function_call
        yield {"function_call": _present({"id": c.id, "name": c.name, "args": c.args})}
    if p.function_response is not None:
        r = p.function_response
        yield {"function_response": _present({"id": r.id, "name": r.name, "response": r.response})}
    if p.inline_data is not None:
        yield {"inline_data": _present({"mime_type": p.inline_data.mime_type, "data": p.inline_data.data})}
    if p.file_data is not None:
        yield {"file_data": _present({"mime_type": p.file_data.mime_type, "file_uri": p.file_data.file_uri})}


def _present(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def _content(content: Optional[Content], role: str) -> Optional[dict[str, Any]]:
    """Content as REST JSON (its role, or `role` when it has none); None when nothing is left."""
    parts = [q for p in (content.parts or []) for q in _parts(p)] if content is not None else []
    if not parts:
        return None
    return {"role": content.role or role, "parts": parts}


def _user_content(inv: Invocation) -> dict[str, Any]:
    return _content(inv.user_content, "user") or {"role": "user", "parts": [{"text": ""}]}


def _events(inv: Invocation) -> list[dict[str, Any]]:
    """One turn's events: the user's message, what happened in between (in order), the final response."""
    events = [{"author": "user", "content": _user_content(inv)}]
    data = inv.intermediate_data
    if isinstance(data, InvocationEvents):
        for e in data.invocation_events:
            content = _content(e.content, MODEL)
            if content is not None:
                events.append({"author": e.author, "content": content})
    elif isinstance(data, IntermediateData):
        # This older shape does not say how calls, responses and texts interleave: the calls,
        # then the responses, then the texts (as the Vertex SDK converts it).
        calls = _content(Content(parts=[Part(function_call=c) for c in data.tool_uses]), MODEL)
        results = _content(Content(parts=[Part(function_response=r) for r in data.tool_responses]), "user")
        for content in (calls, results):
            if content is not None:
                events.append({"author": MODEL, "content": content})
        for author, parts in data.intermediate_responses:
            content = _content(Content(parts=parts), MODEL)
            if content is not None:
                events.append({"author": author, "content": content})
    final = _content(inv.final_response, MODEL)
    if final is not None:
        events.append({"author": MODEL, "content": final})
    return events


# --- the registered metrics ------------------------------------------------------------------------


@criterion
class GeneralQualityV1(VertexMetric):
    """Vertex AI general_quality_v1: overall quality of the response, by adaptive rubrics."""

    metric: ClassVar[str] = "general_quality_v1"


@criterion
class TextQualityV1(VertexMetric):
    """Vertex AI text_quality_v1: fluency, coherence and grammar of the response."""

    metric: ClassVar[str] = "text_quality_v1"


@criterion
class InstructionFollowingV1(VertexMetric):
    """Vertex AI instruction_following_v1: how well the response follows the prompt's instructions."""

    metric: ClassVar[str] = "instruction_following_v1"


@criterion
class GroundingV1(VertexMetric):
    """Vertex AI grounding_v1: whether the response is supported by the context (set `context`)."""

    metric: ClassVar[str] = "grounding_v1"


@criterion
class VertexSafetyV1(VertexMetric):
    """Vertex AI safety_v1 on the full invocation (events, context); ADK's text-only one is `safety_v1`."""

    metric: ClassVar[str] = "safety_v1"


@criterion
class MultiTurnGeneralQualityV1(VertexMetric):
    """Vertex AI multi_turn_general_quality_v1: each response's quality in the conversation so far."""

    metric: ClassVar[str] = "multi_turn_general_quality_v1"
    multi_turn: ClassVar[bool] = True


@criterion
class MultiTurnTextQualityV1(VertexMetric):
    """Vertex AI multi_turn_text_quality_v1: each response's text quality in the conversation so far."""

    metric: ClassVar[str] = "multi_turn_text_quality_v1"
    multi_turn: ClassVar[bool] = True


@criterion
class VertexFinalResponseMatchV2(VertexMetric):
    """Vertex AI final_response_match_v2: whether the response matches the expected one (needs a reference)."""

    metric: ClassVar[str] = "final_response_match_v2"
    needs_expected: ClassVar[bool] = True


@criterion
class FinalResponseReferenceFreeV1(VertexMetric):
    """Vertex AI final_response_reference_free_v1: the response against rubrics (needs rubrics)."""

    metric: ClassVar[str] = "final_response_reference_free_v1"
    needs_rubrics: ClassVar[bool] = True


@criterion
class FinalResponseQualityV1(VertexMetric):
    """Vertex AI final_response_quality_v1: the agent's final response, given its tools and instructions."""

    metric: ClassVar[str] = "final_response_quality_v1"


@criterion
class HallucinationV1(VertexMetric):
    """Vertex AI hallucination_v1: claims in the response that the context and tool results do not support."""

    metric: ClassVar[str] = "hallucination_v1"


@criterion
class ToolUseQualityV1(VertexMetric):
    """Vertex AI tool_use_quality_v1: whether the agent chose and called its tools well."""

    metric: ClassVar[str] = "tool_use_quality_v1"


@criterion
class GeckoText2ImageV1(VertexMetric):
    """Vertex AI gecko_text2image_v1: a generated image against its prompt (the response must carry an image)."""

    metric: ClassVar[str] = "gecko_text2image_v1"
    media: ClassVar[Optional[str]] = "image"


@criterion
class GeckoText2VideoV1(VertexMetric):
    """Vertex AI gecko_text2video_v1: a generated video against its prompt (the response must carry a video)."""

    metric: ClassVar[str] = "gecko_text2video_v1"
    media: ClassVar[Optional[str]] = "video"
