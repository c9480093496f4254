"""The Markdown report (PR comment and job summary): snapshots, size limits, hostile text.

Snapshots live in tests/snapshots/markdown/*.md and are compared exactly. To rewrite them
after an intended change, run with EVALGATE_UPDATE_SNAPSHOTS=1, then read every changed
file: it is what a reviewer will see.
"""

from __future__ import annotations

import re
import time
import unicodedata
from dataclasses import replace
from pathlib import Path
from typing import Optional

import pytest

from conftest import check_snapshot
from pydantic import ConfigDict

from evalgate.gate import (
    BaselineInfo,
    CaseChange,
    CaseKey,
    Comparison,
    CriterionComparison,
    SuiteComparison,
    Verdict,
)
from evalgate.reports import markdown, sanitize
from evalgate.reports.markdown import marker, render_comment, render_summary
from evalgate.reports.sanitize import fence_for, fenced, html, md
from evalgate.results import (
    CaseResult,
    Counts,
    CriterionResult,
    CriterionSpec,
    InvocationResult,
    InvocationSummary,
    RunInfo,
    RunResults,
    Status,
    SuiteResult,
)
from result_builders import case as _case, crit as _crit, inv as _inv, run_of

SNAPSHOTS = Path(__file__).parent / "snapshots" / "markdown"
RUN_URL = "https://github.com/acme/agent/actions/runs/123456789"
TT = "tool_trajectory_avg_score"
RM = "response_match_score"
FR = "final_response_match_v2"
RB = "rubric_based_final_response_quality_v1"

# --- building results and comparisons by hand ------------------------------------------


def _passing(set_id: str, eval_id: str, text: str = "Done.") -> CaseResult:
    return _case(
        set_id,
        eval_id,
        {TT: _crit(1.0, (1.0, {})), RM: _crit(0.7, (0.9, {}))},
        [_inv("Do it", text, text, [("do", {})], [("do", {})])],
    )


class _SpecWithStats(CriterionSpec):
    """A criterion spec carrying judge usage, as the judge criteria will record it."""

    model_config = ConfigDict(extra="allow")


def _run(suites: dict[str, list[CaseResult]], *, duration: Optional[float] = 192.4, judge_stats=None) -> RunResults:
    results = []
    for name, cases in suites.items():
        counts = Counts.of(cases)
        specs: dict[str, CriterionSpec] = {}
        for case in cases:
            for crit, r in case.criteria.items():
                specs.setdefault(crit, CriterionSpec(threshold=r.threshold, version="1", judge=crit in (FR, RB)))
        for crit, stats in (judge_stats or {}).get(name, {}).items():
            specs[crit] = _SpecWithStats(threshold=specs[crit].threshold, version="1", judge=True, stats=stats)
        status = Status.FAILED if counts.failed else Status.PASSED
        results.append(SuiteResult(name=name, status=status, not_evaluated_policy="warn", counts=counts, criteria=specs, cases=cases))
    return run_of(results, "sha256:c", RunInfo(started_at="2026-05-12T09:30:00Z", duration_seconds=duration))


def _row(suite: str, criterion: str, threshold: float, n: int, base: Optional[float], cur: Optional[float],
         status: Verdict = Verdict.PASS, *, judge: bool = False, ci: Optional[tuple[float, float]] = None,
         p: Optional[float] = None, reasons=()) -> CriterionComparison:
    delta = None if base is None or cur is None else cur - base
    if ci is None and delta is not None:
        ci = (delta - 0.01, delta + 0.01)
    return CriterionComparison(
        suite=suite, criterion=criterion, threshold=threshold, judge=judge, n_pairs=n, evaluated=n,
        baseline_mean=base, current_mean=cur, delta=delta,
        ci_low=ci[0] if ci and delta is not None else None, ci_high=ci[1] if ci and delta is not None else None,
        p_value=p, p_adjusted=None if p is None else min(1.0, p * 2), status=status, reasons=list(reasons),
    )


def _suite(name: str, verdict: Verdict, criteria: list[CriterionComparison], *, reasons=(), changes=(), added=(),
           removed=(), changed=(), skipped=()) -> SuiteComparison:
    return SuiteComparison(
        name=name, verdict=verdict, reasons=list(reasons), criteria=criteria, changes=list(changes),
        added=list(added), removed=list(removed), changed=list(changed), skipped_criteria=list(skipped),
    )


BASE = BaselineInfo(
    commit="3f9c2a71be04d5e6f7a8b9c0d1e2f3a4b5c6d7e8",
    requested_commit="3f9c2a71be04d5e6f7a8b9c0d1e2f3a4b5c6d7e8",
    distance=0,
    created_at="2026-05-10T08:00:00Z",
)


def _comparison(verdict: Verdict, suites: list[SuiteComparison], *, reasons=(), baseline: Optional[BaselineInfo] = BASE,
                config_changed: bool = False) -> Comparison:
    return Comparison(
        verdict=verdict, reasons=list(reasons), suites=suites, baseline=baseline, config_changed=config_changed,
        mode="regression" if baseline is not None else "absolute",
    )


# --- scenarios ------------------------------------------------------------------------


