"""What the agent writes while cases run is captured per case run, as pytest captures a test's output.

A real ADK agent (an async Python tool that prints, logs and, for one city, raises) answers
through a fake Gemini; its case runs go on concurrently, and each one's tool call waits for
the others' so their output interleaves. `evalgate run` runs as a subprocess, so what reaches
its stdout and stderr is exactly what a user would see (pytest's own logging capture would
otherwise take ADK's records first). Then: the command runner's stderr, the API-server
runner's error answer, the bounds of the tail and the folding of library frames.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("google.adk")

import agent_model  # noqa: E402
from agent_project import make_project, turn  # noqa: E402
from fake_gemini import JUDGE_ENV_VARS, FakeGemini  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SECRET = "tok-agent-0123456789"

NOISY_AGENT = '''
"""The weather agent, noisy: its tool prints and logs, and fails for Atlantis."""

import asyncio
import logging
import os

from google.adk.agents import Agent

log = logging.getLogger("noisy_agent")
FORECASTS = {"Paris": "sunny, 21 C", "東京": "晴れ、20度"}
arrived = set()


async def get_weather(city: str) -> dict:
    """Returns the current weather in a city."""
    print(f"MARK {city}: 天気を調べています" if city == "東京" else f"MARK {city}: looking it up")
    arrived.add(city)
    for _ in range(1000):  # wait (up to 10 s) for the other case runs' calls: their output interleaves
        if len(arrived) >= int(os.environ["NOISY_CASES"]):
            break
        await asyncio.sleep(0.01)
    print(f"TOGETHER {city}: {len(arrived)} calls in flight")
    log.warning("LOG %s: the station answered", city)
    if city == "Atlantis":
        raise ValueError("no weather station in Atlantis")
    if city == "Paris":
        print("using token " + os.environ["AGENT_SECRET_TOKEN"])
    return {"city": city, "forecast": FORECASTS.get(city, "unknown")}


root_agent = Agent(name="weather", model="gemini-2.5-flash", instruction="You answer weather questions.", tools=[get_weather])
'''

CASES = [
    {"eval_id": "paris", "conversation": [turn("What's the weather in Paris?", "The weather in Paris: sunny, 21 C.", (("get_weather", {"city": "Paris"}, {}),))]},
    {"eval_id": "tokyo", "conversation": [turn("東京の天気は？", "The weather in 東京: 晴れ、20度.", (("get_weather", {"city": "東京"}, {}),))]},
    {"eval_id": "atlantis", "conversation": [turn("Weather in Atlantis?", "Unknown.", (("get_weather", {"city": "Atlantis"}, {}),))]},
]
CITY = {"paris": "Paris", "tokyo": "東京", "atlantis": "Atlantis"}


@pytest.fixture(scope="module")
def model():
    fake = FakeGemini(agent_model.respond).start()
    fake.api_key = None
    yield fake
    fake.stop()


def _project(tmp_path: Path):
    project = make_project(tmp_path, agent={"adk": "weather_agent"}, criteria={"tool_trajectory_avg_score": 1.0})
    (project.agent_dir / "agent.py").write_text(NOISY_AGENT, encoding="utf-8")
    data = {"eval_set_id": "weather", "eval_cases": CASES}
    project.evalset.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    return project


def _evalgate(model: FakeGemini, project, *args: str) -> subprocess.CompletedProcess:
    """`evalgate run` as a user runs it: its own process, nothing configured for logging."""
    env = {k: v for k, v in os.environ.items() if k not in JUDGE_ENV_VARS and k != "PYTHONPATH"}
    env.update(
        PYTHONPATH=str(REPO),
        GOOGLE_API_KEY="fake-agent-key",
        GOOGLE_GEMINI_BASE_URL=model.url,
        ADK_DISABLE_LOAD_DOTENV="1",
        AGENT_SECRET_TOKEN=SECRET,
        NOISY_CASES=str(len(CASES)),
        PYTHONIOENCODING="utf-8",
    )
    return subprocess.run(
        [sys.executable, "-m", "evalgate", "run", "--config", str(project.config), "--out", str(project.out), *args],
        env=env,
        cwd=project.root,
        capture_output=True,
        encoding="utf-8",
        timeout=600,
    )


def _logs(project) -> dict[str, str]:
    """Each case's captured output (one run each) from results.json, checked against inference.jsonl."""
    cases = project.cases()
    logs = {}
    for eval_id, case in cases.items():
        (entry,) = case["agent_logs"]
        assert entry["run"] == 1
        logs[eval_id] = entry["text"]
    assert {r["eval_id"]: r["log"] for r in project.inference()} == logs
    return logs


