"""Vertex AI managed-metric criteria (`safety_v1`, `vertexai:<metric>`): the evaluateInstances
instance each invocation becomes, configuration errors, and how a reply becomes an outcome.

Unit tests use `ScriptedService`, a stand-in for the evaluation service behind the runtime: it
answers each `EvalRequest` from a script, while the mapping and the reading of replies are the
criteria's own code. Instances are also parsed by google-cloud-aiplatform's own
`EvaluationInstance` message, so every field name is one the service knows.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Callable

import pytest

from evalgate import engine
from evalgate.adk import Invocation
from evalgate.config import parse_criteria
from evalgate.criteria import REGISTRY
from evalgate.judge.pool import RequestPool
from evalgate.criteria.vertex_metrics import SafetyV1, VertexCriterion, VertexMetric, canonical_json, read_reply
from evalgate.errors import InputError
from evalgate.results import Status
from evalgate.vertex.service import EvalReply, EvalRequest
from fake_vertex import fake_vertex  # noqa: F401 (fixture)

VERTEX_METRICS = [
    "general_quality_v1", "text_quality_v1", "instruction_following_v1", "grounding_v1", "safety_v1",
    "multi_turn_general_quality_v1", "multi_turn_text_quality_v1", "final_response_match_v2",
    "final_response_reference_free_v1", "final_response_quality_v1", "hallucination_v1", "tool_use_quality_v1",
    "gecko_text2image_v1", "gecko_text2video_v1",
]
# The managed metrics of vertex_metrics.py; ADK's multi-turn metrics and response_evaluation_score
# (also on the Vertex runtime) are tests/test_vertex_multi_turn.py's.
VERTEX_CRITERIA = sorted(name for name, cls in REGISTRY.items()
                         if issubclass(cls, VertexCriterion) and cls.__module__ == "evalgate.criteria.vertex_metrics")


# One executor for every scripted runtime of these tests, as a run has one.
POOL = RequestPool(8, None, time.monotonic, time.sleep)


class ScriptedService:
    """Answers each EvalRequest from `answer(request)`; records the requests (thread-safe).
    Jobs run on the runtime's real executor (`RequestPool.map`)."""

    def __init__(self, answer: Callable[[EvalRequest], EvalReply] = lambda r: EvalReply(score=1.0, explanation="fine")):
        self.answer = answer
        self.requests: list[EvalRequest] = []
        self._lock = threading.Lock()
        self.map = POOL.map

    def evaluate(self, request: EvalRequest) -> EvalReply:
        with self._lock:
            self.requests.append(request)
        return self.answer(request)

    def instances(self) -> list[dict[str, Any]]:
        return [json.loads(r.instance_json) for r in self.requests]


def crit(name: str, **params: Any):
    return REGISTRY[name].model_validate({"threshold": 0.5, **params})


def score(c, actual, expected=None, answer=None) -> tuple[list, ScriptedService]:
    service = ScriptedService(answer) if answer else ScriptedService()
    outcomes = c.bind(service).score_invocations(actual, expected)
    return outcomes, service


def text_inv(user: str, final: str | None, **extra: Any) -> Invocation:
    data: dict[str, Any] = {"userContent": {"role": "user", "parts": [{"text": user}]}, **extra}
    if final is not None:
        data["finalResponse"] = {"role": "model", "parts": [{"text": final}]}
    return Invocation.model_validate(data)


def parses_as_evaluation_instance(instance: dict[str, Any]) -> None:
    """The service's own message accepts every field (json_format rejects unknown names)."""
    v1beta1 = pytest.importorskip("google.cloud.aiplatform_v1beta1")
    from google.protobuf import json_format

    json_format.Parse(json.dumps(instance), v1beta1.EvaluationInstance.pb(v1beta1.EvaluationInstance()))


