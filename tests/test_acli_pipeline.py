"""A scaffolded agents-cli project gated as it is: `evalgate run` on its datasets, its traces and its
eval_config.yaml gives the per-case scores `agents-cli eval grade` writes for the same traces.

The scaffold's own eval folder (tests/acli_metrics/scaffold: the dataset and config
`agents-cli create` writes, with `score_range` added) and traces of its three cases (Korean and
Japanese text, a tool call), read as recorded outputs; the scaffold's LLM judge
(response_quality.py, google-genai) on the fake Gemini for both. Needs the agents-cli readers
(evalgate.agents_cli.traces, branch acli-data); skipped without them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("agentplatform")
pytest.importorskip("evalgate.agents_cli.traces")
AGENTS_CLI = Path(sys.executable).with_name("agents-cli")
if not AGENTS_CLI.exists():
    pytest.skip("agents-cli (google-agents-cli) is not installed beside this Python", allow_module_level=True)

from fake_gemini import FAKE_API_KEY, JUDGE_ENV_VARS, FakeGemini  # noqa: E402
from test_acli_code_metrics import judge_answer  # noqa: E402

HERE = Path(__file__).parent / "acli_metrics"


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = tmp_path / "myagent"
    (root / "tests" / "eval" / "datasets").mkdir(parents=True)
    shutil.copy(HERE / "response_quality.py", root / "tests" / "eval" / "response_quality.py")
    shutil.copy(HERE / "scaffold" / "basic-dataset.json", root / "tests" / "eval" / "datasets" / "basic-dataset.json")
    shutil.copy(HERE / "scaffold" / "eval_config.yaml", root / "tests" / "eval" / "eval_config.yaml")
    (root / "artifacts" / "traces").mkdir(parents=True)
    shutil.copy(HERE / "scaffold" / "traces.json", root / "artifacts" / "traces" / "traces_20261127_120000.json")
    (root / "evalgate.yaml").write_text(
        "suites:\n  - name: app\n    evalsets: tests/eval/datasets\n    actual: artifacts/traces\n"
        "    criteria: tests/eval/eval_config.yaml\n", encoding="utf-8")
    fake = FakeGemini(judge_answer).start()
    for name in JUDGE_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", FAKE_API_KEY)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
    yield root
    fake.stop()


def test_evalgate_run_scores_the_scaffold_as_agents_cli_grades_it(cli, project):
    code, out, err = cli("run", "--out", "out", cwd=project)
    assert code == 0, out + err
    assert "agent_turn_count                 –" in out  # no threshold
    ours = {c["eval_id"]: c["criteria"] for c in json.loads((project / "out" / "results.json").read_text(encoding="utf-8"))["suites"][0]["cases"]}

    adc = project / "adc.json"
    adc.write_text(json.dumps({"type": "authorized_user", "client_id": "x", "client_secret": "y", "refresh_token": "z"}))
    env = {**os.environ, "GOOGLE_APPLICATION_CREDENTIALS": str(adc), "GOOGLE_CLOUD_PROJECT": "fake-project", "DO_NOT_TRACK": "1", "HOME": str(project)}
    done = subprocess.run([str(AGENTS_CLI), "eval", "grade", "--traces", "artifacts/traces", "--config", "tests/eval/eval_config.yaml",
                           "--output", "graded"], cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    [graded] = (project / "graded").glob("results_*.json")
    data = json.loads(graded.read_text(encoding="utf-8"))
    cases = data["evaluation_dataset"][0]["eval_cases"]
    theirs = {cases[r["eval_case_index"]]["eval_case_id"]: r["response_candidate_results"][0]["metric_results"] for r in data["eval_case_results"]}

    assert sorted(ours) == sorted(theirs) == ["capital_lookup", "greeting", "weather_query"]
    for case_id, metrics in theirs.items():
        assert sorted(metrics) == sorted(ours[case_id]) == ["agent_turn_count", "custom_response_quality"]
        for name, want in metrics.items():
            assert want["error_message"] is None, want
            got = ours[case_id][name]
            assert (got["score"], got["status"]) == (want["score"], "PASSED"), (case_id, name)
            assert got["per_invocation"][-1]["details"].get("explanation") == want["explanation"]
    assert len({theirs[c]["custom_response_quality"]["score"] for c in theirs}) > 1  # the judge's scores differ by case
