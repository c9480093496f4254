"""gate.efficiency (evalgate.gate.efficiency): tokens, calls and seconds per turn against the baseline.

The statistics are checked against values worked out by hand; the gate through `compare()`
and through `evalgate compare` on two results files (Korean case ids)."""

from __future__ import annotations

import json
import math
import random
import re

import pytest

from evalgate.gate import efficiency as cost
from evalgate.gate import CaseKey, GatePolicy, Verdict, compare, update_ledger, value_key
from evalgate.efficiency import DURATION, MODEL_CALLS, TOKENS, TOOL_CALLS
from evalgate.results import Counts, CriterionSpec, EfficiencyResult, EfficiencyValue, RunInfo, Status, SuiteResult
from result_builders import case, crit, inv, run_of

# --- the statistics, by hand ---------------------------------------------------------------


@pytest.mark.parametrize(
    "metric, baseline, current, expected",
    [
        (TOKENS, 100.0, 120.0, math.log(1.2)),
        (TOKENS, 2000.0, 1000.0, math.log(0.5)),
        (DURATION, 1.5, 3.0, math.log(2.0)),
        (TOOL_CALLS, 0.0, 1.0, math.log(2.0)),  # counts: one added, so 0 -> 1 is defined (x2)
        (TOOL_CALLS, 2.0, 3.0, math.log(4 / 3)),  # ... and understates a small count's change
        (MODEL_CALLS, 0.0, 0.0, 0.0),
        (TOKENS, 0.0, 50.0, None),  # tokens and seconds: a 0 on a side is left out
        (DURATION, 1.0, 0.0, None),
        (TOKENS, None, 50.0, None),
        (TOOL_CALLS, -1.0, 1.0, None),
    ],
)
def test_log_ratio(metric, baseline, current, expected):
    got = cost.log_ratio(metric, baseline, current)
    assert got == expected if expected is None else got == pytest.approx(expected, abs=1e-12)


def _t2_cdf(t: float) -> float:
    """Student's t with 2 degrees of freedom, in closed form."""
    return 0.5 + t / (2 * math.sqrt(2 + t * t))


def test_ratio_test_by_hand():
    ratios = [0.1, 0.2, 0.3]
    r = cost.ratio_test(ratios, None, 0.0, math.inf)
    assert r["change"] == pytest.approx(math.exp(0.2) - 1)
    se = math.sqrt(0.01 / 3)  # sample variance 0.01, over n = 3
    assert r["se"] == pytest.approx(se)
    q = 0.95 / math.sqrt(2 * 0.975 * 0.025)  # t(0.975) with 2 df, closed form
    assert r["ci_low"] == pytest.approx(math.exp(0.2 - q * se) - 1)
    assert r["ci_high"] == pytest.approx(math.exp(0.2 + q * se) - 1)
    assert r["p"] is None  # no tolerance: reported, not tested
    # With a tolerance of 10%: H0 mean d <= log(1.1), Student's t with 2 df, one-sided.
    t = (0.2 - math.log(1.1)) / se
    assert cost.ratio_test(ratios, 0.10, 0.0, math.inf)["p"] == pytest.approx(1 - _t2_cdf(t), abs=1e-9)
    assert cost.ratio_test(ratios, 0.10, 0.0, math.inf)["p"] == pytest.approx(0.1057, abs=1e-3)
    # A larger tolerance: a larger p; an increase within it is nowhere near significant.
    assert cost.ratio_test(ratios, 0.30, 0.0, math.inf)["p"] > 0.5


def test_ratio_test_adds_the_run_to_run_part():
    ratios = [0.1 + 0.01 * i for i in range(21)]  # mean 0.2, sample variance 0.00385
    alone = cost.ratio_test(ratios, 0.05, 0.0, math.inf)
    runs = cost.ratio_test(ratios, 0.05, 2 * 0.05**2, math.inf)
    assert runs["se"] == pytest.approx(math.sqrt(0.00385 / 21 + 0.005))
    assert runs["p"] > alone["p"] and runs["ci_low"] < alone["ci_low"] < alone["ci_high"] < runs["ci_high"]
    assert cost.ratio_test([0.2], 0.05, 0.0, math.inf) == {"change": pytest.approx(math.expm1(0.2)), "ci_low": None, "ci_high": None, "p": None, "se": None}


