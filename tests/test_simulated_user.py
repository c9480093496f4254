"""Simulated users: `conversation_scenario` cases played end to end, as ADK 2.13 plays them.

The agent (tests/agents/weather_agent, real Python tools) and the simulated user both answer
through one fake Gemini on 127.0.0.1: a request whose prompt holds a conversation plan is the
simulator's, anything else the agent's. The scripted user asks, in order, about the cities its
plan lists, one per turn, then says the stop signal.
"""

from __future__ import annotations

import json
import re
import sys

import pytest

pytest.importorskip("google.adk")

import agent_model  # noqa: E402
from agent_project import agent_model_server, make_project  # noqa: E402
from fake_gemini import prompt_text  # noqa: E402
from fake_http import Reply  # noqa: E402

STOP = "</finished>"


def is_simulator(body) -> bool:
    return "conversation plan" in prompt_text(body).lower() or "conversation_plan" in prompt_text(body).lower()


def scripted_user(body) -> str:
    """The next user message: the next city of the plan ("Cities: A, B, C"), or the stop signal."""
    text = prompt_text(body)
    cities = re.search(r"Cities: ([^\n.<]+)", text)
    planned = [c.strip() for c in cities.group(1).split(",")] if cities else []
    asked = len(re.findall(r"^user: ", text, flags=re.M)) - 1  # the starting prompt is not from the plan
    if "SILENT" in text:
        return ""
    if asked < len(planned):
        return f"And the weather in {planned[asked]}?"
    return STOP


