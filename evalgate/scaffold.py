"""`evalgate init`: find an ADK project's agents and eval sets, and write the config and the
three workflows that gate on them, without ever overwriting a file.

Agents are found as `adk eval` loads them, by reading the code (nothing is imported or run):
a folder whose `__init__.py` defines `root_agent` (or `get_agent_async`, or `app = App(...)`),
or imports the folder's `agent` module (`from . import agent`) whose `agent.py` defines it.
A folder inside an agent's folder (its sub-agents' packages) is part of that agent, not
another one. Eval sets are the `*.evalset.json` and `*.test.json` files that hold ADK eval
cases; a `test_config.json` beside them gives their criteria, as in `adk eval`. A project
that keeps its criteria in an `eval_config.json` instead (passed to `adk eval
--config_file_path`) gets it as the suite's `criteria`. Virtual environments, `.git`,
`node_modules` and other hidden or generated folders are not searched.

A project `agents-cli create` scaffolded (an `agents-cli-manifest.yaml` at the root, datasets
beside it) is read as agents-cli reads it instead (evalgate.agents_cli.project): its agent
directory, its datasets folder and eval config as one suite, and workflows that sign in and
install as the scaffold's own do.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Optional, TextIO

import yaml

from evalgate.config import CONFIG_NAMES
from evalgate.errors import InputError, Problem, display_path
from evalgate.loaders.evalsets import EVALSET_SUFFIXES, load_evalset, test_config_beside

if TYPE_CHECKING:
    from evalgate.agents_cli.project import AcliProject

DEFAULT_ACTION = "OWNER/evalgate@v1"
SKIPPED_DIRS = ("node_modules", "__pycache__", "site-packages", "build", "dist", "evalgate-results")
LOOKED_FOR_AGENTS = "folders whose agent.py or __init__.py defines root_agent, as `adk eval` loads them"
LOOKED_FOR_EVALSETS = "*.evalset.json and *.test.json files holding ADK eval cases"
NOT_SEARCHED = ".git, node_modules, virtual environments, hidden folders, build, dist"
WORKFLOWS = ("evalgate-pr.yml", "evalgate-baseline.yml", "evalgate-nightly.yml")
NIGHTLY_CRON = "17 3 * * *"


# --- what is in the project --------------------------------------------------------------


@dataclass
class Agent:
    folder: Path
    source: str  # the file and name that make it an agent, e.g. "agent.py: root_agent"


@dataclass
class EvalSetFile:
    path: Path
    cases: int
    app_names: set[str] = field(default_factory=set)  # the cases' session_input.app_name


@dataclass
class Found:
    root: Path
    agents: list[Agent] = field(default_factory=list)
    evalsets: list[EvalSetFile] = field(default_factory=list)
    near_misses: list[tuple[Path, str]] = field(default_factory=list)  # agent-like folders evalgate cannot run, and why
    skipped: list[tuple[Path, str]] = field(default_factory=list)  # eval-set-named files that are not eval sets, and why
    acli_projects: list[Path] = field(default_factory=list)  # folders below the root holding an agents-cli-manifest.yaml


def _pruned(parent: Path, name: str) -> bool:
    if name.startswith(".") or name in SKIPPED_DIRS or name.endswith(".egg-info"):
        return True
    folder = parent / name
    return (folder / "pyvenv.cfg").is_file() or (folder / "conda-meta").is_dir()


def discover(root: Path) -> Found:
    """Every agent folder and eval set under `root`, with the near misses worth a word."""
    found = Found(root)
    for here, dirs, files in os.walk(root):
        folder = Path(here)
        dirs[:] = sorted(d for d in dirs if not _pruned(folder, d))
        names = set(files)
        if "agents-cli-manifest.yaml" in names and folder != root:
            found.acli_projects.append(folder)
        if not _inside_an_agent(folder, found):
            _agent_in(folder, names, found)
        for name in sorted(files):
            if name.endswith(EVALSET_SUFFIXES):
                _evalset_in(folder / name, found)
    return found


def _inside_an_agent(folder: Path, found: Found) -> bool:
    """A package inside an agent's folder (or one that nearly is) is that agent's: its
    sub-agents, tools or prompts. `adk eval` loads the agent folder, never these."""
    outer = [a.folder for a in found.agents] + [p for p, _ in found.near_misses]
    return any(folder != o and folder.is_relative_to(o) for o in outer)


def _bound_names(tree: ast.Module) -> dict[str, ast.AST]:
    """Names a module binds at its top level (also inside if/try/with), with the binding node."""
    out: dict[str, ast.AST] = {}

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name):
                            out[name.id] = node
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                out[node.target.id] = node
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out[node.name] = node
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    out[alias.asname or alias.name.split(".")[0]] = node
            elif isinstance(node, (ast.If, ast.Try, ast.With, ast.AsyncWith)):
                for part in ("body", "orelse", "finalbody"):
                    visit(getattr(node, part, []) or [])
                for handler in getattr(node, "handlers", []) or []:
                    visit(handler.body)

    visit(tree.body)
    return out


def _agent_name(bound: dict[str, ast.AST]) -> Optional[str]:
    """The name `adk eval` would take the agent from: app (an App), root_agent, get_agent_async."""
    app = bound.get("app")
    if isinstance(app, ast.Assign) and isinstance(app.value, ast.Call):
        func = app.value.func
        if (func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")) == "App":
            return "app"
    for name in ("root_agent", "get_agent_async"):
        if name in bound:
            return name
    return None


def _imports_agent_module(tree: ast.Module, package: str) -> bool:
    """Does the package's __init__.py import its `agent` submodule (which makes it `package.agent`)?"""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and (node.module == "agent" or (node.module is None and any(a.name == "agent" for a in node.names))):
                return True
            if node.level == 0 and (node.module == f"{package}.agent" or (node.module == package and any(a.name == "agent" for a in node.names))):
                return True
        elif isinstance(node, ast.Import) and any(a.name == f"{package}.agent" for a in node.names):
            return True
    return False


