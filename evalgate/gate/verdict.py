"""A regression-mode suite's verdict from its tests after Holm (each test's `decide` writes its own reasons).

Verdicts
    - absolute (ADK semantics, evalgate.gate.absolute): a suite fails when its status is
      FAILED (which includes NOT_EVALUATED cases under `not_evaluated: fail`).
    - regression: a criterion FAILs when its drop test (drop bigger than margin_judge or
      margin_deterministic), its pooled breakage test or its partial-drop test has
      p_adjusted < alpha; with
      `deterministic_flips: fail`, a deterministic criterion also FAILs when any case
      went from PASSED to FAILED (right when the agent's outputs are replayed). It is
      INCONCLUSIVE when it dropped by more than its margin, not significantly, and the
      run cannot rule out a drop bigger than `resolution` (the one-sided 95% lower bound
      of delta is below -max(resolution, margin); with history, of the drop against the
      default branch's level): the reasons say what would settle it.
      Otherwise it PASSes, with the drop and the variation it allowed for in its
      reasons. An INCONCLUSIVE criterion always warns, and fails the suite when
      `inconclusive: fail`. NOT_EVALUATED cases fail the suite under `not_evaluated: fail`.
      A case the baseline passed whose agent failed in the run and in every confirmation
      run FAILs the suite whatever that policy (evalgate.gate.crash); one nothing re-ran is a
      warning among the reasons. So does a criterion the baseline evaluated that is not
      evaluated now while its judge or service was up (a refused prompt: evalgate.gate.refused);
      one whose service was down is a warning naming the service.
      With `gate.efficiency`, a suite FAILs when a gated efficiency value (tokens, calls,
      seconds per turn) rose significantly beyond its tolerance (evalgate.gate.efficiency;
      ungated ones and absolute mode: reported only).
      What has no baseline (a new suite, a new criterion, a suite with no case in common)
      is judged on absolute thresholds. Added and changed cases are listed, not gated,
      except a changed case the baseline passed that fails now, which FAILs the suite
      (evalgate.gate.changed).
    - A suite with no cases is an ERROR, and so is one whose agent failed on every case
      run (`agent_error`: nothing it does was scored, typically a fork's run without the
      model's key). Overall: FAIL if any suite FAILs or is an ERROR,
      else INCONCLUSIVE if any is, else PASS.
    - alpha defaults to 0.01: Holm keeps the chance that an unchanged agent fails on noise
      below alpha, and the goal is at most 1% (bench/bench_gate.py measures it in several
      worlds).
"""

from __future__ import annotations

from typing import Literal, Optional

from evalgate.gate import breakage, changed, crash, drop, efficiency, partial, refused, side_by_side
from evalgate.gate.absolute import absolute_verdict, below, failing, not_evaluated_reasons
from evalgate.gate.draft import Draft
from evalgate.gate.efficiency import CostComparison
from evalgate.gate.comparison import SuiteComparison
from evalgate.gate.model import CriterionComparison, GatePolicy, Verdict
from evalgate.gate.side_by_side import PairwiseComparison
from evalgate.gate.values import cases_by_key
from evalgate.gate.words import case_names
from evalgate.i18n import _, n_
from evalgate.results import SuiteResult


