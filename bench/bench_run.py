"""Whole-process benchmark: `evalgate run` against a script that loads the same files into
ADK 2.13's models and runs ADK's two evaluators, each a fresh process, as a user waits.

    python bench/bench_run.py                    # --cases 6000 --invocations 10000 --seed 1 --repeat 3
    python bench/bench_run.py --scale            # evalgate alone at 1k, 10k and 100k invocations
    python bench/bench_run.py --profile FILE     # also one evalgate run under cProfile, to FILE

The data set (seeded, written to a temporary folder): ADK eval sets (`*.evalset.json`, 1,000
cases a file) of the ADK-shaped cases of tests/adk_cases.py, `--cases` cases holding
`--invocations` invocations, with agent-sized responses in English, Korean and Japanese
(`--texts responses`, bench_scoring.py's) or the parity generator's short edge-case texts
(`--texts edge`); the agent's recorded outputs as ADK eval history (`*.evalset_result.json`,
ADK's own `EvalSetResult`, one a set). Criteria: `tool_trajectory_avg_score` (EXACT, 1.0) and
`response_match_score` (ROUGE-1, 0.8). No agent runs.

Sides, each a new process started the way a user starts it:
  evalgate  `python -m evalgate run --config evalgate.yaml --out OUT --no-color`: loading,
            scoring, results.json, junit.xml, ADK-shaped results, report.html, the summary;
  ADK       a script (ADK_SCRIPT below) that reads the same files into ADK's `EvalSet` and
            `EvalSetResult` and runs `TrajectoryEvaluator` and `RougeEvaluator` on every case:
            loading and scoring only, no files written.

Each pair runs `--repeat` times, alternating which side goes first; printed: the median wall
time of each side, the ratio (ADK / evalgate) of every pair and of the medians, the same
for CPU time (user + system of the child: steadier than wall time on a shared machine),
and each side's peak memory (ru_maxrss of the child). The scores evalgate wrote to results.json must
equal ADK's on every case and criterion (exit 1 otherwise; 2 without google-adk).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import adk_cases as gen  # noqa: E402
from bench_scoring import _use_response_sized_texts  # noqa: E402

GOAL = 20.0
CASES_PER_FILE = 1000
THRESHOLDS = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}

# The ADK side: load the same files into ADK's models, score with ADK's evaluators. It
# writes the scores (a small JSON) so that the parent can check evalgate's against them.
ADK_SCRIPT = r"""
import json, sys
from pathlib import Path
from google.adk.evaluation.eval_set import EvalSet
from google.adk.evaluation.eval_result import EvalSetResult
from google.adk.evaluation.eval_metrics import EvalMetric, ToolTrajectoryCriterion
from google.adk.evaluation.final_response_match_v1 import RougeEvaluator
from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator

folder, out = Path(sys.argv[1]), Path(sys.argv[2])
expected = {}
for path in sorted((folder / "evals").glob("*.evalset.json")):
    eval_set = EvalSet.model_validate_json(path.read_text(encoding="utf-8"))
    for case in eval_set.eval_cases:
        expected[(eval_set.eval_set_id, case.eval_id)] = case.conversation
trajectory = TrajectoryEvaluator(eval_metric=EvalMetric(
    metric_name="tool_trajectory_avg_score",
    criterion=ToolTrajectoryCriterion(threshold=1.0, match_type="EXACT")))
rouge = RougeEvaluator(EvalMetric(metric_name="response_match_score", threshold=0.8))
scores = {}
for path in sorted((folder / "runs").glob("*.evalset_result.json")):
    history = EvalSetResult.model_validate_json(path.read_text(encoding="utf-8"))
    for case in history.eval_case_results:
        actual = [p.actual_invocation for p in case.eval_metric_result_per_invocation]
        want = expected[(case.eval_set_id, case.eval_id)]
        scores[f"{case.eval_set_id}/{case.eval_id}"] = {
            "tool_trajectory_avg_score": trajectory.evaluate_invocations(actual, want).overall_score,
            "response_match_score": rouge.evaluate_invocations(actual, want).overall_score,
        }
