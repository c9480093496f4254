"""agents-cli datasets as eval sets: an EvaluationDataset file read into evalgate's `LoadedEvalSet`.

A dataset (`tests/eval/datasets/*.json`) pairs with recorded outputs and runs like an ADK
eval set: its eval_set_id is the file's stem (`basic-dataset`), a case's eval_id is
`case_id` (its `eval_case_id`, else its index), its place `eval_cases[i]`. Each case becomes
an ADK EvalCase (the one expected turn of a prompt or N+1 case, or a conversation_scenario
for a `user_scenario` case) and keeps, beside it, what only agents-cli cases have: the case
as written (metrics read it) and the session history an N+1 case starts from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from evalgate.adk import EvalCase, EvalSet
from evalgate.agents_cli.cases import (
    AcliCase,
    case_dump,
    case_id,
    expected_invocations,
    input_problem,
    looks_like_dataset,
    parse_dataset,
    scenario,
    session_events,
    split_history,
)
from evalgate.errors import ProblemCollector, display_path, parse_json, read_text

CASE_SHAPES = (
    "Give the case one of: a top-level prompt ({role: user, parts: [{text: ...}]}); agent_data.turns whose last "
    "event is the user's message (the earlier events are the session's history); or a user_scenario "
    "({starting_prompt, conversation_plan}) for a simulated user. agents-cli eval generate runs only these."
)


@dataclass
class DatasetCase:
    """What an agents-cli case carries besides its ADK EvalCase."""

    acli: dict[str, Any]  # the case as written (`case_dump`)
    history: list[dict[str, Any]] = field(default_factory=list)  # `session_events` of an N+1 case
    digest: str = ""  # of the case as written: what the case expects


def is_dataset_file(path: Path) -> bool:
    """Is this `.json` file an agents-cli dataset (or traces file)? False for other JSON (an
    eval config, an ADK eval set, a results file) and for any file that never says
    `eval_cases`, unparsed (a folder may hold many fixtures, some not even JSON, which ADK
    users' configs have always let evalgate pass over). A file that says it but is not JSON
    is an input error naming the place: a dataset with a typo must not mean fewer cases."""
    shown = display_path(path)
    try:
        raw = path.read_bytes()
    except OSError:
        raw = b'"eval_cases"'  # read_text says what is wrong with it
    if b'"eval_cases"' not in raw and b'"evalCases"' not in raw:
        return False
    return looks_like_dataset(parse_json(read_text(path, shown), shown))


def dataset_evalset(path: Path, shown: str, data: Any, loaded: Callable[..., Any]) -> Any:
    """A dataset file as the loader's `LoadedEvalSet` (`loaded`, handed in so this package
    does not import the loader that imports it); every case that agents-cli could not run,
    and every id used twice, is an input error naming the file and the case's place."""
    from evalgate.results import digest

    dataset = parse_dataset(data, shown)
    problems = ProblemCollector()
    cases: list[EvalCase] = []
    places: dict[str, str] = {}
    extras: dict[str, DatasetCase] = {}
    for i, case in enumerate(dataset.eval_cases):
        place = f"eval_cases[{i}]"
        eval_id = case_id(case, i)
        if eval_id in places:
            problems.add(shown, f"{place}.eval_case_id", f"duplicate eval_case_id '{eval_id}' (first at {places[eval_id]})", "Give each case a unique eval_case_id.")
            continue
        places[eval_id] = place
        why = input_problem(case)
        if why is not None:
            problems.add(shown, place, f"the case {why}", CASE_SHAPES)
            continue
        dump = case_dump(case)
        extras[eval_id] = DatasetCase(acli=dump, history=_history(case), digest=digest({"agents_cli_case": dump}))
        cases.append(EvalCase(eval_id=eval_id, conversation=expected_invocations(case), conversation_scenario=scenario(case)))
    problems.raise_if_any()
    eval_set = EvalSet(eval_set_id=path.stem, eval_cases=cases)
    return loaded(path, shown, eval_set, legacy=False, case_places=places, acli=extras)


def _history(case: AcliCase) -> list[dict[str, Any]]:
    if case.user_scenario is not None:
        return []
    prior, _ = split_history(case)
    return session_events(prior)
