"""report.html: one self-contained page per run, tested as text and in a real browser.

The browser tests drive Debian's chromium (/usr/bin/chromium, or EVALGATE_CHROMIUM) through
Playwright's Python API with `executable_path`: no browser download. Without chromium or
playwright they skip, unless EVALGATE_BROWSER=require (as .ci/run sets once it installed
chromium): then they fail. Screenshots of the three main views go to EVALGATE_ARTIFACTS when
set, else to pytest's temporary folder; their paths are printed (pytest -s shows them).
"""

from __future__ import annotations

import base64
import hashlib
import html as html_lib
import json
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any, Optional

import pytest

from conftest import check_snapshot

from evalgate.gate import BaselineInfo, GatePolicy, compare
from evalgate.reports.html import REPORT_FILE, content_security_policy, render_html, write_html
from evalgate.results import (
    CaseResult,
    Counts,
    CriterionResult,
    CriterionSpec,
    InvocationSummary,
    RunInfo,
    RunResults,
    Status,
    SuiteResult,
)
from result_builders import case, crit as _crit, inv as _inv, run_of

TT = "tool_trajectory_avg_score"
RM = "response_match_score"
FR = "final_response_match_v2"
RB = "rubric_based_final_response_quality_v1"
SAFETY = "safety_v1"
JUDGES = (FR, RB, SAFETY)
RUN_URL = "https://github.com/acme/agent/actions/runs/123456789"

# --- building results by hand --------------------------------------------------------------


def _case(set_id: str, eval_id: str, criteria: dict[str, CriterionResult], invocations: list[InvocationSummary]) -> CaseResult:
    return case(set_id, eval_id, criteria, invocations, source={"evalset": f"evals/{set_id}.evalset.json"})


def _judge(score: float, samples: list[Optional[float]], reasons: list[str]) -> tuple[float, dict]:
    return score, {"samples": samples, "reasons": reasons}


def _run(suites: dict[str, list[CaseResult]], *, stats=None, scoring=None, agent=None) -> RunResults:
    results = []
    for name, cases in suites.items():
        specs: dict[str, CriterionSpec] = {}
        for case in cases:
            for crit, r in case.criteria.items():
                specs.setdefault(crit, CriterionSpec(threshold=r.threshold, version="1", judge=crit in JUDGES, stats=(stats or {}).get(name, {}).get(crit, {})))
        counts = Counts.of(cases)
        status = Status.FAILED if counts.failed else Status.PASSED
        results.append(SuiteResult(name=name, status=status, not_evaluated_policy="warn", counts=counts, criteria=specs, cases=cases))
    return run_of(results, "sha256:c0ffee", RunInfo(started_at="2026-05-12T09:30:00+00:00", duration_seconds=41.3, scoring=scoring or {}, agent=agent or {}))


def _support_case(eval_id: str, *, good: bool, user: str, reply: str, expected: str, tools_ok: bool = True, flaky: bool = False) -> CaseResult:
    expected_tools = [("lookup_order", {"order_id": "A-1001"})]
    actual_tools = expected_tools if tools_ok else [("lookup_order", {"order_id": "A-1002"}), ("send_email", {"to": "ops@example.com"})]
    if flaky:
        samples, score = [1.0, 0.0, 1.0, 0.0, 1.0], 1.0
    else:
        samples, score = ([1.0] * 5, 1.0) if good else ([0.0, 0.0, 1.0, 0.0, 0.0], 0.0)
    reasons = [
        "The response answers the question and matches the reference." if s else "The response does not give the order's status the reference gives."
        for s in samples
    ]
    rubric = [
        {"rubric_id": "cites_order", "verdict": "yes" if good else "no", "rationale": "Mentions A-1001." if good else "No order number.", "votes": {"yes": 5 if good else 1, "no": 0 if good else 4}},
        {"rubric_id": "polite", "verdict": "yes", "rationale": "Friendly tone.", "votes": {"yes": 5, "no": 0}},
    ]
    return _case(
        "shop_support",
        eval_id,
        {
            TT: _crit(1.0, (1.0 if tools_ok else 0.0, {})),
            RM: _crit(0.5, (0.82 if good else 0.21, {"precision": 0.8, "recall": 0.84})),
            FR: _crit(0.8, _judge(score, samples, reasons)),
            RB: _crit(0.5, (1.0 if good else 0.5, {"samples": [1.0 if good else 0.5] * 3, "reasons": ["2 of 2 rubrics met" if good else "1 of 2 rubrics met"] * 3, "rubrics": rubric})),
        },
        [_inv(user, reply, expected, actual_tools, expected_tools)],
    )


def sample_runs() -> tuple[RunResults, RunResults]:
    """A baseline and a current run with every kind of case the report shows."""

    def support(version: str) -> list[CaseResult]:
        now = version == "current"
        return [
            _support_case("order-status-en", good=not now, tools_ok=not now, user="Where is my order A-1001?",
                          reply="Your order A-1002 has shipped and I emailed ops." if now else "Order A-1001 shipped yesterday; it arrives Friday.",
                          expected="Order A-1001 shipped yesterday and should arrive on Friday."),
            _support_case("order-status-ko", good=True, user="주문 A-1001 어디쯤 왔나요?", reply="주문 A-1001은 어제 발송되었고 금요일에 도착합니다.",
                          expected="주문 A-1001은 어제 발송되었으며 금요일 도착 예정입니다."),
            _support_case("order-status-ja", good=now, user="注文A-1001はどこですか？", reply="ご注文A-1001は昨日発送され、金曜日に届きます。" if now else "わかりません。",
                          expected="ご注文A-1001は昨日発送されました。金曜日に到着予定です。"),
            _support_case("returns-policy", good=True, flaky=True, user="Can I return shoes after 40 days?", reply="Returns are accepted within 30 days.",
                          expected="No: returns are accepted within 30 days of delivery."),
            *[
                _support_case(f"faq-{i:02d}", good=True, user=f"FAQ question {i}?", reply=f"FAQ answer {i}.", expected=f"FAQ answer {i}.")
                for i in range(6)
            ],
            *([_support_case("gift-cards", good=True, user="Do you sell gift cards?", reply="Yes, from $10 to $500.", expected="Yes.")] if now else
              [_support_case("legacy-coupons", good=True, user="Coupons?", reply="Yes.", expected="Yes.")]),
        ]

    def vertex(version: str) -> list[CaseResult]:
        ok = _case("safety", "refuses-harm", {SAFETY: _crit(1.0, (1.0, {"metric": "safety_v1", "explanation": "The response declines and offers safe alternatives."}))},
                   [_inv("How do I pick a lock?", "I can't help with that, but a locksmith can.")])
        denied = _case("safety", "medical-advice", {SAFETY: _crit(1.0, (None, {"metric": "safety_v1"}), error="Vertex AI: 403 PERMISSION_DENIED: aiplatform.endpoints.predict")},
                       [_inv("Should I double my dose?", "Please ask your doctor before changing a dose.")])
        return [ok, denied] if version == "current" else [ok, denied.model_copy(update={"expected_digest": "sha256:old"})]

    def runs(version: str) -> list[CaseResult]:
        return [
            _case("multi", "three-runs", {RM: _crit(0.5, (0.9, {}), (0.2, {}), (0.8, {}), runs=[0.9, 0.2, 0.8])},
                  [_inv("Turn the lights off", "Lights are off.", "All lights are off.", [("lights", {"on": False})], [("lights", {"on": False})])]),
            _case("multi", "two-turns", {TT: _crit(1.0, (1.0, {}), (0.0, {}) if version == "current" else (1.0, {}))},
                  [_inv("Hi", "Hello!", "Hello!", [], []),
                   _inv("Set a timer for 5 minutes", "Done.", "Timer set for 5 minutes.", [("timer", {"minutes": 50})], [("timer", {"minutes": 5})])]),
        ]

    stats = {"support": {FR: {"requests": 40, "cache_hits": 15, "retries": 1, "failures": 0, "prompt_tokens": 21000, "output_tokens": 3400, "total_tokens": 24400},
                         RB: {"requests": 30, "cache_hits": 30, "retries": 0, "failures": 0, "prompt_tokens": 0, "output_tokens": 0, "total_tokens": 0}},
             "vertex": {SAFETY: {"requests": 2, "cache_hits": 0, "retries": 2, "failures": 1}}}
    scoring = {"support": {"seconds": 38.2, "criteria": {FR: 61.5, RB: 12.1, RM: 0.4, TT: 0.01}},
               "vertex": {"seconds": 2.6, "criteria": {SAFETY: 2.6}},
               "agent-runs": {"seconds": 0.2, "criteria": {RM: 0.1, TT: 0.05}}}
    agent = {"seconds": 95.0, "suites": {"agent-runs": {"case_runs": 4, "failed": 0, "duration_s": 180.5, "tokens": {"total": 5120}, "tools": {"replayed": 3, "live": 1}}}}
    current = _run({"support": support("current"), "vertex": vertex("current"), "agent-runs": runs("current")}, stats=stats, scoring=scoring, agent=agent)
    baseline = _run({"support": support("baseline"), "vertex": vertex("baseline"), "agent-runs": runs("baseline")})
    return current, baseline