def _parse(path: Path) -> tuple[Optional[ast.Module], Optional[str]]:
    try:
        return ast.parse(path.read_bytes(), filename=str(path)), None
    except SyntaxError as e:
        return None, f"{path.name} line {e.lineno}: {e.msg}"
    except (OSError, ValueError) as e:
        return None, f"{path.name}: {e}"


def _agent_in(folder: Path, names: set[str], found: Found) -> None:
    init_tree = agent_tree = None
    if "__init__.py" in names:
        init_tree, error = _parse(folder / "__init__.py")
        if error:
            found.near_misses.append((folder, f"cannot read {error}"))
            return
    if "agent.py" in names:
        agent_tree, error = _parse(folder / "agent.py")
        if error:
            found.near_misses.append((folder, f"cannot read {error}"))
            return
    init_name = _agent_name(_bound_names(init_tree)) if init_tree else None
    agent_name = _agent_name(_bound_names(agent_tree)) if agent_tree else None
    if init_tree and _imports_agent_module(init_tree, folder.name):
        if agent_name:
            found.agents.append(Agent(folder, f"agent.py: {agent_name}"))
        elif init_name:
            found.agents.append(Agent(folder, f"__init__.py: {init_name}"))
        elif agent_tree:
            found.near_misses.append((folder, "agent.py defines no root_agent; define root_agent = Agent(...) there"))
        return
    if init_name:
        found.agents.append(Agent(folder, f"__init__.py: {init_name}"))
    elif agent_name and init_tree is None:
        found.near_misses.append((folder, f"agent.py defines {agent_name} but the folder has no __init__.py; add one holding `from . import agent`"))
    elif agent_name:
        found.near_misses.append((folder, f"agent.py defines {agent_name} but __init__.py does not import it; add `from . import agent` to __init__.py"))
    elif "root_agent.yaml" in names:
        found.near_misses.append(
            (folder, "an agent defined in root_agent.yaml: evalgate runs Python agents in-process; serve it with `adk api_server` and use agent: {url: ...}")
        )


def _evalset_in(path: Path, found: Found) -> None:
    """Read the file with the loader `evalgate run` uses: what init accepts, run can load."""
    try:
        loaded = load_evalset(path)
    except InputError as e:  # the loader's own words, without the file it names (the note names it)
        found.skipped.append((path, "; ".join(str(Problem(None, p.where, p.what, p.fix)) for p in e.problems)))
        return
    cases = loaded.eval_set.eval_cases
    apps = {c.session_input.app_name for c in cases if c.session_input is not None and c.session_input.app_name}
    found.evalsets.append(EvalSetFile(path, len(cases), apps))


def assign(found: Found) -> tuple[dict[int, list[EvalSetFile]], list[tuple[EvalSetFile, str]]]:
    """Which agent runs each eval set (by agent index), and the eval sets no single agent claims.

    The agent whose folder holds the eval set; else the one its cases name as app_name;
    else the one whose folder name is in its path; else the one nearest to it in the tree.
    """
    out: dict[int, list[EvalSetFile]] = {i: [] for i in range(len(found.agents))}
    left: list[tuple[EvalSetFile, str]] = []
    for es in found.evalsets:
        scores = []
        for i, agent in enumerate(found.agents):
            inside = es.path.is_relative_to(agent.folder)
            depth = len(agent.folder.parts) if inside else 0
            named = agent.folder.name in es.app_names
            in_path = agent.folder.name in es.path.relative_to(found.root).parts[:-1]
            common = len(os.path.commonpath([es.path.parent, agent.folder.parent]).split(os.sep))
            scores.append(((inside, depth, named, in_path, common), i))
        scores.sort(reverse=True)
        if len(scores) == 1 or scores[0][0] != scores[1][0]:
            out[scores[0][1]].append(es)
        else:
            tied = sorted(found.agents[i].folder.name for s, i in scores if s == scores[0][0])
            left.append((es, f"could belong to {', '.join(tied)}"))
    return out, left


# --- what gets written -------------------------------------------------------------------


_SHELL_SAFE = re.compile(r"[^\s'\"$`\\|&;<>()*?\[\]#~!{}]+")  # Korean, Japanese and the like need no quotes
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*")
_YAML_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"}


def _scalar(text: str) -> str:
    """A YAML scalar for `text`: plain when that reads back as the same string, else quoted."""
    if _PLAIN.fullmatch(text) and text.lower() not in _YAML_WORDS:
        return text
    return json.dumps(text, ensure_ascii=False)


@dataclass
class Suite:
    name: str
    folder: Path  # the agent's
    agent: str  # the agent folder, relative to the config
    evalsets: list[str]  # folders or files, relative to the config
    files: list[EvalSetFile]
    criteria: list[str]  # test_config.json files in use, relative to the config
    criteria_file: Optional[str] = None  # an eval_config.json written as the suite's `criteria`, relative to the config
    unused_configs: list[tuple[str, str]] = field(default_factory=list)  # eval configs found but not written, and why


EVAL_CONFIG = "eval_config.json"


def eval_config_near(path: Path, root: Path) -> Optional[Path]:
    """The eval config a project keeps for `adk eval --config_file_path` rather than beside the
    eval set as test_config.json: an `eval_config.json` in the eval set's folder or the one
    above it (a common template keeps eval sets in tests/eval/evalsets/ and the config in
    tests/eval/), inside the project, holding a `criteria` object. ADK itself never looks
    for it, so without `criteria:` evalgate, like `adk eval` without the flag, would use
    ADK's defaults."""
    for folder in (path.parent, path.parent.parent):
        candidate = folder / EVAL_CONFIG
        if not folder.is_relative_to(root) or not candidate.is_file():
            continue
        try:
            data = json.loads(candidate.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("criteria"), dict) and data["criteria"]:
            return candidate
    return None


def _eval_config(files: list[EvalSetFile], root: Path, base: Path) -> tuple[Optional[str], list[tuple[str, str]]]:
    """The eval_config.json to write as a suite's `criteria` (one path for the whole suite, as
    `--config_file_path` is one file for the whole `adk eval`): only when every eval set of
    the suite finds the same one and none has a test_config.json beside it. Otherwise the
    configs found, each with why it was not written."""
    if all(test_config_beside(es.path) is not None for es in files):
        return None, []
    near = {es.path: eval_config_near(es.path, root) for es in files}
    found = sorted({c for c in near.values() if c is not None})
    if not found:
        return None, []
    if len(found) == 1 and all(c == found[0] for c in near.values()) and not any(test_config_beside(p) for p in near):
        return display_path(found[0], base), []
    why = "the suite's eval sets do not all use it; set each suite's criteria by hand"
    return None, [(display_path(c, base), why) for c in found]


