"""The report writers: JUnit XML, ADK eval history (loaded back by ADK), terminal summary."""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET

import pytest

from evalgate import adk
from evalgate.adk import (
    Content,
    FunctionCall,
    FunctionResponse,
    IntermediateData,
    Invocation,
    InvocationEvent,
    InvocationEvents,
    Part,
)
from evalgate.criteria.base import Criterion, Outcome
from evalgate.criteria.response_match import ResponseMatch
from evalgate.criteria.tool_trajectory import ToolTrajectory
from evalgate.engine import CaseInput, SuitePlan, aggregate, case_status, suite_status
from evalgate.reports import format_scores
from evalgate.reports.adk_results import adk_eval_set_results, safe_name, write_adk_results
from evalgate.reports.junit import junit_xml
from evalgate.reports.terminal import MAX_FAILED, MAX_ID, Progress, display_width, summary_table, truncate
from evalgate.results import (
    CaseResult,
    Counts,
    CriterionResult,
    InvocationSummary,
    RunInfo,
    RunResults,
    Status,
    SuiteResult,
)

NO_OUTPUTS = "no actual outputs for this case"
LONG_ID = "an_eval_case_whose_id_goes_on_and_on_well_past_any_reasonable_column_width"

# --- building results by hand --------------------------------------------------------


def _invocation(user: str, response: str, tools=(), shape: str = "data", id: str = "") -> Invocation:
    """An invocation whose tool calls are in either intermediate-data shape."""
    calls = [FunctionCall(name=n, args=a) for n, a in tools]
    replies = [FunctionResponse(name=n, response={"ok": True}) for n, _ in tools]
    if shape == "data":
        data = IntermediateData(tool_uses=calls, tool_responses=replies)
    else:
        events = []
        for call, reply in zip(calls, replies):
            events.append(InvocationEvent(author="agent", content=Content(parts=[Part(function_call=call)])))
            events.append(InvocationEvent(author="tool", content=Content(parts=[Part(function_response=reply)])))
        data = InvocationEvents(invocation_events=events)
    return Invocation(
        invocation_id=id,
        user_content=Content.from_text(user, "user"),
        final_response=Content.from_text(response, "model"),
        intermediate_data=data,
    )


def _summary(actual: Invocation, expected: Invocation | None) -> InvocationSummary:
    def tools(inv: Invocation) -> list[dict]:
        return [{"name": c.name, "args": c.args} for c in inv.tool_calls()]

    return InvocationSummary(
        user=actual.user_text(),
        expected_response=expected.final_text() if expected else None,
        actual_response=actual.final_text(),
        expected_tools=tools(expected) if expected else None,
        actual_tools=tools(actual),
    )


def _scored(threshold: float, *scores: float | None) -> CriterionResult:
    return aggregate([Outcome(s, error=None if s is not None else "judge timed out") for s in scores], threshold)


def _unscored(threshold: float, error: str = NO_OUTPUTS) -> CriterionResult:
    return CriterionResult(score=None, status=Status.NOT_EVALUATED, threshold=threshold, error=error)


def _pair(
    eval_set_id: str,
    eval_id: str,
    criteria: dict[str, Criterion],
    results: dict[str, CriterionResult],
    actual: list[Invocation] | None,
    expected: list[Invocation] | None,
    session: dict | None = None,
) -> tuple[CaseInput, CaseResult]:
    given = CaseInput(
        eval_set_id=eval_set_id,
        eval_id=eval_id,
        criteria=criteria,
        expected_digest="sha256:0",
        expected=expected,
        actual=actual,
        session=session or {},
    )
    summaries = [_summary(a, expected[i] if expected else None) for i, a in enumerate(actual or [])]
    result = CaseResult(
        eval_set_id=eval_set_id,
        eval_id=eval_id,
        expected_digest="sha256:0",
        status=case_status(results),
        criteria=dict(sorted(results.items())),
        invocations=summaries,
    )
    return given, result


