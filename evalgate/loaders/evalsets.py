"""Expected data: ADK eval sets (`*.evalset.json`, legacy and new `*.test.json`), agents-cli
datasets (any `*.json` that is one, by content: `evalgate.agents_cli.dataset`) and discovery.

ADK reads two older shapes besides the EvalSet schema, and so do we:

- a list of turns `[{query, expected_tool_use, reference, ...}]` (`AgentEvaluator`'s
  `*.test.json`): as in ADK, one multi-turn case whose eval_id (and here eval_set_id) is the
  file path;
- a list of named cases `[{name, data: [turns], initial_session: {app_name, user_id,
  state}}]` (what `adk eval`'s loader converts, `convert_eval_set_to_pydantic_schema`): one
  case per entry, its eval_id the `name`, its `session_input` the non-empty
  `initial_session`, and the eval_set_id the file path (ADK uses the path it was given).

Unlike ADK, a file that fails the EvalSet schema is not silently retried as an older shape:
the real validation error is reported.
"""

from __future__ import annotations

import glob
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evalgate.adk import Content, EvalCase, EvalSet, FunctionCall, IntermediateData, Invocation, Part, SessionInput, field_names
from evalgate.errors import InputError, Problem, ProblemCollector, display_path, load_json_file, problems_from_validation

EVALSET_SUFFIXES = (".evalset.json", ".test.json")
# What a folder or glob in `evalsets` is searched for: ADK's suffixes, and any `.json`, which is
# taken only when it is an agents-cli dataset (a README, an eval config or results beside the
# datasets are skipped).
EXPECTED_SUFFIXES = EVALSET_SUFFIXES + (".json",)


@dataclass
class LoadedEvalSet:
    path: Path
    shown: str
    eval_set: EvalSet
    legacy: bool
    case_places: dict[str, str] = field(default_factory=dict)  # eval_id -> place in the file
    # An agents-cli dataset's cases: eval_id -> evalgate.agents_cli.dataset.DatasetCase (the
    # case as written, its session history, its digest). Empty for an ADK eval set.
    acli: dict[str, Any] = field(default_factory=dict)


def expand(patterns: list[str], base: Path, suffixes: tuple[str, ...] | None, shown_config: str, where) -> list[Path]:
    """Files named by paths, globs or folders (a folder: files under it with `suffixes`).

    A pattern that matches nothing is an error naming it: a typo must not mean "no cases".
    """
    problems = ProblemCollector()
    found: list[Path] = []
    for i, pattern in enumerate(patterns):
        full = pattern if Path(pattern).is_absolute() else str(base / pattern)
        if glob.has_magic(pattern):
            hits = sorted(
                Path(p) for p in glob.glob(full, recursive=True) if Path(p).is_file() and (not suffixes or p.endswith(suffixes))
            )
        elif Path(full).is_dir():
            hits = sorted(p for p in Path(full).rglob("*") if p.is_file() and suffixes and p.name.endswith(suffixes))
        elif Path(full).is_file():
            hits = [Path(full)]
        else:
            problems.add(shown_config, where(i), f"'{pattern}' does not exist", f"Check the path; it is relative to the config file's folder ({display_path(base)}).")
            continue
        if not hits:
            kinds = " or ".join(f"*{s}" for s in suffixes) if suffixes else "files"
            problems.add(shown_config, where(i), f"'{pattern}' matches no {kinds}", "Fix the pattern, or remove it.")
        found.extend(hits)
    problems.raise_if_any()
    unique: dict[Path, None] = {}
    for p in found:
        unique.setdefault(p.resolve(), None)
    return list(unique)


def split_selector(item: str) -> tuple[str, list[str] | None]:
    """`path[:id1,id2]` as `adk eval` reads it (google.adk cli_eval.parse_and_get_evals_to_run):
    the path ends at the first ':' (after a Windows drive's `C:\\`), the ids are split on ','
    and blank ones dropped. Unlike ADK, ids are trimmed, and a second ':' (where ADK stops
    reading, silently dropping what follows) is a ValueError. None: no selector, every case."""
    drive = len(item) >= 3 and item[0].isascii() and item[0].isalpha() and item[1] == ":" and item[2] in "\\/"
    at = item.find(":", 3 if drive else 0)
    if at < 0:
        return item, None
    path, selector = item[:at], item[at + 1 :]
    if not path.strip():
        raise ValueError("names no eval set file before ':'")
    if ":" in selector:
        raise ValueError(f"has a second ':' in its selector ('{selector}'); adk eval would read only '{selector.split(':')[0]}' and drop the rest")
    return path, [s.strip() for s in selector.split(",") if s.strip()]


