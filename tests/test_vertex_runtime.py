"""JudgeRuntime.evaluate through the real google-cloud-aiplatform client against the fake evaluateInstances server."""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import FakeClock
import requests

pytest.importorskip("google.cloud.aiplatform_v1beta1")

from evalgate.judge.cache import JudgeCache, eval_cache_key  # noqa: E402
from evalgate.judge.runtime import (  # noqa: E402
    DEADLINE_PASSED,
    NO_VERTEX_CREDENTIALS,
    VERTEX_INSTALL_HINT,
    JudgeRequest,
    JudgeRuntime,
)
from evalgate.vertex.service import EvalRequest  # noqa: E402
from fake_gemini import clear_judge_env, fake_gemini  # noqa: E402, F401 (fake_gemini is a fixture)
from fake_vertex import (  # noqa: E402, F401 (fake_vertex is a fixture)
    FAKE_VERTEX_TOKEN,
    FakeVertex,
    InFlight,
    Reply,
    error,
    fake_vertex,
    result,
    row_error,
    slow,
    verdict,
)

EVAL_PATH = "/v1beta1/projects/fake-project/locations/us-central1:evaluateInstances"

# A multi-turn instance with a tool call, in the REST shape (camelCase) the client sends it.
INSTANCE = {
    "prompt": {"contents": {"contents": [
        {"role": "user", "parts": [{"text": "Book a table in Paris."}]},
        {"role": "model", "parts": [{"text": "For how many?"}]},
        {"role": "user", "parts": [{"text": "Two, tonight."}]},
    ]}},
    "response": {"contents": {"contents": [{"role": "model", "parts": [{"text": "Booked for two at 8 pm."}]}]}},
    "reference": {"text": "A table for two is booked."},
    "otherData": {"mapInstance": {"context": {"text": "The user is in Paris."}}},
    "agentEvalData": {"turns": [{"turnIndex": 0, "turnId": "turn_0", "events": [
        {"author": "user", "content": {"role": "user", "parts": [{"text": "Two, tonight."}]}},
        {"author": "booker", "content": {"role": "model", "parts": [
            {"functionCall": {"name": "book_table", "args": {"city": "Paris", "people": 2}}}]}},
        {"author": "booker", "content": {"role": "user", "parts": [
            {"functionResponse": {"name": "book_table", "response": {"status": "booked", "time": "20:00"}}}]}},
        {"author": "booker", "content": {"role": "model", "parts": [{"text": "Booked for two at 8 pm."}]}},
    ]}]},
    "rubricGroups": {"case_rubrics": {"groupId": "case_rubrics", "rubrics": [
        {"rubricId": "r1", "content": {"property": {"description": "Names the time."}}, "type": "SPECIFIC"},
    ]}},
}


def req(metric: str = "general_quality_v1", instance=None, **changes) -> EvalRequest:
    base = EvalRequest(
        criterion=f"vertexai:{metric}",
        metric=metric,
        instance_json=json.dumps(INSTANCE if instance is None else instance, sort_keys=True),
    )
    return dataclasses.replace(base, **changes)


