"""The `adk` runner: an ADK agent run in this process by google-adk's own Runner.

The agent is loaded as `adk eval` loads it (the folder's `__init__.py`, then `agent.app`,
`root_agent` or `get_agent_async()`; the nearest `.env` up from the folder fills variables
that are not set), or from a dotted module path as ADK's AgentEvaluator does, every module of
the project imported fresh from the tree the runner points at (a run at the base commit, the
control, must not reuse the pull request's modules, nor the next run the base's). Each case run
gets its own google-adk Runner with in-memory session, artifact and memory services, and a
session made from the case's `session_input` the way ADK's eval makes it. Events become
invocations in `evalgate.agents.events`, the same code the API-server runner uses.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import os
import sys
import time
import traceback
import uuid
import warnings
from pathlib import Path
from typing import Any, Optional

from evalgate.adk import Content, Invocation
from evalgate.agents import DEFAULT_APP_NAME, DEFAULT_USER_ID, CaseRun, Conversation, Runner
from evalgate.agents.events import to_invocations, user_event
from evalgate.agents.replay import ToolReplay
from evalgate.errors import Problem, display_path


INSTALL_HINT = "Install the adk extra: pip install 'adk-evalgate[adk]' (or google-adk itself)."


class AdkRunner(Runner):
    kind = "adk"

    def __init__(self, *args: Any):
        super().__init__(*args)
        self.app: Any = None
        self.root_agent: Any = None

    # --- setup ---------------------------------------------------------------------------

    def _folder(self) -> Optional[Path]:
        path = Path(self.spec.adk)
        path = path if path.is_absolute() else self.base / path
        return path.resolve() if path.is_dir() else None  # resolved: `adk: .` names the folder it is in

    def _looks_dotted(self) -> bool:
        return all(part.isidentifier() for part in self.spec.adk.split("."))

    def check(self) -> list[Problem]:
        if importlib.util.find_spec("google.adk") is None:
            return [Problem(self.shown, self.place("adk"), "the adk runner needs google-adk, which is not installed", INSTALL_HINT)]
        folder = self._folder()
        if folder is not None:
            if not (folder / "__init__.py").is_file():
                return [
                    Problem(
                        self.shown,
                        self.place("adk"),
                        f"{display_path(folder)} has no __init__.py",
                        "An ADK agent folder holds __init__.py (with `from . import agent`) and agent.py defining root_agent.",
                    )
                ]
            return []
        top = self.spec.adk.split(".")[0]
        if not self._looks_dotted() or not ((self.base / top).exists() or (self.base / f"{top}.py").exists() or importlib.util.find_spec(top)):
            return [
                Problem(
                    self.shown,
                    self.place("adk"),
                    f"'{self.spec.adk}' is neither a folder in {display_path(self.base)} nor an importable module",
                    "Name the agent's folder, relative to the config file, or a dotted module path such as my_pkg.agent.",
                )
            ]
        return []

    async def start(self) -> None:
        problems = self.check()
        if problems:
            from evalgate.errors import InputError

            raise InputError(problems)
        folder = self._folder()
        if folder is not None:
            _load_dotenv(folder)
            module = self._import(folder.name, folder.parent, folder)
        else:
            module = self._import(self.spec.adk, self.base, None)
        holder = getattr(module, "agent", module)
        from google.adk.apps.app import App

        app = getattr(holder, "app", None)
        if isinstance(app, App):
            self.app, self.root_agent = app, app.root_agent
        elif hasattr(holder, "root_agent"):
            self.root_agent = holder.root_agent
        elif hasattr(holder, "get_agent_async"):
            try:
                got = await holder.get_agent_async()
            except Exception as e:
                raise self._import_problem(e, folder) from None
            self.root_agent = got[0] if isinstance(got, tuple) else got
        else:
            raise self.problem(
                f"'{self.spec.adk}' defines no app, root_agent or get_agent_async",
                "Define root_agent in agent.py (and `from . import agent` in __init__.py), as for `adk eval`.",
                "adk",
            )

    def models(self) -> Optional[set[str]]:
        """The model names of the agent tree (a model given by name, or a model object's `model`)."""
        found: set[str] = set()
        seen: set[int] = set()
        todo = [self.root_agent]
        while todo:
            agent = todo.pop()
            if agent is None or id(agent) in seen:
                continue
            seen.add(id(agent))
            model = getattr(agent, "model", None)
            name = model if isinstance(model, str) else getattr(model, "model", None)
            if isinstance(name, str) and name:
                found.add(name.rsplit("/", 1)[-1])
            todo.extend(getattr(agent, "sub_agents", None) or [])
        return found

    def _import(self, name: str, search: Path, folder: Optional[Path]) -> Any:
        # The agent's own imports (`import my_agent.tools`, `from tools import x`) resolve
        # from the folder that holds it, as under `adk web` and `adk api_server`: first on the
        # path, and every module of the project loaded fresh from it (`_forget_project`).
        while str(search) in sys.path:
            sys.path.remove(str(search))
        sys.path.insert(0, str(search))
        _forget_project(search)
        try:
            if folder is not None:
                # A fresh import: a module of the same name loaded before (another suite's
                # agent, a test) must not answer for this folder's relative imports.
                for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
                    del sys.modules[loaded]
                spec = importlib.util.spec_from_file_location(name, folder / "__init__.py")
                assert spec is not None and spec.loader is not None
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                spec.loader.exec_module(module)
                return module
            _forget_elsewhere(name.split(".")[0], search)
            return importlib.import_module(name)
        except ModuleNotFoundError as e:
            if folder is None and e.name and self.spec.adk.startswith(e.name):
                raise self.problem(
                    f"'{self.spec.adk}' is neither a folder in {display_path(self.base)} nor an importable module",
                    "Name the agent's folder, relative to the config file, or a dotted module path such as my_pkg.agent.",
                    "adk",
                ) from None
            raise self._import_problem(e, folder) from None
        except Exception as e:  # any error of the agent's own code, at import
            raise self._import_problem(e, folder) from None

    def _import_problem(self, e: BaseException, folder: Optional[Path]) -> Any:
        from evalgate.errors import InputError

        file, line = _origin(e, folder)
        what = f"loading the agent failed: {type(e).__name__}: {e}"
        if isinstance(e, ModuleNotFoundError):
            fix = f"Install what the agent imports ('{e.name}') before running evalgate (the action's `install` input)."
        else:
            fix = "Fix the agent's code; `adk run` shows the same error."
        return InputError(Problem(file or self.shown, f"line {line}" if line else self.place("adk"), what, fix))

    # --- runs ------------------------------------------------------------------------------

    async def open(self, case: CaseRun) -> Conversation:
        return _AdkConversation(self, case)

    async def agent_info(self) -> tuple[Optional[str], dict[str, Any]]:
        """From the root agent's tree, as ADK's api_server answers `/app-info` (LlmAgents only)."""
        from evalgate.agents_cli.traces import agents_map

        root = self.root_agent
        name = getattr(root, "name", None)
        try:
            from google.adk.agents.llm_agent import LlmAgent
            from google.adk.utils.agent_info import get_agents_dict

            if not isinstance(root, LlmAgent):
                return name, {}
            found = await get_agents_dict(root)
        except Exception:  # an older google-adk, or a tool whose declaration fails: the trace goes without
            return name, {}
        return name, agents_map({k: v.model_dump(mode="json", exclude_none=True) for k, v in found.items()})

    def describe(self) -> str:
        return f"adk {self.spec.adk}"


class _AdkConversation(Conversation):
    def __init__(self, owner: AdkRunner, case: CaseRun):
        from google.adk.artifacts.in_memory_artifact_service import InMemoryArtifactService
        from google.adk.memory.in_memory_memory_service import InMemoryMemoryService
        from google.adk.sessions.in_memory_session_service import InMemorySessionService

        self.owner = owner
        self.case = case
        session = case.session_input
        self.app_name = session.get("app_name") or DEFAULT_APP_NAME
        self.user_id = session.get("user_id") or DEFAULT_USER_ID
        self.session_id = session.get("session_id") or f"evalgate-{uuid.uuid4()}"
        self.sessions = InMemorySessionService()
        self.artifacts = InMemoryArtifactService()
        self.memory = InMemoryMemoryService()
        self.details = _plugin_classes()[0]()
        self.replay = ToolReplay(case.expected or []) if case.replay else None
        self.runner: Any = None

    async def _runner(self) -> Any:
        if self.runner is not None:
            return self.runner
        from google.adk.runners import Runner as AdkRunnerClass

        session = await self.sessions.create_session(
            app_name=self.app_name, user_id=self.user_id, state=dict(self.case.session_input.get("state") or {}), session_id=self.session_id
        )
        await _seed(self.sessions, session, self.case.history)
        _, retries, replay = _plugin_classes()
        plugins: list[Any] = [self.details, retries()]
        if self.replay is not None:
            plugins.append(replay(self.replay))
        services = {"session_service": self.sessions, "artifact_service": self.artifacts, "memory_service": self.memory}
        app = self.owner.app
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            if app is not None:
                copy = app.model_copy(update={"plugins": list(app.plugins) + plugins, "root_agent": self.owner.root_agent})
                self.runner = AdkRunnerClass(app=copy, app_name=self.app_name, **services)
            else:
                self.runner = AdkRunnerClass(app_name=self.app_name, agent=self.owner.root_agent, plugins=plugins, **services)
        return self.runner

    async def send(self, user_content: Content) -> Optional[Invocation]:
        from google.genai import types

        runner = await self._runner()
        message = types.Content.model_validate(user_content.model_dump(mode="json", exclude_none=True))
        events: list[dict[str, Any]] = []
        started = time.monotonic()
        with _busy_intervals() as busy:
            async for event in runner.run_async(user_id=self.user_id, session_id=self.session_id, new_message=message):
                if not events:
                    events.append(user_event(user_content, event.invocation_id, time.time()))
                events.append(event.model_dump(mode="json", by_alias=True, exclude_none=True))
        if not events:
            return None
        invocation_id = events[0]["invocationId"]
        durations = {invocation_id: round(time.monotonic() - started, 3)}
        # Of those seconds, the ones awaiting the model and the ones in tools, as ADK's eval splits them.
        split = {invocation_id: (round(busy.model_seconds(), 3), round(busy.tool_seconds(), 3))} if busy is not None else {}
        found = to_invocations(events, self.details.by_invocation, durations, split)
        return found[0] if found else None

    async def close(self) -> None:
        if self.runner is not None:
            try:
                await self.runner.close()
            except Exception:  # closing must not turn a finished run into a failure
                pass

    def replayed(self) -> dict[str, int]:
        return self.replay.counts() if self.replay is not None else {}


async def _seed(sessions: Any, session: Any, history: list[dict[str, Any]]) -> None:
    """The case's history (an agents-cli N+1 case's earlier turns) appended to the new session
    as ADK Events, before the first turn: the agent sees them as the conversation so far, and
    their `actions.state_delta` becomes the session's state (the session service applies it).
    Marked restored, as ADK's api_server marks the events a session is created with."""
    if not history:
        return
    from google.adk.events.event import Event

    try:
        from google.adk.events._internal_metadata import mark_restored
    except ImportError:  # a google-adk without it
        mark_restored = None
    for raw in history:
        event = Event.model_validate(raw)
        await sessions.append_event(session, mark_restored(event) if mark_restored else event)


def _busy_intervals() -> Any:
    """ADK's own collector of a turn's model and tool intervals (what `adk eval` measures
    model_duration and tool_duration with); a block that yields None where this google-adk
    has none, and the split is then not recorded."""
    try:
        from google.adk.telemetry._instrumentation import collect_busy_intervals
    except ImportError:
        return contextlib.nullcontext(None)
    return collect_busy_intervals()


@functools.lru_cache(maxsize=1)
def _plugin_classes() -> Any:
    """Our google-adk plugins, defined on first use (google-adk is imported only here)."""
    from google.adk.plugins.base_plugin import BasePlugin
    from google.genai import types

    class AppDetails(BasePlugin):
        """Records, per invocation and agent, the instructions and tool declarations of the
        agent's first model request: ADK's `Invocation.app_details`."""

        def __init__(self) -> None:
            super().__init__(name="evalgate_app_details")
            self.by_invocation: dict[str, dict[str, Any]] = {}

        async def before_model_callback(self, *, callback_context: Any, llm_request: Any) -> None:
            details = self.by_invocation.setdefault(callback_context.invocation_id, {"agent_details": {}})
            name = callback_context.agent_name
            if name not in details["agent_details"]:
                config = llm_request.config
                details["agent_details"][name] = {
                    "name": name,
                    "instructions": _instructions(config.system_instruction),
                    "tool_declarations": [_dump(t) for t in (config.tools or [])],
                }
            return None

    class Retries(BasePlugin):
        """Retries for the agent's model calls unless the agent set its own: a 408 or 5xx or a
        dropped connection (google-genai retries those when it has retry options) is sent again
        at once, after half a second or so, so a passing blip of the model service costs
        little. A 429 is not retried here (google-genai's backoff cannot read Retry-After): the
        case run fails, and evalgate.infer starts it again as long as the server asked."""

        def __init__(self) -> None:
            super().__init__(name="evalgate_retries")

        async def before_model_callback(self, *, callback_context: Any, llm_request: Any) -> None:
            config = llm_request.config
            if _own_retry_options(callback_context):
                return None  # the agent's model has retry settings of its own: they stand
            if config.http_options is None:
                config.http_options = types.HttpOptions()
            if config.http_options.retry_options is None:
                config.http_options.retry_options = types.HttpRetryOptions(
                    attempts=3, initial_delay=0.5, max_delay=8.0, exp_base=2.0, jitter=0.5, http_status_codes=[408, 500, 502, 503, 504]
                )
            return None

    class Replay(BasePlugin):
        """tools: replay: a call matching an expected one gets its recorded response."""

        def __init__(self, replay: ToolReplay) -> None:
            super().__init__(name="evalgate_tool_replay")
            self.replay = replay

        async def before_tool_callback(self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any) -> Optional[dict[str, Any]]:
            return self.replay.lookup(tool.name, tool_args)

    return AppDetails, Retries, Replay


def _own_retry_options(callback_context: Any) -> bool:
    """Whether the agent's model (a Gemini instance) carries retry options of its own."""
    agent = getattr(getattr(callback_context, "_invocation_context", None), "agent", None)
    try:
        model = getattr(agent, "canonical_model", None)
    except Exception:  # a model ADK cannot resolve: its own error comes with the call
        return False
    return getattr(model, "retry_options", None) is not None


def _instructions(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    parts = getattr(value, "parts", None) or []
    return "\n".join(p.text or "" for p in parts)


def _dump(value: Any) -> Any:
    return value.model_dump(mode="json", exclude_none=True) if hasattr(value, "model_dump") else value


def _forget_project(search: Path) -> None:
    """Drop the project's modules that an earlier run in this process imported, so the agent
    about to load imports its own tree's: those loaded from `search` (its files may have
    changed since), and those whose top-level name `search` holds (`tools.py`, a package
    folder) loaded from another tree. The control runs the same runner in the base commit's
    tree after the pull request's run imported the same names from its own
    (evalgate.pipeline.at_base); the pull request's next runner drops the base's the same way.
    The installed environment (the interpreter's prefixes, site-packages, evalgate) is never
    dropped: both trees share it."""
    root = search.resolve()
    here = {p.stem for p in root.glob("*.py")} | {p.parent.name for p in root.glob("*/__init__.py")}
    shared = [Path(p).resolve() for p in {sys.prefix, sys.base_prefix, sys.exec_prefix}] + [Path(__file__).resolve().parents[1]]
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None) or next(iter(getattr(module, "__path__", None) or []), None)
        if not file or name.split(".")[0] in sys.stdlib_module_names:
            continue
        path = Path(file).resolve()
        if any(part in ("site-packages", "dist-packages") for part in path.parts) or any(path.is_relative_to(s) for s in shared):
            continue
        if path.is_relative_to(root) or name.split(".")[0] in here:
            del sys.modules[name]
    importlib.invalidate_caches()


def _forget_elsewhere(top: str, search: Path) -> None:
    """Drop a cached package of this name that was loaded from another folder (another
    suite's agent, a previous in-process run), so the import finds the one beside the config."""
    root = search.resolve()
    for name in [m for m in sys.modules if m == top or m.startswith(top + ".")]:
        file = getattr(sys.modules[name], "__file__", None)
        if file and not Path(file).resolve().is_relative_to(root):
            del sys.modules[name]


def _load_dotenv(folder: Path) -> None:
    """The nearest `.env` from the agent's folder up, as `adk eval` reads it: variables
    already set keep their values. ADK_DISABLE_LOAD_DOTENV turns it off, as in ADK."""
    if os.environ.get("ADK_DISABLE_LOAD_DOTENV", "").lower() in ("1", "true", "yes"):
        return
    here = folder.resolve()
    for candidate in [here, *here.parents]:
        env = candidate / ".env"
        if env.is_file():
            from dotenv import dotenv_values

            for key, value in dotenv_values(env).items():
                if value is not None and key not in os.environ:
                    os.environ[key] = value
            return


def _origin(e: BaseException, folder: Optional[Path]) -> tuple[Optional[str], Optional[int]]:
    """The agent's file and line where loading failed: a syntax error's own place, else the
    innermost frame inside the agent's folder (or outside site-packages)."""
    if isinstance(e, SyntaxError) and e.filename:
        return display_path(e.filename), e.lineno
    frames = traceback.extract_tb(e.__traceback__)
    root = str(folder.resolve()) if folder is not None else None
    for frame in reversed(frames):
        name = frame.filename
        if root and name.startswith(root):
            return display_path(name), frame.lineno
        if not root and "site-packages" not in name and "importlib" not in name and "evalgate" not in name:
            return display_path(name), frame.lineno
    return None, None