@dataclass
class SelectedFile:
    """An eval set file a suite names, and which of its cases it runs."""

    path: Path
    ids: dict[str, int] = field(default_factory=dict)  # eval_id -> index of the config item naming it; empty: every case


def expand_evalsets(items: list[str], base: Path, shown_config: str, where) -> list[SelectedFile]:
    """A suite's `evalsets`: files, globs and folders, each file optionally with a case selector
    (`file.evalset.json:id1,id2`). As in `adk eval`, the ids of every item naming one file are
    put together, and a file is run whole only when no item names ids of it. A selector names
    cases of one file, so it cannot follow a glob or a folder."""
    problems = ProblemCollector()
    out: dict[Path, SelectedFile] = {}
    for j, item in enumerate(items):
        try:
            path, ids = split_selector(item)
        except ValueError as e:
            problems.add(shown_config, where(j), f"'{item}' {e}", "Write file.evalset.json:id1,id2 (ids separated by ',').")
            continue
        if ids is not None:
            full = path if Path(path).is_absolute() else str(base / path)
            if glob.has_magic(path) or Path(full).is_dir():
                kind = "glob" if glob.has_magic(path) else "folder"
                problems.add(
                    shown_config,
                    where(j),
                    f"'{item}': a case selector needs one eval set file, and '{path}' is a {kind}",
                    "Name the file (file.evalset.json:id1,id2), or keep the whole folder and pick cases with `evalgate run --case PATTERN`.",
                )
                continue
        files = problems.run(expand, [path], base, EXPECTED_SUFFIXES, shown_config, lambda _, j=j: where(j)) or []
        full = path if Path(path).is_absolute() else str(base / path)
        if files and (glob.has_magic(path) or Path(full).is_dir()):
            files = _eval_files(files)
            if not files:
                problems.add(
                    shown_config,
                    where(j),
                    f"'{path}' holds no ADK eval set (*.evalset.json, *.test.json) nor agents-cli dataset (a .json file of eval_cases)",
                    "Fix the pattern, or remove it.",
                )
        for p in files:
            entry = out.setdefault(p, SelectedFile(p))
            for eval_id in ids or []:
                entry.ids.setdefault(eval_id, j)
    problems.raise_if_any()
    return list(out.values())


def _eval_files(found: list[Path]) -> list[Path]:
    """Of the files a folder or glob matched, ADK eval sets by name and agents-cli datasets by content."""
    from evalgate.agents_cli.dataset import is_dataset_file

    return [p for p in found if p.name.endswith(EVALSET_SUFFIXES) or is_dataset_file(p)]


def load_evalset(path: Path, base: Path | None = None) -> LoadedEvalSet:
    """Read one eval set file in either ADK schema, or an agents-cli dataset (by content).

    A legacy file's case is named by its path relative to `base` (the config's folder), so
    its ids do not depend on the folder evalgate runs from.
    """
    shown = display_path(path)
    data = load_json_file(path, shown)
    if isinstance(data, list):
        file_id = display_path(path, base) if base is not None else shown
        if _named_cases(data):
            eval_set, places = _from_named_cases(data, shown, file_id)
            # Its cases have names of their own, so records match them as EvalSet cases.
            return LoadedEvalSet(path, shown, eval_set, legacy=False, case_places=places)
        eval_set = _from_legacy(data, shown, file_id)
        return LoadedEvalSet(path, shown, eval_set, legacy=True, case_places={file_id: "(whole file)"})
    if not isinstance(data, dict) or not ({"eval_cases", "evalCases"} & data.keys()):
        raise InputError(
            Problem(
                shown,
                None,
                "not an ADK eval set nor an agents-cli dataset",
                "Use the EvalSet schema ({eval_set_id, eval_cases: [...]}), the legacy list of turns "
                "([{query, expected_tool_use, reference}]), the legacy list of named cases "
                "([{name, data: [turns], initial_session}]) or an agents-cli EvaluationDataset ({eval_cases: [{prompt: ...}]}).",
            )
        )
    from evalgate.agents_cli.cases import looks_like_dataset

    if looks_like_dataset(data):
        from evalgate.agents_cli.dataset import dataset_evalset

        return dataset_evalset(path, shown, data, LoadedEvalSet)
    try:
        eval_set = EvalSet.model_validate(data)
    except ValidationError as e:
        raise InputError(problems_from_validation(e, shown, valid_keys_for=lambda loc: field_names())) from None
    problems = ProblemCollector()
    places: dict[str, str] = {}
    for i, case in enumerate(eval_set.eval_cases):
        if case.eval_id in places:
            problems.add(shown, f"eval_cases[{i}].eval_id", f"duplicate eval_id '{case.eval_id}' (first at {places[case.eval_id]})", "Give each case a unique eval_id.")
            continue
        places[case.eval_id] = f"eval_cases[{i}]"
    problems.raise_if_any()
    return LoadedEvalSet(path, shown, eval_set, legacy=False, case_places=places)


