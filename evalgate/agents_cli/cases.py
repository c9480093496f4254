"""agents-cli's eval cases, read tolerantly, and their conversions to and from ADK invocations.

An agents-cli dataset (`tests/eval/datasets/*.json`) is the SDK's `EvaluationDataset`:
`{eval_cases: [EvalCase]}`, keys in snake_case or camelCase, every case field optional,
extra case fields kept (metrics read them). As inference input a case is one of:

- a `prompt` case: one user turn;
- an "N+1" case: `agent_data.turns` whose last event is a user message; every earlier event
  is the session's history and only that last message is answered
  (agents-cli `eval generate`: `split_case_history`);
- a `user_scenario` case: a simulated user plays it (`eval dataset synthesize`).

A *trace* is the same case after a run, as `eval generate` writes it: the new agent events
appended to the last turn (or to a new `turn_0` for a prompt case, whose prompt stays at the
top level), tool calls and tool results authored by the agent, and `responses` holding the
final text. Traces are what agents-cli grades; evalgate reads them as recorded outputs and
writes them when it runs the agent.

Contents are kept as written (plain dicts): what a metric is handed is what the file says.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from evalgate.adk import Content, IntermediateData, Invocation, InvocationEvent, InvocationEvents
from evalgate.errors import InputError, Problem, load_json_file, problems_from_validation

USER = "user"
# What agents-cli names the root agent when the server's /app-info does not say
# (cmd_generate._FALLBACK_ROOT_AGENT_NAME).
FALLBACK_AGENT = "root_agent"
# An extra case field evalgate adds to the traces it writes, so they match their eval set
# exactly (agents-cli records no dataset in a trace, and keeps extra fields).
EVAL_SET_FIELD = "evalgate_eval_set_id"


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", loc_by_alias=False)


class AcliEvent(_Model):
    """One event of a turn (the SDK's `evals.AgentEvent`)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow", loc_by_alias=False)

    author: Optional[str] = None
    content: Optional[dict[str, Any]] = None
    event_time: Optional[Any] = None
    state_delta: Optional[dict[str, Any]] = None
    active_tools: Optional[list[Any]] = None


class AcliTurn(_Model):
    turn_index: Optional[int] = None
    turn_id: Optional[str] = None
    events: Optional[list[AcliEvent]] = None


class AcliAgentData(_Model):
    agents: Optional[dict[str, Any]] = None
    turns: Optional[list[AcliTurn]] = None


class AcliResponse(_Model):
    response: Optional[dict[str, Any]] = None


class AcliScenario(_Model):
    starting_prompt: Optional[str] = None
    conversation_plan: Optional[str] = None
    test_case_title: Optional[str] = None


class AcliCase(_Model):
    """The SDK's `EvalCase`: every field optional; unknown fields are kept as written."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow", loc_by_alias=False)

    eval_case_id: Optional[str] = None
    prompt: Optional[dict[str, Any]] = None
    responses: Optional[list[AcliResponse]] = None
    reference: Optional[AcliResponse] = None
    system_instruction: Optional[dict[str, Any]] = None
    conversation_history: Optional[list[dict[str, Any]]] = None
    rubric_groups: Optional[dict[str, Any]] = None
    intermediate_events: Optional[list[dict[str, Any]]] = None
    agent_info: Optional[dict[str, Any]] = None
    agent_data: Optional[AcliAgentData] = None
    user_scenario: Optional[AcliScenario] = None
    interactions_data_source: Optional[dict[str, Any]] = None

    def turns(self) -> list[AcliTurn]:
        return (self.agent_data.turns if self.agent_data else None) or []


class AcliDataset(_Model):
    """The SDK's `EvaluationDataset`. As in the SDK, unknown top-level keys are refused."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", loc_by_alias=False)

    eval_cases: list[AcliCase] = Field(default_factory=list)
    gcs_source: Optional[Any] = None
    bigquery_source: Optional[Any] = None
    eval_dataset_df: Optional[Any] = None
    candidate_name: Optional[str] = None


# --- reading -------------------------------------------------------------------------

_ADK_CASE_KEYS = {"eval_id", "evalId", "conversation", "conversation_scenario", "conversationScenario"}


def looks_like_dataset(data: Any) -> bool:
    """Is this JSON an agents-cli EvaluationDataset (or trace file), not an ADK eval set?
    By content: `eval_cases` whose cases are not ADK EvalCases, and no `eval_set_id`."""
    if not isinstance(data, dict) or {"eval_set_id", "evalSetId"} & data.keys():
        return False
    cases = data.get("eval_cases", data.get("evalCases"))
    if not isinstance(cases, list):
        return False
    return not any(isinstance(c, dict) and _ADK_CASE_KEYS & c.keys() for c in cases)


def read_dataset(path: Path, shown: str) -> AcliDataset:
    """An agents-cli dataset or traces file; InputError naming the file and place otherwise."""
    data = load_json_file(path, shown)
    return parse_dataset(data, shown)


def parse_dataset(data: Any, shown: str) -> AcliDataset:
    if not looks_like_dataset(data):
        raise InputError(
            Problem(
                shown,
                None,
                "not an agents-cli dataset",
                'Write {"eval_cases": [{"eval_case_id": ..., "prompt": {"role": "user", "parts": [{"text": ...}]}}]} '
                "(agents-cli's EvaluationDataset).",
            )
        )
    try:
        return AcliDataset.model_validate(data)
    except ValidationError as e:
        raise InputError(problems_from_validation(e, shown, valid_keys_for=lambda loc: _field_names(loc))) from None


def _field_names(loc: tuple) -> list[str]:
    models = {0: AcliDataset}
    model = models.get(len(loc), AcliCase)
    return sorted(model.model_fields)


def case_id(case: AcliCase, index: int) -> str:
    """A case's id: its `eval_case_id`, else its index in the file (agents-cli's results key
    cases by index)."""
    return case.eval_case_id if case.eval_case_id and case.eval_case_id.strip() else str(index)


def case_dump(case: AcliCase) -> dict[str, Any]:
    """The case as written, JSON-ready: known fields under their snake_case names, nulls
    dropped, contents and extra fields exactly as given."""
    return case.model_dump(mode="json", exclude_none=True, by_alias=False)


def input_problem(case: AcliCase) -> Optional[str]:
    """Why agents-cli could not run this case as inference input, or None when it can."""
    turns = case.turns()
    if case.user_scenario is not None and (case.prompt is not None or turns):
        return "has a user_scenario and also a prompt or agent_data.turns"
    if case.user_scenario is not None:
        if not (case.user_scenario.starting_prompt or "").strip() and not (case.user_scenario.conversation_plan or "").strip():
            return "has a user_scenario with neither a starting_prompt nor a conversation_plan"
        return None
    try:
        split_history(case)
    except ValueError as e:
        return str(e)
    return None


def split_history(case: AcliCase) -> tuple[list[AcliEvent], Content]:
    """agents-cli's rule for what to send: a `prompt` case sends its prompt with no history;
    otherwise every event of `agent_data.turns` but the last is history and the last, which
    must be a user message, is sent. A state delta on that last event stays in the history
    as an event without content. Both or neither: ValueError saying which."""
    turns = case.turns()
    if case.prompt is not None and turns:
        raise ValueError("has both a top-level prompt and agent_data.turns (agents-cli refuses it as ambiguous)")
    if case.prompt is not None:
        return [], _content(case.prompt, "prompt")
    prior = [e for t in turns for e in (t.events or [])]
    if not prior or prior[-1].author != USER:
        raise ValueError("has no user message to send: neither a prompt nor agent_data.turns ending in an event by 'user'")
    last = prior.pop()
    if last.content is None:
        raise ValueError("ends in a user event without content, which cannot be sent")
    if last.state_delta:
        prior.append(last.model_copy(update={"content": None}))
    return prior, _content(last.content, "the last user event's content")


def _content(raw: dict[str, Any], what: str) -> Content:
    try:
        return Content.model_validate(raw)
    except ValidationError as e:
        raise ValueError(f"{what} is not a Content ({e.errors()[0]['msg']})") from None


def session_events(prior: list[AcliEvent]) -> list[dict[str, Any]]:
    """The history as ADK Event JSON (snake_case), as agents-cli seeds a session with it:
    author and content, and a state delta under `actions.state_delta`."""
    out = []
    for e in prior:
        event: dict[str, Any] = {"author": e.author or USER}
        if e.content is not None:
            event["content"] = e.content
        if e.state_delta:
            event["actions"] = {"state_delta": e.state_delta}
        out.append(event)
    return out


def expected_invocations(case: AcliCase) -> Optional[list[Invocation]]:
    """The one expected turn of a prompt or N+1 case: the message sent, and the reference
    response when the case has one. None for a user_scenario case (a simulated user plays it).
    ValueError when the case cannot be run (see `input_problem`)."""
    if case.user_scenario is not None:
        return None
    _, user = split_history(case)
    reference = case.reference.response if case.reference and case.reference.response is not None else None
    final = _content(reference, "reference.response") if reference is not None else None
    return [Invocation(user_content=user, final_response=final)]


def scenario(case: AcliCase) -> Optional[dict[str, Any]]:
    """A user_scenario case as an ADK conversation_scenario (for the simulated user)."""
    s = case.user_scenario
    if s is None:
        return None
    return {"starting_prompt": s.starting_prompt or "", "conversation_plan": s.conversation_plan or ""}


# --- traces --------------------------------------------------------------------------


def _dump_content(content: Content) -> dict[str, Any]:
    return content.model_dump(mode="json", exclude_none=True, by_alias=False)


def _unsigned(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events without the model's thought signatures, as agents-cli writes a run's new
    events (`strip_thought_signatures`)."""
    for event in events:
        for part in (event.get("content") or {}).get("parts") or []:
            if isinstance(part, dict):
                part.pop("thought_signature", None)
    return events


def _agent_events(inv: Invocation, agent: str) -> list[dict[str, Any]]:
    """The events an invocation's agent produced, in order, as a trace holds them (without
    thought signatures, which agents-cli strips)."""
    return _unsigned(_produced(inv, agent))


def _produced(inv: Invocation, agent: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    data = inv.intermediate_data
    final_author = agent
    if isinstance(data, InvocationEvents):
        for e in data.invocation_events:
            if e.content is not None and e.content.parts:
                events.append({"author": e.author, "content": _dump_content(e.content)})
            elif e.author:
                # The final response's event is recorded without its content (its text is the
                # final response): it says who answered, a sub-agent after a transfer.
                final_author = e.author
    elif isinstance(data, IntermediateData):
        responses = list(data.tool_responses)
        for i, call in enumerate(data.tool_uses):
            part = {"function_call": call.model_dump(mode="json", exclude_none=True, by_alias=False)}
            events.append({"author": agent, "content": {"role": "model", "parts": [part]}})
            if i < len(responses):
                reply = {"function_response": responses[i].model_dump(mode="json", exclude_none=True, by_alias=False)}
                events.append({"author": agent, "content": {"role": USER, "parts": [reply]}})
        for reply in responses[len(data.tool_uses):]:
            part = {"function_response": reply.model_dump(mode="json", exclude_none=True, by_alias=False)}
            events.append({"author": agent, "content": {"role": USER, "parts": [part]}})
        for author, parts in data.intermediate_responses:
            events.append({"author": author, "content": {"role": "model", "parts": [p.model_dump(mode="json", exclude_none=True, by_alias=False) for p in parts]}})
    if inv.final_response is not None and inv.final_response.parts:
        final = _dump_content(inv.final_response)
        final.setdefault("role", "model")
        events.append({"author": final_author, "content": final})
    return events


def final_response(events: list[dict[str, Any]]) -> Optional[dict[str, Any]]:
    """agents-cli's final response of a run: the last event with text, its texts joined
    (`_events.final_response_content_from_events`)."""
    for event in reversed(events):
        parts = (event.get("content") or {}).get("parts") or []
        texts = [p["text"] for p in parts if isinstance(p, dict) and p.get("text")]
        if texts:
            return {"role": (event.get("content") or {}).get("role") or "model", "parts": [{"text": "".join(texts)}]}
    return None


def root_agent(agents: Optional[dict[str, Any]], invocations: list[Invocation]) -> str:
    """Who authored the agent's replies: the first agent recorded in the invocations' events,
    else the first of `agents`, else agents-cli's fallback name."""
    for inv in invocations:
        data = inv.intermediate_data
        if isinstance(data, InvocationEvents):
            for e in data.invocation_events:
                if e.author and e.author != USER:
                    return e.author
    if agents:
        return next(iter(agents))
    return FALLBACK_AGENT


def trace_case(dump: dict[str, Any], invocations: list[Invocation], agents: Optional[dict[str, Any]] = None, agent: Optional[str] = None) -> dict[str, Any]:
    """The case (`case_dump`) as `agents-cli eval generate` would write it after a run whose
    turns are `invocations`. A prompt or N+1 case has one invocation: its agent events go to
    the end of the last turn (a new `turn_0` for a prompt case). A scenario case gets one turn
    per invocation, the user's message first. `responses` gains the final text."""
    trace = copy.deepcopy(dump)
    agent = agent or root_agent(agents, invocations)
    data = trace.setdefault("agent_data", {})
    if agents:
        data["agents"] = agents
    turns = data.setdefault("turns", [])
    new_events: list[dict[str, Any]] = []
    if trace.get("user_scenario") is not None and not turns and "prompt" not in trace:
        for i, inv in enumerate(invocations):
            events = [{"author": USER, "content": _dump_content(inv.user_content)}, *_agent_events(inv, agent)]
            turns.append({"turn_index": i, "turn_id": f"turn_{i}", "events": events})
            new_events = events
    else:
        for i, inv in enumerate(invocations):
            if i > 0:  # only a runner that answered more than the one turn gets here
                new_events.append({"author": USER, "content": _dump_content(inv.user_content)})
            new_events.extend(_agent_events(inv, agent))
        if turns:
            turns[-1].setdefault("events", []).extend(new_events)
        else:
            turns.append({"turn_index": 0, "turn_id": "turn_0", "events": new_events})
    final = final_response(new_events)
    if final is not None:
        trace.setdefault("responses", []).append({"response": final})
    return trace


def trace_invocations(trace: dict[str, Any] | AcliCase) -> list[Invocation]:
    """The invocations a trace records the agent producing. A user-started turn is one
    invocation (a prompt case's first starts with its prompt). Of a prompt or N+1 case only
    the last is the run's (the earlier ones are its history); of a scenario trace, all.
    The final response is the last event with text; for the run's turn, the trace's first
    `responses` entry when it has one (what agents-cli grades)."""
    case = trace if isinstance(trace, AcliCase) else AcliCase.model_validate(trace)
    groups: list[tuple[Content, list[AcliEvent]]] = []
    if case.prompt is not None:
        groups.append((_content(case.prompt, "prompt"), []))
    for turn in case.turns():
        for event in turn.events or []:
            if event.content is None:
                continue
            if event.author == USER and not _is_tool_reply(event.content):
                groups.append((_content(event.content, "a user event's content"), []))
            elif groups:
                groups[-1][1].append(event)
    if case.user_scenario is None:
        groups = groups[-1:]
    out = []
    for n, (user, events) in enumerate(groups):
        dumped = [{"author": e.author, "content": e.content} for e in events]
        final = final_response(dumped)
        last = n == len(groups) - 1
        if last and case.responses and case.responses[0].response is not None:
            final = case.responses[0].response
        kept = list(events)
        if final is not None:  # the final text is not an intermediate event
            for i in range(len(kept) - 1, -1, -1):
                parts = (kept[i].content or {}).get("parts") or []
                if any(isinstance(p, dict) and p.get("text") for p in parts):
                    del kept[i]
                    break
        out.append(
            Invocation(
                user_content=user,
                final_response=_content(final, "the final response") if final is not None else None,
                intermediate_data=InvocationEvents(
                    invocation_events=[InvocationEvent(author=e.author or "", content=_content(e.content, "an event's content")) for e in kept if e.content is not None]
                ),
            )
        )
    return out


def _is_tool_reply(content: dict[str, Any]) -> bool:
    """A tool's result travels with role 'user'; it is the agent's step, not a user message."""
    parts = content.get("parts") or []
    return bool(parts) and all(isinstance(p, dict) and ("function_response" in p or "functionResponse" in p) for p in parts)