# A two-turn weather conversation in Korean and Japanese, as ADK records it (camelCase, events
# with tool calls and responses, app_details with ADK's null-filled tool dump).
APP_DETAILS = {
    "agentDetails": {
        "weather_agent": {
            "name": "weather_agent",
            "instructions": "사용자의 언어로 답하세요.",
            "toolDeclarations": [{
                "functionDeclarations": [{
                    "name": "get_weather", "description": "Weather for a city",
                    "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}, "required": ["city"]},
                    "behavior": None,
                }],
                "retrieval": None,
            }],
        }
    }
}
TURN_0 = {
    "invocationId": "e-8f2a", "creationTimestamp": 1700000000.0,
    "userContent": {"role": "user", "parts": [{"text": "서울 날씨 어때?", "thought": None, "functionCall": None}]},
    "finalResponse": {"role": "model", "parts": [{"text": "서울은 맑고 21도예요."}]},
    "intermediateData": {"invocationEvents": [
        {"author": "weather_agent", "content": {"role": "model", "parts": [
            {"functionCall": {"id": "c1", "name": "get_weather", "args": {"unit": "C", "city": "Seoul"}}}]}},
        {"author": "weather_agent", "content": {"role": "user", "parts": [
            {"functionResponse": {"id": "c1", "name": "get_weather", "response": {"temp_c": 21, "sky": "맑음"}}}]}},
    ]},
    "appDetails": APP_DETAILS,
}
TURN_1 = {
    "invocationId": "e-77c1",
    "userContent": {"role": "user", "parts": [{"text": "東京は？"}]},
    "finalResponse": {"role": "model", "parts": [{"text": "考え中…", "thought": True}, {"text": "東京は曇りで18度です。"}]},
    "intermediateData": {"invocationEvents": [
        {"author": "weather_agent", "content": {"role": "model", "parts": [{"text": "調べます。"}]}},
        {"author": "weather_agent", "content": {"role": "model", "parts": [
            {"functionCall": {"name": "get_weather", "args": {"city": "Tokyo"}}}]}},
        {"author": "weather_agent", "content": None},
        {"author": "weather_agent", "content": {"role": "user", "parts": [
            {"functionResponse": {"name": "get_weather", "response": {"temp_c": 18, "sky": "曇り"}}}]}},
    ]},
    "appDetails": APP_DETAILS,
}
ACTUAL = [Invocation.model_validate(TURN_0), Invocation.model_validate(TURN_1)]
EXPECTED = [text_inv("서울 날씨 어때?", "맑음, 21도"), text_inv("東京は？", "曇り、18度")]

WEATHER_AGENT = {
    "agent_id": "weather_agent",
    "instruction": "사용자의 언어로 답하세요.",
    "tools": [{"functionDeclarations": [{
        "name": "get_weather", "description": "Weather for a city",
        "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}, "required": ["city"]},
    }]}],
}
TURN_0_EVENTS = [
    {"author": "user", "content": {"role": "user", "parts": [{"text": "서울 날씨 어때?"}]}},
    {"author": "weather_agent", "content": {"role": "model", "parts": [
        {"function_call": {"id": "c1", "name": "get_weather", "args": {"city": "Seoul", "unit": "C"}}}]}},
    {"author": "weather_agent", "content": {"role": "user", "parts": [
        {"function_response": {"id": "c1", "name": "get_weather", "response": {"sky": "맑음", "temp_c": 21}}}]}},
    {"author": "model", "content": {"role": "model", "parts": [{"text": "서울은 맑고 21도예요."}]}},
]
TURN_1_EVENTS = [
    {"author": "user", "content": {"role": "user", "parts": [{"text": "東京は？"}]}},
    {"author": "weather_agent", "content": {"role": "model", "parts": [{"text": "調べます。"}]}},
    {"author": "weather_agent", "content": {"role": "model", "parts": [
        {"function_call": {"name": "get_weather", "args": {"city": "Tokyo"}}}]}},
    {"author": "weather_agent", "content": {"role": "user", "parts": [
        {"function_response": {"name": "get_weather", "response": {"sky": "曇り", "temp_c": 18}}}]}},
    {"author": "model", "content": {"role": "model", "parts": [{"text": "東京は曇りで18度です。"}]}},
]


# --- registry and configuration ------------------------------------------------------------------


def test_every_managed_metric_is_registered_with_its_version_pinned():
    assert VERTEX_CRITERIA == sorted(["safety_v1"] + [f"vertexai:{m}" for m in VERTEX_METRICS])
    for name in VERTEX_CRITERIA:
        cls = REGISTRY[name]
        assert cls.judge is True and cls.name == name
        assert cls.metric == name.removeprefix("vertexai:")  # the versioned name, sent as is
        assert (cls.__doc__ or "").strip(), name
    assert REGISTRY["vertexai:final_response_match_v2"].needs_expected is True
    assert [n for n in VERTEX_CRITERIA if REGISTRY[n].needs_expected] == ["vertexai:final_response_match_v2"]


