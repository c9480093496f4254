"""agents-cli's built-in metrics: evalgate's evaluateInstances bodies equal the SDK's at the wire, version by version.

The peer is agents-cli's own path, in-process: `prepare_eval_metrics` reads the config (so the
names resolve to the versions agents-cli resolves them to), `_drop_content_less_events` and
the SDK's `client.evals.evaluate` grade the traces, as `agents-cli eval grade` does; both it
and evalgate (tests/acli_metrics/traces.json: Korean and Japanese text, tool calls, an N+1
case, context, reference) talk to the fake Vertex eval service on 127.0.0.1, and every body
the SDK sent must be one evalgate sent, field for field (both normalised as the aiplatform REST
client encodes an EvaluateInstancesRequest). Scores and errors read back alike.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agentplatform")
pytest.importorskip("google.agents.cli")

from evalgate import engine  # noqa: E402
from evalgate.agents_cli import eval_config  # noqa: E402
from evalgate.agents_cli.cases import trace_invocations  # noqa: E402
from evalgate.config import read_test_config  # noqa: E402
from evalgate.errors import InputError  # noqa: E402
from evalgate.judge.runtime import JudgeRuntime  # noqa: E402
from evalgate.results import Status  # noqa: E402
from fake_gemini import clear_judge_env  # noqa: E402
from fake_vertex import fake_vertex, result, row_error, verdict  # noqa: E402, F401 (fake_vertex: fixture)
from test_vertex_multi_turn import as_the_client_sends  # noqa: E402

TRACES = json.loads((Path(__file__).parent / "acli_metrics" / "traces.json").read_text(encoding="utf-8"))["eval_cases"]
TRACES[2]["rubric_groups"] = {"facts": {"group_id": "facts", "rubrics": [{"rubric_id": "r1", "content": {"property": {"description": "파리를 말한다"}}}]}}
TRACES[1]["conversation_history"] = [
    {"turn_id": "h0", "author": "user", "content": {"role": "user", "parts": [{"text": "こんにちは"}]}},
]

CONFIG = """
metrics_to_run:
  - FINAL_RESPONSE_QUALITY
  - final_response_match
  - SAFETY
  - multi_turn_task_success
  - MULTI_TURN_GENERAL_QUALITY
  - hallucination
  - groundedness
  - tool_use_quality_v2
  - safety_v3_tuned
  - final_response_quality_v2
custom_metrics:
  - name: final_response_quality_v2
    metric_spec_parameters: {rubric_group_key: facts}
  - name: safety_v3_tuned
    prompt_template: "unused here {response}"
  - name: tool_use_quality_v2
    judge_model: gemini-3.8-flash
    judge_model_sampling_count: 3
    judge_model_generation_config: {temperature: 0.5, max_output_tokens: 512}
"""
# safety_v3_tuned is a prompt_template metric: not a service metric, left out of this comparison.
SERVICE = ["final_response_quality_v1", "final_response_match_v2", "safety_v1", "multi_turn_task_success_v1",
           "multi_turn_general_quality_v1", "hallucination_v1", "grounding_v1", "tool_use_quality_v2",
           "final_response_quality_v2"]


@pytest.fixture
def service(fake_vertex, monkeypatch, tmp_path):
    from google.auth.compute_engine import _metadata

    clear_judge_env(monkeypatch, tmp_path)
    monkeypatch.setattr(_metadata, "is_on_gce", lambda request=None: False)
    fake_vertex.access_token = None
    adc = fake_vertex.write_adc(tmp_path / "adc.json")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "fake-project")
    fake_vertex.responder = answer
    config = tmp_path / "eval_config.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    return fake_vertex, config


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """A score that depends on the metric and the instance; a row error for the Japanese case's safety."""
    body = as_the_client_sends(body)  # one spelling for the SDK's body and evalgate's
    text = json.dumps(body, sort_keys=True, ensure_ascii=False)
    name = body["metrics"][0]["predefinedMetricSpec"]["metricSpecName"]
    if name == "safety_v1" and "明日届きます" in text:
        return row_error(3, "not for 安全")
    return result((len(text) % 7) / 7, f"{name}: 좋아요", [verdict("r1", "파리를 말한다", len(text) % 2 == 0, "because")])


