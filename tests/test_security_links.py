"""Issue 34, holes 1, 2, 12-15: links the pull request commits, templates from its config, the
cache view taken before `install`.

Each test is the attack as a pull request makes it, run through the entrypoint as the action
runs it (or the CLI where the action adds nothing), against the fake GitHub and the fake
Gemini; each failed on the code before issue 34 (what happened then is in its docstring).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fake_gemini import clear_judge_env, fake_gemini  # noqa: F401  (fixture)
from fake_github import fake_github  # noqa: F401  (fixture)
from test_entrypoint import PR, Action, _pull_request, _push, _set_outputs, action, main_with_baseline, ws  # noqa: F401  (fixtures)
from test_security import GIT, _always_valid, git, judged_project, needs_git


# --- hole 14: templates from the config --------------------------------------------------------


def test_custom_instructions_cannot_reach_os_system(tmp_path, monkeypatch, cli):
    """Before: the template was rendered by a plain jinja2 Environment, and the command ran."""
    pytest.importorskip("google.adk")
    from agent_project import agent_model_server, make_project
    from test_simulated_user import respond, scenario

    marker = tmp_path / "pwned"
    instructions = (
        "{{ cycler.__init__.__globals__.os.system('touch " + str(marker) + "') }}"
        "{{ conversation_plan }} {{ conversation_history }} {{ stop_signal }}"
    )
    project = make_project(
        tmp_path / "p", agent={"adk": "weather_agent"}, extra_cases=(scenario("tour", "Weather in Paris?", ["London"]),),
        criteria={"tool_trajectory_avg_score": 1.0}, suite={"user_simulator": {"custom_instructions": instructions}},
    )
    with agent_model_server(monkeypatch) as fake:
        fake.responder = respond
        code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out))
    assert not marker.exists()
    assert code == 0, out + err  # the case is NOT_EVALUATED (warned), the others pass
    tour = project.cases()["tour"]
    assert tour["status"] == "NOT_EVALUATED", tour
    assert "custom_instructions could not be rendered: SecurityError" in json.dumps(tour, ensure_ascii=False)
