"""ADK 2.13's Vertex multi-turn metrics (`multi_turn_task_success_v1`, `multi_turn_trajectory_quality_v1`,
`multi_turn_tool_use_quality_v1`): evalgate against ADK's own evaluator on the same case.

Both run against the fake evaluateInstances server (tests/fake_vertex.py) with Application
Default Credentials from a throwaway service-account file: ADK through its evaluator, its
`_VertexAiEvalFacade` and the Vertex SDK (`agentplatform`), evalgate through its Vertex runtime and
google-cloud-aiplatform's client. The one thing changed in ADK's path is the endpoint: its
facade builds `agentplatform.Client(project=, location=)`, which ignores GOOGLE_VERTEX_BASE_URL
when both are given, so the test hands that client `http_options.base_url` (the fake's URL).

The request bodies are compared as JSON after one normalisation, applied to ADK's body only:
it is re-encoded the way google-cloud-aiplatform's REST client encodes a request (parsed into
`EvaluateInstancesRequest`, unknown fields rejected, written back as proto JSON with enums as
numbers). That changes only what proto JSON treats as the same message: key spelling (ADK's SDK
writes snake_case, the client lowerCamelCase; the service reads both), null values and empty
defaults (absent on the wire either way), and enum names against numbers (the client asks the
service for `enum-encoding=int`). evalgate's body is already in that form (asserted).
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest

pytest.importorskip("google.cloud.aiplatform_v1beta1")
pytest.importorskip("google.adk.evaluation.vertex_ai_eval_facade")

from conftest import FakeClock  # noqa: E402
from evalgate import engine  # noqa: E402
from evalgate.adk import Invocation  # noqa: E402
from evalgate.config import parse_criteria  # noqa: E402
from evalgate.criteria import REGISTRY  # noqa: E402
from evalgate.errors import InputError  # noqa: E402
from evalgate.judge.runtime import JudgeRuntime  # noqa: E402
from evalgate.results import Status  # noqa: E402
from fake_gemini import clear_judge_env  # noqa: E402
from fake_vertex import error, fake_vertex, result, row_error, verdict  # noqa: E402, F401 (fake_vertex: fixture)

METRICS = ["multi_turn_task_success_v1", "multi_turn_trajectory_quality_v1", "multi_turn_tool_use_quality_v1"]

# --- one three-turn case, as ADK records it ----------------------------------------------------------
# camelCase keys, ADK's null-filled tool dumps with a lower-case schema type, a sub-agent that
# appears in turn 2, thoughts, an event without content, a turn with no final response, and a
# turn in the older intermediate-data shape (which ADK does not send).

WEATHER_TOOLS = [{
    "functionDeclarations": [{
        "name": "get_weather", "description": "도시의 현재 날씨",
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "도시 이름"}},
                       "required": ["city"]},
        "behavior": None,
    }],
    "retrieval": None,
}]
FORECAST_TOOLS = [{"function_declarations": [{
    "name": "get_forecast", "description": "내일 예보",
    "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}, "days": {"type": "INTEGER"}}},
}]}]
APP_1 = {"agentDetails": {"weather_agent": {"name": "weather_agent", "instructions": "사용자의 언어로 답하세요.",
                                            "toolDeclarations": WEATHER_TOOLS}}}
APP_2 = {"agentDetails": {
    "weather_agent": {"name": "weather_agent", "instructions": "(a later description: ADK keeps the first)", "toolDeclarations": []},
    "forecast_agent": {"name": "forecast_agent", "instructions": "예보만 답하세요.", "toolDeclarations": FORECAST_TOOLS},
}}

TURNS: list[dict[str, Any]] = [
    {
        "invocationId": "e-8f2a", "creationTimestamp": 1700000000.0,
        "userContent": {"role": "user", "parts": [{"text": "서울 날씨 어때?"}]},
        "finalResponse": {"role": "model", "parts": [{"text": "서울은 맑고 21도예요."}]},
        "intermediateData": {"invocationEvents": [
            {"author": "weather_agent", "content": {"role": "model", "parts": [
                {"functionCall": {"id": "c1", "name": "get_weather", "args": {"city": "서울"}}}]}},
            {"author": "weather_agent", "content": {"role": "user", "parts": [
                {"functionResponse": {"id": "c1", "name": "get_weather", "response": {"sky": "맑음", "temp_c": 21}}}]}},
            {"author": "weather_agent", "content": None, "usageMetadata": {"totalTokenCount": 40}},
        ]},
        "appDetails": APP_1,
    },
    {
        "invocationId": "e-77c1",
        "userContent": {"role": "user", "parts": [{"text": "내일 우산 필요해?"}]},
        "finalResponse": {"role": "model", "parts": [{"text": "생각 중…", "thought": True}, {"text": "네, 내일 비가 와요 ☔"}]},
        "intermediateData": {"invocationEvents": [
            {"author": "weather_agent", "content": {"role": "model", "parts": [
                {"text": "예보 담당에게 넘깁니다.", "thought": True},
                {"functionCall": {"id": "t1", "name": "transfer_to_agent", "args": {"agent_name": "forecast_agent"}}}]}},
            {"author": "weather_agent", "content": {"role": "user", "parts": [
                {"functionResponse": {"id": "t1", "name": "transfer_to_agent", "response": {"result": None}}}]}},
            {"author": "forecast_agent", "content": {"role": "model", "parts": [
                {"functionCall": {"id": "f1", "name": "get_forecast", "args": {"city": "서울", "days": 1}},
                 "thoughtSignature": "c2lnbmF0dXJlLT4_"}]}},  # base64 (URL-safe alphabet) as ADK writes bytes
            {"author": "forecast_agent", "content": {"role": "model", "parts": [
                {"executableCode": {"language": "PYTHON", "code": "print(12.5 / 10)"}},
                {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1.25"}}]}},
            {"author": "forecast_agent", "content": {"role": "user", "parts": [
                {"functionResponse": {"id": "f1", "name": "get_forecast", "response": {"rain_mm": 12.5}}}]}},
            {"author": "forecast_agent", "content": {"role": "model", "parts": [{"text": "비 12.5mm"}]}},
        ]},
        "appDetails": APP_2,
    },
    {
        "invocationId": "e-0c3d",
        "userContent": {"role": "user", "parts": [{"text": "고마워!"}, {"inlineData": {"mimeType": "audio/wav", "data": "UklGRg=="}}]},
        "finalResponse": None,
        "intermediateData": {"toolUses": [{"name": "get_weather", "args": {"city": "부산"}}], "toolResponses": [],
                             "intermediateResponses": []},
        "appDetails": APP_2,
    },
]
EXPECTED = [{"userContent": t["userContent"], "finalResponse": {"role": "model", "parts": [{"text": "맞는 답"}]}} for t in TURNS]

# What the fake answers by default: a score, rubric verdicts of every shape, an explanation.
VERDICTS = [
    verdict("r1", "한국어로 답한다.", True, "모든 답이 한국어"),
    {"evaluatedRubric": {"rubricId": "r2", "content": {"property": {"description": "Names the rain amount."}}},
     "reasoning": "It says 'rain', not how much."},  # not met: the service leaves `verdict` out
    {"evaluatedRubric": {"rubricId": "r3"}, "verdict": True},  # no description, no reasoning
    {"evaluatedRubric": {}, "verdict": False, "reasoning": "no id at all"},
]
ANSWER = result(0.75, "대체로 목표를 달성했어요.", VERDICTS)


# --- ADK and evalgate on the same case -----------------------------------------------------------------


@pytest.fixture
def both(fake_vertex, monkeypatch, tmp_path):
    """ADK's evaluator and evalgate's criterion, both pointed at the fake with the same ADC file."""
    from google.adk.dependencies._agentplatform import agentplatform
    from google.auth.compute_engine import _metadata

    clear_judge_env(monkeypatch, tmp_path)
    monkeypatch.setattr(_metadata, "is_on_gce", lambda request=None: False)
    fake_vertex.access_token = None  # google-auth trades the service account's JWT for any token
    adc = fake_vertex.write_adc(tmp_path / "adc.json")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "fake-project")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    monkeypatch.setattr(agentplatform, "Client",
                        functools.partial(agentplatform.Client, http_options={"base_url": fake_vertex.url}))
    fake_vertex.responder = lambda body: ANSWER
    return Both(fake_vertex, tmp_path)


class Both:
    def __init__(self, fake, tmp_path):
        self.fake = fake
        self.tmp_path = tmp_path
        self.clock = FakeClock()

    def adk(self, metric: str, threshold: float, turns=TURNS, expected=EXPECTED):
        """ADK's own evaluator for `metric`, from ADK's registry, as `adk eval` builds it."""
        from google.adk.evaluation.eval_case import Invocation as AdkInvocation
        from google.adk.evaluation.eval_metrics import BaseCriterion, EvalMetric
        from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY

        self.fake.requests.clear()  # queued faults stay
        metric_ = EvalMetric(metric_name=metric, threshold=threshold, criterion=BaseCriterion(threshold=threshold))
        evaluator = DEFAULT_METRIC_EVALUATOR_REGISTRY.get_evaluator(metric_)
        result_ = evaluator.evaluate_invocations(
            [AdkInvocation.model_validate(t) for t in turns],
            [AdkInvocation.model_validate(t) for t in expected] if expected is not None else None,
        )
        return result_, [r.body for r in self.fake.requests]

    def evalgate(self, name: str, threshold: float, turns=TURNS, expected=EXPECTED, cache: bool = True):
        """evalgate's criterion through the engine and a fresh runtime on this test's cache folder."""
        self.fake.requests.clear()  # queued faults stay
        crit = parse_criteria({name: threshold}, "test_config.json", lambda *loc: ".".join(map(str, loc)))[name]
        case = engine.CaseInput(
            "weather", "umbrella", {name: crit}, "d",
            expected=[Invocation.model_validate(t) for t in expected] if expected is not None else None,
            actual=[Invocation.model_validate(t) for t in turns],
        )
        with JudgeRuntime(cache_dir=self.tmp_path / "cache", use_cache=cache, sleep=self.clock.sleep, clock=self.clock,
                          jitter=lambda: 0.0, **self.fake.runtime_args(adc=True)) as runtime:
            crit.bind(runtime)
            scored = engine.score_case(case).criteria[name]
            stats = runtime.stats().get(name, {})
        return scored, [r.body for r in self.fake.requests], stats


def as_the_client_sends(body: dict[str, Any]) -> dict[str, Any]:
    """`body` re-encoded as google-cloud-aiplatform's REST client encodes an EvaluateInstancesRequest."""
    from google.cloud.aiplatform_v1beta1 import EvaluateInstancesRequest
    from google.protobuf import json_format

    message = EvaluateInstancesRequest.from_json(json.dumps(body), ignore_unknown_fields=False)
    # What google.api_core's transcode_request does with the body (rest_numeric_enums=True).
    return json.loads(json_format.MessageToJson(EvaluateInstancesRequest.pb(message), use_integers_for_enums=True))


