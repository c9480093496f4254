"""ADK custom metrics (`custom_metrics`): one metric file that works in `adk eval` and in evalgate.

The parity test runs the real weather agent (Python tools, fake Gemini at the wire) under
`adk eval` (ADK 2.13, a process) and `evalgate run` on the same test_config.json, whose custom
metrics live in the agent folder as `agent.my_metrics.*`: every custom metric's score and
status, overall and per turn, and what the function was called with, equal ADK's. Then what
ADK does not do: a function that raises or returns nonsense is that case's NOT_EVALUATED, a
bad function path or signature is one clear error before anything runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytest.importorskip("google.adk")

from agent_project import agent_model_server, make_project  # noqa: E402
from conftest import write_json  # noqa: E402

STATUSES = {1: "PASSED", 2: "FAILED", 3: "NOT_EVALUATED", 4: "INFORMATIONAL"}

# The metric functions, written as a user writes them for `adk eval`. `exact_answer` reports
# what it was called with (types, threshold, criterion, expected, scenario) in a rubric
# score's rationale, so the two callers' arguments can be compared.
METRICS = '''
"""Custom metrics for the weather agent, used by `adk eval` and evalgate alike."""
import asyncio
import json

from google.adk.evaluation.eval_case import get_all_tool_calls
from google.adk.evaluation.eval_metrics import EvalStatus
from google.adk.evaluation.eval_rubrics import RubricScore
from google.adk.evaluation.evaluator import EvaluationResult, PerInvocationResult


def _text(content):
    return " ".join(p.text for p in (content.parts or []) if p.text) if content else ""


def _arguments(eval_metric, actual, expected, scenario):
    return json.dumps({
        "types": [type(eval_metric).__module__ + "." + type(eval_metric).__name__,
                  [type(a).__module__ + "." + type(a).__name__ for a in actual],
                  None if expected is None else [type(e).__name__ for e in expected],
                  None if scenario is None else type(scenario).__name__],
        "metric_name": eval_metric.metric_name,
        "threshold": eval_metric.threshold,
        "criterion": eval_metric.criterion.model_dump(mode="json"),
        "criterion_type": type(eval_metric.criterion).__name__,
        "custom_function_path": eval_metric.custom_function_path,
        "users": [_text(a.user_content) for a in actual],
        "expected": None if expected is None else [_text(e.final_response) for e in expected],
        "scenario": None if scenario is None else scenario.starting_prompt,
    }, ensure_ascii=False, sort_keys=True)


def exact_answer(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    """1.0 per turn whose final answer is the expected one (ignore_case: a criterion option)."""
    criterion = eval_metric.criterion
    ignore_case = bool((criterion.model_extra or {}).get("ignore_case"))
    per = []
    for i, actual in enumerate(actual_invocations):
        expected = expected_invocations[i] if expected_invocations else None
        got, want = _text(actual.final_response), _text(expected.final_response) if expected else ""
        if ignore_case:
            got, want = got.lower(), want.lower()
        score = 1.0 if got == want else 0.0
        status = EvalStatus.PASSED if score >= criterion.threshold else EvalStatus.FAILED
        seen = _arguments(eval_metric, actual_invocations, expected_invocations, conversation_scenario)
        per.append(PerInvocationResult(actual_invocation=actual, expected_invocation=expected, score=score, eval_status=status,
                                       rubric_scores=[RubricScore(rubric_id="answer", score=score, rationale=got),
                                                      RubricScore(rubric_id="arguments", rationale=seen)]))
    overall = sum(p.score for p in per) / len(per)
    return EvaluationResult(
        overall_score=overall,
        overall_eval_status=EvalStatus.PASSED if overall >= criterion.threshold else EvalStatus.FAILED,
        per_invocation_results=per,
    )


async def tool_calls(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    """Informational: tool calls per turn (async, as ADK allows)."""
    await asyncio.sleep(0)
    per = [PerInvocationResult(actual_invocation=a, score=float(len(get_all_tool_calls(a.intermediate_data))), eval_status=EvalStatus.INFORMATIONAL)
           for a in actual_invocations]
    return EvaluationResult(overall_score=sum(p.score for p in per), overall_eval_status=EvalStatus.INFORMATIONAL, per_invocation_results=per)


def broken(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    raise ValueError("날씨 데이터가 없습니다")


def not_a_result(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    return {"overall_score": 1.0}


def verdict_without_turns(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    return EvaluationResult(overall_score=1.0, overall_eval_status=EvalStatus.PASSED)


def nothing_to_say(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    return EvaluationResult(overall_eval_status=EvalStatus.NOT_EVALUATED)


def keyword_only(*, eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    return EvaluationResult()


def two_args(eval_metric, actual_invocations):
    return EvaluationResult()


NOT_CALLABLE = 3
'''


def _adk_eval(project, config_path: Path) -> dict[str, dict]:
    """Run `adk eval` (ADK's own CLI, a process) and return its eval history's cases."""
    env = {k: v for k, v in os.environ.items() if k != "GOOGLE_GENAI_USE_VERTEXAI"}
    adk = Path(sys.executable).parent / "adk"
    done = subprocess.run(
        [str(adk), "eval", str(project.agent_dir), str(project.evalset), "--config_file_path", str(config_path)],
        cwd=project.root, env=env, capture_output=True, text=True, timeout=300,
    )
    assert "Eval Run Summary" in done.stdout, done.stdout[-2000:] + done.stderr[-3000:]
    history = list((project.agent_dir / ".adk" / "eval_history").glob("*.evalset_result.json"))
    assert len(history) == 1
    return {c["eval_id"]: c for c in json.loads(history[0].read_text(encoding="utf-8"))["eval_case_results"]}


def test_the_same_test_config_scores_as_in_adk_eval(tmp_path, monkeypatch, cli):
    project = make_project(tmp_path, agent={"adk": "weather_agent"}, criteria="evals/test_config.json")
    (project.agent_dir / "my_metrics.py").write_text(METRICS, encoding="utf-8")
    config_path = project.root / "evals" / "test_config.json"
    write_json(config_path, {
        "criteria": {
            "exact_answer": {"threshold": 1.0, "ignore_case": True},
            "tool_calls": 0.0,
            "broken": 0.5,
            "response_match_score": 1,  # a custom metric of ADK's name replaces ADK's metric
            "tool_trajectory_avg_score": 1.0,
        },
        "custom_metrics": {
            "exact_answer": {"code_config": {"name": "agent.my_metrics.exact_answer"}, "description": "정확한 답"},
            "tool_calls": {"codeConfig": {"name": "agent.my_metrics.tool_calls"},  # ADK reads either casing
                           "metricInfo": {"metricName": "x", "metricValueInfo": {"interval": {"minValue": 0, "maxValue": 10}}}},
            "broken": {"code_config": {"name": "agent.my_metrics.broken"}, "unknown_key": "ignored, as by ADK"},
            "response_match_score": {"code_config": {"name": "agent.my_metrics.exact_answer"}},
            "never_named": {"code_config": {"name": "agent.my_metrics.exact_answer"}},
        },
    })
    monkeypatch.setenv("WEATHER_TABLE_VERSION", "2")  # paris now answers differently: it fails in both
    with agent_model_server(monkeypatch) as fake:
        adk_cases = _adk_eval(project, config_path)
        code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out))
        assert fake.responder_errors == []
    assert code == 1, out + err
    ours = project.cases()
    assert set(ours) == set(adk_cases) == {"paris", "seoul_ko", "two_turns"}
    custom = ("exact_answer", "tool_calls", "broken", "response_match_score")
    compared = 0
    for eval_id, adk_case in adk_cases.items():
        theirs = {m["metric_name"]: m for m in adk_case["overall_eval_metric_results"]}
        assert "never_named" not in theirs and "never_named" not in ours[eval_id]["criteria"]
        assert STATUSES[adk_case["final_eval_status"]] == ours[eval_id]["status"], eval_id
        for name in custom:
            mine = ours[eval_id]["criteria"][name]
            assert mine["score"] == theirs[name]["score"], (eval_id, name)
            assert mine["status"] == STATUSES[theirs[name]["eval_status"]], (eval_id, name)
            turns = [next(r for r in inv["eval_metric_results"] if r["metric_name"] == name) for inv in adk_case["eval_metric_result_per_invocation"]]
            assert [(t["score"], STATUSES[t["eval_status"]]) for t in turns] == [(p["score"], p["status"]) for p in mine["per_invocation"]], (eval_id, name)
            # Per-turn details (the function's rubric scores) as ADK records them.
            assert [(t.get("details") or {}).get("rubric_scores") for t in turns] == [p["details"].get("rubric_scores") for p in mine["per_invocation"]], (eval_id, name)
            compared += 1
        # The function saw the same arguments under both callers: ADK's types, threshold
        # cleared, the criterion with its own option, expected turns, no scenario.
        seen = json.loads(ours[eval_id]["criteria"]["exact_answer"]["per_invocation"][0]["details"]["rubric_scores"][1]["rationale"])
        assert seen["types"][0] == "google.adk.evaluation.eval_metrics.EvalMetric"
        assert set(seen["types"][1]) == {"google.adk.evaluation.eval_case.Invocation"}
        assert seen["threshold"] is None and seen["criterion"]["ignore_case"] is True and seen["criterion"]["threshold"] == 1.0
        assert seen["criterion_type"] == "BaseCriterion" and seen["custom_function_path"] == "agent.my_metrics.exact_answer"
        assert seen["expected"] is not None and seen["scenario"] is None
    assert compared == 12
    # The verdicts that make this test able to fail: paris fails exact_answer, ADK's own
    # response_match_score would not have given 0.0, the raising metric is NOT_EVALUATED.
    assert ours["paris"]["criteria"]["exact_answer"]["status"] == "FAILED"
    assert ours["paris"]["criteria"]["response_match_score"]["score"] == 0.0
    assert ours["seoul_ko"]["criteria"]["exact_answer"]["status"] == "PASSED"
    assert ours["seoul_ko"]["criteria"]["tool_calls"]["status"] == "INFORMATIONAL"
    assert ours["seoul_ko"]["criteria"]["broken"]["error"] == "agent.my_metrics.broken raised ValueError: 날씨 데이터가 없습니다"
    warnings = project.results()["suites"][0]["warnings"]
    assert any("custom metric 'never_named' is not named in criteria" in w for w in warnings), warnings
