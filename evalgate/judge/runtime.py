"""The judge runtime: every judge request and Vertex AI evaluation of a run goes through one of these.

Contract (implemented by `JudgeRuntime`):
- `ask(request)` (an LLM judge on Gemini, through google-genai) and `evaluate(request)` (a
  Vertex AI managed metric, through google-cloud-aiplatform's EvaluationServiceClient) block
  until the result, a cache hit, or a final failure, and never raise for a service or
  network failure: the reply's `error` says why.
- Thread-safe: the engine calls them from many threads at once; the runtime alone bounds how
  many requests of both kinds together are in flight (`concurrency`) and how many start per
  minute (`rpm`).
- One retry loop for both (408, 409, 429, 499, 5xx, timeouts, connection errors; exponential
  backoff with jitter, honouring Retry-After), a per-request timeout and an overall deadline.
  The clients' own retries are switched off so the two do not stack.
- Content-addressed cache: key = hash(model, full prompt, generation settings, sample index,
  the criterion's prompt version), or for an evaluation hash("vertex", metric, instance,
  criterion, prompt version). A hit makes no request; only successful results are kept.
- Counts requests, cache hits, retries, failures and tokens per criterion (`stats()`).
"""

from __future__ import annotations

import collections
import email.utils
import json
import logging
import os
import random
import re
import struct
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from evalgate.judge.cache import JudgeCache, cache_key, eval_cache_key
from evalgate.vertex.service import EvalReply, EvalRequest

log = logging.getLogger(__name__)


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
    cached: bool = False
    usage: dict[str, int] = field(default_factory=dict)  # prompt_tokens, output_tokens (incl. thinking), total_tokens


NO_CREDENTIALS = (
    "no judge credentials: set GOOGLE_API_KEY or GEMINI_API_KEY, or GOOGLE_GENAI_USE_VERTEXAI "
    "with GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION"
)
INSTALL_HINT = "the judge needs google-genai, which is not installed: pip install 'adk-evalgate[judge]'"
DEADLINE_PASSED = "judge deadline passed"  # every deadline error starts with this
NO_VERTEX_CREDENTIALS = "no Vertex AI credentials"  # every such evaluate() error starts with this
VERTEX_INSTALL_HINT = (
    "Vertex AI metrics need google-cloud-aiplatform, which is not installed: pip install 'adk-evalgate[vertex]'"
)

INITIAL_BACKOFF_S = 1.0  # before the first retry; doubled for each next one
MAX_BACKOFF_S = 60.0
MAX_RETRY_AFTER_S = 300.0  # a server asking for a longer wait (a daily quota) ends the request instead
RPM_WINDOW_S = 60.0

STAT_KEYS = ("requests", "cache_hits", "retries", "failures", "prompt_tokens", "output_tokens", "total_tokens")

_SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]
_FINISHED = {None, "", "STOP", "FINISH_REASON_UNSPECIFIED"}
_BLOCKED = {
    "SAFETY", "RECITATION", "LANGUAGE", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
    "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION",
}
_HINTS = {
    400: "check judge_model and judge_model_config",
    401: "check the judge credentials",
    403: "check the judge credentials and that the API is enabled for them",
    404: "check judge_model: the model was not found",
}
_VERTEX_HINTS = {
    400: "check the metric name and the instance sent",
    401: "check the Vertex AI credentials",
    403: "check the Vertex AI credentials and that the Vertex AI API is enabled in the project",
    404: "check the project, the location and the metric name",
}


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
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        jitter: Callable[[], float] = random.random,
        client_factory: Optional[Callable[[], Any]] = None,
        vertex_project: Optional[str] = None,
        vertex_location: Optional[str] = None,
        vertex_endpoint: Optional[str] = None,
        vertex_credentials: Any = None,
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
        self._cache = JudgeCache(Path(cache_dir))
        self._sleep = sleep
        self._clock = clock
        self._jitter = jitter
        self._client_factory = client_factory
        self._deadline_at = None if deadline_s is None else clock() + deadline_s
        self._slots = threading.BoundedSemaphore(concurrency)
        self._rate = _RateLimiter(rpm, clock, sleep) if rpm else None
        self._lock = threading.Lock()  # client, stats
        self._resolve_lock = threading.Lock()  # the ADC lookup may be slow: not under the stats lock
        self._backend: Optional[_Backend] = None
        self._backend_reason: Optional[str] = None
        self._resolved = False
        self._client: Any = None
        self._client_error: Optional[str] = None
        self._stats: dict[str, dict[str, int]] = {}
        self._cache_write_warned = False
        self._vertex_settings = (vertex_project, vertex_location, vertex_endpoint, vertex_credentials)
        self._vertex: Optional[_VertexSetup] = None
        self._vertex_reason: Optional[str] = None
        self._vertex_resolved = False
        self._vertex_client: Any = None
        self._vertex_client_error: Optional[str] = None

    def __repr__(self) -> str:
        return f"JudgeRuntime(concurrency={self.concurrency}, rpm={self.rpm}, backend={self._backend!r})"

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
                self._backend, self._backend_reason = _resolve_backend(os.environ)
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
                return self._failed(request, str(exc))
            hit = self._cache.get(key)
            if hit is not None and (accept is None or accept(hit.text)):
                self._count(request.criterion, cache_hits=1)
                return JudgeReply(text=hit.text, cached=True, usage=dict(hit.usage))
        reason = self.credentials()
        if reason is not None:
            return self._failed(request, reason)
        client = self._get_client()
        if client is None:
            return self._failed(request, self._client_error or INSTALL_HINT)
        try:
            reply = self._call(client, request)
        except ImportError:  # a client_factory without google-genai installed
            reply = JudgeReply(error=INSTALL_HINT)
        if reply.error is not None:
            return self._failed(request, reply.error, reply.usage)
        if key is not None and reply.text is not None and (accept is None or accept(reply.text)):
            self._store(key, reply.text, reply.usage)
        return reply

    def vertex_credentials(self) -> Optional[str]:
        """None when Vertex AI evaluations can be made, else why not (starts with
        "no Vertex AI credentials"). Resolved once per runtime, without calling the service;
        Application Default Credentials are looked up here (google.auth.default)."""
        with self._resolve_lock:
            if not self._vertex_resolved:
                self._vertex, self._vertex_reason = _resolve_vertex(os.environ, *self._vertex_settings)
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
            hit = self._cache.get(key)
            stored = _stored_eval(hit.text) if hit is not None else None
            if stored is not None:
                self._count(request.criterion, cache_hits=1)
                return EvalReply(**stored, cached=True)
        try:
            instance = json.loads(request.instance_json)
        except ValueError as exc:
            return self._eval_failed(request,
                                     f"{request.criterion}: the Vertex AI instance is not JSON ({_short(exc)})")
        reason = self.vertex_credentials()
        if reason is not None:
            return self._eval_failed(request, reason)
        client = self._get_vertex_client()
        if client is None:
            return self._eval_failed(request, self._vertex_client_error or VERTEX_INSTALL_HINT)
        assert self._vertex is not None, "vertex_credentials() resolves the setup first"
        try:
            outcome = self._call_vertex(client, request, instance)
        except ImportError:
            outcome = _Outcome(error=VERTEX_INSTALL_HINT)
        if outcome.error is not None:
            return self._eval_failed(request, outcome.error)
        result = outcome.value
        if key is not None:
            self._store(key, json.dumps(result, sort_keys=True, ensure_ascii=False), {})
        return EvalReply(**result)

    def stats(self) -> dict[str, dict[str, int]]:
        """Per criterion: requests (HTTP attempts), cache_hits, retries, failures (asks and
        evaluations that ended without a result) and tokens spent by this run (cached
        replies cost nothing; Vertex AI evaluations report none)."""
        with self._lock:
            return {name: dict(counts) for name, counts in sorted(self._stats.items())}

    def close(self) -> None:
        """Release the HTTP clients. Idempotent."""
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

    def _call(self, client: Any, request: JudgeRequest) -> JudgeReply:
        from google.genai import types

        settings, problem = _settings(request)
        if problem is not None:
            return JudgeReply(error=problem)

        def send(timeout: float) -> Any:
            config = types.GenerateContentConfig(
                **settings,
                http_options=types.HttpOptions(
                    timeout=max(1, int(timeout * 1000)),  # milliseconds
                    retry_options=types.HttpRetryOptions(attempts=1),  # our loop is the only retry
                ),
            )
            return client.models.generate_content(model=request.model, contents=request.prompt, config=config)

        label = f"judge {request.criterion} sample {request.sample}"
        outcome = self._send_with_retries(request.criterion, label, _Transport(send, _classify, _read))
        return JudgeReply(text=outcome.text, error=outcome.error, usage=outcome.usage)

    def _call_vertex(self, client: Any, request: EvalRequest, instance: Any) -> "_Outcome":
        from google.cloud.aiplatform_v1beta1 import EvaluateInstancesRequest
        from google.protobuf import json_format

        setup = self._vertex
        assert setup is not None
        payload = {
            "location": f"projects/{setup.project}/locations/{setup.location}",
            "metrics": [{"predefined_metric_spec": {"metric_spec_name": request.metric}}],
            "instance": instance,
        }
        try:
            built = EvaluateInstancesRequest.from_json(json.dumps(payload), ignore_unknown_fields=False)
        except json_format.ParseError as exc:
            return _Outcome(error=f"{request.criterion}: the instance is not a Vertex AI evaluateInstances "
                                  f"instance ({_short(exc)})")

        def send(timeout: float) -> Any:
            return client.evaluate_instances(request=built, retry=None, timeout=timeout)  # our loop is the only retry

        label = f"Vertex AI {request.criterion} ({request.metric})"
        transport = _Transport(send, _classify_vertex, lambda response: _read_vertex(response, request.metric))
        return self._send_with_retries(request.criterion, label, transport)

    def _send_with_retries(self, criterion: str, label: str, transport: "_Transport") -> "_Outcome":
        """The one retry loop of the runtime, for every kind of request.

        Attempts `transport` until an outcome without error, an error that is not retryable,
        `max_attempts`, a Retry-After beyond MAX_RETRY_AFTER_S, or the deadline. Waits with
        exponential backoff and jitter, or as long as the server asked. The returned outcome
        sums the usage of every attempt; its error (if any) is scrubbed of secrets.
        """
        usage: dict[str, int] = {}
        last: Optional[str] = None
        attempt = 0
        while True:
            attempt += 1
            if self._past_deadline():
                return _Outcome(error=self._deadline_error(last), usage=usage)
            outcome = self._attempt(criterion, transport, attempt)
            if outcome is None:  # the deadline came while waiting for a slot or the rate cap
                return _Outcome(error=self._deadline_error(last), usage=usage)
            for name, value in outcome.usage.items():
                usage[name] = usage.get(name, 0) + value
            if outcome.error is None:
                outcome.usage = usage
                return outcome
            last = self._scrub(outcome.error)
            if not outcome.retryable:
                return _Outcome(error=last, usage=usage)
            if attempt >= self.max_attempts:
                return _Outcome(error=f"{last} (gave up after {attempt} attempts)", usage=usage)
            if outcome.retry_after is not None and outcome.retry_after > MAX_RETRY_AFTER_S:
                return _Outcome(
                    error=f"{last} (the server asks to wait {outcome.retry_after:g} s before retrying, "
                    f"more than {MAX_RETRY_AFTER_S:g} s: the quota may be exhausted for the day)",
                    usage=usage,
                )
            wait = self._wait_before_retry(attempt, outcome.retry_after)
            if self._deadline_at is not None and self._clock() + wait >= self._deadline_at:
                return _Outcome(error=self._deadline_error(last), usage=usage)
            log.debug("%s: retry %d in %.1f s after: %s", label, attempt, wait, last)
            self._sleep(wait)

    def _attempt(self, criterion: str, transport: "_Transport", attempt: int) -> Optional["_Outcome"]:
        """One HTTP attempt inside a pool slot and (if capped) a rate slot; None if the deadline came first."""
        remaining = self._remaining()
        if not self._slots.acquire(timeout=None if remaining is None else max(0.0, remaining)):
            return None
        try:
            if self._rate is not None and not self._rate.acquire(self._deadline_at):
                return None
            remaining = self._remaining()
            if remaining is not None and remaining <= 0:
                return None
            timeout = self.timeout_s if remaining is None else min(self.timeout_s, remaining)
            self._count(criterion, requests=1, retries=1 if attempt > 1 else 0)
            try:
                response = transport.send(timeout)
            except Exception as exc:  # classified here: nothing from a client escapes ask() or evaluate()
                return transport.classify(exc, timeout)
        finally:
            self._slots.release()
        outcome = transport.read(response)
        if outcome.usage:
            self._count(criterion, **outcome.usage)
        return outcome

    def _wait_before_retry(self, attempt: int, retry_after: Optional[float]) -> float:
        if retry_after is not None and retry_after > 0:
            return retry_after * (1.0 + 0.1 * self._jitter())  # honour the server, de-synchronised a little
        delay = min(MAX_BACKOFF_S, INITIAL_BACKOFF_S * 2 ** (attempt - 1))
        return delay * (0.5 + 0.5 * self._jitter())  # "equal jitter": at least half the delay

    # --- deadline, client, stats, secrets ------------------------------------------------------

    def _remaining(self) -> Optional[float]:
        return None if self._deadline_at is None else self._deadline_at - self._clock()

    def _past_deadline(self) -> bool:
        remaining = self._remaining()
        return remaining is not None and remaining <= 0

    def _deadline_error(self, last: Optional[str]) -> str:
        text = f"{DEADLINE_PASSED} ({self.deadline_s:g} s after the run started): no further judge request is made"
        return f"{text}; last error: {last}" if last else text

    def _get_client(self) -> Any:
        with self._lock:
            if self._client is None and self._client_error is None:
                try:
                    self._client = self._client_factory() if self._client_factory else _make_client(self._backend)
                except ImportError:
                    self._client_error = INSTALL_HINT
                except Exception as exc:  # google-genai refused the settings: say so on every reply
                    self._client_error = self._scrub(f"the judge client could not be created: {_short(exc)}")
            return self._client

    def _get_vertex_client(self) -> Any:
        with self._lock:
            if self._vertex_client is None and self._vertex_client_error is None:
                try:
                    self._vertex_client = _make_vertex_client(self._vertex)
                except ImportError:
                    self._vertex_client_error = VERTEX_INSTALL_HINT
                except _ClientTooOld as exc:
                    self._vertex_client_error = str(exc)
                except Exception as exc:  # the client refused the settings: say so on every reply
                    self._vertex_client_error = self._scrub(
                        f"the Vertex AI evaluation client could not be created: {_short(exc)}")
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
                counts[name] += value

    def _failed(self, request: JudgeRequest, error: str, usage: Optional[dict[str, int]] = None) -> JudgeReply:
        self._count(request.criterion, failures=1)
        return JudgeReply(error=self._scrub(error), usage=dict(usage or {}))

    def _eval_failed(self, request: EvalRequest, error: str) -> EvalReply:
        self._count(request.criterion, failures=1)
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


