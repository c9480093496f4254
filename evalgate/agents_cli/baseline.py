"""agents-cli's graded results (`results_<ts>.json`) read as an evalgate baseline.

`agents-cli eval grade` (and `eval run`) write the SDK's `EvaluationResult`: per case, by
`eval_case_index`, one entry per response with each metric's score or `error_message`;
`evaluation_dataset[0].eval_cases` the graded cases (the only link from an index to an
`eval_case_id`); `summary_metrics` and `metadata`. A team that already has such a file can
make it the baseline its first pull request is compared with (`evalgate baseline import
--agents-cli FILE --commit SHA`).

The results say nothing of evalgate's suites, eval sets or thresholds, so the config's suite
supplies them: a case is the suite's case of the same id (`eval_case_id`, else its index, as
`evalgate.agents_cli.cases.case_id`) in the eval set that `--eval-set` names, that the graded
case's `evalgate_eval_set_id` names (traces evalgate wrote), or else the only eval set of the
suite holding that id. A metric is the suite's criterion of the same name (the versioned
built-in name or a custom metric's own), and its score is given the status a run of that
criterion would record: PASSED for agents-cli's metrics, which have no threshold (the gate
then compares the scores), else by the criterion's threshold; an errored metric result is
NOT_EVALUATED with its `error_message`; explanations and rubric verdicts are kept as
evalgate's criteria keep them (`details.explanation`, `details.rubrics`). Cases and
metrics the suite does not have are left out and named.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from evalgate.agents_cli.cases import EVAL_SET_FIELD, AcliCase, case_id, trace_invocations
from evalgate.criteria.base import CaseOutcome, Outcome
from evalgate.engine import CaseInput, SuitePlan, _specs, _summaries, case_outcome_result, case_status, finish_run, finish_suite
from evalgate.errors import InputError, Problem, ProblemCollector, did_you_mean, load_json_file, problems_from_validation
from evalgate.results import CaseResult, CriterionResult, RunInfo, RunResults, Status

WHERE_FROM = "Pass the results_<ts>.json that `agents-cli eval grade` or `agents-cli eval run` wrote (artifacts/grade_results/), as it wrote it."


class _Model(BaseModel):
    # Tolerant, as agents-cli's own readers are: both casings, keys this evalgate does not use ignored.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", loc_by_alias=False)


class MetricResult(_Model):
    """The SDK's `EvalCaseMetricResult`."""

    metric_name: Optional[str] = None
    score: Optional[float] = None
    explanation: Optional[str] = None
    error_message: Optional[str] = None
    rubric_verdicts: Optional[list[Any]] = None


class CandidateResult(_Model):
    response_index: Optional[int] = None
    metric_results: Optional[dict[str, MetricResult]] = None


class CaseResults(_Model):
    eval_case_index: Optional[int] = None
    response_candidate_results: Optional[list[CandidateResult]] = None


class Dataset(_Model):
    eval_cases: Optional[list[dict[str, Any]]] = None


class Metadata(_Model):
    creation_timestamp: Optional[str] = None


class AcliResults(_Model):
    """The SDK's `EvaluationResult` as agents-cli dumps it, the parts a baseline needs."""

    eval_case_results: list[CaseResults]
    evaluation_dataset: Optional[list[Dataset]] = None
    metadata: Optional[Metadata] = None


@dataclass
class GradedCase:
    """One graded case: its id, the case as graded (a trace), and its metrics' results."""

    eval_id: str
    by_index: bool  # the case has no eval_case_id: its id is its index
    index: int  # eval_case_index
    place: str  # where in the file: eval_case_results[i]
    trace: dict[str, Any]
    metrics: dict[str, MetricResult]


@dataclass
class Imported:
    """A results file made a baseline: the run, and what was left out (for the reader)."""

    results: RunResults
    suite: str
    cases: int
    metrics: list[str]
    unmatched_cases: list[str] = field(default_factory=list)
    unknown_metrics: list[str] = field(default_factory=list)


