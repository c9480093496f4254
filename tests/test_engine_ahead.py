"""Each case scored as its runs end (evalgate.infer's score_ahead, evalgate.engine.Ahead) gives
the same results as scoring every case after the agent: the real weather agent and the
judge (final_response_match_v2, 3 samples) answered by one fake Gemini, whose answers to one
case's model requests are slowed to change the order in which cases end."""

from __future__ import annotations

import json
import re
import time

import pytest

import agent_model
from agent_project import agent_model_server, make_project
from fake_gemini import prompt_text

pytest.importorskip("google.adk")

CRITERIA = {
    "tool_trajectory_avg_score": 1.0,
    "response_match_score": 0.8,
    "final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"num_samples": 3}},
}


def _responder(slow: str):
    """The agent's model (slow on the case naming `slow`), and a judge finding Korean answers invalid."""

    def respond(body):
        if (body or {}).get("tools"):
            if slow in json.dumps(body, ensure_ascii=False):
                time.sleep(0.5)
            return agent_model.respond(body)
        return {"reasoning": "checked", "verdict": "invalid" if re.search("[가-힣]", prompt_text(body)) else "valid"}

    return respond


def _scored_afterwards(project, ahead: bool):
    """What `evalgate run` does, through the public functions it calls, with score_ahead on or off."""
    from evalgate import engine, infer
    from evalgate.config import load_config
    from evalgate.pipeline import judge_runtime
    from evalgate.plan import build_plans, config_digest

    loaded = load_config(project.config)
    plans = build_plans(loaded)
    runtime, workers = judge_runtime(loaded, no_cache=True)
    try:
        infer.run_agents(plans, loaded, runtime=runtime, score_ahead=ahead)
        return engine.run(plans, config_digest(loaded, plans), runtime=runtime, workers=workers)
    finally:
        runtime.close()


def _canonical(run) -> str:
    from evalgate.results import canonical_json

    return canonical_json(run.comparable())


def test_scoring_each_case_as_it_ends_gives_the_same_results(tmp_path, monkeypatch, cli):
    from evalgate.results import read

    project = make_project(tmp_path, agent={"adk": "weather_agent"}, criteria=CRITERIA, top={"judge": {"concurrency": 2}})
    outs = {}
    with agent_model_server(monkeypatch) as fake:
        fake.responder = _responder("Paris")
        late = _scored_afterwards(project, ahead=False)
        order_late = ["agent" if r.body.get("tools") else "judge" for r in fake.requests]
        fake.reset()
        ahead = _scored_afterwards(project, ahead=True)
        order_ahead = ["agent" if r.body.get("tools") else "judge" for r in fake.requests]
        for slow in ("Paris", "London"):  # `evalgate run` itself, cases ending in two orders
            fake.responder = _responder(slow)
            code, out, err = cli("run", "--config", str(project.config), "--out", str(tmp_path / slow), "--no-cache")
            assert code == 1, out + err  # the Korean case fails the judge
            outs[slow] = read(tmp_path / slow / "results.json")
    # Afterwards: every judge request after the last agent request. Ahead: some before it
    # (the quick cases were judged while Paris's slow model calls were still going on).
    last_agent = max(i for i, who in enumerate(order_late) if who == "agent")
    assert "judge" not in order_late[:last_agent]
    last_agent = max(i for i, who in enumerate(order_ahead) if who == "agent")
    assert "judge" in order_ahead[:last_agent], order_ahead
    assert sorted(order_ahead) == sorted(order_late)  # the same requests
    # The same results, byte for byte (the comparable payload: all but `run` and the logs).
    reference = _canonical(late)
    assert _canonical(ahead) == reference
    assert _canonical(outs["Paris"]) == reference and _canonical(outs["London"]) == reference
    # Cases in (eval_set_id, eval_id) order, whatever order they ended in; the judge's counts
    # per criterion are the suite's, as when scored afterwards.
    suite = outs["London"].suites[0]
    assert [c.eval_id for c in suite.cases] == ["paris", "seoul_ko", "two_turns"]
    assert suite.criteria["final_response_match_v2"].stats == late.suites[0].criteria["final_response_match_v2"].stats
    assert suite.criteria["final_response_match_v2"].stats["requests"] > 0
    statuses = {c.eval_id: c.status.value for c in suite.cases}
    assert statuses == {"paris": "PASSED", "seoul_ko": "FAILED", "two_turns": "PASSED"}


def test_the_budget_is_shared_only_when_the_judge_asks_a_model_the_agent_calls(tmp_path, monkeypatch, cli):
    other = {**CRITERIA, "final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"num_samples": 1, "judge_model": "gemini-2.5-pro"}}}
    for name, criteria, shared in (("same", CRITERIA, 16), ("other", other, None)):
        project = make_project(tmp_path / name, agent={"adk": "weather_agent"}, criteria=criteria, top={"judge": {"concurrency": 2}})
        with agent_model_server(monkeypatch) as fake:
            fake.responder = _responder("Paris")
            cli("run", "--config", str(project.config), "--out", str(project.out), "--no-cache")
            assert fake.max_in_flight <= 16 + (0 if shared else 2)
        agent = project.results()["run"]["agent"]
        assert agent.get("shared_slots") == shared and agent["concurrency"] == 16


def test_budget_slots_go_to_threads_and_tasks_and_never_exceed_its_size():
    """evalgate.judge.pool.Budget: judge threads and case-run tasks together hold at most
    `size` slots; every waiter gets one in the end; a cancelled task gives its slot back."""
    import asyncio
    import threading

    from evalgate.judge.pool import Budget

    budget = Budget(3)
    lock = threading.Lock()
    held = [0, 0]  # now, most

    def hold(seconds: float) -> None:
        with lock:
            held[0] += 1
            held[1] = max(held[1], held[0])
        time.sleep(seconds)
        with lock:
            held[0] -= 1

    def thread_job() -> None:
        assert budget.acquire(timeout=30)
        try:
            hold(0.01)
        finally:
            budget.release()

    async def task_job() -> None:
        await budget.acquire_async()
        try:
            await asyncio.to_thread(hold, 0.01)
        finally:
            budget.release()

    async def main() -> None:
        threads = [threading.Thread(target=thread_job) for _ in range(20)]
        for t in threads:
            t.start()
        await asyncio.gather(*(task_job() for _ in range(20)))
        # A task cancelled while it waits leaves no slot taken.
        for _ in range(3):
            await budget.acquire_async()
        waiting = asyncio.ensure_future(budget.acquire_async())
        await asyncio.sleep(0.01)
        waiting.cancel()
        for _ in range(3):
            budget.release()
        for t in threads:
            await asyncio.to_thread(t.join)

    asyncio.run(main())
    assert held[1] <= 3 and held[0] == 0
    assert [budget.acquire(timeout=0) for _ in range(4)] == [True, True, True, False]
