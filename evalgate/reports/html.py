"""The run's report as one self-contained HTML file: `report.html`.

`evalgate run`, `evalgate merge` and `evalgate compare` write it beside results.json, and so
does the GitHub Action into its output folder. Opened from an artifact download or
`file://`, it asks no host for anything.

What it shows. The verdict and the per-suite, per-criterion table of the PR comment; every
case, filterable by suite, criterion, status and change (regressed, fixed, flaky, ...) and
searchable; per case the conversation, the expected and actual tool calls as a diff, the
responses side by side (the baseline's beside the current when comparing), each judge
sample with its reason, rubric verdicts, Vertex AI explanations, the errors of criteria
that were not evaluated and, collapsed, what the agent wrote while it ran (its log); and usage: judge requests, cache hits and tokens, the agent's runs
and the scoring time per suite and criterion.

Rendering is pure: the same inputs give the same bytes (no clock, no randomness).

Safety. Agent text, eval ids, suite and criterion names, tool names and arguments, judge
reasons and the comparison's reasons are hostile. Three layers keep them inert:

- The page's own Content-Security-Policy (a `<meta>`): nothing may load from anywhere
  (`default-src 'none'`), the one script and the one style block run only because their
  sha256 hashes are listed, `img-src` allows `data:` only, there are no forms, no base URL
  and no frames, and Trusted Types forbid any HTML sink (`innerHTML` and its kin throw).
- The overview is rendered by Jinja with autoescape on; untrusted text goes through the
  `t` filter, which escapes it and shows characters that hide or reorder text (U+202E and
  the like) as a visible `U+202E` mark, as the Markdown report does.
- The cases are data: one JSON document in a `<script type="application/json">` block, with
  `<`, `>`, `&`, U+2028 and U+2029 written as `\\uXXXX` escapes so no text can end the
  block, and the page's script builds the DOM from it with `textContent` and
  `createElement` only, never from markup.

Size. Cases are drawn on demand (a virtual list, one case's detail at a time), so 5,000
cases make a file of a few megabytes that opens and filters at once. Each text is kept up
to `MAX_TEXT` characters (results.json has all of it), and the baseline's responses are
kept only where they differ from the current ones.
"""

from __future__ import annotations

import base64
import difflib
import functools
import hashlib
import json
import math
import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Optional

from evalgate.gate import CaseKey, Comparison, CriterionComparison, Verdict, case_samples
from evalgate import efficiency, i18n
from evalgate.i18n import _, listing, mark, n_, p_
from evalgate.reports import COST_COLUMNS, cost_cells, deciding_p, delta_cell, duration, efficiency_cells, flaky_words, templates
from evalgate.reasons import shown as shown_reason
from evalgate.reports.trend_chart import svg_chart
from evalgate.results import CaseResult, CriterionResult, InvocationSummary, RunResults, Status
from evalgate.gate.trends import Series, Trend, position, series

__all__ = ["REPORT_FILE", "render_html", "write_html", "content_security_policy"]

REPORT_FILE = "report.html"
MAX_TEXT = 20_000  # characters kept of one message, response, reason or details block
MAX_REASONS = 200  # verdict and suite reasons listed in the overview

_STATUS = {Status.PASSED: "P", Status.FAILED: "F", Status.NOT_EVALUATED: "N", Status.INFORMATIONAL: "I"}
# Characters shown as a visible "U+XXXX" mark instead of acting: controls (but newline and
# tab), format characters that hide or reorder text (bidi overrides and isolates, zero-width
# spaces, tag characters; not the joiners that emoji and Indic scripts need), surrogates.
_JOINERS = {"\u200c", "\u200d"}
_SURROGATE = re.compile("[\ud800-\udfff]")


# --- text ------------------------------------------------------------------------------


def _hidden(ch: str) -> bool:
    return ch not in _JOINERS and ch not in "\n\t" and unicodedata.category(ch) in ("Cc", "Cf", "Cs")


def _cut(text: str, limit: int = MAX_TEXT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + "\n… " + _("(the first {shown} of {total} characters; results.json has all of them)", shown=f"{limit:,}", total=f"{len(text):,}")


def _text(value: Any, limit: int = MAX_TEXT) -> str:
    return _cut(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str), limit)