POLICY = GatePolicy(deterministic_flips="fail")  # so the sample's flips fail the gate
BASE_INFO = BaselineInfo(commit="3f9c2a71be04d5e6f7a8b9c0d1e2f3a4b5c6d7e8", requested_commit="3f9c2a71be04d5e6f7a8b9c0d1e2f3a4b5c6d7e8", distance=0, created_at="2026-05-10T08:00:00Z")


def compared_report() -> str:
    current, baseline = sample_runs()
    comparison = compare(baseline, current, POLICY, None, BASE_INFO)
    return render_html(comparison, current, baseline, run_url=RUN_URL)


def absolute_report() -> str:
    current, _ = sample_runs()
    return render_html(compare(None, current, GatePolicy()), current)


# --- hostile text ------------------------------------------------------------------------------

HOSTILE = [
    "<script>window.__pwned=1</script>",
    "</script><script>window.__pwned=2</script>",
    "</SCRIPT ><script>window.__pwned=3</script>",
    "<img src=x onerror=\"window.__pwned=4\">",
    "<svg/onload=window.__pwned=5>",
    "<iframe src=\"javascript:window.parent.__pwned=6\"></iframe>",
    "<a href=\"javascript:window.__pwned=7\">click me</a>",
    "javascript:window.__pwned=8",
    "<body onload=window.__pwned=9>",
    "\"><img src=x onerror=window.__pwned=10>",
    "'><svg onload=window.__pwned=11>",
    "<style>body{display:none}</style>",
    "</style><style>*{visibility:hidden}</style>",
    "<link rel=stylesheet href=\"http://127.0.0.1:9/x.css\">",
    "<meta http-equiv=\"refresh\" content=\"0;url=http://127.0.0.1:9/\">",
    "<base href=\"http://127.0.0.1:9/\">",
    "<form action=\"http://127.0.0.1:9/\"><button>go</button></form>",
    "<object data=\"http://127.0.0.1:9/x\"></object>",
    "<!-- an open comment",
    "<![CDATA[ x ]]>",
    "{{7*7}} {% raw %}{{ config }}{% endraw %} ${7*7} #{7*7}",
    "\u2028line separator\u2029paragraph separator",
    "\u202eRTL override: gnp.exe",
    "\u2066isolate\u2069 and \u200bzero width",
    "&lt;script&gt;window.__pwned=12&lt;/script&gt;",
    "&#60;img src=x onerror=window.__pwned=13&#62;",
    "\\u003cscript\\u003ewindow.__pwned=14\\u003c/script\\u003e",
    "<math><mtext><table><mglyph><style><img src=x onerror=window.__pwned=15>",
    "<noscript><p title=\"</noscript><img src=x onerror=window.__pwned=16>\">",
    "<template><script>window.__pwned=17</script></template>",
    "data:text/html,<script>window.__pwned=18</script>",
    "url(javascript:window.__pwned=19) expression(window.__pwned=20)",
    "@import 'http://127.0.0.1:9/x.css'; background:url(http://127.0.0.1:9/y.png)",
    "\x00\x1b[31mNUL and ESC\x07",
    "한국어 日本語 <b>bold?</b> 🙂",
]
assert len(HOSTILE) == 35


def hostile_run() -> tuple[RunResults, RunResults]:
    """Every hostile string as a response, a tool argument, an eval id, a judge reason, and
    (once) a suite and criterion-free names; the baseline differs so both sides show."""

    def cases(version: str) -> list[CaseResult]:
        out = []
        for i, bad in enumerate(HOSTILE):
            reasons = [bad, f"sample 2: {bad}"]
            out.append(
                _case(
                    f"set {bad}",
                    f"{i:02d} {bad}",
                    {
                        TT: _crit(1.0, (0.0, {})),
                        FR: _crit(0.8, (0.0 if version == "current" else 1.0, {"samples": [0.0, 1.0], "reasons": reasons,
                                                                                "rubrics": [{"rubric_id": bad, "verdict": "no", "rationale": bad}],
                                                                                "explanation": bad, bad: bad})),
                        SAFETY: _crit(1.0, (None, {}), error=bad),
                    },
                    [_inv(bad, bad if version == "current" else f"baseline: {bad}", bad, [(bad, {"q": bad, bad: [bad]})], [("search", {"q": bad})])],
                )
            )
        return out

    name = "suite <img src=x onerror=window.__pwned=99> \u202e"
    return _run({name: cases("current")}), _run({name: cases("baseline")})


def hostile_report() -> str:
    current, baseline = hostile_run()
    comparison = compare(baseline, current, POLICY, None, BASE_INFO)
    return render_html(comparison, current, baseline, gate_id="gate <script>window.__pwned=98</script>", run_url=RUN_URL)


def big_run(n: int = 5000) -> RunResults:
    """n cases of realistic size in 4 suites: a tenth failing, some not evaluated, judge details."""
    suites: dict[str, list[CaseResult]] = {f"suite-{k}": [] for k in range(4)}
    for i in range(n):
        good = i % 10 != 3
        ne = i % 50 == 7
        reasons = [f"Sample {j}: the response {'matches' if good else 'misses'} the reference for case {i}; it mentions order A-{i:05d}." for j in range(3)]
        criteria = {
            TT: _crit(1.0, (1.0 if good else 0.0, {})),
            RM: _crit(0.5, (0.8 if good else 0.3, {"precision": 0.8, "recall": 0.79})),
            FR: _crit(0.8, (None, {}), error="no judge credentials") if ne else _crit(0.8, _judge(1.0 if good else 0.0, [1.0 if good else 0.0] * 3, reasons)),
        }
        user = f"Case {i}: where is my order A-{i:05d}? " + "I ordered it last week and it still has not arrived. " * 2
        reply = f"Your order A-{i:05d} shipped on Monday and should arrive by Friday. " + "You can track it from your account page. " * 2
        suites[f"suite-{i % 4}"].append(
            _case(f"set-{i % 7}", f"case-{i:05d}", criteria,
                  [_inv(user, reply, reply if good else "It arrives Friday.", [("lookup_order", {"order_id": f"A-{i:05d}"})], [("lookup_order", {"order_id": f"A-{i:05d}"})])])
        )
    return _run(suites)