def verdicts_of(adk_result) -> list[tuple]:
    """ADK's last-turn rubric scores as (rubric_id, score, rationale)."""
    return [(r.rubric_id, r.score, r.rationale) for r in adk_result.per_invocation_results[-1].rubric_scores or []]


def evalgate_verdicts(details: dict[str, Any]) -> list[tuple]:
    """evalgate's last-turn details in ADK's order: the rubrics, then the explanation."""
    out = [(r["rubric_id"], r["score"], r["rationale"]) for r in details.get("rubrics", [])]
    if details.get("explanation"):
        out.append(("explanation", None, details["explanation"]))
    return out


def statuses(adk_result) -> list[tuple]:
    return [(r.score, r.eval_status.name) for r in adk_result.per_invocation_results]


# --- the request ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("metric", METRICS)
def test_the_request_equals_adks_as_json(both, metric):
    adk_result, [adk_body] = both.adk(metric, 0.5)
    scored, [ours], _ = both.evalgate(metric, 0.5)

    assert as_the_client_sends(ours) == ours  # evalgate's body is the client's own encoding
    assert as_the_client_sends(adk_body) == ours
    # The normalisation kept the content: the metric, every turn, and the Korean text.
    assert adk_body["metrics"] == [{"predefined_metric_spec": {"metric_spec_name": metric, "metric_spec_parameters": None}}]
    assert ours["metrics"] == [{"predefinedMetricSpec": {"metricSpecName": metric}}]
    turns = ours["instance"]["agentEvalData"]["turns"]
    assert [t["turnId"] for t in turns] == ["e-8f2a", "e-77c1", "e-0c3d"]
    assert "내일 우산 필요해?" in json.dumps(ours, ensure_ascii=False)
    assert '"thought_signature": "c2lnbmF0dXJlLT4_"' in json.dumps(adk_body)  # ADK sends what was recorded
    assert adk_result.overall_score == scored.score == 0.75


