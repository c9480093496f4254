"""Regenerate main/store: main's baseline, flake ledger and trend for the quickstart's gate.

The store is what the GitHub Action would have saved on eight pushes to main. Each run is
scored by evalgate's own code from recorded outputs, exactly as `evalgate run` scores them,
and saved as `evalgate baseline save` saves it:

- main/support.inference.jsonl: the support agent's outputs in main's latest run (the baseline);
- main/earlier-runs.jsonl: the cases that answered differently in main's seven earlier runs
  (one line per run and case: {"run": k, "eval_set_id", "eval_id", "invocations"}); every
  other case answered as in the latest run;
- the home-automation suite's outputs are runs/home_legacy.evalset_result.json in every run.

The commits are made up (sha1 of "evalgate quickstart: main, run K") and so are the times
(one push a day in March 2025), so the store is the same bytes every time. Run it from the
repository's root after changing the example's eval sets, criteria or main's outputs:

    python examples/quickstart/main/regenerate.py
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent
RUNS = 8  # main's runs in the ledger; the last is the baseline
REF = "refs/heads/main"


def commit_of(run: int) -> str:
    return hashlib.sha1(f"evalgate quickstart: main, run {run}".encode()).hexdigest()


def outputs_of(run: int) -> list[dict]:
    """The support agent's outputs in main's run `run` (1-based)."""
    latest = [json.loads(line) for line in (HERE / "support.inference.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    earlier = [json.loads(line) for line in (HERE / "earlier-runs.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    if run == RUNS:
        return latest
    changed = {(r["eval_set_id"], r["eval_id"]): r for r in earlier if r["run"] == run}
    out = []
    for record in latest:
        other = changed.get((record["eval_set_id"], record["eval_id"]))
        out.append({k: v for k, v in other.items() if k != "run"} if other else record)
    return out


def main() -> int:
    sys.path.insert(0, str(EXAMPLE.parent.parent))  # this checkout's evalgate, installed or not
    from evalgate import engine
    from evalgate.baselines import DirStore, make_baseline
    from evalgate.gate import update_ledger
    from evalgate.config import load_config
    from evalgate.plan import build_plans, config_digest
    from evalgate.results import RunInfo
    from evalgate.gate.trends import add_point

    loaded = load_config(EXAMPLE / "evalgate.yaml")
    gate = loaded.config.gate
    store_path = EXAMPLE / gate.baseline.path
    shutil.rmtree(store_path, ignore_errors=True)
    store = DirStore(store_path, gate_id=gate.id)
    support = next(i for i, s in enumerate(loaded.config.suites) if s.name == "support-agent")
    # The run's outputs go to a scratch folder inside the example: a config's files must lie in its project.
    with tempfile.TemporaryDirectory(dir=HERE, prefix=".run-") as scratch:
        for run in range(1, RUNS + 1):
            actual = HERE / "support.inference.jsonl"  # the latest run's outputs as they are
            if run < RUNS:
                actual = Path(scratch) / f"run-{run}.inference.jsonl"
                actual.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in outputs_of(run)), encoding="utf-8")
            suites = list(loaded.config.suites)
            suites[support] = suites[support].model_copy(update={"actual": [str(actual.relative_to(EXAMPLE))]})
            loaded.config = loaded.config.model_copy(update={"suites": suites})
            plans = build_plans(loaded)
            results = engine.run(plans, config_digest(loaded, plans))
            commit, now = commit_of(run), datetime(2025, 3, run, 12, 0, tzinfo=timezone.utc)
            results.run = RunInfo(started_at=now.isoformat())  # no timings: the same bytes every time
            if run == RUNS:
                store.save(make_baseline(results, commit, REF, now))
            store.save_ledger(gate.id, lambda old: update_ledger(old, results, gate.history_runs))
            store.save_trend(gate.id, lambda old: add_point(old, gate.id, results, commit, REF, now))
            counts = results.counts
            print(f"main run {run} ({commit[:12]}): {counts.passed} passed, {counts.failed} failed")
    for lock in store_path.rglob("*.lock"):
        lock.unlink()
    print(f"baseline: {(store_path / 'baselines' / gate.id / (commit_of(RUNS) + '.json.gz')).relative_to(EXAMPLE.parent.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
