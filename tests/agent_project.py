"""A throwaway project for the runner tests: the weather agent, its eval set, an evalgate.yaml,
and a fake Gemini answering for the agent's model.

    project = make_project(tmp_path, agent={"adk": "weather_agent"})
    with agent_model_server(monkeypatch) as fake:
        code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out))
"""

from __future__ import annotations

import contextlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional

import yaml

import agent_model
from fake_gemini import FakeGemini, clear_judge_env

HERE = Path(__file__).parent
AGENT_DIR = HERE / "agents" / "weather_agent"
EVALSET = HERE / "agents" / "evals" / "weather.evalset.json"
CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}


@dataclass
class Project:
    root: Path
    config: Path
    evalset: Path
    agent_dir: Path

    @property
    def out(self) -> Path:
        return self.root / "out"

    def inference(self, out: Optional[Path] = None) -> list[dict[str, Any]]:
        path = (out or self.out) / "inference.jsonl"
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]

    def results(self, out: Optional[Path] = None) -> dict[str, Any]:
        return json.loads(((out or self.out) / "results.json").read_text(encoding="utf-8"))

    def cases(self, out: Optional[Path] = None) -> dict[str, dict[str, Any]]:
        return {c["eval_id"]: c for s in self.results(out)["suites"] for c in s["cases"]}


def user(text: str) -> dict[str, Any]:
    return {"parts": [{"text": text}], "role": "user"}


def turn(question: str, answer: str, calls: tuple = ()) -> dict[str, Any]:
    """An expected turn; calls are (name, args, response) with recorded responses."""
    return {
        "invocation_id": "x",
        "user_content": user(question),
        "final_response": {"parts": [{"text": answer}], "role": "model"},
        "intermediate_data": {
            "tool_uses": [{"name": n, "args": a, "id": f"c{i}"} for i, (n, a, _) in enumerate(calls)],
            "tool_responses": [{"name": n, "response": r, "id": f"c{i}"} for i, (n, _, r) in enumerate(calls)],
            "intermediate_responses": [],
        },
    }


def make_project(
    tmp_path: Path,
    agent: Optional[dict[str, Any]] = None,
    extra_cases: tuple = (),
    criteria: Any = None,
    suite: Optional[dict[str, Any]] = None,
    top: Optional[dict[str, Any]] = None,
) -> Project:
    root = tmp_path / "project"
    agent_dir = root / "weather_agent"
    shutil.copytree(AGENT_DIR, agent_dir, ignore=shutil.ignore_patterns("__pycache__", ".adk"))
    data = json.loads(EVALSET.read_text(encoding="utf-8"))
    data["eval_cases"].extend(extra_cases)
    evalset = root / "evals" / "weather.evalset.json"
    evalset.parent.mkdir(parents=True)
    evalset.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    config = root / "evalgate.yaml"
    body = {"name": "weather", "evalsets": ["evals"], "criteria": criteria or CRITERIA, **(suite or {})}
    if agent is not None:
        body["agent"] = agent
    config.write_text(yaml.safe_dump({"suites": [body], **(top or {})}, allow_unicode=True), encoding="utf-8")
    return Project(root, config, evalset, agent_dir)


@contextlib.contextmanager
def agent_model_server(monkeypatch, latency: float = 0.0) -> Iterator[FakeGemini]:
    """A fake Gemini scripted for the weather agent, and the environment that points google-genai
    at it (any API key; the Vertex switch off, as the notes on ADK advise)."""
    fake = FakeGemini(agent_model.respond).start()
    fake.api_key = None
    fake.latency = latency
    clear_judge_env(monkeypatch)
    monkeypatch.setenv("GOOGLE_API_KEY", "fake-agent-key")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
    monkeypatch.setenv("ADK_DISABLE_LOAD_DOTENV", "1")
    try:
        yield fake
    finally:
        fake.stop()


def comparable_invocation(inv: dict[str, Any], keep_app_details: bool = True) -> dict[str, Any]:
    """An invocation (evalgate's or ADK's JSON) normalized through evalgate's model, without
    what differs between any two runs: ids, timestamps, durations, function-call ids."""
    from evalgate.adk import Invocation

    data = Invocation.model_validate(inv).model_dump(mode="json", exclude_none=True)
    for key in ("invocation_id", "creation_timestamp", "duration", "model_duration", "tool_duration"):
        data.pop(key, None)
    if not keep_app_details:
        data.pop("app_details", None)
    return _drop_ids(_drop_none(data))


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


def _drop_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_ids(v) for k, v in value.items() if not (k == "id" and isinstance(v, str) and v.startswith("adk-"))}
    if isinstance(value, list):
        return [_drop_ids(v) for v in value]
    return value
