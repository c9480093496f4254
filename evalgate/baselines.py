"""Baselines: a run's results kept per commit, where to store them, and how a PR finds its own.

A baseline is a results file plus provenance. Stores keep baselines and the flake ledger
under one layout:

    baselines/<gate_id>/<commit sha>.json.gz
    ledger/<gate_id>.json.gz
    trends/<gate_id>.json.gz      (each criterion's mean per default-branch run: evalgate.gate.trends)

`DirStore` writes it to a directory, `GitHubStore` to a data branch through the REST API.
Files are gzip with a zero timestamp, so the same baseline is always the same bytes.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import shutil
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Protocol

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, TypeAdapter, ValidationError

from evalgate.gate import BaselineInfo, Ledger
from evalgate.errors import InputError, Problem
from evalgate.github import GitHubClient, GitHubConflict, GitHubError
from evalgate.reading import read_known, read_note
from evalgate.results import RunResults
from evalgate.gate.trends import TREND_SCHEMA_VERSION, Trend

BASELINE_SCHEMA_VERSION = 1
LEDGER_SCHEMA_VERSION = 1
DEFAULT_BRANCH = "evalgate-data"
WRITING_EVENTS = frozenset({"push", "schedule", "workflow_dispatch"})

_GATE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_LEDGER = TypeAdapter(dict[str, list[Optional[float]]])


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CriterionProvenance(_Model):
    version: str
    judge: bool = False
    options: dict[str, Any] = Field(default_factory=dict)


class Provenance(_Model):
    commit: str
    ref: str
    created_at: str = Field(description="ISO 8601, UTC.")
    config_digest: str
    evalgate_version: str
    criteria: dict[str, dict[str, CriterionProvenance]] = Field(
        default_factory=dict, description="suite -> criterion -> version, judge flag and options (judge model included)."
    )


class Baseline(_Model):
    schema_version: int = BASELINE_SCHEMA_VERSION
    provenance: Provenance
    results: RunResults
    _read_note: Optional[str] = PrivateAttr(None)  # keys of its file this evalgate ignored (evalgate.reading)


def make_baseline(results: RunResults, commit: str, ref: str, now: datetime) -> Baseline:
    """The baseline of `results`, scored at `commit` on `ref`, made at `now`."""
    if now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)
    criteria = {
        suite.name: {
            name: CriterionProvenance(version=spec.version, judge=spec.judge, options=spec.options)
            for name, spec in sorted(suite.criteria.items())
        }
        for suite in results.suites
    }
    return Baseline(
        provenance=Provenance(
            commit=_check_sha(commit),
            ref=ref,
            created_at=now.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            config_digest=results.config_digest,
            evalgate_version=results.evalgate_version,
            criteria=criteria,
        ),
        results=results,
    )


def may_write_baseline(event_name: str, ref: str, default_branch: str) -> bool:
    """Whether a run may write baselines: a push, schedule or manual run on the default branch.

    `ref` is the full ref (`GITHUB_REF`, e.g. `refs/heads/main`); a bare name is refused so a
    tag called like the branch cannot pass. Pull-request runs never write: a fork could
    otherwise poison the baseline.
    """
    return bool(default_branch) and event_name in WRITING_EVENTS and ref == f"refs/heads/{default_branch}"


def baseline_age(info: BaselineInfo, now: datetime) -> Optional[timedelta]:
    """How old the baseline is at `now`, or None when its time is unknown."""
    if not info.created_at:
        return None
    created = datetime.fromisoformat(info.created_at.replace("Z", "+00:00"))
    if now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)
    return now - created


# --- encoding --------------------------------------------------------------------------


def _gzip_json(value: Any) -> bytes:
    data = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "backslashreplace")
    return gzip.compress(data, compresslevel=9, mtime=0)


def _gunzip_json(data: bytes, where: str) -> Any:
    try:
        return json.loads(gzip.decompress(data).decode("utf-8"))
    except (OSError, EOFError, UnicodeDecodeError, ValueError) as e:
        raise _corrupt(where, f"is not gzip-compressed JSON ({e})") from None


def _first_error(e: ValidationError) -> str:
    """`points.0.commit: String should match pattern ...`: where in the file, and what."""
    first = e.errors(include_url=False)[0]
    return f"{'.'.join(str(p) for p in first.get('loc', ()))}: {first.get('msg')}"


def _corrupt(where: str, what: str) -> InputError:
    return InputError(Problem(where, None, what, "Delete it; the next default-branch run writes a new one."))


def encode_baseline(baseline: Baseline) -> bytes:
    """A baseline's file bytes: canonical JSON, gzip without a timestamp (deterministic)."""
    return _gzip_json(baseline.model_dump(mode="json"))