def test_run_spread_by_hand():
    # Two cases moved together by a run-level shift of +-0.1 on the log scale, no own noise:
    # the run means' variance is 4 * 0.1^2 / 3 (sample variance of 0, .2, 0, .2), the residual 0.
    shift = [0.0, 0.2, 0.0, 0.2]
    histories = [[1000 * math.exp(s) for s in shift], [500 * math.exp(s) for s in shift]]
    spread = cost.run_spread(histories, TOKENS)
    assert spread == cost.Spread(run_var=pytest.approx(4 * 0.01 / 3), run_df=3, case_var=pytest.approx(0.0, abs=1e-15), case_df=3, runs=4)
    # Counts with one added: 0 and 1 tool calls are log 1 and log 2.
    spread = cost.run_spread([[0, 1, 0, 1], [1, 3, 1, 3]], TOOL_CALLS)
    assert spread.run_var == pytest.approx(4 * (math.log(2) / 2) ** 2 / 3)
    # The cases' own noise: log levels a = [0, .1, 0], b = [0, 0, .1]. Residuals (two-way,
    # case x run) +-0.05 four times: 0.01 over (2 - 1) * (3 - 1) df = 0.005; the run means
    # 0, .05, .05 vary by 0.000833, less 0.005 / 2: nothing left for the runs.
    spread = cost.run_spread([[1.0, math.exp(0.1), 1.0], [1.0, 1.0, math.exp(0.1)]], DURATION)
    assert spread.case_var == pytest.approx(0.005) and spread.case_df == 2 and spread.run_var == 0.0 and spread.runs == 3
    # The test then takes the cases' part from the ledger: 2 * 0.005 / n, not the ratios' spread.
    r = cost.ratio_test([0.1, 0.3], 0.05, 0.0, math.inf, spread)
    assert r["se"] == pytest.approx(math.sqrt(2 * 0.005 / 2))
    # Too little history: MIN_HISTORY (3) complete runs for at least half the cases.
    assert cost.run_spread([[1000, 1100], [500, 550]], TOKENS) is None
    assert cost.run_spread([[1000, None, 1100], [500, 0, 550]], TOKENS) is None
    assert cost.run_spread([None, None], TOKENS) is None


@pytest.mark.parametrize("x, text", [(0.3412, "+34%"), (-0.032, "-3.2%"), (0.0004, "+0%"), (1.5, "+150%"), (None, "n/a")])
def test_percent(x, text):
    assert cost.percent(x) == text


# --- the gate ------------------------------------------------------------------------------

IDS = [f"날씨_질문_{i:02d}" for i in range(80)]


def _suite(tokens: list[float], tools: list[float] | None = None, seconds: list[float] | None = None, name: str = "홈") -> SuiteResult:
    cases = []
    for i, eval_id in enumerate(IDS[: len(tokens)]):
        c = case("한국어_세트", eval_id, {"response_match_score": crit(0.5, (1.0, {}))}, [inv("서울 날씨 어때?", "맑아요")])
        eff = {TOKENS: EfficiencyResult(value=tokens[i], per_invocation=[EfficiencyValue(value=tokens[i], details={"total_tokens": tokens[i]})])}
        if tools is not None:
            eff[TOOL_CALLS] = EfficiencyResult(value=tools[i], per_invocation=[EfficiencyValue(value=tools[i])])
        if seconds is not None:
            eff[DURATION] = EfficiencyResult(value=seconds[i], per_invocation=[EfficiencyValue(value=seconds[i], details={"total_seconds": seconds[i]})])
        cases.append(c.model_copy(update={"efficiency": eff}))
    specs = {"response_match_score": CriterionSpec(threshold=0.5, version="1", judge=False)}
    return SuiteResult(name=name, status=Status.PASSED, not_evaluated_policy="warn", counts=Counts.of(cases), criteria=specs, cases=cases)


def _run(suite: SuiteResult):
    return run_of([suite], "sha256:c", RunInfo())