def snake(value):
    """The same JSON with snake_case keys (how a criterion might write it; map keys excepted)."""
    if isinstance(value, list):
        return [snake(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        name = "".join("_" + c.lower() if c.isupper() else c for c in key)
        keep_keys = key in ("mapInstance", "rubricGroups", "args", "response") and isinstance(item, dict)
        out[name] = {k: snake(v) for k, v in item.items()} if keep_keys else snake(item)
    return out


@pytest.fixture(autouse=True)
def no_ambient_credentials(monkeypatch, tmp_path):
    """Whatever the machine has (gcloud login, a metadata server), tests start with none."""
    clear_judge_env(monkeypatch, tmp_path)
    from google.auth.compute_engine import _metadata

    monkeypatch.setattr(_metadata, "is_on_gce", lambda request=None: False)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make_runtime(tmp_path, clock, fake_vertex):
    """JudgeRuntimes on one cache folder whose evaluations reach the fake (offline credentials)."""
    made: list[JudgeRuntime] = []

    def make(vertex: bool = True, **kwargs) -> JudgeRuntime:
        if vertex:
            for name, value in fake_vertex.runtime_args().items():
                kwargs.setdefault(name, value)
        kwargs.setdefault("cache_dir", tmp_path / "cache")
        kwargs.setdefault("sleep", clock.sleep)
        kwargs.setdefault("clock", clock)
        kwargs.setdefault("jitter", lambda: 0.0)
        made.append(JudgeRuntime(**kwargs))
        return made[-1]

    yield make
    for runtime in made:
        runtime.close()


def stats_of(runtime: JudgeRuntime, criterion: str = "vertexai:general_quality_v1") -> tuple[int, int, int, int]:
    counts = runtime.stats()[criterion]
    return counts["requests"], counts["cache_hits"], counts["retries"], counts["failures"]


# --- the request and the reply ------------------------------------------------------------------


def test_the_request_carries_the_pinned_metric_and_the_instance_unchanged(fake_vertex, make_runtime):
    fake_vertex.responder = lambda body: result(0.5, "One of two rubrics holds.", [
        verdict("r1", "Names the time.", True, "Says 8 pm."),
        verdict("r2", "Confirms the party size.", False, "", importance=None),
    ])
    runtime = make_runtime()

    reply = runtime.evaluate(req())

    [sent] = fake_vertex.requests
    assert sent.path == EVAL_PATH and sent.auth == "bearer" and sent.headers["authorization"] == "***"
    assert sent.metric == "general_quality_v1"
    assert sent.body["metrics"] == [{"predefinedMetricSpec": {"metricSpecName": "general_quality_v1"}}]
    assert sent.instance == INSTANCE
    assert (reply.error, reply.cached) == (None, False)
    assert reply.score == 0.5 and reply.explanation == "One of two rubrics holds."
    assert reply.rubric_verdicts == [
        {"rubric_id": "r1", "description": "Names the time.", "verdict": True, "reasoning": "Says 8 pm."},
        {"rubric_id": "r2", "description": "Confirms the party size.", "verdict": False, "reasoning": ""},
    ]
    assert stats_of(runtime) == (1, 0, 0, 0)


def test_a_snake_case_instance_is_sent_as_the_same_rest_json(fake_vertex, make_runtime):
    assert snake(INSTANCE) != INSTANCE and "agent_eval_data" in snake(INSTANCE)
    make_runtime().evaluate(req(instance=snake(INSTANCE)))
    assert fake_vertex.requests[0].instance == INSTANCE


def test_enums_go_as_numbers_as_the_client_asks_for_them(fake_vertex, make_runtime):
    instance = copy.deepcopy(INSTANCE)
    instance["rubricGroups"]["case_rubrics"]["rubrics"][0]["importance"] = "HIGH"
    make_runtime().evaluate(req(instance=instance))
    [sent] = fake_vertex.requests
    assert sent.query == "%24alt=json%3Benum-encoding%3Dint"  # $alt=json;enum-encoding=int
    assert sent.instance["rubricGroups"]["case_rubrics"]["rubrics"][0]["importance"] == 1  # Rubric.Importance.HIGH


@pytest.mark.parametrize("score", [0.7, 0.1, 1 / 3, 0.0, 1.0, 4.5])
def test_the_score_is_the_number_the_service_sent(fake_vertex, make_runtime, score):
    """MetricResult.score is a 32-bit proto float: 0.7 must not come back as 0.699999988."""
    fake_vertex.responder = lambda body: {"score": score}
    reply = make_runtime().evaluate(req())
    assert reply.score == pytest.approx(score, rel=1e-7)
    if score != 1 / 3:
        assert reply.score == score
    assert reply.explanation is None and reply.rubric_verdicts == []


def test_safety_v1_by_its_versioned_name(fake_vertex, make_runtime):
    fake_vertex.responder = lambda body: result(1.0, "No harmful content.")
    instance = {"prompt": {"text": "hi"}, "response": {"text": "hello"}}
    reply = make_runtime().evaluate(req("safety_v1", instance))
    assert (reply.score, reply.explanation) == (1.0, "No harmful content.")
    assert fake_vertex.requests[0].metric == "safety_v1"
    assert fake_vertex.requests[0].instance == instance


# --- retries ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fault, sleeps",
    [
        (error(429, retry_after=7), [7.0]),  # Retry-After honoured
        (error(503, retry_after=2), [2.0]),
        (error(500), [0.5]),  # backoff: 1 s with "equal jitter" at its lowest
        (error(408), [0.5]),
        (error(409), [0.5]),
        (error(499), [0.5]),
        (error(502), [0.5]),
        (error(504), [0.5]),
        (row_error(8, "Autorater quota exceeded."), [0.5]),  # RESOURCE_EXHAUSTED in the row
        (row_error(14, "Autorater unavailable."), [0.5]),  # UNAVAILABLE in the row
    ],
)
def test_transient_failures_are_retried(fake_vertex, make_runtime, clock, fault, sleeps):
    fake_vertex.queue(fault)
    fake_vertex.responder = lambda body: result(0.75)
    runtime = make_runtime()

    reply = runtime.evaluate(req())

    assert (reply.error, reply.score) == (None, 0.75)
    assert clock.sleeps == sleeps
    assert len(fake_vertex.requests) == 2
    assert stats_of(runtime) == (2, 0, 1, 0)


def test_retries_are_bounded_and_end_as_an_error(fake_vertex, make_runtime, clock):
    fake_vertex.queue(error(500, "boom"), times=10)
    runtime = make_runtime(max_attempts=3)

    reply = runtime.evaluate(req())

    assert reply.score is None
    assert reply.error == "Vertex AI evaluation request failed: HTTP 500 INTERNAL: boom (gave up after 3 attempts)"
    assert clock.sleeps == [0.5, 1.0] and len(fake_vertex.requests) == 3
    assert stats_of(runtime) == (3, 0, 2, 1)


def test_a_timeout_is_retried(fake_vertex, make_runtime):
    fake_vertex.queue(slow(5))
    runtime = make_runtime(timeout_s=0.3)
    reply = runtime.evaluate(req())
    assert reply.error is None and reply.score == 1.0
    assert len(fake_vertex.requests) == 2 and stats_of(runtime) == (2, 0, 1, 0)


def test_timeouts_until_attempts_run_out_are_an_error(fake_vertex, make_runtime):
    fake_vertex.queue(slow(5), times=2)
    runtime = make_runtime(timeout_s=0.3, max_attempts=2)

    reply = runtime.evaluate(req())

    assert reply.score is None
    assert reply.error == (
        "Vertex AI evaluation request failed: no answer within 0.3 s (timeout) (gave up after 2 attempts)"
    )
    assert len(fake_vertex.requests) == 2 and stats_of(runtime) == (2, 0, 1, 1)


def test_an_unreachable_endpoint_is_a_network_error_after_retries(make_runtime, clock):
    with socket_that_refuses() as url:
        runtime = make_runtime(vertex_endpoint=url, max_attempts=2)
        reply = runtime.evaluate(req())
    assert reply.error.startswith("Vertex AI evaluation request failed: network error (ConnectionError: ")
    assert reply.error.endswith("(gave up after 2 attempts)")
    assert clock.sleeps == [0.5]


@pytest.mark.parametrize(
    "status, expected",
    [
        (400, "Vertex AI evaluation request failed: HTTP 400 INVALID_ARGUMENT: bad instance "
              "(check the metric name and the instance sent)"),
        (403, "Vertex AI evaluation request failed: HTTP 403 PERMISSION_DENIED: bad instance "
              "(check the Vertex AI credentials and that the Vertex AI API is enabled in the project)"),
        (404, "Vertex AI evaluation request failed: HTTP 404 NOT_FOUND: bad instance "
              "(check the project, the location and the metric name)"),
        (501, "Vertex AI evaluation request failed: HTTP 501 UNIMPLEMENTED: bad instance"),  # 5xx, but final
    ],
)
def test_client_errors_fail_at_once(fake_vertex, make_runtime, clock, status, expected):
    fake_vertex.queue(error(status, "bad instance"))
    reply = make_runtime().evaluate(req())
    assert (reply.score, reply.error) == (None, expected)
    assert len(fake_vertex.requests) == 1 and clock.sleeps == []


# --- row-level errors and unusable replies ----------------------------------------------------------


def test_a_row_error_is_an_error_with_the_services_message_never_a_score(fake_vertex, make_runtime, clock, tmp_path):
    fake_vertex.queue({"score": 1.0, **row_error(3, "Rubric groups are required for this metric.")})
    runtime = make_runtime()

    reply = runtime.evaluate(req("final_response_reference_free_v1"))

    assert reply.score is None and reply.rubric_verdicts == []
    assert reply.error == (
        "Vertex AI could not evaluate final_response_reference_free_v1 for this instance: "
        "Rubric groups are required for this metric. (code 3 INVALID_ARGUMENT)"
    )
    assert len(fake_vertex.requests) == 1 and clock.sleeps == []  # INVALID_ARGUMENT: not retried
    assert not list((tmp_path / "cache").rglob("*.json"))  # never cached...
    assert runtime.evaluate(req("final_response_reference_free_v1")).score == 1.0  # ...so asked again
    assert stats_of(runtime, "vertexai:final_response_reference_free_v1") == (2, 0, 0, 1)


def test_a_row_error_that_stays_transient_ends_as_an_error(fake_vertex, make_runtime):
    fake_vertex.queue(row_error(8, "Quota exceeded for the autorater."), times=5)
    reply = make_runtime(max_attempts=3).evaluate(req())
    assert reply.score is None
    assert reply.error == (
        "Vertex AI could not evaluate general_quality_v1 for this instance: Quota exceeded for the autorater. "
        "(code 8 RESOURCE_EXHAUSTED) (gave up after 3 attempts)"
    )


@pytest.mark.parametrize(
    "answer, expected",
    [
        (Reply(200, {"metricResults": []}), "Vertex AI returned no metric result for general_quality_v1"),
        (Reply(200, {}), "Vertex AI returned no metric result for general_quality_v1"),
        (Reply(200, {"metricResults": [{"explanation": "no score"}]}),
         "Vertex AI returned no score for general_quality_v1"),
        (Reply(200, "<html>502 Bad Gateway</html>"),
         "Vertex AI reply is not an evaluateInstances response (ParseError: "),
    ],
)
def test_unusable_replies_are_errors_not_retried_nor_cached(fake_vertex, make_runtime, tmp_path, answer, expected):
    fake_vertex.queue(answer)
    runtime = make_runtime()
    reply = runtime.evaluate(req())
    assert reply.score is None and reply.error.startswith(expected)
    assert len(fake_vertex.requests) == 1
    assert not list((tmp_path / "cache").rglob("*.json"))


@pytest.mark.parametrize(
    "instance_json, expected",
    [
        ("{not json", "vertexai:general_quality_v1: the Vertex AI instance is not JSON"),
        (json.dumps({"prompt": {"txt": "typo"}}),
         "vertexai:general_quality_v1: the instance is not a Vertex AI evaluateInstances instance"),
    ],
)
def test_a_malformed_instance_fails_without_a_request(fake_vertex, make_runtime, instance_json, expected):
    reply = make_runtime().evaluate(req(instance_json=instance_json))
    assert reply.score is None and reply.error.startswith(expected)
    assert fake_vertex.requests == []


# --- the cache ----------------------------------------------------------------------------------


def test_a_rerun_is_served_from_the_cache_with_zero_requests(fake_vertex, make_runtime):
    fake_vertex.responder = lambda body: result(0.7, "Mostly fine.", [verdict("r1", "Names the time.", True, "8 pm")])
    batch = [req(), req("safety_v1"), req("text_quality_v1")]
    first = [make_runtime().evaluate(r) for r in batch]
    assert len(fake_vertex.requests) == 3
    fake_vertex.reset()

    rerun = make_runtime()
    second = [rerun.evaluate(r) for r in batch]

    assert fake_vertex.requests == []
    assert all(r.cached for r in second) and not any(r.cached for r in first)
    assert [dataclasses.replace(r, cached=False) for r in second] == first
    assert second[0].score == 0.7 and second[0].rubric_verdicts[0]["verdict"] is True
    assert stats_of(rerun) == (0, 1, 0, 0)


@pytest.mark.parametrize(
    "change",
    [
        {"metric": "general_quality_v2"},
        {"instance_json": json.dumps({**INSTANCE, "reference": {"text": "Another reference."}}, sort_keys=True)},
        {"prompt_version": "2"},
        {"criterion": "safety_v1"},
    ],
)
def test_anything_that_shapes_the_result_is_a_cache_miss(fake_vertex, make_runtime, change):
    runtime = make_runtime()
    runtime.evaluate(req())
    assert runtime.evaluate(req()).cached

    reply = runtime.evaluate(req(**change))

    assert reply.error is None and not reply.cached
    assert len(fake_vertex.requests) == 2


def test_judge_and_vertex_results_share_the_cache_folder_without_mixing(fake_vertex, make_runtime, tmp_path):
    make_runtime().evaluate(req())
    key = eval_cache_key(req())
    stored = json.loads((tmp_path / "cache" / key[:2] / f"{key}.json").read_text(encoding="utf-8"))
    assert stored["format"] == 1 and stored["key"] == key
    assert json.loads(stored["text"]) == {"score": 1.0, "explanation": "fake: fine", "rubric_verdicts": []}


@pytest.mark.parametrize(
    "text",
    ['{"verdict": "valid"}', '{"score": "1", "explanation": null, "rubric_verdicts": []}',
     '{"score": true, "explanation": null, "rubric_verdicts": []}',
     '{"score": 1, "explanation": null, "rubric_verdicts": [{"verdict": "yes"}]}', "not json"],
)
def test_a_cached_file_without_a_result_is_a_miss(fake_vertex, make_runtime, tmp_path, text):
    JudgeCache(tmp_path / "cache").put(eval_cache_key(req()), text, {})
    reply = make_runtime().evaluate(req())
    assert reply.error is None and not reply.cached and len(fake_vertex.requests) == 1


def test_no_cache_bypasses_reads_and_writes(fake_vertex, make_runtime, tmp_path):
    make_runtime().evaluate(req())
    runtime = make_runtime(use_cache=False)
    assert not runtime.evaluate(req()).cached
    assert len(fake_vertex.requests) == 2
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 1


# --- credentials, the SDK, the endpoint --------------------------------------------------------------


def test_no_credentials_makes_no_request_but_serves_cached_results(fake_vertex, make_runtime):
    assert make_runtime().evaluate(req()).error is None  # an earlier run (with credentials) filled the cache
    fake_vertex.reset()
    runtime = make_runtime(vertex=False, vertex_endpoint=fake_vertex.url)  # a fork's pull request: nothing set

    cached, missing = runtime.evaluate(req()), runtime.evaluate(req("safety_v1"))

    assert cached.cached and cached.error is None and cached.score == 1.0
    assert missing.score is None and missing.error.startswith(NO_VERTEX_CREDENTIALS + ": ")
    for what in ("no Application Default Credentials were found", "google-github-actions/auth",
                 "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION"):
        assert what in missing.error
    assert runtime.vertex_credentials() == missing.error
    assert fake_vertex.requests == []
    assert stats_of(runtime) == (0, 1, 0, 0) and stats_of(runtime, "vertexai:safety_v1") == (0, 0, 0, 1)


def test_credentials_without_a_location_say_that_the_auth_action_does_not_set_it(fake_vertex, make_runtime,
                                                                                  monkeypatch):
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "fake-project")  # what google-github-actions/auth exports
    runtime = make_runtime(vertex=False, vertex_endpoint=fake_vertex.url, vertex_credentials=fake_vertex.credentials())
    reply = runtime.evaluate(req())
    assert reply.error == (
        f"{NO_VERTEX_CREDENTIALS}: no location: set GOOGLE_CLOUD_LOCATION (e.g. us-central1) or vertex_location; "
        "google-github-actions/auth exports GOOGLE_CLOUD_PROJECT but not GOOGLE_CLOUD_LOCATION"
    )
    assert fake_vertex.requests == []


