"""A criterion scored on its own scale (response_evaluation_score: 1 to 5) is gated as if mapped to
[0, 1], (score - 1) / 4: its margins, resolution and assumed run-to-run sd are fractions of its
range, and the numbers shown stay on 1 to 5 (evalgate.gate.values.score_range)."""

from __future__ import annotations

import random

import pytest

from evalgate.criteria import REGISTRY, scales
from evalgate.gate import GatePolicy, Verdict, compare
from evalgate.gate.values import score_range
from evalgate.reports.markdown import render_comment
from test_compare import run, suite

NAME = "response_evaluation_score"
JUDGE_SPEC = {NAME}


def _run(values: dict[str, float]):
    s = suite("s", {e: {NAME: v} for e, v in values.items()}, thresholds={NAME: 3.0})
    s.criteria[NAME].judge = True  # as its module declares (a Vertex-rated criterion)
    return run(s)


def _ratings(n: int, seed: int, shift: float = 0.0) -> dict[str, float]:
    rng = random.Random(seed)
    return {f"c{i:03d}": min(5.0, max(1.0, round(rng.choice([3.5, 4.0, 4.0, 4.5, 5.0]) + shift, 3))) for i in range(n)}


def test_criteria_declare_their_range():
    assert score_range(NAME, scales=scales()) == (1.0, 5.0) == REGISTRY[NAME].score_range
    assert score_range("tool_trajectory_avg_score", scales=scales()) == (0.0, 1.0) and score_range("my_custom_metric", scales=scales()) == (0.0, 1.0)
    assert scales() == {NAME: (1.0, 5.0)}  # the gate is handed these (it imports no criterion)


def test_a_drop_of_half_a_point_on_1_to_5_fails_and_is_shown_on_1_to_5():
    base = _ratings(40, 1)
    now = {k: max(1.0, v - 0.5) for k, v in base.items()}
    comparison = compare(_run(base), _run(now), GatePolicy(), scales=scales())
    assert comparison.verdict is Verdict.FAIL
    [comp] = comparison.suites[0].criteria
    assert comp.span == 4.0
    assert comp.baseline_mean == pytest.approx(sum(base.values()) / 40) and comp.baseline_mean > 3.5  # the 1-5 scale
    assert comp.delta == pytest.approx(-0.5)
    assert comp.run_sd == pytest.approx(0.08)  # run_sd_judge 0.02 of the range, assumed without history
    text = comparison.suites[0].reasons[0]
    assert "mean score dropped by 0.500" in text and "margin 0.08" in text
    comment = render_comment(comparison, _run(now))
    assert f"{comp.baseline_mean:.3f}" in comment and "-0.500" in comment


def test_a_move_within_the_judges_margin_of_the_range_passes():
    """A judge's mood lowering every rating by 0.06 points is 1.5% of the range, within the 2%
    margin: raw 1-5 numbers against [0, 1] margins (0.06 > 0.02) failed it."""
    base = _ratings(60, 2)
    now = {k: v - 0.06 for k, v in base.items()}
    comparison = compare(_run(base), _run(now), GatePolicy(), scales=scales())
    assert comparison.verdict is Verdict.PASS, comparison.reasons


def test_an_unchanged_agent_on_1_to_5_is_not_inconclusive():
    """Ratings that move a little case by case, no drop: PASS (the resolution is 0.1 of the
    range, 0.4 points)."""
    rng = random.Random(3)
    base = _ratings(40, 3)
    now = {k: min(5.0, max(1.0, v + rng.choice([-0.5, 0.0, 0.0, 0.5]))) for k, v in base.items()}
    comparison = compare(_run(base), _run(now), GatePolicy(), scales=scales())
    assert comparison.verdict is Verdict.PASS, comparison.reasons