def _t_filter(value: Any):
    """Jinja filter for untrusted text: escaped, hidden characters shown as marks."""
    from markupsafe import Markup, escape

    text = str(value)
    if not any(_hidden(ch) for ch in text):
        return escape(text)
    out = []
    for ch in text:
        if _hidden(ch):
            out.append(Markup(f'<span class="ctl">U+{ord(ch):04X}</span>'))  # only hex digits from the text
        else:
            out.append(escape(ch))
    return Markup("").join(out)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _json_for_script(data: Any) -> str:
    """JSON safe inside `<script type="application/json">`: no `<`, `>` or `&` at all (so
    no `</script>` and no `<!--`), and U+2028 / U+2029 escaped too."""
    try:
        text = json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except ValueError:  # NaN or infinity somewhere: JSON.parse would refuse the page's data
        text = json.dumps(_finite(data), ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)
    text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)  # a lone surrogate cannot be written as UTF-8
    return (
        text.replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


# --- numbers and words we compose (trusted) ---------------------------------------------


def _num(x: Optional[float], digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _p(p: float) -> str:
    return "p<0.001" if p < 0.001 else f"p={p:.3f}"


def _int(x: Any) -> str:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return "–"
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.2f}"


# --- the overview (rendered by the template) --------------------------------------------


@dataclass
class _Row:
    criterion: str
    crit_index: int
    kind: str
    threshold: str
    pairs: int
    baseline: str
    current: str
    delta: str
    status: str
    status_class: str
    p: str
    failing: int  # cases failing this criterion now
    trend: str = ""  # where this run sits in the last default-branch runs
    trend_class: str = ""


@dataclass
class _Chart:
    title: str  # untrusted: suite and criterion
    svg: str  # ours: numbers and hex commit ids only (evalgate.reports.trend_chart)
    note: str


@dataclass
class _Suite:
    name: str
    index: int
    verdict: str
    verdict_class: str
    counts: str
    reasons: list[str]
    warnings: list[str]
    skipped: list[str]
    rows: list[_Row]
    pairwise: str = ""  # gate.pairwise: the side-by-side summary line
    pairwise_status: str = ""
    pairwise_class: str = ""


@dataclass
class _Usage:
    keys: list[str]  # the stats' keys, one a column
    rows: list[tuple[str, str, list[str]]]  # (suite, criterion, values)

    @property
    def columns(self) -> list[str]:
        return [_stat_label(k) for k in self.keys]


@dataclass
class _View:
    verdict: str
    verdict_class: str
    headline: list[str]
    gate: Optional[str]
    reasons: list[str]
    hidden_reasons: int
    config_changed: bool
    baseline: str
    mode: str
    with_baseline: bool
    suites: list[_Suite]
    chips: list[tuple[str, str, int]]  # (filter value, label, count)
    run_facts: list[tuple[str, str]]
    agent_rows: list[list[str]]
    efficiency_rows: list[list[str]]  # per suite: ADK's efficiency metrics per turn
    cost_rows: list[tuple[list[str], str]]  # per suite and metric: against the baseline (evalgate.gate.efficiency), and its status
    costs_gated: bool  # gate.efficiency tolerates an increase of at least one of them
    judge: _Usage
    timing_rows: list[tuple[str, str, str, str]]  # (suite, criterion, seconds, share)
    run_url: Optional[str]
    footer: str
    title: str
    cases: int
    failed: int
    not_evaluated: int
    trend_header: str = ""  # the tables' trend column title; empty: no column
    charts: list[_Chart] = field(default_factory=list)
    data: str = ""
    csp: str = ""
    style: str = ""
    script: str = ""


def _trend_text(s: Series) -> tuple[str, str]:
    """(`▼ 0.712, below 0.780–0.860`, css class): this run against the earlier runs' range."""
    pos = position(s)
    if pos is None:
        return n_("{n} earlier run: too few to place this one", "{n} earlier runs: too few to place this one", len(s.values)), ""
    fields = dict(value={"below": "▼ ", "above": "▲ ", "within": ""}[pos.where] + f"{pos.value:.3f}", low=f"{pos.low:.3f}", high=f"{pos.high:.3f}")
    text = {
        "below": _("{value}, below {low}–{high}", **fields),
        "within": _("{value}, within {low}–{high}", **fields),
        "above": _("{value}, above {low}–{high}", **fields),
    }[pos.where]
    return text, pos.where


def _trend_header(trends: list[Series]) -> str:
    """The tables' column title: "this run against the last 12 default-branch runs"."""
    n = max((len(s.values) for s in trends), default=0)
    if not n:
        return ""
    return n_("this run against the last default-branch run", "this run against the last {n} default-branch runs", n)


def _charts(trends: list[Series], many_suites: bool) -> list[_Chart]:
    charts = []
    for s in trends:
        svg = svg_chart(s)
        if svg is None:
            continue
        first, last, low, high = s.labels[0], s.labels[-1], f"{min(s.values):.3f}", f"{max(s.values):.3f}"
        if s.current is None:
            note = n_("{n} run from {first} to {last}, mean {low}–{high}", "{n} runs from {first} to {last}, mean {low}–{high}", len(s.values), first=first, last=last, low=low, high=high)
        else:
            note = n_(
                "{n} run from {first} to {last}, mean {low}–{high}; this run {value}",
                "{n} runs from {first} to {last}, mean {low}–{high}; this run {value}",
                len(s.values),
                first=first,
                last=last,
                low=low,
                high=high,
                value=f"{s.current:.3f}",
            )
        charts.append(_Chart(f"{s.suite} · {s.criterion}" if many_suites else s.criterion, svg, note))
    return charts


def _verdict_class(v: Verdict) -> str:
    return {Verdict.PASS: "pass", Verdict.FAIL: "fail", Verdict.INCONCLUSIVE: "warn", Verdict.ERROR: "fail"}[v]


def _row(c: CriterionComparison, crit_index: int, failing: int, evaluated: int, with_baseline: bool) -> _Row:
    delta = delta_cell(c.delta, c.ci_low, c.ci_high)
    kind = (_("judge, per sample") if c.basis == "samples" else _("judge")) if c.judge else ""
    return _Row(
        criterion=c.criterion,
        crit_index=crit_index,
        kind=kind,
        threshold="–" if c.no_threshold else f"{c.threshold:.2f}",
        pairs=c.n_pairs if with_baseline else evaluated,
        baseline=_num(c.baseline_mean),
        current=_num(c.current_mean),
        delta=delta,
        status=c.status.value,
        status_class=_verdict_class(c.status),
        p=_p(deciding_p(c)) if with_baseline and deciding_p(c) is not None else "",  # as the comment shows it
        failing=failing,
    )


def _trend_row(row: _Row, s: Optional[Series]) -> _Row:
    if s is not None:
        row.trend, row.trend_class = _trend_text(s)
    return row


def _baseline_line(comparison: Comparison) -> str:
    info = comparison.baseline
    assert info is not None
    if not info.commit:
        text = _("Baseline: a results file with no recorded commit")
    elif info.distance and info.commit != info.requested_commit:
        text = n_(
            "Baseline from ancestor {commit}, {n} commit before the base {base}",
            "Baseline from ancestor {commit}, {n} commits before the base {base}",
            info.distance,
            commit=info.commit[:12],
            base=info.requested_commit[:12],
        )
    else:
        text = _("Baseline: {commit}, the base commit", commit=info.commit[:12])
    if info.created_at:
        return _("{baseline} (recorded {when}).", baseline=text, when=info.created_at[:19].replace("T", " "))
    return _("{baseline}.", baseline=text)


def _counts(c: Any) -> str:
    """`9 cases: 6 passed, 3 failed, 0 not evaluated` (the terminal summary's words)."""
    return _(
        "{cases}: {passed} passed, {failed} failed, {not_evaluated} not evaluated",
        cases=n_("{n} case", "{n} cases", c.cases),
        passed=f"{c.passed:,}",
        failed=f"{c.failed:,}",
        not_evaluated=f"{c.not_evaluated:,}",
    )


def _headline(comparison: Comparison, current: RunResults) -> list[str]:
    kinds = [ch.kind for s in comparison.suites for ch in s.changes]
    parts = []
    if comparison.baseline is not None:
        regressed = kinds.count("regressed") + kinds.count("broken_stable")
        if regressed:
            parts.append(n_("{n} regressed case", "{n} regressed cases", regressed))
        elif kinds.count("score_drop"):  # metrics without a threshold never fail a case
            parts.append(n_("{n} case scored lower", "{n} cases scored lower", kinds.count("score_drop")))
        else:
            parts.append(_("no regressed cases"))
        if kinds.count("fixed"):
            parts.append(n_("{n} fixed case", "{n} fixed cases", kinds.count("fixed")))
    c = current.counts
    parts.append(_counts(c))
    if c.incomplete:
        parts.append(_("{n} with criteria not evaluated", n=f"{c.incomplete:,}"))
    return parts


_STAT_COLUMNS = [
    ("requests", mark("requests")),
    ("cache_hits", mark("cache hits")),
    ("retries", mark("retries")),
    ("failures", mark("failures")),
    ("prompt_tokens", mark("prompt tokens")),
    ("output_tokens", mark("output tokens")),
    ("total_tokens", mark("tokens")),
]
_SIMULATOR_WORDS = {"total_tokens": mark("total tokens")}  # the simulated user's usage, in the run facts


def _stat_label(key: str) -> str:
    """A judge usage column's title; a key we do not know, as written."""
    label = dict(_STAT_COLUMNS).get(key)
    return _(label) if label else key.replace("_", " ")


def _judge_usage(current: RunResults) -> _Usage:
    found: list[tuple[str, str, dict[str, Any]]] = []
    for suite in current.suites:
        for name, spec in sorted(suite.criteria.items()):
            stats = spec.stats if isinstance(spec.stats, dict) else {}
            numbers = {k: v for k, v in stats.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            if numbers:
                found.append((suite.name, name, numbers))
    if not found:
        return _Usage([], [])
    known = [k for k, _label in _STAT_COLUMNS if any(k in n for _s, _c, n in found)]
    other = sorted({k for _s, _c, n in found for k in n} - set(known))
    keys = known + other
    return _Usage(keys, [(s, c, [_int(n.get(k)) for k in keys]) for s, c, n in found])


def _with_pairwise_usage(usage: _Usage, comparison: Comparison) -> _Usage:
    """gate.pairwise's judge usage as one more row per suite (its columns among the table's)."""
    found = [(sc.name, pw.pairs.stats) for sc in comparison.suites if (pw := getattr(sc, "pairwise", None)) is not None and pw.pairs.stats]
    if not found:
        return usage
    keys = usage.keys or [k for k, _label in _STAT_COLUMNS if any(k in n for _name, n in found)]
    rows = list(usage.rows) + [(name, _("side by side"), [_int(n.get(k)) for k in keys]) for name, n in found]
    return _Usage(keys, rows)


def _agent_rows(current: RunResults) -> list[list[str]]:
    rows = []
    for name, u in sorted(((current.run.agent or {}).get("suites") or {}).items()):
        if not isinstance(u, dict):
            continue
        tokens = (u.get("tokens") or {}).get("total") if isinstance(u.get("tokens"), dict) else None
        tools = u.get("tools") if isinstance(u.get("tools"), dict) else {}
        rows.append(
            [
                name,
                _int(u.get("case_runs", 0)),
                _int(u.get("failed", 0)),
                _int(u.get("reused", 0)),
                duration(float(u.get("duration_s", 0.0) or 0.0)),
                _int(tokens),
                f"{_int(tools.get('replayed', 0))} / {_int(tools.get('live', 0))}" if tools else "–",
            ]
        )
    return rows


_EFFICIENCY_COLUMNS = ("tool_calls", "model_calls", "tokens", "seconds")


def _efficiency_rows(current: RunResults) -> list[list[str]]:
    """Per suite, ADK's efficiency metrics per turn (informational)."""
    rows = []
    for suite in current.suites:
        values = efficiency.summarize(suite.cases)
        if values:
            cells = efficiency_cells(values)
            rows.append([suite.name] + [cells[k] for k in _EFFICIENCY_COLUMNS])
    return rows


def _cost_rows(comparison: Comparison) -> list[tuple[list[str], str]]:
    """Per suite and efficiency metric, the change against the baseline (evalgate.gate.efficiency)."""
    rows = []
    for suite in comparison.suites:
        for row in suite.costs:
            cells = cost_cells(row)
            rows.append(([suite.name] + [cells[k] for k in COST_COLUMNS], row.status))
    return rows


def _case_efficiency(case: CaseResult) -> Optional[dict[str, Any]]:
    """A case's efficiency for its detail view: the case's value per turn, then each turn's."""
    if not case.efficiency:
        return None
    cells = efficiency_cells(case.efficiency)
    turns = max(len(r.per_invocation) for r in case.efficiency.values())
    per = []
    for i in range(turns):
        values = {n: r.per_invocation[i] for n, r in case.efficiency.items() if i < len(r.per_invocation)}
        c = efficiency_cells(values)
        per.append([c[k] for k in _EFFICIENCY_COLUMNS])
    return {"case": [cells[k] for k in _EFFICIENCY_COLUMNS], "per": per, "runs": 1 if any(r.runs for r in case.efficiency.values()) else 0}


def _timing_rows(current: RunResults) -> list[tuple[str, str, str, str]]:
    rows = []
    for suite in current.suites:
        timing = (current.run.scoring or {}).get(suite.name)
        if not isinstance(timing, dict):
            continue
        total = float(timing.get("seconds") or 0.0)
        rows.append((suite.name, "", duration(total), ""))
        crits = timing.get("criteria") if isinstance(timing.get("criteria"), dict) else {}
        spent = sum(float(v) for v in crits.values() if isinstance(v, (int, float))) or 1.0
        for name, seconds in sorted(crits.items()):
            if isinstance(seconds, (int, float)):
                rows.append((suite.name, name, duration(float(seconds)), f"{100 * float(seconds) / spent:.0f}%"))
    return rows


def _run_facts(comparison: Comparison, current: RunResults) -> list[tuple[str, str]]:
    run = current.run
    facts = []
    if run.started_at:
        facts.append((_("started"), run.started_at))
    if run.duration_seconds is not None:
        facts.append((_("scoring"), duration(run.duration_seconds)))
    agent_s = (run.agent or {}).get("seconds")
    if isinstance(agent_s, (int, float)):
        facts.append((_("running the agent"), duration(float(agent_s))))
    if run.shards:
        facts.append((_("shards"), _("{n} merged", n=f"{len(run.shards):,}")))
    sim = (run.agent or {}).get("simulator")
    if isinstance(sim, dict) and sim:
        words = {**dict(_STAT_COLUMNS), **_SIMULATOR_WORDS}
        facts.append((_("simulated user"), listing(f"{_(words[k]) if k in words else k.replace('_', ' ')} {_int(v)}" for k, v in sorted(sim.items()) if not isinstance(v, dict))))
    facts.append(("evalgate", current.evalgate_version))
    facts.append((_("config digest"), current.config_digest[:19]))
    facts.append((_("mode"), comparison.mode))
    return facts


# --- the cases (embedded as JSON, drawn by the script) ----------------------------------


_ARGS_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(", ", ": "), default=str)  # built once, not once a call


def _call_text(call: dict[str, Any]) -> str:
    name = str(call.get("name", "?"))
    args = _ARGS_JSON.encode(call.get("args", {}))
    return _cut(f"{name}({args})", 4000)


def _tool_diff(expected: Optional[list[dict[str, Any]]], actual: list[dict[str, Any]]) -> list[list[str]]:
    """Lines of the tool-call diff: [" ", text] equal, ["-", text] expected only, ["+", text]
    actual only; without expected calls, [".", text] for each actual one."""
    got = [_call_text(c) for c in actual]
    if expected is None:
        return [[".", line] for line in got]
    want = [_call_text(c) for c in expected]
    lines: list[list[str]] = []
    for op, a0, a1, b0, b1 in difflib.SequenceMatcher(a=want, b=got, autojunk=False).get_opcodes():
        if op == "equal":
            lines.extend([" ", x] for x in want[a0:a1])
        else:
            lines.extend(["-", x] for x in want[a0:a1])
            lines.extend(["+", x] for x in got[b0:b1])
    return lines


_KNOWN_DETAILS = {"samples", "reasons", "rubrics", "explanation", "sentences", "metric"}


def _rubric(r: Any) -> Optional[dict[str, Any]]:
    if not isinstance(r, dict):
        return None
    verdict = r.get("verdict")
    if isinstance(verdict, bool):
        verdict_text = "yes" if verdict else "no"
    elif isinstance(verdict, (int, float)):
        verdict_text = f"{verdict:g}"
    else:
        verdict_text = _text(verdict if verdict is not None else "?", 200)
    out: dict[str, Any] = {
        "id": _text(r.get("rubric_id", r.get("rubricId", "?")), 500),
        "v": verdict_text,
        "why": _text(r.get("rationale", r.get("reasoning", "")) or ""),
    }
    votes = r.get("votes")
    if isinstance(votes, dict):
        out["votes"] = _("{yes} yes, {no} no", yes=_int(votes.get("yes", 0)), no=_int(votes.get("no", 0)))
    if isinstance(r.get("description"), str) and r["description"] != out["id"]:
        out["text"] = _text(r["description"], 2000)
    return out


def _judgement(index: int, inv: Any, threshold: float) -> dict[str, Any]:
    """One criterion's verdict on one invocation: score, samples with their reasons, rubric
    verdicts, explanation, error, and any other details as JSON text."""
    d = inv.details if isinstance(inv.details, dict) else {}
    out: dict[str, Any] = {"c": index, "st": _STATUS[inv.status]}
    if inv.score is not None:
        out["sc"] = inv.score
    if inv.error:
        out["err"] = _text(shown_reason(inv.error))
    samples = d.get("samples")
    reasons = d.get("reasons")
    if isinstance(reasons, str):
        reasons = [reasons]
    if isinstance(samples, list) and samples:
        rows = []
        for j, s in enumerate(samples):
            score = s if isinstance(s, (int, float)) and not isinstance(s, bool) and math.isfinite(s) else None
            row: dict[str, Any] = {"sc": score, "ok": None if score is None else score >= threshold}
            if isinstance(reasons, list) and j < len(reasons):
                row["why"] = _text(shown_reason(str(reasons[j])))
            rows.append(row)
        out["samples"] = rows
        if isinstance(reasons, list) and len(reasons) > len(samples):
            out["reasons"] = [_text(shown_reason(str(r))) for r in reasons[len(samples):]]
    elif isinstance(reasons, list) and reasons:
        out["reasons"] = [_text(shown_reason(str(r))) for r in reasons]
    if isinstance(d.get("explanation"), str) and d["explanation"]:
        out["expl"] = _text(d["explanation"])
    if isinstance(d.get("metric"), str):
        out["metric"] = _text(d["metric"], 200)
    rubrics = [x for x in (_rubric(r) for r in d.get("rubrics", []) if isinstance(d.get("rubrics"), list)) if x]
    if rubrics:
        out["rubrics"] = rubrics
    sentences = d.get("sentences")
    if isinstance(sentences, list) and sentences:
        out["sentences"] = [
            {
                "sample": s.get("sample"),
                "text": _text(s.get("sentence", ""), 4000),
                "label": _text(s.get("label", ""), 100),
                "why": _text(s.get("rationale", s.get("reason", "")) or "", 4000),
            }
            for s in sentences[:500]
            if isinstance(s, dict)
        ]
    rest = sorted((k, v) for k, v in d.items() if k not in _KNOWN_DETAILS)
    if rest:
        out["other"] = [[_text(k, 200), _detail_value(v)] for k, v in rest]
    return out


def _detail_value(v: Any) -> str:
    if isinstance(v, str):
        return _text(v)
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, (dict, list)) and v:
        return _text(json.dumps(v, ensure_ascii=False, sort_keys=True, indent=1, default=str))
    return _text(json.dumps(v, ensure_ascii=False, default=str))


