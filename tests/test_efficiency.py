"""ADK 2.13's efficiency metrics: evalgate's values equal ADK's own evaluators' and `adk eval`'s.

Tables of invocations (as ADK JSON) are validated by ADK's models and by ours and scored by
ADK's efficiency evaluator classes and by `evalgate.efficiency`; values, per turn and per
case, must be equal (==), details field by field. Then: they are informational everywhere
(never a status, a count or a gate), the config accepts them without a threshold and refuses
one, and end to end a real ADK agent gives the same values under `adk eval` and `evalgate run`.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import pytest

pytest.importorskip("google.adk")

from google.adk.evaluation import _efficiency_evaluators as adk_eff  # noqa: E402
from google.adk.evaluation import eval_case as adk_eval_case  # noqa: E402

from evalgate import adk, efficiency  # noqa: E402
from evalgate.engine import CaseInput, score_case  # noqa: E402
from evalgate.results import Status  # noqa: E402

ADK_EVALUATORS = {
    efficiency.TOOL_CALLS: adk_eff._ToolCallCountV1Evaluator,
    efficiency.MODEL_CALLS: adk_eff._InferenceCallCountV1Evaluator,
    efficiency.TOKENS: adk_eff._TokenUsageV1Evaluator,
    efficiency.DURATION: adk_eff._InvocationDurationV1Evaluator,
}

# --- building invocations ------------------------------------------------------------------


def _call(name: str, **args: Any) -> dict:
    return {"function_call": {"name": name, "args": args}}


def _event(author: str = "agent", parts: Optional[list] = None, usage: Optional[dict] = None, model: Optional[str] = None) -> dict:
    e: dict[str, Any] = {"author": author}
    if parts is not None:
        e["content"] = {"role": "model", "parts": parts}
    if usage is not None:
        e["usage_metadata"] = usage
    if model is not None:
        e["model_version"] = model
    return e


def _inv(events: Any = None, *, legacy: Optional[list] = None, duration=None, model=None, tool=None, text: str = "안녕하세요") -> dict:
    d: dict[str, Any] = {
        "invocation_id": "i",
        "user_content": {"role": "user", "parts": [{"text": text}]},
        "final_response": {"role": "model", "parts": [{"text": "東京は晴れです"}]},
    }
    if events is not None:
        d["intermediate_data"] = {"invocation_events": events}
    if legacy is not None:
        d["intermediate_data"] = {"tool_uses": [{"name": n, "args": {}} for n in legacy], "tool_responses": [], "intermediate_responses": []}
    for key, value in (("duration", duration), ("model_duration", model), ("tool_duration", tool)):
        if value is not None:
            d[key] = value
    return d


U = {"prompt_token_count": 100, "candidates_token_count": 15}
RICH = {"prompt_token_count": 1200, "candidates_token_count": 40, "thoughts_token_count": 33, "cached_content_token_count": 800,
        "tool_use_prompt_token_count": 7, "total_token_count": 99999}
CAMEL = {"promptTokenCount": 9, "candidatesTokenCount": 4, "thoughtsTokenCount": 2}

TABLE: dict[str, list[dict]] = {
    "no invocations": [],
    "no intermediate data": [_inv()],
    "legacy tool_uses": [_inv(legacy=["a", "b"], duration=1.5)],
    "one model call, a tool, the final response": [
        _inv([_event(parts=[_call("get_weather", city="서울")], usage=U, model="m"), _event(parts=[{"function_response": {"name": "get_weather", "response": {}}}]),
              _event(usage=U, model="m")], duration=2.0, model=1.2, tool=0.3),
    ],
    "model version only, no usage": [_inv([_event(model="m"), _event(model="m")], duration=0.5, model=0.2, tool=0.0)],
    "rich usage (thoughts, cache, tool-use prompt; backend total ignored)": [_inv([_event(usage=RICH), _event(usage=U)])],
    "camelCase usage": [_inv([_event(usage=CAMEL, model="m")])],
    "empty usage object is a model call with no tokens": [_inv([_event(usage={})])],
    "only cached tokens: no total": [_inv([_event(usage={"cached_content_token_count": 5})])],
    "tokens on one turn of four": [_inv([_event(usage={"prompt_token_count": 100, "candidates_token_count": 15})]), _inv([]), _inv([]), _inv([])],
    "thoughts on some turns only": [_inv([_event(usage=RICH)]), _inv([_event(usage=U)]), _inv([_event(usage=CAMEL)])],
    "model calls on some turns, legacy others": [_inv([_event(model="a"), _event(usage=U)]), _inv(legacy=["x"]), _inv([_event(model="b")])],
    "framework clamped at zero": [_inv([], duration=1.0, model=0.8, tool=0.3)],
    "framework rounded": [_inv([], duration=1.0004, model=0.1, tool=0.2), _inv([], duration=0.333, model=0.111, tool=0.1)],
    "duration without the split": [_inv([], duration=3.25)],
    "model part missing": [_inv([], duration=3.0, tool=1.0)],
    "split without duration is n/a": [_inv([], model=1.0, tool=1.0)],
    "untimed turns left out of the mean": [_inv([], duration=1.0, model=0.5, tool=0.25), _inv([]), _inv([], duration=2.0, model=1.0, tool=0.5)],
    "three-decimal means": [_inv([], duration=0.001, model=0.0, tool=0.0), _inv([], duration=0.002, model=0.001, tool=0.0),
                            _inv([], duration=0.002, model=0.001, tool=0.001)],
    "tool calls in several events and parts": [
        _inv([_event(parts=[_call("a"), _call("b", x=1)], usage=U), _event(parts=[{"text": "thinking"}, _call("c")]), _event(author="sub", parts=[_call("a")])]),
        _inv([_event(parts=[{"text": "plain"}], usage=U)]),
    ],
}


def _adk(name: str, invocations: list[dict]):
    actual = [adk_eval_case.Invocation.model_validate(copy.deepcopy(d)) for d in invocations]
    return ADK_EVALUATORS[name]().evaluate_invocations(actual, None)


def _theirs_details(result, name: str, per: Any = None) -> dict:
    holder = per if per is not None else result
    field = {efficiency.TOKENS: "token_usage_details", efficiency.DURATION: "duration_details"}.get(name)
    if field is None:
        return {}
    if per is None:
        field = "overall_" + field
    value = getattr(holder, field)
    return value.model_dump() if value is not None else {}


@pytest.mark.parametrize("label", list(TABLE))
@pytest.mark.parametrize("name", efficiency.METRICS)
def test_values_equal_adks_evaluators(label, name):
    invocations = TABLE[label]
    ours = efficiency.compute_one([adk.Invocation.model_validate(copy.deepcopy(d)) for d in invocations])[name]
    theirs = _adk(name, invocations)
    assert theirs.overall_eval_status.name == "INFORMATIONAL"
    assert ours.value == theirs.overall_score, label
    assert [p.value for p in ours.per_invocation] == [p.score for p in theirs.per_invocation_results], label
    assert all(p.eval_status.name == "INFORMATIONAL" for p in theirs.per_invocation_results)
    if invocations:
        assert ours.details == _theirs_details(theirs, name), label
        for mine, adks in zip(ours.per_invocation, theirs.per_invocation_results):
            assert mine.details == _theirs_details(theirs, name, adks), label


def test_the_table_is_not_trivial():
    """Each metric meets a None, a zero and a fraction somewhere in the table, so equality means something."""
    values: dict[str, set] = {n: set() for n in efficiency.METRICS}
    for invocations in TABLE.values():
        for name, result in efficiency.compute_one([adk.Invocation.model_validate(d) for d in invocations]).items():
            values[name].add(result.value)
            values[name].update(p.value for p in result.per_invocation)
    for name, seen in values.items():
        assert None in seen or name == efficiency.TOOL_CALLS, name
        assert any(v is not None and v != int(v) for v in seen), name
    assert 28.75 in values[efficiency.TOKENS]  # ADK's observed [115, None, None, None] -> 28.75


def test_a_wrong_value_would_show():
    """The comparison can fail: one token more on one event changes the value ADK's class gives."""
    invocations = TABLE["thoughts on some turns only"]
    changed = copy.deepcopy(invocations)
    changed[0]["intermediate_data"]["invocation_events"][0]["usage_metadata"]["thoughts_token_count"] += 1
    ours = efficiency.compute_one([adk.Invocation.model_validate(d) for d in changed])[efficiency.TOKENS]
    assert ours.value != _adk(efficiency.TOKENS, invocations).overall_score