# --- helpers used only by JudgeRuntime ---------------------------------------------------------


@dataclass(frozen=True)
class _Backend:
    vertex: bool
    project: Optional[str] = None
    location: Optional[str] = None
    api_key: Optional[str] = field(default=None, repr=False)
    credentials: Any = field(default=None, repr=False)


@dataclass(frozen=True)
class _VertexSetup:
    project: str
    location: str
    endpoint: str  # host[:port], or a URL with its scheme (http:// for a local server)
    credentials: Any = field(default=None, repr=False)


@dataclass
class _Outcome:
    """What one attempt (or, from the retry loop, one request) came to."""

    text: Optional[str] = None  # a judge's reply text
    value: Any = None  # a Vertex evaluation result (see `_read_vertex`)
    error: Optional[str] = None
    retryable: bool = False
    retry_after: Optional[float] = None
    usage: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class _Transport:
    """How one kind of request is sent and read; the retry loop around it is the runtime's."""

    send: Callable[[float], Any]  # one HTTP attempt with this timeout (seconds); raises on failure
    classify: Callable[[Exception, float], _Outcome]  # a raised failure: what it means, whether to retry
    read: Callable[[Any], _Outcome]  # a response: the result, or why it is unusable (maybe retryable)


class _RateLimiter:
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