def _flaky(result: CriterionResult) -> bool:
    """The criterion's samples (judge samples, or the agent's runs) disagree about passing in
    this run (drawn as "samples disagree"; a case flaky on the default branch is `hist`)."""
    samples = case_samples(result)
    return len(samples) > 1 and len({s >= result.threshold for s in samples}) > 1


def _invocations(current: list[InvocationSummary], base: Optional[list[InvocationSummary]]) -> list[dict[str, Any]]:
    out = []
    for i, inv in enumerate(current):
        item: dict[str, Any] = {"u": _text(inv.user), "ar": _text(inv.actual_response), "tools": _tool_diff(inv.expected_tools, inv.actual_tools)}
        if inv.expected_response is not None:
            item["er"] = _text(inv.expected_response)
        b = base[i] if base is not None and i < len(base) else None
        if b is not None:
            if b.actual_response != inv.actual_response:
                item["br"] = _text(b.actual_response)
            if b.actual_tools != inv.actual_tools:
                item["btools"] = _tool_diff(b.actual_tools, inv.actual_tools)
        out.append(item)
    return out


def _criteria_of(case: CaseResult, base: Optional[CaseResult], names: dict[str, int],
                 no_threshold: frozenset[str] = frozenset()) -> tuple[list[dict[str, Any]], list[dict[str, Any]], bool]:
    crits, judgements, flaky = [], [], False
    for name, r in sorted(case.criteria.items()):
        index = names[name]
        # None shows as "–": agents-cli's metrics have no threshold.
        c: dict[str, Any] = {"c": index, "st": _STATUS[r.status], "th": None if name in no_threshold else r.threshold}
        if r.score is not None:
            c["sc"] = r.score
        if r.error:
            c["err"] = _text(shown_reason(r.error))
        if r.runs:
            c["runs"] = r.runs
        if _flaky(r):
            c["flaky"] = 1
            flaky = True
        b = base.criteria.get(name) if base is not None else None
        if b is not None:
            c["bst"] = _STATUS[b.status]
            if b.score is not None:
                c["bsc"] = b.score
        crits.append(c)
        per = [_judgement(index, inv, r.threshold) for inv in r.per_invocation]
        judgements.append({"c": index, "per": per, "runs": len(r.runs) if r.runs else 1})
    return crits, judgements, flaky


