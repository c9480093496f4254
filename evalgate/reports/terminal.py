"""The terminal summary of a run, and a progress bar for runs that take a while."""

from __future__ import annotations

import sys
import threading
import time
import unicodedata
from collections import Counter
from typing import Callable, Optional, Sequence, TextIO

from evalgate import efficiency
from evalgate.i18n import _, n_
from evalgate.reports import duration, efficiency_cells, format_scores, incomplete_note, not_evaluated_reasons, reason_text, time_spent
from evalgate.results import Counts, RunResults, Status, SuiteResult

MAX_ID = 40  # display columns an id or name may take in a table before it is cut
MAX_REASON = 160
MAX_FAILED = 20  # rows of the failed-cases table; the rest are counted, and are in results.json
ELLIPSIS = "…"

_STATUS_STYLE = {Status.PASSED: "32", Status.FAILED: "31", Status.NOT_EVALUATED: "33", Status.INFORMATIONAL: "36"}
_BOLD = "1"


def _char_width(ch: str) -> int:
    if unicodedata.combining(ch) or unicodedata.category(ch) == "Cf":
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def display_width(text: str) -> int:
    """Terminal columns the text takes: East Asian wide characters take two."""
    return sum(_char_width(ch) for ch in text)


def plain(text: str) -> str:
    """One line, no control characters (an ESC in the data must not drive the terminal)."""
    text = text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ").replace("\t", " ")
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cc")



def truncate(text: str, width: int) -> str:
    """Cut the text to at most `width` columns, ending with an ellipsis when cut."""
    text = plain(text)
    if display_width(text) <= width:
        return text
    out, used = [], 0
    for ch in text:
        w = _char_width(ch)
        if used + w > width - 1:
            break
        out.append(ch)
        used += w
    return "".join(out) + ELLIPSIS


class _Style:
    def __init__(self, color: bool):
        self.color = color

    def __call__(self, text: str, sgr: str) -> str:
        return f"\x1b[{sgr}m{text}\x1b[0m" if self.color and sgr and text else text

    def status(self, status: Status) -> str:
        return self(status.value, _STATUS_STYLE[status])


Cell = tuple[str, str]  # (text, SGR code or "")


def _table(style: _Style, headers: Sequence[str], aligns: str, rows: list[list[Cell]], indent: str = "  ") -> list[str]:
    """Rows padded to common column widths; colour wraps the text, never the padding.

    With a right-aligned last column every row has the same display width; a left-aligned
    last column is not padded, so no line ends in spaces.
    """
    body = [[(plain(t), s) for t, s in row] for row in rows]
    head = [(h, _BOLD) for h in headers]
    widths = [max(display_width(row[i][0]) for row in [head, *body]) for i in range(len(headers))]
    lines = []
    for row in [head, *body]:
        cells = []
        for (text, sgr), width, align in zip(row, widths, aligns):
            pad = " " * (width - display_width(text))
            cells.append(pad + style(text, sgr) if align == ">" else style(text, sgr) + pad)
        lines.append((indent + "  ".join(cells)).rstrip(" "))
    return lines


def _mean(values: list[float]) -> Optional[float]:
    return sum(values) / len(values) if values else None


def _criteria_table(style: _Style, suite: SuiteResult) -> list[str]:
    names = sorted({n for c in suite.cases for n in c.criteria} | set(suite.criteria))
    rows = []
    for name in names:
        results = [c.criteria[name] for c in suite.cases if name in c.criteria]
        thresholds = {r.threshold for r in results} or (
            {suite.criteria[name].threshold} if name in suite.criteria else set()
        )
        threshold = f"{thresholds.pop():.2f}" if len(thresholds) == 1 else _("varies")
        if name in suite.criteria and suite.criteria[name].no_threshold:
            threshold = "–"  # agents-cli's metrics: the comparison with the baseline judges them
        mean = _mean([r.score for r in results if r.score is not None])
        n = Counter(r.status for r in results)
        rows.append([
            (truncate(name, MAX_ID), ""),
            (threshold, ""),
            (f"{mean:.2f}" if mean is not None else "-", ""),
            (str(n[Status.PASSED]), ""),
            (str(n[Status.FAILED]), _STATUS_STYLE[Status.FAILED] if n[Status.FAILED] else ""),
            (str(n[Status.NOT_EVALUATED]), _STATUS_STYLE[Status.NOT_EVALUATED] if n[Status.NOT_EVALUATED] else ""),
        ])
    headers = (_("criterion"), _("threshold"), _("mean"), _("passed"), _("failed"), _("not evaluated"))
    return _table(style, headers, "<>>>>>", rows)


