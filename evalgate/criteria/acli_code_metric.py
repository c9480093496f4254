"""agents-cli's local code metrics: `custom_function` / `custom_function_file` with `def evaluate(instance)`.

Run as `agents-cli eval grade` runs them (google/agents/cli/eval/eval_utils.py and the SDK's
CustomMetricHandler in agentplatform/_genai/_evals_metric_handlers.py), in evalgate's process:

- The source is compiled as agents-cli compiles it (one namespace per metric, the file name
  `<custom_metric:NAME>` for inline source) when the metric first scores, not when the config
  is validated; a source that fails to run makes every case NOT_EVALUATED with the reason.
- `instance` is the SDK's: the case (the trace, content-less events dropped as grade drops
  them) dumped by the SDK's own EvalCase without `responses`, plus `response` (the first
  response's Content) and `prompt` (the prompt, or the scenario's starting prompt).
- The result: a number, a mapping with `score` (and `explanation`), or the SDK's
  EvalCaseMetricResult. An exception, or anything else returned, is NOT_EVALUATED with the
  reason, as the SDK's `CustomFunctionError(...)` records it; so is a case without response.
- Transient failures (ConnectionError, TimeoutError, or HTTP 408, 429, 500, 502, 503, 504
  anywhere in the exception's chain) are retried as agents-cli's `with_transient_retry`:
  at most 5 attempts and 120 s, exponential waits with full jitter, at most 8 s each.
"""

from __future__ import annotations

import math
import random
import threading
import time
from typing import Any, Callable, ClassVar, Optional

from pydantic import PrivateAttr

from evalgate.criteria.acli import AcliMetric, graded_case, prompt_content, response_content
from evalgate.criteria.base import Outcome

MAX_TRIES = 5
MAX_ELAPSED_S = 120.0
MAX_WAIT_S = 8.0
RETRYABLE = frozenset({408, 429, 500, 502, 503, 504})