def test_specific_values():
    (result,) = [efficiency.compute_one([adk.Invocation.model_validate(d) for d in TABLE["one model call, a tool, the final response"]])]
    assert result[efficiency.TOOL_CALLS].value == 1.0
    assert result[efficiency.MODEL_CALLS].value == 2.0
    assert result[efficiency.TOKENS].value == 230.0
    assert result[efficiency.DURATION].details == {"total_seconds": 2.0, "model_seconds": 1.2, "tool_seconds": 0.3, "framework_seconds": 0.5}
    rich = efficiency.compute_one([adk.Invocation.model_validate(d) for d in TABLE["rich usage (thoughts, cache, tool-use prompt; backend total ignored)"]])
    assert rich[efficiency.TOKENS].details == {
        "total_tokens": 1395, "input_tokens": 1307, "prompt_tokens": 1300, "cached_tokens": 800, "tool_use_tokens": 7,
        "output_tokens": 88, "candidates_tokens": 55, "reasoning_tokens": 33,
    }


# --- runs and the engine ---------------------------------------------------------------------


def _invocations(label: str) -> list[adk.Invocation]:
    return [adk.Invocation.model_validate(d) for d in TABLE[label]]


def test_several_runs_pool_their_invocations_and_keep_each_runs_value():
    a, b = _invocations("thoughts on some turns only"), _invocations("tokens on one turn of four")
    result = efficiency.compute([a, None, b])
    pooled = efficiency.compute_one(a + b)
    for name in efficiency.METRICS:
        assert result[name].value == pooled[name].value
        assert result[name].runs == [efficiency.compute_one(a)[name].value, None, efficiency.compute_one(b)[name].value]
    assert efficiency.compute([a])[efficiency.TOKENS].runs is None  # one run: ADK's result, nothing more
    assert efficiency.compute([None]) == {}


