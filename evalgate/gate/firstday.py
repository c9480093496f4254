"""The first-day breakage test: before the ledger knows any case as stable, the cases the baseline passed that broke now.

With one baseline run and no history (a gate set up today), no case is stable, so the
breakage test (evalgate.gate.breakage) has nothing to test and confirmation had nothing to
re-run: 6 broken stable trajectories were caught in 1-2.5% of pull requests (issue 37).
Here the suspects are the cases the baseline passed that broke now (`comp.first_day`;
evalgate.gate.confirm.suspects re-runs them). A suspect counts as broken when it failed every
confirmation re-run, and, where the base commit was re-run beside it as a control
(evalgate.gate.control: the pipeline puts those re-runs into the baseline's
`CaseResult.reruns`), when the base passed every one of them; one whose base failed too is
the environment's, said and not counted. The count of such cases among the criterion's n
cases is tested against each case's chance under an unchanged agent, bounded from the share
of cases the baseline run failed whatever the cases' own rates
(evalgate.gate.flakiness.first_day_chance): with the control the bound is about 7 times
tighter for 2 re-runs. Suspects that could not FAIL the criterion even if every one of them
failed every re-run beside a base commit that passed every one (`could_decide`: p not below
alpha with the control's bound; Holm only raises it) are not suspects at all, so no agent run
is spent on them: a criterion whose baseline run failed many cases (a judge on a moody day)
or with one or two chance flips among many cases. It applies while no case of the criterion has `stable_min_runs`
recorded runs; a criterion with history is the breakage test's.
"""

from __future__ import annotations

from typing import Optional

from evalgate.gate import confirm as confirmation
from evalgate.gate import control
from evalgate.gate.flakiness import first_day_chance, odds
from evalgate.gate.model import CaseKey, CriterionComparison, GatePolicy
from evalgate.gate.stats import break_test, broke, failed
from evalgate.gate.values import outcome
from evalgate.gate.words import case_names, fmt_p
from evalgate.i18n import _, n_
from evalgate.results import CriterionResult


def could_decide(suspects: int, failed_share: tuple[int, int], runs: int, alpha: float) -> bool:
    """Whether `suspects` first-day suspects of a criterion could FAIL it at all: p < `alpha`
    if every one of them failed every one of `runs` re-runs and the base commit passed every
    one of its re-runs beside them (the smallest chance, evalgate.gate.flakiness.first_day_chance
    with the control). Holm only raises a p, so where this p is not below alpha the re-runs
    cannot change the verdict, and the suspects are not re-run (module docstring)."""
    n = failed_share[1]
    if suspects < 1 or n <= 0:
        return False
    chance = first_day_chance(failed_share, runs, True)
    return break_test([True] * suspects + [False] * max(0, n - suspects), [chance] * max(n, suspects)) < alpha


def needed(failed_share: tuple[int, int], runs: int, alpha: float) -> Optional[int]:
    """The fewest first-day suspects that `could_decide`, among the cases the baseline
    passed (failed_share: the baseline run's (failed, cases)); None when no number of them could."""
    for k in range(1, failed_share[1] - failed_share[0] + 1):
        if could_decide(k, failed_share, runs, alpha):
            return k
    return None


def applies(outcomes: list[list[float]], policy: GatePolicy) -> bool:
    """Whether the criterion is on its first days: no case has `stable_min_runs` recorded outcomes."""
    return not any(len(h) >= policy.stable_min_runs for h in outcomes)


def measure(
    comp: CriterionComparison,
    pairs: list[tuple[CaseKey, CriterionResult, CriterionResult]],
    policy: GatePolicy,
    reruns: Optional[dict] = None,
    base_reruns: Optional[dict] = None,
) -> None:
    """The first-day test of one criterion (module docstring). `reruns`: the pull request's
    confirmation re-runs per case (CaseResult.reruns of the current run); `base_reruns`: the
    base commit's re-runs per case (CaseResult.reruns of the baseline, put there by the
    pipeline; evalgate.gate.control). Sets comp.first_day (the suspects; none when even all of
    them failing every re-run could not FAIL the criterion: `could_decide`), and once they were
    re-run, comp.first_day_broken, comp.environment and the test's p."""
    by_runs = not comp.judge and any(len(c.runs or []) > 1 for _k, _b, c in pairs)
    broke_now = failed if by_runs else broke
    base_outcomes = [(k, outcome(b, comp.judge), outcome(c, comp.judge)) for k, b, c in pairs]
    seen = [(k, ob, oc) for k, ob, oc in base_outcomes if ob is not None]
    base_failed = sum(failed(ob) for _k, ob, _oc in seen)
    comp.first_day = [k for k, ob, oc in seen if not failed(ob) and oc is not None and broke_now(oc)]
    runs = policy.confirm.runs
    if not comp.first_day or runs < 1:
        return
    if not could_decide(len(comp.first_day), (base_failed, len(seen)), runs, policy.alpha):
        # Not worth an agent run: even all of them broken could not FAIL (module docstring). Said in the reasons.
        comp.first_day_skipped, comp.first_day = comp.first_day, []
        comp.first_day_share = (base_failed, len(seen))
        comp.first_day_needed = needed(comp.first_day_share, runs, policy.alpha)
        return
    graded = confirmation.grades([True] * len(comp.first_day), comp.first_day, reruns or {}, comp.criterion, comp.judge, runs)
    if graded is None:  # not re-run (yet): the first run alone proves nothing without history
        return
    counted, environment = [], []
    for k, g in zip(comp.first_day, graded):
        if g[0] < g[1]:  # a re-run passed
            comp.flaky.append(k)
            continue
        said = control.base_says((base_reruns or {}).get(k), comp.criterion, comp.judge)
        (environment if said == "environment" else counted).append((k, said))
    comp.environment = [k for k, _s in environment]
    comp.first_day_broken = [k for k, _s in counted]
    comp.first_day_control = bool(counted) and all(s == "pr" for _k, s in counted)
    comp.confirm_runs = runs
    n = len(seen)
    chance = first_day_chance((base_failed, n), runs, comp.first_day_control)
    comp.chance_each = chance
    comp.expected_breaks = chance * n
    if counted:
        comp.breakage_p = break_test([True] * len(counted) + [False] * (n - len(counted)), [chance] * n)


