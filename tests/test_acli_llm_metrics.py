"""agents-cli's `prompt_template` metrics on evalgate's judge runtime, through the real google-genai client and the fake Gemini.

What is checked: the placeholders are filled with what the SDK puts in the instance it sends
the eval service for the same metric (the SDK driven against the fake eval service), the
entry's judge settings reach the request (model, system instruction, generation settings,
one request per sample), the score is the samples' mean, unreadable replies and missing
placeholders are NOT_EVALUATED with the reason, and a rerun is answered from the cache.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalgate import engine
from evalgate.agents_cli.cases import trace_invocations
from evalgate.config import read_test_config
from evalgate.errors import InputError
from evalgate.judge.runtime import JudgeRuntime
from evalgate.results import Status
from fake_gemini import fake_gemini, prompt_text, system_text  # noqa: F401 (fixture)
from fake_vertex import fake_vertex  # noqa: F401 (fixture)

TRACES = json.loads((Path(__file__).parent / "acli_metrics" / "traces.json").read_text(encoding="utf-8"))["eval_cases"]
WEATHER, ORDER, CAPITAL = TRACES[0], TRACES[1], TRACES[2]

CONFIG = """
metrics_to_run: [helpfulness, grounded, plain]
custom_metrics:
  - name: helpfulness
    prompt_template: |
      Rate the agent's answer 1-5.
      Prompt: {prompt}
      Answer: {response}
      Trace: {agent_data}
      Priority: {priority}
      Return JSON: {"score": <1-5>, "explanation": "<why>"}
    judge_model: gemini-3.8-flash
    judge_model_sampling_count: 3
    judge_model_system_instruction: 당신은 엄격한 채점자입니다.
    judge_model_generation_config: {temperature: 0, max_output_tokens: 256}
    score_range: [1, 5]
  - name: grounded
    prompt_template: "Reference: {reference}\\nContext: {context}\\nAnswer: {response}"
  - name: plain
    prompt_template: "{response}"