def _failed_table(style: _Style, suite: SuiteResult) -> list[str]:
    """The failed criteria of failed cases, worst first (furthest below the threshold; ties
    in case order), at most MAX_FAILED rows: every one of them is in results.json."""
    failed = [
        (crit.score - crit.threshold, case, name, crit)
        for case in suite.cases
        if case.status is Status.FAILED
        for name, crit in case.criteria.items()
        if crit.status is Status.FAILED and crit.score is not None
    ]
    if not failed:
        return []
    failed.sort(key=lambda row: row[0])  # stable: equal gaps keep the cases' order
    rows = []
    for _gap, case, name, crit in failed[:MAX_FAILED]:
        score, threshold = format_scores(crit.score, crit.threshold)
        rows.append([
            (truncate(case.eval_set_id, MAX_ID), ""),
            (truncate(case.eval_id, MAX_ID), ""),
            (truncate(name, MAX_ID), ""),
            (score, _STATUS_STYLE[Status.FAILED]),
            (threshold, ""),
        ])
    # eval_id: ADK's field name, as the reader finds it in the eval set files (never translated).
    lines = ["", "  " + style(_("failed cases"), _BOLD)] + _table(
        style, (_("eval set"), "eval_id", _("criterion"), _("score"), _("threshold")), "<<<>>", rows
    )
    if len(failed) > MAX_FAILED:
        lines.append("  " + _("and {n} more: see results.json", n=f"{len(failed) - MAX_FAILED:,}"))
    return lines


