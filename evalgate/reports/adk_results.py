"""ADK eval history: one `*.evalset_result.json` per eval set, loadable by google-adk.

The shape is ADK's `EvalSetResult` (google.adk.evaluation.eval_result) with snake_case keys
and ADK's integer statuses. Unlike ADK's own files these are deterministic: the result id
is derived from suite and eval set, the session id from the case, timestamps are 0.0.

What ADK's schema cannot carry is left out rather than smuggled in: its metric `details`
forbid unknown keys, so a NOT_EVALUATED reason and our per-criterion details stay in
`results.json`. ADK's four efficiency metrics follow the criteria as ADK records them:
INFORMATIONAL, no threshold, tokens and seconds by kind in `details`.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any, Optional

from evalgate import efficiency
from evalgate.adk import Invocation
from evalgate.criteria.base import Criterion
from evalgate.engine import CaseInput, SuitePlan
from evalgate.results import CaseResult, CriterionResult, EfficiencyResult, EfficiencyValue, RunResults, Status, write_json

# google.adk.evaluation.eval_metrics.EvalStatus
ADK_STATUS = {Status.PASSED: 1, Status.FAILED: 2, Status.NOT_EVALUATED: 3, Status.INFORMATIONAL: 4}

SUFFIX = ".evalset_result.json"

_UNSAFE = re.compile(r"[^\w.-]")
_MAX_BYTES = 120


def safe_name(name: str) -> str:
    """A file-name-safe form of an id, distinct for distinct ids.

    Letters of any script, digits, `_`, `-` and `.` are kept; when anything else had to
    change (or the name was too long), a short hash of the original keeps ids that
    sanitize alike, such as `a/b` and `a_b`, apart.
    """
    safe = _UNSAFE.sub("_", name).lstrip(".")
    if safe == name and name and len(name.encode("utf-8")) <= _MAX_BYTES:
        return name
    while len(safe.encode("utf-8")) > _MAX_BYTES:
        safe = safe[:-1]
    return f"{safe}-{hashlib.sha256(name.encode('utf-8')).hexdigest()[:8]}"


def _dump_invocation(inv: Invocation) -> dict[str, Any]:
    # Snake_case, nulls dropped: ADK's models (extra="forbid") accept exactly this, and so
    # does our own loader.
    return inv.model_dump(mode="json", exclude_none=True)


def _metric(
    name: str, score: Optional[float], status: Status, threshold: float, crit: Optional[Criterion]
) -> dict[str, Any]:
    """An ADK `EvalMetricResult`. ADK fills it from its `EvalMetric` plus the outcome; so do we."""
    metric: dict[str, Any] = {"metric_name": name, "threshold": threshold}
    if crit is not None:
        metric["criterion"] = {"threshold": threshold, **crit.options()}
    metric.update(score=score, eval_status=ADK_STATUS[status], details={})
    return metric


def _informational(name: str, value: EfficiencyValue) -> dict[str, Any]:
    """An efficiency metric as ADK records it: no threshold, INFORMATIONAL, its breakdown in details."""
    details: dict[str, Any] = {}
    if value.details:
        details[_DETAILS[name]] = value.details
    return {"metric_name": name, "score": value.value, "eval_status": ADK_STATUS[Status.INFORMATIONAL], "details": details}


_DETAILS = {efficiency.TOKENS: "token_usage_details", efficiency.DURATION: "duration_details"}


def _efficiency(case: CaseResult) -> list[tuple[str, EfficiencyResult]]:
    # After the criteria, in ADK's order, as adk eval appends them.
    return [(name, case.efficiency[name]) for name in efficiency.METRICS if name in case.efficiency]


def _per_invocation(case: CaseResult, given: Optional[CaseInput]) -> list[dict[str, Any]]:
    if given is None or given.actual is None:
        return []
    expected = given.expected or []
    criteria = given.criteria
    out = []
    for i, actual in enumerate(given.actual):
        entry: dict[str, Any] = {"actual_invocation": _dump_invocation(actual)}
        if i < len(expected):
            entry["expected_invocation"] = _dump_invocation(expected[i])
        entry["eval_metric_results"] = [
            _metric(name, r.per_invocation[i].score, r.per_invocation[i].status, r.threshold, criteria.get(name))
            for name, r in case.criteria.items()
            # A criterion scored case-wide (a trace) or stopped before scoring has no
            # per-invocation results to attribute; it appears in the overall results only.
            if len(r.per_invocation) == len(given.actual)
        ] + [_informational(name, r.per_invocation[i]) for name, r in _efficiency(case) if len(r.per_invocation) == len(given.actual)]
        out.append(entry)
    return out


def _overall(name: str, result: CriterionResult, given: Optional[CaseInput]) -> dict[str, Any]:
    crit = given.criteria.get(name) if given else None
    return _metric(name, result.score, result.status, result.threshold, crit)


def _session_value(session: dict[str, Any], key: str) -> Optional[str]:
    camel = re.sub(r"_(\w)", lambda m: m.group(1).upper(), key)
    value = session.get(key, session.get(camel))
    return str(value) if value else None


def _case_result(case: CaseResult, given: Optional[CaseInput]) -> dict[str, Any]:
    session = given.session if given else {}
    out: dict[str, Any] = {
        "eval_set_id": case.eval_set_id,
        "eval_id": case.eval_id,
        "final_eval_status": ADK_STATUS[case.status],
        "overall_eval_metric_results": [_overall(n, r, given) for n, r in case.criteria.items()]
        + [_informational(n, r) for n, r in _efficiency(case)],
        "eval_metric_result_per_invocation": _per_invocation(case, given),
        # ADK requires a session id; a fixed one from the case's session input if it has
        # one, else one derived from the case so that reruns write the same bytes.
        "session_id": _session_value(session, "session_id") or f"evalgate-{case.eval_id}",
    }
    user_id = _session_value(session, "user_id")
    if user_id:
        out["user_id"] = user_id
    return out


def adk_eval_set_results(results: RunResults, plans: list[SuitePlan]) -> dict[tuple[str, str], dict[str, Any]]:
    """ADK `EvalSetResult` objects keyed by (suite, eval_set_id), in suite then eval-set order.

    `plans` supply the invocations; a case without a plan (or without actual outputs)
    gets its statuses and scores but no per-invocation results.
    """
    inputs = {(p.name, c.eval_set_id, c.eval_id): c for p in plans for c in p.cases}
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for suite in results.suites:
        by_set: dict[str, list[CaseResult]] = {}
        for case in suite.cases:
            by_set.setdefault(case.eval_set_id, []).append(case)
        for eval_set_id in sorted(by_set):
            result_id = safe_name(f"{suite.name}_{eval_set_id}")
            out[(suite.name, eval_set_id)] = {
                "eval_set_result_id": result_id,
                "eval_set_result_name": result_id,
                "eval_set_id": eval_set_id,
                "eval_case_results": [
                    _case_result(c, inputs.get((suite.name, eval_set_id, c.eval_id))) for c in by_set[eval_set_id]
                ],
                "creation_timestamp": 0.0,
            }
    return out


def write_adk_results(results: RunResults, plans: list[SuitePlan], out_dir: Path) -> list[Path]:
    """Write `<out_dir>/<suite>/<eval_set_id>.evalset_result.json` for each eval set; return the paths."""
    paths = []
    for (suite, eval_set_id), data in adk_eval_set_results(results, plans).items():
        path = out_dir / safe_name(suite) / (safe_name(eval_set_id) + SUFFIX)
        write_json(data, path)  # makes the folders, never through a link (evalgate.writing)
        paths.append(path)
    return paths