def test_the_engine_stores_them_and_they_never_decide():
    from evalgate.criteria.tool_trajectory import ToolTrajectory
    from evalgate.engine import AgentRun
    from evalgate.results import CaseResult

    actual = _invocations("one model call, a tool, the final response")
    expected = [adk.Invocation.model_validate(_inv([_event(parts=[_call("get_weather", city="Paris")])]))]
    case = CaseInput("s", "c", {"tool_trajectory_avg_score": ToolTrajectory(threshold=1.0)}, "d", expected=expected, actual=actual)
    result = score_case(case)
    assert result.status is Status.FAILED  # the trajectory decides; efficiency is beside it
    assert set(result.efficiency) == set(efficiency.METRICS)
    assert set(result.criteria) == {"tool_trajectory_avg_score"}
    assert result.efficiency[efficiency.TOKENS].value == 230.0
    # Round trip through JSON, and absent where there is nothing to compute.
    assert CaseResult.model_validate_json(result.model_dump_json()) == result
    no_actual = score_case(CaseInput("s", "c", {}, "d", expected=expected, actual=None))
    assert "efficiency" not in no_actual.model_dump(mode="json")
    failed = score_case(replace_runs(case, [AgentRun(None, "boom")]))
    assert failed.efficiency == {}


def replace_runs(case: CaseInput, runs: list) -> CaseInput:
    from dataclasses import replace

    return replace(case, runs=runs)