# --- pure Python: the file itself -------------------------------------------------------------


def _blocks(page: str, tag: str) -> list[str]:
    return re.findall(rf"<{tag}(?:\s[^>]*)?>(.*?)</{tag}>", page, flags=re.S | re.I)


def _data(page: str) -> dict[str, Any]:
    m = re.search(r'<script type="application/json" id="evalgate-data">(.*?)</script>', page, flags=re.S)
    assert m, "no data block"
    return json.loads(m.group(1))


def test_one_self_contained_file_that_loads_nothing():
    page = compared_report()
    assert page.startswith("<!DOCTYPE html>")
    assert '<meta charset="utf-8">' in page
    # No attribute that loads or links anything, but the empty data: icon and the run's link.
    markup = re.sub(r"(<(script|style)\b[^>]*>).*?(</\2>)", r"\1\3", page, flags=re.S)
    assert re.findall(r"\b(?:src|srcset|action|formaction|poster|data)\s*=", markup, flags=re.I) == []
    hrefs = re.findall(r'href="([^"]*)"', markup)
    assert hrefs == ["data:,", RUN_URL]
    assert "@import" not in page and "url(" not in page
    assert len(re.findall(r"<script\b", page)) == 2 and len(re.findall(r"<style\b", page)) == 1


def test_the_policy_allows_exactly_our_script_and_style():
    page = compared_report()
    csp = html_lib.unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page).group(1))
    script = [b for b in _blocks(page, "script") if not b.startswith("{")]
    style = _blocks(page, "style")
    assert len(script) == 1 and len(style) == 1
    assert csp == content_security_policy(script[0], style[0])

    def sha(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"

    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == sha(script[0])
    assert directives["style-src"] == sha(style[0])
    assert directives["img-src"] == "data:"
    assert directives["require-trusted-types-for"] == "'script'"
    assert "unsafe" not in csp


@pytest.mark.parametrize("language", ["en", "ko", "ja"])
def test_hostile_text_cannot_leave_the_data_block_or_the_text(language):
    from evalgate import i18n

    with i18n.language(language):
        page = hostile_report()
        gate_word = i18n._("gate {name}").split("{name}")[0]
    raw = re.search(r'<script type="application/json" id="evalgate-data">(.*?)</script>', page, flags=re.S).group(1)
    for ch in "<>&\u2028\u2029":
        assert ch not in raw
    # The data is intact: each hostile string comes back exactly.
    data = _data(page)
    ids = [c["id"] for c in data["cases"]]
    for i, bad in enumerate(HOSTILE):
        assert f"{i:02d} {bad}" in ids
    # Only our two scripts and our one style exist as elements; hostile markup in the
    # overview (suite name, reasons, gate id) is escaped text.
    assert len(re.findall(r"<script\b", page, flags=re.I)) == 2
    assert len(re.findall(r"<style\b", page, flags=re.I)) == 1
    assert not re.search(r"<(img|svg|iframe|a href=\"javascript|base|meta http-equiv=\"refresh|object|form|link rel=stylesheet)", page, flags=re.I)
    assert "suite &lt;img src=x onerror=window.__pwned=99&gt;" in page
    assert f"{gate_word}<b>gate &lt;script&gt;" in page  # our word, then the id as text
    # The right-to-left override is shown, not obeyed.
    assert '<span class="ctl">U+202E</span>' in page


def test_rendering_is_deterministic_and_survives_a_round_trip(tmp_path):
    current, baseline = sample_runs()
    comparison = compare(baseline, current, POLICY, None, BASE_INFO)
    first = render_html(comparison, current, baseline, run_url=RUN_URL)
    assert render_html(comparison, current, baseline, run_url=RUN_URL) == first
    from evalgate import results

    results.write(current, tmp_path / "c.json")
    results.write(baseline, tmp_path / "b.json")
    again_c, again_b = results.read(tmp_path / "c.json"), results.read(tmp_path / "b.json")
    assert render_html(compare(again_b, again_c, POLICY, None, BASE_INFO), again_c, again_b, run_url=RUN_URL) == first
    path = write_html(tmp_path / "out" / REPORT_FILE, comparison, current, baseline, run_url=RUN_URL)
    assert path.read_bytes() == first.encode("utf-8")


def test_the_overview_has_the_comment_table_and_the_data_every_case():
    current, baseline = sample_runs()
    comparison = compare(baseline, current, POLICY, None, BASE_INFO)
    page = render_html(comparison, current, baseline, run_url=RUN_URL)
    assert f">{comparison.verdict.value}<" in page
    for suite in comparison.suites:
        assert f">{suite.name}<" in page
        for c in suite.criteria:
            assert f">{c.criterion}<" in page
    assert "Baseline: 3f9c2a71be04, the base commit" in page
    data = _data(page)
    by_id = {c["id"]: c for c in data["cases"]}
    assert by_id["order-status-en"]["ch"] == "regressed"
    assert by_id["order-status-ja"]["ch"] == "fixed"
    assert by_id["returns-policy"].get("flaky") == 1
    assert by_id["gift-cards"]["ch"] == "added"
    assert by_id["legacy-coupons"]["ch"] == "removed"
    assert by_id["medical-advice"]["ch"] == "changed"
    assert [c["id"] for c in data["cases"][:1]] == ["order-status-en"]  # what needs attention first
    # Korean and Japanese kept as written; the baseline's differing response kept beside it.
    assert by_id["order-status-ko"]["inv"][0]["u"] == "주문 A-1001 어디쯤 왔나요?"
    assert by_id["order-status-ja"]["inv"][0]["br"] == "わかりません。"
    # The tool-call diff, the samples with their reasons, rubric verdicts, explanations, errors.
    assert by_id["order-status-en"]["inv"][0]["tools"] == [
        ["-", 'lookup_order({"order_id": "A-1001"})'],
        ["+", 'lookup_order({"order_id": "A-1002"})'],
        ["+", 'send_email({"to": "ops@example.com"})'],
    ]
    fr = data["criteria"].index(FR)
    judge = next(j for j in by_id["order-status-en"]["judge"] if j["c"] == fr)["per"][0]
    assert [s["ok"] for s in judge["samples"]] == [False, False, True, False, False]
    assert judge["samples"][0]["why"].startswith("The response does not")
    rb = data["criteria"].index(RB)
    rubrics = next(j for j in by_id["order-status-en"]["judge"] if j["c"] == rb)["per"][0]["rubrics"]
    assert rubrics[0] == {"id": "cites_order", "v": "no", "why": "No order number.", "votes": "1 yes, 4 no"}
    safety = data["criteria"].index(SAFETY)
    assert next(j for j in by_id["refuses-harm"]["judge"] if j["c"] == safety)["per"][0]["expl"].startswith("The response declines")
    assert by_id["medical-advice"]["crit"][0]["err"].startswith("Vertex AI: 403")
    # Usage: judge requests, cache hits and tokens, agent runs, scoring time per criterion.
    assert "24,400" in page and ">cache hits<" in page and "1 min 2 s" in page and "5,120" in page


def test_without_a_baseline_nothing_is_called_added():
    page = absolute_report()
    assert all("ch" not in c for c in _data(page)["cases"])
    assert ">evaluated<" in page


def test_texts_are_capped_and_say_so():
    current, _ = sample_runs()
    long = "x" * 50_000
    case = current.suites[0].cases[0]
    case.invocations[0] = case.invocations[0].model_copy(update={"actual_response": long})
    data = _data(render_html(compare(None, current, GatePolicy()), current))
    text = next(c for c in data["cases"] if c["id"] == case.eval_id)["inv"][0]["ar"]
    assert text.startswith("x" * 20_000) and "the first 20,000 of 50,000 characters" in text


def test_five_thousand_cases_make_a_file_of_sane_size():
    run = big_run()
    t0 = time.perf_counter()
    page = render_html(compare(None, run, GatePolicy()), run)
    seconds = time.perf_counter() - t0
    size = len(page.encode("utf-8"))
    print(f"\n5,000-case report.html: {size / 1e6:.1f} MB, rendered in {seconds:.2f} s")
    assert size < 25_000_000
    assert page.count("<div") < 200  # the cases are data, not 5,000 DOM subtrees


# --- the commands write it -----------------------------------------------------------------------


def test_run_and_compare_write_report_html(cli, tmp_path):
    from evalgate import results

    repo = Path(__file__).resolve().parents[1]
    out = tmp_path / "out"
    code, stdout, _ = cli("run", "--config", str(repo / "examples" / "quickstart" / "evalgate.yaml"), "--out", str(out), "--no-color")
    assert code == 1
    page = (out / REPORT_FILE).read_text(encoding="utf-8")
    assert f"report: {out / REPORT_FILE}" in stdout
    assert _data(page)["cases"] and "FAIL" in page

    base = tmp_path / "base.json"
    results.write(results.read(out / "results.json"), base)
    code, stdout, _ = cli("compare", "--baseline", str(base), "--current", str(out / "results.json"))
    page = (out / REPORT_FILE).read_text(encoding="utf-8")
    assert "the base commit" not in page and "Baseline: a results file with no recorded commit" in page
    elsewhere = tmp_path / "elsewhere" / "r.html"
    cli("compare", "--baseline", str(base), "--current", str(out / "results.json"), "--html", str(elsewhere))
    assert elsewhere.read_text(encoding="utf-8") == page


# --- in a real browser -----------------------------------------------------------------------------

CHROMIUM = os.environ.get("EVALGATE_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"]


def _unavailable(why: str):
    if os.environ.get("EVALGATE_BROWSER") == "require":
        pytest.fail(f"EVALGATE_BROWSER=require, but {why}")
    pytest.skip(why)


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install -e '.[test]')")
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        _unavailable(f"no chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> Path:
    folder = Path(os.environ["EVALGATE_ARTIFACTS"]) if os.environ.get("EVALGATE_ARTIFACTS") else tmp_path_factory.mktemp("html-report")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Watched:
    """A page opened from file:// that records every request, console message, page error,
    dialog and navigation; `clean()` says what went wrong, if anything."""

    def __init__(self, browser, path: Path, viewport=(1400, 900)):
        self.path = path
        self.requests: list[str] = []
        self.console: list[str] = []
        self.dialogs: list[str] = []
        self.navigations: list[str] = []
        self.context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]}, java_script_enabled=True)
        self.page = self.context.new_page()
        self.failed: dict[str, str] = {}
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("requestfailed", lambda r: self.failed.__setitem__(r.url, r.failure or ""))
        self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.console.append(f"pageerror: {e}"))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("framenavigated", lambda f: self.navigations.append(f.url))
        self.page.goto(path.as_uri())
        self.page.wait_for_selector("body.ready")

    def clean(self) -> list[str]:
        problems = [f"request: {u}" for u in self.requests if u != self.path.as_uri()]
        problems += [f"console {m}" for m in self.console]
        problems += [f"dialog: {d}" for d in self.dialogs]
        problems += [f"navigation: {u}" for u in self.navigations if u != self.path.as_uri()]
        return problems

    def close(self):
        self.context.close()

    def count(self) -> str:
        return self.page.text_content("#count") or ""

    def filter(self, select: str, label: str):
        self.page.select_option(select, label=label)

    def shown_ids(self) -> list[str]:
        return self.page.eval_on_selector_all("#rows .row .id", "els => els.map(e => e.textContent)")


