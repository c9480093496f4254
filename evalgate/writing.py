"""Writing files a pull request's checkout cannot redirect: a new file renamed into place, never through a link.

The action runs as root in a checkout the pull request wrote. A file it committed as a
symbolic link where evalgate writes (`evalgate-results/report.md` -> a file of the runner,
a judge cache folder -> a folder outside) would have evalgate's output written wherever
the link points. So every file is written as a new file beside its place and renamed over
it (`os.replace`): an existing link is replaced, never followed.

A folder on the way can be a link too. Inside `confined(root)` (the action's `pr`,
`merge_group` and `publish` runs, with the workspace as root) no path under the root may
pass through one: writing there raises `LinkRefused`, an OSError, which the callers
already turn into "cannot write". Elsewhere (a local run, a default-branch run) a folder
the user linked is theirs to choose.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from pathlib import Path
from typing import IO, Iterator, Optional

_root: Optional[Path] = None  # inside `confined`: no link below it is followed
_UMASK = os.umask(0o022)
os.umask(_UMASK)


class LinkRefused(OSError):
    """A path that passes through a symbolic link, inside `confined`."""

    def __init__(self, path: Path, link: Path):
        target = os.readlink(link) if os.path.islink(link) else "?"
        super().__init__(errno.ELOOP, f"{link} is a symbolic link (to {target}); evalgate does not follow links the pull request may have made", str(path))
        self.link = link


@contextlib.contextmanager
def confined(root: Optional[Path]) -> Iterator[None]:
    """Within: no path under `root` is followed through a link (None: no confinement)."""
    global _root
    before, _root = _root, Path(os.path.abspath(root)) if root is not None else None
    try:
        yield
    finally:
        _root = before


def is_confined() -> bool:
    return _root is not None


def first_link(path: Path, root: Optional[Path] = None) -> Optional[Path]:
    """The first component of `path` (as written, made absolute, not resolved) below `root`
    (the confinement's by default) that is a symbolic link, the path itself included; None
    when there is none, or `path` is not under the root."""
    root = root if root is not None else _root
    if root is None:
        return None
    here = Path(os.path.abspath(path))
    try:
        parts = here.relative_to(root).parts
    except ValueError:
        return None
    current = Path(root)
    for part in parts:
        current = current / part
        if os.path.islink(current):
            return current
    return None


def check(path: Path) -> None:
    """Raise LinkRefused when, inside `confined`, `path` passes through (or is) a link."""
    link = first_link(path)
    if link is not None:
        raise LinkRefused(Path(path), link)


def _new_file(folder: Path, name: str) -> tuple[int, str]:
    """A new file beside `name` in `folder` (never an existing one), with the permissions
    `open()` would give it (mkstemp's are 0600)."""
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)
    except OSError:
        pass
    return fd, tmp


def make_dirs(folder: Path) -> None:
    """`folder.mkdir(parents=True, exist_ok=True)`, not through a link inside `confined`."""
    check(folder)
    Path(folder).mkdir(parents=True, exist_ok=True)


@contextlib.contextmanager
def replacing(path: Path, mode: str = "w") -> Iterator[IO]:
    """A file opened for writing (`mode` "w" for UTF-8 text, "wb" for bytes) whose content
    replaces `path` when the block ends without an error; an existing link at `path` is
    replaced, never written through."""
    path = Path(path)
    make_dirs(path.parent)
    fd, tmp = _new_file(path.parent, path.name)
    try:
        # Writing never fails on text: a lone surrogate (an agent's, a judge's: no UTF-8 file can
        # hold one) is written as its escape, "\udXXX" (in JSON it reads back as it was).
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8", "errors": "backslashreplace"})) as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_bytes(path: Path, data: bytes) -> None:
    with replacing(path, "wb") as f:
        f.write(data)


def write_text(path: Path, text: str) -> None:
    """UTF-8, as `Path.write_text(text, encoding="utf-8")` writes it."""
    with replacing(path, "w") as f:
        f.write(text)


def open_stream(path: Path) -> IO:
    """A new, empty UTF-8 text file put at `path` at once (replacing what was there, a link
    included), open for writing: for a file written as the run goes."""
    path = Path(path)
    make_dirs(path.parent)
    fd, tmp = _new_file(path.parent, path.name)
    try:
        os.replace(tmp, path)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace")
