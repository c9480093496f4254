"""The action's settings: the Actions environment cleaned into one frozen value, one function per field.

action.yml maps each input to an `EVALGATE_*` variable explicitly; GitHub sets the
`GITHUB_*` ones. Nothing here is read at import time. Every bad setting becomes a
`Problem` naming the input, and all of them are reported together.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal, Mapping, Optional

from evalgate.errors import InputError, Problem

Mode = Literal["auto", "pr", "baseline", "nightly", "publish", "merge"]
FailOn = Literal["fail", "inconclusive", "never"]
MODES = ("auto", "pr", "baseline", "nightly", "publish", "merge")
FAIL_ON = ("fail", "inconclusive", "never")
STORES = ("github", "dir")
CONTAINER_WORKSPACE = "/github/workspace"  # where a container action sees the runner's workspace

_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")
_GATE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
# A branch name git accepts, roughly: no spaces, no "..", no control characters, no leading "-".
_BRANCH = re.compile(r"^(?!-)(?!.*\.\.)(?!.*//)[A-Za-z0-9._/-]{1,200}(?<![./])$")


@dataclass(frozen=True)
class Settings:
    """What the action was asked to do, and where. The token never appears in `repr`."""

    working_directory: Path
    workspace: Path
    config: Optional[Path]
    token: str = field(repr=False)
    github_identity: Optional[str]  # the login the token writes as; None: find out (evalgate.github)
    mode: Mode
    comment: bool
    status_context: Optional[str]  # None: the gate id
    status_per_suite: bool
    fail_on: FailOn
    baseline_store: Literal["github", "dir"]
    baseline_branch: Optional[str]  # None: the config's gate.baseline.branch
    gate_id: Optional[str]  # None: the config's gate.id
    judge_concurrency: Optional[int]
    cache_dir: Optional[Path]
    out: Path
    artifact_dir: Optional[Path]
    event_name: str
    event: Mapping[str, Any] = field(repr=False)
    repository: str
    api_url: str
    server_url: str
    run_id: str
    ref: str
    sha: str
    google_credentials: Optional[Path]  # after mapping a host path into the container
    install: tuple[str, ...] = ()  # pip install arguments for the agent's code and dependencies
    shard: Any = None  # evalgate.shards.Shard: this leg runs only shard K of N
    shards: Optional[Path] = None  # mode merge: the folder holding the legs' output folders
    resume: Optional[Path] = None  # an earlier output folder whose finished agent runs are reused

    @property
    def run_url(self) -> Optional[str]:
        if self.server_url and self.repository and self.run_id:
            return f"{self.server_url}/{self.repository}/actions/runs/{self.run_id}"
        return None


class _Reader:
    """Reads variables and records problems, so every bad setting is reported in one pass."""

    def __init__(self, env: Mapping[str, str]):
        self.env = env
        self.problems: list[Problem] = []

    def raw(self, name: str) -> str:
        return (self.env.get(name) or "").strip()

    def bad(self, name: str, what: str, fix: str) -> None:
        self.problems.append(Problem(None, _label(name), what, fix))


# Variables a workflow sets on the step's `env:`, with no input of their own.
STEP_ENV_ONLY = ("EVALGATE_ARTIFACT_DIR",)
# Inputs whose variable is not their name in capitals.
_INPUT_OF = {"EVALGATE_OUT": "output-dir"}


def _label(name: str) -> str:
    """`EVALGATE_FAIL_ON` -> "input 'fail-on' (EVALGATE_FAIL_ON)"; GitHub's own names stay."""
    if name in STEP_ENV_ONLY:
        return f"{name} (the step's env)"
    if name.startswith("EVALGATE_"):
        return f"input '{_INPUT_OF.get(name) or name[len('EVALGATE_'):].lower().replace('_', '-')}' ({name})"
    return name


# --- one function per field -------------------------------------------------------------


def clean_choice(r: _Reader, name: str, choices: tuple[str, ...], default: str) -> str:
    value = r.raw(name).lower() or default
    if value not in choices:
        r.bad(name, f"'{r.raw(name)}' is not one of {', '.join(choices)}", f"Set it to one of {', '.join(choices)}.")
        return default
    return value


def clean_bool(r: _Reader, name: str, default: bool) -> bool:
    value = r.raw(name).lower()
    if not value:
        return default
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    r.bad(name, f"'{r.raw(name)}' is not true or false", "Set it to true or false.")
    return default