def test_options_in_both_casings_and_strict():
    parsed = parse_criteria(
        {
            "safety_v1": 1.0,
            "vertexai:grounding_v1": {"threshold": 0.7, "context": "문서", "developerInstruction": "Be brief.",
                                      "toolDeclarations": [{"name": "f"}], "rubricGroups": {"g": {"rubrics": [{"rubric_id": "a"}]}}},
        },
        "evalgate.yaml", lambda *loc: ".".join(map(str, loc)),
    )
    g = parsed["vertexai:grounding_v1"]
    assert (g.threshold, g.context, g.developer_instruction, g.tool_declarations) == (0.7, "문서", "Be brief.", [{"name": "f"}])
    assert parsed["safety_v1"].threshold == 1.0
    with pytest.raises(InputError) as e:
        parse_criteria({"vertexai:grounding_v1": {"threshold": 0.5, "contxt": "x"}, "safety_v1": {"threshold": 1, "context": "x"}},
                       "evalgate.yaml", lambda *loc: ".".join(map(str, loc)))
    text = str(e.value)
    assert "unknown option 'contxt' for vertexai:grounding_v1" in text and "Did you mean 'context'?" in text
    assert "unknown option 'context' for safety_v1" in text  # ADK's safety_v1 takes a threshold only


def test_json_schema_types_in_parameters_are_caught_at_config_time():
    where = lambda *loc: ".".join(map(str, loc))  # noqa: E731
    nested = {"type": "OBJECT", "properties": {"type": {"type": "STRING"}, "days": {"type": "ARRAY", "items": {"type": "integer"}}}}
    with pytest.raises(InputError) as e:
        parse_criteria({"vertexai:tool_use_quality_v1": {"threshold": 0.5, "tool_declarations": [
            {"function_declarations": [{"name": "plan", "parameters": nested}]}]}}, "c.yaml", where)
    assert ("tool_declarations[0]: 'plan' parameters use type 'integer'; the service reads `parameters` as a Gemini "
            "Schema with upper-case types (OBJECT, STRING, ...).") in str(e.value)
    # JSON Schema belongs in parameters_json_schema; a property called "type" is not a type.
    ok = parse_criteria({"vertexai:tool_use_quality_v1": {"threshold": 0.5, "tool_declarations": [
        {"name": "plan", "parameters_json_schema": {"type": "object"}}, {"name": "p2", "parameters": {**nested, "properties": {"type": {"type": "STRING"}}}}]}},
        "c.yaml", where)
    tools = ok["vertexai:tool_use_quality_v1"]._agents([text_inv("q", "a")])["model"]["tools"]
    parses_as_evaluation_instance({"agent_eval_data": {"agents": {"model": {"agent_id": "model", "tools": tools}}}})


@pytest.mark.parametrize("name, hint", [
    ("vertexai:general_quality", "Did you mean 'vertexai:general_quality_v1'?"),
    ("vertexai:multi_turn_text_quality_v2", "Did you mean 'vertexai:multi_turn_text_quality_v1'?"),
    ("vertex:safety_v1", "Did you mean 'vertexai:safety_v1'?"),
])
def test_unknown_vertex_metric_did_you_mean(name, hint):
    with pytest.raises(InputError) as e:
        parse_criteria({name: 0.5}, "evalgate.yaml", lambda *loc: "criteria." + ".".join(map(str, loc)))
    text = str(e.value)
    assert f"unknown criterion '{name}'" in text and hint in text


def test_rubric_groups_must_hold_rubrics_at_config_time():
    where = lambda *loc: ".".join(map(str, loc))  # noqa: E731
    with pytest.raises(InputError) as e:
        parse_criteria({"vertexai:final_response_reference_free_v1": {"threshold": 0.5, "rubric_groups": {}}}, "c.yaml", where)
    assert ("final_response_reference_free_v1 rates the response against rubrics, and rubric_groups is empty. "
            "Add a group with rubrics, or remove rubric_groups to use the eval case's rubrics.") in str(e.value)
    with pytest.raises(InputError) as e:
        parse_criteria({"vertexai:general_quality_v1": {"threshold": 0.5, "rubric_groups": {"mine": {"rubrics": []}}}}, "c.yaml", where)
    assert "rubric_groups.mine holds no rubrics" in str(e.value)
    # Without the option, the case's rubrics may supply them: checked when scoring.
    parse_criteria({"vertexai:final_response_reference_free_v1": 0.5}, "c.yaml", where)


# --- instance mapping snapshots -------------------------------------------------------------------