def _suite(name: str, policy: str, pairs: list, warnings=()) -> tuple[SuitePlan, SuiteResult]:
    pairs = sorted(pairs, key=lambda p: (p[1].eval_set_id, p[1].eval_id))
    cases = [r for _, r in pairs]
    counts = Counts.of(cases)
    plan = SuitePlan(name=name, cases=[g for g, _ in pairs], not_evaluated=policy)
    result = SuiteResult(
        name=name,
        status=suite_status(counts, policy),
        not_evaluated_policy=policy,
        counts=counts,
        warnings=list(warnings),
        cases=cases,
    )
    return plan, result


def _run(*suites: tuple[SuitePlan, SuiteResult]) -> tuple[RunResults, list[SuitePlan]]:
    results = [s for _, s in suites]
    cases = [c for s in results for c in s.cases]
    statuses = {s.status for s in results}
    status = Status.FAILED if Status.FAILED in statuses else (
        Status.PASSED if Status.PASSED in statuses else Status.NOT_EVALUATED
    )
    run = RunResults(config_digest="sha256:c", status=status, counts=Counts.of(cases), suites=results)
    return run, [p for p, _ in suites]


TT = "tool_trajectory_avg_score"
RM = "response_match_score"


def _both() -> dict[str, Criterion]:
    return {TT: ToolTrajectory(threshold=1.0), RM: ResponseMatch(threshold=0.7)}


@pytest.fixture
def mixed() -> tuple[RunResults, list[SuitePlan]]:
    """Two suites: pass, fail (two invocations, both data shapes), not evaluated, Korean and
    Japanese ids and text, control characters, a very long id, a policy that fails on
    NOT_EVALUATED."""
    lights = _invocation("Turn off the lights", "Done.", [("set_device", {"id": "l1", "on": False})], id="i-1")
    turn1 = _invocation("Turn on the fan", "Fan on.", [("set_device", {"id": "f1", "on": True})], id="m-1")
    heater = [("set_device", {"id": "h1", "on": True})]
    turn2_expected = _invocation("And the heater?", "Heater on.", heater, "events", "m-2")
    wrong_heater = [("set_device", {"id": "h2", "on": True})]
    turn2_actual = _invocation("And the heater?", "Heater is on.", wrong_heater, "events", "m-2")
    tokyo = _invocation("東京の天気は？", "東京は晴れです。", [("get_weather", {"city": "東京"})], "events", "t-1")
    korean = _invocation("불 꺼줘", "불을 껐습니다.", [("set_device", {"id": "거실", "on": False})])
    noisy = _invocation("ping", "bad\x00\x08\x1b[31mtext\ufffe", [("ping", {})])
    done = {TT: _scored(1.0, 1.0), RM: _scored(0.7, 0.9)}
    home = _suite(
        "home",
        "warn",
        [
            _pair("home_set", "lights_off", _both(), done, [lights], [lights]),
            _pair(
                "home_set",
                "multi_turn",
                _both(),
                {TT: _scored(1.0, 1.0, 0.0), RM: _scored(0.7, 0.8, 0.6)},
                [turn1, turn2_actual],
                [turn1, turn2_expected],
                {"app_name": "home", "user_id": "user-7"},
            ),
            _pair("home_set", "불_끄기", _both(), {TT: _unscored(1.0), RM: _unscored(0.7)}, None, [korean]),
            _pair(
                "日本語セット",
                "東京の天気",
                _both(),
                {TT: _scored(1.0, 1.0), RM: _scored(0.7, 1.0)},
                [tokyo],
                [tokyo],
                {"appName": "home", "userId": "ユーザー1"},
            ),
        ],
        warnings=["1 of 4 cases were not evaluated"],
    )
    rm, tt = {RM: ResponseMatch(threshold=0.5)}, {TT: ToolTrajectory(threshold=1.0)}
    strict = _suite(
        "strict",
        "fail",
        [
            _pair("s", "judge_down", rm, {RM: _scored(0.5, 0.9, None)}, [noisy] * 2, [noisy] * 2),
            _pair("s", LONG_ID, tt, {TT: _scored(1.0, 0.0)}, [noisy], [lights]),
            _pair("s", "ライト_確認", tt, {TT: _scored(1.0, 0.0)}, [korean], [lights]),
        ],
    )
    return _run(home, strict)


