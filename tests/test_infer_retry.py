"""A case run that fails on a transient error is started again (evalgate.infer), at the wire.

The real weather agent (tests/agents/weather_agent) runs in-process against the fake Gemini,
which answers some of its requests 503 or 429 with Retry-After, or drops the connection; the
API-server runner meets a server answering 503; the command runner a command exiting 75.
Attempts are counted by the fake (requests) and read back from results.json and
inference.jsonl. No timing is asserted: the waits asked for are short.
"""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from agent_project import agent_model_server, make_project
from fake_gemini import dropped, error
from fake_http import Reply

pytest.importorskip("google.adk")


def _about(city: str):
    return lambda body: city in json.dumps(body, ensure_ascii=False) and bool((body or {}).get("tools"))


def _first_request_of(city: str):
    """Only the first model request of the case run naming `city` (the user's question; the
    second one carries the tool's answer)."""

    def when(body) -> bool:
        contents = (body or {}).get("contents") or []
        return bool((body or {}).get("tools")) and city in json.dumps(body, ensure_ascii=False) and not any(
            "functionResponse" in p for c in contents for p in c.get("parts") or []
        )

    return when


def test_a_429_is_run_again_as_long_as_retry_after_asks_and_its_attempts_recorded(tmp_path, monkeypatch, cli):
    """The in-process runner leaves a 429 to the case run's retry (google-genai's own backoff
    cannot read Retry-After): the case run fails, waits what the server asked, runs again."""
    project = make_project(tmp_path, agent={"adk": "weather_agent"})
    with agent_model_server(monkeypatch) as fake:
        fake.queue(error(429, "Resource exhausted.", retry_after=0.3), times=1, when=_first_request_of("Paris"))
        code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out))
        paris = [r.status for r in fake.requests if _about("Paris")(r.body)]
    assert code == 0, out + err
    assert paris == [429, 200, 200]  # the failed attempt's request, then the whole case run again
    cases = project.cases()
    assert {c["status"] for c in cases.values()} == {"PASSED"}
    assert cases["paris"].get("agent_attempts") == [2]
    assert all("agent_attempts" not in c for name, c in cases.items() if name != "paris")
    lines = {r["eval_id"]: r for r in project.inference()}
    assert lines["paris"]["attempts"] == 2 and "error" not in lines["paris"]
    assert all("attempts" not in r for name, r in lines.items() if name != "paris")
    # Retry-After: 0.3 honoured (with at most a tenth more, to de-synchronise runs).
    assert "attempt 1 of 3 failed on a transient error (_ResourceExhaustedError: " in lines["paris"]["log"]
    assert "429 RESOURCE_EXHAUSTED" in lines["paris"]["log"]
    assert "starting the case run again in 0.3 s" in lines["paris"]["log"]
    assert project.results()["run"]["agent"]["suites"]["weather"]["retried"] == 1
    # Not part of the comparable payload: the same as a run without the 429.
    from evalgate.results import read

    comparable = read(project.out / "results.json").comparable()
    assert all("agent_attempts" not in c for s in comparable["suites"] for c in s["cases"])


@pytest.mark.parametrize("fault", [pytest.param(lambda: error(503, "The model is overloaded."), id="503"), pytest.param(dropped, id="dropped")])
def test_a_503_or_a_dropped_connection_is_sent_again_by_the_model_client(tmp_path, monkeypatch, cli, fault):
    """A 5xx or a dropped connection: google-genai sends the one request again (the retry
    options evalgate's plugin gives an agent that set none), and the case run goes on."""
    project = make_project(tmp_path, agent={"adk": "weather_agent"})
    with agent_model_server(monkeypatch) as fake:
        fake.queue(fault(), times=1, when=_first_request_of("Paris"))
        code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out))
        paris = [r.status for r in fake.requests if _about("Paris")(r.body)]
    assert code == 0, out + err
    assert paris == [fault().status, 200, 200]
    assert {c["status"] for c in project.cases().values()} == {"PASSED"}
    assert "agent_attempts" not in project.cases()["paris"]