def test_the_gate_ignores_them(tmp_path):
    """Two runs that differ only in efficiency compare as equal: no regression, no change."""
    from evalgate.gate import GatePolicy, Verdict, compare
    from evalgate.results import RunResults

    from result_builders import case as _case, crit, inv, run_of
    from evalgate.results import Counts, RunInfo, SuiteResult, CriterionSpec

    def run(tokens: float):
        c = _case("s", "c", {"response_match_score": crit(0.5, (0.9, {}))}, [inv("q", "a")])
        c.efficiency = efficiency.compute([_invocations("rich usage (thoughts, cache, tool-use prompt; backend total ignored)")])
        c.efficiency[efficiency.TOKENS].value = tokens
        suite = SuiteResult(name="s", status=Status.PASSED, not_evaluated_policy="warn", counts=Counts.of([c]),
                            criteria={"response_match_score": CriterionSpec(threshold=0.5, version="1")}, cases=[c])
        return run_of([suite], "sha256:c", RunInfo())

    base, cur = run(10.0), run(10_000.0)
    assert isinstance(base, RunResults)
    comparison = compare(base, cur, GatePolicy())
    assert comparison.verdict is Verdict.PASS, comparison
    names = {row.criterion for s in comparison.suites for row in s.criteria}
    assert names == {"response_match_score"}
    assert not any(s.changes for s in comparison.suites)


# --- config ----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, {}, True])
def test_named_without_a_threshold_is_accepted(value):
    from evalgate.config import parse_criteria

    parsed = parse_criteria({"token_usage_v1": value, "response_match_score": 0.8}, "evalgate.yaml", lambda *loc: ".".join(map(str, loc)))
    assert set(parsed) == {"response_match_score"}  # always reported; never a criterion


@pytest.mark.parametrize(
    "value, what",
    [
        (0.5, "'invocation_duration_v1' takes no threshold (0.5)"),
        ({"threshold": 10}, "'invocation_duration_v1' takes no threshold (10)"),
        ({"max": 3}, "'invocation_duration_v1' takes no options (max)"),
        (False, "'invocation_duration_v1' must be null, {} or true, not False"),
    ],
)
def test_a_threshold_is_a_config_error(tmp_path, cli, value, what):
    import yaml

    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "a.evalset.json").write_text(json.dumps({"eval_set_id": "a", "eval_cases": []}), encoding="utf-8")
    config = tmp_path / "evalgate.yaml"
    config.write_text(yaml.safe_dump({"suites": [{"name": "s", "evalsets": ["evals"], "actual": ["out.jsonl"],
                                                  "criteria": {"response_match_score": 0.8, "invocation_duration_v1": value}}]}), encoding="utf-8")
    code, out, err = cli("validate", "--config", str(config))
    assert code == 2, out + err
    assert what in err
    assert "suites[0].criteria.invocation_duration_v1" in err and "evalgate.yaml" in err
    assert "Remove it; efficiency metrics are informational" in err
    assert "Traceback" not in err


def test_a_threshold_in_test_config_json_is_an_error_naming_the_file(tmp_path):
    from evalgate.config import read_test_config
    from evalgate.errors import InputError

    path = tmp_path / "test_config.json"
    path.write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0, "tool_call_count_v1": 3}}), encoding="utf-8")
    with pytest.raises(InputError) as e:
        read_test_config(path)
    text = str(e.value)
    assert "test_config.json" in text and "criteria.tool_call_count_v1" in text and "takes no threshold (3)" in text


def test_a_typo_suggests_the_metric():
    from evalgate.config import parse_criteria
    from evalgate.errors import InputError

    with pytest.raises(InputError) as e:
        parse_criteria({"token_usage": {}}, "evalgate.yaml", lambda *loc: ".".join(map(str, loc)))
    assert "Did you mean 'token_usage_v1'?" in str(e.value)


# --- end to end: `adk eval` and `evalgate run` on the same agent -------------------------------

sys.path.insert(0, str(Path(__file__).parent))


