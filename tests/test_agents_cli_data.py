"""agents-cli datasets as eval sets, the agent run on them as `agents-cli eval generate` runs it,
and traces as recorded outputs (read and written).

google-agents-cli 1.11.0 is the peer: what we send equals its `split_case_history`; the
traces evalgate writes are graded by the real `agents-cli eval grade`; traces the real
`agents-cli eval generate` wrote against a real `adk api_server` read back as the invocations
our own run of that agent gives, and our traces equal its traces where both record the same.
The agent is tests/agents/weather_agent (real Python tools) on the fake Gemini; the model's
requests show what history it saw.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent_project import AGENT_DIR, EVALSET, agent_model_server
from fake_gemini import system_text

# The server fixtures: a real `adk api_server` serving the weather agent on the fake Gemini.
from fake_github import fake_github  # noqa: F401  (fixture)
from test_runner_api_server import APP, adk_server, agents_dir, comparable, model, model_env  # noqa: F401

from evalgate.config import load_config
from evalgate.plan import build_plans

USER = "user"


def content(text: str, role: str = USER) -> dict[str, Any]:
    return {"role": role, "parts": [{"text": text}]}


PROMPT_KO = {
    "eval_case_id": "seoul_ko",
    "prompt": content("서울 날씨 어때요?"),
    "reference": {"response": content("The weather in 서울: 맑음, 18도.", "model")},
    "team_note": {"owner": "날씨팀"},
}
# N+1, camelCase as the SDK also writes it: the earlier turn is the session's history; the
# state delta on the first user event sets the agent's units (its instruction reads {units?}).
FOLLOW_UP_JA = {
    "evalCaseId": "tokyo_ja",
    "agentData": {
        "turns": [
            {
                "turnIndex": 0,
                "turnId": "t0",
                "events": [
                    {"author": "user", "content": content("こんにちは、東京に住んでいます"), "stateDelta": {"units": "metric"}},
                    {"author": "model", "content": content("よろしくお願いします!", "model")},
                ],
            },
            {"turnIndex": 1, "turnId": "t1", "events": [{"author": "user", "content": content("東京の天気は?")}]},
        ]
    },
}
# The same without a state delta: what ADK 2.13's api_server lets agents-cli seed.
FOLLOW_UP_PLAIN = {
    "eval_case_id": "london_follow_up",
    "agent_data": {
        "turns": [
            {
                "turn_index": 0,
                "turn_id": "t0",
                "events": [
                    {"author": "user", "content": content("I am planning a trip.")},
                    {"author": "model", "content": content("Where to?", "model")},
                ],
            },
            {"turn_index": 1, "turn_id": "t1", "events": [{"author": "user", "content": content("London, what's the weather?")}]},
        ]
    },
}
NO_ID = {"prompt": content("Paris?")}  # its id is its index
FAILS = {"eval_case_id": "atlantis", "prompt": content("Weather in Atlantis?")}  # the tool raises


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


def write_project(root: Path, cases: list[dict], suite: dict | None = None, agent: dict | None = {"adk": "weather_agent"}, name: str = "basic-dataset") -> Path:
    """A project: the weather agent, tests/eval/datasets/<name>.json with a README beside it,
    and evalgate.yaml with one suite over the datasets folder."""
    root.mkdir(parents=True, exist_ok=True)
    if not (root / "weather_agent").exists():
        shutil.copytree(AGENT_DIR, root / "weather_agent", ignore=shutil.ignore_patterns("__pycache__", ".adk"))
    datasets = root / "tests" / "eval" / "datasets"
    write_json(datasets / f"{name}.json", {"eval_cases": cases})
    (datasets / "README.md").write_text("# Datasets\n", encoding="utf-8")
    body = {"name": "app", "evalsets": "tests/eval/datasets", "criteria": {"response_match_score": 0.5}, **(suite or {})}
    config = {"suites": [body]}
    if agent is not None:
        config["agent"] = agent
    (root / "evalgate.yaml").write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return root / "evalgate.yaml"


def plans_of(config: Path):
    return build_plans(load_config(config))


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def traces_in(folder: Path) -> list[dict]:
    files = sorted((folder / "traces").glob("traces_*.json"))
    assert len(files) == 1, files
    return json.loads(files[0].read_text(encoding="utf-8"))["eval_cases"]


def request_texts(fake) -> list[list[tuple[str, str]]]:
    """Each model request's conversation as (role, text) pairs."""
    return [[(c.get("role"), "".join(p.get("text", "") for p in c.get("parts", []))) for c in r.body.get("contents", [])] for r in fake.requests]


# --- loading -------------------------------------------------------------------------------


def test_a_folder_yields_its_datasets_by_content_and_skips_the_rest(tmp_path):
    config = write_project(tmp_path, [PROMPT_KO, FOLLOW_UP_JA, NO_ID])
    datasets = tmp_path / "tests" / "eval" / "datasets"
    # Beside the datasets: an eval config as JSON, a results file, an ADK eval set (taken as ever).
    write_json(datasets / "eval_config.json", {"metrics_to_run": ["FINAL_RESPONSE_QUALITY"]})
    write_json(datasets / "results_20260101_000000.json", {"eval_case_results": [], "summary_metrics": []})
    shutil.copy(EVALSET, datasets / "weather.evalset.json")
    (plan,) = plans_of(config)
    cases = {(c.eval_set_id, c.eval_id): c for c in plan.cases}
    assert sorted(cases) == sorted(
        [("basic-dataset", "seoul_ko"), ("basic-dataset", "tokyo_ja"), ("basic-dataset", "2"), ("weather", "paris"), ("weather", "seoul_ko"), ("weather", "two_turns")]
    )
    ko, ja, third = cases["basic-dataset", "seoul_ko"], cases["basic-dataset", "tokyo_ja"], cases["basic-dataset", "2"]
    # The case as written (snake_case, extra fields kept) travels with it; ADK cases have none.
    assert ko.acli == {**PROMPT_KO} and ko.history == []
    assert ja.acli["agent_data"]["turns"][0]["events"][0]["state_delta"] == {"units": "metric"}
    assert cases["weather", "paris"].acli is None and cases["weather", "paris"].history == []
    # What is sent: the prompt, or the trailing user message after the history.
    assert [inv.user_content.parts[0].text for inv in ko.expected] == ["서울 날씨 어때요?"]
    assert ko.expected[0].final_response.parts[0].text == "The weather in 서울: 맑음, 18도."
    assert [inv.user_content.parts[0].text for inv in ja.expected] == ["東京の天気は?"] and ja.expected[0].final_response is None
    assert ja.history == [
        {"author": "user", "content": content("こんにちは、東京に住んでいます"), "actions": {"state_delta": {"units": "metric"}}},
        {"author": "model", "content": content("よろしくお願いします!", "model")},
    ]
    assert third.expected[0].user_content.parts[0].text == "Paris?"
    assert ko.source == {"evalset": "tests/eval/datasets/basic-dataset.json"}


