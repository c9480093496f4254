"""Judge reply cache: one JSON file per request, named by the sha256 of everything that shapes the reply.

The key covers the judge model, system instruction, prompt, response schema, generation
settings, sample index, criterion and the criterion's prompt version, so a changed case
(or prompt) misses and an unchanged one hits. A Vertex AI evaluation (`eval_cache_key`) is
keyed by the kind "vertex", the metric, the instance JSON, the criterion and its prompt
version, and keeps its result as JSON text in the same kind of file. Files live at
`root/ab/abcdef….json` (works with `actions/cache`), are written atomically, and a file that
cannot be read is a miss. Only successful replies are stored; the runtime decides that.

Links (issue 34): an entry is never read or written through a symbolic link, the key folder
`ab/` or the file itself (refused as "link"); in the action's pull request runs no folder
on the way from the workspace may be one either (evalgate.writing). A pull request could
otherwise commit `ab/` as a link to a folder outside (its verdicts written there), or to
entries it committed elsewhere, which git then tracks under another name.

Provenance (issue 26): a cached verdict is believed as the judge's answer, so who wrote it
matters. A file tracked by git in the checkout is never read (it came with the code under
test, not from a judge run: a pull request could commit "valid" verdicts for its own
changes). Every entry names the run that wrote it (`CachePolicy.writer`: a default-branch
run, a pull request run, another branch's, or a local run), and a policy may believe only
some writers: a pull request run believes only entries written by default-branch runs, plus
the ones it wrote itself in this process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import struct
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

from evalgate import writing
from evalgate.judge.request import JudgeRequest
from evalgate.vertex.service import EvalRequest

log = logging.getLogger(__name__)

CACHE_FORMAT = 1  # bump when the key or the file changes meaning: old entries then miss
WRITERS = ("default", "pull_request", "branch", "local")


@dataclass(frozen=True)
class CachePolicy:
    """Who this run is, as a writer of cache entries, and whose entries it believes.

    `writer`: "default" (a run of the default branch: its pushes, schedules, manual runs and
    the trusted workflow_run job), "pull_request", "branch" (another branch's run) or "local"
    (outside GitHub Actions). `event` and `ref` are the writer's, for the record. `believe`:
    the writers whose entries are read; None reads every entry (still never a tracked file).
    """

    writer: str = "local"
    event: str = ""
    ref: str = ""
    believe: Optional[frozenset[str]] = None

    def record(self) -> dict[str, str]:
        return {"kind": self.writer, "event": self.event, "ref": self.ref}


@dataclass(frozen=True)
class CachedReply:
    text: str
    usage: dict[str, int] = field(default_factory=dict)


def cache_key(request: JudgeRequest) -> str:
    """sha256 (hex) of the canonical JSON of everything that shapes the judge's reply."""
    payload = {
        "format": CACHE_FORMAT,
        "criterion": request.criterion,
        "prompt_version": request.prompt_version,
        "model": request.model,
        "system": request.system,
        "prompt": request.prompt,
        "response_schema": request.response_schema,
        "config": [[str(k), v] for k, v in sorted(request.config, key=lambda item: str(item[0]))],
        "sample": request.sample,
    }
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_not_json)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def eval_cache_key(request: EvalRequest) -> str:
    """sha256 (hex) of everything that shapes a Vertex AI evaluation's result."""
    payload = {
        "format": CACHE_FORMAT,
        "kind": "vertex",
        "criterion": request.criterion,
        "prompt_version": request.prompt_version,
        "metric": request.metric,
        "instance": request.instance_json,
    }
    if request.metric_spec_json is not None:  # a metric of the criterion's own (keys of managed metrics unchanged)
        payload["metric_spec"] = request.metric_spec_json
    if request.autorater_config_json is not None:  # the judge's settings (keys without them unchanged)
        payload["autorater_config"] = request.autorater_config_json
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