def baseline_from(value: Any, where: str) -> Baseline:
    """A baseline from its JSON value; keys another evalgate version wrote are ignored and
    named in `read_note(baseline.results)`, where a comparison's reader looks. Raises
    ValidationError when it is not a baseline."""
    baseline = read_known(Baseline, value, where)
    baseline.results._read_note = read_note(baseline)
    return baseline


def decode_baseline(data: bytes, where: str) -> Baseline:
    value = _gunzip_json(data, where)
    try:
        return baseline_from(value, where)
    except ValidationError as e:
        raise _corrupt(where, f"is not an evalgate baseline ({_first_error(e)})") from None


def encode_ledger(gate_id: str, ledger: Ledger) -> bytes:
    return _gzip_json({"schema_version": LEDGER_SCHEMA_VERSION, "gate_id": gate_id, "entries": ledger})


def decode_ledger(data: bytes, where: str) -> Ledger:
    value = _gunzip_json(data, where)
    try:
        if not isinstance(value, dict) or value.get("schema_version") != LEDGER_SCHEMA_VERSION:
            raise ValueError(f"unknown ledger schema_version {value.get('schema_version') if isinstance(value, dict) else None!r}")
        return _LEDGER.validate_python(value.get("entries", {}))
    except (ValidationError, ValueError) as e:
        raise _corrupt(where, f"is not an evalgate flake ledger ({str(e).splitlines()[0]})") from None


def encode_trend(trend: Trend) -> bytes:
    return _gzip_json(trend.model_dump(mode="json"))


def decode_trend(data: bytes, where: str) -> Trend:
    value = _gunzip_json(data, where)
    if not isinstance(value, dict) or value.get("schema_version") != TREND_SCHEMA_VERSION:
        found = value.get("schema_version") if isinstance(value, dict) else None
        raise _corrupt(where, f"is not an evalgate trend file (unknown trend schema_version {found!r})")
    try:
        return read_known(Trend, value, where)
    except ValidationError as e:
        raise _corrupt(where, f"is not an evalgate trend file ({_first_error(e)})") from None


# --- stores ----------------------------------------------------------------------------


class BaselineStore(Protocol):
    """Where baselines and the flake ledger live."""

    gate_id: str

    def load(self, commit: str) -> Optional[Baseline]: ...

    def save(self, baseline: Baseline) -> None: ...

    def load_ledger(self, gate_id: str) -> Ledger: ...

    def save_ledger(self, gate_id: str, update_fn: Callable[[Ledger], Ledger]) -> Ledger: ...

    def load_trend(self, gate_id: str) -> Optional[Trend]: ...

    def save_trend(self, gate_id: str, update_fn: Callable[[Optional[Trend]], Trend]) -> Trend: ...


def baseline_path(gate_id: str, commit: str) -> str:
    return f"baselines/{_check_gate_id(gate_id)}/{_check_sha(commit)}.json.gz"


def ledger_path(gate_id: str) -> str:
    return f"ledger/{_check_gate_id(gate_id)}.json.gz"


def trend_path(gate_id: str) -> str:
    return f"trends/{_check_gate_id(gate_id)}.json.gz"