@dataclass(frozen=True)
class Workspace:
    """The workspace as this process sees it, and as the runner names it.

    A container action sees the runner's workspace at /github/workspace (GITHUB_WORKSPACE
    inside the container), while `${{ github.workspace }}` in a workflow is the runner's
    own path (action.yml passes it as EVALGATE_RUNNER_WORKSPACE). Nothing outside the
    workspace is mounted, so every path input must lie inside it.
    """

    root: Path
    host: Optional[PurePosixPath]

    def locate(self, r: _Reader, name: str, value: str, base: Path) -> Optional[Path]:
        """A path input as this process opens it: relative to `base`, or absolute; a runner
        path inside the workspace is mapped to the same file here. None (and a problem)
        when it leads outside the workspace."""
        path = self.mapped(value) or base / value
        relative_to = "the repository's root" if name == "EVALGATE_WORKING_DIRECTORY" else "working-directory"
        try:
            real = path.resolve()
        except (OSError, RuntimeError) as e:  # a symlink loop, say
            r.bad(name, f"'{value}' cannot be followed ({e})", f"Give a real folder or file inside the workspace, relative to {relative_to}.")
            return None
        if not _within(PurePosixPath(real), PurePosixPath(self.root)):
            r.bad(
                name,
                f"'{value}' is outside the workspace ({self.host or self.root}): the action's container sees only the workspace",
                f"Give a path inside the repository's checkout, relative to {relative_to}.",
            )
            return None
        return path

    def mapped(self, value: str) -> Optional[Path]:
        """A runner path inside the workspace, as this process sees it; None for any other path."""
        given = PurePosixPath(value)
        if self.host is None or not given.is_absolute() or not _within(given, self.host):
            return None
        return self.root.joinpath(*given.relative_to(self.host).parts)


def _within(path: PurePosixPath, root: PurePosixPath) -> bool:
    return path == root or root in path.parents


def clean_workspace(r: _Reader, cwd: Path) -> Workspace:
    value = r.raw("GITHUB_WORKSPACE")
    root = Path(value).resolve() if value else cwd.resolve()
    if not root.is_dir():
        r.bad("GITHUB_WORKSPACE", f"'{value}' is not a folder", "Leave it to GitHub Actions, which sets it to the checked-out repository.")
    return Workspace(root, clean_runner_workspace(r))


def clean_runner_workspace(r: _Reader) -> Optional[PurePosixPath]:
    value = r.raw("EVALGATE_RUNNER_WORKSPACE")
    if not value:
        return None
    host = PurePosixPath(value)
    if not host.is_absolute() or ".." in host.parts or host == PurePosixPath("/"):
        r.bad("EVALGATE_RUNNER_WORKSPACE", f"'{value}' is not the runner's absolute path of a workspace", "Leave the input unset: its default is ${{ github.workspace }}.")
        return None
    return host


def clean_working_directory(r: _Reader, ws: Workspace) -> Path:
    value = r.raw("EVALGATE_WORKING_DIRECTORY")
    path = ws.locate(r, "EVALGATE_WORKING_DIRECTORY", value, ws.root) if value else ws.root
    if path is None:
        return ws.root
    if not path.is_dir():
        if value:  # with no value it is the workspace itself, reported as GITHUB_WORKSPACE
            r.bad("EVALGATE_WORKING_DIRECTORY", f"'{value}' is not a folder in the workspace", "Give a folder of the checked-out repository, relative to its root.")
        return ws.root
    return path.resolve()


def clean_config(r: _Reader, ws: Workspace, working_directory: Path) -> Optional[Path]:
    value = r.raw("EVALGATE_CONFIG")
    if not value:
        return None  # evalgate.yaml / .yml / .json in the working directory
    path = ws.locate(r, "EVALGATE_CONFIG", value, working_directory)
    if path is not None and not path.is_file():
        r.bad("EVALGATE_CONFIG", f"'{value}' is not a file (looked in {working_directory})", "Give the config's path relative to the working directory.")
    return path


def clean_token(r: _Reader) -> str:
    return r.raw("EVALGATE_GITHUB_TOKEN")


_LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$")


def clean_github_identity(r: _Reader) -> Optional[str]:
    value = r.raw("EVALGATE_GITHUB_IDENTITY")
    if value and not _LOGIN.match(value):
        r.bad("EVALGATE_GITHUB_IDENTITY", f"'{value}' is not a GitHub login", "Give the login the token writes as, such as github-actions[bot], my-app[bot] or a user's login; or leave it empty.")
        return None
    return value or None


def clean_status_context(r: _Reader) -> Optional[str]:
    value = r.raw("EVALGATE_STATUS_CONTEXT")
    if len(value) > 200 or any(ord(c) < 32 for c in value):
        r.bad("EVALGATE_STATUS_CONTEXT", "is longer than 200 characters or holds control characters", "Use a short name such as 'evalgate'.")
        return None
    return value or None


