"""Shards: split a run's cases over N machines (a CI matrix), each running shard K of N.

A case's shard is a hash of (suite, eval_set_id, eval_id), reduced modulo N. It depends
on nothing but the case's own key and N, so adding cases never moves an existing case to
another shard (its judge and simulator cache entries keep hitting on the same leg), and
SHA-256 spreads the keys evenly: for a suite of C cases each shard holds C/N on average,
give or take about sqrt(C/N).

Every shard's results.json records which shard it is (`shard`), from which config digest
and commit; `evalgate merge` (evalgate.merge) puts the shards back together.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from evalgate.engine import SuitePlan
from evalgate.i18n import _, listing

MAX_SHARDS = 256


@dataclass(frozen=True)
class Shard:
    """Shard `index` of `count` (1-based, as GitHub's matrix and people count)."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """'K/N' to a Shard; a ValueError says what is wrong and what would be right."""
    head, sep, tail = text.strip().partition("/")
    try:
        index, count = int(head), int(tail)
    except ValueError:
        index = count = 0
    if not sep or not 1 <= count <= MAX_SHARDS or not 1 <= index <= count:
        raise ValueError(f"'{text}' is not a shard: write K/N, with N from 1 to {MAX_SHARDS} and K from 1 to N (for example 2/3)")
    return Shard(index, count)


def shard_of(suite: str, eval_set_id: str, eval_id: str, count: int) -> int:
    """The shard (1 to count) that holds a case."""
    key = "\0".join((suite, eval_set_id, eval_id)).encode("utf-8")
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") % count + 1


def sizes(plans: list[SuitePlan], count: int) -> list[int]:
    """How many cases each of `count` shards holds, over all suites."""
    out = [0] * count
    for plan in plans:
        for case in plan.cases:
            out[shard_of(plan.name, case.eval_set_id, case.eval_id, count) - 1] += 1
    return out


def select(plans: list[SuitePlan], shard: Shard) -> str:
    """Keep only the shard's cases in each plan (in place; a suite may keep none). Returns
    the line that says so: 'shard 2/3: 37 of 110 cases (the 3 shards hold 36, 37, 37 cases)'."""
    whole, held = sum(len(p.cases) for p in plans), describe(plans, shard.count)
    for plan in plans:
        plan.cases = [c for c in plan.cases if shard_of(plan.name, c.eval_set_id, c.eval_id, shard.count) == shard.index]
    return _("shard {shard}: {cases} of {whole} cases (the {count} shards hold {held})", shard=shard, cases=sum(len(p.cases) for p in plans), whole=whole, count=shard.count, held=held)


def describe(plans: list[SuitePlan], count: int) -> str:
    """'12, 11, 13 cases' for shards 1..count."""
    # TRANSLATORS: {sizes} is a list of case counts, one a shard: "12, 11, 13".
    return _("{sizes} cases", sizes=listing(str(n) for n in sizes(plans, count)))


def current_commit(folder: Path) -> Optional[str]:
    """The commit being evaluated: GITHUB_SHA under GitHub Actions, else the checkout's HEAD;
    None outside a git checkout. Shards of different commits must not be merged."""
    sha = os.environ.get("GITHUB_SHA", "").strip().lower()
    if sha:
        return sha
    git = shutil.which("git")
    if git is None:
        return None
    try:
        out = subprocess.run([git, "rev-parse", "--verify", "-q", "HEAD"], cwd=folder, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip().lower() or None if out.returncode == 0 else None