# --- JUnit ---------------------------------------------------------------------------


def _parse(text: str) -> ET.Element:
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    return ET.fromstring(text.encode("utf-8"))


def test_junit_counts_and_structure(mixed):
    results, _ = mixed
    root = _parse(junit_xml(results))
    assert root.tag == "testsuites"
    assert {k: root.get(k) for k in ("tests", "failures", "errors", "skipped")} == {
        "tests": "7", "failures": "3", "errors": "1", "skipped": "1"
    }
    home, strict = root.findall("testsuite")
    assert [home.get(k) for k in ("name", "tests", "failures", "errors", "skipped")] == ["home", "4", "1", "0", "1"]
    assert [strict.get(k) for k in ("tests", "failures", "errors", "skipped")] == ["3", "2", "1", "0"]
    assert [(c.get("classname"), c.get("name")) for c in home.findall("testcase")] == [
        ("home.home_set", "lights_off"),
        ("home.home_set", "multi_turn"),
        ("home.home_set", "불_끄기"),
        ("home.日本語セット", "東京の天気"),
    ]
    passed = home.findall("testcase")[0]
    assert list(passed) == []
    assert home.find("system-out").text == "warning: 1 of 4 cases were not evaluated"


def test_junit_failure_message_and_body(mixed):
    results, _ = mixed
    root = _parse(junit_xml(results))
    failure = root.find("testsuite/testcase[@name='multi_turn']/failure")
    assert failure.get("message") == "tool_trajectory_avg_score 0.50 < 1.00"
    assert failure.get("type") == "FAILED"
    assert failure.text.split("\nturn 1\n")[0] == (
        "response_match_score: 0.70 >= 0.70 PASSED\n"
        "  turn 1: 0.80 PASSED\n"
        "  turn 2: 0.60 FAILED\n"
        "tool_trajectory_avg_score: 0.50 < 1.00 FAILED\n"
        "  turn 1: 1.00 PASSED\n"
        "  turn 2: 0.00 FAILED"
    )
    assert (
        "turn 2\n  user: And the heater?\n  expected response: Heater on.\n  actual response: Heater is on.\n"
    ) in failure.text
    assert '  actual tools: [{"args": {"id": "h2", "on": true}, "name": "set_device"}]' in failure.text


def test_junit_not_evaluated_is_skipped_or_error_by_policy(mixed):
    results, _ = mixed
    root = _parse(junit_xml(results))
    skipped = root.find("testsuite[@name='home']/testcase[@name='불_끄기']/skipped")
    assert skipped.get("message") == "response_match_score, tool_trajectory_avg_score: no actual outputs for this case"
    assert skipped.text == (
        "response_match_score: not evaluated (threshold 0.70)\n"
        "  no actual outputs for this case\n"
        "tool_trajectory_avg_score: not evaluated (threshold 1.00)\n"
        "  no actual outputs for this case"
    )
    error = root.find("testsuite[@name='strict']/testcase[@name='judge_down']/error")
    assert error.get("message") == (
        "response_match_score: 1 of 2 turns not evaluated: turn 2: judge timed out"
    )
    assert error.text.startswith(
        "response_match_score: 0.90 >= 0.50 NOT_EVALUATED\n"
        "  turn 1: 0.90 PASSED\n"
        "  turn 2: not evaluated (judge timed out)\n"
        "turn 1\n"
    )


def test_junit_strips_characters_xml_cannot_carry(mixed):
    results, _ = mixed
    text = junit_xml(results)
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe]", text)
    failure = _parse(text).find(f"testsuite/testcase[@name='{LONG_ID}']/failure")
    assert "actual response: bad[31mtext\n" in failure.text
    assert failure.get("message") == "tool_trajectory_avg_score 0.00 < 1.00"


def test_junit_cleans_ids_and_names(small):
    suite = small.suites[0]
    case = suite.cases[1].model_copy(update={"eval_id": "wrong\x01tool\x0b"})
    odd = small.model_copy(
        update={"suites": [suite.model_copy(update={"name": "de\x1bmo", "cases": [suite.cases[0], case]})]}
    )
    testcase = _parse(junit_xml(odd)).find("testsuite/testcase[2]")
    assert (testcase.get("classname"), testcase.get("name")) == ("demo.greetings", "wrongtool")