out.write_text(json.dumps(scores), encoding="utf-8")
"""


# --- the data set ---------------------------------------------------------------------


def make_cases(seed: int, cases: int, invocations: int) -> list[gen.Case]:
    """`cases` cases of tests/adk_cases.py holding `invocations` invocations in all, spread
    evenly (a generated case shorter than its share is skipped for the next one)."""
    stream = gen.iter_cases(seed)
    out = []
    for i in range(cases):
        share = max(1, (i + 1) * invocations // cases - i * invocations // cases)
        case = next(stream)
        while len(case.expected) < share:
            case = next(stream)
        out.append(gen.Case(f"case-{i:06d}", case.expected[:share], case.actual[:share], case.tags))
    return out


def _history(eval_set_id: str, cases: list[gen.Case]) -> dict[str, Any]:
    """ADK eval history (`EvalSetResult`) holding the cases' actual invocations."""
    return {
        "eval_set_result_id": f"{eval_set_id}_1",
        "eval_set_result_name": f"{eval_set_id}_1",
        "eval_set_id": eval_set_id,
        "eval_case_results": [
            {
                "eval_set_id": eval_set_id,
                "eval_id": c.eval_id,
                "final_eval_status": 1,
                "overall_eval_metric_results": [],
                "eval_metric_result_per_invocation": [
                    {"actual_invocation": a, "expected_invocation": e, "eval_metric_results": []}
                    for a, e in zip(c.actual, c.expected)
                ],
                "session_id": f"s-{c.eval_id}",
            }
            for c in cases
        ],
        "creation_timestamp": 1700000000.0,
    }


def write_dataset(folder: Path, seed: int, cases: int, invocations: int, texts: str) -> int:
    """Write the config, eval sets and eval history into `folder`; return the invocations."""
    data = make_cases(seed, cases, invocations)
    if texts == "responses":
        _use_response_sized_texts(data, seed)
    (folder / "evals").mkdir(parents=True)
    (folder / "runs").mkdir()
    for n, start in enumerate(range(0, len(data), CASES_PER_FILE)):
        chunk = data[start : start + CASES_PER_FILE]
        eval_set_id = f"bench_{n:03d}"
        eval_set = {
            "eval_set_id": eval_set_id,
            "name": f"bench {n}",
            "eval_cases": [{"eval_id": c.eval_id, "conversation": c.expected} for c in chunk],
        }
        (folder / "evals" / f"{eval_set_id}.evalset.json").write_text(
            json.dumps(eval_set, ensure_ascii=False, indent=1), encoding="utf-8"
        )
        (folder / "runs" / f"{eval_set_id}.evalset_result.json").write_text(
            json.dumps(_history(eval_set_id, chunk), ensure_ascii=False, indent=1), encoding="utf-8"
        )
    (folder / "evalgate.yaml").write_text(
        "version: 1\n"
        "suites:\n"
        "  - name: bench\n"
        "    evalsets: evals\n"
        "    actual: runs/*.evalset_result.json\n"
        "    criteria:\n"
        "      tool_trajectory_avg_score: {threshold: 1.0, match_type: EXACT}\n"
        "      response_match_score: 0.8\n",
        encoding="utf-8",
    )
    return sum(len(c.expected) for c in data)