def _not_evaluated(style: _Style, suite: SuiteResult) -> list[str]:
    cases: Counter[str] = Counter()
    criteria: dict[str, set[str]] = {}
    for case in suite.cases:
        for reason, names in not_evaluated_reasons(case).items():
            cases[reason] += 1
            criteria.setdefault(reason, set()).update(names)
    if not cases:
        return []
    rows = [
        [
            (str(count), _STATUS_STYLE[Status.NOT_EVALUATED]),
            (truncate(reason_text(reason, sorted(criteria[reason])), MAX_REASON), ""),
        ]
        for reason, count in sorted(cases.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    return ["", "  " + style(_("not evaluated"), _BOLD)] + _table(style, (_("cases"), _("reason")), "><", rows)


def _efficiency(style: _Style, suite: SuiteResult) -> list[str]:
    """ADK's efficiency metrics over the suite's turns, on one line: shown, never a verdict."""
    values = efficiency.summarize(suite.cases)
    if not values:
        return []
    c = efficiency_cells(values)
    title = style(_("efficiency"), _BOLD)
    return [
        "  "
        + _(
            # TRANSLATORS: {efficiency} is the word "efficiency" in bold; {seconds} is a duration with its unit.
            "{efficiency} per turn (informational): {tool_calls} tool calls, {model_calls} model calls, {tokens} tokens, time {seconds}",
            efficiency=title,
            tool_calls=c["tool_calls"],
            model_calls=c["model_calls"],
            tokens=c["tokens"],
            seconds=c["seconds"],
        )
    ]


def _counts_text(counts: Counts, suites: Optional[int] = None) -> str:
    fields = dict(
        cases=n_("{n} case", "{n} cases", counts.cases), passed=counts.passed, failed=counts.failed, not_evaluated=counts.not_evaluated
    )
    if suites is None:
        text = _("{cases}: {passed} passed, {failed} failed, {not_evaluated} not evaluated", **fields)
    else:
        text = _("{cases} in {suites}: {passed} passed, {failed} failed, {not_evaluated} not evaluated", suites=n_("{n} suite", "{n} suites", suites), **fields)
    return text + incomplete_note(counts)


def _verdict(style: _Style, suite: SuiteResult) -> str:
    text = f"{plain(suite.name)}: {style.status(suite.status)} ({_counts_text(suite.counts)})"
    if suite.counts.incomplete and suite.not_evaluated_policy == "fail":
        text += _("; under not_evaluated: fail, incomplete cases fail this suite")
    return text


def summary_table(results: RunResults, color: bool, times: bool = True) -> str:
    """The run for a person at a terminal: per suite its criteria, failures, unevaluated
    reasons and verdict, then the overall verdict, then (with `times`) where the time went
    (evalgate.reports.time_spent: measured, so it differs from run to run). ANSI colour
    only when `color`."""
    style = _Style(color)
    lines: list[str] = []
    for suite in results.suites:
        lines.append(style(_("suite {name}", name=plain(suite.name)), _BOLD))
        lines.extend(_criteria_table(style, suite))
        lines.extend(_efficiency(style, suite))
        lines.extend(_failed_table(style, suite))
        lines.extend(_not_evaluated(style, suite))
        if suite.warnings:
            lines.append("")
            warning = style(_("warning"), "33")
            lines.extend("  " + _("{warning}: {text}", warning=warning, text=plain(w)) for w in suite.warnings)
        lines.extend(["", _verdict(style, suite), ""])
    lines.append(_("overall: {status} ({counts})", status=style.status(results.status), counts=_counts_text(results.counts, len(results.suites))))
    if times:
        lines.extend(time_spent(results.run))
    return "\n".join(lines) + "\n"


def failed_run_line(suite: str, eval_id: str, run: Optional[int], reason: str, log: Optional[str]) -> str:
    """One failed case run, on one line: which, why, and where its captured output went."""
    case = f"{plain(suite)}/{truncate(eval_id, MAX_ID)}"
    which = case if run is None else _("{case} run {run}", case=case, run=run)
    kept = ""
    if log:
        kept = n_(" (its output, {n} line: results.json, report.html)", " (its output, {n} lines: results.json, report.html)", log.count("\n") + 1)
    # The reason is the run's own error text (the user's data): never translated.
    return _("agent run failed: {which}: {reason}{kept}", which=which, reason=truncate(reason, MAX_REASON), kept=kept)


class Progress:
    """Progress of a long step: a one-line bar with an ETA on a terminal; in a CI log (not a
    terminal), one line per tenth done.

    Draws nothing when disabled, nothing on a terminal during the first `delay` seconds (a
    quick run stays quiet), and redraws the bar at most every `interval` seconds. `close()`
    clears the bar's line.
    """

    WIDTH = 30

    def __init__(
        self,
        total: int,
        stream: Optional[TextIO] = None,
        enabled: bool = True,
        *,
        label: Optional[str] = None,
        tty: bool = True,
        delay: float = 0.5,
        interval: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.total = max(total, 0)
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.label = label if label is not None else _("cases")
        self.tty = tty
        self.delay = delay
        self.interval = interval
        self._clock = clock
        self._start = clock()
        self._last_draw: Optional[float] = None
        self._tenths = 0
        self._closed = False
        self._lock = threading.Lock()  # cases finish on several threads

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.done = min(self.done + n, self.total) if self.total else self.done + n
            if not self.enabled or self._closed:
                return
            now = self._clock()
            if not self.tty:
                tenths = 10 * self.done // self.total if self.total else 0
                if tenths > self._tenths:
                    self._tenths = tenths
                    # The percentage done, not the tenth it crossed: 1/3 is 33%, not 30%.
                    self.stream.write(f"{self.label}: {self.done}/{self.total} ({100 * self.done // self.total}%) {self._times(now)}\n")
                    self.stream.flush()
                return
            if now - self._start < self.delay:
                return
            if self._last_draw is not None and now - self._last_draw < self.interval:
                return
            self._draw(now)

    def note(self, line: str) -> None:
        """A line of its own while the step goes on (also when the bar is disabled): on a
        terminal the bar is cleared first and drawn again below it."""
        with self._lock:
            redraw = self.enabled and self.tty and self._last_draw is not None and not self._closed
            self.stream.write(("\r\x1b[K" if redraw else "") + line + "\n")
            if redraw:
                self._draw(self._clock())
            self.stream.flush()

    def _times(self, now: float) -> str:
        elapsed = now - self._start
        if 0 < self.done < self.total:
            eta = elapsed / self.done * (self.total - self.done)
            # TRANSLATORS: {elapsed} and {left} are durations such as "9 s" or "1 min 5 s".
            return _("{elapsed}, about {left} left", elapsed=duration(int(elapsed), whole=True), left=duration(eta, whole=True))
        return duration(int(elapsed), whole=True)

    def _draw(self, now: float) -> None:
        self._last_draw = now
        filled = self.WIDTH * self.done // self.total if self.total else 0
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        self.stream.write(f"\r\x1b[K[{bar}] {self.done}/{self.total} {self.label}  {self._times(now)}")
        self.stream.flush()

    def close(self) -> None:
        """Clear the bar's line, if it was drawn; later advances draw nothing."""
        if self._last_draw is not None and not self._closed:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
        self._closed = True

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