def test_a_failure_the_model_client_did_not_retry_is_run_again(tmp_path, monkeypatch, cli):
    """An agent whose own retry settings give up after one attempt: its 503 fails the case
    run, and the case run is started again (the agent's settings are left as they are)."""
    project = make_project(tmp_path, agent={"adk": "weather_agent"})
    agent_py = project.agent_dir / "agent.py"
    text = agent_py.read_text(encoding="utf-8")
    assert 'model="gemini-2.5-flash"' in text
    agent_py.write_text(
        text.replace('model="gemini-2.5-flash"', 'model=Gemini(model="gemini-2.5-flash", retry_options=types.HttpRetryOptions(attempts=1))')
        + "\n",
        encoding="utf-8",
    )
    agent_py.write_text("from google.adk.models.google_llm import Gemini\nfrom google.genai import types\n" + agent_py.read_text(encoding="utf-8"), encoding="utf-8")
    with agent_model_server(monkeypatch) as fake:
        fake.queue(dropped(), times=1, when=_first_request_of("Paris"))
        code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out))
        paris = [r.status for r in fake.requests if _about("Paris")(r.body)]
    assert code == 0, out + err
    assert paris == [0, 200, 200]
    assert project.cases()["paris"].get("agent_attempts") == [2]


def test_a_persistent_failure_is_not_evaluated_with_its_reason_and_attempts(tmp_path, monkeypatch, cli):
    project = make_project(tmp_path, agent={"adk": "weather_agent", "max_attempts": 2}, suite={"not_evaluated": "fail"})
    with agent_model_server(monkeypatch) as fake:
        fake.queue(error(429, "Resource exhausted.", retry_after=0.1), times=99, when=_about("Paris"))
        code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out))
        paris = [r for r in fake.requests if _about("Paris")(r.body)]
    assert code == 1, out + err
    assert [r.status for r in paris] == [429, 429]  # max_attempts: 2
    case = project.cases()["paris"]
    assert case["status"] == "NOT_EVALUATED"
    assert case["agent_attempts"] == [2]
    assert "429" in case["agent_error"] and case["agent_error"].endswith("(gave up after 2 attempts)"), case["agent_error"]
    assert case["criteria"]["response_match_score"]["error"].startswith("the agent run failed: _ResourceExhaustedError: ")
    assert {c["status"] for name, c in project.cases().items() if name != "paris"} == {"PASSED"}


def test_an_error_that_is_not_transient_is_not_run_again(tmp_path, monkeypatch, cli):
    project = make_project(tmp_path, agent={"adk": "weather_agent"})
    with agent_model_server(monkeypatch) as fake:
        fake.queue(error(400, "Invalid request."), times=99, when=_about("Paris"))
        code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out))
        paris = [r for r in fake.requests if _about("Paris")(r.body)]
    assert [r.status for r in paris] == [400]
    case = project.cases()["paris"]
    assert case["status"] == "NOT_EVALUATED" and "agent_attempts" not in case
    assert "gave up" not in case["agent_error"]


def test_the_command_runner_runs_again_a_command_that_exits_75(tmp_path, cli):
    """EX_TEMPFAIL (75) is how a command says its failure was transient; any other code stands."""
    counter = tmp_path / "counts"
    counter.mkdir()
    script = tmp_path / "agent.py"
    script.write_text(
        textwrap.dedent(
            """
            import json, pathlib, sys
            counts = pathlib.Path(sys.argv[1])
            for line in sys.stdin:
                ask = json.loads(line)
                mark = counts / ask["eval_id"]
                n = int(mark.read_text()) + 1 if mark.exists() else 1
                mark.write_text(str(n))
                if ask["eval_id"] == "flaky" and n == 1:
                    print("the model answered 503", file=sys.stderr)
                    sys.exit(75)
                if ask["eval_id"] == "broken":
                    sys.exit(3)
                print(json.dumps({"final_response": {"parts": [{"text": "ok"}], "role": "model"}}), flush=True)
            """
        ),
        encoding="utf-8",
    )

    def case(eval_id):
        return {"eval_id": eval_id, "conversation": [{"invocation_id": "x", "user_content": {"parts": [{"text": "hi"}], "role": "user"},
                                                      "final_response": {"parts": [{"text": "ok"}], "role": "model"}}]}

    evals = tmp_path / "evals"
    evals.mkdir()
    (evals / "s.evalset.json").write_text(json.dumps({"eval_set_id": "s", "eval_cases": [case("flaky"), case("broken"), case("fine")]}), encoding="utf-8")
    config = tmp_path / "evalgate.yaml"
    config.write_text(
        f"agent:\n  command: [{json.dumps(sys.executable)}, agent.py, counts]\nsuites:\n  - name: s\n    evalsets: evals\n"
        "    criteria:\n      response_match_score: 0.8\n",
        encoding="utf-8",
    )
    code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / "out"))
    cases = {c["eval_id"]: c for c in json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))["suites"][0]["cases"]}
    assert {name: (counter / name).read_text() for name in ("flaky", "broken", "fine")} == {"flaky": "2", "broken": "1", "fine": "1"}
    assert cases["flaky"]["status"] == "PASSED" and cases["flaky"]["agent_attempts"] == [2]
    assert cases["broken"]["status"] == "NOT_EVALUATED" and "agent_attempts" not in cases["broken"]
    assert "exited with code 3" in cases["broken"]["agent_error"]
    assert "agent_attempts" not in cases["fine"]


