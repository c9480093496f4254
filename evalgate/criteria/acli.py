"""The common part of agents-cli's metrics (evalgate.agents_cli.eval_config): no threshold, one score per case run.

An agents-cli metric scores a case as `agents-cli eval grade` does: on the case's trace (the
dataset case with this run's agent events, as `eval generate` writes it), one score per run.
The engine hands it the case and the run (`input_kind = "acli"`): the trace is the run's own
(read from a traces file, or written when evalgate ran the agent), else made from the dataset
case and the run's invocations (`evalgate.agents_cli.cases.trace_case`).

These metrics have no threshold (agents-cli's config has none): a scored case is PASSED with
its score, an unscored one NOT_EVALUATED with the reason, and the gate compares the scores
with the baseline's, with margins on the metric's own scale (`scale()`, results'
`score_range`; evalgate.gate.values.score_range).
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Optional

from pydantic import Field, PrivateAttr

from evalgate import reasons
from evalgate.criteria.base import CaseOutcome, Criterion, InputKind, Outcome, Scope
from evalgate.results import Status


class AcliMetric(Criterion):
    """Base of agents-cli's metrics: scored on the case's trace, once per run, without a threshold."""

    input_kind: ClassVar[InputKind] = "acli"
    scope: ClassVar[Scope] = "case"
    needs_expected: ClassVar[bool] = False
    has_threshold: ClassVar[bool] = False

    # Not a threshold: no status depends on it. It is the scale's lowest score (0 when unknown),
    # what the flake ledger reads as "the case failed" for a score below it (a judge's 0 for "no
    # usable answer" on a 1-5 scale, evalgate.gate.values.outcome).
    threshold: float = Field(default=0.0, description="Not used: agents-cli's metrics have no threshold.")

    _metric_name: str = PrivateAttr(default="")
    _declared_in: str = PrivateAttr(default="")  # the eval config, as shown to the user
    _place: str = PrivateAttr(default="")  # where in it
    _scale: Optional[tuple[Optional[float], Optional[float]]] = PrivateAttr(default=None)

    @property
    def metric_name(self) -> str:
        """The name in results: a built-in's versioned name, or the custom metric's own (lower case)."""
        return self._metric_name

    def _declared(self, name: str, declared_in: str, place: str, scale: Any) -> None:
        self._metric_name, self._declared_in, self._place = name, declared_in, place
        self._scale = scale
        self.threshold = scale[0] if scale is not None and scale[0] is not None else 0.0

    def scale(self) -> Optional[tuple[Optional[float], Optional[float]]]:
        """The scale of its scores, lowest to highest (None at an unbounded end); None: not known."""
        return self._scale

    def options(self) -> dict[str, Any]:
        out = super().options()
        out.pop("include_intermediate_responses_in_final", None)
        return out

    def score_acli(self, case: Any, run: Any) -> CaseOutcome:
        """Score one run of a case: its trace, its invocations for the per-invocation record."""
        actual = list(getattr(run, "invocations", None) or [])
        trace = getattr(run, "trace", None)
        if trace is None:
            dump = getattr(case, "acli", None)
            if dump is None:
                return _whole(actual, Outcome(None, error=reasons.NOT_AN_ACLI_CASE))
            from evalgate.agents_cli.cases import trace_case

            trace = trace_case(dump, actual, None)
        overall = self.score_trace_case(trace)
        if overall.score is not None and overall.status is None:
            overall.status = Status.PASSED
        return _whole(actual, overall)

    def score_trace_case(self, trace: dict[str, Any]) -> Outcome:
        """One score for an agents-cli trace case (as `agents-cli eval grade` grades it)."""
        raise NotImplementedError


def _whole(actual: list[Any], overall: Outcome) -> CaseOutcome:
    # One score per case, as agents-cli's: it sits on the last invocation, the others are placeholders.
    if overall.score is None:
        overall.status = Status.NOT_EVALUATED
    per = [Outcome(None) for _ in actual[:-1]] + [overall] if actual else []
    return CaseOutcome(overall, per)


def graded_case(trace: dict[str, Any]) -> Any:
    """The trace as `agents-cli eval grade` hands it to the SDK: the SDK's own EvalCase, read as
    from the traces file, with events that carry no content dropped (grade drops them: the
    service refuses them)."""
    from agentplatform import types

    case = types.EvalCase.model_validate_json(json.dumps(trace, ensure_ascii=False))
    for turn in (case.agent_data.turns if case.agent_data else None) or []:
        turn.events = [e for e in turn.events or [] if e.content]
    return case


def prompt_content(case: Any) -> Any:
    """The case's prompt, or its scenario's starting prompt as a Content (the SDK's rule)."""
    if case.prompt:
        return case.prompt
    scenario = getattr(case, "user_scenario", None)
    if scenario and scenario.starting_prompt:
        from google.genai import types as genai_types

        return genai_types.Content(parts=[genai_types.Part(text=scenario.starting_prompt)])
    return None


def response_content(case: Any) -> Any:
    """The first response candidate's Content, or None."""
    if case.responses:
        return case.responses[0].response
    return None