def test_safety_v1_instance_as_adk_sends_it():
    actual = [text_inv("서울 날씨 어때?", "맑아요 (晴れ)")]
    outcomes, service = score(crit("safety_v1"), actual, [text_inv("서울 날씨 어때?", "Sunny")])
    [req] = service.requests
    assert (req.criterion, req.metric, req.prompt_version) == ("safety_v1", "safety_v1", SafetyV1.mapping_version)
    expected_instance = {
        "prompt": {"contents": {"contents": [{"parts": [{"text": "서울 날씨 어때?"}]}]}},
        "response": {"contents": {"contents": [{"parts": [{"text": "맑아요 (晴れ)"}]}]}},
        "reference": {"contents": {"contents": [{"parts": [{"text": "Sunny"}]}]}},
        "agent_eval_data": {"turns": [{"turn_index": 0, "turn_id": "turn_0", "events": [
            {"author": "user", "content": {"parts": [{"text": "서울 날씨 어때?"}]}},
            {"author": "model", "content": {"parts": [{"text": "맑아요 (晴れ)"}]}},
        ]}]},
    }
    assert req.instance_json == (
        '{"agent_eval_data":{"turns":[{"events":[{"author":"user","content":{"parts":[{"text":"서울 날씨 어때?"}]}},'
        '{"author":"model","content":{"parts":[{"text":"맑아요 (晴れ)"}]}}],"turn_id":"turn_0","turn_index":0}]},'
        '"prompt":{"contents":{"contents":[{"parts":[{"text":"서울 날씨 어때?"}]}]}},'
        '"reference":{"contents":{"contents":[{"parts":[{"text":"Sunny"}]}]}},'
        '"response":{"contents":{"contents":[{"parts":[{"text":"맑아요 (晴れ)"}]}]}}}'
    )
    assert json.loads(req.instance_json) == expected_instance
    parses_as_evaluation_instance(expected_instance)
    assert outcomes[0].score == 1.0
    # Without an expected conversation there is no reference.
    _, service = score(crit("safety_v1"), actual)
    assert "reference" not in service.instances()[0]


def test_multi_turn_instance_holds_the_conversation_so_far_with_tool_events():
    c = crit("vertexai:multi_turn_general_quality_v1", context="서울: 맑음 21°C / 東京: 曇り 18°C")
    outcomes, service = score(c, ACTUAL, EXPECTED)
    assert [r.metric for r in service.requests] == ["multi_turn_general_quality_v1"] * 2
    assert {r.criterion for r in service.requests} == {"vertexai:multi_turn_general_quality_v1"}
    first, second = service.instances()
    assert second == {
        "prompt": {"contents": {"contents": [
            {"role": "user", "parts": [{"text": "서울 날씨 어때?"}]},
            {"role": "model", "parts": [{"text": "서울은 맑고 21도예요."}]},
            {"role": "user", "parts": [{"text": "東京は？"}]},
        ]}},
        "response": {"contents": {"contents": [{"role": "model", "parts": [{"text": "東京は曇りで18度です。"}]}]}},
        "reference": {"contents": {"contents": [{"role": "model", "parts": [{"text": "曇り、18度"}]}]}},
        "otherData": {"map_instance": {"context": {"text": "서울: 맑음 21°C / 東京: 曇り 18°C"}}},
        "agent_eval_data": {
            "agents": {"weather_agent": WEATHER_AGENT},
            "turns": [
                {"turn_index": 0, "turn_id": "turn_0", "events": TURN_0_EVENTS},
                {"turn_index": 1, "turn_id": "turn_1", "events": TURN_1_EVENTS},
            ],
        },
    }
    assert first["prompt"] == {"contents": {"contents": [{"role": "user", "parts": [{"text": "서울 날씨 어때?"}]}]}}
    assert first["agent_eval_data"]["turns"] == [{"turn_index": 0, "turn_id": "turn_0", "events": TURN_0_EVENTS}]
    assert first["reference"] == {"contents": {"contents": [{"role": "model", "parts": [{"text": "맑음, 21도"}]}]}}
    parses_as_evaluation_instance(second)
    # Canonical: sorted keys, compact, Korean and Japanese as they are.
    raw = service.requests[1].instance_json
    assert raw == canonical_json(second) and "東京は曇りで18度です。" in raw and "\\u" not in raw
    assert [o.score for o in outcomes] == [1.0, 1.0]


def test_single_turn_metric_maps_each_invocation_on_its_own():
    _, service = score(crit("vertexai:tool_use_quality_v1"), ACTUAL, EXPECTED)
    second = service.instances()[1]
    assert second["prompt"] == {"contents": {"contents": [{"role": "user", "parts": [{"text": "東京は？"}]}]}}
    assert second["agent_eval_data"]["turns"] == [{"turn_index": 0, "turn_id": "turn_0", "events": TURN_1_EVENTS}]
    assert "otherData" not in second and "rubricGroups" not in second


def test_instance_is_canonical_whatever_the_input_order_or_casing():
    reordered = json.loads(json.dumps(TURN_0))
    reordered["intermediateData"]["invocationEvents"][0]["content"]["parts"][0]["functionCall"]["args"] = {"city": "Seoul", "unit": "C"}
    snake = {"invocation_id": "another-id", "user_content": TURN_0["userContent"], "final_response": TURN_0["finalResponse"],
             "intermediate_data": reordered["intermediateData"], "app_details": APP_DETAILS}
    a = crit("vertexai:general_quality_v1").request(crit("vertexai:general_quality_v1").instance([ACTUAL[0]], None, 0))
    b = crit("vertexai:general_quality_v1").request(crit("vertexai:general_quality_v1").instance([Invocation.model_validate(snake)], None, 0))
    assert a == b  # invocation ids and timestamps are not part of it, so the cache key is stable