def test_a_glob_and_a_case_selector_name_dataset_cases(tmp_path):
    config = write_project(tmp_path, [PROMPT_KO, FOLLOW_UP_JA, NO_ID], suite={"evalsets": ["tests/eval/datasets/*.json"]})
    assert sorted(c.eval_id for c in plans_of(config)[0].cases) == ["2", "seoul_ko", "tokyo_ja"]
    config = write_project(tmp_path, [PROMPT_KO, FOLLOW_UP_JA, NO_ID], suite={"evalsets": ["tests/eval/datasets/basic-dataset.json:tokyo_ja,2"]})
    assert sorted(c.eval_id for c in plans_of(config)[0].cases) == ["2", "tokyo_ja"]


@pytest.mark.parametrize("raw", [PROMPT_KO, FOLLOW_UP_JA, FOLLOW_UP_PLAIN], ids=["prompt", "n+1 camelCase", "n+1"])
def test_history_and_message_equal_agents_cli_split(tmp_path, raw):
    generate = pytest.importorskip("google.agents.cli.eval.cmd_generate")
    from google.agents.cli._agent_platform_types import types as sdk
    from google.agents.cli.eval._events import to_adk_event_payload

    (plan,) = plans_of(write_project(tmp_path, [raw]))
    (case,) = plan.cases
    prior, message = generate.split_case_history(sdk.EvalCase.model_validate(raw))
    assert case.expected[0].user_content.model_dump(mode="json", exclude_none=True) == message.model_dump(mode="json", exclude_none=True)
    theirs = [to_adk_event_payload(e) for e in prior]  # what agents-cli posts, camelCase

    def key(event: dict) -> tuple:
        actions = event.get("actions") or {}
        return (event.get("author"), event.get("content"), actions.get("state_delta", actions.get("stateDelta")))

    assert [key(e) for e in case.history] == [key(e) for e in theirs]
    assert len(case.history) == {"seoul_ko": 0, "tokyo_ja": 2, "london_follow_up": 2}[case.eval_id]


@pytest.mark.parametrize(
    "bad, why",
    [
        ({"eval_case_id": "nothing"}, "has no user message to send"),
        ({"eval_case_id": "both", "prompt": content("hi"), "agent_data": FOLLOW_UP_PLAIN["agent_data"]}, "has both a top-level prompt and agent_data.turns"),
        ({"eval_case_id": "ends_with_agent", "agent_data": {"turns": [{"events": [{"author": "user", "content": content("hi")}, {"author": "model", "content": content("yo", "model")}]}]}}, "has no user message to send"),
        ({"eval_case_id": "scenario_and_prompt", "prompt": content("hi"), "user_scenario": {"starting_prompt": "hi", "conversation_plan": "ask"}}, "has a user_scenario and also a prompt"),
    ],
    ids=["neither", "both", "agent last", "scenario and prompt"],
)
def test_a_case_agents_cli_cannot_run_is_an_input_error_naming_file_place_and_fix(tmp_path, cli, bad, why):
    config = write_project(tmp_path, [PROMPT_KO, bad])
    code, out, err = cli("validate", "--config", str(config))
    assert code == 2, out + err
    assert "Traceback" not in err
    assert f"basic-dataset.json: eval_cases[1]: the case {why}" in err
    assert "a top-level prompt" in err and "user_scenario" in err  # the fix names the shapes there are


def test_duplicate_case_ids_and_a_named_file_that_is_no_eval_data_are_input_errors(tmp_path, cli):
    config = write_project(tmp_path, [PROMPT_KO, {**NO_ID, "eval_case_id": "seoul_ko"}])
    code, _, err = cli("validate", "--config", str(config))
    assert code == 2 and "basic-dataset.json: eval_cases[1].eval_case_id: duplicate eval_case_id 'seoul_ko' (first at eval_cases[0])" in err
    # By index too: a case without an id is "1" when it is second.
    config = write_project(tmp_path, [{**PROMPT_KO, "eval_case_id": "1"}, NO_ID])
    code, _, err = cli("validate", "--config", str(config))
    assert code == 2 and "duplicate eval_case_id '1'" in err
    # An explicitly named JSON file that is neither: the clear error, not a silent skip.
    config = write_project(tmp_path, [PROMPT_KO], suite={"evalsets": ["tests/eval/eval_config.json"]})
    write_json(tmp_path / "tests" / "eval" / "eval_config.json", {"metrics_to_run": ["SAFETY"]})
    code, _, err = cli("validate", "--config", str(config))
    assert code == 2 and "eval_config.json: not an ADK eval set nor an agents-cli dataset" in err
    # A .json beside the datasets that says eval_cases but is not JSON may be a dataset with a
    # typo: named, not skipped. Other files that are not JSON are passed over, as ever.
    config = write_project(tmp_path, [PROMPT_KO])
    datasets = tmp_path / "tests" / "eval" / "datasets"
    (datasets / "template.json").write_text("{{ cookiecutter.settings }}", encoding="utf-8")
    (datasets / "blob.json").write_bytes(b"\xff\xfe\x00binary")
    code, out, err = cli("validate", "--config", str(config))
    assert code == 0, out + err
    (datasets / "typo.json").write_text('{"eval_cases": [{"prompt": }]}', encoding="utf-8")
    code, _, err = cli("validate", "--config", str(config))
    assert code == 2 and "typo.json: line 1" in err, err
    (datasets / "typo.json").unlink()
    # A folder with no dataset in it says so.
    empty = tmp_path / "empty"
    write_json(empty / "eval_config.json", {"metrics_to_run": ["SAFETY"]})
    config = write_project(tmp_path, [PROMPT_KO], suite={"evalsets": ["empty"]})
    code, _, err = cli("validate", "--config", str(config))
    assert code == 2 and "'empty' holds no ADK eval set (*.evalset.json, *.test.json) nor agents-cli dataset" in err


def test_user_scenario_cases_are_played_by_the_simulated_user(tmp_path):
    scenario = {"eval_case_id": "refund", "user_scenario": {"starting_prompt": "払い戻しをお願いします", "conversation_plan": "Ask for a refund of order A-1, then thank the agent."}}
    (plan,) = plans_of(write_project(tmp_path, [scenario], suite={"criteria": {"response_match_score": 0.5}}))
    (case,) = plan.cases
    assert case.expected is None and case.history == []
    assert case.scenario == {"starting_prompt": "払い戻しをお願いします", "conversation_plan": "Ask for a refund of order A-1, then thank the agent."}
    assert case.acli == scenario