def test_junit_is_deterministic(mixed):
    results, _ = mixed
    later = results.model_copy(update={"run": RunInfo(started_at="2031-01-01T00:00:00+00:00", duration_seconds=9.5)})
    assert junit_xml(results) == junit_xml(later)
    assert "time" not in junit_xml(results).split("<testcase", 1)[0]


def test_format_scores_shows_a_failure_rounding_would_hide():
    assert format_scores(0.5, 1.0) == ("0.50", "1.00")
    assert format_scores(0.996, 1.0) == ("0.996", "1.000")
    assert format_scores(0.69999, 0.7) == ("0.69999", "0.70000")
    assert format_scores(0.7 - 1e-12, 0.7) == (repr(0.7 - 1e-12), "0.7")
    assert format_scores(1.0, 1.0) == ("1.00", "1.00")


# --- ADK eval history ----------------------------------------------------------------


def _json(model) -> dict:
    return model.model_dump(mode="json", exclude_none=True)


def test_adk_results_load_in_adk(mixed, tmp_path):
    eval_result = pytest.importorskip("google.adk.evaluation.eval_result")
    from google.adk.evaluation import eval_case as adk_eval_case
    from google.adk.evaluation.eval_metrics import EvalStatus

    results, plans = mixed
    paths = write_adk_results(results, plans, tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in paths] == [
        "home/home_set.evalset_result.json",
        "home/日本語セット.evalset_result.json",
        "strict/s.evalset_result.json",
    ]
    loaded = {
        p.relative_to(tmp_path).as_posix(): eval_result.EvalSetResult.model_validate_json(p.read_text("utf-8"))
        for p in paths
    }

    home = loaded["home/home_set.evalset_result.json"]
    assert (home.eval_set_result_id, home.eval_set_result_name, home.eval_set_id, home.creation_timestamp) == (
        "home_home_set", "home_home_set", "home_set", 0.0
    )
    by_id = {c.eval_id: c for c in home.eval_case_results}
    assert {k: c.final_eval_status for k, c in by_id.items()} == {
        "lights_off": EvalStatus.PASSED, "multi_turn": EvalStatus.FAILED, "불_끄기": EvalStatus.NOT_EVALUATED
    }
    multi = by_id["multi_turn"]
    assert [(m.metric_name, m.threshold, m.score, m.eval_status) for m in multi.overall_eval_metric_results] == [
        (RM, 0.7, pytest.approx(0.7), EvalStatus.PASSED),
        (TT, 1.0, 0.5, EvalStatus.FAILED),
    ]
    assert multi.overall_eval_metric_results[1].criterion.threshold == 1.0
    assert multi.overall_eval_metric_results[1].criterion.model_extra == {"match_type": "EXACT", "ignore_args": False}
    per_invocation = multi.eval_metric_result_per_invocation
    assert [[(m.metric_name, m.score, m.eval_status) for m in p.eval_metric_results] for p in per_invocation] == [
        [(RM, 0.8, EvalStatus.PASSED), (TT, 1.0, EvalStatus.PASSED)],
        [(RM, 0.6, EvalStatus.FAILED), (TT, 0.0, EvalStatus.FAILED)],
    ]
    assert (multi.session_id, multi.user_id) == ("evalgate-multi_turn", "user-7")
    # Both intermediate-data shapes land in ADK's matching model, nothing lost on the way.
    first, second = multi.eval_metric_result_per_invocation
    assert isinstance(first.actual_invocation.intermediate_data, adk_eval_case.IntermediateData)
    assert isinstance(second.actual_invocation.intermediate_data, adk_eval_case.InvocationEvents)
    plan_case = next(c for c in plans[0].cases if c.eval_id == "multi_turn")
    for got, actual, expected in zip(per_invocation, plan_case.actual, plan_case.expected):
        assert _json(got.actual_invocation) == _json(actual)
        assert _json(got.expected_invocation) == _json(expected)

    korean = by_id["불_끄기"]
    assert [(m.score, m.eval_status) for m in korean.overall_eval_metric_results] == [
        (None, EvalStatus.NOT_EVALUATED), (None, EvalStatus.NOT_EVALUATED)
    ]
    assert korean.eval_metric_result_per_invocation == [] and korean.user_id is None

    japanese = loaded["home/日本語セット.evalset_result.json"].eval_case_results[0]
    assert (japanese.eval_id, japanese.user_id, japanese.final_eval_status) == ("東京の天気", "ユーザー1", EvalStatus.PASSED)
    tokyo = japanese.eval_metric_result_per_invocation[0].actual_invocation
    assert tokyo.final_response.parts[0].text == "東京は晴れです。"

    # Partly evaluated: would pass, so NOT_EVALUATED; the unevaluated invocation has no score.
    judge = {c.eval_id: c for c in loaded["strict/s.evalset_result.json"].eval_case_results}["judge_down"]
    assert judge.final_eval_status == EvalStatus.NOT_EVALUATED
    assert [(m.score, m.eval_status) for m in judge.overall_eval_metric_results] == [(0.9, EvalStatus.NOT_EVALUATED)]
    per_invocation = judge.eval_metric_result_per_invocation
    assert [[(m.score, m.eval_status) for m in p.eval_metric_results] for p in per_invocation] == [
        [(0.9, EvalStatus.PASSED)], [(None, EvalStatus.NOT_EVALUATED)]
    ]