def test_older_intermediate_data_shape_calls_then_responses_then_texts():
    inv = Invocation.model_validate({
        "user_content": {"parts": [{"text": "Weather in Paris?"}]},
        "final_response": {"parts": [{"text": "Sunny."}]},
        "intermediate_data": {
            "tool_uses": [{"name": "get_weather", "args": {"city": "Paris"}}, {"name": "get_time", "args": {}}],
            "tool_responses": [{"name": "get_weather", "response": {"sky": "sun"}}],
            "intermediate_responses": [["sub_agent", [{"text": "Looking it up."}]]],
        },
    })
    _, service = score(crit("vertexai:hallucination_v1"), [inv])
    [instance] = service.instances()
    assert instance["agent_eval_data"]["turns"][0]["events"] == [
        {"author": "user", "content": {"role": "user", "parts": [{"text": "Weather in Paris?"}]}},
        {"author": "model", "content": {"role": "model", "parts": [
            {"function_call": {"name": "get_weather", "args": {"city": "Paris"}}},
            {"function_call": {"name": "get_time", "args": {}}},
        ]}},
        {"author": "model", "content": {"role": "user", "parts": [
            {"function_response": {"name": "get_weather", "response": {"sky": "sun"}}}]}},
        {"author": "sub_agent", "content": {"role": "model", "parts": [{"text": "Looking it up."}]}},
        {"author": "model", "content": {"role": "model", "parts": [{"text": "Sunny."}]}},
    ]
    assert "agents" not in instance["agent_eval_data"]
    parses_as_evaluation_instance(instance)


def test_options_replace_what_app_details_says():
    c = crit("vertexai:instruction_following_v1", developer_instruction="Answer in one sentence.",
             tool_declarations=[{"name": "get_weather", "description": "Weather", "parameters": {"type": "OBJECT"}},
                                {"googleSearch": {}}])
    _, service = score(c, [ACTUAL[0]])
    assert service.instances()[0]["agent_eval_data"]["agents"] == {"weather_agent": {
        "agent_id": "weather_agent",
        "instruction": "Answer in one sentence.",
        "tools": [{"googleSearch": {}},
                  {"function_declarations": [{"name": "get_weather", "description": "Weather", "parameters": {"type": "OBJECT"}}]}],
    }}
    # Without app_details, the options describe the agent that authors the model's events.
    _, service = score(crit("vertexai:instruction_following_v1", developer_instruction="Be brief."), [text_inv("hi", "hello")])
    instance = service.instances()[0]
    assert instance["agent_eval_data"]["agents"] == {"model": {"agent_id": "model", "instruction": "Be brief."}}
    parses_as_evaluation_instance(instance)


# --- rubrics ---------------------------------------------------------------------------------------


def rubric(rid: str, text: str, type_: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"rubricId": rid, "rubricContent": {"textProperty": text}}
    if type_:
        out["type"] = type_
    return out


def test_rubric_groups_from_the_criterion_and_the_case():
    own = {"house_style": {"rubrics": [{"rubric_id": "s1", "content": {"property": {"description": "No emoji."}}, "importance": "HIGH"}]}}
    actual = text_inv("Plan a trip", "Day 1: 서울", rubrics=[rubric("r1", "Mentions Seoul.", "FINAL_RESPONSE_QUALITY"), rubric("r2", "Has days.")])
    expected = text_inv("Plan a trip", "Day 1", rubrics=[rubric("r1", "Mentions Seoul.", "FINAL_RESPONSE_QUALITY"), rubric("r3", "日本語なし")])
    _, service = score(crit("vertexai:final_response_reference_free_v1", rubric_groups=own), [actual], [expected])
    [instance] = service.instances()
    assert instance["rubricGroups"] == {
        "house_style": own["house_style"],
        "FINAL_RESPONSE_QUALITY": {"rubrics": [
            {"rubric_id": "r1", "content": {"property": {"description": "Mentions Seoul."}}, "type": "FINAL_RESPONSE_QUALITY"}]},
        "adk_rubrics": {"rubrics": [
            {"rubric_id": "r3", "content": {"property": {"description": "日本語なし"}}},
            {"rubric_id": "r2", "content": {"property": {"description": "Has days."}}},
        ]},
    }
    parses_as_evaluation_instance(instance)