def _with_efficiency(case: CaseResult, tokens: int, seconds: float) -> CaseResult:
    """The case as an agent run leaves it: ADK's efficiency metrics of one turn with one tool
    call, two model calls, `tokens` tokens and `seconds` seconds (0.8 of them the model's)."""
    from evalgate import adk, efficiency

    turn = adk.Invocation.model_validate({
        "user_content": {"parts": [{"text": "Do it"}]},
        "intermediate_data": {"invocation_events": [
            {"author": "a", "content": {"parts": [{"function_call": {"name": "do", "args": {}}}]}, "usage_metadata": {"prompt_token_count": tokens - 10, "candidates_token_count": 5}},
            {"author": "a", "usage_metadata": {"prompt_token_count": 0, "candidates_token_count": 5}, "model_version": "m"},
        ]},
        "duration": seconds, "model_duration": 0.8, "tool_duration": 0.1,
    })
    return case.model_copy(update={"efficiency": efficiency.compute([[turn]])})


def scenario_pass() -> tuple[Comparison, RunResults]:
    fixed = _with_efficiency(_passing("weather", "busan_forecast"), 1234, 1.5)
    current = _run({"home": [_with_efficiency(_passing("lights", "lights_off"), 300, 1.25), _passing("lights", "dim_hall"), fixed]})
    comparison = _comparison(
        Verdict.PASS,
        [
            _suite(
                "home", Verdict.PASS,
                [_row("home", TT, 1.0, 3, 0.667, 1.0), _row("home", RM, 0.7, 3, 0.9, 0.9)],
                changes=[CaseChange(CaseKey("home", "weather", "busan_forecast"), "fixed", {TT: (0.0, 1.0)})],
            )
        ],
        reasons=["no criterion dropped; 1 case fixed"],
    )
    return comparison, current


def _weather_regression() -> CaseResult:
    return _case(
        "weather",
        "seoul_forecast",
        {
            TT: _crit(1.0, (0.0, {})),
            RM: _crit(0.7, (0.41, {})),
            FR: _crit(0.5, (0.0, {"reasons": ["The response names Busan, but the user asked about Seoul.",
                                              "Temperature units missing (expected °C)."]})),
        },
        [
            _inv(
                "서울 내일 날씨 어때?",
                "부산은 내일 맑고 최고 기온 24도입니다.",
                "서울은 내일 흐리고 오후에 비가 오겠습니다. 최고 기온 19°C.",
                [("get_weather", {"city": "Busan", "date": "tomorrow"})],
                [("geocode", {"q": "서울"}), ("get_weather", {"city": "Seoul", "date": "tomorrow"})],
            )
        ],
    )


def _booking_broken() -> CaseResult:
    return _case(
        "travel",
        "book_tokyo_hotel",
        {
            TT: _crit(1.0, (1.0, {}), (0.0, {})),
            RB: _crit(0.8, (1.0, {}), (0.5, {"rubrics": [
                {"rubric_id": "confirms_dates", "verdict": True, "rationale": "States 5月20日〜22日 correctly."},
                {"rubric_id": "gives_price", "verdict": False, "rationale": "No total price is given."},
            ]})),
        },
        [
            _inv("東京のホテルを探して", "条件を教えてください。", "条件を教えてください。", [], []),
            _inv(
                "5月20日から2泊、新宿で",
                "新宿のホテルを予約しました。",
                "新宿グランドホテルを2泊、合計42,000円で予約しました。",
                [("search_hotels", {"area": "新宿", "nights": 2})],
                [("search_hotels", {"area": "新宿", "nights": 2}), ("book_hotel", {"hotel_id": "h-17", "nights": 2})],
            ),
        ],
    )


