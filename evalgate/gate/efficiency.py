"""Cost and latency against the baseline (`gate.efficiency`): tokens, calls and seconds per turn, per suite.

The values are ADK's four efficiency metrics as `evalgate.efficiency` computes them, the
case values in the results (`CaseResult.efficiency[name].value`: per turn, a case's turns
and runs pooled). They are compared with the baseline's per suite; by default the change
is only reported. `gate.efficiency: {token_usage_v1: 0.15}` tolerates a 15% increase and
FAILs the suite when the increase is significantly beyond it.

Which cases
    The cases both runs share with unchanged expected data (as the criteria compare them)
    that have the value in both runs. A case without it (its agent failed, or the
    recorded `actual:` data has no usage) is left out.

The compared quantity: log ratios, and zeros
    Per case d = log(current / baseline), so a change is relative and every case weighs
    alike whatever its size (a long conversation's tokens do not drown the short ones).
    A log ratio of 0 is undefined, so:

    - tool calls and model calls (`tool_call_count_v1`, `inference_call_count_v1`): counts,
      often 0 (a turn that calls no tool), so d = log((current + 1) / (baseline + 1)). It is
      defined for every case, and it understates a change of a small count (2 -> 3 tool
      calls reads +33%, not +50%): it can only miss an increase, never invent one.
    - tokens and seconds (`token_usage_v1`, `invocation_duration_v1`): a case with 0 on
      either side (no usage reported, a turn shorter than the recorded millisecond) is
      left out and counted (`zeros`); adding one token or one millisecond would be an
      arbitrary scale.

    The change reported is exp(mean d) - 1: the typical case's relative change (the
    geometric mean of the case ratios), not the change of the suite's total. Its 95%
    interval is exp of the interval of mean d, less 1.

The test: paired, with the run-to-run variation
    The model is evalgate.gate.stats' for criteria, on the log scale: log x[i, t] = mu[i] + r[t]
    + e[i, t]. The mean of the paired log ratios, mean d, carries two kinds of noise:
    - the cases' own (e: an answer of another length, a trajectory that takes one more
      model call), variance 2 sigma_e^2 / n;
    - a run-level part r' - r shared by every case, variance 2 sigma_r^2, that no number of
      cases averages away: a shared machine busier during one run, a serving change.
    With history (the ledger's values of the metric for these cases: at least MIN_HISTORY
    complete runs for at least half of them, the criteria's rule), both are measured on the
    log values by the two-way (case x run) analysis of `stats.run_variance`: sigma_r^2 as
    there, sigma_e^2 as its residual mean square ((cases - 1) * (runs - 1) df). The cases'
    part then is the noise the same cases showed on the default branch, not the spread of
    the log ratios, which also holds how differently the cases changed (a PR that adds 20%
    to half the cases spreads them by 9% without any noise): the suite's cases are the
    population gated, not a sample of one. Without history, the log ratios' own spread
    (s^2 / n, n - 1 df) stands for the cases' part, which is more cautious, and sigma_r is
    assumed: ASSUMED_RUN_SD, 0.01 for counts and tokens (their run-wide level moves only
    with the model or its serving) and 0.20 for seconds (a shared machine).
    H0: mean d <= log(1 + tolerance); one-sided; Student's t with Welch-Satterthwaite
    degrees of freedom; closed form. The 95% interval is mean d +- t * se. With a tolerance
    the p-value joins the gate's Holm family (weight 1), and the suite FAILs when the
    adjusted p is below alpha. A run-level sigma_r estimated from 10 runs is uncertain (9
    df), and the t's heavy tails pay for it.

Cases that vary little: the weighed test beside it (with history)
    The mean weighs every case alike, so a few cases whose trajectory wanders (0-2 extra
    model calls at random, each +35% of the turn's tokens) set its noise: in
    bench/bench_cost.py's wandering world a fifth of the cases give 91% of the variance of
    mean d, and the mean's test caught +20% on half the cases in 78.5% of PRs (goal 95%).
    The ledger shows which cases those are. So, with a tolerance and the cases' own
    histories (`own_rows`: MIN_HISTORY runs before the baseline's for at least half the
    cases and WEIGHED_MIN_CASES), a second test reads each case in units of its own
    run-to-run spread (`stats.case_scales` on the log levels: the partial-drop test's
    scales, shrunk toward the typical one), (d - log(1 + tolerance)) / (scale * sqrt 2)
    clipped at +-HUBER_K and weighed by 1 / scale (`stats.steady_weights`): the score test
    for a shift of the same size on every case, in which a case that moves little counts
    more, and a case whose history understated its spread counts at most HUBER_K
    (`weighed_test`). Its variance is the model's (each clipped, standardized difference
    has variance at most 1 when the scale is right), not the differences' own spread, for
    the reason the mean's is the ledger's; the run-level part is `stats.steady_run_variance`,
    t with Satterthwaite df. Exactly at the tolerance its statistic is 0 (p = 0.5). The
    two join Holm as one test, p = 2 * min (Bonferroni), and the FAIL reason says when the
    weighed one saw it. Its estimand is a weighted location, not the typical case's
    change: a PR that raises the cases that vary little beyond the tolerance and lowers
    the wandering ones can FAIL while the reported geometric mean is within it; the
    reported change and interval stay the mean's. Where most cases never move (counts of
    a deterministic agent), the mean's test sees any change and this one is skipped.

Measured (bench/bench_cost.py, 150 cases, 10 runs of history, tolerance 5%, alpha 0.01, 7
tests in Holm, 200 PRs per row, seed 1; the mean's test alone -> with the weighed test)
    No unchanged PR failed in any world, nor one exactly at the tolerance (smallest adjusted
    p 0.046; in 2,000 scratch PRs per world at the tolerance, 0.2-0.3% had p below 0.01 /
    7). +20% tokens on half the cases: steady world (every case's tokens vary 5%) 98.5% ->
    99.0%; wandering (a fifth of the cases take extra model calls at random) 78.5% -> 99.5%;
    wandering with a 1% run-level wobble 34.5% -> 29.0%. The wobble is the run-level part,
    which no weighing of cases removes: against one baseline run, r' - r has sd 1.4% where
    +20% on half exceeds the tolerance by 4.2% (log), so even a test that knew sigma_r and
    saw no case noise would FAIL only 48% of those PRs at 0.01 / 7 (scratch computation, 400
    PRs); knowing sigma_r instead of estimating it from 10 runs changes the mean's test by
    under a point. In that world the weighed test adds nothing and its half of the
    Bonferroni split costs the difference. Reaching 95% there needs a narrower reference
    than one baseline run (the default branch's level, which stats' docstring declines for
    FAIL tests: a regression merged earlier would be blamed on the next PR) or several runs on
    each side (`num_runs`), whose run shifts average.

What is not accounted for
    The run part is one shift of every case at once, and the cases' part the noise the
    default branch showed. Load that comes and goes within a run (one case slowed by a
    neighbour's job) counts as the cases' noise, measured as such when the default branch's
    runs saw the same; a pull request whose own run is noisier than the branch's was (a
    burst on the machine during some of its cases, an agent made more erratic) is not
    modelled beyond that, and near the tolerance that can read as an increase. Seconds
    include waiting for the model's service (queueing, retries). A ledger written before
    this module kept no efficiency values: until MIN_HISTORY runs are recorded, the
    cautious no-history test applies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Literal, Optional, Sequence

from evalgate.efficiency import DURATION, METRICS, MODEL_CALLS, TOKENS, TOOL_CALLS
from evalgate.results import SuiteResult
from evalgate.gate.stats import (
    EPSILON,
    HUBER_K,
    MIN_HISTORY,
    case_scales,
    run_variance,
    satterthwaite,
    steady_run_variance,
    steady_weights,
    t_quantile,
    t_sf,
)
from evalgate.gate.model import EfficiencyPolicy
from evalgate.gate.words import fmt_p
from evalgate.i18n import _, mark, n_

COUNTS = (TOOL_CALLS, MODEL_CALLS)  # compared as log((x + 1) / (y + 1))
WEIGHED_MIN_CASES = 10  # cases with an own history needed for the weighed test
ASSUMED_RUN_SD = {TOOL_CALLS: 0.01, MODEL_CALLS: 0.01, TOKENS: 0.01, DURATION: 0.20}  # log scale, without history
LABELS = {  # translated where shown (CostComparison.label)
    TOKENS: mark("tokens per turn"),
    MODEL_CALLS: mark("model calls per turn"),
    TOOL_CALLS: mark("tool calls per turn"),
    DURATION: mark("agent seconds per turn"),
}


@dataclass
class CostComparison:
    """One efficiency metric of one suite against the baseline (module docstring)."""

    suite: str
    metric: str
    tolerance: Optional[float]  # None: reported, not gated
    n_pairs: int  # cases compared
    zeros: int = 0  # cases left out for a 0 on a side (tokens, seconds)
    change: Optional[float] = None  # exp(mean log ratio) - 1
    ci_low: Optional[float] = None  # 95% interval of the change
    ci_high: Optional[float] = None
    p_value: Optional[float] = None  # one-sided: the increase is beyond the tolerance (None without a tolerance); with weighed_p, 2 * min of the two
    mean_p: Optional[float] = None  # the typical case's test (mean log ratio) alone
    weighed_p: Optional[float] = None  # the cases weighed by their own spread, outliers capped (None: not enough history)
    weighed_cases: int = 0  # cases with an own history in that test
    weighed_runs: int = 0  # ... over this many runs before the baseline's
    p_adjusted: Optional[float] = None  # Holm, in the gate's family
    se: Optional[float] = None  # of the mean log ratio: the cases' spread and the run-to-run part together
    run_sd: Optional[float] = None  # run-to-run sd of the log level
    history: int = 0  # runs it was measured on; 0: assumed (ASSUMED_RUN_SD)
    status: Literal["reported", "pass", "fail"] = "reported"
    reasons: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """`tokens per turn`, in the report's language."""
        return _(LABELS[self.metric])

    def summary(self) -> str:
        """`tokens per turn +34% [+28%, +40%] over 120 cases`."""
        if self.change is None:
            return n_("{what}: {n} case compared, too few to estimate", "{what}: {n} cases compared, too few to estimate", self.n_pairs, what=self.label)
        change = percent(self.change)
        if self.ci_low is not None and self.ci_high is not None:
            change = f"{change} [{percent(self.ci_low)}, {percent(self.ci_high)}]"
        return n_("{what} {change} over {n} case", "{what} {change} over {n} cases", self.n_pairs, what=self.label, change=change)


