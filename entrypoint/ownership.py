"""What the action writes into the workspace is handed to the workspace's owner.

GitHub runs a container action as root, so the files it writes into the workspace belong
to root. Later steps run as the runner's user: they can read those files, but not change or
delete them, and on a self-hosted runner the next job's checkout fails to clean the
workspace ("permission denied"). So, when running as root in a workspace someone else
owns, the action gives its own output folders (and any folder it created on the way to
them) to that owner. Nothing outside the workspace is touched.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable


def hand_back(paths: Iterable[Path], workspace: Path) -> list[str]:
    """chown each path (recursively) and its folders up to the workspace to the workspace's
    owner. Returns one message per failure; does nothing unless running as root in a
    workspace that root does not own."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return []
    workspace = workspace.resolve()
    owner = workspace.stat()
    if owner.st_uid == 0:
        return []
    failures: list[str] = []

    def give(path: Path) -> None:
        try:
            st = path.lstat()
            if (st.st_uid, st.st_gid) != (owner.st_uid, owner.st_gid):
                os.lchown(path, owner.st_uid, owner.st_gid)
        except OSError as e:
            failures.append(f"could not hand {path} to the workspace's owner: {e.strerror or e}")

    for top in dict.fromkeys(p.resolve() for p in paths):
        if top == workspace or workspace not in top.parents or not os.path.lexists(top):
            continue
        for folder in reversed(top.parents):  # the folders created on the way, below the workspace
            if workspace in folder.parents:
                give(folder)
        give(top)
        if top.is_dir() and not top.is_symlink():
            for root, dirs, files in os.walk(top):
                for name in dirs + files:
                    give(Path(root) / name)
    return failures
