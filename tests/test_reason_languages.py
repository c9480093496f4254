"""The engine's fixed NOT_EVALUATED reasons (evalgate.reasons): English in results.json, the
reader's language in the reports, the exception's own words kept as they came."""

from __future__ import annotations

import json

import pytest

from evalgate import engine, i18n, reasons
from evalgate.criteria.judging import all_failed, short_of_quorum
from evalgate.criteria.response_match import ResponseMatch
from evalgate.judge.transport import NO_CREDENTIALS
from evalgate.reports import not_evaluated_reasons
from evalgate.results import Status
from test_engine import case_with, inv


def _scored(case: engine.CaseInput):
    return engine.score_case(case)


def test_a_case_without_outputs_is_english_in_results_and_translated_in_the_report():
    case = engine.CaseInput("s", "c", {"response_match_score": ResponseMatch(threshold=0.5)}, "d", expected=[inv("a")])
    with i18n.language("ko"):  # scored while the reports speak Korean: results.json stays English
        result = _scored(case)
        stored = json.loads(result.model_dump_json())
        assert not_evaluated_reasons(result) == {"이 케이스에는 실제 출력이 없습니다": ["response_match_score"]}
    crit = result.criteria["response_match_score"]
    assert crit.status is Status.NOT_EVALUATED
    assert stored["criteria"]["response_match_score"]["error"] == "no actual outputs for this case"
    with i18n.language("ja"):
        assert reasons.shown(crit.error) == "このケースには実際の出力がありません"
    assert reasons.shown(crit.error) == crit.error


def test_a_failed_agent_run_keeps_the_exception_text_and_translates_the_frame():
    case = case_with([1.0])
    case.runs = [engine.AgentRun(None, error="ConnectionError: refused; retried 3 times", run=1),
                 engine.AgentRun([inv("0")], run=2)]
    crit = engine.score_runs(case.criteria["scripted"], case)
    assert crit.error == "run 1: the agent run failed: ConnectionError: refused; retried 3 times"
    with i18n.language("ko"):
        assert reasons.shown(crit.error) == "1번째 실행: 에이전트 실행 실패: ConnectionError: refused; retried 3 times"


def test_turns_not_evaluated_are_translated_item_by_item():
    crit = engine.aggregate([engine.Outcome(1.0), engine.Outcome(None, error="judge said nothing"),
                             engine.Outcome(None, error=all_failed(["HTTP 500", "HTTP 500"]))], 0.5)
    assert crit.error == ("2 of 3 turns not evaluated: turn 2: judge said nothing; "
                          "turn 3: all 2 judge samples failed: HTTP 500 (x2)")
    with i18n.language("ko"):
        assert reasons.shown(crit.error) == (
            "턴 3개 중 2개 평가되지 않음: 2번째 턴: judge said nothing / 3번째 턴: 심사 모델 샘플 2개 모두 실패: HTTP 500 (x2)")


@pytest.mark.parametrize("code", ["ko", "ja"])
def test_the_judge_reasons_made_by_the_code_are_recognised(code):
    made = [NO_CREDENTIALS, f"{NO_CREDENTIALS} (GOOGLE_CLOUD_PROJECT is not set and the credentials name no project)",
            all_failed(["timeout"]), short_of_quorum([1.0, None, None], ["bad JSON", "bad JSON"]), "3 of 4 rubrics met"]
    with i18n.language(code):
        shown = [reasons.shown(text) for text in made]
    for english, text in zip(made, shown):
        assert text != english and not text.startswith(english[:12]), text
    assert "GOOGLE_CLOUD_PROJECT is not set and the credentials name no project" in shown[1]  # the detail as it came


def test_text_that_is_no_known_reason_is_shown_as_it_came():
    with i18n.language("ko"):
        assert reasons.shown("ValueError: bad input; see docs") == "ValueError: bad input; see docs"
        assert reasons.shown(None) == ""


@pytest.mark.parametrize("code", ["ko", "ja"])
def test_every_fixed_reason_is_recognised_and_keeps_its_fields(code):
    import string

    counts = {"n", "missing", "total", "met", "usable", "actual", "expected"}
    for message in reasons._ALL:
        names = {name for _, name, _, _ in string.Formatter().parse(message) if name}
        values = {name: ("7" if name in counts else "ValueError: 값 (x)") for name in names}
        english = message.format(**values)
        with i18n.language(code):
            text = reasons.shown(english)
        assert text != english, message
        for name, value in values.items():
            assert value in text, (message, text)