def percent(x: Optional[float]) -> str:
    """A relative change as `+34%`, `-3.2%` (one decimal below 10%)."""
    if x is None:
        return "n/a"
    value = x * 100
    text = f"{value:+.1f}%" if abs(value) < 10 else f"{value:+.0f}%"
    return "+0%" if text in ("+0.0%", "-0.0%") else text


def log_level(metric: str, value: Optional[float]) -> Optional[float]:
    """A value on the log scale the test works on (module docstring: zeros); None when undefined."""
    if value is None or isinstance(value, bool) or not math.isfinite(value) or value < 0:
        return None
    if metric in COUNTS:
        return math.log(value + 1.0)
    return math.log(value) if value > 0 else None


def log_ratio(metric: str, baseline: Optional[float], current: Optional[float]) -> Optional[float]:
    """d for one case: log(current / baseline), counts with one added; None when undefined."""
    b, c = log_level(metric, baseline), log_level(metric, current)
    return None if b is None or c is None else c - b


@dataclass
class Spread:
    """What the ledger says about a metric's noise (log scale), for the cases compared."""

    run_var: float  # sigma_r^2: one run's shift of every case at once
    run_df: float
    case_var: float  # sigma_e^2: a case's own variation from run to run (the residual mean square)
    case_df: float
    runs: int


