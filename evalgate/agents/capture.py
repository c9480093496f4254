"""What the agent writes while a case runs, kept per case run (as pytest keeps a test's output).

Case runs go on concurrently (asyncio tasks on one loop, and the worker threads ADK runs sync
tools on, which inherit the task's context), so output is routed by a context variable that
`evalgate.infer` sets for each case run (`case_log`). While `capture()` is active:

- `sys.stdout` and `sys.stderr` are proxies: a write (a tool's `print`, a warning, a logging
  handler that writes to the stream) goes to the current case run's `CaseLog`, or, when no
  case run is current (loading the agent, evalgate's own output), to the real stream;
- logging's last-resort handler (the one that prints WARNING and above when no handler is
  configured, as with ADK's "Node execution failed" tracebacks) is replaced by one that
  does the same routing; stream handlers configured before the capture started are pointed
  at the proxies. Handlers that write elsewhere (a file) keep doing so.

A `CaseLog` keeps the last `MAX_LINES` lines and at most `MAX_CHARS` characters of the run
(what a reader of a failure needs is at the end); the runners that have output of their
own (a command's stderr, an API server's error body) write it there too. With `live`, each
line is also written to the real stderr at once, prefixed by the case run, for debugging.

Not captured: writes to the file descriptors themselves (a subprocess the tool starts that
inherits them, C extensions), and threads the agent starts itself (they do not inherit
the case run's context); those reach the terminal as before.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import re
import sys
import sysconfig
import threading
import traceback
from collections import deque
from typing import Any, Callable, Iterator, Optional, TextIO

MAX_LINES = 200
MAX_CHARS = 20_000
MAX_LINE = 4_000  # characters kept of one line (a JSON dump on one line must not take the whole tail)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")  # colours and cursor moves: the log is text, not a terminal


class CaseLog:
    """The bounded tail of one case run's output. Thread-safe; written to by any task or
    thread of the case run. Each complete line goes through `redact` (before anything is
    cut, so no part of a secret is kept), then to `echo` when given, then into the tail."""

    def __init__(self, echo: Optional[Callable[[str], None]] = None, redact: Callable[[str], str] = lambda text: text):
        self.echo = echo
        self.redact = redact
        self._lines: deque[str] = deque()
        self._chars = 0
        self._partial = ""
        self._dropped = 0  # lines written but no longer kept
        self._closed = False
        self._lock = threading.Lock()

    def write(self, text: str) -> None:
        if not text:
            return
        with self._lock:
            if self._closed:
                return  # a background task of a finished run: its log has been taken
            text = self._partial + text.replace("\r\n", "\n")
            *lines, self._partial = text.split("\n")
            for line in lines:
                self._add(line)
            if len(self._partial) > 4 * MAX_LINE:  # a line that does not end: kept in pieces
                self._add(self._partial)
                self._partial = ""

    def _add(self, line: str) -> None:
        line = self.redact(line)
        if self.echo is not None:
            self.echo(line)
        # A line redrawn in place (a progress bar) is kept as it was last drawn.
        line = _ANSI.sub("", line.rstrip("\r").rpartition("\r")[2])
        if len(line) > MAX_LINE:
            line = line[:MAX_LINE] + f" ... ({len(line) - MAX_LINE:,} more characters)"
        self._lines.append(line)
        self._chars += len(line) + 1
        while self._lines and (len(self._lines) > MAX_LINES or self._chars > MAX_CHARS):
            self._chars -= len(self._lines.popleft()) + 1
            self._dropped += 1

    def close(self) -> Optional[str]:
        """End the log; its text (None when the run wrote nothing). Later writes are dropped."""
        with self._lock:
            if self._partial:
                self._add(self._partial)
                self._partial = ""
            self._closed = True
            if not self._lines:
                return None
            head = [f"[... {self._dropped:,} earlier lines not kept]"] if self._dropped else []
            return "\n".join(head + list(self._lines))


_CURRENT: contextvars.ContextVar[Optional[CaseLog]] = contextvars.ContextVar("evalgate_case_log", default=None)


def current() -> Optional[CaseLog]:
    """The log of the case run this code runs for, if any."""
    return _CURRENT.get()


@contextlib.contextmanager
def case_log(log: CaseLog) -> Iterator[CaseLog]:
    """Make `log` the current case run's log in this task (and the tasks and ADK tool threads
    it starts)."""
    token = _CURRENT.set(log)
    try:
        yield log
    finally:
        _CURRENT.reset(token)


class _Router:
    """sys.stdout / sys.stderr while capturing: to the current case run's log, else through."""

    def __init__(self, real: TextIO):
        self._real = real

    def write(self, text: str) -> int:
        log = _CURRENT.get()
        if log is None:
            return self._real.write(text)
        log.write(text)
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if _CURRENT.get() is None:
            self._real.flush()

    def isatty(self) -> bool:
        # A case run's output goes to its log, not to a terminal: no colours, no progress bars.
        return _CURRENT.get() is None and self._real.isatty()

    def __getattr__(self, name: str) -> Any:  # encoding, isatty, fileno, buffer, ...
        return getattr(self._real, name)


