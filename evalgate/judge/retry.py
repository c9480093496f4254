"""The retry policy of every judge and Vertex AI request: what is retried, how long to wait, when to give up.

One loop for both kinds of request (408, 409, 429, 499, 5xx, timeouts, connection errors;
exponential backoff with jitter, honouring Retry-After), bounded by `max_attempts` and the
run's deadline. What one attempt means (the HTTP call, its pool slot) is the caller's.
"""

from __future__ import annotations

import email.utils
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

log = logging.getLogger(__name__)

DEADLINE_PASSED = "judge deadline passed"  # every deadline error starts with this
INITIAL_BACKOFF_S = 1.0  # before the first retry; doubled for each next one
MAX_BACKOFF_S = 60.0
MAX_RETRY_AFTER_S = 300.0  # a server asking for a longer wait (a daily quota) ends the request instead


@dataclass
class Outcome:
    """What one attempt (or, from the retry loop, one request) came to."""

    text: Optional[str] = None  # a judge's reply text
    value: Any = None  # a Vertex evaluation result (see `evalgate.judge.transport.read_vertex`)
    error: Optional[str] = None
    retryable: bool = False
    retry_after: Optional[float] = None
    usage: dict[str, int] = field(default_factory=dict)
    # The failure is the service's, not the request's: it could not be reached, timed out,
    # was overloaded, refused the credentials or answered with no response at all. A request
    # the service answered and refused (a blocked prompt, an input too long) is not.
    down: bool = False


@dataclass(frozen=True)
class Transport:
    """How one kind of request is sent and read; the retry loop around it is `RetryPolicy.run`."""

    send: Callable[[float], Any]  # one HTTP attempt with this timeout (seconds); raises on failure
    classify: Callable[[Exception, float], Outcome]  # a raised failure: what it means, whether to retry
    read: Callable[[Any], Outcome]  # a response: the result, or why it is unusable (maybe retryable)


class Deadline:
    """The run's overall judge deadline (none when `seconds` is None), counted from construction."""

    def __init__(self, seconds: Optional[float], clock: Callable[[], float]):
        self.seconds = seconds
        self._clock = clock
        self.at = None if seconds is None else clock() + seconds

    def remaining(self) -> Optional[float]:
        return None if self.at is None else self.at - self._clock()

    def passed(self) -> bool:
        remaining = self.remaining()
        return remaining is not None and remaining <= 0

    def reached_by(self, wait: float) -> bool:
        """Whether waiting `wait` seconds from now would reach the deadline."""
        return self.at is not None and self._clock() + wait >= self.at

    def error(self, last: Optional[str]) -> str:
        assert self.seconds is not None
        text = f"{DEADLINE_PASSED} ({self.seconds:g} s after the run started): no further judge request is made"
        return f"{text}; last error: {last}" if last else text


@dataclass
class RetryPolicy:
    """Attempts, backoff and the deadline for one request; `sleep` and `jitter` are injectable for tests."""

    max_attempts: int
    deadline: Deadline
    sleep: Callable[[float], None] = time.sleep
    jitter: Callable[[], float] = field(default=lambda: 0.5)

    def run(self, label: str, attempt: Callable[[int], Optional[Outcome]], scrub: Callable[[str], str]) -> Outcome:
        """The one retry loop of the runtime, for every kind of request.

        Calls `attempt(n)` (None: the deadline came while it waited for a slot) until an
        outcome without error, an error that is not retryable, `max_attempts`, a Retry-After
        beyond MAX_RETRY_AFTER_S, or the deadline. Waits with exponential backoff and jitter,
        or as long as the server asked. The returned outcome sums the usage of every attempt;
        its error (if any) is scrubbed of secrets.
        """
        usage: dict[str, int] = {}
        last: Optional[str] = None
        number = 0
        while True:
            number += 1
            if self.deadline.passed():
                return Outcome(error=self.deadline.error(last), usage=usage, down=True)
            outcome = attempt(number)
            if outcome is None:  # the deadline came while waiting for a slot or the rate cap
                return Outcome(error=self.deadline.error(last), usage=usage, down=True)
            for name, value in outcome.usage.items():
                usage[name] = usage.get(name, 0) + value
            if outcome.error is None:
                outcome.usage = usage
                return outcome
            last = scrub(outcome.error)
            if not outcome.retryable:
                return Outcome(error=last, usage=usage, down=outcome.down)
            if number >= self.max_attempts:
                return Outcome(error=f"{last} (gave up after {number} attempts)", usage=usage, down=True)
            if outcome.retry_after is not None and outcome.retry_after > MAX_RETRY_AFTER_S:
                return Outcome(
                    error=f"{last} (the server asks to wait {outcome.retry_after:g} s before retrying, "
                    f"more than {MAX_RETRY_AFTER_S:g} s: the quota may be exhausted for the day)",
                    usage=usage,
                    down=True,
                )
            wait = self.wait_before_retry(number, outcome.retry_after)
            if self.deadline.reached_by(wait):
                return Outcome(error=self.deadline.error(last), usage=usage, down=True)
            log.debug("%s: retry %d in %.1f s after: %s", label, number, wait, last)
            self.sleep(wait)

    def wait_before_retry(self, attempt: int, retry_after: Optional[float]) -> float:
        if retry_after is not None and retry_after > 0:
            return retry_after * (1.0 + 0.1 * self.jitter())  # honour the server, de-synchronised a little
        delay = min(MAX_BACKOFF_S, INITIAL_BACKOFF_S * 2 ** (attempt - 1))
        return delay * (0.5 + 0.5 * self.jitter())  # "equal jitter": at least half the delay


def retryable_status(code: int) -> bool:
    """The one place that says which HTTP statuses are worth another attempt (both clients).

    408, 409 (ABORTED), 429, 499 (CANCELLED) and 5xx but 501: "not implemented" does not
    change with another attempt.
    """
    return code in (408, 409, 429, 499) or (500 <= code <= 599 and code != 501)


def retry_after(exc: Any) -> Optional[float]:
    """Seconds the server asked us to wait: a Retry-After header (seconds or HTTP date), else a
    google.rpc.RetryInfo `retryDelay` in the error body (what the Gemini API sends with 429)."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    if value:
        value = value.strip()
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            when = None
        if when is not None:
            return max(0.0, when.timestamp() - time.time())
    details = getattr(exc, "details", None)
    if isinstance(details, list):  # google-api-core: the error's `details` list itself
        items: Any = details
    else:  # google-genai: the whole error body
        error = details.get("error", details) if isinstance(details, dict) else None
        items = error.get("details") if isinstance(error, dict) else None
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and str(item.get("@type", "")).endswith("google.rpc.RetryInfo"):
            match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)s\s*", str(item.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return None
