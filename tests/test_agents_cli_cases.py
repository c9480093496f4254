"""agents-cli's eval cases (evalgate.agents_cli.cases) against agents-cli itself.

google-agents-cli 1.11.0 is the peer: on the same cases, what we send (history and message)
equals its `split_case_history`, and the trace we write equals its `merge_events_into_case`.
"""

from __future__ import annotations

import json

import pytest

from evalgate.adk import Content, FunctionCall, FunctionResponse, IntermediateData, Invocation, InvocationEvent, InvocationEvents, Part
from evalgate.agents_cli import cases as acli

generate = pytest.importorskip("google.agents.cli.eval.cmd_generate", reason="google-agents-cli is not installed")
from google.agents.cli._agent_platform_types import types as sdk  # noqa: E402

PROMPT_CASE = {
    "eval_case_id": "날씨",
    "prompt": {"role": "user", "parts": [{"text": "서울 날씨 어때요?"}]},
    "reference": {"response": {"role": "model", "parts": [{"text": "서울은 맑습니다."}]}},
    "custom_note": {"keep": ["as", "written"]},
}
N_PLUS_ONE = {
    "evalCaseId": "返品",
    "agentData": {
        "turns": [
            {
                "turnIndex": 0,
                "turnId": "t0",
                "events": [
                    {"author": "user", "content": {"role": "user", "parts": [{"text": "注文番号は A-1 です"}]}},
                    {"author": "shop_agent", "content": {"role": "model", "parts": [{"text": "承知しました。"}]}, "stateDelta": {"order": "A-1"}},
                ],
            },
            {
                "turnIndex": 1,
                "turnId": "t1",
                "events": [
                    {"author": "user", "content": {"role": "user", "parts": [{"text": "返品できますか?"}]}, "stateDelta": {"intent": "return"}},
                ],
            },
        ]
    },
}
SCENARIO = {"eval_case_id": "s", "user_scenario": {"starting_prompt": "hi", "conversation_plan": "ask about returns"}}


def _agent_run() -> Invocation:
    """What a run of a tool-using agent gives: a call, its result, the final text."""
    return Invocation(
        user_content=Content.from_text("서울 날씨 어때요?", "user"),
        final_response=Content.from_text("서울은 맑고 20도입니다.", "model"),
        intermediate_data=InvocationEvents(
            invocation_events=[
                InvocationEvent(author="weather_agent", content=Content(role="model", parts=[Part(function_call=FunctionCall(id="c1", name="get_weather", args={"city": "서울"}))])),
                InvocationEvent(author="weather_agent", content=Content(role="user", parts=[Part(function_response=FunctionResponse(id="c1", name="get_weather", response={"result": "맑음, 20도"}))])),
            ]
        ),
    )


@pytest.mark.parametrize("raw", [PROMPT_CASE, N_PLUS_ONE], ids=["prompt", "n+1"])
def test_split_history_equals_agents_cli(raw):
    ours_prior, ours_user = acli.split_history(acli.AcliCase.model_validate(raw))
    theirs_prior, theirs_user = generate.split_case_history(sdk.EvalCase.model_validate(raw))
    assert ours_user.model_dump(mode="json", exclude_none=True) == theirs_user.model_dump(mode="json", exclude_none=True)
    # What is posted to create the session: theirs through agents-cli's own payload function.
    from google.agents.cli.eval._events import to_adk_event_payload

    theirs = [to_adk_event_payload(e) for e in theirs_prior]
    ours = acli.session_events(ours_prior)
    assert [(e["author"], e.get("content"), e.get("actions", {}).get("state_delta")) for e in ours] == [
        (e["author"], e.get("content"), e.get("actions", {}).get("stateDelta")) for e in theirs
    ]
    if raw is N_PLUS_ONE:  # the trailing user event's state delta stays, without its content
        assert ours[-1] == {"author": "user", "actions": {"state_delta": {"intent": "return"}}}


@pytest.mark.parametrize(
    "raw, why",
    [
        ({**PROMPT_CASE, "agent_data": N_PLUS_ONE["agentData"]}, "both a top-level prompt"),
        ({"eval_case_id": "x"}, "no user message"),
        ({"agent_data": {"turns": [{"events": [{"author": "a", "content": {"parts": [{"text": "hi"}]}}]}]}}, "no user message"),
    ],
)
def test_cases_agents_cli_cannot_run_are_refused_as_it_refuses_them(raw, why):
    with pytest.raises(ValueError, match=why):
        acli.split_history(acli.AcliCase.model_validate(raw))
    with pytest.raises(ValueError):
        generate.split_case_history(sdk.EvalCase.model_validate(raw))
    assert why in acli.input_problem(acli.AcliCase.model_validate(raw))


def test_scenario_cases_are_for_the_simulated_user():
    case = acli.AcliCase.model_validate(SCENARIO)
    assert acli.input_problem(case) is None
    assert acli.expected_invocations(case) is None
    assert acli.scenario(case) == {"starting_prompt": "hi", "conversation_plan": "ask about returns"}