def clean_baseline_branch(r: _Reader) -> Optional[str]:
    value = r.raw("EVALGATE_BASELINE_BRANCH")
    if value and not _BRANCH.match(value):
        r.bad("EVALGATE_BASELINE_BRANCH", f"'{value}' is not a branch name", "Use a name such as evalgate-data.")
        return None
    return value or None


def clean_gate_id(r: _Reader) -> Optional[str]:
    value = r.raw("EVALGATE_GATE_ID")
    if value and not _GATE_ID.match(value):
        r.bad("EVALGATE_GATE_ID", f"'{value}' cannot name a gate", "Use letters, digits, '.', '_' or '-' (at most 100), starting with a letter or digit.")
        return None
    return value or None


def clean_judge_concurrency(r: _Reader) -> Optional[int]:
    value = r.raw("EVALGATE_JUDGE_CONCURRENCY")
    if not value:
        return None
    try:
        n = int(value)
    except ValueError:
        n = 0
    if not 1 <= n <= 256:
        r.bad("EVALGATE_JUDGE_CONCURRENCY", f"'{value}' is not a whole number from 1 to 256", "Give a number such as 8, or leave it empty for the config's.")
        return None
    return n


def clean_path(r: _Reader, name: str, ws: Workspace, working_directory: Path, default: Optional[str] = None) -> Optional[Path]:
    value = r.raw(name) or default
    return None if not value else ws.locate(r, name, value, working_directory)


def clean_artifact_dir(r: _Reader, ws: Workspace, working_directory: Path) -> Optional[Path]:
    path = clean_path(r, "EVALGATE_ARTIFACT_DIR", ws, working_directory)
    if path is not None and not path.is_dir():
        r.bad("EVALGATE_ARTIFACT_DIR", f"'{r.raw('EVALGATE_ARTIFACT_DIR')}' is not a folder", "Download the pull request run's artifact there first (actions/download-artifact with run-id).")
    return path


