"""Running the agent: one small interface, one file per runner kind.

A runner opens a *conversation* for one run of one case, takes that case's user turns one
at a time and gives back one ADK `Invocation` per turn (or None when the agent produced
nothing for it). `evalgate.infer` drives the conversations: concurrency, timeouts, runs,
errors. Runners know nothing of scoring.

Kinds: `adk` (in-process google-adk, `adk_inprocess.py`), `url` (an ADK API server,
`api_server.py`), `command` (any program speaking the agent-io protocol, `command.py`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from evalgate.adk import Content, Invocation
from evalgate.errors import InputError, Problem


# ADK's eval defaults when a case's session_input names no user or app (evaluation_generator.py).
DEFAULT_USER_ID = "test_user_id"
DEFAULT_APP_NAME = "EvaluationGenerator"


class AgentError(Exception):
    """A case run failed: the agent, a tool, the server or the command. Recorded as
    NOT_EVALUATED with this message; other cases go on."""


class TransientAgentError(AgentError):
    """A case run failed on something that may not happen again (the server answered 429 or
    503, the connection dropped, a command exited with EX_TEMPFAIL): `evalgate.infer` starts
    the case run again, after `retry_after` seconds when the server said how long."""

    def __init__(self, message: str, retry_after: Optional[float] = None):
        super().__init__(message)
        self.retry_after = retry_after


@dataclass
class CaseRun:
    """One run of one case, as a runner sees it."""

    eval_set_id: str
    eval_id: str
    run: int  # 1-based
    session_input: dict[str, Any] = field(default_factory=dict)  # ADK SessionInput (snake_case)
    expected: Optional[list[Invocation]] = None  # the expected turns (tool replay reads their tool responses)
    replay: bool = False  # tools: replay
    # ADK events (JSON, snake_case) the session holds before the first turn: an agents-cli
    # "N+1" case's earlier turns (author, content, actions.state_delta).
    history: list[dict[str, Any]] = field(default_factory=list)


class Conversation:
    """One case run's session with the agent."""

    async def send(self, user_content: Content) -> Optional[Invocation]:
        """Send one user turn; the agent's invocation, or None if it produced nothing."""
        raise NotImplementedError

    async def close(self) -> None:
        """Release the session (always called, also after an error or a timeout)."""

    def replayed(self) -> dict[str, int]:
        """Under `tools: replay`: how many tool calls were replayed and how many ran live."""
        return {}


class Runner:
    """One configured agent. `start()` once (setup errors are InputErrors), then `open()`
    a conversation per case run, concurrently, then `stop()`."""

    kind = ""

    def __init__(self, spec: Any, base: Path, shown: str, where: Callable[..., str]):
        self.spec = spec  # evalgate.config.AgentConfig
        self.base = base  # the config file's folder
        self.shown = shown  # the config file, for messages
        self._where = where  # where(*keys): a place in the config, with its line

    def place(self, *keys: Any) -> str:
        """The agent's place in the config, or one of its keys' (with the line, when known)."""
        return self._where(*keys)

    def problem(self, what: str, fix: str, *keys: Any) -> InputError:
        """A setup error at the agent's place in the config (or at one of its keys)."""
        return InputError(Problem(self.shown, self.place(*keys), what, fix))

    def check(self) -> list[Problem]:
        """Cheap checks for `evalgate validate`: nothing is imported, started or called."""
        return []

    async def start(self) -> None:
        pass

    async def open(self, case: CaseRun) -> Conversation:
        raise NotImplementedError

    async def stop(self) -> None:
        pass

    async def agent_info(self) -> tuple[Optional[str], dict[str, Any]]:
        """The root agent's name and its agent tree as an agents-cli trace records it
        (`agent_data.agents`: `{name: {agent_id, agent_type, description, instruction, tools,
        sub_agents}}`), where the runner can know them cheaply; (None, {}) where it cannot.
        Asked once, after start(), when dataset cases run; never fails a run."""
        return None, {}

    def models(self) -> Optional[set[str]]:
        """The names of the models the agent calls (`gemini-2.5-flash`), where the runner can
        know them after start(); None where it cannot (a server's, a command's)."""
        return None

    def describe(self) -> str:
        return self.kind


ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_env(value: str, shown: str, where: str) -> str:
    """`${VAR}` replaced from the environment; an unset variable is an input error that
    names the variable, never its value."""
    missing = [name for name in ENV_VAR.findall(value) if name not in os.environ]
    if missing:
        raise InputError(Problem(shown, where, f"${{{missing[0]}}} is not set in the environment", f"Set {missing[0]} (in CI: from a secret), or remove it."))
    return ENV_VAR.sub(lambda m: os.environ[m.group(1)], value)


def make_runner(spec: Any, base: Path, shown: str, where: Callable[..., str]) -> Runner:
    """The runner for an agent config (`evalgate.config.AgentConfig`)."""
    if spec.adk is not None:
        from evalgate.agents.adk_inprocess import AdkRunner

        return AdkRunner(spec, base, shown, where)
    if spec.url is not None:
        from evalgate.agents.api_server import ApiServerRunner

        return ApiServerRunner(spec, base, shown, where)
    from evalgate.agents.command import CommandRunner

    return CommandRunner(spec, base, shown, where)
