"""agents-cli's eval config as a suite's criteria: read by agents-cli's rules, refused with evalgate's errors.

Every rule is checked against agents-cli's own `prepare_eval_metrics` where it has one: the
same file that agents-cli refuses is refused here (all problems at once, each with its file,
place, line and fix), and the names it accepts resolve to the same metrics.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from evalgate.config import read_simulator_config, read_test_config
from evalgate.criteria.acli_code_metric import AcliCodeMetric, is_transient
from evalgate.criteria.acli_llm_metric import AcliLLMMetric
from evalgate.criteria.acli_service_metric import AcliServiceMetric
from evalgate.errors import InputError


def write(tmp_path: Path, text: str, name: str = "eval_config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def problems(path: Path) -> str:
    with pytest.raises(InputError) as e:
        read_test_config(path)
    return str(e.value)


def agents_cli_refuses(path: Path) -> bool:
    """Whether agents-cli's own prepare_eval_metrics refuses the file."""
    click = pytest.importorskip("click")
    eval_utils = pytest.importorskip("google.agents.cli.eval.eval_utils")
    try:
        eval_utils.prepare_eval_metrics(config_path=str(path), metrics_str=None)
    except click.ClickException:
        return True
    return False


def test_the_scaffolds_config_and_every_kind_of_metric(tmp_path):
    (tmp_path / "judge.py").write_text("def evaluate(instance):\n    return 3\n", encoding="utf-8")
    path = write(tmp_path, """
metrics_to_run: [MULTI_TURN_TASK_SUCCESS, final_response_quality, My_Judge, counted, tone, safety]
custom_metrics:
  - name: My_Judge
    custom_function_file: judge.py
  - name: counted
    custom_function: "def evaluate(instance):\\n    return 1\\n"
    execution: local
  - name: tone
    prompt_template: "Rate {response} 1-5"
  - name: safety
    metric_spec_parameters: {policy: strict}
""")
    criteria = read_test_config(path)
    assert list(criteria) == ["multi_turn_task_success_v1", "final_response_quality_v1", "my_judge", "counted", "tone", "safety_v3"]
    assert isinstance(criteria["my_judge"], AcliCodeMetric) and isinstance(criteria["tone"], AcliLLMMetric)
    assert isinstance(criteria["safety_v3"], AcliServiceMetric)
    assert criteria["safety_v3"].options()["metric_spec_parameters"] == {"policy": "strict"}
    assert not agents_cli_refuses(path)
    assert read_simulator_config(path) is None  # agents-cli's config has no simulated user


def test_a_json_config_is_recognised_by_content(tmp_path):
    path = write(tmp_path, json.dumps({"metrics_to_run": ["hallucination"]}), "metrics.json")
    assert list(read_test_config(path)) == ["hallucination_v1"]
    adk = write(tmp_path, json.dumps({"criteria": {"response_match_score": 0.8}}), "test_config.json")
    assert list(read_test_config(adk)) == ["response_match_score"]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("metrics_to_run: []\n", "eval_config.yaml: metrics_to_run (line 1): names no metric"),
        ("metrics_to_run: [final_response_qualty]\n",
         "metrics_to_run[0] (line 1): unknown metric 'final_response_qualty': neither in custom_metrics nor a built-in. "
         "Declare it in custom_metrics, or use a built-in (`agents-cli eval metric list`). Did you mean 'final_response_quality'?"),
        ("metrics_to_run: [general_quality_v1]\ncustom_metrics:\n  - name: general_quality_v1\n    prompt_template: '{response}'\n",
         "custom_metrics[0].name (line 3): 'general_quality_v1' is a name the eval service reserves"),
        ("metrics_to_run: [m]\ncustom_metrics:\n  - name: m\n    prompt_template: '{response}'\n    rubric_group_name: g\n",
         "custom_metrics[0].rubric_group_name (line 5): 'rubric_group_name' is not supported"),
        ("metrics_to_run: [m]\ncustom_metrics:\n  - name: m\n",
         "custom_metrics[0] (line 3): custom metric 'm' has no prompt_template nor custom_function"),
        ("metrics_to_run: [m]\ncustom_metrics:\n  - name: m\n    custom_function_file: nowhere.py\n",
         "custom_metrics[0].custom_function_file (line 4): 'nowhere.py' not found"),
        ("metrics_to_run: [m]\ncustom_metrics:\n  - name: m\n    custom_function: 'def evaluate(x): return 1'\n    custom_function_file: a.py\n",
         "a code metric has custom_function or custom_function_file, not both"),
        ("metrics_to_run: [m]\ncustom_metrics:\n  - name: m\n    custom_function: 'def evaluate(x): return 1'\n    execution: sandbox\n",
         "custom_metrics[0].execution (line 5): invalid execution 'sandbox'"),
    ],
)
def test_what_agents_cli_refuses_is_refused_here_with_place_and_fix(tmp_path, text, expected):
    path = write(tmp_path, text)
    assert expected in problems(path)
    if "unknown metric" in expected:  # agents-cli passes the name on; the SDK fails on it when grading
        return
    assert agents_cli_refuses(path)