def _evalset_entries(files: list[EvalSetFile], base: Path) -> list[str]:
    """The fewest config entries naming exactly these eval sets: a folder when every eval set
    evalgate would read under it is one of them (new eval sets there are then picked up), else
    the files themselves. Never the config's own folder, where a virtual environment, whose
    packages may ship test files, is likely to appear."""
    mine = {es.path.resolve() for es in files}
    folders = []
    for folder in sorted({es.path.parent for es in files} - {base}):
        under = {p.resolve() for p in folder.rglob("*") if p.is_file() and p.name.endswith(EVALSET_SUFFIXES)}
        if under <= mine:
            folders.append(folder)
    folders = [f for f in folders if not any(f != g and f.is_relative_to(g) for g in folders)]
    entries = list(folders)
    entries += [es.path for es in files if not any(es.path.is_relative_to(f) for f in folders)]
    return [display_path(p, base) for p in entries]


def plan_suites(found: Found, claimed: dict[int, list[EvalSetFile]]) -> list[Suite]:
    base = found.root
    names = [a.folder.name for a in found.agents]
    suites = []
    for i, agent in enumerate(found.agents):
        files = sorted(claimed.get(i, []), key=lambda es: es.path)
        if not files:
            continue
        name = agent.folder.name if names.count(agent.folder.name) == 1 else display_path(agent.folder, base)
        configs = sorted({display_path(tc, base) for es in files if (tc := test_config_beside(es.path)) is not None})
        criteria_file, unused = _eval_config(files, found.root, base)
        suites.append(Suite(name, agent.folder, display_path(agent.folder, base), _evalset_entries(files, base), files, configs, criteria_file, unused))
    return suites


def config_text(suites: list[Suite]) -> str:
    """The evalgate.yaml that runs each suite's agent on its eval sets."""
    lines = [
        "# evalgate.yaml, written by `evalgate init`. Every key is in evalgate's",
        "# docs/configuration.md; `evalgate schema` prints the JSON Schema for editors.",
        "#",
        "# Each suite runs an ADK agent in-process (loaded as `adk eval` loads it) on its eval",
        "# sets and scores every case with ADK's criteria: the test_config.json beside an eval",
        "# set, else ADK's defaults (tool_trajectory_avg_score 1.0, response_match_score 0.8).",
        "# The agent's model key comes from the environment or the nearest .env, as for adk.",
        "version: 1",
        "suites:",
    ]
    for s in suites:
        cases = sum(es.cases for es in s.files)
        sets = f"{len(s.files)} eval set{'s' if len(s.files) != 1 else ''}, {cases} case{'s' if cases != 1 else ''}"
        lines += [
            f"  - name: {_scalar(s.name)}",
            f"    evalsets: [{', '.join(_scalar(e) for e in s.evalsets)}]  # {sets}",
            f"    agent: {{adk: {_scalar(s.agent)}}}  # options: num_runs, tools: replay, concurrency, timeout_s",
        ]
        if s.criteria_file:
            lines.append(f"    criteria: {_scalar(s.criteria_file)}  # the eval config adk eval takes as --config_file_path")
        elif s.criteria:
            lines.append(f"    # criteria: from {', '.join(s.criteria)}")
        else:
            lines.append("    # criteria: ADK's defaults (no test_config.json beside these eval sets); set them here, e.g.")
            lines.append("    # criteria: {tool_trajectory_avg_score: 1.0, response_match_score: 0.8}")
    lines.append("# gate: {pairwise: {enabled: true}}  # also judge each changed answer side by side with the baseline's (docs/gate.md: gate.pairwise)")
    text = "\n".join(lines) + "\n"
    expected = {
        "version": 1,
        "suites": [
            {"name": s.name, "evalsets": s.evalsets, "agent": {"adk": s.agent}, **({"criteria": s.criteria_file} if s.criteria_file else {})}
            for s in suites
        ],
    }
    assert yaml.safe_load(text) == expected, text  # the comments and quoting changed nothing
    return text


@dataclass
class Repo:
    root: Path  # where .github/workflows goes
    workdir: str  # the project's folder relative to root ("" when it is the root)
    branch: str
    branch_source: str
    is_git: bool


