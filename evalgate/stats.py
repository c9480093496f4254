"""The gate's statistics: pure functions of numbers, no results or policy types.

Every choice below, and its reason; `evalgate.compare` says how the gate uses them.

The model of an unchanged agent
    A criterion's per-case value (its score, or a judge case's mean sample score) in run t
    is  v[i, t] = mu[i] + r[t] + e[i, t]:  the case's own level, a *run-level* shift shared
    by every case of the run (the judge's mood that day, a serving change), and the case's
    own noise (the agent's nondeterminism, the judge's sampling). The paired difference of
    a case between the baseline run and the PR run is then  d[i] = (r' - r) + (e' - e):
    its run-level part is one number shared by all cases, with variance 2 * sigma_r^2, and
    no number of cases averages it away. A paired test that leaves it out (as the first
    design did) reads a run-wide wobble as a significant drop: that is where unchanged PRs
    failed 3-7% of the time in a world with a moody judge.

`run_variance(rows)`: sigma_r^2 from history
    The flake ledger keeps each case's values over the last K default-branch runs. On the
    cases with complete histories over the last L runs, the two-way (case x run) analysis
    of variance without replication gives it by the method of moments: the run means
    vary by sigma_r^2 + sigma_e^2 / n, and the residual mean square estimates sigma_e^2,
    so sigma_r^2 = max(0, var(run means) - MSE / n), with L - 1 degrees of freedom. It is
    unbiased when cases are independent; default-branch runs also differ by real changes
    between commits, which only makes it larger (more cautious). Why not a likelihood
    (REML) fit: the moment estimate is closed form, exact for complete data, and L is at
    most `history_runs`.

`drop_test(diffs, margin, run_var, run_df)`: is the drop bigger than the margin?
    H0: the mean difference is at least -margin. The statistic is the mean of d + margin.
    Its within-run variance is the sign-flip (permutation) variance sum((d + margin)^2) /
    n^2: under H0 each shifted difference is symmetric about zero, so this is exact, and it
    stays honest for a handful of 0/1 differences where the centred variance of a t-test
    is too small. The run-level variance run_var (2 * sigma_r^2) is added. The reference
    distribution is Student's t with Welch-Satterthwaite degrees of freedom: n - 1 for the
    within part, run_df for the run part (infinite when it is an assumed value, not an
    estimate). With few runs of history the t's heavy tails are what keeps the false
    failure rate at alpha: sigma_r estimated from 5 runs can be half the truth.
    Closed form and deterministic: no random permutations, no seed.

`drop_interval(diffs, run_var, df)`: the 95% interval of the mean difference
    The same test inverted: the shifts s with |mean(d) - s| <= q * sqrt((v + (mean(d) - s)^2)
    / n + run_var), q the t quantile, v the population variance of d; that is
    mean(d) +- q * sqrt((v + n * run_var) / (n - q^2)). None when n <= q^2.

`break_hazards` and `poisson_binomial_sf`: stable cases breaking together
    A case is stable when it passed every one of its recorded runs (at least
    `stable_min_runs`); it has broken when every sample (or its one run) fails now. One
    stable case breaking is weak evidence: nondeterministic agents break a "stable" case
    now and then. Several breaking in one PR, when history says they almost never do, is
    strong, so a criterion's stable cases are tested together, not one by one under Holm.
    How often a case breaks differs from case to case (most almost never, a few often),
    so the ledger's histories of the criterion fit a population of break rates: the mean
    rate (with one pseudo-break in two pseudo-runs, so that a history without breaks does
    not make one impossible) and the analysis-of-variance estimate of how much rates vary
    between cases (the intra-case correlation rho, capped at MAX_RHO), i.e. a Beta(a, b).
    A stable case with s clean runs then breaks with chance a / (a + b + s): the longer
    its clean streak, the lower. The number of stable cases breaking by chance is
    Poisson-binomial over those chances, and p = P(X >= broken). Why not replay the
    ledger (how often did a case with 5 clean runs break in the 6th?): that measures
    shorter streaks than the current ones and, in flaky worlds, overstates the rate
    several-fold. Assumed: cases break
    independently given their rates; a run-wide judge mood that pushes stable cases
    below every sample makes breaks cluster, which this does not model (small where
    stable cases pass almost every sample).

`holm`: weighted Holm step-down adjustment across all the gate's tests.

`t_sf`, `t_quantile`: Student's t from the regularized incomplete beta function (continued
fraction), so the gate needs no numerical library.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

ROUND = 12  # differences are rounded to this many decimals: float noise in c - b is no move
MIN_HISTORY = 3  # runs of history needed to estimate the run-level variance
MAX_RHO = 0.5  # cap on the fitted heterogeneity of break rates: a few flaky cases in a short history cannot make clean streaks look safer than a+b >= 1 allows


# --- Student's t ------------------------------------------------------------------------


def _beta_cf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _beta_inc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_cf(a, b, x) / a
    return 1.0 - front * _beta_cf(b, a, 1.0 - x) / b


def t_sf(t: float, df: float) -> float:
    """P(T >= t) for Student's t with df degrees of freedom (df = inf: the normal)."""
    if math.isinf(df) or df > 1e7:
        return 0.5 * math.erfc(t / math.sqrt(2.0))
    tail = 0.5 * _beta_inc(df / 2.0, 0.5, df / (df + t * t))
    return tail if t >= 0 else 1.0 - tail


