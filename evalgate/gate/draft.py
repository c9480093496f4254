"""One suite against its baseline before the Holm correction: the cases paired, set aside or changed, and
each criterion's tests run (drop, level, partial, breakage)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

from evalgate.gate import breakage, changed as changed_cases, crash, drop, firstday, level, partial, refused as refusals
from evalgate.gate import confirm as confirmation
from evalgate.gate.absolute import absolute_criterion
from evalgate.gate.ledger import Ledger, flaky_history, own_histories
from evalgate.gate.model import CaseChange, CaseKey, Crash, CriterionComparison, GatePolicy, Refused, Verdict
from evalgate.gate.stats import EPSILON, ROUND
from evalgate.gate.values import (
    case_value,
    cases_by_key,
    compared_parts,
    criteria_of,
    has_samples,
    is_bounded,
    is_continuous,
    is_evaluated,
    run_scores,
    sampling_of,
    same_data,
    score_range,
)
from evalgate.gate.words import case_names
from evalgate.i18n import _, listing, n_
from evalgate.results import CaseResult, Status, SuiteResult


@dataclass
class Draft:
    """A suite's comparison before the Holm correction and the verdict."""

    current: SuiteResult
    baseline: Optional[SuiteResult]
    absolute: bool  # judged on absolute thresholds (no baseline for it)
    absolute_reason: Optional[str]
    criteria: list[CriterionComparison]
    new_criteria: set[str]
    flips: dict[str, list[CaseKey]]  # deterministic criterion -> cases PASSED -> FAILED
    changes: list[CaseChange]
    added: list[CaseKey]
    removed: list[CaseKey]
    changed: list[CaseKey]
    notes: list[str]  # warnings that do not decide the verdict
    crashes: list[Crash]  # cases the baseline passed whose agent failed now (evalgate.gate.crash)
    changed_broken: list[CaseKey] = field(default_factory=list)  # changed cases the baseline passed that fail now (evalgate.gate.changed)
    refused: list[Refused] = field(default_factory=list)  # criteria the baseline evaluated, not evaluated now (evalgate.gate.refused)


KIND_ORDER = {"broken_stable": 0, "regressed": 1, "fixed": 2, "score_drop": 3, "score_rise": 4}


def case_change(key: CaseKey, base: CaseResult, cur: CaseResult, names: list[str]) -> Optional[CaseChange]:
    moved: dict[str, tuple[Optional[float], Optional[float]]] = {}
    kinds = set()
    for name in names:
        b, c = base.criteria.get(name), cur.criteria.get(name)
        if b is None or c is None:
            continue
        if b.status is Status.PASSED and c.status is Status.FAILED:
            kinds.add("regressed")
        elif b.status is Status.FAILED and c.status is Status.PASSED:
            kinds.add("fixed")
        elif b.score is not None and c.score is not None and abs(c.score - b.score) > EPSILON:
            kinds.add("score_drop" if c.score < b.score else "score_rise")
        else:
            continue
        moved[name] = (b.score, c.score)
    if not kinds:
        return None
    kind = min(kinds, key=KIND_ORDER.__getitem__)
    return CaseChange(key=key, kind=kind, criteria=moved)  # type: ignore[arg-type]


