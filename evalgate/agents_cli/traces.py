"""agents-cli traces: the ones evalgate writes when it runs the agent, and traces read as recorded outputs.

A trace is a dataset case after a run, as `agents-cli eval generate` writes it
(`evalgate.agents_cli.cases.trace_case`). When evalgate runs the agent on dataset cases it
keeps each successful run's trace on `AgentRun.trace` and writes them all to
`<out>/traces/traces_<YYYYMMDD_HHMMSS>.json`, an EvaluationDataset `agents-cli eval grade`
reads. Read back under `actual:`, a traces file (or a folder of them, as agents-cli keeps
`artifacts/traces/`) gives one recorded output per case; of several traces of one case the
newest file's wins.

agents-cli records no dataset in a trace, so a trace matches a case by its id. evalgate adds
extra case fields to the traces it writes (agents-cli keeps extra fields):
`evalgate_eval_set_id` (the dataset, so they match exactly), `evalgate_suite`,
`evalgate_run` when a case ran more than once, and `evalgate_eval_id` for a case without an
`eval_case_id` (its id is its index in the dataset, which a traces file does not keep: it
holds several datasets' cases, and no failed ones).
"""

from __future__ import annotations

import copy
import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Optional

from evalgate.agents_cli.cases import EVAL_SET_FIELD, AcliDataset, case_dump, case_id, parse_dataset, trace_case, trace_invocations
from evalgate.errors import ProblemCollector

SUITE_FIELD = "evalgate_suite"
RUN_FIELD = "evalgate_run"
EVAL_ID_FIELD = "evalgate_eval_id"
TRACES_FOLDER = "traces"
_STAMP = re.compile(r"(\d{8}_\d{6})")
_MODEL_AUTHOR = "model"