def _env_true(env: Any, name: str) -> Optional[bool]:
    value = env.get(name)
    return None if value is None else value.strip().lower() in ("true", "1")


def _resolve_backend(env: Any) -> tuple[Optional[_Backend], Optional[str]]:
    """Which backend google-genai would use, with what; or why there are no credentials."""
    api_key = (env.get("GOOGLE_API_KEY") or env.get("GEMINI_API_KEY") or "").strip() or None
    enterprise = _env_true(env, "GOOGLE_GENAI_USE_ENTERPRISE")  # google-genai: the newer name wins
    vertex = enterprise if enterprise is not None else _env_true(env, "GOOGLE_GENAI_USE_VERTEXAI")
    if not vertex:
        return (_Backend(False, api_key=api_key), None) if api_key else (None, NO_CREDENTIALS)
    project = (env.get("GOOGLE_CLOUD_PROJECT") or "").strip() or None
    location = (env.get("GOOGLE_CLOUD_LOCATION") or "").strip() or None
    if api_key and not project and not location:  # Vertex AI express mode
        return _Backend(True, api_key=api_key), None
    adc = _application_default_credentials()
    if adc is None:
        return None, INSTALL_HINT
    credentials, adc_project, missing = adc
    if missing:
        return None, (
            f"{NO_CREDENTIALS} (GOOGLE_GENAI_USE_VERTEXAI is set, but no Application Default Credentials "
            f"were found: {missing})"
        )
    project = project or adc_project
    if not project:
        return None, f"{NO_CREDENTIALS} (GOOGLE_CLOUD_PROJECT is not set and the credentials name no project)"
    return _Backend(True, project=project, location=location or "global", credentials=credentials), None


