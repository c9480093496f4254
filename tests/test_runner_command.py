"""The `command` runner: the agent-io protocol end to end, with real processes.

Agents are small Python scripts run with this interpreter; the CLI runs in-process on a
copy of tests/agents/evals (three cases: one with session state, one in Korean, one with
two turns).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO

EVALS = REPO / "tests" / "agents" / "evals"
EXAMPLE = REPO / "docs" / "examples" / "weather_agent.py"
DOC = REPO / "docs" / "agent-io.md"

PARIS = {"name": "get_weather", "args": {"city": "Paris"}, "response": {"city": "Paris", "forecast": "sunny, 21 C"}}
SEOUL = {"name": "get_weather", "args": {"city": "서울"}, "response": {"city": "서울", "forecast": "맑음, 18도"}}
LONDON = {"name": "get_weather", "args": {"city": "London"}, "response": {"city": "London", "forecast": "cloudy, 14 C"}}


def _project(tmp_path: Path, script: str | Path, **agent) -> Path:
    """A project folder: the eval sets, the agent script as agent.py, evalgate.yaml."""
    project = tmp_path / "project"
    shutil.copytree(EVALS, project / "evals")
    if isinstance(script, Path):
        shutil.copy(script, project / "agent.py")
    else:
        (project / "agent.py").write_text(script, encoding="utf-8")
    agent = {"command": [sys.executable, "agent.py"], **agent}
    config = {"version": 1, "agent": agent, "suites": [{"name": "weather", "evalsets": "evals"}]}
    _write_config(project, config)
    return project


def _write_config(project: Path, config: dict) -> None:
    (project / "evalgate.yaml").write_text(json.dumps(config, ensure_ascii=False, indent=1), encoding="utf-8")


def _run(cli, tmp_path: Path, project: Path):
    """`evalgate run` from a folder other than the project's (the command must still run in
    the project's folder); returns (code, stderr, cases by eval_id, inference records)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    out = tmp_path / "out"
    code, _, err = cli("run", "--config", str(project / "evalgate.yaml"), "--out", str(out), "--quiet", cwd=elsewhere)
    if code == 2:
        return code, err, {}, []
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    cases = {c["eval_id"]: c for s in results["suites"] for c in s["cases"]}
    inference = [json.loads(line) for line in (out / "inference.jsonl").read_text(encoding="utf-8").splitlines()]
    return code, err, cases, inference


def _reasons(case) -> set[str]:
    return {c["error"] for c in case["criteria"].values()}


def _eval_set() -> dict:
    return json.loads((EVALS / "weather.evalset.json").read_text(encoding="utf-8"))


# --- 1. the documented example answers a suite ------------------------------------------