def _usage_model(body: Any):
    """The weather agent's scripted model (agent_model.respond), reporting richer usage: the
    counts follow the request's shape (so both tools see the same numbers), with thoughts,
    a cache and a tool-use prompt on some calls and a backend total ADK ignores."""
    import agent_model

    reply = agent_model.respond(body)
    contents = (body or {}).get("contents") or []
    answered_tool = any("functionResponse" in p for p in (contents[-1].get("parts") or [])) if contents else False
    usage = {"promptTokenCount": 100 * len(contents) + 7, "candidatesTokenCount": 11 if answered_tool else 5, "totalTokenCount": 1}
    if answered_tool:
        usage.update(thoughtsTokenCount=13, toolUsePromptTokenCount=3)
    else:
        usage["cachedContentTokenCount"] = 64
    reply.body["usageMetadata"] = usage
    return reply


def test_values_equal_adk_eval(tmp_path, monkeypatch, cli):
    """A real ADK agent with Python tools, a fake Gemini at the wire: every efficiency value
    `evalgate run` stores equals the one `adk eval` writes in its eval history (durations by
    their structure), and the case statuses agree."""
    from agent_project import agent_model_server, make_project

    config = {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}
    project = make_project(tmp_path, agent={"adk": "weather_agent"}, criteria="evals/test_config.json")
    (project.root / "evals" / "test_config.json").write_text(json.dumps(config), encoding="utf-8")
    monkeypatch.setenv("WEATHER_TABLE_VERSION", "2")  # paris fails response_match_score in both
    with agent_model_server(monkeypatch, latency=0.02) as fake:  # every model call takes a moment
        fake.responder = _usage_model
        env = {k: v for k, v in os.environ.items() if k != "GOOGLE_GENAI_USE_VERTEXAI"}
        done = subprocess.run(
            [str(Path(sys.executable).parent / "adk"), "eval", str(project.agent_dir), str(project.evalset),
             "--config_file_path", str(project.root / "evals" / "test_config.json")],
            cwd=project.root, env=env, capture_output=True, text=True, timeout=300,
        )
        assert "Eval Run Summary" in done.stdout, done.stdout[-2000:] + done.stderr[-3000:]
        code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out))
        assert fake.responder_errors == []
    assert code == 1, out + err
    (history,) = (project.agent_dir / ".adk" / "eval_history").glob("*.evalset_result.json")
    theirs = {c["eval_id"]: c for c in json.loads(history.read_text(encoding="utf-8"))["eval_case_results"]}
    ours = project.cases()
    assert set(theirs) == set(ours) == {"paris", "seoul_ko", "two_turns"}
    statuses = {1: "PASSED", 2: "FAILED", 3: "NOT_EVALUATED"}
    assert {k: statuses[c["final_eval_status"]] for k, c in theirs.items()} == {k: c["status"] for k, c in ours.items()}
    assert ours["paris"]["status"] == "FAILED"
    for eval_id, case in theirs.items():
        adks = {m["metric_name"]: m for m in case["overall_eval_metric_results"] if m["metric_name"] in efficiency.METRICS}
        assert set(adks) == set(efficiency.METRICS) and all(m["eval_status"] == 4 for m in adks.values())
        mine = ours[eval_id]["efficiency"]
        for name in (efficiency.TOOL_CALLS, efficiency.MODEL_CALLS, efficiency.TOKENS):
            assert mine[name]["value"] == adks[name]["score"], (eval_id, name)
        assert mine[efficiency.TOKENS]["details"] == adks[efficiency.TOKENS]["details"]["token_usage_details"], eval_id
        turns = [p for p in case["eval_metric_result_per_invocation"]]
        for name in efficiency.METRICS:
            per_adk = [next(m for m in p["eval_metric_results"] if m["metric_name"] == name) for p in turns]
            assert len(mine[name]["per_invocation"]) == len(per_adk), (eval_id, name)
            if name != efficiency.DURATION:
                assert [p.get("value") for p in mine[name]["per_invocation"]] == [m["score"] for m in per_adk], (eval_id, name)
        # Durations: measured on both sides, so equal in structure, not in value.
        for details in (mine[efficiency.DURATION]["details"], adks[efficiency.DURATION]["details"]["duration_details"]):
            assert all(details[f] is not None for f in efficiency.DURATION_FIELDS), (eval_id, details)
            assert details["framework_seconds"] >= 0 and details["total_seconds"] > 0
            assert details["model_seconds"] > 0  # the agent awaited the model on every turn
        assert mine[efficiency.DURATION]["value"] == mine[efficiency.DURATION]["details"]["total_seconds"]
        assert mine[efficiency.DURATION]["value"] is not None and adks[efficiency.DURATION]["score"] is not None
    # Not vacuous: tools called, several model calls, thoughts and caches counted; Korean case included.
    seoul = ours["seoul_ko"]["efficiency"]
    assert seoul[efficiency.TOOL_CALLS]["value"] == 1.0 and seoul[efficiency.MODEL_CALLS]["value"] == 2.0
    assert seoul[efficiency.TOKENS]["details"]["reasoning_tokens"] == 13 and seoul[efficiency.TOKENS]["details"]["cached_tokens"] == 64
    assert ours["two_turns"]["efficiency"][efficiency.TOOL_CALLS]["per_invocation"] != []
    # The agent's invocations carry ADK's duration split, as ADK's own do.
    for record in project.inference():
        for inv in record["invocations"]:
            assert inv["duration"] > 0 and inv["model_duration"] > 0 and inv["tool_duration"] is not None
    # And the reports show them as values, never as a verdict.
    assert "efficiency per turn (informational): " in out
    assert "efficiency" not in json.dumps(project.results()["suites"][0]["criteria"])
    from google.adk.evaluation.eval_result import EvalSetResult

    text = (project.out / "adk" / "weather" / "weather.evalset_result.json").read_text(encoding="utf-8")
    loaded = {c.eval_id: c for c in EvalSetResult.model_validate_json(text).eval_case_results}  # loadable by ADK
    tokens = next(m for m in loaded["seoul_ko"].overall_eval_metric_results if m.metric_name == efficiency.TOKENS)
    assert tokens.threshold is None and tokens.details.token_usage_details.model_dump() == mine_tokens(ours, "seoul_ko")
    adk_ours = json.loads(text)
    seoul_adk = next(c for c in adk_ours["eval_case_results"] if c["eval_id"] == "seoul_ko")
    assert [(m["metric_name"], m["eval_status"]) for m in seoul_adk["overall_eval_metric_results"]][-4:] == [(n, 4) for n in efficiency.METRICS]
    html = (project.out / "report.html").read_text(encoding="utf-8")
    assert "Efficiency per turn" in html and '"eff":' in html

    # ADK's eval history read back as recorded outputs: the same invocations, so every value
    # equals ADK's exactly, the measured seconds included.
    import yaml

    recorded = project.root / "recorded.yaml"
    recorded.write_text(yaml.safe_dump({"suites": [{"name": "recorded", "evalsets": ["evals"], "actual": [str(history)],
                                                    "criteria": "evals/test_config.json"}]}), encoding="utf-8")
    code, out, err = cli("run", "--config", str(recorded), "--out", str(project.root / "recorded-out"))
    assert code == 1, out + err
    again = project.cases(project.root / "recorded-out")
    for eval_id, case in theirs.items():
        adks = {m["metric_name"]: m for m in case["overall_eval_metric_results"] if m["metric_name"] in efficiency.METRICS}
        for name in efficiency.METRICS:
            assert again[eval_id]["efficiency"][name]["value"] == adks[name]["score"], (eval_id, name)
        assert again[eval_id]["efficiency"][efficiency.DURATION]["details"] == adks[efficiency.DURATION]["details"]["duration_details"]
        assert again[eval_id]["status"] == ours[eval_id]["status"]