def scenario_fail() -> tuple[Comparison, RunResults]:
    still = _case("lights", "party_mode", {TT: _crit(1.0, (0.0, {}))}, [_inv("Party!", "OK", "OK", [], [("party", {})])])
    fixed = _passing("lights", "dim_hall")
    home_cases = [_passing("lights", "lights_off"), fixed, still, _weather_regression(), _passing("weather", "jeju_wind")]
    travel_cases = [_booking_broken(), _passing("travel", "cancel_booking"), _passing("travel", "osaka_trains")]
    current = _run(
        {"home": home_cases, "travel": travel_cases},
        judge_stats={"home": {FR: {"requests": 20, "cache_hits": 5, "retries": 1, "failures": 0,
                                   "input_tokens": 18250, "output_tokens": 2210}}},
    )
    home = _suite(
        "home", Verdict.FAIL,
        [
            _row("home", TT, 1.0, 4, 0.75, 0.5, Verdict.FAIL, ci=(-0.5, 0.0), p=0.0312),
            _row("home", RM, 0.7, 4, 0.88, 0.79, Verdict.PASS, p=0.12),
            _row("home", FR, 0.5, 4, 0.9, 0.65, Verdict.INCONCLUSIVE, judge=True, ci=(-0.55, 0.05), p=0.09,
                 reasons=["drop of 0.25 is not significant (p=0.180 after Holm)"]),
        ],
        reasons=["tool_trajectory_avg_score dropped by 0.250 (p=0.062 after Holm)"],
        changes=[
            CaseChange(CaseKey("home", "weather", "seoul_forecast"), "regressed", {TT: (1.0, 0.0), FR: (1.0, 0.0)}),
            CaseChange(CaseKey("home", "lights", "dim_hall"), "fixed", {TT: (0.0, 1.0)}),
        ],
        added=[CaseKey("home", "weather", "jeju_wind")],
        removed=[CaseKey("home", "weather", "old_forecast")],
        skipped=[f"{FR}: 2 cases NOT_EVALUATED (judge timed out)"],
    )
    travel = _suite(
        "travel", Verdict.FAIL,
        [_row("travel", TT, 1.0, 2, 1.0, 0.75, Verdict.PASS, ci=(-0.5, 0.0), p=0.25),
         replace(_row("travel", RB, 0.8, 3, 0.95, 0.83, Verdict.PASS, judge=True, p=0.2), basis="samples")],
        reasons=["travel / book_tokyo_hotel broke: it passed its last 10 runs"],
        changes=[CaseChange(CaseKey("travel", "travel", "book_tokyo_hotel"), "broken_stable", {TT: (1.0, 0.5), RB: (1.0, 0.75)},
                            p_value=0.00098, p_adjusted=0.0049)],
        changed=[CaseKey("travel", "travel", "osaka_trains")],
    )
    comparison = _comparison(
        Verdict.FAIL, [home, travel],
        reasons=["home: tool_trajectory_avg_score dropped significantly", "travel: a stable case broke (book_tokyo_hotel)"],
        baseline=BaselineInfo(commit="a1b2c3d4e5f60718293a4b5c6d7e8f9012345678", requested_commit="9f8e7d6c5b4a39281706f5e4d3c2b1a098765432",
                              distance=2, created_at="2026-05-09T21:15:00Z"),
    )
    return comparison, current


def scenario_inconclusive() -> tuple[Comparison, RunResults]:
    cases = [_passing("faq", f"q{i}") for i in range(1, 6)]
    cases[2] = _case("faq", "q3", {FR: _crit(0.5, (0.4, {"reasons": ["Omits the refund window."]}))},
                     [_inv("How do refunds work?", "You can ask for a refund.", "Refunds within 30 days.")])
    current = _run({"support": cases}, duration=41.0)
    comparison = _comparison(
        Verdict.INCONCLUSIVE,
        [_suite("support", Verdict.INCONCLUSIVE,
                [_row("support", FR, 0.5, 5, 0.92, 0.88, Verdict.INCONCLUSIVE, judge=True, ci=(-0.11, 0.03), p=0.21)],
                reasons=["final_response_match_v2 dropped by 0.040, not significant (p=0.420): passes with a warning"],
                changes=[CaseChange(CaseKey("support", "faq", "q3"), "score_drop", {FR: (0.6, 0.4)})])],
        reasons=["a drop that may be judge noise: passing with a warning"],
    )
    return comparison, current


def scenario_no_baseline() -> tuple[Comparison, RunResults]:
    failing = _case(
        "lights", "lights_off",
        {TT: _crit(1.0, (0.0, {})), RM: _crit(0.7, (0.5, {}))},
        [_inv("Turn off the lights", "Lights are on.", "Lights off.", [("set_light", {"on": True})], [("set_light", {"on": False})])],
    )
    current = _run({"home": [failing, _passing("lights", "dim_hall")]}, duration=None)
    comparison = _comparison(
        Verdict.FAIL,
        [_suite("home", Verdict.FAIL, [_row("home", TT, 1.0, 2, None, 0.5, Verdict.FAIL), _row("home", RM, 0.7, 2, None, 0.7, Verdict.PASS)],
                reasons=["1 case below a threshold"])],
        reasons=["absolute thresholds: 1 case failed"],
        baseline=None,
    )
    return comparison, current


def scenario_config_changed() -> tuple[Comparison, RunResults]:
    current = _run({"home": [_passing("lights", "lights_off"), _passing("lights", "dim_hall")]})
    comparison = _comparison(
        Verdict.PASS,
        [_suite("home", Verdict.PASS, [_row("home", TT, 1.0, 2, 1.0, 1.0)],
                changed=[CaseKey("home", "lights", "dim_hall")],
                skipped=["response_match_score: new in this run, no baseline to compare with"])],
        reasons=["compared on the criteria both runs share"],
        config_changed=True,
    )
    return comparison, current


def scenario_judges_skipped() -> tuple[Comparison, RunResults]:
    """No judge credentials (a fork's pull request): the tool calls pass, the judge is never
    heard, so every case is PASSED and incomplete; the headline must say so."""
    skipped = _crit(0.8, (None, {}), error="no judge credentials")

    def case(eval_id: str, question: str, answer: str) -> CaseResult:
        return _case("faq", eval_id, {TT: _crit(1.0, (1.0, {})), FR: skipped}, [_inv(question, answer, answer, [("search", {})], [("search", {})])])

    current = _run({"support": [case("환불", "환불 되나요?", "30일 이내 환불됩니다."), case("返品", "返品できますか？", "30日以内なら返品できます。")]})
    comparison = _comparison(
        Verdict.INCONCLUSIVE,
        [_suite("support", Verdict.INCONCLUSIVE, [_row("support", TT, 1.0, 2, 1.0, 1.0)],
                reasons=["2 of 2 cases with criteria NOT_EVALUATED (not_evaluated: warn)"],
                skipped=["final_response_match_v2: not evaluated in this run (no judge credentials)"])],
        reasons=["cases not evaluated: passing with a warning"],
    )
    return comparison, current