def test_what_the_request_holds(both):
    """The parts of ADK's mapping worth stating on their own (ADK's body is the reference above)."""
    _, [ours], _ = both.evalgate("multi_turn_task_success_v1", 0.5)
    instance = ours["instance"]
    assert set(instance) == {"prompt", "agentEvalData"}  # no response, reference, rubrics, scenario
    assert instance["prompt"] == {"contents": {}}  # empty contents: proto JSON leaves the list out
    agents = instance["agentEvalData"]["agents"]
    assert sorted(agents) == ["forecast_agent", "weather_agent"]
    assert agents["weather_agent"]["instruction"] == "사용자의 언어로 답하세요."  # the first description wins
    params = agents["weather_agent"]["tools"][0]["functionDeclarations"][0]["parameters"]
    assert params["properties"]["city"]["description"] == "도시 이름" and "behavior" not in json.dumps(agents)
    turns = instance["agentEvalData"]["turns"]
    flow = [[(e["author"], [k for p in e.get("content", {}).get("parts", []) for k in p]) for e in t["events"]] for t in turns]
    assert flow[0] == [("user", ["text"]), ("weather_agent", ["functionCall"]), ("weather_agent", ["functionResponse"]),
                       ("agent", ["text"])]  # the event without content is left out
    assert flow[1][1] == ("weather_agent", ["text", "thought", "functionCall"])  # thoughts go as recorded
    assert flow[1][-1] == ("agent", ["text", "thought", "text"])
    assert flow[1][3:5] == [("forecast_agent", ["functionCall", "thoughtSignature"]),
                            ("forecast_agent", ["executableCode", "codeExecutionResult"])]
    assert turns[1]["events"][3]["content"]["parts"][0]["thoughtSignature"] == "c2lnbmF0dXJlLT4/"  # proto JSON: standard base64
    # The older intermediate-data shape sends no events; no final response: an author alone.
    assert flow[2] == [("user", ["text", "inlineData"]), ("agent", [])]
    assert turns[2]["events"][-1] == {"author": "agent"}