def test_adk_results_read_back_by_our_loader(mixed, tmp_path):
    results, plans = mixed
    paths = write_adk_results(results, plans, tmp_path)
    given = {(c.eval_set_id, c.eval_id): c for p in plans for c in p.cases}
    seen = 0
    for path in paths:
        loaded = adk.EvalSetResult.model_validate_json(path.read_text("utf-8"))
        for case in loaded.eval_case_results:
            actual = given[(case.eval_set_id, case.eval_id)].actual
            got = [p.actual_invocation for p in case.eval_metric_result_per_invocation]
            assert [g.model_dump() for g in got] == [a.model_dump() for a in actual or []]
            seen += len(got)
    assert seen == 8


def test_adk_results_are_deterministic(mixed, tmp_path):
    results, plans = mixed
    first = [p.read_bytes() for p in write_adk_results(results, plans, tmp_path / "a")]
    later = results.model_copy(update={"run": RunInfo(started_at="2031-01-01T00:00:00+00:00", duration_seconds=9.5)})
    assert [p.read_bytes() for p in write_adk_results(later, plans, tmp_path / "b")] == first
    data = adk_eval_set_results(results, plans)
    assert list(data) == [("home", "home_set"), ("home", "日本語セット"), ("strict", "s")]
    assert json.loads(first[0])["eval_case_results"][0]["eval_metric_result_per_invocation"][0]["actual_invocation"][
        "creation_timestamp"
    ] == 0.0


def test_safe_name_keeps_scripts_and_keeps_ids_apart():
    assert safe_name("日本語セット") == "日本語セット"
    assert safe_name("home-set.v2") == "home-set.v2"
    for unsafe in ("a/b", "a\\b", "..", "C:x", "", "a b"):
        name = safe_name(unsafe)
        assert name and not set(name) & set("/\\: ") and not name.startswith(".")
    assert safe_name("a/b") != safe_name("a_b") != safe_name("a b")
    assert len(safe_name("가" * 200).encode()) <= 130


# --- terminal ------------------------------------------------------------------------


@pytest.fixture
def small() -> RunResults:
    hello = _invocation("hi", "hello", [("greet", {})])
    hi = _invocation("hi", "hello", [("wave", {})])
    suite = _suite(
        "demo",
        "warn",
        [
            _pair("greetings", "hello", _both(), {TT: _scored(1.0, 1.0), RM: _scored(0.7, 0.9)}, [hello], [hello]),
            _pair("greetings", "wrong_tool", _both(), {TT: _scored(1.0, 0.0), RM: _scored(0.7, 0.75)}, [hi], [hello]),
            _pair("greetings", "no_output", _both(), {TT: _unscored(1.0), RM: _unscored(0.7)}, None, [hello]),
        ],
        warnings=["1 of 3 cases were not evaluated"],
    )
    return _run(suite)[0]


