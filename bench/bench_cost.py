"""Cost benchmark: `gate.efficiency` on simulated token counts and agent seconds (stdlib only).

    python bench/bench_cost.py        # --cases 150 --prs 300 --history 10 --seed 1

Drives the gate's own public functions: each default-branch run and each pull request's run
is a `RunResults` whose cases carry `efficiency` values, the flake ledger is written by
`evalgate.gate.ledger.update_ledger` and the verdict is `evalgate.gate.compare` with
`gate.efficiency` set (evalgate.gate.efficiency says how the test works). Anyone can reproduce it.

The world (one suite of `--cases` cases; evalgate.gate.efficiency's model on the log scale,
log x[i, t] = mu[i] + r[t] + e[i, t]):
  - sizes: tokens per turn ~ lognormal around 4,000 (sd 0.7 on the log scale); agent
    seconds per turn ~ lognormal around 3 s (sd 0.5);
  - tokens vary from run to run case by case: 80% of the cases only by the answer's length
    (sd 3%: the prompt, tools and history are the same every run); 20% have a
    nondeterministic trajectory: in a run they take 0, 1 or 2 extra model calls
    (probability 0.6, 0.3, 0.1), each adding 35% of the turn's tokens;
  - a run-level shift of every case's tokens: sd 1% (a serving change) in the calm world,
    3% in the "moody" one;
  - seconds: each case varies by 10% on its own, and a whole run by 15% (a shared machine
    that is busier in some runs than in others);
  - `--tests` - 1 deterministic criteria that do not move sit beside, so the Holm family holds
    about as many tests as a real gate's (the issue's world had 7).
History: `--history` default-branch runs in the ledger, the baseline last. Pull requests:
  unchanged: a new run of the same agent;
  +20% on half: tokens per turn x1.2 on a random half of the cases (the rest unchanged);
  (seconds) +20% on half: the same for the agent's seconds;
  (wandering) at the tolerance: every case's tokens x1.05, H0's edge: a FAIL there is a
  false one, so its rate checks the test's calibration (at most alpha).
Each is gated with the tolerance `--tolerance` (0.05) on the metric, with the ledger and
without it (then evalgate.gate.efficiency's assumed run-to-run sd applies).

Goals (issue 29): with a tolerated increase of 5%, a PR that raises tokens per turn by 20% on
half the cases FAILs in at least 95% of PRs; an unchanged agent whose token counts vary run
to run in under 1%. Prints each figure and its ratio to the goal; a missed goal is printed,
not an exit code.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from evalgate.gate import GatePolicy, Verdict, compare, update_ledger  # noqa: E402
from evalgate.efficiency import DURATION, TOKENS  # noqa: E402
from evalgate.results import (  # noqa: E402
    CaseResult,
    Counts,
    CriterionResult,
    CriterionSpec,
    EfficiencyResult,
    EfficiencyValue,
    RunInfo,
    RunResults,
    Status,
    SuiteResult,
)

EXTRA_CALL = 0.35  # a nondeterministic trajectory's extra model call adds this share of the turn's tokens
EXTRA_CALLS = ((0, 0.6), (1, 0.3), (2, 0.1))
MACHINE_SD = 0.15  # a whole run's seconds: a shared machine busier in some runs than in others
# (label, each case's own sd of log tokens, share of cases with a nondeterministic trajectory, run-level sd of log tokens)
WORLDS = {
    "steady": ("steady tokens", 0.05, 0.0, 0.0),
    "wandering": ("wandering trajectories", 0.03, 0.2, 0.0),
    "wobble": ("wandering, serving wobble", 0.03, 0.2, 0.01),
}


class World:
    def __init__(self, cases: int, criteria: int, own_sd: float, wandering: float, run_sd: float, rng: random.Random):
        self.n = cases
        self.rng = rng
        self.own_sd, self.run_sd = own_sd, run_sd
        self.tokens = [4000 * math.exp(rng.gauss(0, 0.7)) for _ in range(cases)]
        self.seconds = [3.0 * math.exp(rng.gauss(0, 0.5)) for _ in range(cases)]
        self.wandering = [rng.random() < wandering for _ in range(cases)]
        self.criteria = ["response_match_score"] + [f"custom_{k}" for k in range(1, criteria)]
        self.specs = {name: CriterionSpec(threshold=0.5, version="1", judge=False) for name in self.criteria}
        passed = CriterionResult(score=1.0, status=Status.PASSED, threshold=0.5)
        self.passed = {name: passed for name in self.criteria}

    def _extra(self) -> int:
        u, acc = self.rng.random(), 0.0
        for k, p in EXTRA_CALLS:
            acc += p
            if u < acc:
                return k
        return EXTRA_CALLS[-1][0]

    def run(self, token_factor: dict[int, float] | None = None, second_factor: dict[int, float] | None = None) -> RunResults:
        rng = self.rng
        shift, machine = rng.gauss(0, self.run_sd), rng.gauss(0, MACHINE_SD)
        cases = []
        for i in range(self.n):
            own = rng.gauss(0, self.own_sd) + (math.log1p(EXTRA_CALL * self._extra()) if self.wandering[i] else 0.0)
            tokens = round(self.tokens[i] * math.exp(shift + own) * (token_factor or {}).get(i, 1.0))
            seconds = round(self.seconds[i] * math.exp(machine + rng.gauss(0, 0.10)) * (second_factor or {}).get(i, 1.0), 3)
            eff = {
                TOKENS: EfficiencyResult(value=tokens, per_invocation=[EfficiencyValue(value=tokens, details={"total_tokens": tokens})]),
                DURATION: EfficiencyResult(value=seconds, per_invocation=[EfficiencyValue(value=seconds, details={"total_seconds": seconds})]),
            }
            cases.append(CaseResult(eval_set_id="s", eval_id=f"case-{i:04d}", expected_digest="sha256:0", status=Status.PASSED, criteria=self.passed, efficiency=eff))
        suite = SuiteResult(name="agent", status=Status.PASSED, not_evaluated_policy="warn", counts=Counts.of(cases), criteria=self.specs, cases=cases)
        return RunResults(evalgate_version="bench", config_digest="c", status=Status.PASSED, counts=suite.counts, suites=[suite], run=RunInfo())


def _half(world: World, factor: float) -> dict[int, float]:
    return {i: factor for i in world.rng.sample(range(world.n), world.n // 2)}


def trial(args, world_name: str, scenario: str, metric: str, seed: int) -> dict[str, tuple[bool, float, float, float]]:
    """One pull request: a new world's history, its baseline, the PR's run, gated with and without the ledger."""
    _, own_sd, wandering, run_sd = WORLDS[world_name]
    world = World(args.cases, args.criteria, own_sd, wandering, run_sd, random.Random(seed))
    ledger, base = None, None
    for _ in range(args.history):
        base = world.run()
        ledger = update_ledger(ledger, base, 10)
    if scenario == "unchanged":
        pr = world.run()
    elif scenario == "tokens":
        pr = world.run(token_factor=_half(world, 1.2))
    elif scenario == "edge":
        pr = world.run(token_factor={i: 1 + args.tolerance for i in range(world.n)})
    else:
        pr = world.run(second_factor=_half(world, 1.2))
    policy = GatePolicy.model_validate({"efficiency": {metric: args.tolerance}})
    out = {}
    for label, led in (("history", ledger), ("none", None)):
        result = compare(base, pr, policy, ledger=led)
        row = next(r for r in result.suites[0].costs if r.metric == metric)
        out[label] = (result.verdict is Verdict.FAIL, row.change, row.run_sd, row.p_adjusted)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=150)
    ap.add_argument("--prs", type=int, default=100, help="pull requests per world and scenario")
    ap.add_argument("--history", type=int, default=10, help="default-branch runs in the ledger (the baseline last)")
    ap.add_argument("--criteria", type=int, default=3, help="criteria beside, that do not move (each adds a drop and a breakage test to Holm)")
    ap.add_argument("--tolerance", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--worlds", default="steady,wandering,wobble,seconds")
    args = ap.parse_args()
    started = time.monotonic()
    plan = []
    for name in args.worlds.split(","):
        if name == "seconds":
            plan += [("seconds", "wandering", "unchanged", DURATION, "max", 0.01), ("seconds", "wandering", "seconds", DURATION, None, None)]
        else:
            plan += [(name, name, "unchanged", TOKENS, "max", 0.01), (name, name, "tokens", TOKENS, "min", 0.95)]
            if name == "wandering":  # H0's edge: every case exactly at the tolerance
                plan.append((name, name, "edge", TOKENS, "max", 0.01))
    names = {"unchanged": "unchanged", "tokens": "tokens +20% on half", "seconds": "seconds +20% on half", "edge": f"tokens +{args.tolerance:.0%} on all (at the tolerance)"}
    rows = []
    for w, (label, world, scenario, metric, kind, goal) in enumerate(plan):
        fails = {"history": 0, "none": 0}
        changes, sds, least = [], [], 1.0
        for k in range(args.prs):
            got = trial(args, world, scenario, metric, args.seed * 1_000_003 + w * 10_007 + k)
            for which in fails:
                fails[which] += got[which][0]
            changes.append(got["history"][1])
            sds.append(got["history"][2])
            least = min(least, got["history"][3])
        title = f"seconds (machine sd {MACHINE_SD:.0%})" if label == "seconds" else f"{WORLDS[world][0]} (run sd {WORLDS[world][3]:.1%})"
        rows.append((title, names[scenario], fails, sorted(changes)[len(changes) // 2], sorted(sds)[len(sds) // 2], least, kind, goal))
        print(f"  {title}, {names[scenario]}: {fails} of {args.prs}, least adjusted p {least:.2g} ({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)

    print(f"\n{args.cases} cases, {args.history} runs of history, tolerance +{args.tolerance:.0%}, {2 * args.criteria + 1} tests in the Holm family, {args.prs} PRs each\n")
    print("| world | pull request | median change | median run sd (measured) | least p after Holm | FAIL, with history | FAIL, no history | goal | ratio (with history) |")
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|")
    for world, scenario, fails, change, sd, least, kind, goal in rows:
        rate = fails["history"] / args.prs
        none = fails["none"] / args.prs
        if goal is None:
            goal_text, ratio = "-", "-"
        elif kind == "max":
            goal_text, ratio = f"< {goal:.0%}", f"{rate / goal:.2f}"
        else:
            goal_text, ratio = f">= {goal:.0%}", f"{rate / goal:.2f}"
        print(f"| {world} | {scenario} | {change * 100:+.1f}% | {sd:.3f} | {least:.2g} | {rate:.1%} | {none:.1%} | {goal_text} | {ratio} |")
    print(f"\n{time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
