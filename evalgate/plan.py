"""From a loaded config to scoreable suites: read every file, pair expected with actual.

Everything that can be wrong with the input is found here, before any scoring, and
reported together: `evalgate validate` is this step alone.
"""

from __future__ import annotations

import difflib
import fnmatch
import glob
import importlib.util
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from evalgate.config import LoadedConfig, SuiteConfig, default_criteria, read_simulator_config, read_test_config, suite_agent
from evalgate.confine import config_path_problems, outside
from evalgate.criteria import Criterion
from evalgate.engine import AgentRun, CaseInput, SuitePlan
from evalgate.errors import InputError, Problem, ProblemCollector, display_path
from evalgate.i18n import _, n_
from evalgate.loaders.actual import ACTUAL_SUFFIXES, ActualRecord, load_actual, recorded_outputs
from evalgate.loaders.evalsets import EXPECTED_SUFFIXES, LoadedEvalSet, SelectedFile, expand, expand_evalsets, expected_digest, load_evalset, part_digests, split_selector, test_config_beside
from evalgate.results import digest
from evalgate.simulated_user import BUILT_IN_PERSONAS, UserSimulatorConfig, known_persona


def build_plans(loaded: LoadedConfig) -> list[SuitePlan]:
    problems = ProblemCollector()
    problems.extend(config_path_problems(loaded))
    plans = []
    for i, suite in enumerate(loaded.config.suites):
        plan = problems.run(_build_suite, loaded, i, suite)
        if plan is not None:
            plans.append(plan)
            problems.extend(_missing_extras(loaded, i, plan))
    problems.raise_if_any()
    return plans


def _installed(module: str) -> bool:
    if module in sys.modules:
        return sys.modules[module] is not None  # None: the import system treats it as missing
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _missing_extras(loaded: LoadedConfig, i: int, plan: SuitePlan) -> list[Problem]:
    """A configured criterion whose optional dependency is not installed: an input error
    naming the extra, not a run whose cases all end NOT_EVALUATED."""
    out = []
    named = {n: c for case in plan.cases for n, c in case.criteria.items()}
    for name, crit in sorted(named.items()):
        for module, extra in crit.requires():
            if not _installed(module):
                out.append(
                    Problem(loaded.shown, loaded.where("suites", i, "criteria"), f"'{name}' needs {module}, which is not installed", f"Install the {extra} extra: pip install 'adk-evalgate[{extra}]'.")
                )
                break
    return out


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
        entry = {"name": suite.name, "not_evaluated": suite.not_evaluated, "criteria": criteria}
        if plan.agent is not None:
            # What changes the measurement, not where the agent is served or how fast.
            entry["agent"] = {"num_runs": plan.agent.num_runs, "tools": plan.agent.tools}
        effective.append(entry)
    # The gate's policy decides verdicts too: a change to it is a config change. Only what
    # differs from the defaults: a release that adds a gate field (with its default) leaves
    # every project's digest as it was, so no baseline reads as "the config changed".
    gate = loaded.config.gate.model_dump(mode="json", exclude={"id"}, exclude_defaults=True)
    return digest({"suites": effective, "gate": gate})