def t_quantile(p: float, df: float) -> float:
    """The t with P(T <= t) = p (bisection on t_sf; p in (0, 1))."""
    lo, hi = -1e3, 1e3
    for _ in range(200):
        mid = (lo + hi) / 2
        if 1.0 - t_sf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return (lo + hi) / 2


# --- the run-level variance ---------------------------------------------------------------


def run_variance(rows: Sequence[Sequence[float]]) -> tuple[float, int]:
    """(sigma_r^2, degrees of freedom) from complete case x run values (module docstring).

    `rows` holds one list per case, all of the same length L >= 2 (runs, oldest first).
    """
    n = len(rows)
    runs = len(rows[0]) if rows else 0
    if n < 2 or runs < 2 or any(len(r) != runs for r in rows):
        raise ValueError("run_variance needs at least 2 cases with the same number (>= 2) of runs")
    case_means = [sum(r) / runs for r in rows]
    run_means = [sum(r[t] for r in rows) / n for t in range(runs)]
    grand = sum(run_means) / runs
    s_runs = sum((m - grand) ** 2 for m in run_means) / (runs - 1)
    residual = sum((r[t] - case_means[i] - run_means[t] + grand) ** 2 for i, r in enumerate(rows) for t in range(runs))
    mse = residual / ((n - 1) * (runs - 1))
    return max(0.0, s_runs - mse / n), runs - 1


# --- the drop test ------------------------------------------------------------------------


def _satterthwaite(within: float, n: int, run_var: float, run_df: float) -> float:
    """Welch-Satterthwaite degrees of freedom of within + run_var (run_df = inf: a known value)."""
    parts = within * within / (n - 1)
    if run_var > 0 and not math.isinf(run_df):
        parts += run_var * run_var / run_df
    return (within + run_var) ** 2 / parts if parts > 0 else math.inf


def drop_test(diffs: Sequence[float], margin: float, run_var: float = 0.0, run_df: float = math.inf) -> tuple[float, float, float]:
    """(p, standard error, df): one-sided p that the mean difference is below -margin
    (module docstring). Needs at least 2 differences."""
    n = len(diffs)
    if n < 2:
        raise ValueError("drop_test needs at least 2 differences")
    shifted = [d + margin for d in diffs]
    stat = sum(shifted) / n
    within = sum(s * s for s in shifted) / (n * n)
    var = within + run_var
    df = _satterthwaite(within, n, run_var, run_df)
    if var <= 0:
        return (1.0 if stat >= 0 else 0.0), 0.0, df
    se = math.sqrt(var)
    return 1.0 - t_sf(stat / se, df), se, df


