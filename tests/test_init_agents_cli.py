"""`evalgate init` on projects that the real `agents-cli create` (google-agents-cli 1.11.0, the
reference peer) scaffolds here, offline: what init says, the evalgate.yaml it writes, and
workflows that fit the scaffold (compared with the scaffold's own pr_checks.yaml: the same
Workload Identity Federation variables and secrets, the same environment for the agent),
linted by actionlint. Then init -> validate -> run -> gate on the scaffold, its agent and its
LLM-judge metric answering through a fake Gemini on 127.0.0.1.

validate, run and gate stand on the datasets' loader and runners (agents_cli/dataset.py,
the runners' history) and the eval config's metrics (agents_cli/eval_config.py, criteria/acli_*).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agent_project import EVALSET
from conftest import check_snapshot
from fake_github import fake_github  # noqa: F401  (fixture)
from test_init import action_steps, actionlint, workflow

REPO = Path(__file__).resolve().parent.parent
SNAPSHOTS = Path(__file__).parent / "snapshots" / "init"
AGENTS_CLI = Path(sys.executable).parent / "agents-cli"
WIF = {"vars.GCP_PROJECT_NUMBER", "secrets.WIF_POOL_ID", "secrets.WIF_PROVIDER_ID", "secrets.GCP_SERVICE_ACCOUNT", "vars.CICD_PROJECT_ID"}

needs_agents_cli = pytest.mark.skipif(not AGENTS_CLI.is_file(), reason="agents-cli (google-agents-cli, a test extra) is not installed beside this Python")


def create(parent: Path, name: str, runner: str) -> Path:
    """`agents-cli create` as a new user runs it (offline: -s skips the checks that need the network)."""
    parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HOME": str(parent / "home")}  # agents-cli writes nothing into the real home
    done = subprocess.run(
        [str(AGENTS_CLI), "create", name, "-a", "adk", "-d", "cloud_run", "--cicd-runner", runner, "-y", "-s"],
        cwd=parent, env=env, capture_output=True, text=True, encoding="utf-8", timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return parent / name


@pytest.fixture(scope="module")
def scaffold(tmp_path_factory) -> Path:
    if not AGENTS_CLI.is_file():
        pytest.skip("agents-cli is not installed")
    return create(tmp_path_factory.mktemp("acli"), "myagent", "github_actions")


@pytest.fixture
def project(scaffold, tmp_path) -> Path:
    """A fresh copy of the scaffold for one test (init writes into it)."""
    return Path(shutil.copytree(scaffold, tmp_path / "myagent", symlinks=True))


def refs(text: str) -> set[str]:
    return set(re.findall(r"\$\{\{\s*((?:vars|secrets)\.[A-Z_]+)\s*\}\}", text))


# --- what init says and writes ------------------------------------------------------------------


@needs_agents_cli
def test_init_says_what_it_found_wrote_and_what_comes_next(project, cli):
    code, out, err = cli("init", "--branch", "main", cwd=project)
    assert (code, err) == (0, ""), out + err
    check_snapshot(SNAPSHOTS / "agents_cli.txt", out)
    config = yaml.safe_load((project / "evalgate.yaml").read_text(encoding="utf-8"))
    assert config == {
        "version": 1,
        "suites": [{"name": "app", "evalsets": ["tests/eval/datasets"], "agent": {"adk": "app"}, "criteria": "tests/eval/eval_config.yaml"}],
    }
    # the case count is the dataset's own eval_cases
    cases = json.loads((project / "tests" / "eval" / "datasets" / "basic-dataset.json").read_text(encoding="utf-8"))["eval_cases"]
    assert f"tests/eval/datasets/basic-dataset.json: {len(cases)} cases" in out


def test_the_docs_show_what_init_says_and_writes():
    """docs/agents-cli.md quotes init's output on the scaffold (cut with "...") and the config
    it writes: both must be what init gives (its snapshot, the test above)."""
    page = (REPO / "docs" / "agents-cli.md").read_text(encoding="utf-8")
    said = re.search(r"```text\n(found an agents-cli project.*?)```", page, re.S).group(1).splitlines()
    snapshot = (SNAPSHOTS / "agents_cli.txt").read_text(encoding="utf-8").splitlines()
    shown = [line for line in said if line != "..."]
    assert shown == snapshot[: len(shown)]
    written = yaml.safe_load(re.search(r"```yaml\n(version: 1\n.*?)```", page, re.S).group(1))
    assert written == {
        "version": 1,
        "suites": [{"name": "app", "evalsets": ["tests/eval/datasets"], "agent": {"adk": "app"}, "criteria": "tests/eval/eval_config.yaml"}],
    }


@needs_agents_cli
def test_the_workflow_docs_show_is_the_one_init_writes(project, cli):
    """docs/workflows.md's agents-cli workflow: its permissions and every step it shows are the
    ones init writes (step names and comments aside)."""
    assert cli("init", cwd=project)[0] == 0
    written = workflow(project / ".github" / "workflows" / "evalgate-pr.yml")
    page = (REPO / "docs" / "workflows.md").read_text(encoding="utf-8").split("## An agents-cli project", 1)[1]
    shown = yaml.safe_load(re.search(r"```yaml\n(.*?)```", page, re.S).group(1))
    assert shown["permissions"] == written["permissions"]
    steps = [{k: v for k, v in step.items() if k != "name"} for step in written["jobs"]["gate"]["steps"]]
    for step in shown["jobs"]["gate"]["steps"]:
        assert {k: v for k, v in step.items() if k != "name"} in steps, step


@pytest.mark.parametrize(
    "action, expected",
    [
        ("OWNER/evalgate@v1", "adk-evalgate @ git+https://github.com/OWNER/evalgate@v1"),
        ("octo/eval.gate@0123abc", "adk-evalgate @ git+https://github.com/octo/eval.gate@0123abc"),
        ("octo/evalgate/sub@v2", "adk-evalgate @ git+https://github.com/octo/evalgate@v2"),
        ("docker://ghcr.io/octo/evalgate:1", "adk-evalgate=={version}"),
        ("./", "adk-evalgate=={version}"),
    ],
)
def test_the_agent_step_installs_the_actions_own_evalgate(action, expected):
    from evalgate import __version__
    from evalgate.scaffold import evalgate_requirement

    assert evalgate_requirement(action) == expected.format(version=__version__)


@needs_agents_cli
def test_the_workflows_fit_the_scaffold(project, cli):
    assert cli("init", cwd=project)[0] == 0
    theirs_text = (project / ".github" / "workflows" / "pr_checks.yaml").read_text(encoding="utf-8")
    theirs = workflow(project / ".github" / "workflows" / "pr_checks.yaml")
    [their_auth] = [s for s in theirs["jobs"]["test"]["steps"] if "google-github-actions/auth" in s.get("uses", "")]
    [their_tests] = [s for s in theirs["jobs"]["test"]["steps"] if "tests/integration" in s.get("run", "")]
    assert WIF <= refs(theirs_text)  # what this test holds the workflows to is what agents-cli writes

    inputs = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))["inputs"]
    names = ("evalgate-pr.yml", "evalgate-baseline.yml", "evalgate-nightly.yml")
    for name in names:
        wf = workflow(project / ".github" / "workflows" / name)
        assert wf["permissions"]["id-token"] == "write", name
        [job] = wf["jobs"].values()
        steps = job["steps"]
        assert steps[0]["uses"].startswith("actions/checkout@")  # before auth: checkout cleans the workspace
        [auth] = [s for s in steps if "google-github-actions/auth" in s.get("uses", "")]
        assert {k: auth["with"][k] for k in their_auth["with"]} == their_auth["with"], name  # the scaffold's provider, account, project
        [install] = [s for s in steps if s.get("run") == "uv sync --locked"]
        [agent] = [s for s in steps if "evalgate run" in s.get("run", "")]
        assert steps.index(auth) < steps.index(install) < steps.index(agent)
        assert agent["env"] == their_tests["env"]  # the environment the scaffold's integration tests run the agent in
        assert f"--out {steps[steps.index(agent)]['run'].split('--out ')[1].split()[0]}" in agent["run"]
        [step] = action_steps(wf)
        assert steps.index(step) == steps.index(agent) + 1
        assert set(step["with"]) <= set(inputs), name
        assert step["with"]["resume"] == agent["run"].split("--out ")[1].split()[0]  # the action reuses those runs
        assert step["env"] == their_tests["env"]  # the eval config's metrics on Google Cloud too
        assert "install" not in step["with"]  # the project's lock never goes into the action's container
        assert f'--with "adk-evalgate @ git+https://github.com/{step["uses"]}" evalgate run' in agent["run"]  # the action's own code
    assert refs("".join((project / ".github" / "workflows" / n).read_text(encoding="utf-8") for n in names)) == WIF


@needs_agents_cli
def test_the_workflows_pass_actionlint(project, cli, tmp_path):
    lint = actionlint()
    sha = "octo/evalgate@0123456789abcdef0123456789abcdef01234567"
    assert cli("init", "--action", sha, cwd=project)[0] == 0
    assert f'--with "adk-evalgate @ git+https://github.com/{sha}"' in (project / ".github" / "workflows" / "evalgate-pr.yml").read_text(encoding="utf-8")
    mono = tmp_path / "mono"  # the project in a subfolder of its repository
    shutil.copytree(project, mono / "에이전트", ignore=shutil.ignore_patterns(".github", "evalgate.yaml"))
    (mono / ".git").mkdir()
    code, out, err = cli("init", str(mono / "에이전트"), cwd=tmp_path)
    assert code == 0, out + err
    pr = workflow(mono / ".github" / "workflows" / "evalgate-pr.yml")
    assert [s["working-directory"] for s in pr["jobs"]["gate"]["steps"] if "run" in s] == ["에이전트", "에이전트"]
    files = [str(p) for r in (project, mono) for p in sorted((r / ".github" / "workflows").glob("evalgate-*.yml"))]
    assert len(files) == 6
    done = subprocess.run([lint, "-no-color", *files], capture_output=True, text=True, encoding="utf-8", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


@needs_agents_cli
def test_a_cloud_build_scaffold_gets_github_workflows_and_says_what_they_need(tmp_path, cli):
    root = create(tmp_path, "cbagent", "google_cloud_build")
    assert (root / ".cloudbuild").is_dir() and not (root / ".github").exists()
    code, out, err = cli("init", "--dry-run", cwd=root)
    assert code == 0, out + err
    assert "  CI: Cloud Build; evalgate's gate is a GitHub Action, so init writes GitHub workflows all the same\n" in out
    assert "create them (agents-cli's GitHub Actions setup does, deployment/terraform/cicd/wif.tf and github.tf)" in out
    assert "would write .github/workflows/evalgate-pr.yml" in out
    assert not (root / "evalgate.yaml").exists()


# --- what init refuses --------------------------------------------------------------------------


@needs_agents_cli
def test_no_dataset_names_the_folder_and_the_fix(project, cli):
    datasets = project / "tests" / "eval" / "datasets"
    (datasets / "basic-dataset.json").unlink()
    (datasets / "notes.json").write_text('{"title": "not a dataset"}', encoding="utf-8")
    code, out, err = cli("init", cwd=project)
    assert code == 2 and out == ""
    assert "error: agents-cli-manifest.yaml: an agents-cli project without a dataset: no agents-cli dataset (a JSON file of eval_cases) in tests/eval/datasets" in err
    assert "tests/eval/datasets/notes.json: not an agents-cli dataset" in err and "agents-cli eval dataset synthesize" in err
    assert not (project / "evalgate.yaml").exists() and not (project / ".github" / "workflows" / "evalgate-pr.yml").exists()


@needs_agents_cli
@pytest.mark.parametrize(
    "change, expected",
    [
        ('agent_directory: "agent"', 'agents-cli-manifest.yaml: agent_directory: names agent, which is not a folder here. Set agent_directory'),
        ('language: "go"', "agents-cli-manifest.yaml: language: the agent is written in go; evalgate runs Python ADK agents in-process"),
    ],
)
def test_a_manifest_init_cannot_follow(project, cli, change, expected):
    manifest = project / "agents-cli-manifest.yaml"
    key = change.split(":")[0]
    manifest.write_text(re.sub(rf"(?m)^{key}: .*$", change, manifest.read_text(encoding="utf-8")), encoding="utf-8")
    code, out, err = cli("init", cwd=project)
    assert code == 2 and out == "" and "Traceback" not in err
    assert expected in err


@needs_agents_cli
def test_init_above_the_project_points_to_it(project, cli, tmp_path):
    """A repository holding the scaffold in a subfolder: init at the repository's root finds the
    agent folder but no ADK eval set, and says where the agents-cli project is."""
    repo = tmp_path / "repo"
    shutil.move(str(project), str(repo / "services" / "myagent"))
    code, out, err = cli("init", cwd=repo)
    assert code == 2 and out == ""
    assert "error: no eval set found in" in err
    assert "agents-cli projects are in services/myagent: run evalgate init in one of them (or pass it: evalgate init services/myagent)." in err
    code, out, err = cli("init", "services/myagent", cwd=repo)
    assert code == 0 and "found an agents-cli project (services/myagent/agents-cli-manifest.yaml: myagent" in out, out + err


@needs_agents_cli
def test_agents_cli_grades_are_offered_as_the_first_baseline(project, cli):
    grades = project / "artifacts" / "grade_results"
    grades.mkdir(parents=True)
    for stamp in ("20261127_093000", "20261127_193029"):
        (grades / f"results_{stamp}.json").write_text("{}", encoding="utf-8")
    code, out, _ = cli("init", "--dry-run", "--branch", "trunk", cwd=project)
    assert code == 0
    assert "  agents-cli's grades can be the first baseline: evalgate baseline import --agents-cli artifacts/grade_results/results_20261127_193029.json --commit trunk\n" in out


@needs_agents_cli
def test_korean_dataset_names_and_more_datasets(project, cli):
    datasets = project / "tests" / "eval" / "datasets"
    cases = [{"eval_case_id": "날씨", "prompt": {"role": "user", "parts": [{"text": "서울 날씨 어때?"}]}}, {"prompt": {"role": "user", "parts": [{"text": "東京の天気は?"}]}}]
    (datasets / "한국어-データ.json").write_text(json.dumps({"eval_cases": cases}, ensure_ascii=False), encoding="utf-8")
    (datasets / "older").mkdir()  # a folder in `evalsets` is read through, ADK eval sets included
    shutil.copy(EVALSET, datasets / "older" / "weather.evalset.json")
    (datasets / "older" / "broken.json").write_text("{not json", encoding="utf-8")
    code, out, _ = cli("init", "--dry-run", cwd=project)
    assert code == 0
    assert (
        "    tests/eval/datasets/basic-dataset.json: 3 cases\n"
        "    tests/eval/datasets/older/weather.evalset.json: 3 cases (an ADK eval set)\n"
        "    tests/eval/datasets/한국어-データ.json: 2 cases\n"
        "    not a dataset: tests/eval/datasets/older/broken.json: is not JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1)), "
        "and the suite's loader refuses it: fix it or move it out of the folder\n"
    ) in out
    assert "    evalsets: [tests/eval/datasets]  # 3 datasets, 8 cases" in out


# --- init -> validate -> run -> gate ----------------------------------------------------------------


@needs_agents_cli
def test_validate_reads_the_config_init_wrote(project, cli):
    assert cli("init", cwd=project)[0] == 0
    code, out, err = cli("validate", cwd=project)
    assert (code, err) == (0, ""), out + err
    assert re.search(r"evalgate.yaml: OK, 1 suites?, 3 cases", out), out
    assert "app: runs the agent (adk) on 3 cases" in out


def scaffold_model(body) -> object:
    """The fake Gemini for the scaffold: its agent (get_weather for San Francisco, the capital of
    France from what it knows) and the scaffold's LLM judge (tests/eval/response_quality.py asks
    for JSON {score, explanation} on a 1-5 scale). An agent told to be terse (the pull request's
    change to app/agent.py) answers "I don't know." to everything; the judge gives that a 1."""
    from agent_model import _reply
    from fake_gemini import prompt_text

    if ((body or {}).get("generationConfig") or {}).get("responseMimeType") == "application/json":
        answer = prompt_text(body).split("Final Response:", 1)[-1].split("\n", 1)[0]
        return {"score": 1 if "don't know" in answer else 5, "explanation": f"judged: {answer.strip()[:60]}"}
    instruction = json.dumps((body or {}).get("systemInstruction") or {})
    contents = (body or {}).get("contents") or []
    parts = (contents[-1] if contents else {}).get("parts") or []
    if "terse" in instruction:
        return _reply([{"text": "I don't know."}])
    results = [p["functionResponse"] for p in parts if "functionResponse" in p]
    if results:
        return _reply([{"text": f"In San Francisco: {(results[0].get('response') or {}).get('result')}"}])
    text = " ".join(p.get("text", "") for p in parts)
    if "San Francisco" in text:
        return _reply([{"functionCall": {"name": "get_weather", "args": {"query": "San Francisco"}}}])
    if "capital of France" in text:
        return _reply([{"text": "The capital of France is Paris."}])
    return _reply([{"text": "I can tell you the weather and the time in a city."}])


def _agent_requests(fake) -> int:
    return sum(1 for r in fake.requests if "tools" in (r.body or {}))


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=root, check=True, capture_output=True, text=True)
    return done.stdout.strip()


@needs_agents_cli
@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_init_validate_run_gate_on_the_scaffold(project, cli, monkeypatch):
    """The whole way a team with an agents-cli project goes: init, validate, run (the agent and
    the eval config's LLM judge on the fake Gemini) as the workflows run it (the agent's runs
    first, then the action's run reusing them), the gate before main has a baseline (it
    records), then a pull request that makes the agent worse, gated against main's baseline."""
    from fake_gemini import FakeGemini, clear_judge_env

    # The scaffold's 3 cases are too few for the gate to rule anything out: a team adds its own.
    questions = ["서울 날씨 어때?", "東京の天気は?", "What time is it in San Francisco?", "부산에서 뭐 먹을까?", "京都のおすすめは?", "Plan a day in Lisbon.", "추천 영화 있어?", "Tell me a fun fact."]
    cases = [{"eval_case_id": f"q{i}", "prompt": {"role": "user", "parts": [{"text": q}]}} for i, q in enumerate(questions)]
    (project / "tests" / "eval" / "datasets" / "daily.json").write_text(json.dumps({"eval_cases": cases}, ensure_ascii=False), encoding="utf-8")
    code, out, err = cli("init", cwd=project)
    assert code == 0 and "tests/eval/datasets/daily.json: 8 cases" in out, out + err
    # What init advises for the scaffold's LLM judge: its scale and that it is a judge.
    assert "custom_response_quality: no score_range" in out
    config = project / "tests" / "eval" / "eval_config.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("custom_function_file: response_quality.py\n", "custom_function_file: response_quality.py\n    score_range: [1, 5]\n    judge: true\n"), encoding="utf-8")
    code, again, err = cli("init", "--dry-run", cwd=project)
    assert code == 0 and "no score_range" not in again, again + err
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "the scaffold, its datasets, evalgate.yaml and the workflows")
    code, out, err = cli("validate", cwd=project)
    assert (code, err) == (0, ""), out + err
    assert re.search(r"evalgate.yaml: OK, 1 suites?, 11 cases", out), out

    fake = FakeGemini(scaffold_model).start()
    fake.api_key = None
    try:
        clear_judge_env(monkeypatch)
        monkeypatch.setenv("GOOGLE_API_KEY", "fake-key")  # the agent's model and the judge: the Gemini API, here
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
        monkeypatch.setenv("ADK_DISABLE_LOAD_DOTENV", "1")  # the scaffold's .env points at Google Cloud
        # The workflows' first step: the agent runs in the project's environment.
        code, out, err = cli("run", "--out", "evalgate-agent-runs", "--no-color", cwd=project)
        assert code == 0, out + err
        assert _agent_requests(fake) >= 12  # 11 cases, one with a tool call
        first = json.loads((project / "evalgate-agent-runs" / "results.json").read_text(encoding="utf-8"))
        [suite] = first["suites"]
        assert sorted(c["eval_id"] for c in suite["cases"]) == sorted(["capital_lookup", "greeting", "weather_query", *(c["eval_case_id"] for c in cases)])
        scores = {c["eval_id"]: c["criteria"]["custom_response_quality"]["score"] for c in suite["cases"]}
        assert set(scores.values()) == {5}

        # The action's step (resume): every run reused, none run again; the same scores.
        fake.reset()
        code, out, err = cli("run", "--resume", "evalgate-agent-runs", "--out", "main", "--no-color", cwd=project)
        assert code == 0, out + err
        assert _agent_requests(fake) == 0 and fake.requests  # only the judge was asked
        again = json.loads((project / "main" / "results.json").read_text(encoding="utf-8"))
        assert {c["eval_id"]: c["criteria"]["custom_response_quality"]["score"] for c in again["suites"][0]["cases"]} == scores

        # Before main has a baseline, the gate records: no threshold to fail on.
        code, out, err = cli("gate", "--out", "first", "--no-color", "-q", cwd=project)
        assert code == 0, out + err
        assert "evalgate gate: PASS against absolute thresholds (no baseline)" in out
        main_sha = git(project, "rev-parse", "HEAD")
        code, out, err = cli("baseline", "save", "--results", "main/results.json", "--commit", main_sha, "--ref", "refs/heads/main", cwd=project)
        assert code == 0, out + err

        # A pull request that makes the agent worse, gated against main's baseline.
        git(project, "checkout", "-q", "-b", "terse")
        agent_py = project / "app" / "agent.py"
        agent_py.write_text(agent_py.read_text(encoding="utf-8").replace('instruction="', 'instruction="Be terse. '), encoding="utf-8")
        git(project, "commit", "-q", "-am", "a terser agent")
        code, out, err = cli("gate", "--out", "pr", "--no-color", cwd=project)
    finally:
        fake.stop()
    assert code == 1, out + err
    assert "evalgate gate: FAIL against the baseline" in out
    assert "custom_response_quality" in out.split("evalgate gate: FAIL", 1)[1]