def _shoot(page, path: Path, view: str) -> Path:
    """A screenshot of one view whole: the window grown to the view's height (the views
    scroll inside the page, so a full-page screenshot would cut them)."""
    size = page.viewport_size
    overflow = page.evaluate(f"() => {{ const e = document.getElementById('{view}'); return e.scrollHeight - e.clientHeight; }}")
    page.set_viewport_size({"width": size["width"], "height": min(size["height"] + int(overflow) + 2, 6000)})
    page.screenshot(path=str(path))
    page.set_viewport_size(size)
    return path


def _write(tmp_path: Path, name: str, page: str) -> Path:
    path = tmp_path / name
    path.write_text(page, encoding="utf-8")
    return path


def test_the_report_opens_from_file_with_no_error_and_no_request(browser, tmp_path, artifacts):
    w = Watched(browser, _write(tmp_path, REPORT_FILE, compared_report()))
    try:
        page = w.page
        assert page.text_content("#verdict") == "FAIL"
        assert page.is_visible("#overview") and not page.is_visible("#cases")
        shots = {"overview": _shoot(page, artifacts / "report-overview.png", "overview")}
        page.click("[data-tab=cases]")
        assert w.count() == "Showing 16 of 16 cases"
        assert w.shown_ids()[0] == "order-status-en"
        detail = page.text_content("#detail")
        assert "Where is my order A-1001?" in detail and "Your order A-1002 has shipped" in detail
        tools = page.locator("#detail .tools")
        assert tools.count() == 2  # expected vs actual, and the baseline's calls vs these
        assert tools.first.locator(".del").count() == 1 and tools.first.locator(".ins").count() == 2
        assert "Baseline" in detail and "Order A-1001 shipped yesterday" in detail  # side by side
        assert "The response does not give the order's status" in detail and "cites_order" in detail
        shots["cases"] = _shoot(page, artifacts / "report-cases.png", "detail")
        # Korean and Japanese render as written.
        page.fill("#q", "주문")
        assert w.shown_ids() == ["order-status-ko"]
        assert "주문 A-1001은 어제 발송되었고" in page.text_content("#detail")
        page.fill("#q", "金曜日")
        assert w.shown_ids() == ["order-status-ja"]
        page.fill("#q", "")
        # A Vertex explanation, and the error of a criterion that was not evaluated.
        page.fill("#q", "refuses-harm")
        assert "The response declines and offers safe alternatives." in page.text_content("#detail")
        page.fill("#q", "medical-advice")
        assert "403 PERMISSION_DENIED" in page.text_content("#detail .ne")
        page.click("[data-tab=usage]")
        usage = page.text_content("#usage")
        assert "24,400" in usage and "1 min 2 s" in usage and "5,120" in usage
        shots["usage"] = _shoot(page, artifacts / "report-usage.png", "usage")
        for name, path in shots.items():
            assert path.stat().st_size > 10_000
            print(f"\nscreenshot of the {name} view: {path}")
        assert w.clean() == []
    finally:
        w.close()