def test_a_different_case_makes_a_different_request(both):
    """The comparison can fail: one changed word in evalgate's copy of the case."""
    _, [adk_body] = both.adk("multi_turn_task_success_v1", 0.5)
    changed = json.loads(json.dumps(TURNS, ensure_ascii=False).replace("비 12.5mm", "비 12mm"))
    assert changed != TURNS
    _, [ours], _ = both.evalgate("multi_turn_task_success_v1", 0.5, turns=changed)
    assert as_the_client_sends(adk_body) != ours


# --- the reply ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("metric, threshold, status", [
    ("multi_turn_task_success_v1", 0.5, Status.PASSED),
    ("vertexai:multi_turn_trajectory_quality_v1", 0.75, Status.PASSED),  # at the threshold passes
    ("multi_turn_tool_use_quality_v1", 0.8, Status.FAILED),
])
def test_scores_statuses_and_rubric_details_read_back_as_adk_reads_them(both, metric, threshold, status):
    adk_result, _ = both.adk(metric.removeprefix("vertexai:"), threshold)
    scored, requests, _ = both.evalgate(metric, threshold)

    assert len(requests) == 1  # one request per case, whatever its length
    assert (scored.score, scored.status.name) == (adk_result.overall_score, adk_result.overall_eval_status.name)
    assert scored.status is status
    assert [(i.score, i.status.name) for i in scored.per_invocation] == statuses(adk_result)
    assert statuses(adk_result) == [(None, "NOT_EVALUATED"), (None, "NOT_EVALUATED"), (0.75, status.name)]
    last = scored.per_invocation[-1].details
    assert evalgate_verdicts(last) == verdicts_of(adk_result) == [
        ("한국어로 답한다.", 1.0, "모든 답이 한국어"),
        ("Names the rain amount.", 0.0, "It says 'rain', not how much."),
        ("r3", 1.0, None),
        ("rubric_3", 0.0, "no id at all"),
        ("explanation", None, "대체로 목표를 달성했어요."),
    ]
    assert [(r.rubric_id, r.score) for r in adk_result.overall_rubric_scores] == [(v[0], v[1]) for v in verdicts_of(adk_result)]
    assert [r["verdict"] for r in last["rubrics"]] == ["yes", "no", "yes", "no"]  # as the reports show them
    assert all(i.details == {} and i.error is None for i in scored.per_invocation[:-1])