def _named_cases(items: list[Any]) -> bool:
    """Is this list ADK's named cases rather than turns? A case has `data` (its turns) or a
    `name` without a `query`; a turn always has a `query`."""
    return any(isinstance(x, dict) and "query" not in x and ({"data", "name", "initial_session"} & x.keys()) for x in items)


def _from_legacy(turns: list[Any], shown: str, legacy_id: str) -> EvalSet:
    problems = ProblemCollector()
    conversation = _turns(turns, shown, "", problems)
    if not turns:
        problems.add(shown, None, "the legacy eval file has no turns", "Add at least one {query, reference} turn.")
    problems.raise_if_any()

    return EvalSet(eval_set_id=legacy_id, eval_cases=[EvalCase(eval_id=legacy_id, conversation=conversation)])


def _from_named_cases(items: list[Any], shown: str, file_id: str) -> tuple[EvalSet, dict[str, str]]:
    problems = ProblemCollector()
    cases: list[EvalCase] = []
    places: dict[str, str] = {}
    shape = 'Write {"name": "case_1", "data": [{"query": ..., "expected_tool_use": [...], "reference": ...}], "initial_session": {"state": {}}}.'
    for i, item in enumerate(items):
        here = f"[{i}]"
        if not isinstance(item, dict):
            problems.add(shown, here, "a named case must be an object", shape)
            continue
        if "query" in item:
            problems.add(shown, here, "a turn among named cases", "Move it into a case's 'data' list: a file holds either named cases or turns, not both.")
            continue
        name = item.get("name")
        if not isinstance(name, str) or not name.strip():
            problems.add(shown, f"{here}.name", "missing, empty or not a string", "Name the case (its eval_id) as 'name'.")
            continue
        if name in places:
            problems.add(shown, f"{here}.name", f"duplicate name '{name}' (first at {places[name]})", "Give each case a unique name.")
            continue
        places[name] = here
        turns = item.get("data")
        if not isinstance(turns, list):
            problems.add(shown, f"{here}.data", "missing or not a list", 'Give the case\'s turns as "data": [{"query": ..., "reference": ...}].')
            continue
        if not turns:
            problems.add(shown, f"{here}.data", "the case has no turns", "Add at least one {query, reference} turn.")
            continue
        before = len(problems.problems)
        conversation = _turns(turns, shown, f"{here}.data", problems)
        session = _initial_session(item.get("initial_session"), shown, f"{here}.initial_session", problems)
        if len(problems.problems) == before:
            cases.append(EvalCase(eval_id=name, conversation=conversation, session_input=session))
    if not items:
        problems.add(shown, None, "the legacy eval file has no cases", "Add at least one {name, data} case.")
    problems.raise_if_any()
    return EvalSet(eval_set_id=file_id, eval_cases=cases), places


