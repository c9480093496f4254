"""Shard benchmark: a 3-leg matrix (`run --shard K/3` x 3, then `merge`) against one runner
(`run`), whole processes, on the same ADK agent and fake model.

    python bench/bench_shards.py    # --cases 300 --latency 0.3 --legs 3 --repeat 1 [--keep]

The workload is bench_inference.py's: the real ADK agent in tests/agents/weather_agent (an
LlmAgent with Python tools) on `--cases` two-turn cases, 4 model calls a case, against one
fake `generateContent` server on 127.0.0.1 that adds `--latency` seconds to every answer.

Sides, each a set of separate processes, as CI would run them:
  one runner   `evalgate run --config evalgate.yaml --out whole` (agent.concurrency default);
  one runner, N x concurrency: the same with agent.concurrency set to legs x the default, as
               many case runs in flight as the whole matrix has: what a bigger concurrency
               alone buys where the model's quota and the agent's machine allow it;
  matrix       `--legs` processes `evalgate run --shard K/N --out leg-K`, started together (a
               matrix's legs run side by side; act runs them in parallel here, each in its own
               container), then `evalgate merge leg-* --out merged` once the last leg ended.
               Its wall time is the slowest leg plus the merge.

On GitHub every leg has a machine of its own; here the legs share this machine's cores, so
the ratio is a floor of what a real matrix gets, not a ceiling. The merged results'
comparable payload must equal the one runner's (the agent and the fake are deterministic).

Prints wall times, the ratio (one runner / matrix), the merge's own time and share, each
leg's cases and time, and peak RSS (ru_maxrss of each child). Exits 1 if a run failed or the
payloads differ.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from agent_model import respond  # noqa: E402
from bench_inference import CALLS_PER_CASE, write_workspace  # noqa: E402
from fake_gemini import FAKE_API_KEY, JUDGE_ENV_VARS, FakeGemini  # noqa: E402

BIN = Path(sys.executable).parent


def _wait(procs: list[subprocess.Popen]) -> list[tuple[int, float, float]]:
    """(exit code, seconds since start, peak RSS MB) of each process, as each one ends."""
    out: dict[int, tuple[int, float, float]] = {}
    started = time.perf_counter()
    pending = {p.pid: i for i, p in enumerate(procs)}
    while pending:
        pid, status, usage = os.wait4(-1, 0)
        if pid in pending:
            out[pending.pop(pid)] = (os.waitstatus_to_exitcode(status), time.perf_counter() - started, usage.ru_maxrss / 1024)
    return [out[i] for i in range(len(procs))]


def _start(cmd: list[str], cwd: Path, env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)


def _comparable(folder: Path) -> str:
    from evalgate import results

    return json.dumps(results.read(folder / "results.json").comparable(), sort_keys=True)


def one_runner(tmp: Path, env: dict[str, str], fake: FakeGemini, tag: str, config: str = "evalgate.yaml") -> dict:
    fake.reset()
    t0 = time.perf_counter()
    proc = _start([str(BIN / "evalgate"), "run", "--config", config, "--out", f"whole-{tag}", "-q"], tmp, env, tmp / f"whole-{tag}.log")
    [(rc, _, rss)] = _wait([proc])
    return {"wall": time.perf_counter() - t0, "rc": rc, "rss": rss, "requests": len(fake.requests), "out": tmp / f"whole-{tag}"}


def matrix(tmp: Path, env: dict[str, str], fake: FakeGemini, legs: int, tag: str) -> dict:
    fake.reset()
    t0 = time.perf_counter()
    procs = [
        _start([str(BIN / "evalgate"), "run", "--config", "evalgate.yaml", "--shard", f"{k}/{legs}", "--out", f"legs-{tag}/leg-{k}", "-q"], tmp, env, tmp / f"leg-{tag}-{k}.log")
        for k in range(1, legs + 1)
    ]
    ended = _wait(procs)
    legs_wall = time.perf_counter() - t0
    t1 = time.perf_counter()
    merge = _start([str(BIN / "evalgate"), "merge", f"legs-{tag}", "--out", f"merged-{tag}", "-q"], tmp, env, tmp / f"merge-{tag}.log")
    [(merge_rc, _, merge_rss)] = _wait([merge])
    merge_wall = time.perf_counter() - t1
    cases = []
    for k in range(1, legs + 1):
        data = json.loads((tmp / f"legs-{tag}" / f"leg-{k}" / "results.json").read_text(encoding="utf-8"))
        cases.append(data["counts"]["cases"])
    return {
        "wall": time.perf_counter() - t0,
        "legs_wall": legs_wall,
        "merge_wall": merge_wall,
        "rc": max([rc for rc, _, _ in ended] + [merge_rc]),
        "leg_times": [t for _, t, _ in ended],
        "leg_cases": cases,
        "rss": max(r for _, _, r in ended),
        "merge_rss": merge_rss,
        "requests": len(fake.requests),
        "out": tmp / f"merged-{tag}",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=300, help="two-turn cases, 4 model calls each (default 300)")
    parser.add_argument("--latency", type=float, default=0.3, help="seconds added to every answer of the fake")
    parser.add_argument("--legs", type=int, default=3, help="matrix legs (default 3)")
    parser.add_argument("--repeat", type=int, default=1, help="rounds; the order of the sides is reversed every round")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder and print its path")
    args = parser.parse_args()
    try:
        import google.adk  # noqa: F401
    except ImportError:
        print("google-adk is not installed: pip install -e '.[test]'", file=sys.stderr)
        return 2

    fake = FakeGemini(respond).start()
    fake.api_key = None
    fake.latency = args.latency
    env = {k: v for k, v in os.environ.items() if k not in JUDGE_ENV_VARS}
    env.update(GOOGLE_API_KEY=FAKE_API_KEY, GOOGLE_GEMINI_BASE_URL=fake.url, PYTHONUNBUFFERED="1")
    env.pop("GITHUB_SHA", None)
    calls = args.cases * CALLS_PER_CASE
    print(f"bench_shards: {args.cases} cases x 4 model calls = {calls} calls; fake Gemini {args.latency:g} s per answer; "
          f"{args.legs} legs; {os.cpu_count()} cores", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="evalgate-bench-shards-"))
    problems: list[str] = []
    whole_runs, matrix_runs, wide_runs = [], [], []
    from evalgate.config import AgentConfig

    wide = AgentConfig.model_fields["concurrency"].default * args.legs
    try:
        write_workspace(tmp, args.cases, [wide])
        subprocess.run([sys.executable, "-c", "import google.adk.runners, evalgate.cli, evalgate.agents.adk_inprocess"], cwd=tmp, env=env, capture_output=True, check=False)
        for r in range(args.repeat):
            order = ["one", "matrix", "wide"] if r % 2 == 0 else ["wide", "matrix", "one"]
            for side in order:
                if side == "wide":
                    run = one_runner(tmp, env, fake, f"wide{r}", f"evalgate-c{wide}.yaml")
                    wide_runs.append(run)
                    print(f"  round {r + 1}: one runner, concurrency {wide}  {run['wall']:6.1f} s  rc {run['rc']}  {run['requests']} requests  {run['rss']:.0f} MB", flush=True)
                elif side == "one":
                    run = one_runner(tmp, env, fake, str(r))
                    whole_runs.append(run)
                    print(f"  round {r + 1}: one runner  {run['wall']:6.1f} s  rc {run['rc']}  {run['requests']} requests  {run['rss']:.0f} MB", flush=True)
                else:
                    run = matrix(tmp, env, fake, args.legs, str(r))
                    matrix_runs.append(run)
                    legs = ", ".join(f"{c} cases {t:.1f} s" for c, t in zip(run["leg_cases"], run["leg_times"]))
                    print(f"  round {r + 1}: matrix      {run['wall']:6.1f} s  rc {run['rc']}  {run['requests']} requests  legs: {legs}; "
                          f"merge {run['merge_wall']:.2f} s ({run['merge_rss']:.0f} MB); legs peak {run['rss']:.0f} MB each at most", flush=True)
                if run["rc"] not in (0, 1):
                    problems.append(f"{side}: exit {run['rc']} (logs in {tmp})")
                if run["requests"] != calls:
                    problems.append(f"{side}: {run['requests']} model requests, expected {calls}")
        for w, m in zip(whole_runs, matrix_runs):
            if _comparable(w["out"]) != _comparable(m["out"]):
                problems.append("the merged results differ from the one runner's")
        one = statistics.median(r["wall"] for r in whole_runs)
        mat = statistics.median(r["wall"] for r in matrix_runs)
        merge = statistics.median(r["merge_wall"] for r in matrix_runs)
        print()
        print(f"one runner {one:.1f} s, {args.legs}-leg matrix {mat:.1f} s (legs side by side, then the merge): "
              f"{one / mat:.2f}x faster; the merge {merge:.2f} s, {merge / mat:.1%} of the matrix's wall time")
        w = statistics.median(r["wall"] for r in wide_runs)
        print(f"one runner at concurrency {wide} (as many in flight as the matrix): {w:.1f} s; the matrix {w / mat:.2f}x faster than it")
        print(f"merged comparable payload equal to the one runner's: {'yes' if not any('differ' in p for p in problems) else 'NO'}")
    finally:
        fake.stop()
        if args.keep:
            print(f"kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    for p in problems:
        print(f"problem: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
