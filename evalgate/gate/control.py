"""The base commit as a control: a suspect re-run on the pull request and on its base commit, side by side.

A case that fails in the pull request's run and in its re-runs may be broken by the pull
request, or by the environment of the moment (a tool or service down, a judge's bad hour):
re-runs on the pull request alone cannot tell them apart, since they share that moment. The
same case re-run at the same time on the base commit can: the base passes and the pull
request fails, the pull request broke it; both fail, the environment (said, and not blamed on
the pull request). Measured in bench/bench_gate.py --sharper (the tool-outage and first-day
rows).

How the pipeline calls it (plain data, no agent is run here)
    After the first `compare()` and `evalgate.gate.confirm.suspects()`, the pipeline re-runs
    each suspect on the pull request (as today: `CaseResult.reruns` of the current run) and,
    for the control, `runs` times on the base commit, with the same runner and at the same
    time, scoring each base re-run as a confirmation re-run is scored
    (`evalgate.results.Rerun`, how="agent"). It puts the base re-runs into the *baseline's*
    `CaseResult.reruns` of that case (the baseline RunResults handed to `compare()`; in
    memory only, never saved into the store) and calls `compare()` again. The breakage test
    (with history) and the first-day test (evalgate.gate.firstday) read them through
    `base_says()` below; a case without base re-runs is decided as before.
    Which suspects need it: `wanted(pr_reruns, criteria, judge)` says so for one suspect once
    its pull request re-runs are in: only those that failed every pull-request re-run (the
    rest are not counted as broken anyway), which keeps the base commit's agent runs to the
    few cases that would otherwise be blamed.

More re-runs for a newly flaky suspect (`more`)
    A suspect that failed some of its pull-request re-runs and passed others is newly flaky or
    a flaky case's chance; `more(pr_reruns, criteria, judge, runs, stable)` says how many more
    pull-request re-runs would tell them apart (`runs` more, once). The pipeline appends them
    to the case's `CaseResult.reruns` before comparing again. Measured in bench_gate --sharper.

A further round where the test is suggestive (`extension`)
    With 10 runs of history, a case that now fails half the time looks, in its run and 2-4
    re-runs, much like a flaky case that passed its last 10 runs by luck (about 1 in 75 of a
    suite's clean-streak cases are that, in bench_gate --sharper's world), so one such case
    cannot clear Holm's bar and it takes two or more: a breakage test that knew the world's
    true population of failure rates would itself catch 70% of the PRs that made 6 stable
    cases newly flaky, with the re-runs above (bench/bound_newly_flaky.py, at alpha / 7), 82%
    with 6 more for every suspect that passed a re-run. Re-running every suspect more costs
    runs on every pull request (5.3 per unchanged PR there, against 1.5); re-running them when the test is suggestive
    (p < EXTEND_P before Holm) but not decisive costs runs on few unchanged ones and tells the
    two apart: a case failing half the time keeps failing, a lucky flaky one (its rate mostly
    0.1-0.2 after 10 clean runs) mostly passes. After the second compare,
    `extension(comparison, chosen, reruns, judge)` names the stable suspects whose criterion's
    breakage test came out below EXTEND_P while nothing FAILs the gate, whose clean streak
    fills the ledger's window (`CriterionComparison.full_streak`: with fewer recorded runs, as
    with a ledger filled at setup, a lucky flaky case is common and the fitted rates too rough
    for the extra evidence to be weighed fairly), and whose re-runs on it did not all fail;
    each gets EXTEND x `runs` more re-runs (once), and the gate compares a third time. The
    breakage test reads them as it reads every re-run (j of m failed, m the case's own); that
    they were asked for only where the test was suggestive is not in its p (as `more`'s are
    not), so its false FAILs are measured, not bounded: in bench_gate --sharper's world, 23
    -> 25 of 2,800 unchanged or outage PRs (2,000 of them FAILed the same 17 with and without
    it; seed 2's unchanged row 0.5 -> 1.0%, its outage row 2.0 -> 2.5%: twice a flaky case of
    rate ~0.5 that had passed its 10 runs kept failing), for 0.2-0.3 points more agent runs.

In order, per suspect `s` of `confirm.suspects(...)` (judge: {criterion: judge?} of its suite):
    1. re-run on the pull request `runs` times into `case.reruns`;
    2. k = more(case.reruns, s.criteria, judge, runs, s.stable): k more re-runs appended;
    3. if wanted(case.reruns, s.criteria, judge): `runs` re-runs at the base commit into
       the baseline's case `.reruns`;
    then `compare(baseline, current, policy, ledger)` once more; then, for each suspect of
    extension(that comparison, chosen, ...), EXTEND x `runs` more re-runs appended, and
    `compare` a third time when there were any.
"""

from __future__ import annotations

from typing import Any, Callable, Literal, Optional, Sequence

from evalgate.gate.stats import failed

Said = Literal["pr", "environment", "none"]

EXTEND_P = 0.02  # a criterion's breakage test below this (before Holm), the gate not FAILing: its undecided suspects are re-run more
EXTEND = 2  # ... `runs` x this many times more (module docstring: a further round)