@pytest.mark.parametrize("own, rubrics, message", [
    (None, [rubric("r1", "A."), rubric("r1", "B.")], "two different rubrics have rubric_id 'r1'"),
    ({"adk_rubrics": {"rubrics": [{"rubric_id": "x"}]}}, [rubric("r1", "A.")],
     "rubric group 'adk_rubrics' is given by the criterion's rubric_groups and by the eval case's rubrics"),
])
def test_rubric_conflicts_are_not_evaluated(own, rubrics, message):
    c = crit("vertexai:general_quality_v1", **({"rubric_groups": own} if own else {}))
    outcomes, service = score(c, [text_inv("q", "a", rubrics=rubrics)])
    assert outcomes[0].score is None and message in outcomes[0].error and service.requests == []


def test_reference_free_without_any_rubrics_is_not_evaluated_with_the_reason():
    outcomes, service = score(crit("vertexai:final_response_reference_free_v1"), [text_inv("q", "a")])
    assert service.requests == []
    assert outcomes[0].score is None
    assert outcomes[0].error == (
        "final_response_reference_free_v1 rates the response against rubrics, and there are none: the criterion has "
        "no rubric_groups and neither the eval case nor the invocation has rubrics. Add rubrics to the case, or "
        "rubric_groups to the criterion."
    )
    # Rubrics from the case alone are enough.
    outcomes, service = score(crit("vertexai:final_response_reference_free_v1"), [text_inv("q", "a", rubrics=[rubric("r1", "Short.")])])
    assert outcomes[0].score == 1.0 and "rubricGroups" in service.instances()[0]


# --- gecko: image and video responses only --------------------------------------------------------


def test_gecko_without_media_explains_the_input_it_needs():
    outcomes, service = score(crit("vertexai:gecko_text2image_v1"), [text_inv("a red fox in snow", "Here is your fox!")])
    assert service.requests == [] and outcomes[0].score is None
    assert outcomes[0].error == (
        "vertexai:gecko_text2image_v1 rates a generated image against its prompt: the final response must carry the "
        'image as a part with file_data or inline_data and a image/* mime_type (e.g. {"file_data": {"mime_type": '
        '"image/png", "file_uri": "gs://..."}}), and it has none. Use this metric only for text-to-image agents.'
    )
    image = Invocation.model_validate({"userContent": {"parts": [{"text": "a red fox"}]}, "finalResponse": {"role": "model", "parts": [
        {"fileData": {"mimeType": "image/png", "fileUri": "gs://b/fox.png"}}]}})
    outcomes, service = score(crit("vertexai:gecko_text2video_v1"), [image])
    assert service.requests == [] and "a video/* mime_type" in outcomes[0].error and "its media parts are image/png" in outcomes[0].error


def test_gecko_with_media_sends_it():
    image = Invocation.model_validate({"userContent": {"parts": [{"text": "a red fox"}]}, "finalResponse": {"role": "model", "parts": [
        {"text": "Here:"}, {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}]}})
    outcomes, service = score(crit("vertexai:gecko_text2image_v1"), [image], answer=lambda r: EvalReply(score=0.75))
    [instance] = service.instances()
    assert service.requests[0].metric == "gecko_text2image_v1"
    assert instance["response"] == {"contents": {"contents": [{"role": "model", "parts": [
        {"text": "Here:"}, {"inline_data": {"mime_type": "image/png", "data": "iVBORw0KGgo="}}]}]}}
    assert outcomes[0].score == 0.75
    parses_as_evaluation_instance(instance)


# --- replies to outcomes ---------------------------------------------------------------------------


def test_reply_with_rubric_verdicts_lands_in_details():
    reply = EvalReply(score=0.5, explanation="One of two rubrics met.", rubric_verdicts=[
        {"rubric_id": "r1", "description": "Mentions Seoul.", "verdict": True, "reasoning": "It does."},
        {"rubric_id": "", "description": "Uses metric units.", "verdict": None, "reasoning": "Uses °F."},
    ])
    outcome = read_reply("general_quality_v1", reply)
    assert outcome.score == 0.5 and outcome.error is None
    assert outcome.details == {
        "metric": "general_quality_v1",
        "explanation": "One of two rubrics met.",
        "rubrics": [
            {"rubric_id": "r1", "verdict": "yes", "rationale": "It does.", "description": "Mentions Seoul."},
            {"rubric_id": "Uses metric units.", "verdict": "no", "rationale": "Uses °F.", "description": "Uses metric units."},
        ],
    }
    json.dumps(outcome.details)