MAX_LOG = 8_000  # characters kept of the end of a case run's log (results.json keeps up to 20,000)


def _agent_logs(case: CaseResult) -> list[list[Any]]:
    """What the agent wrote during each run, as [run, text, lines] (drawn collapsed with the
    case): its end, where a failure's traceback is; `lines` counts the whole log, as the
    terminal's line for a failed run does, also when only its end is shown."""
    out = []
    for log in case.agent_logs:
        text = log.text
        lines = text.count("\n") + 1
        if len(text) > MAX_LOG:
            text = "… " + _("(the last {shown} of {total} characters; results.json has all of them)", shown=f"{MAX_LOG:,}", total=f"{len(text):,}") + "\n" + text[-MAX_LOG:]
        out.append([log.run, text, lines])
    return out


def _reruns(case: CaseResult) -> list[list[Any]]:
    """gate.confirm: each confirmation run as [run, how, status, criteria, the last answer or
    the run's error] (drawn with the case, apart from its first run)."""
    out = []
    for r in case.reruns or []:
        crits = p_("between reasons", "; ").join(f"{n}: {c.status.value}" + (f" {c.score:.3f}" if c.score is not None else "") for n, c in sorted(r.criteria.items()))
        said = r.error or (r.invocations[-1].actual_response if r.invocations else "")
        out.append([r.run, _("agent re-run") if r.how == "agent" else _("judge re-draw"), _STATUS[r.status], _text(crits, 2000), _text(said, 2000)])
    return out


