"""Vertex AI evaluation clients side by side: import time and per-request overhead against the fake.

    python bench/bench_vertex_client.py                 # --imports 5 --requests 200
    python bench/bench_vertex_client.py --high-level-path DIR   # DIR: pip install --target DIR pandas tqdm

Compares the two ways google-cloud-aiplatform offers to call `evaluateInstances`:
- low level: `google.cloud.aiplatform_v1beta1.EvaluationServiceClient` on REST (what
  `JudgeRuntime.evaluate` uses), also measured through `JudgeRuntime.evaluate` (cache off);
- high level: `agentplatform.Client(...).evals` (`vertexai.Client` is its deprecated alias in
  2.7), both `evals.evaluate(dataset=<one case>, metrics=[Metric(name=...)])` and
  `evals.evaluate_instances(...)`. It needs pandas and tqdm (google-cloud-aiplatform[evaluation]);
  when they are missing the column says so. `--high-level-path` adds a folder to sys.path.
A raw `requests.post` to the same fake is the floor: "overhead" is a client's time above it.

Import: `--imports` fresh interpreters per path (median), each timing the imports plus
building a client (and, for the high level, the first `.evals`, which imports pandas).
Requests: one in-process fake evaluateInstances server (tests/fake_vertex.py), `--requests`
sequential calls per path after 5 warm-up calls; median and p95 wall time per call.
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
import warnings
from pathlib import Path
from typing import Any, Callable, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

os.environ.setdefault("TQDM_DISABLE", "1")  # evals.evaluate draws a progress bar per call

INSTANCE = {
    "prompt": {"contents": {"contents": [{"role": "user", "parts": [{"text": "Book a table in Paris for two."}]}]}},
    "response": {"contents": {"contents": [{"role": "model", "parts": [{"text": "Booked for two at 8 pm."}]}]}},
}
METRIC = "general_quality_v1"

IMPORT_SNIPPETS = {
    "low level (EvaluationServiceClient, REST)": """
from google.api_core.client_options import ClientOptions
from google.cloud.aiplatform_v1beta1 import EvaluateInstancesRequest, EvaluationServiceClient
from google.oauth2.credentials import Credentials
client = EvaluationServiceClient(credentials=Credentials(token="t"), transport="rest",
                                 client_options=ClientOptions(api_endpoint="http://127.0.0.1:9"))
""",
    "high level (agentplatform.Client().evals)": """
import warnings
warnings.simplefilter("ignore")
import agentplatform
from agentplatform import types
from google.oauth2.credentials import Credentials
client = agentplatform.Client(project="p", location="us-central1", credentials=Credentials(token="t"),
                              http_options={"base_url": "http://127.0.0.1:9/"})
evals = client.evals
""",
    "reference: requests + google-auth only": """