def test_docs_show_the_example_agent_as_it_is():
    """The script in docs/agent-io.md is the file the tests run, byte for byte."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert blocks == [EXAMPLE.read_text(encoding="utf-8")]
    assert len(blocks[0].splitlines()) <= 35


def test_example_agent_passes_the_suite_with_two_runs(cli, tmp_path):
    project = _project(tmp_path, EXAMPLE, num_runs=2)
    code, err, cases, inference = _run(cli, tmp_path, project)
    assert code == 0, err
    assert {k: c["status"] for k, c in cases.items()} == {"paris": "PASSED", "seoul_ko": "PASSED", "two_turns": "PASSED"}
    for case in cases.values():
        for crit in ("tool_trajectory_avg_score", "response_match_score"):
            assert case["criteria"][crit]["runs"] == [1.0, 1.0]
    # inference.jsonl: every run of every case, its invocations built on the turns evalgate sent.
    expected = {c["eval_id"]: c["conversation"] for c in _eval_set()["eval_cases"]}
    assert [(r["eval_id"], r["run"]) for r in inference] == [(e, n) for e in sorted(expected) for n in (1, 2)]
    for record in inference:
        turns = expected[record["eval_id"]]
        invocations = record["invocations"]
        assert [i["user_content"] for i in invocations] == [t["user_content"] for t in turns]
        assert [i["final_response"]["parts"][0]["text"] for i in invocations] == [t["final_response"]["parts"][0]["text"] for t in turns]
        assert all(i["invocation_id"] and i["duration"] >= 0 for i in invocations)
    korean = next(r for r in inference if r["eval_id"] == "seoul_ko")
    assert korean["invocations"][0]["intermediate_data"]["tool_uses"] == [{"name": "get_weather", "args": {"city": "서울"}}]


def test_example_agent_uses_recorded_tool_responses_under_replay(cli, tmp_path):
    """The recorded forecast for Paris differs from the agent's table: only a replayed
    tool response gives the expected answer."""
    project = _project(tmp_path, EXAMPLE)
    path = project / "evals" / "weather.evalset.json"
    data = _eval_set()
    paris = data["eval_cases"][0]["conversation"][0]
    paris["intermediate_data"]["tool_responses"][0]["response"]["forecast"] = "rain, 9 C"
    paris["final_response"]["parts"][0]["text"] = "The weather in Paris: rain, 9 C."
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")

    _, err, cases, _ = _run(cli, tmp_path, project)
    assert cases["paris"]["status"] == "FAILED", err  # live: the table's forecast

    config = json.loads((project / "evalgate.yaml").read_text(encoding="utf-8"))
    config["agent"]["tools"] = "replay"
    _write_config(project, config)
    code, err, cases, _ = _run(cli, tmp_path, project)
    assert code == 0, err
    assert cases["paris"]["status"] == "PASSED"


# --- 2. the lines an agent receives ------------------------------------------------------

RECORDER = r"""
import json, os, select, sys
log = os.path.join(sys.argv[1], f"{os.getpid()}.jsonl")
pending = b""
while True:
    chunk = os.read(0, 65536)
    if not chunk:
        break
    pending += chunk
    while b"\n" in pending:
        line, pending = pending.split(b"\n", 1)
        # evalgate must wait for our answer before it writes the next turn (or closes stdin).
        ahead = bool(pending) or bool(select.select([0], [], [], 0.2)[0])
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"raw": line.decode("utf-8"), "ahead": ahead, "cwd": os.getcwd()}, ensure_ascii=False) + "\n")
        sys.stdout.write(json.dumps({"final_response": {"parts": [{"text": "ok"}], "role": "model"}}) + "\n")
        sys.stdout.flush()