def agents_map(raw: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """ADK's `/apps/<app>/app-info` agents (or `get_agents_dict` of the root agent, dumped) as
    agents-cli puts them into a trace's `agent_data.agents`: every agent an LlmAgent (ADK lists
    only those), with its description, instruction, tools and sub-agents; empty fields left out."""
    out: dict[str, dict[str, Any]] = {}
    for agent_id, info in raw.items():
        if not isinstance(info, dict):
            continue
        entry = {
            "agent_id": agent_id,
            "agent_type": "LlmAgent",
            "description": info.get("description"),
            "instruction": info.get("instruction"),
            "tools": info.get("tools"),
            "sub_agents": info.get("sub_agents", info.get("subAgents")),
        }
        out[agent_id] = {k: v for k, v in entry.items() if v is not None}
    return out


def rewrite_model_authors(events: list[dict[str, Any]], root: Optional[str]) -> list[dict[str, Any]]:
    """Events authored "model" as authored by the root agent, as agents-cli rewrites a case
    before it runs it (`rewrite_model_author_events`): ADK shows another author's words to
    the model as context, its own as its own turns."""
    if not root:
        return events
    return [{**e, "author": root} if e.get("author") == _MODEL_AUTHOR else e for e in events]


def _rewritten_case(dump: dict[str, Any], root: Optional[str]) -> dict[str, Any]:
    if not root:
        return dump
    turns = (dump.get("agent_data") or {}).get("turns") or []
    if not any(e.get("author") == _MODEL_AUTHOR for t in turns for e in t.get("events") or []):
        return dump
    out = copy.deepcopy(dump)
    for turn in out["agent_data"]["turns"]:
        turn["events"] = rewrite_model_authors(turn.get("events") or [], root)
    return out


def run_trace(
    dump: dict[str, Any],
    invocations: list[Any],
    *,
    eval_set_id: str,
    eval_id: str,
    suite: str,
    run: Optional[int],
    root: Optional[str] = None,
    agents: Optional[dict[str, Any]] = None,
) -> dict[str, Any]:
    """The trace of one run of a dataset case (`trace_case`, after agents-cli's rewrite of
    "model" authors), with the fields that name it for evalgate: its eval set, its id when
    the case has no eval_case_id, its suite, and its run when the case runs more than once
    (`run` None)."""
    trace = trace_case(_rewritten_case(dump, root), invocations, agents or None, root)
    trace[EVAL_SET_FIELD] = eval_set_id
    if not (dump.get("eval_case_id") or "").strip():
        trace[EVAL_ID_FIELD] = eval_id
    trace[SUITE_FIELD] = suite
    if run is not None:
        trace[RUN_FIELD] = run
    return trace


def stamp(now: Optional[datetime] = None) -> str:
    """agents-cli's artifact time stamp: local time, `YYYYMMDD_HHMMSS`."""
    return (now or datetime.now()).strftime("%Y%m%d_%H%M%S")


def write_traces(traces: list[dict[str, Any]], folder: Path, now: Optional[datetime] = None) -> Optional[Path]:
    """`folder/traces_<stamp>.json`: an EvaluationDataset of `traces`, as `eval generate`
    writes it; nothing when there are none (agents-cli writes no empty traces file). A file
    of that name already there (two runs in one second) gets a `_2`, `_3` suffix."""
    from evalgate import writing

    if not traces:
        return None
    writing.make_dirs(folder)
    base = f"traces_{stamp(now)}"
    path, n = folder / f"{base}.json", 1
    while path.exists() or path.is_symlink():
        n += 1
        path = folder / f"{base}_{n}.json"
    # As every output file: a new file renamed into place, never written through a link.
    writing.write_text(path, json.dumps({"eval_cases": traces}, ensure_ascii=False, indent=2) + "\n")
    return path


# --- reading -------------------------------------------------------------------------


def file_time(path: Path) -> float:
    """When a traces file was written: the time stamp in its name (agents-cli's and ours,
    local time), else its modification time."""
    found = _STAMP.search(path.name)
    if found:
        try:
            return datetime.strptime(found.group(1), "%Y%m%d_%H%M%S").timestamp()
        except ValueError:
            pass
    return path.stat().st_mtime


def trace_records(data: Any, path: Path, shown: str, record: Callable[..., Any]) -> list[Any]:
    """The recorded outputs of a traces file: one record per case, made by `record` (the
    loader's `ActualRecord`, handed in so this package does not import the loader that
    imports it), its invocations read with `trace_invocations` and the case itself
    (`case_dump`) kept as `trace`."""
    dataset: AcliDataset = parse_dataset(data, shown)
    problems = ProblemCollector()
    when = file_time(path)
    records = []
    for i, case in enumerate(dataset.eval_cases):
        place = f"eval_cases[{i}]"
        try:
            invocations = trace_invocations(case)
        except ValueError as e:
            problems.add(shown, place, f"the trace cannot be read as the agent's turns: {e}", "Fix the case's contents ({role, parts: [...]}), or remove the case.")
            continue
        dump = case_dump(case)
        extra = case.model_extra or {}
        set_id, suite, run, own_id = extra.get(EVAL_SET_FIELD), extra.get(SUITE_FIELD), extra.get(RUN_FIELD), extra.get(EVAL_ID_FIELD)
        records.append(
            record(
                eval_set_id=set_id if isinstance(set_id, str) else "",
                eval_id=own_id if isinstance(own_id, str) and own_id and not case.eval_case_id else case_id(case, i),
                invocations=invocations,
                shown=shown,
                place=place,
                timestamp=when,
                path=path,
                run=run if isinstance(run, int) and not isinstance(run, bool) and run >= 1 else None,
                suite=suite if isinstance(suite, str) else None,
                trace=dump,
            )
        )
    problems.raise_if_any()
    return records


def shifted_index(record: Any, expected: Any) -> Optional[str]:
    """Why a trace named by its index in its file (no `eval_case_id`, and not written by
    evalgate) is not the trace of the dataset case of that index, or None: the message it
    answers is not the one that case sends. agents-cli leaves failed cases out of its
    traces file, so every later index-named trace is one place off."""
    trace = record.trace or {}
    if trace.get("eval_case_id") or trace.get(EVAL_ID_FIELD) or not record.invocations:
        return None
    theirs, ours = record.invocations[-1].user_content, expected.user_content
    if theirs.model_dump(mode="json", exclude_none=True) == ours.model_dump(mode="json", exclude_none=True):
        return None
    return f"the trace of case '{record.eval_id}' (named by its place in the file) answers {json.dumps(theirs.text(), ensure_ascii=False)[:200]}, but that case sends {json.dumps(ours.text(), ensure_ascii=False)[:200]}"


def settle(records: list[Any], sets_by_case: dict[str, list[str]]) -> list[Any]:
    """Trace records ready to pair with cases. A trace that names no eval set takes the one
    eval set of the suite with a case of its id (two such sets: an input error, it could be
    either). Of several traces of one case, only the newest file's are kept (agents-cli's
    traces folder accumulates a file per `eval generate`). Other records pass unchanged."""
    problems = ProblemCollector()
    for r in records:
        if r.trace is None or r.eval_set_id:
            continue
        sets = sets_by_case.get(r.eval_id, [])
        if len(sets) > 1:
            problems.add(
                r.shown,
                r.place,
                f"the trace of case '{r.eval_id}' could be of the case of that id in any of the eval sets {', '.join(repr(s) for s in sorted(sets))}",
                "Give the dataset cases eval_case_ids unique across the suite's datasets (agents-cli traces do not name their dataset), or split the datasets into suites of their own.",
            )
        elif sets:
            r.eval_set_id = sets[0]
    problems.raise_if_any()
    newest: dict[tuple, tuple[float, str]] = {}
    for r in records:
        if r.trace is not None:
            key = (r.eval_set_id, r.eval_id, r.suite)
            newest[key] = max(newest.get(key, (float("-inf"), "")), (r.timestamp or 0.0, r.shown))
    return [r for r in records if r.trace is None or newest[(r.eval_set_id, r.eval_id, r.suite)] == (r.timestamp or 0.0, r.shown)]
