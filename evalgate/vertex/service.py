"""The contract between Vertex metric criteria and the run's runtime.

A criterion builds an `EvalRequest` (a versioned managed-metric name, or a metric spec of its
own, and the REST `instance` JSON of evaluateInstances) and calls `runtime.evaluate(request)`. The runtime
(`evalgate.judge.runtime.JudgeRuntime.evaluate`) sends it through google-cloud-aiplatform
with the same run-wide in-flight bound, rate cap, retry loop (408, 409, 429, 499, 5xx,
timeouts), deadline and content-addressed cache as judge requests, and never raises for a
service or network failure: the reply's `error` says why (a row-level error from the
service too), which the criterion records as NOT_EVALUATED.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass(frozen=True)
class EvalRequest:
    criterion: str  # the criterion's name in the config, for stats (e.g. "safety_v1", "vertexai:general_quality_v1")
    metric: str  # the versioned managed metric, e.g. "general_quality_v1" (always pinned)
    instance_json: str  # the evaluateInstances `instance` as canonical JSON (REST field names)
    prompt_version: str = "1"  # bump when the instance mapping changes: part of the cache key
    # The `metrics[0]` entry as canonical JSON when it is not the managed metric `metric` (e.g.
    # {"llm_based_metric_spec": {"metric_prompt_template": ...}}); part of the cache key.
    metric_spec_json: Optional[str] = None
    # The request's `autorater_config` as canonical JSON (the judge model, its generation
    # settings, its sampling count), when the criterion sets one; part of the cache key.
    autorater_config_json: Optional[str] = None


@dataclass
class EvalReply:
    score: Optional[float] = None
    explanation: Optional[str] = None
    rubric_verdicts: list[dict[str, Any]] = field(default_factory=list)  # [{rubric_id, description, verdict: bool, reasoning}]
    error: Optional[str] = None
    cached: bool = False