def _build_suite(loaded: LoadedConfig, i: int, suite: SuiteConfig) -> SuitePlan:
    shown, base = loaded.shown, loaded.base
    warnings: list[str] = []
    explicit = _explicit_criteria(loaded, i, suite, warnings)
    if suite.traces:
        return _trace_suite(loaded, i, suite, explicit or {})
    agent = suite_agent(loaded.config, suite)
    problems = ProblemCollector()
    # Every file an item names must lie inside the project (evalgate.confine); the items'
    # paths are checked first, their case selectors read after.
    _confined(loaded, problems, [_selector_path(item) for item in suite.evalsets], EXPECTED_SUFFIXES, "suites", i, "evalsets")
    problems.raise_if_any()
    set_files = problems.run(expand_evalsets, suite.evalsets, base, shown, lambda j: loaded.where("suites", i, "evalsets", j)) or []
    actual_files = []
    if agent is None:
        actual_files = _confined(loaded, problems, suite.actual, ACTUAL_SUFFIXES, "suites", i, "actual", keep=recorded_outputs)
    problems.raise_if_any()

    loaded_sets = [(f, problems.run(load_evalset, f.path, base)) for f in set_files]
    evalsets = [es for _, es in loaded_sets if es is not None]
    records = [r for rs in (problems.run(load_actual, p, warnings) for p in actual_files) if rs for r in rs]
    problems.raise_if_any()
    for f, es in loaded_sets:
        if es is not None:
            problems.extend(_unknown_ids(loaded, i, suite, f, es))
    problems.raise_if_any()
    chosen = {id(es): f.ids for f, es in loaded_sets}
    if any(r.suite == suite.name for r in records):
        # One inference.jsonl from a run of several suites over the same cases: this suite's own.
        records = [r for r in records if r.suite in (None, suite.name)]
    if any(r.trace is not None for r in records):
        from evalgate.agents_cli.traces import settle

        sets_by_case: dict[str, list[str]] = {}
        for es in evalsets:
            for eval_id in es.case_places:
                sets_by_case.setdefault(eval_id, []).append(es.eval_set.eval_set_id)
        records = problems.run(settle, records, sets_by_case) or []
        problems.raise_if_any()

    actual_index = _ActualIndex(records, {es.eval_set.eval_set_id for es in evalsets}, problems)
    test_configs: dict[Path, dict[str, Criterion]] = {}
    simulators: dict[Path, Optional[UserSimulatorConfig]] = {}
    cases: list[CaseInput] = []
    seen: dict[tuple[str, str], str] = {}
    relative: dict[Any, str] = {}  # each file's path relative to the config, worked out once, not once a case

    def shown_from_config(path: Any) -> str:
        if path not in relative:
            relative[path] = display_path(path, base)
        return relative[path]

    checked: dict[Path, bool] = {}  # test_config.json beside eval sets: whether it stays inside the project
    for es in evalsets:
        criteria = explicit
        tc = _criteria_file(loaded, suite)
        if tc is None:
            tc = test_config_beside(es.path)
            # The eval set is inside the project; the file beside it may be a link out of it.
            if tc is not None and tc not in checked:
                escaped = outside(loaded, [tc], display_path(tc, base), loaded.where("suites", i, "evalsets"))
                problems.extend(escaped)
                checked[tc] = not escaped
            if tc is not None and not checked[tc]:
                tc = None
        if criteria is None:
            if tc is None:
                criteria = default_criteria()
            else:
                if tc not in test_configs:
                    test_configs[tc] = problems.run(read_test_config, tc, warnings) or {}
                criteria = test_configs[tc]
        simulator = suite.user_simulator
        if simulator is None and tc is not None and agent is not None:
            if tc not in simulators:
                simulators[tc] = problems.run(read_simulator_config, tc)
            simulator = simulators[tc]
        for case in es.eval_set.eval_cases:
            key = (es.eval_set.eval_set_id, case.eval_id)
            if chosen[id(es)] and case.eval_id not in chosen[id(es)]:
                if agent is None:  # its recorded output is not an unused record
                    actual_index.match(key, es.path if es.legacy else None)
                continue
            place = es.case_places.get(case.eval_id, "")
            if key in seen:
                problems.add(es.shown, place, f"eval case '{case.eval_id}' of eval set '{key[0]}' is also in {seen[key]}", "Keep one copy of each case.")
                continue
            seen[key] = f"{es.shown} {place}".strip()
            expected = case.conversation
            acli = es.acli.get(case.eval_id)  # an agents-cli dataset's case
            item = CaseInput(
                eval_set_id=key[0],
                eval_id=case.eval_id,
                criteria=criteria,
                expected_digest=acli.digest if acli is not None else expected_digest(case),
                # An agents-cli case's criteria read its dataset entry, which the digest above
                # covers whole: it pairs by that (no parts).
                parts=part_digests(case) if acli is None else {},
                expected=expected,
                # Paths relative to the config, so results do not depend on the working folder.
                source={"evalset": shown_from_config(es.path)},
                session=case.session_input.model_dump(mode="json") if case.session_input else {},
                scenario=case.conversation_scenario,
                simulator=simulator if case.conversation_scenario is not None else None,
                rubrics=list(case.rubrics or []),
                acli=acli.acli if acli is not None else None,
                history=acli.history if acli is not None else [],
            )
            if case.conversation_scenario is not None and agent is not None:
                persona = case.conversation_scenario.get("user_persona", case.conversation_scenario.get("userPersona"))
                if not known_persona(persona):
                    problems.add(
                        es.shown,
                        f"{place}.conversation_scenario.user_persona",
                        f"unknown persona '{persona}'",
                        f"Use one of ADK's built-in personas ({', '.join(BUILT_IN_PERSONAS)}) or describe one: {{id, description, behaviors}}.",
                    )
                    continue
            if agent is not None:
                # Invocations come from running the agent (evalgate.infer); case rubrics go
                # on the expected turns now, on a scenario's generated turns later.
                if case.rubrics and expected:
                    problems.run(_attach_case_rubrics, case.rubrics, expected, es.shown, place)
                cases.append(item)
                continue
            record, ambiguous = actual_index.match(key, es.path if es.legacy else None)
            if ambiguous:
                problems.add(es.shown, place, f"eval case '{case.eval_id}' matches several actual records: {ambiguous}", "Keep one record for the case, or give the records the eval set's eval_set_id.")
                continue
            if record is None:
                problems.add(
                    es.shown,
                    place,
                    f"no actual outputs for eval case '{case.eval_id}' (eval set '{key[0]}') in {', '.join(display_path(p) for p in actual_files)}",
                    "Run the agent on this case and record its output (or let evalgate run it: 'agent:' in the config), or remove the case.",
                )
                continue
            runs = sorted([record, *record.other_runs], key=lambda r: r.run or 0)
            bad = [r for r in runs if r.error is None and expected is not None and len(expected) != len(r.invocations)]
            for r in bad:
                problems.add(
                    r.shown,
                    r.place,
                    f"eval case '{case.eval_id}' has {len(expected or [])} expected invocations ({es.shown}) but {len(r.invocations)} actual ones",
                    "Record one actual invocation per expected turn, in order.",
                )
            if record.trace is not None and expected:
                from evalgate.agents_cli.traces import shifted_index

                for r in runs:
                    why = shifted_index(r, expected[-1])
                    if why:
                        bad.append(r)
                        problems.add(r.shown, r.place, why, "agents-cli names a case without eval_case_id by its place in the traces file, which shifts when a case fails: give every dataset case an eval_case_id, then run eval generate again.")
            if bad:
                continue
            first = next((r for r in runs if r.error is None), runs[0])
            if case.rubrics:
                # ADK copies case rubrics onto the invocations judged; without expected
                # turns (a scenario case) those are the actual ones.
                for r in ([None] if expected else runs):
                    problems.run(_attach_case_rubrics, case.rubrics, expected or r.invocations, es.shown, place)
            item.actual = first.invocations
            item.source["actual"] = f"{shown_from_config(record.path or record.shown)} {record.place}"
            if len(runs) > 1 or record.run is not None or record.error is not None or record.trace is not None:
                item.runs = [AgentRun(r.invocations if r.error is None else None, r.error, run=r.run or 1, ended=r.ended, log=r.log, trace=r.trace) for r in runs]
            cases.append(item)
    for name, crit in {n: c for case in cases for n, c in case.criteria.items()}.items():
        if crit.input_kind == "trace":
            problems.add(shown, loaded.where("suites", i, "criteria", name), f"'{name}' scores traces, not eval sets", "Put it in a suite with 'traces:', or remove it.")
    problems.extend(_acli_on_adk_cases(loaded, i, cases))
    if not cases and not problems.problems:
        problems.add(shown, loaded.where("suites", i), "the suite has no eval cases", "Add cases to its eval sets; a suite that scores nothing cannot pass.")
    problems.extend(_resolve_custom_metrics(loaded, suite, cases))
    problems.raise_if_any()
    unused = actual_index.unused()
    if unused:
        sample = ", ".join(f"'{r.eval_id}'" for r in unused[:3])
        warnings.append(
            n_(
                "{n} actual record matches no eval case ({ids}); it was not scored",
                "{n} actual records match no eval case (e.g. {ids}); they were not scored",
                len(unused),
                ids=sample,
            )
        )
    where = ("suites", i, "agent") if suite.agent else ("agent",)
    return SuitePlan(name=suite.name, cases=cases, not_evaluated=suite.not_evaluated, warnings=warnings, agent=agent, agent_where=where)


