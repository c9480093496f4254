"""A project `agents-cli create` scaffolded, as `evalgate init` finds it: its manifest, the
datasets `agents-cli eval generate` reads and the eval config `agents-cli eval grade` reads.

Paths and defaults are agents-cli 1.11's (`eval/_paths.py`, `_project.py`): the datasets in
`tests/eval/datasets/` (Python) or `eval/datasets/` (Go), first match wins, and the eval
config beside them. Nothing is imported or run; files are only read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

from evalgate.agents_cli.cases import looks_like_dataset, read_dataset
from evalgate.errors import InputError, Problem, display_path
from evalgate.loaders.evalsets import EVALSET_SUFFIXES, load_evalset

MANIFEST = "agents-cli-manifest.yaml"
DATASET_FOLDERS = ("tests/eval/datasets", "eval/datasets")
EVAL_CONFIGS = ("tests/eval/eval_config.yaml", "eval/eval_config.yaml")
TRACES_FOLDER = "artifacts/traces"
GRADE_RESULTS_FOLDER = "artifacts/grade_results"
BODY_KEYS = ("custom_function", "custom_function_file", "prompt_template")  # a metric of the team's own, not a built-in


@dataclass
class Manifest:
    """What agents-cli-manifest.yaml says, with agents-cli's own defaults for what it leaves out."""

    name: str = ""
    agent_directory: str = "app"
    language: str = "python"
    root_agent_name: str = ""
    cicd_runner: str = "skip"
    deployment_target: str = "none"
    acli_version: str = ""


def read_manifest(path: Path) -> Manifest:
    """The manifest; InputError naming the file when it is not YAML or not a mapping."""
    shown = display_path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(Problem(shown, None, f"cannot be read ({e})", "Restore the file agents-cli create wrote.")) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else None
        raise InputError(Problem(shown, where, f"is not valid YAML ({getattr(e, 'problem', None) or e})", "Fix the YAML, or restore the file agents-cli create wrote.")) from None
    if not isinstance(data, dict):
        raise InputError(Problem(shown, None, "is not a mapping of keys to values", "Restore the file agents-cli create wrote."))
    params = data.get("create_params")
    params = params if isinstance(params, dict) else {}

    def text(value: Any, default: str) -> str:
        return str(value) if isinstance(value, (str, int, float)) and str(value) else default

    base = Manifest()
    return Manifest(
        name=text(data.get("name"), base.name),
        agent_directory=text(data.get("agent_directory"), base.agent_directory),
        language=text(data.get("language"), base.language),
        root_agent_name=text(params.get("root_agent_name"), base.root_agent_name),
        cicd_runner=text(params.get("cicd_runner"), base.cicd_runner),
        deployment_target=text(params.get("deployment_target"), base.deployment_target),
        acli_version=text(data.get("acli_version") or data.get("version"), base.acli_version),
    )


@dataclass
class DatasetFile:
    path: Path
    cases: int
    adk: bool = False  # an ADK eval set among the datasets (the suite reads it too)


@dataclass
class EvalConfig:
    path: Path
    metrics: list[str] = field(default_factory=list)  # metrics_to_run, as written
    custom: list[str] = field(default_factory=list)  # the custom_metrics pool's names
    unscaled: list[str] = field(default_factory=list)  # selected custom metrics with a body and no score_range
    problem: Optional[str] = None  # why it could not be read, when it could not


@dataclass
class AcliProject:
    root: Path
    manifest_path: Path
    manifest: Manifest
    datasets_folder: Optional[Path] = None
    datasets: list[DatasetFile] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)  # *.json in the folder that are not datasets, and why
    eval_config: Optional[EvalConfig] = None
    traces: list[Path] = field(default_factory=list)  # artifacts/traces/traces_*.json that eval generate left
    grade_results: list[Path] = field(default_factory=list)  # artifacts/grade_results/results_*.json that eval grade left

    @property
    def agent_folder(self) -> Path:
        return self.root / self.manifest.agent_directory


def find(root: Path) -> Optional[AcliProject]:
    """The agents-cli project at `root`, or None when there is no manifest there."""
    manifest_path = root / MANIFEST
    if not manifest_path.is_file():
        return None
    project = AcliProject(root, manifest_path, read_manifest(manifest_path))
    project.datasets_folder = next((root / f for f in DATASET_FOLDERS if (root / f).is_dir()), None)
    if project.datasets_folder is not None:
        for path in sorted(project.datasets_folder.rglob("*.json")):  # a folder in `evalsets` is read through
            if path.is_file():
                _dataset_in(path, project)
    config = next((root / c for c in EVAL_CONFIGS if (root / c).is_file()), None)
    if config is not None:
        project.eval_config = read_eval_config(config)
    traces = root / TRACES_FOLDER
    if traces.is_dir():
        project.traces = sorted(traces.glob("traces_*.json"))
    grades = root / GRADE_RESULTS_FOLDER
    if grades.is_dir():
        project.grade_results = sorted(grades.glob("results_*.json"))  # the time stamp in the name sorts them
    return project


def _dataset_in(path: Path, project: AcliProject) -> None:
    """Count a dataset's cases (its `eval_cases`), as the suite's loader will read it."""
    shown = display_path(path)
    if path.name.endswith(EVALSET_SUFFIXES):  # ADK eval sets stay first-class beside datasets
        try:
            loaded = load_evalset(path)
        except InputError as e:
            project.skipped.append((path, "; ".join(str(Problem(None, p.where, p.what, p.fix)) for p in e.problems)))
            return
        project.datasets.append(DatasetFile(path, len(loaded.eval_set.eval_cases), adk=True))
        return
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        project.skipped.append((path, f"is not JSON ({e}), and the suite's loader refuses it: fix it or move it out of the folder"))
        return
    if not looks_like_dataset(data):
        project.skipped.append((path, "not an agents-cli dataset (no eval_cases list, or ADK eval cases)"))
        return
    try:
        dataset = read_dataset(path, shown)
    except InputError as e:  # the reader's own words, without the file it names (the note names it)
        project.skipped.append((path, "; ".join(str(Problem(None, p.where, p.what, p.fix)) for p in e.problems)))
        return
    project.datasets.append(DatasetFile(path, len(dataset.eval_cases)))


def read_eval_config(path: Path) -> EvalConfig:
    """The metric names an eval config selects and defines; a config that cannot be read is
    noted, not refused (`evalgate validate` gives the full error)."""
    config = EvalConfig(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        config.problem = f"cannot be read ({str(e).splitlines()[0] if str(e) else type(e).__name__})"
        return config
    if not isinstance(data, dict):
        config.problem = "is not a mapping with metrics_to_run"
        return config
    metrics = data.get("metrics_to_run")
    if isinstance(metrics, list):
        config.metrics = [str(m) for m in metrics if isinstance(m, (str, int))]
    custom = data.get("custom_metrics")
    if isinstance(custom, list):
        entries = [m for m in custom if isinstance(m, dict) and isinstance(m.get("name"), str)]
        config.custom = [m["name"] for m in entries]
        selected = {m.lower() for m in config.metrics}
        config.unscaled = [
            m["name"] for m in entries
            if m["name"].lower() in selected and any(k in m for k in BODY_KEYS) and m.get("score_range") is None
        ]
    return config
