"""What the fake services share: a threaded HTTP server on 127.0.0.1, on an ephemeral port."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Optional, Union


class _Server(ThreadingHTTPServer):
    request_queue_size = 128


def serve(handler: type[BaseHTTPRequestHandler], **bound: Any) -> ThreadingHTTPServer:
    """Start serving `handler` in a daemon thread; `bound` become class attributes of the
    handler (each fake binds itself, so its handler reaches its state)."""
    # No Nagle: a reply written as headers then body would otherwise wait on the client's
    # delayed ACK, about 40 ms a request, which no real service adds.
    # (A handler that sets it itself, as bench_inference's --nagle does, keeps its choice.)
    nagle_off = handler.__dict__.get("disable_nagle_algorithm", True)
    # A backlog for every client a run keeps busy at once (the default 5 refuses some of a
    # burst of 16 or more new connections, which the client sees as a dropped connection).
    server = _Server(("127.0.0.1", 0), type(handler.__name__, (handler,), {"disable_nagle_algorithm": nagle_off, **bound}))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    return server


def stop(server: Optional[ThreadingHTTPServer]) -> None:
    if server is not None:
        server.shutdown()
        server.server_close()


def base_url(server: Optional[ThreadingHTTPServer]) -> str:
    """`http://127.0.0.1:PORT`, no trailing slash."""
    assert server is not None, "start() the fake first"
    return f"http://127.0.0.1:{server.server_address[1]}"


# Google API error statuses by HTTP code (google.rpc.Code names), for both Google fakes.
STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


@dataclass
class Reply:
    """A raw HTTP answer. `body=None` with status 200 means "the responder's answer" (after `delay`)."""

    status: int = 200
    body: Union[dict, list, str, None] = None  # dict/list -> JSON; str -> sent as is
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (longer than the client timeout: a timeout)


def google_error(status: int, message: Optional[str] = None, *, retry_after: Optional[float] = None,
                 details: Optional[list] = None) -> Reply:
    """A Google API error `{"error": {"code", "message", "status"[, "details"]}}`, optionally with
    a Retry-After header (seconds)."""
    body: dict[str, Any] = {"code": status, "message": message or f"fake error {status}",
                            "status": STATUS_NAMES.get(status, "UNKNOWN")}
    if details is not None:
        body["details"] = details
    headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
    return Reply(status, {"error": body}, headers)


def slow(seconds: float) -> Reply:
    """The normal answer, after `seconds` (longer than the client's timeout: a timeout)."""
    return Reply(delay=seconds)


class FaultQueue:
    """Answers queued by a test for the next matching requests (thread-safe)."""

    def __init__(self) -> None:
        self._items: list[list[Any]] = []  # [reply, times left, when]
        self._lock = threading.Lock()

    def put(self, reply: Any, times: int = 1, when: Optional[Callable[[Any], bool]] = None) -> None:
        with self._lock:
            self._items.append([reply, times, when])

    def take(self, body: Any) -> Any:
        """The queued answer for a request with this body, or None."""
        with self._lock:
            for item in self._items:
                if item[2] is None or item[2](body):
                    item[1] -= 1
                    if item[1] <= 0:
                        self._items.remove(item)
                    return item[0]
        return None

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


def send_reply(handler: BaseHTTPRequestHandler, reply: Reply) -> None:
    """Write `reply` on `handler`: JSON for dict/list bodies, text otherwise."""
    if isinstance(reply.body, (dict, list)):
        data = json.dumps(reply.body).encode("utf-8")
        content_type = "application/json; charset=UTF-8"
    else:
        data = (reply.body or "").encode("utf-8")
        content_type = "text/plain; charset=UTF-8"
    handler.send_response(reply.status)
    for name, value in {"Content-Type": content_type, **reply.headers}.items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