def _pairwise_items(comparison: Comparison) -> dict[CaseKey, dict[str, Any]]:
    """gate.pairwise: per case, its outcome and every changed invocation's verdicts in both
    orders ("cf": the pull request's answer shown first; "pick": current, baseline or equal)."""
    out: dict[CaseKey, dict[str, Any]] = {}
    for s in comparison.suites:
        pw = getattr(s, "pairwise", None)
        if pw is None:
            continue
        for c in pw.pairs.cases:
            item: dict[str, Any] = {"o": c.outcome, "net": c.tally()[0]}
            if c.error:
                item["err"] = _text(c.error, 2000)
            item["inv"] = [
                {
                    "i": inv.index,
                    "b": _text(inv.baseline),
                    "c": _text(inv.current),
                    "v": [
                        {"cf": int(v.current_first), "pick": v.choice or "", "why": _text(v.reason or v.error or "", 4000)}
                        for v in inv.verdicts
                    ],
                }
                for inv in c.invocations
            ]
            out[CaseKey(s.name, c.eval_set_id, c.eval_id)] = item
        for a, b in pw.pairs.left_out:
            out[CaseKey(s.name, a, b)] = {"o": "left_out", "net": 0, "inv": []}
    return out


def _cases(comparison: Comparison, current: RunResults, baseline: Optional[RunResults], names: dict[str, int], suites: dict[str, int]) -> list[dict[str, Any]]:
    change: dict[CaseKey, Any] = {}
    for s in comparison.suites:
        for ch in s.changes:
            change[ch.key] = ch
        for key in s.added if comparison.baseline is not None else ():  # without a baseline every case is "added"
            change.setdefault(key, "added")
        for key in s.changed:
            change.setdefault(key, "changed")
    base_cases = {CaseKey(s.name, c.eval_set_id, c.eval_id): c for s in baseline.suites for c in s.cases} if baseline is not None else {}
    side_by_side = _pairwise_items(comparison)
    out = []
    for suite in current.suites:
        free = frozenset(n for n, spec in suite.criteria.items() if spec.no_threshold)
        for case in suite.cases:
            key = CaseKey(suite.name, case.eval_set_id, case.eval_id)
            ch = change.get(key)
            base = base_cases.get(key)
            crits, judgements, flaky = _criteria_of(case, base, names, free)
            item: dict[str, Any] = {
                "s": suites[suite.name],
                "set": _text(case.eval_set_id, 1000),
                "id": _text(case.eval_id, 1000),
                "st": _STATUS[case.status],
                "crit": crits,
                "inv": _invocations(case.invocations, base.invocations if base is not None else None),
                "judge": judgements,
            }
            if flaky:
                item["flaky"] = 1
            if isinstance(ch, str):
                item["ch"] = ch
            elif ch is not None:
                item["ch"] = ch.kind
                words = flaky_words(ch)
                if words:  # why the gate does not blame it, as the comment and the terminal say
                    item["hist"] = _text(words, 300)
                if ch.p_value is not None:
                    item["p"] = ch.p_value
                if ch.p_adjusted is not None:
                    item["padj"] = ch.p_adjusted
            if base is not None:
                item["bst"] = _STATUS[base.status]
            if key in side_by_side:
                item["pw"] = side_by_side[key]
            if case.conversation_end:
                item["end"] = _text(case.conversation_end, 200)
            eff = _case_efficiency(case)
            if eff is not None:
                item["eff"] = eff
            if case.source:
                item["src"] = {_text(k, 200): _text(v, 2000) for k, v in sorted(case.source.items())}
            if case.agent_logs:
                item["log"] = _agent_logs(case)
            if case.reruns:
                item["rr"] = _reruns(case)
            out.append(item)
    for s in comparison.suites:
        for key in s.removed:
            if key.suite not in suites:
                suites[key.suite] = len(suites)
            item = {"s": suites[key.suite], "set": _text(key.eval_set_id, 1000), "id": _text(key.eval_id, 1000), "st": "R", "ch": "removed", "crit": [], "inv": [], "judge": []}
            base = base_cases.get(key)
            if base is not None:
                item["bst"] = _STATUS[base.status]
            out.append(item)
    # What needs attention first: regressed, broken stable, failed, not evaluated; flaky
    # before steady; then passed and removed. Within each, suite, eval set and id.
    rank = {"F": 2, "N": 3, "P": 10, "R": 11}

    def order(c: dict[str, Any]) -> tuple:
        first = {"regressed": 0, "broken_stable": 1}.get(c.get("ch", ""), rank[c["st"]] + (0.5 if c.get("flaky") else 0))
        return (first, c["s"], c["set"], c["id"])

    out.sort(key=order)
    return out