def _resolve_custom_metrics(loaded: LoadedConfig, suite: SuiteConfig, cases: list[CaseInput]) -> list[Problem]:
    """Import every custom metric's function and check its signature, before any agent runs.

    `agent.` names the ADK agent folder, as under `adk eval`: the folder of the agent the
    suite runs (its own `agent: {adk: folder}` or the top-level one); for a suite without
    such an agent (recorded outputs), the top-level agent's folder if it has one, else the
    ADK agent folder holding the file that declares the metric (the layout `adk web` keeps:
    eval sets and test_config.json inside the agent folder). Other names import through
    sys.path, with the config file's folder added at its end."""
    from evalgate.criteria.custom_metric import CustomMetric

    if not _installed("google.adk"):
        return []  # the missing extra is reported once, by _missing_extras
    found = {id(c): c for case in cases for c in case.criteria.values() if isinstance(c, CustomMetric)}
    problems: list[Problem] = []
    for crit in found.values():
        problems.extend(crit.resolve(_agent_folder(loaded, suite, crit.declared_path), [loaded.base]))
    return problems


def _acli_on_adk_cases(loaded: LoadedConfig, i: int, cases: list[CaseInput]) -> list[Problem]:
    """agents-cli's metrics (an eval_config.yaml as criteria) score agents-cli dataset cases; on
    an ADK eval set's case every one would be NOT_EVALUATED, so that is an input error."""
    adk = sorted({c.source.get("evalset", c.eval_set_id) for c in cases if getattr(c, "acli", None) is None
                  and any(crit.input_kind == "acli" for crit in c.criteria.values())})
    if not adk:
        return []
    names = sorted({n for c in cases for n, crit in c.criteria.items() if crit.input_kind == "acli"})
    return [Problem(
        loaded.shown, loaded.where("suites", i, "criteria"),
        f"agents-cli metrics ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''}) score agents-cli datasets, and {', '.join(adk[:3])} "
        f"{'is an ADK eval set' if len(adk) == 1 else 'are ADK eval sets'}",
        "Give the ADK eval sets a suite of their own with ADK criteria, or convert them with `agents-cli scaffold upgrade`.",
    )]