"""


@pytest.mark.parametrize("tools", ["live", "replay"])
def test_agent_receives_the_documented_lines_turn_by_turn(cli, tmp_path, tools):
    from evalgate.agents.agent_io import AgentInput

    logs = tmp_path / "logs"
    logs.mkdir()
    project = _project(tmp_path, RECORDER, num_runs=2, tools=tools)
    config = json.loads((project / "evalgate.yaml").read_text(encoding="utf-8"))
    config["agent"]["command"].append(str(logs))
    _write_config(project, config)
    code, err, cases, _ = _run(cli, tmp_path, project)
    assert code == 1, err  # "ok" answers nothing right; what matters is what the agent read
    assert all(c["status"] == "FAILED" for c in cases.values())

    processes = [[json.loads(line) for line in p.read_text(encoding="utf-8").splitlines()] for p in sorted(logs.iterdir())]
    # One process per case run: each saw the turns of one run of one case, in order.
    seen = {}
    for records in processes:
        lines = [json.loads(r["raw"]) for r in records]
        assert not any(r["ahead"] for r in records), "evalgate wrote a turn before the previous one was answered"
        assert {r["cwd"] for r in records} == {str(project)}
        key = {(line["eval_id"], line["run"]) for line in lines}
        assert len(key) == 1
        seen[key.pop()] = lines
    assert sorted(seen) == [(e, n) for e in ("paris", "seoul_ko", "two_turns") for n in (1, 2)]

    fields = {"eval_set_id", "eval_id", "run", "session_input", "user_content"} | ({"tool_responses"} if tools == "replay" else set())
    for (eval_id, run), lines in seen.items():
        for line in lines:
            assert set(line) == fields
            assert line["eval_set_id"] == "weather" and line["run"] == run
            AgentInput.model_validate(line)
    assert [line["user_content"] for line in seen[("two_turns", 2)]] == [
        {"parts": [{"text": "Hello there"}], "role": "user"},
        {"parts": [{"text": "London, please"}], "role": "user"},
    ]
    assert seen[("paris", 1)][0]["session_input"] == {"app_name": "weather_agent", "user_id": "tester", "state": {"units": "metric"}}
    assert seen[("seoul_ko", 1)][0]["session_input"] == {}
    if tools == "replay":
        assert seen[("paris", 1)][0]["tool_responses"] == [PARIS]
        assert seen[("seoul_ko", 2)][0]["tool_responses"] == [SEOUL]
        assert [line["tool_responses"] for line in seen[("two_turns", 1)]] == [[LONDON], [LONDON]]
    # UTF-8 as is, not \u escapes.
    raw = next(p for p in processes if "seoul_ko" in p[0]["raw"])[0]["raw"]
    assert '"text": "서울 날씨 어때요?"' in raw


# --- 3. failures -----------------------------------------------------------------------------

FAILING = r"""
import json, sys
ANSWERS = {
    "What's the weather in Paris?": {
        "final_response": {"parts": [{"text": "The weather in Paris: sunny, 21 C."}], "role": "model"},
        "intermediate_data": {"tool_uses": [{"name": "get_weather", "args": {"city": "Paris"}}]},
    },
    "Hello there": {"final_response": {"parts": [{"text": "Which city do you mean?"}], "role": "model"}},
}
for line in sys.stdin:
    turn = json.loads(line)
    text = turn["user_content"]["parts"][0]["text"]
    if turn["eval_id"] == "seoul_ko":
        print("Loading model...", flush=True)
    elif text in ANSWERS:
        print(json.dumps(ANSWERS[text]), flush=True)
    else:
        sys.stderr.write("Traceback (most recent call last):\n  File agent.py\nRuntimeError: quota exhausted\n")
        sys.exit(3)