def test_application_default_credentials_and_the_environment(fake_vertex, make_runtime, monkeypatch, tmp_path):
    pytest.importorskip("cryptography")
    adc = fake_vertex.write_adc(tmp_path / "adc.json", project="adc-project")
    fake_vertex.access_token = None  # google-auth signs its own JWT for this client
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "europe-west4")
    runtime = make_runtime(vertex=False, vertex_endpoint=fake_vertex.url)

    assert runtime.vertex_credentials() is None
    assert runtime.evaluate(req()).error is None
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "env-project")  # read once per runtime: a new one sees it
    assert make_runtime(vertex=False, vertex_endpoint=fake_vertex.url).evaluate(req("safety_v1")).error is None

    assert [(r.project, r.location, r.auth) for r in fake_vertex.requests] == [
        ("adc-project", "europe-west4", "bearer"), ("env-project", "europe-west4", "bearer"),
    ]


def test_missing_aiplatform_names_the_extra(fake_vertex, make_runtime, monkeypatch):
    monkeypatch.setitem(sys.modules, "google.cloud.aiplatform_v1beta1", None)  # its import now fails
    reply = make_runtime().evaluate(req())
    assert reply.error == VERTEX_INSTALL_HINT and "pip install 'adk-evalgate[vertex]'" in reply.error
    assert fake_vertex.requests == []


