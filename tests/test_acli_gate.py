"""agents-cli's metrics have no thresholds: the gate judges them by comparison with the baseline, on each metric's own scale.

Two runs of the same twelve cases are scored by agents-cli code metrics (a 1-5 judge-like
rating declared `score_range: [1, 5]` and `judge: true`; a count of tool calls declared
`score_range: [0, null]`), written as results.json, and compared by `evalgate compare`: an
unchanged run PASSes, a run whose ratings and tool calls dropped FAILs naming both metrics
with their means on their own scales, and without a baseline the run passes (nothing to hold
a score against).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agentplatform")

from evalgate import engine, results  # noqa: E402
from evalgate.agents_cli.eval_config import read_eval_config  # noqa: E402
from evalgate.agents_cli.cases import trace_invocations  # noqa: E402
from evalgate.gate import compare, GatePolicy  # noqa: E402
from evalgate.gate.values import score_range  # noqa: E402
from evalgate.results import RunInfo, Status  # noqa: E402

CONFIG = """
metrics_to_run: [stars, tool_calls]
custom_metrics:
  - name: stars
    score_range: [1, 5]
    judge: true
    custom_function: |
      def evaluate(instance):
          text = "".join(p.get("text", "") for p in instance["response"]["parts"])
          return {"score": max(1, min(5, text.count("★"))), "explanation": "별 " + str(text.count("★"))}
  - name: tool_calls
    score_range: [0, null]
    custom_function: |
      def evaluate(instance):
          return sum("function_call" in p for t in instance["agent_data"]["turns"] for e in t["events"]
                     for p in e.get("content", {}).get("parts", []))
