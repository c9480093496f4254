"""A stand-in for Gemini `generateContent` on 127.0.0.1, for tests through the real google-genai client.

It speaks the REST shapes in shared/notes/wire-protocols.md on both paths:
- Gemini API: `POST /{version}/models/{model}:generateContent`, key in `x-goog-api-key` or `?key=`;
- Vertex AI:  `POST /{version}/projects/{p}/locations/{l}/publishers/{pub}/models/{model}:generateContent`,
  `Authorization: Bearer ...` (any API version segment: v1beta, v1, v1beta1).
It also serves an OAuth token endpoint (`POST /token`) so Vertex's Application Default
Credentials work offline: `use_vertex()` writes a service-account ADC file (throwaway key)
whose `token_uri` points here, and google-auth trades its signed JWT here for a token.

Typical use (the `fake_gemini` fixture is a started `FakeGemini`):

    from fake_gemini import fake_gemini, error, slow, prompt_text   # noqa: F401 (fixture)

    def test_something(fake_gemini, monkeypatch, tmp_path):
        fake_gemini.use_gemini_api(monkeypatch)        # or: fake_gemini.use_vertex(monkeypatch, tmp_path)
        fake_gemini.responder = lambda body: {"verdict": "valid" if "Paris" in prompt_text(body) else "invalid"}
        fake_gemini.queue(error(429, retry_after=3))   # the next request answers 429 with Retry-After: 3
        ...                                            # run the code under test (JudgeRuntime, a criterion)
        assert fake_gemini.max_in_flight <= 8
        assert [r.model for r in fake_gemini.requests] == [...]

The responder maps the request body (parsed JSON) to the model's answer:
- a `str` is the model's text; a `dict`/`list` is sent as its JSON text (a structured verdict);
- a `Reply` is a raw HTTP answer (status, body, headers, delay) for full control.
An exception in the responder answers 500 and is kept in `responder_errors`.

Faults: `queue(reply, times=1, when=None)` makes the next `times` matching requests (optionally
only those whose body satisfies `when(body)`) answer `reply` instead of the responder.
Builders for the usual ones: `error(status, retry_after=, retry_delay=)`, `slow(seconds)`,
`not_json()`, `wrong_shape()`, `empty_candidates()`, `blocked(reason)`, `prompt_blocked(reason)`,
`dropped()` (the connection closed without an answer).

Benchmark knobs: `latency` (seconds added to every generateContent answer) and
`quota_per_minute` (429 with Retry-After above N accepted requests in any rolling 60 s).

Records: `requests` (every generateContent request: path, backend, model, headers with the
secrets replaced by "***", body, status), `max_in_flight` (most handlers running at once),
`token_requests` (token endpoint hits). `reset()` clears them.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Optional
from urllib.parse import parse_qs, urlsplit

import pytest

import fake_http
from fake_http import Reply, google_error, slow  # noqa: F401  (slow: re-exported for tests)

FAKE_API_KEY = "AIzaFAKE-test-key-0123456789abcdef"  # what use_gemini_api() exports
FAKE_ACCESS_TOKEN = "ya29.FAKE-access-token-0123456789"  # what the token endpoint hands out

# Every variable google-genai / google-auth read to pick a backend; the helpers below reset them all.
JUDGE_ENV_VARS = (
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_ENTERPRISE",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_VERTEX_BASE_URL",
)

_GEMINI_PATH = re.compile(r"/(?P<version>v\w+)/models/(?P<model>[^/:]+):generateContent")
_VERTEX_PATH = re.compile(
    r"/(?P<version>v\w+)/projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)"
    r"/publishers/(?P<publisher>[^/]+)/models/(?P<model>[^/:]+):generateContent"
)
@dataclass
class Recorded:
    """One generateContent request as the fake saw it."""

    path: str  # without the query string
    backend: str  # "gemini" or "vertex"
    model: str
    project: Optional[str]
    location: Optional[str]
    auth: Optional[str]  # "x-goog-api-key", "key-param", "bearer" or None
    headers: dict[str, str]  # lower-case names; x-goog-api-key and authorization shown as "***"
    body: Any  # parsed JSON
    status: Optional[int] = None  # what the fake answered

    @property
    def prompt(self) -> str:
        return prompt_text(self.body)

    @property
    def system(self) -> str:
        return system_text(self.body)


# --- builders for the usual answers and faults ------------------------------------------


def error(status: int, message: Optional[str] = None, *, retry_after: Optional[float] = None,
          retry_delay: Optional[str] = None) -> Reply:
    """A Google API error: `{"error": {"code", "message", "status"}}`.

    retry_after: a `Retry-After` header (seconds). retry_delay: a `google.rpc.RetryInfo`
    detail such as "7s", which is what the Gemini API itself sends with a 429.
    """
    details = None
    if retry_delay is not None:
        details = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay}]
    return google_error(status, message, retry_after=retry_after, details=details)


DROPPED = 0  # Reply.status meaning: close the connection without answering


def dropped() -> Reply:
    """No answer at all: the server closes the connection once it has read the request (a
    proxy or load balancer dropping it), which the client sees as a disconnect."""
    return Reply(DROPPED)


def not_json(text: str = "<html><body>502 Bad Gateway</body></html>") -> Reply:
    """HTTP 200 with a body that is not JSON at all (a broken proxy)."""
    return Reply(200, text, {"Content-Type": "text/html"})


def wrong_shape() -> Reply:
    """HTTP 200 with JSON that is not a GenerateContentResponse."""
    return Reply(200, {"candidates": "not a list", "usageMetadata": 7})


def empty_candidates() -> Reply:
    return Reply(200, {"candidates": [], "usageMetadata": {"promptTokenCount": 10, "totalTokenCount": 10}})


def blocked(reason: str = "SAFETY") -> Reply:
    """A candidate stopped by a filter: finishReason SAFETY (or RECITATION, ...) and no content."""
    return Reply(
        200,
        {
            "candidates": [
                {
                    "finishReason": reason,
                    "index": 0,
                    "safetyRatings": [
                        {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}
                    ],
                }
            ],
            "usageMetadata": {"promptTokenCount": 10, "totalTokenCount": 10},
        },
    )


def prompt_blocked(reason: str = "SAFETY") -> Reply:
    """The prompt itself refused: `promptFeedback.blockReason`, no candidates."""
    return Reply(
        200,
        {"promptFeedback": {"blockReason": reason}, "usageMetadata": {"promptTokenCount": 10, "totalTokenCount": 10}},
    )


def prompt_text(body: Any) -> str:
    """The text of the request's user contents (all parts joined by newlines)."""
    return _parts_text((body or {}).get("contents") or [])