def clean_event(r: _Reader) -> Mapping[str, Any]:
    value = r.raw("GITHUB_EVENT_PATH")
    if not value:
        return {}
    try:
        data = json.loads(Path(value).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        r.bad("GITHUB_EVENT_PATH", f"the event payload {value} cannot be read ({e})", "Run evalgate as a step of a GitHub Actions workflow.")
        return {}
    if not isinstance(data, dict):
        r.bad("GITHUB_EVENT_PATH", "the event payload is not a JSON object", "Run evalgate as a step of a GitHub Actions workflow.")
        return {}
    return data


def clean_repository(r: _Reader) -> str:
    value = r.raw("GITHUB_REPOSITORY")
    if value and not _REPOSITORY.match(value):
        r.bad("GITHUB_REPOSITORY", f"'{value}' does not look like owner/name", "Leave it to GitHub Actions, which sets it.")
        return ""
    return value


def clean_url(r: _Reader, name: str, default: str) -> str:
    value = r.raw(name) or default
    if not re.match(r"(?i)^https?://[^\s/]+", value):
        r.bad(name, f"'{value}' is not an http(s) URL", "Leave it to GitHub Actions, which sets it.")
        return default
    return value.rstrip("/")


def clean_sha(r: _Reader) -> str:
    value = r.raw("GITHUB_SHA").lower()
    if value and not _SHA.match(value):
        r.bad("GITHUB_SHA", f"'{value}' is not a full commit SHA", "Leave it to GitHub Actions, which sets it.")
        return ""
    return value


def clean_google_credentials(r: _Reader, ws: Workspace) -> Optional[Path]:
    """GOOGLE_APPLICATION_CREDENTIALS, mapped into the container when it names a host path.

    google-github-actions/auth writes the file into the runner's workspace and exports its
    host path. That path is mapped through the runner's workspace path when it lies inside
    it; otherwise the file is looked for under the workspace by the longest tail of the
    path that exists there.
    """
    value = r.raw("GOOGLE_APPLICATION_CREDENTIALS")
    if not value:
        return None
    given = Path(value)
    if given.is_file():
        return given
    mapped = ws.mapped(value)
    if mapped is not None and mapped.is_file():
        return mapped
    parts = PurePosixPath(value).parts
    for root in dict.fromkeys((ws.root, Path(CONTAINER_WORKSPACE))):
        for i in range(1, len(parts)):
            candidate = root.joinpath(*parts[i:])
            if candidate.is_file():
                return candidate
    r.bad(
        "GOOGLE_APPLICATION_CREDENTIALS",
        f"the credentials file {value} was found neither there nor under the workspace",
        "Run google-github-actions/auth before evalgate (it writes the file into the workspace), or unset the variable.",
    )
    return None


def clean_install(r: _Reader) -> tuple[str, ...]:
    """`pip install` arguments, split as a shell would (no shell runs them)."""
    value = r.raw("EVALGATE_INSTALL")
    if not value:
        return ()
    try:
        args = tuple(shlex.split(value))
    except ValueError as e:
        r.bad("EVALGATE_INSTALL", f"cannot be split into arguments ({e})", "Write pip install arguments, e.g. '-r requirements.txt' or '.'.")
        return ()
    return args


def clean_shard(r: _Reader) -> Any:
    from evalgate.shards import parse_shard

    value = r.raw("EVALGATE_SHARD")
    if not value:
        return None
    try:
        return parse_shard(value)
    except ValueError as e:
        r.bad("EVALGATE_SHARD", str(e), "In a matrix: shard: ${{ matrix.shard }}/3, with shard: [1, 2, 3] in the matrix.")
        return None


def clean_shards(r: _Reader, ws: Workspace, working_directory: Path, mode: str) -> Optional[Path]:
    path = clean_path(r, "EVALGATE_SHARDS", ws, working_directory, "evalgate-shards")
    if mode == "merge" and path is not None and not path.is_dir():
        r.bad(
            "EVALGATE_SHARDS",
            f"'{r.raw('EVALGATE_SHARDS') or 'evalgate-shards'}' is not a folder",
            "Download the legs' artifacts there first (actions/download-artifact with pattern: evalgate-shard-* and path: evalgate-shards).",
        )
    return path if mode == "merge" else None


def clean_resume(r: _Reader, ws: Workspace, working_directory: Path) -> Optional[Path]:
    path = clean_path(r, "EVALGATE_RESUME", ws, working_directory)
    # A folder that is not there is a first attempt (nothing restored yet): run everything.
    return path if path is not None and path.is_dir() else None


def read_settings(env: Mapping[str, str], cwd: Optional[Path] = None) -> Settings:
    """The settings from the environment; raises InputError listing every bad one."""
    r = _Reader(env)
    cwd = cwd or Path.cwd()
    ws = clean_workspace(r, cwd)
    working_directory = clean_working_directory(r, ws)
    settings = Settings(
        working_directory=working_directory,
        workspace=ws.root,
        config=clean_config(r, ws, working_directory),
        token=clean_token(r),
        github_identity=clean_github_identity(r),
        mode=clean_choice(r, "EVALGATE_MODE", MODES, "auto"),  # type: ignore[arg-type]
        comment=clean_bool(r, "EVALGATE_COMMENT", True),
        status_context=clean_status_context(r),
        status_per_suite=clean_bool(r, "EVALGATE_STATUS_PER_SUITE", False),
        fail_on=clean_choice(r, "EVALGATE_FAIL_ON", FAIL_ON, "fail"),  # type: ignore[arg-type]
        baseline_store=clean_choice(r, "EVALGATE_BASELINE_STORE", STORES, "github"),  # type: ignore[arg-type]
        baseline_branch=clean_baseline_branch(r),
        gate_id=clean_gate_id(r),
        judge_concurrency=clean_judge_concurrency(r),
        cache_dir=clean_path(r, "EVALGATE_CACHE_DIR", ws, working_directory),
        out=clean_path(r, "EVALGATE_OUT", ws, working_directory, "evalgate-results") or working_directory / "evalgate-results",
        artifact_dir=clean_artifact_dir(r, ws, working_directory),
        event_name=r.raw("GITHUB_EVENT_NAME"),
        event=clean_event(r),
        repository=clean_repository(r),
        api_url=clean_url(r, "GITHUB_API_URL", "https://api.github.com"),
        server_url=clean_url(r, "GITHUB_SERVER_URL", "https://github.com"),
        run_id=r.raw("GITHUB_RUN_ID"),
        ref=r.raw("GITHUB_REF"),
        sha=clean_sha(r),
        google_credentials=clean_google_credentials(r, ws),
        install=clean_install(r),
        shard=clean_shard(r),
        shards=clean_shards(r, ws, working_directory, r.raw("EVALGATE_MODE").lower()),
        resume=clean_resume(r, ws, working_directory),
    )
    if settings.shard is not None and settings.mode not in ("auto",):
        r.bad("EVALGATE_SHARD", f"a matrix leg (shard {settings.shard}) scores its shard and leaves the rest to the merge job; mode '{settings.mode}' cannot apply to it", "Leave mode at auto on the legs, and set mode: merge on the job that merges them.")
    if r.problems:
        raise InputError(r.problems)
    return settings


def secrets(env: Mapping[str, str]) -> list[str]:
    """Values to mask in the log: the token and the Gemini API keys."""
    names = ("EVALGATE_GITHUB_TOKEN", "GOOGLE_API_KEY", "GEMINI_API_KEY")
    return [v for v in dict.fromkeys((env.get(n) or "").strip() for n in names) if v]