def run_spread(histories: Sequence[Optional[Sequence[Optional[float]]]], metric: str) -> Optional[Spread]:
    """The metric's run-to-run variation from the cases' ledger histories (raw values, oldest
    first, the baseline's run last), or None when fewer than MIN_HISTORY complete runs exist
    for at least half the cases (and 2): the criteria's rule. sigma_r^2 is stats.run_variance
    on the log levels; sigma_e^2 the two-way (case x run) residual mean square it removes."""
    logs = [[log_level(metric, v) for v in (h or [])] for h in histories]
    longest = max((len(h) for h in logs), default=0)
    for runs in range(longest, MIN_HISTORY - 1, -1):
        rows: list[list[float]] = [h[-runs:] for h in logs if len(h) >= runs and all(v is not None for v in h[-runs:])]  # type: ignore[misc]
        if len(rows) >= max(2, len(histories) / 2):
            variance, _means, start = run_variance(rows)
            n = len(rows)
            case_means = [sum(r) / runs for r in rows]
            run_means = [sum(r[t] for r in rows) / n for t in range(runs)]
            grand = sum(run_means) / runs
            residual = sum((r[t] - case_means[i] - run_means[t] + grand) ** 2 for i, r in enumerate(rows) for t in range(runs))
            case_df = (n - 1) * (runs - 1)
            return Spread(variance, float(runs - (2 if start else 1)), residual / case_df, float(case_df), runs)
    return None


