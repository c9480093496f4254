"""What the gate reads of a run's results: each case's compared value, its judge samples, its outcome.

Judge samples (the contract with judge criteria)
    A judge criterion asks its judge `num_samples` times per invocation and puts the
    per-sample scores in that invocation's `details["samples"]`: a list of numbers in
    [0, 1] in sample order (1.0 / 0.0 for a yes / no verdict; for rubric criteria the
    sample's share of rubrics judged "yes"), with None for a sample that failed (no
    parsable reply). The invocation's own `score` stays the majority vote. Sample j of a
    *case* is the mean over its invocations of their j-th sample scores (an invocation
    without `samples` takes part with its own score in every sample; a failed sample is
    left out); it passes when it reaches the criterion's threshold. A case without
    samples anywhere has one sample: its score.

Agent runs (num_runs)
    A case the agent ran several times has each run's score in `runs`, and its score is the
    mean over all runs' invocations. A criterion without judge samples then takes the runs
    as its samples: the ledger records the share of runs that passed, and broken-stable
    testing applies to it (evalgate.gate.breakage says when such a case broke), so an
    agent's nondeterminism is measured from its runs rather than assumed. Whether its values
    are scores is read from each run's score (`run_scores`), never from their mean.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Optional

from evalgate.gate.model import CaseKey
from evalgate.gate.stats import EPSILON
from evalgate.results import CaseResult, CriterionResult, CriterionSpec, Status, SuiteResult


def _number(value: Any) -> Optional[float]:
    if isinstance(value, (int, float)) and not (isinstance(value, float) and math.isnan(value)):
        return float(value)
    return None


def _invocation_samples(details: Any) -> Optional[list[Optional[float]]]:
    samples = details.get("samples") if isinstance(details, dict) else None
    if isinstance(samples, list) and samples:
        return [_number(s) for s in samples]
    return None


def has_samples(result: CriterionResult) -> bool:
    """Whether a judge criterion recorded per-sample scores for any invocation."""
    return any(_invocation_samples(inv.details) is not None for inv in result.per_invocation)


def _run_scores(result: CriterionResult) -> Optional[list[float]]:
    """The scores of a case's agent runs (num_runs >= 2), leaving out runs not evaluated."""
    if result.runs and len(result.runs) > 1:
        return [float(r) for r in result.runs if r is not None]
    return None


def case_samples(result: CriterionResult) -> list[float]:
    """A case's sample scores for one criterion, per the contract in the module docstring.
    A criterion without judge samples whose case ran several times (num_runs) has one
    sample per evaluated run: its run score."""
    runs = _run_scores(result)
    if runs is not None and not has_samples(result):
        return runs
    per: list[tuple[Optional[float], Optional[list[Optional[float]]]]] = [
        (inv.score, _invocation_samples(inv.details)) for inv in result.per_invocation
    ]
    m = max((len(s) for _, s in per if s is not None), default=0)
    if m == 0:
        return [result.score] if result.score is not None else []
    out = []
    for j in range(m):
        total, count = 0.0, 0
        for score, samples in per:
            value = score if samples is None else (samples[j] if j < len(samples) else None)
            if value is not None:
                total += value
                count += 1
        if count:
            out.append(total / count)
    return out


def outcome(result: CriterionResult, judge: bool) -> Optional[float]:
    """What the ledger records for one case and criterion in one run."""
    if result.status in (Status.NOT_EVALUATED, Status.INFORMATIONAL):
        return None
    if not judge and _run_scores(result) is None:
        return 1.0 if result.status is Status.PASSED else 0.0
    samples = case_samples(result)
    if not samples:
        return None
    return sum(s >= result.threshold for s in samples) / len(samples)


def case_value(result: CriterionResult, basis: str) -> float:
    if basis == "samples":
        samples = case_samples(result)
        if samples:
            return sum(samples) / len(samples)
    assert result.score is not None
    return result.score


