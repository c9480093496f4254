"""The `command` runner: any program that speaks the agent-io protocol on stdin and stdout.

The command is started once per case run, without a shell, in the config file's folder (so
`["python", "tools/run_agent.py"]` is written relative to the project, like every other
path in the config), with evalgate's own environment. evalgate writes one `AgentInput`
JSON line per user turn and reads one `AgentOutput` line back before it writes the next
(a simulated user's next turn depends on the answer); after the last turn it closes stdin
and waits for the command to exit. See `evalgate.agents.agent_io` and docs/agent-io.md.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import os
import shutil
import signal
import time
import uuid
from pathlib import Path
from typing import Any, Optional, Union

from pydantic import ValidationError

from evalgate.adk import Content, Invocation, field_names
from evalgate.agents import AgentError, CaseRun, Conversation, Runner, TransientAgentError, capture
from evalgate.agents.agent_io import AgentInput, AgentOutput
from evalgate.agents.environment import agent_environment
from evalgate.agents.replay import recorded_calls
from evalgate.errors import InputError, Problem, display_path, problems_from_validation

# An answer carries a whole invocation (tool responses, events): far more than asyncio's
# 64 KiB default line limit.
LINE_LIMIT = 16 * 1024 * 1024
STDERR_LINES = 20
STDERR_CHARS = 4096
# A command that closed stdout may still be on its way out: how long to wait for its exit
# code before reporting without one.
EXIT_GRACE_S = 5.0
POLL_S = 0.02


class CommandRunner(Runner):
    kind = "command"

    def __init__(self, *args: Any):
        super().__init__(*args)
        self.program: Optional[str] = None  # command[0], resolved by start()

    def _resolve(self) -> Union[str, Problem]:
        """command[0] as a path to start, or the problem with it. A bare name is looked up on
        PATH, then in the config's folder; a name with a folder in it is relative to that
        folder (where the command runs)."""
        program = self.spec.command[0]
        where = self.place("command")
        if not program.strip():
            return Problem(self.shown, where, "the command's program (its first item) is empty", 'Name the program to start, e.g. ["python", "agent.py"].')
        path = Path(program)
        bare = not path.is_absolute() and len(path.parts) == 1
        if bare:
            found = shutil.which(program)
            if found:
                return found
        candidate = path if path.is_absolute() else self.base / path
        found = shutil.which(str(candidate))
        if found:
            return found
        folder = display_path(self.base)
        if candidate.is_file():
            return Problem(
                self.shown,
                where,
                f"'{program}' in {folder} is not executable",
                f'Make it executable (chmod +x {program}), or start it through its interpreter, e.g. ["python", "{program}"].',
            )
        looked = f"on PATH or in {folder}" if bare else f"in {folder}" if not path.is_absolute() else "there"
        return Problem(
            self.shown,
            where,
            f"program '{program}' not found {looked}",
            "Install it, or give its path relative to the config file's folder, where the command runs "
            '(e.g. ["python", "tools/run_agent.py"]).',
        )

    def check(self) -> list[Problem]:
        resolved = self._resolve()
        return [resolved] if isinstance(resolved, Problem) else []

    async def start(self) -> None:
        resolved = self._resolve()
        if isinstance(resolved, Problem):
            raise InputError(resolved)
        self.program = resolved

    async def open(self, case: CaseRun) -> Conversation:
        assert self.program is not None, "start() first"
        return _CommandConversation(self.program, list(self.spec.command[1:]), self.base, case)

    def describe(self) -> str:
        return f"command {self.spec.command[0]}"


class _CommandConversation(Conversation):
    """One process, started on the first turn; killed by close() unless it ended cleanly."""

    def __init__(self, program: str, args: list[str], cwd: Path, case: CaseRun):
        self.program = program
        self.args = args
        self.cwd = cwd
        self.case = case
        self.turns = len(case.expected) if case.expected is not None else None
        self.tool_responses = recorded_calls(case.expected or []) if case.replay else None
        self.proc: Optional[asyncio.subprocess.Process] = None
        self.stderr = bytearray()
        self.stderr_task: Optional[asyncio.Task[None]] = None
        # The case run's log receives all of stderr, as it comes (live mode shows it at once).
        self.log = capture.current()
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.turn = 0
        self.failed = False  # a turn failed or was cancelled: close() kills, and adds no error of its own

    # --- the process -----------------------------------------------------------------------

    async def _start(self) -> asyncio.subprocess.Process:
        try:
            proc = await asyncio.create_subprocess_exec(
                self.program,
                *self.args,
                cwd=self.cwd,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                limit=LINE_LIMIT,
                env=agent_environment(),  # without the GitHub token and the runner's ACTIONS_* credentials
                # Its own process group, so close() also ends what it started (a shell
                # script's python, `npm run`'s node) and Ctrl-C reaches evalgate only.
                start_new_session=os.name == "posix",
            )
        except OSError as e:
            raise AgentError(f"the command could not be started: {e.strerror or e} ({self.program})") from None
        self.proc = proc
        self.stderr_task = asyncio.ensure_future(self._drain_stderr(proc))
        return proc

    async def _drain_stderr(self, proc: asyncio.subprocess.Process) -> None:
        # Read all of it (a full pipe would block the command), keep the end.
        assert proc.stderr is not None
        while True:
            chunk = await proc.stderr.read(65536)
            if not chunk:
                if self.log is not None:
                    self.log.write(self.decoder.decode(b"", final=True))
                return
            if self.log is not None:
                self.log.write(self.decoder.decode(chunk))
            self.stderr += chunk
            if len(self.stderr) > 4 * STDERR_CHARS:
                del self.stderr[: len(self.stderr) - 4 * STDERR_CHARS]

    def _stderr_tail(self) -> str:
        """'; stderr: <its last lines>', or '' when it wrote nothing."""
        text = self.stderr.decode("utf-8", errors="replace")
        lines = [line.strip() for line in text.splitlines() if line.strip()][-STDERR_LINES:]
        tail = " | ".join(lines)
        if len(tail) > STDERR_CHARS:
            tail = "..." + tail[-STDERR_CHARS:]
        return f"; stderr: {tail}" if tail else ""

    async def _settle(self, timeout: Optional[float]) -> Optional[int]:
        """The exit code once the command has exited (within `timeout` seconds), with its
        stderr read; None if it still runs."""
        assert self.proc is not None
        code = await _exit_code(self.proc, timeout)
        if code is not None and self.stderr_task is not None:
            # Something the command started may still hold stderr open: do not wait for it.
            await asyncio.wait([self.stderr_task], timeout=1.0)
        return code

    def _where(self) -> str:
        return f"turn {self.turn} of {self.turns}" if self.turns is not None else f"turn {self.turn}"

    async def _gone(self) -> AgentError:
        """The command stopped talking before answering this turn: why, as well as we can tell."""
        code = await self._settle(EXIT_GRACE_S)
        if code is None:
            return AgentError(f"the command closed its stdout before answering {self._where()}{self._stderr_tail()}")
        return _failed(code, f"the command {_exited(code)} before answering {self._where()}{self._stderr_tail()}")

    # --- turns -------------------------------------------------------------------------------

    async def send(self, user_content: Content) -> Optional[Invocation]:
        self.turn += 1
        try:
            return await self._send(user_content)
        except BaseException:  # an error or a cancellation (timeout): close() kills the command
            self.failed = True
            raise

    async def _send(self, user_content: Content) -> Invocation:
        proc = self.proc or await self._start()
        assert proc.stdin is not None and proc.stdout is not None
        line = AgentInput(
            eval_set_id=self.case.eval_set_id,
            eval_id=self.case.eval_id,
            run=self.case.run,
            session_input=self.case.session_input,
            user_content=user_content,
            tool_responses=self.tool_responses,
            history=self.case.history if self.turn == 1 and self.case.history else None,
        ).model_dump(mode="json", exclude_none=True, exclude_unset=True)
        sent = time.time()
        started = time.monotonic()
        try:
            proc.stdin.write(json.dumps(line, ensure_ascii=False).encode("utf-8") + b"\n")
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            raise await self._gone() from None
        answer = await self._read_answer(proc)
        return Invocation.model_validate(
            {
                "invocation_id": answer.invocation_id or f"e-{uuid.uuid4()}",
                "user_content": user_content,
                "final_response": answer.final_response,
                "intermediate_data": answer.intermediate_data,
                "creation_timestamp": sent,
                "duration": round(time.monotonic() - started, 3),
            }
        )

    async def _read_answer(self, proc: asyncio.subprocess.Process) -> AgentOutput:
        assert proc.stdout is not None
        while True:
            try:
                raw = await proc.stdout.readline()
            except ValueError:  # asyncio's LimitOverrunError, as readline() reports it
                raise AgentError(f"the command's answer to {self._where()} is a line longer than {LINE_LIMIT // (1024 * 1024)} MiB") from None
            if not raw:
                raise await self._gone()
            try:
                text = raw.decode("utf-8").lstrip("\ufeff").rstrip("\r\n")
            except UnicodeDecodeError as e:
                raise AgentError(
                    f"the command's answer to {self._where()} is not UTF-8 (byte {e.start}): {_start(raw.decode('utf-8', errors='replace'))}. "
                    "Write UTF-8 to stdout (Python: sys.stdout.reconfigure(encoding=\"utf-8\"))."
                ) from None
            if text.strip():
                break  # blank lines are skipped
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as e:
            reason = e.msg if isinstance(e, json.JSONDecodeError) else "unreadable"
            raise AgentError(
                f"the command's answer to {self._where()} is not JSON ({reason}): {_start(text)}. "
                "Write only agent-io answers to stdout, one JSON object a line, and logs to stderr."
            ) from None
        if not isinstance(data, dict):
            raise AgentError(
                f"the command's answer to {self._where()} is a JSON {_JSON_TYPES.get(type(data), type(data).__name__)}, "
                f"not an object: {_start(text)}. Answer with {{\"final_response\": ..., \"intermediate_data\": ...}}."
            )
        try:
            return AgentOutput.model_validate(data)
        except ValidationError as e:
            problems = problems_from_validation(e, None, valid_keys_for=lambda loc: list(AgentOutput.model_fields) if not loc else field_names())
            fields = "; ".join(str(p) for p in problems)
            raise AgentError(
                f"the command's answer to {self._where()} does not fit the agent-io protocol: {fields} (the line: {_start(text)}; "
                "see `evalgate schema agent-io`)"
            ) from None

    # --- the end -----------------------------------------------------------------------------

    async def close(self) -> None:
        proc = self.proc
        if proc is None:
            return
        try:
            if not self.failed:
                # Every turn answered: the command ends when its stdin does. The wait is
                # bounded by the case run's timeout (infer cancels us).
                assert proc.stdin is not None
                if not proc.stdin.is_closing():
                    proc.stdin.close()
                code = await self._settle(None)
                if code:
                    raise _failed(code, f"the command {_exited(code)} after the last turn{self._stderr_tail()}")
        finally:
            await _end(proc)
            if self.stderr_task is not None and not self.stderr_task.done():
                self.stderr_task.cancel()


# sysexits.h's EX_TEMPFAIL, "temporary failure, the user is invited to retry": the one exit code by
# which a command says its failure was transient (its model answered 429 or 503, a connection
# dropped), and evalgate starts the case run again (agent.max_attempts).
EX_TEMPFAIL = 75


def _failed(code: int, message: str) -> AgentError:
    if code == EX_TEMPFAIL:
        return TransientAgentError(message + " (exit code 75, EX_TEMPFAIL: a transient failure)")
    return AgentError(message)


async def _exit_code(proc: asyncio.subprocess.Process, timeout: Optional[float]) -> Optional[int]:
    """The exit code once the process has exited (and been reaped), or None after `timeout`.

    Not `proc.wait()`: on Python 3.11 it returns only once the pipes are closed too, which
    a process the command started and left behind can hold open for as long as it runs."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while proc.returncode is None:
        if deadline is not None and time.monotonic() >= deadline:
            return None
        await asyncio.sleep(POLL_S)
    return proc.returncode


async def _end(proc: asyncio.subprocess.Process) -> None:
    """Kill the command if it still runs, and on POSIX whatever it started and left in its
    process group (a wrapper script's python, a tool server); reap it; close our pipe ends."""
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        elif proc.returncode is None:
            proc.kill()
    except (ProcessLookupError, PermissionError):  # already gone, every one of them
        pass
    # Shielded: a second cancellation must not leave a zombie behind. SIGKILL cannot be
    # ignored, so this is short.
    await asyncio.shield(_exit_code(proc, None))
    # A process outside the group (one that started its own session) may still hold the
    # pipes; asyncio offers no public way to let go of them but closing the transport.
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()


def _exited(code: int) -> str:
    if code < 0:  # POSIX: ended by a signal (the out-of-memory killer's SIGKILL, a crash's SIGSEGV)
        try:
            return f"was ended by {signal.Signals(-code).name}"
        except ValueError:
            return f"was ended by signal {-code}"
    return f"exited with code {code}"


_JSON_TYPES = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


def _start(text: str, limit: int = 80) -> str:
    """The start of a line, quoted, for messages."""
    shown = text if len(text) <= limit else text[:limit] + "..."
    return json.dumps(shown, ensure_ascii=False)