def system_text(body: Any) -> str:
    """The text of the request's system instruction ("" when none)."""
    instruction = (body or {}).get("systemInstruction") or (body or {}).get("system_instruction")
    return _parts_text([instruction] if instruction else [])


def _parts_text(contents: list) -> str:
    texts = []
    for content in contents:
        if isinstance(content, dict):
            texts.extend(str(p.get("text", "")) for p in content.get("parts") or [] if isinstance(p, dict))
    return "\n".join(texts)


# --- the server -------------------------------------------------------------------------


class FakeGemini:
    """A generateContent server. Start it with `start()` (or use the `fake_gemini` fixture)."""

    def __init__(self, responder: Optional[Callable[[Any], Any]] = None):
        self.responder: Callable[[Any], Any] = responder or (lambda body: {"ok": True})
        self.api_key: Optional[str] = FAKE_API_KEY  # accepted key; None accepts any non-empty key
        self.access_token: str = FAKE_ACCESS_TOKEN  # accepted bearer token (and what /token hands out)
        self.usage: dict[str, int] = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
        self.latency: float = 0.0  # added to every generateContent answer
        self.quota_per_minute: Optional[int] = None  # 429 above this many accepted requests per rolling minute
        self.clock: Callable[[], float] = time.monotonic  # for the quota window
        self.requests: list[Recorded] = []
        self.responder_errors: list[BaseException] = []
        self.token_requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._queue = fake_http.FaultQueue()
        self._accepted: deque[float] = deque()  # quota window
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: Optional[ThreadingHTTPServer] = None

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> "FakeGemini":
        self._server = fake_http.serve(_Handler, gemini=self)
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping in a delay
        fake_http.stop(self._server)

    @property
    def url(self) -> str:
        """The base URL to give the client, with a trailing slash."""
        return fake_http.base_url(self._server) + "/"

    @property
    def token_uri(self) -> str:
        return self.url + "token"

    # --- pointing google-genai at the fake -------------------------------------------------

    def use_gemini_api(self, monkeypatch, api_key: str = FAKE_API_KEY) -> None:
        """Environment for the Gemini API backend: GOOGLE_API_KEY and GOOGLE_GEMINI_BASE_URL."""
        clear_judge_env(monkeypatch)
        monkeypatch.setenv("GOOGLE_API_KEY", api_key)
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", self.url)

    def use_vertex(self, monkeypatch, tmp_path: Path, project: str = "fake-project",
                   location: str = "us-central1") -> Path:
        """Environment for Vertex AI: GOOGLE_GENAI_USE_VERTEXAI, project, location,
        GOOGLE_VERTEX_BASE_URL, and GOOGLE_APPLICATION_CREDENTIALS naming a fake ADC file
        (returned) whose token endpoint is this server."""
        clear_judge_env(monkeypatch, tmp_path)
        adc = self.write_adc(tmp_path / "fake-adc.json", project)
        monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
        monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", project)
        monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", location)
        monkeypatch.setenv("GOOGLE_VERTEX_BASE_URL", self.url)
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
        return adc

    def write_adc(self, path: Path, project: str = "fake-project") -> Path:
        """A service-account Application Default Credentials file whose `token_uri` is this
        server: google-auth signs a JWT with its (throwaway) key and trades it here for
        `access_token`, exactly as it would with oauth2.googleapis.com."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            json.dumps(
                {
                    "type": "service_account",
                    "project_id": project,
                    "private_key_id": "fake-key-id",
                    "private_key": _throwaway_private_key(),
                    "client_email": f"judge@{project}.iam.gserviceaccount.com",
                    "client_id": "1234567890",
                    "token_uri": self.token_uri,
                }
            ),
            encoding="utf-8",
        )
        return path

    # --- test controls ---------------------------------------------------------------------

    def queue(self, reply: Reply, times: int = 1, when: Optional[Callable[[Any], bool]] = None) -> None:
        """The next `times` requests (only those with `when(body)` true, if given) answer `reply`."""
        self._queue.put(reply, times, when)

    def reset(self) -> None:
        """Forget recorded requests, counters, queued faults and the quota window."""
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.responder_errors.clear()
            self._accepted.clear()
            self.token_requests = 0
            self.max_in_flight = self.in_flight

    def models(self) -> list[str]:
        return [r.model for r in self.requests]

    # --- internals -----------------------------------------------------------------------

    def _quota_wait(self) -> Optional[float]:
        """None if the request is within the quota (and counts it), else seconds until a slot frees."""
        if self.quota_per_minute is None:
            return None
        with self._lock:
            now = self.clock()
            while self._accepted and self._accepted[0] <= now - 60.0:
                self._accepted.popleft()
            if len(self._accepted) < self.quota_per_minute:
                self._accepted.append(now)
                return None
            return self._accepted[0] + 60.0 - now

    def _answer(self, model: str, body: Any) -> Reply:
        """The responder's answer as an HTTP reply."""
        try:
            out = self.responder(body)
        except Exception as exc:  # a bug in a test's responder: make it visible, not a hang
            self.responder_errors.append(exc)
            return error(500, f"responder raised {type(exc).__name__}: {exc}")
        if isinstance(out, Reply):
            return out
        text = out if isinstance(out, str) else json.dumps(out)
        return Reply(
            200,
            {
                "candidates": [
                    {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}
                ],
                "usageMetadata": dict(self.usage),
                "modelVersion": model,
            },
        )


