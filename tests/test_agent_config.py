"""The `agent:` section of evalgate.yaml: strict, with one clear error per mistake."""

from __future__ import annotations

import pytest

from evalgate.config import load_config, suite_agent
from evalgate.errors import InputError

EVALSET = "evals"


def _load(tmp_path, text: str):
    (tmp_path / EVALSET).mkdir(exist_ok=True)
    path = tmp_path / "evalgate.yaml"
    path.write_text(text, encoding="utf-8")
    return load_config(path)


def _errors(tmp_path, text: str) -> list[str]:
    with pytest.raises(InputError) as e:
        _load(tmp_path, text)
    return [str(p) for p in e.value.problems]


def test_a_top_level_agent_is_the_default_for_suites_that_name_neither(tmp_path):
    loaded = _load(
        tmp_path,
        "agent: {adk: my_agent, num_runs: 3}\n"
        "suites:\n"
        "  - {name: a, evalsets: [evals]}\n"
        "  - {name: b, evalsets: [evals], agent: {command: python tools/run_agent.py --fast}}\n"
        "  - {name: c, evalsets: [evals], actual: [runs]}\n",
    )
    a, b, c = (suite_agent(loaded.config, s) for s in loaded.config.suites)
    assert a is not None and a.kind == "adk" and a.num_runs == 3 and a.concurrency == 16 and a.timeout_s == 300 and a.tools == "live"
    assert b is not None and b.kind == "command" and b.command == ["python", "tools/run_agent.py", "--fast"]
    assert c is None  # recorded outputs: the agent is not run


@pytest.mark.parametrize(
    "suite, message",
    [
        ("{name: s, evalsets: [evals], actual: [r], agent: {adk: a}}", "suites[0].agent (line 2): a suite has either 'actual' (recorded outputs) or 'agent' (run it), not both"),
        ("{name: s, evalsets: [evals]}", "suites[0] (line 2): the suite names no actual outputs and no agent to run. Add 'agent: {adk: my_agent}'"),
        ("{name: s, evalsets: [evals], agent: {adk: a, url: 'http://x'}}", "suites[0].agent (line 2): names 'adk' and 'url'; an agent is one of them"),
        ("{name: s, evalsets: [evals], agent: {concurrency: 2}}", "suites[0].agent (line 2): names no agent"),
        ("{name: s, evalsets: [evals], agent: {adk: a, app: x}}", "suites[0].agent.app (line 2): 'app' applies to an API server ('url') only"),
        ("{name: s, evalsets: [evals], agent: {url: 'ftp://x'}}", "suites[0].agent.url (line 2): 'ftp://x' is not an http(s) URL"),
        ("{name: s, evalsets: [evals], agent: {adk: a, num_run: 2}}", "num_run"),
        ("{name: s, evalsets: [evals], agent: {adk: a, num_runs: 0}}", "num_runs"),
        ("{name: s, evalsets: [evals], agent: {adk: a, tools: mock}}", "tools"),
        ("{name: s, evalsets: [evals], agent: {command: 'python \"unclosed'}}", "cannot be split into arguments"),
    ],
)
def test_mistakes_are_named_with_their_place(tmp_path, suite, message):
    errors = _errors(tmp_path, f"suites:\n  - {suite}\n")
    assert len(errors) == 1 and message in errors[0], errors


def test_an_unknown_agent_key_suggests_the_closest(tmp_path):
    [error] = _errors(tmp_path, "suites:\n  - {name: s, evalsets: [evals], agent: {adk: a, num_run: 2}}\n")
    assert "num_runs" in error