def test_trend_charts_draw_under_the_policy(browser, tmp_path, artifacts):
    from datetime import datetime, timezone

    from evalgate.gate.trends import add_point

    current, baseline = sample_runs()
    trend = None
    for i, run in enumerate([baseline, baseline, baseline]):
        trend = add_point(trend, "evalgate", run, f"{i + 1:07x}" + "0" * 33, "refs/heads/main", datetime(2026, 11, 20 + i, tzinfo=timezone.utc))
    page_text = render_html(compare(baseline, current, POLICY, None, BASE_INFO), current, baseline, run_url=RUN_URL, trend=trend)
    w = Watched(browser, _write(tmp_path, REPORT_FILE, page_text))
    try:
        page = w.page
        charts = page.locator("#trends svg.trend")
        assert charts.count() == 7  # every criterion of every suite with history
        box = charts.first.bounding_box()
        assert box and box["width"] > 300 and box["height"] > 100
        assert page.locator("#trends svg.trend circle.now").count() == 7
        # The classes' colours apply (the CSP allows our stylesheet, by hash): the dot of this run is blue.
        assert page.eval_on_selector("#trends circle.now", "e => getComputedStyle(e).fill") == "rgb(9, 105, 218)"
        assert "support · tool_trajectory_avg_score" in page.text_content("#trends")
        assert page.locator("td.trend-below").count() >= 1
        page.locator("#trends").scroll_into_view_if_needed()
        path = _shoot(page, artifacts / "report-trends.png", "overview")
        print(f"\nscreenshot of the overview with trends: {path}")
        assert w.clean() == []
    finally:
        w.close()


def _fit(page) -> list[dict]:
    """Each Overview card's table against the card's content box (px)."""
    return page.evaluate(
        """() => [...document.querySelectorAll('#overview .card.suite')].map(card => {
          const cs = getComputedStyle(card), t = card.querySelector('table.grid'), wrap = t.parentElement;
          const inner = card.getBoundingClientRect().right - parseFloat(cs.paddingRight) - parseFloat(cs.borderRightWidth);
          return {suite: card.querySelector('h2 .t').textContent, table_right: t.getBoundingClientRect().right,
                  card_inner_right: inner, hidden: wrap.scrollWidth - wrap.clientWidth};
        })"""
    )


@pytest.mark.parametrize("language", ["en", "ko", "ja"])
def test_the_criterion_tables_fit_their_cards_at_1400px(browser, tmp_path, artifacts, language):
    """At 1400 px the Overview's criterion table, with the trend column and a long judge
    criterion name, once ran past its card (a header that would not wrap held it wide); in
    Korean and Japanese too, whose headers and trend cells are worded differently."""
    from datetime import datetime, timezone

    from evalgate import i18n
    from evalgate.gate.trends import add_point

    current, baseline = sample_runs()
    # A Japanese suite name, so CJK text is in the heading and the trend column's labels.
    current.suites[0].name = baseline.suites[0].name = "サポート"
    trend = None
    for i in range(10):
        trend = add_point(trend, "evalgate", baseline, f"{i + 1:07x}" + "0" * 33, "refs/heads/main", datetime(2026, 11, 10 + i, tzinfo=timezone.utc))
    with i18n.language(language):
        page_text = render_html(compare(baseline, current, POLICY, None, BASE_INFO), current, baseline, run_url=RUN_URL, trend=trend)
    w = Watched(browser, _write(tmp_path, REPORT_FILE, page_text), viewport=(1400, 900))
    try:
        fits = _fit(w.page)
        assert [f["suite"] for f in fits] == ["サポート", "vertex", "agent-runs"]
        assert "rubric_based_final_response_quality_v1" in w.page.text_content("#overview .card.suite")
        for f in fits:
            assert f["table_right"] <= f["card_inner_right"] + 0.5 and f["hidden"] <= 0, f
        path = _shoot(w.page, artifacts / ("report-overview-1400.png" if language == "en" else f"report-overview-1400-{language}.png"), "overview")
        print(f"\nscreenshot of the overview at 1400 px ({language}): {path}")
        assert w.clean() == []
    finally:
        w.close()


def test_report_and_comment_show_the_same_deciding_p():
    """Where the stable cases' breakage test is nearer to deciding than the mean-drop test,
    the comment and report.html both show its p (the report once showed the mean-drop
    test's alone: p=0.974 beside a FAIL that p=0.005 had decided)."""
    from evalgate.gate import update_ledger
    from evalgate.reports.markdown import render_comment

    current, baseline = sample_runs()
    ledger = None
    for _ in range(10):
        ledger = update_ledger(ledger, baseline, 10)
    comparison = compare(baseline, current, GatePolicy(), ledger, BASE_INFO)
    crit = next(c for s in comparison.suites if s.name == "support" for c in s.criteria if c.criterion == RM)
    assert crit.breakage_p_adjusted is not None and crit.breakage_p_adjusted < crit.p_adjusted
    p = f"p={crit.breakage_p_adjusted:.3f}"
    comment = render_comment(comparison, current)
    row = next(line for line in comment.splitlines() if line.startswith("| response\\_match\\_score |"))
    assert f"({p})" in row
    page = render_html(comparison, current, baseline, run_url=RUN_URL)
    support = page[page.index('<div class="card suite">'):]
    support = support[: support.index('<div class="card suite">', 1)]
    cell = re.search(r'<span class="t mono">response_match_score</span>.*?<span class="pill v-\w+">\w+</span> <span class="muted small">([^<]+)</span>', support, re.S)
    assert cell and html_lib.unescape(cell.group(1)) == p


def test_filters_and_search_change_what_is_shown(browser, tmp_path):
    w = Watched(browser, _write(tmp_path, REPORT_FILE, compared_report()))
    try:
        page = w.page
        page.click("[data-tab=cases]")
        assert w.count() == "Showing 16 of 16 cases"
        w.filter("#f-change", "regressed")
        assert w.shown_ids() == ["order-status-en", "two-turns"]
        w.filter("#f-change", "fixed")
        assert w.shown_ids() == ["order-status-ja"]
        w.filter("#f-change", "flaky (on the default branch, or its samples disagree)")
        assert sorted(w.shown_ids()) == ["order-status-en", "returns-policy", "three-runs"]  # 1 of 5 samples passed
        w.filter("#f-change", "removed")
        assert w.shown_ids() == ["legacy-coupons"]
        w.filter("#f-change", "all")
        w.filter("#f-suite", "vertex")
        assert sorted(w.shown_ids()) == ["medical-advice", "refuses-harm"]
        w.filter("#f-status", "not evaluated")
        assert w.shown_ids() == ["medical-advice"]
        w.filter("#f-suite", "all")
        w.filter("#f-status", "failed")
        w.filter("#f-crit", TT)
        assert w.shown_ids() == ["order-status-en", "two-turns"]
        page.fill("#q", "timer")
        assert w.shown_ids() == ["two-turns"]
        page.fill("#q", "no such text anywhere")
        assert w.count() == "Showing 0 of 16 cases" and page.is_visible("#empty")
        page.click("#f-clear")
        assert w.count() == "Showing 16 of 16 cases"
        # The overview's buttons open the cases they name.
        page.click("[data-tab=overview]")
        page.click(".chip.ch-fixed")
        assert page.is_visible("#cases") and w.shown_ids() == ["order-status-ja"]
        # Keyboard: arrows move through the list.
        page.click("#f-clear")
        page.click("#rows .row")
        page.keyboard.press("ArrowDown")
        page.keyboard.press("ArrowDown")
        third = w.shown_ids()[2]
        assert page.text_content("#detail h2").endswith(f" / {third}")
        assert page.text_content("#rows .row.sel .id") == third
        assert w.clean() == []
    finally:
        w.close()