# One run of the action opens several caches on the same folder: the scoring's, then gate.pairwise's
# after the agent ran. Inside `session()`, a pull request's policy judges every one of them by the
# folder as the first one found it (and believes what any of them wrote), so an entry the agent
# planted after that is not taken for one that "was there when the cache was opened".
# (entry stamps, keys written, files git tracks) of a folder, as the run first found it.
_session: Optional[dict[Path, tuple[dict[str, tuple[int, int, int]], set[str], Optional[frozenset[str]]]]] = None
_session_lock = threading.Lock()
_sealed = False  # snapshot() was called in this session: a folder it did not see has no view


@contextlib.contextmanager
def session() -> Iterator[None]:
    """One run: caches opened inside it share the first one's view of each folder (above)."""
    global _session, _sealed
    with _session_lock:
        _session, _sealed = {}, False
    try:
        yield
    finally:
        with _session_lock:
            _session, _sealed = None, False


def snapshot(root: Path) -> None:
    """Inside a `session`: take the folder's view now, before any project code runs, for the
    caches the run opens later (a no-op outside a session, or when already taken). Once a
    view was taken so, a folder of no snapshot opened later in the session (one project code
    named meanwhile) has an empty view: nothing in it was there before the run."""
    global _sealed
    key = Path(root).resolve()
    with _session_lock:
        if _session is not None:
            _sealed = True
            if key not in _session:
                _session[key] = (_stamps(Path(root)), set(), tracked_files(Path(root)))


class JudgeCache:
    """Content-addressed files under `root`, read under a `CachePolicy`.

    `refused` counts the entries present but not believed, by reason ("link": the entry or
    its folder is a symbolic link; "tracked": the file is tracked by git; "writer": written by a run the policy does not believe; "unknown":
    git could not say which files it tracks, so nothing was read; "late": under a policy
    that believes only some writers, a file that appeared or changed after the cache was
    opened, and not by this process).

    The writer an entry records is not signed, and the agent under test runs in the same
    job, before the judge reads the cache: under a pull request's policy it could write
    entries that claim to be a default-branch run's. So such a policy also believes only the
    files that were there, unchanged, when the cache was opened (before any agent ran; an
    entry's inode and ctime, which no unprivileged process can set back), and the ones this
    process wrote.
    """

    def __init__(self, root: Path, policy: CachePolicy = CachePolicy()):
        self.root = Path(root)
        self.policy = policy
        self.refused: dict[str, int] = {}
        self._own: set[str] = set()  # keys this process wrote: believed whoever we are
        self._tracked: Optional[frozenset[str]] = None
        self._tracked_known = False
        self._lock = threading.Lock()
        self._opened = None
        if policy.believe is not None:
            # What git tracks is asked now too, not at the first read: project code running
            # in between could `git init` inside the folder and make committed entries look
            # untracked.
            with _session_lock:
                shared = _session.get(self.root.resolve()) if _session is not None else None
                if shared is None:
                    # In a run whose views were taken before project code ran, a folder none
                    # was taken of holds nothing from before: only what this run writes counts.
                    shared = ({} if _sealed else _stamps(self.root), self._own, tracked_files(self.root))
                    if _session is not None:
                        _session[self.root.resolve()] = shared
            self._opened, self._own, self._tracked = shared
            self._tracked_known = True
            if self._tracked is None:
                log.warning("judge cache %s: git cannot say which of its files are tracked, so no cached "
                            "verdict is used (install git, or move the cache out of the repository)", self.root)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Optional[CachedReply]:
        """The stored reply, or None when absent, unreadable (a corrupt file is a miss), tracked
        by git, or written by a run the policy does not believe."""
        return self.lookup(key)[0]

    def lookup(self, key: str) -> tuple[Optional[CachedReply], bool]:
        """(the stored reply or None, whether an entry was there but not believed)."""
        reply = self._read(key)
        return (reply, False) if reply is not False else (None, True)

    def _read(self, key: str) -> Any:
        # The reply, None for a miss, False for an entry refused (counted in `refused`).
        path = self.path(key)
        if _linked(path):
            return self._refuse("link") if os.path.lexists(path) else None
        try:
            raw = _read_no_link(path)
        except (OSError, ValueError):
            return None
        with self._lock:
            own = key in self._own
        if not own and self._opened is not None and self._opened.get(f"{key[:2]}/{key}.json") != _stamp(path):
            return self._refuse("late")
        if not own:
            tracked = self._tracked_files()
            if tracked is None:
                return self._refuse("unknown")
            if f"{key[:2]}/{key}.json" in tracked:
                return self._refuse("tracked")
        try:
            data = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT or data.get("key") != key:
            return None
        if not own and self.policy.believe is not None:
            writer = data.get("writer")
            if not isinstance(writer, dict) or writer.get("kind") not in self.policy.believe:
                return self._refuse("writer")
        text, usage = data.get("text"), data.get("usage", {})
        if not isinstance(text, str) or not text.strip() or not isinstance(usage, dict):
            return None
        if not all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in usage.items()):
            return None
        return CachedReply(text, dict(usage))

    def put(self, key: str, text: str, usage: dict[str, int]) -> None:
        """Store a reply atomically (write a temporary file beside it, then rename over)."""
        target = self.path(key)
        if _linked(target.parent):
            raise writing.LinkRefused(target, target.parent)
        data = json.dumps(
            {"format": CACHE_FORMAT, "key": key, "text": text, "usage": dict(usage), "writer": self.policy.record()},
            ensure_ascii=False,
            sort_keys=True,
        )
        writing.write_text(target, data)  # a new file renamed over the entry, never through a link
        with self._lock:
            self._own.add(key)


    def _refuse(self, reason: str) -> bool:
        with self._lock:
            self.refused[reason] = self.refused.get(reason, 0) + 1
        return False

    def _tracked_files(self) -> Optional[frozenset[str]]:
        """Entry paths (relative to the root, "/"-separated) that git tracks; None when that
        cannot be known (then nothing is believed). Asked once per cache."""
        with self._lock:
            if not self._tracked_known:
                self._tracked = tracked_files(self.root)
                self._tracked_known = True
                if self._tracked is None:
                    log.warning("judge cache %s: git cannot say which of its files are tracked, so no cached "
                                "verdict is used (install git, or move the cache out of the repository)", self.root)
            return self._tracked


