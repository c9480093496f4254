"""The `url` runner against a real `adk api_server` (same invocations as the in-process runner)
and against a small recording stand-in for the error paths, the session it creates and headers."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Callable, Optional
from urllib.parse import unquote, urlsplit

import pytest
import requests

sys.path.insert(0, str(Path(__file__).parent))
import agent_model  # noqa: E402
import fake_http  # noqa: E402
from fake_gemini import JUDGE_ENV_VARS, FakeGemini  # noqa: E402
from fake_http import Reply  # noqa: E402

from evalgate import results  # noqa: E402

AGENTS = Path(__file__).parent / "agents"
APP = "weather_agent"


# --- helpers --------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def case(eval_id: str, turns: list[tuple[str, str]], session_input: Optional[dict] = None, tools: Optional[list] = None) -> dict:
    """An ADK eval case; `tools[i]` are turn i's expected (name, args) calls, answered "sunny"."""
    conversation = []
    for i, (user, answer) in enumerate(turns):
        calls = (tools or [])[i] if i < len(tools or []) else []
        conversation.append(
            {
                "invocation_id": f"t{i + 1}",
                "user_content": {"role": "user", "parts": [{"text": user}]},
                "final_response": {"role": "model", "parts": [{"text": answer}]},
                "intermediate_data": {
                    "tool_uses": [{"id": f"c{n}", "name": name, "args": args} for n, (name, args) in enumerate(calls)],
                    "tool_responses": [{"id": f"c{n}", "name": name, "response": {**args, "forecast": "sunny"}} for n, (name, args) in enumerate(calls)],
                    "intermediate_responses": [],
                },
            }
        )
    out: dict[str, Any] = {"eval_id": eval_id, "conversation": conversation}
    if session_input is not None:
        out["session_input"] = session_input
    return out


def write_evalset(path: Path, eval_set_id: str, cases: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"eval_set_id": eval_set_id, "eval_cases": cases}, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


def write_config(path: Path, evals: Path, agent: str, criteria: str = "{response_match_score: 0.8}", not_evaluated: str = "warn") -> Path:
    path.write_text(
        f"suites:\n  - name: s\n    evalsets: ['{evals}']\n    agent: {agent}\n    criteria: {criteria}\n    not_evaluated: {not_evaluated}\n",
        encoding="utf-8",
    )
    return path


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def comparable(record: dict) -> dict:
    """An inference line without what legitimately differs between runners: ids, times and
    app_details (only the in-process runner sees the model request). Function call ids
    (random `adk-<uuid>`) become their order of appearance, so pairing is still compared."""
    ids: dict[str, str] = {}

    def scrub(value: Any) -> Any:
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                if k in ("function_call", "function_response") and isinstance(v, dict) and "id" in v:
                    v = {**v, "id": ids.setdefault(v["id"], f"call-{len(ids)}")}
                out[k] = scrub(v)
            return out
        if isinstance(value, list):
            return [scrub(v) for v in value]
        return value

    invocations = [
        {k: v for k, v in inv.items() if k not in ("invocation_id", "creation_timestamp", "duration", "model_duration", "tool_duration", "app_details")}
        for inv in record.get("invocations", [])
    ]
    return {**{k: v for k, v in record.items() if k != "invocations"}, "invocations": scrub(invocations)}


# --- a real adk api_server --------------------------------------------------------------


@pytest.fixture(scope="module")
def model():
    """The weather agent's model: tests/agent_model.py behind a fake Gemini (any key)."""
    fake = FakeGemini(agent_model.respond)
    fake.api_key = None
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def agents_dir(tmp_path_factory) -> Path:
    """tests/agents copied, so the server's .adk folders land outside the repo, plus eval sets
    that the shared one lacks: scores below 1, a Japanese case, a tool that raises."""
    root = tmp_path_factory.mktemp("served") / "agents"
    shutil.copytree(AGENTS, root, ignore=shutil.ignore_patterns("__pycache__", ".adk"))
    write_evalset(
        root / "evals" / "more.evalset.json",
        "more",
        [
            case("tokyo_ja", [("東京の天気は?", "東京: 晴れ、20度です。")], tools=[[("get_weather", {"city": "東京"})]]),
            case("paris_then_london", [("Paris?", "The weather in Paris: sunny, 21 C."), ("And London?", "London is cloudy.")],
                 tools=[[("get_weather", {"city": "Paris"})], [("get_weather", {"city": "London"})]]),
        ],
    )
    write_evalset(root / "broken" / "stock.evalset.json", "stock", [case("stock", [("What is $GOOG at?", "GOOG trades at 1.")]), case("paris", [("Paris?", "The weather in Paris: sunny, 21 C.")])])
    return root


