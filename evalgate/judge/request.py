"""What a judge criterion asks and what it gets back: the judge request and reply, shared by the runtime and its cache."""

from __future__ import annotations

import threading
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass(frozen=True)
class JudgeRequest:
    criterion: str  # metric name, for per-criterion stats
    prompt_version: str  # the criterion's prompt version: part of the cache key
    model: str  # e.g. "gemini-2.5-flash"
    system: str  # system instruction
    prompt: str  # the user turn: instructions plus delimited agent data
    response_schema: Optional[dict[str, Any]]  # JSON Schema for structured output
    config: tuple[tuple[str, Any], ...] = ()  # generation settings (temperature, seed, ...), sorted items
    sample: int = 0  # sample index: part of the cache key, so N samples are N requests


@dataclass
class JudgeReply:
    text: Optional[str] = None  # the model's text; None on failure
    error: Optional[str] = None  # why there is no usable text (after retries)
    down: bool = False  # the failure was the service's (evalgate.judge.retry.Outcome.down), not the request's
    cached: bool = False
    usage: dict[str, int] = field(default_factory=dict)  # prompt_tokens, output_tokens (incl. thinking), total_tokens


class CaseTally:
    """How many of one case's judge requests were answered from the cache, which of its
    criteria had a request fail because its service was down (criterion -> "judge" or
    "vertex"), and the runtime's counts for it. The engine sets one per case in `CASE_TALLY` while it scores the case; the
    runtime counts into it."""

    def __init__(self) -> None:
        self.cache_hits = 0
        self.down: dict[str, str] = {}
        # Per criterion, what the runtime counted for this case (its stats keys): a suite's
        # stats are its cases' added up, whenever and wherever each case was scored.
        self.stats: dict[str, dict[str, int]] = {}
        self._lock = threading.Lock()

    def count(self, criterion: str, keys: tuple[str, ...], deltas: dict[str, int]) -> None:
        with self._lock:
            counts = self.stats.setdefault(criterion, dict.fromkeys(keys, 0))
            for name, value in deltas.items():
                counts[name] = counts.get(name, 0) + value

    def hit(self) -> None:
        with self._lock:
            self.cache_hits += 1

    def unavailable(self, criterion: str, service: str) -> None:
        with self._lock:
            self.down.setdefault(criterion, service)


CASE_TALLY: ContextVar[Optional[CaseTally]] = ContextVar("evalgate_case_tally", default=None)

# A confirmation run's re-draw of judge samples (evalgate.gate.confirm): 0 for the first run; r
# for the r-th re-draw. A judge criterion then asks samples r * num_samples + j, and the
# runtime never answers them from the cache, so a re-draw is a fresh draw, never a replay.
REDRAW: ContextVar[int] = ContextVar("evalgate_redraw", default=0)
