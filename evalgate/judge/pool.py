"""The run's bound on judge work: requests in flight, requests started per minute, and one executor for every sample.

Every judge request and Vertex AI evaluation of a run takes a slot of one semaphore
(`concurrency` in flight, both kinds together) and, when capped, a start of one sliding
60 s window (`rpm`). The (invocation, sample) jobs of every criterion run on one run-wide
executor (`map`), not on pools of their own: a case thread hands its samples over and waits.
"""

from __future__ import annotations

import collections
import contextvars
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Optional, Sequence, TypeVar

T = TypeVar("T")

RPM_WINDOW_S = 60.0
# Executor threads per slot: a job may wait for the rate cap or sleep before a retry without
# holding a slot, and the slots must stay busy meanwhile.
THREADS_PER_SLOT = 4

_worker = threading.local()  # set on the executor's threads


class RequestPool:
    """Slots, rate cap and the run-wide executor. Thread-safe."""

    def __init__(self, concurrency: int, rpm: Optional[int], clock: Callable[[], float],
                 sleep: Callable[[float], None]):
        self.concurrency = concurrency
        self._slots = threading.BoundedSemaphore(concurrency)
        self._rate = RateLimiter(rpm, clock, sleep) if rpm else None
        self._lock = threading.Lock()
        self._executor: Optional[ThreadPoolExecutor] = None

    def acquire(self, timeout: Optional[float], deadline_at: Optional[float]) -> bool:
        """Take a slot (waiting at most `timeout` s) and, if capped, a rate start before
        `deadline_at`; False, holding nothing, if either did not come in time."""
        if not self._slots.acquire(timeout=None if timeout is None else max(0.0, timeout)):
            return False
        if self._rate is not None and not self._rate.acquire(deadline_at):
            self._slots.release()
            return False
        return True

    def release(self) -> None:
        self._slots.release()

    def map(self, jobs: Sequence[Callable[[], T]]) -> list[T]:
        """Run the jobs on the run-wide executor; results in job order, whatever order they
        finish in. A job that itself calls `map` runs its jobs inline: a worker never waits
        for other workers, so the executor cannot deadlock on itself."""
        if len(jobs) <= 1 or getattr(_worker, "active", False):
            return [job() for job in jobs]
        executor = self._get_executor()
        # Each job runs in the caller's context (the case being scored: evalgate.judge.request.CASE_TALLY).
        futures = [executor.submit(contextvars.copy_context().run, job) for job in jobs]
        return [f.result() for f in futures]

    def close(self) -> None:
        """Stop the executor once its jobs are done (a later `map` starts a new one). Idempotent."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)

    def _get_executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    max_workers=self.concurrency * THREADS_PER_SLOT,
                    thread_name_prefix="evalgate-judge",
                    initializer=_mark_worker,
                )
            return self._executor


def _mark_worker() -> None:
    _worker.active = True


class RateLimiter:
    """At most `rpm` request starts in any sliding 60 s window (thread-safe)."""

    def __init__(self, rpm: int, clock: Callable[[], float], sleep: Callable[[float], None]):
        self.rpm = rpm
        self._clock = clock
        self._sleep = sleep
        self._starts: collections.deque[float] = collections.deque()
        self._lock = threading.Lock()

    def acquire(self, deadline_at: Optional[float]) -> bool:
        """Wait for a slot and take it; False (no slot taken) if the wait would pass `deadline_at`."""
        while True:
            with self._lock:
                now = self._clock()
                while self._starts and self._starts[0] <= now - RPM_WINDOW_S:
                    self._starts.popleft()
                if len(self._starts) < self.rpm:
                    self._starts.append(now)
                    return True
                wait = self._starts[0] + RPM_WINDOW_S - now
            if deadline_at is not None and now + wait >= deadline_at:
                return False
            self._sleep(wait)
