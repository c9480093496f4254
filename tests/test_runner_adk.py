"""The in-process ADK runner: a real ADK agent (Python tools) answering through a fake Gemini.

Parity first: evalgate's invocations equal those ADK 2.13's own LocalEvalService produces
for the same agent, eval set and fake model (ids and timings aside), and `evalgate run`'s
scores equal those in the eval history `adk eval` writes. Then what users rely on: session
state, failures that stay in their case, setup errors that stop the run with one line,
num_runs, tool replay, and inference.jsonl that re-scores to the same results.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("google.adk")

from agent_project import agent_model_server, comparable_invocation, make_project, turn  # noqa: E402
from fake_gemini import error, system_text  # noqa: E402


def _adk_inferences(agent_dir: Path, evalset: Path) -> dict[str, list[dict]]:
    """What ADK's LocalEvalService generates for each case, at its defaults, as JSON."""
    from google.adk.cli.cli_eval import get_app_or_root_agent
    from google.adk.evaluation.base_eval_service import InferenceConfig, InferenceRequest
    from google.adk.evaluation.eval_set import EvalSet
    from google.adk.evaluation.in_memory_eval_sets_manager import InMemoryEvalSetsManager
    from google.adk.evaluation.local_eval_service import LocalEvalService

    async def go() -> dict[str, list[dict]]:
        app, root_agent = await get_app_or_root_agent(str(agent_dir))
        eval_set = EvalSet.model_validate_json(evalset.read_text(encoding="utf-8"))
        manager = InMemoryEvalSetsManager()
        manager.create_eval_set("weather_agent", eval_set.eval_set_id)
        for case in eval_set.eval_cases:
            manager.add_eval_case("weather_agent", eval_set.eval_set_id, case)
        service = LocalEvalService(root_agent=root_agent, eval_sets_manager=manager, app=app)
        request = InferenceRequest(app_name="weather_agent", eval_set_id=eval_set.eval_set_id, inference_config=InferenceConfig())
        out = {}
        async for result in service.perform_inference(request):
            assert result.inferences is not None, result.error_message
            out[result.eval_case_id] = [inv.model_dump(mode="json") for inv in result.inferences]
        return out

    return asyncio.run(go())


def test_invocations_equal_adk_local_eval_service(tmp_path, monkeypatch, cli):
    project = make_project(tmp_path, agent={"adk": "weather_agent"})
    with agent_model_server(monkeypatch) as fake:
        code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out))
        assert code == 0, out + err
        ours = {r["eval_id"]: r["invocations"] for r in project.inference()}
        theirs = _adk_inferences(project.agent_dir, project.evalset)
        # The session state reached the agent's instruction, as in ADK's eval.
        assert any("Units: metric." in system_text(r.body) for r in fake.requests)
    assert set(ours) == set(theirs) == {"paris", "seoul_ko", "two_turns"}
    for eval_id in ours:
        mine = [comparable_invocation(i) for i in ours[eval_id]]
        adks = [comparable_invocation(i) for i in theirs[eval_id]]
        assert mine == adks, eval_id
    # Not vacuous: tool calls, tool responses, Korean text, app details and usage are there.
    seoul = comparable_invocation(ours["seoul_ko"][0])
    assert seoul["user_content"]["parts"][0]["text"] == "서울 날씨 어때요?"
    assert seoul["final_response"]["parts"][0]["text"] == "The weather in 서울: 맑음, 18도."
    events = seoul["intermediate_data"]["invocation_events"]
    assert [list(e["content"]["parts"][0]) for e in events[:2]] == [["function_call"], ["function_response"]]
    assert events[-1].get("content") is None and events[-1]["usage_metadata"]["total_token_count"] == 27
    assert "get_weather" in json.dumps(seoul["app_details"])


