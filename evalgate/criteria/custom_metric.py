"""ADK custom metrics (`custom_metrics` in test_config.json or a suite): a user's Python function.

The function is named by `code_config.name` and resolved the way `adk eval` resolves it for
the same agent folder, so one file works in both: the name is split at its last dot, the
module imported and the attribute taken. `adk eval` loads the agent folder as the package
`agent`, so `agent.my_metrics.score` is `<agent folder>/my_metrics.py`; evalgate gives
`agent.` the same meaning (which folder: see `evalgate.plan`). Any other name is imported
absolutely through `sys.path`, on which evalgate also puts the config file's folder.

It is called as ADK calls it, positionally and with google-adk's own types:
`fn(eval_metric, actual_invocations, expected_invocations, conversation_scenario)`, sync or
returning an awaitable, and must return an ADK `EvaluationResult`. As in ADK the statuses it
returns are the verdict (no threshold is applied), INFORMATIONAL included. Unlike ADK, a
function that raises, returns something else, or returns PASSED/FAILED without one result
per actual invocation makes only this case's criterion NOT_EVALUATED, with the reason.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import math
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, ClassVar, Optional

from pydantic import ConfigDict, Field, PrivateAttr
from pydantic.alias_generators import to_camel

from evalgate.adk import Invocation
from evalgate.criteria.base import CaseOutcome, Criterion, Outcome, Scope
from evalgate.errors import Problem, did_you_mean, display_path
from evalgate.results import Status

# The package name `adk eval` gives the agent folder (google/adk/cli/cli_eval.py::_get_agent_module).
AGENT_PACKAGE = "agent"
SIGNATURE = "def fn(eval_metric, actual_invocations, expected_invocations, conversation_scenario)"


class CustomMetric(Criterion):
    """A custom metric: a Python function named in `custom_metrics`, returning ADK's EvaluationResult."""

    # ADK's BaseCriterion keeps unknown keys (extra="allow") and hands them to the function
    # in `eval_metric.criterion`: they are the custom metric's parameters.
    model_config = ConfigDict(extra="allow", alias_generator=to_camel, populate_by_name=True, loc_by_alias=False)

    name: ClassVar[str] = "custom_metric"
    scope: ClassVar[Scope] = "case"
    needs_expected: ClassVar[bool] = False  # scenario cases are scored too, with expected None

    # Any number: ADK applies no threshold to a custom metric; the function gets it in
    # eval_metric.criterion.threshold and decides itself.
    threshold: float = Field(description="Given to the function as eval_metric.criterion.threshold; evalgate applies no threshold.")

    _metric_name: str = PrivateAttr(default="")
    _path: str = PrivateAttr(default="")
    _raw: dict[str, Any] = PrivateAttr(default_factory=dict)  # the criterion as written, for ADK's BaseCriterion
    _declared_in: str = PrivateAttr(default="")  # the file that declares it, as shown to the user
    _place: str = PrivateAttr(default="")  # where in that file: custom_metrics.<name>.code_config.name
    _declared_path: Optional[Path] = PrivateAttr(default=None)
    _fn: Optional[Callable[..., Any]] = PrivateAttr(default=None)

    @classmethod
    def declare(cls, metric_name: str, path: str, value: Any, declared_in: str, place: str, declared_path: Optional[Path]) -> "CustomMetric":
        """A custom metric from its `criteria` entry (a threshold number or an object) and the
        `code_config.name` of its `custom_metrics` entry. Raises pydantic's ValidationError."""
        raw = {"threshold": value} if isinstance(value, (int, float)) and not isinstance(value, bool) else dict(value)
        crit = cls.model_validate(raw)
        crit._metric_name, crit._path, crit._raw = metric_name, path, raw
        crit._declared_in, crit._place, crit._declared_path = declared_in, place, declared_path
        return crit

    @property
    def metric_name(self) -> str:
        return self._metric_name

    @property
    def function_path(self) -> str:
        return self._path

    @property
    def declared_path(self) -> Optional[Path]:
        return self._declared_path

    def requires(self) -> list[tuple[str, str]]:
        return [("google.adk", "adk")]

    def options(self) -> dict[str, Any]:
        return {**super().options(), "custom_function_path": self._path}

    # --- resolution ------------------------------------------------------------------

    def resolve(self, agent_folder: Optional[Path], search: list[Path]) -> list[Problem]:
        """Import the function and check that it takes ADK's four positional arguments.
        `agent_folder` is what `agent.` names (None: nothing); `search` folders are added
        to the end of sys.path for absolute names. Returns the problems, each with its fix."""

        def problem(what: str, fix: str) -> list[Problem]:
            return [Problem(self._declared_in, self._place, what, fix)]

        module_name, _, attr = self._path.rpartition(".")
        if not module_name or not attr:
            return problem(f"'{self._path}' is not a module path and a function name", "Write 'module.function', e.g. 'agent.my_metrics.score'.")
        for folder in search:
            if str(folder) not in sys.path:
                sys.path.append(str(folder))
        in_agent = module_name == AGENT_PACKAGE or module_name.startswith(AGENT_PACKAGE + ".")
        try:
            if in_agent:
                if agent_folder is None:
                    return problem(
                        f"'{self._path}' names a module of the ADK agent folder (`adk eval` imports it as the package 'agent'), and this suite has no agent folder",
                        "Give the suite an ADK agent ('agent: {adk: my_agent}', its own or the top-level one), keep the test_config.json inside the agent folder, "
                        "or name the module absolutely (my_agent.my_metrics.fn; the config file's folder is on sys.path).",
                    )
                # `agent.fn` is a name in the folder's __init__.py, which then has to run.
                _agent_package(agent_folder, run_init=module_name == AGENT_PACKAGE)
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            shown = display_path(agent_folder / f"{module_name[len(AGENT_PACKAGE) + 1:].replace('.', '/')}.py") if in_agent and agent_folder and module_name != AGENT_PACKAGE else None
            if e.name and not (module_name == e.name or module_name.startswith(e.name + ".")):
                return problem(f"importing '{module_name}' failed: {e}", f"Install the module it imports ('{e.name}').")
            where_from = f"no {shown} in the agent folder" if shown else "not found on sys.path (the config file's folder included)"
            return problem(f"cannot import module '{module_name}' ({where_from})", "Fix the module path, or put the module on PYTHONPATH.")
        except Exception as e:  # any error of the user's module at import
            return problem(f"importing '{module_name}' failed: {type(e).__name__}: {e}", "Fix the module so it imports.")
        fn = getattr(module, attr, None)
        if fn is None:
            names = [n for n, v in vars(module).items() if inspect.isfunction(v) and v.__module__ == module.__name__ and not n.startswith("_")]
            return problem(f"module '{module_name}' has no '{attr}'", "Fix the function name. " + did_you_mean(attr, names))
        if not callable(fn):
            return problem(f"'{self._path}' is a value of type {type(fn).__name__}, not a function", f"Name a function: {SIGNATURE}.")
        why = _signature_problem(fn)
        if why:
            return problem(f"'{self._path}' {why}", f"Take ADK's four arguments by position: {SIGNATURE}.")
        self._fn = fn
        return []

    # --- scoring ---------------------------------------------------------------------

    def score_case(self, actual: list[Invocation], expected: Optional[list[Invocation]], scenario: Optional[dict[str, Any]]) -> CaseOutcome:
        if self._fn is None:
            raise RuntimeError(f"custom metric {self._metric_name!r}: its function {self._path!r} was not resolved")
        from google.adk.evaluation.evaluator import EvaluationResult

        args = self._adk_arguments(actual, expected, scenario)
        try:
            result = self._fn(*args)
            if inspect.isawaitable(result):
                result = _wait(result)
        except Exception as e:  # the user's function failing is this case's NOT_EVALUATED, never the run's end
            return _not_evaluated(actual, f"{self._path} raised {type(e).__name__}: {e}")
        if not isinstance(result, EvaluationResult):
            return _not_evaluated(actual, f"{self._path} returned {type(result).__name__}, not an EvaluationResult (google.adk.evaluation.evaluator)")
        status = Status(result.overall_eval_status.name)
        per = result.per_invocation_results
        if len(per) != len(actual) and status in (Status.PASSED, Status.FAILED):
            return _not_evaluated(
                actual,
                f"{self._path} returned {status.value} with {len(per)} per-invocation results for {len(actual)} actual invocations; "
                "a verdict needs exactly one per actual invocation",
            )
        for score in [result.overall_score, *(r.score for r in per)]:
            if score is not None and not math.isfinite(score):
                return _not_evaluated(actual, f"{self._path} returned the score {score}; scores must be finite numbers")
        if len(per) == len(actual):
            turns = [Outcome(r.score, _details(r.rubric_scores), status=Status(r.eval_status.name)) for r in per]
        else:  # NOT_EVALUATED or INFORMATIONAL: ADK keeps empty placeholders then
            turns = [Outcome(None, status=Status.NOT_EVALUATED) for _ in actual]
        error = f"{self._path} returned NOT_EVALUATED" if status is Status.NOT_EVALUATED else None
        return CaseOutcome(Outcome(result.overall_score, _details(result.overall_rubric_scores), error=error, status=status), turns)

    def _adk_arguments(self, actual: list[Invocation], expected: Optional[list[Invocation]], scenario: Optional[dict[str, Any]]) -> tuple:
        """ADK's four arguments, built with google-adk's own models from our data."""
        from google.adk.evaluation.eval_case import ConversationScenario
        from google.adk.evaluation.eval_case import Invocation as AdkInvocation
        from google.adk.evaluation.eval_metrics import BaseCriterion, EvalMetric

        eval_metric = EvalMetric(
            metric_name=self._metric_name,
            threshold=None,  # ADK's evaluator clears it on its copy; the criterion keeps it
            criterion=BaseCriterion.model_validate(self._raw),
            custom_function_path=self._path,
        )
        eval_metric._config_custom_function_path = self._path  # as ADK's config reader sets it
        turns = []
        for i, inv in enumerate(actual):
            data = _dump(inv)
            # ADK copies the case's and the expected turn's rubrics onto the actual invocation
            # before scoring; evalgate keeps the case's on the expected turns.
            extra = (expected[i].rubrics or []) if expected and i < len(expected) else []
            if extra:
                have = {r.get("rubric_id") for r in data.get("rubrics") or []}
                data["rubrics"] = list(data.get("rubrics") or []) + [_dump(r) for r in extra if r.rubric_id not in have]
            turns.append(AdkInvocation.model_validate(data))
        wanted = [AdkInvocation.model_validate(_dump(inv)) for inv in expected] if expected is not None else None
        story = ConversationScenario.model_validate(scenario) if scenario is not None else None
        return eval_metric, turns, wanted, story