def test_the_expected_digest_covers_the_whole_case_as_written(tmp_path):
    from evalgate.adk import EvalSet
    from evalgate.loaders.evalsets import expected_digest

    def digest_of(case: dict) -> str:
        (plan,) = plans_of(write_project(tmp_path, [case]))
        return plan.cases[0].expected_digest

    base = digest_of(PROMPT_KO)
    assert digest_of(copy.deepcopy(PROMPT_KO)) == base
    # What only an agents-cli case has changes it too: an extra field, rubrics, the history.
    assert digest_of({**PROMPT_KO, "team_note": {"owner": "다른 팀"}}) != base
    assert digest_of({**PROMPT_KO, "rubric_groups": {"g": {"rubrics": [{"rubric_id": "r", "content": {"property": {"description": "polite"}}}]}}}) != base
    follow = copy.deepcopy(FOLLOW_UP_JA)
    follow["agentData"]["turns"][0]["events"][0]["stateDelta"] = {"units": "imperial"}
    assert digest_of(follow) != digest_of(FOLLOW_UP_JA)
    # ADK eval sets keep their digest.
    config = write_project(tmp_path, [PROMPT_KO], suite={"evalsets": ["evals"]})
    shutil.copytree(EVALSET.parent, tmp_path / "evals", dirs_exist_ok=True)
    eval_set = EvalSet.model_validate_json(EVALSET.read_text(encoding="utf-8"))
    ours = {c.eval_id: c.expected_digest for c in plans_of(config)[0].cases}
    assert ours == {c.eval_id: expected_digest(c) for c in eval_set.eval_cases}


# --- running the agent on dataset cases ------------------------------------------------------


def run_in_process(config: Path):
    """Plan and run the agent in this process (what `evalgate run` does before scoring)."""
    from evalgate import infer

    loaded = load_config(config)
    plans = build_plans(loaded)
    infer.run_agents(plans, loaded)
    return plans


def by_id(plans) -> dict[str, Any]:
    return {c.eval_id: c for p in plans for c in p.cases}


def test_in_process_the_model_sees_the_history_and_each_run_keeps_its_trace(tmp_path, monkeypatch):
    from google.agents.cli._agent_platform_types import types as sdk

    from evalgate import infer

    config = write_project(tmp_path, [PROMPT_KO, FOLLOW_UP_JA, FAILS])
    with agent_model_server(monkeypatch) as fake:
        plans = run_in_process(config)
        requests = [(r.body, texts) for r, texts in zip(fake.requests, request_texts(fake))]
    # The N+1 case: the model's first request holds the history, the agent's own earlier reply
    # as its own ("model" was rewritten to the root agent, as agents-cli rewrites it), then the
    # one message sent; the state delta reached the instruction through the session's state.
    tokyo = [(body, texts) for body, texts in requests if texts and texts[-1][1] == "東京の天気は?"]
    assert tokyo and tokyo[0][1] == [("user", "こんにちは、東京に住んでいます"), ("model", "よろしくお願いします!"), ("user", "東京の天気は?")]
    assert "Units: metric." in system_text(tokyo[0][0])
    seoul = [(body, texts) for body, texts in requests if texts and texts[0][1] == "서울 날씨 어때요?"]
    assert seoul[0][1] == [("user", "서울 날씨 어때요?")] and "Units: ." in system_text(seoul[0][0])

    cases = by_id(plans)
    assert cases["atlantis"].runs[0].error and cases["atlantis"].runs[0].trace is None
    trace = cases["tokyo_ja"].runs[0].trace
    # The history stays (its "model" author rewritten), the run's events follow in the last turn.
    events = [e for t in trace["agent_data"]["turns"] for e in t["events"]]
    assert [e["author"] for e in events] == ["user", "weather", "user", "weather", "weather", "weather"]
    assert [list(e["content"]["parts"][0]) for e in events[3:]] == [["function_call"], ["function_response"], ["text"]]
    assert events[3]["content"]["parts"][0]["function_call"]["args"] == {"city": "東京"}
    assert trace["responses"] == [{"response": {"role": "model", "parts": [{"text": "The weather in 東京: 晴れ、20度."}]}}]
    assert (trace["evalgate_eval_set_id"], trace["evalgate_suite"], "evalgate_run" in trace) == ("basic-dataset", "app", False)
    # agent_data.agents from the agent's tree, as ADK's /app-info gives it.
    (agent,) = trace["agent_data"]["agents"].values()
    assert (agent["agent_id"], agent["agent_type"], agent["sub_agents"]) == ("weather", "LlmAgent", [])
    assert "Units: {units?}" in agent["instruction"]
    assert [t["function_declarations"][0]["name"] for t in agent["tools"]] == ["get_weather", "get_stock_price"]
    prompt = cases["seoul_ko"].runs[0].trace
    assert [t["turn_id"] for t in prompt["agent_data"]["turns"]] == ["turn_0"] and prompt["team_note"] == {"owner": "날씨팀"}

    # The file: the successful runs' traces, an EvaluationDataset agents-cli's SDK reads (it
    # refuses unknown top-level keys).
    path = infer.write_traces(plans, tmp_path / "out" / "traces")
    assert path is not None and path.name.startswith("traces_") and path.parent.name == "traces"
    written = json.loads(path.read_text(encoding="utf-8"))
    assert written == {"eval_cases": [cases["seoul_ko"].runs[0].trace, trace]}
    dataset = sdk.EvaluationDataset.model_validate_json(path.read_text(encoding="utf-8"))
    assert [c.eval_case_id for c in dataset.eval_cases] == ["seoul_ko", "tokyo_ja"]
    assert "東京" in path.read_text(encoding="utf-8")  # written as text, not \\u escapes


def test_a_resumed_run_writes_the_same_traces(cli, tmp_path, monkeypatch):
    """Runs reused by --resume keep no trace; theirs are made as a fresh run's are (the
    agent's tree, the history's "model" rewritten to the root agent)."""
    config = write_project(tmp_path, [PROMPT_KO, FOLLOW_UP_JA, FAILS])
    with agent_model_server(monkeypatch) as fake:
        cli("run", "-c", str(config), "-o", str(tmp_path / "first"), "-q")
        asked = len(fake.requests)
        code, out, err = cli("run", "-c", str(config), "--resume", str(tmp_path / "first"), "-o", str(tmp_path / "again"), "-q")
        assert code in (0, 1), out + err
        assert len(fake.requests) == asked + 1  # only atlantis ran again (and failed again)
    first, again = traces_in(tmp_path / "first"), traces_in(tmp_path / "again")
    assert [t["eval_case_id"] for t in again] == ["seoul_ko", "tokyo_ja"]
    assert again == first and again[1]["agent_data"]["turns"][0]["events"][1]["author"] == "weather"