@pytest.fixture(scope="module")
def captured(model, tmp_path_factory):
    project = _project(tmp_path_factory.mktemp("captured"))
    return project, _evalgate(model, project)


def test_the_terminal_shows_one_line_per_failed_case_run_and_no_traceback(captured):
    project, proc = captured
    assert proc.returncode == 0, proc.stdout + proc.stderr  # NOT_EVALUATED warns by default
    output = proc.stdout + proc.stderr
    assert "Traceback" not in output
    for marker in ("MARK", "TOGETHER", "LOG ", "天気を調べています", "Node execution failed"):
        assert marker not in output, marker
    failed = [line for line in output.splitlines() if line.startswith("agent run failed")]
    assert failed == [
        "agent run failed: weather/atlantis: ValueError: no weather station in Atlantis (its output, "
        f"{_logs(project)['atlantis'].count(chr(10)) + 1} lines: results.json, report.html)"
    ]
    assert project.cases()["atlantis"]["status"] == "NOT_EVALUATED"
    assert project.cases()["paris"]["status"] == project.cases()["tokyo"]["status"] == "PASSED"


def test_each_case_run_keeps_its_own_output_in_results_and_inference(captured):
    project, _ = captured
    logs = _logs(project)
    assert set(logs) == set(CITY)
    for eval_id, text in logs.items():
        city = CITY[eval_id]
        # The case's own prints and log records, in order; the tool calls overlapped.
        assert f"TOGETHER {city}: 3 calls in flight" in text, text
        assert text.index(f"MARK {city}:") < text.index(f"TOGETHER {city}") < text.index(f"WARNING noisy_agent: LOG {city}: the station answered")
        # Nothing of the other case runs, which wrote at the same time.
        for other in set(CITY.values()) - {city}:
            assert f"MARK {other}" not in text and f"TOGETHER {other}" not in text and f"LOG {other}" not in text, (eval_id, text)
    assert "MARK 東京: 天気を調べています" in logs["tokyo"]
    # ADK's tracebacks are the failing run's, with the tool's own frame and the library's folded.
    assert "Traceback" not in logs["paris"] + logs["tokyo"]
    atlantis = logs["atlantis"]
    assert "ERROR google_adk." in atlantis and "Node execution failed with exception" in atlantis
    assert re.search(r'File ".*weather_agent/agent\.py", line \d+, in get_weather\n    raise ValueError', atlantis), atlantis
    assert re.search(r"\[\d+ frames of library code\]", atlantis)
    assert atlantis.rstrip().endswith("ValueError: no weather station in Atlantis")


def test_a_secret_the_tool_prints_is_never_kept(captured):
    project, proc = captured
    assert "using token ${AGENT_SECRET_TOKEN}" in _logs(project)["paris"]
    written = [p.read_text(encoding="utf-8") for p in project.out.rglob("*") if p.is_file()]
    for text in [proc.stdout, proc.stderr, *written]:
        assert SECRET not in text


def test_logs_stay_out_of_the_comparable_payload(captured):
    from evalgate import results

    project, _ = captured
    run = results.read(project.out / "results.json")
    assert any(case.agent_logs for s in run.suites for case in s.cases)
    assert "agent_logs" not in json.dumps(run.comparable()) and "MARK" not in json.dumps(run.comparable())


def test_junit_holds_the_log_as_the_case_s_output(captured):
    import xml.etree.ElementTree as ET

    project, _ = captured
    root = ET.parse(project.out / "junit.xml").getroot()
    out = {tc.get("name"): tc.findtext("system-out") for tc in root.iter("testcase")}
    assert "MARK 東京: 天気を調べています" in out["tokyo"] and "MARK Paris" not in out["tokyo"]
    assert "ValueError: no weather station in Atlantis" in out["atlantis"]


def _report_data(path: Path) -> dict[str, Any]:
    page = path.read_text(encoding="utf-8")
    block = re.search(r'<script type="application/json" id="evalgate-data">(.*?)</script>', page, re.S)
    assert block, "no data block"
    return json.loads(block.group(1))


def test_the_html_report_holds_each_case_s_log(captured):
    project, _ = captured
    cases = {c["id"]: c for c in _report_data(project.out / "report.html")["cases"]}
    logs = _logs(project)
    for eval_id, text in logs.items():
        assert cases[eval_id]["log"] == [[1, text, text.count("\n") + 1]]  # run, text, its lines


