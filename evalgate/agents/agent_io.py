"""The agent-io protocol of the `command` runner: the two JSON line shapes, and their JSON Schema.

evalgate writes one `AgentInput` line per user turn on the command's stdin; the command
answers each with one `AgentOutput` line on stdout: the rest of an ADK `Invocation`, whose
`user_content` is the turn evalgate sent. `docs/agent-io.md` describes the protocol in
plain words; `evalgate schema agent-io` prints `agent_io_schema()`.
"""

from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema

from evalgate.adk import STRICT, AdkModel, Content, IntermediateDataType, SessionInput


class RecordedToolCall(BaseModel):
    """One expected tool call of the case with its recorded response (`tools: replay`)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The tool's name.")
    args: dict[str, Any] = Field(description="The call's arguments, as recorded in the eval set.")
    response: dict[str, Any] = Field(description="The recorded response: answer a call with these name and args with it instead of running the tool.")


class AgentInput(BaseModel):
    """One line evalgate writes on the command's stdin: one user turn of one case run."""

    model_config = ConfigDict(extra="forbid")

    eval_set_id: str = Field(description="The eval set's eval_set_id.")
    eval_id: str = Field(description="The eval case's eval_id.")
    run: int = Field(ge=1, description="Which run of the case (1 to num_runs).")
    session_input: SessionInput = Field(
        description="The case's ADK session_input (app_name, user_id, state), as in the eval set; {} when the case has none."
    )
    user_content: Content = Field(description="The user's turn, an ADK Content: {\"parts\": [{\"text\": ...}], \"role\": \"user\"}.")
    tool_responses: Optional[list[RecordedToolCall]] = Field(
        default=None,
        description="Only under `tools: replay`: every recorded tool call of the case with its response. "
        "Answer a call with the same name and args with the recorded response instead of running the tool.",
    )
    history: Optional[list[dict[str, Any]]] = Field(
        default=None,
        description="Only on the first line of a case run, and only when the case has one (an agents-cli dataset case "
        "whose agent_data.turns end in the user's message): the conversation so far, as ADK Events "
        "[{author, content, actions: {state_delta}}], oldest first. Start the session with these events "
        "(and their state deltas applied) before answering user_content.",
    )


class AgentOutput(AdkModel):
    """One line the command answers on stdout: the rest of the turn's ADK Invocation.

    Keys as in ADK: snake_case (camelCase is accepted too); unknown keys are errors, so a
    typo cannot drop the answer silently."""

    model_config = STRICT

    invocation_id: Optional[str] = Field(default=None, description="Optional; evalgate makes one up when absent.")
    final_response: Optional[Content] = Field(
        default=None, description="The agent's answer, an ADK Content: {\"parts\": [{\"text\": ...}], \"role\": \"model\"}."
    )
    intermediate_data: Optional[IntermediateDataType] = Field(
        default=None,
        description="Tool calls and intermediate responses, in either ADK shape: {tool_uses, tool_responses, "
        "intermediate_responses} or {invocation_events: [{author, content}, ...]}.",
    )


def agent_io_schema() -> dict[str, Any]:
    """JSON Schema of an agent-io line: an `AgentInput` or an `AgentOutput`.

    Both are under `$defs`, so an editor or a validator can point at one of them
    (`#/$defs/AgentOutput` for what an agent writes). Keys are listed in snake_case, the
    form evalgate writes."""
    _, document = models_json_schema([(AgentInput, "validation"), (AgentOutput, "validation")], by_alias=False)
    defs = document["$defs"]
    # Our intermediate-data union is decided by a function (which keys are present), which
    # JSON Schema cannot express: pydantic's oneOf would reject `{}`, valid in both shapes.
    prop = defs["AgentOutput"]["properties"]["intermediate_data"]
    prop["anyOf"] = [
        {"$ref": "#/$defs/IntermediateData"},
        {"$ref": "#/$defs/InvocationEvents"},
        {"type": "null"},
    ]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "evalgate agent-io protocol",
        "description": "One JSON line of the `command` runner's protocol: evalgate writes an AgentInput per user turn on the "
        "command's stdin; the command answers each with an AgentOutput on stdout. See docs/agent-io.md.",
        "anyOf": [{"$ref": "#/$defs/AgentInput"}, {"$ref": "#/$defs/AgentOutput"}],
        "$defs": defs,
    }
