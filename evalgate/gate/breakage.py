"""The breakage test: stable cases (by the flake ledger) that broke now, tested together, with confirmation runs' input.

Broken stable cases (any criterion, with a ledger)
    A case is stable for a criterion when the ledger has at least `stable_min_runs`
    recorded outcomes for it (the last `history_runs`), all above 0.5 (a majority of its
    samples, or its one run, passed in every run). It has broken when its outcome now is
    0: every sample failed (agent runs: below). The stable cases of a criterion are tested together:
    each has a chance of breaking by chance, from the population of failure rates fitted
    to every case's history of that criterion (a nonparametric mixture; lower the longer
    its clean streak) times the share of failed runs that failed every sample; the number
    breaking by chance is then Poisson-binomial, and p = P(X >= broken). One stable case
    breaking decides nothing (nondeterministic agents do that); several at once, when
    history says breaks are rare, fail the criterion (p_adjusted < alpha). With
    confirmation runs in the results (`gate.confirm`, evalgate.gate.confirm:
    `CaseResult.reruns`) and every stable case that broke re-run, each is graded by how many
    re-runs failed it too (all: broken; some: newly flaky, weighed too; none: flaky, not
    counted), against its own chance of doing that by chance, from its history shrunk
    toward the criterion's other cases, with re-runs that share their run's conditions
    allowed for (evalgate.gate.flakiness). A case the base commit's re-runs failed as well
    (the pipeline's control, in the baseline's `CaseResult.reruns`: evalgate.gate.control)
    is the environment's: said, not counted. Before any case is stable (the first days),
    evalgate.gate.firstday tests the cases the baseline passed that broke now.

Several agent runs per case (`num_runs`)
    A deterministic criterion's runs are pass/fail outcomes, not a score: its value in a
    run of the gate is the share of the case's runs that passed (0, 1/3, 2/3 or 1 for three
    runs), and the criterion is continuous only when its runs' own scores are (never their
    mean). A case is stable when most of its runs passed in each of its recorded runs, and
    it broke when most of its runs failed now: the same reading both ways, so a break is
    exactly a run that would have cost the case its stability, and every such failure in
    history counts as a break (no share of "total" failures to measure). Chosen over "every
    run failed", which misses a change that breaks a case in two runs of three, and over
    ADK's aggregated status (the runs' mean score against the threshold: with a threshold
    of 1, one failing run in three), which makes a single chance failure of a stable case a
    break and so triples the chance breaks the test must allow for.
"""

from __future__ import annotations

import math
from typing import Optional

from evalgate.gate import confirm as confirmation
from evalgate.gate import control, flakiness
from evalgate.gate.ledger import Ledger, ledger_key, stable_history, value_key
from evalgate.gate.model import CaseKey, CriterionComparison, GatePolicy
from evalgate.gate.stats import (
    MIN_HISTORY,
    failed,
    break_hazards,
    break_share,
    break_test,
    broke,
    dip_hazards,
    fail_hazards,
    share_break_test,
)
from evalgate.gate.values import outcome
from evalgate.gate.words import case_names, fmt_p
from evalgate.i18n import _, n_
from evalgate.results import CriterionResult


def measure(
    comp: CriterionComparison,
    pairs: list[tuple[CaseKey, CriterionResult, CriterionResult]],
    policy: GatePolicy,
    ledger: Ledger,
    outcomes: list[list[float]],
    values: Optional[list[list[float]]],
    reruns: Optional[dict] = None,
    base_reruns: Optional[dict] = None,
) -> None:
    """The pooled test of this criterion's stable cases (evalgate.gate.stats: break_hazards,
    dip_hazards, break_test). `values`: every case's recorded values when the criterion is
    continuous (a stable case's chance of falling under the threshold is then its own), else None."""
    streaks, own, broken, keys = [], [], [], []
    by_runs = not comp.judge and any(len(c.runs or []) > 1 for _k, _b, c in pairs)  # num_runs: module docstring
    broke_now = failed if by_runs else broke
    for k, _base, c in pairs:
        recorded = stable_history(ledger.get(ledger_key(k, comp.criterion), []), policy)
        if recorded is None:
            continue
        comp.stable += 1
        keys.append(k)
        streaks.append(len(recorded))
        own.append([float(v) for v in ledger.get(value_key(k, comp.criterion)) or [] if v is not None][-policy.history_runs :])
        now = outcome(c, comp.judge)
        broken.append(now is not None and broke_now(now))  # every sample failed; with num_runs, most runs
        if broken[-1]:
            comp.broken.append(k)
            if len(recorded) >= policy.history_runs:
                comp.full_streak.append(k)
    if not comp.stable:
        return
    recent = [h[-policy.history_runs :] for h in outcomes]
    population = [v[-policy.history_runs :] for v in values or [] if len(v) >= MIN_HISTORY]
    by_values = values is not None and len(population) >= 2 and all(len(v) >= MIN_HISTORY for v in own)
    # Confirmation runs: each stable case that broke graded by how many of its re-runs failed,
    # weighed by its own chance of doing that (evalgate.gate.flakiness).
    graded = confirmation.grades(broken, keys, reruns or {}, comp.criterion, comp.judge, policy.confirm.runs)
    if graded is not None:
        _graded(comp, policy, keys, streaks, graded, recent, ledger, pairs, by_runs,
                dip_hazards(population, own, comp.threshold) if by_values else None, base_reruns or {})
        return
    if by_values:
        hazards = dip_hazards(population, own, comp.threshold)
        comp.hazards_from = "values"
        comp.expected_breaks = sum(hazards)
        comp.breakage_p = break_test(broken, hazards)
        return
    fails, share = fail_hazards(recent, streaks), None if by_runs else break_share(recent)
    comp.expected_breaks = sum(break_hazards(fails, share))
    comp.breakage_p = share_break_test(broken, fails, share)