def test_the_html_report_shows_the_log_collapsed_with_the_case(captured, tmp_path):
    from test_html_report import ARGS, CHROMIUM, Watched, _unavailable

    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install -e '.[test]')")
    if not (Path(CHROMIUM).is_file() or __import__("shutil").which(CHROMIUM)):
        _unavailable(f"no chromium at {CHROMIUM} (apt-get install chromium)")
    project, _ = captured
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        w = Watched(browser, project.out / "report.html")
        try:
            page = w.page
            page.click("[data-tab=cases]")
            page.fill("#q", "tokyo")
            assert w.shown_ids() == ["tokyo"]
            log = page.locator("#detail details.log")
            assert log.count() == 1 and not log.first.evaluate("e => e.open")
            assert not page.locator("#detail details.log pre").is_visible()
            page.click("#detail details.log summary")
            assert "MARK 東京: 天気を調べています" in page.text_content("#detail details.log pre")
            assert w.clean() == []
        finally:
            w.close()
            browser.close()


def test_live_streams_each_line_as_it_comes_prefixed_by_its_case_run(model, tmp_path):
    project = _project(tmp_path)
    proc = _evalgate(model, project, "--agent-logs", "live")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    live = [line for line in proc.stderr.splitlines() if line.startswith("[")]
    for eval_id, city in CITY.items():
        mine = [line for line in live if line.startswith(f"[weather/{eval_id}] ")]
        assert f"[weather/{eval_id}] TOGETHER {city}: 3 calls in flight" in mine
        assert f"[weather/{eval_id}] WARNING noisy_agent: LOG {city}: the station answered" in mine
        assert not [line for line in mine if any(f" {other}:" in line for other in set(CITY.values()) - {city})]
    assert "[weather/tokyo] MARK 東京: 天気を調べています" in live
    assert "[weather/atlantis] ValueError: no weather station in Atlantis" in live
    assert "using token ${AGENT_SECRET_TOKEN}" in proc.stderr and SECRET not in proc.stderr + proc.stdout
    assert "MARK" not in proc.stdout  # the summary's stream stays the summary
    # The results keep the logs as without the flag.
    assert "MARK 東京: 天気を調べています" in _logs(project)["tokyo"]


# --- the other runners ---------------------------------------------------------------------------


def test_the_command_runner_s_stderr_is_the_case_run_s_log(cli, tmp_path):
    script = (
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    turn = json.loads(line)\n"
        "    text = turn['user_content']['parts'][0]['text']\n"
        "    print(f'STDERR {turn[\"eval_id\"]}: 考えています', file=sys.stderr, flush=True)\n"
        "    if 'London' in text:\n"
        "        sys.exit(3)\n"
        "    print(json.dumps({'final_response': {'parts': [{'text': 'ok'}], 'role': 'model'}}), flush=True)\n"
    )
    (tmp_path / "agent.py").write_text(script, encoding="utf-8")
    project = make_project(tmp_path, agent={"command": [sys.executable, str(tmp_path / "agent.py")]})
    code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out))
    logs = {r["eval_id"]: r.get("log") for r in project.inference()}
    assert logs["paris"] == "STDERR paris: 考えています"
    assert logs["seoul_ko"] == "STDERR seoul_ko: 考えています"
    assert logs["two_turns"] == "STDERR two_turns: 考えています\nSTDERR two_turns: 考えています"
    assert "agent run failed: weather/two_turns: the command exited with code 3 before answering turn 2 of 2" in err


def test_the_api_server_runner_keeps_the_server_s_error_answer(cli, tmp_path):
    from test_runner_api_server import APP, ECHO_CASES, FakeApiServer, echo, user_text, write_config, write_evalset
    from fake_http import Reply

    detail = "Traceback (most recent call last):\n  File \"agent.py\", line 9, in tool\nRuntimeError: 在庫がありません\n" + "x" * 400
    server = FakeApiServer()
    server.run_reply = lambda body: Reply(500, {"detail": detail}) if user_text(body) == "hello" else echo(body)
    try:
        evals = write_evalset(tmp_path / "evals" / "echo.evalset.json", "echo", ECHO_CASES).parent
        config = write_config(tmp_path / "c.yaml", evals, f"{{url: '{server.url}', app: {APP}}}")
        code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / "out"))
    finally:
        server.stop()
    records = {r["eval_id"]: r for r in map(json.loads, (tmp_path / "out" / "inference.jsonl").read_text(encoding="utf-8").splitlines())}
    assert records["plain"]["error"].startswith("POST /run answered HTTP 500: Traceback")  # cut to 300 characters
    assert records["plain"]["log"] == "POST /run answered HTTP 500:\n" + detail.rstrip("\n")
    assert "log" not in records["with_session"]


