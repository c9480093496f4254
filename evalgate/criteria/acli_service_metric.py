"""agents-cli's built-in metrics: the eval service's predefined metrics, at the versions agents-cli resolves.

A bare name in `metrics_to_run` is the pinned version (v1; FINAL_RESPONSE_MATCH v2), a name in
`custom_metrics` without a body the newest, with its `metric_spec_parameters`
(evalgate.agents_cli.eval_config; per-step judges, `judge_model_step_configs`, are refused
there: the aiplatform client evalgate sends with has no field for them). Each case run is one
evaluateInstances request through the run's Vertex runtime (pool, rate cap, retries, cache;
evalgate.vertex.service), with the body the SDK's PredefinedMetricHandler sends
(agentplatform/_genai/_evals_metric_handlers.py), built here from the graded case:

- `metrics[0].predefined_metric_spec`: the versioned name and the parameters;
- `autorater_config`: the entry's `judge_model`, `judge_model_generation_config` and
  `judge_model_sampling_count` (the SDK sends them for multi-turn metrics too, which ignore them);
- `instance.prompt`: the case's prompt (or its scenario's starting prompt); for `multi_turn_*`
  metrics the `conversation_history` contents first, then the prompt;
- `instance.response`: the first response; `instance.reference`: the reference's response;
- `instance.rubric_groups`: the case's, as written; `instance.other_data.map_instance.context`:
  the case's context (text, or contents);
- `instance.agent_eval_data`: the case's `agent_data` as written (content-less events dropped, as
  `agents-cli eval grade` drops them); for a case without it, one turn made of the prompt
  (author "user"), the `intermediate_events` and the response (author "model").
A case with neither a response nor agent data is NOT_EVALUATED without a request, with the SDK's
reason. The reply is read as the SDK reads it: the score, the explanation and the rubric
verdicts; a row-level error or a failed call is NOT_EVALUATED with the reason.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Optional

from pydantic import PrivateAttr

from evalgate.criteria.acli import AcliMetric, graded_case, prompt_content, response_content
from evalgate.criteria.base import Outcome
from evalgate.criteria.vertex_metrics import canonical_json, read_reply
from evalgate.vertex.service import EvalRequest


class AcliServiceMetric(AcliMetric):
    """An agents-cli built-in metric, computed by the Vertex AI / Agent Platform eval service."""

    name: ClassVar[str] = "acli_service_metric"
    judge: ClassVar[bool] = True
    service: ClassVar[Optional[str]] = "vertex"
    mapping_version: ClassVar[str] = "acli-1"  # part of every request's cache key

    _params: dict[str, Any] = PrivateAttr(default_factory=dict)
    _judge: dict[str, Any] = PrivateAttr(default_factory=dict)  # the request's autorater_config
    _runtime: Any = PrivateAttr(default=None)

    @classmethod
    def declare(cls, metric: str, params: dict[str, Any], declared_in: str, place: str, scale: Any = None) -> "AcliServiceMetric":
        crit = cls()
        crit._declared(metric, declared_in, place, scale if scale is not None else (0.0, 1.0))
        crit._params = {k: v for k, v in params.items() if k == "metric_spec_parameters"}
        judge = {"autorater_model": params.get("judge_model"), "generation_config": params.get("judge_model_generation_config"),
                 "sampling_count": params.get("judge_model_sampling_count")}
        crit._judge = {k: v for k, v in judge.items() if v}
        return crit

    def bind(self, runtime: Any) -> "AcliServiceMetric":
        self._runtime = runtime
        return self

    def options(self) -> dict[str, Any]:
        return {**super().options(), **self._params, **({"autorater_config": self._judge} if self._judge else {})}

    def metric_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"metric_spec_name": self.metric_name}
        if self._params.get("metric_spec_parameters"):
            spec["metric_spec_parameters"] = self._params["metric_spec_parameters"]
        return {"predefined_metric_spec": spec}

    def score_trace_case(self, trace: dict[str, Any]) -> Outcome:
        if self._runtime is None:
            raise RuntimeError(f"{self.metric_name}: no runtime bound (the engine calls bind(runtime) before scoring)")
        case = graded_case(trace)
        if not response_content(case) and not case.agent_data:
            return Outcome(None, {"metric": self.metric_name}, error="Response content missing for candidate 0.")
        request = EvalRequest(
            criterion=self.metric_name,
            metric=self.metric_name,
            instance_json=canonical_json(evaluation_instance(case, self.metric_name.startswith("multi_turn"))),
            prompt_version=self.mapping_version,
            metric_spec_json=canonical_json(self.metric_spec()) if len(self.metric_spec()["predefined_metric_spec"]) > 1 else None,
            autorater_config_json=canonical_json(self._judge) if self._judge else None,
        )
        return read_reply(self.metric_name, self._runtime.evaluate(request))


def _dump(model: Any) -> Any:
    return model.model_dump(mode="json", exclude_none=True)


def _data(contents: list[Any]) -> dict[str, Any]:
    return {"contents": {"contents": [_dump(c) for c in contents]}}


def evaluation_instance(case: Any, multi_turn: bool) -> dict[str, Any]:
    """The evaluateInstances `instance` for a graded case (REST JSON), as the SDK sends it."""
    prompt = prompt_content(case)
    response = response_content(case)
    out: dict[str, Any] = {}
    if multi_turn:
        history = [m.content for m in case.conversation_history or []]
        out["prompt"] = _data(history + ([prompt] if prompt else []))
    elif prompt:
        out["prompt"] = _data([prompt])
    if response:
        out["response"] = _data([response])
    if case.reference and case.reference.response:
        out["reference"] = _data([case.reference.response])
    if case.rubric_groups:
        out["rubric_groups"] = {k: _dump(v) for k, v in case.rubric_groups.items()}
    context = _context(getattr(case, "context", None))
    if context is not None:
        out["other_data"] = {"map_instance": {"context": context}}
    agent_data = _agent_data(case, prompt, response)
    if agent_data is not None:
        out["agent_eval_data"] = agent_data
    return out


def _context(context: Any) -> Optional[dict[str, Any]]:
    if not context:
        return None
    if isinstance(context, str):
        return {"text": context}
    if hasattr(context, "parts"):  # a Content
        return _data([context])
    text = json.dumps(context) if isinstance(context, (list, dict)) else str(context)
    return {"contents": {"contents": [{"parts": [{"text": text}]}]}}


def _agent_data(case: Any, prompt: Any, response: Any) -> Optional[dict[str, Any]]:
    """The case's agent data, or the one turn the SDK makes of prompt, intermediate events and response."""
    if case.agent_data:
        return _dump(case.agent_data)
    events = []
    if prompt:
        events.append({"author": "user", "content": _dump(prompt)})
    for e in case.intermediate_events or []:
        event: dict[str, Any] = {"author": e.author, "content": _dump(e.content) if e.content else None}
        if e.creation_timestamp is not None:
            event["event_time"] = e.creation_timestamp.isoformat() if hasattr(e.creation_timestamp, "isoformat") else e.creation_timestamp
        events.append({k: v for k, v in event.items() if v is not None})
    if response:
        events.append({"author": "model", "content": _dump(response)})
    agents = case.agent_info.agents if case.agent_info else None
    if not agents and not events:
        return None
    out: dict[str, Any] = {}
    if agents:
        out["agents"] = {k: _dump(v) for k, v in agents.items()}
    if events:
        out["turns"] = [{"turn_index": 0, "turn_id": "turn_0", "events": events}]
    return out