def test_scores_equal_adk_eval_history(tmp_path, monkeypatch, cli):
    """`adk eval` (a process) and `evalgate run` on the same agent, eval set and criteria."""
    project = make_project(tmp_path, agent={"adk": "weather_agent"}, criteria="evals/test_config.json")
    (project.root / "evals" / "test_config.json").write_text(
        json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}), encoding="utf-8"
    )
    # Make one case fail in both: the tool's data changes under the agent.
    monkeypatch.setenv("WEATHER_TABLE_VERSION", "2")
    with agent_model_server(monkeypatch) as fake:
        env = {k: v for k, v in os.environ.items() if k != "GOOGLE_GENAI_USE_VERTEXAI"}
        adk = Path(sys.executable).parent / "adk"
        done = subprocess.run(
            [str(adk), "eval", str(project.agent_dir), str(project.evalset), "--config_file_path", str(project.root / "evals" / "test_config.json")],
            cwd=project.root, env=env, capture_output=True, text=True, timeout=300,
        )
        assert "Eval Run Summary" in done.stdout, done.stdout[-2000:] + done.stderr[-3000:]
        code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out))
        assert fake.responder_errors == []
    assert code == 1  # paris now fails response_match_score
    history = list((project.agent_dir / ".adk" / "eval_history").glob("*.evalset_result.json"))
    assert len(history) == 1
    adk_cases = {c["eval_id"]: c for c in json.loads(history[0].read_text(encoding="utf-8"))["eval_case_results"]}
    ours = project.cases()
    assert set(adk_cases) == set(ours)
    statuses = {1: "PASSED", 2: "FAILED", 3: "NOT_EVALUATED"}
    for eval_id, case in adk_cases.items():
        for metric in case["overall_eval_metric_results"]:
            name = metric["metric_name"]
            if name not in ours[eval_id]["criteria"]:
                continue  # ADK's always-on efficiency metrics
            assert ours[eval_id]["criteria"][name]["score"] == metric["score"], (eval_id, name)
            assert ours[eval_id]["criteria"][name]["status"] == statuses[metric["eval_status"]], (eval_id, name)
    assert ours["paris"]["criteria"]["response_match_score"]["status"] == "FAILED"


def test_a_failing_case_never_passes_and_never_stops_the_run(tmp_path, monkeypatch, cli):
    atlantis = {"eval_id": "atlantis", "conversation": [turn("Weather in Atlantis?", "Unknown.", (("get_weather", {"city": "Atlantis"}, {}),))]}
    project = make_project(tmp_path, agent={"adk": "weather_agent"}, extra_cases=(atlantis,), suite={"not_evaluated": "fail"})
    with agent_model_server(monkeypatch) as fake:
        # The model service refuses the second turn of one case (400: not retried).
        fake.queue(error(400, "bad request for London"), times=1, when=lambda body: "London" in json.dumps(body, ensure_ascii=False))
        code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out))
    assert code == 1, out + err
    cases = project.cases()
    tool_error = cases["atlantis"]["criteria"]["tool_trajectory_avg_score"]
    assert tool_error["status"] == "NOT_EVALUATED"
    assert tool_error["error"] == "the agent run failed: ValueError: no weather station in Atlantis"
    model_error = cases["two_turns"]["criteria"]["response_match_score"]
    assert model_error["status"] == "NOT_EVALUATED" and "400" in model_error["error"], model_error
    assert cases["paris"]["status"] == cases["seoul_ko"]["status"] == "PASSED"
    lines = {(r["eval_id"], r["run"]): r for r in project.inference()}
    assert "error" in lines[("atlantis", 1)] and "invocations" not in lines[("atlantis", 1)]
    assert project.results()["run"]["agent"]["suites"]["weather"]["failed"] == 2
    assert "Traceback" not in out + err


def test_timeout_fails_only_that_case(tmp_path, monkeypatch, cli):
    from fake_gemini import slow

    project = make_project(tmp_path, agent={"adk": "weather_agent", "timeout_s": 1})
    with agent_model_server(monkeypatch) as fake:
        fake.queue(slow(5), times=1, when=lambda body: "서울" in json.dumps(body, ensure_ascii=False))
        code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out))
    cases = project.cases()
    assert cases["seoul_ko"]["criteria"]["response_match_score"]["error"] == "the agent run failed: timed out after 1 s (timeout_s), in turn 1 of 1"
    assert cases["paris"]["status"] == "PASSED" and cases["two_turns"]["status"] == "PASSED"
    assert code == 0  # not_evaluated: warn (the default)
    assert "not evaluated" in out


@pytest.mark.parametrize(
    "setup, message",
    [
        ("missing", "suites[0].agent.adk (line 3): 'nowhere' is neither a folder in"),
        ("no_root", "defines no app, root_agent or get_agent_async"),
        ("syntax", "agent.py: line 3: loading the agent failed: SyntaxError"),
        ("raises", "agent.py: line 2: loading the agent failed: RuntimeError: needs a database"),
        ("import", "loading the agent failed: ModuleNotFoundError: No module named 'not_installed_pkg'"),
    ],
)
def test_setup_errors_are_input_errors(tmp_path, monkeypatch, cli, setup, message):
    project = make_project(tmp_path, agent={"adk": "nowhere" if setup == "missing" else "weather_agent"})
    agent_py = project.agent_dir / "agent.py"
    if setup == "no_root":
        agent_py.write_text("x = 1\n", encoding="utf-8")
    elif setup == "syntax":
        agent_py.write_text("import os\n\ndef broken(:\n", encoding="utf-8")
    elif setup == "raises":
        agent_py.write_text("import os\nraise RuntimeError('needs a database')\n", encoding="utf-8")
    elif setup == "import":
        agent_py.write_text("import not_installed_pkg\n", encoding="utf-8")
    with agent_model_server(monkeypatch):
        code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out))
    assert code == 2, out + err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], err
    assert "Traceback" not in err
    if setup == "missing":  # validate finds it too, without loading anything
        code, _, err = cli("validate", "--config", str(project.config))
        assert code == 2 and message in err


