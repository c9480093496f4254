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


# --- recorded outputs: no agent runs; `agent.` is the agent folder holding the test_config.json


def _invocation(user: str, answer: str, calls: tuple = ()) -> dict:
    return {
        "invocation_id": "i",
        "user_content": {"parts": [{"text": user}], "role": "user"},
        "final_response": {"parts": [{"text": answer}], "role": "model"},
        "intermediate_data": {"tool_uses": [{"name": n, "args": a} for n, a in calls], "tool_responses": [], "intermediate_responses": []},
    }


def recorded_project(tmp_path: Path, package: str, test_config: dict | None = None, suite: dict | None = None) -> Path:
    """An ADK agent folder (as `adk web` lays it out: eval sets inside) with the metric file,
    recorded outputs for its cases, and an evalgate.yaml reading them. `package` names the
    folder (a fresh name per test: Python caches imported modules by name)."""
    root = tmp_path / "project"
    agent = root / package
    (agent / "evals").mkdir(parents=True)
    (agent / "__init__.py").write_text("from . import agent\nfrom .my_metrics import exact_answer as same_answer\n", encoding="utf-8")
    (agent / "agent.py").write_text("root_agent = None  # never run here: the outputs are recorded\n", encoding="utf-8")
    (agent / "my_metrics.py").write_text(METRICS, encoding="utf-8")
    order = _invocation("주문 상태는요?", "주문이 발송되었습니다.", (("track", {"order": "A1"}),))
    write_json(agent / "evals" / "shop.evalset.json", {
        "eval_set_id": "shop",
        "eval_cases": [
            {"eval_id": "order_ko", "conversation": [order]},
            {"eval_id": "late", "conversation": [_invocation("Where is my parcel?", "It arrives Monday.")]},
            {"eval_id": "cancel_plan", "conversation_scenario": {"starting_prompt": "주문을 취소하고 싶어요", "conversation_plan": "Cancel order A1, then say thanks."}},
        ],
    })
    lines = [
        {"eval_set_id": "shop", "eval_id": "order_ko", "invocations": [order]},
        {"eval_set_id": "shop", "eval_id": "late", "invocations": [_invocation("Where is my parcel?", "It arrives Friday.")]},
        {"eval_set_id": "shop", "eval_id": "cancel_plan", "invocations": [
            _invocation("주문을 취소하고 싶어요", "취소했습니다.", (("cancel", {"order": "A1"}),)), _invocation("고마워요", "천만에요.")]},
    ]
    (root / "inference.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines), encoding="utf-8")
    if test_config is not None:
        write_json(agent / "evals" / "test_config.json", test_config)
    body = {"name": "shop", "evalsets": [f"{package}/evals"], "actual": ["inference.jsonl"], **(suite or {})}
    (root / "evalgate.yaml").write_text(yaml.safe_dump({"suites": [body]}, allow_unicode=True), encoding="utf-8")
    return root


def _cases(out: Path) -> dict[str, dict]:
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    return {c["eval_id"]: c for s in results["suites"] for c in s["cases"]}


def test_recorded_outputs_get_adk_arguments_scenario_included(tmp_path, cli):
    root = recorded_project(tmp_path, "shop_a", {
        "criteria": {"exact_answer": 1.0, "tool_calls": 0, "from_init": 1.0},
        "custom_metrics": {"exact_answer": {"code_config": {"name": "agent.my_metrics.exact_answer"}},
                           "from_init": {"code_config": {"name": "agent.same_answer"}},  # a name in the folder's __init__.py
                           "tool_calls": {"code_config": {"name": "agent.my_metrics.tool_calls"}}},
    })
    code, out, err = cli("run", "--config", str(root / "evalgate.yaml"), "--out", str(root / "out"))
    assert code == 1, out + err  # 'late' answers differently
    cases = _cases(root / "out")
    assert {k: c["criteria"]["exact_answer"]["status"] for k, c in cases.items()} == {"order_ko": "PASSED", "late": "FAILED", "cancel_plan": "FAILED"}
    assert {k: c["status"] for k, c in cases.items()} == {"order_ko": "PASSED", "late": "FAILED", "cancel_plan": "FAILED"}
    assert {k: c["criteria"]["from_init"]["status"] for k, c in cases.items()} == {"order_ko": "PASSED", "late": "FAILED", "cancel_plan": "FAILED"}
    seen = json.loads(cases["order_ko"]["criteria"]["exact_answer"]["per_invocation"][0]["details"]["rubric_scores"][1]["rationale"])
    assert seen["users"] == ["주문 상태는요?"] and seen["expected"] == ["주문이 발송되었습니다."] and seen["scenario"] is None
    # A scenario case: no expected turns, ADK's ConversationScenario instead.
    seen = json.loads(cases["cancel_plan"]["criteria"]["exact_answer"]["per_invocation"][1]["details"]["rubric_scores"][1]["rationale"])
    assert seen["expected"] is None and seen["types"][2] is None and seen["types"][3] == "ConversationScenario"
    assert seen["scenario"] == "주문을 취소하고 싶어요" and seen["users"] == ["주문을 취소하고 싶어요", "고마워요"]
    # INFORMATIONAL, async: shown per turn, never a verdict.
    info = cases["cancel_plan"]["criteria"]["tool_calls"]
    assert (info["status"], info["score"], [p["score"] for p in info["per_invocation"]]) == ("INFORMATIONAL", 1.0, [1.0, 0.0])
    assert {p["status"] for p in info["per_invocation"]} == {"INFORMATIONAL"}


def test_a_function_that_fails_is_its_cases_not_evaluated_and_the_run_goes_on(tmp_path, cli):
    root = recorded_project(tmp_path, "shop_b", {
        "criteria": {"exact_answer": 1.0, "broken": 0.5, "not_a_result": 0.5, "verdict_without_turns": 0.5, "nothing_to_say": 0.5},
        "custom_metrics": {name: {"code_config": {"name": f"agent.my_metrics.{name}"}}
                           for name in ("exact_answer", "broken", "not_a_result", "verdict_without_turns", "nothing_to_say")},
    })
    code, out, err = cli("run", "--config", str(root / "evalgate.yaml"), "--out", str(root / "out"))
    assert code == 1, out + err
    assert "Traceback" not in out + err
    cases = _cases(root / "out")
    order = cases["order_ko"]["criteria"]
    assert cases["order_ko"]["status"] == "PASSED"  # exact_answer passed; the rest were not evaluated, as in ADK
    assert {n: order[n]["status"] for n in ("broken", "not_a_result", "verdict_without_turns", "nothing_to_say")} == dict.fromkeys(
        ("broken", "not_a_result", "verdict_without_turns", "nothing_to_say"), "NOT_EVALUATED")
    assert order["broken"]["error"] == "agent.my_metrics.broken raised ValueError: 날씨 데이터가 없습니다"
    assert order["not_a_result"]["error"] == "agent.my_metrics.not_a_result returned dict, not an EvaluationResult (google.adk.evaluation.evaluator)"
    assert order["verdict_without_turns"]["error"] == (
        "agent.my_metrics.verdict_without_turns returned PASSED with 0 per-invocation results for 1 actual invocations; "
        "a verdict needs exactly one per actual invocation")
    # NOT_EVALUATED without per-turn results is allowed (ADK keeps placeholders).
    assert [p["status"] for p in cases["cancel_plan"]["criteria"]["nothing_to_say"]["per_invocation"]] == ["NOT_EVALUATED"] * 2
    assert cases["late"]["status"] == "FAILED"


def test_bad_function_paths_and_signatures_are_one_error_each_before_anything_runs(tmp_path, cli):
    bad = {"keyword_only": "agent.my_metrics.keyword_only", "two_args": "agent.my_metrics.two_args", "constant": "agent.my_metrics.NOT_CALLABLE",
           "no_module": "agent.nowhere.score", "no_function": "agent.my_metrics.exact_answr", "no_dot": "exact_answer",
           "absent_pkg": "not_installed_pkg_xyz.metrics.score"}
    root = recorded_project(tmp_path, "shop_c", {"criteria": dict.fromkeys(bad, 0.5), "custom_metrics": {k: {"code_config": {"name": v}} for k, v in bad.items()}})
    for command in ("validate", "run"):
        args = [command, "--config", str(root / "evalgate.yaml")] + (["--out", str(root / "out")] if command == "run" else [])
        code, out, err = cli(*args, cwd=root)
        assert code == 2, out + err
        assert "Traceback" not in err
    assert not (root / "out" / "results.json").exists()
    lines = [line for line in err.splitlines() if "custom_metrics." in line]
    by_name = {name: next(line for line in lines if f"custom_metrics.{name}.code_config.name" in line) for name in bad}
    assert all(line.startswith("error: shop_c/evals/test_config.json: custom_metrics.") for line in by_name.values()), lines
    assert "takes eval_metric, actual_invocations, expected_invocations, conversation_scenario as keyword-only" in by_name["keyword_only"]
    assert "Take ADK's four arguments by position: def fn(eval_metric, actual_invocations, expected_invocations, conversation_scenario)" in by_name["keyword_only"]
    assert "cannot take ADK's four positional arguments" in by_name["two_args"]
    assert "'agent.my_metrics.NOT_CALLABLE' is a value of type int, not a function" in by_name["constant"]
    assert "cannot import module 'agent.nowhere'" in by_name["no_module"] and "(no shop_c/nowhere.py in the agent folder)" in by_name["no_module"]
    assert "has no 'exact_answr'" in by_name["no_function"] and "Did you mean 'exact_answer'?" in by_name["no_function"]
    assert "is not a module path and a function name" in by_name["no_dot"]
    assert "cannot import module 'not_installed_pkg_xyz.metrics'" in by_name["absent_pkg"] and "PYTHONPATH" in by_name["absent_pkg"]
    assert len(lines) == len(bad)


def test_suite_custom_metrics_in_evalgate_yaml(tmp_path, cli):
    """Our own config is strict; `agent.` needs an agent folder there, absolute names use the
    config's folder; a custom threshold may be any number (the function decides)."""
    root = recorded_project(tmp_path, "shop_d", suite={
        "criteria": {"calls": 5, "exact_answer": {"threshold": 1.0, "ignore_case": True}},
        "custom_metrics": {"calls": {"code_config": {"name": "shop_d.my_metrics.tool_calls"}, "description": "도구 호출 수"},
                           "exact_answer": {"code_config": {"name": "shop_d.my_metrics.exact_answer"},
                                            "metric_info": {"metric_value_info": {"interval": {"min_value": 0, "max_value": 1}}}}},
    })
    code, out, err = cli("run", "--config", str(root / "evalgate.yaml"), "--out", str(root / "out"))
    assert code == 1, out + err
    cases = _cases(root / "out")
    assert cases["order_ko"]["criteria"]["calls"]["status"] == "INFORMATIONAL" and cases["order_ko"]["criteria"]["calls"]["threshold"] == 5
    seen = json.loads(cases["late"]["criteria"]["exact_answer"]["per_invocation"][0]["details"]["rubric_scores"][1]["rationale"])
    assert seen["criterion"] == {"threshold": 1.0, "ignore_case": True, "include_intermediate_responses_in_final": False}

    config = root / "evalgate.yaml"
    suite = yaml.safe_load(config.read_text(encoding="utf-8"))["suites"][0]
    suite["custom_metrics"] = {"calls": {"code_conf": {"name": "x.y"}}}
    config.write_text(yaml.safe_dump({"suites": [suite]}, allow_unicode=True), encoding="utf-8")
    code, out, err = cli("validate", "--config", str(config))
    assert code == 2 and "suites[0].custom_metrics.calls.code_conf" in err and "Did you mean 'code_config'?" in err, err

    suite["criteria"] = {"calls": 5}
    suite["custom_metrics"] = {"calls": {"code_config": {"name": "agent.my_metrics.tool_calls"}}, "unused": {"code_config": {"name": "shop_d.my_metrics.tool_calls"}}}
    config.write_text(yaml.safe_dump({"suites": [suite]}, allow_unicode=True), encoding="utf-8")
    code, out, err = cli("validate", "--config", str(config))
    assert code == 2, err
    assert "suites[0].custom_metrics.unused" in err and "custom metric 'unused' is not named in the suite's criteria, so it would never run" in err
    # evalgate.yaml sits outside the agent folder and the suite runs no agent: `agent.` names nothing.
    suite["custom_metrics"].pop("unused")
    config.write_text(yaml.safe_dump({"suites": [suite]}, allow_unicode=True), encoding="utf-8")
    code, out, err = cli("validate", "--config", str(config))
    assert code == 2 and "suites[0].custom_metrics.calls.code_config.name" in err and "this suite has no agent folder" in err, err

    suite["criteria"] = "shop_d/evals/test_config.json"
    config.write_text(yaml.safe_dump({"suites": [suite]}, allow_unicode=True), encoding="utf-8")
    code, out, err = cli("validate", "--config", str(config))
    assert code == 2 and "custom_metrics go with the suite's inline criteria" in err, err


def test_without_google_adk_custom_metrics_are_a_setup_error(tmp_path, cli, monkeypatch):
    root = recorded_project(tmp_path, "shop_e", {"criteria": {"exact_answer": 1.0}, "custom_metrics": {"exact_answer": {"code_config": {"name": "agent.my_metrics.exact_answer"}}}})
    monkeypatch.setitem(sys.modules, "google.adk", None)  # what the import system reads as "not installed"
    code, out, err = cli("validate", "--config", str(root / "evalgate.yaml"))
    assert code == 2, out + err
    assert "'exact_answer' needs google.adk, which is not installed" in err and "pip install 'adk-evalgate[adk]'" in err


def test_several_runs_pool_turns_and_informational_stays_informational(tmp_path, cli):
    root = recorded_project(tmp_path, "shop_f", {
        "criteria": {"exact_answer": 1.0, "tool_calls": 0},
        "custom_metrics": {"exact_answer": {"code_config": {"name": "agent.my_metrics.exact_answer"}},
                           "tool_calls": {"code_config": {"name": "agent.my_metrics.tool_calls"}}},
    })
    order = _invocation("주문 상태는요?", "주문이 발송되었습니다.", (("track", {"order": "A1"}),))
    other = _invocation("주문 상태는요?", "모르겠습니다.")
    records = [{"eval_set_id": "shop", "eval_id": "order_ko", "run": 1, "invocations": [order]},
               {"eval_set_id": "shop", "eval_id": "order_ko", "run": 2, "invocations": [other]}]
    (root / "inference.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    suite = yaml.safe_load((root / "evalgate.yaml").read_text(encoding="utf-8"))["suites"][0]
    (root / "shop_f" / "evals" / "shop.evalset.json").write_text(json.dumps({"eval_set_id": "shop", "eval_cases": [
        {"eval_id": "order_ko", "conversation": [order]}]}, ensure_ascii=False), encoding="utf-8")
    (root / "evalgate.yaml").write_text(yaml.safe_dump({"suites": [suite]}, allow_unicode=True), encoding="utf-8")
    code, out, err = cli("run", "--config", str(root / "evalgate.yaml"), "--out", str(root / "out"))
    assert code == 1, out + err
    case = _cases(root / "out")["order_ko"]
    assert (case["criteria"]["exact_answer"]["runs"], case["criteria"]["exact_answer"]["status"]) == ([1.0, 0.0], "FAILED")
    info = case["criteria"]["tool_calls"]
    assert (info["runs"], info["score"], info["status"]) == ([1.0, 0.0], 0.5, "INFORMATIONAL")


def test_an_unknown_criterion_points_at_custom_metrics(tmp_path, cli):
    root = recorded_project(tmp_path, "shop_g", {
        "criteria": {"exact_answr": 1.0, "my_new_metric": 0.5},
        "custom_metrics": {"exact_answer": {"code_config": {"name": "agent.my_metrics.exact_answer"}}},
    })
    code, out, err = cli("validate", "--config", str(root / "evalgate.yaml"))
    assert code == 2, out + err
    typo = next(line for line in err.splitlines() if "criteria.exact_answr" in line)
    assert typo.endswith("unknown criterion 'exact_answr'. Did you mean the custom metric 'exact_answer'?"), typo
    new = next(line for line in err.splitlines() if "criteria.my_new_metric" in line)
    assert new.endswith("A custom metric needs an entry in custom_metrics (code_config: {name: module.fn})."), new