def _make_client(backend: Optional[_Backend]) -> Any:
    """A google-genai Client for `backend`, with google-genai's own retries off.

    Project, location and `vertexai=True` are passed explicitly: google-genai reads
    GOOGLE_VERTEX_BASE_URL only when `vertexai=True` is an argument, and with a custom
    base URL it drops the `projects/{p}/locations/{l}` path unless both are arguments.
    """
    from google import genai
    from google.genai import types

    assert backend is not None, "credentials() resolves the backend first"
    options = types.HttpOptions(retry_options=types.HttpRetryOptions(attempts=1))
    if not backend.vertex:
        return genai.Client(vertexai=False, api_key=backend.api_key, http_options=options)
    if backend.api_key and not backend.project:
        return genai.Client(vertexai=True, api_key=backend.api_key, http_options=options)
    return genai.Client(
        vertexai=True,
        project=backend.project,
        location=backend.location,
        credentials=backend.credentials,
        http_options=options,
    )


def _settings(request: JudgeRequest) -> tuple[dict[str, Any], Optional[str]]:
    """GenerateContentConfig fields for `request` (generation settings in either casing), or a problem."""
    from google.genai import types
    from pydantic import ValidationError

    settings = {_snake(str(name)): value for name, value in request.config}
    settings.pop("http_options", None)  # ours: timeout and no SDK retries
    settings["response_mime_type"] = "application/json"
    if request.system:
        settings["system_instruction"] = request.system
    if request.response_schema is not None:
        settings.pop("response_schema", None)
        settings["response_json_schema"] = request.response_schema
    try:
        types.GenerateContentConfig(**settings)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err.get("loc", ()))
            if err.get("type") == "extra_forbidden":
                problems.append(f"unknown setting {where!r}")
            else:
                problems.append(f"{where}: {err.get('msg')}")
        return settings, f"judge_model_config: {'; '.join(problems)}. Use google-genai GenerateContentConfig fields."
    return settings, None


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _classify(exc: Exception, timeout: float) -> _Outcome:
    """What a client exception means, and whether another attempt may help."""
    from google.genai import errors

    if isinstance(exc, errors.APIError):
        code = int(exc.code or 0)
        text = f"HTTP {code}" + (f" {exc.status}" if exc.status else "")
        if exc.message:
            text += f": {_one_line(str(exc.message))}"
        if code in _HINTS:
            text += f" ({_HINTS[code]})"
        retryable = _retryable_status(code)
        return _Outcome(error=f"judge request failed: {text}", retryable=retryable,
                        retry_after=_retry_after(exc) if retryable else None)
    timeouts, network = _transient_types()
    if isinstance(exc, timeouts):
        return _Outcome(error=f"judge request failed: no answer within {timeout:g} s (timeout)", retryable=True)
    if isinstance(exc, network):
        return _Outcome(error=f"judge request failed: network error ({type(exc).__name__}: {_short(exc)})",
                        retryable=True)
    auth = _classify_auth(exc, "judge")
    if auth is not None:
        return auth
    if isinstance(exc, ValueError) and (type(exc).__name__ in ("JSONDecodeError", "ValidationError")):
        return _Outcome(error=f"judge reply is not a generateContent response ({type(exc).__name__}: {_short(exc)})")
    return _Outcome(error=f"judge request failed: {type(exc).__name__}: {_short(exc)}")


