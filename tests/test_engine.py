"""Engine rules: statuses, averaging, failures as records, policies, deterministic results."""

from __future__ import annotations

import json
from typing import ClassVar

import pytest

from evalgate import engine
from evalgate.adk import Invocation
from evalgate.criteria.base import Criterion, Outcome
from evalgate.criteria.response_match import ResponseMatch
from evalgate.criteria.tool_trajectory import ToolTrajectory
from evalgate.results import CriterionResult, Status, dumps


def inv(text: str, calls=()) -> Invocation:
    return Invocation.model_validate(
        {
            "user_content": {"parts": [{"text": "q"}]},
            "final_response": {"parts": [{"text": text}]},
            "intermediate_data": {"tool_uses": [{"name": n, "args": a} for n, a in calls]},
        }
    )


class Scripted(Criterion):
    """A criterion whose per-invocation outcomes are given: numbers, None (not evaluated) or an exception."""

    name: ClassVar[str] = "scripted"
    script: list = []

    def score_invocation(self, actual, expected):
        i = int(actual.final_text())
        value = self.script[i]
        if isinstance(value, Exception):
            raise value
        return Outcome(value, error=None if value is not None else "judge said nothing")


def case_with(script, threshold=0.5, **extra) -> engine.CaseInput:
    n = len(script)
    return engine.CaseInput(
        eval_set_id="s",
        eval_id="c",
        criteria={"scripted": Scripted(threshold=threshold, script=script), **extra},
        expected_digest="d",
        expected=[inv(str(i)) for i in range(n)],
        actual=[inv(str(i)) for i in range(n)],
    )


@pytest.mark.parametrize(
    "script, score, status",
    [
        ([1.0, 0.0], 0.5, Status.PASSED),  # mean of invocations, threshold inclusive
        ([1.0, 0.0, 0.0], 1 / 3, Status.FAILED),
        ([None, None], None, Status.NOT_EVALUATED),
        ([1.0, None], 1.0, Status.NOT_EVALUATED),  # partial evaluation never passes
        ([0.0, None], 0.0, Status.FAILED),  # ...but can fail
    ],
)
def test_aggregation(script, score, status):
    result = engine.score_criterion(Scripted(threshold=0.5, script=script), case_with(script))
    assert result.score == score
    assert result.status is status
    assert [p.score for p in result.per_invocation] == script


def test_exception_becomes_not_evaluated_and_others_go_on():
    case = case_with([RuntimeError("boom")], response_match_score=ResponseMatch(threshold=0.5))
    result = engine.score_case(case)
    crit = result.criteria["scripted"]
    assert crit.status is Status.NOT_EVALUATED and crit.score is None
    assert crit.error == "RuntimeError: boom"
    assert result.criteria["response_match_score"].status is Status.PASSED
    assert result.status is Status.PASSED


def _crit(status: Status) -> CriterionResult:
    return CriterionResult(score=None, status=status, threshold=0.5)


@pytest.mark.parametrize(
    "statuses, expected",
    [
        ([Status.PASSED, Status.FAILED], Status.FAILED),
        ([Status.PASSED, Status.NOT_EVALUATED], Status.PASSED),
        ([Status.NOT_EVALUATED, Status.FAILED], Status.FAILED),
        ([Status.NOT_EVALUATED], Status.NOT_EVALUATED),
        ([], Status.NOT_EVALUATED),
    ],
)
def test_case_status_is_adks_rule(statuses, expected):
    assert engine.case_status({str(i): _crit(s) for i, s in enumerate(statuses)}) is expected


@pytest.mark.parametrize(
    "policy, scripts, status",
    [
        ("warn", [[1.0], [None]], Status.PASSED),
        ("ignore", [[1.0], [None]], Status.PASSED),
        ("fail", [[1.0], [None]], Status.FAILED),
        ("warn", [[None]], Status.NOT_EVALUATED),
        ("warn", [[1.0], [0.0]], Status.FAILED),
    ],
)
def test_not_evaluated_policy(policy, scripts, status):
    cases = []
    for i, script in enumerate(scripts):
        c = case_with(script)
        c.eval_id = f"c{i}"
        cases.append(c)
    suite = engine.score_suite(engine.SuitePlan(name="s", cases=cases, not_evaluated=policy))
    assert suite.status is status
    assert any("not evaluated" in w for w in suite.warnings) == (policy == "warn" and any(None in s for s in scripts))


def test_count_mismatch_inside_engine_is_not_evaluated():
    case = case_with([1.0])
    case.actual = case.actual * 2
    result = engine.score_criterion(ToolTrajectory(threshold=1.0), case)
    assert result.status is Status.NOT_EVALUATED
    assert "2 actual invocations for 1 expected" in result.error


def test_results_are_deterministic_and_sorted():
    def plan():
        cases = []
        for eid in ["b", "a", "東京", "서울"]:
            c = engine.CaseInput(
                eval_set_id="s",
                eval_id=eid,
                criteria={"tool_trajectory_avg_score": ToolTrajectory(threshold=1.0), "response_match_score": ResponseMatch(threshold=0.5)},
                expected_digest="d",
                expected=[inv("東京タワーは高いです", [("f", {"x": 1})])],
                actual=[inv("東京タワーは高い", [("f", {"x": 1.0})])],
            )
            cases.append(c)
        return [engine.SuitePlan(name="s", cases=cases)]

    first = engine.run(plan(), "cfg")
    second = engine.run(plan(), "cfg")
    assert json.dumps(first.comparable(), sort_keys=True) == json.dumps(second.comparable(), sort_keys=True)
    assert [c.eval_id for c in first.suites[0].cases] == ["a", "b", "東京", "서울"]  # code-point order
    text = dumps(first)
    assert "東京タワー" in text  # not \u-escaped
    data = json.loads(text)
    assert list(data) == sorted(data)
    assert first.status is Status.PASSED


def test_scoring_time_is_recorded_per_suite_and_criterion_outside_the_comparable_payload():
    import time as time_module

    class Slow(Criterion):
        name: ClassVar[str] = "slow"

        def score_invocation(self, actual, expected):
            time_module.sleep(0.02)
            return Outcome(1.0)

    cases = [
        engine.CaseInput(eval_set_id="s", eval_id=str(i), criteria={"slow": Slow(threshold=0.5), "response_match_score": ResponseMatch(threshold=0.5)},
                         expected_digest="d", expected=[inv("x")], actual=[inv("x")])
        for i in range(3)
    ]
    run = engine.run([engine.SuitePlan(name="timed", cases=cases)], "cfg")
    timing = run.run.scoring["timed"]
    assert set(timing["criteria"]) == {"slow", "response_match_score"}
    assert timing["criteria"]["slow"] >= 0.06 and timing["seconds"] >= timing["criteria"]["slow"] - 0.001
    assert "scoring" not in json.dumps(run.comparable())
