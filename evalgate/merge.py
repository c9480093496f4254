"""`evalgate merge`: put the shards of a run back together.

Each shard folder is what `evalgate run --shard K/N --out DIR` wrote: results.json (with its
`shard`), junit.xml, inference.jsonl when the agent ran, and the ADK-shaped results under
adk/. The merge writes the same files for the whole run. Its comparable payload is the
unsharded run's, byte for byte: cases are put back in (eval_set_id, eval_id) order, and
everything a suite derives from its cases (counts, statuses, the agent-error and
incomplete-cases warnings) is derived again by the engine's own code, not added up.

It refuses, naming the shard folders: shards of different configs, evalgate versions or
commits, a shard given twice, a case in the wrong shard, and a missing shard
(`MissingShards`, which the action turns into an ERROR verdict).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalgate import results as results_io
from evalgate.engine import derived_warnings, finish_run, finish_suite
from evalgate.errors import InputError, Problem, display_path, load_json_file, read_jsonl, read_text
from evalgate.results import CaseResult, CriterionSpec, RunInfo, RunResults, SuiteResult
from evalgate.shards import shard_of

ADK_DIR = "adk"


class MissingShards(InputError):
    """Every given shard is sound, but some shards of the run are not there."""

    def __init__(self, problems: list[Problem], missing: list[int], count: int):
        super().__init__(problems)
        self.missing = missing
        self.count = count


@dataclass
class ShardOutput:
    folder: Path
    shown: str
    results: RunResults
    inference: list[tuple[dict[str, Any], str]] = field(default_factory=list)  # (record, its line as written)

    @property
    def index(self) -> int:
        assert self.results.shard is not None
        return self.results.shard.index


def shard_folders(paths: list[Path]) -> list[Path]:
    """The shard folders named: a folder holding results.json, or a folder whose subfolders
    do (as actions/download-artifact lays out several artifacts)."""
    out: list[Path] = []
    for path in paths:
        if (path / "results.json").is_file():
            out.append(path)
            continue
        inner = sorted(p for p in path.iterdir() if (p / "results.json").is_file()) if path.is_dir() else []
        if not inner:
            raise InputError(
                Problem(
                    display_path(path),
                    None,
                    "is not a shard's output folder (no results.json in it or in its subfolders)" if path.exists() else "does not exist",
                    "Pass the folders `evalgate run --shard K/N --out DIR` wrote, or the folder they were downloaded into.",
                )
            )
        out.extend(inner)
    return out


def read_shard(folder: Path) -> ShardOutput:
    shown = display_path(folder)
    run = results_io.read(folder / "results.json")
    if run.shard is None:
        raise InputError(Problem(display_path(folder / "results.json"), "shard", "these are the results of a whole run, not of a shard", "Merge only the outputs of `evalgate run --shard K/N`."))
    out = ShardOutput(folder, shown, run)
    path = folder / "inference.jsonl"
    if path.is_file():
        text = read_text(path, display_path(path))
        lines = [line for line in text.split("\n") if line.strip()]
        for (n, record), line in zip(read_jsonl(text, display_path(path)), lines):
            if not isinstance(record, dict) or not {"suite", "eval_set_id", "eval_id"} <= record.keys():
                raise InputError(Problem(display_path(path), f"line {n}", "is not an inference record with suite, eval_set_id and eval_id", "Merge the files evalgate wrote, unchanged."))
            out.inference.append((record, line))
    elif run.run.agent:
        raise InputError(Problem(shown, None, f"shard {run.shard.index} ran the agent but its folder has no inference.jsonl", "Keep the whole output folder of each shard (upload all of it)."))
    return out


def _check(shards: list[ShardOutput]) -> MissingShards | None:
    """Raises on shards that must not be merged; returns (does not raise) the error for
    shards that are missing, which only the caller can weigh."""
    problems: list[Problem] = []
    first = shards[0]
    assert first.results.shard is not None
    for s in shards[1:]:
        a, b = first.results, s.results
        assert a.shard is not None and b.shard is not None
        if b.shard.count != a.shard.count:
            problems.append(Problem(s.shown, "shard", f"is shard {b.shard.index}/{b.shard.count}, but {first.shown} is shard {a.shard.index}/{a.shard.count}", "Merge shards of one run: every leg must use the same N."))
        if b.config_digest != a.config_digest or b.schema_version != a.schema_version:
            problems.append(Problem(s.shown, "config_digest", f"shard {b.shard.index} was run with another config than shard {a.shard.index} ({first.shown})", "Run every shard with the same config, then merge."))
        if b.evalgate_version != a.evalgate_version:
            problems.append(Problem(s.shown, "evalgate_version", f"shard {b.shard.index} was run by evalgate {b.evalgate_version}, shard {a.shard.index} by {a.evalgate_version}", "Run every shard with the same evalgate."))
        if a.shard.commit and b.shard.commit and a.shard.commit != b.shard.commit:
            problems.append(Problem(s.shown, "shard.commit", f"shard {b.shard.index} evaluated commit {b.shard.commit[:12]}, shard {a.shard.index} commit {a.shard.commit[:12]}", "Merge the shards of one commit (one workflow run)."))
        if [x.name for x in b.suites] != [x.name for x in a.suites]:
            problems.append(Problem(s.shown, "suites", f"shard {b.shard.index}'s suites differ from shard {a.shard.index}'s", "Run every shard with the same config, then merge."))
    if problems:
        raise InputError(problems)
    seen: dict[int, ShardOutput] = {}
    for s in shards:
        if s.index in seen:
            problems.append(Problem(s.shown, "shard", f"shard {s.index} is given twice (also {seen[s.index].shown})", "Pass each shard's folder once."))
        seen.setdefault(s.index, s)
        count = s.results.shard.count  # type: ignore[union-attr]
        for suite in s.results.suites:
            for case in suite.cases:
                home = shard_of(suite.name, case.eval_set_id, case.eval_id, count)
                if home != s.index:
                    problems.append(Problem(s.shown, f"suite '{suite.name}', case '{case.eval_id}'", f"belongs to shard {home}, not {s.index}: these shards overlap", "Merge unchanged outputs of `evalgate run --shard K/N`."))
                    break
    if problems:
        raise InputError(problems)
    count = first.results.shard.count
    missing = [k for k in range(1, count + 1) if k not in seen]
    if missing:
        names = ", ".join(f"{k}/{count}" for k in missing)
        return MissingShards(
            [Problem(None, None, f"shard{'s' if len(missing) > 1 else ''} {names} of the run {'are' if len(missing) > 1 else 'is'} missing (given: {', '.join(sorted((s.shown for s in shards)))})", "Every leg must finish and upload its folder; re-run the failed legs, then merge again.")],
            missing,
            count,
        )
    return None


def _specs(suite_name: str, shards: list[ShardOutput], cases: list[tuple[CaseResult, int]]) -> dict[str, CriterionSpec]:
    """Each criterion's spec as the engine picks it (from the first case, in case order, that
    has the criterion), with the judge statistics of every shard added up."""
    by_index = {s.index: next(x for x in s.results.suites if x.name == suite_name) for s in shards}
    specs: dict[str, CriterionSpec] = {}
    for case, index in cases:
        for name in case.criteria:
            if name not in specs:
                specs[name] = by_index[index].criteria[name].model_copy(deep=True)
    for name, spec in specs.items():
        total: Counter = Counter()
        for suite in by_index.values():
            if name in suite.criteria:
                total.update(suite.criteria[name].stats)
        if total:
            spec.stats = dict(sorted(total.items()))
    return dict(sorted(specs.items()))


def _suite(name: str, shards: list[ShardOutput]) -> SuiteResult:
    from evalgate.infer import agent_error

    parts = [(s, next(x for x in s.results.suites if x.name == name)) for s in shards]
    cases = sorted(((c, s.index) for s, x in parts for c in x.cases), key=lambda item: (item[0].eval_set_id, item[0].eval_id))
    warnings: list[str] = []
    for _, x in parts:
        own = derived_warnings(x)  # in any language: finish_suite derives them again
        for w in x.warnings:
            if w not in own and w not in warnings:
                warnings.append(w)
    with_cases = [x for _, x in parts if x.cases]
    error = None
    if with_cases and all(x.agent_error for x in with_cases):
        reasons = Counter(str(r.get("error")) for s in shards for r, _ in s.inference if r.get("suite") == name)
        error = agent_error(reasons) if reasons else with_cases[0].agent_error
    policy = parts[0][1].not_evaluated_policy
    return finish_suite(name, policy, [c for c, _ in cases], _specs(name, shards, cases), warnings, error)  # type: ignore[arg-type]


def _agent(shards: list[ShardOutput]) -> dict[str, Any]:
    """run.agent of the whole run: case runs, failures, time and tokens added up; `seconds`
    is the longest leg's (the legs ran side by side)."""
    parts = [s.results.run.agent for s in shards if s.results.run.agent]
    if not parts:
        return {}
    suites: dict[str, dict[str, Any]] = {}
    for part in parts:
        for name, u in part.get("suites", {}).items():
            _add(suites.setdefault(name, {}), u)
    out: dict[str, Any] = {"seconds": max(p.get("seconds", 0.0) for p in parts), "suites": suites}
    simulator: dict[str, Any] = {}
    for part in parts:
        _add(simulator, part.get("simulator") or {})
    if simulator:
        out["simulator"] = simulator
    return out


