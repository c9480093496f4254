"""Never green for what was not evaluated (issue 35, items 1 and 2).

A real ADK agent (the weather agent, a real Python tool) runs in-process; its model is the
fake Gemini on 127.0.0.1, or nothing at all. When the agent never ran, `run` must not exit 0,
its JUnit must not read green, and the warning must name the real cause, read from the
exception the run raised, not guessed.
"""

from __future__ import annotations

import socket
import xml.etree.ElementTree as ET

import pytest

from agent_project import agent_model_server, make_project
from fake_gemini import clear_judge_env, error

from evalgate.infer import _describe, failure_cause


def _junit_counts(project) -> dict[str, str]:
    root = ET.parse(project.out / "junit.xml").getroot()
    return {k: root.get(k) for k in ("tests", "failures", "errors", "skipped")}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_agent_without_its_key_is_no_pass(cli, tmp_path, monkeypatch):
    project = make_project(tmp_path, agent={"adk": "weather_agent"})
    clear_judge_env(monkeypatch)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("ADK_DISABLE_LOAD_DOTENV", "1")
    code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out), "--no-color")
    assert code == 1, out + err
    assert "overall: NOT_EVALUATED" in out
    # Every case is an error for a CI reporter, none "skipped" (which reads green).
    assert _junit_counts(project) == {"tests": "3", "failures": "0", "errors": "3", "skipped": "0"}
    assert "without its model's key" in out
    # compare and gate read it the same way.
    code, _, _ = cli("compare", "--current", str(project.out / "results.json"), "--config", str(project.config), "--output", str(tmp_path / "c.md"))
    assert code == 1


def test_an_unreachable_model_is_named_as_such_not_as_a_missing_key(cli, tmp_path, monkeypatch):
    project = make_project(tmp_path, agent={"adk": "weather_agent"})
    clear_judge_env(monkeypatch)
    monkeypatch.setenv("GOOGLE_API_KEY", "a-key-that-is-set")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.setenv("ADK_DISABLE_LOAD_DOTENV", "1")
    code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out), "--no-color")
    assert code == 1, out + err
    assert "the model's host could not be reached" in out
    assert "model's key" not in out


def test_a_refused_key_is_named_as_such(cli, tmp_path, monkeypatch):
    project = make_project(tmp_path, agent={"adk": "weather_agent"})
    with agent_model_server(monkeypatch) as fake:
        fake.queue(error(403, "Permission denied: API key not valid."), times=1000)
        code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out), "--no-color")
    assert code == 1, out + err
    assert "its credentials were refused" in out
    assert "model's key" not in out


def test_one_suite_that_never_ran_is_not_hidden_by_another_that_passed(cli, tmp_path, monkeypatch):
    """A second suite of recorded outputs passes; the agent's suite was not evaluated: the
    run is NOT_EVALUATED and exits 1, not PASSED and 0."""
    project = make_project(tmp_path, agent={"adk": "weather_agent"})
    with agent_model_server(monkeypatch):  # a first run records what the agent answers
        assert cli("run", "--config", str(project.config), "--out", str(project.root / "rec"))[0] == 0
    import yaml

    config = yaml.safe_load(project.config.read_text(encoding="utf-8"))
    recorded = dict(config["suites"][0], name="recorded", actual=["rec/inference.jsonl"])
    recorded.pop("agent")
    config["suites"].append(recorded)
    project.config.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    clear_judge_env(monkeypatch)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("ADK_DISABLE_LOAD_DOTENV", "1")
    code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out), "--no-color")
    assert "recorded: PASSED" in out and "weather: NOT_EVALUATED" in out, err
    assert "overall: NOT_EVALUATED" in out
    assert code == 1
    assert _junit_counts(project) == {"tests": "6", "failures": "0", "errors": "3", "skipped": "0"}


def _genai_error(code: int, status: str):
    from google.genai import errors

    cls = errors.ClientError if code < 500 else errors.ServerError
    return cls(code, {"error": {"code": code, "message": "m", "status": status}})


@pytest.mark.parametrize(
    "make, cause",
    [
        (lambda: ValueError("No API key was provided. Please pass a valid API key."), "missing_key"),
        (lambda: _genai_error(401, "UNAUTHENTICATED"), "refused_key"),
        (lambda: _genai_error(403, "PERMISSION_DENIED"), "refused_key"),
        (lambda: _genai_error(429, "RESOURCE_EXHAUSTED"), "quota"),
        (lambda: _genai_error(503, "UNAVAILABLE"), "service"),
        (lambda: __import__("httpx").ConnectError("[Errno 111] Connection refused"), "unreachable"),
        (lambda: __import__("httpx").ReadError(""), "unreachable"),
        (lambda: __import__("httpx").ReadTimeout("timed out"), "timeout"),
        (lambda: KeyError("city"), None),  # the agent's or a tool's own bug: no cause guessed
    ],
)
def test_the_cause_is_read_from_the_exception(make, cause):
    assert failure_cause(_describe(make())) == cause