def _tokens(seed: int, raise_half: float = 1.0, n: int = 40) -> list[float]:
    """Token counts of n cases of different sizes, each varying 5% from run to run; the even
    cases multiplied by raise_half."""
    rng = random.Random(seed)
    return [round(800 * (1 + i % 9) * rng.lognormvariate(0, 0.05) * (raise_half if i % 2 == 0 else 1)) for i in range(n)]


def _policy(**tolerances) -> GatePolicy:
    return GatePolicy.model_validate({"efficiency": tolerances})


def test_an_increase_beyond_the_tolerance_fails_the_suite_with_the_row():
    base, cur = _run(_suite(_tokens(1))), _run(_suite(_tokens(2, raise_half=1.3)))
    result = compare(base, cur, _policy(token_usage_v1=0.05))
    assert result.verdict is Verdict.FAIL
    (suite,) = result.suites
    (row,) = suite.costs
    assert row.metric == TOKENS and row.status == "fail" and row.n_pairs == 40
    assert 0.10 < row.change < 0.18  # half the cases x1.3: exp(log(1.3) / 2) - 1 = 14%
    assert row.ci_low < row.change < row.ci_high
    assert row.p_adjusted is not None and row.p_adjusted < 0.01 and row.p_adjusted >= row.p_value
    assert suite.reasons[0].startswith(f"tokens per turn {cost.percent(row.change)} [{cost.percent(row.ci_low)}, {cost.percent(row.ci_high)}] over 40 cases")
    assert "beyond the tolerated +5% (gate.efficiency.token_usage_v1)" in suite.reasons[0]
    # Tolerating 20%, the same run passes, the row still says what changed.
    tolerant = compare(base, cur, _policy(token_usage_v1=0.20))
    assert tolerant.verdict is Verdict.PASS and tolerant.suites[0].costs[0].status == "pass"
    assert "within the tolerated +20%" in tolerant.suites[0].costs[0].reasons[0]


def test_unchanged_passes_and_unnamed_metrics_are_reported_not_gated():
    base = _run(_suite(_tokens(1), tools=[float(i % 3) for i in range(40)]))
    same = _run(_suite(_tokens(2), tools=[float(i % 3) for i in range(40)]))
    result = compare(base, same, _policy(token_usage_v1=0.05))
    assert result.verdict is Verdict.PASS
    rows = {r.metric: r for r in result.suites[0].costs}
    assert rows[TOKENS].status == "pass" and abs(rows[TOKENS].change) < 0.03
    assert rows[TOOL_CALLS].status == "reported" and rows[TOOL_CALLS].change == 0.0 and rows[TOOL_CALLS].p_value is None
    # Tripled tokens and doubled tool calls without a tolerance: reported, never a FAIL.
    grown = _run(_suite([3 * t for t in _tokens(2)], tools=[2 * (i % 3) + 1.0 for i in range(40)]))
    result = compare(base, grown, GatePolicy())
    assert result.verdict is Verdict.PASS
    assert [(r.metric, r.status) for r in result.suites[0].costs] == [(TOOL_CALLS, "reported"), (TOKENS, "reported")]
    assert re.match(r"tokens per turn \+20\d% \[\+1\d\d%, \+2\d\d%\] over 40 cases$", result.suites[0].costs[1].summary())


def test_the_efficiency_test_joins_the_holm_family():
    base, cur = _run(_suite(_tokens(1))), _run(_suite(_tokens(2, raise_half=1.3)))
    one = compare(base, cur, _policy(token_usage_v1=0.05)).suites[0].costs[0]
    # Gating tool calls too adds a test to the family (their p is large): tokens' adjusted p can only grow.
    base_t = _run(_suite(_tokens(1), tools=[1.0] * 40))
    cur_t = _run(_suite(_tokens(2, raise_half=1.3), tools=[1.0] * 40))
    rows = {r.metric: r for r in compare(base_t, cur_t, _policy(token_usage_v1=0.05, tool_call_count_v1=0.05)).suites[0].costs}
    assert rows[TOKENS].p_value == pytest.approx(one.p_value)
    assert rows[TOKENS].p_adjusted > one.p_adjusted