def test_dotted_module_path_and_dotenv(tmp_path, monkeypatch, cli):
    project = make_project(tmp_path, agent={"adk": "weather_agent.agent"})
    with agent_model_server(monkeypatch):
        code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out))
    assert code == 0, out + err

    # A folder's .env is read as `adk eval` reads it: it fills what is not set.
    project2 = make_project(tmp_path / "two", agent={"adk": "weather_agent"})
    (project2.agent_dir / ".env").write_text("WEATHER_TABLE_VERSION=2\n", encoding="utf-8")
    with agent_model_server(monkeypatch):
        monkeypatch.delenv("ADK_DISABLE_LOAD_DOTENV")
        # Set, then unset: monkeypatch then restores "unset" even after the .env set it.
        monkeypatch.setenv("WEATHER_TABLE_VERSION", "placeholder")
        monkeypatch.delenv("WEATHER_TABLE_VERSION")
        code, out, err = cli("run", "--config", str(project2.config), "--out", str(project2.out))
        assert os.environ.get("WEATHER_TABLE_VERSION") == "2"
        monkeypatch.setenv("WEATHER_TABLE_VERSION", "1")  # set explicitly: the .env must not win
        code2, _, _ = cli("run", "--config", str(project2.config), "--out", str(project2.root / "out2"))
    assert code == 1 and project2.cases()["paris"]["criteria"]["response_match_score"]["status"] == "FAILED"
    assert code2 == 0


def test_num_runs_scores_every_run_and_rescores_identically(tmp_path, monkeypatch, cli):
    project = make_project(tmp_path, agent={"adk": "weather_agent", "num_runs": 3, "concurrency": 2})
    with agent_model_server(monkeypatch) as fake:
        # Run 2 of paris fails: the case must not pass, and its reason names the run.
        seen = {"paris": 0}

        def flaky(body):
            text = json.dumps(body, ensure_ascii=False)
            if "Paris" in text and "functionResponse" not in text:
                seen["paris"] += 1
                return seen["paris"] == 2
            return False

        fake.queue(error(400, "flaky"), times=1, when=flaky)
        code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out))
    assert code == 0, out + err
    lines = project.inference()
    assert sorted((r["eval_id"], r["run"]) for r in lines) == sorted((c, n) for c in ("paris", "seoul_ko", "two_turns") for n in (1, 2, 3))
    cases = project.cases()
    seoul = cases["seoul_ko"]["criteria"]["tool_trajectory_avg_score"]
    assert seoul["runs"] == [1.0, 1.0, 1.0] and len(seoul["per_invocation"]) == 3
    two = cases["two_turns"]["criteria"]["response_match_score"]
    assert len(two["per_invocation"]) == 6 and two["runs"] == [1.0, 1.0, 1.0]
    paris = cases["paris"]["criteria"]["response_match_score"]
    failed_run = next(r["run"] for r in lines if r["eval_id"] == "paris" and "error" in r)
    assert paris["status"] == "NOT_EVALUATED" and paris["runs"][failed_run - 1] is None
    assert paris["error"].startswith(f"run {failed_run}: the agent run failed: ClientError: 400")

    # The inference file re-scores to the same comparable results, without the agent.
    rescore = project.root / "rescore.yaml"
    rescore.write_text(
        f"suites:\n  - name: weather\n    evalsets: [evals]\n    actual: [{project.out / 'inference.jsonl'}]\n"
        "    criteria: {tool_trajectory_avg_score: 1.0, response_match_score: 0.8}\n",
        encoding="utf-8",
    )
    code, out, err = cli("run", "--config", str(rescore), "--out", str(project.root / "out2"))
    assert code == 0, out + err
    first, second = project.results(), project.results(project.root / "out2")
    for doc in (first, second):
        doc.pop("run")
        doc.pop("config_digest")
        for suite in doc["suites"]:
            for case in suite["cases"]:
                case["source"].pop("actual", None)
    assert first == second