def words(comp: CriterionComparison) -> str:
    """The first-day test's reason (with its p after Holm)."""
    assert comp.breakage_p is not None and comp.breakage_p_adjusted is not None and comp.chance_each is not None
    if comp.first_day_control:
        how = _("failed every one of {runs} re-runs while the base commit passed every one of its {runs} re-runs beside them",
                runs=comp.confirm_runs)
    else:
        how = _("failed every one of {runs} re-runs", runs=comp.confirm_runs)
    text = n_(
        "first day (no history yet): {n} case the baseline passed broke and {how}: {cases}; whatever each case's own flakiness, "
        "an unchanged agent does that by chance at most once in {odds} pull requests per case (bounded by the share of cases the baseline run failed); p = {p}, "
        "{p_holm} after Holm",
        "first day (no history yet): {n} cases the baseline passed broke and {how}: {cases}; whatever each case's own flakiness, "
        "an unchanged agent does that by chance at most once in {odds} pull requests per case (bounded by the share of cases the baseline run failed); p = {p}, "
        "{p_holm} after Holm",
        len(comp.first_day_broken),
        how=how,
        cases=case_names(sorted(comp.first_day_broken)),
        odds=odds(comp.chance_each),
        p=fmt_p(comp.breakage_p),
        p_holm=fmt_p(comp.breakage_p_adjusted),
    )
    if comp.environment:
        text += _("; {n} failed on the base commit's re-runs too, the environment's doing, not counted against the pull request: "
                  "{cases}", n=len(comp.environment), cases=case_names(sorted(comp.environment)))
    return text


def skipped_words(comp: CriterionComparison) -> str:
    """Why the first day's suspects were not re-run (`could_decide`): too few to FAIL the criterion without history."""
    n, cases = len(comp.first_day_skipped), case_names(sorted(comp.first_day_skipped))
    failed_now, total = comp.first_day_share
    if comp.first_day_needed is not None:
        why = n_(
            "even failing every re-run, it would take {needed} such case to FAIL this criterion without history",
            "even failing every re-run, it would take {needed} such cases to FAIL this criterion without history",
            comp.first_day_needed,
            needed=comp.first_day_needed,
        )
    else:
        why = _("with the baseline run failing {failed} of {total} cases, no number of such cases could FAIL this criterion "
                "without history", failed=failed_now, total=total)
    return n_(
        "first day (no history yet): {n} case the baseline passed failed now, not re-run as a first-day suspect: {cases}; {why}; more "
        "baseline runs on the default branch (the flake ledger) let the gate decide on fewer",
        "first day (no history yet): {n} cases the baseline passed failed now, not re-run as first-day suspects: {cases}; {why}; more "
        "baseline runs on the default branch (the flake ledger) let the gate decide on fewer",
        n,
        cases=cases,
        why=why,
    )


def decide(comp: CriterionComparison, policy: GatePolicy) -> Optional[str]:
    """Why the criterion FAILs on the first day's broken cases (after Holm), else None; listed in comp.reasons either way.
    Suspects not re-run (`could_decide`) are said, never a FAIL."""
    if comp.first_day_skipped:
        comp.reasons.append(skipped_words(comp))
        return None
    if not comp.first_day_broken or comp.breakage_p_adjusted is None:
        if comp.environment:
            comp.reasons.append(
                n_(
                    "{n} case the baseline passed failed now and on the base commit's re-runs too: the environment's doing, not "
                    "counted against the pull request: {cases}",
                    "{n} cases the baseline passed failed now and on the base commit's re-runs too: the environment's doing, not "
                    "counted against the pull request: {cases}",
                    len(comp.environment),
                    cases=case_names(sorted(comp.environment)),
                )
            )
        return None
    text = words(comp)
    if comp.breakage_p_adjusted < policy.alpha:
        comp.reasons.append(text)
        return text
    comp.reasons.append(_("{text}, not significant at alpha {alpha}", text=text, alpha=f"{policy.alpha:g}"))
    return None