def ratio_test(
    ratios: Sequence[float], tolerance: Optional[float], run_var: float, run_df: float, spread: Optional[Spread] = None
) -> dict[str, Optional[float]]:
    """The change, its 95% interval, the standard error and (with a tolerance) the one-sided p
    from the cases' log ratios; run_var is the run-level variance of their mean (2 sigma_r^2).

    The cases' own part of the variance of mean d: with `spread` (history), 2 sigma_e^2 / n,
    the cases' noise measured on the ledger; without, the log ratios' own spread s^2 / n,
    which also holds how differently the cases changed (more cautious). Fewer than 2 ratios
    and no history: the change only."""
    n = len(ratios)
    out: dict[str, Optional[float]] = {"change": None, "ci_low": None, "ci_high": None, "p": None, "se": None}
    if not n:
        return out
    mean = sum(ratios) / n
    out["change"] = math.expm1(mean)
    if spread is not None:
        within, within_df = 2 * spread.case_var / n, spread.case_df
    elif n >= 2:
        within, within_df = sum((d - mean) ** 2 for d in ratios) / (n * (n - 1)), float(n - 1)
    else:
        return out
    var = within + run_var
    parts = (within * within / within_df if within > 0 else 0.0) + (run_var * run_var / run_df if run_var > 0 and not math.isinf(run_df) else 0.0)
    df = var * var / parts if parts > 0 else math.inf
    se = math.sqrt(var)
    out["se"] = se
    q = t_quantile(0.975, df) if se > 0 else 0.0
    out["ci_low"], out["ci_high"] = math.expm1(mean - q * se), math.expm1(mean + q * se)
    if tolerance is not None:
        # H0: mean d <= log(1 + tolerance); one-sided.
        stat = mean - math.log1p(tolerance)
        out["p"] = t_sf(stat / se, df) if se > 0 else (0.0 if stat > 0 else 1.0)
    return out


def own_rows(
    histories: Sequence[Optional[Sequence[Optional[float]]]], baseline: Sequence[float], metric: str
) -> tuple[list[int], list[list[float]]]:
    """(positions, rows): the cases' log levels over the most recent runs before the
    baseline's that at least half the cases (and WEIGHED_MIN_CASES) have complete, at least
    MIN_HISTORY of them; ([], []) when too few. The baseline's run is set aside where the
    ledger's last value of every case is its baseline value: a case whose baseline was an
    outlier must not measure its own spread (evalgate.gate.ledger.own_histories, the same rule)."""
    raw = [list(h or []) for h in histories]
    with_last = [(h[-1], b) for h, b in zip(raw, baseline) if h]
    if with_last and all(v is not None and abs(v - b) <= EPSILON * max(1.0, abs(b)) for v, b in with_last):
        raw = [h[:-1] for h in raw]
    logs = [[log_level(metric, v) for v in h] for h in raw]
    longest = max((len(h) for h in logs), default=0)
    for runs in range(longest, MIN_HISTORY - 1, -1):
        chosen = [i for i, h in enumerate(logs) if len(h) >= runs and all(v is not None for v in h[-runs:])]
        if len(chosen) >= max(WEIGHED_MIN_CASES, len(histories) / 2):
            return chosen, [[float(v) for v in logs[i][-runs:]] for i in chosen]  # type: ignore[arg-type]
    return [], []