# --- the page ------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def _asset(name: str) -> str:
    text = (resources.files("evalgate") / "templates" / name).read_text(encoding="utf-8")
    # Our own blocks, inlined verbatim: they must not end their element early.
    assert "</script" not in text.lower() and "</style" not in text.lower(), name
    return text


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8", "backslashreplace")).digest()).decode("ascii") + "'"


def content_security_policy(script: str, style: str) -> str:
    """The page's policy: nothing from anywhere, our one script and style by hash, no HTML sinks."""
    return "; ".join(
        [
            "default-src 'none'",
            f"script-src {_hash(script)}",
            f"style-src {_hash(style)}",
            "img-src data:",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-src 'none'",
            "object-src 'none'",
            "require-trusted-types-for 'script'",
            "trusted-types 'none'",
        ]
    )


# report.js's messages: t("...") and nt("...", "...", n), double-quoted literals (what Babel's
# javascript extractor finds there too: tests/test_html_report.py checks they agree).
_JS_STRING = r'"((?:[^"\\\n]|\\.)*)"'
_JS_T = re.compile(r"(?<![\w$.])t\(\s*" + _JS_STRING)
_JS_NT = re.compile(r"(?<![\w$.])nt\(\s*" + _JS_STRING + r"\s*,\s*" + _JS_STRING)


