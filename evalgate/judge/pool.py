"""The run's bound on judge work: requests in flight, requests started per minute, and one executor for every sample.

Every judge request and Vertex AI evaluation of a run takes a slot of one semaphore
(`concurrency` in flight, both kinds together) and, when capped, a start of one sliding
60 s window (`rpm`). The (invocation, sample) jobs of every criterion run on one run-wide
executor (`map`), not on pools of their own: a case thread hands its samples over and waits.

When the judge and the agent share a model (evalgate.infer scores each case as its runs end,
while others still run), judge requests take a slot of a `Budget` the case runs take too,
instead of the pool's own: agent and judge together never have more in flight on that
model than the larger of their two limits, and either uses what the other leaves free.
`waits` says where the time of the run's requests went (in requests, waiting for a slot,
for the rate cap, backing off).
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional, Sequence, TypeVar

T = TypeVar("T")

RPM_WINDOW_S = 60.0
# Executor threads per slot: a job may wait for the rate cap or sleep before a retry without
# holding a slot, and the slots must stay busy meanwhile.
THREADS_PER_SLOT = 4

_worker = threading.local()  # set on the executor's threads

# Set while a case run holds a slot of the shared budget: the requests its simulated user makes
# ride on that slot, and take no slot of their own (taking one could deadlock: every slot held by
# a case run waiting for one).
IN_CASE_RUN: contextvars.ContextVar[bool] = contextvars.ContextVar("evalgate_in_case_run", default=False)


class Budget:
    """Slots shared by the agent's case runs (asyncio tasks) and judge requests (threads).
    Thread-safe. A released slot goes straight to a waiter: judge requests first (a judged
    case is a finished one, and the judge has its own, smaller limit to keep full), then case
    runs, each kind first come, first served."""

    def __init__(self, size: int):
        if size < 1:
            raise ValueError(f"a budget needs at least one slot, got {size}")
        self.size = size
        self._free = size
        self._lock = threading.Lock()
        self._threads: collections.deque[list[Any]] = collections.deque()  # [event, granted]
        self._tasks: collections.deque[list[Any]] = collections.deque()  # [(loop, future), granted]

    def acquire(self, timeout: Optional[float] = None) -> bool:
        """Take a slot from a thread, waiting at most `timeout` s; False, holding nothing, if none came."""
        with self._lock:
            if self._free:
                self._free -= 1
                return True
            event = threading.Event()
            waiter = [event, False]
            self._threads.append(waiter)
        if event.wait(None if timeout is None else max(0.0, timeout)):
            return True
        with self._lock:
            if waiter[1]:  # granted while the wait timed out
                return True
            self._threads.remove(waiter)
            return False

    async def acquire_async(self) -> None:
        """Take a slot from a task on an event loop."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        with self._lock:
            if self._free and not self._threads:
                self._free -= 1
                return
            waiter = [(loop, future), False]
            self._tasks.append(waiter)
        try:
            await future
        except asyncio.CancelledError:
            with self._lock:
                granted = waiter[1]
                if not granted:
                    self._tasks.remove(waiter)
            if granted and future.done() and not future.cancelled():
                self.release()  # granted, then cancelled before it ran: give the slot back
            raise  # (granted to a cancelled future: _grant gives it back)

    def release(self) -> None:
        with self._lock:
            if self._threads:
                waiter = self._threads.popleft()
                waiter[1] = True
                waiter[0].set()
                return
            if self._tasks:
                waiter = self._tasks.popleft()
                waiter[1] = True
                loop, future = waiter[0]
                loop.call_soon_threadsafe(self._grant, future)
                return
            self._free += 1

    def _grant(self, future: "asyncio.Future[None]") -> None:
        if future.cancelled():
            self.release()
        else:
            future.set_result(None)


class Waits:
    """Seconds the run's judge requests spent, added up over requests (thread-safe): in
    requests, waiting for a slot, waiting for the rate cap, backing off before a retry."""

    KEYS = ("requests_s", "slot_wait_s", "rate_wait_s", "backoff_s")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seconds = dict.fromkeys(self.KEYS, 0.0)

    def add(self, key: str, seconds: float) -> None:
        with self._lock:
            self._seconds[key] += seconds

    def record(self) -> dict[str, float]:
        with self._lock:
            return {k: round(v, 3) for k, v in self._seconds.items()}


class RequestPool:
    """Slots, rate cap and the run-wide executor. Thread-safe."""

    def __init__(self, concurrency: int, rpm: Optional[int], clock: Callable[[], float],
                 sleep: Callable[[float], None]):
        self.concurrency = concurrency
        self._slots = threading.BoundedSemaphore(concurrency)
        self._rate = RateLimiter(rpm, clock, sleep) if rpm else None
        self._lock = threading.Lock()
        self._executor: Optional[ThreadPoolExecutor] = None
        self.budget: Optional[Budget] = None  # shared with case runs while the agent runs (`share`)
        self.waits = Waits()
        self._held = threading.local()  # per thread: budgets taken by acquire(), for release()

    def share(self, budget: Optional[Budget]) -> None:
        """From now on requests take a slot of `budget` instead of one of the pool's own: the
        judge and the agent share one model's quota (evalgate.infer), and either may use the
        slots the other leaves free. A case run's own simulated user takes none: its
        requests ride on the case run's slot. None: back to the pool's own slots."""
        self.budget = budget

    def acquire(self, timeout: Optional[float], deadline_at: Optional[float]) -> bool:
        """Take a slot (the pool's own, or the shared budget's while there is one), waiting at
        most `timeout` s, and, if capped, a rate start before `deadline_at`; False, holding
        nothing, if one did not come in time."""
        t0 = time.monotonic()
        budget = self.budget
        if budget is not None and IN_CASE_RUN.get():
            pooled, budget = False, None  # on the case run's slot
        elif budget is not None:
            pooled = False
            if not budget.acquire(timeout):
                self.waits.add("slot_wait_s", time.monotonic() - t0)
                return False
        else:
            pooled = True
            if not self._slots.acquire(timeout=None if timeout is None else max(0.0, timeout)):
                self.waits.add("slot_wait_s", time.monotonic() - t0)
                return False
        t1 = time.monotonic()
        self.waits.add("slot_wait_s", t1 - t0)
        if self._rate is not None:
            got = self._rate.acquire(deadline_at)
            self.waits.add("rate_wait_s", time.monotonic() - t1)
            if not got:
                if pooled:
                    self._slots.release()
                if budget is not None:
                    budget.release()
                return False
        held = getattr(self._held, "stack", None)
        if held is None:
            held = self._held.stack = []
        held.append((pooled, budget))
        return True

    def release(self) -> None:
        held = getattr(self._held, "stack", None)
        pooled, budget = held.pop() if held else (True, None)
        if pooled:
            self._slots.release()
        if budget is not None:
            budget.release()

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