def _agent_folder(loaded: LoadedConfig, suite: SuiteConfig, declared_in: Optional[Path]) -> Optional[Path]:
    for agent in (suite_agent(loaded.config, suite), loaded.config.agent):
        if agent is not None and agent.adk:
            folder = Path(agent.adk)
            folder = folder if folder.is_absolute() else loaded.base / folder
            if folder.is_dir():
                return folder
    if declared_in is not None:
        for folder in Path(declared_in).resolve().parents:
            if (folder / "__init__.py").is_file() and ((folder / "agent.py").is_file() or (folder / "agent" / "__init__.py").is_file()):
                return folder
    return None


SHOWN_IDS = 10  # eval ids listed in an error; a set may hold thousands


def _unknown_ids(loaded: LoadedConfig, i: int, suite: SuiteConfig, selected: SelectedFile, es: LoadedEvalSet) -> list[Problem]:
    """A selector's ids that name no case of its file: `adk eval` skips them silently, so a
    typo would quietly gate on fewer cases; here each is an error listing the ids there are."""
    out = []
    for eval_id, j in selected.ids.items():
        if eval_id not in es.case_places:
            path = split_selector(suite.evalsets[j])[0]
            out.append(
                Problem(
                    loaded.shown,
                    loaded.where("suites", i, "evalsets", j),
                    f"{path} has no eval case '{eval_id}'",
                    f"Its eval ids, closest first: {shown_ids(eval_id, list(es.case_places))}. Fix the id, or remove it from the selector.",
                )
            )
    return out


def shown_ids(near: str, ids: list[str]) -> str:
    """Up to SHOWN_IDS ids, the most like `near` first, quoted; with how many more there are."""
    ranked = sorted(ids, key=lambda x: -difflib.SequenceMatcher(None, near, x).ratio())
    more = len(ranked) - SHOWN_IDS
    return ", ".join(f"'{x}'" for x in ranked[:SHOWN_IDS]) + (f" and {more} more" if more > 0 else "")


@dataclass
class Selection:
    """What `--case` kept: the patterns, and how many of how many cases."""

    patterns: list[str]
    cases: int
    of: int

    def __str__(self) -> str:
        flags = "--case " + " --case ".join(shlex.quote(p) for p in self.patterns)
        return n_("selected {cases} of {n} case ({flags})", "selected {cases} of {n} cases ({flags})", self.of, cases=f"{self.cases:,}", flags=flags)


def case_matches(eval_id: str, patterns: list[str]) -> bool:
    """Does an eval_id match one of the --case patterns (a glob, case-sensitive, or the id itself)?"""
    return any(eval_id == p or fnmatch.fnmatchcase(eval_id, p) for p in patterns)