def score_range(name: str, spec: Optional[CriterionSpec] = None, scales: Optional[Mapping[str, tuple[float, float]]] = None) -> tuple[float, float]:
    """The scale of a criterion's scores, lowest to highest, as its module declares it
    (`Criterion.score_range`, handed in as `scales`: evalgate.criteria.scales()): (0, 1) for
    all but response_evaluation_score (1 to 5) and for names evalgate does not know (custom
    metrics). A criterion whose results record a scale
    of its own (`spec.score_range`, agents-cli's metrics: a 1-5 judge, a count) has that one;
    an unbounded end is one unit from the other (a count's margins are in counts). The gate
    compares a criterion as if its scores were mapped to [0, 1], (score - lowest) / (highest -
    lowest), by taking its margins, resolution and assumed run-to-run sd as fractions of the
    range: the same tests (differences scale by the range, the lowest cancels), with every
    number shown on the scale its users know."""
    own = spec.score_range if spec is not None else None
    if own is not None and len(own) == 2:
        low, high = own
        if low is None:
            low = high - 1.0 if high is not None else 0.0
        if high is None:
            high = low + 1.0
        if high > low:
            return float(low), float(high)
    low_high = (scales or {}).get(name)
    return (float(low_high[0]), float(low_high[1])) if low_high is not None else (0.0, 1.0)


def is_bounded(spec: Optional[CriterionSpec]) -> bool:
    """Whether a criterion's scale has both ends (a count, `score_range: [0, null]`, has not).
    A metric without a threshold whose config gives no `score_range` (an agents-cli code
    metric: a 1-5 grade, a count, anything) has no known ends either."""
    own = spec.score_range if spec is not None else None
    if own is None:
        return not (spec is not None and getattr(spec, "no_threshold", False))
    return len(own) == 2 and None not in own


def is_evaluated(result: Optional[CriterionResult]) -> bool:
    """Scored with a verdict: an INFORMATIONAL value (a custom metric may return one) is
    shown, never compared, as ADK never lets one decide a case."""
    return result is not None and result.status not in (Status.NOT_EVALUATED, Status.INFORMATIONAL) and result.score is not None


def run_scores(result: CriterionResult) -> list[float]:
    """What a criterion scored in each of a case's agent runs (num_runs), or its one score:
    whether a criterion's values are scores or pass/fail is read from these, never from a
    mean over runs (0, 1/3, 2/3 and 1 are the share of runs a pass/fail criterion passed)."""
    runs = _run_scores(result)
    if runs is not None:
        return runs
    return [result.score] if result.score is not None else []


def is_continuous(values: Iterable[float]) -> bool:
    """Whether a criterion's case values are scores, not pass/fail (some strictly between 0 and 1)."""
    return any(EPSILON < v < 1.0 - EPSILON for v in values)


def cases_by_key(suite: SuiteResult) -> dict[CaseKey, CaseResult]:
    # The engine keeps keys unique; should a file repeat one, the last occurrence wins.
    return {CaseKey(suite.name, c.eval_set_id, c.eval_id): c for c in suite.cases}


def compared_parts(baseline: SuiteResult, current: SuiteResult) -> Optional[set[str]]:
    """The parts of a case's data that decide whether it is the same case in both runs: what
    its agent's run reads, and what the criteria both runs score read (CriterionSpec.reads).
    None when a run does not say what its criteria read (written before evalgate recorded
    it): the whole expected data is compared then."""
    parts = {"run"}
    for name in set(baseline.criteria) & set(current.criteria):
        for spec in (baseline.criteria[name], current.criteria[name]):
            if spec.reads is None:
                return None
            parts |= set(spec.reads)
    return {"run", "*"} if "*" in parts else parts


def same_data(base: CaseResult, cur: CaseResult, parts: Optional[set[str]]) -> bool:
    """Whether a case ran and was scored on the same data in both runs: the `parts` of it
    (`compared_parts`), or, where a run lacks them, its whole expected data. A field no
    criterion reads (an empty `final_session_state` a pull request added, say) does not make
    it another case."""
    if parts is not None and base.parts is not None and cur.parts is not None and all(p in base.parts and p in cur.parts for p in parts):
        return all(base.parts[p] == cur.parts[p] for p in parts)
    return base.expected_digest == cur.expected_digest


def criteria_of(suite: SuiteResult) -> dict[str, tuple[float, bool, str]]:
    """name -> (threshold, judge, version), from the suite's specs and, failing that, its cases."""
    out = {name: (spec.threshold, spec.judge, spec.version) for name, spec in suite.criteria.items()}
    for case in suite.cases:
        for name, result in case.criteria.items():
            out.setdefault(name, (result.threshold, False, ""))
    return out


def sampling_of(suite: Optional[SuiteResult], name: str) -> Optional[str]:
    """How a judge criterion's samples were drawn in this run ("early_stop"; None: every sample)."""
    spec = suite.criteria.get(name) if suite is not None else None
    return spec.sampling if spec is not None else None
