"""The judge runtime: every judge request and Vertex AI evaluation of a run goes through one of these.

Contract (implemented by `JudgeRuntime`):
- `ask(request)` (an LLM judge on Gemini, through google-genai) and `evaluate(request)` (a
  Vertex AI managed metric, through google-cloud-aiplatform's EvaluationServiceClient) block
  until the result, a cache hit, or a final failure, and never raise for a service or
  network failure: the reply's `error` says why.
- Thread-safe: the engine calls them from many threads at once; the runtime alone bounds how
  many requests of both kinds together are in flight (`concurrency`) and how many start per
  minute (`rpm`), and runs every criterion's (invocation, sample) jobs on one run-wide
  executor (`map`; `evalgate.judge.pool`).
- One retry loop for both (`evalgate.judge.retry`: 408, 409, 429, 499, 5xx, timeouts,
  connection errors; exponential backoff with jitter, honouring Retry-After), a per-request
  timeout and an overall deadline. The clients' own retries are switched off so the two do
  not stack (`evalgate.judge.transport`).
- Content-addressed cache: key = hash(model, full prompt, generation settings, sample index,
  the criterion's prompt version), or for an evaluation hash("vertex", metric, instance,
  criterion, prompt version). A hit makes no request; only successful results are kept.
- Counts requests, cache hits, retries, failures and tokens per criterion (`stats()`).
- `early_stop`: whether majority-vote criteria may stop drawing samples once the majority
  is decided (`evalgate.criteria.judging`); the config's `judge.early_stop`.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, TypeVar

from evalgate.judge.cache import CachePolicy, JudgeCache, cache_key, eval_cache_key
from evalgate.judge.pool import RequestPool
from evalgate.judge.request import CASE_TALLY, REDRAW, JudgeReply, JudgeRequest
from evalgate.judge.retry import DEADLINE_PASSED, Deadline, Outcome, RetryPolicy, Transport
from evalgate.judge.transport import (
    INSTALL_HINT,
    NO_CREDENTIALS,
    NO_VERTEX_CREDENTIALS,
    VERTEX_INSTALL_HINT,
    Backend,
    ClientTooOld,
    VertexSetup,
    gemini_transport,
    make_client,
    make_vertex_client,
    resolve_backend,
    resolve_vertex,
    short,
    vertex_transport,
)
from evalgate.vertex.service import EvalReply, EvalRequest

log = logging.getLogger(__name__)
T = TypeVar("T")

# What callers import from here: the requests and replies, and the messages tests and
# criteria recognise.
__all__ = [
    "DEADLINE_PASSED", "INSTALL_HINT", "NO_CREDENTIALS", "NO_VERTEX_CREDENTIALS", "STAT_KEYS",
    "VERTEX_INSTALL_HINT", "JudgeReply", "JudgeRequest", "JudgeRuntime",
]

STAT_KEYS = ("requests", "cache_hits", "retries", "failures", "prompt_tokens", "output_tokens", "total_tokens")


class JudgeRuntime:
    """Every judge request of a run: cache, bounded pool, rate cap, retries, deadline, stats.

    Judge credentials follow google-genai: GOOGLE_API_KEY / GEMINI_API_KEY for the Gemini
    API, or GOOGLE_GENAI_USE_VERTEXAI with GOOGLE_CLOUD_PROJECT, GOOGLE_CLOUD_LOCATION
    (default "global", as google-genai) and Application Default Credentials for Vertex AI;
    GOOGLE_GEMINI_BASE_URL / GOOGLE_VERTEX_BASE_URL move the endpoint. `client_factory()`
    replaces the google-genai client (it then owns credentials).

    Vertex AI evaluations (`evaluate`) use Application Default Credentials, or
    `vertex_credentials` (a google.auth credentials object); the project is `vertex_project`,
    else GOOGLE_CLOUD_PROJECT, else the credentials' own; the location is `vertex_location`,
    else GOOGLE_CLOUD_LOCATION (required: there is no default region). `vertex_endpoint`
    (e.g. "http://127.0.0.1:8080") replaces the regional endpoint.

    `early_stop`: majority-vote criteria stop drawing samples once their majority is decided
    (the config's `judge.early_stop`, on by default there); off, every sample is drawn, as ADK.
    `stop_on_failing`: with `early_stop`, they stop on failing samples too (the plain majority
    rule); off, samples that all failed are drawn to the end (`evalgate.criteria.judging`).

    `cache_policy`: who this run is as a cache writer and whose entries it believes
    (`evalgate.judge.cache.CachePolicy`); files tracked by git are never read.

    The environment is read on first use, not at construction. `sleep`, `clock` and `jitter`
    are injectable for tests.
    """

    def __init__(
        self,
        concurrency: int = 8,
        rpm: Optional[int] = None,
        timeout_s: float = 60.0,
        deadline_s: Optional[float] = None,
        max_attempts: int = 5,
        cache_dir: Path = Path(".evalgate/cache"),
        use_cache: bool = True,
        cache_policy: CachePolicy = CachePolicy(),
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        jitter: Callable[[], float] = random.random,
        client_factory: Optional[Callable[[], Any]] = None,
        vertex_project: Optional[str] = None,
        vertex_location: Optional[str] = None,
        vertex_endpoint: Optional[str] = None,
        vertex_credentials: Any = None,
        early_stop: bool = False,
        stop_on_failing: bool = False,
    ):
        if concurrency < 1:
            raise ValueError(f"judge concurrency must be at least 1, got {concurrency}")
        if rpm is not None and rpm < 1:
            raise ValueError(f"judge requests per minute must be at least 1, got {rpm}")
        if timeout_s <= 0:
            raise ValueError(f"judge timeout must be positive, got {timeout_s}")
        if max_attempts < 1:
            raise ValueError(f"judge max_attempts must be at least 1, got {max_attempts}")
        self.concurrency = concurrency
        self.rpm = rpm
        self.timeout_s = timeout_s
        self.deadline_s = deadline_s
        self.max_attempts = max_attempts
        self.use_cache = use_cache
        self.early_stop = early_stop
        self.stop_on_failing = stop_on_failing
        self._cache = JudgeCache(Path(cache_dir), cache_policy)
        self._clock = clock
        self._client_factory = client_factory
        self._deadline = Deadline(deadline_s, clock)
        self._pool = RequestPool(concurrency, rpm, clock, sleep)

        def backoff(seconds: float) -> None:
            self._pool.waits.add("backoff_s", seconds)
            sleep(seconds)

        self._retry = RetryPolicy(max_attempts, self._deadline, backoff, jitter)
        self._lock = threading.Lock()  # client, stats
        self._resolve_lock = threading.Lock()  # the ADC lookup may be slow: not under the stats lock
        self._backend: Optional[Backend] = None
        self._backend_reason: Optional[str] = None
        self._resolved = False
        self._client: Any = None
        self._client_error: Optional[str] = None
        self._stats: dict[str, dict[str, int]] = {}
        self._cache_write_warned = False
        self._vertex_settings = (vertex_project, vertex_location, vertex_endpoint, vertex_credentials)
        self._vertex: Optional[VertexSetup] = None
        self._vertex_reason: Optional[str] = None
        self._vertex_resolved = False
        self._vertex_client: Any = None
        self._vertex_client_error: Optional[str] = None

    def __repr__(self) -> str:
        return (f"JudgeRuntime(concurrency={self.concurrency}, rpm={self.rpm}, early_stop={self.early_stop}, "
                f"backend={self._backend!r})")

    def __enter__(self) -> "JudgeRuntime":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- public --------------------------------------------------------------------------

    def credentials(self) -> Optional[str]:
        """None when judge requests can be made, else why not (starts with "no judge credentials").

        Resolved once per runtime. Vertex AI's Application Default Credentials are looked up
        here (google.auth.default), without calling the judge.
        """
        if self._client_factory is not None:
            return None
        with self._resolve_lock:
            if not self._resolved:
                self._backend, self._backend_reason = resolve_backend(os.environ)
                self._resolved = True
            return self._backend_reason

    def ask(self, request: JudgeRequest, accept: Optional[Callable[[str], bool]] = None) -> JudgeReply:
        """The judge's reply to one request: from the cache, or from the model with retries.

        Never raises for a judge, network or credentials failure: the reply's `error` says why.
        `accept(text)`, when given, says whether the criterion can read a reply: one it cannot
        is returned (the sample fails) but never cached, so a rerun asks again instead of
        replaying a failure forever; a cached reply it cannot read counts as a miss.
        """
        self._count(request.criterion)
        key = None
        if self.use_cache:
            try:
                key = cache_key(request)
            except TypeError as exc:
                return self._failed(request, str(exc))  # our request's fault, not the service's
            hit, refused = self._cache.lookup(key) if not REDRAW.get() else (None, False)  # a re-draw asks afresh
            if refused:
                self._count(request.criterion, cache_refused=1)
            if hit is not None and (accept is None or accept(hit.text)):
                self._count(request.criterion, cache_hits=1)
                _tally_hit()
                return JudgeReply(text=hit.text, cached=True, usage=dict(hit.usage))
        reason = self.credentials()
        if reason is not None:
            return self._failed(request, reason, down=True)
        client = self._get_client()
        if client is None:
            return self._failed(request, self._client_error or INSTALL_HINT, down=True)
        try:
            reply = self._call(client, request)
        except ImportError:  # a client_factory without google-genai installed
            reply = JudgeReply(error=INSTALL_HINT, down=True)
        if reply.error is not None:
            return self._failed(request, reply.error, reply.usage, down=reply.down)
        if key is not None and reply.text is not None and (accept is None or accept(reply.text)):
            self._store(key, reply.text, reply.usage)
        return reply

    def vertex_credentials(self) -> Optional[str]:
        """None when Vertex AI evaluations can be made, else why not (starts with
        "no Vertex AI credentials"). Resolved once per runtime, without calling the service;
        Application Default Credentials are looked up here (google.auth.default)."""
        with self._resolve_lock:
            if not self._vertex_resolved:
                self._vertex, self._vertex_reason = resolve_vertex(os.environ, *self._vertex_settings)
                self._vertex_resolved = True
            return self._vertex_reason

    def evaluate(self, request: EvalRequest) -> EvalReply:
        """One Vertex AI managed-metric evaluation (evaluateInstances): from the cache, or from
        the service with retries.

        Never raises for a service, network or credentials failure: the reply's `error` says
        why. A row-level error from the service (`metricResults[0].error`) is an error reply
        with the service's message; it is retried only when its code is a transient one
        (RESOURCE_EXHAUSTED, UNAVAILABLE, ...), like the same failure as an HTTP status.
        Only successful results are cached.
        """
        self._count(request.criterion)
        key = None
        if self.use_cache:
            key = eval_cache_key(request)
            hit, refused = self._cache.lookup(key) if not REDRAW.get() else (None, False)  # a re-draw asks afresh
            if refused:
                self._count(request.criterion, cache_refused=1)
            stored = _stored_eval(hit.text) if hit is not None else None
            if stored is not None:
                self._count(request.criterion, cache_hits=1)
                _tally_hit()
                return EvalReply(**stored, cached=True)
        try:
            instance = json.loads(request.instance_json)
        except ValueError as exc:
            return self._eval_failed(request,
                                     f"{request.criterion}: the Vertex AI instance is not JSON ({short(exc)})")
        reason = self.vertex_credentials()
        if reason is not None:
            return self._eval_failed(request, reason, down=True)
        client = self._get_vertex_client()
        if client is None:
            return self._eval_failed(request, self._vertex_client_error or VERTEX_INSTALL_HINT, down=True)
        assert self._vertex is not None, "vertex_credentials() resolves the setup first"
        try:
            outcome = self._call_vertex(client, request, instance)
        except ImportError:
            outcome = Outcome(error=VERTEX_INSTALL_HINT, down=True)
        if outcome.error is not None:
            return self._eval_failed(request, outcome.error, down=outcome.down)
        result = outcome.value
        if key is not None:
            self._store(key, json.dumps(result, sort_keys=True, ensure_ascii=False), {})
        return EvalReply(**result)

    def cache_refused(self) -> dict[str, int]:
        """Cache entries found but not believed, by reason (`JudgeCache.refused`)."""
        with self._lock:
            return dict(self._cache.refused)

    def map(self, jobs: Sequence[Callable[[], T]]) -> list[T]:
        """Run a criterion's jobs (its samples, its invocations) on the run's one executor;
        results in job order. The requests they make share the run's slots and rate cap."""
        return self._pool.map(jobs)

    def stats(self) -> dict[str, dict[str, int]]:
        """Per criterion: requests (HTTP attempts), cache_hits, retries, failures (asks and
        evaluations that ended without a result) and tokens spent by this run (cached
        replies cost nothing; Vertex AI evaluations report none); `cache_refused` when
        stored entries were found but not believed (`evalgate.judge.cache`)."""
        with self._lock:
            return {name: dict(counts) for name, counts in sorted(self._stats.items())}

    def waits(self) -> dict[str, float]:
        """Seconds the run's judge and Vertex AI requests spent, added up over requests: in
        the requests themselves (every attempt), waiting for a slot, for the rate cap, and
        backing off before retries (evalgate.judge.pool.Waits)."""
        return self._pool.waits.record()

    def share(self, budget: Any) -> None:
        """Judge requests take a slot of `budget` (evalgate.judge.pool.Budget) too, from now on."""
        self._pool.share(budget)

    def close(self) -> None:
        """Stop the executor and release the HTTP clients. Idempotent."""
        self._pool.close()
        with self._lock:
            client, self._client = self._client, None
            vertex, self._vertex_client = self._vertex_client, None
        for what, closing in (("judge", getattr(client, "close", None)),
                              ("Vertex AI", getattr(getattr(vertex, "transport", None), "close", None))):
            if closing is None:
                continue
            try:
                closing()
            except Exception:  # closing is best effort
                log.debug("closing the %s client failed", what, exc_info=True)

    # --- one request ---------------------------------------------------------------------

    # --- one request ---------------------------------------------------------------------

    def _call(self, client: Any, request: JudgeRequest) -> JudgeReply:
        transport, problem = gemini_transport(client, request)
        if transport is None:  # the judge's settings (the base's criteria) cannot be sent
            return JudgeReply(error=problem, down=True)
        label = f"judge {request.criterion} sample {request.sample}"
        outcome = self._send_with_retries(request.criterion, label, transport)
        return JudgeReply(text=outcome.text, error=outcome.error, usage=outcome.usage, down=outcome.down)

    def _call_vertex(self, client: Any, request: EvalRequest, instance: Any) -> Outcome:
        assert self._vertex is not None
        transport, problem = vertex_transport(client, self._vertex, request, instance)
        if transport is None:  # the metric's settings (the base's criteria) cannot be sent
            return Outcome(error=problem, down=True)
        return self._send_with_retries(request.criterion, f"Vertex AI {request.criterion} ({request.metric})", transport)

    def _send_with_retries(self, criterion: str, label: str, transport: Transport) -> Outcome:
        return self._retry.run(label, lambda attempt: self._attempt(criterion, transport, attempt), self._scrub)

    def _attempt(self, criterion: str, transport: Transport, attempt: int) -> Optional[Outcome]:
        """One HTTP attempt inside a pool slot and (if capped) a rate slot; None if the deadline came first."""
        if not self._pool.acquire(self._deadline.remaining(), self._deadline.at):
            return None
        try:
            remaining = self._deadline.remaining()
            if remaining is not None and remaining <= 0:
                return None
            timeout = self.timeout_s if remaining is None else min(self.timeout_s, remaining)
            self._count(criterion, requests=1, retries=1 if attempt > 1 else 0)
            sent = time.monotonic()
            try:
                response = transport.send(timeout)
            except Exception as exc:  # classified here: nothing from a client escapes ask() or evaluate()
                return transport.classify(exc, timeout)
            finally:
                self._pool.waits.add("requests_s", time.monotonic() - sent)
        finally:
            self._pool.release()
        outcome = transport.read(response)
        if outcome.usage:
            self._count(criterion, **outcome.usage)
        return outcome

    # --- client, stats, secrets ----------------------------------------------------------------

    def _get_client(self) -> Any:
        with self._lock:
            if self._client is None and self._client_error is None:
                try:
                    self._client = self._client_factory() if self._client_factory else make_client(self._backend)
                except ImportError:
                    self._client_error = INSTALL_HINT
                except Exception as exc:  # google-genai refused the settings: say so on every reply
                    self._client_error = self._scrub(f"the judge client could not be created: {short(exc)}")
            return self._client

    def _get_vertex_client(self) -> Any:
        with self._lock:
            if self._vertex_client is None and self._vertex_client_error is None:
                try:
                    self._vertex_client = make_vertex_client(self._vertex)
                except ImportError:
                    self._vertex_client_error = VERTEX_INSTALL_HINT
                except ClientTooOld as exc:
                    self._vertex_client_error = str(exc)
                except Exception as exc:  # the client refused the settings: say so on every reply
                    self._vertex_client_error = self._scrub(
                        f"the Vertex AI evaluation client could not be created: {short(exc)}")
            return self._vertex_client

    def _store(self, key: str, text: str, usage: dict[str, int]) -> None:
        try:
            self._cache.put(key, text, usage)
        except OSError as exc:
            with self._lock:
                warned, self._cache_write_warned = self._cache_write_warned, True
            if not warned:
                log.warning("judge cache %s is not writable (%s): replies are not cached", self._cache.root, exc)

    def _count(self, criterion: str, **deltas: int) -> None:
        with self._lock:
            counts = self._stats.setdefault(criterion, dict.fromkeys(STAT_KEYS, 0))
            for name, value in deltas.items():
                counts[name] = counts.get(name, 0) + value  # cache_refused: only when it happens
        tally = CASE_TALLY.get()
        if tally is not None:  # the case being scored: its suite's share, whenever it is scored
            tally.count(criterion, STAT_KEYS, deltas)

    def _failed(self, request: JudgeRequest, error: str, usage: Optional[dict[str, int]] = None, down: bool = False) -> JudgeReply:
        self._count(request.criterion, failures=1)
        if down:
            _tally_down(request.criterion, "judge")
        return JudgeReply(error=self._scrub(error), usage=dict(usage or {}), down=down)

    def _eval_failed(self, request: EvalRequest, error: str, down: bool = False) -> EvalReply:
        self._count(request.criterion, failures=1)
        if down:
            _tally_down(request.criterion, "vertex")
        return EvalReply(error=self._scrub(error))

    def _scrub(self, text: str) -> str:
        """`text` without any secret we know of, nor anything shaped like one."""
        backend = self._backend
        secrets = []
        if backend is not None:
            secrets.append(backend.api_key)
            secrets.append(getattr(backend.credentials, "token", None))
        if self._vertex is not None:
            secrets.append(getattr(self._vertex.credentials, "token", None))
        for secret in secrets:
            if isinstance(secret, str) and len(secret) >= 4:
                text = text.replace(secret, "***")
        text = re.sub(r"(?i)([?&]key=)[^&\s'\"]+", r"\1***", text)
        text = re.sub(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+", r"\1***", text)
        return re.sub(r"AIza[0-9A-Za-z_-]{20,}", "***", text)


def _tally_hit() -> None:
    tally = CASE_TALLY.get()
    if tally is not None:
        tally.hit()


def _tally_down(criterion: str, service: str) -> None:
    """A request of the case being scored failed because its service was down (not the request)."""
    tally = CASE_TALLY.get()
    if tally is not None:
        tally.unavailable(criterion, service)


def _stored_eval(text: str) -> Optional[dict[str, Any]]:
    """A cached evaluation result, or None when the file does not hold one (a miss)."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or set(data) != {"score", "explanation", "rubric_verdicts"}:
        return None
    score, explanation, verdicts = data["score"], data["explanation"], data["rubric_verdicts"]
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        return None
    if explanation is not None and not isinstance(explanation, str):
        return None
    if not isinstance(verdicts, list) or not all(_stored_verdict(v) for v in verdicts):
        return None
    return {"score": float(score), "explanation": explanation, "rubric_verdicts": verdicts}


def _stored_verdict(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and set(item) == {"rubric_id", "description", "verdict", "reasoning"}
        and isinstance(item["verdict"], bool)
        and all(isinstance(item[k], str) for k in ("rubric_id", "description", "reasoning"))
    )
