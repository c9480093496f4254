"""What the action writes into the workspace is handed to the workspace's owner.

GitHub runs a container action as root, so the files it writes into the workspace belong
to root. Later steps run as the runner's user: they can read those files, but not change or
delete them, and on a self-hosted runner the next job's checkout fails to clean the
workspace ("permission denied"). So, when running as root in a workspace someone else
owns, the action gives what it wrote to that owner.

What counts as written by this run: an entry under one of the action's output folders (or
a folder made on the way to one) that root owns and that was modified since the run
started. The walk never follows a symbolic link, changes links themselves rather than what
they point to, and skips files with several hard links (one of them could be outside the
workspace), so nothing outside the workspace changes owner. Failures become warnings; this
never fails the run.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Iterable


def hand_back(paths: Iterable[Path], workspace: Path, since: float) -> list[str]:
    """Give root-owned entries modified at or after `since` (a time.time()), under each of
    `paths` and on the way to them from the workspace, to the workspace's owner. Returns
    one message per failure; does nothing unless running as root in a workspace root does
    not own."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return []
    failures: list[str] = []
    try:
        workspace = workspace.resolve(strict=True)
        owner = workspace.stat()
    except (OSError, RuntimeError) as e:
        return [f"could not read the workspace's owner: {e}"]
    if owner.st_uid == 0:
        return []
    ids = (owner.st_uid, owner.st_gid)

    def ours(st: os.stat_result) -> bool:
        if st.st_uid != 0 or st.st_mtime < since:
            return False
        return not (stat.S_ISREG(st.st_mode) and st.st_nlink > 1)

    def give(name: str, dir_fd: int | None = None) -> None:
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if ours(st):
                os.chown(name, *ids, dir_fd=dir_fd, follow_symlinks=False)
        except OSError as e:
            failures.append(f"could not hand {name} to the workspace's owner: {e.strerror or e}")

    for given in dict.fromkeys(paths):
        try:
            top = _inside(given, workspace)
        except (OSError, RuntimeError) as e:  # a symlink loop, say: leave it alone
            failures.append(f"could not hand {given} to the workspace's owner: {e}")
            continue
        if top is None:
            continue
        for folder in reversed(top.parents):  # the folders made on the way, below the workspace
            if workspace in folder.parents:
                give(str(folder))
        if top != workspace:
            give(str(top))
        if not top.is_dir() or top.is_symlink():
            continue
        for _root, dirs, files, root_fd in os.fwalk(top, follow_symlinks=False):
            for name in dirs + files:
                give(name, dir_fd=root_fd)
    return failures


def _inside(path: Path, workspace: Path) -> Path | None:
    """`path` with its folders' links resolved but not its last part, when it exists and lies
    inside the workspace; else None."""
    if not os.path.lexists(path):
        return None
    real = path.parent.resolve(strict=True) / path.name
    if real != workspace and workspace not in real.parents:
        return None
    return real