def test_remote_execution_is_refused_saying_evalgate_runs_code_locally(tmp_path):
    path = write(tmp_path, "metrics_to_run: [m]\ncustom_metrics:\n  - name: m\n    execution: remote\n    custom_function: |\n      def evaluate(instance):\n          return 1\n")
    text = problems(path)
    assert "custom_metrics[0].execution (line 4): 'execution: remote' runs the function in the eval service's sandbox; evalgate runs code metrics on this machine" in text
    assert "Remove 'execution: remote'" in text


def test_every_problem_at_once_with_lines(tmp_path):
    path = write(tmp_path, """metrics_to_run: [a, b, c, a_v9, d]
custom_metrics:
  - name: a
    custom_function: |
      def evaluate(instance)
          return 1
  - name: b
    custom_function: |
      def score(instance):
          return 1
  - name: c
    prompt_template: "{response}"
    judge_model_sampling_count: 0
    score_range: [5, 1]
  - name: c
    prompt_template: "{prompt}"
  - prompt_template: "{prompt}"
other: 1
""")
    text = problems(path)
    for expected in (
        "other (line 18): unknown key 'other'",
        "custom_metrics[3].name (line 15): 'c' is also custom_metrics[2]",
        "custom_metrics[4] (line 17): has no 'name'",
        "custom_metrics[0].custom_function (line 4): invalid Python: expected ':' (line 1)",
        "custom_metrics[1].custom_function (line 8): defines no function 'evaluate' at its top level",
        "custom_metrics[2].judge_model_sampling_count (line 13): judge_model_sampling_count 0 is not a whole number from 1 to 32",
        "custom_metrics[2].score_range (line 14): must be [lowest, highest] with lowest < highest",
        "metrics_to_run[3] (line 1): unknown metric 'a_v9'",
        "metrics_to_run[4] (line 1): unknown metric 'd'",
    ):
        assert expected in text, expected


def test_the_same_metric_twice_is_refused(tmp_path):
    path = write(tmp_path, "metrics_to_run: [safety, SAFETY_v1]\n")
    assert "metrics_to_run[1] (line 1): 'SAFETY_v1' is the metric safety_v1, which metrics_to_run[0] names already" in problems(path)


def test_a_yaml_syntax_error_names_its_line(tmp_path):
    path = write(tmp_path, "metrics_to_run: [a\ncustom_metrics: {\n")
    assert "eval_config.yaml: line" in problems(path) and "invalid YAML" in problems(path)


def test_validating_does_not_run_the_metric_code(tmp_path):
    path = write(tmp_path, "metrics_to_run: [m]\ncustom_metrics:\n  - name: m\n    custom_function: |\n"
                           "      import evalgate_no_such_module\n      def evaluate(instance):\n          return 1\n")
    [crit] = read_test_config(path).values()
    assert "evalgate_no_such_module" not in sys.modules
    with pytest.raises(RuntimeError, match="loading <custom_metric:m> failed: ModuleNotFoundError"):
        crit.function()


def test_transient_failures_are_retried_as_agents_cli_retries_them(tmp_path, monkeypatch):
    from google.agents.cli.eval import eval_utils

    class Status(Exception):
        def __init__(self, code):
            super().__init__(f"HTTP {code}")
            self.code = code

    def chained(inner):
        try:
            raise inner
        except Exception:
            try:
                raise RuntimeError("wrapped")
            except RuntimeError as outer:
                return outer

    for exc in (ConnectionError("reset"), TimeoutError(), Status(429), Status(503), Status(400), ValueError("x"),
                chained(Status(500)), chained(ValueError("y"))):
        assert is_transient(exc) == eval_utils._is_transient(exc), exc

    path = write(tmp_path, "metrics_to_run: [m]\ncustom_metrics:\n  - name: m\n    custom_function: |\n"
                           "      calls = []\n      def evaluate(instance):\n          calls.append(1)\n"
                           "          if len(calls) < 3:\n              raise ConnectionError('busy')\n          return len(calls)\n")
    [crit] = read_test_config(path).values()
    waits = []
    monkeypatch.setattr(AcliCodeMetric, "sleep", staticmethod(waits.append))
    monkeypatch.setattr(AcliCodeMetric, "jitter", staticmethod(lambda: 1.0))
    assert crit._call(crit.function(), {}) == 3
    assert waits == [1.0, 2.0]  # exponential, full jitter at its top here
    always = write(tmp_path, "metrics_to_run: [n]\ncustom_metrics:\n  - name: n\n    custom_function: |\n"
                             "      def evaluate(instance):\n          raise TimeoutError('slow judge')\n", "b.yaml")
    [crit] = read_test_config(always).values()
    waits.clear()
    with pytest.raises(TimeoutError):
        crit._call(crit.function(), {})
    assert waits == [1.0, 2.0, 4.0, 8.0]  # five attempts, the wait capped at 8 s