def _classify_auth(exc: Exception, who: str) -> Optional[_Outcome]:
    """A google-auth failure (refreshing the token) as an outcome, or None if `exc` is not one."""
    try:
        import google.auth.exceptions as auth_errors
    except ImportError:  # pragma: no cover - google-auth comes with both clients
        return None
    if isinstance(exc, auth_errors.RefreshError):
        return _Outcome(error=f"{who} credentials could not be refreshed: {_short(exc)}")
    if isinstance(exc, auth_errors.TransportError):
        return _Outcome(error=f"{who} credentials: the token endpoint was not reachable ({_short(exc)})",
                        retryable=True)
    return None


def _retryable_status(code: int) -> bool:
    """The one place that says which HTTP statuses are worth another attempt (both clients).

    408, 409 (ABORTED), 429, 499 (CANCELLED) and 5xx but 501: "not implemented" does not
    change with another attempt.
    """
    return code in (408, 409, 429, 499) or (500 <= code <= 599 and code != 501)


def _transient_types() -> tuple[tuple[type, ...], tuple[type, ...]]:
    """(timeouts, network errors) of the HTTP libraries google-genai may use."""
    timeouts: list[type] = []
    network: list[type] = []
    for module_name in ("httpx", "httpx2"):
        try:
            module = __import__(module_name)
        except ImportError:
            continue
        timeouts += [getattr(module, "TimeoutException")] if hasattr(module, "TimeoutException") else []
        network += [getattr(module, n) for n in ("NetworkError", "RemoteProtocolError") if hasattr(module, n)]
    return tuple(timeouts), tuple(network)


def _retry_after(exc: Any) -> Optional[float]:
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


def _read(response: Any) -> _Outcome:
    """Text and usage from a GenerateContentResponse, or why it carries no usable text."""
    usage = _usage(getattr(response, "usage_metadata", None))
    feedback = getattr(response, "prompt_feedback", None)
    block = _name(getattr(feedback, "block_reason", None)) if feedback is not None else None
    if block:
        message = getattr(feedback, "block_reason_message", None)
        return _Outcome(error=f"judge refused the prompt (promptFeedback.blockReason {block}"
                        + (f": {_one_line(message)})" if message else ")"), usage=usage)
    candidates = getattr(response, "candidates", None) or []
    if not candidates:
        return _Outcome(error="judge returned no candidates", usage=usage)
    candidate = candidates[0]
    parts = getattr(getattr(candidate, "content", None), "parts", None) or []
    text = "".join(p.text for p in parts if getattr(p, "text", None) and not getattr(p, "thought", None))
    reason = _name(getattr(candidate, "finish_reason", None))
    if reason not in _FINISHED:
        message = getattr(candidate, "finish_message", None)
        detail = f": {_one_line(message)}" if message else ""
        if reason == "MAX_TOKENS":
            error = ("judge reply cut off at the output token limit (finishReason MAX_TOKENS); "
                     "raise max_output_tokens in judge_model_config")
        elif reason in _BLOCKED:
            error = f"judge reply blocked (finishReason {reason}{detail})"
        else:
            error = f"judge reply stopped early (finishReason {reason}{detail})"
        return _Outcome(error=error, usage=usage)
    if not text.strip():
        return _Outcome(error="judge returned an empty reply", usage=usage)
    return _Outcome(text=text, usage=usage)


def _usage(metadata: Any) -> dict[str, int]:
    if metadata is None:
        return {}
    prompt = getattr(metadata, "prompt_token_count", None) or 0
    output = (getattr(metadata, "candidates_token_count", None) or 0) + (
        getattr(metadata, "thoughts_token_count", None) or 0
    )
    total = getattr(metadata, "total_token_count", None) or prompt + output
    return {"prompt_tokens": int(prompt), "output_tokens": int(output), "total_tokens": int(total)}


def _name(value: Any) -> Optional[str]:
    if value is None:
        return None
    return str(getattr(value, "value", value))


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def _short(exc: BaseException, limit: int = 300) -> str:
    text = _one_line(exc) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- Vertex AI evaluations (google-cloud-aiplatform) -----------------------------------------------