def regression_verdict(draft: Draft, policy: GatePolicy) -> tuple[Verdict, list[str]]:
    """A suite compared with its baseline: each criterion's status from its tests, and the suite's verdict and reasons."""
    suite = draft.current
    if not suite.cases:
        return Verdict.ERROR, [_("the suite has no cases")]
    if suite.agent_error:
        return Verdict.ERROR, [_(suite.agent_error)]  # English in results.json; a marked one in the report's language
    fail: list[str] = []
    unsure: list[str] = []
    for comp in draft.criteria:
        name = comp.criterion
        if name in draft.new_criteria:
            if comp.status is Verdict.FAIL:
                fail.append(_("{criterion}: new criterion, {reason}", criterion=name, reason=below(*failing(suite, name), comp.threshold)))
            continue
        flipped = _flips(comp, draft, policy)
        dropped, doubt = drop.decide(comp, policy)  # only the drop can leave a doubt
        fails = [text for text in (flipped, dropped, partial.decide(comp, policy), breakage.decide(comp, policy)) if text]
        fail += [f"{name}: {text}" for text in fails]
        if doubt:
            unsure.append(f"{name}: {doubt}")
        comp.status = Verdict.FAIL if fails else Verdict.INCONCLUSIVE if doubt else Verdict.PASS

    crashed, crash_notes = crash.decide(draft.crashes, policy)
    if crashed:
        fail.append(crashed)
    edited = changed.decide(draft.changed_broken)
    if edited:
        fail.append(edited)
    refusal, down_notes = refused.decide(draft.refused)
    if refusal:
        fail.append(refusal)
    fails_ne, unheard = not_evaluated_reasons(suite)
    # Cases the baseline passed that the agent failed on are said first; criteria whose service
    # was down after the policy's own reason, which they explain.
    ne_reasons = crash_notes + unheard + down_notes
    if fails_ne:
        fail += ne_reasons
    if fail:
        return Verdict.FAIL, fail + unsure + ([] if fails_ne else ne_reasons) + draft.notes
    if unsure:
        if policy.inconclusive == "fail":
            return Verdict.FAIL, unsure + [_("inconclusive, and the gate's `inconclusive` policy is `fail`")] + ne_reasons + draft.notes
        return Verdict.INCONCLUSIVE, unsure + ne_reasons + draft.notes
    if unheard:  # `warn`: criteria that were not heard cannot be called a pass
        return Verdict.INCONCLUSIVE, ne_reasons + draft.notes
    compared = [c for c in draft.criteria if c.n_pairs]
    n_pairs = max((c.n_pairs for c in compared), default=0)
    summary = (
        n_(
            "no drop beyond the margin in {n} criterion over {cases} compared",
            "no drop beyond the margin in {n} criteria over {cases} compared",
            len(compared),
            cases=n_("{n} case", "{n} cases", n_pairs),
        )
        if compared
        else _("nothing to compare: no case was evaluated in both runs")
    )
    return Verdict.PASS, [summary] + ne_reasons + draft.notes


def _flips(comp: CriterionComparison, draft: Draft, policy: GatePolicy) -> Optional[str]:
    """With `deterministic_flips: fail`, why a deterministic criterion FAILs: cases that went from PASSED to FAILED."""
    flipped = draft.flips.get(comp.criterion, []) if policy.deterministic_flips == "fail" else []
    if not flipped:
        return None
    text = n_(
        "{n} case went from PASSED to FAILED (a deterministic criterion: no noise to allow for): {cases}",
        "{n} cases went from PASSED to FAILED (a deterministic criterion: no noise to allow for): {cases}",
        len(flipped),
        cases=case_names(flipped),
    )
    comp.reasons.append(text)
    return text


def suite_verdict(
    d: Draft,
    mode: Literal["absolute", "regression"],
    has_baseline: bool,
    policy: GatePolicy,
    pw: Optional[PairwiseComparison],
    costs: list[CostComparison],
) -> tuple[Verdict, list[str]]:
    """A suite's verdict and reasons: absolute or regression, with its side-by-side test, its
    efficiency tests and `gate.removed_cases` folded in."""
    absolute = mode == "absolute" or d.absolute
    verdict, reasons = _absolute_suite(d, has_baseline) if absolute else regression_verdict(d, policy)
    if absolute and verdict is not Verdict.ERROR:  # every case changed: what they did still counts
        for text in (changed.decide(d.changed_broken), refused.decide(d.refused)[0]):
            if text:
                verdict = Verdict.FAIL
                reasons.insert(0, text)
    if pw is not None:
        if absolute:
            side_by_side.decide(pw, policy)  # for information, as the statistics
        else:
            verdict = side_by_side.apply(verdict, reasons, pw, policy, d.current.not_evaluated_policy)
    for row in costs:
        fail = efficiency.decide(row, policy.alpha, gating=not absolute)
        if fail and verdict is not Verdict.ERROR:
            verdict = Verdict.FAIL
            reasons.insert(0, fail)
    if policy.removed_cases == "fail" and d.removed and verdict is not Verdict.ERROR:
        verdict = Verdict.FAIL
        reasons.insert(0, n_("{n} baseline case removed (gate.removed_cases: fail)", "{n} baseline cases removed (gate.removed_cases: fail)", len(d.removed)))
    return verdict, reasons