# --- the tail's bounds ---------------------------------------------------------------------------


def test_the_tail_keeps_the_last_lines_and_says_how_many_went():
    from evalgate.agents.capture import MAX_CHARS, MAX_LINES, CaseLog

    log = CaseLog()
    for i in range(1, 1001):
        log.write(f"line {i}\n")
    text = log.close()
    lines = text.split("\n")
    assert lines[0] == f"[... {1000 - MAX_LINES:,} earlier lines not kept]"
    assert lines[1:] == [f"line {i}" for i in range(1000 - MAX_LINES + 1, 1001)]
    log.write("after the end\n")  # a background task of a finished run
    assert log.close() == text

    wide = CaseLog()
    for i in range(100):
        wide.write(f"{i:03d} " + "ü" * 996 + "\n")
    text = wide.close()
    assert len(text) <= MAX_CHARS + 40 and text.split("\n")[-1].startswith("099 ")
    assert CaseLog().close() is None


def test_partial_lines_colours_and_redrawn_lines():
    from evalgate.agents.capture import CaseLog

    log = CaseLog()
    log.write("half a ")
    log.write("line\r\n\x1b[31mred\x1b[0m\n 10%\r 50%\r100%\nno newline at the end")
    assert log.close() == "half a line\nred\n100%\nno newline at the end"


def test_library_frames_are_folded_but_the_raising_one_stays():
    from evalgate.agents.capture import fold_frames

    def tool():
        raise KeyError("ключ")

    try:
        json.loads("{}", object_hook=lambda _: tool())
    except KeyError as e:
        chunks = traceback.format_exception(type(e), e, e.__traceback__)
    json_dir = str(Path(json.__file__).parent)
    folded = "".join(fold_frames(chunks, roots=(json_dir,)))
    assert folded.count(json_dir) == 0 and re.search(r"\[\d+ frames of library code\]", folded)
    assert "in tool\n" in folded and folded.endswith("KeyError: 'ключ'\n")
    assert "".join(fold_frames(chunks, roots=())) == "".join(chunks)


def test_a_secret_is_replaced_before_a_long_line_is_cut(monkeypatch):
    from evalgate.agents.capture import MAX_LINE, CaseLog
    from evalgate.infer import _redact

    monkeypatch.setenv("SOME_API_TOKEN", "s3cr3t-value-123")
    log = CaseLog(redact=_redact)
    log.write("x" * (MAX_LINE - 5) + "s3cr3t-value-123 and more\n")
    text = log.close()
    assert "s3cr3" not in text and text.startswith("x" * (MAX_LINE - 5) + "${SOM")


def test_a_failure_line_clears_the_progress_bar_and_the_bar_is_drawn_again_below_it():
    import io

    from conftest import FakeClock
    from evalgate.reports.terminal import Progress, failed_run_line

    stream, clock = io.StringIO(), FakeClock()
    progress = Progress(4, stream, tty=True, delay=0, interval=0, clock=clock)
    progress.advance()
    line = failed_run_line("weather", "東京\x1b[2J", 2, "RuntimeError: boom\nsecond line", None)
    assert line == "agent run failed: weather/東京[2J run 2: RuntimeError: boom second line"
    progress.note(line)
    drawn = stream.getvalue()
    assert drawn.count("1/4 cases") == 2  # drawn, then drawn again below the line
    assert "\r\x1b[K" + line + "\n\r\x1b[K[" in drawn
    quiet = io.StringIO()
    Progress(4, quiet, enabled=False).note(line)  # the bar off (--agent-logs live): the line alone
    assert quiet.getvalue() == line + "\n"


def test_the_html_report_keeps_the_end_of_a_long_log():
    from evalgate.reports.html import MAX_LOG, _agent_logs
    from evalgate.results import AgentLog
    from result_builders import case

    text = "\n".join(f"line {i:05d}" for i in range(2000))
    (entry,) = _agent_logs(case("s", "c", {}, []).model_copy(update={"agent_logs": [AgentLog(run=1, text=text)]}))
    assert entry[0] == 1 and entry[1].endswith("line 01999") and "line 00000" not in entry[1]
    assert entry[1].startswith(f"… (the last {MAX_LOG:,} of {len(text):,} characters; results.json has all of them)\n")