def test_absolute_mode_reports_but_does_not_decide():
    base, cur = _run(_suite(_tokens(1))), _run(_suite(_tokens(2, raise_half=1.3)))
    result = compare(base, cur, GatePolicy.model_validate({"mode": "absolute", "efficiency": {"token_usage_v1": 0.05}}))
    row = result.suites[0].costs[0]
    assert result.verdict is Verdict.PASS and row.change > 0.1 and row.status == "reported"
    assert row.reasons[0].endswith("(absolute mode: reported, not gated)")


def test_zeros_are_left_out_and_counted():
    tokens = _tokens(1)
    cur = list(tokens)
    cur[0] = cur[1] = 0.0
    result = compare(_run(_suite(tokens)), _run(_suite(cur)), _policy(token_usage_v1=0.05))
    row = result.suites[0].costs[0]
    assert row.n_pairs == 38 and row.zeros == 2 and row.change == 0.0
    assert "2 cases with 0 on a side left out (a log ratio is undefined)" in row.reasons


def _ledger_with(runs: list[SuiteResult]):
    ledger = None
    for suite in runs:
        ledger = update_ledger(ledger, _run(suite), 10)
    return ledger


def test_the_ledger_keeps_efficiency_values_and_the_gate_measures_run_to_run_noise():
    # Agent seconds on a shared machine: each run of the default branch is slower or faster as a
    # whole (sd 15% on the log scale) and every case varies a little more on its own.
    rng = random.Random(7)
    tokens = _tokens(1)

    def seconds_run(shift: float) -> list[float]:
        return [round((1 + i % 5) * math.exp(shift + rng.gauss(0, 0.03)), 3) for i in range(40)]

    history = [_suite(tokens, seconds=seconds_run(rng.gauss(0, 0.15))) for _ in range(8)]
    ledger = _ledger_with(history)
    key = CaseKey("홈", "한국어_세트", IDS[3])
    assert len(ledger[value_key(key, DURATION)]) == 8 and ledger[value_key(key, TOKENS)][-1] == tokens[3]
    base = history[-1]
    # The PR's run is 25% slower in every case, as busy runs of the default branch were.
    slower = _suite(tokens, seconds=[round(s * 1.25, 3) for s in (v.efficiency[DURATION].value for v in base.cases)])
    policy = _policy(invocation_duration_v1=0.05)
    measured = compare(_run(base), _run(slower), policy, ledger=ledger)
    row = measured.suites[0].costs[1]
    assert row.metric == DURATION and row.history == 8 and row.run_sd > 0.08
    assert row.change == pytest.approx(0.25, abs=0.01)
    assert measured.verdict is Verdict.PASS  # the history says whole runs move this much
    assert "measured on 8 runs" in " ".join(row.reasons)
    # Without history, 10% is assumed for seconds; a calm history makes the same change a FAIL.
    calm = _ledger_with([_suite(tokens, seconds=seconds_run(0.0)) for _ in range(7)] + [base])
    row = compare(_run(base), _run(slower), policy, ledger=calm).suites[0].costs[1]
    assert row.status == "fail" and row.run_sd < 0.03
    assumed = compare(_run(base), _run(slower), policy).suites[0].costs[1]
    assert assumed.history == 0 and assumed.run_sd == cost.ASSUMED_RUN_SD[DURATION]


def _wandering_world(seed: int = 11, runs: int = 9):
    """40 cases: 30 whose tokens vary 1% from run to run, 10 (every fourth) that take an extra
    model call at random (x1.5 or x2). Returns the default branch's runs (the baseline last)."""
    rng = random.Random(seed)
    sizes = [800 * (1 + i % 9) for i in range(40)]

    def one() -> list[float]:
        return [round(s * rng.lognormvariate(0, 0.01) * (rng.choice((1.0, 1.5, 2.0)) if i % 4 == 0 else 1.0)) for i, s in enumerate(sizes)]

    return [one() for _ in range(runs)], one