def _absolute_suite(d: Draft, has_baseline: bool) -> tuple[Verdict, list[str]]:
    """A suite judged on absolute thresholds, saying why; its criteria get absolute statuses
    too, and their statistics stay for information."""
    verdict, reasons = absolute_verdict(d.current)
    if verdict is Verdict.ERROR:
        pass
    elif d.absolute_reason:
        reasons.insert(0, d.absolute_reason)
    elif has_baseline and d.baseline is None:
        reasons.insert(0, _("new suite (not in the baseline): judged on absolute thresholds"))
    else:
        reasons += d.notes
    for comp in d.criteria:
        if comp.n_pairs:
            failed, total = failing(d.current, comp.criterion)
            comp.status = Verdict.FAIL if failed else Verdict.PASS
            if failed:
                comp.reasons.append(below(failed, total, comp.threshold))
    return verdict, reasons


def removed_suite(old: SuiteResult, policy: GatePolicy) -> SuiteComparison:
    """A baseline suite missing from this run: listed; it fails under `gate.removed_cases: fail`."""
    removed_fails = policy.removed_cases == "fail" and bool(old.cases)
    return SuiteComparison(
        name=old.name,
        verdict=Verdict.FAIL if removed_fails else Verdict.PASS,
        reasons=[
            n_(
                "not in this run (removed from the config): {n} baseline case not compared (gate.removed_cases: fail)",
                "not in this run (removed from the config): {n} baseline cases not compared (gate.removed_cases: fail)",
                len(old.cases),
            )
            if removed_fails
            else n_(
                "not in this run (removed from the config): {n} baseline case not compared",
                "not in this run (removed from the config): {n} baseline cases not compared",
                len(old.cases),
            )
        ],
        criteria=[],
        changes=[],
        added=[],
        removed=sorted(cases_by_key(old)),
        changed=[],
        skipped_criteria=[],
    )


def overall(
    suites: list[SuiteComparison], has_baseline: bool, mode: Literal["absolute", "regression"], config_changed: bool
) -> tuple[Verdict, list[str]]:
    """The run's verdict: FAIL if any suite FAILs or is an ERROR, else INCONCLUSIVE if any is, else PASS; and why."""
    reasons = []
    if not has_baseline:
        reasons.append(_("no baseline found: absolute thresholds only"))
    elif mode == "absolute":
        reasons.append(_("mode absolute: every case must pass every threshold; changes from the baseline are listed for information"))
    if config_changed:
        reasons.append(_("the config changed since the baseline: compared on the criteria both share"))
    verdicts = [s.verdict for s in suites]
    if Verdict.FAIL in verdicts or Verdict.ERROR in verdicts:
        verdict = Verdict.FAIL
    elif Verdict.INCONCLUSIVE in verdicts:
        verdict = Verdict.INCONCLUSIVE
    else:
        verdict = Verdict.PASS
    for s in suites:
        if s.verdict is not Verdict.PASS:
            first = s.reasons[0] if s.reasons else _("see the suite")
            reasons.append(f"{s.name}: {s.verdict.value}: {first}")
    if verdict is Verdict.PASS and not suites:
        reasons.append(_("no suites"))
    return verdict, reasons