@pytest.fixture(scope="module")
def adk_server(model, agents_dir, tmp_path_factory):
    """`adk api_server` serving agents_dir on 127.0.0.1; its base URL."""
    pytest.importorskip("google.adk")
    adk = Path(sys.executable).parent / ("adk.exe" if os.name == "nt" else "adk")
    if not adk.exists():
        pytest.skip(f"no adk console script beside {sys.executable}")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in JUDGE_ENV_VARS}
    env.update(GOOGLE_API_KEY="fake", GOOGLE_GEMINI_BASE_URL=model.url, ADK_DISABLE_LOAD_DOTENV="1", PYTHONUNBUFFERED="1")
    log_path = tmp_path_factory.mktemp("adk-log") / "api_server.log"
    with open(log_path, "wb") as log:
        # --no-reload: one process (uvicorn's reloader would start a child that outlives a kill).
        proc = subprocess.Popen(
            [str(adk), "api_server", "--host", "127.0.0.1", "--port", str(port), "--no-reload", str(agents_dir)],
            env=env, cwd=agents_dir.parent, stdout=log, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"adk api_server exited with {proc.returncode}:\n{log_path.read_text(errors='replace')[-3000:]}")
            try:
                if requests.get(f"{url}/list-apps", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"adk api_server did not answer in 60 s:\n{log_path.read_text(errors='replace')[-3000:]}")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def model_env(model, monkeypatch):
    """This process's environment for the in-process runner: the same fake model."""
    for name in JUDGE_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", "fake")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", model.url)
    monkeypatch.setenv("ADK_DISABLE_LOAD_DOTENV", "1")


def test_same_invocations_and_scores_as_the_in_process_runner(cli, adk_server, agents_dir, model_env, tmp_path):
    outputs = {}
    evals = shutil.copytree(agents_dir / "evals", tmp_path / "evals")  # a config's data lies inside its project
    for kind, agent in {"adk": f"{{adk: {agents_dir / APP}}}", "url": f"{{url: '{adk_server}', app: {APP}}}"}.items():
        config = write_config(tmp_path / f"{kind}.yaml", evals, agent, criteria="{tool_trajectory_avg_score: 1.0, response_match_score: 0.8}")
        code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / kind))
        assert "Traceback" not in err, err
        # Results without the measured seconds (efficiency's invocation_duration_v1), as RunResults.comparable() has them.
        outputs[kind] = (code, read_jsonl(tmp_path / kind / "inference.jsonl"), results.read(tmp_path / kind / "results.json").comparable())

    (adk_code, adk_lines, adk_results), (url_code, url_lines, url_results) = outputs["adk"], outputs["url"]
    assert [(r["eval_set_id"], r["eval_id"], r["run"]) for r in url_lines] == [
        ("more", "paris_then_london", 1), ("more", "tokyo_ja", 1), ("weather", "paris", 1), ("weather", "seoul_ko", 1), ("weather", "two_turns", 1)
    ]
    assert all("error" not in r for r in adk_lines + url_lines), [r.get("error") for r in adk_lines + url_lines]
    assert [comparable(r) for r in url_lines] == [comparable(r) for r in adk_lines]
    # Not vacuous: the text came through intact, the server's calls paired with their responses.
    seoul = next(r for r in url_lines if r["eval_id"] == "seoul_ko")["invocations"][0]
    assert seoul["user_content"]["parts"][0]["text"] == "서울 날씨 어때요?"
    assert seoul["final_response"]["parts"][0]["text"] == "The weather in 서울: 맑음, 18도."
    call, response = (e["content"]["parts"][0] for e in seoul["intermediate_data"]["invocation_events"][:2])
    assert call["function_call"]["id"] == response["function_response"]["id"]
    assert all(inv.get("duration", 0) > 0 and inv.get("creation_timestamp", 0) > 0 for r in url_lines for inv in r["invocations"])
    assert all("app_details" not in inv for r in url_lines for inv in r["invocations"])
    assert all("app_details" in inv for r in adk_lines for inv in r["invocations"])

    assert url_code == adk_code == 1  # the wording of more.evalset.json's answers differs on purpose
    assert (url_results["status"], url_results["counts"], url_results["suites"]) == (adk_results["status"], adk_results["counts"], adk_results["suites"])
    scores = {c["eval_id"]: c["criteria"]["response_match_score"]["score"] for s in url_results["suites"] for c in s["cases"]}
    assert scores["paris"] == 1.0 and 0 < scores["tokyo_ja"] < 1