def read_results(path: Path, shown: str) -> tuple[list[GradedCase], Optional[str]]:
    """The graded cases of an agents-cli results file, in file order, and when it was made.
    InputError (every problem at once, each naming its place) when it is not one."""
    data = load_json_file(path, shown)
    if not isinstance(data, dict) or not ({"eval_case_results", "evalCaseResults"} & data.keys()):
        raise InputError(Problem(shown, None, "not an agents-cli results file (no eval_case_results)", WHERE_FROM))
    try:
        parsed = AcliResults.model_validate(data)
    except ValidationError as e:
        raise InputError(problems_from_validation(e, shown)) from None
    datasets = parsed.evaluation_dataset or []
    graded = (datasets[0].eval_cases if datasets else None) or []
    if parsed.eval_case_results and not graded:
        raise InputError(
            Problem(
                shown,
                "evaluation_dataset[0].eval_cases",
                "missing or empty, so no result can be matched to its case (eval_case_index points into it)",
                WHERE_FROM,
            )
        )
    problems = ProblemCollector()
    out: list[GradedCase] = []
    first_at: dict[tuple[str, str], str] = {}
    for i, entry in enumerate(parsed.eval_case_results):
        place = f"eval_case_results[{i}]"
        index = entry.eval_case_index if entry.eval_case_index is not None else i
        if not 0 <= index < len(graded) or not isinstance(graded[index], dict):
            problems.add(shown, f"{place}.eval_case_index", f"{index} is not a case of evaluation_dataset[0].eval_cases ({len(graded)} cases)", WHERE_FROM)
            continue
        try:
            case = AcliCase.model_validate(graded[index])
        except ValidationError as e:
            problems.extend(problems_from_validation(e, shown, prefix=f"evaluation_dataset[0].eval_cases[{index}]"))
            continue
        eval_id = case_id(case, index)
        key = (str(graded[index].get(EVAL_SET_FIELD) or ""), eval_id)  # evalgate's files say the eval set
        if key in first_at:
            problems.add(
                shown,
                place,
                f"case '{eval_id}' was graded again (first at {first_at[key]}): the traces graded held it twice",
                "Grade one traces file (agents-cli eval grade --traces artifacts/traces/traces_<ts>.json), so each case is graded once.",
            )
            continue
        first_at[key] = place
        candidates = entry.response_candidate_results or []
        # One response per case is what agents-cli grades; with several, the first is the agent's.
        first = min(candidates, key=lambda c: c.response_index or 0) if candidates else None
        metrics = dict((first.metric_results or {}) if first else {})
        for name, result in metrics.items():
            if result.score is not None and not math.isfinite(result.score):
                metrics[name] = result.model_copy(update={"score": None, "error_message": result.error_message or f"the score is {result.score}"})
        out.append(GradedCase(eval_id=eval_id, by_index=eval_id == str(index) and case.eval_case_id != eval_id, index=index, place=place, trace=graded[index], metrics=metrics))
    problems.raise_if_any()
    created = parsed.metadata.creation_timestamp if parsed.metadata else None
    return out, created


def choose_suite(plans: list[SuitePlan], graded: list[GradedCase], name: Optional[str], shown: str) -> SuitePlan:
    """The suite the results belong to: `--suite`, else the config's only suite, else the
    only suite holding any of the graded case ids."""
    if name is not None:
        found = next((p for p in plans if p.name == name), None)
        if found is None:
            raise InputError(Problem(None, "--suite", f"the config has no suite '{name}'", did_you_mean(name, [p.name for p in plans]) or f"Suites: {', '.join(p.name for p in plans)}."))
        return found
    if len(plans) == 1:
        return plans[0]
    ids = {g.eval_id for g in graded}
    holding = [p for p in plans if any(c.eval_id in ids for c in p.cases)]
    if len(holding) == 1:
        return holding[0]
    which = ", ".join(p.name for p in (holding or plans))
    raise InputError(
        Problem(shown, None, f"its cases could belong to suites {which}" if holding else f"no suite of the config holds any of its cases (suites: {which})", "Name the suite: --suite NAME.")
    )


def _case_of(plan: SuitePlan, g: GradedCase, eval_set: Optional[str], shown: str, problems: ProblemCollector) -> Optional[CaseInput]:
    wanted = eval_set or g.trace.get(EVAL_SET_FIELD)
    matches = [c for c in plan.cases if c.eval_id == g.eval_id and (wanted is None or c.eval_set_id == wanted)]
    if len(matches) > 1:
        sets = ", ".join(sorted(c.eval_set_id for c in matches))
        problems.add(shown, g.place, f"case '{g.eval_id}' is in eval sets {sets} of suite {plan.name}", "Name the eval set the results graded: --eval-set ID (a dataset's is its file name without .json).")
        return None
    return matches[0] if matches else None


def _criterion_result(plan_case: CaseInput, name: str, result: Optional[MetricResult]) -> CriterionResult:
    crit = plan_case.criteria[name]
    if result is None:
        return CriterionResult(score=None, status=Status.NOT_EVALUATED, threshold=crit.threshold, error="the agents-cli results have no result of this metric for this case")
    if result.score is None or result.error_message is not None:  # an error, as the SDK counts it
        why = result.error_message or "agents-cli recorded no score"
        return CriterionResult(score=None, status=Status.NOT_EVALUATED, threshold=crit.threshold, error=why)
    details: dict[str, Any] = {}
    if result.explanation:
        details["explanation"] = result.explanation
    rubrics = [_rubric(k, v) for k, v in enumerate(result.rubric_verdicts or []) if isinstance(v, dict)]
    if rubrics:
        details["rubrics"] = rubrics
    outcome = Outcome(score=float(result.score), details=details)
    if not getattr(crit, "has_threshold", True):
        # agents-cli's own metrics have no threshold: a scored case is PASSED with its score,
        # as a run of them records it (evalgate.criteria.acli), and only the gate's
        # comparison of the scores judges it.
        outcome.status = Status.PASSED
    # Otherwise the status the suite's criterion gives this score (its threshold), as a run of it would.
    return case_outcome_result(CaseOutcome(outcome, [outcome]), crit.threshold)