def classify(pr: Sequence[float], base: Sequence[float]) -> Literal["pr", "environment", "flaky", "unconfirmed"]:
    """One suspect's criterion, from its outcomes (evalgate.gate.values.outcome: the share of
    samples or runs that passed) in the pull request's run and re-runs (`pr`, the run first)
    and in the base commit's re-runs (`base`, made beside them; the baseline's own run not
    included). "pr": failed in the pull request's run and every re-run, and the base commit
    passed every one of its re-runs: the pull request broke it. "environment": it failed on
    the pull request and the base failed too (any of its re-runs): not the pull request's
    doing. "flaky": a pull-request re-run passed. "unconfirmed": no base re-runs to compare
    with (decide as without the control)."""
    if not pr or not all(failed(o) for o in pr):
        return "flaky"
    if not base:
        return "unconfirmed"
    return "environment" if any(failed(o) for o in base) else "pr"


def base_says(base_reruns: Optional[list], criterion: str, judge: bool) -> Said:
    """What the base commit's re-runs of a case (the baseline's `CaseResult.reruns`, put there
    by the pipeline: module docstring) say of `criterion`: "environment" when one of them
    failed it (or did not evaluate it: an outage on the base too), "pr" when every one passed,
    "none" when there are none."""
    from evalgate.gate.confirm import rerun_outcomes

    if not base_reruns:
        return "none"
    outcomes = rerun_outcomes(base_reruns, criterion, judge)
    if outcomes is None or any(failed(o) for o in outcomes):
        return "environment"
    return "pr"


def wanted(pr_reruns: Optional[list], criteria: Sequence[str], judge: dict[str, bool]) -> bool:
    """Whether a suspect should be re-run on the base commit: it has pull-request re-runs and
    failed at least one of `criteria` (the criteria it is suspected on) in every one of them."""
    from evalgate.gate.confirm import rerun_outcomes

    if not pr_reruns:
        return False
    for name in criteria:
        outcomes = rerun_outcomes(pr_reruns, name, judge.get(name, False))
        if outcomes is not None and outcomes and all(failed(o) for o in outcomes):
            return True
    return False


def more(pr_reruns: Optional[list], criteria: Sequence[str], judge: dict[str, bool], runs: int, stable: bool = True) -> int:
    """How many more pull-request re-runs a suspect should get once its first `runs` are in:
    `runs` more when, on one of `criteria`, some of its re-runs failed and some passed (a
    newly flaky case: 1 of 2 is what a case that now fails half the time does half the time,
    and 2 more re-runs tell it from a stable case's chance far better), else 0. Only once: a
    suspect with 2 x `runs` re-runs gets none. The pipeline appends them to the case's
    `CaseResult.reruns` and compares again; the breakage test reads every evaluated re-run
    (evalgate.gate.confirm.grades). `stable`: the suspect's `Suspect.stable`; only a stable
    case's mixed re-runs are weighed (a first day's suspect that passed one is not counted),
    so others get none."""
    from evalgate.gate.confirm import rerun_outcomes

    if runs < 1 or not stable or not pr_reruns or len(pr_reruns) >= 2 * runs:
        return 0
    for name in criteria:
        outcomes = rerun_outcomes(pr_reruns, name, judge.get(name, False))
        if outcomes and 0 < sum(failed(o) for o in outcomes) < len(outcomes):
            return runs
    return 0


def extension(comparison: Any, chosen: Sequence[Any], reruns: Callable[[Any], Optional[list]], judge: dict[str, dict[str, bool]]) -> list:
    """The suspects (evalgate.gate.confirm.Suspect, of `chosen`) a further round of re-runs is
    for, read from the comparison made with the re-runs so far (module docstring: a further
    round): none when the gate FAILs already; else each stable suspect of a criterion whose
    breakage test is below EXTEND_P (before Holm), whose clean streak fills the ledger's window
    on it, and whose re-runs (`reruns(s)`) did not all fail it; a criterion whose test did not
    read re-runs (a stable case that broke was left out by max_cases, or a re-run could not be
    evaluated) has none. `judge`: per suite, {criterion: judge?}. The caller re-runs each
    `EXTEND * gate.confirm.runs` more times, once, where its agent was re-run (not a recorded
    output's judge re-draws, nor in the trusted publish job, which runs no agent)."""
    from evalgate.gate.confirm import rerun_outcomes
    from evalgate.gate.model import CaseKey, Verdict

    if comparison.verdict == Verdict.FAIL:
        return []
    # Only a test that read the re-runs (`confirm_runs`: every stable case that broke was re-run)
    # can read more of them; else it is the first run's, which further re-runs cannot move.
    suggestive = {(suite.name, c.criterion): c for suite in comparison.suites for c in suite.criteria
                  if c.confirm_runs and c.breakage_p is not None and c.breakage_p < EXTEND_P}
    out = []
    for s in chosen:
        made = reruns(s) if s.stable else None
        if not made:
            continue
        key = CaseKey(s.suite, s.eval_set_id, s.eval_id)
        for name in s.criteria:
            comp = suggestive.get((s.suite, name))
            if comp is None or key not in comp.full_streak:
                continue
            outcomes = rerun_outcomes(made, name, judge.get(s.suite, {}).get(name, False))
            if outcomes and not all(failed(o) for o in outcomes):
                out.append(s)
                break
    return out