def draft_suite(
    current: SuiteResult,
    baseline: Optional[SuiteResult],
    policy: GatePolicy,
    ledger: Optional[Ledger],
    histories: dict[tuple[str, str], tuple[list[list[float]], list[list[float]]]],
    scales: Optional[Mapping[str, tuple[float, float]]] = None,
) -> Draft:
    cur_cases = cases_by_key(current)
    base_cases = cases_by_key(baseline) if baseline is not None else {}
    added = sorted(k for k in cur_cases if k not in base_cases)
    removed = sorted(k for k in base_cases if k not in cur_cases)
    parts = compared_parts(baseline, current) if baseline is not None else None
    changed = sorted(k for k in cur_cases if k in base_cases and not same_data(base_cases[k], cur_cases[k], parts))
    paired = sorted(k for k in cur_cases if k in base_cases and same_data(base_cases[k], cur_cases[k], parts))
    cur_specs = criteria_of(current)
    base_specs = criteria_of(baseline) if baseline is not None else {}
    notes: list[str] = []

    # No baseline for the suite (compare() says why), or nothing in common with it.
    absolute = baseline is None or not paired
    absolute_reason = _("no case in common with the baseline: judged on absolute thresholds") if baseline is not None and not paired else None

    criteria: list[CriterionComparison] = []
    new_criteria: set[str] = set()
    flips: dict[str, list[CaseKey]] = {}
    for name in sorted(cur_specs):
        threshold, judge, version = cur_specs[name]
        spec = current.criteria.get(name)
        if absolute or name not in base_specs:
            comp = absolute_criterion(current, name, threshold, judge)
            comp.no_threshold = bool(spec is not None and spec.no_threshold)
            if not absolute:
                new_criteria.add(name)
                comp.reasons.insert(0, _("new criterion (not in the baseline): judged on its threshold"))
            criteria.append(comp)
            continue
        b_threshold, _judge, b_version = base_specs[name]
        pairs = [
            (k, base_cases[k].criteria[name], cur_cases[k].criteria[name])
            for k in paired
            if is_evaluated(base_cases[k].criteria.get(name)) and is_evaluated(cur_cases[k].criteria.get(name))
        ]
        # Early stopping (judge.early_stop) changes what a sample mean is over, not what the
        # majority decides: two runs that drew samples by different rules compare on scores.
        sampling = (sampling_of(baseline, name), sampling_of(current, name))
        mixed = sampling[0] != sampling[1]
        basis = ("samples" if judge and not mixed and pairs and all(has_samples(b) and has_samples(c) for _, b, c in pairs)
                 else "scores")
        reasons = []
        if mixed:
            reasons.append(
                _(
                    "judge samples were drawn differently (baseline: {baseline}, current: {current}): compared on majority-vote "
                    "scores, which both rules decide alike, not on sample means; set judge.early_stop the same for both runs "
                    "to compare sample means",
                    baseline=sampling[0] or _("every sample"),
                    current=sampling[1] or _("every sample"),
                )
            )
        if b_threshold != threshold:
            reasons.append(_("threshold changed from {baseline} to {current}", baseline=f"{b_threshold:g}", current=f"{threshold:g}"))
        if b_version != version:
            reasons.append(_("criterion version changed from {baseline} to {current}", baseline=b_version or "?", current=version or "?"))
        comp = CriterionComparison(
            suite=current.name,
            criterion=name,
            threshold=threshold,
            judge=judge,
            n_pairs=len(pairs),
            baseline_mean=None,
            current_mean=None,
            delta=None,
            ci_low=None,
            ci_high=None,
            p_value=None,
            p_adjusted=None,
            status=Verdict.PASS,
            reasons=reasons,
            basis=basis,  # type: ignore[arg-type]
        )
        low, high = score_range(name, spec, scales)
        comp.span = high - low
        comp.bounded = is_bounded(spec)
        comp.no_threshold = bool(spec is not None and spec.no_threshold)
        continuous = False  # the values are scores (some strictly between 0 and 1), not judged
        if pairs:
            base_values = [case_value(b, basis) for _, b, _ in pairs]
            cur_values = [case_value(c, basis) for _, _, c in pairs]
            # Per run, not the runs' mean: a pass/fail criterion run 3 times has means 0, 1/3,
            # 2/3 and 1, shares of runs that passed, not scores (evalgate.gate.breakage).
            continuous = not judge and is_continuous([(v - low) / comp.span for _, b, c in pairs for v in run_scores(b) + run_scores(c)])
            diffs = [round(c - b, ROUND) for b, c in zip(base_values, cur_values)]
            comp.baseline_mean = sum(base_values) / len(pairs)
            comp.current_mean = sum(cur_values) / len(pairs)
            comp.delta = sum(diffs) / len(pairs)
            keys = [k for k, _, _ in pairs]
            drop.measure(comp, diffs, keys, policy, ledger)
            by_level = bool(comp.history) and (not judge or basis == "samples")
            if ledger and (by_level or continuous):  # the cases' own histories, read once for both tests
                own = own_histories(keys, name, ledger, base_values)  # asks for PARTIAL_MIN_CASES cases
                if by_level:
                    level.measure(comp, base_values, cur_values, own)
                if continuous:
                    partial.measure(comp, diffs, own, policy)
        else:
            comp.reasons.append(_("not compared: no case was evaluated in both runs"))
        if not judge:
            flipped = [k for k, b, c in pairs if b.status is Status.PASSED and c.status is Status.FAILED
                       and not confirmation.passed_again(cur_cases[k].reruns, name)]  # a re-run that passed: flaky
            if flipped:
                flips[name] = flipped
        if ledger and pairs:
            outcomes, values = histories.get((current.name, name), ([], []))
            reruns = {k: cur_cases[k].reruns for k, _, _ in pairs if cur_cases[k].reruns}
            base_reruns = {k: base_cases[k].reruns for k, _, _ in pairs if base_cases[k].reruns}  # the control: evalgate.gate.control
            breakage.measure(comp, pairs, policy, ledger, outcomes, values if continuous else None, reruns, base_reruns)
        if pairs and firstday.applies(histories.get((current.name, name), ([], []))[0] if ledger else [], policy):
            firstday.measure(comp, pairs, policy, {k: cur_cases[k].reruns for k, _, _ in pairs if cur_cases[k].reruns},
                             {k: base_cases[k].reruns for k, _, _ in pairs if base_cases[k].reruns})
        criteria.append(comp)

    gone = sorted(set(base_specs) - set(cur_specs))
    if gone and not absolute:
        notes.append(_("not in this run, not compared: {criteria}", criteria=listing(gone)))

    changes = []
    crashes: list[Crash] = []
    changed_broken: list[CaseKey] = []
    refused: list[Refused] = []
    shared = sorted(set(cur_specs) & set(base_specs))
    if baseline is not None and policy.mode != "absolute":
        # Changed cases too, and when every case changed (nothing paired, judged on absolute
        # thresholds): editing a case does not take what it does out of the gate.
        changed_broken = changed_cases.measure(changed, base_cases, cur_cases)
        refused = refusals.measure(paired + changed, base_cases, cur_cases, shared)
    if not absolute:
        if policy.mode != "absolute":
            crashes = crash.measure(paired + changed, base_cases, cur_cases, shared, policy, ledger)
        for k in paired:
            change = case_change(k, base_cases[k], cur_cases[k], shared)
            if change is not None:
                changes.append(change)
        not_compared = sorted(k for k in added + changed if cur_cases[k].status is Status.FAILED and k not in changed_broken)
        if not_compared:
            notes.append(
                n_(
                    "{n} added or changed case fail, not gated (no baseline to compare with): {cases}",
                    "{n} added or changed cases fail, not gated (no baseline to compare with): {cases}",
                    len(not_compared),
                    cases=case_names(not_compared),
                )
            )
    return Draft(
        current=current,
        baseline=baseline,
        absolute=absolute,
        absolute_reason=absolute_reason,
        criteria=criteria,
        new_criteria=new_criteria,
        flips=flips,
        changes=changes,
        added=added,
        removed=removed,
        changed=changed,
        notes=notes,
        crashes=crashes,
        changed_broken=changed_broken,
        refused=refused,
    )