def test_a_tool_error_on_the_server_fails_only_that_case(cli, adk_server, agents_dir, tmp_path):
    broken = shutil.copytree(agents_dir / "broken", tmp_path / "broken")  # a config's data lies inside its project
    config = write_config(tmp_path / "c.yaml", broken, f"{{url: '{adk_server}/{APP}'}}", not_evaluated="fail")
    code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / "out"))
    lines = {r["eval_id"]: r for r in read_jsonl(tmp_path / "out" / "inference.jsonl")}
    assert code == 1
    assert lines["stock"]["error"].startswith("POST /run answered HTTP 500")
    assert "invocations" in lines["paris"]
    statuses = {c["eval_id"]: c["status"] for c in read_json(tmp_path / "out" / "results.json")["suites"][0]["cases"]}
    assert statuses == {"stock": "NOT_EVALUATED", "paris": "PASSED"}


# --- a recording stand-in for the error paths ----------------------------------------------


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class FakeApiServer:
    """The endpoints of `adk api_server` the url runner calls, recording every request.

    /run answers `run_reply(body)`: by default one event whose text echoes the user's message
    ("echo: <text>"), in its own invocation. `list_apps` sets GET /list-apps's answer.
    """

    def __init__(self, apps: tuple[str, ...] = (APP,)):
        self.list_apps: Reply = Reply(200, list(apps))
        self.run_reply: Callable[[dict], Reply] = echo
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._server = fake_http.serve(_ApiHandler, api=self)

    @property
    def url(self) -> str:
        return fake_http.base_url(self._server)

    def stop(self) -> None:
        fake_http.stop(self._server)

    def requests(self, method: str, path_start: str = "/") -> list[Seen]:
        return [s for s in self.seen if s.method == method and s.path.startswith(path_start)]


class _ApiHandler(BaseHTTPRequestHandler):
    api: FakeApiServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _handle(self, method: str) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.loads(raw) if raw else None
        path = urlsplit(self.path).path
        with self.api._lock:
            self.api.seen.append(Seen(method, path, {k.lower(): v for k, v in self.headers.items()}, body))
        segments = [unquote(s) for s in path.strip("/").split("/")]
        if method == "GET" and path == "/list-apps":
            reply = self.api.list_apps
        elif method == "GET" and path == "/health":
            reply = Reply(200, {"status": "ok"})
        elif method == "POST" and path == "/run":
            reply = self.api.run_reply(body)
        elif method == "POST" and len(segments) == 5 and segments[0] == "apps" and segments[4] == "sessions":
            sid = (body or {}).get("sessionId") or f"s-{len(self.api.seen)}"
            reply = Reply(200, {"id": sid, "appName": segments[1], "userId": segments[3], "state": (body or {}).get("state") or {}, "events": []})
        elif method == "DELETE" and len(segments) == 6 and segments[4] == "sessions":
            reply = Reply(200, "null")
        else:
            reply = Reply(404, {"detail": "Not Found"})
        if reply.delay:
            time.sleep(reply.delay)
        try:
            fake_http.send_reply(self, reply)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up
            pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_DELETE(self) -> None:
        self._handle("DELETE")


def user_text(body: dict) -> str:
    return " ".join(p.get("text", "") for p in body["newMessage"]["parts"])


def echo(body: dict) -> Reply:
    event = {
        "invocationId": f"e-{abs(hash(user_text(body)))}",
        "author": "echo",
        "content": {"role": "model", "parts": [{"text": f"echo: {user_text(body)}"}]},
        "timestamp": 1.0,
    }
    return Reply(200, [event])


@pytest.fixture
def api():
    server = FakeApiServer()
    yield server
    server.stop()