"""


@pytest.fixture
def config(tmp_path) -> Path:
    path = tmp_path / "eval_config.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    return path


def score(trace: dict[str, Any], criteria: dict[str, Any], runtime: JudgeRuntime) -> dict[str, Any]:
    for crit in criteria.values():
        crit.bind(runtime)
    case = engine.CaseInput("traces", trace["eval_case_id"], criteria, "d", actual=trace_invocations(trace))
    run = engine.AgentRun(case.actual)
    run.trace = trace
    case.runs = [run]
    return engine.score_case(case).criteria


@pytest.fixture
def runtime(fake_gemini, monkeypatch, tmp_path):
    fake_gemini.use_gemini_api(monkeypatch)
    with JudgeRuntime(cache_dir=tmp_path / "cache", sleep=lambda s: None, jitter=lambda: 0.0) as rt:
        yield rt


def test_the_judge_gets_the_filled_template_and_the_entrys_settings(config, fake_gemini, runtime):
    answers = iter([{"score": 4, "explanation": "좋아요"}, {"score": 5, "explanation": "완벽"}, {"score": 3, "explanation": "보통"}])
    fake_gemini.responder = lambda body: next(answers)
    criteria = read_test_config(config)
    result = score(WEATHER, {"helpfulness": criteria["helpfulness"]}, runtime)["helpfulness"]

    assert result.status is Status.PASSED and result.score == pytest.approx(4.0)  # the mean of 4, 5, 3
    details = result.per_invocation[-1].details
    # The samples are asked at once: which answer went to which sample is the pool's order.
    assert sorted(details["sample_scores"]) == [3.0, 4.0, 5.0]
    assert details["explanation"] == {4.0: "좋아요", 5.0: "완벽", 3.0: "보통"}[details["sample_scores"][0]]
    assert len(fake_gemini.requests) == 3 and {r.model for r in fake_gemini.requests} == {"gemini-3.8-flash"}
    sent = fake_gemini.requests[0]
    prompt = prompt_text(sent.body)
    assert "Prompt: 서울 날씨 알려줘\nAnswer: 서울은 맑음, 21도예요.\n" in prompt
    assert "Priority: 3\n" in prompt  # an extra case field
    assert 'Return JSON: {"score": <1-5>, "explanation": "<why>"}' in prompt  # braces that are no placeholder stay
    trace = json.loads(prompt.split("Trace: ", 1)[1].split("\nPriority:", 1)[0])
    assert [e["author"] for e in trace["turns"][0]["events"]] == ["root_agent"] * 3  # the content-less event dropped
    assert system_text(sent.body) == "당신은 엄격한 채점자입니다."
    generation = sent.body["generationConfig"]
    assert generation["temperature"] == 0 and generation["maxOutputTokens"] == 256
    assert generation["responseMimeType"] == "application/json" and "score" in json.dumps(generation["responseJsonSchema"])


def test_placeholders_hold_what_the_sdk_sends_the_service(config, fake_vertex, monkeypatch, tmp_path):
    """The SDK hands an LLM metric's case to the eval service as an instance; each placeholder
    evalgate fills carries the same content (the service renders the template from it)."""
    pytest.importorskip("agentplatform")
    import agentplatform
    from agentplatform import types
    from google.auth.compute_engine import _metadata

    from evalgate.criteria.acli import graded_case
    from evalgate.criteria.acli_llm_metric import render
    from test_vertex_multi_turn import as_the_client_sends

    monkeypatch.setattr(_metadata, "is_on_gce", lambda request=None: False)
    fake_vertex.access_token = None
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(fake_vertex.write_adc(tmp_path / "adc.json")))
    template = "{prompt}\u241e{response}\u241e{reference}\u241e{context}\u241e{agent_data}"
    client = agentplatform.Client(project="fake-project", location="global", http_options={"base_url": fake_vertex.url})
    metric = types.LLMMetric(name="m", prompt_template=template)
    client.evals.evaluate(dataset=types.EvaluationDataset.model_validate_json(json.dumps({"eval_cases": [CAPITAL]})), metrics=[metric])
    [sent] = fake_vertex.requests
    instance = as_the_client_sends(sent.body)["instance"]

    prompt, response, reference, context, agent_data = render(template, graded_case(CAPITAL)).split("\u241e")
    text = lambda data: "".join(p["text"] for c in data["contents"]["contents"] for p in c["parts"])  # noqa: E731
    assert prompt == text(instance["prompt"]) == "What is the capital of France?"
    assert response == text(instance["response"])
    assert reference == text(instance["reference"]) == "Paris"
    assert context == instance["otherData"]["mapInstance"]["context"]["text"]
    ours = as_the_client_sends({"instance": {"agent_eval_data": json.loads(agent_data)}})["instance"]["agentEvalData"]
    assert ours == instance["agentEvalData"]


def test_a_placeholder_the_case_cannot_fill_is_not_evaluated_without_a_request(config, fake_gemini, runtime):
    criteria = read_test_config(config)
    result = score(ORDER, {"grounded": criteria["grounded"]}, runtime)["grounded"]
    assert result.status is Status.NOT_EVALUATED
    assert result.error == "the prompt_template uses {reference}, and this case has no reference"
    assert fake_gemini.requests == []


def test_unreadable_replies_are_failed_samples(config, fake_gemini, runtime):
    criteria = read_test_config(config)
    fake_gemini.responder = lambda body: {"verdict": "good"}
    result = score(WEATHER, {"plain": criteria["plain"]}, runtime)["plain"]
    assert result.status is Status.NOT_EVALUATED and "no numeric score" in result.error
    fake_gemini.responder = lambda body: {"score": "4", "explanation": "text score"}
    assert score(WEATHER, {"plain": criteria["plain"]}, runtime)["plain"].score == 4.0


def test_a_rerun_is_answered_from_the_cache(config, fake_gemini, monkeypatch, tmp_path):
    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = lambda body: {"score": 2, "explanation": "그럭저럭"}
    for expected_requests in (3, 0):
        fake_gemini.reset()
        with JudgeRuntime(cache_dir=tmp_path / "cache") as rt:
            result = score(WEATHER, {"helpfulness": read_test_config(Path(tmp_path / "eval_config.yaml"))["helpfulness"]}, rt)
        assert len(fake_gemini.requests) == expected_requests and result["helpfulness"].score == 2.0


def test_bad_llm_entries_are_refused_with_their_place(tmp_path):
    path = tmp_path / "eval_config.yaml"
    path.write_text(
        "metrics_to_run: [a, b, c]\ncustom_metrics:\n"
        "  - name: a\n    prompt_template: '  '\n"
        "  - name: b\n    prompt_template: '{response}'\n    judge_model_sampling_count: 40\n"
        "  - name: c\n    prompt_template: '{response}'\n    judge_model_generation_config: {response_schema: {}}\n    judge_modle: x\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as e:
        read_test_config(path)
    text = str(e.value)
    assert "custom_metrics[0].prompt_template (line 4): the prompt template is empty" in text
    assert "custom_metrics[1].judge_model_sampling_count (line 7): judge_model_sampling_count 40 is not a whole number from 1 to 32" in text
    assert "custom_metrics[2].judge_modle (line 11): unknown key 'judge_modle' for a prompt_template metric" in text