_LOCATION_HELP = (
    "set GOOGLE_CLOUD_LOCATION (e.g. us-central1) or vertex_location; google-github-actions/auth "
    "exports GOOGLE_CLOUD_PROJECT but not GOOGLE_CLOUD_LOCATION"
)

# google.rpc.Code of a row-level error, as the HTTP status it stands for (for `_retryable_status`).
_RPC_AS_HTTP = {
    1: 499, 2: 500, 3: 400, 4: 504, 5: 404, 6: 409, 7: 403, 8: 429, 9: 400, 10: 409, 11: 400,
    12: 501, 13: 500, 14: 503, 15: 500, 16: 401,
}
_RPC_NAMES = {
    1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED", 5: "NOT_FOUND",
    6: "ALREADY_EXISTS", 7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED", 9: "FAILED_PRECONDITION",
    10: "ABORTED", 11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED", 13: "INTERNAL", 14: "UNAVAILABLE",
    15: "DATA_LOSS", 16: "UNAUTHENTICATED",
}


def _resolve_vertex(env: Any, project: Optional[str], location: Optional[str], endpoint: Optional[str],
                    credentials: Any) -> tuple[Optional[_VertexSetup], Optional[str]]:
    """Project, location, endpoint and credentials for evaluateInstances; or everything missing."""
    project = (project or env.get("GOOGLE_CLOUD_PROJECT") or "").strip() or None
    location = (location or env.get("GOOGLE_CLOUD_LOCATION") or "").strip() or None
    problems = []
    if credentials is None:
        adc = _application_default_credentials()
        if adc is None:
            return None, VERTEX_INSTALL_HINT
        credentials, adc_project, missing = adc
        if missing:
            problems.append(
                f"no Application Default Credentials were found ({missing}); in GitHub Actions, "
                "run google-github-actions/auth first (with permissions: id-token: write)"
            )
        else:
            project = project or adc_project
    if not project:
        problems.append("no project: set GOOGLE_CLOUD_PROJECT or vertex_project")
    if not location:
        problems.append(f"no location: {_LOCATION_HELP}")
    if problems:
        return None, f"{NO_VERTEX_CREDENTIALS}: {'; '.join(problems)}"
    assert project is not None and location is not None
    return _VertexSetup(project, location, endpoint or _regional_endpoint(location), credentials), None


def _application_default_credentials() -> Optional[tuple[Any, Optional[str], Optional[str]]]:
    """(credentials, their project, why there are none) from google-auth's ADC lookup, the one
    both Gemini-on-Vertex and the evaluation service use; None when google-auth is missing."""
    try:
        import google.auth
        import google.auth.exceptions
    except ImportError:
        return None
    try:
        credentials, project = google.auth.default(scopes=_SCOPES)
    except google.auth.exceptions.DefaultCredentialsError as exc:
        return None, None, _short(exc)
    return credentials, project, None


def _regional_endpoint(location: str) -> str:
    if location == "global":
        return "aiplatform.googleapis.com"
    if location in ("us", "eu"):  # multi-region endpoints, as vertexai.Client uses them
        return f"aiplatform.{location}.rep.googleapis.com"
    return f"{location}-aiplatform.googleapis.com"


def _make_vertex_client(setup: Optional[_VertexSetup]) -> Any:
    """google-cloud-aiplatform's low-level EvaluationServiceClient, on REST (HTTP/JSON).

    REST rather than gRPC: errors carry the HTTP status and the Retry-After header our retry
    loop honours, and a local HTTP server can stand in for the service in tests.
    """
    from google.api_core.client_options import ClientOptions
    from google.cloud.aiplatform_v1beta1 import EvaluateInstancesRequest, EvaluateInstancesResponse
    from google.cloud.aiplatform_v1beta1 import EvaluationServiceClient

    assert setup is not None, "vertex_credentials() resolves the setup first"
    fields = set(EvaluateInstancesRequest.meta.fields) | set(EvaluateInstancesResponse.meta.fields)
    if not {"metrics", "instance", "metric_results"} <= fields:  # managed metrics came late to v1beta1
        from google.cloud.aiplatform_v1beta1 import gapic_version

        raise _ClientTooOld(
            f"google-cloud-aiplatform {gapic_version.__version__} has no managed-metric evaluateInstances "
            "(metrics, instance, metric_results): pip install --upgrade 'adk-evalgate[vertex]'"
        )
    return EvaluationServiceClient(
        credentials=setup.credentials,
        transport="rest",
        client_options=ClientOptions(api_endpoint=setup.endpoint),
    )