def test_a_case_whose_history_wanders_weighs_less_than_a_steady_one():
    history, one = _wandering_world()
    ledger = _ledger_with([_suite(t) for t in history])
    base = _run(_suite(history[-1]))
    policy = _policy(token_usage_v1=0.05)
    # +10% on every steady case: far beyond their 1% spread. The wandering cases' noise hides
    # it from the typical case's test; weighed by their own spread, the steady cases show it.
    pr = one()
    steady_up = [round(t * 1.10) if i % 4 else t for i, t in enumerate(pr)]
    result = compare(base, _run(_suite(steady_up)), policy, ledger=ledger)
    row = result.suites[0].costs[0]
    assert row.weighed_cases == 40 and row.weighed_runs == 8  # the baseline's run set aside
    assert row.mean_p > 0.01 and row.weighed_p < 1e-4 and row.p_value == pytest.approx(2 * row.weighed_p)
    assert result.verdict is Verdict.FAIL and row.status == "fail"
    assert "significant with each case weighed by its own run-to-run spread" in result.suites[0].reasons[0]
    assert any(r.startswith("40 cases, each weighed by its own run-to-run spread on 8 runs") for r in row.reasons)
    # The same +10% on the wandering cases instead (each x1.5 away from its baseline): they
    # weigh little and their outliers are capped, so it is no FAIL.
    wander_up = [round(t * 1.5) if i % 4 == 0 else t for i, t in enumerate(pr)]
    row = compare(base, _run(_suite(wander_up)), policy, ledger=ledger).suites[0].costs[0]
    assert row.weighed_p > 0.05 and row.status == "pass"
    # Weights, by hand: a wandering case's scale is many times a steady case's.
    chosen, rows = cost.own_rows([ledger[value_key(CaseKey("홈", "한국어_세트", IDS[i]), TOKENS)] for i in range(40)], history[-1], TOKENS)
    scales = cost.case_scales(rows)
    weights = cost.steady_weights(scales)
    assert chosen == list(range(40)) and len(rows[0]) == 8
    assert max(weights[i] for i in range(0, 40, 4)) < 0.2 * min(weights[i] for i in range(40) if i % 4)


def test_exactly_at_the_tolerance_is_no_fail_with_the_weighed_test():
    history, _one = _wandering_world()
    ledger = _ledger_with([_suite(t) for t in history])
    edge = [t * 1.05 for t in history[-1]]
    row = compare(_run(_suite(history[-1])), _run(_suite(edge)), _policy(token_usage_v1=0.05), ledger=ledger).suites[0].costs[0]
    assert row.weighed_p == pytest.approx(0.5) and row.mean_p == pytest.approx(0.5, abs=0.01) and row.status == "pass"


def test_weighed_test_by_hand():
    # Two cases of scale 0.01 and 0.04: weights 1/scale scaled to mean 1 (1.6, 0.4); z's
    # clipped at 2.5; the variance is the model's (sum of squared weights), no run part.
    edge = math.log1p(0.05)
    ratios = [edge + 0.01 * math.sqrt(2), edge + 1.0]
    p = cost.weighed_test(ratios, [0.01, 0.04], 0.05, 0.0, math.inf)
    stat = (1.6 * 1.0 + 0.4 * 2.5) / math.sqrt(1.6**2 + 0.4**2)
    assert p == pytest.approx(_t1_sf(stat), rel=1e-6)


def _t1_sf(t: float) -> float:
    # The Satterthwaite df of two cases without a run part is 1: Student's t on 1 df (Cauchy).
    return 0.5 - math.atan(t) / math.pi


def test_own_rows_set_the_baselines_run_aside_only_when_it_is_there():
    hist = [[10.0, 11.0, 12.0, 13.0], [20.0, 21.0, 22.0, 23.0]] * 6
    base = [13.0, 23.0] * 6
    chosen, rows = cost.own_rows(hist, base, TOKENS)
    assert chosen == list(range(12)) and rows[0] == [math.log(10.0), math.log(11.0), math.log(12.0)]
    chosen, rows = cost.own_rows(hist, [14.0, 23.0] * 6, TOKENS)  # the ledger does not hold the baseline's run
    assert len(rows[0]) == 4
    assert cost.own_rows(hist[:5], base[:5], TOKENS) == ([], [])  # fewer than WEIGHED_MIN_CASES


# --- the config ----------------------------------------------------------------------------


def _config(tmp_path, gate: str):
    path = tmp_path / "evalgate.yaml"
    path.write_text("suites:\n  - name: s\n    evalsets: e.json\n    actual: a.jsonl\n    criteria: {response_match_score: 0.5}\ngate:\n" + gate, encoding="utf-8")
    return path