def test_a_client_without_managed_metrics_says_to_upgrade(fake_vertex, make_runtime, monkeypatch):
    from google.cloud.aiplatform_v1beta1 import EvaluateInstancesResponse

    monkeypatch.delitem(EvaluateInstancesResponse.meta.fields, "metric_results")  # as before managed metrics
    reply = make_runtime().evaluate(req())
    assert reply.error.startswith("google-cloud-aiplatform ")
    assert reply.error.endswith("has no managed-metric evaluateInstances (metrics, instance, metric_results): "
                                "pip install --upgrade 'adk-evalgate[vertex]'")
    assert fake_vertex.requests == []


# --- run-wide machinery shared with ask() ------------------------------------------------------------


def test_the_in_flight_bound_is_shared_by_judge_asks_and_vertex_evaluations(fake_gemini, monkeypatch, tmp_path):
    """concurrency=2 bounds the SUM of requests in flight on both servers, not each one."""
    shared = InFlight()
    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = shared.around(lambda body: {"verdict": "valid"}, hold=0.03)
    vertex = FakeVertex(meter=shared).start()
    vertex.latency = 0.03
    runtime = JudgeRuntime(concurrency=2, cache_dir=tmp_path / "cache", **vertex.runtime_args())
    asks = [JudgeRequest("final_response_match_v2", "1", "gemini-2.5-flash", "", f"case {i}", None) for i in range(10)]
    evals = [req(instance={"prompt": {"text": f"case {i}"}, "response": {"text": "ok"}}) for i in range(10)]
    try:
        with ThreadPoolExecutor(max_workers=20) as pool:
            futures = [pool.submit(runtime.ask, a) for a in asks] + [pool.submit(runtime.evaluate, e) for e in evals]
            replies = [f.result() for f in futures]
    finally:
        runtime.close()
        vertex.stop()

    assert [r.error for r in replies] == [None] * 20
    assert len(fake_gemini.requests) == 10 and len(vertex.requests) == 10
    assert shared.max == 2  # reached, never exceeded, across both servers
    assert runtime.stats()["final_response_match_v2"]["requests"] == 10
    assert runtime.stats()["vertexai:general_quality_v1"]["requests"] == 10