SMALL = """\
suite demo
  criterion                  threshold  mean  passed  failed  not evaluated
  response_match_score            0.70  0.82       2       0              1
  tool_trajectory_avg_score       1.00  0.50       1       1              1

  failed cases
  eval set   eval_id     criterion                  score  threshold
  greetings  wrong_tool  tool_trajectory_avg_score   0.00       1.00

  not evaluated
  cases  reason
      1  response_match_score, tool_trajectory_avg_score: no actual outputs for this case

  warning: 1 of 3 cases were not evaluated

demo: FAILED (3 cases: 1 passed, 1 failed, 1 not evaluated)

overall: FAILED (3 cases in 1 suite: 1 passed, 1 failed, 1 not evaluated)
"""


SMALL_COLOR = (
    "\x1b[1msuite demo\x1b[0m\n"
    "  \x1b[1mcriterion\x1b[0m                  \x1b[1mthreshold\x1b[0m  \x1b[1mmean\x1b[0m  \x1b[1mpassed\x1b[0m"
    "  \x1b[1mfailed\x1b[0m  \x1b[1mnot evaluated\x1b[0m\n"
    "  response_match_score            0.70  0.82       2       0              \x1b[33m1\x1b[0m\n"
    "  tool_trajectory_avg_score       1.00  0.50       1       \x1b[31m1\x1b[0m              \x1b[33m1\x1b[0m\n"
    "\n"
    "  \x1b[1mfailed cases\x1b[0m\n"
    "  \x1b[1meval set\x1b[0m   \x1b[1meval_id\x1b[0m     \x1b[1mcriterion\x1b[0m                  \x1b[1mscore\x1b[0m"
    "  \x1b[1mthreshold\x1b[0m\n"
    "  greetings  wrong_tool  tool_trajectory_avg_score   \x1b[31m0.00\x1b[0m       1.00\n"
    "\n"
    "  \x1b[1mnot evaluated\x1b[0m\n"
    "  \x1b[1mcases\x1b[0m  \x1b[1mreason\x1b[0m\n"
    "      \x1b[33m1\x1b[0m  response_match_score, tool_trajectory_avg_score: no actual outputs for this case\n"
    "\n"
    "  \x1b[33mwarning\x1b[0m: 1 of 3 cases were not evaluated\n"
    "\n"
    "demo: \x1b[31mFAILED\x1b[0m (3 cases: 1 passed, 1 failed, 1 not evaluated)\n"
    "\n"
    "overall: \x1b[31mFAILED\x1b[0m (3 cases in 1 suite: 1 passed, 1 failed, 1 not evaluated)\n"
)

_ANSI = re.compile("\x1b\\[[0-9;]*m")


def test_summary_snapshot(small):
    assert summary_table(small, color=False) == SMALL


def test_summary_snapshot_in_color(small):
    text = summary_table(small, color=True)
    assert text == SMALL_COLOR
    assert _ANSI.sub("", text) == SMALL


def _judges_skipped(policy: str) -> RunResults:
    """Two cases whose tool calls passed and whose judge was never heard (no credentials), and
    one the agent could not answer: PASSED cases, but incomplete ones."""
    hello = _invocation("안녕", "こんにちは", [("greet", {})])
    skipped = {TT: _scored(1.0, 1.0), "final_response_match_v2": _unscored(0.8, "no judge credentials")}
    judged = {TT: ToolTrajectory(threshold=1.0)}
    suite = _suite(
        "judged",
        policy,
        [
            _pair("인사", "안녕_1", judged, skipped, [hello], [hello]),
            _pair("인사", "挨拶_2", judged, skipped, [hello], [hello]),
            _pair("인사", "no_output", judged, {TT: _unscored(1.0), "final_response_match_v2": _unscored(0.8)}, None, [hello]),
        ],
    )
    return _run(suite)[0]