def test_num_runs_traces_say_their_run(tmp_path, monkeypatch):
    config = write_project(tmp_path, [PROMPT_KO, NO_ID], agent={"adk": "weather_agent", "num_runs": 2})
    with agent_model_server(monkeypatch):
        plans = run_in_process(config)
    runs = by_id(plans)["seoul_ko"].runs
    assert [r.trace["evalgate_run"] for r in runs] == [1, 2]
    assert "evalgate_eval_id" not in runs[0].trace
    # A case without eval_case_id: its id (its index in the dataset) goes with its trace.
    assert [r.trace["evalgate_eval_id"] for r in by_id(plans)["1"].runs] == ["1", "1"]


def test_the_api_server_gets_the_history_as_session_events_and_state(cli, adk_server, model, model_env, tmp_path):
    """A real `adk api_server`: the history as the session's events (state deltas, which
    ADK 2.13 refuses on events, as its state), and the same invocations and traces as the
    in-process runner."""
    out = {}
    for kind, agent in {"adk": {"adk": "weather_agent"}, "url": {"url": adk_server, "app": APP}}.items():
        config = write_project(tmp_path / kind, [PROMPT_KO, FOLLOW_UP_JA], agent=agent)
        model.reset()
        code, stdout, err = cli("run", "--config", str(config), "--out", str(tmp_path / kind / "out"))
        assert code in (0, 1) and "Traceback" not in err, stdout + err
        out[kind] = (read_jsonl(tmp_path / kind / "out" / "inference.jsonl"), traces_in(tmp_path / kind / "out"), request_texts(model), list(model.requests))
    (adk_lines, adk_traces, _, _), (url_lines, url_traces, url_texts, url_requests) = out["adk"], out["url"]
    assert all("error" not in r for r in url_lines), url_lines
    first = next(i for i, texts in enumerate(url_texts) if texts[-1][1] == "東京の天気は?")
    assert url_texts[first] == [("user", "こんにちは、東京に住んでいます"), ("model", "よろしくお願いします!"), ("user", "東京の天気は?")]
    assert "Units: metric." in system_text(url_requests[first].body)
    assert [comparable(r) for r in url_lines] == [comparable(r) for r in adk_lines]
    # The traces agree too (agents from /app-info as from the tree), but for call ids.
    assert [scrub_ids(t) for t in url_traces] == [scrub_ids(t) for t in adk_traces]


def scrub_ids(value: Any) -> Any:
    """Function call ids (random per run) as their order of appearance."""
    ids: dict[str, str] = {}

    def walk(v: Any) -> Any:
        if isinstance(v, dict):
            out = {}
            for k, x in v.items():
                if k in ("function_call", "function_response", "functionCall", "functionResponse") and isinstance(x, dict) and "id" in x:
                    x = {**x, "id": ids.setdefault(x["id"], f"call-{len(ids)}")}
                out[k] = walk(x)
            return out
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk(value)


HISTORY_ECHO = r'''
import json, sys
sys.stdin.reconfigure(encoding="utf-8"); sys.stdout.reconfigure(encoding="utf-8")
for n, line in enumerate(sys.stdin, start=1):
    turn = json.loads(line)
    said = {"line": n, "keys": sorted(turn), "history": turn.get("history")}
    print(json.dumps({"final_response": {"role": "model", "parts": [{"text": json.dumps(said, ensure_ascii=False)}]}}, ensure_ascii=False), flush=True)
'''


def test_the_command_gets_the_history_on_its_first_line_only_when_there_is_one(cli, tmp_path):
    config = write_project(tmp_path, [PROMPT_KO, FOLLOW_UP_JA], agent={"command": [sys.executable, "agent.py"]})
    (tmp_path / "agent.py").write_text(HISTORY_ECHO, encoding="utf-8")
    code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / "out"))
    assert code in (0, 1) and "Traceback" not in err, out + err
    said = {r["eval_id"]: json.loads(r["invocations"][0]["final_response"]["parts"][0]["text"]) for r in read_jsonl(tmp_path / "out" / "inference.jsonl")}
    # A case without history: the line as before (no new key).
    assert said["seoul_ko"] == {"line": 1, "keys": ["eval_id", "eval_set_id", "run", "session_input", "user_content"], "history": None}
    assert said["tokyo_ja"]["history"] == [
        {"author": "user", "content": content("こんにちは、東京に住んでいます"), "actions": {"state_delta": {"units": "metric"}}},
        {"author": "model", "content": content("よろしくお願いします!", "model")},
    ]
    # It validates against the published schema's AgentInput.
    from evalgate.agents.agent_io import AgentInput

    AgentInput.model_validate({"eval_set_id": "s", "eval_id": "c", "run": 1, "session_input": {}, "user_content": content("x"), "history": said["tokyo_ja"]["history"]})
    # The traces of a command's runs are written too (the agent named as agents-cli falls back).
    traces = traces_in(tmp_path / "out")
    assert [t["eval_case_id"] for t in traces] == ["seoul_ko", "tokyo_ja"]
    (written,) = (tmp_path / "out" / "traces").glob("traces_*.json")
    assert f"traces for agents-cli eval grade: {written}" in out  # the summary says where they went
    assert traces[0]["agent_data"]["turns"][0]["events"][0]["author"] == "root_agent"


# --- traces as recorded outputs --------------------------------------------------------------


def hand_trace(case: dict, answer: str, city: str | None = None) -> dict:
    """A dataset case as `eval generate` writes its trace: a call and its result when `city`,
    then the answer, authored by the agent, appended to the last turn (a new turn_0 for a
    prompt case), and `responses`."""
    trace = copy.deepcopy(case)
    events = []
    if city:
        events.append({"author": "weather", "content": {"role": "model", "parts": [{"function_call": {"id": "c1", "name": "get_weather", "args": {"city": city}}}]}, "event_time": "2026-01-01T00:00:00Z"})
        events.append({"author": "weather", "content": {"role": "user", "parts": [{"function_response": {"id": "c1", "name": "get_weather", "response": {"city": city}}}]}})
    events.append({"author": "weather", "content": content(answer, "model")})
    events.append({"author": "weather", "state_delta": {"seen": True}})  # an actions-only event, as agents-cli keeps them
    data = trace.get("agent_data") or trace.get("agentData")
    if data is None:
        trace["agent_data"] = {"turns": [{"turn_index": 0, "turn_id": "turn_0", "events": events}]}
    else:
        data["turns"][-1]["events"].extend(events)
    trace["responses"] = [{"response": content(answer, "model")}]
    return trace