@pytest.mark.parametrize("answer, service_says", [
    (row_error(3, "agent_eval_data.turns 가 비었습니다"), "agent_eval_data.turns 가 비었습니다"),
    (error(400, "Invalid JSON payload: turns[2]"), "Invalid JSON payload: turns[2]"),
])
def test_an_error_is_not_evaluated_with_the_services_reason_in_both(both, answer, service_says):
    both.fake.responder = lambda body: answer
    adk_result, _ = both.adk("multi_turn_task_success_v1", 0.5)
    scored, _, _ = both.evalgate("multi_turn_task_success_v1", 0.5)

    assert (adk_result.overall_score, adk_result.overall_eval_status.name) == (None, "NOT_EVALUATED")
    assert (scored.score, scored.status) == (None, Status.NOT_EVALUATED)
    assert [(i.score, i.status.name) for i in scored.per_invocation] == statuses(adk_result)
    [(rubric_id, _, adk_reason)] = verdicts_of(adk_result)
    assert rubric_id == "error" and service_says in adk_reason
    assert service_says in scored.error and service_says in scored.per_invocation[-1].error


def test_no_invocations_is_not_evaluated_without_a_request(both):
    adk_result, adk_requests = both.adk("multi_turn_task_success_v1", 0.5, turns=[], expected=[])
    scored, requests, _ = both.evalgate("multi_turn_task_success_v1", 0.5, turns=[], expected=[])
    assert adk_requests == requests == []
    assert (adk_result.overall_score, adk_result.overall_eval_status.name, adk_result.per_invocation_results) == (None, "NOT_EVALUATED", [])
    assert (scored.score, scored.status, scored.per_invocation) == (None, Status.NOT_EVALUATED, [])


def test_expected_invocations_are_optional_and_unsent(both):
    with_expected, [body_a], _ = both.evalgate("multi_turn_task_success_v1", 0.5)
    without, [body_b], _ = both.evalgate("multi_turn_task_success_v1", 0.5, expected=None, cache=False)
    assert body_a == body_b and with_expected.score == without.score == 0.75


# --- the runtime: retries, failures, cache ----------------------------------------------------------------


def test_503_is_retried_and_the_result_is_the_same(both):
    both.fake.queue(error(503, "backend busy"), times=2)
    scored, requests, stats = both.evalgate("multi_turn_task_success_v1", 0.5)
    assert len(requests) == 3 and stats["retries"] == 2 and stats["failures"] == 0
    assert (scored.score, scored.status) == (0.75, Status.PASSED)
    assert both.clock.sleeps  # backed off between attempts (on the fake clock)


def test_a_call_that_keeps_failing_is_not_evaluated_with_the_reason(both):
    both.fake.queue(error(503, "backend busy"), times=10)
    scored, requests, stats = both.evalgate("vertexai:multi_turn_tool_use_quality_v1", 0.5)
    assert len(requests) == 5 and stats["failures"] == 1
    assert (scored.score, scored.status) == (None, Status.NOT_EVALUATED)
    assert "503" in scored.error and "backend busy" in scored.error
    assert [i.status for i in scored.per_invocation] == [Status.NOT_EVALUATED] * 3


def test_a_rerun_is_served_from_the_cache(both):
    first, requests, _ = both.evalgate("multi_turn_trajectory_quality_v1", 0.5)
    assert len(requests) == 1
    both.fake.responder = lambda body: result(0.1, "a different answer")  # would change the result if asked
    again, requests, stats = both.evalgate("multi_turn_trajectory_quality_v1", 0.5)
    assert requests == [] and stats["cache_hits"] == 1
    assert again.model_dump() == first.model_dump()
    # Another metric on the same conversation is another request.
    _, requests, _ = both.evalgate("multi_turn_task_success_v1", 0.5)
    assert len(requests) == 1


# --- configuration ------------------------------------------------------------------------------------------


