"""What a user waits for (issue 38): `evalgate run` beside `adk eval`, an agent and a judge, whole processes.

    python bench/bench_wait.py     # --cases 60 --latency 0.3 --repeat 2 --faults 0.05
                                   # [--baseline-root /path/to/an/older/checkout] [--skip-adk-eval] [--keep]

One fake `generateContent` server (tests/fake_gemini.py) in this process on 127.0.0.1 answers
both the agent's model and the judge after `--latency` seconds, as a hosted model does. The
agent is tests/agents/weather_agent (an LlmAgent with a real Python tool), copied into a temp
folder beside a generated eval set of `--cases` one-turn cases (each a get_weather call and an
answer: 2 model calls) and its `test_config.json`: tool_trajectory_avg_score 1.0,
response_match_score 0.8 and final_response_match_v2 0.8 with 5 judge samples. The fake tells
a judge request from the agent's by the tools the agent declares; it judges every answer
valid, in the shape each side reads (evalgate's structured verdict, ADK's
`is_the_agent_response_valid` JSON). Every side is a separate process reaching the fake through
GOOGLE_API_KEY and GOOGLE_GEMINI_BASE_URL, as it would reach Gemini.

Sides, each round (the order reversed every other round):
  adk eval      `adk eval weather_agent evals/bench.evalset.json` (2.13, as a user runs it: the
                test_config.json beside the eval set, its defaults otherwise);
  evalgate      `evalgate run --config evalgate.yaml --out DIR --no-cache` (the suite names the
                eval set folder only: the same test_config.json), defaults otherwise;
  evalgate, faults  the same with `--faults` of the agent's model requests (every 1/faults-th,
                alternately) answered 503 or dropped without an answer;
  evalgate (baseline)  with --baseline-root: the same as `evalgate` from another checkout
                (PYTHONPATH), to measure before and after in one run.

The floor at evalgate's own concurrency, as issue 38 defines it: importing what the run imports
(measured, a process that imports evalgate's CLI, its ADK runner and google-adk's Runner) +
every request's latency spread over the slots evalgate had (results.json
run.agent.shared_slots: the judge and the agent share one model here, so one budget of
max(agent.concurrency, judge.concurrency) = 16; else agent.concurrency) + one case's
critical path (its 2 model calls and one judge round). It leaves out google-adk's own work
per model call on the one event loop (bench_inference.py measured 20-25 ms of CPU a call,
which queues as more calls are in flight).

Checks (exit 1 on any): every side exits 0 or 1 as it should and scored every case; the
statuses of evalgate's cases equal `adk eval`'s; under faults every case is still scored
(no NOT_EVALUATED) and every failed request was sent again (google-genai resends a 503 or a
dropped request itself under the retry options evalgate gives an agent that set none; a
case run that still fails is started again, counted in results.json's `retried`). A missed goal (evalgate
<= 1.2x its floor; >= 4x less wall time than `adk eval`; faults <= 1.3x the clean run) is
printed, not an exit code. Exit 2 without google-adk.
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
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import fake_gemini  # noqa: E402
from agent_model import respond as agent_respond  # noqa: E402
from bench_inference import CITIES, FIRST, _turn  # noqa: E402
from fake_gemini import FAKE_API_KEY, JUDGE_ENV_VARS, FakeGemini, dropped, error, prompt_text  # noqa: E402
from fake_http import Reply  # noqa: E402

APP = "weather_agent"
EVAL_SET_ID = "wait"
SAMPLES = 5
CRITERIA = {
    "tool_trajectory_avg_score": 1.0,
    "response_match_score": 0.8,
    "final_response_match_v2": {"threshold": 0.8, "judge_model_options": {"judge_model": "gemini-2.5-flash", "num_samples": SAMPLES}},
}
BIN = Path(sys.executable).parent
GOAL_FLOOR = 1.2  # evalgate's wall time / its floor, at most
GOAL_ADK = 4.0  # adk eval's wall time / evalgate's, at least
GOAL_FAULTS = 1.3  # evalgate's wall time with faults / without, at most
AGENT_CALLS = 2  # per case: the tool call, the answer


def make_eval_set(n: int) -> dict[str, Any]:
    cases = []
    for i in range(n):
        city = CITIES[i % len(CITIES)]
        case: dict[str, Any] = {"eval_id": f"case{i:03d}", "conversation": [_turn("t1", FIRST[i % len(FIRST)].format(n=f"#{i:04d}", city=city), city)]}
        if i % 2 == 0:
            case["session_input"] = {"app_name": APP, "user_id": f"user{i % 7}", "state": {"units": "metric"}}
        cases.append(case)
    return {"eval_set_id": EVAL_SET_ID, "name": "wait bench", "eval_cases": cases}


class Responder:
    """The agent's model (tests/agent_model.py) and a judge that finds every answer valid; with
    `faults`, every round(1/faults)-th request of the agent's is answered 503 or dropped, by turns."""

    def __init__(self) -> None:
        self.faults = 0.0
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.agent_requests = 0
            self.judge_requests = 0
            self.injected = {"503": 0, "dropped": 0}

    def __call__(self, body: Any) -> Any:
        if (body or {}).get("tools"):  # the agent declares its tools; a judge request has none
            with self._lock:
                self.agent_requests += 1
                n = self.agent_requests
                every = round(1 / self.faults) if self.faults else 0
                fault = None
                if every and n % every == every // 2:
                    fault = "503" if (n // every) % 2 == 0 else "dropped"
                    self.injected[fault] += 1
            if fault == "503":
                return error(503, "The model is overloaded. Please try again later.")
            if fault == "dropped":
                return dropped()
            return agent_respond(body)
        with self._lock:
            self.judge_requests += 1
        prompt = prompt_text(body)
        config = (body or {}).get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("response_json_schema") or {}
        if "verdict" in (schema.get("properties") or {}):  # evalgate's final_response_match_v2
            return {"reasoning": "the answer gives the forecast the reference gives", "verdict": "valid"}
        if '"is_the_agent_response_valid"' in prompt:  # ADK's final_response_match_v2
            return '{\n  "reasoning": "the answer gives the forecast the reference gives",\n  "is_the_agent_response_valid": "valid"\n}'
        return Reply(400, {"error": {"code": 400, "message": "bench: a request that is neither the agent's nor a judge's", "status": "INVALID_ARGUMENT"}})


@dataclass
class Side:
    key: str
    label: str
    cmd: list[str]
    out: Path
    env: dict[str, str] = field(default_factory=dict)
    faults: float = 0.0


@dataclass
class Run:
    side: str
    wall: float
    rc: int
    cpu: float
    agent_requests: int
    judge_requests: int
    failed_requests: int
    max_in_flight: int
    statuses: dict[str, str]
    log: Path
    slots: Optional[int] = None
    retried: int = 0
    injected: dict[str, int] = field(default_factory=dict)
    time_lines: list[str] = field(default_factory=list)


def run_side(side: Side, fake: FakeGemini, responder: Responder, env: dict[str, str], cwd: Path, round_no: int) -> Run:
    if side.out.exists():
        shutil.rmtree(side.out)
    history = cwd / APP / ".adk" / "eval_history"
    if side.key == "adk_eval" and history.exists():
        shutil.rmtree(history)
    log = cwd / "logs" / f"{side.key}-{round_no}.log"
    log.parent.mkdir(exist_ok=True)
    fake.reset()
    responder.reset()
    responder.faults = side.faults
    with open(log, "wb") as fh:
        t0 = time.perf_counter()
        proc = subprocess.Popen(side.cmd, cwd=cwd, env={**env, **side.env}, stdout=fh, stderr=subprocess.STDOUT)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    run = Run(
        side=side.key, wall=wall, rc=os.waitstatus_to_exitcode(status), cpu=usage.ru_utime + usage.ru_stime, agent_requests=responder.agent_requests, judge_requests=responder.judge_requests,
        failed_requests=sum(1 for r in fake.requests if r.status != 200), max_in_flight=fake.max_in_flight, statuses={}, log=log,
        injected=dict(responder.injected),
    )
    try:
        if side.key == "adk_eval":
            files = sorted(history.glob("*.evalset_result.json"))
            data = json.loads(files[-1].read_text(encoding="utf-8"))
            if isinstance(data, str):
                data = json.loads(data)
            names = {1: "PASSED", 2: "FAILED", 3: "NOT_EVALUATED"}
            run.statuses = {r["eval_id"]: names.get(r["final_eval_status"], str(r["final_eval_status"])) for r in data["eval_case_results"]}
        else:
            results = json.loads((side.out / "results.json").read_text(encoding="utf-8"))
            run.statuses = {c["eval_id"]: c["status"] for s in results["suites"] for c in s["cases"]}
            agent = (results.get("run") or {}).get("agent") or {}
            run.slots = agent.get("shared_slots") or agent.get("concurrency") or 16
            run.retried = sum(u.get("retried", 0) for u in (agent.get("suites") or {}).values())
            text = log.read_text(encoding="utf-8", errors="replace")
            run.time_lines = [line for line in text.splitlines() if line.startswith(("Where the time went", "Most of the waiting"))]
    except (OSError, ValueError, KeyError, IndexError) as e:
        run.statuses = {"(outputs)": f"could not read: {type(e).__name__}: {e}"}
    return run


def import_seconds(env: dict[str, str], cwd: Path, root: Path) -> float:
    """Wall time of a process importing what `evalgate run` imports to run an ADK agent (median of 3)."""
    code = "import evalgate.cli, evalgate.infer, evalgate.engine, evalgate.agents.adk_inprocess, google.adk.runners, google.genai"
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], cwd=cwd, env={**env, "PYTHONPATH": str(root)}, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=60)
    parser.add_argument("--latency", type=float, default=0.3, help="seconds added to every answer of the fake (model and judge)")
    parser.add_argument("--repeat", type=int, default=2, help="rounds; the order of the sides is reversed every other round")
    parser.add_argument("--faults", type=float, default=0.05, help="share of the agent's model requests answered 503 or dropped (0: no faults side)")
    parser.add_argument("--baseline-root", type=Path, default=None, help="another checkout of evalgate, timed as `evalgate (baseline)`")
    parser.add_argument("--skip-adk-eval", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder (logs, outputs) and print its path")
    args = parser.parse_args()
    try:
        import google.adk.version as adk_version
    except ImportError:
        print("google-adk is not installed: pip install -e '.[test]'", file=sys.stderr)
        return 2

    responder = Responder()
    fake = FakeGemini(responder).start()
    fake.api_key = None
    fake.latency = args.latency
    env = {k: v for k, v in os.environ.items() if k not in JUDGE_ENV_VARS and k != "PYTHONPATH"}
    env.update(GOOGLE_API_KEY=FAKE_API_KEY, GOOGLE_GEMINI_BASE_URL=fake.url, PYTHONUNBUFFERED="1", ADK_DISABLE_LOAD_DOTENV="1")
    tmp = Path(tempfile.mkdtemp(prefix="evalgate-bench-wait-"))
    problems: list[str] = []
    print(f"bench_wait: {args.cases} cases x (2 model calls + final_response_match_v2, {SAMPLES} samples); fake Gemini "
          f"{args.latency:g} s per answer (model and judge); google-adk {adk_version.__version__}; {os.cpu_count()} cores; "
          f"faults {args.faults:.0%} of the model's requests", flush=True)
    try:
        shutil.copytree(ROOT / "tests" / "agents" / APP, tmp / APP, ignore=shutil.ignore_patterns("__pycache__", ".adk"))
        evals = tmp / "evals"
        evals.mkdir()
        (evals / "bench.evalset.json").write_text(json.dumps(make_eval_set(args.cases), ensure_ascii=False, indent=1), encoding="utf-8")
        (evals / "test_config.json").write_text(json.dumps({"criteria": CRITERIA}, indent=1), encoding="utf-8")
        (tmp / "evalgate.yaml").write_text(f"agent:\n  adk: {APP}\nsuites:\n  - name: wait\n    evalsets: evals\n", encoding="utf-8")
        run_cmd = [sys.executable, "-m", "evalgate", "run", "--config", "evalgate.yaml", "--no-cache", "--no-color"]
        sides = []
        if not args.skip_adk_eval:
            sides.append(Side("adk_eval", "adk eval (2.13)", [str(BIN / "adk"), "eval", APP, "evals/bench.evalset.json"], tmp / "none-adk"))
        sides.append(Side("evalgate", "evalgate run", run_cmd + ["--out", "out"], tmp / "out", {"PYTHONPATH": str(ROOT)}))
        if args.baseline_root is not None:
            sides.append(Side("baseline", f"evalgate run ({args.baseline_root.name})", run_cmd + ["--out", "out-base"], tmp / "out-base",
                              {"PYTHONPATH": str(args.baseline_root.resolve())}))
        if args.faults:
            sides.append(Side("faults", f"evalgate run, {args.faults:.0%} faults", run_cmd + ["--out", "out-faults"], tmp / "out-faults",
                              {"PYTHONPATH": str(ROOT)}, args.faults))
        # Untimed warm-up: the file cache, for whichever side goes first.
        subprocess.run([sys.executable, "-c", "import google.adk.runners, google.adk.cli.cli_tools_click, evalgate.cli, evalgate.engine"],
                       cwd=tmp, env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True)
        imports = import_seconds(env, tmp, ROOT)
        runs: dict[str, list[Run]] = {s.key: [] for s in sides}
        for r in range(args.repeat):
            for side in sides if r % 2 == 0 else list(reversed(sides)):
                run = run_side(side, fake, responder, env, tmp, r + 1)
                runs[side.key].append(run)
                extra = f"  retried {run.retried} (injected {run.injected})" if side.faults else ""
                print(f"  round {r + 1}: {side.label:<34} {run.wall:6.1f} s (CPU {run.cpu:.1f} s)  rc {run.rc}  model/judge requests "
                      f"{run.agent_requests}/{run.judge_requests}  max in flight {run.max_in_flight}{extra}  load {os.getloadavg()[0]:.1f}", flush=True)
                for line in run.time_lines:
                    print(f"      {line}")
                if run.rc not in (0, 1):
                    problems.append(f"{side.label} exited {run.rc} (log: {run.log})")
                if len(run.statuses) != args.cases or any(v not in ("PASSED", "FAILED") for v in run.statuses.values()):
                    bad = {k: v for k, v in run.statuses.items() if v not in ("PASSED", "FAILED")}
                    problems.append(f"{side.label} round {r + 1}: {len(run.statuses)} cases read, not scored: {dict(list(bad.items())[:3])} (log: {run.log})")
                clean = args.cases * AGENT_CALLS
                if side.faults and run.agent_requests < clean + sum(run.injected.values()):
                    problems.append(f"{side.label} round {r + 1}: {run.agent_requests} model requests for {clean} and "
                                    f"{run.injected} faults: a failed request was not sent again")
        ref = runs.get("adk_eval") or runs["evalgate"]
        for key, rs in runs.items():
            for i, run in enumerate(rs):
                if run.statuses != ref[0].statuses:
                    diff = [k for k in sorted(set(run.statuses) | set(ref[0].statuses)) if run.statuses.get(k) != ref[0].statuses.get(k)]
                    problems.append(f"{key} round {i + 1}: statuses differ from {ref[0].side}'s in {len(diff)} cases, first {diff[:3]}")

        def median(key: str) -> float:
            return statistics.median(r.wall for r in runs[key])

        eg = runs["evalgate"]
        slots = eg[0].slots or 16
        requests = statistics.median(r.agent_requests + r.judge_requests for r in eg)
        judge_rounds = 1  # early stopping: the first 3 samples in parallel agree
        floor = imports + requests * args.latency / slots + (AGENT_CALLS + judge_rounds) * args.latency
        print()
        print(f"floor of evalgate at its concurrency ({slots} slots): imports {imports:.1f} s + {requests:.0f} requests x "
              f"{args.latency:g} s / {slots} + critical path {(AGENT_CALLS + judge_rounds) * args.latency:.1f} s = {floor:.1f} s")
        print()
        print("| side | wall s (each round) | median | CPU s (median) | model / judge requests | max in flight | vs floor | adk eval / side |")
        print("|---|---|---|---|---|---|---|---|")
        for side in sides:
            rs = runs[side.key]
            m = median(side.key)
            reqs = "/".join(sorted({f"{r.agent_requests} / {r.judge_requests}" for r in rs}))
            adk = f"{median('adk_eval') / m:.2f}x" if "adk_eval" in runs else "-"
            print(f"| {side.label} | {', '.join(f'{r.wall:.1f}' for r in rs)} | {m:.1f} | {statistics.median(r.cpu for r in rs):.1f} | {reqs} | {max(r.max_in_flight for r in rs)} | "
                  f"{m / floor:.2f}x | {adk} |")
        print()
        ratio_floor = median("evalgate") / floor
        print(f"evalgate / its floor: {ratio_floor:.2f}x (goal <= {GOAL_FLOOR:g}x: {'met' if ratio_floor <= GOAL_FLOOR else 'NOT met'})")
        if "adk_eval" in runs:
            ratio_adk = median("adk_eval") / median("evalgate")
            print(f"adk eval / evalgate: {ratio_adk:.2f}x less wall time (goal >= {GOAL_ADK:g}x: {'met' if ratio_adk >= GOAL_ADK else 'NOT met'})")
        if "faults" in runs:
            ratio_faults = median("faults") / median("evalgate")
            print(f"evalgate with {args.faults:.0%} faults / clean: {ratio_faults:.2f}x (goal <= {GOAL_FAULTS:g}x: "
                  f"{'met' if ratio_faults <= GOAL_FAULTS else 'NOT met'}); every case scored: "
                  f"{'yes' if all(len(r.statuses) == args.cases and 'NOT_EVALUATED' not in r.statuses.values() for r in runs['faults']) else 'no'}")
        if "baseline" in runs:
            print(f"baseline ({args.baseline_root}) / evalgate: {median('baseline') / median('evalgate'):.2f}x; "
                  f"baseline / floor: {median('baseline') / floor:.2f}x")
        if args.keep:
            print(f"kept: {tmp}")
    finally:
        fake.stop()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    for p in problems:
        print(f"PROBLEM: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    fake_gemini._Handler.disable_nagle_algorithm = True
    sys.exit(main())