@pytest.mark.parametrize("raw", [PROMPT_CASE, N_PLUS_ONE], ids=["prompt", "n+1"])
def test_trace_equals_agents_cli_merge(raw):
    run = _agent_run()
    case = acli.AcliCase.model_validate(raw)
    agents = {"weather_agent": {"agent_id": "weather_agent", "agent_type": "LlmAgent", "instruction": "날씨를 알려 주세요"}}
    ours = acli.trace_case(acli.case_dump(case), [run], agents)

    # agents-cli merges the events its server streamed; give it the same events.
    new_events = [sdk.evals.AgentEvent.model_validate(e) for e in acli._agent_events(run, "weather_agent")]
    theirs = generate.merge_events_into_case(
        sdk.EvalCase.model_validate(raw), new_events, agents_map={k: sdk.evals.AgentConfig.model_validate(v) for k, v in agents.items()}
    )
    theirs_json = json.loads(theirs.model_dump_json(exclude_none=True))
    # Both read back through the SDK's model: the same case, field for field.
    assert json.loads(sdk.EvalCase.model_validate(ours).model_dump_json(exclude_none=True)) == theirs_json
    assert ours["responses"] == [{"response": {"role": "model", "parts": [{"text": "서울은 맑고 20도입니다."}]}}]
    assert ours["custom_note" if raw is PROMPT_CASE else "eval_case_id"]  # extra fields kept


def test_trace_reads_back_as_the_run():
    run = _agent_run()
    for raw in (PROMPT_CASE, N_PLUS_ONE):
        trace = acli.trace_case(acli.case_dump(acli.AcliCase.model_validate(raw)), [run])
        [back] = acli.trace_invocations(trace)
        assert back.call_keys == run.call_keys
        assert back.final_text() == run.final_text()
        assert [r.response for r in back.tool_responses()] == [{"result": "맑음, 20도"}]
        if raw is N_PLUS_ONE:  # the history's turns are not the run's
            assert back.user_text() == "返品できますか?"


def test_flat_intermediate_data_becomes_agent_events():
    run = Invocation(
        user_content=Content.from_text("q", "user"),
        final_response=Content.from_text("done", "model"),
        intermediate_data=IntermediateData(
            tool_uses=[FunctionCall(name="lookup", args={"id": 1})], tool_responses=[FunctionResponse(name="lookup", response={"ok": True})]
        ),
    )
    trace = acli.trace_case(acli.case_dump(acli.AcliCase.model_validate(PROMPT_CASE)), [run])
    events = trace["agent_data"]["turns"][0]["events"]
    assert [e["author"] for e in events] == ["root_agent"] * 3
    assert [next(iter(e["content"]["parts"][0])) for e in events] == ["function_call", "function_response", "text"]
    [back] = acli.trace_invocations(trace)
    assert back.call_keys == [("lookup", {"id": 1})]


def test_scenario_trace_has_a_turn_per_invocation():
    a, b = _agent_run(), Invocation(user_content=Content.from_text("thanks", "user"), final_response=Content.from_text("bye", "model"))
    trace = acli.trace_case(acli.case_dump(acli.AcliCase.model_validate(SCENARIO)), [a, b])
    assert [t["turn_id"] for t in trace["agent_data"]["turns"]] == ["turn_0", "turn_1"]
    back = acli.trace_invocations(trace)
    assert [i.user_text() for i in back] == ["서울 날씨 어때요?", "thanks"]
    assert [i.final_text() for i in back] == ["서울은 맑고 20도입니다.", "bye"]


def test_datasets_are_told_from_adk_eval_sets_by_content():
    assert acli.looks_like_dataset({"eval_cases": [PROMPT_CASE]})
    assert acli.looks_like_dataset({"evalCases": [N_PLUS_ONE]})
    assert not acli.looks_like_dataset({"eval_set_id": "s", "eval_cases": []})
    assert not acli.looks_like_dataset({"eval_cases": [{"eval_id": "x", "conversation": []}]})
    assert not acli.looks_like_dataset({"metrics_to_run": ["x"]})


def test_ids_and_dump():
    ds = acli.parse_dataset({"eval_cases": [PROMPT_CASE, {"prompt": {"parts": [{"text": "x"}]}}]}, "d.json")
    assert [acli.case_id(c, i) for i, c in enumerate(ds.eval_cases)] == ["날씨", "1"]
    dump = acli.case_dump(acli.AcliCase.model_validate(N_PLUS_ONE))
    assert dump["eval_case_id"] == "返品" and dump["agent_data"]["turns"][1]["events"][0]["state_delta"] == {"intent": "return"}


def test_unknown_top_level_key_is_named():
    from evalgate.errors import InputError

    with pytest.raises(InputError) as e:
        acli.parse_dataset({"eval_cases": [], "eval_casez": []}, "d.json")
    assert "d.json" in str(e.value) and "eval_casez" in str(e.value)
