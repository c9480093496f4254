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
report ends by saying what was cut and where the full report is.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, Callable, Optional
from urllib.parse import quote

from evalgate.gate import (
    CaseKey,
    Comparison,
    CriterionComparison,
    SuiteComparison,
    Verdict,
)
from evalgate import efficiency
from evalgate.reports import COST_COLUMNS, cost_cells, count, deciding_p, delta_cell, duration, efficiency_cells, incomplete_note, templates
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
from evalgate.gate.trends import Series, Trend, axis_range, header, placement, series

COMMENT_LIMIT = 65_000  # GitHub refuses comments over 65,536 characters
SUMMARY_LIMIT = 1_000_000  # the job summary takes 1 MiB per step; measured in UTF-8 bytes

__all__ = ["marker", "render_comment", "render_summary", "COMMENT_LIMIT", "SUMMARY_LIMIT"]


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
        return "less than an hour older than this run"
    if hours < 48:
        return f"{count(int(hours), 'hour')} older than this run"
    return f"{count(int(hours // 24), 'day')} older than this run"


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


def _trend_cell(s: Series) -> Markdown:
    """`▅▆▅▇ **▼ 0.712**, below 0.780–0.860`: the runs before this one, then where this run sits."""
    spark = sparkline(s.values)
    placed = placement(s)
    if placed is None:
        return Markdown(f"{spark} ({count(len(s.values), 'run')}: too few to place this one)")
    value, where, side = placed
    if side == "below":  # the one a reviewer must not miss
        value = f"**{value}**"
    return Markdown(f"{spark} {value}, {where}")