@needs_agents_cli
def test_the_workflows_two_steps_on_the_scaffold(project, cli, monkeypatch, fake_github, tmp_path, capsys):  # noqa: F811
    """What evalgate-baseline.yml and evalgate-pr.yml do, step by step: the agent's step
    (`evalgate run` in the project's environment, GITHUB_SHA set as on the runner), then the
    action's entrypoint with `resume` on the push and on the pull request, against a fake
    GitHub. The action makes no agent call: it scores the step's runs, saves main's baseline,
    and on the pull request of a worse agent comments and sets a failed status."""
    from fake_gemini import FakeGemini, clear_judge_env
    from test_entrypoint import PR, Action, _pull_request, _push

    questions = ["서울 날씨 어때?", "東京の天気は?", "부산에서 뭐 먹을까?", "京都のおすすめは?", "Plan a day in Lisbon.", "추천 영화 있어?", "Tell me a fun fact.", "What is 2 + 2?"]
    cases = [{"eval_case_id": f"q{i}", "prompt": {"role": "user", "parts": [{"text": q}]}} for i, q in enumerate(questions)]
    (project / "tests" / "eval" / "datasets" / "daily.json").write_text(json.dumps({"eval_cases": cases}, ensure_ascii=False), encoding="utf-8")
    assert cli("init", cwd=project)[0] == 0
    flow = workflow(project / ".github" / "workflows" / "evalgate-pr.yml")
    [agent_step] = [s for s in flow["jobs"]["gate"]["steps"] if "evalgate run" in s.get("run", "")]
    runs = agent_step["run"].split("--out ")[1].split()[0]
    [step] = action_steps(flow)
    assert step["with"]["resume"] == runs

    action = Action(fake_github, project, tmp_path / "runner", capsys)
    (tmp_path / "runner").mkdir()
    config = (project / "evalgate.yaml").read_bytes()
    base = fake_github.add_commit([], "main", files={"evalgate.yaml": config})
    fake_github.refs["refs/heads/main"] = base
    fake = FakeGemini(scaffold_model).start()
    fake.api_key = None
    try:
        clear_judge_env(monkeypatch)
        monkeypatch.setenv("GOOGLE_API_KEY", "fake-key")
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
        monkeypatch.setenv("ADK_DISABLE_LOAD_DOTENV", "1")

        def agent_step_runs(sha: str) -> None:
            shutil.rmtree(project / runs, ignore_errors=True)  # each job starts from a fresh checkout
            monkeypatch.setenv("GITHUB_SHA", sha)
            code, out, err = cli("run", "--config", "evalgate.yaml", "--out", runs, "--no-color", cwd=project)
            assert code in (0, 1), out + err
            monkeypatch.delenv("GITHUB_SHA")

        agent_step_runs(base)  # evalgate-baseline.yml on the push to main
        before = _agent_requests(fake)
        assert before >= 12
        assert action("push", _push(base), sha=base, resume=runs) == 0, action.stdout
        assert _agent_requests(fake) == before  # the action ran no agent: it reused the step's runs
        assert any(p.startswith("baselines/") for p in fake_github.branch_files("evalgate-data"))

        agent_py = project / "app" / "agent.py"  # the pull request: a terser agent
        agent_py.write_text(agent_py.read_text(encoding="utf-8").replace('instruction="', 'instruction="Be terse. '), encoding="utf-8")
        head = fake_github.add_commit([base], "a terser agent", files={"evalgate.yaml": config})
        agent_step_runs(head)  # evalgate-pr.yml
        before = _agent_requests(fake)
        code = action("pull_request", _pull_request(head, base), sha=head, ref=f"refs/pull/{PR}/merge", resume=runs)
        assert _agent_requests(fake) == before
    finally:
        fake.stop()
    assert code == 1, action.stdout
    [comment] = fake_github.issue_comments(PR)
    assert comment["body"].splitlines()[1].startswith("**evalgate FAIL**")
    assert "- app: FAIL: custom\\_response\\_quality: mean score dropped by 4.000 (5.000 to 1.000" in comment["body"]
    assert [s["state"] for s in fake_github.statuses[head]] == ["failure"]