class _ClientTooOld(Exception):
    """The installed google-cloud-aiplatform predates managed metrics in evaluateInstances."""


def _classify_vertex(exc: Exception, timeout: float) -> _Outcome:
    """What an EvaluationServiceClient (REST) exception means, and whether another attempt may help."""
    import requests
    from google.api_core import exceptions as core

    if isinstance(exc, core.GoogleAPICallError) and exc.code is not None:
        code = int(exc.code)
        status, message = _error_body(exc)
        text = f"HTTP {code}" + (f" {status}" if status else "")
        if message:
            text += f": {_one_line(message)}"
        if code in _VERTEX_HINTS:
            text += f" ({_VERTEX_HINTS[code]})"
        retryable = _retryable_status(code)
        return _Outcome(error=f"Vertex AI evaluation request failed: {text}", retryable=retryable,
                        retry_after=_retry_after(exc) if retryable else None)
    if isinstance(exc, requests.exceptions.Timeout):
        return _Outcome(error=f"Vertex AI evaluation request failed: no answer within {timeout:g} s (timeout)",
                        retryable=True)
    if isinstance(exc, (requests.exceptions.ConnectionError, requests.exceptions.ChunkedEncodingError)):
        return _Outcome(error=f"Vertex AI evaluation request failed: network error ({type(exc).__name__}: "
                              f"{_short(exc)})", retryable=True)
    auth = _classify_auth(exc, "Vertex AI")
    if auth is not None:
        return auth
    from google.protobuf import json_format

    if isinstance(exc, (ValueError, json_format.ParseError)):  # a 200 that is not an EvaluateInstancesResponse
        return _Outcome(error=f"Vertex AI reply is not an evaluateInstances response ({type(exc).__name__}: "
                              f"{_short(exc)})")
    return _Outcome(error=f"Vertex AI evaluation request failed: {type(exc).__name__}: {_short(exc)}")


def _error_body(exc: Any) -> tuple[Optional[str], Optional[str]]:
    """(status, message) of a Google API error body, falling back to the exception's message."""
    status = message = None
    try:
        error = exc.response.json().get("error")
    except Exception:  # no response, or not JSON
        error = None
    if isinstance(error, dict):
        status = error.get("status") if isinstance(error.get("status"), str) else None
        message = error.get("message") if isinstance(error.get("message"), str) else None
    return status, (message or getattr(exc, "message", None))


def _read_vertex(response: Any, metric: str) -> _Outcome:
    """Score, explanation and rubric verdicts from an EvaluateInstancesResponse, or why there are none.

    A row-level error (`metric_results[0].error` with a non-zero code) is an error with the
    service's message; it is retryable when its code is a transient one.
    """
    results = list(getattr(response, "metric_results", None) or [])
    if not results:
        return _Outcome(error=f"Vertex AI returned no metric result for {metric}")
    row = results[0]
    if "error" in row and row.error.code:
        code = int(row.error.code)
        name = _RPC_NAMES.get(code)
        message = _one_line(row.error.message) or "no message"
        return _Outcome(
            error=f"Vertex AI could not evaluate {metric} for this instance: {message} "
                  f"(code {code}{' ' + name if name else ''})",
            retryable=_retryable_status(_RPC_AS_HTTP.get(code, code)),
        )
    if "score" not in row:
        return _Outcome(error=f"Vertex AI returned no score for {metric}")
    verdicts = [
        {
            "rubric_id": v.evaluated_rubric.rubric_id,
            "description": v.evaluated_rubric.content.property.description,
            "verdict": bool(v.verdict),
            "reasoning": v.reasoning,
        }
        for v in row.rubric_verdicts
    ]
    explanation = row.explanation if "explanation" in row else None
    return _Outcome(value={"score": _float32(row.score), "explanation": explanation, "rubric_verdicts": verdicts})


def _float32(value: float) -> float:
    """The shortest decimal that is this float32 (`score` is a proto float): 0.7, not 0.699999988."""
    exact = struct.unpack("f", struct.pack("f", value))[0]
    for digits in range(1, 10):
        short = float(f"{exact:.{digits}g}")
        if struct.unpack("f", struct.pack("f", short))[0] == exact:
            return short
    return exact


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
