"""From a loaded config to scoreable suites: read every file, pair expected with actual.

Everything that can be wrong with the input is found here, before any scoring, and
reported together: `evalgate validate` is this step alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalgate.config import LoadedConfig, SuiteConfig, default_criteria, parse_criteria, read_test_config
from evalgate.criteria import Criterion
from evalgate.engine import CaseInput, SuitePlan
from evalgate.errors import InputError, Problem, ProblemCollector, display_path
from evalgate.loaders.actual import ActualRecord, load_actual
from evalgate.loaders.evalsets import EVALSET_SUFFIXES, LoadedEvalSet, expand, expected_digest, load_evalset, test_config_beside
from evalgate.results import digest


def build_plans(loaded: LoadedConfig) -> list[SuitePlan]:
    problems = ProblemCollector()
    plans = []
    for i, suite in enumerate(loaded.config.suites):
        plan = problems.run(_build_suite, loaded, i, suite)
        if plan is not None:
            plans.append(plan)
    problems.raise_if_any()
    return plans


def config_digest(loaded: LoadedConfig, plans: list[SuitePlan]) -> str:
    """Digest of the config as it takes effect: suites with their resolved criteria."""
    effective = []
    for suite, plan in zip(loaded.config.suites, plans):
        criteria = sorted(
            {
                (name, crit.version, digest({"threshold": crit.threshold, **crit.options()}))
                for case in plan.cases
                for name, crit in case.criteria.items()
            }
        )
        effective.append({"name": suite.name, "not_evaluated": suite.not_evaluated, "criteria": criteria})
    return digest(effective)


def _build_suite(loaded: LoadedConfig, i: int, suite: SuiteConfig) -> SuitePlan:
    shown, base = loaded.shown, loaded.base
    explicit = _explicit_criteria(loaded, i, suite)
    if suite.traces:
        return _trace_suite(loaded, i, suite, explicit or {})
    problems = ProblemCollector()
    set_files = problems.run(expand, suite.evalsets, base, EVALSET_SUFFIXES, shown, lambda j: loaded.where("suites", i, "evalsets", j)) or []
    actual_files = problems.run(expand, suite.actual, base, (".evalset_result.json", ".jsonl"), shown, lambda j: loaded.where("suites", i, "actual", j)) or []
    problems.raise_if_any()

    evalsets = [es for es in (problems.run(load_evalset, p, base) for p in set_files) if es is not None]
    records = [r for rs in (problems.run(load_actual, p) for p in actual_files) if rs for r in rs]
    problems.raise_if_any()

    warnings: list[str] = []
    actual_index = _index_actual(records, problems, warnings)
    test_configs: dict[Path, dict[str, Criterion]] = {}
    cases: list[CaseInput] = []
    seen: dict[tuple[str, str], str] = {}
    used: set[int] = set()
    for es in evalsets:
        criteria = explicit
        if criteria is None:
            tc = test_config_beside(es.path)
            if tc is None:
                criteria = default_criteria()
            else:
                if tc not in test_configs:
                    test_configs[tc] = problems.run(read_test_config, tc) or {}
                criteria = test_configs[tc]
        for case in es.eval_set.eval_cases:
            key = (es.eval_set.eval_set_id, case.eval_id)
            place = es.case_places.get(case.eval_id, "")
            if key in seen:
                problems.add(es.shown, place, f"eval case '{case.eval_id}' of eval set '{key[0]}' is also in {seen[key]}", "Keep one copy of each case.")
                continue
            seen[key] = f"{es.shown} {place}".strip()
            record = _match(actual_index, key, es.path if es.legacy else None)
            if record is None:
                problems.add(
                    es.shown,
                    place,
                    f"no actual outputs for eval case '{case.eval_id}' (eval set '{key[0]}') in {', '.join(display_path(p) for p in actual_files)}",
                    "Run the agent on this case and record its output, or remove the case.",
                )
                continue
            used.add(id(record))
            expected = case.conversation
            if expected is not None and len(expected) != len(record.invocations):
                problems.add(
                    record.shown,
                    record.place,
                    f"eval case '{case.eval_id}' has {len(expected)} expected invocations ({es.shown}) but {len(record.invocations)} actual ones",
                    "Record one actual invocation per expected turn, in order.",
                )
                continue
            case_data = case.model_dump(mode="json", exclude_none=True)
            cases.append(
                CaseInput(
                    eval_set_id=key[0],
                    eval_id=case.eval_id,
                    criteria=criteria,
                    expected_digest=expected_digest(case_data),
                    expected=expected,
                    actual=record.invocations,
                    source={"evalset": es.shown, "actual": f"{record.shown} {record.place}"},
                    session=case.session_input.model_dump(mode="json") if case.session_input else {},
                )
            )
    problems.raise_if_any()
    unused = [r for r in records if id(r) not in used and r is actual_index.get((r.eval_set_id, r.eval_id))]
    if unused:
        sample = ", ".join(f"'{r.eval_id}'" for r in unused[:3])
        warnings.append(f"{len(unused)} actual records match no eval case (e.g. {sample}); they were not scored")
    return SuitePlan(name=suite.name, cases=cases, not_evaluated=suite.not_evaluated, warnings=warnings)


def _explicit_criteria(loaded: LoadedConfig, i: int, suite: SuiteConfig) -> dict[str, Criterion] | None:
    if suite.criteria is None:
        return None
    if isinstance(suite.criteria, str):
        path = Path(suite.criteria)
        path = path if path.is_absolute() else loaded.base / path
        if not path.is_file():
            raise InputError(Problem(loaded.shown, loaded.where("suites", i, "criteria"), f"'{suite.criteria}' is not a file", "Point 'criteria' at an ADK test_config.json, or write the criteria inline."))
        return read_test_config(path)
    criteria = parse_criteria(suite.criteria, loaded.shown, lambda *loc: loaded.where("suites", i, "criteria", *loc))
    if not criteria:
        raise InputError(Problem(loaded.shown, loaded.where("suites", i, "criteria"), "no criteria given", "Name at least one criterion, or drop 'criteria' to use the defaults."))
    return criteria


def _index_actual(records: list[ActualRecord], problems: ProblemCollector, warnings: list[str]) -> dict[Any, ActualRecord]:
    """Index records by (eval_set_id, eval_id). Eval history may hold several runs of a case:
    the newest wins. Two inference records for one case are an error."""
    index: dict[tuple[str, str], ActualRecord] = {}
    for r in records:
        key = (r.eval_set_id, r.eval_id)
        old = index.get(key)
        if old is None:
            index[key] = r
        elif old.timestamp is not None and r.timestamp is not None:
            newer = r if (r.timestamp, r.shown) > (old.timestamp, old.shown) else old
            index[key] = newer
        else:
            problems.add(r.shown, r.place, f"a second set of actual outputs for eval case '{r.eval_id}' (eval set '{r.eval_set_id}'); the first is in {old.shown} {old.place}", "Keep one record per case.")
    return index


def _match(index: dict[Any, ActualRecord], key: tuple[str, str], legacy_file: Path | None) -> ActualRecord | None:
    """Exact (eval_set_id, eval_id), else the only record with that eval_id.

    The fallback serves legacy files, whose eval_set_id ADK makes up at run time. ADK also
    names a legacy case by the path it was given, relative to wherever ADK ran; so for a
    legacy file, a record whose eval_id is a path to the same file also matches.
    """
    hit = index.get(key)
    if hit is not None:
        return hit
    by_id = [r for (_, e), r in index.items() if e == key[1]]
    if not by_id and legacy_file is not None:
        by_id = [r for (_, e), r in index.items() if _same_file(e, legacy_file)]
    return by_id[0] if len(by_id) == 1 else None


def _same_file(eval_id: str, file: Path) -> bool:
    """Does a legacy eval_id (a path as ADK was given it) name `file`? Exact from the working
    directory, or by trailing path components (at least the file and its folder)."""
    named = Path(eval_id)
    if named.is_absolute() or (Path.cwd() / named).exists():
        try:
            return named.resolve() == file.resolve()
        except OSError:
            return False
    parts, full = named.parts, file.resolve().parts
    return len(parts) >= 2 and full[-len(parts):] == parts


def _trace_suite(loaded: LoadedConfig, i: int, suite: SuiteConfig, criteria: dict[str, Criterion]) -> SuitePlan:
    from evalgate.loaders.traces import load_traces

    problems = ProblemCollector()
    for name, crit in criteria.items():
        if crit.input_kind != "trace":
            problems.add(loaded.shown, loaded.where("suites", i, "criteria", name), f"'{name}' scores eval sets, not traces", "Trace suites take trace criteria such as 'trace_value'.")
    files = problems.run(expand, suite.traces, loaded.base, (".json", ".jsonl"), loaded.shown, lambda j: loaded.where("suites", i, "traces", j)) or []
    problems.raise_if_any()
    cases = []
    seen: dict[str, str] = {}
    for path in files:
        shown = display_path(path)
        loaded_traces = problems.run(load_traces, path, shown) or []
        for place, trace in loaded_traces:
            if trace.id in seen:
                problems.add(shown, place, f"duplicate trace id '{trace.id}' (also {seen[trace.id]})", "Give each trace a unique id.")
                continue
            seen[trace.id] = f"{shown} {place}"
            data = trace.model_dump(mode="json")
            cases.append(
                CaseInput(
                    eval_set_id=shown,
                    eval_id=trace.id,
                    criteria=criteria,
                    expected_digest=digest(data),
                    trace=trace,
                    source={"trace": f"{shown} {place}"},
                )
            )
    problems.raise_if_any()
    return SuitePlan(name=suite.name, cases=cases, not_evaluated=suite.not_evaluated)
