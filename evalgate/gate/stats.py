"""The gate's statistics: pure functions of numbers, no results or policy types.

Every choice below, and its reason; the gate's tests (evalgate.gate: drop, level, partial, breakage) say how the gate uses them.

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
    When the branch moved within the window (a merged change, a model update), the run
    means vary around two levels, and their spread around one mean overstates sigma_r (in
    tests/test_compare.py a move of 0.25 three runs back makes it 0.126 where the mood's is
    0.035), so that no drop after a move could FAIL. So when `level_start` finds a move at
    MOVE_ALPHA (0.1% per split, two-sided), the run means' spread is taken around each
    level, with L - 2 df. Stricter than the level's
    LEVEL_ALPHA because a split found by chance is the one that shrinks the spread most,
    and here a too-small sigma_r would fail unchanged PRs: at 1% per split, drifting
    serving's unchanged PRs failed 3% (1% measuring across); at 0.1%, as before (0.6% of
    500). Measured (`bench_gate.py --moved`): a 0.18 judge drop after the branch improved
    by about 0.1 now FAILs in 12% of PRs (0% before; 21% at 1% per split).

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

`level_differences`: the drop against the default branch's level
    PASS says the data rule out a drop bigger than the resolution. Against the baseline
    run alone, the reference carries one run's whole run-level wobble: the difference's
    run part has variance 2 * sigma_r^2, and with a moody judge (sigma_r ~0.03) one run
    cannot rule out 0.1 on about one unchanged pull request in seven. The ledger holds the
    same cases' values in the default branch's earlier runs, so the reference can be their
    level: each case's mean over the baseline's run and the L - 1 runs before it. The run
    part of current - level is then r' - mean(r), variance sigma_r^2 * (1 + 1/L): with 10
    runs, 1.35x narrower. The within part is left to the differences' own spread, as in
    `drop_interval`, with Satterthwaite df.
    The level is only the base commit's level when the default branch did not move within
    the window (a merged change, a model update). `level_start` looks for the most recent
    move: the series of run means (the earlier runs', then the baseline's) split into an
    earlier and a later part at every point, each split's difference of means in t units
    of the parts' pooled spread (L - 2 df), and the most significant split beyond LEVEL_ALPHA
    (1%, two-sided, per split: about 5-9% of unchanged histories show a "move", which only
    shortens the level) starts the level; a move at the last run leaves the baseline run
    alone, as before. A move too small to find biases the level by part of it, which is why
    the level decides only between PASS and INCONCLUSIVE: the FAIL test stays against the
    baseline run, so a regression merged earlier within the window (that passed the gate)
    is never blamed on the next pull request, which at worst reads INCONCLUSIVE, with the
    reason naming the level. Measured (`bench_gate.py --moved`: moody judge, a move of about
    0.1 three runs back, 100 PRs): an unchanged PR after the branch regressed reads
    INCONCLUSIVE 8% (19% against the baseline run alone; 24% with sigma_r measured across
    the move); a 0.18 drop after the branch improved PASSes 4% (0%). Why not use the level
    for the FAIL test too (1.35x more power): that blame. Why not a local-level (random walk) model: its step variance
    is not estimable from 10 runs with any precision.

`break_hazards`, `dip_hazards` and `break_test`: stable cases breaking together
    A case is stable when it passed every one of its recorded runs (at least
    `stable_min_runs`; passed: a majority of its samples, or its one run); it has broken
    when every sample (or its one run) fails now. One stable case breaking is weak
    evidence: nondeterministic agents break a "stable" case now and then. Several breaking
    in one PR, when history says they almost never do, is strong, so a criterion's stable
    cases are tested together, not one by one under Holm.
    The chance that a stable case breaks is built from two things history measures:
    - how often it fails (no majority). Rates differ from case to case (most almost never,
      a few often), and a stable case is a mixture: a robust one, or a flaky one that was
      lucky. So the ledger's histories of the criterion (each case's runs and failures)
      fit a population of failure rates without assuming its shape: the nonparametric
      maximum-likelihood mixture (Kiefer-Wolfowitz) on a log-spaced grid of GRID rates, by
      EM. A stable case with s clean runs then fails with chance E[p (1-p)^s] / E[(1-p)^s]
      under that mixture: the longer its streak, the more surely robust. Rates start at
      one pseudo-failure in runs + 2 pseudo-runs, so a history without failures does not
      make one impossible.
    - of the runs that failed, the share that failed every sample: 1 with one sample or
      run; otherwise measured on the cases that failed once in their history (a stable
      case's failures are of that kind: cases that fail often fail softer, a judge split
      on a middling answer): Beta(broke + 1, did not + 1), a uniform prior (`break_share`).
      Those failures are few (about 16 per PR in bench_gate's flaky world), so the share is
      uncertain, and `share_break_test` averages p over SHARE_POINTS (20) quantiles of that
      Beta (the p of the share's posterior predictive), where it took the share at its
      upper 90% bound before: that bound overstated the judge's chance breaks 1.9x in the
      flaky world (0.73 expected per unchanged PR, 0.39 happened; the mean share is 0.33
      where 0.24 happened) and missed 5% of PRs breaking 5 of 136 stable judge cases.
      Measured alone (scratch runs, 300 unchanged PRs per world, share of p below 0.05 /
      0.01 / 0.0014, the bound -> the average): flaky 1.3 / 0 / 0 -> 4 / 0.3 / 0%, moody
      judge 0.7 / 0 / 0 -> 3.7 / 0.3 / 0%, steady 0.7 / 0 / 0 -> 2.7 / 0 / 0%; 4% of the
      flaky world's stable judge cases broken, caught at 0.01/7 in 93 -> 98% of 150 PRs.
      The expected count the comment shows (`break_hazards`) uses the share's mean.
      Failing is the event stability is defined by; failing every sample is the sharper
      event the test counts.
    Why not a Beta population fitted by moments (as before): real populations are
    two-humped (robust and flaky), which a Beta fits badly; and rating "every sample
    failed" on histories selected by "a majority passed" counted flaky cases that were
    never stable. Together they overstated chance breaks 1.5x (trajectories) to 3x (judges)
    in bench_gate's worlds; this is within 10% for trajectories (for judges see the share
    above). Why not replay the ledger (how often did a case with 5 clean runs break in the
    6th?): that measures shorter streaks than the current ones. Assumed: cases break
    independently given their rates, and the share of failures that fail every sample is
    one for the criterion; a run-wide
    judge mood that pushes stable cases under every sample makes breaks cluster, which
    this does not model (small where stable cases pass almost every sample).
    `break_test` weighs each break by how unlikely it was, log(1 + BREAK_SHARE / chance),
    and p = P(T >= observed) for T the sum of the breaks' weights, cases breaking
    independently with their chances: exact (a convolution over the weights rounded to
    WEIGHT_STEP), no simulation. It is the likelihood-ratio statistic against a change that
    breaks BREAK_SHARE (10%) of the stable cases at random: a break of a case that almost
    never breaks is strong evidence, one of a case that often does is weak. With equal
    chances (pass/fail criteria, equal streaks) T is the count times a constant, and p the
    count's Poisson-binomial tail. BREAK_SHARE matters little: 4%, 10% and 30% caught
    95.0, 94.7 and 95.3% of the flaky agent's ROUGE breakage (300 PRs, a scratch run of
    an earlier form of `dip_hazards`).

    A continuous criterion's stable cases (a score such as ROUGE: `dip_hazards`)
    The chance from outcomes alone is the same for every stable case with the same streak,
    but a stable case at 0.95 hardly ever falls under a threshold of 0.5 while one at 0.55
    does, and a case that dipped now and then (an off run that stayed above the threshold)
    is likelier to dip below it than one that never did. So for criteria whose values are
    scores (not judged), the ledger's values give each stable case its own chance:
    - dips: runs more than DIP_Z (6) of the criterion's typical sd (the median over cases of
      1.4826 x each case's median absolute deviation) below the case's upper quartile. Not
      the case's own median and sd: a case that dips often has both pulled by its dips, and
      hid 0.2-deep dips in half its runs that way. At 4 typical sds the ordinary noise of
      the noisier cases counted as dips (rates 1.9x the truth in bench_gate's flaky world);
      at 6, their part of the total came within 4% of the truth (the noise part errs high).
    - How often a case dips differs from case to case, so every case's dip count fits the
      same nonparametric mixture as failures do (`rate_mixture`), and the case's own count
      gives its rate (`posterior_rate`). How deep a dip goes is the criterion's: the share
      of all recorded dips deeper than the case's room (upper quartile - threshold), half a
      pseudo-dip each side.
    - Not dipping, it falls under the threshold by its noise: normal, from its median, sd
      the larger of its own and the typical one. Stable cases near the threshold are
      partly the ones whose noise happened to stay high, so their own sd reads low.
    - chance = rate x share deeper + (1 - rate) x noise chance.
    On a simulated population with known chances (tests/test_compare.py) the total is
    1.18x the truth, erring high. With `num_runs` the value is the runs' mean and a break is
    every run failing, which the mean falling under the threshold always accompanies: the
    chance errs high again.
    Measured in scratch runs of bench_gate's flaky agent, this test alone at 0.01/7:
    - 4% of stable ROUGE cases broken: caught in 97% of 200 PRs (counting breaks: 80%);
    - unchanged, 500 PRs, p below 0.05 / 0.01 / 0.0014 / 0.0005: 5.6 / 1.6 / 0.4 / 0.2%
      (counting: 3.6 / 0.8 / 0.2 / 0%; the test with the simulation's true chances, 300
      PRs: 6 / 2 / 0.3-0.7%): near nominal, as close as the true chances come.
    The whole gate (bench/README.md, 500 PRs, old -> new): the flaky agent's ROUGE breakage
    caught 76.2 -> 96.4%, false FAIL 0.2 -> 0.4%; drifting serving 99.0 -> 100%, 0.4 -> 0.6%.
    Variants measured and not taken: levels and thresholds from each case's own median and
    sd (dips of flaky cases hidden: 0.6% of unchanged PRs below 0.0014); the outcome
    chance spread over the cases by margin alone (93% caught); deviations pooled in units
    of each case's sd (a robust case's first off run looks impossible: 4% below 0.0014);
    any of these rescaled to the outcome model's total (the cases misjudged stay
    misjudged: 1% below 0.0014).

Partial drops of continuous criteria: `case_scales`, `lopsided_test`, `steady_drop_test`
    A pull request that makes a quarter of the cases worse by 0.1 moves the mean by 0.025.
    When the serving drifts from run to run by about as much, the mean drop test must
    allow for that drift and cannot see it; when flaky cases now and then fall far (an
    agent's off run), their outliers swamp it. Cases differ in how much they move between
    runs, and the ledger measures it, so for criteria whose values are scores (some
    strictly between 0 and 1) and are not judged, two tests look at the cases each in
    units of its own spread:
    - `case_scales`: each case's run-to-run sd, from its values in the ledger's runs
      before the baseline's (the baseline must not measure its own spread: an outlier
      baseline would make its case look ordinary), less each run's effect (the median
      deviation of the run's cases: a run moving every case, or a few cases moving, do not
      bias it). With about 9 runs an sd is rough, so each case's variance is pulled toward
      the criterion's median by SCALE_PRIOR_RUNS pseudo-runs.
    - `lopsided_test`: the run's common shift (the median difference) set aside, how many
      cases fell beyond SHIFT_Z of their own spread (x sqrt 2, a difference of two runs)
      and how many rose. An unchanged agent's baseline and pull-request runs are
      exchangeable for each case, so a case moving that far is as likely to rise as to
      fall, drift or not, flaky or not: p is the binomial tail of the falls among the
      moves. It sees a shift the drift hides. It assumes the drift moves cases alike
      (additive); a judge's mood moves a flaky case more than a steady one, which is why
      judged criteria are left out.
    - `steady_drop_test`: the paired differences in units of each case's spread, clipped
      at HUBER_K (Huber's psi), summed; its sign-flip variance plus a run-level part, t
      with Satterthwaite df as the drop test. Steady cases count fully and a flaky case's
      off run counts at most HUBER_K, so it sees a shift that the flaky cases' outliers
      hide from the mean. Each case weighs 1 / its scale (`steady_weights`, mean 1): a drop
      of 0.1 is 7 of its own sds for a case that moves by 0.01 and 1.2 for one that moves
      by 0.06, and weighing each case's clipped value by 1 / scale is the score test
      (locally most powerful) for a drop of the same size in score on the cases it hits.
      Equal weights waste the steady cases' evidence. Measured (scratch runs, seed 1, the
      same 200 PRs): the flaky agent's 0.1 drop on a quarter of the cases caught 88 ->
      93.5%, drifting serving 92.5% both; 500 unchanged PRs per world, p below 0.05 / 0.01
      / 0.0014: steady 4.4 / 1.0 / 0.2 -> 2.6 / 0.8 / 0.2, flaky agent 3.0 / 0.8 / 0 ->
      4.0 / 0.6 / 0.2, drifting serving 3.6 / 0.8 / 0.2 -> 3.8 / 0.8 / 0.2, large 4.0 /
      0.8 / 0.2 -> 3.6 / 0.4 / 0.2%. The prior in `case_scales` keeps every scale at
      least sqrt(3 / 11), about half, of the typical one (9 runs), so a case that happened
      not to move in its few runs does not take the test over. Its estimand is a weighted
      one (steady cases weigh more), which is why it is an extra test and the mean drop
      test still decides PASS and INCONCLUSIVE.
    - `steady_run_variance`: that run-level part is measured the way the test reads the
      cases: the ledger's values (before the baseline's), each in units of its case's
      spread from the case's median, clipped at HUBER_K, weighted as the test weighs it,
      through `run_variance`. A drift
      moves every case by drift / scale and is seen whole (a drift of sd 0.01 on cases of
      sd 0.01-0.04 reads 70x a quiet history's, in tests/test_compare.py); a flaky case's
      off run counts at most HUBER_K. Why not the criterion's sigma_r from the raw values,
      carried through the unclipped cases (as before): the off runs of flaky cases move the
      raw run means as a drift would, so that estimate is noisy: where nothing drifts it
      is zero half the time and, the other half, up to the within-run variance itself.
      The off runs are where the raw estimate is noisiest, and they are what the test
      clips. Measured (scratch runs, seed 1, 500 unchanged PRs per world, this test's p
      below 0.05 / 0.01 / 0.0014 / 0.0005, before -> after): steady world 3.2 / 0.6 / 0 / 0
      -> 4.4 / 1.0 / 0.2 / 0.2, flaky agent 2.6 / 0.6 / 0 / 0 -> 3.0 / 0.8 / 0 / 0: near
      nominal, where it was conservative. The gate's figures are below.
    The two enter Holm as one test, p = 2 * min of theirs (Bonferroni): one fails only on
    what it sees. In bench/bench_gate.py they catch a 0.1 drop on a quarter of the cases
    in 82% of the flaky agent's pull requests (63% before) and 98% under drifting serving
    (65%), and fail no unchanged one more than before (100 PRs each). With
    `steady_run_variance` (500 PRs each, the same draws): flaky agent 83.8 -> 90.8%,
    drifting serving 90.4% both; unchanged PRs failing, over the five worlds, 0 / 0.4 / 0.2 /
    0.6 / 1.4 -> 0.2 / 0.4 / 0.2 / 0.4 / 0.8%. With `steady_weights` too: flaky agent
    93.6%, drifting serving 90.4%, the unchanged PRs' figures the same.

Confirmation runs (`gate.confirm`): evalgate.gate.flakiness
    From one run a broken case and a stable case that failed by chance look the same, so
    the gate re-runs its suspects (evalgate.gate.confirm) and grades each stable case that
    broke by how many of its R re-runs failed it too. Each case's chance of each grade under
    an unchanged agent is its own (evalgate.gate.flakiness, issue 37): the moments
    E[p^(1+j) (1-p)^(R-j)] of its failure rate under the population fitted above (the
    `rate_mixture` of the criterion's cases, given its clean streak), times how much more
    often failures fall together in one run than independent runs give (the ledger's
    failures per run, their factorial moments: a judge's mood or a serving drift lasts
    through the re-runs). Before, one pooled chance q that a failure repeats in the next
    run multiplied every case's chance (q^R); flaky cases set q (0.18-0.21 in issue 37's
    world), which made a stable case's repeated failure look 10-100 times likelier than its
    own history says. A case that failed every re-run is broken; one that failed some is
    newly flaky and weighed too (`flakiness.graded_test`); one that passed every re-run is
    flaky, not counted. With a continuous criterion's own chances (`dip_hazards`) the grade's
    chance is the case's dip chance times its chance of repeating j times given a failure.
    Where some stable case that broke was not re-run (beyond `max_cases`, recorded
    outputs of a criterion the judge does not score, a re-run not evaluated), the criterion
    keeps the first run's test. Re-drawing the judge on the same outputs cannot tell an
    agent's chance slip (it fails every re-draw) from a break, so where the agent can run a
    suspect re-runs the agent; a judge re-draw is for recorded outputs, whose ledger
    history is the judge's own repeat on fixed outputs. The base commit's re-runs, when
    the pipeline made them (evalgate.gate.control), set aside the cases that failed there
    too: the environment's, not the pull request's.
    The mean-drop, level and partial-drop tests keep using the first run only: the re-runs
    were chosen because those cases failed, so adding them would bias every mean of the
    run toward the suspects (and a suspect that passes on re-run would pull the run's mean
    up for having been chosen). Only the breakage test, which asks about exactly these
    cases, reads them.

`holm`: weighted Holm step-down adjustment across all the gate's tests.

`t_sf`, `t_quantile`: Student's t from the regularized incomplete beta function (continued
fraction), so the gate needs no numerical library.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from statistics import NormalDist
from typing import Any, Optional, Sequence

ROUND = 12  # differences are rounded to this many decimals: float noise in c - b is no move
MIN_HISTORY = 3  # runs of history needed to estimate the run-level variance
GRID = 40  # break rates the mixture is fitted on, log-spaced from the pseudo-break rate to 0.999
EM_STEPS = 200  # EM iterations of the mixture fit (it moves little after 100)
SHARE_POINTS = 20  # the share of failures that break: its uncertainty averaged over this many quantiles
SHIFT_Z = 2.5  # partial drops: a case moved beyond its usual range at this many of its own sds
SCALE_PRIOR_RUNS = 3  # pseudo-runs pulling a case's sd toward the criterion's median sd
HUBER_K = 2.5  # the steady-case drop test clips each case's standardized difference here
EPSILON = 1e-6  # moves smaller than this are rounding, not change
LEVEL_ALPHA = 0.01  # a split of the default branch's run means counts as a move at this two-sided level
MOVE_ALPHA = 0.001  # ... and the run-to-run variance is measured around each level at this one
MAD_SD = 1.4826  # a normal sd per median absolute deviation
DIP_Z = 6.0  # a run this many of the criterion's typical sds below the case's upper quartile is a dip (an off run)
BREAK_SHARE = 0.1  # the breakage test weighs each break for an alternative where this share of stable cases break
WEIGHT_STEP = 0.05  # break weights are rounded to this grid, so the null distribution is exact
WEIGHT_CELLS = 4000  # ... or coarser, so the observed sum spans at most this many cells


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


def run_variance(rows: Sequence[Sequence[float]]) -> tuple[float, int, int]:
    """(sigma_r^2, degrees of freedom, where the latest level starts) from complete case x
    run values (module docstring). The start is 0 unless the run means moved beyond
    MOVE_ALPHA (`level_start`); then sigma_r^2 is measured around each level.

    `rows` holds one list per case, all of the same length L >= 2 (runs, oldest first).
    """
    n = len(rows)
    runs = len(rows[0]) if rows else 0
    if n < 2 or runs < 2 or any(len(r) != runs for r in rows):
        raise ValueError("run_variance needs at least 2 cases with the same number (>= 2) of runs")
    case_means = [sum(r) / runs for r in rows]
    run_means = [sum(r[t] for r in rows) / n for t in range(runs)]
    grand = sum(run_means) / runs
    residual = sum((r[t] - case_means[i] - run_means[t] + grand) ** 2 for i, r in enumerate(rows) for t in range(runs))
    mse = residual / ((n - 1) * (runs - 1))
    start = level_start(run_means, MOVE_ALPHA)
    levels = (run_means[:start], run_means[start:]) if start else (run_means,)
    s_runs = sum((m - sum(level) / len(level)) ** 2 for level in levels for m in level) / (runs - len(levels))
    return max(0.0, s_runs - mse / n), runs - len(levels), start


# --- the drop test ------------------------------------------------------------------------


def satterthwaite(within: float, n: int, run_var: float, run_df: float) -> float:
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
    df = satterthwaite(within, n, run_var, run_df)
    if var <= 0:
        return (1.0 if stat >= 0 else 0.0), 0.0, df
    se = math.sqrt(var)
    return 1.0 - t_sf(stat / se, df), se, df


def drop_interval(diffs: Sequence[float], run_var: float, df: float, level: float = 0.95,
                  limit: Optional[float] = 1.0) -> tuple[Optional[float], Optional[float]]:
    """The two-sided `level` interval of the mean difference (module docstring); its lower
    end at level 0.90 is the one-sided 95% lower bound. None when n is too small. It is kept
    within what a difference can be, +-`limit` (the criterion's score range; None: unbounded)."""
    n = len(diffs)
    if n < 2:
        return None, None
    q = t_quantile(0.5 + level / 2, df)
    if n <= q * q:
        return None, None
    mean = sum(diffs) / n
    v = sum((d - mean) ** 2 for d in diffs) / n
    half = q * math.sqrt((v + n * run_var) / (n - q * q))
    if limit is None or abs(mean) > limit:  # scores outside the range they were said to have: not clipped
        return mean - half, mean + half
    return max(-limit, mean - half), min(limit, mean + half)


def level_differences(
    current: Sequence[float], baseline: Sequence[float], earlier: Sequence[Sequence[float]], run_var: float
) -> tuple[list[float], float, int]:
    """(differences, run-level variance, runs): each case's current value less its
    default-branch level, the mean of its baseline value and its values in the `earlier`
    runs since the branch last moved (module docstring: "the default branch's level"); the
    run-level variance of their mean, run_var * (1 + 1/runs) (run_var: one run's sigma_r^2);
    and how many runs the level spans (1: the baseline run alone)."""
    n = len(current)
    if n < 2 or len(baseline) != n or len(earlier) != n or not earlier[0] or any(len(r) != len(earlier[0]) for r in earlier):
        raise ValueError("level_differences needs at least 2 cases, each with a baseline value and the same earlier runs")
    means = [sum(r[t] for r in earlier) / n for t in range(len(earlier[0]))] + [sum(baseline) / n]
    start = level_start(means)
    kept = [list(r[start:]) + [b] for r, b in zip(earlier, baseline)]
    size = len(kept[0])
    diffs = [c - sum(k) / size for c, k in zip(current, kept)]
    return diffs, run_var * (1 + 1 / size), size


def level_start(means: Sequence[float], alpha: float = LEVEL_ALPHA) -> int:
    """Where the most recent level of a series of run means begins: 0 unless a split of the
    series into an earlier and a later part differs beyond chance (two-sided, per split
    `alpha`, t on the parts' pooled spread with L - 2 df); then the most significant
    such split (`alpha`: per split, two-sided)."""
    size = len(means)
    if size < 4:  # a pooled spread needs 2 df
        return 0
    limit = t_quantile(1 - alpha / 2, size - 2)
    best, start = limit, 0
    for split in range(1, size):
        a, b = means[:split], means[split:]
        ma, mb = sum(a) / len(a), sum(b) / len(b)
        spread = (sum((x - ma) ** 2 for x in a) + sum((x - mb) ** 2 for x in b)) / (size - 2)
        scale = math.sqrt(spread * (1 / len(a) + 1 / len(b)))
        if scale > 0 and abs(mb - ma) / scale > best:
            best, start = abs(mb - ma) / scale, split
    return start


# --- partial drops of continuous criteria ------------------------------------------------


def case_scales(rows: Sequence[Sequence[float]]) -> list[float]:
    """Each case's own run-to-run standard deviation, from complete case x run values
    (module docstring: "partial drops"): residuals of the two-way fit with run effects
    taken as the median deviation of the run's cases (robust to a few cases moving), each
    case's variance pulled toward the criterion's median by SCALE_PRIOR_RUNS pseudo-runs."""
    n = len(rows)
    runs = len(rows[0]) if rows else 0
    if n < 2 or runs < 2 or any(len(r) != runs for r in rows):
        raise ValueError("case_scales needs at least 2 cases with the same number (>= 2) of runs")
    means = [sum(r) / runs for r in rows]
    effects = [_median([r[t] - means[i] for i, r in enumerate(rows)]) for t in range(runs)]
    variances = [sum((r[t] - means[i] - effects[t]) ** 2 for t in range(runs)) / (runs - 1) for i, r in enumerate(rows)]
    typical = _median(variances)
    k = SCALE_PRIOR_RUNS
    return [math.sqrt(((runs - 1) * v + k * typical) / (runs - 1 + k)) for v in variances]


def lopsided_test(diffs: Sequence[float], scales: Sequence[float], margin: float = 0.0) -> tuple[float, int, int]:
    """(p, fell, rose): whether more cases fell than rose beyond their usual range, the run's
    common shift (the median difference) taken out. A case fell when its difference, less
    the median, is below -(SHIFT_Z * scale * sqrt 2 + margin), rose when above SHIFT_Z *
    scale * sqrt 2 (moves under EPSILON are no move). Under an unchanged agent each such
    case is as likely to fall as to rise: p is the binomial tail P(X >= fell), X ~ B(fell +
    rose, 1/2)."""
    if len(diffs) != len(scales):
        raise ValueError("lopsided_test needs one scale per difference")
    if not diffs:
        return 1.0, 0, 0
    centre = _median(diffs)
    fell = rose = 0
    for d, s in zip(diffs, scales):
        limit = max(SHIFT_Z * s * math.sqrt(2), EPSILON)
        move = d - centre
        if move < -(limit + margin):
            fell += 1
        elif move > limit:
            rose += 1
    return binomial_half_sf(fell, fell + rose), fell, rose


def _huber(z: float) -> float:
    """Huber's psi: z clipped at +-HUBER_K, the steady-case test's cap on an outlier."""
    return max(-HUBER_K, min(HUBER_K, z))


def steady_weights(scales: Sequence[float]) -> list[float]:
    """Each case's weight in the steady-case test: 1 / its scale, scaled to a mean of 1. A
    drop of the same size in score says more of a case that moves little; this is the
    weighting that sees a drop in score units best (module docstring)."""
    inverse = [1.0 / max(s, EPSILON) for s in scales]
    mean = sum(inverse) / len(inverse)
    return [x / mean for x in inverse]


def steady_run_variance(rows: Sequence[Sequence[float]], scales: Sequence[float]) -> tuple[float, float]:
    """(variance, df): how much the steady-case test's statistic moves between runs of an
    unchanged agent, from complete case x run values and each case's scale (`case_scales`):
    each value in units of its case's spread from the case's median, clipped at +-HUBER_K and
    weighted as the test does, and the run-level variance of those (`run_variance`). A
    run-wide shift r moves every unclipped case by r / scale, and an off run counts at most
    HUBER_K, so a flaky case's outliers do not pass for a run-wide shift (module docstring)."""
    if len(rows) != len(scales):
        raise ValueError("steady_run_variance needs one scale per case")
    units = []
    for r, s, w in zip(rows, scales, steady_weights(scales)):
        centre, unit = _median(r), max(s, EPSILON)
        units.append([w * _huber((v - centre) / unit) for v in r])
    var, df, _ = run_variance(units)
    return var, df


def steady_drop_test(diffs: Sequence[float], scales: Sequence[float], margin: float = 0.0, run_var: float = 0.0, run_df: float = math.inf) -> float:
    """One-sided p that the cases fell, each difference in units of its own run-to-run
    spread (scale * sqrt 2), clipped at +-HUBER_K and weighted (`steady_weights`): an
    outlier counts at most HUBER_K times its case's weight (module docstring). The
    sign-flip variance of the weighted sum, plus the run-level part: run_var is the
    run-to-run variance of the mean weighted, clipped value per case and run
    (`steady_run_variance`); the sum of n differences of two runs carries n^2 times it (a
    shift r' - r, variance 2 sigma_r^2, enters each case as (r' - r) / (scale * sqrt 2))."""
    if len(diffs) != len(scales) or len(diffs) < 2:
        raise ValueError("steady_drop_test needs at least 2 differences, one scale each")
    total = within = 0.0
    for d, s, w in zip(diffs, scales, steady_weights(scales)):
        psi = w * _huber((d + margin) / max(s * math.sqrt(2), EPSILON))
        total += psi
        within += psi * psi
    n = len(diffs)
    run = n * n * run_var
    var = within + run
    if var <= 0:
        return 1.0 if total >= 0 else 0.0
    df = satterthwaite(within / (n * n), n, run / (n * n), run_df)
    return 1.0 - t_sf(total / math.sqrt(var), df)


def binomial_half_sf(k: int, n: int) -> float:
    """P(X >= k) for X ~ Binomial(n, 1/2), exact."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    return sum(math.comb(n, j) for j in range(k, n + 1)) / 2**n


def binomial_sf(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), exact (sums of exact terms in floating point)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    lp, lq = math.log(p), math.log1p(-p)
    base = math.lgamma(n + 1)
    return min(1.0, math.fsum(math.exp(base - math.lgamma(j + 1) - math.lgamma(n - j + 1) + j * lp + (n - j) * lq) for j in range(k, n + 1)))


def sign_test(losses: int, wins: int, margin_share: float = 0.5) -> float:
    """One-sided exact sign test, ties set aside: P(X >= losses) for X ~ Binomial(losses +
    wins, margin_share), the chance of losing at least this many of the decided pairs when each
    is lost with probability margin_share (1/2: no preference; above it: a margin allowed)."""
    return binomial_sf(losses, losses + wins, min(max(margin_share, 0.0), 1.0))


_POWERS = {"squares": 2, "cubes": 3}
SCORE_STEPS = 4096  # the finest integer scale signed_rank_test convolves on


def signed_rank_test(values: Sequence[float], loss_share: float = 0.5, scores: str = "ranks") -> float:
    """One-sided exact sign-flip test that `values` lean negative, conditional on their sizes:
    zeros set aside, each other value scored by its size, W the sum of the negative values'
    scores, p = P(W' >= W) when each value's sign is negative with chance `loss_share`
    independently of its size (1/2: no preference; above 1/2: a margin allowed, as
    `sign_test`'s). `scores`: "ranks", the Wilcoxon signed-rank test (sizes ranked, ties
    given their mean rank); "squares" or "cubes", each value's size to that power ("cubes" is
    what the side-by-side test uses: evalgate.gate.side_by_side.SCORES); "signs", every value
    1 (the sign test). Exact: values of one size share a score, so W' is the sum over sizes of
    score x Binomial(count, loss_share), convolved on integer scores (every score on one scale
    of 1/1000, divided by their greatest common divisor; rounded to 1/SCORE_STEPS of the
    largest when that scale is finer).

    Why (gate.pairwise, evalgate.gate.side_by_side): a case's net verdict over both orders is
    -2 when the pull request's answer lost in both, -1 when it lost one order and tied the
    other; a judge that prefers the longer of two paraphrases, or position A, makes +-1s on
    either side, while a dropped detail makes -2s. The sign test counts both alike."""
    nonzero = [v for v in values if round(v, ROUND) != 0]
    if not nonzero:
        return 1.0
    q = min(max(loss_share, 0.0), 1.0)
    sizes = sorted(abs(v) for v in nonzero)
    raw: dict[float, float] = {}
    i = 0
    while i < len(sizes):
        j = i
        while j < len(sizes) and sizes[j] == sizes[i]:
            j += 1
        if scores == "ranks":
            raw[sizes[i]] = i + 1 + j  # 2 x the mean of ranks i + 1 .. j
        elif scores in _POWERS:
            raw[sizes[i]] = sizes[i] ** _POWERS[scores]
        elif scores == "signs":
            raw[sizes[i]] = 1
        else:
            raise ValueError(f"scores must be ranks, squares, cubes or signs, not {scores!r}")
        i = j
    # One integer scale for every score (1/1000), reduced by the scores' common divisor so the
    # convolution stays small: a mean net verdict of 1.5 (two rounds) cubed is 3.375, 27
    # eighths beside 1 cubed, 8 eighths. Scores that share no such divisor (sizes like 10/3)
    # are rounded to 1/SCORE_STEPS of the largest.
    milli = {size: max(1, round(value * 1000)) for size, value in raw.items()}
    step = math.gcd(*milli.values())
    top = max(milli.values()) // step
    if top <= SCORE_STEPS:
        score = {size: value // step for size, value in milli.items()}
    else:
        score = {size: max(1, round(value * SCORE_STEPS / max(milli.values()))) for size, value in milli.items()}
    observed = sum(score[abs(v)] for v in nonzero if v < 0)
    dist = {0: 1.0}
    for weight, size in Counter(score[abs(v)] for v in nonzero).items():
        pmf = [math.comb(size, k) * q**k * (1 - q) ** (size - k) for k in range(size + 1)]
        new: dict[int, float] = {}
        for total, prob in dist.items():
            for k, pk in enumerate(pmf):
                if pk:
                    new[total + weight * k] = new.get(total + weight * k, 0.0) + prob * pk
        dist = new
    return min(1.0, math.fsum(prob for total, prob in dist.items() if total >= observed))


def binomial_upper(k: int, n: int, level: float = 0.95) -> Optional[float]:
    """The one-sided upper `level` confidence bound of a binomial share from k of n (Clopper-
    Pearson); None when n is 0."""
    if n <= 0:
        return None
    if k >= n:
        return 1.0
    return beta_quantile(k + 1.0, float(n - k), level)


def _quantile(values: Sequence[float], q: float) -> float:
    """The q-quantile, linear between order statistics."""
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


# --- pooled breakage of stable cases --------------------------------------------------------


def failed(outcome: float) -> bool:
    """A run's outcome (share of samples or runs that passed) failed: no majority passed."""
    return outcome <= 0.5


def broke(outcome: float) -> bool:
    """A run's outcome is a break: every sample failed (a criterion's agent runs: evalgate.gate.breakage)."""
    return outcome <= 0.0


def break_share(histories: Sequence[Sequence[float]]) -> Optional[tuple[float, float]]:
    """Beta(a, b), what history says of the share of a stable case's failures that fail
    every sample (module docstring); None when every recorded failure did (one sample or
    run: the share is 1)."""
    # Measured over the cases that almost never fail (one failure in their history): the
    # failures a stable case has. Cases that fail often fail differently (a judge split on
    # a middling answer), and would make a stable case's failure look softer than it is.
    failures = [o for h in histories for o in h if failed(o)]
    if all(broke(o) for o in failures):
        return None
    rare = [o for h in histories if sum(failed(x) for x in h) == 1 for o in h if failed(o)]
    k = sum(broke(o) for o in rare)
    return k + 1.0, len(rare) - k + 1.0  # a uniform prior


def break_hazards(fails: Sequence[float], share: Optional[tuple[float, float]]) -> list[float]:
    """Each stable case's expected chance of breaking in the next run: its chance of failing
    (`fail_hazards`) times the mean of the share of failures that break (`break_share`)."""
    mean = 1.0 if share is None else share[0] / (share[0] + share[1])
    return [mean * h for h in fails]


def share_break_test(broken: Sequence[bool], fails: Sequence[float], share: Optional[tuple[float, float]]) -> float:
    """`break_test` with each case's chance its chance of failing times a share of failures
    that break known only as Beta(a, b): p averaged over SHARE_POINTS quantiles of it."""
    if share is None:
        return break_test(broken, fails)
    points = [beta_quantile(share[0], share[1], (g + 0.5) / SHARE_POINTS) for g in range(SHARE_POINTS)]
    return sum(break_test(broken, [x * h for h in fails]) for x in points) / SHARE_POINTS


def beta_quantile(a: float, b: float, p: float) -> float:
    """x with I_x(a, b) = p (bisection on the regularized incomplete beta)."""
    low, high = 0.0, 1.0
    for _ in range(60):
        mid = (low + high) / 2
        if _beta_inc(a, b, mid) < p:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def fail_hazards(histories: Sequence[Sequence[float]], streaks: Sequence[int]) -> list[float]:
    """Each stable case's chance of failing in the next run, from the mixture of failure
    rates fitted to every case's history (module docstring)."""
    counts = Counter((len(h), sum(failed(o) for o in h)) for h in histories if h)
    grid, weights = rate_mixture(counts)
    rates = {s: posterior_rate(grid, weights, s, 0) for s in set(streaks)}
    return [rates[s] for s in streaks]


def rate_mixture(counts: Counter) -> tuple[list[float], list[float]]:
    """(rates, weights): the nonparametric maximum-likelihood population of per-case event
    rates (Kiefer-Wolfowitz, by EM on a log-spaced grid of GRID rates) fitted to
    (runs, events) -> number of cases with that history. The lowest rate is one pseudo-event
    in runs + 2 pseudo-runs, so a history without events does not make one impossible."""
    runs = sum(k * m for (k, _), m in counts.items())
    floor = 1 / (runs + 2)
    if not counts or floor >= 0.999 or not any(x for _, x in counts):
        # No event in history: the mixture's maximum likelihood is every case at the lowest rate.
        return [floor], [1.0]
    grid = [floor * (0.999 / floor) ** (g / (GRID - 1)) for g in range(GRID)]
    log_p = [math.log(p) for p in grid]
    log_q = [math.log1p(-p) for p in grid]
    # Each (runs, events) pattern's likelihood at every grid rate; cases with the same
    # pattern share it, so the fit costs patterns x GRID per step, not cases x GRID.
    likelihood = {kx: [math.exp(kx[1] * lp + (kx[0] - kx[1]) * lq) for lp, lq in zip(log_p, log_q)] for kx in counts}
    n = sum(counts.values())
    weights = [1 / GRID] * GRID
    for _ in range(EM_STEPS):
        new = [0.0] * GRID
        for kx, m in counts.items():
            lik = likelihood[kx]
            share = m / sum(w * x for w, x in zip(weights, lik))
            for g in range(GRID):
                new[g] += weights[g] * lik[g] * share
        weights = [v / n for v in new]
    return grid, weights


def posterior_rate(grid: Sequence[float], weights: Sequence[float], runs: int, events: int) -> float:
    """A case's expected event rate in the next run, given `events` in `runs` of its own,
    under the population `rate_mixture` fitted (never below its lowest rate)."""
    like = [w * math.exp(events * math.log(p) + (runs - events) * math.log1p(-p)) for w, p in zip(weights, grid)]
    total = sum(like)
    if total <= 0.0:
        return grid[-1]
    return max(grid[0], sum(x * p for x, p in zip(like, grid)) / total)


def dip_hazards(population: Sequence[Sequence[float]], stable: Sequence[Sequence[float]], threshold: float) -> list[float]:
    """Each stable case's chance of scoring under `threshold` in the next run (module
    docstring: "a continuous criterion's stable cases").

    `population`: every case's recorded values (at least 2 each, oldest first), which the
    dips' rates and depths are fitted to; `stable`: the stable cases' own recorded values.
    """

    def spread(v: Sequence[float]) -> float:
        m = _median(v)
        return MAD_SD * _median([abs(x - m) for x in v])

    typical = _median([spread(v) for v in population])

    def dips(v: Sequence[float]) -> tuple[float, list[float]]:
        top = _quantile(v, 0.75)
        return top, [top - x for x in v if x < top - DIP_Z * max(typical, EPSILON)]

    depths: list[float] = []
    counts: Counter = Counter()
    for v in population:
        _, d = dips(v)
        depths.extend(d)
        counts[(len(v), len(d))] += 1
    depths.sort()
    grid, weights = rate_mixture(counts)
    rates = {kx: posterior_rate(grid, weights, *kx) for kx in counts}
    normal = NormalDist()
    out = []
    for v in stable:
        top, own = dips(v)
        rate = rates.get((len(v), len(own))) or posterior_rate(grid, weights, len(v), len(own))
        # Of the dips, the share deeper than this case's room above the threshold (half a pseudo-dip each side).
        deeper = (len(depths) - bisect.bisect_left(depths, top - threshold) + 0.5) / (len(depths) + 1)
        noise = normal.cdf((threshold - _median(v)) / max(EPSILON, typical, spread(v)))
        out.append(min(1.0, rate * deeper + (1 - rate) * noise))
    return out


def break_test(broken: Sequence[bool], hazards: Sequence[float]) -> float:
    """p of the stable cases that broke: P(T >= observed) for T the sum of the breaks'
    weights log(1 + BREAK_SHARE / hazard), cases breaking independently with their hazards
    (module docstring). With equal hazards it is the count's Poisson-binomial tail."""
    if not any(broken):
        return 1.0
    raw = [math.log1p(BREAK_SHARE / max(h, 1e-12)) for h in hazards]
    observed = sum(w for w, b in zip(raw, broken) if b)
    step = max(WEIGHT_STEP, observed / WEIGHT_CELLS)  # the exact null of the weights on this grid
    units = [max(1, round(w / step)) for w in raw]
    target = sum(u for u, b in zip(units, broken) if b)
    below = [1.0] + [0.0] * (target - 1)  # P(T = t) for t < target, built case by case
    for h, u in zip(hazards, units):
        below = [x * (1 - h) for x in below[:u]] + [x * (1 - h) + y * h for x, y in zip(below[u:], below)]
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
