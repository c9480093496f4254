"""The gate's statistics: pure functions of numbers, no results or policy types.

How `evalgate.compare` uses them, and why these tests, is in its module docstring
("Statistics" and "Broken stable cases"). In short:

- `sign_flip_p`: one-sided paired sign-flip permutation test of sum(d * |d|), exact up to
  `EXACT_LIMIT` sign patterns, else seeded random flips;
- `mean_interval`: the 95% interval of the mean difference, the sign-flip test inverted in
  its normal approximation (closed form);
- `holm`: weighted Holm step-down adjustment;
- `broken_p`: the chance that a stable case fails all its samples by chance, E[r^m] under a
  Beta posterior of its per-sample failure rate;
- `seed_for`: a per-test generator seed from the policy's seed and the test's names.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections import Counter
from typing import Any, Optional

EXACT_LIMIT = 1 << 16  # sign patterns (up to symmetry) enumerated exactly
Z95 = 1.959963984540054
ROUND = 12  # differences are rounded to this many decimals, so equal moves group exactly



def _groups(values: list[float]) -> tuple[list[tuple[float, int]], float]:
    """Non-zero values grouped by magnitude (ascending), and the observed sum in the same order."""
    magnitudes: Counter[float] = Counter()
    negatives: Counter[float] = Counter()
    for v in values:
        v = round(v, ROUND)
        if v == 0:
            continue
        magnitudes[abs(v)] += 1
        negatives[abs(v)] += v < 0
    groups = sorted(magnitudes.items())
    observed = 0.0
    for a, c in groups:
        observed += a * (c - 2 * negatives[a])
    return groups, observed


def seed_for(seed: int, *names: str) -> int:
    """A generator seed for one test, from the policy's seed and the test's names only."""
    data = "\x1f".join((str(seed),) + names).encode("utf-8")
    return int.from_bytes(hashlib.sha256(data).digest()[:8], "big")


def sign_flip_p(diffs: list[float], permutations: int = 10000, seed: int = 0) -> float:
    """One-sided p-value that the differences are centred below zero (see module docstring).

    The statistic is sum(d * |d|); under the null each difference's sign is a fair coin.
    """
    groups, observed = _groups([d * abs(d) for d in diffs])
    if not groups:
        return 1.0
    tol = 1e-9 * max(1.0, sum(a * c for a, c in groups))
    patterns = 1
    for _, c in groups:
        patterns *= c + 1
    if patterns <= EXACT_LIMIT:
        # Distribution of the sum over all 2^m sign vectors; within a group only the
        # number of negative signs k matters, with weight C(c, k).
        dist: dict[float, int] = {0.0: 1}
        for a, c in groups:
            weights = [math.comb(c, k) for k in range(c + 1)]
            new: dict[float, int] = {}
            for s, w in dist.items():
                for k in range(c + 1):
                    key = s + a * (c - 2 * k)
                    new[key] = new.get(key, 0) + w * weights[k]
            dist = new
        total = 1 << sum(c for _, c in groups)
        hits = sum(w for s, w in dist.items() if s <= observed + tol)
        return hits / total
    rng = random.Random(seed)
    hits = 0
    for _ in range(permutations):
        s = 0.0
        for a, c in groups:
            s += a * (c - 2 * rng.getrandbits(c).bit_count())
        hits += s <= observed + tol
    return (1 + hits) / (1 + permutations)


def mean_interval(diffs: list[float]) -> tuple[Optional[float], Optional[float]]:
    """95% interval of the mean difference: the sign-flip test of the mean, inverted in its
    normal approximation (see the module docstring). None for fewer than 4 differences."""
    n = len(diffs)
    if n <= Z95 * Z95:
        return None, None
    mean = sum(diffs) / n
    var = sum((d - mean) ** 2 for d in diffs) / n
    half = Z95 * math.sqrt(var / (n - Z95 * Z95))
    return max(-1.0, mean - half), min(1.0, mean + half)


def holm(tests: dict[Any, tuple[float, float]]) -> dict[Any, float]:
    """Weighted Holm adjustment: key -> (p, weight) to key -> adjusted p.

    With equal weights this is Holm's step-down procedure: the i-th smallest of m p-values
    is multiplied by m - i + 1, and adjusted p-values never decrease along the order.
    """
    order = sorted(tests, key=lambda k: (tests[k][0] / tests[k][1], k))
    remaining = [0.0] * (len(order) + 1)
    for i in range(len(order) - 1, -1, -1):
        remaining[i] = remaining[i + 1] + tests[order[i]][1]
    out, running = {}, 0.0
    for i, key in enumerate(order):
        p, w = tests[key]
        running = max(running, min(1.0, p / w * remaining[i]))
        out[key] = running
    return out


def broken_p(recorded: list[float], samples_now: list[float], threshold: float) -> float:
    """p-value that a stable case fails all its current samples by chance (module docstring)."""
    m = len(samples_now)
    if m == 0 or any(s >= threshold for s in samples_now):
        return 1.0
    n = len(recorded) * m
    failed = sum((1.0 - o) * m for o in recorded)
    # E[r^m] for r ~ Beta(failed + 1, n - failed + 1): the uniform prior's posterior.
    p = 1.0
    for i in range(m):
        p *= (failed + 1 + i) / (n + 2 + i)
    return p