def _graded(comp: CriterionComparison, policy: GatePolicy, keys: list[CaseKey], streaks: list[int],
            graded: list[Optional[tuple[int, int]]], recent: list[list[float]], ledger: Ledger, pairs: list, by_runs: bool,
            hazards: Optional[list[float]], base_reruns: dict) -> None:
    """The breakage test with confirmation runs in (evalgate.gate.flakiness: each case's own
    chance of breaking now and failing j of its re-runs; the base commit's re-runs, when the
    pipeline made them, set aside the cases the environment broke: evalgate.gate.control)."""
    runs = policy.confirm.runs
    for i, (k, g) in enumerate(zip(keys, graded)):
        if g is not None and g[0] > 0 and control.base_says(base_reruns.get(k), comp.criterion, comp.judge) == "environment":
            comp.environment.append(k)
            graded[i] = None
    made = [runs if g is None else g[1] for g in graded]  # each case's re-runs (more where the pipeline asked: control.more)
    fails = [None if g is None else g[0] for g in graded]
    comp.broken = [k for k, f, m in zip(keys, fails, made) if f is not None and f == m]
    comp.newly_flaky = [k for k, f, m in zip(keys, fails, made) if f is not None and 0 < f < m]
    comp.flaky = [k for k, f in zip(keys, fails) if f == 0]
    comp.confirm_runs = runs
    most = max(made)
    rows = [(ledger.get(ledger_key(k, comp.criterion)) or [])[-policy.history_runs :] for k, _b, _c in pairs]
    kappa = flakiness.run_intensity(rows, most + 1)
    grid, weights = flakiness.population(recent)
    share = None if by_runs or hazards is not None else break_share(recent)
    if hazards is not None:
        comp.hazards_from = "values"
        # A case near the threshold fails again by its own noise as often as it broke now: its
        # own chance h repeats (h^j), or the population's, whichever is likelier.
        chances = [[h * max(r, math.comb(m, j) * kappa[j] * h**j * (1 - h) ** (m - j))
                    for j, r in enumerate(flakiness.repeat_given_break(grid, weights, s, m, kappa))]
                   for h, s, m in zip(hazards, streaks, made)]
    else:
        chances = [flakiness.case_chances(grid, weights, s, m, kappa) for s, m in zip(streaks, made)]
    scale = 1.0 if share is None else share[0] / (share[0] + share[1])
    # The test weighs the re-runs that failed (grade 1..m); a break that passed every re-run is flaky, not counted.
    comp.breakage_p = flakiness.graded_test_shares([None if not f else f - 1 for f in fails], [c[1:] for c in chances],
                                                   [flakiness.alternative(m)[1:] for m in made], share)
    comp.expected_breaks = sum(c[m] for c, m in zip(chances, made)) * scale
    counted = [(c[f] * scale, s) for c, f, s in zip(chances, fails, streaks) if f]
    if counted:
        counted.sort()
        comp.chance_each, comp.streak_each = counted[len(counted) // 2]
    comp.rerun_span = (min(m for m, f in zip(made, fails) if f is not None), most) if any(f is not None for f in fails) else (runs, runs)
    comp.newly_fails = sorted({f for f, m in zip(fails, made) if f is not None and 0 < f < m})


def _breakage_words(comp: CriterionComparison, policy: GatePolicy) -> str:
    assert comp.expected_breaks is not None and comp.breakage_p is not None and comp.breakage_p_adjusted is not None
    if not comp.broken:  # newly flaky ones only (confirmation runs)
        return _(
            "{n} of {stable} became flaky (each passed all of its last {runs}+ runs): p = {p}, {p_holm} after Holm",
            n=len(comp.newly_flaky),
            stable=n_("{n} stable case", "{n} stable cases", comp.stable),
            runs=policy.stable_min_runs,
            p=fmt_p(comp.breakage_p),
            p_holm=fmt_p(comp.breakage_p_adjusted),
        ) + _confirm_words(comp)
    return _(
        "{broken} of {stable} broke (each passed all of its last {runs}+ runs): {cases}; by chance, history expects {expected}; "
        "p = {p}, {p_holm} after Holm",
        broken=len(comp.broken),
        stable=n_("{n} stable case", "{n} stable cases", comp.stable),
        runs=policy.stable_min_runs,
        cases=case_names(sorted(comp.broken)),
        expected=f"{comp.expected_breaks:.2f}",
        p=fmt_p(comp.breakage_p),
        p_holm=fmt_p(comp.breakage_p_adjusted),
    ) + (_("; each case's chance its own, from its level and dips in history") if comp.hazards_from == "values" else "") + _confirm_words(comp)


def _confirm_words(comp: CriterionComparison) -> str:
    """What confirmation runs changed in the breakage test (evalgate.gate.confirm), or ""."""
    if not comp.confirm_runs:
        return ""
    out = ""
    if comp.broken:
        out += _("; each failed all {runs} re-runs", runs=_span(*comp.rerun_span))
    if comp.newly_flaky:
        out += _("; {n} newly flaky (broke now and failed {some} of {runs} re-runs, where history never saw them fail), weighed "
                 "as evidence: {cases}", n=len(comp.newly_flaky), some=_span(min(comp.newly_fails), max(comp.newly_fails)),
                 runs=_span(*comp.rerun_span), cases=case_names(sorted(comp.newly_flaky)))
    if comp.flaky:
        out += _("; {n} passed on re-run, flaky, not counted: {cases}", n=len(comp.flaky), cases=case_names(sorted(comp.flaky)))
    if comp.chance_each is not None:  # each case's own chance (evalgate.gate.flakiness), the counted ones' median
        out += _("; by its own history (no failure in its last {streak} runs), an unchanged agent does that about once in {odds} "
                 "pull requests", odds=flakiness.odds(comp.chance_each), streak=comp.streak_each)
    return out + _environment_words(comp)


def _span(low: int, high: int) -> str:
    """"2", or "2-4" when the cases' re-runs differ in number."""
    return str(low) if low == high else f"{low}-{high}"


def _environment_words(comp: CriterionComparison) -> str:
    if not comp.environment:
        return ""
    return _("; {n} failed on the base commit's re-runs too, the environment's doing, not counted against the pull request: "
             "{cases}", n=len(comp.environment), cases=case_names(sorted(comp.environment)))


def decide(comp: CriterionComparison, policy: GatePolicy) -> Optional[str]:
    """Why the criterion FAILs on broken stable cases (after Holm), else None; the breaks,
    significant or not, and the flaky ones go to comp.reasons. On the first days (no case
    stable yet), the first-day test's (evalgate.gate.firstday)."""
    if comp.first_day or comp.first_day_skipped:
        from evalgate.gate import firstday

        return firstday.decide(comp, policy)
    if (comp.broken or comp.newly_flaky) and comp.breakage_p_adjusted is not None:
        text = _breakage_words(comp, policy)
        if comp.breakage_p_adjusted < policy.alpha:
            comp.reasons.append(text)
            return text
        # Listed, but no warning: nondeterministic agents break a stable case now and then.
        comp.reasons.append(_("{text}, not significant at alpha {alpha}", text=text, alpha=f"{policy.alpha:g}"))
    elif comp.environment:
        comp.reasons.append(
            n_(
                "{n} stable case broke now and failed on the base commit's re-runs too: the environment's doing, not counted "
                "against the pull request: {cases}",
                "{n} stable cases broke now and failed on the base commit's re-runs too: the environment's doing, not counted "
                "against the pull request: {cases}",
                len(comp.environment),
                cases=case_names(sorted(comp.environment)),
            )
        )
    elif comp.flaky:
        comp.reasons.append(
            n_(
                "{n} stable case broke and passed on re-run: flaky, not counted: {cases}",
                "{n} stable cases broke and passed on re-run: flaky, not counted: {cases}",
                len(comp.flaky),
                cases=case_names(sorted(comp.flaky)),
            )
        )
    return None