def recorded_project(tmp_path: Path, cases: list[dict], actual: Any = "artifacts/traces") -> Path:
    return write_project(tmp_path, cases, agent=None, suite={"actual": actual})


def run_recorded(cli, config: Path, out: Path) -> tuple[int, str, dict[str, dict], dict[str, dict]]:
    code, stdout, err = cli("run", "--config", str(config), "--out", str(out))
    if code == 2:
        return code, err, {}, {}
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    cases = {c["eval_id"]: c for s in results["suites"] for c in s["cases"]}
    lines = {r["eval_id"]: r for r in read_jsonl(out / "inference.jsonl")}
    return code, stdout + err, cases, lines


def test_the_newest_trace_of_each_case_wins_and_other_json_is_skipped(cli, tmp_path):
    config = recorded_project(tmp_path, [PROMPT_KO, FOLLOW_UP_JA])
    traces = tmp_path / "artifacts" / "traces"
    write_json(traces / "traces_20260101_090000.json", {"eval_cases": [hand_trace(PROMPT_KO, "옛날 대답"), hand_trace(FOLLOW_UP_JA, "The weather in 東京: 晴れ、20度.", "東京")]})
    write_json(traces / "traces_20260102_090000.json", {"eval_cases": [hand_trace(PROMPT_KO, "The weather in 서울: 맑음, 18도.", "서울")]})
    write_json(traces / "eval_config.json", {"metrics_to_run": ["SAFETY"]})
    (traces / "README.md").write_text("traces\n", encoding="utf-8")
    code, text, cases, lines = run_recorded(cli, config, tmp_path / "out")
    assert code in (0, 1) and "Traceback" not in text, text  # tokyo_ja has no reference: response_match_score fails it
    assert cases["seoul_ko"]["criteria"]["response_match_score"]["score"] == 1.0  # the newer file's answer
    assert "traces_20260102_090000.json eval_cases[0]" in cases["seoul_ko"]["source"]["actual"]
    assert "traces_20260101_090000.json eval_cases[1]" in cases["tokyo_ja"]["source"]["actual"]
    (inv,) = lines["tokyo_ja"]["invocations"]
    # Only the run's turn is the agent's output; the history is not.
    assert inv["user_content"] == content("東京の天気は?")
    assert inv["final_response"]["parts"][0]["text"] == "The weather in 東京: 晴れ、20度."
    parts = [e["content"]["parts"][0] for e in inv["intermediate_data"]["invocation_events"]]
    assert [list(p) for p in parts] == [["function_call"], ["function_response"]]
    assert "not scored" not in text  # the older seoul_ko trace is not an unmatched record


def test_without_a_time_stamp_in_the_name_the_newer_file_wins(cli, tmp_path):
    config = recorded_project(tmp_path, [PROMPT_KO])
    traces = tmp_path / "artifacts" / "traces"
    newer = write_json(traces / "a.json", {"eval_cases": [hand_trace(PROMPT_KO, "The weather in 서울: 맑음, 18도.")]})
    older = write_json(traces / "b.json", {"eval_cases": [hand_trace(PROMPT_KO, "전혀 다른 대답")]})
    os.utime(older, (1_700_000_000, 1_700_000_000))
    os.utime(newer, (1_800_000_000, 1_800_000_000))
    code, text, cases, _ = run_recorded(cli, config, tmp_path / "out")
    assert code == 0, text
    assert "a.json" in cases["seoul_ko"]["source"]["actual"]


def test_a_trace_that_could_be_of_two_datasets_is_an_input_error_unless_it_names_its_set(cli, tmp_path):
    config = recorded_project(tmp_path, [NO_ID])
    write_json(tmp_path / "tests" / "eval" / "datasets" / "other.json", {"eval_cases": [{"prompt": content("London?")}]})
    trace = hand_trace(NO_ID, "The weather in Paris: sunny, 21 C.")
    write_json(tmp_path / "artifacts" / "traces" / "traces_20260101_000000.json", {"eval_cases": [trace]})
    code, err, _, _ = run_recorded(cli, config, tmp_path / "out")
    assert code == 2
    assert "traces_20260101_000000.json: eval_cases[0]: the trace of case '0' could be of the case of that id in any of the eval sets 'basic-dataset', 'other'" in err
    # evalgate's own traces name their eval set, and the id of a case without eval_case_id
    # (its index in its dataset, not in the traces file): they match exactly.
    london = hand_trace({"prompt": content("London?")}, "London is cloudy.")
    write_json(
        tmp_path / "artifacts" / "traces" / "traces_20260101_000000.json",
        {"eval_cases": [{**trace, "evalgate_eval_set_id": "basic-dataset", "evalgate_eval_id": "0"}, {**london, "evalgate_eval_set_id": "other", "evalgate_eval_id": "0"}]},
    )
    code, text, _, _ = run_recorded(cli, config, tmp_path / "out")
    assert code in (0, 1) and "Traceback" not in text, text
    records = read_jsonl(tmp_path / "out" / "inference.jsonl")
    assert sorted((r["eval_set_id"], r["invocations"][0]["final_response"]["parts"][0]["text"]) for r in records) == [
        ("basic-dataset", "The weather in Paris: sunny, 21 C."),
        ("other", "London is cloudy."),
    ]


def test_a_trace_named_by_a_shifted_index_is_an_input_error(cli, tmp_path):
    """agents-cli left a failed first case out: its index-named traces are one place off."""
    london = {"prompt": content("London?")}
    config = recorded_project(tmp_path, [NO_ID, london])
    write_json(tmp_path / "artifacts" / "traces" / "traces_20260101_000000.json", {"eval_cases": [hand_trace(london, "London is cloudy.")]})
    code, err, _, _ = run_recorded(cli, config, tmp_path / "out")
    assert code == 2
    assert """traces_20260101_000000.json: eval_cases[0]: the trace of case '0' (named by its place in the file) answers "London?", but that case sends "Paris?". """ in err
    assert "give every dataset case an eval_case_id" in err
    # In its place, it matches.
    write_json(tmp_path / "artifacts" / "traces" / "traces_20260101_000000.json", {"eval_cases": [hand_trace(NO_ID, "Paris: sunny."), hand_trace(london, "London is cloudy.")]})
    code, text, _, lines = run_recorded(cli, config, tmp_path / "out")
    assert code in (0, 1) and "Traceback" not in text, text
    assert lines["1"]["invocations"][0]["final_response"]["parts"][0]["text"] == "London is cloudy."


