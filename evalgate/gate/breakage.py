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
    `CaseResult.reruns`) and every stable case that broke re-run, a break counts only when
    it failed every re-run too, and its chance is multiplied by how often the ledger's
    failures repeated in the next run (stats).

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

from typing import Optional

from evalgate.gate import confirm as confirmation
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
    repeat_factors,
    repeat_share,
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
    if not comp.stable:
        return
    recent = [h[-policy.history_runs :] for h in outcomes]
    # Confirmation runs: a break counts when every re-run failed too, and its chance shrinks
    # by how often a chance failure repeats (evalgate.gate.stats: repeat_share).
    confirmed = confirmation.verdicts(broken, keys, reruns or {}, comp.criterion, comp.judge, policy.confirm.runs)
    factors = [1.0]
    if confirmed is not None:
        repeat = repeat_share(recent)
        factors = repeat_factors(repeat, policy.confirm.runs)
        comp.flaky = [k for k, b, c in zip(keys, broken, confirmed) if b and not c]
        comp.broken = [k for k, c in zip(keys, confirmed) if c]
        comp.confirm_runs, comp.repeat, broken = policy.confirm.runs, repeat[0] / (repeat[0] + repeat[1]), confirmed
    scale = sum(factors) / len(factors)
    population = [v[-policy.history_runs :] for v in values or [] if len(v) >= MIN_HISTORY]
    if values is not None and len(population) >= 2 and all(len(v) >= MIN_HISTORY for v in own):
        hazards = dip_hazards(population, own, comp.threshold)
        comp.hazards_from = "values"
        comp.expected_breaks = sum(hazards) * scale
        comp.breakage_p = sum(break_test(broken, [h * x for h in hazards]) for x in factors) / len(factors)
        return
    fails, share = fail_hazards(recent, streaks), None if by_runs else break_share(recent)
    comp.expected_breaks = sum(break_hazards(fails, share)) * scale
    comp.breakage_p = sum(share_break_test(broken, [f * x for f in fails], share) for x in factors) / len(factors)


def _breakage_words(comp: CriterionComparison, policy: GatePolicy) -> str:
    assert comp.expected_breaks is not None and comp.breakage_p is not None and comp.breakage_p_adjusted is not None
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
    flaky = _("; {n} passed on re-run, flaky, not counted: {cases}", n=len(comp.flaky), cases=case_names(sorted(comp.flaky))) if comp.flaky else ""
    return _("; each failed all {runs} re-runs, and history says a chance failure repeats in the next run with chance {repeat}{flaky}",
             runs=comp.confirm_runs, repeat=f"{comp.repeat:.2f}", flaky=flaky)


def decide(comp: CriterionComparison, policy: GatePolicy) -> Optional[str]:
    """Why the criterion FAILs on broken stable cases (after Holm), else None; the breaks,
    significant or not, and the flaky ones go to comp.reasons."""
    if comp.broken and comp.breakage_p_adjusted is not None:
        text = _breakage_words(comp, policy)
        if comp.breakage_p_adjusted < policy.alpha:
            comp.reasons.append(text)
            return text
        # Listed, but no warning: nondeterministic agents break a stable case now and then.
        comp.reasons.append(_("{text}, not significant at alpha {alpha}", text=text, alpha=f"{policy.alpha:g}"))
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
