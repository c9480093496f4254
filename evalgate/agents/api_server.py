"""The `url` runner: an agent served by an ADK API server (`adk api_server`, `adk deploy cloud_run`).

It speaks the server's HTTP API, never ADK's Python: per case run it creates a session
(`POST /apps/{app}/users/{user}/sessions` with the case's `session_input` state, user id
and session id, ADK's eval defaults otherwise), sends each user turn to `POST /run`
(non-streaming; the answer is the turn's events in camelCase, without the user's message,
which is put back here), and deletes the session at the end. An agents-cli "N+1" case's
history goes into the created session as its `events` (state deltas as its `state`). The events become invocations
in `evalgate.agents.events`, the same code the in-process runner uses; only `app_details`
(the agent's instructions and tool declarations) cannot be known from outside the server.

`url` is the server's base URL. Without `app:`, the last segment of the url's path is the
app, and the base is the url without it: `http://host:8000/my_agent` is app `my_agent` on
`http://host:8000`. With `app:`, the whole url is the base (a server behind a path prefix).

`headers` (for example `Authorization: Bearer ${TOKEN}` for Cloud Run) are read from the
environment at start and go only on the wire: no message, result or log shows their values.
They may not name the GitHub token or evalgate's and the runner's own variables (EVALGATE_*,
ACTIONS_*, INPUT_*, GITHUB_TOKEN), and with headers a redirect to another host is not followed.

Under `tools: replay` the server runs the agent's tools, so evalgate cannot answer them;
it puts the case's recorded tool calls into the session state under
`evalgate_recorded_tool_responses` (a list of `{name, args, response}`), for a server-side
`before_tool_callback` that wants to replay them.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional
from urllib.parse import quote, urljoin, urlsplit, urlunsplit

from evalgate.adk import Content, Invocation
from evalgate.agents import DEFAULT_USER_ID, ENV_VAR, AgentError, CaseRun, Conversation, Runner, TransientAgentError, capture, expand_env
from evalgate.agents.environment import withheld
from evalgate.agents.events import to_invocations, user_event
from evalgate.agents.replay import recorded_calls
from evalgate.errors import Problem, closest

REPLAY_STATE_KEY = "evalgate_recorded_tool_responses"

PROBE_TIMEOUT_S = 5.0  # start(): a server that does not answer this fast is taken as not started
CLOSE_TIMEOUT_S = 5.0
DETAIL_CHARS = 300  # of an error body, in a message
LOG_CHARS = 20_000  # of an error body, in the case run's log
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")  # an HTTP header name (RFC 9110 token)
MAX_REDIRECTS = 5


def header_variable_allowed(name: str) -> bool:
    """Whether `${name}` may be sent to an agent's server in a header: not the GitHub token,
    nor evalgate's own settings (EVALGATE_*), nor the runner's (ACTIONS_*, INPUT_*)."""
    return not (withheld(name) or name.upper().startswith("EVALGATE_"))


def _origin(url: str) -> tuple[str, str, Optional[int]]:
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower())
    return parts.scheme.lower(), (parts.hostname or "").lower(), port


def _origin_url(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], "", "", ""))


class ApiServerRunner(Runner):
    kind = "url"

    def __init__(self, *args: Any):
        super().__init__(*args)
        self.api = ""  # the server's base URL, no trailing slash (self.base is the config's folder)
        self.app = ""
        self.headers: dict[str, str] = {}
        self.secrets: list[str] = []  # header values and the variables in them, longest first
        self.http: Any = None  # requests.Session
        self.pool: Optional[ThreadPoolExecutor] = None

    # --- setup ---------------------------------------------------------------------------

    def _locate(self) -> tuple[str, Optional[str], list[Problem]]:
        """(API base, app or None, problems) from `url` and `app`, without calling anything."""
        url = self.spec.url.strip()
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            fix = "Give the server's base URL, such as http://127.0.0.1:8000 (adk api_server) or https://my-agent-xyz.a.run.app (Cloud Run)."
            return "", None, [Problem(self.shown, self.place("url"), f"'{_safe_url(url)}' is not an http(s) URL", fix)]
        if parts.query:
            fix = "Give the server's base URL without ?...; send keys in `headers` (with ${VAR})."
            return "", None, [Problem(self.shown, self.place("url"), "the url has a query string, which API paths cannot follow", fix)]
        path = parts.path.rstrip("/")
        if self.spec.app:
            return urlunsplit(parts._replace(path=path, fragment="")).rstrip("/"), self.spec.app, []
        head, _, last = path.rpartition("/")
        if not last:
            what = f"no app name: `app` is not set and the url ({_safe_url(url)}) has no path to take it from"
            fix = "Add `app:` with the agent's name on the server (its folder name; `GET /list-apps` lists them)."
            return "", None, [Problem(self.shown, self.place(), what, fix)]
        return urlunsplit(parts._replace(path=head, fragment="")).rstrip("/"), last, []

    def check(self) -> list[Problem]:
        problems = self._locate()[2]
        for name, value in self.spec.headers.items():
            if not _TOKEN.match(name):
                problems.append(Problem(self.shown, self.place("headers"), f"'{name}' is not a valid HTTP header name", "Use letters, digits and dashes, as in Authorization or X-Api-Key."))
            for var in ENV_VAR.findall(value):
                if not header_variable_allowed(var):
                    problems.append(Problem(
                        self.shown, self.place("headers", name),
                        f"${{{var}}} is the GitHub token or one of evalgate's or the runner's own variables, which are never sent to an agent's server",
                        "Put the server's own credential in a variable of its own (in CI: from a secret, e.g. AGENT_TOKEN: ${{ secrets.AGENT_TOKEN }}) and name that.",
                    ))
        return problems

    async def start(self) -> None:
        from evalgate.errors import InputError

        problems = self.check()
        if problems:
            raise InputError(problems)
        self.api, app, _ = self._locate()
        self.app = app or ""
        for name, value in self.spec.headers.items():
            where = self.place("headers", name)
            expanded = expand_env(value, self.shown, where)
            # requests would reject such a value with a message that quotes it.
            if "\r" in expanded or "\n" in expanded or expanded != expanded.strip():
                raise self.problem("the value has a line break or leading or trailing spaces", "Check the value (or the variable it reads); it is not shown here.", f"headers.{name}")
            self.headers[name] = expanded
            self.secrets += [expanded] + [os.environ[var] for var in ENV_VAR.findall(value)]
        self.secrets = sorted({s for s in self.secrets if s}, key=len, reverse=True)

        import requests
        from requests.adapters import HTTPAdapter

        self.http = requests.Session()
        self.http.headers.update(self.headers)
        # One pooled connection per case run in flight; twice that many threads, because a run
        # that timed out keeps its thread until the request's own timeout ends it.
        adapter = HTTPAdapter(pool_connections=1, pool_maxsize=self.spec.concurrency)
        self.http.mount("http://", adapter)
        self.http.mount("https://", adapter)
        # Not the default executor: its few threads (CPUs + 4) would quietly cap `concurrency`.
        self.pool = ThreadPoolExecutor(max_workers=2 * self.spec.concurrency + 1, thread_name_prefix="evalgate-url")
        try:
            await self._probe()
        except BaseException:
            await self.stop()  # `infer` stops only the runners that started
            raise

    async def _probe(self) -> None:
        shown = _safe_url(self.api)
        timeout = min(PROBE_TIMEOUT_S, self.spec.timeout_s)
        try:
            status, body = await self.call("GET", "/list-apps", timeout=timeout)
        except AgentError as e:
            raise self.problem(f"the API server at {shown} does not answer: {e}", "Start the server first (adk api_server AGENTS_DIR, or deploy it), then run evalgate; check the url.", "url") from None
        if status in (401, 403):
            raise self.problem(f"the API server at {shown} refused the request (HTTP {status})", "Check `headers` (for Cloud Run: Authorization: Bearer ${TOKEN} with an identity token).", "headers")
        apps = body if status == 200 and isinstance(body, list) else None
        if apps is None:
            # Not ADK's own /list-apps: a server that still answers /health is taken at its word.
            try:
                health, _ = await self.call("GET", "/health", timeout=timeout)
            except AgentError:
                health = None
            if health != 200:
                raise self.problem(
                    f"{shown} does not look like an ADK API server (GET /list-apps answered HTTP {status}, GET /health {health or 'nothing'})",
                    "Give the server's base URL (what `adk api_server` prints), without /run or /docs.",
                    "url",
                )
            return
        names = sorted(str(a) for a in apps)
        if self.app not in names:
            serves = f"it serves {', '.join(names)}" if names else "it serves no apps"
            near = closest(self.app, names)
            fix = f"Did you mean '{near}'? Set `app:` to it." if near else "Set `app:` to one of them (an agent folder's name)."
            raise self.problem(f"the API server at {shown} has no app '{self.app}' ({serves})", fix, "app" if self.spec.app else "url")

    async def stop(self) -> None:
        if self.http is not None:
            self.http.close()
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)

    # --- HTTP ------------------------------------------------------------------------------

    async def call(self, method: str, path: str, body: Any = None, timeout: Optional[float] = None) -> tuple[int, Any]:
        """(status, parsed JSON body, or the text when it is not JSON); an AgentError when the
        server cannot be reached or does not answer in time. Runs off the event loop."""
        url = self.api + path
        # Bounded by the case's own timeout, so a run `infer` gave up on does not hold its thread longer.
        limit = timeout if timeout is not None else self.spec.timeout_s
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.pool, self._call, method, url, body, (min(10.0, limit), limit))

    def _call(self, method: str, url: str, body: Any, timeout: tuple[float, float]) -> tuple[int, Any]:
        import requests

        shown = f"{method} {_safe_url(url)}"
        try:
            response = self.http.request(method, url, json=body, timeout=timeout, allow_redirects=not self.headers)
            # With headers of our own (a credential, usually), a redirect is followed only on
            # the same scheme, host and port: requests would drop Authorization on another
            # host, but send every other header there.
            for _ in range(MAX_REDIRECTS):
                if not (self.headers and response.is_redirect):
                    break
                target = urljoin(response.url, response.headers["location"])
                if _origin(target) != _origin(url):
                    raise AgentError(
                        f"{shown}: the server redirected to another host ({_safe_url(_origin_url(target))}); "
                        "not followed, so the configured headers are not sent there. Give the final url in `url`."
                    )
                if response.status_code in (301, 302, 303) and method not in ("GET", "HEAD"):
                    method, body = "GET", None  # as browsers and requests do
                response = self.http.request(method, target, json=body, timeout=timeout, allow_redirects=False)
            else:
                if self.headers and response.is_redirect:
                    raise AgentError(f"{shown}: more than {MAX_REDIRECTS} redirects")
        except requests.Timeout:
            raise AgentError(f"{shown}: no answer within {timeout[1]:g} s") from None
        except requests.ConnectionError as e:  # refused, reset, dropped: the network's, worth another attempt
            raise TransientAgentError(f"{shown}: {self.redact(_reason(e))}") from None
        except requests.RequestException as e:
            raise AgentError(f"{shown}: {self.redact(_reason(e))}") from None
        try:
            body: Any = json.loads(response.content)
        except ValueError:
            body = response.content.decode("utf-8", "replace")
        return Answer(response.status_code, body, _retry_after(response.headers.get("retry-after")))

    def redact(self, text: str) -> str:
        """`text` without any header value or variable read into one (a server may echo what
        it was sent)."""
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text

    def failure(self, what: str, status: int, body: Any, retry_after: Optional[float] = None) -> AgentError:
        """An HTTP error answer as a case run's failure: status and a short detail of the body
        (the whole body goes to the case run's log). Transient (`transient_status`): a
        TransientAgentError, which `evalgate.infer` retries after `retry_after` s when given."""
        log_answer(self, f"{what} answered HTTP {status}", body)
        detail = body.get("detail", body) if isinstance(body, dict) else body
        text = detail if isinstance(detail, str) else json.dumps(detail, ensure_ascii=False)
        text = " ".join(self.redact(text).split())
        if len(text) > DETAIL_CHARS:
            text = text[:DETAIL_CHARS] + " ..."
        message = f"{what} answered HTTP {status}" + (f": {text}" if text else "")
        if transient_status(status, text):
            return TransientAgentError(message, retry_after)
        return AgentError(message)

    # --- runs ------------------------------------------------------------------------------

    async def open(self, case: CaseRun) -> Conversation:
        return _ServerConversation(self, case)

    async def agent_info(self) -> tuple[Optional[str], dict[str, Any]]:
        """`GET /apps/<app>/app-info`, as agents-cli's `eval generate` asks it; when the server
        does not answer it, agents-cli's fallback: the root agent named `root_agent`, no agents."""
        from evalgate.agents_cli.cases import FALLBACK_AGENT
        from evalgate.agents_cli.traces import agents_map

        try:
            status, body = await self.call("GET", f"/apps/{quote(self.app, safe='')}/app-info", timeout=min(PROBE_TIMEOUT_S * 2, self.spec.timeout_s))
        except AgentError:
            return FALLBACK_AGENT, {}
        if status != 200 or not isinstance(body, dict):
            return FALLBACK_AGENT, {}
        root = body.get("rootAgentName", body.get("root_agent_name"))
        agents = agents_map(body.get("agents") if isinstance(body.get("agents"), dict) else {})
        for entry in agents.values():
            if isinstance(entry.get("tools"), list):
                entry["tools"] = _snake_tools(entry["tools"])
        return (root if isinstance(root, str) and root else FALLBACK_AGENT), agents

    def describe(self) -> str:
        return f"url {_safe_url(self.spec.url)}"


class _ServerConversation(Conversation):
    def __init__(self, owner: ApiServerRunner, case: CaseRun):
        self.owner = owner
        self.case = case
        self.user_id = str(case.session_input.get("user_id") or DEFAULT_USER_ID)
        self.session_id: Optional[str] = None  # the server's, once created

    def _session_path(self) -> str:
        return f"/apps/{quote(self.owner.app, safe='')}/users/{quote(self.user_id, safe='')}/sessions"

    async def _create_session(self) -> str:
        state = dict(self.case.session_input.get("state") or {})
        events = []
        for event in self.case.history:
            # As agents-cli's `eval generate` seeds a session: its history in `events`. ADK
            # 2.13's api_server refuses an event that carries actions ("Session initialization
            # event N cannot include event actions"), so a state delta goes into the session's
            # initial `state` instead (in order, a later delta over an earlier one), and an event
            # that was only a state delta is not sent.
            delta = (event.get("actions") or {}).get("state_delta")
            state.update(delta or {})
            if event.get("content") is not None:
                events.append({k: v for k, v in event.items() if k != "actions"})
        if self.case.replay:
            state[REPLAY_STATE_KEY] = recorded_calls(self.case.expected or [])
        body: dict[str, Any] = {"state": state}
        if events:
            body["events"] = events
        wanted = self.case.session_input.get("session_id")
        if wanted:
            body["sessionId"] = str(wanted)
        what = f"creating the session (POST {self._session_path()})"
        for attempt in (1, 2):
            reply = await self.owner.call("POST", self._session_path(), body)
            status, answer = reply
            if status in (502, 503, 504) and attempt == 1:
                await asyncio.sleep(1.0)  # a gateway's blip (Cloud Run cold start); once is enough
                continue
            break
        if status == 409 and wanted:
            raise AgentError(
                f"{what}: session '{wanted}' already exists on the server (session_input.session_id is fixed, "
                "so runs of this case share it; remove it, or run one at a time with num_runs: 1)"
            )
        if status >= 400:
            raise self.owner.failure(what, status, answer, getattr(reply, "retry_after", None))
        if not isinstance(answer, dict) or not answer.get("id"):
            raise AgentError(f"{what} answered HTTP {status} without a session id")
        return str(answer["id"])

    async def send(self, user_content: Content) -> Optional[Invocation]:
        if self.session_id is None:
            self.session_id = await self._create_session()
        body = {
            "appName": self.owner.app,
            "userId": self.user_id,
            "sessionId": self.session_id,
            "newMessage": user_content.model_dump(mode="json", by_alias=True, exclude_none=True),
            "streaming": False,
        }
        sent_at = time.time()
        started = time.monotonic()
        reply = await self.owner.call("POST", "/run", body)
        status, answer = reply
        took = round(time.monotonic() - started, 3)
        if status >= 400:
            raise self.owner.failure("POST /run", status, answer, getattr(reply, "retry_after", None))
        if not isinstance(answer, list) or not all(isinstance(e, dict) for e in answer):
            log_answer(self.owner, f"POST /run answered HTTP {status} with a body that is not a JSON list of events", answer)
            shown = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
            shown = " ".join(self.owner.redact(shown).split())[:DETAIL_CHARS]
            raise AgentError(f"POST /run answered HTTP {status} with a body that is not a JSON list of events: {shown!r}")
        if not answer:
            return None
        # The server does not echo the user's message; ADK records it in the agent's invocation.
        invocation_id = str(answer[0].get("invocationId") or answer[0].get("invocation_id") or "")
        events = [user_event(user_content, invocation_id, sent_at), *answer]
        found = to_invocations(events, None, {invocation_id: took})
        return found[0] if found else None

    async def close(self) -> None:
        if self.session_id is None:
            return
        try:
            await self.owner.call("DELETE", f"{self._session_path()}/{quote(self.session_id, safe='')}", timeout=CLOSE_TIMEOUT_S)
        except Exception:  # a session left behind must not turn a finished run into a failure
            pass


class Answer(tuple):
    """(status, body) as `ApiServerRunner.call` gives it, with the server's Retry-After (seconds) beside it."""

    retry_after: Optional[float]

    def __new__(cls, status: int, body: Any, retry_after: Optional[float] = None) -> "Answer":
        self = super().__new__(cls, (status, body))
        self.retry_after = retry_after
        return self


def _retry_after(value: Optional[str]) -> Optional[float]:
    from evalgate.judge.retry import retry_after

    return retry_after(_WithHeaders({"retry-after": value})) if value else None


class _WithHeaders:
    """What `evalgate.judge.retry.retry_after` reads a Retry-After header from."""

    def __init__(self, headers: dict[str, Any]):
        self.response = self
        self.headers = headers


# What a 500 says when it is the agent's model's 429 or 5xx or a dropped connection: ADK's API
# server lets the agent's exception through, and Starlette answers it with a bare
# "Internal Server Error"; a server that reports the exception puts its text in `detail`.
_TRANSIENT_DETAIL = re.compile(
    r"^(?:Internal Server Error)?$|^(?:429|5\d\d)\b|RESOURCE_EXHAUSTED|\bUNAVAILABLE\b|"
    r"\b(?:ReadError|RemoteProtocolError|ConnectError|ServerDisconnectedError|ReadTimeout|ConnectTimeout|ClientOSError)\b|"
    r"Server disconnected|Connection reset"
)


def transient_status(status: int, detail: str) -> bool:
    """Whether the server's error answer is worth another attempt of the case run: 408, 429,
    502, 503, 504 (the server, or a gateway before it, busy or starting), and a 500 that is
    bare ("Internal Server Error": ADK's API server lets the agent's exception through, its
    model's 429 or 503 included) or whose detail names a 429, a 5xx or a dropped connection.
    A 500 with another detail is the agent's own failure, and stands."""
    if status in (408, 429, 502, 503, 504):
        return True
    return status == 500 and bool(_TRANSIENT_DETAIL.search(detail.strip()))


def log_answer(owner: ApiServerRunner, what: str, body: Any) -> None:
    """An answer the server gave instead of events, whole (up to LOG_CHARS, redacted), into
    the case run's log: all of the agent's output evalgate can see (the server's own log is
    the server's)."""
    log = capture.current()
    if log is None:
        return
    if isinstance(body, dict) and isinstance(body.get("detail"), str):
        text = body["detail"]  # FastAPI's error answer; ADK's server puts the exception there
    else:
        text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False, indent=1)
    text = owner.redact(text)
    if len(text) > LOG_CHARS:
        text = text[:LOG_CHARS] + f" ... ({len(text) - LOG_CHARS:,} more characters)"
    log.write(f"{what}:\n{text}\n")


def _snake_tools(tools: list[Any]) -> list[Any]:
    """Tool declarations as the server sent them (camelCase) in snake_case, as agents-cli
    writes them once its SDK has read them; as sent when google-genai is not installed (a
    property name inside a schema must keep its case, so no blind key conversion)."""
    try:
        from google.genai import types
    except ImportError:
        return tools
    try:
        return [types.Tool.model_validate(t).model_dump(mode="json", exclude_none=True) for t in tools]
    except Exception:  # a declaration this google-genai does not know: keep it as sent
        return tools


def _safe_url(url: str) -> str:
    """The url without user:password@ (never shown) or a query string (API keys live there)."""
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=netloc, query="", fragment=""))


def _reason(e: Exception) -> str:
    """The short cause of a requests error ("Connection refused"), not urllib3's nested reprs."""
    text = str(e)
    errno = re.search(r"\[Errno -?\d+\] ([^'\")\]]+)", text)
    if errno:
        return errno.group(1).strip()
    for hint in ("Connection refused", "Connection reset", "Name or service not known", "certificate verify failed", "Remote end closed connection"):
        if hint in text:
            return hint
    return type(e).__name__