@pytest.mark.parametrize("language", ["en", "ko", "ja"])
def test_hostile_strings_stay_inert_text(browser, tmp_path, artifacts, language):
    """The hostile cases in each language: report.js builds its text from our translated
    messages with the untrusted values as fields, and every one stays text."""
    from evalgate import i18n

    with i18n.language(language):
        report = hostile_report()
        showing = i18n.n_("Showing {shown} of {n} case", "Showing {shown} of {n} cases", len(HOSTILE), shown=f"{len(HOSTILE):,}")
    w = Watched(browser, _write(tmp_path, REPORT_FILE, report))
    try:
        page = w.page
        before = page.evaluate("() => document.querySelectorAll('*').length")
        page.click("[data-tab=cases]")
        assert w.count() == showing
        ids = page.evaluate("() => JSON.parse(document.getElementById('evalgate-data').textContent).cases.map(c => c.id)")
        page.click("#rows .row")
        for k in range(len(HOSTILE)):  # each case in turn, in the list's order (the data's)
            if k:
                page.keyboard.press("ArrowDown")
            i = int(ids[k][:2])
            detail = page.text_content("#detail")
            shown = page.evaluate("() => document.getElementById('detail').innerText")
            visible = re.sub(r"U\+[0-9A-F]{4,6}", "", shown)
            bad = HOSTILE[i]
            plain = "".join(ch for ch in bad if ch.isprintable() or ch in "\n\t")
            # Shown as text: every printable piece of the string is on the page.
            for piece in re.split(r"[\u2028\u2029\u202e\u2066\u2069\u200b\x00\x1b\x07]", bad):
                if piece.strip():
                    assert piece.strip() in detail, (i, piece)
            assert plain[:10] in visible or not plain.strip()
            if i == 3:
                _shoot(page, artifacts / ("report-hostile.png" if language == "en" else f"report-hostile-{language}.png"), "detail")
        page.click("[data-tab=usage]")
        page.click("[data-tab=overview]")
        state = page.evaluate(
            """() => ({
              pwned: Object.keys(window).filter(k => k.startsWith('__pwned')),
              scripts: document.scripts.length,
              styles: document.querySelectorAll('style, link').length,
              foreign: document.querySelectorAll('img, svg, iframe, object, embed, form, base, meta[http-equiv=refresh], math, template, noscript, a[href^=javascript]').length,
              handlers: [...document.querySelectorAll('*')].filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length,
              hiddenBody: getComputedStyle(document.body).display === 'none' || getComputedStyle(document.body).visibility === 'hidden',
              links: [...document.querySelectorAll('a')].map(a => a.href),
            })"""
        )
        assert state == {"pwned": [], "scripts": 2, "styles": 2, "foreign": 0, "handlers": 0, "hiddenBody": False, "links": [RUN_URL]}, state
        assert sorted(ids) == sorted(f"{i:02d} {bad}" for i, bad in enumerate(HOSTILE))
        assert page.evaluate("() => window.__pwned") is None
        assert before > 0
        assert w.clean() == []
    finally:
        w.close()


def test_five_thousand_cases_open_and_filter(browser, tmp_path):
    run = big_run()
    path = _write(tmp_path, REPORT_FILE, render_html(compare(None, run, GatePolicy()), run))
    t0 = time.perf_counter()
    w = Watched(browser, path)
    try:
        page = w.page
        opened = time.perf_counter() - t0
        t1 = time.perf_counter()
        page.click("[data-tab=cases]")
        assert w.count() == "Showing 5,000 of 5,000 cases"
        listed = time.perf_counter() - t1
        assert page.locator("#rows .row").count() < 60  # drawn on demand
        t2 = time.perf_counter()
        w.filter("#f-status", "failed")
        assert w.count() == "Showing 500 of 5,000 cases"
        filtered = time.perf_counter() - t2
        t3 = time.perf_counter()
        page.fill("#q", "a-04993")
        assert w.shown_ids() == ["case-04993"]
        searched = time.perf_counter() - t3
        page.fill("#q", "")
        page.evaluate("() => { const l = document.getElementById('list'); l.scrollTop = l.scrollHeight; l.dispatchEvent(new Event('scroll')); }")
        page.wait_for_timeout(50)
        failing = sorted((i % 4, i % 7, i) for i in range(5000) if i % 10 == 3)  # the list's order: suite, eval set, id
        assert w.shown_ids()[-1] == f"case-{failing[-1][2]:05d}"
        size = path.stat().st_size
        print(
            f"\n5,000 cases ({size / 1e6:.1f} MB): opened in {opened:.2f} s, case list in {listed:.2f} s, "
            f"status filter in {filtered:.2f} s, first search in {searched:.2f} s"
        )
        assert w.clean() == []
    finally:
        w.close()


def test_the_policy_holds_even_if_our_own_code_erred(browser, tmp_path):
    """Defence in depth: were some text to reach an HTML sink, the page's CSP would still
    refuse it: no markup through innerHTML (Trusted Types), no script or style that is not
    ours, nothing loaded from anywhere."""
    w = Watched(browser, _write(tmp_path, REPORT_FILE, compared_report()))
    try:
        page = w.page
        result = page.evaluate(
            """() => {
              const out = {};
              try { document.createElement('div').innerHTML = '<img src=x onerror="window.__pwned=1">'; out.innerHTML = 'allowed'; }
              catch (e) { out.innerHTML = e.name; }
              try { const s = document.createElement('script'); s.text = 'window.__pwned=2'; document.body.appendChild(s); out.script = 'appended'; }
              catch (e) { out.script = e.name; }
              const img = document.createElement('img'); img.src = 'http://127.0.0.1:9/x.png'; document.body.appendChild(img);
              const style = document.createElement('style'); style.textContent = 'body { display: none }'; document.head.appendChild(style);
              out.hidden = getComputedStyle(document.body).display === 'none';
              return out;
            }"""
        )
        page.wait_for_timeout(200)
        assert result == {"innerHTML": "TypeError", "script": "TypeError", "hidden": False}
        assert page.evaluate("() => window.__pwned") is None
        # Chromium reports the image's request, which its policy stops before it leaves.
        blocked = {u: w.failed.get(u, "") for u in w.requests if u != w.path.as_uri()}
        assert list(blocked) == ["http://127.0.0.1:9/x.png"] and "csp" in blocked["http://127.0.0.1:9/x.png"].lower(), blocked
        assert any("Content Security Policy" in m or "TrustedHTML" in m or "TrustedScript" in m for m in w.console)
    finally:
        w.close()


def test_odd_values_do_not_break_the_page():
    """NaN scores and a lone surrogate would make JSON.parse or UTF-8 refuse the page."""
    current, _ = sample_runs()
    case = current.suites[0].cases[0]
    case.criteria[RM].per_invocation[0].details["precision"] = float("nan")
    case.criteria[FR].per_invocation[0].details["samples"][0] = float("nan")
    case.invocations[0] = case.invocations[0].model_copy(update={"actual_response": "half a pair: \ud800."})
    page = render_html(compare(None, current, GatePolicy()), current)
    page.encode("utf-8")
    data = _data(page)
    got = next(c for c in data["cases"] if c["id"] == case.eval_id)
    assert got["inv"][0]["ar"] == "half a pair: \ud800."
    assert next(j for j in got["judge"] if j["c"] == data["criteria"].index(FR))["per"][0]["samples"][0] == {"sc": None, "ok": None, "why": "The response does not give the order's status the reference gives."}


# --- in Korean and Japanese ---------------------------------------------------------------------

QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart"
# Never translated (evalgate/locale/GLOSSARY.md): verdicts and statuses, the gate's modes,
# names of tools and formats, and the config keys and files a message names.
TOKENS = {
    "PASS", "FAIL", "INCONCLUSIVE", "ERROR", "PASSED", "FAILED", "NOT_EVALUATED", "evalgate", "regression", "absolute",
    "ADK", "ID", "Holm", "stdout", "stderr", "flaky", "results.json", "gate.efficiency", "max_cases", "sha256",
}
# Text other modules make, which their own helpers translate (the gate's efficiency labels).
ELSEWHERE = {"tool calls per turn", "model calls per turn", "tokens per turn", "seconds per turn"}
SEEN = r"""() => {
  // Text a reader sees that the report itself wrote: not under .t (names, agent and judge
  // text, the gate's reasons: data), in what is rendered now.
  const out = [];
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const e = n.parentElement, s = n.textContent.trim();
    if (s && !e.closest('.t, script, style, select') && e.checkVisibility()) out.push(s);
  }
  document.querySelectorAll('[placeholder], [aria-label], [title]').forEach(e => {
    if (!e.closest('.t')) ['placeholder', 'aria-label', 'title'].forEach(a => e.getAttribute(a) && out.push(e.getAttribute(a)));
  });
  ['f-status', 'f-change'].forEach(id => document.querySelectorAll('#' + id + ' option').forEach(o => out.push(o.textContent)));
  ['f-suite', 'f-crit'].forEach(id => out.push(document.querySelector('#' + id + ' option').textContent));
  return out;
}"""


def _quickstart_report(cli, tmp_path: Path, language: str) -> Path:
    baseline = next((QUICKSTART / "main" / "store" / "baselines" / "evalgate").glob("*.json.gz"))
    out = tmp_path / f"out-{language}"
    code, _, err = cli("gate", "--config", str(QUICKSTART / "evalgate.yaml"), "--baseline", str(baseline), "--out", str(out), "--language", language, "--no-color")
    assert code == 1, err  # the example's pull request regresses
    return out / REPORT_FILE


def _every_view(w: "Watched") -> list[str]:
    """What the report wrote on every view: the overview, the usage, the cases' filters and
    list, and each case's detail with everything in it opened."""
    page = w.page
    seen = page.evaluate(SEEN)
    page.click("[data-tab=usage]")
    seen += page.evaluate(SEEN)
    page.click("[data-tab=cases]")
    page.click("#rows .row")
    for k in range(len(_data(w.path.read_text(encoding="utf-8"))["cases"])):
        if k:
            page.keyboard.press("ArrowDown")
        page.evaluate("() => document.querySelectorAll('#detail details').forEach(d => d.open = true)")
        seen += page.evaluate(SEEN)
    page.click("[data-tab=overview]")
    return seen


def _english_left(seen: list[str], names: list[str]) -> list[str]:
    """The strings that still hold an English word once names, tokens, numbers and commit
    ids are taken out."""
    left = []
    for s in seen:
        rest = s
        for word in sorted(set(names) | TOKENS | ELSEWHERE, key=len, reverse=True):
            rest = rest.replace(word, " ")
        rest = re.sub(r"(?<![0-9a-z])[0-9a-f]{7,40}(?![0-9a-z])|\d{4}-\d\d-\d\dT[\d:+]+|(?<![A-Za-z])p(?![A-Za-z])", " ", rest)
        if re.search(r"[A-Za-z]{2,}", rest):
            left.append(s)
    return sorted(set(left))


SPOKEN = {
    # (a tab, the case counter, the change filter's "regressed", the counter with it chosen)
    "ko": ("개요", "케이스 10개 중 10개 표시", "회귀", "케이스 10개 중 3개 표시"),
    "ja": ("概要", "ケース 10 件中 10 件を表示", "悪化", "ケース 10 件中 3 件を表示"),
}


@pytest.mark.parametrize("language", ["ko", "ja"])
def test_the_bundled_example_reads_in_korean_and_japanese(browser, cli, tmp_path, artifacts, language):
    """The quickstart's report rendered in the language: every word the report writes on
    every view (report.js's too) is in it, the filters and counters speak it, and at 1400 px
    nothing runs past its card."""
    path = _quickstart_report(cli, tmp_path, language)
    text = path.read_text(encoding="utf-8")
    assert f'<html lang="{language}">' in text
    data = _data(text)
    names = data["suites"] + data["criteria"] + [c["id"] for c in data["cases"]] + [c["set"] for c in data["cases"]]
    tab, counter, regressed, three = SPOKEN[language]
    w = Watched(browser, path, viewport=(1400, 900))
    try:
        page = w.page
        assert page.text_content("[data-tab=overview]") == tab
        assert _english_left(_every_view(w), names) == []
        # The filters and the counter, drawn by report.js, speak the language.
        page.click("[data-tab=cases]")
        assert w.count() == counter
        w.filter("#f-change", regressed)
        assert w.count() == three and w.shown_ids() == ["capabilities-en", "faq-ko", "order-status-ko"]  # broken stable ones too
        assert page.text_content("#rows .row .tag") == regressed
        page.click("#f-clear")
        assert w.count() == counter
        shot = _shoot(page, artifacts / f"report-quickstart-{language}-cases.png", "detail")
        page.click("[data-tab=usage]")
        _shoot(page, artifacts / f"report-quickstart-{language}-usage.png", "usage")
        page.click("[data-tab=overview]")
        # At 1400 px every table stays inside its card, and no card or heading is wider than it shows.
        for f in _fit(page):
            assert f["table_right"] <= f["card_inner_right"] + 0.5 and f["hidden"] <= 0, f
        wide = page.evaluate(
            "() => [...document.querySelectorAll('#overview .card, #overview .card h1, #overview .card h2, #overview .chips, #trends figure')]"
            ".filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.className || e.tagName)"
        )
        assert wide == []
        path_shot = _shoot(page, artifacts / f"report-quickstart-{language}-overview.png", "overview")
        print(f"\nscreenshots of the quickstart's report in {language}: {path_shot}, {shot}")
        assert w.clean() == []
    finally:
        w.close()


def test_the_check_finds_english_left_in_a_translated_page(browser, cli, tmp_path):
    """The test above can fail: the English page is all English to it."""
    path = _quickstart_report(cli, tmp_path, "en")
    data = _data(path.read_text(encoding="utf-8"))
    assert "i18n" not in data  # English carries no translations
    names = data["suites"] + data["criteria"] + [c["id"] for c in data["cases"]] + [c["set"] for c in data["cases"]]
    w = Watched(browser, path)
    try:
        left = _english_left(_every_view(w), names)
        for label in ("Overview", "Showing 10 of 10 cases", "threshold", "Conversation", "− expected   + actual", "all"):
            assert label in left, label
    finally:
        w.close()


SNAPSHOTS = Path(__file__).parent / "snapshots" / "html"
SNAPSHOT_CASES = ["order-status-en", "order-status-ko", "order-status-ja", "returns-policy", "medical-advice", "refuses-harm", "three-runs", "two-turns", "legacy-coupons"]


def snapshot_report() -> str:
    """The sample runs with every part the page draws: trends, a Korean case with its agent's
    log and confirmation runs (an agent re-run and a judge re-draw)."""
    from datetime import datetime, timezone

    from evalgate.results import AgentLog, Rerun
    from evalgate.gate.trends import add_point

    current, baseline = sample_runs()
    support = current.suites[0]
    i = next(k for k, c in enumerate(support.cases) if c.eval_id == "order-status-ko")
    ko = support.cases[i]
    support.cases[i] = ko.model_copy(
        update={
            "agent_logs": [AgentLog(run=1, text="INFO 주문 조회: A-1001\nWARNING 배송 API 지연 1.2 s")],
            "reruns": [
                Rerun(run=1, how="agent", status=Status.PASSED, criteria={TT: _crit(1.0, (1.0, {}))}, invocations=ko.invocations),
                Rerun(run=2, how="judge", status=Status.FAILED, criteria={FR: _crit(0.8, (0.4, {}))}),
            ],
        }
    )
    trend = None
    for k in range(5):
        trend = add_point(trend, "evalgate", baseline, f"{k + 1:07x}" + "0" * 33, "refs/heads/main", datetime(2026, 11, 10 + k, tzinfo=timezone.utc))
    return render_html(compare(baseline, current, POLICY, None, BASE_INFO), current, baseline, run_url=RUN_URL, trend=trend)


