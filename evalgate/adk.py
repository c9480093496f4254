"""The ADK evaluation data model, read tolerantly: EvalSet, EvalCase, Invocation and parts.

These mirror google-adk's `evaluation` models field for field (so what we write back is
loadable by ADK) but do not import google-adk or google-genai. Reading is tolerant the way
ADK data needs: snake_case and camelCase keys, the null-filled `Part` dumps ADK writes,
both shapes of intermediate data, and unknown keys ignored.
"""

from __future__ import annotations

from functools import cached_property
from typing import Annotated, Any, Optional, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator
from pydantic.alias_generators import to_camel


class AdkModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        loc_by_alias=False,  # errors name fields the way ADK documents them: snake_case
    )


# Where ADK itself rejects unknown keys (its EvalBaseModel), so do we: there a typo such
# as `tool_use` for `tool_uses` would silently drop expected data and could let a case
# pass. Content, parts and calls stay tolerant, as google-genai's own models are.
STRICT = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", loc_by_alias=False)


class FunctionCall(AdkModel):
    id: Optional[str] = None
    name: Optional[str] = None
    args: Optional[dict[str, Any]] = None


class FunctionResponse(AdkModel):
    id: Optional[str] = None
    name: Optional[str] = None
    response: Optional[dict[str, Any]] = None


class Blob(AdkModel):
    mime_type: Optional[str] = None
    data: Optional[str] = None
    display_name: Optional[str] = None


class FileData(AdkModel):
    mime_type: Optional[str] = None
    file_uri: Optional[str] = None
    display_name: Optional[str] = None


class Part(AdkModel):
    text: Optional[str] = None
    thought: Optional[bool] = None
    function_call: Optional[FunctionCall] = None
    function_response: Optional[FunctionResponse] = None
    inline_data: Optional[Blob] = None
    file_data: Optional[FileData] = None
    # Kept as recorded (base64 / JSON), so what is sent on (Vertex agent data) is what ADK sends.
    thought_signature: Optional[str] = None
    executable_code: Optional[dict[str, Any]] = None
    code_execution_result: Optional[dict[str, Any]] = None


class Content(AdkModel):
    parts: Optional[list[Part]] = None
    role: Optional[str] = None

    def text(self) -> str:
        """Text parts joined with newlines, as ADK reads a response."""
        if not self.parts:
            return ""
        return "\n".join(p.text for p in self.parts if p.text)

    @classmethod
    def from_text(cls, text: str, role: str) -> "Content":
        return cls(parts=[Part(text=text)], role=role)


class RubricContent(AdkModel):
    model_config = STRICT
    text_property: Optional[str] = None


class Rubric(AdkModel):
    model_config = STRICT
    rubric_id: str
    rubric_content: RubricContent
    description: Optional[str] = None
    type: Optional[str] = None


class IntermediateData(AdkModel):
    model_config = STRICT
    tool_uses: list[FunctionCall] = Field(default_factory=list)
    tool_responses: list[FunctionResponse] = Field(default_factory=list)
    intermediate_responses: list[tuple[str, list[Part]]] = Field(default_factory=list)


class InvocationEvent(AdkModel):
    author: str
    content: Optional[Content] = None
    # Kept as ADK writes them, so generated invocations carry what ADK's do.
    grounding_metadata: Optional[dict[str, Any]] = None
    usage_metadata: Optional[dict[str, Any]] = None
    model_version: Optional[str] = None


class InvocationEvents(AdkModel):
    model_config = STRICT
    invocation_events: list[InvocationEvent] = Field(default_factory=list)


def _intermediate_shape(value: Any) -> str:
    if isinstance(value, dict):
        return "events" if ("invocation_events" in value or "invocationEvents" in value) else "data"
    return "events" if isinstance(value, InvocationEvents) else "data"


IntermediateDataType = Annotated[
    Union[Annotated[IntermediateData, Tag("data")], Annotated[InvocationEvents, Tag("events")]],
    Discriminator(_intermediate_shape),
]