def case_changes(d: Draft, ledger: Optional[Ledger]) -> list[CaseChange]:
    """The suite's moved cases for the reports: each broken stable case with its breakage test
    (after Holm), each regressed one with its flaky history in the ledger; in KIND_ORDER."""
    changes = list(d.changes)
    by_key = {c.key: c for c in changes}
    cur_cases = cases_by_key(d.current)
    base_cases = cases_by_key(d.baseline) if d.baseline is not None else {}
    for comp in d.criteria:
        for key in comp.broken:
            change = by_key.get(key)
            if change is None:
                change = by_key[key] = CaseChange(key=key, kind="broken_stable", criteria={})
                changes.append(change)
            change.criteria[comp.criterion] = (
                base_cases[key].criteria[comp.criterion].score,
                cur_cases[key].criteria[comp.criterion].score,
            )
            if change.kind != "broken_stable" or change.p_value is None or (comp.breakage_p or 1.0) < change.p_value:
                change.kind = "broken_stable"
                change.p_value = comp.breakage_p
                change.p_adjusted = comp.breakage_p_adjusted
    for c in d.crashes:  # failed in the run and every re-run: regressed, as the verdict counts it
        if c.verdict == "broken" and c.key not in by_key:
            change = by_key[c.key] = CaseChange(
                key=c.key, kind="regressed", criteria={n: (base_cases[c.key].criteria[n].score, None) for n in c.criteria}
            )
            changes.append(change)
    for r in d.refused:  # not evaluated now, its judge up: regressed, as the verdict counts it
        if r.service is None:
            change = by_key.get(r.key)
            if change is None:
                change = by_key[r.key] = CaseChange(key=r.key, kind="regressed", criteria={})
                changes.append(change)
            change.criteria.setdefault(r.criterion, (base_cases[r.key].criteria[r.criterion].score, None))
    if ledger:
        for change in changes:
            if change.kind == "regressed":
                change.flaky_history = flaky_history(change, ledger)
    changes.sort(key=lambda c: (KIND_ORDER[c.kind], c.key))
    return changes