def test_both_names_and_only_adks_options():
    where = lambda *loc: ".".join(map(str, loc))  # noqa: E731
    for metric in METRICS:
        assert REGISTRY[metric].scope == REGISTRY[f"vertexai:{metric}"].scope == "case"
        assert REGISTRY[f"vertexai:{metric}"].metric == REGISTRY[metric].metric == metric
    parsed = parse_criteria({"multi_turn_task_success_v1": 0.6, "vertexai:multi_turn_tool_use_quality_v1": {"threshold": 0.7}},
                            "test_config.json", where)
    assert parsed["multi_turn_task_success_v1"].threshold == 0.6
    with pytest.raises(InputError) as e:
        parse_criteria({"multi_turn_task_success_v1": {"threshold": 0.5, "context": "x"}}, "test_config.json", where)
    assert "unknown option 'context'" in str(e.value)
    with pytest.raises(InputError) as e:
        parse_criteria({"multi_turn_task_success_v1": {}}, "test_config.json", where)  # no default threshold, as ADK
    assert "threshold" in str(e.value)


# === response_evaluation_score: Vertex AI coherence (1-5), one request per invocation ========================


class FakeBucket:
    """A stand-in for Google Cloud Storage (google-cloud-storage's JSON API, reached through
    STORAGE_EMULATOR_HOST): the objects in `objects` ({"bucket/name": bytes}) exist, nothing else."""

    def __init__(self):
        from http.server import BaseHTTPRequestHandler

        import fake_http

        self.objects: dict[str, bytes] = {}
        self.paths: list[str] = []
        bucket = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                from urllib.parse import unquote, urlsplit

                split = urlsplit(self.path)
                bucket.paths.append(split.path)
                path = split.path.removeprefix("/download")
                parts = path.split("/")  # /storage/v1/b/{bucket}/o/{object}
                key = f"{parts[4]}/{unquote(parts[6])}" if len(parts) == 7 and parts[5] == "o" else None
                data = bucket.objects.get(key) if key else None
                if data is None:
                    fake_http.send_reply(self, fake_http.google_error(404, "No such object"))
                elif "alt=media" in split.query:
                    fake_http.send_reply(self, fake_http.Reply(200, data.decode("utf-8")))
                else:
                    fake_http.send_reply(self, fake_http.Reply(200, {"name": key.split("/", 1)[1], "bucket": parts[4],
                                                                     "size": str(len(data))}))

        self._server = fake_http.serve(Handler)
        self.url = fake_http.base_url(self._server)

    def stop(self) -> None:
        import fake_http

        fake_http.stop(self._server)


SDK_BUCKET = "vertex-ai-generative-ai-eval-sdk-resources"  # where ADK's Vertex SDK looks for coherence v1
RATED = [
    {"userContent": {"role": "user", "parts": [{"text": "서울 날씨 어때?"}]},
     "finalResponse": {"role": "model", "parts": [{"text": "서울은 맑아요."}, {"text": "기온은 21도예요."}]}},
    {"userContent": {"role": "user", "parts": [{"text": "내일은?"}]},
     "finalResponse": {"role": "model", "parts": [{"text": "비, 그리고 고양이."}]}},
]
REFERENCES = [{"userContent": RATED[0]["userContent"], "finalResponse": {"parts": [{"text": "맑고 21도"}]}},
              {"userContent": RATED[1]["userContent"], "finalResponse": {"parts": [{"text": ""}]}}]  # no reference


def rating(body: dict[str, Any]) -> dict[str, Any]:
    prompt = body["instance"]["prompt"]["contents"]["contents"][0]["parts"][0]["text"]
    return result(4.0, "흐름이 자연스러워요.") if prompt == "서울 날씨 어때?" else result(2.0, "두 번째 문장이 엉뚱해요.")


@pytest.fixture
def bucket(both, monkeypatch):
    """ADK's Vertex SDK reads its metric files from this fake bucket (and forgets any it read before)."""
    from agentplatform._genai._evals_metric_loaders import LazyLoadedPrebuiltMetric

    fake = FakeBucket()
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", fake.url)
    monkeypatch.setattr(LazyLoadedPrebuiltMetric, "_cache", {})
    both.fake.responder = rating
    yield fake
    fake.stop()