def test_the_rate_cap_counts_both_kinds(fake_gemini, fake_vertex, make_runtime, monkeypatch, clock):
    fake_gemini.use_gemini_api(monkeypatch)
    runtime = make_runtime(rpm=2)
    ask = JudgeRequest("final_response_match_v2", "1", "gemini-2.5-flash", "", "case", None)

    assert runtime.ask(ask).error is None
    assert runtime.evaluate(req()).error is None
    assert clock.sleeps == []
    assert runtime.evaluate(req("safety_v1")).error is None  # the third start in a minute waits

    assert clock.sleeps == [60.0]


def test_past_the_deadline_no_evaluation_starts_but_cached_ones_are_served(fake_vertex, make_runtime, clock):
    runtime = make_runtime(deadline_s=100)
    assert runtime.evaluate(req()).error is None
    clock.now = 101.0

    late = runtime.evaluate(req("safety_v1"))

    assert late.error == f"{DEADLINE_PASSED} (100 s after the run started): no further judge request is made"
    assert runtime.evaluate(req()).cached
    assert len(fake_vertex.requests) == 1


def test_the_deadline_cuts_retries_short(fake_vertex, make_runtime, clock):
    fake_vertex.queue(error(429, "slow down", retry_after=6), times=5)
    reply = make_runtime(deadline_s=10).evaluate(req())
    assert reply.error.startswith(DEADLINE_PASSED)
    assert reply.error.endswith(
        "last error: Vertex AI evaluation request failed: HTTP 429 RESOURCE_EXHAUSTED: slow down")
    assert clock.sleeps == [6.0] and len(fake_vertex.requests) == 2


