"""Config and data paths stay inside the project: the git work tree holding the config, else the config's folder.

A config (and the eval sets, outputs and criteria files it names) may come from a pull
request. Were its paths free, it could make evalgate read any file the job can: another
checkout's data, the runner's files, `/proc/self/environ` as "inference output" that then
appears in the PR comment; or write its judge cache and baselines anywhere. So every path
the config names must resolve, symbolic links followed, to a place inside the project root:
an absolute path elsewhere, a `..` that climbs out and a link that leads out are each an
input error naming the config's place. The root is the git work tree that holds the config
(found by its `.git`, no git program needed), so a monorepo's configs may share eval sets;
outside any work tree it is the config's own folder.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Iterable, Optional

from evalgate.errors import Problem

# A loaded config (evalgate.config.LoadedConfig): not imported, as the config's own readers
# (agents-cli's eval config) use this module.
LoadedConfig = Any

FIX = (
    "Keep eval sets, agent outputs, criteria files, the judge cache and baselines inside the repository "
    "(the git work tree that holds the config; outside one, the config's folder): copy the file in, or move the config up."
)


def project_root(base: Path) -> Path:
    """The git work tree holding `base` (the config's folder), else `base` itself; resolved."""
    return _root(Path(base).resolve())  # resolved first: a relative base depends on the working folder


@functools.lru_cache(maxsize=64)
def _root(base: Path) -> Path:
    for folder in (base, *base.parents):
        if (folder / ".git").exists():
            return folder
    return base


def escapes(path: Path, root: Path) -> bool:
    """Whether `path`, symbolic links followed (it need not exist yet), leads outside `root`."""
    try:
        real = Path(path).resolve()
    except (OSError, RuntimeError):  # a link loop: not a place inside the project either
        return True
    return real != root and root not in real.parents


def outside(loaded: LoadedConfig, paths: Iterable[Path], given: str, where: str) -> list[Problem]:
    """One problem for the first of `paths` (named in the config as `given`, at `where`)
    that leads outside the project."""
    root = project_root(loaded.base)
    for path in paths:
        if escapes(path, root):
            shown = str(Path(path).resolve())
            via = "" if shown == given else f" ({shown})"
            return [Problem(loaded.shown, where, f"'{given}'{via} leads outside the project ({root})", FIX)]
    return []


def config_path_problems(loaded: LoadedConfig) -> list[Problem]:
    """The config's own paths that are not eval data: criteria files, the judge cache, the
    baseline folder. (Eval sets, `actual` and traces are checked as they are expanded.)"""
    problems: list[Problem] = []

    def check(value: Optional[str], *loc) -> None:
        if value:
            path = Path(value)
            problems.extend(outside(loaded, [path if path.is_absolute() else loaded.base / path], value, loaded.where(*loc)))

    config = loaded.config
    for i, suite in enumerate(config.suites):
        if isinstance(suite.criteria, str):
            check(suite.criteria, "suites", i, "criteria")
    check(config.judge.cache_dir, "judge", "cache_dir")
    check(config.gate.baseline.path, "gate", "baseline", "path")
    return problems