class DirStore:
    """Baselines in a local directory (local use, tests, or a folder committed to the repo)."""

    def __init__(self, path: Path | str, gate_id: str = "default"):
        self.path = Path(path)
        self.gate_id = _check_gate_id(gate_id)

    def __repr__(self) -> str:
        return f"DirStore({str(self.path)!r}, gate_id={self.gate_id!r})"

    def _bytes(self, file: Path) -> Optional[bytes]:
        """A stored file's content; None when it is absent."""
        try:
            return file.read_bytes()
        except FileNotFoundError:
            return None

    def load(self, commit: str) -> Optional[Baseline]:
        file = self.path / baseline_path(self.gate_id, commit)
        data = self._bytes(file)
        return decode_baseline(data, str(file)) if data is not None else None

    def save(self, baseline: Baseline) -> None:
        file = self.path / baseline_path(self.gate_id, baseline.provenance.commit)
        _replace_atomically(file, encode_baseline(baseline))

    def load_ledger(self, gate_id: str) -> Ledger:
        file = self.path / ledger_path(gate_id)
        data = self._bytes(file)
        return decode_ledger(data, str(file)) if data is not None else {}

    def save_ledger(self, gate_id: str, update_fn: Callable[[Ledger], Ledger]) -> Ledger:
        """Apply update_fn to the stored ledger under a file lock, so concurrent writers lose nothing."""
        file = self.path / ledger_path(gate_id)
        _make_dirs(file.parent)
        with _locked(file.with_suffix(".lock")):
            new = update_fn(self.load_ledger(gate_id))
            _replace_atomically(file, encode_ledger(gate_id, new))
        return new

    def load_trend(self, gate_id: str) -> Optional[Trend]:
        file = self.path / trend_path(gate_id)
        data = self._bytes(file)
        return decode_trend(data, str(file)) if data is not None else None

    def save_trend(self, gate_id: str, update_fn: Callable[[Optional[Trend]], Trend]) -> Trend:
        """Apply update_fn to the stored trend (None: none yet) under a file lock."""
        file = self.path / trend_path(gate_id)
        _make_dirs(file.parent)
        with _locked(file.with_suffix(".lock")):
            new = update_fn(self.load_trend(gate_id))
            _replace_atomically(file, encode_trend(new))
        return new


class GitBranchStore:
    """The github store's data branch as fetched into a local clone (`git fetch origin
    evalgate-data`), read through git: read-only, for `evalgate gate` on a developer's machine."""

    def __init__(self, repo: Path | str, ref: str, gate_id: str = "default"):
        self.repo, self.ref = Path(repo), ref
        self.gate_id = _check_gate_id(gate_id)

    def __repr__(self) -> str:
        return f"GitBranchStore({self.ref!r}, gate_id={self.gate_id!r})"

    def _read(self, path: str) -> Optional[bytes]:
        git = shutil.which("git")
        if git is None:
            return None
        try:
            proc = subprocess.run([git, "-C", str(self.repo), "show", f"{self.ref}:{path}"], capture_output=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            return None
        return proc.stdout if proc.returncode == 0 else None

    def load(self, commit: str) -> Optional[Baseline]:
        path = baseline_path(self.gate_id, commit)
        data = self._read(path)
        return decode_baseline(data, f"{self.ref}:{path}") if data is not None else None

    def load_ledger(self, gate_id: str) -> Ledger:
        path = ledger_path(gate_id)
        data = self._read(path)
        return decode_ledger(data, f"{self.ref}:{path}") if data is not None else {}

    def load_trend(self, gate_id: str) -> Optional[Trend]:
        path = trend_path(gate_id)
        data = self._read(path)
        return decode_trend(data, f"{self.ref}:{path}") if data is not None else None

    def _read_only(self, *_: Any) -> Any:
        raise InputError(Problem(None, "gate.baseline.store", f"{self.ref} is read here through git, not written", "Baselines on the data branch are saved by the action's default-branch runs."))

    save = save_ledger = save_trend = _read_only


def _replace_atomically(file: Path, data: bytes) -> None:
    from evalgate import writing

    writing.write_bytes(file, data)


def _make_dirs(folder: Path) -> None:
    from evalgate import writing

    writing.make_dirs(folder)


@contextlib.contextmanager
def _locked(lock_file: Path) -> Iterator[None]:
    # Opened without following a link: a lock file committed as one would otherwise create
    # (or open for appending) whatever file it points to. A link there is never our lock.
    if os.path.islink(lock_file):
        os.unlink(lock_file)
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0), 0o666)
    with os.fdopen(fd, "a+b") as f:
        try:
            import fcntl
        except ImportError:  # Windows
            import msvcrt

            f.seek(0)
            msvcrt.locking(f.fileno(), msvcrt.LK_LOCK, 1)
            try:
                yield
            finally:
                f.seek(0)
                msvcrt.locking(f.fileno(), msvcrt.LK_UNLCK, 1)
        else:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)