def weighed_test(ratios: Sequence[float], scales: Sequence[float], tolerance: float, run_var: float, run_df: float) -> float:
    """One-sided p that the log ratios, each case weighed by its own run-to-run spread and
    outliers capped, lie beyond log(1 + tolerance) (module docstring: "Cases that vary
    little"). Each case's (d - log(1 + tolerance)) / (scale * sqrt 2) is clipped at +-HUBER_K
    and weighed by stats.steady_weights; the sum's variance is the model's: each clipped,
    standardized difference at most 1 (a case's spread as the ledger measured it, not the
    differences' own, which would count how differently the cases changed as noise), plus
    the run-level part n^2 * run_var (stats.steady_run_variance)."""
    if len(ratios) != len(scales) or len(ratios) < 2:
        raise ValueError("weighed_test needs at least 2 log ratios, one scale each")
    edge = math.log1p(tolerance)
    total = within = 0.0
    for d, s, w in zip(ratios, scales, steady_weights(scales)):
        z = (d - edge) / max(s * math.sqrt(2), EPSILON)
        total += w * max(-HUBER_K, min(HUBER_K, z))
        within += w * w
    n = len(ratios)
    run = n * n * run_var
    df = satterthwaite(within / (n * n), n, run / (n * n), run_df)
    return t_sf(total / math.sqrt(within + run), df)


HistoryOf = Callable[[str, str, str], Optional[Sequence[Optional[float]]]]  # (eval_set_id, eval_id, metric) -> ledger values


def compare_suite(current: SuiteResult, baseline: SuiteResult, policy: EfficiencyPolicy, history: Optional[HistoryOf] = None) -> list[CostComparison]:
    """Each efficiency metric both runs have, compared (module docstring). Pure; the Holm
    adjustment and the verdict are the caller's (evalgate.gate.compare)."""
    from evalgate.gate.values import compared_parts, same_data  # here: evalgate.gate.values imports this package, which imports this module

    base = {(c.eval_set_id, c.eval_id): c for c in baseline.cases}
    parts = compared_parts(baseline, current)
    out = []
    for metric in METRICS:
        keys, ratios, zeros = [], [], 0
        for case in current.cases:
            old = base.get((case.eval_set_id, case.eval_id))
            if old is None or not same_data(old, case, parts):
                continue
            b, c = old.efficiency.get(metric), case.efficiency.get(metric)
            if b is None or c is None or b.value is None or c.value is None:
                continue
            d = log_ratio(metric, b.value, c.value)
            if d is None:
                zeros += 1
                continue
            keys.append((case.eval_set_id, case.eval_id))
            ratios.append(d)
        if not ratios and not zeros:
            continue
        comp = CostComparison(suite=current.name, metric=metric, tolerance=policy.tolerance(metric), n_pairs=len(ratios), zeros=zeros)
        spread = run_spread([history(s, e, metric) for s, e in keys], metric) if history is not None and keys else None
        if spread is not None:
            sigma2, run_df, comp.history = spread.run_var, spread.run_df, spread.runs
        else:
            sigma2, run_df = ASSUMED_RUN_SD[metric] ** 2, math.inf
        comp.run_sd = math.sqrt(sigma2)
        result = ratio_test(ratios, comp.tolerance, 2 * sigma2, run_df, spread)
        comp.change, comp.ci_low, comp.ci_high, comp.se, comp.mean_p = (result[k] for k in ("change", "ci_low", "ci_high", "se", "p"))
        comp.p_value = comp.mean_p
        if zeros:
            comp.reasons.append(n_("{n} case with 0 on a side left out (a log ratio is undefined)", "{n} cases with 0 on a side left out (a log ratio is undefined)", zeros))
        comp.reasons.append(
            n_("run-to-run sd {sd} measured on {n} runs", "run-to-run sd {sd} measured on {n} runs", comp.history, sd=f"{comp.run_sd:.1%}")
            if comp.history
            else _("run-to-run sd {sd} assumed (no history)", sd=f"{comp.run_sd:.0%}")
        )
        if comp.tolerance is not None and comp.mean_p is not None and history is not None:
            _weigh(comp, ratios, [history(s, e, metric) for s, e in keys], [base[k].efficiency[metric].value for k in keys])
        out.append(comp)
    return out