"""


def trace(i: int, stars: int, calls: int) -> dict[str, Any]:
    events = []
    for k in range(calls):
        events.append({"author": "shop_agent", "content": {"role": "model", "parts": [{"function_call": {"id": f"c{k}", "name": "lookup", "args": {"q": f"주문 {i}"}}}]}})
        events.append({"author": "shop_agent", "content": {"role": "user", "parts": [{"function_response": {"id": f"c{k}", "name": "lookup", "response": {"ok": True}}}]}})
    answer = "답변 " + "★" * stars
    events.append({"author": "shop_agent", "content": {"role": "model", "parts": [{"text": answer}]}})
    return {
        "eval_case_id": f"case-{i:02d}",
        "prompt": {"role": "user", "parts": [{"text": f"주문 {i} 어디쯤 왔나요?"}]},
        "agent_data": {"turns": [{"turn_index": 0, "turn_id": "turn_0", "events": events}]},
        "responses": [{"response": {"role": "model", "parts": [{"text": answer}]}}],
    }


def run_results(tmp_path: Path, name: str, stars: list[int], calls: list[int]) -> Path:
    config = tmp_path / "eval_config.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    criteria = read_eval_config(config)
    cases = []
    for i, (s, c) in enumerate(zip(stars, calls)):
        t = trace(i, s, c)
        case = engine.CaseInput("basic-dataset", t["eval_case_id"], criteria, f"digest-{i}", actual=trace_invocations(t))
        run = engine.AgentRun(case.actual)
        run.trace = t
        case.runs = [run]
        cases.append(case)
    suite = engine.score_suite(engine.SuitePlan("app", cases))
    path = tmp_path / f"{name}.json"
    results.write(engine.finish_run([suite], "sha256:config", RunInfo()), path)
    return path


BASE_STARS = [5, 4, 5, 4, 5, 5, 4, 5, 4, 5, 5, 4]
BASE_CALLS = [2, 2, 3, 2, 2, 2, 3, 2, 2, 2, 3, 2]


def test_an_unchanged_run_passes(cli, tmp_path):
    base = run_results(tmp_path, "base", BASE_STARS, BASE_CALLS)
    current = run_results(tmp_path, "current", BASE_STARS, BASE_CALLS)
    code, out, _ = cli("compare", "--baseline", str(base), "--current", str(current), "--html", str(tmp_path / "r.html"))
    assert code == 0, out
    assert "PASS" in out


def test_a_drop_on_each_scale_fails(cli, tmp_path):
    base = run_results(tmp_path, "base", BASE_STARS, BASE_CALLS)
    current = run_results(tmp_path, "current", [s - 2 for s in BASE_STARS], [c - 1 for c in BASE_CALLS])
    code, out, _ = cli("compare", "--baseline", str(base), "--current", str(current), "--html", str(tmp_path / "r.html"))
    assert code == 1, out
    assert "FAIL" in out
    # Each on its own scale: the 1-5 rating's interval within +-4, the count's unbounded; no threshold shown.
    assert "stars: mean score dropped by 2.000 (4.583 to 2.583, 95% CI \\[-2.317, -1.683\\]; margin 0.08;" in out
    assert "tool\\_calls: mean score dropped by 1.000 (2.250 to 1.250, 95% CI \\[-1.040, -0.960\\]; margin 0;" in out
    assert "| stars (judge) | – | 12 | 4.583 | 2.583 |" in out
    # Cases never fail a metric without a threshold: the headline counts those that scored
    # lower instead of saying "no regressed cases" above a FAIL.
    headline = next(line for line in out.splitlines() if line.startswith("**evalgate FAIL**"))
    assert "cases scored lower" in headline and "no regressed cases" not in headline, headline
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert html.count('<td class="num">–</td>') >= 2 and '"th":null' in html and '"th":1.0' not in html  # no threshold shown


def test_a_small_wobble_of_a_judge_on_a_1_to_5_scale_is_not_a_regression(tmp_path):
    """One case of twelve one point lower on a 1-5 judge: within what its scale allows."""
    base = results.read(run_results(tmp_path, "base", BASE_STARS, BASE_CALLS))
    wobble = list(BASE_STARS)
    wobble[3] -= 1
    current = results.read(run_results(tmp_path, "current", wobble, BASE_CALLS))
    verdict = compare(base, current, GatePolicy())
    assert verdict.verdict.value == "PASS", verdict.reasons


def test_the_results_say_no_threshold_and_the_gate_reads_the_scales(tmp_path):
    data = json.loads(run_results(tmp_path, "base", BASE_STARS, BASE_CALLS).read_text(encoding="utf-8"))
    [suite] = data["suites"]
    assert suite["criteria"]["stars"]["no_threshold"] is True and suite["criteria"]["stars"]["judge"] is True
    assert suite["criteria"]["stars"]["score_range"] == [1.0, 5.0]
    assert suite["criteria"]["tool_calls"]["score_range"] == [0.0, None]
    assert suite["status"] == "PASSED" and all(c["status"] == "PASSED" for c in suite["cases"])
    read = results.read(tmp_path / "base.json").suites[0]
    assert score_range("stars", read.criteria["stars"]) == (1.0, 5.0)
    assert score_range("tool_calls", read.criteria["tool_calls"]) == (0.0, 1.0)  # unbounded: margins in counts
    assert read.cases[0].criteria["stars"].status is Status.PASSED


def test_without_a_baseline_nothing_fails(cli, tmp_path):
    current = run_results(tmp_path, "current", [1] * 12, [0] * 12)
    code, out, _ = cli("compare", "--current", str(current), "--html", str(tmp_path / "r.html"))
    assert code == 0, out


def test_the_bases_policy_keeps_agents_cli_metrics_as_the_eval_config_declares_them(tmp_path):
    """`evalgate gate` rebuilds the baseline's criteria from its results; an agents-cli metric
    named like an ADK criterion evalgate knows (safety_v1) must stay the agents-cli one."""
    from evalgate.criteria.acli_service_metric import AcliServiceMetric
    from evalgate.under_base import base_criteria

    config = tmp_path / "eval_config.yaml"
    config.write_text(CONFIG.replace("[stars, tool_calls]", "[stars, tool_calls, SAFETY]"), encoding="utf-8")
    criteria = read_eval_config(config)
    cases = [engine.CaseInput("basic-dataset", "case-00", dict(criteria), "digest-0")]
    base = results.RunResults.model_validate_json(run_results(tmp_path, "base", BASE_STARS, BASE_CALLS).read_text(encoding="utf-8"))
    base.suites[0].criteria["safety_v1"] = base.suites[0].criteria["stars"].model_copy(update={"options": criteria["safety_v1"].options()})
    for case in base.suites[0].cases:  # as if the baseline had scored it too
        case.criteria["safety_v1"] = case.criteria["stars"].model_copy()
    plan = engine.SuitePlan("app", cases)
    base_criteria([plan], base)
    assert isinstance(cases[0].criteria["safety_v1"], AcliServiceMetric)
    assert cases[0].criteria["stars"].metric_name == "stars"


def test_below_its_scale_is_what_the_ledger_counts_as_failed(tmp_path):
    """No status depends on it, but a score below the scale's lowest (the scaffold's judge says
    0 when the model gave nothing usable, on a 1-5 scale) is a failed outcome in the flake ledger."""
    from evalgate.gate.values import outcome

    data = results.read(run_results(tmp_path, "base", BASE_STARS, BASE_CALLS)).suites[0]
    stars = data.cases[0].criteria["stars"]
    assert stars.threshold == 1.0 and outcome(stars, True) == 1.0
    assert outcome(stars.model_copy(update={"score": 0.0}), True) == 0.0
    assert data.cases[0].criteria["tool_calls"].threshold == 0.0


def test_a_metric_without_a_declared_scale_gets_an_interval_around_its_drop():
    """A 1-5 code metric whose eval config gives no score_range: every case goes 5 -> 1. The
    interval was clipped to the [0, 1] scale assumed for it and read [-1.000, -3.957], its
    bounds inverted and the drop outside them."""
    from evalgate.gate.stats import drop_interval

    low, high = drop_interval([-4.0, -4.0, -3.9, -4.1] * 3, 0.0, 11.0, limit=1.0)
    assert low is not None and high is not None and low <= -4.0 <= high
    low, high = drop_interval([-0.5, -0.4, -0.6] * 4, 0.0, 11.0, limit=1.0)
    assert -1.0 <= low <= high <= 1.0  # within the range, as before