def _linked(path: Path) -> bool:
    """Whether an entry (or key folder) `path` is, or is reached through, a symbolic link:
    the key folder, the file, or (in the action's pull request runs) any folder from the
    workspace down (evalgate.writing)."""
    path = Path(path)
    return os.path.islink(path) or os.path.islink(path.parent) or writing.first_link(path) is not None


def _read_no_link(path: Path) -> str:
    """The file's text, opened without following a link (one made since `_linked` looked)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "r", encoding="utf-8") as f:
        return f.read()


def _stamp(path: Path) -> Optional[tuple[int, int, int]]:
    """(inode, size, ctime in ns) of a file (not of what a link points to): any write or
    replacement changes it."""
    try:
        st = path.lstat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_ctime_ns)


def _stamps(root: Path) -> dict[str, tuple[int, int, int]]:
    """The stamp of every entry file under `root`, by its path relative to `root`."""
    out: dict[str, tuple[int, int, int]] = {}
    if not root.is_dir() or writing.first_link(root) is not None:
        return out
    for path in root.glob("*/*.json"):
        if _linked(path):  # never read: no view of it either
            continue
        stamp = _stamp(path)
        if stamp is not None:
            out[path.relative_to(root).as_posix()] = stamp
    return out


def tracked_files(root: Path) -> Optional[frozenset[str]]:
    """The files under `root` that git tracks (paths relative to `root`): empty when `root`
    is not inside a git work tree. Asked of `git ls-files`; without a git program (the
    action's image has none) read from the repository's index file (`read_index`). None
    when it is inside a work tree but neither can answer: the caller must then trust no
    file in it."""
    root = Path(root)
    if not root.is_dir():
        return frozenset()
    real = root.resolve()
    top = next((folder for folder in (real, *real.parents) if (folder / ".git").exists()), None)
    if top is None:
        return frozenset()
    git = shutil.which("git")
    if git is None:
        listed = read_index(top)
        if listed is None:
            return None
        prefix = real.relative_to(top).as_posix()
        if prefix == ".":
            return frozenset(listed)
        return frozenset(p[len(prefix) + 1:] for p in listed if p.startswith(prefix + "/"))
    try:
        # safe.directory: the action's container runs as root in a checkout another user owns,
        # where git otherwise refuses to read the repository at all.
        out = subprocess.run(
            [git, "-c", "safe.directory=*", "-c", "core.quotePath=false", "ls-files", "-z", "--", "."],
            cwd=root, capture_output=True, timeout=60, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return frozenset(p.decode("utf-8", "surrogateescape") for p in out.stdout.split(b"\0") if p)


def read_index(top: Path) -> Optional[frozenset[str]]:
    """The paths (relative to the work tree `top`, "/"-separated) in its git index, read
    from the file itself (index versions 2, 3 and 4, SHA-1 or SHA-256 repositories). None
    when it cannot be read for certain: a split or sparse index, an unknown version, a
    damaged file."""
    dot = top / ".git"
    try:
        if dot.is_file():  # a worktree or submodule: "gitdir: <path>"
            text = dot.read_text(encoding="utf-8").strip()
            if not text.startswith("gitdir:"):
                return None
            gitdir = (top / text[len("gitdir:"):].strip()).resolve()
        else:
            gitdir = dot
        common = gitdir
        if (gitdir / "commondir").is_file():
            common = (gitdir / (gitdir / "commondir").read_text(encoding="utf-8").strip()).resolve()
        index = gitdir / "index"
        if not index.exists():
            return frozenset()  # nothing was ever added
        data = index.read_bytes()
        config = (common / "config").read_text(encoding="utf-8", errors="replace") if (common / "config").is_file() else ""
    except OSError:
        return None
    hash_size = 32 if re.search(r"(?im)^\s*objectformat\s*=\s*sha256\s*$", config) else 20
    return _parse_index(data, hash_size)


def _parse_index(data: bytes, hash_size: int) -> Optional[frozenset[str]]:
    if len(data) < 12 + hash_size or data[:4] != b"DIRC":
        return None
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3, 4):
        return None
    pos, paths, previous = 12, set(), b""
    fixed = 40 + hash_size + 2  # times, dev, ino, mode, uid, gid, size; object id; flags
    try:
        for _ in range(count):
            start = pos
            mode = struct.unpack(">I", data[pos + 24:pos + 28])[0]
            flags = struct.unpack(">H", data[pos + fixed - 2:pos + fixed])[0]
            pos += fixed
            if flags & 0x4000:  # extended flags (version 3 and later)
                if version < 3:
                    return None
                pos += 2
            if version == 4:
                strip, pos = _varint(data, pos)
                end = data.index(b"\0", pos)
                if strip > len(previous):
                    return None
                name = previous[:len(previous) - strip] + data[pos:end]
                pos = end + 1
            else:
                end = data.index(b"\0", pos)
                name = data[pos:end]
                pos = start + ((end - start) // 8 + 1) * 8  # NUL padding to a multiple of 8
            if mode & 0o170000 == 0o040000:  # a sparse index's folder entry hides the files in it
                return None
            previous = name
            paths.add(name.decode("utf-8", "surrogateescape"))
        if pos > len(data) - hash_size:
            return None
        if b"link" == data[pos:pos + 4]:  # a split index keeps entries in another file
            return None
    except (struct.error, ValueError, IndexError):
        return None
    return frozenset(paths)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """git's offset varint (index version 4): 7 bits a byte, each continuation adding one."""
    byte = data[pos]
    value = byte & 0x7F
    pos += 1
    while byte & 0x80:
        byte = data[pos]
        value = ((value + 1) << 7) | (byte & 0x7F)
        pos += 1
    return value, pos


def _not_json(value: Any) -> Any:
    # Generation settings come from JSON/YAML config, so this is a programming error: say which value.
    raise TypeError(f"judge cache key: {type(value).__name__} value {value!r} is not JSON")
