"""Inference benchmark: `evalgate run` running an ADK agent against ADK 2.13 running it, whole processes.

    python bench/bench_inference.py    # --cases 200 --latency 0.3 --repeat 1 [--quick] [--concurrency 4 16]
                                       # [--skip-adk-eval] [--nagle] [--keep]

One fake `generateContent` server (tests/fake_gemini.py) in this process on 127.0.0.1, 0.3 s
added to every answer, scripted by tests/agent_model.py for the real ADK agent in
tests/agents/weather_agent (an LlmAgent with Python tools), copied into a temp folder beside
a generated eval set: `--cases` cases of 2 turns, each turn naming a city, so each turn is a
get_weather call and an answer (2 model calls, 4 per case). Every side is a separate process
reaching the fake through GOOGLE_API_KEY and GOOGLE_GEMINI_BASE_URL, as it would reach Gemini;
the fake is reset before each, so its request count and peak in-flight count are per run.

Sides (each run `--repeat` times, the order of the sides reversed every round):
  ADK driver   LocalEvalService.perform_inference at its defaults: the agent folder loaded as
               `adk eval` loads it (get_app_or_root_agent), an InMemoryEvalSetsManager holding
               the eval set, InferenceRequest(inference_config=InferenceConfig()) (parallelism
               4); inference only, the inferences written to a JSON file;
  adk eval     `adk eval weather_agent evals/bench.evalset.json`, the CLI as shipped:
               inference (parallelism 4, no flag to change it) then scoring
               (tool_trajectory_avg_score, response_match_score from test_config.json);
  evalgate     `evalgate run --config evalgate.yaml --out DIR` with `agent: {adk: weather_agent}`
               and the same two criteria, defaults otherwise (AgentConfig.concurrency, read
               from evalgate's code); inference then scoring and reports;
  evalgate c=4, c=16 (--concurrency): the same with `concurrency` set, to separate what
               concurrency buys from overhead.

The fake sets TCP_NODELAY on its sockets (see main(); --nagle leaves Nagle on, which costs
about 40 ms a request) and a bare client's round trip is printed first.

Wall time is the whole process (interpreter start, imports, loading the agent, inference,
scoring, writing results); peak RSS is the child's ru_maxrss (os.wait4). The latency floor is
what the fake's latency alone costs at that concurrency: ceil(cases / c) x 4 x latency.

Invocations: evalgate's <out>/inference.jsonl, the driver's inferences and `adk eval`'s
actual invocations (its eval history) are each normalized through evalgate.adk.Invocation,
without invocation_id, creation_timestamp, durations, function call/response ids (random
adk-<uuid>) and None-valued keys inside metadata dicts, and compared case by case against
the driver's; app_details are compared separately. Prints the first difference.

Exits 1 if a side's run failed (exit code, request count) or invocations differ, 2 without
google-adk. A missed goal (ADK driver / evalgate at defaults >= 2x) is printed, not an exit code.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from agent_model import respond  # noqa: E402
import fake_gemini  # noqa: E402
from fake_gemini import FAKE_API_KEY, JUDGE_ENV_VARS, FakeGemini  # noqa: E402

GOAL = 2.0  # ADK LocalEvalService wall time / evalgate wall time, both at their defaults, at least
CALLS_PER_CASE = 4  # 2 turns x (tool call + answer)
APP = "weather_agent"
EVAL_SET_ID = "bench"
CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
BIN = Path(sys.executable).parent

# tests/agents/weather_agent/agent.py's table (WEATHER_TABLE_VERSION unset), for the expected answers.
FORECASTS = {"Paris": "sunny, 21 C", "London": "cloudy, 14 C", "서울": "맑음, 18도", "東京": "晴れ、20度"}
CITIES = list(FORECASTS)
FIRST = [
    "Ticket {n}: what's the weather in {city}?",
    "{city} weather today, please (ticket {n})",
    "Ticket {n} - is it warm in {city} right now?",
]
SECOND = ["And in {city}?", "What about {city}? (ticket {n})", "Now {city}, please."]


# --- the eval set ------------------------------------------------------------------------------


def _turn(invocation_id: str, text: str, city: str) -> dict[str, Any]:
    forecast = FORECASTS[city]
    return {
        "invocation_id": invocation_id,
        "user_content": {"parts": [{"text": text}], "role": "user"},
        "final_response": {"parts": [{"text": f"The weather in {city}: {forecast}."}], "role": "model"},
        "intermediate_data": {
            "tool_uses": [{"name": "get_weather", "args": {"city": city}, "id": "call-0"}],
            "tool_responses": [{"name": "get_weather", "response": {"city": city, "forecast": forecast}, "id": "call-0"}],
            "intermediate_responses": [],
        },
    }


def make_eval_set(n: int) -> dict[str, Any]:
    """n two-turn cases; every turn names one known city (turn 2 another one). Even cases carry
    a session_input (app name, user, state), odd ones ADK's defaults."""
    cases = []
    for i in range(n):
        first = CITIES[i % len(CITIES)]
        second = CITIES[(i + 1 + i // len(CITIES)) % len(CITIES)]
        if second == first:
            second = CITIES[(i + 1) % len(CITIES)]
        tag = f"#{i:04d}"
        case: dict[str, Any] = {
            "eval_id": f"case{i:04d}",
            "conversation": [
                _turn("t1", FIRST[i % len(FIRST)].format(n=tag, city=first), first),
                _turn("t2", SECOND[(i // 2) % len(SECOND)].format(n=tag, city=second), second),
            ],
        }
        if i % 2 == 0:
            case["session_input"] = {"app_name": APP, "user_id": f"user{i % 7}", "state": {"units": "metric"}}
        cases.append(case)
    return {"eval_set_id": EVAL_SET_ID, "name": "inference bench", "eval_cases": cases}


# ADK's own inference at its defaults, as `adk eval` does it (cli_tools_click.cli_eval and
# cli_eval._collect_inferences), minus the scoring; written into the temp folder.
ADK_DRIVER = textwrap.dedent(
    '''
    """LocalEvalService.perform_inference at ADK's defaults; writes the inferences as JSON."""
    import asyncio, json, os, sys, time
    import warnings

    from google.adk.cli.cli_eval import get_app_or_root_agent
    from google.adk.cli.utils import envs
    from google.adk.evaluation.base_eval_service import InferenceConfig, InferenceRequest
    from google.adk.evaluation.in_memory_eval_sets_manager import InMemoryEvalSetsManager
    from google.adk.evaluation.local_eval_service import LocalEvalService
    from google.adk.evaluation.local_eval_sets_manager import load_eval_set_from_file
    from google.adk.utils.context_utils import Aclosing

    agent_dir, eval_set_file, out = sys.argv[1:4]
    envs.load_dotenv_for_agent(agent_dir, ".")
    app, root_agent = asyncio.run(get_app_or_root_agent(agent_dir))
    app_name = os.path.basename(agent_dir)
    manager = InMemoryEvalSetsManager()
    eval_set = load_eval_set_from_file(eval_set_file, eval_set_file)
    manager.create_eval_set(app_name=app_name, eval_set_id=eval_set.eval_set_id)
    for case in eval_set.eval_cases:
        manager.add_eval_case(app_name=app_name, eval_set_id=eval_set.eval_set_id, eval_case=case)
    service = LocalEvalService(root_agent=root_agent, eval_sets_manager=manager, app=app)
    config = InferenceConfig()
    request = InferenceRequest(app_name=app_name, eval_set_id=eval_set.eval_set_id, inference_config=config)


    async def collect():
        results = []
        async with Aclosing(service.perform_inference(inference_request=request)) as agen:
            async for result in agen:
                results.append(result)
        return results


    t0 = time.perf_counter()
    results = asyncio.run(collect())
    seconds = time.perf_counter() - t0
    cases = {}
    for r in results:
        cases[r.eval_case_id] = {
            "status": r.status.name,
            "error": r.error_message,
            "inferences": [inv.model_dump(mode="json") for inv in r.inferences or []],
        }
    with open(out, "w", encoding="utf-8") as fh:
        json.dump({"inference_seconds": seconds, "parallelism": config.parallelism, "cases": cases}, fh, ensure_ascii=False)
    '''
).lstrip()


# --- running one side --------------------------------------------------------------------------


@dataclass
class Side:
    key: str
    label: str
    concurrency: int
    cmd: list[str]
    out: Path  # what the run writes (an output folder or a JSON file)


@dataclass
class Run:
    side: str
    wall: float
    rc: int
    rss_mb: float
    cpu_s: float
    requests: int
    bad_statuses: int
    max_in_flight: int
    inference_s: Optional[float]
    log: Path
    invocations: dict[str, Any] = field(default_factory=dict)  # eval_id -> list of invocation dicts, or an error string
    passed: Optional[int] = None  # cases that passed scoring (evalgate, adk eval)


def run_side(side: Side, fake: FakeGemini, env: dict[str, str], cwd: Path, round_no: int) -> Run:
    if side.out.is_dir():
        shutil.rmtree(side.out)
    elif side.out.exists():
        side.out.unlink()
    history = cwd / APP / ".adk" / "eval_history"
    if side.key == "adk_eval" and history.exists():
        shutil.rmtree(history)
    log = cwd / "logs" / f"{side.key}-{round_no}.log"
    log.parent.mkdir(exist_ok=True)
    fake.reset()
    with open(log, "wb") as fh:
        t0 = time.perf_counter()
        proc = subprocess.Popen(side.cmd, cwd=cwd, env=env, stdout=fh, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    statuses = [r.status for r in fake.requests]
    run = Run(
        side=side.key,
        wall=wall,
        rc=proc.returncode,
        rss_mb=usage.ru_maxrss / 1024,
        cpu_s=usage.ru_utime + usage.ru_stime,
        requests=len(statuses),
        bad_statuses=sum(1 for s in statuses if s != 200),
        max_in_flight=fake.max_in_flight,
        inference_s=None,
        log=log,
    )
    try:
        read_outputs(side, run, cwd)
    except (OSError, ValueError, KeyError) as e:
        run.invocations = {"(outputs)": f"could not read: {type(e).__name__}: {e}"}
    return run


def read_outputs(side: Side, run: Run, cwd: Path) -> None:
    if side.key == "adk_driver":
        data = json.loads(side.out.read_text(encoding="utf-8"))
        run.inference_s = data["inference_seconds"]
        for eval_id, r in data["cases"].items():
            run.invocations[eval_id] = r["inferences"] if r["status"] == "SUCCESS" else f"{r['status']}: {r['error']}"
    elif side.key == "adk_eval":
        files = sorted((cwd / APP / ".adk" / "eval_history").glob("*.evalset_result.json"))
        data = json.loads(files[-1].read_text(encoding="utf-8"))
        if isinstance(data, str):  # legacy double-encoded JSON
            data = json.loads(data)
        run.passed = 0
        for r in data["eval_case_results"]:
            run.passed += r["final_eval_status"] == 1
            per = r.get("eval_metric_result_per_invocation") or []
            run.invocations[r["eval_id"]] = [p["actual_invocation"] for p in per] if per else "no invocations in the eval history"
    else:
        for line in (side.out / "inference.jsonl").read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            run.invocations[record["eval_id"]] = record.get("invocations") if "error" not in record else record["error"]
        results = json.loads((side.out / "results.json").read_text(encoding="utf-8"))
        agent = (results.get("run") or {}).get("agent") or {}
        run.inference_s = agent.get("seconds")
        run.passed = sum(1 for s in results.get("suites", []) for c in s.get("cases", []) if c.get("status") == "PASSED")


# --- comparing invocations ---------------------------------------------------------------------

VOLATILE = ("invocation_id", "creation_timestamp", "duration", "model_duration", "tool_duration")


def _without_ids_and_nones(value: Any) -> Any:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if v is None:
                continue
            if k in ("function_call", "function_response") and isinstance(v, dict):
                v = {kk: vv for kk, vv in v.items() if kk != "id"}
            out[k] = _without_ids_and_nones(v)
        return out
    if isinstance(value, list):
        return [_without_ids_and_nones(v) for v in value]
    return value


def normalize(raw: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """(the invocation without volatile fields, its app_details), both normalized."""
    from evalgate.adk import Invocation

    dumped = Invocation.model_validate(raw).model_dump(mode="json", exclude_none=True)
    for key in VOLATILE:
        dumped.pop(key, None)
    app_details = dumped.pop("app_details", None)
    return _without_ids_and_nones(dumped), _without_ids_and_nones(app_details)


def first_difference(a: Any, b: Any, path: str = "") -> Optional[tuple[str, Any, Any]]:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return (f"{path}.{k}", a.get(k, "<missing>"), b.get(k, "<missing>"))
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        if len(a) != len(b):
            return (f"{path} (length)", len(a), len(b))
        return None
    return None if a == b else (path or "(value)", a, b)


@dataclass
class Comparison:
    cases: int = 0
    same: int = 0
    app_same: int = 0
    first: Optional[str] = None
    first_app: Optional[str] = None

    @property
    def identical(self) -> bool:
        return self.cases > 0 and self.same == self.cases

    @property
    def app_identical(self) -> bool:
        return self.cases > 0 and self.app_same == self.cases


def compare(this: Run, ref: Run) -> Comparison:
    out = Comparison()
    for eval_id in sorted(set(this.invocations) | set(ref.invocations)):
        out.cases += 1
        mine, theirs = this.invocations.get(eval_id, "<missing>"), ref.invocations.get(eval_id, "<missing>")
        if isinstance(mine, str) or isinstance(theirs, str):
            if out.first is None:
                out.first = f"{eval_id}: {this.side} {mine!r:.300} / {ref.side} {theirs!r:.300}"
            continue
        a = [normalize(x) for x in mine]
        b = [normalize(x) for x in theirs]
        d = first_difference([x[0] for x in a], [x[0] for x in b])
        if d is None:
            out.same += 1
        elif out.first is None:
            out.first = f"{eval_id} invocations{d[0]}: {this.side} {json.dumps(d[1], ensure_ascii=False):.400} / {ref.side} {json.dumps(d[2], ensure_ascii=False):.400}"
        d = first_difference([x[1] for x in a], [x[1] for x in b])
        if d is None:
            out.app_same += 1
        elif out.first_app is None:
            out.first_app = f"{eval_id} invocations{d[0]}: {this.side} {json.dumps(d[1], ensure_ascii=False):.400} / {ref.side} {json.dumps(d[2], ensure_ascii=False):.400}"
    return out


def calibrate(fake: FakeGemini, n: int = 9) -> float:
    """The fake's round trip as a bare keep-alive client sees it: latency plus HTTP (median)."""
    import http.client
    from urllib.parse import urlsplit

    url = urlsplit(fake.url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    body = json.dumps({"contents": [{"role": "user", "parts": [{"text": "What's the weather in Paris?"}]}]})
    times = []
    try:
        for _ in range(n):
            t0 = time.perf_counter()
            conn.request("POST", "/v1beta/models/gemini-2.5-flash:generateContent", body,
                         {"Content-Type": "application/json", "x-goog-api-key": FAKE_API_KEY})
            conn.getresponse().read()
            times.append(time.perf_counter() - t0)
    finally:
        conn.close()
    fake.reset()
    return statistics.median(times)


# --- main --------------------------------------------------------------------------------------


def write_workspace(tmp: Path, n: int, extra: list[int]) -> dict[Optional[int], Path]:
    """The agent, the eval set, ADK's test_config.json, the driver, and one evalgate config
    per concurrency (None: the default, no `concurrency` key)."""
    shutil.copytree(ROOT / "tests" / "agents" / APP, tmp / APP, ignore=shutil.ignore_patterns("__pycache__", ".adk"))
    evals = tmp / "evals"
    evals.mkdir()
    (evals / "bench.evalset.json").write_text(json.dumps(make_eval_set(n), ensure_ascii=False, indent=1), encoding="utf-8")
    (evals / "test_config.json").write_text(json.dumps({"criteria": CRITERIA}, indent=1), encoding="utf-8")
    (tmp / "adk_driver.py").write_text(ADK_DRIVER, encoding="utf-8")
    criteria = "".join(f"      {k}: {v}\n" for k, v in CRITERIA.items())
    configs: dict[Optional[int], Path] = {}
    for c in [None, *extra]:
        setting = f"  concurrency: {c}\n" if c is not None else ""
        path = tmp / (f"evalgate-c{c}.yaml" if c is not None else "evalgate.yaml")
        path.write_text(
            f"agent:\n  adk: {APP}\n{setting}suites:\n  - name: weather-bench\n    evalsets: evals/bench.evalset.json\n    criteria:\n{criteria}",
            encoding="utf-8",
        )
        configs[c] = path
    return configs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=None, help="two-turn cases, 4 model calls each (default 200; 40 with --quick)")
    parser.add_argument("--latency", type=float, default=0.3, help="seconds added to every answer of the fake")
    parser.add_argument("--repeat", type=int, default=1, help="rounds; the order of the sides is reversed every round")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 40 cases (unless --cases is given)")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder (logs, outputs) and print its path")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[4, 16], metavar="N",
                        help="evalgate's extra rows, each with agent.concurrency N (default: 4 16)")
    parser.add_argument("--nagle", action="store_true",
                        help="leave Nagle's algorithm on in the fake, as the test suite has it (about 40 ms more a request)")
    parser.add_argument("--skip-adk-eval", action="store_true", help="do not time `adk eval` (the driver is always timed)")
    args = parser.parse_args()
    if args.cases is None:
        args.cases = 40 if args.quick else 200

    try:
        import google.adk  # noqa: F401
        from google.adk.evaluation.base_eval_service import InferenceConfig
    except ImportError:
        print("google-adk is not installed: pip install -e '.[test]'", file=sys.stderr)
        return 2
    import google.adk.version as adk_version

    from evalgate.config import AgentConfig

    default_c = AgentConfig.model_fields["concurrency"].default
    adk_parallelism = InferenceConfig().parallelism

    # The fake writes an answer's headers and body separately; with Nagle's algorithm on, the
    # body waits for the client's delayed ACK, about 40 ms a request on Linux. The test fakes
    # turn it off (tests/fake_http.py); --nagle turns it back on, to see what it cost.
    fake_gemini._Handler.disable_nagle_algorithm = not args.nagle
    fake = FakeGemini(respond).start()
    fake.api_key = None
    fake.latency = args.latency
    round_trip = calibrate(fake)
    env = {k: v for k, v in os.environ.items() if k not in JUDGE_ENV_VARS}
    env.update(GOOGLE_API_KEY=FAKE_API_KEY, GOOGLE_GEMINI_BASE_URL=fake.url, PYTHONUNBUFFERED="1")

    calls = args.cases * CALLS_PER_CASE
    print(f"bench_inference: {args.cases} cases x 2 turns x 2 model calls = {calls} model calls per side; fake Gemini "
          f"{args.latency:g} s per answer; google-adk {adk_version.__version__}; {os.cpu_count()} cores")
    print(f"fake round trip, one bare client, sequential: median {round_trip * 1000:.0f} ms "
          f"({'Nagle left on' if args.nagle else 'TCP_NODELAY'})")
    print(f"defaults: evalgate agent.concurrency {default_c} (evalgate.config.AgentConfig), ADK InferenceConfig().parallelism "
          f"{adk_parallelism}; {args.repeat} round(s)", flush=True)

    tmp = Path(tempfile.mkdtemp(prefix="evalgate-bench-inference-"))
    problems: list[str] = []
    try:
        extra = sorted(set(args.concurrency) - {default_c})
        configs = write_workspace(tmp, args.cases, extra)
        sides = [Side("adk_driver", "ADK LocalEvalService (driver)", adk_parallelism,
                      [sys.executable, str(tmp / "adk_driver.py"), str(tmp / APP), str(tmp / "evals" / "bench.evalset.json"),
                       str(tmp / "adk_inferences.json")], tmp / "adk_inferences.json")]
        if not args.skip_adk_eval:
            sides.append(Side("adk_eval", "adk eval (CLI, + scoring)", adk_parallelism,
                              [str(BIN / "adk"), "eval", APP, "evals/bench.evalset.json"], tmp / APP / ".adk"))
        for c in [default_c, *extra]:
            cfg = configs[None if c == default_c else c]
            label = "evalgate run (defaults)" if c == default_c else f"evalgate run, concurrency {c}"
            sides.append(Side(f"evalgate_c{c}", label, c,
                              [str(BIN / "evalgate"), "run", "--config", cfg.name, "--out", f"out-c{c}"], tmp / f"out-c{c}"))

        # Untimed warm-up: the interpreter and both packages read once, so the first timed
        # side does not pay for a cold file cache.
        subprocess.run([sys.executable, "-c", "import google.adk.runners, google.adk.evaluation.local_eval_service, "
                        "google.adk.cli.cli_tools_click, evalgate.cli, evalgate.agents.adk_inprocess, evalgate.engine"],
                       cwd=tmp, env=env, check=False, capture_output=True)

        runs: dict[str, list[Run]] = {s.key: [] for s in sides}
        for r in range(args.repeat):
            order = sides if r % 2 == 0 else list(reversed(sides))
            for side in order:
                run = run_side(side, fake, env, tmp, r + 1)
                runs[side.key].append(run)
                print(f"  round {r + 1}: {side.label:<34} {run.wall:7.1f} s (CPU {run.cpu_s:.1f} s)  rc {run.rc}  {run.requests} requests"
                      f" (max {run.max_in_flight} in flight)  {run.rss_mb:.0f} MB  load {os.getloadavg()[0]:.1f}", flush=True)
                want_rc = (0,) if side.key == "adk_driver" else (0, 1)
                if run.rc not in want_rc:
                    problems.append(f"{side.label} exited {run.rc} (log: {run.log})")
                if run.requests != calls or run.bad_statuses:
                    problems.append(f"{side.label}: {run.requests} model requests ({run.bad_statuses} not 200), expected {calls}")
                errors = [k for k, v in run.invocations.items() if isinstance(v, str)]
                if errors:
                    problems.append(f"{side.label}: {len(errors)} cases without invocations, first {errors[0]}: "
                                    f"{run.invocations[errors[0]]!r:.300}")
                if run.passed is not None and run.passed != args.cases:
                    problems.append(f"{side.label}: {run.passed} of {args.cases} cases passed scoring")

        # --- invocations ---
        ref = runs["adk_driver"][0]
        print()
        print("identical invocations (normalized; against the ADK driver's first run):")
        all_same = True
        for side in sides:
            for i, run in enumerate(runs[side.key]):
                if run is ref:
                    continue
                cmp = compare(run, ref)
                all_same &= cmp.identical
                app = "app_details identical" if cmp.app_identical else f"app_details differ in {cmp.cases - cmp.app_same} cases"
                print(f"  {side.label}, round {i + 1}: identical: {'yes' if cmp.identical else 'no'} "
                      f"({cmp.same}/{cmp.cases} cases); {app}")
                if cmp.first:
                    print(f"    first difference: {cmp.first}")
                if cmp.first_app:
                    print(f"    first app_details difference: {cmp.first_app}")
                if not cmp.identical:
                    problems.append(f"{side.label} round {i + 1}: invocations differ from ADK's")
        print(f"identical: {'yes' if all_same else 'no'}")

        # --- the table ---
        adk_median = statistics.median(r.wall for r in runs["adk_driver"])
        print()
        head = ["side", "conc.", "wall s (median)", "CPU s (median)", "in-process inference s", "latency floor s",
                "model requests", "max in flight", "peak RSS MB", "ADK driver / side"]
        rows = []
        for side in sides:
            rs = runs[side.key]
            wall = statistics.median(r.wall for r in rs)
            inf = [r.inference_s for r in rs if r.inference_s is not None]
            floor = math.ceil(args.cases / side.concurrency) * CALLS_PER_CASE * args.latency
            rows.append([
                side.label, str(side.concurrency), f"{wall:.1f}", f"{statistics.median(r.cpu_s for r in rs):.1f}",
                f"{statistics.median(inf):.1f}" if inf else "-",
                f"{floor:.1f}", "/".join(sorted({str(r.requests) for r in rs})), str(max(r.max_in_flight for r in rs)),
                f"{max(r.rss_mb for r in rs):.0f}", f"{adk_median / wall:.2f}x",
            ])
        widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(head)]
        print("| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |")
        print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
        for row in rows:
            print("| " + " | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))) + " |")
        eg = statistics.median(r.wall for r in runs[f"evalgate_c{default_c}"])
        ratio = adk_median / eg
        print()
        print(f"ADK LocalEvalService / evalgate, both at their defaults: {ratio:.2f}x less wall time "
              f"(goal >= {GOAL:g}x: {'met' if ratio >= GOAL else 'NOT met'})")
        if "adk_eval" in runs:
            ratio_cli = statistics.median(r.wall for r in runs["adk_eval"]) / eg
            print(f"adk eval (inference + scoring) / evalgate run (inference + scoring): {ratio_cli:.2f}x")
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
    sys.exit(main())
