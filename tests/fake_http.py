"""What the fake services share: a threaded HTTP server on 127.0.0.1, on an ephemeral port."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional


def serve(handler: type[BaseHTTPRequestHandler], **bound: Any) -> ThreadingHTTPServer:
    """Start serving `handler` in a daemon thread; `bound` become class attributes of the
    handler (each fake binds itself, so its handler reaches its state)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), type(handler.__name__, (handler,), bound))
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
