"""The gate's report in Markdown: the pull-request comment and the job summary.

Rendering is pure: a `Comparison` and the current `RunResults` in, text out; the same
inputs give the same bytes (no clock: ages are measured against the run's own start time).

Safety. Agent text, eval ids, suite and criterion names, tool names and arguments, and the
comparison's reasons (which quote them) are untrusted. The templates run with autoescape
off, and every value they print must come out of exactly one filter of
`evalgate.reports.sanitize` (`md`, `html`, `fenced`, `url`), chosen by where it lands;
the environment's `finalize` refuses any other string, so a forgotten filter is an error,
not a hole. The filters and what each neutralizes are described there.

Size. The comment must stay under GitHub's limit, so the report is rendered at successive
budgets until it fits, cutting in this order: case detail blocks beyond the first 50, 20,
10, 5, 3; messages and responses trimmed from 400 to 150 characters; case lists shortened
to 100, then 20 entries, then to counts; table rows of passing criteria dropped; the
remaining case detail blocks dropped; finally only the verdict, reasons and baseline. The
report ends by saying what was cut and where the full report is. The comment is measured by
`comment_length` (a Korean or Japanese character counts as one, an emoji as two), the job
summary in UTF-8 bytes (a Korean or Japanese character is three).

Language. Every word we compose is a message of `evalgate.i18n` in the report's language
(`report.language`); our catalogs are trusted like this module's own text. What a message
quotes (names, ids, agent text, the gate's reasons) is not translated, and goes through its
filter before it fills the message's `{field}`.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, Callable, Optional, Sequence
from urllib.parse import quote

from evalgate.gate import (
    CaseKey,
    Comparison,
    CriterionComparison,
    SuiteComparison,
    Verdict,
)
from evalgate import efficiency
from evalgate.i18n import _, aside, listing, mark, n_, p_
from evalgate.reports import COST_COLUMNS, cost_cells, deciding_p, delta_cell, duration, efficiency_cells, flaky_words, incomplete_note, templates, time_spent
from evalgate.reasons import shown as shown_reason
from evalgate.reports.sanitize import (
    NEWLINES,
    Markdown,
    cut,
    fenced,
    finalize,
    html,
    md,
    url,
)
from evalgate.results import CaseResult, InvocationSummary, RunResults, Status
from evalgate.gate.drop import mean_moved_more
from evalgate.gate.trends import Series, Trend, axis_range, position, series

COMMENT_LIMIT = 65_000  # GitHub refuses comments over 65,536 characters
SUMMARY_LIMIT = 1_000_000  # the job summary takes 1 MiB per step; measured in UTF-8 bytes

__all__ = ["marker", "render_comment", "render_summary", "comment_length", "COMMENT_LIMIT", "SUMMARY_LIMIT"]


def comment_length(text: str) -> int:
    """A comment's length as the strictest of GitHub's counts: UTF-16 code units, as its
    "maximum is 65536 characters" is measured by some of its checks. A Korean or Japanese
    character counts one, like a Latin one; a character beyond the Basic Multilingual Plane
    (an emoji) counts two. Under 65,000 units a comment is also under 196 kB of UTF-8 (at most
    three bytes a unit), far below the 256 KiB GitHub stores."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def marker(gate_id: str) -> str:
    """The hidden first line of the gate's comment, by which the GitHub client finds it.

    The id is percent-encoded outside `[A-Za-z0-9._-]`, so it can never end the comment
    early; agent text can never contain `<!--` (see the module docstring).
    """
    return f"<!-- evalgate:gate={quote(gate_id, safe='._-')} -->"


# --- numbers and words we compose (trusted) ----------------------------------------------


def _num(x: Optional[float], digits: int = 3) -> Markdown:
    return Markdown("–" if x is None else f"{x:.{digits}f}")


def _p(p: float) -> str:
    return "p&lt;0.001" if p < 0.001 else f"p={p:.3f}"