def mermaid_chart(s: Series) -> Optional[str]:
    """The series as a Mermaid `xychart-beta` (GitHub renders it): the runs' short commit ids on
    the x axis, then "this run". Composed only of numbers and hex ids (the trend file's commits
    are checked to be hex when read); None with fewer than two points."""
    labels = list(s.labels)
    values = list(s.values)
    if s.current is not None:
        labels.append("this run")
        values.append(s.current)
    if len(values) < 2:
        return None
    low, high = axis_range(values)
    return "\n".join(
        [
            "xychart-beta",
            "    x-axis [" + ", ".join(f'"{x}"' for x in labels) + "]",
            f'    y-axis "mean" {low:.2f} --> {high:.2f}',
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
    gate_change: Optional[str]  # untrusted: a unified diff of the PR's policy against its base's
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
    """`suite: eval_set / eval_id`, each part cut on its own so a long one cannot hide the id."""
    ids = f"{cut(key.eval_set_id, 60)} / {cut(key.eval_id, 80)}"
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
        note = Markdown(f"first {len(kept):,} of {len(text):,} characters")
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
            return None, Markdown("no tool calls (none expected given)")
        lines = ["  " + line for line in actual]
        note = "actual (no expected calls given)"
    else:
        expected = [_call_line(c, width) for c in inv.expected_tools]
        if not expected and not actual:
            return None, Markdown("no tool calls, none expected")
        lines = []
        matcher = difflib.SequenceMatcher(a=expected, b=actual, autojunk=False)
        for op, a0, a1, b0, b1 in matcher.get_opcodes():
            if op == "equal":
                lines.extend("  " + line for line in expected[a0:a1])
            else:
                lines.extend("- " + line for line in expected[a0:a1])
                lines.extend("+ " + line for line in actual[b0:b1])
        note = "expected (-) vs actual (+)" if expected != actual else "as expected"
    if len(lines) > MAX_TOOL_LINES:
        more = len(lines) - MAX_TOOL_LINES
        lines = lines[:MAX_TOOL_LINES] + [f"@@ {more} more lines not shown @@"]
    return _Block(Markdown("Tool calls"), "\n".join(lines), "diff", None), Markdown(note)


def _verdict_text(verdict: Any) -> Markdown:
    if isinstance(verdict, bool):
        return Markdown("yes" if verdict else "**no**")
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
        reasons = [str(r) for r in reasons] if isinstance(reasons, list) else []
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
        score = "not evaluated" if inv.score is None else f"{inv.score:.2f}"
        out.append(
            _Judge(
                criterion=name,
                status=Markdown(f"{score}, {inv.status.value}"),
                error=inv.error,
                reasons=reasons[:MAX_JUDGE_REASONS],
                rubrics=rubrics[:MAX_RUBRICS],
                hidden=Markdown(f"{hidden:,} more not shown") if hidden else None,
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
                title=Markdown(f"Invocation {i + 1} of {n}") if n > 1 else None,
                user=_block("User", inv.user, budget),
                tools=tools,
                tools_note=tools_note,
                expected=_block("Expected response", inv.expected_response, budget)
                if inv.expected_response is not None
                else None,
                actual=_block("Actual response", inv.actual_response, budget),
                judges=_judges(case, i),
            )
        )
    hidden = n - len(shown)
    note = None
    if hidden:
        note = Markdown(f"{count(hidden, 'other invocation')} not shown" + (" (all passed)" if len(failing) <= len(shown) else ""))
    ended = None
    if case.conversation_end is not None:
        ended = Markdown(f"Simulated conversation of {count(n, 'turn')}; conversation ended: {md(case.conversation_end, 40)}")
    return _Detail(invocations, note, ended)


_KIND = {
    "regressed": "regressed",
    "broken_stable": "broken stable",
    "fixed": "fixed",
    "score_drop": "score dropped",
    "score_rise": "score rose",
    "failed": "failed",
}


def _history_p(change: Any) -> Optional[Markdown]:
    """A broken stable case's p-value (its criterion's pooled breakage test), and after Holm when given."""
    if change.p_value is None:
        return None
    text = f"its criterion's stable cases, tested together: {_p(change.p_value)}"
    adjusted = getattr(change, "p_adjusted", None)
    if adjusted is not None:
        text += f", {_p(adjusted)} after Holm"
    return Markdown(text)


def flaky_words(change: Any) -> Optional[str]:
    """A regressed case that fails on the default branch too: its record there, which the gate
    weighs (a flaky case is not blamed on the pull request alone)."""
    history = getattr(change, "flaky_history", None)
    if history is None:
        return None
    passed, runs = history
    return f"flaky on the default branch: passed {passed} of its last {runs} runs there"


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
    heading = Markdown(f"{title} ({total:,})")
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


_STAT_LABELS = {
    "requests": "requests",
    "cache_hits": "cache hits",
    "cache_refused": "cache entries not believed",
    "retries": "retries",
    "failures": "failures",
    "input_tokens": "input tokens",
    "output_tokens": "output tokens",
    "tokens": "tokens",
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
            found.append((f"{sc.name}: side by side" if show_suite else "side by side", numbers))
    if not found:
        return [], []
    keys = sorted({k for _, n in found for k in n}, key=lambda k: (list(_STAT_LABELS).index(k) if k in _STAT_LABELS else 99, k))
    columns = [md(_STAT_LABELS.get(k, k.replace("_", " "))) for k in keys]
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
        delta += f" · run sd {c.run_sd:.3f} ({count(history, 'run') + ' of history' if history else 'assumed'})"
    return _Row(
        criterion=c.criterion,
        kind=Markdown("judge, per sample" if getattr(c, "basis", "scores") == "samples" else "judge") if c.judge else None,
        threshold=Markdown(f"{c.threshold:.2f}"),
        pairs=c.n_pairs,
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
    drop = "" if pw.delta is None else f" · drop {-pw.delta:.3f}"
    return _Row(
        criterion="judged side by side",
        kind=Markdown("judge, both orders"),
        threshold=Markdown("–"),
        pairs=pw.compared,
        baseline=Markdown("–"),
        current=Markdown("–"),
        delta=Markdown(
            f"{pw.losses} of {count(pw.changed, 'changed answer')} worse than the baseline's, {pw.wins} better, {equal} equal{drop}"
        ),
        status=_status_cell(pw.status, pw.p_adjusted),
        passing=pw.status is Verdict.PASS,
    )


_PICK = {"current": "this pull request's", "baseline": "the baseline's", "equal": "equally good"}


def _pair_verdict(v: Any) -> tuple[Markdown, str]:
    order = "the pull request's answer shown as A" if v.current_first else "the baseline's answer shown as A"
    if v.choice is None:
        return Markdown(f"{order}: no verdict"), v.error or ""
    pick = "equally good" if v.choice == "equal" else f"prefers {_PICK[v.choice]}"
    return Markdown(f"{order}: **{pick}**"), v.reason


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
    for score, suite, c in found[:limit]:
        turns = []
        for inv in c.invocations[:MAX_INVOCATIONS]:
            turns.append(
                _PairTurn(
                    title=Markdown(f"Invocation {inv.index + 1}") if len(c.invocations) > 1 or inv.index else None,
                    user=_block("User", inv.user, budget),
                    baseline=_block("The baseline's answer", inv.baseline, budget),
                    current=_block("This pull request's answer", inv.current, budget),
                    verdicts=[_pair_verdict(v) for v in inv.verdicts],
                )
            )
        votes = sum(1 for inv in c.invocations for v in inv.verdicts if v.choice is not None)
        out.append(_Loss(_label(CaseKey(suite, c.eval_set_id, c.eval_id), show_suite), Markdown(f"net {score} of {count(votes, 'verdict')}"), turns))
    return out, len(found)


def _suite_view(s: SuiteComparison, with_baseline: bool, budget: _Budget, trends: dict[tuple[str, str], Series]) -> _Suite:
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
    return _Suite(s.name, _status_cell(s.verdict, None), reasons[:MAX_REASONS], rows, hidden)


def _baseline_line(comparison: Comparison, current: RunResults) -> list[Any]:
    info = comparison.baseline
    if info is None:
        return [Markdown("**No baseline found**: absolute thresholds only.")]
    parts: list[Any] = []
    if not info.commit:
        parts += [Markdown("Baseline: a results file with no recorded commit")]
    elif info.distance and info.commit != info.requested_commit:
        steps = count(info.distance, "commit")
        parts += [Markdown("Baseline from ancestor "), info.commit[:12], Markdown(f", {steps} before the base "), info.requested_commit[:12]]
    else:
        parts += [Markdown("Baseline: "), info.commit[:12], Markdown(", the base commit")]
    age = _age(info.created_at, current.run.started_at)
    if age:
        parts.append(Markdown(f" ({age})"))
    elif info.created_at:
        parts += [Markdown(" (recorded "), info.created_at[:10], Markdown(")")]
    parts.append(Markdown("."))
    return parts


def _headline(comparison: Comparison, current: RunResults) -> Markdown:
    kinds = [ch.kind for s in comparison.suites for ch in s.changes]
    parts = []
    regressed = kinds.count("regressed") + kinds.count("broken_stable")
    if comparison.baseline is not None:
        if regressed:
            text = count(regressed, "regressed case", "regressed cases")
            if kinds.count("broken_stable"):
                text += f" ({kinds.count('broken_stable'):,} broken stable)"
            parts.append(text)
        else:
            parts.append("no regressed cases")
        if kinds.count("fixed"):
            parts.append(count(kinds.count("fixed"), "fixed case", "fixed cases"))
        worse = sum(s.pairwise.losses for s in comparison.suites if getattr(s, "pairwise", None) is not None)
        if worse:  # gate.pairwise
            parts.append(count(worse, "answer") + " worse side by side")
    c = current.counts
    parts.append(
        f"{count(c.cases, 'case')}: {c.passed:,} passed, {c.failed:,} failed, {c.not_evaluated:,} not evaluated{incomplete_note(c)}"
    )
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
            item = _Case(Markdown(_KIND.get(ch.kind, ch.kind)), _label(ch.key, show_suite), _scores(ch.criteria), extra)
            if ch.kind in ("regressed", "broken_stable"):
                attention.append((item, cases.get(ch.key)))
            elif ch.kind == "fixed":
                fixed.append(item)
            else:
                moves.append(item)
        listed.update(s.added)
        listed.update(s.changed)
    for key, case in cases.items():
        if case.status is Status.FAILED and key not in listed:
            item = _Case(Markdown(_KIND["failed"]), _label(key, show_suite), _current_scores(case), None)
            if with_baseline:
                still.append(item)
            else:
                attention.append((item, case))

    lists: list[tuple[str, Optional[str], list[_Case]]] = [
        ("Fixed cases", None, fixed),
        ("Still failing", "They failed in the baseline too.", still),
        ("Score changes", "Scores that moved without changing a case's status.", moves),
    ]
    for title, note, attr in (
        ("Added cases", None, "added"),
        ("Removed cases", None, "removed"),
        ("Changed cases", "Their expected data changed, so they are not compared.", "changed"),
    ):
        keys = [k for s in comparison.suites for k in getattr(s, attr)]
        lists.append((title, note, _key_cases(keys, attr, show_suite, cases)))

    footer: list[Any] = []
    if current.run.duration_seconds is not None:
        agent_s = (current.run.agent or {}).get("seconds")
        if isinstance(agent_s, (int, float)):
            total = current.run.duration_seconds + agent_s
            footer.append(Markdown(f"Run time {duration(total)} (running the agent {duration(agent_s)}, scoring {duration(current.run.duration_seconds)})"))
        else:
            footer.append(Markdown(f"Run time {duration(current.run.duration_seconds)}"))
    if run_url and re.match(r"(?i)https?://", run_url):
        footer.append(Markdown(f"[workflow run]({url(run_url)})"))
        # The action uploads nothing itself; the documented workflows upload its output folder.
        outputs = " and the agent's outputs in inference.jsonl" if current.run.agent else ""
        footer.append(Markdown(f"every case in report.html{outputs} among its artifacts"))
    footer.append(Markdown(f"evalgate {md(current.evalgate_version, 20)}, {comparison.mode} mode"))

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
    title = "Regressed cases" if plan.with_baseline else "Failed cases"
    lists = [_case_list(t, note, items, budget) for t, note, items in plan.lists]
    reasons = plan.comparison.reasons
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
        gate_change=plan.comparison.gate_change,
        baseline=_baseline_line(plan.comparison, plan.current),
        suites=[_suite_view(s, plan.with_baseline, budget, trends) for s in plan.comparison.suites],
        attention=_List(Markdown(f"{title} ({len(plan.attention):,})"), None, detailed, len(plan.attention), False)
        if plan.attention
        else None,
        attention_more=_case_list(f"More {title.lower()}", "Without details, to keep the report short.", beyond, budget)
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
        trend_header=Markdown(header(plan.trends)),
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


def _confirm_lines(comparison: Comparison, current: RunResults) -> list[Markdown]:
    """gate.confirm (evalgate.gate.confirm): `**suite**: set/case (criterion): failed 2 of 2 re-runs: broken`."""
    from evalgate.gate.confirm import lines

    shown = len(comparison.suites) > 1
    return [
        Markdown(f"{md(l.suite, 60) + ': ' if shown else ''}{md(l.case, 100)} ({md(', '.join(l.criteria), 120)}): {md(l.text, 200)}")
        for l in lines(comparison, current)
    ]


def _cut_note(budget: _Budget, sizes: dict[str, int], limit_text: str, hint: Optional[str]) -> Optional[Markdown]:
    cuts = []
    if budget.minimal:
        cuts.append("everything but the verdict, its reasons and the baseline left out")
    else:
        if sizes["detailed"] < sizes["attention"]:
            cuts.append(f"case details shown for {sizes['detailed']:,} of {sizes['attention']:,} cases")
        if budget.text < _LADDER[0].text:
            cuts.append(f"messages and responses trimmed to {budget.text} characters")
        if budget.items == 0 and sizes["list_total"]:
            cuts.append("case lists reduced to counts")
        elif budget.items is not None and sizes["list_total"] > budget.items:
            cuts.append(f"case lists shortened to {budget.items} entries")
        if sizes["hidden_rows"]:
            cuts.append(f"{count(sizes['hidden_rows'], 'passing criterion', 'passing criteria')} left out of the tables")
    if not cuts:
        return None
    text = f"**Shortened to fit {limit_text}**: " + "; ".join(cuts) + "."
    if hint:
        text += f" The full report is in the {md(hint, 200)}."
    return Markdown(text)


@functools.cache
def _environment() -> Any:
    env = templates(autoescape=False, finalize=finalize)  # Markdown, not HTML: the filters below do the escaping
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
        with_marker=True, measure=len, limit_text=f"the {limit:,}-character comment limit", trend=trend,
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
        with_marker=False, measure=lambda t: len(t.encode("utf-8")), limit_text=f"the {limit:,}-byte job summary limit",
        trend=trend,
    )