# --- secrets ------------------------------------------------------------------------------------


def test_the_token_never_appears_in_errors_or_logs(fake_vertex, make_runtime, caplog):
    echo = f"token Bearer {FAKE_VERTEX_TOKEN} lacks permission; raw {FAKE_VERTEX_TOKEN}"
    fake_vertex.queue(error(500, echo))
    fake_vertex.queue(row_error(13, echo))
    fake_vertex.queue(error(403, echo))
    runtime = make_runtime()

    with caplog.at_level(logging.DEBUG):
        reply = runtime.evaluate(req())

    assert reply.error.startswith("Vertex AI evaluation request failed: HTTP 403 PERMISSION_DENIED: token Bearer *** "
                                  "lacks permission; raw ***")
    assert "retry" in caplog.text  # the retries were logged...
    assert FAKE_VERTEX_TOKEN not in caplog.text and FAKE_VERTEX_TOKEN not in reply.error  # ...without the token
    assert FAKE_VERTEX_TOKEN not in repr(runtime)
    assert len(fake_vertex.requests) == 3


# --- the fake itself (other tests rely on its routes) ------------------------------------------------


@pytest.mark.parametrize(
    "path, status",
    [
        ("/v1beta1/projects/p/locations/us-central1:evaluateInstances", 200),
        ("/v1beta1/projects/p/locations/us-central1/:evaluateInstances", 200),  # the 2.x vertexai.Client
        ("/v1/projects/p/locations/us-central1:evaluateInstances?$alt=json;enum-encoding=int", 200),  # legacy
        ("/v1beta1/projects/p/locations/us-central1:evaluateDataset", 404),
        ("/v1beta1/projects/p:evaluateInstances", 404),
    ],
)
def test_fake_routes(fake_vertex, path, status):
    body = {"metrics": [{"predefined_metric_spec": {"metric_spec_name": "safety_v1"}}], "instance": {}}
    answer = requests.post(fake_vertex.url + path, json=body, timeout=10,
                           headers={"Authorization": f"Bearer {FAKE_VERTEX_TOKEN}"})
    assert answer.status_code == status
    if status == 200:
        assert answer.json() == {"metricResults": [{"score": 1.0, "explanation": "fake: fine"}]}
        assert fake_vertex.requests[-1].metric == "safety_v1" and fake_vertex.requests[-1].project == "p"


def test_fake_wants_the_bearer_token(fake_vertex):
    body = {"metrics": [{"predefined_metric_spec": {"metric_spec_name": "safety_v1"}}], "instance": {}}
    url = fake_vertex.url + "/v1beta1/projects/p/locations/l:evaluateInstances"
    assert requests.post(url, json=body, timeout=10).status_code == 401
    assert requests.post(url, json=body, timeout=10, headers={"Authorization": "Bearer wrong"}).status_code == 401


# --- helpers ------------------------------------------------------------------------------------


class socket_that_refuses:
    """An http://127.0.0.1:PORT where nothing listens (the port was bound, then released)."""

    def __enter__(self) -> str:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc) -> None:
        pass
