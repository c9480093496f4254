"""agents-cli's results file (`results_<ts>.json`), written for each suite: what `agents-cli eval
compare` and `agents-cli eval analyze` read.

The shape is the SDK's `EvaluationResult` as agents-cli dumps it (agentplatform `types`):
`eval_case_results` (per case, by `eval_case_index`, one response candidate whose
`metric_results` are keyed by criterion name: `score`, the explanation and rubric verdicts a
criterion gave, and for a criterion that was not evaluated its reason as `error_message`), `summary_metrics` (per criterion, computed as the
SDK aggregates: cases total, valid and errored, mean and sample standard deviation of the
valid scores), `evaluation_dataset[0].eval_cases` (each case as graded: the agents-cli trace
of its first run, or for an ADK case one built from its turns, with `eval_case_id` set to the
case's id and `evalgate_eval_set_id` to its eval set) and `metadata`.

Unlike agents-cli's own files these are deterministic where results.json is: cases in
(eval_set_id, eval_id) order, criteria by name, keys in the SDK's field order (a graded
case's as the trace has them), no creation timestamp, and the file named after the suite
(`agents-cli/results_<suite>.json`), not the time.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

from evalgate.results import CriterionResult, RunResults, Status, SuiteResult, write_json

DIR = "agents-cli"
# agents-cli's one candidate when its results name none (the SDK's default candidate name).
CANDIDATE = "candidate_1"

TraceKey = tuple[str, str, str]  # (suite, eval_set_id, eval_id)


def file_name(suite: str) -> str:
    from evalgate.reports.adk_results import safe_name

    return f"results_{safe_name(suite)}.json"


def _metric(name: str, result: CriterionResult) -> dict[str, Any]:
    """The SDK's `EvalCaseMetricResult`: the score, or why there is none."""
    scored = result.score is not None and math.isfinite(result.score) and result.status is not Status.NOT_EVALUATED
    explanation, verdicts = None, []
    if result.runs is None:  # one run: its explanation (an agents-cli metric's sits on the last turn), its rubrics
        found = [inv.details.get("explanation") for inv in result.per_invocation]
        explanation = next((e for e in reversed(found) if isinstance(e, str) and e), None)
        verdicts = [rubric_verdict(r) for inv in result.per_invocation for r in inv.details.get("rubrics") or [] if isinstance(r, dict)]
    return {
        "metric_name": name,
        "score": result.score if scored else None,
        "explanation": explanation,
        "rubric_verdicts": verdicts or None,
        "raw_output": None,
        "error_message": None if scored else (result.error or "not evaluated"),
    }


def rubric_verdict(rubric: dict[str, Any]) -> dict[str, Any]:
    """One rubric's verdict as evalgate's criteria keep it (`details.rubrics[]`: rubric_id,
    verdict "yes"/"no", rationale, description) in the SDK's `RubricVerdict` shape, which
    `eval analyze` sends for loss clustering."""
    evaluated: dict[str, Any] = {"rubric_id": str(rubric.get("rubric_id") or "")}
    if rubric.get("description"):
        evaluated["content"] = {"property": {"description": str(rubric["description"])}}
    return {"evaluated_rubric": evaluated, "verdict": rubric.get("verdict") == "yes", "reasoning": rubric.get("rationale") or None}