def sdk_grade(fake, config: Path) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """agents-cli's grade path in-process: its metrics, its event dropping, the SDK's evaluate."""
    import agentplatform
    from agentplatform import types
    from google.agents.cli.eval.cmd_grade import _drop_content_less_events
    from google.agents.cli.eval.eval_utils import prepare_eval_metrics

    metrics, _local, _remote = prepare_eval_metrics(config_path=str(config), metrics_str=None)
    metrics = [m for m in metrics if (getattr(m, "name", None) or m).lower() != "safety_v3_tuned"]
    cases = types.EvaluationDataset.model_validate_json(json.dumps({"eval_cases": TRACES}, ensure_ascii=False)).eval_cases
    _drop_content_less_events(cases)
    fake.requests.clear()
    client = agentplatform.Client(project="fake-project", location="global", http_options={"base_url": fake.url})
    graded = client.evals.evaluate(dataset=types.EvaluationDataset(eval_cases=cases), metrics=metrics)
    scores = {}
    for row in graded.eval_case_results:
        for name, m in row.response_candidate_results[0].metric_results.items():
            scores[(TRACES[row.eval_case_index]["eval_case_id"], name)] = (m.score, m.explanation, m.error_message)
    return [r.body for r in fake.requests], scores


def evalgate_grade(fake, config: Path, tmp_path: Path) -> tuple[list[dict[str, Any]], dict[tuple, Any]]:
    criteria = {k: c for k, c in read_test_config(config).items() if k != "safety_v3_tuned"}
    fake.requests.clear()
    out = {}
    with JudgeRuntime(cache_dir=tmp_path / "cache", sleep=lambda s: None, jitter=lambda: 0.0,
                      **fake.runtime_args(location="global", adc=True)) as runtime:
        for crit in criteria.values():
            crit.bind(runtime)
        for trace in TRACES:
            case = engine.CaseInput("traces", trace["eval_case_id"], criteria, "d", actual=trace_invocations(trace))
            run = engine.AgentRun(case.actual)
            run.trace = trace
            case.runs = [run]
            for name, r in engine.score_case(case).criteria.items():
                out[(trace["eval_case_id"], name)] = r
    return [r.body for r in fake.requests], out


def _key(body: dict[str, Any]) -> str:
    return json.dumps(as_the_client_sends(body), sort_keys=True, ensure_ascii=False)


def test_every_body_the_sdk_sends_evalgate_sends(service, tmp_path):
    fake, config = service
    sdk_bodies, _ = sdk_grade(fake, config)
    ours, _ = evalgate_grade(fake, config, tmp_path)
    assert len(sdk_bodies) == len(ours) == len(SERVICE) * len(TRACES)
    assert sorted(map(_key, ours)) == sorted(map(_key, sdk_bodies))
    assert all(as_the_client_sends(b) == b for b in ours)  # evalgate's body is the client's own encoding
    sent = {json.dumps(b["metrics"][0], sort_keys=True) for b in ours}
    assert '{"predefinedMetricSpec": {"metricSpecName": "final_response_quality_v2", "metricSpecParameters": {"rubric_group_key": "facts"}}}' in sent
    assert {json.loads(s)["predefinedMetricSpec"]["metricSpecName"] for s in sent} == set(SERVICE)
    judged = [b["autoraterConfig"] for b in ours if "autoraterConfig" in b]
    assert len(judged) == len(TRACES) and judged[0] == {
        "autoraterModel": "gemini-3.8-flash", "samplingCount": 3, "generationConfig": {"temperature": 0.5, "maxOutputTokens": 512}}