def _rubric(k: int, verdict: dict[str, Any]) -> dict[str, Any]:
    """The SDK's `RubricVerdict` as evalgate's criteria keep a rubric's verdict (`details.rubrics[]`)."""

    def field(value: Any, *keys: str) -> Any:
        for key in keys:
            if isinstance(value, dict) and value.get(key) is not None:
                return value[key]
        return None

    rubric = field(verdict, "evaluated_rubric", "evaluatedRubric")
    content = field(rubric, "content")
    description = str(field(field(content, "property"), "description") or field(content, "text") or "")
    out = {
        "rubric_id": str(field(rubric, "rubric_id", "rubricId") or description or f"rubric_{k}"),
        "verdict": "yes" if verdict.get("verdict") is True else "no",
        "rationale": str(verdict.get("reasoning") or ""),
    }
    if description:
        out["description"] = description
    return out


def import_results(
    graded: list[GradedCase],
    plan: SuitePlan,
    config_digest: str,
    shown: str,
    eval_set: Optional[str] = None,
    created_at: Optional[str] = None,
) -> Imported:
    """The graded cases as the results of a run of `plan`'s suite (only that suite)."""
    problems = ProblemCollector()
    if eval_set is not None and not any(c.eval_set_id == eval_set for c in plan.cases):
        sets = sorted({c.eval_set_id for c in plan.cases})
        raise InputError(Problem(None, "--eval-set", f"suite {plan.name} has no eval set '{eval_set}'", did_you_mean(eval_set, sets) or f"Its eval sets: {', '.join(sets)}."))
    paired: list[tuple[GradedCase, CaseInput]] = []
    unmatched: list[str] = []
    for g in graded:
        case = _case_of(plan, g, eval_set, shown, problems)
        if case is None:
            unmatched.append(g.eval_id)
        else:
            paired.append((g, case))
    problems.raise_if_any()
    named = {n for g in graded for n in g.metrics}
    known = {n for _g, c in paired for n in c.criteria}
    used = sorted(named & known)
    if not paired:
        ids = ", ".join(sorted(g.eval_id for g in graded)[:5]) or "none"
        raise InputError(
            Problem(shown, None, f"none of its cases ({ids}) is a case of suite {plan.name}", "Import the results of this suite's cases (a case's id is its eval_case_id, else its index), or name another: --suite NAME.")
        )
    if not used:
        raise InputError(
            Problem(
                shown,
                None,
                f"none of its metrics ({', '.join(sorted(named)) or 'none'}) is a criterion of suite {plan.name} ({', '.join(sorted(known)) or 'none'})",
                "Give the suite the metrics the results graded (its criteria: the eval_config.yaml they were graded with).",
            )
        )
    cases = []
    for g, case in paired:
        try:
            actual: Optional[list] = trace_invocations(g.trace)
        except (ValueError, ValidationError):
            actual = None  # a trace we cannot read as turns: the scores still count, the report shows no answer
        if g.by_index and actual and case.expected and actual[-1].user_text() != case.expected[-1].user_text():
            # agents-cli leaves the cases it failed to run out of the traces, which shifts every later index.
            problems.add(
                shown,
                g.place,
                f"case '{g.eval_id}' is named by its index, and the message it answered is not the one case '{g.eval_id}' of eval set {case.eval_set_id} sends",
                "Give the dataset's cases an eval_case_id, generate and grade again (agents-cli leaves failed cases out of its traces, which shifts the indexes).",
            )
            continue
        criteria = {n: _criterion_result(case, n, g.metrics.get(n)) for n in used if n in case.criteria}
        # The expected turns beside the graded ones when they pair one to one (a prompt case).
        expected = case.expected if actual and case.expected and len(case.expected) == len(actual) else None
        shown_case = CaseInput(eval_set_id=case.eval_set_id, eval_id=case.eval_id, criteria={}, expected_digest=case.expected_digest, expected=expected, actual=actual)
        cases.append(
            CaseResult(
                eval_set_id=case.eval_set_id,
                eval_id=case.eval_id,
                expected_digest=case.expected_digest,
                status=case_status(criteria),
                criteria=criteria,
                invocations=_summaries(shown_case),
                source={**case.source, "actual": f"{shown} {g.place}"},
            )
        )
    problems.raise_if_any()
    cases.sort(key=lambda c: (c.eval_set_id, c.eval_id))
    specs = {n: s for n, s in _specs(plan.cases).items() if n in used}
    suite = finish_suite(plan.name, plan.not_evaluated, cases, specs, [], None)
    run = finish_run([suite], config_digest, RunInfo(started_at=created_at))
    return Imported(
        results=run,
        suite=plan.name,
        cases=len(cases),
        metrics=used,
        unmatched_cases=sorted(unmatched),
        unknown_metrics=sorted(named - known),
    )