def test_a_named_file_that_is_not_traces_and_a_folder_without_any_are_input_errors(cli, tmp_path):
    config = recorded_project(tmp_path, [PROMPT_KO], actual="artifacts/notes.json")
    write_json(tmp_path / "artifacts" / "notes.json", {"hello": "세계"})
    code, err, _, _ = run_recorded(cli, config, tmp_path / "out")
    assert code == 2 and "notes.json: not ADK eval history, evalgate inference JSONL nor agents-cli traces" in err
    config = recorded_project(tmp_path, [PROMPT_KO], actual="artifacts")
    code, err, _, _ = run_recorded(cli, config, tmp_path / "out")
    assert code == 2 and "'artifacts' holds no ADK eval history (*.evalset_result.json), inference JSONL (*.jsonl) nor agents-cli traces" in err


def test_evalgate_s_own_traces_read_back_as_its_run(cli, tmp_path, monkeypatch):
    """Run the agent on a dataset, then score the traces it wrote as recorded outputs: the same
    invocations (where a trace records them: no usage, no timings) and the same scores."""
    config = write_project(tmp_path, [PROMPT_KO, FOLLOW_UP_JA, FAILS])
    with agent_model_server(monkeypatch):
        code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / "ran"))
    assert code in (0, 1), out + err
    shutil.copytree(tmp_path / "ran" / "traces", tmp_path / "artifacts" / "traces")
    config = recorded_project(tmp_path, [PROMPT_KO, FOLLOW_UP_JA])
    code, text, cases, lines = run_recorded(cli, config, tmp_path / "read")
    assert code in (0, 1), text
    ran = {r["eval_id"]: r for r in read_jsonl(tmp_path / "ran" / "inference.jsonl")}
    for eval_id in ("seoul_ko", "tokyo_ja"):
        assert [essence(i) for i in lines[eval_id]["invocations"]] == [essence(i) for i in ran[eval_id]["invocations"]]
    ran_results = json.loads((tmp_path / "ran" / "results.json").read_text(encoding="utf-8"))
    scores = {c["eval_id"]: c["criteria"]["response_match_score"]["score"] for s in ran_results["suites"] for c in s["cases"]}
    assert {k: c["criteria"]["response_match_score"]["score"] for k, c in cases.items()} == {k: scores[k] for k in ("seoul_ko", "tokyo_ja")}


def essence(inv: dict) -> dict:
    """What a trace and a run both record of an invocation: the user's message, the final
    text, and each step with content (author and parts; call ids as their order)."""
    from evalgate.adk import Invocation

    data = Invocation.model_validate(inv).model_dump(mode="json", exclude_none=True)
    # Thought signatures are the model's, not the agent's: agents-cli's traces leave them out.
    steps = [[e["author"], [{k: v for k, v in p.items() if k != "thought_signature"} for p in e["content"]["parts"]]] for e in (data.get("intermediate_data") or {}).get("invocation_events", []) if e.get("content")]
    return scrub_ids({"user": data["user_content"]["parts"], "final": (data.get("final_response") or {}).get("parts"), "steps": steps})


# --- agents-cli itself ---------------------------------------------------------------------

CALLS_AND_CHARS = """\
def evaluate(instance):
    calls = 0
    for turn in (instance.get("agent_data") or {}).get("turns", []):
        for event in turn.get("events", []):
            for part in (event.get("content") or {}).get("parts", []):
                if part.get("function_call"):
                    calls += 1
    text = "".join(p.get("text", "") for p in (instance.get("response") or {}).get("parts", []))
    return {"score": calls * 1000 + len(text), "explanation": text}
"""


def agents_cli_command() -> Path:
    pytest.importorskip("google.agents.cli")
    path = Path(sys.executable).parent / "agents-cli"
    if not path.exists():
        pytest.skip(f"no agents-cli console script beside {sys.executable}")
    return path


