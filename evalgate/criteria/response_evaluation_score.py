"""ADK's `response_evaluation_score`: the coherence of each final response, 1 to 5, rated by Vertex AI."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, Optional

from pydantic import Field

from evalgate import reasons
from evalgate.adk import Invocation
from evalgate.criteria.base import Outcome, criterion
from evalgate.criteria.vertex_metrics import InstanceError, VertexCriterion, canonical_json, numeric_score
from evalgate.vertex.service import EvalReply, EvalRequest

LOWEST, HIGHEST = 1.0, 5.0  # the coherence rating scale


@criterion
class ResponseEvaluationScore(VertexCriterion):
    """Coherence of each final response on a 1-5 scale, rated by Vertex AI (ADK's `response_evaluation_score`); one request per invocation.

    ADK 2.13 resolves this metric to the Vertex SDK's `coherence` v1: it downloads a prompt
    template from a Google Cloud Storage bucket when the eval runs and sends it to
    evaluateInstances as an `llm_based_metric_spec`. That file is not in any package, and
    without access to the bucket ADK records the metric NOT_EVALUATED.

    evalgate sends the same request (one evaluateInstances call per invocation, the same
    instance: the user's text as the prompt, the final response's text as the response,
    the expected response's text as the reference when there is one, and the one-turn agent
    data the SDK adds) with the pointwise coherence template that google-cloud-aiplatform
    itself ships (`vertexai.evaluation`'s `MetricPromptTemplateExamples`, "coherence": a
    1 (incoherent) to 5 (completely coherent) rubric over the prompt and the response), read
    from the installed package. What may differ from ADK is therefore that template's
    wording and anything else the bucket's file adds; the tests check that, given this
    template in the bucket, ADK's request equals evalgate's.

    As in ADK: the eval case needs expected invocations (a scenario case is NOT_EVALUATED);
    each invocation is rated and held against the threshold, which is on the 1-5 scale; the
    case score is the mean of the rated invocations. Unlike ADK: an invocation without user
    text or response text is NOT_EVALUATED on its own with the reason (ADK's SDK refuses it
    and the metric is NOT_EVALUATED for the whole case), a rating outside 1-5 is
    NOT_EVALUATED, and, as for every evalgate criterion, a partly rated case can fail but
    never pass.
    """

    name: ClassVar[str] = "response_evaluation_score"
    metric: ClassVar[str] = "coherence"  # the metric's name in the Vertex SDK (no managed metric has it)
    needs_expected: ClassVar[bool] = True
    score_range: ClassVar[tuple[float, float]] = (LOWEST, HIGHEST)

    threshold: float = Field(ge=LOWEST, le=HIGHEST, description="Pass when the coherence rating (1 to 5) is at least this.")

    def instance(self, actual: list[Invocation], expected: Optional[list[Invocation]], i: int) -> dict[str, Any]:
        prompt, response = actual[i].user_text(), actual[i].final_text()
        reference = expected[i].final_text() if expected is not None and i < len(expected) else ""
        if not prompt:
            raise InstanceError(reasons.NO_USER_TEXT)
        if not response:
            raise InstanceError(reasons.NO_FINAL_TEXT)
        out: dict[str, Any] = {
            "prompt": _text_data(prompt),
            "response": _text_data(response),
            # The Vertex SDK adds the exchange as one turn of agent data.
            "agent_eval_data": {"turns": [{"turn_index": 0, "turn_id": "turn_0", "events": [
                {"author": "user", "content": _content(prompt)},
                {"author": "model", "content": _content(response)},
            ]}]},
        }
        if reference:
            out["reference"] = _text_data(reference)
        return out

    def request(self, instance: dict[str, Any]) -> EvalRequest:
        template = coherence_template()
        return EvalRequest(
            criterion=self.name,
            metric=self.metric,
            instance_json=canonical_json(instance),
            prompt_version=f"{self.mapping_version}-{hashlib.sha256(template.encode('utf-8')).hexdigest()[:12]}",
            metric_spec_json=canonical_json({"llm_based_metric_spec": {"metric_prompt_template": template}}),
        )

    def score_invocations(self, actual: list[Invocation], expected: Optional[list[Invocation]]) -> list[Outcome]:
        runtime = self.runtime

        def one(i: int) -> Outcome:
            try:
                request = self.request(self.instance(actual, expected, i))
            except InstanceError as e:
                return Outcome(None, {"metric": self.metric}, error=str(e))
            return read_rating(runtime.evaluate(request))

        return runtime.map([lambda i=i: one(i) for i in range(len(actual))])


def read_rating(reply: EvalReply) -> Outcome:
    details: dict[str, Any] = {"metric": ResponseEvaluationScore.metric}
    if reply.explanation:
        details["explanation"] = reply.explanation
    if reply.error:
        return Outcome(None, details, error=reply.error)
    score = numeric_score(reply)
    if score is None:
        return Outcome(None, details, error=reasons.NO_COHERENCE)
    if not LOWEST <= score <= HIGHEST:
        return Outcome(None, details, error=reasons.COHERENCE_OUT_OF_RANGE.format(score=f"{score:g}"))
    return Outcome(score, details)


def _content(text: str) -> dict[str, Any]:
    return {"parts": [{"text": text}]}


def _text_data(text: str) -> dict[str, Any]:
    return {"contents": {"contents": [_content(text)]}}


class TemplateMissing(InstanceError):
    """The installed google-cloud-aiplatform does not ship the coherence template."""


@lru_cache(maxsize=1)
def _template_or_reason() -> tuple[Optional[str], Optional[str]]:
    # Read from the installed file rather than imported: importing vertexai.evaluation needs
    # pandas (not a dependency of google-cloud-aiplatform) and takes seconds.
    where = "vertexai/evaluation/metrics/_default_templates.py"
    hint = ("response_evaluation_score needs the pointwise coherence template that google-cloud-aiplatform ships "
            f"({where}); pip install 'adk-evalgate[vertex]'")
    try:
        spec = importlib.util.find_spec("vertexai")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return None, hint
    path = Path(next(iter(spec.submodule_search_locations))) / "evaluation" / "metrics" / "_default_templates.py"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None, f"{hint}: {path} cannot be read"
    for node in tree.body:
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "COHERENCE_PROMPT_TEMPLATE" for t in node.targets)
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            return node.value.value, None
    return None, f"{hint}: {path} has no COHERENCE_PROMPT_TEMPLATE"


def coherence_template() -> str:
    """google-cloud-aiplatform's pointwise coherence template (what `vertexai.evaluation`'s
    `MetricPromptTemplateExamples.get_prompt_template("coherence")` returns); TemplateMissing
    (an invocation's NOT_EVALUATED reason) when the installed package has none."""
    template, reason = _template_or_reason()
    if template is None:
        raise TemplateMissing(reason)
    return template