def _parse_time(value: Optional[str]) -> Optional[datetime]:
    if not value:
        return None
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def _age(created_at: Optional[str], now: Optional[str]) -> Optional[str]:
    """`3 days older than this run`; None when either time is unknown."""
    created, current = _parse_time(created_at), _parse_time(now)
    if created is None or current is None:
        return None
    hours = (current - created).total_seconds() / 3600
    if hours < 1:
        return _("less than an hour older than this run")
    if hours < 48:
        return n_("{n} hour older than this run", "{n} hours older than this run", int(hours))
    return n_("{n} day older than this run", "{n} days older than this run", int(hours // 24))


_VERDICT_WORD = {Verdict.PASS: "PASS", Verdict.FAIL: "FAIL", Verdict.INCONCLUSIVE: "INCONCLUSIVE", Verdict.ERROR: "ERROR"}


def _status_cell(status: Verdict, p_adjusted: Optional[float]) -> Markdown:
    word = _VERDICT_WORD[status]
    text = word if status is Verdict.PASS else f"**{word}**"
    if p_adjusted is not None:
        text += f" ({_p(p_adjusted)})"
    return Markdown(text)


_SPARK = "▁▂▃▄▅▆▇█"
MAX_CHARTS = 24  # Mermaid charts in the job summary and tracking issue; the rest are in report.html


def sparkline(values: list[float]) -> str:
    """Values as block characters, lowest to highest; a flat series is a flat line."""
    low, high = min(values), max(values)
    span = high - low
    # 1e-9: a value halfway up must not fall a step short through 0.95 - 0.9 = 0.0499999...
    return "".join(_SPARK[0 if span <= 1e-12 else min(int((v - low) / span * len(_SPARK) + 1e-9), len(_SPARK) - 1)] for v in values)


_WHERE = {
    "below": mark("{value}, below {low}–{high}"),
    "above": mark("{value}, above {low}–{high}"),
    "within": mark("{value}, within {low}–{high}"),
}


def _trend_cell(s: Series) -> Markdown:
    """`▅▆▅▇ **▼ 0.712**, below 0.780–0.860`: the runs before this one, then where this run sits."""
    spark = sparkline(s.values)
    pos = position(s)
    if pos is None:
        return Markdown(
            spark + aside(n_("{n} run: too few to place this one", "{n} runs: too few to place this one", len(s.values)))
        )
    value = {"below": "▼ ", "above": "▲ ", "within": ""}[pos.where] + f"{pos.value:.3f}"
    if pos.where == "below":  # the one a reviewer must not miss
        value = f"**{value}**"
    return Markdown(f"{spark} " + _(_WHERE[pos.where], value=value, low=f"{pos.low:.3f}", high=f"{pos.high:.3f}"))


def _trend_header(trends: list[Series]) -> str:
    """The tables' column title: "this run against the last 12 default-branch runs"."""
    n = max((len(t.values) for t in trends), default=0)
    if not n:
        return ""
    return n_("this run against the last default-branch run", "this run against the last {n} default-branch runs", n)


def mermaid_chart(s: Series) -> Optional[str]:
    """The series as a Mermaid `xychart-beta` (GitHub renders it): the runs' short commit ids on
    the x axis, then "this run". Composed only of numbers and hex ids (the trend file's commits
    are checked to be hex when read); None with fewer than two points."""
    labels = list(s.labels)
    values = list(s.values)
    if s.current is not None:
        labels.append(_("this run").replace('"', "'"))  # our catalogs' words, kept inside the quotes
        values.append(s.current)
    if len(values) < 2:
        return None
    low, high = axis_range(values)
    return "\n".join(
        [
            "xychart-beta",
            "    x-axis [" + ", ".join(f'"{x}"' for x in labels) + "]",
            '    y-axis "' + _("mean").replace('"', "'") + f'" {low:.2f} --> {high:.2f}',
            "    line [" + ", ".join(f"{v:.4f}" for v in values) + "]",
        ]
    )


# --- the view the templates print ---------------------------------------------------------


@dataclass(frozen=True)
class _Budget:
    details: Optional[int] = None  # case detail blocks shown; None: all
    text: int = 400  # characters kept of a message, response or tool call
    items: Optional[int] = None  # entries per case list; None: all; 0: counts only
    passing_rows: bool = True  # table rows of criteria that pass
    minimal: bool = False  # verdict, reasons and baseline only


_LADDER = [
    _Budget(),
    *(_Budget(details=n) for n in (50, 20, 10, 5, 3)),
    _Budget(details=3, text=150),
    *(_Budget(details=3, text=150, items=n) for n in (100, 20, 0)),
    _Budget(details=3, text=150, items=0, passing_rows=False),
    _Budget(details=0, text=150, items=0, passing_rows=False),
    _Budget(details=0, text=150, items=0, passing_rows=False, minimal=True),
]

MAX_LINES = 15  # lines kept of a message or response
MAX_TOOL_LINES = 30
MAX_INVOCATIONS = 3  # invocations shown per case
MAX_SCENARIO_TURNS = 8  # turns shown of a simulated conversation
MAX_REASONS = 20
MAX_WARNINGS = 5  # a suite's run warnings in the comment (all are in report.html and results.json)
MAX_JUDGE_REASONS = 5
MAX_RUBRICS = 12
LIST_COLLAPSE = 10  # a case list longer than this is folded into a <details> block


@dataclass
class _Row:
    criterion: str
    kind: Optional[Markdown]  # "judge", "judge, per sample": how the criterion is scored
    threshold: Markdown
    pairs: int
    baseline: Markdown
    current: Markdown
    delta: Markdown
    status: Markdown
    passing: bool
    trend: Optional[Markdown] = None  # where this run sits in the last default-branch runs


@dataclass
class _Chart:
    """A criterion's trend as a Mermaid xychart: the title is untrusted, the chart ours."""

    title: str
    chart: Markdown


@dataclass
class _Suite:
    name: str
    verdict: Markdown
    reasons: list[str]
    rows: list[_Row]
    hidden_rows: int = 0
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Block:
    """A message, response or trajectory: the (trimmed) text and what was left out."""

    title: Markdown
    text: str
    info: str
    note: Optional[Markdown]


@dataclass
class _Rubric:
    rubric_id: str
    verdict: Markdown
    rationale: str


@dataclass
class _Judge:
    criterion: str
    status: Markdown
    error: Optional[str]
    reasons: list[str]
    rubrics: list[_Rubric]
    hidden: Optional[Markdown]


@dataclass
class _Invocation:
    title: Optional[Markdown]
    user: _Block
    tools: Optional[_Block]
    tools_note: Markdown
    expected: Optional[_Block]
    actual: _Block
    judges: list[_Judge]


@dataclass
class _Detail:
    invocations: list[_Invocation]
    hidden: Optional[Markdown]
    ended: Optional[Markdown] = None  # a simulated conversation: why it ended


@dataclass
class _Case:
    kind: Markdown
    label: str  # untrusted: "suite: eval_set / eval_id", at most 186 characters
    scores: list[tuple[str, Markdown]]  # (criterion, "1.00 → 0.00")
    extra: Optional[Markdown]
    detail: Optional[_Detail] = None


@dataclass
class _List:
    title: Markdown
    note: Optional[Markdown]
    items: list[_Case]
    total: int
    collapsed: bool


@dataclass
class _Stat:
    label: str
    values: list[Markdown]


@dataclass
class _View:
    marker: Optional[Markdown]
    headline: Markdown
    gate: Optional[str]
    reasons: list[str]
    hidden_reasons: int
    config_changed: bool
    rescored: bool  # mode publish: the outputs came from a pull request's own run (a fork's)
    gate_change: Optional[Markdown]  # a unified diff of the PR's policy against its base's (untrusted), fenced and cut
    baseline: list[Any]  # alternating Markdown and untrusted str, printed by type
    suites: list[_Suite]
    attention: Optional[_List]  # regressed, broken stable, (absolute mode) failing: with details
    attention_more: Optional[_List]  # the same beyond the detail budget: one line each
    lists: list[_List]
    skipped: list[str]
    stat_columns: list[Markdown]
    stats: list[_Stat]
    agent: list[list[Markdown]]
    efficiency: list[list[Markdown]]  # per suite: ADK's efficiency metrics per turn
    costs: list[list[Markdown]]  # per suite and metric: the change against the baseline (evalgate.gate.efficiency)
    costs_gated: bool  # gate.efficiency tolerates an increase of at least one of them
    footer: list[Any]
    cut: Optional[Markdown]
    minimal: bool
    with_baseline: bool
    text: int  # characters kept of a judge's reason or rationale
    trend_header: Markdown = Markdown("")  # the tables' trend column title; empty: no column
    charts: list[_Chart] = field(default_factory=list)
    hidden_charts: int = 0
    losses: list["_Loss"] = field(default_factory=list)  # gate.pairwise: the worst losses, both answers
    losses_total: int = 0
    confirm: list[Markdown] = field(default_factory=list)  # gate.confirm: per suspect, what its re-runs showed


def _label(key: CaseKey, show_suite: bool) -> str:
    """`suite: eval_set / eval_id`, each part cut on its own so a long one cannot hide the id. A
    legacy `*.test.json` case is named by its file as its eval set is: the path once."""
    same = key.eval_set_id == key.eval_id
    ids = cut(key.eval_id, 80) if same else f"{cut(key.eval_set_id, 60)} / {cut(key.eval_id, 80)}"
    return f"{cut(key.suite, 40)}: {ids}" if show_suite else ids


def _block(title: str, text: str, budget: _Budget, info: str = "text", lines: int = MAX_LINES) -> _Block:
    kept = text
    split = kept.split("\n")
    if len(split) > lines:
        kept = "\n".join(split[:lines])
    if len(kept) > budget.text:
        kept = kept[: budget.text]
    note = None
    if len(kept) < len(text):
        note = Markdown(n_("first {kept} of {n} character", "first {kept} of {n} characters", len(text), kept=f"{len(kept):,}"))
    return _Block(Markdown(title), kept, info, note)


def _call_line(call: dict[str, Any], width: int) -> str:
    name = NEWLINES.sub(" ", str(call.get("name", "?")))
    args = json.dumps(call.get("args", {}), ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
    return cut(f"{name}({args})", width)


def _trajectory(inv: InvocationSummary, budget: _Budget) -> tuple[Optional[_Block], Markdown]:
    width = max(budget.text, 120)
    actual = [_call_line(c, width) for c in inv.actual_tools]
    if inv.expected_tools is None:
        if not actual:
            return None, Markdown(_("no tool calls (none expected given)"))
        lines = ["  " + line for line in actual]
        note = _("actual (no expected calls given)")
    else:
        expected = [_call_line(c, width) for c in inv.expected_tools]
        if not expected and not actual:
            return None, Markdown(_("no tool calls, none expected"))
        lines = []
        matcher = difflib.SequenceMatcher(a=expected, b=actual, autojunk=False)
        for op, a0, a1, b0, b1 in matcher.get_opcodes():
            if op == "equal":
                lines.extend("  " + line for line in expected[a0:a1])
            else:
                lines.extend("- " + line for line in expected[a0:a1])
                lines.extend("+ " + line for line in actual[b0:b1])
        note = _("expected (-) vs actual (+)") if expected != actual else _("as expected")
    if len(lines) > MAX_TOOL_LINES:
        more = len(lines) - MAX_TOOL_LINES
        lines = lines[:MAX_TOOL_LINES] + ["@@ " + n_("{n} more line not shown", "{n} more lines not shown", more) + " @@"]
    return _Block(Markdown("Tool calls"), "\n".join(lines), "diff", None), Markdown(note)


def _verdict_text(verdict: Any) -> Markdown:
    if isinstance(verdict, bool):
        return Markdown(_("yes") if verdict else "**" + _("no") + "**")
    if isinstance(verdict, (int, float)):
        return Markdown(f"{verdict:g}")
    return md(str(verdict), 20)


def _judges(case: CaseResult, index: int) -> list[_Judge]:
    """The judge's reasons and rubric verdicts for one invocation, for criteria that did not pass it."""
    out = []
    for name, crit in case.criteria.items():
        if index >= len(crit.per_invocation):
            continue
        inv = crit.per_invocation[index]
        if inv.status is Status.PASSED:
            continue
        reasons = inv.details.get("reasons")
        if isinstance(reasons, str):
            reasons = [reasons]
        reasons = [shown_reason(str(r)) for r in reasons] if isinstance(reasons, list) else []
        if isinstance(inv.details.get("explanation"), str):  # Vertex AI managed metrics
            reasons.append(inv.details["explanation"])
        rubrics_raw = inv.details.get("rubrics")
        rubrics = []
        if isinstance(rubrics_raw, list):
            for r in rubrics_raw:
                if isinstance(r, dict):
                    rubrics.append(
                        _Rubric(
                            str(r.get("rubric_id", r.get("rubricId", "?"))),
                            _verdict_text(r.get("verdict")),
                            str(r.get("rationale", r.get("reasoning", "")) or ""),
                        )
                    )
        if not reasons and not rubrics and not inv.error:
            continue
        hidden = max(len(reasons) - MAX_JUDGE_REASONS, 0) + max(len(rubrics) - MAX_RUBRICS, 0)
        score = _("not evaluated") if inv.score is None else f"{inv.score:.2f}"
        out.append(
            _Judge(
                criterion=name,
                status=Markdown(f"{score}, {inv.status.value}"),
                error=shown_reason(inv.error) or None,
                reasons=reasons[:MAX_JUDGE_REASONS],
                rubrics=rubrics[:MAX_RUBRICS],
                hidden=Markdown(n_("{n} more not shown", "{n} more not shown", hidden)) if hidden else None,
            )
        )
    return out


def _detail(case: CaseResult, budget: _Budget) -> _Detail:
    n = len(case.invocations)
    failing = [
        i for i in range(n)
        if any(i < len(c.per_invocation) and c.per_invocation[i].status is not Status.PASSED for c in case.criteria.values())
    ]
    shown = (failing or list(range(min(n, 1))))[:MAX_INVOCATIONS]
    if case.conversation_end is not None:
        # A simulated conversation reads as a whole: its turns in order, not only failing ones.
        shown = list(range(min(n, MAX_SCENARIO_TURNS)))
    invocations = []
    for i in shown:
        inv = case.invocations[i]
        tools, tools_note = _trajectory(inv, budget)
        invocations.append(
            _Invocation(
                title=Markdown(_("Invocation {i} of {n}", i=i + 1, n=n)) if n > 1 else None,
                user=_block(_("User"), inv.user, budget),
                tools=tools,
                tools_note=tools_note,
                expected=_block(_("Expected response"), inv.expected_response, budget)
                if inv.expected_response is not None
                else None,
                actual=_block(_("Actual response"), inv.actual_response, budget),
                judges=_judges(case, i),
            )
        )
    hidden = n - len(shown)
    note = None
    if hidden:
        if len(failing) <= len(shown):
            note = Markdown(n_("{n} other invocation not shown (all passed)", "{n} other invocations not shown (all passed)", hidden))
        else:
            note = Markdown(n_("{n} other invocation not shown", "{n} other invocations not shown", hidden))
    ended = None
    if case.conversation_end is not None:
        ended = Markdown(
            n_(
                "Simulated conversation of {n} turn; conversation ended: {end}",
                "Simulated conversation of {n} turns; conversation ended: {end}",
                n,
                end=md(case.conversation_end, 40),
            )
        )
    return _Detail(invocations, note, ended)


_KIND = {  # a case's change, in words (translated where shown)
    "regressed": mark("regressed"),
    "broken_stable": mark("broken stable"),
    "fixed": mark("fixed"),
    "score_drop": mark("score dropped"),
    "score_rise": mark("score rose"),
    "failed": mark("failed"),
}


def _history_p(change: Any) -> Optional[Markdown]:
    """A broken stable case's p-value (its criterion's pooled breakage test), and after Holm when given."""
    if change.p_value is None:
        return None
    adjusted = getattr(change, "p_adjusted", None)
    if adjusted is None:
        return Markdown(_("its criterion's stable cases, tested together: {p}", p=_p(change.p_value)))
    return Markdown(_("its criterion's stable cases, tested together: {p}, {p_holm} after Holm", p=_p(change.p_value), p_holm=_p(adjusted)))


def _scores(criteria: dict[str, tuple[Optional[float], Optional[float]]]) -> list[tuple[str, Markdown]]:
    return [(name, Markdown(f"{_num(b, 2)} → {_num(c, 2)}")) for name, (b, c) in criteria.items()]


def _current_scores(case: CaseResult) -> list[tuple[str, Markdown]]:
    return [
        (name, Markdown(f"{_num(c.score, 2)} &lt; {c.threshold:.2f}"))
        for name, c in case.criteria.items()
        if c.status is Status.FAILED
    ]


def _case_list(title: str, note: Optional[str], items: list[_Case], budget: _Budget) -> _List:
    total = len(items)
    kept = items if budget.items is None else items[: budget.items]
    heading = Markdown(_("{title} ({n})", title=title, n=f"{total:,}"))
    return _List(heading, Markdown(note) if note else None, kept, total, collapsed=len(kept) > LIST_COLLAPSE)


def _key_cases(keys: list[CaseKey], kind: str, show_suite: bool, cases: dict[CaseKey, CaseResult]) -> list[_Case]:
    out = []
    for key in keys:
        case = cases.get(key)
        extra = None
        if case is not None and kind == "added" and case.status is not Status.PASSED:
            extra = Markdown(f"**{case.status.value}**")
        out.append(_Case(Markdown(kind), _label(key, show_suite), [], extra))
    return out


_STAT_LABELS = {  # translated where shown
    "requests": mark("requests"),
    "cache_hits": mark("cache hits"),
    "cache_refused": mark("cache entries not believed"),
    "retries": mark("retries"),
    "failures": mark("failures"),
    "input_tokens": mark("input tokens"),
    "output_tokens": mark("output tokens"),
    "tokens": mark("tokens"),
}


def _flat_numbers(stats: dict[str, Any], prefix: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    for k, v in stats.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flat_numbers(v, name + "_"))
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out[name] = v
    return out


def _judge_stats(current: RunResults, show_suite: bool, comparison: Optional[Comparison] = None) -> tuple[list[Markdown], list[_Stat]]:
    """Per-criterion judge usage, when the results carry it.

    Read from a `stats` mapping on a suite's criterion spec (`suite.criteria[name].stats`),
    numbers keyed like `requests`, `cache_hits`, `retries`, `failures`, `input_tokens`,
    `output_tokens` (nested mappings are flattened with `_`). Absent: nothing is shown.
    """
    found: list[tuple[str, dict[str, float]]] = []
    for suite in current.suites:
        for name, spec in suite.criteria.items():
            stats = getattr(spec, "stats", None)
            if hasattr(stats, "model_dump"):
                stats = stats.model_dump()
            if isinstance(stats, dict) and (numbers := _flat_numbers(stats)):
                found.append((f"{suite.name}: {name}" if show_suite else name, numbers))
    for sc in comparison.suites if comparison is not None else []:  # gate.pairwise: its judge, per suite
        pw = getattr(sc, "pairwise", None)
        if pw is not None and (numbers := _flat_numbers(pw.pairs.stats)):
            found.append((f"{sc.name}: " + _("side by side") if show_suite else _("side by side"), numbers))
    if not found:
        return [], []
    keys = sorted({k for _, n in found for k in n}, key=lambda k: (list(_STAT_LABELS).index(k) if k in _STAT_LABELS else 99, k))
    columns = [md(_(_STAT_LABELS[k]) if k in _STAT_LABELS else k.replace("_", " ")) for k in keys]
    rows = []
    for label, numbers in found:
        values = [Markdown("–" if k not in numbers else f"{numbers[k]:,.0f}" if float(numbers[k]).is_integer() else f"{numbers[k]:,.2f}") for k in keys]
        rows.append(_Stat(label, values))
    return columns, rows


def _criterion_row(c: CriterionComparison, with_baseline: bool, trend: Optional[Series] = None) -> _Row:
    delta = delta_cell(c.delta, c.ci_low, c.ci_high)
    if c.delta is not None and getattr(c, "run_sd", None) is not None and with_baseline:
        # What the test allowed for: the run-to-run variation of the mean, and where it came from.
        history = getattr(c, "history", 0)
        sd = f"{c.run_sd:.3f}"
        mean_sd = getattr(c, "mean_sd", None)
        if history and mean_sd is not None and mean_moved_more(c):
            # The trend beside it shows the mean moving: the shared part and the whole, both.
            delta += " · " + n_(
                "run sd {sd} shared, {mean_sd} for the mean ({n} run of history)",
                "run sd {sd} shared, {mean_sd} for the mean ({n} runs of history)",
                history,
                sd=sd,
                mean_sd=f"{mean_sd:.3f}",
            )
        elif history:
            delta += " · " + n_("run sd {sd} ({n} run of history)", "run sd {sd} ({n} runs of history)", history, sd=sd)
        else:
            delta += " · " + _("run sd {sd} (assumed)", sd=sd)
    return _Row(
        criterion=c.criterion,
        kind=Markdown(_("judge, per sample") if getattr(c, "basis", "scores") == "samples" else _("judge")) if c.judge else None,
        threshold=Markdown("–" if c.no_threshold else f"{c.threshold:.2f}"),
        pairs=c.n_pairs if with_baseline else c.evaluated,
        baseline=_num(c.baseline_mean),
        current=_num(c.current_mean),
        delta=Markdown(delta),
        status=_status_cell(c.status, deciding_p(c) if with_baseline else None),
        passing=c.status is Verdict.PASS,
        trend=None if trend is None else _trend_cell(trend),
    )


# --- gate.pairwise: the side-by-side row and the worst losses ------------------------------

MAX_LOSSES = 5  # losses shown with both answers (the HTML report has every pair)


@dataclass
class _PairTurn:
    title: Optional[Markdown]
    user: _Block
    baseline: _Block
    current: _Block
    verdicts: list[tuple[Markdown, str]]  # (the order and the pick, composed; the judge's reason, untrusted)


@dataclass
class _Loss:
    label: str  # untrusted
    summary: Markdown
    turns: list[_PairTurn]


def _pairwise_row(pw: Any) -> _Row:
    equal = pw.changed - pw.losses - pw.wins
    drop = "" if pw.delta is None else " · " + _("drop {drop}", drop=f"{-pw.delta:.3f}")
    return _Row(
        criterion=_("judged side by side"),
        kind=Markdown(_("judge, both orders")),
        threshold=Markdown("–"),
        pairs=pw.compared,
        baseline=Markdown("–"),
        current=Markdown("–"),
        delta=Markdown(
            n_(
                "{losses} of {n} changed answer worse than the baseline's, {wins} better, {equal} equal",
                "{losses} of {n} changed answers worse than the baseline's, {wins} better, {equal} equal",
                pw.changed,
                losses=pw.losses,
                wins=pw.wins,
                equal=equal,
            )
            + drop
        ),
        status=_status_cell(pw.status, pw.p_adjusted),
        passing=pw.status is Verdict.PASS,
    )


_PICK = {"current": mark("prefers this pull request's"), "baseline": mark("prefers the baseline's"), "equal": mark("equally good")}


def _pair_verdict(v: Any) -> tuple[Markdown, str]:
    order = _("the pull request's answer shown as A") if v.current_first else _("the baseline's answer shown as A")
    if v.choice is None:
        return Markdown(_("{order}: no verdict", order=order)), v.error or ""
    return Markdown(_("{order}: **{pick}**", order=order, pick=_(_PICK[v.choice]))), v.reason


def _losses(comparison: Comparison, budget: _Budget, show_suite: bool) -> tuple[list[_Loss], int]:
    """The pull request's worst losses (most verdicts lost first), with both answers and the reasons."""
    found = []
    for s in comparison.suites:
        pw = s.pairwise
        if pw is None:
            continue
        for c in pw.pairs.cases:
            if c.outcome == "loss":
                found.append((c.score, s.name, c))
    found.sort(key=lambda x: (x[0], x[1], x[2].eval_set_id, x[2].eval_id))
    limit = MAX_LOSSES if budget.details is None else min(MAX_LOSSES, budget.details)
    out = []
    for _worst, suite, c in found[:limit]:
        turns = []
        for inv in c.invocations[:MAX_INVOCATIONS]:
            turns.append(
                _PairTurn(
                    title=Markdown(_("Invocation {i}", i=inv.index + 1)) if len(c.invocations) > 1 or inv.index else None,
                    user=_block(_("User"), inv.user, budget),
                    baseline=_block(_("The baseline's answer"), inv.baseline, budget),
                    current=_block(_("This pull request's answer"), inv.current, budget),
                    verdicts=[_pair_verdict(v) for v in inv.verdicts],
                )
            )
        net, votes = c.tally()
        out.append(_Loss(_label(CaseKey(suite, c.eval_set_id, c.eval_id), show_suite), Markdown(n_("net {score} of {n} verdict", "net {score} of {n} verdicts", votes, score=net)), turns))
    return out, len(found)


def _suite_view(
    s: SuiteComparison, with_baseline: bool, budget: _Budget, trends: dict[tuple[str, str], Series], warnings: Sequence[str] = ()
) -> _Suite:
    """A suite's section. `warnings`: the run's warnings for the suite (records that matched no
    case, a refused cache, another version's keys...), each once, those a reason already says
    left out."""
    reasons = list(s.reasons)
    for c in s.criteria:
        if c.status is not Verdict.PASS:
            # The suite's reasons may already quote a criterion's reason, bare or as
            # "<criterion>: <reason>" (compare() words them so): say each once.
            reasons.extend(
                f"{c.criterion}: {r}" for r in c.reasons if r not in reasons and f"{c.criterion}: {r}" not in reasons
            )
    rows = [_criterion_row(c, with_baseline, trends.get((s.name, c.criterion))) for c in s.criteria]
    if getattr(s, "pairwise", None) is not None:
        rows.append(_pairwise_row(s.pairwise))
    hidden = 0
    if not budget.passing_rows:
        hidden = sum(r.passing for r in rows)
        rows = [r for r in rows if not r.passing]
    shown = [w for w in dict.fromkeys(warnings) if w not in reasons and not any(w in r for r in reasons)]
    return _Suite(s.name, _status_cell(s.verdict, None), reasons[:MAX_REASONS], rows, hidden, shown[:MAX_WARNINGS])


def _baseline_line(comparison: Comparison, current: RunResults) -> list[Any]:
    """One sentence: which baseline, and how old. Commits and dates are read from the baseline
    file (untrusted), so each goes through `md` before it fills a message."""
    info = comparison.baseline
    if info is None:
        return [Markdown(_("**No baseline found**: absolute thresholds only."))]
    if not info.commit:
        which = _("Baseline: a results file with no recorded commit")
    elif info.distance and info.commit != info.requested_commit:
        which = n_(
            "Baseline from ancestor {commit}, {n} commit before the base {base}",
            "Baseline from ancestor {commit}, {n} commits before the base {base}",
            info.distance,
            commit=md(info.commit[:12], 40),
            base=md(info.requested_commit[:12], 40),
        )
    else:
        which = _("Baseline: {commit}, the base commit", commit=md(info.commit[:12], 40))
    age = _age(info.created_at, current.run.started_at)
    if age:
        return [Markdown(_("{baseline} ({age}).", baseline=which, age=age))]
    if info.created_at:
        return [Markdown(_("{baseline} (recorded {date}).", baseline=which, date=md(info.created_at[:10], 40)))]
    return [Markdown(_("{baseline}.", baseline=which))]


def _headline(comparison: Comparison, current: RunResults) -> Markdown:
    kinds = [ch.kind for s in comparison.suites for ch in s.changes]
    parts = []
    regressed = kinds.count("regressed") + kinds.count("broken_stable")
    if comparison.baseline is not None:
        broken = kinds.count("broken_stable")
        if regressed and broken:
            parts.append(
                n_("{n} regressed case ({broken} broken stable)", "{n} regressed cases ({broken} broken stable)", regressed, broken=f"{broken:,}")
            )
        elif regressed:
            parts.append(n_("{n} regressed case", "{n} regressed cases", regressed))
        elif kinds.count("score_drop"):
            # Metrics without a threshold (agents-cli's) never fail a case: their cases score lower.
            parts.append(n_("{n} case scored lower", "{n} cases scored lower", kinds.count("score_drop")))
        else:
            parts.append(_("no regressed cases"))
        if kinds.count("fixed"):
            parts.append(n_("{n} fixed case", "{n} fixed cases", kinds.count("fixed")))
        worse = sum(s.pairwise.losses for s in comparison.suites if getattr(s, "pairwise", None) is not None)
        if worse:  # gate.pairwise
            parts.append(n_("{n} answer worse side by side", "{n} answers worse side by side", worse))
    c = current.counts
    counts = _(
        "{cases}: {passed} passed, {failed} failed, {not_evaluated} not evaluated",
        cases=n_("{n} case", "{n} cases", c.cases),
        passed=f"{c.passed:,}",
        failed=f"{c.failed:,}",
        not_evaluated=f"{c.not_evaluated:,}",
    )
    parts.append(counts + incomplete_note(c))
    return Markdown(f"**evalgate {_VERDICT_WORD[comparison.verdict]}** · " + " · ".join(parts))


@dataclass
class _Plan:
    """What the report says, before any budget: cases sorted into sections, lines composed."""

    comparison: Comparison
    current: RunResults
    gate_id: str
    with_marker: bool
    with_baseline: bool
    attention: list[tuple[_Case, Optional[CaseResult]]]  # regressed, broken stable; failing when absolute
    lists: list[tuple[str, Optional[str], list[_Case]]]  # (title, note, items)
    skipped: list[str]
    stat_columns: list[Markdown]
    stats: list[_Stat]
    footer: list[Any]
    agent: list[list[Markdown]] = field(default_factory=list)  # rows of the "Agent runs" table
    efficiency: list[list[Markdown]] = field(default_factory=list)  # rows of the "Efficiency per turn" table
    costs: list[list[Markdown]] = field(default_factory=list)  # rows of its "against the baseline" table
    trends: list[Series] = field(default_factory=list)  # criteria with default-branch history
    charts: bool = False  # draw the trends (job summary, tracking issue), not only place this run


def _agent_rows(current: RunResults) -> list[list[Markdown]]:
    """Per suite that ran its agent: case runs, failed runs, the agent's time and tokens."""
    rows = []
    for name, u in sorted(((current.run.agent or {}).get("suites") or {}).items()):
        if not isinstance(u, dict):
            continue
        tokens = (u.get("tokens") or {}).get("total")
        tools = u.get("tools") or {}
        rows.append(
            [
                md(name, 80),
                Markdown(str(int(u.get("case_runs", 0)))),
                Markdown(str(int(u.get("failed", 0)))),
                Markdown(duration(float(u.get("duration_s", 0.0)))),
                Markdown(f"{int(tokens):,}" if isinstance(tokens, int) else "–"),
                Markdown(f"{int(tools.get('replayed', 0))} / {int(tools.get('live', 0))}" if tools else "–"),
            ]
        )
    return rows


def _efficiency_rows(current: RunResults) -> list[list[Markdown]]:
    """Per suite, ADK's efficiency metrics per turn (informational; never part of the verdict)."""
    rows = []
    for suite in current.suites:
        values = efficiency.summarize(suite.cases)
        if values:
            c = efficiency_cells(values)
            rows.append([md(suite.name, 80)] + [Markdown(c[k]) for k in ("tool_calls", "model_calls", "tokens", "seconds")])  # numbers we wrote
    return rows


def _cost_rows(comparison: Comparison) -> list[list[Markdown]]:
    """Per suite and efficiency metric, the change against the baseline (evalgate.gate.efficiency)."""
    rows = []
    for suite in comparison.suites:
        for row in suite.costs:
            c = cost_cells(row)
            rows.append([md(suite.name, 80)] + [Markdown(c[k]) for k in COST_COLUMNS])  # numbers and words we wrote
    return rows


def _plan(
    comparison: Comparison, current: RunResults, *, gate_id: str, run_url: Optional[str], with_marker: bool, trend: Optional[Trend] = None
) -> _Plan:
    show_suite = len(comparison.suites) > 1 or len(current.suites) > 1
    cases = {CaseKey(s.name, c.eval_set_id, c.eval_id): c for s in current.suites for c in s.cases}
    with_baseline = comparison.baseline is not None

    attention: list[tuple[_Case, Optional[CaseResult]]] = []
    fixed, moves, still = [], [], []
    listed: set[CaseKey] = set()
    for s in comparison.suites:
        for ch in s.changes:
            listed.add(ch.key)
            flaky = flaky_words(ch)
            extra = _history_p(ch) or (Markdown(flaky) if flaky else None)
            item = _Case(Markdown(_(_KIND[ch.kind]) if ch.kind in _KIND else ch.kind), _label(ch.key, show_suite), _scores(ch.criteria), extra)
            if ch.kind in ("regressed", "broken_stable"):
                attention.append((item, cases.get(ch.key)))
            elif ch.kind == "fixed":
                fixed.append(item)
            else:
                moves.append(item)
        if with_baseline:  # without one, nothing is added or changed: every case is just this run's
            listed.update(s.added)
            listed.update(s.changed)
    for key, case in cases.items():
        if case.status is Status.FAILED and key not in listed:
            item = _Case(Markdown(_(_KIND["failed"])), _label(key, show_suite), _current_scores(case), None)
            if with_baseline:
                still.append(item)
            else:
                attention.append((item, case))

    lists: list[tuple[str, Optional[str], list[_Case]]] = [
        (_("Fixed cases"), None, fixed),
        (_("Still failing"), _("They failed in the baseline too."), still),
        (_("Score changes"), _("Scores that moved without changing a case's status."), moves),
    ]
    for title, note, attr in (
        (_("Added cases"), None, "added"),
        (_("Removed cases"), None, "removed"),
        (_("Changed cases"), _("Their expected data changed, so they are not compared."), "changed"),
    ):
        if not with_baseline:
            continue
        keys = [k for s in comparison.suites for k in getattr(s, attr)]
        lists.append((title, note, _key_cases(keys, attr, show_suite, cases)))

    footer: list[Any] = []
    if current.run.duration_seconds is not None:
        agent_s = (current.run.agent or {}).get("seconds")
        if isinstance(agent_s, (int, float)):
            total = current.run.duration_seconds + agent_s
            footer.append(
                Markdown(
                    _(
                        "Run time {total} (running the agent {agent}, scoring {scoring})",
                        total=duration(total),
                        agent=duration(agent_s),
                        scoring=duration(current.run.duration_seconds),
                    )
                )
            )
        else:
            footer.append(Markdown(_("Run time {total}", total=duration(current.run.duration_seconds))))
    footer.extend(md(line, 600) for line in time_spent(current.run))
    if run_url and re.match(r"(?i)https?://", run_url):
        footer.append(Markdown("[" + _("workflow run") + f"]({url(run_url)})"))
        # The action uploads nothing itself; the documented workflows upload its output folder.
        if current.run.agent:
            footer.append(Markdown(_("every case in report.html and the agent's outputs in inference.jsonl among its artifacts")))
        else:
            footer.append(Markdown(_("every case in report.html among its artifacts")))
    # The mode is a config value (gate.mode): never translated.
    footer.append(Markdown(_("evalgate {version}, {mode} mode", version=md(current.evalgate_version, 20), mode=comparison.mode)))

    stat_columns, stats = _judge_stats(current, show_suite, comparison)
    return _Plan(
        comparison=comparison,
        current=current,
        gate_id=gate_id,
        with_marker=with_marker,
        with_baseline=with_baseline,
        attention=attention,
        lists=[x for x in lists if x[2]],
        skipped=[f"{s.name}: {x}" if show_suite else x for s in comparison.suites for x in s.skipped_criteria],
        stat_columns=stat_columns,
        stats=stats,
        footer=footer,
        agent=_agent_rows(current),
        efficiency=_efficiency_rows(current),
        costs=_cost_rows(comparison),
        trends=series(trend, current),
        charts=not with_marker,
    )


def _details_shown(plan: _Plan, budget: _Budget) -> int:
    return len(plan.attention) if budget.details is None else min(budget.details, len(plan.attention))


def _floor(plan: _Plan, budget: _Budget) -> int:
    """A lower bound of the report's length at a budget, to skip budgets without rendering them."""
    if budget.minimal:
        return 0
    shown = _details_shown(plan, budget)
    groups = [[item for item, _ in plan.attention[shown:]]] + [items for _, _, items in plan.lists]
    if budget.items is not None:
        groups = [g[: budget.items] for g in groups]
    floor = sum(min(len(item.label.strip()), 200) + 60 for item, _ in plan.attention[:shown])  # <details>...
    return floor + sum(min(len(item.label.strip()), 200) + 3 for g in groups for item in g)  # "- label\n"


def _view(plan: _Plan, budget: _Budget) -> tuple[_View, dict[str, int]]:
    """The report's content at a budget, and the sizes a cut note needs."""
    shown = _details_shown(plan, budget)
    detailed = []
    for item, case in plan.attention[:shown]:
        if case is not None:
            item = replace(item, detail=_detail(case, budget))
        detailed.append(item)
    beyond = [item for item, _ in plan.attention[shown:]]
    title = _("Regressed cases") if plan.with_baseline else _("Failed cases")
    more = _("More regressed cases") if plan.with_baseline else _("More failed cases")
    lists = [_case_list(t, note, items, budget) for t, note, items in plan.lists]
    reasons = plan.comparison.reasons
    warnings = {suite.name: suite.warnings for suite in plan.current.suites}
    trends = {(t.suite, t.criterion): t for t in plan.trends}
    charts = []
    if plan.charts and not budget.minimal and budget.passing_rows:
        for t in plan.trends:
            chart = mermaid_chart(t)
            if chart is not None:
                charts.append(_Chart(f"{t.suite} · {t.criterion}" if len(plan.comparison.suites) > 1 else t.criterion, Markdown(chart)))
    view = _View(
        marker=Markdown(marker(plan.gate_id)) if plan.with_marker else None,
        headline=_headline(plan.comparison, plan.current),
        gate=plan.gate_id if plan.gate_id != "evalgate" else None,
        reasons=reasons[:MAX_REASONS],
        hidden_reasons=max(len(reasons) - MAX_REASONS, 0),
        config_changed=plan.comparison.config_changed,
        rescored=plan.current.run.outputs is not None,
        gate_change=_diff_block(plan.comparison.gate_change) if plan.comparison.gate_change else None,
        baseline=_baseline_line(plan.comparison, plan.current),
        suites=[_suite_view(s, plan.with_baseline, budget, trends, warnings.get(s.name, ())) for s in plan.comparison.suites],
        attention=_List(Markdown(_("{title} ({n})", title=title, n=f"{len(plan.attention):,}")), None, detailed, len(plan.attention), False)
        if plan.attention
        else None,
        attention_more=_case_list(more, _("Without details, to keep the report short."), beyond, budget)
        if beyond
        else None,
        lists=lists,
        skipped=plan.skipped[:MAX_REASONS],
        stat_columns=plan.stat_columns,
        stats=plan.stats,
        agent=plan.agent,
        efficiency=plan.efficiency,
        costs=plan.costs,
        costs_gated=any(r.tolerance is not None for s in plan.comparison.suites for r in s.costs),
        footer=plan.footer,
        cut=None,
        minimal=budget.minimal,
        with_baseline=plan.with_baseline,
        text=budget.text,
        trend_header=Markdown(_trend_header(plan.trends)),
        charts=charts[:MAX_CHARTS],
        hidden_charts=max(len(charts) - MAX_CHARTS, 0),
    )
    if not budget.minimal:
        view.losses, view.losses_total = _losses(plan.comparison, budget, len(plan.comparison.suites) > 1)
        view.confirm = _confirm_lines(plan.comparison, plan.current)
    sizes = {
        "attention": len(plan.attention),
        "detailed": len(detailed),
        "list_total": sum(len(items) for _, _, items in plan.lists) + len(beyond),
        "hidden_rows": sum(s.hidden_rows for s in view.suites),
    }
    return view, sizes


MAX_DIFF = 8_000  # the policy diff's block, in comment_length units (at most 80 lines: evalgate.gate.base_policy)


def _diff_block(diff: str) -> Markdown:
    """The pull request's policy diff as a fenced block of at most MAX_DIFF units, whatever
    its lines hold: its values come from the pull request's config and eval sets (a criterion
    named by a test_config.json), and the report is cut to fit at every budget but this block,
    so an unbounded one would leave no budget that fits."""
    text = "\n".join(cut(line, 200) for line in diff.split("\n"))
    block = fenced(text, "diff")
    while comment_length(block) > MAX_DIFF:  # hidden characters are shown as {U+...}: measure the block
        text = text[: len(text) // 2]
        block = fenced(text + "\n…", "diff")
    return block


def _confirm_lines(comparison: Comparison, current: RunResults) -> list[Markdown]:
    """gate.confirm (evalgate.gate.confirm): `**suite**: set/case (criterion): failed 2 of 2 re-runs: broken`."""
    from evalgate.gate.confirm import lines

    shown = len(comparison.suites) > 1
    return [
        Markdown(f"{md(l.suite, 60) + ': ' if shown else ''}{md(l.case, 100)} ({md(listing(l.criteria), 120)}): {md(l.text, 200)}")
        for l in lines(comparison, current)
    ]


def _cut_note(budget: _Budget, sizes: dict[str, int], limit_text: str, hint: Optional[str]) -> Optional[Markdown]:
    cuts = []
    if budget.minimal:
        cuts.append(_("everything but the verdict, its reasons and the baseline left out"))
    else:
        if sizes["detailed"] < sizes["attention"]:
            cuts.append(
                n_("case details shown for {shown} of {n} case", "case details shown for {shown} of {n} cases", sizes["attention"], shown=f"{sizes['detailed']:,}")
            )
        if budget.text < _LADDER[0].text:
            cuts.append(_("messages and responses trimmed to {n} characters", n=budget.text))
        if budget.items == 0 and sizes["list_total"]:
            cuts.append(_("case lists reduced to counts"))
        elif budget.items is not None and sizes["list_total"] > budget.items:
            cuts.append(_("case lists shortened to {n} entries", n=budget.items))
        if sizes["hidden_rows"]:
            cuts.append(
                n_("{n} passing criterion left out of the tables", "{n} passing criteria left out of the tables", sizes["hidden_rows"])
            )
    if not cuts:
        return None
    text = _("**Shortened to fit {limit}**: {cuts}.", limit=limit_text, cuts=p_("between reasons", "; ").join(cuts))
    if hint:
        # The hint is a phrase marked where it is defined (entrypoint, local_gate): translated here.
        text += " " + _("The full report is in the {where}.", where=md(_(hint), 200))
    return Markdown(text)


@functools.cache
def _environment() -> Any:
    env = templates(autoescape=False, finalize=finalize)  # Markdown, not HTML: the filters below do the escaping
    # Our messages are trusted text: in these templates they print as Markdown. Their fields
    # must be numbers or Markdown already filtered: `finalize` checks each, as it checks what a
    # template prints, so `_("gate {id}", id=v.gate)` without `| md` is an error, not a hole.
    def filled(fields: dict[str, Any]) -> dict[str, Any]:
        return {k: finalize(v) for k, v in fields.items()}

    env.globals.update(
        _=lambda message, **fields: Markdown(_(message, **filled(fields))),
        n_=lambda singular, plural, n, **fields: Markdown(n_(singular, plural, n, **filled(fields))),
        p_=lambda context, message, **fields: Markdown(p_(context, message, **filled(fields))),
        aside=lambda text: Markdown(aside(finalize(text))),  # ` (text)`, in Japanese `（テキスト）`
    )
    env.filters.update(md=md, html=html, fenced=fenced, url=url)
    env.tests["markdown"] = lambda v: isinstance(v, Markdown)
    return env


def _render(
    comparison: Comparison,
    current: RunResults,
    *,
    gate_id: str,
    run_url: Optional[str],
    limit: int,
    full_report_hint: Optional[str],
    with_marker: bool,
    measure: Callable[[str], int],
    limit_text: str,
    trend: Optional[Trend] = None,
) -> str:
    template = _environment().get_template("report.md.j2")
    plan = _plan(comparison, current, gate_id=gate_id, run_url=run_url, with_marker=with_marker, trend=trend)
    for budget in _LADDER:
        if _floor(plan, budget) > limit:
            continue
        view, sizes = _view(plan, budget)
        view.cut = _cut_note(budget, sizes, limit_text, full_report_hint)
        text = template.render(v=view)
        if measure(text) <= limit:
            return text
    # Even the verdict alone is too long (thousands of long reasons): drop the reasons too.
    view.reasons, view.hidden_reasons, view.baseline = [], len(plan.comparison.reasons), []
    text = template.render(v=view)
    if measure(text) <= limit:
        return text
    raise ValueError(f"a report limit of {limit:,} is too small for even the verdict ({measure(text):,})")


def render_comment(
    comparison: Comparison,
    current: RunResults,
    *,
    gate_id: str = "evalgate",
    run_url: Optional[str] = None,
    limit: int = COMMENT_LIMIT,
    full_report_hint: Optional[str] = None,
    trend: Optional[Trend] = None,
) -> str:
    """The pull-request comment: `marker(gate_id)` on its first line, under `limit` characters.
    With `trend` (the default branch's runs before this one), each criterion row says where
    this run sits in their range."""
    return _render(
        comparison, current, gate_id=gate_id, run_url=run_url, limit=limit, full_report_hint=full_report_hint,
        with_marker=True, measure=comment_length, limit_text=_("the {limit}-character comment limit", limit=f"{limit:,}"), trend=trend,
    )


def render_summary(
    comparison: Comparison,
    current: RunResults,
    *,
    gate_id: str = "evalgate",
    run_url: Optional[str] = None,
    limit: int = SUMMARY_LIMIT,
    full_report_hint: Optional[str] = None,
    trend: Optional[Trend] = None,
) -> str:
    """The same report for the job summary (and the nightly tracking issue): no marker, `limit`
    in UTF-8 bytes. With `trend`, also a chart of each criterion over those runs and this one."""
    return _render(
        comparison, current, gate_id=gate_id, run_url=run_url, limit=limit, full_report_hint=full_report_hint,
        with_marker=False, measure=lambda t: len(t.encode("utf-8", "backslashreplace")), limit_text=_("the {limit}-byte job summary limit", limit=f"{limit:,}"),
        trend=trend,
    )