"""


def test_a_crash_or_a_stray_line_fails_only_its_case(cli, tmp_path):
    project = _project(tmp_path, FAILING)
    code, err, cases, inference = _run(cli, tmp_path, project)
    assert code == 0, err  # NOT_EVALUATED warns by default
    assert cases["paris"]["status"] == "PASSED"
    assert cases["two_turns"]["status"] == "NOT_EVALUATED"
    assert _reasons(cases["two_turns"]) == {
        "the agent run failed: the command exited with code 3 before answering turn 2 of 2; "
        "stderr: Traceback (most recent call last): | File agent.py | RuntimeError: quota exhausted"
    }
    assert cases["seoul_ko"]["status"] == "NOT_EVALUATED"
    (reason,) = _reasons(cases["seoul_ko"])
    assert 'the command\'s answer to turn 1 of 1 is not JSON (Expecting value): "Loading model..."' in reason
    assert "logs to stderr" in reason
    errors = {r["eval_id"]: r.get("error") for r in inference}
    assert errors["paris"] is None and errors["two_turns"].startswith("the command exited with code 3")


def _place(*keys) -> str:
    return ".".join(("agent", *keys))


def _case(turns: int):
    from evalgate.adk import Invocation
    from evalgate.agents import CaseRun

    expected = [Invocation.model_validate({"user_content": {"parts": [{"text": f"turn {i}"}], "role": "user"}}) for i in range(1, turns + 1)]
    return CaseRun(eval_set_id="s", eval_id="c", run=1, expected=expected)


async def _converse(tmp_path: Path, script: str, turns: int):
    """Drive a conversation as evalgate.infer does: start, the turns, close (always)."""
    from evalgate.agents import make_runner
    from evalgate.config import AgentConfig

    (tmp_path / "agent.py").write_text(script, encoding="utf-8")
    runner = make_runner(AgentConfig(command=[sys.executable, "agent.py"]), tmp_path, "evalgate.yaml", _place)
    await runner.start()
    case = _case(turns)
    conversation = await runner.open(case)
    out = []
    try:
        for turn in case.expected:
            out.append(await conversation.send(turn.user_content))
    finally:
        await conversation.close()
    return out


ANSWER = 'print(json.dumps({"final_response": {"parts": [{"text": "ok"}]}}), flush=True)'

BAD = [
    (  # JSON, but not the shape: the field and the line are named
        'print(json.dumps({"final_response": {"parts": "ok"}}), flush=True)',
        1,
        "the command's answer to turn 1 of 1 does not fit the agent-io protocol: final_response.parts: input should be a valid list. "
        'Give a list. (the line: "{\\"final_response\\": {\\"parts\\": \\"ok\\"}}"; see `evalgate schema agent-io`)',
    ),
    (
        'print(json.dumps({"final_reponse": {"parts": []}}), flush=True)',
        1,
        "unknown key 'final_reponse'. Remove it or fix the spelling. Did you mean 'final_response'?",
    ),
    ('print("[1, 2]", flush=True)', 1, 'the command\'s answer to turn 1 of 1 is a JSON array, not an object: "[1, 2]"'),
    ('print("", flush=True); print("{\\"final_response\\": null} trailing", flush=True)', 1, "is not JSON (Extra data)"),
    # Answers, then exits with an error once stdin ends.
    (f'{ANSWER}\nsys.stdin.read(); sys.stderr.write("bye\\n"); sys.exit(4)', 1, "the command exited with code 4 after the last turn; stderr: bye"),
    (f'{ANSWER}\nsys.stderr.write("bye\\n"); sys.exit(4)', 1, "the command exited with code 4 after the last turn; stderr: bye"),
    # Stops reading stdin after turn 1: writing turn 2 hits a broken pipe.
    (f"os.close(0); {ANSWER}\ntime.sleep(0.3); sys.exit(5)", 2, "the command exited with code 5 before answering turn 2 of 2"),
    pytest.param(
        "os.kill(os.getpid(), 9)", 1, "the command was ended by SIGKILL before answering turn 1 of 1",
        marks=pytest.mark.skipif(os.name != "posix", reason="POSIX signals"),
    ),
    # Closes stdout and goes on running: reported (and killed) without waiting for it.
    ("os.close(1); time.sleep(60)", 1, "the command closed its stdout before answering turn 1 of 1"),
]


@pytest.mark.parametrize("body, turns, message", BAD, ids=["shape", "typo", "array", "extra-data", "exit-at-end", "exit-at-once", "broken-pipe", "signal", "closed-stdout"])
def test_protocol_violations_fail_the_run_with_a_clear_reason(tmp_path, monkeypatch, body, turns, message):
    from evalgate.agents import AgentError, command

    monkeypatch.setattr(command, "EXIT_GRACE_S", 0.5)
    script = "import json, os, sys, time\nsys.stdin.readline()\n" + body + "\n"
    started = time.monotonic()
    with pytest.raises(AgentError) as e:
        asyncio.run(_converse(tmp_path, script, turns))
    assert message in str(e.value)
    assert time.monotonic() - started < 10


def test_blank_lines_and_camel_case_answers_are_accepted(tmp_path):
    script = (
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    print(flush=True)\n"
        '    print(json.dumps({"invocationId": "inv-1", "finalResponse": {"parts": [{"text": "ok"}], "role": "model"},\n'
        '        "intermediateData": {"invocationEvents": [{"author": "a", "content": {"parts": [{"functionCall": {"name": "t", "args": {}}}]}}]}}), flush=True)\n'
    )
    (invocation,) = asyncio.run(_converse(tmp_path, script, 1))
    assert invocation.invocation_id == "inv-1" and invocation.final_text() == "ok"
    assert invocation.call_names == ["t"] and invocation.user_text() == "turn 1"


@pytest.mark.skipif(os.name != "posix", reason="process groups and /proc")
def test_what_a_finished_command_left_running_is_ended(tmp_path):
    script = (
        "import json, subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "open('child.pid', 'w').write(str(child.pid))\n"
        "for line in sys.stdin:\n"
        f"    {ANSWER}\n"
    )
    (invocation,) = asyncio.run(_converse(tmp_path, script, 1))
    assert invocation.final_text() == "ok"
    _assert_ends(int((tmp_path / "child.pid").read_text()))


def _pid_gone(pid: int) -> bool:
    """True once `pid` no longer exists: killed and reaped (a zombie still exists)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _running(pid: int) -> bool:
    """A process not our child: dead, or a zombie left for init to reap."""
    if _pid_gone(pid):
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