def select_cases(plans: list[SuitePlan], patterns: list[str]) -> Selection:
    """Keep the cases whose eval_id matches a pattern (in place); a suite left with no case is
    dropped. A pattern that matches no case is an error that lists some of the ids there are."""
    every = [c.eval_id for p in plans for c in p.cases]
    problems = ProblemCollector()
    for pattern in patterns:
        if not any(case_matches(eval_id, [pattern]) for eval_id in every):
            # A glob matches the whole id: 'refund' is not 'refund_1'.
            wider = next((w for w in (f"{pattern}*", f"*{pattern}*") if any(fnmatch.fnmatchcase(e, w) for e in every)), None)
            hint = f"Did you mean '{wider}'? " if wider else ""
            problems.add(
                None,
                "--case",
                f"'{pattern}' matches no eval case",
                f"{hint}Eval ids here, closest first: {shown_ids(pattern, sorted(set(every)))}. A pattern is a glob on the whole eval_id (*, ?, [abc]), case-sensitive.",
            )
    problems.raise_if_any()
    for plan in plans:
        plan.cases = [c for c in plan.cases if case_matches(c.eval_id, patterns)]
    plans[:] = [p for p in plans if p.cases]
    return Selection(patterns=list(patterns), cases=sum(len(p.cases) for p in plans), of=len(every))


def selected_digest(config_digest: str, patterns: list[str]) -> str:
    """The config digest of a run of the cases --case chose: not the whole run's, so its results
    are not merged with, or taken for, the whole run's."""
    return digest({"config_digest": config_digest, "case": sorted(set(patterns))})


def _confined(loaded: LoadedConfig, problems: ProblemCollector, patterns: list[Optional[str]], suffixes: tuple[str, ...], *loc: Any, keep: Optional[Callable[[list[Path]], tuple[list[Path], str]]] = None) -> list[Path]:
    """The files `patterns` name (`expand`), each of which must lie inside the project
    (evalgate.confine): a problem for each pattern that leads outside, and its files dropped.
    A None pattern is skipped (its item is reported elsewhere). `keep` picks, of what a folder
    or glob matched, the files to read (and says what it looks for, should none be left)."""
    out: dict[Path, None] = {}  # in order, each file once (expand resolved them)
    for j, pattern in enumerate(patterns):
        if pattern is None:
            continue
        files = problems.run(expand, [pattern], loaded.base, suffixes, loaded.shown, lambda _: loaded.where(*loc, j)) or []
        escaped = outside(loaded, files, pattern, loaded.where(*loc, j))
        problems.extend(escaped)
        if escaped:
            continue
        full = Path(pattern) if Path(pattern).is_absolute() else loaded.base / pattern
        if keep is not None and files and (glob.has_magic(pattern) or full.is_dir()):
            files, wanted = keep(files)
            if not files:
                problems.add(loaded.shown, loaded.where(*loc, j), f"'{pattern}' holds no {wanted}", "Fix the pattern, or remove it.")
        out.update(dict.fromkeys(files))
    return list(out)


def _selector_path(item: str) -> Optional[str]:
    """An `evalsets` item's path, without its case selector (as `adk eval` splits it); None
    when the selector is malformed (expand_evalsets says how)."""
    try:
        return split_selector(item)[0]
    except ValueError:
        return None


def _criteria_file(loaded: LoadedConfig, suite: SuiteConfig) -> Optional[Path]:
    """The suite's `criteria:` when it names an ADK test_config.json."""
    if not isinstance(suite.criteria, str):
        return None
    path = Path(suite.criteria)
    return path if path.is_absolute() else loaded.base / path


def _attach_case_rubrics(rubrics, invocations, shown: str, place: str) -> None:
    """Give every invocation the case's rubrics, before its own, as ADK does before judging;
    a rubric_id used at both levels is an error there too."""
    problems = ProblemCollector()
    for j, inv in enumerate(invocations):
        own = inv.rubrics or []
        clash = sorted({r.rubric_id for r in own} & {r.rubric_id for r in rubrics})
        if clash:
            problems.add(shown, f"{place}, invocation {j}: rubrics", f"rubric_id '{clash[0]}' is also a case-level rubric", "Give each rubric a unique rubric_id.")
            continue
        inv.rubrics = list(rubrics) + list(own)
    problems.raise_if_any()


def _explicit_criteria(loaded: LoadedConfig, i: int, suite: SuiteConfig, warnings: list[str]) -> dict[str, Criterion] | None:
    if suite.criteria is None:
        return None
    if isinstance(suite.criteria, str):
        path = Path(suite.criteria)
        path = path if path.is_absolute() else loaded.base / path
        if not path.is_file():
            raise InputError(Problem(loaded.shown, loaded.where("suites", i, "criteria"), f"'{suite.criteria}' is not a file", "Point 'criteria' at an ADK test_config.json, or write the criteria inline."))
        return read_test_config(path, warnings)
    criteria = loaded.inline_criteria[i]
    if not criteria:
        raise InputError(Problem(loaded.shown, loaded.where("suites", i, "criteria"), "no criteria given", "Name at least one criterion, or drop 'criteria' to use the defaults."))
    return criteria