def git_out(args: list[str], cwd: Path) -> Optional[str]:
    """git's output (stripped) in `cwd`, or None when git is missing, fails or prints nothing."""
    git = shutil.which("git")
    if git is None:
        return None
    try:
        out = subprocess.run([git, *args], cwd=cwd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else None


def default_branch(top: Path) -> Optional[tuple[str, str, str]]:
    """The repository's default branch as git knows it: origin's HEAD, else a local main or
    master. (branch name, the ref that names it here, where that came from), or None."""
    remote = git_out(["symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD"], top)
    if remote and "/" in remote:
        return remote.split("/", 1)[1], remote, "origin/HEAD"
    for name in ("main", "master"):
        if git_out(["rev-parse", "--verify", "--quiet", f"refs/heads/{name}"], top):
            return name, name, f"the local branch {name}"
    return None


def find_repo(project: Path, branch: Optional[str]) -> Repo:
    """The repository holding the project (GitHub reads workflows only at its root) and its default branch."""
    top = next((p for p in (project, *project.parents) if (p / ".git").exists()), None)
    root = top or project
    workdir = "" if root == project else project.relative_to(root).as_posix()
    if branch:
        return Repo(root, workdir, branch, "--branch", top is not None)
    if top is not None:
        known = default_branch(top)
        if known is not None:
            return Repo(root, workdir, known[0], known[2], True)
        current = git_out(["symbolic-ref", "--quiet", "--short", "HEAD"], top)
        if current:
            return Repo(root, workdir, current, "the current branch", True)
    return Repo(root, workdir, "main", "a guess: no git remote names the default branch; --branch sets it", top is not None)


@dataclass
class Runtime:
    """How the workflows give the agent its code, dependencies and credentials: steps before
    the action's, the action's inputs and environment for it, and permissions they need."""

    permissions: list[str] = field(default_factory=list)  # extra `permissions:` lines
    steps: list[str] = field(default_factory=list)  # steps between the checkout and the action
    inputs: list[str] = field(default_factory=list)  # extra `with:` lines of the action
    env: list[str] = field(default_factory=list)  # the action step's `env:` lines
    fork: list[str] = field(
        default_factory=lambda: ["# A fork's pull request has no secrets: its agent cannot run, and the gate says ERROR, never PASS."]
    )  # what becomes of a fork's pull request, as comment lines


def pip_runtime(install: tuple[str, str]) -> Runtime:
    """The action installs the agent's dependencies in its container; the model key is a secret."""
    return Runtime(
        inputs=[f"          install: {_scalar(install[0])}   # {install[1]}"],
        env=["          GOOGLE_API_KEY: ${{ secrets.GOOGLE_API_KEY }}   # the agent's model (a repository secret)"],
    )


def _action_step(action: str, config: str, repo: Repo, runtime: Runtime) -> list[str]:
    lines = [
        f"      - uses: {action}   # the evalgate action: pin a release or a commit SHA",
        "        with:",
        f"          config: {_scalar(config)}",
    ]
    if repo.workdir:
        lines.append(f"          working-directory: {_scalar(repo.workdir)}")
    lines += runtime.inputs
    if runtime.env:
        lines += ["        env:", *runtime.env]
    return lines


def workflow_texts(action: str, config: str, repo: Repo, runtime: "tuple[str, str] | Runtime") -> dict[str, str]:
    """The three workflows of docs/workflows.md, each with the least permissions it needs; the
    agent's dependencies are `pip install` arguments (with a word on them) or a whole Runtime."""
    runtime = runtime if isinstance(runtime, Runtime) else pip_runtime(runtime)
    step = runtime.steps + _action_step(action, config, repo, runtime)
    extra = runtime.permissions
    results = f"{repo.workdir}/evalgate-results" if repo.workdir else "evalgate-results"
    head = "# Written by `evalgate init`; evalgate's docs/workflows.md explains every line.\n"
    pr = [
        "# The pull request gate: runs the pull request's agent on the eval sets, compares with the",
        "# base commit's baseline, keeps one comment up to date and sets the commit status `evalgate`",
        "# (require it in the branch protection rules to block merging on a failed gate).",
        *runtime.fork,
        "# With a merge queue, merge_group gates the queue's head commit and sets the status there.",
        "name: evalgate-pr",
        "on:",
        "  pull_request:",
        "  merge_group:          # the merge queue, if the branch uses one",
        "",
        "permissions:",
        "  contents: read        # the checkout, and baselines on the data branch",
        "  pull-requests: write  # the comment",
        "  statuses: write       # the commit status",
        *extra,
        "",
        "jobs:",
        "  gate:",
        "    runs-on: ubuntu-latest",
        "    steps:",
        "      - uses: actions/checkout@v7",
        "        with:",
        "          fetch-depth: 0   # the base commit too: a suspect case is re-run there as a control",
        *step,
        "      - uses: actions/upload-artifact@v7",
        "        if: always()",
        "        with:",
        "          name: evalgate-results",
        f"          path: {_scalar(results)}   # results.json, inference.jsonl (the agent's outputs), report.md",
    ]
    baseline = [
        f"# Baselines on merge: every push to {repo.branch} runs the agent on the merged code and saves",
        "# the result as that commit's baseline on the data branch (evalgate-data, created on first",
        "# use); pull requests compare with the nearest baseline on their base's history.",
        "name: evalgate-baseline",
        "on:",
        "  push:",
        f"    branches: [{_scalar(repo.branch)}]   # the default branch",
        "",
        "permissions:",
        "  contents: write       # write the baseline to the data branch",
        *extra,
        "",
        "concurrency:",
        "  group: evalgate-baseline  # one writer at a time; the store also retries on conflicts",
        "  cancel-in-progress: false",
        "",
        "jobs:",
        "  baseline:",
        "    runs-on: ubuntu-latest",
        "    steps:",
        "      - uses: actions/checkout@v7",
        *step,
    ]
    nightly = [
        "# Nightly: runs the default branch's agent on a schedule (a model can drift while the code",
        "# stays the same), adds to the history, and on a regression opens or updates one tracking",
        "# issue. workflow_dispatch runs it by hand.",
        "name: evalgate-nightly",
        "on:",
        "  schedule:",
        f'    - cron: "{NIGHTLY_CRON}"   # 03:17 UTC',
        "  workflow_dispatch:",
        "",
        "permissions:",
        "  contents: write       # history on the data branch",
        "  issues: write         # the tracking issue",
        *extra,
        "",
        "jobs:",
        "  nightly:",
        "    runs-on: ubuntu-latest",
        "    steps:",
        "      - uses: actions/checkout@v7",
        *step,
    ]
    return {name: head + "\n".join(body) + "\n" for name, body in zip(WORKFLOWS, (pr, baseline, nightly))}


def install_for(project: Path) -> tuple[str, str]:
    """What the action pip-installs so the agent can run (the project's own requirements, else
    google-adk at the version here), and a word on it for the workflow."""
    if (project / "requirements.txt").is_file():
        return "-r requirements.txt", "the agent's dependencies, google-adk among them"
    if (project / "pyproject.toml").is_file() or (project / "setup.py").is_file():
        return ".", "the agent's package and dependencies, google-adk among them"
    try:
        from importlib.metadata import PackageNotFoundError, version

        adk = f"google-adk=={version('google-adk')}"
    except (ImportError, PackageNotFoundError):
        adk = "google-adk"
    return adk, "and whatever else the agent imports (no requirements.txt or pyproject.toml was found)"


# --- the command ---------------------------------------------------------------------------


@dataclass
class Planned:
    path: Path
    text: str
    what: str


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _shown_folder(root: Path) -> str:
    return str(root) if root == Path.cwd().resolve() else display_path(root)


def _nothing_found(root: Path, found: Found, what: str, looked_for: str, fix: str) -> InputError:
    notes = [f"{display_path(p)}: {why}" for p, why in found.near_misses + found.skipped]
    detail = f"; what came close: {'; '.join(notes)}" if notes else ""
    return InputError(Problem(None, None, f"no {what} found in {_shown_folder(root)} (looked for {looked_for}; not searched: {NOT_SEARCHED}){detail}", fix))


def init(directory: str, action: Optional[str], branch: Optional[str], dry_run: bool, out: TextIO) -> int:
    """Find, plan, write what is missing, and say what was found, written, kept, and what next."""
    action = action or DEFAULT_ACTION
    root = Path(directory)
    if not root.is_dir():
        raise InputError(Problem(directory, None, "is not a folder", "Pass your ADK project's folder (the one you run `adk web` from)."))
    root = root.resolve()
    from evalgate.agents_cli import project as acli_project

    acli = acli_project.find(root)
    if acli is not None and acli.datasets:
        return init_agents_cli(acli, action, branch, dry_run, out)
    found = discover(root)
    if acli is not None and not found.evalsets:
        raise _no_datasets(acli)
    if not found.agents:
        raise _nothing_found(
            root, found, "ADK agent", LOOKED_FOR_AGENTS, "Run evalgate init in your ADK project's folder (the one you run `adk web` from), or pass that folder: evalgate init path/to/project."
        )
    if not found.evalsets:
        fix = "Save one from `adk web` (its Eval tab writes <agent>/<name>.evalset.json), or write one; evalgate's docs/formats.md shows both shapes."
        if found.acli_projects:  # a repository holding agents-cli projects in subfolders
            folders = ", ".join(display_path(f) for f in found.acli_projects)
            fix = f"agents-cli projects are in {folders}: run evalgate init in one of them (or pass it: evalgate init {display_path(found.acli_projects[0])})."
        raise _nothing_found(root, found, "eval set", LOOKED_FOR_EVALSETS, fix)
    claimed, left = assign(found)
    suites = plan_suites(found, claimed)
    if not suites:
        why = "; ".join(f"{display_path(es.path)} {reason}" for es, reason in left)
        raise InputError(
            Problem(None, None, f"no eval set in {_shown_folder(root)} belongs to one agent alone ({why})", "Write evalgate.yaml by hand: one suite per agent, naming its eval sets (docs/running-agents.md).")
        )

    repo = find_repo(root, branch)
    config_path = next((root / n for n in CONFIG_NAMES if (root / n).exists()), root / CONFIG_NAMES[0])
    cases = sum(es.cases for s in suites for es in s.files)
    planned = [Planned(config_path, config_text(suites), f"{_plural(len(suites), 'suite')}, {_plural(cases, 'case')}, the agent run in-process")]
    whats = (
        "on pull requests and merge queues: run the agent, compare, comment, set the commit status",
        f"on pushes to {repo.branch}: run the agent, save the baseline",
        "every night and by hand: run the agent, open an issue on a regression",
    )
    texts = workflow_texts(action, config_path.name, repo, install_for(root))
    planned += [Planned(repo.root / ".github" / "workflows" / name, texts[name], what) for name, what in zip(WORKFLOWS, whats)]

    _print_found(found, suites, left, out)
    written = _write(planned, dry_run, out)
    _print_next(root, config_path, repo, action, planned if dry_run else written, out)
    return 0


def _write(planned: list[Planned], dry_run: bool, out: TextIO) -> list[Planned]:
    """Write each planned file that does not exist yet (or, dry, show it); say what happened."""
    written, kept = [], []
    for p in planned:
        shown = display_path(p.path)
        exists = p.path.exists() or p.path.is_symlink()
        if dry_run:
            head = f"{shown} exists and stays as it is; init would have written" if exists else f"would write {shown}"
            out.write(f"{head} ({p.what}):\n")
            out.write("".join(f"    {line}\n" for line in p.text.splitlines()))
            continue
        if not exists:
            try:
                p.path.parent.mkdir(parents=True, exist_ok=True)
                with open(p.path, "x", encoding="utf-8") as f:  # "x": never replace a file that appeared meanwhile
                    f.write(p.text)
            except FileExistsError:
                exists = True
            except OSError as e:
                raise InputError(Problem(shown, None, f"cannot write it ({e.strerror or e})", "Run evalgate init where you can write, or copy the file from `evalgate init --dry-run`.")) from None
        if exists:
            kept.append(p)
            out.write(f"kept  {shown}: it exists, and init never overwrites a file\n")
        else:
            written.append(p)
            out.write(f"wrote {shown} ({p.what})\n")
    if kept:
        out.write("      (`evalgate init --dry-run` prints what init would have written)\n")
    return written


def _print_found(found: Found, suites: list[Suite], left: list[tuple[EvalSetFile, str]], out: TextIO) -> None:
    cases = sum(es.cases for es in found.evalsets)
    out.write(f"found {_plural(len(found.agents), 'agent')}, {_plural(len(found.evalsets), 'eval set')} ({_plural(cases, 'case')}):\n")
    for agent in found.agents:
        suite = next((s for s in suites if s.folder == agent.folder), None)
        if suite is None:
            out.write(f"  {display_path(agent.folder)} ({agent.source}): no eval set of its own; left out\n")
            continue
        named = "" if suite.name == agent.folder.name else f", suite {suite.name}"
        out.write(f"  {display_path(agent.folder)} ({agent.source}{named})\n")
        for es in suite.files:
            out.write(f"    {display_path(es.path)}: {_plural(es.cases, 'case')}\n")
        if suite.criteria_file:
            criteria = f"{suite.criteria_file} (an eval config for `adk eval --config_file_path`; written as the suite's criteria)"
        else:
            criteria = ", ".join(suite.criteria) if suite.criteria else "ADK's defaults (no test_config.json beside the eval sets)"
        out.write(f"    criteria: {criteria}\n")
        for path, why in suite.unused_configs:
            out.write(f"    not used: {path}: {why}\n")
    for es, why in left:
        out.write(f"  left out: {display_path(es.path)}, which {why}; add it to a suite by hand\n")
    for path, why in found.near_misses:
        out.write(f"not an agent evalgate can run: {display_path(path)}: {why}\n")
    for path, why in found.skipped:
        out.write(f"not an eval set: {display_path(path)}: {why}\n")


def _config_flag(root: Path, config: Path) -> str:
    """` --config PATH` for the commands init suggests, when they are not run from the project."""
    shown = display_path(config)
    return "" if root == Path.cwd().resolve() else f" --config {shown if _SHELL_SAFE.fullmatch(shown) else shlex.quote(shown)}"


def _print_commit_steps(config: Path, repo: Repo, out: TextIO) -> None:
    """The last steps for the workflows, the same for every kind of project: commit, protect."""
    out.write(f"  - commit {display_path(config)} and {display_path(repo.root / '.github' / 'workflows')}/; the gate runs on your next pull request\n")
    out.write("  - require the commit status `evalgate` in the branch protection rules of " + f"{repo.branch} ({repo.branch_source})\n")
    if not repo.is_git:
        where = "this folder" if repo.root == Path.cwd().resolve() else display_path(repo.root)
        out.write(f"  - {where} is not a git checkout: GitHub reads .github/workflows at the repository's root only\n")


def _print_next(root: Path, config: Path, repo: Repo, action: str, written: list[Planned], out: TextIO) -> None:
    flag = _config_flag(root, config)
    out.write("\nnext:\n")
    out.write(f"  evalgate validate{flag}    # check the config and every eval set; runs nothing\n")
    out.write(f"  evalgate run{flag}         # run the agent on every case and score it (needs the agent's model key, as adk does)\n")
    workflows = [p for p in written if p.path.suffix == ".yml"]
    if workflows:
        out.write("then, for the workflows:\n")
        if action == DEFAULT_ACTION:
            out.write(f"  - replace {DEFAULT_ACTION} in them with the evalgate action reference you pin (a release or a commit SHA)\n")
        out.write("  - add the repository secret GOOGLE_API_KEY (the agent's model key; Settings > Secrets and variables > Actions)\n")
        _print_commit_steps(config, repo, out)
        _print_first_day(repo, out)
    out.write("keep evalgate-results/ and .evalgate/ out of git (add them to .gitignore)\n")


def _print_first_day(repo: Repo, out: TextIO) -> None:
    """What the gate can decide before the default branch has history, and how to give it some
    at once (docs/gate.md: the first day)."""
    out.write(f"until {repo.branch} has history:\n")
    out.write("  before its first baseline a pull request is judged on the thresholds alone; after it, a few broken cases among many are\n")
    out.write(f"  INCONCLUSIVE, not FAIL, until {repo.branch} has 5 runs (a case must pass 5 in a row to count as stable; each push adds one).\n")
    out.write("  To start with them: run it 5 times and save the runs into the data branch (docs/gate.md: the first day)\n")



# --- a project agents-cli scaffolded -------------------------------------------------------

AGENT_RUNS = "evalgate-agent-runs"  # where the workflows' first step leaves the agent's runs for the action
SCAFFOLD_PYTHON = "3.12"  # the Python of the scaffold's own workflows
CICD = {
    "github_actions": "GitHub Actions",
    "google_cloud_build": "Cloud Build",
    "skip": "none (agents-cli create in prototype mode)",
}
FEW_CASES = 10  # below this, say that the gate's statistics have little to go on
# The environment the scaffold's integration tests run the agent in (pr_checks.yaml), as `env:` lines.
MODEL_ENV = [
    '          GOOGLE_GENAI_USE_ENTERPRISE: "true"   # Gemini through Google Cloud, as the scaffold\'s integration tests',
    "          GOOGLE_CLOUD_PROJECT: ${{ vars.CICD_PROJECT_ID }}",
    "          GOOGLE_CLOUD_LOCATION: global",
]
WIF_NAMES = "the variables GCP_PROJECT_NUMBER and CICD_PROJECT_ID and the secrets WIF_POOL_ID, WIF_PROVIDER_ID and GCP_SERVICE_ACCOUNT"


def _no_datasets(acli: "AcliProject") -> InputError:
    where = display_path(acli.datasets_folder) if acli.datasets_folder else " or ".join(f"{f}/" for f in ("tests/eval/datasets", "eval/datasets"))
    notes = "".join(f"; {display_path(p)}: {why}" for p, why in acli.skipped)
    return InputError(
        Problem(
            display_path(acli.manifest_path),
            None,
            f"an agents-cli project without a dataset: no agents-cli dataset (a JSON file of eval_cases) in {where}{notes}",
            "Write one as the README beside the datasets shows (a list of eval_cases, each with a prompt), or let "
            "`agents-cli eval dataset synthesize` write some; then run evalgate init again.",
        )
    )


def _acli_agent(acli: "AcliProject") -> Agent:
    """The manifest's agent directory as an ADK agent evalgate can run in-process, or why not."""
    manifest = display_path(acli.manifest_path)
    folder = acli.agent_folder
    if acli.manifest.language != "python":
        raise InputError(
            Problem(
                manifest,
                "language",
                f"the agent is written in {acli.manifest.language}; evalgate runs Python ADK agents in-process",
                "Serve the agent (agents-cli run serves it) and write evalgate.yaml by hand with agent: {url: http://127.0.0.1:8000, app: "
                f"{acli.manifest.agent_directory}}} (docs/running-agents.md).",
            )
        )
    if not folder.is_dir():
        raise InputError(
            Problem(manifest, "agent_directory", f"names {acli.manifest.agent_directory}, which is not a folder here", "Set agent_directory to the folder that holds agent.py (agents-cli's default is app).")
        )
    probe = Found(acli.root)
    _agent_in(folder, {p.name for p in folder.iterdir() if p.is_file()}, probe)
    if not probe.agents:
        why = probe.near_misses[0][1] if probe.near_misses else "neither agent.py nor __init__.py defines root_agent or app = App(...)"
        raise InputError(Problem(display_path(folder), None, f"is the agent directory of {manifest}, but not an ADK agent evalgate can load: {why}", "Restore agent.py as agents-cli create wrote it."))
    return probe.agents[0]


def acli_config_text(acli: "AcliProject", agent_dir: str, evalsets: str, criteria: Optional[str], cases: int) -> str:
    """evalgate.yaml for an agents-cli project: one suite, the agent in-process, its datasets and eval config."""
    name = Path(agent_dir).name  # the ADK app name agents-cli serves the agent under
    sets = f"{_plural(len(acli.datasets), 'dataset')}, {_plural(cases, 'case')}"
    lines = [
        "# evalgate.yaml, written by `evalgate init` for an agents-cli project. Every key is in",
        "# evalgate's docs/configuration.md; docs/agents-cli.md says what evalgate reads of the project.",
        "#",
        "# The suite runs the agent in-process (ADK app name: its folder's, as agents-cli serves it) on",
        "# every dataset in the folder, as `agents-cli eval generate` would, and scores each case with",
        "# the eval config's metrics, as `agents-cli eval grade` would. That config sets no thresholds:",
        "# the gate compares each metric with the default branch's baseline.",
        "version: 1",
        "suites:",
        f"  - name: {_scalar(name)}",
        f"    evalsets: [{_scalar(evalsets)}]  # {sets}",
        f"    agent: {{adk: {_scalar(agent_dir)}}}  # options: num_runs, concurrency, timeout_s",
    ]
    if criteria:
        lines.append(f"    criteria: {_scalar(criteria)}  # metrics_to_run and custom_metrics, as agents-cli eval grade reads them")
    else:
        lines.append("    # criteria: tests/eval/eval_config.yaml  # none found: name the metrics to run there (agents-cli needs them too)")
    lines.append("# gate: {pairwise: {enabled: true}}  # also judge each changed answer side by side with the baseline's (docs/gate.md: gate.pairwise)")
    text = "\n".join(lines) + "\n"
    expected = {"version": 1, "suites": [{"name": name, "evalsets": [evalsets], "agent": {"adk": agent_dir}, **({"criteria": criteria} if criteria else {})}]}
    assert yaml.safe_load(text) == expected, text  # the comments and quoting changed nothing
    return text


_ACTION_REF = re.compile(r"([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)(?:/[^@]*)?@([^\s\"]+)")


def evalgate_requirement(action: str) -> str:
    """The evalgate the agent's step installs: the same code as the action, from the action's own
    repository and reference (owner/repo@ref), so both steps agree on what a finished run is;
    else (a docker:// or local action) this version from the package registry."""
    m = _ACTION_REF.fullmatch(action)
    if m is None:
        from evalgate import __version__

        return f"adk-evalgate=={__version__}"
    return f"adk-evalgate @ git+https://github.com/{m.group(1)}/{m.group(2)}@{m.group(3)}"


def acli_runtime(config: str, repo: Repo, action: str = DEFAULT_ACTION) -> Runtime:
    """The scaffold's way: Google Cloud through its Workload Identity Federation, the agent's
    dependencies from its uv.lock. The action runs in its own container, with evalgate's locked
    dependencies, which the project's lock must not replace (its google-adk,
    google-cloud-aiplatform and google-genai differ); so the agent runs first, here, in the
    project's environment, and the action reuses those runs (`resume`): it scores, compares
    and reports, and runs again only a case whose run did not finish."""
    workdir = [f"        working-directory: {_scalar(repo.workdir)}"] if repo.workdir else []
    steps = [
        "      # Google Cloud as the scaffold's pr_checks.yaml signs in: Workload Identity Federation with the",
        "      # variables and secrets agents-cli's CI/CD setup created (deployment/terraform/cicd).",
        "      - id: auth",
        "        uses: google-github-actions/auth@v3",
        "        with:",
        "          workload_identity_provider: projects/${{ vars.GCP_PROJECT_NUMBER }}/locations/global/workloadIdentityPools/${{ secrets.WIF_POOL_ID }}/providers/${{ secrets.WIF_PROVIDER_ID }}",
        "          service_account: ${{ secrets.GCP_SERVICE_ACCOUNT }}",
        "          create_credentials_file: true",
        "          project_id: ${{ vars.CICD_PROJECT_ID }}",
        "      - uses: actions/setup-python@v7",
        "        with:",
        f'          python-version: "{SCAFFOLD_PYTHON}"',
        "      - uses: astral-sh/setup-uv@v8.0.0",
        "      - name: Install the agent's dependencies from uv.lock",
        *workdir,
        "        run: uv sync --locked",
        "      # The agent runs here, in the project's environment, with evalgate from the action's own",
        "      # repository and reference; the action below reuses its runs.",
        "      # Exit 1 (a suite below a threshold) is the action's to judge against the baseline.",
        "      - name: Run the agent on every case",
        *workdir,
        "        env:",
        *MODEL_ENV,
        f'        run: uv run --no-sync --with "{evalgate_requirement(action)}" evalgate run --config {_scalar(config)} --out {AGENT_RUNS} || [ "$?" -eq 1 ]',
    ]
    return Runtime(
        permissions=["  id-token: write       # Workload Identity Federation (google-github-actions/auth)"],
        steps=steps,
        fork=["# A fork's pull request gets no OIDC token: its auth step fails, and nothing is gated or passed."],
        inputs=[f"          resume: {AGENT_RUNS}   # the agent's runs from the step above: reused, not run again"],
        env=["          # Google Cloud for the eval config's metrics (the eval service, LLM judges)", *MODEL_ENV],
    )


def init_agents_cli(acli: "AcliProject", action: str, branch: Optional[str], dry_run: bool, out: TextIO) -> int:
    """`evalgate init` in a project agents-cli created: the manifest's agent, its datasets and eval
    config as one suite, and workflows that sign in and install as the scaffold's own do."""
    root = acli.root
    agent = _acli_agent(acli)
    repo = find_repo(root, branch)
    config_path = next((root / n for n in CONFIG_NAMES if (root / n).exists()), root / CONFIG_NAMES[0])
    cases = sum(d.cases for d in acli.datasets)
    criteria = display_path(acli.eval_config.path, root) if acli.eval_config else None
    text = acli_config_text(acli, display_path(agent.folder, root), display_path(acli.datasets_folder, root), criteria, cases)
    planned = [Planned(config_path, text, f"1 suite, {_plural(cases, 'case')}, the agent run in-process")]
    whats = (
        "on pull requests and merge queues: run the agent, compare, comment, set the commit status",
        f"on pushes to {repo.branch}: run the agent, save the baseline",
        "every night and by hand: run the agent, open an issue on a regression",
    )
    texts = workflow_texts(action, config_path.name, repo, acli_runtime(config_path.name, repo, action))
    planned += [Planned(repo.root / ".github" / "workflows" / name, texts[name], what) for name, what in zip(WORKFLOWS, whats)]

    _print_acli_found(acli, agent, out)
    written = _write(planned, dry_run, out)
    _print_acli_next(acli, config_path, repo, action, planned if dry_run else written, out)
    return 0


def _print_acli_found(acli: "AcliProject", agent: Agent, out: TextIO) -> None:
    m = acli.manifest
    made = f", made by agents-cli {m.acli_version}" if m.acli_version else ""
    named = f"{m.name}{made}" if m.name else made.lstrip(", ")
    out.write(f"found an agents-cli project ({display_path(acli.manifest_path)}{': ' + named if named else ''}):\n")
    details = [agent.source]
    if m.root_agent_name:
        details.append(f"root agent {m.root_agent_name}")
    if m.deployment_target not in ("", "none"):
        details.append(f"deployed to {m.deployment_target}")
    out.write(f"  {display_path(agent.folder)} ({'; '.join(details)})\n")
    for d in acli.datasets:
        kind = " (an ADK eval set)" if d.adk else ""
        out.write(f"    {display_path(d.path)}: {_plural(d.cases, 'case')}{kind}\n")
    for path, why in acli.skipped:
        out.write(f"    not a dataset: {display_path(path)}: {why}\n")
    config = acli.eval_config
    if config is None:
        out.write("    criteria: no eval_config.yaml found (agents-cli's tests/eval/eval_config.yaml); the suite has no metrics yet\n")
    elif config.problem:
        out.write(f"    criteria: {display_path(config.path)}, which {config.problem}; `evalgate validate` says where\n")
    else:
        chosen = ", ".join(config.metrics) if config.metrics else "none"
        out.write(f"    criteria: {display_path(config.path)} (metrics_to_run: {chosen}; no thresholds)\n")
    if acli.traces:
        out.write(f"    traces: {_plural(len(acli.traces), 'file')} in {display_path(acli.traces[0].parent)} (from agents-cli eval generate; not used: evalgate runs the agent)\n")
    runner = CICD.get(m.cicd_runner, m.cicd_runner)
    if m.cicd_runner == "github_actions":
        out.write(f"  CI: {runner} (the scaffold's workflows test and deploy; none runs an eval); init adds evalgate's beside them\n")
    else:
        out.write(f"  CI: {runner}; evalgate's gate is a GitHub Action, so init writes GitHub workflows all the same\n")


def _print_acli_next(acli: "AcliProject", config: Path, repo: Repo, action: str, written: list[Planned], out: TextIO) -> None:
    root = acli.root
    flag = _config_flag(root, config)
    out.write("\nnext:\n")
    out.write(f"  evalgate validate{flag}    # check the config, every dataset and the eval config; runs nothing\n")
    out.write(f"  evalgate run{flag}         # run the agent on every case and score it (needs the agent's Google Cloud access, as agents-cli eval run does)\n")
    workflows = [p for p in written if p.path.suffix == ".yml"]
    if workflows:
        out.write("then, for the workflows:\n")
        if action == DEFAULT_ACTION:
            out.write(f"  - replace {DEFAULT_ACTION} in them with the evalgate action reference you pin (a release or a commit SHA): twice in each, the action and the evalgate its agent step installs\n")
        if acli.manifest.cicd_runner == "github_actions":
            out.write(f"  - they sign in to Google Cloud as the scaffold's pr_checks.yaml does, with {WIF_NAMES} that agents-cli's CI/CD setup created\n")
        else:
            out.write(
                f"  - they sign in to Google Cloud through Workload Identity Federation for GitHub, with {WIF_NAMES}: "
                "create them (agents-cli's GitHub Actions setup does, deployment/terraform/cicd/wif.tf and github.tf)\n"
            )
        _print_commit_steps(config, repo, out)
    out.write(f"until {repo.branch} has a baseline:\n")
    out.write("  agents-cli's eval config sets no thresholds, so the first pull requests only record their scores: the gate passes them\n")
    out.write("  (an agent that fails on every case is an ERROR). Merge once: evalgate-baseline.yml saves the baseline, and from then\n")
    out.write(f"  on a pull request fails when a metric drops against {repo.branch}'s by more than its run-to-run noise. Each push to\n")
    out.write(f"  {repo.branch} adds a run to the history that noise is measured on; until there are a few, a small drop is INCONCLUSIVE.\n")
    cases = sum(d.cases for d in acli.datasets)
    if cases < FEW_CASES:
        out.write(f"  only {_plural(cases, 'case')}: a drop on so few is often INCONCLUSIVE, not FAIL; add cases to the datasets.\n")
    if acli.grade_results:
        newest = display_path(acli.grade_results[-1])
        out.write(f"  agents-cli's grades can be the first baseline: evalgate baseline import --agents-cli {newest} --commit {repo.branch}\n")
        out.write("  (docs/gate.md: a baseline from agents-cli results)\n")
    config = acli.eval_config
    if config is not None and config.unscaled:
        out.write(f"the eval config's own metrics ({display_path(config.path)}; evalgate's keys, which agents-cli ignores):\n")
        out.write(f"  {', '.join(config.unscaled)}: no score_range, so the gate's margins are in the scores' own units; give each its scale\n")
        out.write("  (score_range: [1, 5] for a 1-5 judge, [0, null] for a count) and judge: true to one that asks an LLM (docs/criteria.md)\n")
    out.write("keep evalgate-results/ and .evalgate/ out of git (add them to .gitignore)\n")