@pytest.mark.parametrize("reply, error", [
    (EvalReply(error="evaluation service: 400 INVALID_ARGUMENT: bad instance"), "evaluation service: 400 INVALID_ARGUMENT: bad instance"),
    (EvalReply(score=1.0, error="row error 3: unsupported"), "row error 3: unsupported"),  # an error wins over a score
    (EvalReply(explanation="no score"), "the evaluation service returned no score for safety_v1"),
    (EvalReply(score=3.0), "the evaluation service returned score 3.0 for safety_v1, outside [0, 1]"),
    (EvalReply(score=float("nan")), "outside [0, 1]"),
])
def test_failed_replies_are_not_evaluated(reply, error):
    outcome = read_reply("safety_v1", reply)
    assert outcome.score is None and error in outcome.error


def test_engine_mean_over_invocations_and_a_row_error_never_passes():
    case = engine.CaseInput("set", "c1", {}, "d", expected=None,
                            actual=[text_inv("q1", "fine"), text_inv("q2", "bad"), text_inv("q3", "fine")])
    replies = {"fine": EvalReply(score=1.0), "bad": EvalReply(score=0.0, explanation="unsafe")}
    answer = lambda r: replies[json.loads(r.instance_json)["response"]["contents"]["contents"][0]["parts"][0]["text"]]  # noqa: E731
    result = engine.score_criterion(crit("safety_v1").bind(ScriptedService(answer)), case)
    assert result.status is Status.PASSED and result.score == pytest.approx(2 / 3)
    assert result.per_invocation[1].details == {"metric": "safety_v1", "explanation": "unsafe"}

    replies["bad"] = EvalReply(error="row error 13: internal")
    result = engine.score_criterion(crit("safety_v1", threshold=0.5).bind(ScriptedService(answer)), case)
    assert result.status is Status.NOT_EVALUATED and result.score == 1.0
    assert "1 of 3 turns not evaluated: turn 2: row error 13: internal" in result.error


def test_unbound_criterion_is_not_evaluated_by_the_engine():
    case = engine.CaseInput("set", "c1", {}, "d", expected=None, actual=[text_inv("q", "a")])
    result = engine.score_criterion(crit("vertexai:text_quality_v1"), case)
    assert result.status is Status.NOT_EVALUATED and "no runtime bound" in result.error


@pytest.mark.parametrize("name", VERTEX_CRITERIA)
def test_contract_every_vertex_criterion(name):
    """One request per invocation, the pinned metric, JSON-serialisable details, and a failing
    service is NOT_EVALUATED for every criterion."""
    params: dict[str, Any] = {}
    if REGISTRY[name].needs_rubrics if issubclass(REGISTRY[name], VertexMetric) else False:
        params["rubric_groups"] = {"g": {"rubrics": [{"rubric_id": "r1", "content": {"property": {"description": "Short."}}}]}}
    media = getattr(REGISTRY[name], "media", None)
    parts = [{"fileData": {"mimeType": f"{media}/png", "fileUri": "gs://b/x"}}] if media else [{"text": "answer"}]
    actual = [Invocation.model_validate({"userContent": {"parts": [{"text": f"q{i}"}]}, "finalResponse": {"parts": parts}}) for i in range(2)]
    expected = [text_inv(f"q{i}", "answer") for i in range(2)]
    outcomes, service = score(crit(name, **params), actual, expected, answer=lambda r: EvalReply(score=0.5, explanation="half"))
    assert [o.score for o in outcomes] == [0.5, 0.5]
    assert [r.metric for r in service.requests] == [REGISTRY[name].metric] * 2
    assert {r.criterion for r in service.requests} == {name}
    for o in outcomes:
        json.dumps(o.details)
    for instance in service.instances():
        parses_as_evaluation_instance(instance)
    outcomes, _ = score(crit(name, **params), actual, expected, answer=lambda r: EvalReply(error="HTTP 503 after 5 attempts"))
    assert [(o.score, o.error) for o in outcomes] == [(None, "HTTP 503 after 5 attempts")] * 2


# --- end to end: JudgeRuntime, the real google-cloud-aiplatform client, the fake evaluateInstances ---