def script_messages() -> tuple[list[str], list[tuple[str, str]]]:
    """The messages report.js translates: its t() messages and its nt() (singular, plural) pairs."""
    source = _asset("report.js")
    plain = sorted({json.loads(f'"{m}"') for m in _JS_T.findall(source)})
    plural = sorted({(json.loads(f'"{a}"'), json.loads(f'"{b}"')) for a, b in _JS_NT.findall(source)})
    return plain, plural


@functools.cache
def _script_messages(code: str) -> Optional[dict[str, Any]]:
    """What the page gives report.js to speak `code`: {"t": {message: translation}, "nt":
    {singular: [form for 1, form for other counts]}}; None for English (the messages as
    written). report.js picks a plural form as English does (n == 1, or not), which is right
    for every language we ship (Korean and Japanese have one form); a language whose rule
    differs is refused here rather than shown with wrong forms."""
    if code == "en":
        return None
    catalog = i18n.translations(code)
    plain, plural = script_messages()
    forms: dict[str, list[str]] = {}
    for one, many in plural:
        pair = [catalog.ngettext(one, many, 1), catalog.ngettext(one, many, 2)]
        if any(catalog.ngettext(one, many, n) != pair[0 if n == 1 else 1] for n in range(0, 1001)):
            raise ValueError(f"report.js chooses plural forms as English does (1, or other); the plural rule of '{code}' differs: give report.js that rule")
        forms[one] = pair
    return {"t": {m: catalog.gettext(m) for m in plain}, "nt": forms}


def _fields_filter(message: str, tag: str, **fields: Any):
    """A translated message whose `{fields}` are shown in `<tag>`: `{{ _("{all} cases") |
    fields("b", all=_("all")) }}`. The message and the fields are escaped (fields as the `t`
    filter shows untrusted text); only the tag is ours."""
    from markupsafe import Markup, escape

    assert tag in ("b", "code"), tag
    return escape(message).format(**{k: Markup(f"<{tag}>") + _t_filter(v) + Markup(f"</{tag}>") for k, v in fields.items()})


@functools.cache
def _environment() -> Any:
    env = templates(autoescape=True)
    env.filters["t"] = _t_filter
    env.filters["fields"] = _fields_filter
    return env