_DATA_BRANCH_README = """\
# evalgate data

This branch is written by evalgate from default-branch runs: the baseline
results of each commit (`baselines/<gate>/<sha>.json.gz`), the per-case flake
ledger (`ledger/<gate>.json.gz`) and each criterion's mean per run
(`trends/<gate>.json.gz`). Files are gzip-compressed JSON. It shares no history with
the code; deleting it makes the next default-branch run start afresh.
"""


class GitHubStore:
    """Baselines on a data branch of the same repository, through the REST API (no git needed).

    The branch is created on first write, as an orphan commit. Each write re-reads the file
    and replaces it with the blob sha it read; a conflicting write is retried from the read.
    """

    def __init__(
        self,
        client: GitHubClient,
        branch: str = DEFAULT_BRANCH,
        gate_id: str = "default",
        *,
        max_attempts: int = 5,
    ):
        self.client = client
        self.branch = branch
        self.gate_id = _check_gate_id(gate_id)
        self.max_attempts = max_attempts
        self._branch_ready = False

    def __repr__(self) -> str:
        return f"GitHubStore({self.client.repository!r}, branch={self.branch!r}, gate_id={self.gate_id!r})"

    def _where(self, path: str) -> str:
        return f"{self.client.repository}@{self.branch}:{path}"

    def load(self, commit: str) -> Optional[Baseline]:
        path = baseline_path(self.gate_id, commit)
        file = self.client.get_file(path, ref=self.branch)
        return None if file is None else decode_baseline(file.content, self._where(path))

    def save(self, baseline: Baseline) -> None:
        commit = baseline.provenance.commit
        data = encode_baseline(baseline)
        self._update(
            baseline_path(self.gate_id, commit),
            lambda _old: data,
            f"evalgate: baseline of {commit[:12]} (gate {self.gate_id})",
        )

    def load_ledger(self, gate_id: str) -> Ledger:
        path = ledger_path(gate_id)
        file = self.client.get_file(path, ref=self.branch)
        return {} if file is None else decode_ledger(file.content, self._where(path))

    def save_ledger(self, gate_id: str, update_fn: Callable[[Ledger], Ledger]) -> Ledger:
        """Apply update_fn to the stored ledger; on a conflicting write, re-read and re-apply."""
        path = ledger_path(gate_id)
        result: dict[str, Ledger] = {}

        def make(old: Optional[bytes]) -> bytes:
            ledger = {} if old is None else decode_ledger(old, self._where(path))
            result["new"] = update_fn(ledger)
            return encode_ledger(gate_id, result["new"])

        self._update(path, make, f"evalgate: flake ledger (gate {gate_id})")
        return result["new"]

    def load_trend(self, gate_id: str) -> Optional[Trend]:
        path = trend_path(gate_id)
        file = self.client.get_file(path, ref=self.branch)
        return None if file is None else decode_trend(file.content, self._where(path))

    def save_trend(self, gate_id: str, update_fn: Callable[[Optional[Trend]], Trend]) -> Trend:
        """Apply update_fn to the stored trend (None: none yet); on a conflicting write, re-read and re-apply."""
        path = trend_path(gate_id)
        result: dict[str, Trend] = {}

        def make(old: Optional[bytes]) -> bytes:
            result["new"] = update_fn(None if old is None else decode_trend(old, self._where(path)))
            return encode_trend(result["new"])

        self._update(path, make, f"evalgate: trend (gate {gate_id})")
        return result["new"]

    def _ensure_branch(self) -> None:
        if self._branch_ready:
            return
        if self.client.branch_head(self.branch) is None:
            self.client.create_orphan_branch(
                self.branch, {"README.md": _DATA_BRANCH_README}, "evalgate: create the data branch"
            )
        self._branch_ready = True

    def _update(self, path: str, make: Callable[[Optional[bytes]], bytes], message: str) -> None:
        """Read, compute, write with the sha read; retry from the read when someone wrote in between."""
        self._ensure_branch()
        for _ in range(max(1, self.max_attempts)):
            current = self.client.get_file(path, ref=self.branch)
            data = make(None if current is None else current.content)
            if current is not None and current.content == data:
                return
            try:
                self.client.put_file(
                    path, data, branch=self.branch, message=message, sha=None if current is None else current.sha
                )
                return
            except GitHubConflict:
                continue
        raise GitHubError(
            f"gave up writing {self._where(path)} after {self.max_attempts} conflicting writes; "
            "other runs kept changing it",
            endpoint=path,
        )