class AcliCodeMetric(AcliMetric):
    """An agents-cli code metric: `def evaluate(instance)`, run locally, one score per case run."""

    name: ClassVar[str] = "acli_code_metric"

    _source: str = PrivateAttr(default="")
    _origin: str = PrivateAttr(default="")  # the file, or <custom_metric:NAME> for inline source
    _judge: bool = PrivateAttr(default=False)
    _fn: Optional[Callable[[Any], Any]] = PrivateAttr(default=None)
    _load_error: Optional[str] = PrivateAttr(default=None)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)
    # Injectable for tests: how the retry loop waits and draws its jitter.
    sleep: ClassVar[Callable[[float], None]] = staticmethod(time.sleep)
    jitter: ClassVar[Callable[[], float]] = staticmethod(random.random)

    @classmethod
    def declare(cls, name: str, source: str, origin: str, declared_in: str, place: str,
                judge: bool = False, scale: Any = None) -> "AcliCodeMetric":
        kind = AcliJudgedCodeMetric if judge else cls
        crit = kind()
        crit._declared(name.lower(), declared_in, place, scale)
        crit._source, crit._origin, crit._judge = source, origin, judge
        return crit

    def bind(self, runtime: Any) -> "AcliCodeMetric":
        return self  # its own code asks its judge, if any

    def options(self) -> dict[str, Any]:
        # The source is what the metric is: a change to it is a change of the metric.
        import hashlib

        return {**super().options(), "custom_function_sha256": hashlib.sha256(self._source.encode()).hexdigest()}

    def function(self) -> Callable[[Any], Any]:
        """`evaluate`, compiled once (thread-safe); RuntimeError with the reason when it cannot be."""
        with self._lock:
            if self._fn is None and self._load_error is None:
                namespace: dict[str, Any] = {"__name__": f"custom_metric_{self.metric_name}"}
                try:
                    exec(compile(self._source, self._origin, "exec"), namespace)
                except (Exception, SystemExit) as e:  # the user's module failing at import: every case says why
                    self._load_error = f"loading {self._origin} failed: {type(e).__name__}: {e}"
                else:
                    fn = namespace.get("evaluate")
                    if callable(fn):
                        self._fn = fn
                    else:
                        self._load_error = f"{self._origin} defines no callable evaluate(instance)"
            if self._fn is None:
                raise RuntimeError(self._load_error)
            return self._fn

    def score_trace_case(self, trace: dict[str, Any]) -> Outcome:
        try:
            fn = self.function()
        except RuntimeError as e:
            return Outcome(None, error=str(e))
        from agentplatform import types

        case = graded_case(trace)
        response = response_content(case)
        if not response:
            return Outcome(None, error=f"No response found for candidate 0 in EvalCase {case.eval_case_id}.")
        instance = case.model_dump(exclude={"responses"}, mode="json", exclude_none=True)
        instance["response"] = response.model_dump(mode="json", exclude_none=True)
        prompt = prompt_content(case)
        if prompt:
            instance["prompt"] = prompt.model_dump(mode="json", exclude_none=True)
        name = getattr(fn, "__name__", "unknown_custom_function")
        try:
            result = self._call(fn, instance)
        except Exception as e:  # the user's function failing is this case's NOT_EVALUATED
            return Outcome(None, error=f"CustomFunctionError({name}): {e}")
        details: dict[str, Any] = {"metric": self.metric_name}
        if isinstance(result, types.EvalCaseMetricResult):
            score, explanation = result.score, result.explanation
            if result.error_message:
                return Outcome(None, {**details, **_present(explanation)}, error=result.error_message)
        elif isinstance(result, dict) and "score" in result:
            score, explanation = result["score"], result.get("explanation")
        elif isinstance(result, (int, float)):
            score, explanation = result, None
        else:
            return Outcome(None, details, error=f"CustomFunctionError({name}): Returned unexpected type {type(result)}")
        if isinstance(score, bool):
            score = float(score)
        elif isinstance(score, str):  # the SDK's result model reads a numeric string as its number
            try:
                score = float(score.strip())
            except ValueError:
                pass
        if score is None:
            return Outcome(None, {**details, **_present(explanation)}, error=f"CustomFunctionError({name}): returned no score")
        if not isinstance(score, (int, float)) or not math.isfinite(score):  # the SDK records no explanation then
            return Outcome(None, details, error=f"CustomFunctionError({name}): the score {score!r} is not a finite number")
        return Outcome(float(score), {**details, **_present(explanation)})

    def _call(self, fn: Callable[[Any], Any], instance: dict[str, Any]) -> Any:
        """fn(instance), retried on transient failures as agents-cli's with_transient_retry."""
        start = time.monotonic()
        tries = 0
        while True:
            tries += 1
            try:
                return fn(instance)
            except Exception as e:
                if not is_transient(e) or tries >= MAX_TRIES or time.monotonic() - start >= MAX_ELAPSED_S:
                    raise
                self.sleep(self.jitter() * min(MAX_WAIT_S, 2.0 ** (tries - 1)))


class AcliJudgedCodeMetric(AcliCodeMetric):
    """A code metric declared `judge: true`: it asks an LLM, so its scores are noisy, and cases
    are scored on several threads (as agents-cli grades them concurrently)."""

    judge: ClassVar[bool] = True


def _present(explanation: Any) -> dict[str, Any]:
    return {"explanation": str(explanation)} if explanation is not None else {}


def is_transient(exc: Optional[BaseException]) -> bool:
    """Whether a failure is worth retrying: agents-cli's rule, the exception's causes and contexts included."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return True
        code = getattr(exc, "code", None) or getattr(exc, "status_code", None) or getattr(getattr(exc, "response", None), "status_code", None)
        if isinstance(code, int) and code in RETRYABLE:
            return True
        exc = exc.__cause__ or exc.__context__
    return False