# --- running the sides ----------------------------------------------------------------


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, float, float, float]:
    """(exit code, wall seconds, peak RSS MiB, CPU seconds: user + system) of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
    proc.stderr.close() if proc.stderr else None
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):  # 1: the gate failed, as it does on this data
        print(f"{' '.join(cmd)} exited {proc.returncode}:\n{err}", file=sys.stderr)
    return proc.returncode, seconds, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")  # this checkout's evalgate
    return env


def run_evalgate(folder: Path, out: str, profile: str | None = None) -> tuple[int, float, float, float]:
    prefix = [sys.executable, "-m", "cProfile", "-o", profile] if profile else [sys.executable]
    cmd = [*prefix, "-m", "evalgate", "run", "--config", "evalgate.yaml", "--out", out, "--no-color"]
    return _run(cmd, folder, _env())


def run_adk(folder: Path) -> tuple[int, float, float, float]:
    return _run([sys.executable, "-c", ADK_SCRIPT, str(folder), str(folder / "adk_scores.json")], folder, _env())


def check_scores(folder: Path, out: str) -> list[str]:
    """Where the scores in evalgate's results.json differ from ADK's; [] when they agree."""
    ours = json.loads((folder / out / "results.json").read_text(encoding="utf-8"))
    theirs = json.loads((folder / "adk_scores.json").read_text(encoding="utf-8"))
    seen, problems = set(), []
    for suite in ours["suites"]:
        for case in suite["cases"]:
            key = f"{case['eval_set_id']}/{case['eval_id']}"
            seen.add(key)
            for name, crit in case["criteria"].items():
                if key not in theirs or crit["score"] != theirs[key][name]:
                    problems.append(f"{key} {name}: evalgate {crit['score']!r}, ADK {theirs.get(key, {}).get(name)!r}")
    problems += [f"{key}: scored by ADK only" for key in theirs.keys() - seen]
    return problems


def side_by_side(args: argparse.Namespace, folder: Path, n_inv: int) -> int:
    times: dict[str, list[float]] = {"ADK": [], "evalgate": []}
    cpu: dict[str, list[float]] = {"ADK": [], "evalgate": []}
    rss: dict[str, list[float]] = {"ADK": [], "evalgate": []}
    for r in range(args.repeat):
        for side in ("ADK", "evalgate") if r % 2 == 0 else ("evalgate", "ADK"):
            code, seconds, mib, cpu_s = run_adk(folder) if side == "ADK" else run_evalgate(folder, "out")
            if code not in (0, 1) or (side == "ADK" and code != 0):
                return 1
            times[side].append(seconds)
            cpu[side].append(cpu_s)
            rss[side].append(mib)
            print(f"  run {r + 1} {side:<8} {seconds:7.2f} s wall {cpu_s:7.2f} s CPU  peak RSS {mib:6.0f} MiB", flush=True)
    problems = check_scores(folder, "out")

    a, e = statistics.median(times["ADK"]), statistics.median(times["evalgate"])
    ca, ce = statistics.median(cpu["ADK"]), statistics.median(cpu["evalgate"])
    print(f"\n{n_inv} invocations, {args.cases} cases (seed {args.seed}, texts: {args.texts}); whole processes, "
          f"medians of {args.repeat}, alternating which side goes first; CPU = user + system time of the process\n")
    print(f"{'':<12} {'ADK s':>8} {'evalgate s':>11} {'ADK/evalgate':>13}   {'ADK CPU s':>10} {'evalgate CPU s':>15} {'ratio':>7}")
    for i, (ta, te, pa, pe) in enumerate(zip(times["ADK"], times["evalgate"], cpu["ADK"], cpu["evalgate"]), 1):
        print(f"{'pair ' + str(i):<12} {ta:>8.2f} {te:>11.2f} {ta / te:>12.1f}x   {pa:>10.2f} {pe:>15.2f} {pa / pe:>6.1f}x")
    print(f"{'median':<12} {a:>8.2f} {e:>11.2f} {a / e:>12.1f}x   {ca:>10.2f} {ce:>15.2f} {ca / ce:>6.1f}x")
    print(f"{'peak RSS MiB':<12} {max(rss['ADK']):>8.0f} {max(rss['evalgate']):>11.0f}")
    print(f"goal: evalgate at least {GOAL:.0f}x faster than ADK (wall, medians): {'met' if a / e >= GOAL else 'NOT met'}")
    if problems:
        print(f"\n{len(problems)} scores differ from ADK's:", file=sys.stderr)
        for p in problems[:20]:
            print("  " + p, file=sys.stderr)
        return 1
    print("evalgate's scores in results.json equal ADK's on every case and criterion")
    return 0


def scale(args: argparse.Namespace, base: Path) -> int:
    print("evalgate run, whole process, at growing size (cases: 60% of invocations; median of "
          f"{args.repeat}; texts: {args.texts})\n")
    print(f"{'invocations':>11} {'cases':>7} {'seconds':>8} {'CPU s':>7} {'CPU s / 1k inv':>15} {'peak RSS MiB':>13} {'MiB / 1k inv':>13}")
    for n_inv in (1_000, 10_000, 100_000):
        folder = base / f"scale-{n_inv}"
        n_cases = n_inv * 3 // 5
        write_dataset(folder, args.seed, n_cases, n_inv, args.texts)
        runs = [run_evalgate(folder, "out") for _ in range(args.repeat)]
        if any(code not in (0, 1) for code, _, _, _ in runs):
            return 1
        seconds = statistics.median(s for _, s, _, _ in runs)
        cpu_s = statistics.median(c for _, _, _, c in runs)
        mib = max(m for _, _, m, _ in runs)
        print(f"{n_inv:>11,} {n_cases:>7,} {seconds:>8.2f} {cpu_s:>7.2f} {cpu_s / n_inv * 1000:>15.3f} {mib:>13.0f} {mib / n_inv * 1000:>13.1f}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=6000)
    parser.add_argument("--invocations", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--texts", choices=["responses", "edge"], default="responses")
    parser.add_argument("--scale", action="store_true", help="evalgate alone at 1k, 10k and 100k invocations")
    parser.add_argument("--profile", metavar="FILE", help="also run evalgate once under cProfile, writing FILE")
    parser.add_argument("--keep", metavar="DIR", help="write the data set into DIR (kept) instead of a temporary folder")
    args = parser.parse_args(argv)

    try:
        import google.adk.evaluation  # noqa: F401
    except ImportError:
        print("google-adk is not installed: pip install 'google-adk==2.13.0'", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory(prefix="bench-run-") as tmp:
        base = Path(args.keep) if args.keep else Path(tmp)
        if args.scale:
            return scale(args, base)
        folder = base / "data"
        n_inv = write_dataset(folder, args.seed, args.cases, args.invocations, args.texts)
        if args.profile:
            run_evalgate(folder, "profiled", str(Path(args.profile).resolve()))
            print(f"profile of one evalgate run: {args.profile}")
        return side_by_side(args, folder, n_inv)


if __name__ == "__main__":
    sys.exit(main())
