"""Compare a run with its baseline: `compare()`, pure and deterministic, the gate's one decision.

`compare()` pairs cases by (suite, eval_set_id, eval_id), sets aside changed / added /
removed cases (evalgate.gate.draft), runs each suite's tests, corrects them for multiple
testing together, and reaches a verdict per suite and overall (evalgate.gate.verdict).

The tests, each in its own module with the words it writes:

- drop: a criterion's mean fell by more than its margin (against the baseline run);
- level: the same drop against the default branch's level, once the ledger has history;
- partial: some cases of a continuous criterion fell while the rest held;
- breakage: stable cases (by the flake ledger, evalgate.gate.ledger) broke, with
  confirmation runs' input (evalgate.gate.confirm);
- side_by_side: the changed answers judged against the baseline's (`gate.pairwise`);
- efficiency: tokens, calls and seconds per turn rose beyond their tolerance (`gate.efficiency`).

What a case's compared value is (judge samples, agent runs) is in evalgate.gate.values; every
statistical choice and its reason in evalgate.gate.stats; what has no baseline is judged on
absolute thresholds (evalgate.gate.absolute).

Holm correction across all the gate's tests (every criterion's drop test, every criterion's
pooled breakage test and every partial-drop test, weight 1 each) of all suites, and with
`gate.pairwise` each suite's side-by-side sign test (PairwiseComparison), and with
`gate.efficiency` each gated efficiency metric's increase test (evalgate.gate.efficiency).
"""

from __future__ import annotations

from typing import Literal, Mapping, Optional

from evalgate.gate import efficiency, side_by_side
from evalgate.gate.absolute import skipped
from evalgate.gate.draft import Draft, case_changes, draft_suite
from evalgate.gate.efficiency import CostComparison
from evalgate.gate.ledger import Ledger, efficiency_history, ledger_histories
from evalgate.gate.comparison import Comparison, SuiteComparison
from evalgate.gate.model import BaselineInfo, GatePolicy
from evalgate.gate.pairwise import SuitePairs
from evalgate.gate.side_by_side import PairwiseComparison
from evalgate.gate.stats import holm
from evalgate.gate.verdict import overall, removed_suite, suite_verdict
from evalgate.results import RunResults


def compare(
    baseline: Optional[RunResults],
    current: RunResults,
    policy: GatePolicy,
    ledger: Optional[Ledger] = None,
    baseline_info: Optional[BaselineInfo] = None,
    pairwise: Optional[dict[str, SuitePairs]] = None,
    scales: Optional[Mapping[str, tuple[float, float]]] = None,
) -> Comparison:
    """The gate's decision. Pure: the same inputs always give the same Comparison.
    `pairwise`: each suite's changed answers judged side by side (evalgate.gate.pairwise), tested here.
    `scales`: the scale of each criterion whose scores are not 0 to 1, by name (the criteria's
    `score_range`, evalgate.criteria.scales(); evalgate.gate.values.score_range); handed in, as
    the gate imports no criterion."""
    if baseline is None:
        mode: Literal["absolute", "regression"] = "absolute"
    else:
        mode = "absolute" if policy.mode == "absolute" else "regression"
    base_suites = {s.name: s for s in baseline.suites} if baseline is not None else {}
    histories = ledger_histories(ledger) if ledger else {}  # read once, for every suite's breakage tests
    drafts = [draft_suite(s, base_suites.get(s.name), policy, ledger, histories, scales) for s in current.suites]
    sides = {name: side_by_side.measure(p, policy) for name, p in pairwise.items()} if baseline is not None and pairwise else {}
    costs = {
        d.current.name: efficiency.compare_suite(d.current, d.baseline, policy.efficiency, efficiency_history(d.current.name, ledger))
        for d in drafts
        if d.baseline is not None
    }
    _holm(drafts, sides, costs)

    suites: list[SuiteComparison] = []
    for d in drafts:
        name = d.current.name
        pw = sides.get(name)
        verdict, reasons = suite_verdict(d, mode, baseline is not None, policy, pw, costs.get(name, []))
        suites.append(
            SuiteComparison(
                name=name,
                verdict=verdict,
                reasons=reasons,
                criteria=d.criteria,
                changes=case_changes(d, ledger),
                added=d.added,
                removed=d.removed,
                changed=d.changed,
                skipped_criteria=skipped(d.current),
                pairwise=pw,
                costs=costs.get(name, []),
                crashes=d.crashes,
                refused=d.refused,
            )
        )
    for name in sorted(set(base_suites) - {s.name for s in current.suites}):
        suites.append(removed_suite(base_suites[name], policy))

    config_changed = baseline is not None and baseline.config_digest != current.config_digest
    verdict, reasons = overall(suites, baseline is not None, mode, config_changed)
    if baseline is not None and baseline_info is None:
        baseline_info = BaselineInfo(commit="", requested_commit="", distance=0, created_at=None)
    return Comparison(
        verdict=verdict,
        reasons=reasons,
        suites=suites,
        baseline=baseline_info if baseline is not None else None,
        config_changed=config_changed,
        mode=mode,
    )


def _holm(drafts: list[Draft], sides: dict[str, PairwiseComparison], costs: dict[str, list[CostComparison]]) -> None:
    """Every test's p_adjusted: Holm over all the gate's tests at once (module docstring)."""
    tests: dict[tuple, tuple[float, float]] = {}
    for d in drafts:
        for comp in d.criteria:
            if comp.p_value is not None:
                tests[("drop", d.current.name, comp.criterion)] = (comp.p_value, 1.0)
            if comp.breakage_p is not None:
                tests[("breakage", d.current.name, comp.criterion)] = (comp.breakage_p, 1.0)
            if comp.partial_p is not None:
                tests[("partial", d.current.name, comp.criterion)] = (comp.partial_p, 1.0)
    for name, pw in sides.items():
        if pw.p_value is not None:
            tests[("pairwise", name, "")] = (pw.p_value, 1.0)
    for name, rows in costs.items():
        for row in rows:
            if row.p_value is not None:
                tests[("efficiency", name, row.metric)] = (row.p_value, 1.0)
    adjusted = holm(tests)
    for name, rows in costs.items():
        for row in rows:
            row.p_adjusted = adjusted.get(("efficiency", name, row.metric))
    for name, pw in sides.items():
        pw.p_adjusted = adjusted.get(("pairwise", name, ""))
    for d in drafts:
        for comp in d.criteria:
            comp.p_adjusted = adjusted.get(("drop", d.current.name, comp.criterion))
            comp.breakage_p_adjusted = adjusted.get(("breakage", d.current.name, comp.criterion))
            comp.partial_p_adjusted = adjusted.get(("partial", d.current.name, comp.criterion))