def test_a_suite_names_the_config_and_validate_reads_it(cli, tmp_path):
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "a.evalset.json").write_text(json.dumps({
        "eval_set_id": "a", "eval_cases": [{"eval_id": "c1", "conversation": [
            {"invocation_id": "i1", "user_content": {"role": "user", "parts": [{"text": "안녕"}]},
             "final_response": {"role": "model", "parts": [{"text": "안녕하세요"}]}}]}]}), encoding="utf-8")
    (tmp_path / "tests").mkdir()
    write(tmp_path / "tests", "metrics_to_run: [m]\ncustom_metrics:\n  - name: m\n    execution: remote\n    custom_function: 'def evaluate(i): return 1'\n")
    (tmp_path / "evalgate.yaml").write_text(
        "suites:\n  - name: app\n    evalsets: evals\n    actual: evals\n    criteria: tests/eval_config.yaml\n", encoding="utf-8")
    code, out, err = cli("validate", cwd=tmp_path)
    assert code == 2
    assert "tests/eval_config.yaml: custom_metrics[0].execution (line 4): 'execution: remote'" in err + out
    assert "Traceback" not in err + out


def test_validating_an_agents_cli_config_imports_no_heavy_sdk(tmp_path):
    """Reading every kind of metric (a file that imports google-genai, a prompt_template, a
    built-in) imports neither the SDKs nor the metric's own modules."""
    import subprocess

    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "a.evalset.json").write_text(json.dumps({"eval_set_id": "a", "eval_cases": []}), encoding="utf-8")
    shutil_src = Path(__file__).parent / "acli_metrics" / "response_quality.py"
    (tmp_path / "response_quality.py").write_text(shutil_src.read_text(encoding="utf-8"), encoding="utf-8")
    write(tmp_path, "metrics_to_run: [q, t, final_response_quality]\ncustom_metrics:\n"
                    "  - name: q\n    custom_function_file: response_quality.py\n"
                    "  - name: t\n    prompt_template: '{response}'\n")
    (tmp_path / "evalgate.yaml").write_text(
        "suites:\n  - name: app\n    evalsets: evals\n    actual: out.jsonl\n    criteria: eval_config.yaml\n", encoding="utf-8")
    code = (
        "import sys, contextlib, io\n"
        "from evalgate.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "    main(['validate'])\n"
        "from evalgate.config import load_config, read_test_config\n"
        "from pathlib import Path\n"
        "assert len(read_test_config(Path('eval_config.yaml'))) == 3\n"
        "print([m for m in ('google.genai', 'agentplatform', 'google.cloud.aiplatform', 'vertexai', 'google.adk') if m in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_agents_cli_metrics_on_an_adk_eval_set_are_an_input_error(cli, tmp_path):
    """Every case would be NOT_EVALUATED: the suite is refused at load, saying what to do."""
    import shutil

    from conftest import REPO

    project = tmp_path / "quickstart"
    shutil.copytree(REPO / "examples" / "quickstart", project)
    write(project, "metrics_to_run: [agent_turn_count]\ncustom_metrics:\n  - name: agent_turn_count\n"
                   "    custom_function: 'def evaluate(i): return 1'\n")
    (project / "evalgate.yaml").write_text(
        "suites:\n  - name: support-agent\n    evalsets: evals/support.evalset.json\n"
        "    actual: runs/support.inference.jsonl\n    criteria: eval_config.yaml\n", encoding="utf-8")
    code, out, err = cli("validate", cwd=project)
    assert code == 2, out + err
    assert ("evalgate.yaml: suites[0].criteria (line 5): agents-cli metrics (agent_turn_count) score agents-cli datasets, "
            "and evals/support.evalset.json is an ADK eval set") in err + out


def test_a_function_file_outside_the_project_is_refused(tmp_path):
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (tmp_path / "elsewhere.py").write_text("def evaluate(instance):\n    return 1\n", encoding="utf-8")
    (project / "inside.py").symlink_to(tmp_path / "elsewhere.py")
    path = write(project, "metrics_to_run: [a, b]\ncustom_metrics:\n  - name: a\n    custom_function_file: ../elsewhere.py\n"
                          "  - name: b\n    custom_function_file: inside.py\n")
    text = problems(path)
    assert "custom_metrics[0].custom_function_file (line 4): '../elsewhere.py'" in text and "leads outside the project" in text
    assert "custom_metrics[1].custom_function_file (line 6): 'inside.py'" in text  # a link that leads out
