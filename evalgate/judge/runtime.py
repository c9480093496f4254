"""The judge runtime: every judge request of a run goes through one of these.

Contract (implemented by `JudgeRuntime`):
- `ask(request)` blocks until the reply, a cache hit, or a final failure, and never raises
  for a judge or network failure: it returns a `JudgeReply` with `error` set instead.
- Thread-safe: the engine calls it from many threads at once; the runtime alone bounds how
  many requests are in flight (`concurrency`) and how many start per minute (`rpm`).
- One retry mechanism (408, 429, 5xx, timeouts; exponential backoff with jitter, honouring
  Retry-After), a per-request timeout and an overall deadline. google-genai's own retries
  are switched off so the two do not stack.
- Content-addressed cache: key = hash(model, full prompt, generation settings, sample index,
  the criterion's prompt version). A hit makes no request.
- Counts requests, cache hits, retries, failures and tokens per criterion (`stats()`).
"""

from __future__ import annotations

import collections
import email.utils
import logging
import os
import random
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from evalgate.judge.cache import JudgeCache, cache_key

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
INSTALL_HINT = "the judge needs google-genai, which is not installed: pip install 'evalgate[judge]'"
DEADLINE_PASSED = "judge deadline passed"  # every deadline error starts with this

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


class JudgeRuntime:
    """Every judge request of a run: cache, bounded pool, rate cap, retries, deadline, stats.

    Credentials follow google-genai: GOOGLE_API_KEY / GEMINI_API_KEY for the Gemini API, or
    GOOGLE_GENAI_USE_VERTEXAI with GOOGLE_CLOUD_PROJECT, GOOGLE_CLOUD_LOCATION (default
    "global", as google-genai) and Application Default Credentials for Vertex AI;
    GOOGLE_GEMINI_BASE_URL / GOOGLE_VERTEX_BASE_URL move the endpoint. The environment is
    read on first use, not at construction. `sleep`, `clock` and `jitter` are injectable for
    tests; `client_factory()` replaces the google-genai client (it then owns credentials).
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
            try:
                self._cache.put(key, reply.text, reply.usage)
            except OSError as exc:
                with self._lock:
                    warned, self._cache_write_warned = self._cache_write_warned, True
                if not warned:
                    log.warning("judge cache %s is not writable (%s): replies are not cached", self._cache.root, exc)
        return reply

    def stats(self) -> dict[str, dict[str, int]]:
        """Per criterion: requests (HTTP attempts), cache_hits, retries, failures (asks that
        ended without text) and tokens spent by this run (cached replies cost nothing)."""
        with self._lock:
            return {name: dict(counts) for name, counts in sorted(self._stats.items())}

    def close(self) -> None:
        """Release the HTTP client. Idempotent."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None and hasattr(client, "close"):
            try:
                client.close()
            except Exception:  # closing is best effort
                log.debug("closing the judge client failed", exc_info=True)

    # --- one request ---------------------------------------------------------------------

    def _call(self, client: Any, request: JudgeRequest) -> JudgeReply:
        from google.genai import types

        settings, problem = _settings(request)
        if problem is not None:
            return JudgeReply(error=problem)
        usage: dict[str, int] = {}
        last: Optional[str] = None
        attempt = 0
        while True:
            attempt += 1
            if self._past_deadline():
                return JudgeReply(error=self._deadline_error(last), usage=usage)
            outcome = self._attempt(client, request, settings, types, attempt)
            if outcome is None:  # the deadline came while waiting for a slot or the rate cap
                return JudgeReply(error=self._deadline_error(last), usage=usage)
            for name, value in outcome.usage.items():
                usage[name] = usage.get(name, 0) + value
            if outcome.error is None:
                return JudgeReply(text=outcome.text, usage=usage)
            last = self._scrub(outcome.error)
            if not outcome.retryable:
                return JudgeReply(error=last, usage=usage)
            if attempt >= self.max_attempts:
                return JudgeReply(error=f"{last} (gave up after {attempt} attempts)", usage=usage)
            if outcome.retry_after is not None and outcome.retry_after > MAX_RETRY_AFTER_S:
                return JudgeReply(
                    error=f"{last} (the server asks to wait {outcome.retry_after:g} s before retrying, "
                    f"more than {MAX_RETRY_AFTER_S:g} s: the quota may be exhausted for the day)",
                    usage=usage,
                )
            wait = self._wait_before_retry(attempt, outcome.retry_after)
            if self._deadline_at is not None and self._clock() + wait >= self._deadline_at:
                return JudgeReply(error=self._deadline_error(last), usage=usage)
            log.debug("judge %s sample %d: retry %d in %.1f s after: %s",
                      request.criterion, request.sample, attempt, wait, last)
            self._sleep(wait)

    def _attempt(self, client: Any, request: JudgeRequest, settings: dict[str, Any], types: Any,
                 attempt: int) -> Optional["_Outcome"]:
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
            config = types.GenerateContentConfig(
                **settings,
                http_options=types.HttpOptions(
                    timeout=max(1, int(timeout * 1000)),  # milliseconds
                    retry_options=types.HttpRetryOptions(attempts=1),  # our loop is the only retry
                ),
            )
            self._count(request.criterion, requests=1, retries=1 if attempt > 1 else 0)
            try:
                response = client.models.generate_content(model=request.model, contents=request.prompt, config=config)
            except Exception as exc:  # classified below: nothing from the client escapes ask()
                return _classify(exc, timeout)
        finally:
            self._slots.release()
        outcome = _read(response)
        if outcome.usage:
            self._count(request.criterion, **outcome.usage)
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

    def _count(self, criterion: str, **deltas: int) -> None:
        with self._lock:
            counts = self._stats.setdefault(criterion, dict.fromkeys(STAT_KEYS, 0))
            for name, value in deltas.items():
                counts[name] += value

    def _failed(self, request: JudgeRequest, error: str, usage: Optional[dict[str, int]] = None) -> JudgeReply:
        self._count(request.criterion, failures=1)
        return JudgeReply(error=self._scrub(error), usage=dict(usage or {}))

    def _scrub(self, text: str) -> str:
        """`text` without any secret we know of, nor anything shaped like one."""
        backend = self._backend
        secrets = []
        if backend is not None:
            secrets.append(backend.api_key)
            secrets.append(getattr(backend.credentials, "token", None))
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