def _dump(model: Any) -> dict[str, Any]:
    return model.model_dump(mode="json", exclude_none=True)


def _details(rubric_scores: Any) -> dict[str, Any]:
    if not rubric_scores:
        return {}
    return {"rubric_scores": [r.model_dump(mode="json") for r in rubric_scores]}  # as ADK records them


def _not_evaluated(actual: list[Invocation], why: str) -> CaseOutcome:
    return CaseOutcome(Outcome(None, error=why, status=Status.NOT_EVALUATED), [Outcome(None, status=Status.NOT_EVALUATED) for _ in actual])


def _wait(awaitable: Any) -> Any:
    """The awaitable's result. Scoring is synchronous; should it ever run inside an event
    loop, the awaitable gets a loop of its own on another thread."""

    async def wrapped() -> Any:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wrapped())
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, wrapped()).result()


def _signature_problem(fn: Callable[..., Any]) -> Optional[str]:
    """Why ADK's positional call `fn(a, b, c, d)` would fail, or None."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None  # a builtin without a signature: ADK would just try
    try:
        sig.bind(None, None, None, None)
    except TypeError:
        kinds = [p for p in sig.parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is inspect.Parameter.empty]
        if kinds:
            return f"takes {', '.join(p.name for p in kinds)} as keyword-only, and ADK passes its arguments by position (adk eval fails on it at run time)"
        return f"cannot take ADK's four positional arguments (its signature is {sig})"
    return None


def _agent_package(folder: Path, run_init: bool = False) -> None:
    """Make `agent` the package of this folder, as `adk eval` does, so `agent.x` imports
    `<folder>/x.py` (with relative imports working). The folder's __init__.py runs only when
    the function is defined there: otherwise only the package's path is needed, and a
    recorded-output suite must not have to import the agent's dependencies. A package
    `agent` of another folder (loaded earlier in this process) is dropped first, so it
    cannot answer for this one."""
    folder = folder.resolve()
    module = sys.modules.get(AGENT_PACKAGE)
    if module is None or [str(Path(p).resolve()) for p in getattr(module, "__path__", [])] != [str(folder)]:
        for name in [m for m in sys.modules if m == AGENT_PACKAGE or m.startswith(AGENT_PACKAGE + ".")]:
            del sys.modules[name]
        spec = importlib.util.spec_from_file_location(AGENT_PACKAGE, folder / "__init__.py", submodule_search_locations=[str(folder)])
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[AGENT_PACKAGE] = module
    if run_init and not getattr(module, "_evalgate_init_ran", False) and module.__spec__ is not None and module.__spec__.loader is not None:
        module._evalgate_init_ran = True
        module.__spec__.loader.exec_module(module)
