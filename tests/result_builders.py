"""Results built by hand for the report tests (Markdown and HTML): an invocation's summary,
a criterion's result from per-invocation (score, details), a case from them, a run from
suites."""

from __future__ import annotations

from typing import Optional

from evalgate.engine import case_status
from evalgate.results import CaseResult, Counts, CriterionResult, InvocationResult, InvocationSummary, RunInfo, RunResults, Status, SuiteResult


def inv(user: str, actual: str, expected: Optional[str] = None, actual_tools=(), expected_tools=None) -> InvocationSummary:
    def calls(tools):
        return [{"name": n, "args": a} for n, a in tools]

    return InvocationSummary(
        user=user,
        expected_response=expected,
        actual_response=actual,
        expected_tools=calls(expected_tools) if expected_tools is not None else None,
        actual_tools=calls(actual_tools),
    )


def crit(threshold: float, *per: tuple[Optional[float], dict], error: Optional[str] = None, runs=None) -> CriterionResult:
    """A criterion result from per-invocation (score, details); None scores are NOT_EVALUATED with `error`."""
    invs = []
    for score, details in per:
        status = Status.NOT_EVALUATED if score is None else Status.PASSED if score >= threshold else Status.FAILED
        invs.append(InvocationResult(score=score, status=status, details=details, error=error if score is None else None))
    scores = [s for s, _ in per if s is not None]
    score = sum(scores) / len(scores) if scores else None
    status = Status.NOT_EVALUATED if score is None else Status.PASSED if score >= threshold else Status.FAILED
    return CriterionResult(score=score, status=status, threshold=threshold, per_invocation=invs, error=error if score is None else None, runs=runs)


def case(set_id: str, eval_id: str, criteria: dict[str, CriterionResult], invocations: list[InvocationSummary], source: Optional[dict[str, str]] = None) -> CaseResult:
    return CaseResult(
        eval_set_id=set_id,
        eval_id=eval_id,
        expected_digest="sha256:0",
        status=case_status(criteria),
        criteria=criteria,
        invocations=invocations,
        source=source or {},
    )


def run_of(suites: list[SuiteResult], digest: str, info: RunInfo) -> RunResults:
    """A run over these suites: counts over all their cases, FAILED when any case failed."""
    counts = Counts.of([c for s in suites for c in s.cases])
    return RunResults(
        evalgate_version="0.1.0",
        config_digest=digest,
        status=Status.FAILED if counts.failed else Status.PASSED,
        counts=counts,
        suites=suites,
        run=info,
    )