def test_tool_replay_answers_from_the_eval_set(tmp_path, monkeypatch, cli):
    """get_stock_price fails whenever it runs; under replay the recorded response answers it."""
    stock = {
        "eval_id": "stock",
        "conversation": [turn("Price of $GOOG?", "GOOG trades at 123.45.", (("get_stock_price", {"symbol": "GOOG"}, {"symbol": "GOOG", "price": "123.45"}),))],
    }
    live = make_project(tmp_path / "live", agent={"adk": "weather_agent"}, extra_cases=(stock,))
    replay = make_project(tmp_path / "replay", agent={"adk": "weather_agent", "tools": "replay"}, extra_cases=(stock,))
    with agent_model_server(monkeypatch):
        cli("run", "--config", str(live.config), "--out", str(live.out))
        code, out, err = cli("run", "--config", str(replay.config), "--out", str(replay.out))
    assert live.cases()["stock"]["status"] == "NOT_EVALUATED"
    assert "RuntimeError: live data for GOOG cannot be fetched" in live.cases()["stock"]["criteria"]["response_match_score"]["error"]
    assert code == 0, out + err
    assert replay.cases()["stock"]["status"] == "PASSED"
    # Every call of this eval set has a recorded response except two_turns' first turn (none made).
    assert replay.results()["run"]["agent"]["suites"]["weather"]["tools"] == {"live": 0, "replayed": 4}


def test_user_message_is_sent_as_written(tmp_path, monkeypatch, cli):
    project = make_project(tmp_path, agent={"adk": "weather_agent"}, extra_cases=({"eval_id": "ja", "conversation": [turn("東京の天気は？", "The weather in 東京: 晴れ、20度.", (("get_weather", {"city": "東京"}, {}),))]},))
    with agent_model_server(monkeypatch) as fake:
        code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out))
        texts = [json.dumps(r.body, ensure_ascii=False) for r in fake.requests]
    assert code == 0, out + err
    assert any("東京の天気は？" in t for t in texts)
    assert project.cases()["ja"]["invocations"][0]["actual_response"] == "The weather in 東京: 晴れ、20度."


def test_a_missing_optional_dependency_is_an_input_error_naming_the_extra(tmp_path, monkeypatch, cli):
    """Before: a judge criterion without google-genai ran every case to NOT_EVALUATED and
    the gate passed with a warning. Now the run does not start."""
    import google

    project = make_project(tmp_path, agent={"adk": "weather_agent"}, criteria={"tool_trajectory_avg_score": 1.0, "final_response_match_v2": 0.5})
    monkeypatch.setitem(sys.modules, "google.genai", None)  # `import google.genai` now fails
    monkeypatch.delattr(google, "genai", raising=False)
    with agent_model_server(monkeypatch) as fake:
        code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out))
        assert fake.requests == []  # not even the agent ran
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and lines[0].endswith(
        "evalgate.yaml: suites[0].criteria (line 4): 'final_response_match_v2' needs google.genai, which is not installed. "
        "Install the judge extra: pip install 'adk-evalgate[judge]'."
    ), err


def test_reports_say_what_running_the_agent_cost(tmp_path, monkeypatch, cli):
    project = make_project(tmp_path, agent={"adk": "weather_agent", "num_runs": 2})
    with agent_model_server(monkeypatch):
        code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out))
    assert code == 0, out + err
    assert "agent: weather: 6 case runs in " in out and "model tokens" in out
    usage = project.results()["run"]["agent"]["suites"]["weather"]
    # 6 runs; each single-turn case makes 2 model calls, two_turns 3: (2 + 2 + 3) * 2 = 14 calls of 27 tokens.
    assert usage["case_runs"] == 6 and usage["failed"] == 0 and usage["tokens"]["total"] == 14 * 27
    # The run's total is token_usage_v1's (ADK's counting), turn by turn over every run.
    cases = project.results()["suites"][0]["cases"]
    assert usage["tokens"]["total"] == sum(t["value"] for c in cases for t in c["efficiency"]["token_usage_v1"]["per_invocation"])
    results = str(project.out / "results.json")
    code, report, _ = cli("compare", "--baseline", results, "--current", results, "--run-url", "https://github.com/o/r/actions/runs/1")
    assert "### Agent runs" in report
    assert "| weather | 6 | 0 |" in report and f"| {14 * 27:,} |" in report
    assert "[workflow run](https://github.com/o/r/actions/runs/1) · every case in report.html and the agent's outputs in inference.jsonl among its artifacts" in report