# --- the API-server runner --------------------------------------------------------------------


def _api_run(cli, tmp_path, api, max_attempts: int = 3):
    from test_runner_api_server import APP, ECHO_CASES, write_config, write_evalset

    evals = write_evalset(tmp_path / "two" / "echo.evalset.json", "echo", ECHO_CASES[:2]).parent
    config = write_config(tmp_path / "c.yaml", evals, f"{{url: '{api.url}', app: {APP}, max_attempts: {max_attempts}}}", not_evaluated="fail")
    code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / "out"))
    cases = {c["eval_id"]: c for c in json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))["suites"][0]["cases"]}
    lines = {r["eval_id"]: r for r in (json.loads(x) for x in (tmp_path / "out" / "inference.jsonl").read_text(encoding="utf-8").splitlines())}
    return code, out + err, cases, lines


@pytest.fixture
def api():
    from test_runner_api_server import FakeApiServer

    server = FakeApiServer()
    yield server
    server.stop()


@pytest.mark.parametrize(
    "fault, statuses",
    [
        pytest.param(lambda: Reply(503, {"detail": "Service Unavailable"}, {"Retry-After": "0.2"}), 503, id="503-retry-after"),
        pytest.param(lambda: Reply(429, {"detail": "Too Many Requests"}, {"Retry-After": "0.2"}), 429, id="429-retry-after"),
        # ADK's API server lets the agent's exception (its model's 503) through as a bare 500.
        pytest.param(lambda: Reply(500, "Internal Server Error"), 500, id="bare-500"),
    ],
)
def test_the_api_server_runner_runs_again_a_case_the_server_failed_for_a_moment(cli, api, tmp_path, fault, statuses):
    from test_runner_api_server import echo, user_text

    sent: list[int] = []

    def reply(body):
        if user_text(body) == "hello" and not sent:
            sent.append(1)
            return fault()
        return echo(body)

    api.run_reply = reply
    code, text, cases, lines = _api_run(cli, tmp_path, api)
    assert code == 0, text
    assert [c["status"] for c in cases.values()] == ["PASSED", "PASSED"]
    assert cases["plain"]["agent_attempts"] == [2] and "agent_attempts" not in cases["with_session"]
    assert lines["plain"]["attempts"] == 2
    hello = [s for s in api.requests("POST", "/run") if user_text(s.body) == "hello"]
    assert len(hello) == 2 and hello[0].body["sessionId"] != hello[1].body["sessionId"]  # a new session for the new attempt
    if statuses != 500:
        assert "starting the case run again in 0.2 s" in lines["plain"]["log"]


def test_the_api_server_runner_lets_a_persistent_failure_stand(cli, api, tmp_path):
    from test_runner_api_server import echo, user_text

    api.run_reply = lambda body: Reply(503, {"detail": "Service Unavailable"}, {"Retry-After": "0"}) if user_text(body) == "hello" else echo(body)
    code, text, cases, lines = _api_run(cli, tmp_path, api, max_attempts=2)
    assert code == 1, text
    assert cases["plain"]["status"] == "NOT_EVALUATED" and cases["plain"]["agent_attempts"] == [2]
    assert lines["plain"]["error"] == "POST /run answered HTTP 503: Service Unavailable (gave up after 2 attempts)"
    assert len([s for s in api.requests("POST", "/run") if user_text(s.body) == "hello"]) == 2


def test_the_api_server_runner_does_not_run_again_a_500_with_the_agent_s_own_error(cli, api, tmp_path):
    from test_runner_api_server import echo, user_text

    api.run_reply = lambda body: Reply(500, {"detail": "ValueError: no weather station in Atlantis"}) if user_text(body) == "hello" else echo(body)
    code, text, cases, lines = _api_run(cli, tmp_path, api)
    assert cases["plain"]["status"] == "NOT_EVALUATED" and "agent_attempts" not in cases["plain"]
    assert len([s for s in api.requests("POST", "/run") if user_text(s.body) == "hello"]) == 1