def test_config_accepts_the_four_metrics(tmp_path):
    from evalgate.config import load_config

    path = _config(tmp_path, "  efficiency:\n    token_usage_v1: 0.15\n    tool_call_count_v1: 0\n    inference_call_count_v1: 1\n    invocation_duration_v1: 0.5\n")
    gate = load_config(path).config.gate
    assert gate.efficiency.tolerance(TOKENS) == 0.15 and gate.efficiency.tolerance(TOOL_CALLS) == 0.0
    assert gate.efficiency.tolerance(MODEL_CALLS) == 1.0 and gate.efficiency.tolerance(DURATION) == 0.5
    unset = load_config(_config(tmp_path, "  alpha: 0.01\n")).config.gate.efficiency
    assert [unset.tolerance(m) for m in (TOKENS, TOOL_CALLS, MODEL_CALLS, DURATION)] == [None] * 4


@pytest.mark.parametrize(
    "gate, expected",
    [
        ("  efficiency:\n    token_usage: 0.15\n", ["gate.efficiency.token_usage", "token_usage_v1"]),
        ("  efficiency:\n    tokens_per_turn: 0.15\n", ["gate.efficiency.tokens_per_turn"]),
        ("  efficiency:\n    token_usage_v1: -0.1\n", ["gate.efficiency.token_usage_v1", "a tolerated increase is a share of at least 0, not -0.1"]),
        ("  efficiency:\n    invocation_duration_v1: lots\n", ["gate.efficiency.invocation_duration_v1"]),
        ("  efficiency: 0.15\n", ["gate.efficiency"]),
    ],
)
def test_config_errors_name_the_place(cli, tmp_path, gate, expected):
    path = _config(tmp_path, gate)
    code, _, err = cli("compare", "--current", str(path), "--baseline", str(path), "--config", str(path), cwd=tmp_path)
    assert code == 2 and "Traceback" not in err
    assert "evalgate.yaml" in err
    for text in expected:
        assert text in err, err


# --- `evalgate compare` end to end ---------------------------------------------------------


def _write(path, suite: SuiteResult):
    path.write_text(_run(suite).model_dump_json(), encoding="utf-8")
    return path


def test_evalgate_compare_end_to_end(cli, tmp_path):
    config = tmp_path / "evalgate.yaml"
    config.write_text("suites:\n  - name: 홈\n    evalsets: e.json\n    actual: a.jsonl\n    criteria: {response_match_score: 0.5}\n"
                      "gate:\n  efficiency:\n    token_usage_v1: 0.05\n", encoding="utf-8")
    base = _write(tmp_path / "base.json", _suite(_tokens(1, n=80)))
    raised = _write(tmp_path / "raised.json", _suite(_tokens(2, raise_half=1.3, n=80)))
    same = _write(tmp_path / "same.json", _suite(_tokens(2, n=80)))

    code, out, err = cli("compare", "--baseline", str(base), "--current", str(raised), "--config", str(config), "--html", str(tmp_path / "r.html"), cwd=tmp_path)
    assert code == 1, out + err
    assert out.startswith("**evalgate FAIL**")
    row = next(line for line in out.splitlines() if line.startswith("| 홈 | tokens per turn |"))
    assert "| 80 | +5% | FAIL: significantly beyond (p = " in row
    assert "- 홈: FAIL: tokens per turn +" in out and "beyond the tolerated +5% (gate.efficiency.token\\_usage\\_v1)" in out
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert '<tr class="cost-fail"><td class="t">홈</td><td>tokens per turn</td>' in html

    code, out, err = cli("compare", "--baseline", str(base), "--current", str(same), "--config", str(config), "--html", str(tmp_path / "s.html"), cwd=tmp_path)
    assert code == 0, out + err
    assert out.startswith("**evalgate PASS**")
    row = next(line for line in out.splitlines() if line.startswith("| 홈 | tokens per turn |"))
    assert "| 80 | +5% | within (p = " in row
    assert json.loads(same.read_text(encoding="utf-8"))["suites"][0]["cases"][0]["eval_id"] == "날씨_질문_00"