import google.auth.transport.requests
from google.oauth2.credentials import Credentials
session = google.auth.transport.requests.AuthorizedSession(Credentials(token="t"))
""",
}

MEASURE = """
import sys, time
t0 = time.perf_counter()
exec(compile(sys.argv[1], "<snippet>", "exec"))
elapsed = time.perf_counter() - t0
print(f"{elapsed:.6f} {len(sys.modules)} {int('pandas' in sys.modules)}")
"""


def measure_imports(runs: int, extra_path: Optional[str]) -> dict[str, Any]:
    env = dict(os.environ)
    if extra_path:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (extra_path, env.get("PYTHONPATH")) if p)
    out: dict[str, Any] = {}
    for name, snippet in IMPORT_SNIPPETS.items():
        times, modules, pandas = [], 0, False
        for _ in range(runs):
            done = subprocess.run([sys.executable, "-c", MEASURE, snippet], capture_output=True, text=True,
                                  env=env, timeout=300)
            if done.returncode != 0:
                last = (done.stderr.strip().splitlines() or ["failed"])[-1]
                out[name] = f"n/a: {last}"
                break
            seconds, count, has_pandas = done.stdout.split()
            times.append(float(seconds))
            modules, pandas = int(count), bool(int(has_pandas))
        else:
            out[name] = {"median_s": statistics.median(times), "min_s": min(times), "modules": modules,
                         "pandas": pandas}
    return out


def timed(call: Callable[[], Any], n: int) -> dict[str, float]:
    for _ in range(5):
        call()
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        call()
        samples.append(time.perf_counter() - t0)
    samples.sort()
    return {"median_ms": 1000 * statistics.median(samples), "p95_ms": 1000 * samples[int(0.95 * (len(samples) - 1))]}


def measure_requests(n: int) -> dict[str, Any]:
    import requests

    from fake_vertex import FAKE_VERTEX_TOKEN, FakeVertex, result

    fake = FakeVertex(responder=lambda body: result(0.7, "fine")).start()
    out: dict[str, Any] = {}
    try:
        url = f"{fake.url}/v1beta1/projects/p/locations/us-central1:evaluateInstances"
        body = {"metrics": [{"predefinedMetricSpec": {"metricSpecName": METRIC}}], "instance": INSTANCE}
        session = requests.Session()
        headers = {"Authorization": f"Bearer {FAKE_VERTEX_TOKEN}"}
        out["floor: raw requests.post"] = timed(lambda: session.post(url, json=body, headers=headers).json(), n)

        from google.api_core.client_options import ClientOptions
        from google.cloud.aiplatform_v1beta1 import EvaluateInstancesRequest, EvaluationServiceClient

        client = EvaluationServiceClient(credentials=fake.credentials(), transport="rest",
                                         client_options=ClientOptions(api_endpoint=fake.url))
        payload = json.dumps({"location": "projects/p/locations/us-central1",
                              "metrics": [{"predefined_metric_spec": {"metric_spec_name": METRIC}}],
                              "instance": INSTANCE})

        def low() -> float:
            request = EvaluateInstancesRequest.from_json(payload)
            return client.evaluate_instances(request=request, retry=None, timeout=30).metric_results[0].score

        out["low level: evaluate_instances"] = timed(low, n)

        from evalgate.judge.runtime import JudgeRuntime
        from evalgate.vertex.service import EvalRequest

        with tempfile.TemporaryDirectory() as cache, JudgeRuntime(
            cache_dir=Path(cache), use_cache=False, **fake.runtime_args(project="p")
        ) as runtime:
            request = EvalRequest(f"vertexai:{METRIC}", METRIC, json.dumps(INSTANCE))
            out["low level: JudgeRuntime.evaluate (cache off)"] = timed(lambda: runtime.evaluate(request), n)

        try:
            warnings.simplefilter("ignore")
            import agentplatform
            from agentplatform import types

            high = agentplatform.Client(project="p", location="us-central1", credentials=fake.credentials(),
                                        http_options={"base_url": fake.url + "/"})
            evals = high.evals
        except ImportError as exc:
            why = f"n/a: {exc}"
            out["high level: evals.evaluate (1 case)"] = why
            out["high level: evals.evaluate_instances"] = why
        else:
            dataset = {"eval_cases": [{"prompt": {"parts": [{"text": "Book a table in Paris for two."}]},
                                       "responses": [{"response": {"parts": [{"text": "Booked for two."}]}}]}]}
            metrics = [types.Metric(name=METRIC)]
            out["high level: evals.evaluate (1 case)"] = timed(
                lambda: evals.evaluate(dataset=dataset, metrics=metrics), n)
            params = types._EvaluateInstancesRequestParameters(metrics=metrics, instance=INSTANCE)
            out["high level: evals.evaluate_instances"] = timed(
                lambda: evals.evaluate_instances(metric_config=params), n)
    finally:
        fake.stop()
    return out


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--imports", type=int, default=5, help="fresh interpreters per path (default 5)")
    parser.add_argument("--requests", type=int, default=200, help="timed calls per path (default 200)")
    parser.add_argument("--high-level-path", help="a folder with pandas and tqdm for the high-level client")
    args = parser.parse_args(argv)
    if args.high_level_path:
        sys.path.insert(0, args.high_level_path)

    imports = measure_imports(args.imports, args.high_level_path)
    print(f"Import + client construction, fresh interpreter, median of {args.imports}:")
    print(f"  {'path':<45} {'median':>9} {'min':>9} {'modules':>8}  pandas")
    for name, row in imports.items():
        if isinstance(row, str):
            print(f"  {name:<45} {row}")
        else:
            print(f"  {name:<45} {row['median_s']:8.2f}s {row['min_s']:8.2f}s {row['modules']:>8}  "
                  f"{'yes' if row['pandas'] else 'no'}")

    calls = measure_requests(args.requests)
    floor = calls["floor: raw requests.post"]["median_ms"]
    print(f"\nPer request against the fake evaluateInstances server, {args.requests} sequential calls:")
    print(f"  {'path':<45} {'median':>9} {'p95':>9} {'overhead':>9}")
    for name, row in calls.items():
        if isinstance(row, str):
            print(f"  {name:<45} {row}")
        else:
            print(f"  {name:<45} {row['median_ms']:7.2f}ms {row['p95_ms']:7.2f}ms "
                  f"{row['median_ms'] - floor:+7.2f}ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