def drop_interval(diffs: Sequence[float], run_var: float, df: float, level: float = 0.95) -> tuple[Optional[float], Optional[float]]:
    """The two-sided `level` interval of the mean difference (module docstring); its lower
    end at level 0.90 is the one-sided 95% lower bound. None when n is too small."""
    n = len(diffs)
    if n < 2:
        return None, None
    q = t_quantile(0.5 + level / 2, df)
    if n <= q * q:
        return None, None
    mean = sum(diffs) / n
    v = sum((d - mean) ** 2 for d in diffs) / n
    half = q * math.sqrt((v + n * run_var) / (n - q * q))
    return max(-1.0, mean - half), min(1.0, mean + half)


# --- pooled breakage of stable cases --------------------------------------------------------


def break_hazards(histories: Sequence[Sequence[float]], streaks: Sequence[int]) -> tuple[list[float], float, float]:
    """(hazards, a, b): each stable case's chance of breaking in the next run, from the
    population of break rates fitted on every case's history (module docstring).

    `histories` are every case's recorded outcomes; `streaks` the current stable cases'
    numbers of recorded runs (all passed). An outcome has broken when it is 0.
    """
    cases = [(len(h), sum(o == 0.0 for o in h)) for h in histories if h]
    runs = sum(k for k, _ in cases)
    breaks = sum(x for _, x in cases)
    # Mean break rate with one pseudo-break in two pseudo-runs: history without a single
    # break does not make a break impossible.
    mean = (breaks + 1) / (runs + 2)
    rho = 0.0
    if len(cases) >= 2 and runs > len(cases):
        # The analysis-of-variance estimator of the intra-case correlation of binary
        # outcomes: how much more break counts vary between cases than chance makes them.
        n = len(cases)
        rate = breaks / runs
        between = sum(k * (x / k - rate) ** 2 for k, x in cases) / (n - 1)
        within = sum(x * (1 - x / k) for k, x in cases) / (runs - n)
        k0 = (runs - sum(k * k for k, _ in cases) / runs) / (n - 1)
        denominator = between + (k0 - 1) * within
        if denominator > 0:
            rho = min(MAX_RHO, max(0.0, (between - within) / denominator))
    if rho <= 0:
        return [mean] * len(streaks), math.inf, math.inf
    concentration = 1 / rho - 1
    a, b = mean * concentration, (1 - mean) * concentration
    return [a / (a + b + s) for s in streaks], a, b


def poisson_binomial_sf(broken: int, hazards: Sequence[float]) -> float:
    """P(X >= broken) for X the number of independent events with these probabilities."""
    if broken <= 0:
        return 1.0
    below = [1.0] + [0.0] * (broken - 1)  # P(X = j) for j < broken, built case by case
    for q in hazards:
        for j in range(broken - 1, 0, -1):
            below[j] = below[j] * (1 - q) + below[j - 1] * q
        below[0] *= 1 - q
    return min(1.0, max(0.0, 1.0 - sum(below)))


# --- multiplicity -------------------------------------------------------------------------


def holm(tests: dict[Any, tuple[float, float]]) -> dict[Any, float]:
    """Weighted Holm adjustment: key -> (p, weight) to key -> adjusted p.

    With equal weights this is Holm's step-down procedure: the i-th smallest of m p-values
    is multiplied by m - i + 1, and adjusted p-values never decrease along the order.
    """
    order = sorted(tests, key=lambda k: (tests[k][0] / tests[k][1], k))
    remaining = [0.0] * (len(order) + 1)
    for i in range(len(order) - 1, -1, -1):
        remaining[i] = remaining[i + 1] + tests[order[i]][1]
    out, running = {}, 0.0
    for i, key in enumerate(order):
        p, w = tests[key]
        running = max(running, min(1.0, p / w * remaining[i]))
        out[key] = running
    return out