class _ActualIndex:
    """Actual records by (eval_set_id, eval_id), and the rules that pair them with cases.

    Eval history may hold several runs of a case: the newest wins. Two inference records
    for one case are an error. A record serves at most one case.
    """

    def __init__(self, records: list[ActualRecord], set_ids: set[str], problems: ProblemCollector):
        self.set_ids = set_ids
        self.by_key: dict[tuple[str, str], ActualRecord] = {}
        self.used: set[int] = set()
        for r in records:
            key = (r.eval_set_id, r.eval_id)
            old = self.by_key.get(key)
            if old is None:
                self.by_key[key] = r
            elif old.run is not None and r.run is not None:
                taken = {old.run} | {o.run for o in old.other_runs}
                if r.run in taken:
                    problems.add(r.shown, r.place, f"run {r.run} of eval case '{r.eval_id}' (eval set '{r.eval_set_id}') is recorded twice", "Keep one record per case and run.")
                else:
                    old.other_runs.append(r)
            elif old.timestamp is not None and r.timestamp is not None:
                self.by_key[key] = _newest([old, r])
            else:
                problems.add(r.shown, r.place, f"a second set of actual outputs for eval case '{r.eval_id}' (eval set '{r.eval_set_id}'); the first is in {old.shown} {old.place}", "Keep one record per case.")

    def match(self, key: tuple[str, str], legacy_file: Path | None) -> tuple[ActualRecord | None, str | None]:
        """(record, None); (None, None) when there is none; (None, why) when ambiguous.

        Exact (eval_set_id, eval_id) first. Otherwise a record whose eval_set_id names no
        eval set of this suite may match by eval_id alone: ADK makes up a legacy file's
        eval_set_id at each run. ADK also names a legacy case by the file's path as it was
        given, relative to wherever ADK ran; a record naming the same file matches too.
        """
        hit = self.by_key.get(key)
        if hit is None:
            candidates = [
                r
                for (set_id, eval_id), r in self.by_key.items()
                if set_id not in self.set_ids
                and id(r) not in self.used
                and (eval_id == key[1] or (legacy_file is not None and _same_file(eval_id, legacy_file)))
            ]
            if len(candidates) > 1 and all(r.timestamp is not None for r in candidates):
                candidates = [_newest(candidates)]  # several eval-history runs of one case
            if len(candidates) > 1:
                return None, "; ".join(f"{r.shown} {r.place}" for r in candidates)
            hit = candidates[0] if candidates else None
        if hit is not None:
            self.used.add(id(hit))
        return hit, None

    def unused(self) -> list[ActualRecord]:
        return [r for r in self.by_key.values() if id(r) not in self.used]


def _newest(records: list[ActualRecord]) -> ActualRecord:
    return max(records, key=lambda r: (r.timestamp or 0.0, r.shown))


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
    files = _confined(loaded, problems, suite.traces, (".json", ".jsonl"), "suites", i, "traces")
    problems.raise_if_any()
    cases = []
    seen: dict[str, str] = {}
    for path in files:
        shown = display_path(path)
        set_id = display_path(path, loaded.base)  # not the working folder: results must not depend on it
        loaded_traces = problems.run(load_traces, path, shown) or []
        for place, trace in loaded_traces:
            if trace.id in seen:
                problems.add(shown, place, f"duplicate trace id '{trace.id}' (also {seen[trace.id]})", "Give each trace a unique id.")
                continue
            seen[trace.id] = f"{shown} {place}"
            data = trace.model_dump(mode="json")
            cases.append(
                CaseInput(
                    eval_set_id=set_id,
                    eval_id=trace.id,
                    criteria=criteria,
                    expected_digest=digest(data),
                    trace=trace,
                    source={"trace": f"{set_id} {place}"},
                )
            )
    if not cases and not problems.problems:
        problems.add(loaded.shown, loaded.where("suites", i), "the suite has no traces", "Add traces to its files; a suite that scores nothing cannot pass.")
    problems.raise_if_any()
    return SuitePlan(name=suite.name, cases=cases, not_evaluated=suite.not_evaluated)