def mine_tokens(ours: dict, eval_id: str) -> dict:
    return ours[eval_id]["efficiency"][efficiency.TOKENS]["details"]


def test_the_config_schema_takes_them_without_a_threshold():
    jsonschema = pytest.importorskip("jsonschema")
    from evalgate.config import json_schema

    schema = json_schema()

    def config(value: Any) -> dict:
        return {"suites": [{"name": "s", "evalsets": "e", "actual": "a", "criteria": {"token_usage_v1": value, "response_match_score": 0.8}}]}

    for ok in ({}, None, True):
        jsonschema.validate(config(ok), schema)
    for wrong in (0.5, {"threshold": 1}, False):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(config(wrong), schema)


def test_the_terminal_shows_one_line_per_suite():
    from evalgate.reports.terminal import summary_table
    from evalgate.results import Counts, RunInfo, SuiteResult

    from result_builders import case as _case, crit, inv, run_of

    def suite(name: str, with_efficiency: bool) -> SuiteResult:
        c = _case("s", "c", {"response_match_score": crit(0.5, (0.9, {}))}, [inv("q", "a")])
        if with_efficiency:
            c.efficiency = efficiency.compute([_invocations("one model call, a tool, the final response")])
        return SuiteResult(name=name, status=Status.PASSED, not_evaluated_policy="warn", counts=Counts.of([c]), cases=[c])

    text = summary_table(run_of([suite("agent", True), suite("recorded", False)], "sha256:c", RunInfo()), color=False)
    line = "  efficiency per turn (informational): 1.00 tool calls, 2.00 model calls, 230 tokens, time 2.00 s (model 1.20, tools 0.30, framework 0.50)"
    assert text.count("efficiency per turn") == 1
    assert line in text.splitlines()
    assert text.splitlines().index(line) < text.splitlines().index("suite recorded")