def test_status_lines_count_incomplete_cases():
    """Every judge criterion skipped on otherwise passed cases: the status lines say how many
    cases are incomplete. They used to read "PASSED (3 cases: 2 passed, 0 failed, 1 not
    evaluated)", as if the two passed cases had been judged."""
    results = _judges_skipped("warn")
    assert (results.counts.passed, results.counts.not_evaluated, results.counts.incomplete) == (2, 1, 3)
    text = summary_table(results, color=False)
    assert "judged: PASSED (3 cases: 2 passed, 0 failed, 1 not evaluated; 3 incomplete, with a criterion not evaluated)\n" in text
    assert "overall: PASSED (3 cases in 1 suite: 2 passed, 0 failed, 1 not evaluated; 3 incomplete, with a criterion not evaluated)\n" in text
    assert "1 not evaluated)" not in text  # the old wording, which hid the skipped judges


def test_a_suite_failed_by_its_incomplete_cases_says_why():
    # not_evaluated: fail fails the suite on incomplete cases, passed ones included (engine.suite_status).
    text = summary_table(_judges_skipped("fail"), color=False)
    assert (
        "judged: FAILED (3 cases: 2 passed, 0 failed, 1 not evaluated; 3 incomplete, with a criterion not evaluated); "
        "under not_evaluated: fail, incomplete cases fail this suite\n"
    ) in text


def _tables(text: str) -> list[list[str]]:
    """Each table's rows (header included): the lines after a suite heading or section title."""
    blocks = [b.splitlines() for b in text.split("\n\n")]
    return [b[1:] for b in blocks if b and (b[0].startswith("suite ") or b[0] in ("  failed cases", "  not evaluated"))]


def test_summary_aligns_wide_characters(mixed):
    results, _ = mixed
    text = summary_table(results, color=False)
    tables = _tables(text)
    assert len(tables) == 6
    failed_strict = tables[4]
    assert failed_strict == [
        "  eval set  eval_id                                   criterion                  score  threshold",
        "  s         an_eval_case_whose_id_goes_on_and_on_we…  tool_trajectory_avg_score   0.00       1.00",
        "  s         ライト_確認                               tool_trajectory_avg_score   0.00       1.00",
    ]
    # The Japanese row is shorter in code points than in columns: the check below can fail.
    assert len(failed_strict[2]) < display_width(failed_strict[2])
    for rows in tables:
        if rows[0].split()[0] in ("criterion", "eval"):  # right-aligned last column
            assert len({display_width(r) for r in rows}) == 1, rows
        # Every column starts at the same display offset in every row.
        header = rows[0]
        starts = [display_width(header[: m.start()]) for m in re.finditer(r"(?<=  )\S", header)]
        for row in rows[1:]:
            for col in starts:
                prefix = _cut(row, col)
                assert display_width(prefix) == col and prefix.endswith("  ") or not prefix.strip(), (row, col)


def _cut(text: str, columns: int) -> str:
    out, used = "", 0
    for ch in text:
        if used >= columns:
            break
        out += ch
        used += display_width(ch)
    return out


def test_summary_cleans_ids_for_the_terminal(mixed):
    results, _ = mixed
    text = summary_table(results, color=False)
    assert "\x1b" not in text
    assert LONG_ID not in text and LONG_ID[:39] + "…" in text


def test_display_width_and_truncate():
    assert display_width("불_끄기") == 7
    assert display_width("東京の天気") == 10
    assert display_width("e\u0301") == 1  # combining accent
    assert truncate("abc", 3) == "abc"
    assert truncate("abcdef", 4) == "abc…"
    assert truncate("가나다라마바", 7) == "가나다…"
    assert display_width(truncate("가나다라마바", 8)) <= 8
    assert truncate("a\nb\x1b[2Jc", 20) == "a b[2Jc"
    assert display_width(truncate(LONG_ID, MAX_ID)) == MAX_ID


# --- progress ------------------------------------------------------------------------


class _Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_disabled_writes_nothing():
    out, clock = io.StringIO(), _Clock()
    progress = Progress(10, out, enabled=False, clock=clock)
    for _ in range(10):
        clock.now += 1.0
        progress.advance()
    progress.close()
    assert out.getvalue() == ""


