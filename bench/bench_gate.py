"""Gate simulation: how often the real `compare()` fails an unchanged agent, and how often it
catches a broken one, under a noisy judge. Standard library only (plus evalgate).

    python bench/bench_gate.py                  # --prs 1000 --workers 2 --seed 1

One simulated pull request:

- a suite of 200 single-invocation cases under one judge criterion (think
  final_response_match_v2, threshold 0.8), num_samples 5; each case has a true per-sample
  pass probability: 85% of cases stable, p ~ U(0.97, 1.0); 15% flaky, p ~ U(0.5, 0.8);
- a case's sample verdicts are independent Bernoulli(p) draws, recorded in
  `details["samples"]`; its score is the majority vote of the 5 (issue 3's rule: 1.0 when
  at least 3 are valid, else 0.0);
- five default-branch runs, each drawn independently; the last is the baseline, and all
  five go through `update_ledger()` (the "with history" columns);
- three PR runs, drawn independently of the baseline: nothing changed; 2% of the stable
  cases broken; 5% broken (a broken case fails all of its samples).

With `--agent-runs`, the same world through a deterministic criterion (think
tool_trajectory_avg_score, threshold 1.0) whose noise is the agent's own: the agent runs
each case 5 times (`num_runs: 5`), each run passes with the case's p, and the results carry
the runs as `evalgate run` writes them (`runs`, one invocation per run, score = their mean).
The gate then takes the runs as the criterion's samples.

Each PR run is compared with the real `compare()` (default policy) with and without the
ledger, and with the naive rule "fail if the mean score drops". The three PR runs of one
simulated PR share its cases and baseline. PRs are seeded by (seed, index), so the table
does not depend on --workers.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalgate.compare import GatePolicy, Verdict, compare, update_ledger  # noqa: E402
from evalgate.results import RunResults  # noqa: E402

CASES = 200
SAMPLES = 5
STABLE_SHARE = 0.85
STABLE_P = (0.97, 1.0)
FLAKY_P = (0.5, 0.8)
THRESHOLD = 0.8
HISTORY = 5
SCENARIOS = (("nothing changed", 0.0), ("2% of stable cases broken", 0.02), ("5% of stable cases broken", 0.05))
CRITERION = "final_response_match_v2"
RUNS_CRITERION = "tool_trajectory_avg_score"  # --agent-runs: deterministic, threshold 1.0
RUNS_THRESHOLD = 1.0


def _judged(samples: list[float]) -> dict:
    score = 1.0 if sum(samples) * 2 > SAMPLES else 0.0
    status = "PASSED" if score >= THRESHOLD else "FAILED"
    per = [{"score": score, "status": status, "details": {"samples": samples}}]
    return {"score": score, "status": status, "threshold": THRESHOLD, "per_invocation": per}


def _runs(runs: list[float]) -> dict:
    score = sum(runs) / len(runs)
    status = "PASSED" if score >= RUNS_THRESHOLD else "FAILED"
    per = [{"score": r, "status": "PASSED" if r >= RUNS_THRESHOLD else "FAILED"} for r in runs]
    return {"score": score, "status": status, "threshold": RUNS_THRESHOLD, "per_invocation": per, "runs": runs}


def draw_run(rng: random.Random, ps: list[float], broken: set[int], agent_runs: bool = False) -> RunResults:
    """One run of the suite: 5 judge samples per case, majority vote as the case score; or,
    with `agent_runs`, 5 agent runs per case of a deterministic criterion, their mean."""
    name = RUNS_CRITERION if agent_runs else CRITERION
    cases = []
    passed = 0
    for i, p in enumerate(ps):
        samples = [0.0] * SAMPLES if i in broken else [1.0 if rng.random() < p else 0.0 for _ in range(SAMPLES)]
        result = _runs(samples) if agent_runs else _judged(samples)
        status = result["status"]
        passed += status == "PASSED"
        cases.append(
            {
                "eval_set_id": "bench",
                "eval_id": f"case{i:03d}",
                "expected_digest": f"d{i}",
                "status": status,
                "criteria": {name: result},
            }
        )
    counts = {"cases": len(ps), "passed": passed, "failed": len(ps) - passed, "not_evaluated": 0}
    status = "FAILED" if passed < len(ps) else "PASSED"
    return RunResults.model_validate(
        {
            "config_digest": "bench",
            "status": status,
            "counts": counts,
            "suites": [
                {
                    "name": "judge",
                    "status": status,
                    "not_evaluated_policy": "warn",
                    "counts": counts,
                    "criteria": {name: {"threshold": RUNS_THRESHOLD if agent_runs else THRESHOLD, "version": "1", "judge": not agent_runs}},
                    "cases": cases,
                }
            ],
        }
    )


def mean_score(run: RunResults) -> float:
    cases = run.suites[0].cases
    return sum(next(iter(c.criteria.values())).score for c in cases) / len(cases)  # type: ignore[misc]


def simulate(args: tuple[int, int, int, float, bool]) -> list[tuple[str, str, str]]:
    """One simulated PR: per scenario, (without history, with history, naive) verdicts."""
    seed, index, permutations, alpha, agent_runs = args
    rng = random.Random(f"{seed}/{index}")
    policy = GatePolicy(permutations=permutations, alpha=alpha)
    ps = [rng.uniform(*STABLE_P) if rng.random() < STABLE_SHARE else rng.uniform(*FLAKY_P) for _ in range(CASES)]
    stable = [i for i, p in enumerate(ps) if p >= STABLE_P[0]]
    ledger: dict = {}
    baseline = None
    for _ in range(HISTORY):
        baseline = draw_run(rng, ps, set(), agent_runs)
        ledger = update_ledger(ledger, baseline, policy.history_runs)
    assert baseline is not None
    out = []
    for _, share in SCENARIOS:
        broken = set(rng.sample(stable, round(share * len(stable)))) if share else set()
        current = draw_run(rng, ps, broken, agent_runs)
        without = compare(baseline, current, policy).verdict.value
        with_history = compare(baseline, current, policy, ledger=ledger).verdict.value
        naive = Verdict.FAIL.value if mean_score(current) < mean_score(baseline) else Verdict.PASS.value
        out.append((without, with_history, naive))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prs", type=int, default=1000, help="simulated pull requests (default 1000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--permutations",
        type=int,
        default=GatePolicy().permutations,
        help="random sign flips when the exact test is too large (default: the policy's)",
    )
    parser.add_argument("--alpha", type=float, default=GatePolicy().alpha, help="the policy's alpha (default: the policy's)")
    parser.add_argument("--agent-runs", action="store_true", help="a deterministic criterion with 5 agent runs per case (num_runs) instead of 5 judge samples")
    args = parser.parse_args(argv)

    t0 = time.perf_counter()
    jobs = [(args.seed, i, args.permutations, args.alpha, args.agent_runs) for i in range(args.prs)]
    if args.workers > 1:
        with multiprocessing.Pool(args.workers) as pool:
            results = pool.map(simulate, jobs, chunksize=10)
        elapsed = time.perf_counter() - t0
    else:
        results = [simulate(j) for j in jobs]
        elapsed = time.perf_counter() - t0

    policy = GatePolicy(alpha=args.alpha)
    what = f"{SAMPLES} agent runs of {RUNS_CRITERION} (threshold {RUNS_THRESHOLD:g})" if args.agent_runs else f"{SAMPLES} judge samples"
    print(
        f"{args.prs} simulated PRs per scenario; {CASES} cases, {what}; "
        f"{STABLE_SHARE:.0%} stable p~U{STABLE_P}, {1 - STABLE_SHARE:.0%} flaky p~U{FLAKY_P}; "
        f"policy: alpha {policy.alpha:g}, margin_judge {policy.margin_judge:g}, permutations {args.permutations}"
    )
    print()
    n = args.prs
    rates = {}
    table = [("scenario", "evalgate, no history", "evalgate, 5 runs of history", "naive: mean drops")]
    for s, (label, _) in enumerate(SCENARIOS):
        rows = [r[s] for r in results]
        share = lambda col, verdict: sum(r[col] == verdict for r in rows) / n  # noqa: E731
        rates[label] = (share(0, "FAIL"), share(1, "FAIL"), share(2, "FAIL"))
        table.append(
            (
                label,
                f"{share(0, 'FAIL'):.1%} fail, {share(0, 'INCONCLUSIVE'):.1%} inc.",
                f"{share(1, 'FAIL'):.1%} fail, {share(1, 'INCONCLUSIVE'):.1%} inc.",
                f"{share(2, 'FAIL'):.1%} fail",
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    for j, row in enumerate(table):
        cells = [row[0].ljust(widths[0])] + [cell.rjust(w) for cell, w in zip(row[1:], widths[1:])]
        print("| " + " | ".join(cells) + " |")
        if j == 0:
            print("|" + "|".join(["-" * (widths[0] + 2)] + ["-" * (w + 1) + ":" for w in widths[1:]]) + "|")
    print()
    print("fail = the gate's overall verdict is FAIL; inc. = INCONCLUSIVE (passes with a warning by default).")
    print(f"{elapsed:.1f} s with {args.workers} worker(s)")

    unchanged, two, five = (rates[label] for label, _ in SCENARIOS)
    goals = [
        ("false failures <= 1% (no history)", unchanged[0] <= 0.01),
        ("false failures <= 1% (with history)", unchanged[1] <= 0.01),
        ("detection >= 95% for 2% breakage with history", two[1] >= 0.95),
        ("detection >= 90% for 5% breakage without history", five[0] >= 0.90),
    ]
    print()
    for text, ok in goals:
        print(f"{'met' if ok else 'MISSED'}: {text}")
    return 0 if all(ok for _, ok in goals) else 1


if __name__ == "__main__":
    sys.exit(main())