def render_html(
    comparison: Comparison,
    current: RunResults,
    baseline: Optional[RunResults] = None,
    *,
    gate_id: str = "evalgate",
    run_url: Optional[str] = None,
    trend: Optional[Trend] = None,
) -> str:
    """The whole report.html. `baseline` (the compared run's results) adds its scores and
    responses beside the current ones; the comparison alone gives the verdict and changes.
    `trend` (the default branch's runs before this one) adds a chart per criterion and says
    where this run sits."""
    from markupsafe import Markup

    with_baseline = comparison.baseline is not None
    every = {name for s in current.suites for name in s.criteria}
    every |= {name for s in current.suites for case in s.cases for name in case.criteria}
    every |= {c.criterion for sc in comparison.suites for c in sc.criteria}
    names = {name: i for i, name in enumerate(sorted(every))}  # sorted: results.json keeps no dict order
    suite_index: dict[str, int] = {s.name: i for i, s in enumerate(current.suites)}
    for sc in comparison.suites:
        suite_index.setdefault(sc.name, len(suite_index))
    cases = _cases(comparison, current, baseline, names, suite_index)
    trends = series(trend, current)
    by_key = {(t.suite, t.criterion): t for t in trends}

    by_name = {s.name: s for s in current.suites}
    suites = []
    for sc in comparison.suites:
        reasons = list(sc.reasons)
        for c in sc.criteria:
            if c.status is not Verdict.PASS:
                reasons.extend(f"{c.criterion}: {r}" for r in c.reasons if r not in reasons and f"{c.criterion}: {r}" not in reasons)
        sr = by_name.get(sc.name)
        failing, evaluated = {}, {}
        for c in sc.criteria:
            results = [r for case in (sr.cases if sr else []) if (r := case.criteria.get(c.criterion)) is not None]
            failing[c.criterion] = sum(r.status is Status.FAILED for r in results)
            evaluated[c.criterion] = sum(r.status is not Status.NOT_EVALUATED for r in results)
        counts = _counts(sr.counts) if sr else _("not in this run")
        suites.append(
            _Suite(
                name=sc.name,
                index=suite_index[sc.name],
                verdict=sc.verdict.value,
                verdict_class=_verdict_class(sc.verdict),
                counts=counts,
                reasons=reasons[:MAX_REASONS],
                warnings=[w for w in (sr.warnings if sr else []) if w not in reasons][:MAX_REASONS],
                skipped=sc.skipped_criteria[:MAX_REASONS],
                rows=[_trend_row(_row(c, names[c.criterion], failing[c.criterion], evaluated[c.criterion], with_baseline), by_key.get((sc.name, c.criterion))) for c in sc.criteria],
            )
        )
        pw = getattr(sc, "pairwise", None)
        if pw is not None:
            suites[-1].pairwise = pw.summary()
            suites[-1].pairwise_status = pw.status.value
            suites[-1].pairwise_class = _verdict_class(pw.status)

    kinds = [c.get("ch") for c in cases]
    chips = [
        ("regressed", _("regressed"), kinds.count("regressed") + kinds.count("broken_stable")),
        ("fixed", _("fixed"), kinds.count("fixed")),
        ("flaky", _("flaky"), sum(1 for c in cases if c.get("flaky") or c.get("hist"))),
        ("moved", _("score changes"), kinds.count("score_drop") + kinds.count("score_rise")),
        ("added", _("added"), kinds.count("added")),
        ("changed", _("changed"), kinds.count("changed")),
        ("removed", _("removed"), kinds.count("removed")),
    ]
    script, style = _asset("report.js"), _asset("report.css")
    data = {
        "v": 1,
        "suites": list(suite_index),
        "criteria": list(names),
        "judge": sorted({name for s in current.suites for name, spec in s.criteria.items() if spec.judge}),
        "compare": with_baseline,
        "baseline": baseline is not None,
        "cases": cases,
    }
    messages = _script_messages(i18n.current())
    if messages is not None:
        data["i18n"] = messages
    safe_url = run_url if run_url and re.match(r"(?i)https?://[^\s\"'<>]+$", run_url) else None
    gate = gate_id if gate_id != "evalgate" else None
    view = _View(
        verdict=comparison.verdict.value,
        verdict_class=_verdict_class(comparison.verdict),
        headline=_headline(comparison, current),
        gate=gate,
        reasons=comparison.reasons[:MAX_REASONS],
        hidden_reasons=max(len(comparison.reasons) - MAX_REASONS, 0),
        config_changed=comparison.config_changed,
        baseline=_baseline_line(comparison) if with_baseline else "",  # without one, the reasons say so
        mode=comparison.mode,
        with_baseline=with_baseline,
        suites=suites,
        chips=[c for c in chips if c[2] or c[0] in ("regressed", "fixed") and with_baseline],
        run_facts=_run_facts(comparison, current),
        agent_rows=_agent_rows(current),
        efficiency_rows=_efficiency_rows(current),
        cost_rows=_cost_rows(comparison),
        costs_gated=any(r.tolerance is not None for s in comparison.suites for r in s.costs),
        judge=_with_pairwise_usage(_judge_usage(current), comparison),
        timing_rows=_timing_rows(current),
        trend_header=_trend_header(trends),
        charts=[_Chart(c.title, Markup(c.svg), c.note) for c in _charts(trends, len(comparison.suites) > 1)],
        run_url=safe_url,
        footer=_("evalgate {version}, {mode} mode", version=current.evalgate_version, mode=comparison.mode),
        title=f"evalgate {comparison.verdict.value}" + (f" · {gate}" if gate else ""),
        cases=len(cases),
        failed=current.counts.failed,
        not_evaluated=current.counts.not_evaluated,
        data=Markup(_json_for_script(data)),
        csp=content_security_policy(script, style),
        style=Markup(style),
        script=Markup(script),
    )
    return _environment().get_template("report.html.j2").render(v=view, lang=i18n.current())


def write_html(path: Path, comparison: Comparison, current: RunResults, baseline: Optional[RunResults] = None, **kwargs: Any) -> Path:
    """Render and write report.html (UTF-8); returns the path."""
    from evalgate import writing

    writing.write_text(path, render_html(comparison, current, baseline, **kwargs))
    return path