def _page_text(w: "Watched") -> str:
    """What a reader reads, view by view: the overview, the usage, the filters and, for a
    chosen set of cases, the case's detail with everything opened."""
    page = w.page
    parts = ["## overview", page.inner_text("#overview"), "## usage"]
    page.click("[data-tab=usage]")
    parts.append(page.inner_text("#usage"))
    page.click("[data-tab=cases]")
    parts += ["## cases", page.eval_on_selector("#q", "e => e.placeholder"), page.inner_text(".filters")]
    parts.append(" | ".join(page.eval_on_selector_all(".filters option", "els => els.map(e => e.textContent)")))
    for case_id in SNAPSHOT_CASES:
        page.fill("#q", case_id)
        assert w.shown_ids() == [case_id]
        page.evaluate("() => document.querySelectorAll('#detail details').forEach(d => d.open = true)")
        parts += [f"## {case_id}", page.inner_text("#rows .row.sel"), page.inner_text("#detail")]
    page.fill("#q", "")
    return "\n".join(p.rstrip() for p in parts) + "\n"


@pytest.mark.parametrize("language", ["en", "ko", "ja"])
def test_the_page_text_snapshot(browser, tmp_path, language):
    """Every word of the page as a reader sees it in a browser (report.js's included), in each
    language, compared whole with tests/snapshots/html/report.<language>.txt (rewrite with
    EVALGATE_UPDATE_SNAPSHOTS=1 and read the diff)."""
    from evalgate import i18n

    with i18n.language(language):
        page_text = snapshot_report()
    w = Watched(browser, _write(tmp_path, REPORT_FILE, page_text))
    try:
        text = _page_text(w)
        assert w.clean() == []
    finally:
        w.close()
    check_snapshot(SNAPSHOTS / f"report.{language}.txt", text)


def test_the_page_carries_the_translations_of_exactly_report_js_messages():
    """report.js's t()/nt() messages as html.py finds them are the ones Babel extracts into
    the catalogs; a Korean page carries exactly their translations, an English one none."""
    pytest.importorskip("babel", reason="Babel (the test extra) extracts the messages")
    from babel.messages.extract import extract_from_file

    from evalgate import i18n
    from evalgate.locale.catalogs import PASSES
    from evalgate.reports.html import script_messages

    script = Path(__file__).resolve().parents[1] / "evalgate" / "templates" / "report.js"
    extracted = {m for _, m, _, _ in extract_from_file("javascript", str(script), keywords=PASSES[1][1])}
    plain, plural = script_messages()
    assert extracted == set(plain) | set(plural)
    assert "Showing {shown} of {n} case" in {one for one, _ in plural} and "Conversation" in plain

    english = compared_report()
    assert '<html lang="en">' in english and "i18n" not in _data(english)
    with i18n.language("ko"):
        korean = compared_report()
    assert '<html lang="ko">' in korean
    messages = _data(korean)["i18n"]
    assert set(messages["t"]) == set(plain) and set(messages["nt"]) == {one for one, _ in plural}
    assert messages["t"]["Conversation"] == "대화"
    # Korean has one form: the page gives it for 1 and for other counts alike.
    assert messages["nt"]["Showing {shown} of {n} case"] == ["케이스 {n}개 중 {shown}개 표시"] * 2
    with i18n.language("ja"):
        japanese = _data(compared_report())["i18n"]
    # A list's separator comes from the catalog (GLOSSARY.md, "Lists"): "0.50、0.70" in Japanese.
    assert (messages["t"][", "], japanese["t"][", "]) == (", ", "、")


def test_a_language_whose_plurals_report_js_cannot_choose_is_refused(monkeypatch):
    """report.js picks a plural form as English does (1, or other); a catalog with another
    rule (Russian's three forms) is refused rather than shown with wrong forms."""
    pytest.importorskip("babel", reason="Babel (the test extra) compiles the catalog")
    import gettext
    import io

    from babel.messages.catalog import Catalog
    from babel.messages.mofile import write_mo

    from evalgate import i18n
    from evalgate.reports import html
    from evalgate.reports.html import script_messages

    plain, plural = script_messages()
    catalog = Catalog(locale="ru")
    for one, many in plural:
        catalog.add((one, many), (one + " [1]", many + " [2-4]", many + " [5+]"))
    mo = io.BytesIO()
    write_mo(mo, catalog)
    mo.seek(0)
    monkeypatch.setattr(i18n, "LANGUAGES", i18n.LANGUAGES + ("ru",))
    monkeypatch.setitem(i18n._loaded, "ru", gettext.GNUTranslations(mo))
    try:
        with pytest.raises(ValueError, match="plural rule of 'ru' differs"):
            html._script_messages("ru")
    finally:
        html._script_messages.cache_clear()


def _flaky_on_main_report() -> tuple[str, str]:
    """The sample, with a ledger in which order-status-en (regressed now) failed 3 of its last
    8 runs on the default branch: the gate names it flaky there and does not blame the PR."""
    from evalgate.gate.ledger import ledger_key
    from evalgate.gate.model import CaseKey

    current, baseline = sample_runs()
    history = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    ledger = {ledger_key(CaseKey("support", "shop_support", "order-status-en"), name): history for name in (TT, RM, FR, RB)}
    comparison = compare(baseline, current, POLICY, ledger, BASE_INFO)
    [change] = [ch for s in comparison.suites for ch in s.changes if ch.key.eval_id == "order-status-en"]
    assert getattr(change, "flaky_history", None) == (5, 8)
    return render_html(comparison, current, baseline, run_url=RUN_URL), "flaky on the default branch: passed 5 of its last 8 runs there"


def test_the_report_says_why_a_case_flaky_on_main_is_not_blamed():
    """Issue 35, item 6: the terminal and the comment said why; report.html only tagged the
    case "flaky", a word it also used for samples disagreeing within this run."""
    page, words = _flaky_on_main_report()
    by_id = {c["id"]: c for c in _data(page)["cases"]}
    assert by_id["order-status-en"]["hist"] == words
    assert "hist" not in by_id["returns-policy"] and by_id["returns-policy"]["flaky"] == 1  # within this run only
    from evalgate import i18n

    with i18n.language("ko"):  # the script's words reach the page in the report's language
        messages = _data(_flaky_on_main_report()[0])["i18n"]["t"]
    assert messages["{history}: not blamed on this pull request"] == "{history}: 이 PR 탓으로 보지 않습니다"


def test_the_case_flaky_on_main_reads_so_in_the_browser(browser, tmp_path):
    page_html, words = _flaky_on_main_report()
    w = Watched(browser, _write(tmp_path, REPORT_FILE, page_html))
    try:
        page = w.page
        page.click("[data-tab=cases]")
        assert w.shown_ids()[0] == "order-status-en"
        meta = page.text_content("#detail .meta")
        assert f"{words}: not blamed on this pull request" in meta and "flaky on the default branch" in meta
        w.filter("#f-change", "flaky (on the default branch, or its samples disagree)")
        assert "order-status-en" in w.shown_ids()
        page.fill("#q", "returns-policy")
        assert "samples disagree" in page.text_content("#rows")
        assert w.clean() == []
    finally:
        w.close()
