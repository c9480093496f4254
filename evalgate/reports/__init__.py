"""Writers that turn a run's results into text and files: JUnit XML, ADK eval history, the terminal summary, the HTML report."""

from __future__ import annotations

from typing import Any, Optional

from evalgate.i18n import _, aside, listing, n_
from evalgate.reasons import shown as shown_reason
from evalgate.results import CaseResult, Counts, Status


def templates(*, autoescape: bool, **options: Any) -> Any:
    """A jinja2 environment over evalgate/templates with the options every report shares
    (undefined names are errors; block tags leave no blank lines; `_` and `n_` translate). jinja2 is imported here,
    on the rendering path only. Not sandboxed: its templates are evalgate's own files, and what
    a run holds reaches them only as values, which jinja2 never evaluates as template text
    (template text from a config renders in a sandbox: evalgate.simulated_user)."""
    import jinja2

    from evalgate import i18n

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("evalgate", "templates"),
        autoescape=autoescape,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        **options,
    )
    # Messages in templates: {{ _("Baseline") }}, {{ n_("{n} case", "{n} cases", n) }}, in the
    # language of the moment (evalgate.i18n).
    env.globals.update(_=i18n._, n_=i18n.n_, p_=i18n.p_)
    return env


def signed(x: float) -> str:
    """`+0.012`, `-0.300`: a change, always with its sign."""
    return f"{x:+.3f}"


def delta_cell(delta: Optional[float], low: Optional[float], high: Optional[float]) -> str:
    """A criterion's change with its 95% interval, as both reports print it: `-0.012
    [-0.030, +0.006]`; `–` when it was not compared."""
    if delta is None:
        return "–"
    if low is not None and high is not None:
        return f"{signed(delta)} [{signed(low)}, {signed(high)}]"
    return signed(delta)


def deciding_p(c: Any) -> Optional[float]:
    """The smallest of a CriterionComparison's adjusted p-values (drop, breakage, partial
    drop): the test that decided a FAIL, or the nearest one to it. The comment and report.html
    both show this one, so they agree."""
    ps = [p for p in (c.p_adjusted, getattr(c, "breakage_p_adjusted", None), getattr(c, "partial_p_adjusted", None)) if p is not None]
    return min(ps) if ps else None


def duration(seconds: float, *, whole: bool = False) -> str:
    """`<0.1 s`, `12.3 s`, `4 min 2 s`, `1 h 3 min` in the report's language (Korean `12.3초`,
    `4분 2초`; Japanese `12.3 秒`, `4 分 2 秒`): every duration a reader sees. `whole`: whole
    seconds below a minute too (`9 s`), for the live progress line."""
    if whole:
        seconds = float(int(seconds + 0.5))
        if seconds < 60:
            return _("{seconds} s", seconds=f"{seconds:.0f}")
    if 0 < seconds < 0.05:
        return _("<0.1 s")
    if seconds < 60:
        return _("{seconds} s", seconds=f"{seconds:.1f}")
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return _("{minutes} min {seconds} s", minutes=minutes, seconds=secs)
    hours, minutes = divmod(minutes, 60)
    return _("{hours} h {minutes} min", hours=hours, minutes=minutes)


def time_spent(run: Any) -> list[str]:
    """Where a run's time went, for the terminal summary and the comment's footer (RunInfo's
    `agent` and `judge`): the time in case runs and in judge requests, waiting for a free slot,
    for judge.rpm, and backing off after 429 and 5xx answers, each added up over what ran at
    once; then, when waiting took a good share, what to raise. [] when neither ran here."""
    agent, judge = run.agent or {}, run.judge or {}
    if not agent and not judge:
        return []
    suites = (agent.get("suites") or {}).values()
    agent_backoff = float(agent.get("backoff_s") or 0.0)
    work_agent = max(0.0, sum(float(u.get("duration_s") or 0.0) for u in suites) - agent_backoff)
    work_judge = float(judge.get("requests_s") or 0.0)
    slot_agent = float(agent.get("waited_s") or 0.0)
    slot_judge = float(judge.get("slot_wait_s") or 0.0)
    rate = float(judge.get("rate_wait_s") or 0.0)
    backoff = agent_backoff + float(judge.get("backoff_s") or 0.0)
    parts = []
    if agent:
        parts.append(_("case runs {seconds}", seconds=duration(work_agent)))
    if judge:
        parts.append(_("judge requests {seconds}", seconds=duration(work_judge)))
    if slot_agent + slot_judge >= 0.05:
        parts.append(_("waiting for a free slot {seconds}", seconds=duration(slot_agent + slot_judge)))
    if rate >= 0.05:
        parts.append(_("waiting for judge.rpm {seconds}", seconds=duration(rate)))
    if backoff >= 0.05:
        parts.append(_("backing off after 429 and 5xx answers {seconds}", seconds=duration(backoff)))
    # TRANSLATORS: {parts} is a comma-separated list such as "case runs 12.0 s, judge requests 30.1 s".
    lines = [_("Where the time went, added up over what ran at once: {parts}", parts=listing(parts))]
    waits = {"agent": slot_agent, "judge": slot_judge, "rate": rate, "backoff": backoff}
    most = max(waits, key=lambda k: waits[k])
    if waits[most] < 1.0 or waits[most] < 0.2 * (work_agent + work_judge):
        return lines
    if most == "agent":
        lines.append(_("Most of the waiting was case runs waiting for a free slot: raising agent.concurrency (now {n}) would "
                       "shorten the run, if the model's quota allows.", n=agent.get("concurrency", "?")))
    elif most == "judge":
        lines.append(_("Most of the waiting was judge requests waiting for a free slot: raising judge.concurrency (now {n}) "
                       "would shorten the run, if the judge's quota allows.", n=judge.get("concurrency", "?")))
    elif most == "rate":
        lines.append(_("Most of the waiting was for judge.rpm: raise it if the judge's quota allows."))
    else:
        lines.append(_("Most of the waiting was backing off after 429 and 5xx answers: the model's quota or service is the "
                       "limit, not evalgate's settings."))
    return lines