def _many_regressions(n: int, response_size: int) -> tuple[Comparison, RunResults]:
    body = ("The agent kept talking about something else entirely. " * (response_size // 55 + 1))[:response_size]
    cases, changes = [], []
    for i in range(n):
        eval_id = f"case_{i:05d}"
        cases.append(_case("bulk", eval_id, {TT: _crit(1.0, (0.0, {})), RM: _crit(0.7, (0.1, {"reasons": [body]}))},
                           [_inv(f"Question {i}: {body}", body, body, [("lookup", {"id": i, "q": body[:200]})], [("lookup", {"id": i})])]))
        changes.append(CaseChange(CaseKey("bulk", "bulk", eval_id), "regressed", {TT: (1.0, 0.0), RM: (0.9, 0.1)}))
    current = _run({"bulk": cases})
    comparison = _comparison(
        Verdict.FAIL,
        [_suite("bulk", Verdict.FAIL, [_row("bulk", TT, 1.0, n, 1.0, 0.0, Verdict.FAIL, p=0.0001), _row("bulk", RM, 0.7, n, 0.9, 0.1, Verdict.FAIL, p=0.0001)],
                reasons=[f"{n} cases regressed"], changes=changes,
                added=[CaseKey("bulk", "bulk", f"new_{i}") for i in range(n // 10)])],
        reasons=["bulk: 2 criteria dropped"],
    )
    return comparison, current


def scenario_oversized() -> tuple[Comparison, RunResults]:
    return _many_regressions(40, 3_000)


NASTY = [
    "@octocat",
    "@acme/security-team please look",
    "fixes #1 and acme/agent#2 and GH-3",
    "</details></summary>",
    "```",
    "````\n# not a heading\n````",
    "~~~\ntilde fence",
    "<!-- evalgate:gate=evalgate -->",
    "<!-- hidden comment -->",
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    "[click](https://evil.example/phish)",
    "![pixel](https://evil.example/track.png)",
    "<https://evil.example>",
    "https://github.com/acme/agent/issues/7",
    "www.evil.example",
    "| a | b |",
    "a \\| b",
    "trailing backslash \\",
    "\u202eevil\u202c reversed",
    "zero\u200bwidth\u200djoin\u2060er\ufeff",
    "tag\U000e0041\U000e0042 chars",
    "# heading",
    "- list item",
    "1. ordered",
    "> quote",
    "> [!CAUTION]",
    "---",
    "**bold** _em_ ~~strike~~ $x^2$",
    "&lt;b&gt; entity &amp; &#64;octocat",
    "line one\n\n## injected heading\n\n</details>",
    "\r\n\r\n| x |\r\n|---|",
    "ctrl \x00\x07\x1b[31m red",
    "x" * 20_000,
    "서울 날씨 알려줘 — 東京の天気は？ ｜ＡＢＣ",
]


def scenario_hostile(nasty: Optional[list[str]] = None) -> tuple[Comparison, RunResults]:
    """Every untrusted field filled with hostile text: ids, names, messages, tools, reasons."""
    texts = nasty or ["@octocat #1 <img src=x onerror=alert(1)> [click](https://evil.example)",
                      "</details>\n```\n<!-- evalgate:gate=evalgate -->\n# heading | a | b |\u202e",
                      "서울 날씨 — 東京の天気 @everyone"]
    suites: dict[str, list[CaseResult]] = {}
    suite_cmps = []
    for si, text in enumerate(texts):
        suite_name = f"{text}{si}"
        crit_name = f"{text}crit{si}"
        case = _case(
            f"{text}set", f"{text}id",
            {crit_name: _crit(0.5, (0.0, {"reasons": [text, text], "rubrics": [{"rubric_id": text, "verdict": text, "rationale": text}]}))},
            [_inv(text, text, text, [(text, {text: text})], [(text, {"q": text}), ("ok", {})])],
        )
        added = _case(f"{text}set", f"{text}added", {crit_name: _crit(0.5, (0.0, {}))}, [_inv(text, text)])
        suites[suite_name] = [case, added]
        key = CaseKey(suite_name, f"{text}set", f"{text}id")
        suite_cmps.append(_suite(
            suite_name, Verdict.FAIL,
            [_row(suite_name, crit_name, 0.5, 1, 1.0, 0.0, Verdict.FAIL, p=0.01, reasons=[text])],
            reasons=[text],
            changes=[CaseChange(key, "regressed", {crit_name: (1.0, 0.0)}),
                     CaseChange(key, "broken_stable", {crit_name: (1.0, 0.0)}, p_value=0.001),
                     CaseChange(key, "fixed", {crit_name: (0.0, 1.0)})],
            added=[CaseKey(suite_name, f"{text}set", f"{text}added")],
            removed=[CaseKey(suite_name, f"{text}set", f"{text}gone")],
            changed=[CaseKey(suite_name, f"{text}set", f"{text}changed")],
            skipped=[text],
        ))
    current = _run(suites, judge_stats={f"{texts[0]}0": {f"{texts[0]}crit0": {"requests": 3, text_key(texts[0]): 1}}})
    info = BaselineInfo(commit=texts[0], requested_commit=texts[-1], distance=3, created_at=texts[0])
    return _comparison(Verdict.FAIL, suite_cmps, reasons=texts, baseline=info, config_changed=True), current


def text_key(text: str) -> str:
    return text[:50]


SCENARIOS = {
    "pass": (scenario_pass, {}),
    "fail_regressions": (scenario_fail, {}),
    "inconclusive": (scenario_inconclusive, {}),
    "no_baseline": (scenario_no_baseline, {}),
    "config_changed": (scenario_config_changed, {}),
    "oversized": (scenario_oversized, {"limit": 20_000, "full_report_hint": "job summary"}),
    "hostile": (scenario_hostile, {}),
    "judges_skipped": (scenario_judges_skipped, {}),
}

# --- snapshots ------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_comment_snapshot(name):
    build, options = SCENARIOS[name]
    comparison, current = build()
    text = render_comment(comparison, current, run_url=RUN_URL, **options)
    check_snapshot(SNAPSHOTS / f"{name}.md", text)
    check_safe(text, limit=options.get("limit", markdown.COMMENT_LIMIT))


def test_headline_counts_incomplete_cases():
    # Judges skipped on passed cases: the headline no longer ends "0 not evaluated" as if all were judged.
    headline = render_summary(*scenario_judges_skipped()).splitlines()[0]
    assert headline.endswith("2 cases: 2 passed, 0 failed, 0 not evaluated; 2 incomplete, with a criterion not evaluated")


def test_rendering_is_deterministic():
    assert render_comment(*scenario_fail()) == render_comment(*scenario_fail())


def test_summary_is_the_same_report_without_the_marker():
    comparison, current = scenario_fail()
    comment = render_comment(comparison, current, run_url=RUN_URL)
    summary = render_summary(comparison, current, run_url=RUN_URL)
    assert comment == marker("evalgate") + "\n" + summary
    assert "<!--" not in summary


# --- the safety properties --------------------------------------------------------------

FENCE_OPEN = re.compile(r"^ {0,3}(`{3,})([^`]*)$")
FENCE_CLOSE = re.compile(r"^ {0,3}(`{3,}) *$")
OUR_TAGS = {"<details>", "</details>", "<summary>", "</summary>", "<b>", "</b>"}
WJ = "\u2060"


def split_code(text: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """Prose lines and fenced code blocks (info, lines), parsed as CommonMark does for backtick fences."""
    prose: list[str] = []
    blocks: list[tuple[str, list[str]]] = []
    fence: Optional[str] = None
    for line in text.split("\n"):
        if fence is None:
            m = FENCE_OPEN.match(line)
            if m:
                fence = m.group(1)
                blocks.append((m.group(2), []))
            else:
                prose.append(line)
        else:
            m = FENCE_CLOSE.match(line)
            if m and len(m.group(1)) >= len(fence):
                fence = None
            else:
                blocks[-1][1].append(line)
    assert fence is None, "a code fence is never closed"
    return prose, blocks


def unescaped_pipes(line: str) -> int:
    n, i = 0, 0
    while i < len(line):
        if line[i] == "\\":
            i += 2
            continue
        n += line[i] == "|"
        i += 1
    return n


def check_safe(text: str, limit: int, run_url: Optional[str] = RUN_URL) -> None:
    assert len(text) <= limit
    mark = marker("evalgate")
    assert text.startswith(mark + "\n")
    assert text.count(mark) == 1 and text.count("<!--") == 1
    prose_lines, blocks = split_code(text)
    assert all(info in ("text", "diff") for info, _ in blocks), "a code block was opened by agent text"
    prose = "\n".join(prose_lines[1:])
    unescaped = re.sub(r"\\.", "", prose)  # backslash escapes taken out: what Markdown parses as syntax
    # no mention, issue reference or autolink survives outside code
    assert not re.search(r"@[A-Za-z0-9_]", prose)
    assert not re.search(r"#[0-9]", prose)
    assert not re.search(r"(?i)gh-[0-9]", prose)
    assert not re.search(r"(?i)www\.", prose)
    assert len(re.findall(r"://", prose)) == (1 if run_url else 0)
    assert len(re.findall(r"\]\(", unescaped)) == (1 if run_url else 0), "a Markdown link from agent text"
    assert not re.search(r"[`$]", unescaped), "a code span or math from agent text"
    outside_summaries = re.sub(r"<summary>.*</summary>", "", unescaped)  # raw HTML: Markdown not parsed
    assert "~" not in outside_summaries, "strike-through from agent text"
    # the only HTML is ours, and <details> blocks balance
    tags = re.findall(r"<[^>\s]*>?", prose)
    assert set(tags) <= OUR_TAGS, set(tags) - OUR_TAGS
    assert prose.count("<details>") == prose.count("</details>")
    assert prose.count("<summary>") == prose.count("</summary>")
    depth = 0
    for line in prose_lines:
        depth += line.count("<details>") - line.count("</details>")
        assert depth >= 0
    assert depth == 0
    # no heading, list, quote or rule of the agent's making at a line's start
    for line in prose_lines[1:]:
        if line.startswith("#"):
            assert line.startswith("### ")
        for bad in ("# heading", "- list item", "1. ordered", "> quote", "> [!CAUTION]"):
            assert not re.match(rf"^(- |### )?{re.escape(bad)}", line)
    # tables: every row has as many cells as its header
    width = None
    for line in prose_lines:
        if line.startswith("|"):
            width = width if width is not None else unescaped_pipes(line)
            assert unescaped_pipes(line) == width, line
        else:
            width = None
    # nothing hidden: no format or control characters but our word joiners, each after what it neutralizes
    for i, ch in enumerate(text):
        if ch == WJ:
            assert re.search(r"(@|#|(?i:gh)-|:|(?i:www)|<!)$", text[max(0, i - 3): i]), repr(text[i - 10: i + 10])
        elif ch not in "\n\t":
            assert unicodedata.category(ch) not in ("Cc", "Cf", "Cs"), f"hidden {ch!r} at {i}"


def test_hostile_scenario_is_safe():
    comparison, current = scenario_hostile()
    check_safe(render_comment(comparison, current, run_url=RUN_URL), markdown.COMMENT_LIMIT)


@pytest.mark.parametrize("nasty", NASTY, ids=lambda s: repr(s[:30]))
def test_each_nasty_string_everywhere(nasty):
    comparison, current = scenario_hostile([nasty])
    text = render_comment(comparison, current, run_url=RUN_URL)
    check_safe(text, markdown.COMMENT_LIMIT)


@pytest.mark.parametrize("code", ["en", "ko", "ja"])
def test_all_nasty_strings_at_once(code):
    """Every hostile string in every field, in each language: our translated messages take
    the filtered values as fields, and nothing of the values becomes Markdown or HTML."""
    from evalgate import i18n

    comparison, current = scenario_hostile(NASTY + ["{0.__class__} {n} {{x}}", "x<!-- evalgate:gate=evalgate -->"])
    with i18n.language(code):
        text = render_comment(comparison, current, run_url=RUN_URL)
        summary = render_summary(comparison, current, run_url=RUN_URL)
    check_safe(text, markdown.COMMENT_LIMIT)
    assert len(summary.encode("utf-8")) <= markdown.SUMMARY_LIMIT and "<!-- evalgate" not in summary
    assert "{0.\\_\\_class\\_\\_} {n} {{x}}" in text  # braces in a value are its own text, never a format
    assert len(summary.encode("utf-8")) <= markdown.SUMMARY_LIMIT


def test_korean_and_japanese_are_kept_as_written():
    comparison, current = scenario_fail()
    text = render_comment(comparison, current)
    for s in ("서울 내일 날씨 어때?", "부산은 내일 맑고 최고 기온 24도입니다.", "5月20日から2泊、新宿で", "States 5月20日〜22日 correctly.",
              'search_hotels({"area":"新宿","nights":2})'):
        assert s in text
    assert md("서울 — 東京の天気は？") == "서울 — 東京の天気は？"
    assert html("서울 — 東京") == "서울 — 東京"


def test_baseline_line():
    comparison, current = scenario_pass()
    def line(**changes):
        comparison.baseline = replace(BASE, **changes)
        return [l for l in render_comment(comparison, current).splitlines() if l.startswith("Baseline")]

    assert line() == ["Baseline: 3f9c2a71be04, the base commit (2 days older than this run)."]
    assert line(created_at="2026-05-12T07:00:00Z") == ["Baseline: 3f9c2a71be04, the base commit (2 hours older than this run)."]
    assert line(created_at=None) == ["Baseline: 3f9c2a71be04, the base commit."]
    assert line(created_at="yesterday") == ["Baseline: 3f9c2a71be04, the base commit (recorded yesterday)."]
    assert line(commit="", requested_commit="") == ["Baseline: a results file with no recorded commit (2 days older than this run)."]


def test_no_run_url_no_link():
    comparison, current = scenario_fail()
    check_safe(render_comment(comparison, current), markdown.COMMENT_LIMIT, run_url=None)


# --- the filters, one by one ------------------------------------------------------------

MD_CASES = [
    ("plain text", "plain text"),
    ("@octocat", "@\u2060octocat"),
    ("mail me@example.com", "mail me@\u2060example.com"),
    ("see #12 and GH-3", "see #\u206012 and GH-\u20603"),
    ("a | b", "a \\| b"),
    ("<b>&amp;", "&lt;b&gt;&amp;amp;"),
    ("[x](https://e.x)", "\\[x\\](https:\u2060//e.x)"),
    ("# heading", "\\# heading"),
    ("- item", "\\- item"),
    ("12. item", "12\\. item"),
    ("snake_case *x* `c` ~s~ $m$ back\\slash", "snake\\_case \\*x\\* \\`c\\` \\~s\\~ \\$m\\$ back\\\\slash"),
    ("two\nlines\r\nhere", "two lines here"),
    ("\u202eabc\u200b", "{U+202E}abc{U+200B}"),
    ("x\x1b[0m", "x{U+001B}\\[0m"),
    ("  padded  ", "padded"),
    ("한국어 日本語", "한국어 日本語"),
]


@pytest.mark.parametrize(("raw", "want"), MD_CASES)
def test_md_filter(raw, want):
    assert md(raw) == want


def test_md_filter_cuts_before_escaping():
    assert md("a" * 10 + "<", 5) == "aaaa…"
    assert md("<<<<<<", 3) == "&lt;&lt;…"


def test_html_filter():
    assert html('<a href="x">@me #1</a> *[x](y)*') == (
        "&lt;a href=&quot;x&quot;&gt;@\u2060me #\u20601&lt;/a&gt; *&#x5B;x&#x5D;(y)*"
    )
    assert html("snake_case | `c` $x$ \\") == "snake_case | &#x60;c&#x60; &#x24;x&#x24; &#x5C;"


@pytest.mark.parametrize("text", ["", "no ticks", "```", "a ```` b", "`" * 9, "```\n```"])
def test_fence_is_longer_than_any_run_inside(text):
    block = fenced(text, "text")
    fence = fence_for(text)
    assert block.startswith(fence + "text\n") and block.endswith("\n" + fence)
    assert all(len(run) < len(fence) for run in re.findall(r"`+", text))


def test_fenced_keeps_text_but_reveals_hidden_and_breaks_markers():
    assert fenced("@octocat #1 <b>x</b>\n\ta", "text") == "```text\n@octocat #1 <b>x</b>\n\ta\n```"
    assert fenced("a\u202eb\r\nc", "text") == "```text\na{U+202E}b\nc\n```"
    assert "<!--" not in fenced("<!-- evalgate:gate=evalgate -->", "text")


def test_variation_selector_runs_are_revealed_but_single_ones_kept():
    assert md("ok\u2764\ufe0f") == "ok\u2764\ufe0f"
    assert md("a\ufe01\ufe02\ufe03") == "a{U+FE01}{U+FE02}{U+FE03}"


def test_filters_refuse_double_filtering_and_templates_refuse_unfiltered_text():
    with pytest.raises(TypeError):
        md(md("x"))
    env = markdown._environment()
    with pytest.raises(sanitize.UnfilteredText):
        env.from_string("{{ x }}").render(x="raw agent text")
    assert env.from_string("{{ x | md }} {{ n }}").render(x="@a", n=3) == "@\u2060a 3"


def test_marker():
    assert marker("evalgate") == "<!-- evalgate:gate=evalgate -->"
    assert marker("nightly-2") == "<!-- evalgate:gate=nightly-2 -->"
    assert marker("x --> <b>") == "<!-- evalgate:gate=x%20--%3E%20%3Cb%3E -->"
    comparison, current = scenario_pass()
    text = render_comment(comparison, current, gate_id="nightly")
    assert text.startswith("<!-- evalgate:gate=nightly -->\n") and "gate nightly" in text.splitlines()[1]


# --- size ---------------------------------------------------------------------------------


def test_oversized_report_says_what_was_cut_and_where_the_rest_is():
    comparison, current = scenario_oversized()
    text = render_comment(comparison, current, limit=20_000, full_report_hint="job summary")
    assert len(text) <= 20_000
    assert "case details shown for" in text and "The full report is in the job summary." in text
    full = render_summary(comparison, current)
    assert "Shortened" not in full and full.count("<details>") == 40


@pytest.mark.parametrize("limit", [4_000, 8_000, 30_000, 65_000])
def test_every_limit_is_kept(limit):
    comparison, current = _many_regressions(60, 2_000)
    text = render_comment(comparison, current, limit=limit, full_report_hint="job summary")
    check_safe(text, limit, run_url=None)


def test_five_thousand_regressions_with_10kb_responses_fit():
    comparison, current = _many_regressions(5_000, 10_000)
    start = time.perf_counter()
    text = render_comment(comparison, current, run_url=RUN_URL, full_report_hint="job summary")
    elapsed = time.perf_counter() - start
    check_safe(text, markdown.COMMENT_LIMIT)
    assert "Regressed cases (5,000)" in text
    assert elapsed < 20, elapsed
    summary = render_summary(comparison, current, full_report_hint="results.json artifact")
    assert len(summary.encode("utf-8")) <= markdown.SUMMARY_LIMIT


def test_judge_usage_shown_only_when_recorded():
    assert "Judge usage" in render_comment(*scenario_fail())
    assert "Judge usage" not in render_comment(*scenario_pass())


def test_an_error_with_no_suites_still_renders():
    comparison = _comparison(Verdict.ERROR, [], reasons=["suite home has no cases"], baseline=None)
    text = render_comment(comparison, _run({}), run_url=RUN_URL)
    check_safe(text, markdown.COMMENT_LIMIT)
    assert text.splitlines()[1] == "**evalgate ERROR** · 0 cases: 0 passed, 0 failed, 0 not evaluated"
    assert "- suite home has no cases" in text


def test_a_limit_too_small_for_the_verdict_is_an_error():
    with pytest.raises(ValueError, match="too small"):
        render_comment(*scenario_fail(), limit=200)


def test_vertex_explanation_is_shown_and_sanitized():
    from evalgate.gate import GatePolicy, compare
    from evalgate.results import (
        CaseResult,
        Counts,
        CriterionResult,
        CriterionSpec,
        InvocationResult,
        InvocationSummary,
        RunResults,
        Status,
        SuiteResult,
    )

    crit = CriterionResult(score=0.2, status=Status.FAILED, threshold=0.5, per_invocation=[
        InvocationResult(score=0.2, status=Status.FAILED, details={"metric": "general_quality_v1", "explanation": "Ignores @octocat's question <b>"})])
    case = CaseResult(eval_set_id="s", eval_id="c", expected_digest="d", status=Status.FAILED, criteria={"vertexai:general_quality_v1": crit},
                      invocations=[InvocationSummary(user="q", actual_response="a")])
    suite = SuiteResult(name="s", status=Status.FAILED, not_evaluated_policy="warn", counts=Counts.of([case]),
                        criteria={"vertexai:general_quality_v1": CriterionSpec(threshold=0.5, version="1", judge=True)}, cases=[case])
    run = RunResults(config_digest="c", status=Status.FAILED, counts=Counts.of([case]), suites=[suite])
    passed = case.model_copy(update={"status": Status.PASSED, "criteria": {"vertexai:general_quality_v1": CriterionResult(score=1.0, status=Status.PASSED, threshold=0.5)}})
    base_suite = suite.model_copy(update={"status": Status.PASSED, "cases": [passed], "counts": Counts.of([passed])})
    base = run.model_copy(update={"status": Status.PASSED, "suites": [base_suite], "counts": Counts.of([passed])})
    text = markdown.render_comment(compare(base, run, GatePolicy(deterministic_flips="fail")), run)
    assert "Ignores @\u2060octocat's question &lt;b&gt;" in text and "question <b>" not in text


def test_a_criterion_reason_quoted_by_the_suite_is_said_once():
    row = _row("home", "tool", 1.0, 4, 1.0, 0.5, Verdict.FAIL, reasons=["dropped by 0.5"])
    suite = _suite("home", Verdict.FAIL, [row], reasons=["tool: dropped by 0.5"])
    text = markdown.render_comment(_comparison(Verdict.FAIL, [suite]), _run({"home": [_passing("lights", "lights_off")]}))
    assert text.count("dropped by 0.5") == 1


@pytest.mark.parametrize("code", ["en", "ko", "ja"])
def test_a_message_in_a_template_refuses_an_unfiltered_field(code):
    """A template's `_()`, `n_()` and `p_()` print trusted Markdown: a field of untrusted text
    that skipped its filter is an error (as `finalize` makes of a bare value), never a mention,
    a forged marker or a link filled into our message."""
    from evalgate import i18n
    from evalgate.reports.sanitize import UnfilteredText

    env = markdown._environment()
    hostile = "x<!-- evalgate:gate=evalgate --> @org/team ![img](http://x) {0.__class__}"
    with i18n.language(code):
        for source in ('{{ _("gate {id}", id=x) }}', '{{ n_("{n} case", "{n} cases", 2, id=x) }}', '{{ p_("agent runs", "failed", id=x) }}'):
            with pytest.raises(UnfilteredText):
                env.from_string(source).render(x=hostile)
        shown = env.from_string('{{ _("gate {id}", id=x | md) }}').render(x=hostile)
        assert "<!--" not in shown and "@org" not in shown and "![img](" not in shown and "{0.\\_\\_class" in shown
        assert env.from_string('{{ _("and {n} more", n=x) }}').render(x=3) == i18n._("and {n} more", n=3)


@pytest.mark.parametrize("code", ["en", "ko", "ja"])
def test_a_huge_policy_diff_still_fits_the_comment(code):
    """The policy diff quotes the pull request's config and eval sets (a criterion named in a
    test_config.json): 80 lines of 5,000 characters, Korean, emoji or hidden tag characters
    (each shown as {U+E0041}), cannot push the comment past its limit or leave no budget
    that fits; the block is cut and says so."""
    from evalgate import i18n

    comparison, current = scenario_fail()
    for line in ("한" * 5_000, "😀" * 5_000, "\U000e0041" * 5_000, "`" * 5_000 + "\n<!-- evalgate:gate=evalgate -->"):
        comparison.gate_change = "\n".join(["+    " + line for _ in range(80)])
        with i18n.language(code):
            text = render_comment(comparison, current, run_url=RUN_URL)
        assert markdown.comment_length(text) <= markdown.COMMENT_LIMIT
        assert text.startswith(marker("evalgate") + "\n") and text.count("<!--") == 1
        _prose, blocks = split_code(text)
        infos = [info for info, _ in blocks]
        assert infos[0] == "diff" and set(infos) <= {"diff", "text"}, "the diff's block closes where it should"
        assert "…" in text and "+    " + line[:20] in text.replace("{U+E0041}", "\U000e0041")