def _initial_session(raw: Any, shown: str, here: str, problems: ProblemCollector) -> SessionInput | None:
    """ADK's rule: an absent or empty initial_session is no session input; otherwise its
    app_name, user_id and state, each defaulting to empty."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        problems.add(shown, here, "must be an object", 'Write "initial_session": {"app_name": ..., "user_id": ..., "state": {...}}.')
        return None
    if not raw:
        return None
    bad = False
    for key in ("app_name", "user_id"):
        if key in raw and not isinstance(raw[key], str):
            problems.add(shown, f"{here}.{key}", "must be a string", f"Give '{key}' as text, or remove it.")
            bad = True
    if "state" in raw and not isinstance(raw["state"], dict):
        problems.add(shown, f"{here}.state", "must be an object", 'Give the session state as {"key": value}, or remove it.')
        bad = True
    if bad:
        return None
    return SessionInput(app_name=raw.get("app_name", ""), user_id=raw.get("user_id", ""), state=raw.get("state", {}))


def _turns(turns: list[Any], shown: str, prefix: str, problems: ProblemCollector) -> list[Invocation]:
    """Legacy turns `{query, expected_tool_use, expected_intermediate_agent_responses,
    reference}` as invocations; problems are named at `prefix[i]`."""
    conversation: list[Invocation] = []
    for i, turn in enumerate(turns):
        here = f"{prefix}[{i}]"
        if not isinstance(turn, dict):
            problems.add(shown, here, "a legacy turn must be an object", 'Write {"query": ..., "expected_tool_use": [...], "reference": ...}.')
            continue
        query = turn.get("query")
        if not isinstance(query, str):
            problems.add(shown, f"{here}.query", "missing or not a string", "Add the user's message as 'query'.")
            continue
        reference = turn.get("reference", "")
        if not isinstance(reference, str):
            problems.add(shown, f"{here}.reference", "must be a string", "Give the expected response as text.")
            continue
        not_lists = [k for k in ("expected_tool_use", "expected_intermediate_agent_responses") if not isinstance(turn.get(k) or [], list)]
        for key in not_lists:
            problems.add(shown, f"{here}.{key}", "must be a list", "Give a list ([] for none).")
        if not_lists:
            continue
        calls = []
        for j, use in enumerate(turn.get("expected_tool_use") or []):
            place = f"{here}.expected_tool_use[{j}]"
            if not isinstance(use, dict) or not isinstance(use.get("tool_name"), str):
                problems.add(shown, f"{place}.tool_name", "missing or not a string", "Name the tool as 'tool_name'.")
                continue
            if "tool_input" not in use or not (use["tool_input"] is None or isinstance(use["tool_input"], dict)):
                problems.add(shown, f"{place}.tool_input", "missing or not an object", "Give the call's arguments as 'tool_input' ({} for none).")
                continue
            calls.append(FunctionCall(name=use["tool_name"], args=use["tool_input"]))
        responses = []
        for j, resp in enumerate(turn.get("expected_intermediate_agent_responses") or []):
            if not isinstance(resp, dict) or not isinstance(resp.get("author"), str) or not isinstance(resp.get("text"), str):
                problems.add(shown, f"{here}.expected_intermediate_agent_responses[{j}]", "needs 'author' and 'text' strings", "Add both, or remove the entry.")
                continue
            responses.append((resp["author"], [Part(text=resp["text"])]))
        conversation.append(
            Invocation(
                user_content=Content.from_text(query, "user"),
                final_response=Content.from_text(reference, "model"),
                intermediate_data=IntermediateData(tool_uses=calls, intermediate_responses=responses),
            )
        )
    return conversation


def test_config_beside(path: Path) -> Path | None:
    candidate = path.parent / "test_config.json"
    return candidate if candidate.is_file() else None


# Ids and timestamps change when a file is re-saved without changing what is expected: the
# digest leaves these keys out, wherever they are.
_VOLATILE = ("creation_timestamp", "invocation_id")
# Where the models hold them, pydantic leaves them out of the dump; anywhere else (a tool
# call's args, session state) the dump is walked to strip them.
_VOLATILE_FIELDS: Any = {"creation_timestamp": True, "conversation": {"__all__": {k: True for k in _VOLATILE}}}


def expected_digest(case: EvalCase) -> str:
    """sha256 of the case's expected data (its dump without nulls), leaving out `_VOLATILE`
    keys at any depth."""
    from evalgate.results import canonical_json, digest

    text = canonical_json(case.model_dump(mode="json", exclude_none=True, exclude=_VOLATILE_FIELDS))
    if any(f'"{key}"' in text for key in _VOLATILE):  # elsewhere too (or a string that says it)
        return digest(_strip_volatile(case.model_dump(mode="json", exclude_none=True)))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _strip_volatile(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_volatile(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_strip_volatile(v) for v in value]
    return value


# What a case's criteria can read of its expected data, part by part (Criterion.reads names
# them). "run" is what the agent's run reads (each turn's user message, the session's initial
# state, a simulated user's scenario) and is always compared; "*" stands for everything any
# criterion could read: the whole case (the expected turns in full, its rubrics, keys another
# tool added) but its final session state, which no criterion reads (ADK's neither).
PARTS = ("run", "final_response", "tool_uses", "intermediate", "rubrics", "*")


def part_digests(case: EvalCase) -> dict[str, str]:
    """sha256 of each of the case's PARTS, `_VOLATILE` keys left out: the gate pairs a case
    with its baseline by the parts its criteria read (evalgate.gate.values.same_data), so a
    field no criterion reads (an empty `final_session_state`, say) does not unpair it."""
    from evalgate.results import digest

    data = _strip_volatile(case.model_dump(mode="json", exclude_none=True))
    turns = data.get("conversation") or []
    inter = [t.get("intermediate_data") for t in turns]
    return {
        "run": digest([[t.get("user_content") for t in turns], data.get("session_input"), data.get("conversation_scenario")]),
        "final_response": digest([t.get("final_response") for t in turns]),
        "tool_uses": digest([[{"name": c.name, "args": c.args} for c in inv.tool_calls()] for inv in case.conversation or []]),
        "intermediate": digest(inter),
        "rubrics": digest([data.get("rubrics"), [t.get("rubrics") for t in turns]]),
        "*": digest({k: v for k, v in data.items() if k not in ("final_session_state", "eval_id")}),
    }
