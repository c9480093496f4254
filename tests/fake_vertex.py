"""A stand-in for the Vertex AI evaluation service (`evaluateInstances`) on 127.0.0.1, for tests
through the real google-cloud-aiplatform client.

Routes (REST shapes in shared/notes/wire-protocols.md; the query string is ignored):
- `POST /v1beta1/projects/{p}/locations/{l}:evaluateInstances?$alt=json;enum-encoding=int` (EvaluationServiceClient, REST)
- `POST /v1beta1/projects/{p}/locations/{l}/:evaluateInstances`  (the 2.x `vertexai.Client`)
- `POST /v1/projects/{p}/locations/{l}:evaluateInstances?$alt=json;enum-encoding=int` (legacy)
Every route wants `Authorization: Bearer <access_token>` (401 otherwise; `access_token = None`
accepts any bearer, e.g. the self-signed JWT of a service-account ADC file from `write_adc`).
`POST /token` is an OAuth token endpoint handing out `access_token` (for credentials that use one).

Typical use (the `fake_vertex` fixture is a started `FakeVertex`):

    from fake_vertex import fake_vertex, result, verdict, row_error, error, slow, metric_of  # noqa: F401

    def test_something(fake_vertex, tmp_path):
        runtime = JudgeRuntime(cache_dir=tmp_path / "cache", **fake_vertex.runtime_args())
        fake_vertex.responder = lambda body: result(0.5, "half", [verdict("r1", "Says hello", True, "it does")])
        fake_vertex.queue(error(429, retry_after=3))   # the next request answers 429 with Retry-After: 3
        fake_vertex.queue(row_error(3, "bad instance"), when=lambda body: metric_of(body) == "safety_v1")
        ...                                            # run the code under test
        [sent] = fake_vertex.requests
        assert sent.metric == "general_quality_v1" and sent.instance["prompt"] == {...}

`runtime_args()` gives the JudgeRuntime arguments that reach this server: `vertex_endpoint`,
`vertex_project`, `vertex_location` and `vertex_credentials` (offline OAuth credentials holding
`access_token`; no token endpoint, no ADC lookup). To go through Application Default
Credentials instead, `write_adc(path)` writes a service-account file (throwaway key, needs
`cryptography`) to name in GOOGLE_APPLICATION_CREDENTIALS, and `runtime_args(adc=True)` leaves
out the credentials (and the project, which the file names).

The responder maps the request body (parsed JSON, camelCase as the client sends it) to:
- a `dict` without "metricResults": ONE metric result (`{"score", "explanation",
  "rubricVerdicts", "error"}`), sent as `{"metricResults": [it]}`; build it with `result(...)`,
  `verdict(...)` and `row_error(code, message)` (a row-level error: HTTP 200, error in the row);
- a `dict` with "metricResults": the whole response body, sent as is;
- a `Reply`: a raw HTTP answer (status, body, headers, delay) for full control.
An exception in the responder answers 500 and is kept in `responder_errors`.
The default responder answers `result(1.0, "fake: fine")`.

Faults: `queue(reply, times=1, when=None)` makes the next `times` requests (optionally only
those whose body satisfies `when(body)`) answer `reply` instead of the responder; `reply` is a
`Reply` (`error(status, message, retry_after=)`, `slow(seconds)`) or a metric-result dict
(`row_error(...)`). `latency` adds seconds to every answer.

Records: `requests` (every evaluateInstances request: path, version, project, location, query,
headers with `authorization` replaced by "***", body, status; `.metric` and `.instance`),
`max_in_flight` (most requests being handled at once). `reset()` clears them.

In-flight across servers: `meter` is an `InFlight` counter; give two fakes the same one
(`FakeVertex(meter=shared)`) or wrap another fake's responder with `shared.around(responder, hold=)`
to measure the run-wide bound (the SUM of requests in flight on both servers).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Optional, Union
from urllib.parse import parse_qs, urlsplit

import pytest

import fake_http
from fake_http import Reply, google_error, slow  # noqa: F401  (slow: re-exported for tests)

FAKE_VERTEX_TOKEN = "ya29.FAKE-vertex-token-0123456789abcdef"  # the bearer token the fake accepts
FAKE_PROJECT = "fake-project"
FAKE_LOCATION = "us-central1"

_PATH = re.compile(
    r"/(?P<version>v\w+)/projects/(?P<project>[^/]+)/locations/(?P<location>[^/:]+)/?:evaluateInstances"
)
@dataclass
class Recorded:
    """One evaluateInstances request as the fake saw it."""

    path: str  # without the query string
    version: str  # "v1beta1", "v1"
    project: str
    location: str
    query: str
    auth: Optional[str]  # "bearer" or None
    headers: dict[str, str]  # lower-case names; authorization shown as "***"
    body: Any  # parsed JSON
    status: Optional[int] = None  # what the fake answered

    @property
    def metric(self) -> Optional[str]:
        return metric_of(self.body)

    @property
    def instance(self) -> Any:
        return (self.body or {}).get("instance")


# --- builders --------------------------------------------------------------------------------


def result(score: Optional[float] = None, explanation: Optional[str] = None,
           rubric_verdicts: Optional[list[dict]] = None) -> dict:
    """One metric result, as the service sends it (camelCase)."""
    out: dict[str, Any] = {}
    if score is not None:
        out["score"] = score
    if explanation is not None:
        out["explanation"] = explanation
    if rubric_verdicts:
        out["rubricVerdicts"] = list(rubric_verdicts)
    return out


def verdict(rubric_id: str, description: str, passed: bool, reasoning: str = "",
            importance: Optional[str] = "HIGH", type_: Optional[str] = None) -> dict:
    """One rubric verdict: `{"evaluatedRubric": {...}, "verdict": bool, "reasoning": str}`."""
    rubric: dict[str, Any] = {"rubricId": rubric_id, "content": {"property": {"description": description}}}
    if type_ is not None:
        rubric["type"] = type_
    if importance is not None:
        rubric["importance"] = importance
    return {"evaluatedRubric": rubric, "verdict": passed, "reasoning": reasoning}


def row_error(code: int, message: str) -> dict:
    """A row-level error: HTTP 200, `metricResults[0].error` set (google.rpc.Status), no score."""
    return {"error": {"code": code, "message": message}}


def error(status: int, message: Optional[str] = None, *, retry_after: Optional[float] = None) -> Reply:
    """A Google API error `{"error": {"code", "message", "status"}}`, optionally with Retry-After (seconds)."""
    return google_error(status, message, retry_after=retry_after)


def metric_of(body: Any) -> Optional[str]:
    """The managed metric a request asks for (either casing); "llm_based_metric_spec" for a
    metric given by its own prompt template; None for neither."""
    metrics = (body or {}).get("metrics") or []
    if not metrics or not isinstance(metrics[0], dict):
        return None
    if isinstance(metrics[0].get("llmBasedMetricSpec") or metrics[0].get("llm_based_metric_spec"), dict):
        return "llm_based_metric_spec"
    spec = metrics[0].get("predefinedMetricSpec") or metrics[0].get("predefined_metric_spec") or {}
    return spec.get("metricSpecName") or spec.get("metric_spec_name")


# --- in-flight accounting ---------------------------------------------------------------------


class InFlight:
    """A thread-safe in-flight counter with its high-water mark; shareable between fakes."""

    def __init__(self) -> None:
        self.now = 0
        self.max = 0
        self._lock = threading.Lock()

    def __enter__(self) -> "InFlight":
        with self._lock:
            self.now += 1
            self.max = max(self.max, self.now)
        return self

    def __exit__(self, *exc: Any) -> None:
        with self._lock:
            self.now -= 1

    def reset(self) -> None:
        with self._lock:
            self.max = self.now

    def around(self, responder: Callable[[Any], Any], hold: float = 0.0) -> Callable[[Any], Any]:
        """`responder`, counted in flight here while it runs (held `hold` seconds): for another fake."""

        def counted(body: Any) -> Any:
            with self:
                if hold:
                    threading.Event().wait(hold)
                return responder(body)

        return counted


# --- the server -------------------------------------------------------------------------------


class FakeVertex:
    """An evaluateInstances server. Start it with `start()` (or use the `fake_vertex` fixture)."""

    def __init__(self, responder: Optional[Callable[[Any], Any]] = None, meter: Optional[InFlight] = None):
        self.responder: Callable[[Any], Any] = responder or (lambda body: result(1.0, "fake: fine"))
        self.access_token: Optional[str] = FAKE_VERTEX_TOKEN  # accepted bearer token; None accepts any
        self.latency: float = 0.0
        self.meter = meter or InFlight()
        self.requests: list[Recorded] = []
        self.responder_errors: list[BaseException] = []
        self.token_requests = 0
        self._queue = fake_http.FaultQueue()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: Optional[ThreadingHTTPServer] = None

    def start(self) -> "FakeVertex":
        self._server = fake_http.serve(_Handler, vertex=self)
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping in a delay
        fake_http.stop(self._server)

    @property
    def url(self) -> str:
        """The endpoint to give the client: `http://127.0.0.1:PORT` (no trailing slash)."""
        return fake_http.base_url(self._server)

    @property
    def max_in_flight(self) -> int:
        return self.meter.max

    def credentials(self) -> Any:
        """Offline OAuth credentials carrying the accepted token (google-auth never refreshes them)."""
        from google.oauth2.credentials import Credentials

        return Credentials(token=self.access_token or FAKE_VERTEX_TOKEN)

    def runtime_args(self, project: str = FAKE_PROJECT, location: str = FAKE_LOCATION,
                     adc: bool = False) -> dict[str, Any]:
        """JudgeRuntime keyword arguments that send Vertex evaluations here (with `adc`: the
        endpoint and location only; credentials and project come from Application Default Credentials)."""
        if adc:
            return {"vertex_endpoint": self.url, "vertex_location": location}
        return {
            "vertex_endpoint": self.url,
            "vertex_project": project,
            "vertex_location": location,
            "vertex_credentials": self.credentials(),
        }

    def write_adc(self, path: Path, project: str = FAKE_PROJECT) -> Path:
        """A service-account ADC file (throwaway key) whose `token_uri` is this server. google-auth
        signs its own JWT for the aiplatform client (no token request), so set `access_token = None`."""
        from fake_gemini import _throwaway_private_key  # one throwaway key per test process

        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({
            "type": "service_account",
            "project_id": project,
            "private_key_id": "fake-key-id",
            "private_key": _throwaway_private_key(),
            "client_email": f"evals@{project}.iam.gserviceaccount.com",
            "client_id": "1234567890",
            "token_uri": f"{self.url}/token",
        }), encoding="utf-8")
        return path

    def queue(self, reply: Union[Reply, dict], times: int = 1, when: Optional[Callable[[Any], bool]] = None) -> None:
        """The next `times` requests (only those with `when(body)` true, if given) answer `reply`."""
        self._queue.put(reply, times, when)

    def reset(self) -> None:
        """Forget recorded requests, responder errors, queued faults and the in-flight high-water mark."""
        with self._lock:
            self.requests.clear()
            self.responder_errors.clear()
            self._queue.clear()
            self.token_requests = 0
        self.meter.reset()

    def metrics(self) -> list[Optional[str]]:
        return [r.metric for r in self.requests]

    def _answer(self, body: Any) -> Reply:
        try:
            out = self.responder(body)
        except Exception as exc:  # a bug in a test's responder: make it visible, not a hang
            self.responder_errors.append(exc)
            return error(500, f"responder raised {type(exc).__name__}: {exc}")
        return _as_reply(out)


def _as_reply(out: Any) -> Reply:
    if isinstance(out, Reply):
        return out
    if isinstance(out, dict) and "metricResults" in out:
        return Reply(200, out)
    return Reply(200, {"metricResults": [out]})


class _Handler(BaseHTTPRequestHandler):
    vertex: FakeVertex
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: without TCP_NODELAY, Nagle's algorithm meets the
    # client's delayed ACK and every answer takes ~40 ms longer than it should.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def do_POST(self) -> None:
        fake = self.vertex
        split = urlsplit(self.path)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if split.path == "/token":
            form = parse_qs(raw.decode("utf-8", "replace"))
            with fake._lock:
                fake.token_requests += 1
            if not form.get("assertion") and not form.get("refresh_token"):
                self._send(Reply(400, {"error": "invalid_grant", "error_description": "no assertion"}))
            else:
                self._send(Reply(200, {"access_token": fake.access_token or FAKE_VERTEX_TOKEN,
                                       "expires_in": 3600, "token_type": "Bearer"}))
            return
        match = _PATH.fullmatch(split.path)
        if not match:
            self._send(error(404, f"fake Vertex: no route for POST {split.path}"))
            return
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            self._send(error(400, "fake Vertex: request body is not JSON"))
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        bearer = headers.get("authorization", "")
        if "authorization" in headers:
            headers["authorization"] = "***"
        auth = "bearer" if bearer.lower().startswith("bearer ") else None
        record = Recorded(split.path, match["version"], match["project"], match["location"], split.query,
                          auth, headers, body)
        with fake._lock:
            fake.requests.append(record)
        # In flight from the request's arrival until the answer is ready: counted out before the
        # answer is written, so a client cannot start its next request while this one still counts.
        with fake.meter:
            reply = self._decide(body, bearer)
            if fake.latency:
                fake._stopping.wait(fake.latency)
            if reply.delay:
                fake._stopping.wait(reply.delay)
            if reply.body is None and reply.status == 200:
                reply = fake._answer(body)
        record.status = reply.status
        try:
            self._send(reply)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
            pass

    def _decide(self, body: Any, bearer: str) -> Reply:
        fake = self.vertex
        token = bearer[7:] if bearer.lower().startswith("bearer ") else ""
        if not token or (fake.access_token is not None and token != fake.access_token):
            return error(401, "Request had invalid authentication credentials.")
        if metric_of(body) is None:
            return error(400, "fake Vertex: metrics[0] needs predefined_metric_spec.metric_spec_name or llm_based_metric_spec")
        queued = fake._queue.take(body)
        if queued is None:
            return Reply()
        return _as_reply(queued)

    def _send(self, reply: Reply) -> None:
        fake_http.send_reply(self, reply)


@pytest.fixture
def fake_vertex():
    """A started FakeVertex; stopped after the test."""
    fake = FakeVertex().start()
    yield fake
    fake.stop()