HANGS = r"""
import json, os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
with open(sys.argv[1], "w") as f:
    f.write(f"{os.getpid()} {child.pid}")
line = sys.stdin.readline()
if sys.argv[2] == "after-answer":  # answers, then never exits
    print(json.dumps({"final_response": {"parts": [{"text": "ok"}]}}), flush=True)
    sys.stdin.read()
time.sleep(60)
"""


@pytest.mark.skipif(os.name != "posix", reason="process groups and /proc")
@pytest.mark.parametrize("when", ["in-turn", "after-answer"])
def test_a_hanging_command_times_out_and_is_killed(cli, tmp_path, when):
    project = _project(tmp_path, HANGS, timeout_s=1)
    pids = tmp_path / "pids"
    config = json.loads((project / "evalgate.yaml").read_text(encoding="utf-8"))
    config["agent"]["command"] += [str(pids), when]
    config["suites"][0]["evalsets"] = "evals/weather.evalset.json"
    _write_config(project, config)
    # One case is enough: keep only paris.
    data = _eval_set()
    data["eval_cases"] = data["eval_cases"][:1]
    (project / "evals" / "weather.evalset.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")

    started = time.monotonic()
    code, err, cases, _ = _run(cli, tmp_path, project)
    assert time.monotonic() - started < 10
    assert code == 1, err  # its one case never got an answer: nothing was evaluated, no green exit
    (reason,) = _reasons(cases["paris"])
    assert reason == "the agent run failed: timed out after 1 s (timeout_s), in turn 1 of 1"
    pid, grandchild = (int(p) for p in pids.read_text().split())
    assert _pid_gone(pid), "the command is still there (running, or a zombie nobody reaped)"
    _assert_ends(grandchild)


def _assert_ends(pid: int) -> None:
    deadline = time.monotonic() + 3
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(pid), "what the command started outlived it"


# --- the program must exist --------------------------------------------------------------


def test_a_missing_program_is_a_config_error(cli, tmp_path):
    project = _project(tmp_path, "")
    config = json.loads((project / "evalgate.yaml").read_text(encoding="utf-8"))
    config["agent"]["command"] = ["no-such-agent-7f3a", "--serve"]
    _write_config(project, config)
    for command in ("run", "validate"):
        code, out, err = cli(command, "--config", str(project / "evalgate.yaml"), cwd=tmp_path)
        assert code == 2, out + err
        assert "Traceback" not in err
        (line,) = [line for line in err.splitlines() if "no-such-agent-7f3a" in line]
        assert re.search(r"^error: project/evalgate.yaml: agent.command \(line \d+\): program 'no-such-agent-7f3a' not found on PATH or in project\. ", line)
        assert len(err.strip().splitlines()) == 1, err


