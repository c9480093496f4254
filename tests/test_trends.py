"""Trends: points per default-branch run, where a run sits, the charts that draw them."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path

import pytest

from evalgate.baselines import DirStore, decode_trend, encode_trend, trend_path
from evalgate.gate import GatePolicy, compare
from evalgate.errors import InputError
from evalgate.reports.markdown import MAX_CHARTS, mermaid_chart, render_comment, render_summary, sparkline
from evalgate.reports.trend_chart import svg_chart
from evalgate.results import CaseResult, Counts, CriterionResult, CriterionSpec, RunResults, Status, SuiteResult
from evalgate.gate.trends import KEEP, MIN_POINTS, Series, Trend, TrendPoint, add_point, axis_range, position, run_means, series

NOW = datetime(2026, 11, 23, 3, 0, tzinfo=timezone.utc)
TT = "tool_trajectory_avg_score"
RM = "response_match_score"


def _case(eval_id: str, scores: dict[str, float | None]) -> CaseResult:
    criteria = {
        name: CriterionResult(score=s, status=Status.NOT_EVALUATED if s is None else Status.PASSED if s >= 0.5 else Status.FAILED, threshold=0.5)
        for name, s in scores.items()
    }
    status = Status.FAILED if any(r.status is Status.FAILED for r in criteria.values()) else Status.PASSED
    return CaseResult(eval_set_id="set", eval_id=eval_id, expected_digest="sha256:0", status=status, criteria=criteria)


def _run(suites: dict[str, list[CaseResult]]) -> RunResults:
    out = []
    for name, cases in suites.items():
        names = sorted({c for case in cases for c in case.criteria})
        out.append(SuiteResult(name=name, status=Status.PASSED, not_evaluated_policy="fail", counts=Counts.of(cases),
                               criteria={n: CriterionSpec(threshold=0.5, version="1") for n in names}, cases=cases))
    every = [c for s in out for c in s.cases]
    return RunResults(config_digest="sha256:cfg", status=Status.PASSED, counts=Counts.of(every), suites=out)


def _sha(i: int) -> str:
    return f"{i:040x}"


def _history(values: list[float], suite: str = "고객지원") -> Trend:
    trend = None
    for i, v in enumerate(values):
        trend = add_point(trend, "evalgate", _run({suite: [_case("a", {TT: v}), _case("b", {TT: v})]}), _sha(i + 1), "refs/heads/main", NOW)
    return trend


def test_a_point_is_the_runs_own_mean_over_evaluated_cases():
    run = _run({"고객지원": [_case("a", {TT: 1.0, RM: 0.25}), _case("b", {TT: 0.0, RM: None}), _case("c", {TT: 1.0, RM: 0.75})],
                "サポート": [_case("d", {RM: None})]})
    means = run_means(run)
    assert means["고객지원"][TT].mean == pytest.approx(2 / 3, abs=1e-6) and means["고객지원"][TT].cases == 3
    assert means["고객지원"][RM].mean == 0.5 and means["고객지원"][RM].cases == 2  # the NOT_EVALUATED case is left out
    assert "サポート" not in means  # nothing evaluated there: no point to draw
    point = add_point(None, "evalgate", run, _sha(1), "refs/heads/main", NOW).points[0]
    assert point.created_at == "2026-11-23T03:00:00Z" and point.config_digest == "sha256:cfg"


def test_the_file_keeps_the_last_points_and_reports_show_the_last_thirty():
    trend = _history([0.5 + i / 1000 for i in range(KEEP + 5)])
    assert len(trend.points) == KEEP and trend.points[-1].commit == _sha(KEEP + 5)
    [s] = series(trend, _run({"고객지원": [_case("a", {TT: 0.9})]}))
    assert len(s.values) == 30 and s.labels[-1] == _sha(KEEP + 5)[:7] and s.current == 0.9


def test_series_follow_the_runs_suites_and_leave_out_what_the_run_lacks():
    trend = _history([0.8, 0.9], suite="old-suite")
    assert series(trend, _run({"고객지원": [_case("a", {TT: 1.0})]})) == []
    trend = _history([0.8, 0.9])
    [s] = series(trend, _run({"고객지원": [_case("a", {TT: None})]}))
    assert s.current is None and position(s) is None  # history to draw, no value to place


@pytest.mark.parametrize(
    "history, now, where, rank",
    [
        ([0.8, 0.85, 0.9], 0.7, "below", 1),
        ([0.8, 0.85, 0.9], 0.8, "within", 1),  # on the edge is within
        ([0.8, 0.85, 0.9], 0.86, "within", 3),
        ([0.8, 0.85, 0.9], 0.95, "above", 4),
        ([1.0, 1.0, 1.0], 0.5, "below", 1),
    ],
)
def test_position_against_the_earlier_runs(history, now, where, rank):
    pos = position(Series("s", TT, ["a"] * len(history), history, now))
    assert (pos.where, pos.rank, pos.runs, pos.low, pos.high) == (where, rank, len(history), min(history), max(history))


def test_too_little_history_places_nothing():
    assert position(Series("s", TT, ["a"] * (MIN_POINTS - 1), [0.9] * (MIN_POINTS - 1), 0.1)) is None


def test_axis_pads_and_stays_within_scores():
    assert axis_range([0.8, 0.9]) == (0.78, 0.92)
    assert axis_range([1.0, 1.0]) == (0.98, 1.0)
    assert axis_range([0.0, 1.0]) == (0.0, 1.0)
    assert axis_range([2.0, 4.5]) == (1.5, 5.0)  # a 1-5 scale (a Vertex metric) is not clamped


def test_sparkline():
    assert sparkline([0.0, 0.5, 1.0]) == "▁▅█" and sparkline([0.7, 0.7]) == "▁▁"


def test_the_mermaid_chart_is_made_of_numbers_and_hex_ids_only():
    s = Series("s", TT, ["abc1234", "9f00e1d", "0123abc"], [0.8, 0.85, 0.9], 0.7)
    chart = mermaid_chart(s)
    assert chart.splitlines() == [
        "xychart-beta",
        '    x-axis ["abc1234", "9f00e1d", "0123abc", "this run"]',
        '    y-axis "mean" 0.66 --> 0.94',
        "    line [0.8000, 0.8500, 0.9000, 0.7000]",
    ]
    assert mermaid_chart(Series("s", TT, ["abc1234"], [0.5], None)) is None  # one point is no line


@pytest.mark.parametrize(
    "point, what",
    [
        ({"commit": '</div>"<script>', "created_at": "t"}, "commit"),  # printed into charts as is: hex only
        ({"commit": "abc", "created_at": "t"}, "commit"),
        ({"commit": "a" * 40, "created_at": "t", "means": {"s": {TT: {"mean": float("nan"), "cases": 1}}}}, "mean"),
        ({"commit": "a" * 40, "created_at": "t", "means": {"s": {TT: {"mean": float("inf"), "cases": 1}}}}, "mean"),
    ],
)
def test_a_trend_file_holds_only_hex_commits_and_finite_means(tmp_path, point, what):
    """What the charts print unescaped is checked where it enters: every read of the file."""
    file = tmp_path / trend_path("evalgate")
    file.parent.mkdir(parents=True)
    data = {"schema_version": 1, "gate_id": "evalgate", "points": [point]}
    file.write_bytes(gzip.compress(json.dumps(data).encode()))
    with pytest.raises(InputError) as e:
        DirStore(tmp_path, "evalgate").load_trend("evalgate")
    assert what in str(e.value) and "Delete it" in str(e.value)


def test_a_run_mean_leaves_out_scores_that_are_not_numbers():
    run = _run({"s": [_case("a", {TT: float("nan")}), _case("b", {TT: 1.0})]})
    assert run_means(run)["s"][TT].mean == 1.0 and run_means(run)["s"][TT].cases == 1
    assert add_point(None, "evalgate", run, _sha(1), "", NOW).points[0].means["s"][TT].mean == 1.0


def test_the_svg_chart_is_well_formed_and_marks_this_run():
    s = Series("s", TT, ["abc1234", "9f00e1d", "0123abc"], [0.8, 0.85, 0.9], 0.7)
    svg = svg_chart(s)
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    titles = [t.text for t in root.iter(f"{ns}title")]
    assert titles == ["abc1234: 0.800", "9f00e1d: 0.850", "0123abc: 0.900", "this run: 0.700"]
    assert len(root.findall(f"{ns}circle[@class='now']")) == 1
    assert "style=" not in svg  # the page's CSP allows no inline style attribute
    assert svg_chart(Series("s", TT, [], [], None)) is None


def _report_inputs(suite: str = "고객지원", *others: str):
    trend = _history([0.9, 0.95, 1.0, 0.95], suite=suite)
    base = _run({suite: [_case("a", {TT: 1.0}), _case("b", {TT: 1.0})], **{o: [_case("z", {TT: 1.0})] for o in others}})
    now = _run({suite: [_case("a", {TT: 1.0}), _case("b", {TT: 0.0})], **{o: [_case("z", {TT: 1.0})] for o in others}})
    return compare(base, now, GatePolicy()), now, trend


def test_the_comment_places_this_run_and_the_summary_draws_the_trend():
    comparison, now, trend = _report_inputs()
    comment = render_comment(comparison, now, trend=trend)
    assert "| this run against the last 4 default-branch runs |" in comment
    assert f"{sparkline([0.9, 0.95, 1.0, 0.95])} **▼ 0.500**, below 0.900–1.000 |" in comment
    assert "```mermaid" not in comment  # the comment places the run; the summary draws
    summary = render_summary(comparison, now, trend=trend)
    assert "### Trends" in summary and summary.count("```mermaid") == 1
    assert "line [0.9000, 0.9500, 1.0000, 0.9500, 0.5000]" in summary
    # Without a trend nothing of it shows.
    assert "default-branch runs" not in render_comment(comparison, now) + render_summary(comparison, now)


def test_hostile_suite_names_stay_text_in_chart_titles():
    # Two suites: chart titles name the suite.
    comparison, now, trend = _report_inputs("x\n```\n<img src=x onerror=alert(1)> [a](http://evil)", "other")
    summary = render_summary(comparison, now, trend=trend)
    [title] = [line for line in summary.splitlines() if line.startswith("#### ")]
    assert "<img" not in title and "&lt;img" in title and "\\[a\\]" in title and "\\`\\`\\`" in title
    # Every mermaid block is ours: nothing but the four lines of the chart.
    for block in re.findall(r"```mermaid\n(.*?)\n```", summary, re.S):
        assert len(block.splitlines()) == 4 and block.startswith("xychart-beta")


def test_charts_are_capped_in_the_summary():
    names = [f"suite-{i:02d}" for i in range(MAX_CHARTS + 3)]
    trend = None
    for i in range(3):
        trend = add_point(trend, "evalgate", _run({n: [_case("a", {TT: 1.0})] for n in names}), _sha(i + 1), "", NOW)
    now = _run({n: [_case("a", {TT: 1.0})] for n in names})
    summary = render_summary(compare(None, now, GatePolicy()), now, trend=trend)
    assert summary.count("```mermaid") == MAX_CHARTS and "_3 more criteria: their charts are in report.html._" in summary


def test_the_store_keeps_the_trend_deterministically(tmp_path):
    store = DirStore(tmp_path, "evalgate")
    assert store.load_trend("evalgate") is None
    run = _run({"고객지원": [_case("a", {TT: 1.0})]})
    for i in range(2):
        store.save_trend("evalgate", lambda old, i=i: add_point(old, "evalgate", run, _sha(i + 1), "refs/heads/main", NOW))
    trend = store.load_trend("evalgate")
    assert [p.commit for p in trend.points] == [_sha(1), _sha(2)]
    data = (tmp_path / trend_path("evalgate")).read_bytes()
    assert data == encode_trend(trend) and decode_trend(data, "t") == trend
    assert json.loads(gzip.decompress(data))["points"][0]["means"]["고객지원"][TT] == {"cases": 1, "mean": 1.0}


def test_a_damaged_trend_file_says_how_to_recover(tmp_path):
    file = tmp_path / trend_path("evalgate")
    file.parent.mkdir(parents=True)
    file.write_bytes(gzip.compress(b'{"schema_version": 9}'))
    with pytest.raises(InputError) as e:
        DirStore(tmp_path, "evalgate").load_trend("evalgate")
    text = str(e.value)
    assert "trends/evalgate.json.gz" in text and "unknown trend schema_version 9" in text and "Delete it" in text
    assert TrendPoint(commit="abc1234", created_at="t").means == {}


CHROMIUM = "/usr/bin/chromium"


def test_mermaid_renders_every_chart_the_summary_carries():
    """GitHub draws ```mermaid blocks with the mermaid library: ours must parse and draw there.
    Runs with EVALGATE_MERMAID naming mermaid.min.js (the npm package; .ci/run installs it)."""
    js = os.environ.get("EVALGATE_MERMAID")
    if not js:
        pytest.skip("EVALGATE_MERMAID is not set (npm install mermaid@11.17.2; set it to dist/mermaid.min.js)")
    assert Path(js).is_file(), f"EVALGATE_MERMAID={js} does not exist"
    if not Path(CHROMIUM).is_file() and os.environ.get("EVALGATE_BROWSER") != "require":
        pytest.skip(f"no chromium at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    comparison, now, trend = _report_inputs("고객지원", "サポート")
    wide = _history([0.5 + (i % 7) / 20 for i in range(40)])  # 30 shown of 40, a wide range
    charts = re.findall(r"```mermaid\n(.*?)\n```", render_summary(comparison, now, trend=trend), re.S)
    charts += [mermaid_chart(s) for s in series(wide, now)]
    charts.append(mermaid_chart(Series("s", TT, ["abc1234", "9f00e1d", "0123abc"], [2.0, 4.5, 3.0], 1.5)))  # a 1-5 scale
    assert len(charts) == 3
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which(CHROMIUM) or CHROMIUM, args=["--no-sandbox", "--headless=new"])
        try:
            page = browser.new_page()
            page.set_content("<!DOCTYPE html><html><body></body></html>")
            page.add_script_tag(path=js)
            page.evaluate("() => mermaid.initialize({startOnLoad: false, securityLevel: 'strict'})")
            for i, chart in enumerate(charts):
                out = page.evaluate(
                    "async ([id, src]) => { try { const r = await mermaid.render(id, src); return r.svg; } catch (e) { return 'ERROR ' + e.message; } }",
                    [f"c{i}", chart],
                )
                assert not out.startswith("ERROR"), f"{chart}\n{out}"
                root = ET.fromstring(out.replace("<br>", "<br/>"))
                texts = "".join(root.itertext())
                assert "this run" in texts, texts
                assert len(re.findall(r"<path", out)) >= 1  # the line is drawn
            # A chart that is not valid Mermaid fails here: the test can fail.
            bad = page.evaluate("async () => { try { await mermaid.render('bad', 'xychart-beta\\n  line [1, x]'); return 'ok'; } catch (e) { return 'ERROR'; } }")
            assert bad == "ERROR"
        finally:
            browser.close()