class Invocation(AdkModel):
    model_config = STRICT

    invocation_id: str = ""
    user_content: Content
    final_response: Optional[Content] = None
    intermediate_data: Optional[IntermediateDataType] = None
    creation_timestamp: float = 0.0
    duration: Optional[float] = None
    model_duration: Optional[float] = None
    tool_duration: Optional[float] = None
    rubrics: Optional[list[Rubric]] = None
    app_details: Optional[dict[str, Any]] = None

    def tool_calls(self) -> list[FunctionCall]:
        """Tool calls in order, from either intermediate-data shape."""
        return self._calls

    def tool_responses(self) -> list[FunctionResponse]:
        """Tool responses in order, from either intermediate-data shape."""
        return self._intermediate("tool_responses", "function_response")

    def _intermediate(self, flat_field: str, part_field: str) -> list[Any]:
        data = self.intermediate_data
        if data is None:
            return []
        if isinstance(data, IntermediateData):
            return getattr(data, flat_field)
        return [
            getattr(p, part_field)
            for event in data.invocation_events
            if event.content and event.content.parts
            for p in event.content.parts
            if getattr(p, part_field)
        ]

    # Scoring reads these for every criterion; invocations are not mutated after loading,
    # so they are computed once.
    @cached_property
    def _calls(self) -> list[FunctionCall]:
        return self._intermediate("tool_uses", "function_call")

    @cached_property
    def call_keys(self) -> list[tuple[Optional[str], Optional[dict[str, Any]]]]:
        """(name, args) of each tool call, in order."""
        return [(c.name, c.args) for c in self._calls]

    @cached_property
    def call_names(self) -> list[Optional[str]]:
        return [c.name for c in self._calls]

    def final_text(self) -> str:
        return self._final_text

    @cached_property
    def _final_text(self) -> str:
        return self.final_response.text() if self.final_response else ""

    def user_text(self) -> str:
        return self.user_content.text()


class SessionInput(AdkModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow", loc_by_alias=False)
    app_name: str = ""
    user_id: str = ""
    state: dict[str, Any] = Field(default_factory=dict)


class EvalCase(AdkModel):
    eval_id: str
    conversation: Optional[list[Invocation]] = None
    conversation_scenario: Optional[dict[str, Any]] = None
    session_input: Optional[SessionInput] = None
    creation_timestamp: float = 0.0
    rubrics: Optional[list[Rubric]] = None
    final_session_state: Optional[dict[str, Any]] = None

    @field_validator("eval_id")
    @classmethod
    def _non_empty_id(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("eval_id is empty; give each case a unique, non-empty eval_id")
        return v

    @model_validator(mode="after")
    def _one_conversation(self) -> "EvalCase":
        if (self.conversation is None) == (self.conversation_scenario is None):
            raise ValueError(
                "a case needs exactly one of 'conversation' (the expected turns) and 'conversation_scenario'"
            )
        return self


class EvalSet(AdkModel):
    eval_set_id: str
    name: Optional[str] = None
    description: Optional[str] = None
    eval_cases: list[EvalCase]
    creation_timestamp: float = 0.0


# --- eval history (`*.evalset_result.json`): only what we read back -------------------


class EvalMetricResultPerInvocation(AdkModel):
    actual_invocation: Invocation
    # expected_invocation is not read: the expected turns come from the eval set, and
    # validating a copy of them would double the cost of loading eval history.


class EvalCaseResult(AdkModel):
    eval_set_id: str = ""
    eval_id: str = ""
    eval_metric_result_per_invocation: list[EvalMetricResultPerInvocation] = Field(default_factory=list)
    session_id: Optional[str] = None


class EvalSetResult(AdkModel):
    eval_set_result_id: str = ""
    eval_set_id: str = ""
    eval_case_results: list[EvalCaseResult] = Field(default_factory=list)
    creation_timestamp: float = 0.0


def field_names() -> list[str]:
    """Every field name of these models (snake_case), to suggest the closest to a typo."""
    names: set[str] = set()
    for model in (Part, Content, FunctionCall, FunctionResponse, Rubric, RubricContent, IntermediateData,
                  InvocationEvent, InvocationEvents, Invocation, SessionInput, EvalCase, EvalSet):
        names.update(model.model_fields)
    return sorted(names)