def test_progress_quiet_for_the_first_half_second():
    out, clock = io.StringIO(), _Clock()
    with Progress(10, out, enabled=True, clock=clock) as progress:
        for _ in range(9):
            clock.now += 0.05
            progress.advance()
    assert out.getvalue() == ""  # 0.45 s: never drawn, so nothing to clear either

    real = io.StringIO()
    with Progress(1000, real, enabled=True) as progress:
        for _ in range(1000):
            progress.advance()
    assert real.getvalue() == ""


def test_progress_in_a_ci_log_prints_a_line_per_tenth():
    out, clock = io.StringIO(), _Clock()
    progress = Progress(20, out, enabled=True, label="agent runs", tty=False, clock=clock)
    for _ in range(20):
        clock.now += 1
        progress.advance()
    progress.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 10
    assert lines[0] == "agent runs: 2/20 (10%) 2 s, about 18 s left"
    assert lines[-1] == "agent runs: 20/20 (100%) 20 s"
    assert "\r" not in out.getvalue()


def test_progress_in_a_ci_log_says_the_true_percentage():
    out, clock = io.StringIO(), _Clock()
    progress = Progress(3, out, enabled=True, label="agent runs", tty=False, clock=clock)
    for _ in range(3):
        clock.now += 1
        progress.advance()
    progress.close()
    assert [line.split(") ")[0] + ")" for line in out.getvalue().splitlines()] == ["agent runs: 1/3 (33%)", "agent runs: 2/3 (66%)", "agent runs: 3/3 (100%)"]


def test_progress_draws_at_most_ten_times_a_second_and_clears():
    out, clock = io.StringIO(), _Clock()
    progress = Progress(40, out, enabled=True, clock=clock)
    clock.now += 0.6
    progress.advance(4)
    # 4 done in 0.6 s: 36 more take about 5.4 s
    assert out.getvalue() == "\r\x1b[K[###---------------------------] 4/40 cases  0 s, about 5 s left"
    for _ in range(10):  # ten more within 50 ms: no redraw
        clock.now += 0.005
        progress.advance()
    assert out.getvalue().count("\r") == 1
    clock.now += 0.1
    progress.advance()
    assert out.getvalue().count("\r") == 2
    assert out.getvalue().endswith("[###########-------------------] 15/40 cases  0 s, about 1 s left")  # 15 in 0.75 s
    progress.close()
    assert out.getvalue().endswith("\r\x1b[K")
    clock.now += 5
    progress.advance()
    progress.close()
    assert out.getvalue().count("\r") == 3


def test_summary_lists_the_worst_failures_and_counts_the_rest():
    """A suite with many failures: the table holds MAX_FAILED rows, furthest below the
    threshold first (ties in case order), and counts the rest, which are in results.json."""
    inv = _invocation("こんにちは", "안녕하세요")
    criteria = {RM: ResponseMatch(threshold=0.8)}
    scores = [0.79 - 0.01 * (i % 7) for i in range(MAX_FAILED + 5)] + [0.1, 0.9]
    pairs = [
        _pair("세트", f"ケース-{i:02d}", criteria, {RM: _scored(0.8, s)}, [inv], [inv]) for i, s in enumerate(scores)
    ]
    run, _ = _run(_suite("big", "warn", pairs))
    table = _tables(summary_table(run, color=False))[1]
    assert table[-1] == f"  and {len(scores) - 1 - MAX_FAILED:,} more: see results.json"
    rows = [r.split() for r in table[1:-1]]
    assert len(rows) == MAX_FAILED
    assert rows[0][1:] == [f"ケース-{len(scores) - 2:02d}", RM, "0.10", "0.80"]
    gaps = [float(r[3]) for r in rows]
    assert gaps == sorted(gaps)
    worst = [f"ケース-{i:02d}" for i in range(len(scores) - 2) if i % 7 == 6]
    assert [r[1] for r in rows[1 : 1 + len(worst)]] == worst  # equal scores keep the cases' order