def test_the_html_report_shows_suite_and_case_values():
    from evalgate.gate import GatePolicy, compare
    from evalgate.reports.html import render_html
    from evalgate.results import Counts, RunInfo, SuiteResult

    from result_builders import case as _case, crit, inv, run_of

    c = _case("s", "東京", {"response_match_score": crit(0.5, (0.9, {}), (0.8, {}))}, [inv("q", "a"), inv("q2", "a2")])
    c.efficiency = efficiency.compute([_invocations("untimed turns left out of the mean")[:2]])
    run = run_of([SuiteResult(name="agent", status=Status.PASSED, not_evaluated_policy="warn", counts=Counts.of([c]), cases=[c])], "sha256:c", RunInfo())
    html = render_html(compare(None, run, GatePolicy()), run)
    assert "<h2>Efficiency per turn</h2>" in html
    # No model call on either turn (0, not n/a: the events were recorded), no tokens reported,
    # and the untimed second turn left out of the seconds.
    assert '<td class="num">0.00</td><td class="num">0.00</td><td class="num">n/a</td><td class="num">1.00 s (model 0.50, tools 0.25, framework 0.25)</td>' in html
    data = json.loads(html.split('<script type="application/json" id="evalgate-data">', 1)[1].split("</script>", 1)[0])
    (case,) = data["cases"]
    assert case["eff"] == {
        "case": ["0.00", "0.00", "n/a", "1.00 s (model 0.50, tools 0.25, framework 0.25)"],
        "per": [["0.00", "0.00", "n/a", "1.00 s (model 0.50, tools 0.25, framework 0.25)"], ["0.00", "0.00", "n/a", "n/a"]],
        "runs": 0,
    }


def test_criteria_of_only_efficiency_metrics_decide_nothing_and_are_refused(tmp_path):
    from evalgate.config import read_test_config
    from evalgate.errors import InputError

    path = tmp_path / "test_config.json"
    path.write_text(json.dumps({"criteria": {"token_usage_v1": {}, "tool_call_count_v1": None}}), encoding="utf-8")
    with pytest.raises(InputError) as e:
        read_test_config(path)
    assert "names only informational metrics" in str(e.value)