@pytest.mark.skipif(os.name != "posix", reason="the executable bit")
def test_a_program_beside_the_config_runs_from_there(cli, tmp_path):
    project = _project(tmp_path, EXAMPLE)
    tools = project / "tools"
    tools.mkdir()
    script = tools / "agent"
    script.write_text(f"#!{sys.executable}\n" + EXAMPLE.read_text(encoding="utf-8"), encoding="utf-8")
    config = json.loads((project / "evalgate.yaml").read_text(encoding="utf-8"))
    config["agent"]["command"] = ["tools/agent"]
    _write_config(project, config)

    code, err, _, _ = _run(cli, tmp_path, project)
    assert code == 2
    assert "agent.command (line 4): 'tools/agent' in ../project is not executable. Make it executable (chmod +x tools/agent)" in err

    script.chmod(0o755)
    code, err, cases, _ = _run(cli, tmp_path, project)
    assert code == 0, err
    assert all(c["status"] == "PASSED" for c in cases.values())


def test_describe_names_the_program():
    from evalgate.agents import make_runner
    from evalgate.config import AgentConfig

    runner = make_runner(AgentConfig(command=["python", "tools/run_agent.py"]), Path("."), "evalgate.yaml", _place)
    assert runner.describe() == "command python"


# --- 4. the JSON Schema --------------------------------------------------------------------


def test_agent_io_schema_validates_both_lines():
    jsonschema = pytest.importorskip("jsonschema")
    from evalgate.agents.agent_io import agent_io_schema

    schema = agent_io_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["title"] == "evalgate agent-io protocol"

    def errors(line, shape=None):
        target = {"$ref": f"#/$defs/{shape}", "$defs": schema["$defs"]} if shape else schema
        return list(jsonschema.Draft202012Validator(target).iter_errors(line))

    line_in = {
        "eval_set_id": "weather",
        "eval_id": "seoul_ko",
        "run": 2,
        "session_input": {"app_name": "weather_agent", "user_id": "tester", "state": {"units": "metric"}},
        "user_content": {"parts": [{"text": "서울 날씨 어때요?"}], "role": "user"},
        "tool_responses": [SEOUL],
    }
    line_out = {
        "final_response": {"parts": [{"text": "The weather in 서울: 맑음, 18도."}], "role": "model"},
        "intermediate_data": {"tool_uses": [{"name": "get_weather", "args": {"city": "서울"}}], "tool_responses": [{"name": "get_weather", "response": SEOUL["response"]}]},
    }
    events_out = {
        "invocation_id": "e-1",
        "final_response": {"parts": [{"text": "ok"}]},
        "intermediate_data": {"invocation_events": [{"author": "a", "content": {"parts": [{"function_call": {"name": "t", "args": {}}}]}}]},
    }
    assert errors(line_in, "AgentInput") == [] and errors(line_in) == []
    assert errors({**line_in, "session_input": {}}, "AgentInput") == []
    for line in (line_out, events_out, {}, {"intermediate_data": {}}, {"final_response": None}):
        assert errors(line, "AgentOutput") == [] and errors(line) == [], line
    assert errors({"final_reponse": {"parts": []}}, "AgentOutput")
    assert errors({"final_response": {"parts": "ok"}})
    assert errors({k: v for k, v in line_in.items() if k != "eval_id"}, "AgentInput")
    assert errors({**line_in, "run": 0}, "AgentInput")


def test_a_secret_the_agent_prints_never_reaches_the_results(cli, tmp_path, monkeypatch):
    """The agent's stderr goes into the failure's reason; its key must not go with it."""
    monkeypatch.setenv("AGENT_MODEL_API_KEY", "sk-live-0123456789abcdef")
    script = (
        "import os, sys\n"
        "sys.stdin.readline()\n"
        "print('auth failed with key ' + os.environ['AGENT_MODEL_API_KEY'], file=sys.stderr)\n"
        "sys.exit(1)\n"
    )
    project = _project(tmp_path, script)
    code, err, cases, inference = _run(cli, tmp_path, project)
    everything = err + (tmp_path / "out" / "results.json").read_text(encoding="utf-8") + (tmp_path / "out" / "inference.jsonl").read_text(encoding="utf-8")
    assert "sk-live-0123456789abcdef" not in everything
    assert "auth failed with key ${AGENT_MODEL_API_KEY}" in _reasons(cases["paris"]).pop()