def _weigh(comp: CostComparison, ratios: list[float], histories: list[Optional[Sequence[Optional[float]]]], baseline: list[float]) -> None:
    """The weighed test beside the mean's (module docstring), when the cases' own histories
    allow it: p_value becomes 2 * min of the two (one entry in Holm)."""
    chosen, rows = own_rows(histories, baseline, comp.metric)
    if not chosen:
        return
    scales = case_scales(rows)
    if sorted(scales)[len(scales) // 2] <= EPSILON:  # most cases never move: the mean's test sees any change
        return
    run_var, run_df = steady_run_variance(rows, scales)
    assert comp.tolerance is not None and comp.mean_p is not None
    comp.weighed_p = weighed_test([ratios[i] for i in chosen], scales, comp.tolerance, run_var, run_df)
    comp.weighed_cases, comp.weighed_runs = len(chosen), len(rows[0])
    comp.p_value = min(1.0, 2 * min(comp.mean_p, comp.weighed_p))
    comp.reasons.append(
        n_(
            "{n} case weighed by its own run-to-run spread on {runs} runs, outliers capped: p = {p_weighed}; "
            "the typical case: p = {p_mean}; together p = {p}",
            "{n} cases, each weighed by its own run-to-run spread on {runs} runs, outliers capped: p = {p_weighed}; "
            "the typical case: p = {p_mean}; together p = {p}",
            comp.weighed_cases,
            runs=comp.weighed_runs,
            p_weighed=fmt_p(comp.weighed_p),
            p_mean=fmt_p(comp.mean_p),
            p=fmt_p(comp.p_value),
        )
    )


def decide(comp: CostComparison, alpha: float, gating: bool = True) -> Optional[str]:
    """Sets the status once p_adjusted is known; returns the reason a suite FAILs, or None.
    `gating` False (absolute mode): reported whatever the tolerance."""
    if comp.tolerance is None or not gating:
        comp.status = "reported"
        if gating:
            comp.reasons.insert(0, _("{summary} (reported, not gated)", summary=comp.summary()))
        else:
            comp.reasons.insert(0, _("{summary} (absolute mode: reported, not gated)", summary=comp.summary()))
        return None
    fields = dict(summary=comp.summary(), tolerance=f"+{comp.tolerance * 100:g}%", key=f"gate.efficiency.{comp.metric}")
    if comp.p_adjusted is not None and comp.p_adjusted < alpha:
        comp.status = "fail"
        if comp.weighed_p is not None and comp.mean_p is not None and comp.weighed_p < comp.mean_p:
            text = _(
                "{summary}: an increase beyond the tolerated {tolerance} ({key}), significant with each case weighed by "
                "its own run-to-run spread, p = {p} after Holm",
                **fields,
                p=fmt_p(comp.p_adjusted),
            )
        else:
            text = _("{summary}: a significant increase beyond the tolerated {tolerance} ({key}), p = {p} after Holm", **fields, p=fmt_p(comp.p_adjusted))
        comp.reasons.insert(0, text)
        return text
    comp.status = "pass"
    if comp.p_value is None:
        comp.reasons.insert(0, _("{summary}: too few cases to test against the tolerated {tolerance} ({key})", **fields))
    elif comp.p_adjusted is None:
        comp.reasons.insert(0, _("{summary}: within the tolerated {tolerance} ({key})", **fields))
    else:
        comp.reasons.insert(0, _("{summary}: within the tolerated {tolerance} ({key}), p = {p} after Holm", **fields, p=fmt_p(comp.p_adjusted)))
    return None