def format_scores(score: float, threshold: float) -> tuple[str, str]:
    """Score and threshold as text, with as many digits as it takes to show a failure.

    Two decimals usually; more when rounding would print a failing 0.996 as `1.00 < 1.00`.
    """
    for digits in range(2, 7):
        s, t = f"{score:.{digits}f}", f"{threshold:.{digits}f}"
        if s != t or score >= threshold:
            return s, t
    return repr(score), repr(threshold)


def not_evaluated_reasons(case: CaseResult) -> dict[str, list[str]]:
    """Why criteria of the case were not evaluated: each reason with the criteria it stopped.

    Grouped, since one cause (no actual outputs, a judge down) usually stops several.
    """
    reasons: dict[str, list[str]] = {}
    for name, crit in case.criteria.items():
        if crit.status is Status.NOT_EVALUATED:
            reasons.setdefault(shown_reason(crit.error) or _("not evaluated"), []).append(name)
    return reasons


def reason_text(reason: str, criteria: list[str]) -> str:
    """`criterion, criterion: reason` (Japanese `criterion、criterion: reason`)."""
    return f"{listing(criteria)}: {reason}"


def incomplete_note(counts: Counts) -> str:
    """What a status line adds when passed or failed cases have a criterion NOT_EVALUATED:
    `; N incomplete, with a criterion not evaluated` (N is `counts.incomplete`, which includes
    the cases not evaluated at all), else nothing. A case whose deterministic criteria passed
    while every judge was skipped is PASSED, and must not read as fully judged."""
    if counts.incomplete <= counts.not_evaluated:  # nothing the "not evaluated" count does not say
        return ""
    return _("; {n} incomplete, with a criterion not evaluated", n=f"{counts.incomplete:,}")


def cost_cells(row: Any) -> dict[str, str]:
    """An efficiency metric against the baseline (evalgate.gate.efficiency.CostComparison) as short text,
    for every report: what, the change with its 95% interval, the tolerance, the outcome."""
    from evalgate.gate.efficiency import percent

    change = row.summary() if row.change is None else percent(row.change)
    if row.ci_low is not None and row.ci_high is not None:
        change += f" [{percent(row.ci_low)}, {percent(row.ci_high)}]"
    p = "" if row.p_adjusted is None else _(" (p = {p} after Holm)", p=f"{row.p_adjusted:.1e}" if row.p_adjusted < 0.001 else f"{row.p_adjusted:.3f}")
    outcome = {"fail": _("FAIL: significantly beyond") + p, "pass": _("within") + p, "reported": _("reported")}[row.status]
    return {
        "what": row.label,
        "change": change,
        "cases": f"{row.n_pairs:,}" + (_(" ({zeros} with 0 left out)", zeros=f"{row.zeros:,}") if row.zeros else ""),
        "tolerated": _("not gated") if row.tolerance is None else f"+{row.tolerance * 100:g}%",
        "outcome": outcome,
    }


COST_COLUMNS = ("what", "change", "cases", "tolerated", "outcome")


def efficiency_cells(values: dict[str, Any]) -> dict[str, str]:
    """ADK's efficiency values (evalgate.efficiency: per turn) as short text, for every report:
    tool and model calls, tokens, and seconds with where they went; `n/a` when not available."""
    from evalgate import efficiency as eff

    def number(name: str, digits: int) -> str:
        v = values.get(name)
        return _("n/a") if v is None or v.value is None else f"{v.value:,.{digits}f}"

    out = {"tool_calls": number(eff.TOOL_CALLS, 2), "model_calls": number(eff.MODEL_CALLS, 2)}
    tokens = values.get(eff.TOKENS)
    total = tokens.value if tokens is not None else None
    out["tokens"] = _("n/a") if total is None else f"{total:,.0f}" if total >= 100 else f"{total:,.1f}"
    seconds = values.get(eff.DURATION)
    if seconds is None or seconds.value is None:
        out["seconds"] = _("n/a")
    else:
        d = seconds.details
        parts = [(label, d.get(key)) for label, key in ((_("model"), "model_seconds"), (_("tools"), "tool_seconds"), (_("framework"), "framework_seconds"))]
        split = listing(f"{label} {v:.2f}" for label, v in parts if v is not None)
        out["seconds"] = _("{seconds} s", seconds=f"{seconds.value:.2f}") + (aside(split) if split else "")
    return out


def flaky_words(change: Any) -> Optional[str]:
    """A regressed case that fails on the default branch too: its record there, which the gate
    weighs (a flaky case is not blamed on the pull request alone)."""
    history = getattr(change, "flaky_history", None)
    if history is None:
        return None
    passed, runs = history
    return n_(
        "flaky on the default branch: passed {passed} of its last {n} run there",
        "flaky on the default branch: passed {passed} of its last {n} runs there",
        runs,
        passed=passed,
    )