ECHO_CASES = [
    case("plain", [("hello", "echo: hello")]),
    case("with_session", [("one", "echo: one"), ("two", "echo: two")],
         session_input={"app_name": "other", "user_id": "u 7", "session_id": "s-42", "state": {"units": "metric", "ids": [1, 2]}}),
    case("tools", [("weather", "echo: weather")], tools=[[("get_weather", {"city": "Paris"})]]),
]


@pytest.fixture
def echo_evals(tmp_path) -> Path:
    write_evalset(tmp_path / "evals" / "echo.evalset.json", "echo", ECHO_CASES)
    return tmp_path / "evals"


def test_the_session_gets_the_case_s_state_and_ids_and_is_deleted(cli, api, echo_evals, tmp_path):
    # The app comes from the url's last segment; the API base is the url without it.
    config = write_config(tmp_path / "c.yaml", echo_evals, f"{{url: '{api.url}/{APP}/'}}")
    code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / "out"))
    assert code == 0, out + err
    created = sorted((s.path, json.dumps(s.body, sort_keys=True)) for s in api.requests("POST", "/apps/"))
    assert created == sorted(
        [(f"/apps/{APP}/users/u%207/sessions", json.dumps({"sessionId": "s-42", "state": {"ids": [1, 2], "units": "metric"}}, sort_keys=True))]
        + [(f"/apps/{APP}/users/test_user_id/sessions", json.dumps({"state": {}}))] * 2
    )
    runs = api.requests("POST", "/run")
    assert len(runs) == 4
    mine = [s.body for s in runs if s.body["sessionId"] == "s-42"]
    assert mine == [
        {"appName": APP, "userId": "u 7", "sessionId": "s-42", "newMessage": {"parts": [{"text": t}], "role": "user"}, "streaming": False}
        for t in ("one", "two")
    ]
    deleted = sorted(s.path.rsplit("/", 1)[1] for s in api.requests("DELETE"))
    session_ids = sorted({s.body["sessionId"] for s in runs})
    assert deleted == session_ids and len(deleted) == 3

    lines = {r["eval_id"]: r for r in read_jsonl(tmp_path / "out" / "inference.jsonl")}
    two = lines["with_session"]["invocations"]
    assert [i["user_content"]["parts"][0]["text"] for i in two] == ["one", "two"]
    assert [i["final_response"]["parts"][0]["text"] for i in two] == ["echo: one", "echo: two"]
    assert two[0]["invocation_id"] == f"e-{abs(hash('one'))}"
    statuses = {c["eval_id"]: c["status"] for c in read_json(tmp_path / "out" / "results.json")["suites"][0]["cases"]}
    assert statuses == {"plain": "PASSED", "with_session": "PASSED", "tools": "PASSED"}


def test_tool_replay_puts_the_recorded_responses_in_the_session_state(cli, api, echo_evals, tmp_path):
    config = write_config(tmp_path / "c.yaml", echo_evals, f"{{url: '{api.url}', app: {APP}, tools: replay}}")
    cli("run", "--config", str(config), "--out", str(tmp_path / "out"))
    # A list: sessions of one user share a path, and cases run concurrently, in any order.
    states = [s.body["state"] for s in api.requests("POST", "/apps/") if "units" not in s.body["state"]]
    key = "evalgate_recorded_tool_responses"
    assert sorted(s[key] for s in states if s[key]) == [
        [{"name": "get_weather", "args": {"city": "Paris"}, "response": {"city": "Paris", "forecast": "sunny"}}]
    ]
    with_session = next(s.body["state"] for s in api.requests("POST", "/apps/") if "units" in s.body["state"])
    assert with_session == {"units": "metric", "ids": [1, 2], key: []}