def _scoring(shards: list[ShardOutput]) -> dict[str, Any]:
    """run.scoring of the whole run: each suite's and criterion's seconds added up over the legs."""
    out: dict[str, Any] = {}
    for s in shards:
        _add(out, s.results.run.scoring)
    return dict(sorted(out.items()))


def _add(into: dict[str, Any], more: dict[str, Any]) -> None:
    for k, v in more.items():
        if isinstance(v, dict):
            _add(into.setdefault(k, {}), v)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            into[k] = round(into.get(k, 0) + v, 3) if isinstance(v, float) else into.get(k, 0) + v


def merge(shards: list[ShardOutput]) -> RunResults:
    """The whole run's results from its shards, checked first: a missing shard raises."""
    run, missing = merge_partial(shards)
    if missing is not None:
        raise missing
    return run


def merge_partial(shards: list[ShardOutput]) -> tuple[RunResults, MissingShards | None]:
    """The results of the shards that are there, and which are missing (the action reports
    those as an ERROR). Anything else that forbids the merge raises."""
    if not shards:
        raise InputError(Problem(None, None, "no shard folders given", "Pass the folders of every shard."))
    missing = _check(shards)
    return _merged(sorted(shards, key=lambda s: s.index)), missing


def _merged(shards: list[ShardOutput]) -> RunResults:
    first = shards[0].results
    suites = [_suite(x.name, shards) for x in first.suites]
    started = [s.results.run.started_at for s in shards if s.results.run.started_at]
    durations = [s.results.run.duration_seconds for s in shards if s.results.run.duration_seconds is not None]
    info = RunInfo(
        started_at=min(started) if started else None,
        duration_seconds=max(durations) if durations else None,
        agent=_agent(shards),
        scoring=_scoring(shards),
        shards=[
            {
                "index": s.index,
                "cases": s.results.counts.cases,
                "commit": s.results.shard.commit,  # type: ignore[union-attr]
                "started_at": s.results.run.started_at,
                "duration_seconds": s.results.run.duration_seconds,
            }
            for s in shards
        ],
    )
    merged = finish_run(suites, first.config_digest, info)
    merged.evalgate_version = first.evalgate_version
    merged.selection = first.selection  # run --case: every shard's is the same (their config digests are)
    return merged