def respond(body):
    if is_simulator(body):
        text = scripted_user(body)
        if text == "":
            return Reply(200, {"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}]})
        return text
    return agent_model.respond(body)


def scenario(eval_id: str, start: str, cities: list[str], persona=None) -> dict:
    plan = f"You want the weather of several cities. Cities: {', '.join(cities)}."
    data = {"starting_prompt": start, "conversation_plan": plan}
    if persona is not None:
        data["user_persona"] = persona
    return {"eval_id": eval_id, "conversation_scenario": data}


CRITERIA = {"tool_trajectory_avg_score": 1.0}


def _project(tmp_path, *cases, simulator=None, agent=None):
    suite = {"user_simulator": simulator} if simulator else {}
    return make_project(tmp_path, agent=agent or {"adk": "weather_agent"}, extra_cases=cases, criteria=CRITERIA, suite=suite)


def _run(cli, project, out=None):
    return cli("run", "--config", str(project.config), "--out", str(out or project.out))


def _sim_requests(fake) -> list:
    return [r for r in fake.requests if is_simulator(r.body)]


def test_the_conversation_follows_the_plan_until_the_stop_signal(tmp_path, monkeypatch, cli):
    project = _project(tmp_path, scenario("tour", "What's the weather in Paris?", ["London", "서울"]))
    with agent_model_server(monkeypatch) as fake:
        fake.responder = respond
        code, out, err = _run(cli, project)
        sim = _sim_requests(fake)
    assert code == 0, out + err
    [line] = [r for r in project.inference() if r["eval_id"] == "tour"]
    users = [inv["user_content"]["parts"][0]["text"] for inv in line["invocations"]]
    # Turn 1 is the starting prompt verbatim, with no simulator request; then one request per turn.
    assert users == ["What's the weather in Paris?", "And the weather in London?", "And the weather in 서울?"]
    answers = [inv["final_response"]["parts"][0]["text"] for inv in line["invocations"]]
    assert answers == ["The weather in Paris: sunny, 21 C.", "The weather in London: cloudy, 14 C.", "The weather in 서울: 맑음, 18도."]
    assert len(sim) == 3  # after turns 1, 2 and 3; the third says the stop signal
    # The simulator saw the conversation so far, agent's words included.
    assert "The weather in London: cloudy, 14 C." in sim[2].prompt and "Cities: London, 서울" in sim[0].prompt
    case = project.cases()["tour"]
    assert case["conversation_end"] == "stop signal"
    # Criteria that need expected turns are NOT_EVALUATED for a scenario, as in ADK.
    crit = case["criteria"]["tool_trajectory_avg_score"]
    assert crit["status"] == "NOT_EVALUATED" and "needs an expected conversation" in crit["error"]
    assert project.results()["run"]["agent"]["simulator"]["requests"] == 3


def test_the_turn_limit_counts_the_starting_prompt_and_a_rerun_asks_nothing(tmp_path, monkeypatch, cli):
    project = _project(tmp_path, scenario("tour", "Weather in Paris?", ["London", "서울", "東京"]), simulator={"max_allowed_invocations": 2})
    with agent_model_server(monkeypatch) as fake:
        fake.responder = respond
        code, out, err = _run(cli, project)
        assert code == 0, out + err
        assert len(_sim_requests(fake)) == 1
        [line] = [r for r in project.inference() if r["eval_id"] == "tour"]
        assert len(line["invocations"]) == 2 and project.cases()["tour"]["conversation_end"] == "turn limit"

        fake.reset()
        code, out, err = _run(cli, project, project.root / "again")
        assert code == 0, out + err
        # The agent answered the same, so the simulated user's turns came from the cache.
        assert _sim_requests(fake) == [] and [r for r in fake.requests if not is_simulator(r.body)]
        assert project.cases(project.root / "again")["tour"]["conversation_end"] == "turn limit"


def test_test_config_user_simulator_config_is_honoured(tmp_path, monkeypatch, cli):
    project = make_project(tmp_path, agent={"adk": "weather_agent"}, extra_cases=(scenario("tour", "Weather in Paris?", ["London", "서울"]),), criteria="evals/test_config.json")
    (project.root / "evals" / "test_config.json").write_text(
        json.dumps({"criteria": CRITERIA, "user_simulator_config": {"maxAllowedInvocations": 1, "model": "gemini-sim"}}), encoding="utf-8"
    )
    with agent_model_server(monkeypatch) as fake:
        fake.responder = respond
        code, out, err = _run(cli, project)
        assert _sim_requests(fake) == []  # one turn allowed: the starting prompt
    assert code == 0, out + err
    assert project.cases()["tour"]["conversation_end"] == "turn limit"


@pytest.mark.parametrize(
    "persona, expected",
    [("NOVICE", "NOVICE: A user new to the domain"), ({"id": "busy_pm", "description": "A product manager in a hurry.", "behaviors": [{"name": "terse", "behavior_instructions": ["Writes one short line."]}]}, "busy_pm: A product manager in a hurry.\n- terse: Writes one short line.")],
)
def test_a_persona_reaches_the_simulators_prompt(tmp_path, monkeypatch, cli, persona, expected):
    project = _project(tmp_path, scenario("tour", "Weather in Paris?", ["London"], persona=persona))
    with agent_model_server(monkeypatch) as fake:
        fake.responder = respond
        code, out, err = _run(cli, project)
        sim = _sim_requests(fake)
    assert code == 0, out + err
    assert sim and all(expected in r.prompt for r in sim)


def test_an_unknown_persona_is_an_input_error(tmp_path, monkeypatch, cli):
    project = _project(tmp_path, scenario("tour", "Weather in Paris?", ["London"], persona="GURU"))
    code, out, err = _run(cli, project)
    assert code == 2 and "unknown persona 'GURU'" in err and "EXPERT, NOVICE, EVALUATOR" in err


def test_an_empty_simulator_reply_fails_only_its_case(tmp_path, monkeypatch, cli):
    silent = scenario("silent", "Weather in Paris?", ["London"])
    silent["conversation_scenario"]["conversation_plan"] += " SILENT"
    project = _project(tmp_path, silent, scenario("tour", "Weather in Paris?", ["London"]), simulator={"max_allowed_invocations": 5})
    with agent_model_server(monkeypatch) as fake:
        fake.responder = respond
        code, out, err = _run(cli, project)
    assert code == 0, out + err
    cases = project.cases()
    reason = cases["silent"]["criteria"]["tool_trajectory_avg_score"]["error"]
    assert reason.startswith("the agent run failed: the simulated user produced no message"), reason
    assert cases["tour"]["conversation_end"] == "stop signal"
    assert cases["paris"]["status"] == "PASSED"


def test_the_command_runner_plays_scenarios_and_no_simulator_key_warns_once(tmp_path, monkeypatch, cli):
    """A non-ADK agent (the docs' example) through the command runner; without the simulator's
    key, scenario cases are NOT_EVALUATED with one warning, static cases still run."""
    from conftest import REPO

    example = REPO / "docs" / "examples" / "weather_agent.py"
    project = _project(tmp_path, scenario("tour", "What's the weather in Paris?", ["London"]), agent={"command": [sys.executable, str(example)]})
    with agent_model_server(monkeypatch) as fake:
        fake.responder = respond
        code, out, err = _run(cli, project)
        assert code == 0, out + err
        [line] = [r for r in project.inference() if r["eval_id"] == "tour"]
        assert [i["user_content"]["parts"][0]["text"] for i in line["invocations"]] == ["What's the weather in Paris?", "And the weather in London?"]
        assert project.cases()["tour"]["conversation_end"] == "stop signal"

        monkeypatch.delenv("GOOGLE_API_KEY")
        code, out, err = cli("run", "--config", str(project.config), "--out", str(project.root / "nokey"), "--no-cache")
    cases = project.cases(project.root / "nokey")
    assert cases["paris"]["status"] == "PASSED"
    reason = cases["tour"]["criteria"]["tool_trajectory_avg_score"]["error"]
    assert "no judge credentials" in reason
    warnings = project.results(project.root / "nokey")["suites"][0]["warnings"]
    assert sum("simulated users: no judge credentials" in w for w in warnings) == 1


def test_the_report_shows_a_korean_scenario_as_its_conversation(tmp_path, monkeypatch, cli):
    project = _project(tmp_path, scenario("서울_여행", "서울 날씨 어때요?", ["東京"]))
    with agent_model_server(monkeypatch) as fake:
        fake.responder = respond
        code, out, err = _run(cli, project)
    assert code == 0, out + err
    # Only cases that need attention get details: give the scenario a criterion that passed
    # in the baseline and fails now, as a judge criterion would, and render the comment.
    def edited(status: str, score: float) -> str:
        data = project.results()
        case = next(c for c in data["suites"][0]["cases"] if c["eval_id"] == "서울_여행")
        case["status"] = case["criteria"]["tool_trajectory_avg_score"]["status"] = status
        case["criteria"]["tool_trajectory_avg_score"].update(score=score, error=None)
        path = project.root / f"{status}.json"
        path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        return str(path)

    code, report, _ = cli("compare", "--baseline", edited("PASSED", 1.0), "--current", edited("FAILED", 0.0))
    assert "_Simulated conversation of 2 turns; conversation ended: stop signal_" in report
    turns = [report.index(t) for t in ("서울 날씨 어때요?", "The weather in 서울: 맑음, 18도.", "And the weather in 東京?", "The weather in 東京: 晴れ、20度.")]
    assert turns == sorted(turns)  # user and agent turns, in order


def test_simulated_conversations_equal_adks(tmp_path, monkeypatch, cli):
    """ADK 2.13's LocalEvalService plays the same scenarios with its own simulator (its own
    prompt) against the same scripted user model: the conversations are the same."""
    from agent_project import comparable_invocation
    from test_runner_adk import _adk_inferences

    project = _project(
        tmp_path,
        scenario("tour", "What's the weather in Paris?", ["London", "서울"]),
        scenario("단일", "東京の天気は？", []),
    )
    with agent_model_server(monkeypatch) as fake:
        fake.responder = respond
        code, out, err = _run(cli, project)
        assert code == 0, out + err
        ours = {r["eval_id"]: r["invocations"] for r in project.inference()}
        theirs = _adk_inferences(project.agent_dir, project.evalset)
    for eval_id in ("tour", "단일"):
        mine = [comparable_invocation(i) for i in ours[eval_id]]
        adks = [comparable_invocation(i) for i in theirs[eval_id]]
        assert mine == adks, eval_id
    assert len(ours["tour"]) == 3 and len(ours["단일"]) == 1


def judge_per_turn(body):
    """A scripted judge for per_turn_user_simulator_quality_v1: a turn is valid when it asks
    about a planned city; ending is valid once every planned city was asked about."""
    text = prompt_text(body)
    plan = re.search(r"<conversation_plan>\n(.*?)\n</conversation_plan>", text, re.S).group(1)
    cities = [c.strip() for c in re.search(r"Cities: ([^\n.<]+)", plan).group(1).split(",")]
    so_far = re.search(r"<conversation_so_far>\n(.*?)\n</conversation_so_far>", text, re.S).group(1)
    message = re.search(r"<user_message>\n(.*?)\n</user_message>", text, re.S).group(1)
    if message == "&lt;/finished>":
        asked = sum(f"weather in {c}?" in so_far for c in cities)
        valid = asked == len(cities)
    else:
        valid = any(c in message for c in cities)
    return {"reasoning": "checked against the plan", "verdict": "valid" if valid else "invalid"}


def respond_with_judge(body):
    if "<conversation_plan>" in prompt_text(body):
        return judge_per_turn(body)
    return respond(body)


def test_per_turn_user_simulator_quality_tells_a_bad_simulator_from_a_bad_agent(tmp_path, monkeypatch, cli):
    criteria = {"per_turn_user_simulator_quality_v1": {"threshold": 0.8, "judge_model_options": {"num_samples": 3}}}
    project = make_project(
        tmp_path,
        agent={"adk": "weather_agent"},
        extra_cases=(scenario("full", "Weather in Paris?", ["London", "서울"]), scenario("cut", "Weather in Paris?", ["London", "서울", "東京"])),
        criteria=criteria,
        suite={"user_simulator": {"max_allowed_invocations": 3}},
    )
    with agent_model_server(monkeypatch) as fake:
        fake.responder = respond_with_judge
        code, out, err = _run(cli, project)
    cases = project.cases()
    full = cases["full"]["criteria"]["per_turn_user_simulator_quality_v1"]
    assert full["status"] == "PASSED" and full["score"] == 1.0
    # judge.early_stop (the default): 2 agreeing samples of 3 decide a turn, the third is not asked.
    assert [i["details"].get("samples") for i in full["per_invocation"]] == [None, [1.0] * 2, [1.0] * 2]
    # The turn limit ended "cut" with 東京 never asked: the ending is wrong, so its last turn fails.
    cut = cases["cut"]["criteria"]["per_turn_user_simulator_quality_v1"]
    assert cases["cut"]["conversation_end"] == "turn limit"
    assert cut["status"] == "FAILED" and cut["score"] == pytest.approx(2 / 3)
    assert cut["per_invocation"][-1]["details"]["check"] == "ending the conversation here"
    # A static case has no scenario to check against.
    assert "needs a conversation_scenario" in cases["paris"]["criteria"]["per_turn_user_simulator_quality_v1"]["error"]
    assert code == 1


@pytest.mark.parametrize("include", [False, True])
def test_tool_calls_reach_the_simulator_only_when_asked(tmp_path, monkeypatch, cli, include):
    project = _project(tmp_path, scenario("tour", "Weather in Paris?", ["London"]), simulator={"include_function_calls": include})
    with agent_model_server(monkeypatch) as fake:
        fake.responder = respond
        code, out, err = _run(cli, project)
        first = _sim_requests(fake)[0].prompt
    assert code == 0, out + err
    assert "user: Weather in Paris?" in first and "weather: The weather in Paris: sunny, 21 C." in first
    assert ("""weather called tool 'get_weather' with args: {"city": "Paris"}""" in first) is include
    assert ("""tool 'get_weather' returned: {"city": "Paris", "forecast": "sunny, 21 C"}""" in first) is include


def test_judge_criteria_score_the_simulated_conversation_and_custom_instructions_apply(tmp_path, monkeypatch, cli):
    """A rubric criterion judges every turn the conversation produced; a custom_instructions
    template is rendered with ADK's placeholders."""
    instructions = "PLAY THE USER. Plan: {{ conversation_plan }}\nSo far:\n{{ conversation_history }}\nDone? say {{ stop_signal }}"
    criteria = {"rubric_based_final_response_quality_v1": {"threshold": 0.8, "judge_model_options": {"num_samples": 1},
                                                           "rubrics": [{"rubric_id": "weather", "rubric_content": {"text_property": "Gives a forecast."}}]}}
    project = make_project(
        tmp_path, agent={"adk": "weather_agent"}, extra_cases=(scenario("tour", "Weather in Paris?", ["London"]),),
        criteria=criteria, suite={"user_simulator": {"custom_instructions": instructions}},
    )

    def answer(body):
        schema = ((body or {}).get("generationConfig") or {}).get("responseJsonSchema") or {}
        if "verdicts" in json.dumps(schema):
            ids = schema["properties"]["verdicts"]["items"]["properties"]["rubric_id"]["enum"]
            return {"verdicts": [{"rubric_id": i, "rationale": "has a forecast", "verdict": "yes"} for i in ids]}
        if prompt_text(body).startswith("PLAY THE USER."):
            return scripted_user(body)
        return agent_model.respond(body)

    with agent_model_server(monkeypatch) as fake:
        fake.responder = answer
        code, out, err = _run(cli, project)
        sims = [r.prompt for r in fake.requests if r.prompt.startswith("PLAY THE USER.")]
    assert code == 0, out + err
    assert sims and sims[0].endswith("Done? say </finished>") and "Plan: You want the weather of several cities. Cities: London." in sims[0]
    tour = project.cases()["tour"]
    rubric = tour["criteria"]["rubric_based_final_response_quality_v1"]
    assert rubric["status"] == "PASSED" and len(rubric["per_invocation"]) == 2 == len(tour["invocations"])