class _LastResort(logging.Handler):
    """logging's last resort while capturing: a record of a case run goes to its log, with
    its traceback's library frames folded; any other record to the original last resort."""

    def __init__(self, fallback: Optional[logging.Handler]):
        super().__init__(fallback.level if fallback is not None else logging.WARNING)
        self.fallback = fallback
        self.setFormatter(_Formatter("%(levelname)s %(name)s: %(message)s"))

    def handle(self, record: logging.LogRecord) -> bool:
        if _CURRENT.get() is None:
            return self.fallback.handle(record) if self.fallback is not None else False
        return bool(super().handle(record))

    def emit(self, record: logging.LogRecord) -> None:
        log = _CURRENT.get()
        if log is None:
            return
        try:
            log.write(self.format(record) + "\n")
        except Exception:
            self.handleError(record)


def _library_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(sorted(r for r in roots if r))


class _Formatter(logging.Formatter):
    """A traceback with each run of library frames (the standard library, site-packages)
    folded into one line, so a tool's own frames and the error stay in the tail."""

    def formatException(self, ei: Any) -> str:
        return "".join(fold_frames(traceback.format_exception(*ei))).rstrip("\n")


def fold_frames(chunks: list[str], roots: Optional[tuple[str, ...]] = None) -> list[str]:
    """traceback.format_exception's chunks with every run of two or more library frames
    but the innermost of each traceback (where it was raised) as one line."""
    roots = roots if roots is not None else _library_roots()
    out: list[str] = []
    run: list[str] = []

    def flush(keep_last: bool) -> None:
        kept = run[-1:] if keep_last and run else []
        hidden = run[: len(run) - len(kept)]
        if len(hidden) == 1:
            out.append(hidden[0])
        elif hidden:
            out.append(f"  [{len(hidden)} frames of library code]\n")
        out.extend(kept)
        run.clear()

    for chunk in chunks:
        if chunk.startswith('  File "'):
            path = chunk[len('  File "') :].split('"', 1)[0]
            if any(path.startswith(root) for root in roots):
                run.append(chunk)
                continue
            flush(False)
            out.append(chunk)
            continue
        flush(True)
        out.append(chunk)
    flush(True)
    return out


@contextlib.contextmanager
def capture() -> Iterator[None]:
    """Route output by case run (see the module's docstring) until the block ends."""
    real_out, real_err = sys.stdout, sys.stderr
    out, err = _Router(real_out), _Router(real_err)
    handlers: list[tuple[logging.StreamHandler, Any]] = []
    for logger in [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]:
        for handler in getattr(logger, "handlers", []):
            if type(handler) is logging.StreamHandler and handler.stream in (real_out, real_err):
                handlers.append((handler, handler.stream))
                handler.setStream(out if handler.stream is real_out else err)
    resort = logging.lastResort
    logging.lastResort = _LastResort(resort)
    sys.stdout, sys.stderr = out, err
    try:
        yield
    finally:
        if sys.stdout is out:
            sys.stdout = real_out
        if sys.stderr is err:
            sys.stderr = real_err
        logging.lastResort = resort
        for handler, stream in handlers:
            handler.setStream(stream)


def echo_to(stream: TextIO, label: str) -> Callable[[str], None]:
    """Live mode: a function writing one of a case run's lines to `stream` (the real one),
    prefixed by the case run."""

    def echo(line: str) -> None:
        with _ECHO_LOCK:
            stream.write(f"[{label}] {line}\n")
            stream.flush()

    return echo


_ECHO_LOCK = threading.Lock()