class _Handler(BaseHTTPRequestHandler):
    gemini: FakeGemini
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def do_POST(self) -> None:
        fake = self.gemini
        split = urlsplit(self.path)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if split.path.rstrip("/") == "/token":
            form = parse_qs(raw.decode("utf-8", "replace"))
            with fake._lock:
                fake.token_requests += 1
            if not form.get("assertion") and not form.get("refresh_token"):
                self._send(Reply(400, {"error": "invalid_grant", "error_description": "no assertion"}))
                return
            self._send(Reply(200, {"access_token": fake.access_token, "expires_in": 3600, "token_type": "Bearer"}))
            return
        gemini = _GEMINI_PATH.fullmatch(split.path)
        vertex = _VERTEX_PATH.fullmatch(split.path)
        if not (gemini or vertex):
            self._send(error(404, f"fake Gemini: no route for POST {split.path}"))
            return
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            self._send(error(400, "fake Gemini: request body is not JSON"))
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        key = headers.get("x-goog-api-key") or (parse_qs(split.query).get("key") or [None])[0]
        bearer = headers.get("authorization", "")
        auth = (
            "x-goog-api-key" if headers.get("x-goog-api-key")
            else "key-param" if key
            else "bearer" if bearer.lower().startswith("bearer ")
            else None
        )
        for secret in ("x-goog-api-key", "authorization"):
            if secret in headers:
                headers[secret] = "***"
        match = gemini or vertex
        assert match is not None
        record = Recorded(
            path=split.path,
            backend="gemini" if gemini else "vertex",
            model=match["model"],
            project=vertex["project"] if vertex else None,
            location=vertex["location"] if vertex else None,
            auth=auth,
            headers=headers,
            body=body,
        )
        with fake._lock:
            fake.requests.append(record)
            fake.in_flight += 1
            fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
        try:
            reply = self._decide(record, key, bearer)
            if fake.latency:
                fake._stopping.wait(fake.latency)
            if reply.delay:
                fake._stopping.wait(reply.delay)
            if reply.body is None and reply.status == 200:
                reply = fake._answer(record.model, body)
            record.status = reply.status
            self._send(reply)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
            pass
        finally:
            with fake._lock:
                fake.in_flight -= 1

    def _decide(self, record: Recorded, key: Optional[str], bearer: str) -> Reply:
        fake = self.gemini
        if record.backend == "gemini":
            if not key:
                return error(403, "Method doesn't allow unregistered callers. Please use an API key.")
            if fake.api_key is not None and key != fake.api_key:
                return error(400, "API key not valid. Please pass a valid API key.")
        elif bearer != f"Bearer {fake.access_token}":
            return error(401, "Request had invalid authentication credentials.")
        queued = fake._queue.take(record.body)
        if queued is not None and (queued.status != 200 or queued.body is not None):
            return queued
        wait = fake._quota_wait()
        if wait is not None:
            return error(429, "Quota exceeded (fake quota per minute).", retry_after=max(1, math.ceil(wait)))
        return queued or Reply()

    def _send(self, reply: Reply) -> None:
        if reply.status == DROPPED:
            import socket

            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        fake_http.send_reply(self, reply)


_KEY_PEM: Optional[str] = None


def _throwaway_private_key() -> str:
    """An RSA key made for this test process (google-auth needs a real key to sign its JWT)."""
    global _KEY_PEM
    if _KEY_PEM is None:
        crypto = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.rsa")
        from cryptography.hazmat.primitives import serialization

        key = crypto.generate_private_key(public_exponent=65537, key_size=2048)
        _KEY_PEM = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode("ascii")
    return _KEY_PEM


def clear_judge_env(monkeypatch, tmp_path: Optional[Path] = None) -> None:
    """Unset every judge-related variable (a fork PR: no secrets). With `tmp_path`, also point
    gcloud's config folder at an empty one, so a developer's own ADC file is not found."""
    for name in JUDGE_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    if tmp_path is not None:
        empty = tmp_path / "gcloud-config"
        empty.mkdir(parents=True, exist_ok=True)
        monkeypatch.setenv("CLOUDSDK_CONFIG", str(empty))


@pytest.fixture
def fake_gemini():
    """A started FakeGemini; stopped after the test."""
    fake = FakeGemini().start()
    yield fake
    fake.stop()