@pytest.mark.parametrize(
    "reply, reason",
    [
        (Reply(500, {"detail": "boom " + "x" * 1000}), r"^POST /run answered HTTP 500: boom x{10,300} \.\.\.$"),
        (Reply(404, {"detail": "Session not found: s-1"}), r"^POST /run answered HTTP 404: Session not found: s-1$"),
        (Reply(200, "<html>502 Bad Gateway</html>"), r"^POST /run answered HTTP 200 with a body that is not a JSON list of events: '<html>502 Bad Gateway</html>'$"),
        (Reply(200, {"events": []}), r"not a JSON list of events"),
        (Reply(200, []), r"^the agent produced no events for turn 1 of 1$"),
    ],
    ids=["500", "404", "html", "object", "empty"],
)
@pytest.mark.parametrize("policy, exit_code", [("warn", 0), ("fail", 1)])
def test_a_bad_answer_to_one_case_fails_only_that_case(cli, api, echo_evals, tmp_path, reply, reason, policy, exit_code):
    api.run_reply = lambda body: reply if user_text(body) == "hello" else echo(body)
    evals = write_evalset(tmp_path / "two" / "echo.evalset.json", "echo", ECHO_CASES[:2]).parent
    config = write_config(tmp_path / "c.yaml", evals, f"{{url: '{api.url}', app: {APP}}}", not_evaluated=policy)
    code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / "out"))
    assert code == exit_code, out + err
    assert "Traceback" not in out + err
    lines = {r["eval_id"]: r for r in read_jsonl(tmp_path / "out" / "inference.jsonl")}
    assert re.search(reason, lines["plain"]["error"]), lines["plain"]["error"]
    assert "invocations" in lines["with_session"]
    statuses = {c["eval_id"]: c["status"] for c in read_json(tmp_path / "out" / "results.json")["suites"][0]["cases"]}
    assert statuses == {"plain": "NOT_EVALUATED", "with_session": "PASSED"}
    assert len(api.requests("DELETE")) == 2  # the failed case's session is deleted too


def test_a_run_that_outlasts_timeout_s_is_cut_off_and_evalgate_exits(api, echo_evals, tmp_path):
    # A subprocess: a request still waiting on the server would hold the interpreter's exit
    # (it joins worker threads) unless requests' own timeout is bounded by timeout_s.
    api.run_reply = lambda body: Reply(delay=20) if user_text(body) == "hello" else echo(body)
    # tool_trajectory only: response_match would import rouge_score (seconds) in the subprocess.
    config = write_config(tmp_path / "c.yaml", echo_evals, f"{{url: '{api.url}', app: {APP}, timeout_s: 1}}", criteria="{tool_trajectory_avg_score: 1.0}")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "evalgate", "run", "--config", str(config), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert time.monotonic() - started < 10, done.stderr
    assert done.returncode == 1, done.stdout + done.stderr  # "tools" expects a call the echo server never makes
    lines = {r["eval_id"]: r for r in read_jsonl(tmp_path / "out" / "inference.jsonl")}
    assert lines["plain"]["error"].startswith("timed out after 1 s")
    assert "invocations" in lines["with_session"]


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_a_server_that_is_not_running_is_an_input_error(cli, echo_evals, tmp_path):
    url = f"http://127.0.0.1:{free_port()}"
    config = write_config(tmp_path / "c.yaml", echo_evals, f"{{url: '{url}', app: {APP}}}")
    code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / "out"))
    assert code == 2
    line = one_error_line(err)
    assert f"the API server at {url} does not answer" in line and "Start the server first" in line and "Connection refused" in line


def test_a_server_that_never_answers_is_an_input_error(cli, echo_evals, tmp_path):
    with socket.socket() as silent:  # accepts connections (the kernel's backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        config = write_config(tmp_path / "c.yaml", echo_evals, f"{{url: '{url}', app: {APP}, timeout_s: 1}}")
        code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / "out"))
    assert code == 2
    assert "no answer within 1 s" in one_error_line(err)


def test_an_app_the_server_does_not_serve_is_an_input_error(cli, api, echo_evals, tmp_path):
    api.list_apps = Reply(200, [APP, "billing_agent"])
    config = write_config(tmp_path / "c.yaml", echo_evals, f"{{url: '{api.url}', app: weathr_agent}}")
    code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / "out"))
    assert code == 2
    line = one_error_line(err)
    assert "has no app 'weathr_agent' (it serves billing_agent, weather_agent)" in line and "Did you mean 'weather_agent'?" in line
    assert api.requests("POST") == []


def test_a_url_without_an_app_is_an_input_error(cli, api, echo_evals, tmp_path):
    config = write_config(tmp_path / "c.yaml", echo_evals, f"{{url: '{api.url}/'}}")
    code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / "out"))
    assert code == 2
    assert "Add `app:`" in one_error_line(err)
    assert api.seen == []


def test_a_server_without_list_apps_is_taken_at_its_health(cli, api, echo_evals, tmp_path):
    api.list_apps = Reply(404, {"detail": "Not Found"})
    config = write_config(tmp_path / "c.yaml", echo_evals, f"{{url: '{api.url}', app: {APP}}}")
    code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / "out"))
    assert [s.path for s in api.seen[:2]] == ["/list-apps", "/health"]
    assert len(api.requests("POST", "/run")) == 4


