"""How many newly flaky PRs any breakage test could catch in bench_gate --sharper's world.

    python bench/bound_newly_flaky.py            # history 10 and 20, each re-run protocol

bench_gate --sharper's world: 150 trajectories, 88% going off at a rate drawn from U(0, 0.006),
12% from U(0.1, 0.4), runs independent (the trajectory criterion has no judge mood); a case
is stable after `history` clean runs (about 132 are). The PR makes 6 stable cases fail half
the time. A test that knew the world's true population of rates (no estimation: the best a
gate that shrinks each case toward its population can do) weighs each stable case by the
likelihood ratio of what it did (broke now, j of m re-runs failed) under the PR against an
unchanged agent (each grade's chance under the rates' posterior after `history` clean runs),
sums the weights, and FAILs when the sum's exact null tail is below alpha / 7 (the gate's
Holm bar in that world). Printed per protocol: the share of such PRs it catches (Monte Carlo,
--draws), its false FAIL on unchanged PRs, and its re-runs per unchanged PR.

Re-run protocols: "2, +2 if mixed" is control.more's (each suspect 2 re-runs, 2 more when one
failed and one passed); "2, +k unless both failed" re-runs every suspect that passed a re-run
k more times; "k" re-runs every suspect k times. evalgate's further round
(evalgate.gate.control.extension) is "2, +2 if mixed" and, on the PRs where the test comes out
suggestive, "+4 unless all failed" for the cases that fill the ledger's window: between the
first and the second kind, at the first kind's cost on unchanged PRs (bench_gate --sharper
measures it).
"""

from __future__ import annotations

import argparse
import math
import random

ALPHA = 0.01 / 7
CASES, SHARE, STABLE_RATE, FLAKY_RATE = 150, 0.12, (0.0, 0.006), (0.1, 0.4)
AFFECTED = 6


def _binom(n: int, j: int, q: float) -> float:
    return math.comb(n, j) * q**j * (1 - q) ** (n - j) if 0 <= j <= n else 0.0


def protocol(kind: str, k: int) -> list[tuple[str, object]]:
    """[(grade, chance(q))]: the grades a case failing each run with chance q reaches
    (broke now, then re-runs), for one re-run protocol; not breaking is the remaining chance."""
    if kind == "mixed":  # 2 re-runs, k more when they were mixed (control.more: k = 2)
        return ([("0/2", lambda q: q * _binom(2, 0, q)), ("2/2", lambda q: q * _binom(2, 2, q))]
                + [(f"{1 + j}/{2 + k}", (lambda j: lambda q: q * _binom(2, 1, q) * _binom(k, j, q))(j)) for j in range(k + 1)])
    if kind == "unless":  # 2 re-runs, k more unless both failed
        return [("2/2", lambda q: q * _binom(2, 2, q))] + [
            (f"{j}/{2 + k}", (lambda j: lambda q: q * sum(_binom(2, a, q) * _binom(k, j - a, q) for a in (0, 1)))(j)) for j in range(k + 2)]
    return [(f"{j}/{k}", (lambda j: lambda q: q * _binom(k, j, q))(j)) for j in range(k + 1)]  # flat: k re-runs


def posterior(history: int, points: int = 400) -> list[tuple[float, float]]:
    """The true population of rates, on a grid, given `history` clean runs: [(rate, weight)]."""
    grid = [((i + 0.5) / points * (STABLE_RATE[1] - STABLE_RATE[0]) + STABLE_RATE[0], (1 - SHARE) / points) for i in range(points)]
    grid += [((i + 0.5) / points * (FLAKY_RATE[1] - FLAKY_RATE[0]) + FLAKY_RATE[0], SHARE / points) for i in range(points)]
    weighted = [(f, w * (1 - f) ** history) for f, w in grid]
    total = sum(w for _, w in weighted)
    return [(f, w / total) for f, w in weighted]


def bound(history: int, kind: str, k: int, draws: int, seed: int) -> tuple[float, float, float, float, int]:
    """(caught, false FAIL, re-runs per unchanged PR, lucky-flaky share of the stable cases, stable cases)."""
    post = posterior(history)
    stable = round(CASES * sum(w * (1 - f) ** history for f, w in posterior(0)))
    grades = protocol(kind, k)
    null = [sum(w * g(f) for f, w in post) for _, g in grades]
    alt = [g(0.5) for _, g in grades]
    weights = [math.log1p(0.05 * a / n) for a, n in zip(alt, null)]
    step = max(weights) / 200  # the weights on a grid of 200 steps, so the null's convolution is exact on it
    units = [max(1, round(w / step)) for w in weights]
    one = [(0, 1 - sum(null))] + list(zip(units, null))
    total = [1.0]
    for _ in range(stable):  # the sum's exact null distribution over the stable cases
        nxt = [0.0] * (len(total) + max(units))
        for i, a in enumerate(total):
            if a > 1e-300:
                for j, b in one:
                    nxt[i + j] += a * b
        total = nxt
    tail, critical = 0.0, len(total)
    for t in range(len(total) - 1, -1, -1):
        if tail + total[t] > ALPHA:
            break
        tail += total[t]
        critical = t
    rng = random.Random(seed)
    cum_null = _cumulative(null + [1 - sum(null)])
    cum_alt = _cumulative(alt + [1 - sum(alt)])
    units0 = units + [0]

    def draw(cum: list[float]) -> int:
        x = rng.random()
        return next(i for i, c in enumerate(cum) if x < c)

    caught = sum(sum(units0[draw(cum_null)] for _ in range(stable - AFFECTED)) + sum(units0[draw(cum_alt)] for _ in range(AFFECTED)) >= critical
                 for _ in range(draws))
    false = sum(sum(units0[draw(cum_null)] for _ in range(stable)) >= critical for _ in range(draws))
    reruns = stable * sum(c * int(label.split("/")[1]) for (label, _), c in zip(grades, null))
    lucky = sum(w for f, w in post if f >= FLAKY_RATE[0])
    return caught / draws, false / draws, reruns, lucky, stable


def _cumulative(chances: list[float]) -> list[float]:
    out, run = [], 0.0
    for c in chances:
        run += c
        out.append(run)
    out[-1] = 1.0
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(f"6 of ~132 stable trajectories made to fail half the time; a test knowing the true population of rates, at alpha / 7 = {ALPHA:.5f}")
    print()
    print("| history | re-run protocol | lucky flaky among stable | caught | false FAIL | re-runs per unchanged PR |")
    print("|--:|---|--:|--:|--:|--:|")
    for history in (10, 20):
        for kind, k, label in (("mixed", 2, "2, +2 if mixed (control.more)"), ("mixed", 6, "2, +6 if mixed"), ("unless", 2, "2, +2 unless both failed"),
                               ("unless", 4, "2, +4 unless both failed"), ("unless", 6, "2, +6 unless both failed"), ("flat", 8, "8")):
            caught, false, reruns, lucky, _stable = bound(history, kind, k, args.draws, args.seed)
            print(f"| {history} | {label} | {lucky:.2%} | {caught:.1%} | {false:.2%} | {reruns:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