def _summary(name: str, results: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The SDK's `AggregatedMetricResult` of one metric over the cases that have it."""
    results = list(results)
    scores = [r["score"] for r in results if r["error_message"] is None and r["score"] is not None]
    mean = stdev = None
    if scores:
        mean = sum(scores) / len(scores)
    if len(scores) > 1:
        stdev = math.sqrt(sum((s - mean) ** 2 for s in scores) / (len(scores) - 1))  # type: ignore[operator]
    return {
        "metric_name": name,
        "num_cases_total": len(results),
        "num_cases_valid": len(scores),
        "num_cases_error": len(results) - len(scores),
        "mean_score": mean,
        "stdev_score": stdev,
        "pass_rate": None,
    }


def suite_results(suite: SuiteResult, traces: Mapping[TraceKey, dict[str, Any]]) -> dict[str, Any]:
    """One suite's results as agents-cli's `EvaluationResult` dump."""
    cases = sorted(suite.cases, key=lambda c: (c.eval_set_id, c.eval_id))
    eval_cases, eval_case_results = [], []
    per_metric: dict[str, list[dict[str, Any]]] = {}
    for index, case in enumerate(cases):
        trace = dict(traces.get((suite.name, case.eval_set_id, case.eval_id)) or {})
        trace["eval_case_id"] = case.eval_id
        trace["evalgate_eval_set_id"] = case.eval_set_id
        eval_cases.append(trace)
        metrics = {}
        for name in sorted(case.criteria):
            metrics[name] = _metric(name, case.criteria[name])
            per_metric.setdefault(name, []).append(metrics[name])
        eval_case_results.append({"eval_case_index": index, "response_candidate_results": [{"response_index": 0, "metric_results": metrics}]})
    return {
        "eval_case_results": eval_case_results,
        "summary_metrics": [_summary(name, per_metric[name]) for name in sorted(per_metric)],
        "win_rates": None,
        "evaluation_dataset": [{"eval_cases": eval_cases}],
        "metadata": {"candidate_names": [CANDIDATE], "dataset_name": None, "dataset_id": None, "creation_timestamp": None},
        "agent_info": None,
    }


def write_agents_cli_results(results: RunResults, traces: Mapping[TraceKey, dict[str, Any]], out_dir: Path) -> list[Path]:
    """Write `<out_dir>/results_<suite>.json` for each suite; return the paths."""
    paths = []
    for suite in results.suites:
        path = out_dir / file_name(suite.name)
        # Keys in the SDK's field order, as agents-cli writes them; the graded cases as they are.
        # write_json makes the folder and the file, never through a link (evalgate.writing).
        write_json(suite_results(suite, traces), path)
        paths.append(path)
    return paths


# --- the graded cases ----------------------------------------------------------------


def traces_of(plans: list) -> dict[TraceKey, dict[str, Any]]:
    """Each case as agents-cli would have graded it after this run (`evalgate.engine.SuitePlan`s)."""
    return {(plan.name, case.eval_set_id, case.eval_id): _trace(case) for plan in plans for case in plan.cases}


def _trace(case: Any) -> dict[str, Any]:
    from evalgate.agents_cli.cases import trace_case

    runs = case.agent_runs()
    first = runs[0] if runs else None
    recorded = getattr(first, "trace", None)  # a trace read, or written when evalgate ran the agent
    if isinstance(recorded, dict):
        return recorded
    invocations = first.invocations if first is not None and first.error is None else None
    dataset_case = getattr(case, "acli", None)  # the agents-cli dataset case, as written
    dump = dataset_case if isinstance(dataset_case, dict) else _adk_case(case, invocations)
    return trace_case(dump, invocations) if invocations else dict(dump)


def _adk_case(case: Any, invocations: Optional[list]) -> dict[str, Any]:
    """An ADK case as an agents-cli case: its first user message as the prompt, its last
    expected answer as the reference."""
    out: dict[str, Any] = {}
    first = (case.expected or invocations or [None])[0]
    if first is not None:
        out["prompt"] = _content(first.user_content)
    if case.expected and case.expected[-1].final_response is not None:
        out["reference"] = {"response": _content(case.expected[-1].final_response)}
    return out


def _content(content: Any) -> dict[str, Any]:
    return content.model_dump(mode="json", exclude_none=True, by_alias=False)


def traces_in(folders: Iterable[Path], suites: Iterable[str]) -> dict[TraceKey, dict[str, Any]]:
    """The graded cases of the agents-cli results files evalgate wrote for `suites` into
    `folders` (the shards of a run, for `evalgate merge`), by suite, eval set and id."""
    from evalgate.errors import load_json_file

    out: dict[TraceKey, dict[str, Any]] = {}
    for suite in suites:
        for folder in folders:
            path = folder / DIR / file_name(suite)
            if not path.is_file():
                continue
            data = load_json_file(path)
            for dataset in (data.get("evaluation_dataset") if isinstance(data, dict) else None) or []:
                for trace in (dataset.get("eval_cases") if isinstance(dataset, dict) else None) or []:
                    if isinstance(trace, dict):
                        out[(suite, str(trace.get("evalgate_eval_set_id", "")), str(trace.get("eval_case_id", "")))] = trace
    return out