def agents_cli_env(tmp_path: Path) -> dict[str, str]:
    """agents-cli offline: no model keys; a throwaway ADC file for the storage client its SDK
    builds before grading; LiteLLM's bundled model prices instead of a download."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "GEMINI_"))}
    adc = write_json(tmp_path / "adc.json", {"type": "authorized_user", "client_id": "x.apps.googleusercontent.com", "client_secret": "s", "refresh_token": "r"})
    env.update(GOOGLE_APPLICATION_CREDENTIALS=str(adc), GOOGLE_CLOUD_PROJECT="offline-project", LITELLM_LOCAL_MODEL_COST_MAP="True", PYTHONUTF8="1")
    return env


def test_agents_cli_grade_scores_our_traces_as_the_function_computes(cli, tmp_path, monkeypatch):
    command = agents_cli_command()
    config = write_project(tmp_path, [PROMPT_KO, FOLLOW_UP_JA, NO_ID, FAILS])
    with agent_model_server(monkeypatch):
        code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / "out"))
    assert code in (0, 1), out + err
    ours = traces_in(tmp_path / "out")
    assert len(ours) == 3  # atlantis failed: left out, as agents-cli leaves failed cases out
    grade = tmp_path / "grade"
    grade.mkdir()
    (grade / "eval_config.yaml").write_text(
        yaml.safe_dump({"metrics_to_run": ["calls_and_chars"], "custom_metrics": [{"name": "calls_and_chars", "custom_function": CALLS_AND_CHARS}]}), encoding="utf-8"
    )
    done = subprocess.run(
        [str(command), "eval", "grade", "--traces", str(tmp_path / "out" / "traces"), "--config", "eval_config.yaml", "--output", str(grade / "results")],
        cwd=grade, env=agents_cli_env(tmp_path), capture_output=True, text=True, encoding="utf-8", timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (results_file,) = (grade / "results").glob("results_*.json")
    results = json.loads(results_file.read_text(encoding="utf-8"))
    assert results["summary_metrics"][0]["num_cases_error"] == 0
    graded = results["evaluation_dataset"][0]["eval_cases"]
    names = [c.get("eval_case_id") or c["evalgate_eval_id"] for c in graded]
    theirs = {names[r["eval_case_index"]]: r["response_candidate_results"][0]["metric_results"]["calls_and_chars"]["score"] for r in results["eval_case_results"]}

    scope: dict[str, Any] = {}
    exec(CALLS_AND_CHARS, scope)
    expected = {
        t.get("eval_case_id") or t["evalgate_eval_id"]: float(scope["evaluate"]({**{k: v for k, v in t.items() if k != "responses"}, "response": t["responses"][0]["response"]})["score"])
        for t in ours
    }
    assert theirs == expected
    # Not vacuous: one tool call each, and the final text's length.
    assert theirs == {"seoul_ko": 1000 + len("The weather in 서울: 맑음, 18도."), "tokyo_ja": 1000 + len("The weather in 東京: 晴れ、20度."), "2": 1000 + len("The weather in Paris: sunny, 21 C.")}


def test_traces_agents_cli_generate_wrote_read_back_as_our_run(cli, adk_server, model, tmp_path):
    """The real `agents-cli eval generate --url` against a real `adk api_server` writes traces;
    read under `actual:` they give the invocations evalgate's own run of that server gives,
    and the traces evalgate wrote equal agents-cli's where both record the same (agents-cli
    adds event times and actions-only events; evalgate names the dataset)."""
    command = agents_cli_command()
    # The model signs its calls, as Gemini's thinking models do; agents-cli's traces leave the
    # signatures out.
    plain = model.responder

    def signed(body: Any) -> Any:
        reply = plain(body)
        for candidate in reply.body.get("candidates", []):
            for part in candidate["content"]["parts"]:
                if "functionCall" in part:
                    part["thoughtSignature"] = "c2lnbmVkIGJ5IHRoZSBtb2RlbA=="
        return reply

    model.responder = signed
    try:
        _generate_and_compare(cli, adk_server, command, tmp_path)
    finally:
        model.responder = plain


def _generate_and_compare(cli, adk_server: str, command: Path, tmp_path: Path) -> None:
    cases = [
        PROMPT_KO,
        {**FOLLOW_UP_PLAIN, "reference": {"response": content("The weather in London: cloudy, 14 C.", "model")}},
        {**NO_ID, "reference": {"response": content("The weather in Paris: sunny, 21 C.", "model")}},
    ]
    # evalgate runs the server's agent.
    config = write_project(tmp_path / "ours", cases, agent={"url": adk_server, "app": APP})
    code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / "ours" / "out"))
    assert code == 0, out + err
    our_lines = {r["eval_id"]: r for r in read_jsonl(tmp_path / "ours" / "out" / "inference.jsonl")}
    our_traces = traces_in(tmp_path / "ours" / "out")
    # agents-cli runs it, in a project of its own (it wants its manifest and the agent folder).
    project = tmp_path / "acli"
    shutil.copytree(AGENT_DIR, project / "weather_agent", ignore=shutil.ignore_patterns("__pycache__", ".adk"))
    (project / "agents-cli-manifest.yaml").write_text('name: "weather"\nagent_directory: "weather_agent"\n', encoding="utf-8")
    dataset = write_json(project / "tests" / "eval" / "datasets" / "basic-dataset.json", {"eval_cases": cases})
    done = subprocess.run(
        [str(command), "eval", "generate", "--dataset", str(dataset), "--output", str(project / "artifacts" / "traces") + os.sep, "--url", adk_server, "--app-name", APP],
        cwd=project, env=agents_cli_env(tmp_path), capture_output=True, text=True, encoding="utf-8", timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (their_file,) = (project / "artifacts" / "traces").glob("traces_*.json")
    their_traces = json.loads(their_file.read_text(encoding="utf-8"))["eval_cases"]

    # Read back as recorded outputs: the same invocations as our own run.
    shutil.copytree(project / "artifacts", tmp_path / "read" / "artifacts")  # a config's data lies inside its project
    config = recorded_project(tmp_path / "read", cases)
    code, text, _, read_lines = run_recorded(cli, config, tmp_path / "read" / "out")
    assert code == 0, text
    assert sorted(read_lines) == sorted(our_lines) == ["2", "london_follow_up", "seoul_ko"]
    for eval_id in our_lines:
        assert [essence(i) for i in read_lines[eval_id]["invocations"]] == [essence(i) for i in our_lines[eval_id]["invocations"]], eval_id
    london = essence(read_lines["london_follow_up"]["invocations"][0])
    assert london["user"] == [{"text": "London, what's the weather?"}] and london["final"] == [{"text": "The weather in London: cloudy, 14 C."}]

    # Our traces equal theirs where both record the same.
    def shared(trace: dict) -> dict:
        out = {k: v for k, v in trace.items() if not k.startswith("evalgate_")}
        for turn in out["agent_data"]["turns"]:
            turn["events"] = [{k: v for k, v in e.items() if k != "event_time"} for e in turn["events"] if e.get("content")]
        return scrub_ids(out)

    assert [shared(t) for t in our_traces] == [shared(t) for t in their_traces]
    assert their_traces[0]["agent_data"]["agents"]["weather"]["tools"]  # not vacuous: the agents came from /app-info on both sides


def test_a_user_scenario_case_is_played_by_the_simulated_user_and_traced_turn_by_turn(cli, tmp_path, monkeypatch):
    from test_simulated_user import respond as agent_or_simulated_user

    plan = "You want the weather of several cities. Cities: London, 東京."
    case = {"eval_case_id": "tour", "user_scenario": {"starting_prompt": "서울 날씨 어때요?", "conversation_plan": plan}}
    config = write_project(tmp_path, [case], suite={"criteria": {"tool_trajectory_avg_score": 1.0}})
    with agent_model_server(monkeypatch) as fake:
        fake.responder = agent_or_simulated_user
        code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / "out"))
    assert code in (0, 1) and "Traceback" not in err, out + err
    (line,) = read_jsonl(tmp_path / "out" / "inference.jsonl")
    users = [inv["user_content"]["parts"][0]["text"] for inv in line["invocations"]]
    assert users == ["서울 날씨 어때요?", "And the weather in London?", "And the weather in 東京?"]
    (trace,) = traces_in(tmp_path / "out")
    turns = trace["agent_data"]["turns"]
    assert [t["turn_id"] for t in turns] == ["turn_0", "turn_1", "turn_2"]
    assert [t["events"][0] for t in turns] == [{"author": "user", "content": content(u)} for u in users]
    assert trace["user_scenario"] == case["user_scenario"] and "prompt" not in trace
    # Read back, every user-started turn is the agent's output.
    shutil.copytree(tmp_path / "out" / "traces", tmp_path / "artifacts" / "traces")
    config = recorded_project(tmp_path, [case])
    code, text, _, lines = run_recorded(cli, config, tmp_path / "read")
    assert code in (0, 1), text
    assert [essence(i) for i in lines["tour"]["invocations"]] == [essence(i) for i in line["invocations"]]


# --- a multi-agent app: the sub-agent answers -----------------------------------------------

CONCIERGE = '''"""A root agent that hands weather questions to a sub-agent (tests/test_agents_cli_data.py)."""

from google.adk.agents import Agent


def get_weather(city: str) -> dict:
    """Returns the current weather in a city."""
    return {"city": city, "forecast": {"London": "cloudy, 14 C", "서울": "맑음, 18도"}.get(city, "unknown")}


forecaster = Agent(name="forecaster", model="gemini-2.5-flash", description="Answers weather questions.", instruction="Answer with the forecast.", tools=[get_weather])
root_agent = Agent(name="concierge", model="gemini-2.5-flash", description="Routes requests.", instruction="Send weather questions to forecaster.", sub_agents=[forecaster])
'''


def concierge_model(fallback):
    """The concierge transfers to forecaster; forecaster calls get_weather for the city the
    user named, then answers from its result. Other agents: `fallback`."""
    import agent_model

    def respond(body: Any) -> Any:
        system = system_text(body)
        contents = body.get("contents") or []
        if 'internal name is "concierge"' in system:
            return agent_model._reply([{"functionCall": {"name": "transfer_to_agent", "args": {"agent_name": "forecaster"}}}])
        if 'internal name is "forecaster"' not in system:
            return fallback(body)
        last = contents[-1].get("parts") or []
        result = next((p["functionResponse"]["response"] for p in last if p.get("functionResponse", {}).get("name") == "get_weather"), None)
        if result is not None:
            return agent_model._reply([{"text": f"{result['city']}: {result['forecast']}."}])
        said = " ".join(p.get("text", "") for c in contents if c.get("role") == "user" for p in c.get("parts", []))
        city = next(c for c in ("London", "서울") if c in said)
        return agent_model._reply([{"functionCall": {"name": "get_weather", "args": {"city": city}}}])

    return respond


def test_a_sub_agent_s_answer_is_authored_by_it_as_agents_cli_records_it(cli, adk_server, agents_dir, model, model_env, tmp_path, monkeypatch):
    command = agents_cli_command()
    (agents_dir / "concierge").mkdir(exist_ok=True)
    (agents_dir / "concierge" / "__init__.py").write_text("from . import agent\n", encoding="utf-8")
    (agents_dir / "concierge" / "agent.py").write_text(CONCIERGE, encoding="utf-8")
    cases = [{"eval_case_id": "seoul", "prompt": content("서울 날씨 알려주세요")}, FOLLOW_UP_PLAIN]
    plain = model.responder
    model.responder = concierge_model(plain)
    try:
        traces = {}
        for kind, agent in {"adk": {"adk": "concierge"}, "url": {"url": adk_server, "app": "concierge"}}.items():
            config = write_project(tmp_path / kind, cases, agent=agent)
            shutil.copytree(agents_dir / "concierge", tmp_path / kind / "concierge", dirs_exist_ok=True)
            code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / kind / "out"))
            assert code in (0, 1) and "Traceback" not in err, out + err
            traces[kind] = traces_in(tmp_path / kind / "out")
        project = tmp_path / "acli"
        shutil.copytree(agents_dir / "concierge", project / "concierge")
        (project / "agents-cli-manifest.yaml").write_text('name: "concierge"\nagent_directory: "concierge"\n', encoding="utf-8")
        dataset = write_json(project / "dataset.json", {"eval_cases": cases})
        done = subprocess.run(
            [str(command), "eval", "generate", "--dataset", str(dataset), "--output", str(project / "traces") + os.sep, "--url", adk_server, "--app-name", "concierge"],
            cwd=project, env=agents_cli_env(tmp_path), capture_output=True, text=True, encoding="utf-8", timeout=600,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    finally:
        model.responder = plain
    (their_file,) = (project / "traces").glob("traces_*.json")
    theirs = json.loads(their_file.read_text(encoding="utf-8"))["eval_cases"]

    def shared(trace: dict) -> dict:
        out = {k: v for k, v in trace.items() if not k.startswith("evalgate_")}
        for turn in out["agent_data"]["turns"]:
            turn["events"] = [{k: v for k, v in e.items() if k not in ("event_time", "state_delta")} for e in turn["events"] if e.get("content")]
        return scrub_ids(out)

    events = [e for t in traces["adk"][0]["agent_data"]["turns"] for e in t["events"]]
    assert [(e["author"], list(e["content"]["parts"][0])) for e in events] == [
        ("concierge", ["function_call"]), ("concierge", ["function_response"]),
        ("forecaster", ["function_call"]), ("forecaster", ["function_response"]), ("forecaster", ["text"]),
    ]
    agents = traces["adk"][0]["agent_data"]["agents"]
    assert {k: v.get("sub_agents") for k, v in agents.items()} == {"concierge": ["forecaster"], "forecaster": []}
    assert [shared(t) for t in traces["adk"]] == [shared(t) for t in traces["url"]] == [shared(t) for t in theirs]


def test_merged_shards_hold_the_traces_of_the_whole_run(cli, tmp_path, monkeypatch):
    config = write_project(tmp_path, [PROMPT_KO, FOLLOW_UP_JA, NO_ID, FAILS, {"eval_case_id": "london", "prompt": content("London?")}])
    with agent_model_server(monkeypatch):
        cli("run", "-c", str(config), "-o", str(tmp_path / "whole"), "-q")
        for k in (1, 2):
            code, _, err = cli("run", "-c", str(config), "--shard", f"{k}/2", "-o", str(tmp_path / "shards" / f"s{k}"), "-q")
            assert code in (0, 1), err
    code, out, err = cli("merge", str(tmp_path / "shards"), "-o", str(tmp_path / "merged"), "-q")
    assert code in (0, 1), out + err

    def keyed(folder: Path) -> dict[str, dict]:
        return {t.get("eval_case_id") or t["evalgate_eval_id"]: scrub_ids(t) for t in traces_in(folder)}

    whole = keyed(tmp_path / "whole")
    assert sorted(whole) == ["2", "london", "seoul_ko", "tokyo_ja"]
    assert all(len(traces_in(tmp_path / "shards" / f"s{k}")) < 4 for k in (1, 2))  # each shard ran some
    assert keyed(tmp_path / "merged") == whole


def test_the_action_keeps_the_traces_with_its_outputs(fake_github, tmp_path, monkeypatch, capsys):  # noqa: F811
    """The GitHub Action's run writes the traces beside inference.jsonl (its artifact)."""
    from agent_project import make_project
    from test_entrypoint import Action, _push

    project = make_project(tmp_path, agent={"adk": "weather_agent"})
    write_json(project.root / "evals" / "basic-dataset.json", {"eval_cases": [PROMPT_KO, FOLLOW_UP_JA]})
    action = Action(fake_github, project.root, tmp_path, capsys)
    commit = fake_github.linear_history(1)[0]
    with agent_model_server(monkeypatch):
        code = action("push", _push(commit), sha=commit)
    assert code in (0, 1), action.stdout
    traces = traces_in(project.root / "evalgate-results")
    assert [(t["evalgate_eval_set_id"], t["eval_case_id"]) for t in traces] == [("basic-dataset", "seoul_ko"), ("basic-dataset", "tokyo_ja")]