def inference_lines(shards: list[ShardOutput], run: RunResults) -> list[str]:
    """The shards' inference lines in the order an unsharded run writes them: suite order,
    then (eval_set_id, eval_id), then run."""
    order = {s.name: i for i, s in enumerate(run.suites)}
    lines = [(record, line) for s in shards for record, line in s.inference]
    lines.sort(key=lambda item: (order.get(item[0]["suite"], len(order)), item[0]["eval_set_id"], item[0]["eval_id"], item[0].get("run") or 0))
    return [line for _, line in lines]


def adk_files(shards: list[ShardOutput]) -> dict[str, dict[str, Any]]:
    """The ADK-shaped eval set results, one per (suite, eval set) file: each file's cases from
    every shard, in eval_id order (the order of an unsharded run)."""
    out: dict[str, dict[str, Any]] = {}
    for s in shards:
        root = s.folder / ADK_DIR
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*.json")):
            rel = path.relative_to(root).as_posix()
            data = load_json_file(path)
            if rel not in out:
                out[rel] = data
            else:
                out[rel]["eval_case_results"].extend(data.get("eval_case_results", []))
    for data in out.values():
        data["eval_case_results"].sort(key=lambda c: c.get("eval_id", ""))
    return out


def write(shards: list[ShardOutput], run: RunResults, out: Path) -> list[Path]:
    """Write results.json, junit.xml, inference.jsonl (when the agent ran) and adk/ into `out`.
    The shards may come in any order: lines and cases are put in the run's order."""
    from evalgate.reports.junit import junit_xml

    out.mkdir(parents=True, exist_ok=True)
    written = [out / "results.json", out / "junit.xml"]
    results_io.write(run, out / "results.json")
    (out / "junit.xml").write_text(junit_xml(run), encoding="utf-8", errors="backslashreplace")
    if any(s.inference for s in shards) or run.run.agent:
        (out / "inference.jsonl").write_text("".join(line + "\n" for line in inference_lines(shards, run)), encoding="utf-8", errors="backslashreplace")
        written.append(out / "inference.jsonl")
    for rel, data in adk_files(shards).items():
        path = out / ADK_DIR / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        results_io.write_json(data, path)
        written.append(path)
    return written


def merge_folders(paths: list[Path], out: Path) -> tuple[RunResults, list[ShardOutput]]:
    """Read, check and merge the shard folders; write the merged outputs to `out`."""
    shards = [read_shard(p) for p in shard_folders(paths)]
    run = merge(shards)
    write(shards, run, out)
    return run, shards