def test_a_refused_probe_names_the_headers(cli, api, echo_evals, tmp_path):
    api.list_apps = Reply(403, {"detail": "Forbidden"})
    config = write_config(tmp_path / "c.yaml", echo_evals, f"{{url: '{api.url}', app: {APP}}}")
    code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / "out"))
    assert code == 2
    line = one_error_line(err)
    assert "refused the request (HTTP 403)" in line and ".headers:" in line


HEADERS = '{Authorization: "Bearer ${AGENT_TEST_TOKEN}", X-Trace: fixed}'


def test_a_header_variable_that_is_not_set_is_an_input_error(cli, api, echo_evals, tmp_path, monkeypatch):
    monkeypatch.delenv("AGENT_TEST_TOKEN", raising=False)
    config = write_config(tmp_path / "c.yaml", echo_evals, f"{{url: '{api.url}', app: {APP}, headers: {HEADERS}}}")
    code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / "out"))
    assert code == 2
    line = one_error_line(err)
    assert "${AGENT_TEST_TOKEN} is not set" in line and "headers.Authorization" in line
    assert api.seen == []


def test_headers_reach_the_server_and_their_values_are_never_shown(cli, api, echo_evals, tmp_path, monkeypatch):
    token = "tok-SECRET-0123456789"
    monkeypatch.setenv("AGENT_TEST_TOKEN", token)

    def echo_headers_on_error(body: dict) -> Reply:
        # A server that quotes what it got in its error (some proxies do): the token must not leak.
        if user_text(body) == "hello":
            return Reply(500, {"detail": f"rejected token {token} (Authorization: Bearer {token})"})
        return echo(body)

    api.run_reply = echo_headers_on_error
    config = write_config(tmp_path / "c.yaml", echo_evals, f"{{url: '{api.url}', app: {APP}, headers: {HEADERS}}}")
    code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / "out"))
    assert {(s.headers.get("authorization"), s.headers.get("x-trace")) for s in api.seen} == {(f"Bearer {token}", "fixed")}
    assert {s.method for s in api.seen} == {"GET", "POST", "DELETE"}
    lines = {r["eval_id"]: r for r in read_jsonl(tmp_path / "out" / "inference.jsonl")}
    assert lines["plain"]["error"] == "POST /run answered HTTP 500: rejected token *** (Authorization: ***)"
    written = [p.read_text(encoding="utf-8") for p in (tmp_path / "out").iterdir() if p.is_file()]
    for text in [out, err, *written]:
        assert token not in text and "SECRET" not in text


def test_a_simulated_user_talks_to_the_server_agent(cli, adk_server, agents_dir, model, model_env, tmp_path):
    """conversation_scenario through the url runner: the same conversation as in-process."""
    import test_simulated_user as sim

    evals = write_evalset(
        tmp_path / "evals" / "tour.evalset.json", "tour", [sim.scenario("tour", "What's the weather in Paris?", ["London", "서울"])]
    )
    model.responder = sim.respond  # the simulated user's requests come to the same fake
    try:
        lines = {}
        for kind, agent in {"adk": f"{{adk: {agents_dir / APP}}}", "url": f"{{url: '{adk_server}', app: {APP}}}"}.items():
            config = write_config(tmp_path / f"{kind}.yaml", evals.parent, agent, criteria="{response_match_score: 0.8}")
            code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / kind))
            # The conversations are the subject: response_match_score has no expected turns to
            # score a scenario case on, so nothing is evaluated and the run is no green exit.
            assert code == 1 and "needs an expected conversation" in out, out + err
            lines[kind] = read_jsonl(tmp_path / kind / "inference.jsonl")
            assert read_json(tmp_path / kind / "results.json")["suites"][0]["cases"][0]["conversation_end"] == "stop signal"
    finally:
        model.responder = agent_model.respond
    [url] = lines["url"]
    assert [i["user_content"]["parts"][0]["text"] for i in url["invocations"]] == [
        "What's the weather in Paris?", "And the weather in London?", "And the weather in 서울?"
    ]
    assert [comparable(r) for r in lines["url"]] == [comparable(r) for r in lines["adk"]]