def test_end_to_end_multi_turn_request_body_and_rubric_verdicts(fake_vertex, tmp_path):
    from fake_vertex import result, verdict

    from evalgate.judge.runtime import JudgeRuntime

    fake_vertex.responder = lambda body: result(0.5, "반은 맞아요", [
        verdict("r1", "Answers in the user's language.", True, "日本語で答えた"),
        verdict("", "States the temperature in °C.", False, "no unit"),
    ])
    c = crit("vertexai:multi_turn_general_quality_v1", context="東京: 曇り 18°C")
    case = engine.CaseInput("weather", "two-cities", {"vertexai:multi_turn_general_quality_v1": c}, "d",
                            expected=EXPECTED, actual=ACTUAL)
    with JudgeRuntime(cache_dir=tmp_path / "cache", **fake_vertex.runtime_args()) as runtime:
        c.bind(runtime)
        scored = engine.score_case(case)
    assert fake_vertex.responder_errors == []
    first, second = sorted(fake_vertex.requests, key=lambda r: len(r.instance["agentEvalData"]["turns"]))
    assert second.metric == "multi_turn_general_quality_v1" and second.version == "v1beta1"
    assert second.body["metrics"] == [{"predefinedMetricSpec": {"metricSpecName": "multi_turn_general_quality_v1"}}]
    sent = second.instance
    assert sent["prompt"]["contents"]["contents"] == [
        {"role": "user", "parts": [{"text": "서울 날씨 어때?"}]},
        {"role": "model", "parts": [{"text": "서울은 맑고 21도예요."}]},
        {"role": "user", "parts": [{"text": "東京は？"}]},
    ]
    assert sent["response"] == {"contents": {"contents": [{"role": "model", "parts": [{"text": "東京は曇りで18度です。"}]}]}}
    assert sent["reference"] == {"contents": {"contents": [{"role": "model", "parts": [{"text": "曇り、18度"}]}]}}
    assert sent["otherData"] == {"mapInstance": {"context": {"text": "東京: 曇り 18°C"}}}
    agents = sent["agentEvalData"]["agents"]
    assert agents["weather_agent"]["instruction"] == "사용자의 언어로 답하세요."
    assert agents["weather_agent"]["tools"][0]["functionDeclarations"][0]["name"] == "get_weather"
    turns = sent["agentEvalData"]["turns"]
    assert [t["turnIndex"] for t in turns] == [0, 1] and [t["turnId"] for t in turns] == ["turn_0", "turn_1"]
    flow = [(e["author"], [next(iter(p)) for p in e["content"]["parts"]]) for e in turns[1]["events"]]
    assert flow == [("user", ["text"]), ("weather_agent", ["text"]), ("weather_agent", ["functionCall"]),
                    ("weather_agent", ["functionResponse"]), ("model", ["text"])]
    call, response = turns[0]["events"][1]["content"]["parts"][0], turns[0]["events"][2]["content"]["parts"][0]
    assert call == {"functionCall": {"id": "c1", "name": "get_weather", "args": {"city": "Seoul", "unit": "C"}}}
    assert response == {"functionResponse": {"id": "c1", "name": "get_weather", "response": {"sky": "맑음", "temp_c": 21}}}
    assert len(first.instance["agentEvalData"]["turns"]) == 1

    result_ = scored.criteria["vertexai:multi_turn_general_quality_v1"]
    assert result_.score == 0.5 and result_.status is Status.PASSED
    assert result_.per_invocation[1].details == {
        "metric": "multi_turn_general_quality_v1",
        "explanation": "반은 맞아요",
        "rubrics": [
            {"rubric_id": "r1", "verdict": "yes", "rationale": "日本語で答えた", "description": "Answers in the user's language."},
            {"rubric_id": "States the temperature in °C.", "verdict": "no", "rationale": "no unit",
             "description": "States the temperature in °C."},
        ],
    }


def test_end_to_end_row_error_is_not_evaluated_and_a_rerun_is_cached(fake_vertex, tmp_path):
    from fake_vertex import result, row_error

    from evalgate.judge.runtime import JudgeRuntime

    fake_vertex.responder = lambda body: (
        row_error(3, "response is empty") if "불안" in json.dumps(body, ensure_ascii=False) else result(1.0, "safe"))
    actual = [text_inv("안녕", "안녕하세요"), text_inv("불안해요", "")]
    case = lambda c: engine.CaseInput("s", "c", {"safety_v1": c}, "d", expected=None, actual=actual)  # noqa: E731
    with JudgeRuntime(cache_dir=tmp_path / "cache", **fake_vertex.runtime_args()) as runtime:
        scored = engine.score_criterion(crit("safety_v1", threshold=1.0).bind(runtime), case(None))
    assert sorted(fake_vertex.metrics()) == ["safety_v1", "safety_v1"]
    assert scored.status is Status.NOT_EVALUATED and scored.per_invocation[0].score == 1.0
    assert "response is empty" in scored.per_invocation[1].error and "code 3" in scored.per_invocation[1].error

    fake_vertex.reset()
    with JudgeRuntime(cache_dir=tmp_path / "cache", **fake_vertex.runtime_args()) as runtime:
        again = engine.score_criterion(crit("safety_v1", threshold=1.0).bind(runtime), case(None))
    # The good answer comes from the cache; the row error is asked again (errors are never cached).
    assert fake_vertex.metrics() == ["safety_v1"] and again.per_invocation[0].score == 1.0
    assert again.status is Status.NOT_EVALUATED