def by_prompt(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(bodies, key=lambda b: json.dumps(b["instance"]["prompt"], ensure_ascii=False))


def test_coherence_template_is_the_one_google_cloud_aiplatform_ships():
    from vertexai.evaluation import MetricPromptTemplateExamples

    from evalgate.criteria.response_evaluation_score import coherence_template

    template = coherence_template()
    assert template == MetricPromptTemplateExamples.get_prompt_template("coherence")
    assert "{prompt}" in template and "{response}" in template


def test_response_evaluation_score_request_equals_adks_given_that_template_in_its_bucket(both, bucket):
    import yaml

    from evalgate.criteria.response_evaluation_score import coherence_template

    bucket.objects[f"{SDK_BUCKET}/metrics/coherence/v1.yaml"] = yaml.safe_dump(
        {"name": "coherence", "prompt_template": coherence_template()}, allow_unicode=True).encode("utf-8")
    adk_result, adk_bodies = both.adk("response_evaluation_score", 3.0, turns=RATED, expected=REFERENCES)
    scored, ours, stats = both.evalgate("response_evaluation_score", 3.0, turns=RATED, expected=REFERENCES)

    assert any(p.endswith("metrics%2Fcoherence%2Fv1.yaml") or p.endswith("metrics/coherence/v1.yaml") for p in bucket.paths)
    assert len(adk_bodies) == len(ours) == 2 and stats["requests"] == 2  # one request per invocation
    assert [as_the_client_sends(b) for b in by_prompt(adk_bodies)] == by_prompt(ours)
    tomorrow, seoul = by_prompt(ours)
    assert seoul["metrics"] == [{"llmBasedMetricSpec": {"metricPromptTemplate": coherence_template()}}]
    assert seoul["instance"]["response"]["contents"]["contents"][0]["parts"] == [{"text": "서울은 맑아요.\n기온은 21도예요."}]
    assert "reference" in seoul["instance"] and "reference" not in tomorrow["instance"]

    assert (scored.score, scored.status.name) == (adk_result.overall_score, adk_result.overall_eval_status.name) == (3.0, "PASSED")
    assert [(i.score, i.status.name) for i in scored.per_invocation] == statuses(adk_result) == [(4.0, "PASSED"), (2.0, "FAILED")]
    assert [evalgate_verdicts(i.details) for i in scored.per_invocation] == [
        [(r.rubric_id, r.score, r.rationale) for r in p.rubric_scores] for p in adk_result.per_invocation_results]


def test_adk_without_the_bucket_cannot_score_it_and_evalgate_can(both, bucket):
    """Offline (the bucket holds no coherence file), ADK's evaluator raises before any request;
    `adk eval` records that as NOT_EVALUATED. evalgate rates the same invocations."""
    with pytest.raises(ValueError, match="could not be resolved"):
        both.adk("response_evaluation_score", 3.0, turns=RATED, expected=REFERENCES)
    assert both.fake.requests == []
    scored, ours, _ = both.evalgate("response_evaluation_score", 3.0, turns=RATED, expected=REFERENCES)
    assert len(ours) == 2 and (scored.score, scored.status) == (3.0, Status.PASSED)


def test_response_evaluation_score_failures_and_cache(both):
    both.fake.responder = rating
    scenario, requests, _ = both.evalgate("response_evaluation_score", 3.0, turns=RATED, expected=None)
    assert requests == [] and scenario.status is Status.NOT_EVALUATED and "expected conversation" in scenario.error

    silent = [RATED[0], {**RATED[1], "finalResponse": None}]
    partly, requests, _ = both.evalgate("response_evaluation_score", 3.0, turns=silent, expected=REFERENCES)
    assert len(requests) == 1 and partly.per_invocation[1].error == "the invocation has no final response text to rate"
    assert (partly.score, partly.status) == (4.0, Status.NOT_EVALUATED)  # partly rated: never a pass

    both.fake.responder = lambda body: result(7.0, "?")
    odd, _, _ = both.evalgate("response_evaluation_score", 3.0, turns=RATED[:1], expected=REFERENCES[:1], cache=False)
    assert odd.status is Status.NOT_EVALUATED and "coherence rating 7, outside [1, 5]" in odd.error

    both.fake.responder = lambda body: row_error(3, "템플릿 변수를 채울 수 없어요")
    bad, _, _ = both.evalgate("response_evaluation_score", 3.0, turns=RATED[:1], expected=REFERENCES[:1], cache=False)
    assert bad.status is Status.NOT_EVALUATED and "템플릿 변수를 채울 수 없어요" in bad.error

    both.fake.responder = rating
    first, requests, _ = both.evalgate("response_evaluation_score", 4.5, turns=RATED, expected=REFERENCES)
    assert len(requests) == 1  # the first invocation was rated above (threshold apart): from the cache
    assert (first.score, first.status) == (3.0, Status.FAILED)
    again, requests, stats = both.evalgate("response_evaluation_score", 4.5, turns=RATED, expected=REFERENCES)
    assert requests == [] and stats["cache_hits"] == 2 and again.model_dump() == first.model_dump()


def test_response_evaluation_score_threshold_is_on_the_1_to_5_scale():
    where = lambda *loc: ".".join(map(str, loc))  # noqa: E731
    assert parse_criteria({"response_evaluation_score": 3.5}, "test_config.json", where)["response_evaluation_score"].threshold == 3.5
    for bad in (0.8, 5.5):
        with pytest.raises(InputError) as e:
            parse_criteria({"response_evaluation_score": bad}, "test_config.json", where)
        assert f"threshold {bad} is outside [1, 5]. Use a threshold between 1 and 5." in str(e.value)
    with pytest.raises(InputError) as e:
        parse_criteria({"safety_v1": 2}, "test_config.json", where)
    assert "outside [0, 1]. Use a threshold between 0 and 1." in str(e.value)


# === through `evalgate run` ======================================================================================


def test_both_kinds_through_run(cli, both, tmp_path):
    """A suite naming ADK's multi-turn metric and response_evaluation_score: one request for the
    case's conversation, one per rated invocation; results, ADK-shaped results and the summary."""
    from test_inputs import make_project

    def answer(body):
        return rating(body) if metric_of_body(body) == "llm_based_metric_spec" else ANSWER

    both.fake.responder = answer
    eval_set = {"eval_set_id": "weather", "eval_cases": [{"eval_id": "umbrella", "conversation": EXPECTED}]}
    config = ("suites:\n  - name: weather\n    evalsets: [evals/*.evalset.json]\n    actual: runs/out.jsonl\n"
              "    criteria:\n      multi_turn_task_success_v1: 0.5\n      response_evaluation_score: {threshold: 3}\n"
              f"vertex: {{location: us-central1, endpoint: '{both.fake.url}'}}\n")
    root = make_project(tmp_path / "project", eval_set=eval_set, config=config,
                        actual_lines=[{"eval_set_id": "weather", "eval_id": "umbrella", "invocations": TURNS}])
    code, out, err = cli("run", "--out", "out", "--no-color", cwd=root)
    assert "Traceback" not in out + err
    results = json.loads((root / "out" / "results.json").read_text(encoding="utf-8"))
    [case] = results["suites"][0]["cases"]
    task = case["criteria"]["multi_turn_task_success_v1"]
    assert (task["score"], task["status"]) == (0.75, "PASSED")
    assert [i["status"] for i in task["per_invocation"]] == ["NOT_EVALUATED", "NOT_EVALUATED", "PASSED"]
    assert task["per_invocation"][-1]["details"]["explanation"] == "대체로 목표를 달성했어요."
    coherence = case["criteria"]["response_evaluation_score"]
    assert [i["score"] for i in coherence["per_invocation"]] == [4.0, 2.0, None]  # turn 3 has no response
    assert coherence["status"] == "NOT_EVALUATED" and coherence["threshold"] == 3
    assert sorted(metric_of_body(r.body) for r in both.fake.requests) == ["llm_based_metric_spec"] * 2 + ["multi_turn_task_success_v1"]
    adk = json.loads(next((root / "out" / "adk").rglob("*.evalset_result.json")).read_text(encoding="utf-8"))
    metrics = {m["metric_name"]: m for m in adk["eval_case_results"][0]["overall_eval_metric_results"]}
    assert (metrics["multi_turn_task_success_v1"]["score"], metrics["multi_turn_task_success_v1"]["eval_status"]) == (0.75, 1)
    assert code == 0, out + err  # PASSED and NOT_EVALUATED (not_evaluated: warn)


def metric_of_body(body):
    from fake_vertex import metric_of

    return metric_of(body)