# --- lookup ----------------------------------------------------------------------------


def find_baseline(
    store: BaselineStore,
    base_sha: str,
    first_parent: Callable[[str], Optional[str]],
    max_depth: int = 50,
) -> Optional[tuple[Baseline, BaselineInfo]]:
    """The baseline of `base_sha`, or of its nearest first-parent ancestor within `max_depth` steps."""
    sha: Optional[str] = base_sha
    distance = 0
    while sha is not None:
        baseline = store.load(sha)
        if baseline is not None:
            info = BaselineInfo(
                commit=sha, requested_commit=base_sha, distance=distance, created_at=baseline.provenance.created_at
            )
            return baseline, info
        if distance >= max_depth:
            return None
        sha = first_parent(sha)
        distance += 1
    return None


def git_first_parent(sha: str, cwd: Path | str | None = None) -> Optional[str]:
    """The first parent of `sha` from the local git repository (for the dir store); None at a root commit."""
    git = shutil.which("git")
    if git is None:
        raise InputError(
            Problem(
                None,
                None,
                "the git program was not found, so evalgate cannot walk the commit history to find a baseline",
                "Install git, or use the github baseline store, which needs no git.",
            )
        )
    run = lambda *args: subprocess.run(  # noqa: E731
        [git, *args], cwd=cwd, capture_output=True, text=True, check=False
    )
    listed = run("rev-list", "--parents", "-n", "1", f"{_check_sha(sha)}^{{commit}}", "--")
    if listed.returncode != 0:
        raise InputError(
            Problem(
                str(cwd or "."),
                None,
                f"git cannot find commit {sha}: {listed.stderr.strip() or 'unknown error'}",
                "Run evalgate inside the repository's checkout, with its history fetched.",
            )
        )
    shas = listed.stdout.split()
    if len(shas) > 1:
        return shas[1]
    if run("rev-parse", "--is-shallow-repository").stdout.strip() == "true":
        raise InputError(
            Problem(
                str(cwd or "."),
                None,
                f"commit {sha[:12]} has no parent in this shallow clone, so the history walk stops early",
                "Fetch the history: actions/checkout with fetch-depth: 0, or `git fetch --unshallow`.",
            )
        )
    return None


def _check_gate_id(gate_id: str) -> str:
    if not _GATE_ID.match(gate_id or ""):
        raise InputError(
            Problem(
                None,
                "gate id",
                f"{gate_id!r} cannot name a baseline folder",
                "Use letters, digits, '.', '_' or '-' (at most 100), starting with a letter or digit.",
            )
        )
    return gate_id


def _check_sha(sha: str) -> str:
    if not _SHA.match(sha or ""):
        raise ValueError(f"not a full lowercase commit sha: {sha!r}")
    return sha


def read_baseline_file(path: Path) -> tuple[RunResults, Optional[BaselineInfo]]:
    """(results, baseline info or None) from a results.json or a saved baseline (gzipped or not)."""
    from evalgate.errors import InputError, display_path, parse_json, problems_from_validation, read_text

    shown = display_path(path)
    if path.is_file() and path.read_bytes()[:2] == b"\x1f\x8b":  # gzipped, as the stores keep them
        baseline = decode_baseline(path.read_bytes(), shown)
    else:
        data = parse_json(read_text(path, shown), shown)
        try:
            if isinstance(data, dict) and "provenance" in data:
                baseline = baseline_from(data, shown)
            else:
                return read_known(RunResults, data, shown), None
        except ValidationError as e:
            raise InputError(problems_from_validation(e, shown)) from None
    p = baseline.provenance
    return baseline.results, BaselineInfo(commit=p.commit, requested_commit=p.commit, distance=0, created_at=p.created_at)