def test_the_bodies_carry_the_trace(service, tmp_path):
    fake, config = service
    ours, _ = evalgate_grade(fake, config, tmp_path)
    by = {(b["metrics"][0]["predefinedMetricSpec"]["metricSpecName"], json.dumps(b, ensure_ascii=False).count("明日")): b for b in ours}
    multi = next(b for (m, ja), b in by.items() if m == "multi_turn_task_success_v1" and ja)
    # N+1: the history turn is agent data, the conversation history the prompt of a multi-turn metric.
    assert [t["turnId"] for t in multi["instance"]["agentEvalData"]["turns"]] == ["turn_0", "turn_1"]
    assert multi["instance"]["prompt"]["contents"]["contents"] == [{"role": "user", "parts": [{"text": "こんにちは"}]}]
    ko = next(b for b in ours if "서울" in json.dumps(b, ensure_ascii=False))
    events = ko["instance"]["agentEvalData"]["turns"][0]["events"]
    assert len(events) == 3  # the content-less event is dropped, as agents-cli grade drops it
    assert events[0]["content"]["parts"][0]["functionCall"]["args"] == {"city": "서울"}


def test_scores_and_errors_read_back_as_the_sdk_reads_them(service, tmp_path):
    fake, config = service
    _, theirs = sdk_grade(fake, config)
    _, ours = evalgate_grade(fake, config, tmp_path)
    assert {name for _, name in theirs} == set(SERVICE)
    for (case_id, name), (score, explanation, error) in theirs.items():
        mine = ours[(case_id, name)]
        if error:
            assert mine.status is Status.NOT_EVALUATED and mine.score is None
            assert "安全" in error and "安全" in (mine.error or "")
        else:
            assert mine.score == pytest.approx(score) and mine.status is Status.PASSED, (case_id, name)
            assert mine.per_invocation[-1].details["explanation"] == explanation


def test_versions_resolve_as_agents_cli_resolves_them():
    from google.agents.cli import _sdk_compat
    from google.agents.cli.eval import eval_utils

    assert eval_config.SUPPORTED_PREDEFINED_METRICS == _sdk_compat.supported_predefined_metrics()
    from agentplatform._genai import _evals_metric_loaders

    for base in eval_config.PINNED:  # bare in metrics_to_run: the SDK's RubricMetric.<NAME>
        lazy = getattr(_evals_metric_loaders.RubricMetric, base.upper())
        assert eval_config.resolve_bare(base) == lazy._get_api_metric_spec_name(), base
        assert eval_config.resolve_bare(base.upper()) == eval_config.resolve_bare(base)
    for name in [*eval_config.PINNED, "final_response_quality_v1", "nope", "SAFETY"]:  # in custom_metrics: the newest
        assert eval_config.resolve_builtin(name) == eval_utils._resolve_predefined_metric_name(name), name
    assert eval_config.resolve_bare("final_response_match") == "final_response_match_v2"
    assert eval_config.resolve_builtin("final_response_match") == "final_response_match_v3"
    assert eval_config.resolve_builtin("safety") == "safety_v3"


def test_unsupported_for_now_is_said_at_load(tmp_path):
    config = tmp_path / "eval_config.yaml"
    config.write_text("metrics_to_run: [exact_match, rouge_1, coherence, final_response_quality, multi_turn_task_success]\n"
                      "custom_metrics:\n  - name: final_response_quality\n    judge_model_system_instruction: be fair\n"
                      "  - name: multi_turn_task_success\n    judge_model_step_configs: {rubric_generation: {sampling_count: 2}}\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        read_test_config(config)
    text = str(e.value)
    assert "metrics_to_run[0] (line 1): 'exact_match' is computed by the eval service from exact text" in text
    assert "'rouge_1'" in text and "Cloud Storage bucket" in text
    assert "custom_metrics[0].judge_model_system_instruction (line 4): a built-in metric has its own instructions" in text
    assert "custom_metrics[1].judge_model_step_configs (line 6): 'judge_model_step_configs' is not supported" in text


def test_a_rerun_is_served_from_the_cache(service, tmp_path):
    fake, config = service
    first, a = evalgate_grade(fake, config, tmp_path)
    again, b = evalgate_grade(fake, config, tmp_path)
    # Only the failed evaluation (a row error is never cached) is asked again.
    assert len(first) == len(SERVICE) * len(TRACES)
    assert [x["metrics"][0]["predefinedMetricSpec"]["metricSpecName"] for x in again] == ["safety_v1"]
    assert {k: v.score for k, v in a.items()} == {k: v.score for k, v in b.items()}