@dataclass
class _Outcome:
    text: Optional[str] = None
    error: Optional[str] = None
    retryable: bool = False
    retry_after: Optional[float] = None
    usage: dict[str, int] = field(default_factory=dict)


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
    try:
        import google.auth
        import google.auth.exceptions
    except ImportError:
        return None, INSTALL_HINT
    try:
        credentials, adc_project = google.auth.default(scopes=_SCOPES)
    except google.auth.exceptions.DefaultCredentialsError as exc:
        return None, (
            f"{NO_CREDENTIALS} (GOOGLE_GENAI_USE_VERTEXAI is set, but no Application Default Credentials "
            f"were found: {_short(exc)})"
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
        retryable = code in (408, 429) or 500 <= code <= 599
        return _Outcome(error=f"judge request failed: {text}", retryable=retryable,
                        retry_after=_retry_after(exc) if retryable else None)
    timeouts, network = _transient_types()
    if isinstance(exc, timeouts):
        return _Outcome(error=f"judge request failed: no answer within {timeout:g} s (timeout)", retryable=True)
    if isinstance(exc, network):
        return _Outcome(error=f"judge request failed: network error ({type(exc).__name__}: {_short(exc)})",
                        retryable=True)
    try:
        import google.auth.exceptions as auth_errors
    except ImportError:  # pragma: no cover - google-auth comes with google-genai
        auth_errors = None
    if auth_errors is not None and isinstance(exc, auth_errors.RefreshError):
        return _Outcome(error=f"judge credentials could not be refreshed: {_short(exc)}")
    if auth_errors is not None and isinstance(exc, auth_errors.TransportError):
        return _Outcome(error=f"judge credentials: the token endpoint was not reachable ({_short(exc)})",
                        retryable=True)
    if isinstance(exc, ValueError) and (type(exc).__name__ in ("JSONDecodeError", "ValidationError")):
        return _Outcome(error=f"judge reply is not a generateContent response ({type(exc).__name__}: {_short(exc)})")
    return _Outcome(error=f"judge request failed: {type(exc).__name__}: {_short(exc)}")


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
