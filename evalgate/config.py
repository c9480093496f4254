"""The evalgate config file (`evalgate.yaml` or `.json`): strict models and loading.

Strict on purpose: an unknown key or criterion is an error that names it, its place (JSON
path and line) and the closest valid name. Criteria use ADK's `criteria` syntax: a number
is a threshold; an object carries `threshold` and the criterion's options.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel, to_snake

from evalgate.gate import GatePolicy
from evalgate import efficiency
from evalgate.i18n import _
from evalgate.criteria import REGISTRY, Criterion
from evalgate.simulated_user import UserSimulatorConfig
from evalgate.documents import line_map, parse_document
from evalgate.errors import (
    InputError,
    closest,
    Problem,
    ProblemCollector,
    did_you_mean,
    display_path,
    json_path,
    parse_json,
    problems_from_validation,
    read_text,
)

CONFIG_NAMES = ("evalgate.yaml", "evalgate.yml", "evalgate.json")

# ADK's defaults when a suite names no criteria (google-adk's default EvalConfig).
ADK_DEFAULT_CRITERIA: dict[str, Any] = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}

Patterns = list[str]


def _as_list(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


class AgentConfig(BaseModel):
    """How to run the agent on every case: exactly one of `adk`, `url` or `command`."""

    model_config = ConfigDict(extra="forbid")

    adk: Optional[str] = Field(
        default=None,
        min_length=1,
        description="An ADK agent run in-process: a folder as for `adk eval` (with app, root_agent or "
        "get_agent_async), relative to the config file, or a dotted module path.",
    )
    url: Optional[str] = Field(default=None, min_length=1, description="An ADK API server (adk api_server, Cloud Run): its base URL.")
    app: Optional[str] = Field(
        default=None, min_length=1, description="The API server's app name (default: the last part of the url's path)."
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="HTTP headers for the API server; ${VAR} is read from the environment, and never printed.",
    )
    command: Optional[list[str]] = Field(
        default=None,
        min_length=1,
        description="Any agent: a command started once per case run, speaking the agent-io protocol "
        "(`evalgate schema agent-io`) on stdin and stdout.",
    )
    # 16: ADK's eval runs 4; measured in bench/bench_inference.py, 8 gave 1.76x ADK's speed
    # and 16 2.54x. 429s are retried with backoff; lower it for a small model quota.
    concurrency: int = Field(default=16, ge=1, le=256, description="Case runs in flight at once (lower it for a small model quota).")
    timeout_s: float = Field(default=300.0, gt=0, description="Seconds one case run may take, all its turns together (each attempt).")
    max_attempts: int = Field(
        default=3,
        ge=1,
        le=10,
        description="Times a case run is started before its failure stands, when it fails on a transient error: HTTP 429 "
        "or 5xx, a reset or dropped connection, a client's own timeout (a command: exit code 75). Waits with backoff, "
        "or as long as Retry-After asks; the agent's own retry settings are left as they are.",
    )
    num_runs: int = Field(
        default=1, ge=1, le=100, description="Run every case this many times; each run is scored, the case score is their mean."
    )
    tools: Literal["live", "replay"] = Field(
        default="live",
        description="replay: a tool call matching one of the case's expected calls gets the recorded response instead of running.",
    )

    @field_validator("command", mode="before")
    @classmethod
    def _split_command(cls, value: Any) -> Any:
        # A string is split as a shell would split it (no shell runs it).
        if isinstance(value, str):
            try:
                return shlex.split(value)
            except ValueError as e:
                raise ValueError(f"cannot be split into arguments ({e}); write a list: [program, arg, ...]") from None
        return value

    @property
    def kind(self) -> str:
        return "adk" if self.adk else "url" if self.url else "command"


class CodeConfig(BaseModel):
    """Where a custom metric's function lives (ADK's CodeConfig)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        min_length=1,
        description="module.function, split at the last dot. 'agent.x.fn' is x.py in the ADK agent folder, as under `adk eval`; "
        "other names import through sys.path (plus the config file's folder).",
    )


class Interval(BaseModel):
    model_config = ConfigDict(extra="forbid")

    min_value: float
    max_value: float
    open_at_min: bool = False
    open_at_max: bool = False


class MetricValueInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    interval: Optional[Interval] = None


class MetricInfo(BaseModel):
    """ADK's MetricInfo: metadata only (scoring never reads it); the name is the entry's key."""

    model_config = ConfigDict(extra="forbid")

    metric_name: Optional[str] = Field(default=None, description="Ignored: the custom_metrics key names the metric, as in ADK.")
    description: Optional[str] = None
    metric_value_info: MetricValueInfo


class CustomMetricConfig(BaseModel):
    """One custom metric, as in ADK's test_config.json; it runs only when `criteria` names it."""

    model_config = ConfigDict(extra="forbid")

    code_config: CodeConfig = Field(description="The function: fn(eval_metric, actual_invocations, expected_invocations, conversation_scenario) -> EvaluationResult.")
    metric_info: Optional[MetricInfo] = Field(default=None, description="Metadata (value interval, description); default: [0, 1].")
    description: str = Field(default="", description="What the metric measures.")


class SuiteConfig(BaseModel):
    """One suite: eval sets with their actual outputs (or traces), and criteria."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, description="Unique; used in reports and commit status contexts.")
    evalsets: Patterns = Field(
        default_factory=list,
        description="ADK eval set files, globs or folders (a folder means every *.test.json and *.evalset.json under it, "
        "and every other *.json that is an agents-cli dataset). A file may pick cases as for adk eval: 'file.evalset.json:id1,id2'.",
    )
    actual: Patterns = Field(
        default_factory=list,
        description="The agent's outputs: ADK eval history (*.evalset_result.json), evalgate inference JSONL, or agents-cli "
        "traces (traces_<time>.json or their folder; of several traces of a case, the newest file's).",
    )
    agent: Optional[AgentConfig] = Field(
        default=None, description="Run the agent to get its outputs (instead of 'actual'); default: the top-level 'agent'."
    )
    user_simulator: Optional[UserSimulatorConfig] = Field(
        default=None,
        description="The simulated user of conversation_scenario cases (ADK's user_simulator_config); "
        "default: the user_simulator_config of the test_config.json beside the eval set, else ADK's defaults.",
    )
    traces: Patterns = Field(default_factory=list, description="KnowledgePulse ReasoningTrace files (JSON or JSONL).")
    criteria: Optional[Union[str, dict[str, Any]]] = Field(
        default=None,
        description=(
            "ADK criteria: {name: threshold} or {name: {threshold, options...}}, or a path to an ADK "
            "test_config.json or to an agents-cli eval config (eval_config.yaml: metrics_to_run, custom_metrics; "
            "no thresholds, gated on regression). Default: the test_config.json next to each eval set, else ADK's defaults."
        ),
    )
    not_evaluated: Literal["fail", "warn", "ignore"] = Field(
        default="warn", description="What a NOT_EVALUATED case does to the suite: fail it, warn, or nothing."
    )
    custom_metrics: Optional[dict[str, CustomMetricConfig]] = Field(
        default=None,
        description="ADK custom metrics for the inline criteria: {name: {code_config: {name: module.fn}}}. "
        "A metric runs when criteria names it (with its threshold); a name of ADK's replaces that metric.",
    )

    @field_validator("evalsets", "actual", "traces", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return _as_list(value)


class BaselineConfig(BaseModel):
    """Where baselines and the flake ledger are kept."""

    model_config = ConfigDict(extra="forbid")

    store: Literal["dir", "github"] = Field(
        default="dir", description="dir: a folder (local use, or one committed to the repo); github: a data branch via the REST API."
    )
    path: str = Field(default=".evalgate/baselines", description="The folder, for the dir store (relative to the config file).")
    branch: str = Field(default="evalgate-data", min_length=1, description="The data branch, for the github store.")
    max_depth: int = Field(default=50, ge=0, le=1000, description="First-parent commits to walk back from the base commit to find a baseline.")


class GateConfig(GatePolicy):
    """The gate: how a run is compared with its baseline and judged."""

    id: str = Field(default="evalgate", min_length=1, description="Gate id: one PR comment and ledger per gate, so two gates can coexist.")
    baseline: BaselineConfig = Field(default_factory=BaselineConfig)


class JudgeConfig(BaseModel):
    """How judge criteria reach Gemini: one bounded pool of requests for the whole run."""

    model_config = ConfigDict(extra="forbid")

    concurrency: int = Field(default=8, ge=1, le=256, description="Judge requests in flight at once, for the whole run.")
    rpm: Optional[int] = Field(default=None, ge=1, description="At most this many judge requests started per minute.")
    timeout_s: float = Field(default=60.0, gt=0, description="Per-request timeout, seconds.")
    deadline_s: Optional[float] = Field(default=None, gt=0, description="No judge request starts after this many seconds of the run.")
    max_attempts: int = Field(default=5, ge=1, le=20, description="Attempts per request (408, 429, 5xx and timeouts are retried).")
    cache_dir: str = Field(default=".evalgate/cache", description="Verdict cache folder, relative to the config file (works with actions/cache).")
    cache: bool = Field(default=True, description="Use the verdict cache (an unchanged rerun makes no request).")
    early_stop: bool = Field(
        default=True,
        description="Majority-vote judge criteria stop drawing samples once the majority is decided (the same "
        "verdicts, fewer requests); false draws every sample, as ADK does.",
    )


class VertexConfig(BaseModel):
    """Where Vertex AI managed metrics run (default: GOOGLE_CLOUD_PROJECT / GOOGLE_CLOUD_LOCATION)."""

    model_config = ConfigDict(extra="forbid")

    project: Optional[str] = Field(default=None, min_length=1, description="Google Cloud project.")
    location: Optional[str] = Field(
        default=None, min_length=1, description="Region, e.g. us-central1 (google-github-actions/auth does not set it)."
    )
    endpoint: Optional[str] = Field(
        default=None, min_length=1, description="API endpoint override, e.g. a Private Service Connect endpoint (default: the region's)."
    )


class ReportConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    language: Literal["en", "ko", "ja"] = Field(
        default="en",
        description="Language of the PR comment, job summary, report.html and terminal summary, verdict reasons included: en, ko or ja. `--language` overrides it. Machine-read output (results.json, JUnit, status contexts) stays English.",
    )


class Config(BaseModel):
    """The whole config file."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = Field(default=1, description="Config format version.")
    suites: list[SuiteConfig] = Field(min_length=1)
    agent: Optional[AgentConfig] = Field(default=None, description="The agent to run, for every suite that names neither 'actual' nor 'agent'.")
    gate: GateConfig = Field(default_factory=GateConfig, description="Comparison with the baseline and the verdict.")
    judge: JudgeConfig = Field(default_factory=JudgeConfig, description="The judge client: concurrency, rate, retries, cache.")
    vertex: VertexConfig = Field(default_factory=VertexConfig, description="Vertex AI project and location for managed metrics.")
    report: ReportConfig = Field(default_factory=ReportConfig, description="How reports read; not part of the config digest.")


@dataclass
class LoadedConfig:
    config: Config
    path: Path
    shown: str
    base: Path  # relative paths in the config resolve against this folder
    positions: dict[tuple, int]
    inline_criteria: dict[int, dict[str, Criterion]] = field(default_factory=dict)  # suite index -> parsed

    def where(self, *loc: Any) -> str:
        """A JSON path with its line in the config file, when known."""
        line = self.positions.get(tuple(loc))
        return json_path(loc) + (f" (line {line})" if line else "")


# --- reading -----------------------------------------------------------------------


def find_config(explicit: str | None) -> Path:
    if explicit:
        return Path(explicit)
    for name in CONFIG_NAMES:
        if Path(name).exists():
            return Path(name)
    raise InputError(
        Problem(
            None,
            None,
            f"no config file found in {Path.cwd()} (looked for {', '.join(CONFIG_NAMES)})",
            "Create evalgate.yaml or pass --config PATH.",
        )
    )


def _valid_keys(model: type[BaseModel]):
    def keys_at(loc: tuple) -> list[str] | None:
        if not loc:
            return list(model.model_fields)
        if loc[0] == "suites" and len(loc) == 2:
            return list(SuiteConfig.model_fields)
        if loc == ("gate",):
            return list(GateConfig.model_fields)
        if loc == ("gate", "baseline"):
            return list(BaselineConfig.model_fields)
        if loc == ("gate", "pairwise"):
            return list(GatePolicy.model_fields["pairwise"].annotation.model_fields)  # type: ignore[union-attr]
        if loc == ("gate", "efficiency"):
            return list(GatePolicy.model_fields["efficiency"].annotation.model_fields)  # type: ignore[union-attr]
        if loc == ("judge",):
            return list(JudgeConfig.model_fields)
        if loc == ("vertex",):
            return list(VertexConfig.model_fields)
        if loc == ("agent",) or (loc[0] == "suites" and len(loc) == 3 and loc[2] == "agent"):
            return list(AgentConfig.model_fields)
        if loc[0] == "suites" and len(loc) == 3 and loc[2] == "user_simulator":
            return list(UserSimulatorConfig.model_fields)
        if loc[0] == "suites" and len(loc) >= 4 and loc[2] == "custom_metrics":
            return _custom_metric_keys(loc[4:])
        return None

    return keys_at


def load_config(path: Path) -> LoadedConfig:
    """Read and validate a config file; every problem is reported at once."""
    shown = display_path(path)
    text = read_text(path, shown)
    data = parse_document(text, shown, path.suffix.lower() == ".json")
    positions: dict[tuple, int] = {}
    duplicates: list[tuple[tuple, int, int]] = []
    try:
        node = yaml.compose(text)
        if node is not None:
            line_map(node, (), positions, duplicates)
    except (yaml.YAMLError, ValueError, RecursionError):
        pass
    if duplicates:
        raise InputError(
            [Problem(shown, f"{json_path(loc)} (line {second})", f"duplicate key (also on line {first})", "Keep one; the parser would silently use the last.") for loc, first, second in duplicates]
        )
    if not isinstance(data, dict):
        raise InputError(Problem(shown, None, "the config must be a mapping with a 'suites' list", "See docs/configuration.md (or `evalgate schema config`)."))
    try:
        config = Config.model_validate(data)
    except ValidationError as e:
        problems = problems_from_validation(e, shown, valid_keys_for=_valid_keys(Config))
        problems = [_with_line(p, positions) for p in problems]
        raise InputError(problems) from None
    loaded = LoadedConfig(config, path, shown, path.parent, positions)
    problems = ProblemCollector()
    seen: dict[str, int] = {}
    for i, suite in enumerate(config.suites):
        if suite.name in seen:
            problems.add(shown, loaded.where("suites", i, "name"), f"duplicate suite name '{suite.name}' (also suites[{seen[suite.name]}])", "Give each suite a unique name.")
        seen.setdefault(suite.name, i)
        if suite.traces and (suite.evalsets or suite.actual or suite.agent):
            problems.add(shown, loaded.where("suites", i), "a suite has either traces or evalsets with actual outputs or an agent, not both", "Split it into two suites.")
        elif not suite.traces:
            if not suite.evalsets:
                problems.add(shown, loaded.where("suites", i), "the suite names no eval sets", "Add 'evalsets: [path or glob]' (or 'traces: [...]').")
            if suite.actual and suite.agent:
                problems.add(shown, loaded.where("suites", i, "agent"), "a suite has either 'actual' (recorded outputs) or 'agent' (run it), not both", "Remove one of them.")
            elif not suite.actual and not suite.agent and not config.agent:
                problems.add(
                    shown,
                    loaded.where("suites", i),
                    "the suite names no actual outputs and no agent to run",
                    "Add 'agent: {adk: my_agent}' (or url / command) to run the agent, or 'actual: [path or glob]' pointing at ADK eval history, an inference JSONL file or agents-cli traces.",
                )
        custom = suite.custom_metrics or {}
        if custom and not isinstance(suite.criteria, dict):
            source = f"'{suite.criteria}'" if isinstance(suite.criteria, str) else "the test_config.json beside each eval set"
            problems.add(
                shown,
                loaded.where("suites", i, "custom_metrics"),
                f"custom_metrics go with the suite's inline criteria, and this suite reads its criteria from {source}",
                "Write the criteria inline in the suite, or declare custom_metrics in that test_config.json.",
            )
        if isinstance(suite.criteria, dict):
            for name in custom:
                if name not in suite.criteria:
                    # ADK skips such an entry silently; in our own config it is surely a slip.
                    problems.add(
                        shown,
                        loaded.where("suites", i, "custom_metrics", name),
                        f"custom metric '{name}' is not named in the suite's criteria, so it would never run",
                        f"Add '{name}: <threshold>' to criteria, or remove the entry.",
                    )
            parsed = problems.run(
                parse_custom_criteria,
                suite.criteria,
                custom,
                shown,
                lambda *loc, i=i: loaded.where("suites", i, "criteria", *loc),
                lambda *loc, i=i: loaded.where("suites", i, "custom_metrics", *loc),
                path,
            )
            if parsed is not None:
                loaded.inline_criteria[i] = parsed
        if suite.traces and suite.criteria is None:
            problems.add(shown, loaded.where("suites", i), "a trace suite needs criteria", "Add 'criteria: {trace_value: 0.6}'.")
    for loc, agent in _agents(config):
        _check_agent(agent, shown, lambda *rest, loc=loc: loaded.where(*loc, *rest), problems)
    problems.raise_if_any()
    return loaded


def _agents(config: Config) -> list[tuple[tuple, AgentConfig]]:
    out: list[tuple[tuple, AgentConfig]] = [(("agent",), config.agent)] if config.agent else []
    out += [(("suites", i, "agent"), s.agent) for i, s in enumerate(config.suites) if s.agent]
    return out


def suite_agent(config: Config, suite: SuiteConfig) -> Optional[AgentConfig]:
    """The agent a suite runs, if any: its own, else the top-level one (unless it has recorded outputs or traces)."""
    if suite.traces or suite.actual:
        return None
    return suite.agent or config.agent


def _check_agent(agent: AgentConfig, shown: str, where, problems: ProblemCollector) -> None:
    kinds = [k for k in ("adk", "url", "command") if getattr(agent, k) is not None]
    if len(kinds) != 1:
        what = "names no agent" if not kinds else f"names {' and '.join(repr(k) for k in kinds)}; an agent is one of them"
        problems.add(shown, where(), what, "Give exactly one of 'adk: my_agent', 'url: http://...' or 'command: [program, args...]'.")
    for key in ("app", "headers"):
        if getattr(agent, key) and agent.url is None:
            problems.add(shown, where(key), f"'{key}' applies to an API server ('url') only", f"Remove '{key}', or use 'url'.")
    if agent.url is not None and not agent.url.startswith(("http://", "https://")):
        problems.add(shown, where("url"), f"'{agent.url}' is not an http(s) URL", "Write the server's base URL, e.g. http://127.0.0.1:8000.")
    if agent.command is not None and not agent.command[0].strip():
        problems.add(shown, where("command"), "the command's program is empty", "Write the program first, e.g. ['python', 'tools/run_agent.py'].")


def _with_line(p: Problem, positions: dict[tuple, int]) -> Problem:
    # Recover the location tuple from the JSON path to add the line number.
    loc: list[Any] = []
    for chunk in (p.where or "").replace("]", "").replace("[", ".").split("."):
        if chunk:
            loc.append(int(chunk) if chunk.isdigit() else chunk)
    for n in range(len(loc), 0, -1):
        line = positions.get(tuple(loc[:n]))
        if line:
            return Problem(p.file, f"{p.where} (line {line})", p.what, p.fix)
    return p


# --- criteria ------------------------------------------------------------------------


def parse_criteria(raw: dict[str, Any], shown: str, where, warnings: Optional[list[str]] = None) -> dict[str, Criterion]:
    """ADK criteria syntax to criterion objects. `where(*loc)` names a place in the file.

    Strict on evalgate's own config. Given `warnings` (an ADK test_config.json, which ADK reads
    with its criteria open to extra keys), an unknown option of a known criterion is dropped
    with a warning instead: the file stays usable by both tools."""
    problems = ProblemCollector()
    out: dict[str, Criterion] = {}
    for name, value in raw.items():
        if name in efficiency.METRICS:  # always reported, never a criterion: accepted without a threshold
            wrong = efficiency.config_problem(name, value)
            if wrong:
                problems.add(shown, where(name), *wrong)
            continue
        cls = REGISTRY.get(name)
        if cls is None:
            problems.add(shown, where(name), f"unknown criterion '{name}'", did_you_mean(name, [*REGISTRY, *efficiency.METRICS]))
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float, dict)):
            problems.add(shown, where(name), f"'{name}' must be a threshold number or an object with 'threshold'", f"Write '{name}: 0.8' or '{name}: {{threshold: 0.8}}'.")
            continue
        params = {"threshold": value} if isinstance(value, (int, float)) else value
        if warnings is not None and isinstance(params, dict):
            known = {*cls.model_fields, *(f.alias for f in cls.model_fields.values() if f.alias)}
            for key in [k for k in params if k not in known]:
                warnings.append(
                    _(
                        "{file}: {place}: option '{key}' is not one of {criterion}'s, so it is ignored (adk eval ignores it too)",
                        file=shown,
                        place=where(name, key),
                        key=key,
                        criterion=name,
                    )
                )
            params = {k: v for k, v in params.items() if k in known}
        try:
            out[name] = cls.model_validate(params)
        except ValidationError as e:
            for err in e.errors(include_url=False):
                loc = tuple(err.get("loc", ()))
                kind = err.get("type")
                what = err.get("msg", "invalid value")
                what = what.removeprefix("Value error, ")
                fix = None
                if kind == "extra_forbidden":
                    what = f"unknown option '{loc[-1]}' for {name}"
                    fix = "Remove it or fix the spelling. " + did_you_mean(str(loc[-1]), _option_names(cls))
                elif loc and loc[0] == "threshold" and kind in ("greater_than_equal", "less_than_equal"):
                    low, high = threshold_range(cls)
                    what = f"threshold {params.get('threshold')} is outside [{low:g}, {high:g}]"
                    fix = f"Use a threshold between {low:g} and {high:g}."
                elif kind == "missing":
                    fix = f"Add '{loc[-1]}'."
                place = where(name) if isinstance(value, (int, float)) else where(name, *loc)
                problems.add(shown, place, what[:1].lower() + what[1:], fix)
    problems.raise_if_any()
    return out


def threshold_range(cls: type[Criterion]) -> tuple[float, float]:
    """The thresholds a criterion accepts: [0, 1] for most, its own scale for a few (a 1-5 rating)."""
    low, high = 0.0, 1.0
    for bound in cls.model_fields["threshold"].metadata:
        low = getattr(bound, "ge", low)
        high = getattr(bound, "le", high)
    return low, high


def _option_names(cls: type[Criterion]) -> list[str]:
    return list(cls.model_fields)


def read_test_config(path: Path, warnings: Optional[list[str]] = None) -> dict[str, Criterion]:
    """Criteria from an ADK test_config.json (`{"criteria": {...}, "custom_metrics": {...}}`);
    other ADK keys are ignored. A custom metric that `criteria` does not name never runs, as
    in `adk eval`; it is reported in `warnings`, not refused, so the file stays ADK's."""
    shown = display_path(path)
    text = read_text(path, shown)
    if _is_eval_config(path, text):  # agents-cli's eval_config.yaml / .json (evalgate.agents_cli.eval_config)
        from evalgate.agents_cli.eval_config import read_eval_config

        return read_eval_config(path, text)
    data = parse_json(text, shown)
    if not isinstance(data, dict) or not isinstance(data.get("criteria", {}), dict):
        raise InputError(Problem(shown, "criteria", "an ADK test_config.json holds an object with a 'criteria' object", 'Write {"criteria": {"tool_trajectory_avg_score": 1.0}}.'))
    raw = data.get("criteria")
    custom = _adk_custom_metrics(data, shown)
    if not raw:  # ADK runs no metric at all then; a gate that checks nothing must not pass
        raise InputError(Problem(shown, "criteria", "names no criteria", 'Add criteria, e.g. {"criteria": {"tool_trajectory_avg_score": 1.0}}, or delete the file to use ADK\'s defaults.'))
    unused = [name for name in custom if name not in raw]
    if unused and warnings is not None:
        for name in unused:
            warnings.append(
                _(
                    "{file}: custom metric '{name}' is not named in criteria, so it never runs (nor under adk eval); "
                    "add it to criteria with a threshold to run it",
                    file=shown,
                    name=name,
                )
            )
    parsed = parse_custom_criteria(
        raw, custom, shown, lambda *loc: json_path(("criteria",) + loc), lambda *loc: json_path(("custom_metrics",) + loc), path,
        warnings if warnings is not None else [],
    )
    if not parsed:  # only the informational efficiency metrics: nothing would decide a case
        raise InputError(Problem(shown, "criteria", "names only informational metrics, which never decide a case", 'Add a criterion, e.g. "tool_trajectory_avg_score": 1.0; efficiency is reported anyway.'))
    return parsed


def _is_eval_config(path: Path, text: str) -> bool:
    """Whether a criteria file is agents-cli's eval config: YAML (ADK's test_config.json is
    JSON only), or JSON whose content is one (`metrics_to_run`, a `custom_metrics` list)."""
    from evalgate.agents_cli.eval_config import looks_like_eval_config

    if path.suffix.lower() in (".yaml", ".yml"):
        return True
    try:
        data = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError, RecursionError):
        return False
    return looks_like_eval_config(data)


def _adk_custom_metrics(data: dict[str, Any], shown: str) -> dict[str, CustomMetricConfig]:
    """`custom_metrics` of an ADK file, read as ADK reads it: either casing, unknown keys of
    an entry ignored; `code_config` and `metric_info` strict, as ADK's own models are."""
    raw = data.get("custom_metrics", data.get("customMetrics"))
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise InputError(Problem(shown, "custom_metrics", "must be an object: {name: {code_config: {name: module.fn}}}", 'Write {"custom_metrics": {"my_metric": {"code_config": {"name": "agent.my_metrics.score"}}}}.'))
    problems = ProblemCollector()
    out: dict[str, CustomMetricConfig] = {}
    for name, entry in raw.items():
        if not isinstance(entry, dict):
            problems.add(shown, json_path(("custom_metrics", name)), "must be an object with 'code_config'", 'Write {"code_config": {"name": "agent.my_metrics.score"}}.')
            continue
        fields = {key: _snake_keys(entry[alias]) for key, alias in _present(entry, ("code_config", "metric_info", "description"))}
        try:
            out[name] = CustomMetricConfig.model_validate(fields)
        except ValidationError as e:
            problems.extend(problems_from_validation(e, shown, prefix=json_path(("custom_metrics", name)) + ".", valid_keys_for=_custom_metric_keys))
    problems.raise_if_any()
    return out


def _present(entry: dict[str, Any], keys: tuple[str, ...]) -> list[tuple[str, str]]:
    """(field, the key it is spelled with in entry) for each field present in either casing."""
    out = []
    for key in keys:
        camel = to_camel(key)
        if key in entry:
            out.append((key, key))
        elif camel in entry:
            out.append((key, camel))
    return out


def _snake_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {to_snake(k) if isinstance(k, str) else k: _snake_keys(v) for k, v in value.items()}
    return value


def _custom_metric_keys(loc: tuple) -> list[str] | None:
    model: Any = CustomMetricConfig
    for part in loc:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        inner = field.annotation if field else None
        inner = next((a for a in getattr(inner, "__args__", (inner,)) if isinstance(a, type) and issubclass(a, BaseModel)), None)
        if inner is None:
            return None
        model = inner
    return list(model.model_fields)


def _custom_hint(problem: Problem, custom: dict[str, CustomMetricConfig]) -> Problem:
    """An unknown criterion's fix, also pointing at custom_metrics (a typo'd custom name, or
    a custom metric not declared)."""
    if not problem.what.startswith("unknown criterion '"):
        return problem
    near = closest(problem.what.split("'")[1], custom)
    hint = f"Did you mean the custom metric '{near}'?" if near else "A custom metric needs an entry in custom_metrics (code_config: {name: module.fn})."
    return Problem(problem.file, problem.where, problem.what, f"{problem.fix} {hint}" if problem.fix and not near else hint)


def parse_custom_criteria(
    raw: dict[str, Any],
    custom: dict[str, CustomMetricConfig],
    shown: str,
    where,
    where_custom,
    declared_path: Optional[Path],
    warnings: Optional[list[str]] = None,
) -> dict[str, Criterion]:
    """`criteria` with ADK's `custom_metrics`: a name declared there is that custom metric
    (replacing ADK's metric of the same name, as ADK's registry does); the rest are ours.
    `where(*loc)` names a place under criteria, `where_custom(*loc)` one under custom_metrics.
    `warnings`: read tolerantly, as an ADK file (see `parse_criteria`)."""
    from evalgate.criteria.custom_metric import CustomMetric

    problems = ProblemCollector()
    try:
        ours = parse_criteria({k: v for k, v in raw.items() if k not in custom}, shown, where, warnings)
    except InputError as e:
        ours = {}
        problems.extend(_custom_hint(p, custom) for p in e.problems)
    out: dict[str, Criterion] = {}
    for name, value in raw.items():
        if name not in custom:
            if name in ours:
                out[name] = ours[name]
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float, dict)):
            problems.add(shown, where(name), f"'{name}' must be a threshold number or an object with 'threshold'", f"Write '{name}: 0.5' or '{name}: {{threshold: 0.5, ...}}'.")
            continue
        try:
            out[name] = CustomMetric.declare(name, custom[name].code_config.name, value, shown, where_custom(name, "code_config", "name"), declared_path)
        except ValidationError as e:
            for err in e.errors(include_url=False):
                loc = tuple(err.get("loc", ()))
                what = err.get("msg", "invalid value").removeprefix("Value error, ")
                fix = f"Add '{loc[-1]}'." if err.get("type") == "missing" and loc else "Give a number."
                problems.add(shown, where(name, *loc) if isinstance(value, dict) else where(name), what[:1].lower() + what[1:], fix)
    problems.raise_if_any()
    return out


def read_simulator_config(path: Path) -> Optional[UserSimulatorConfig]:
    """The `user_simulator_config` of an ADK test_config.json, if it has one (agents-cli's
    eval config has none)."""
    shown = display_path(path)
    text = read_text(path, shown)
    if _is_eval_config(path, text):
        return None
    data = parse_json(text, shown)
    raw = data.get("user_simulator_config", data.get("userSimulatorConfig")) if isinstance(data, dict) else None
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise InputError(Problem(shown, "user_simulator_config", "must be an object", 'Write {"user_simulator_config": {"max_allowed_invocations": 10}}.'))
    try:
        return UserSimulatorConfig.model_validate(raw)
    except ValidationError as e:
        raise InputError(problems_from_validation(e, shown, prefix="user_simulator_config.", valid_keys_for=lambda loc: list(UserSimulatorConfig.model_fields))) from None


def default_criteria() -> dict[str, Criterion]:
    return parse_criteria(ADK_DEFAULT_CRITERIA, "(ADK defaults)", lambda *loc: json_path(loc))


def json_schema() -> dict[str, Any]:
    """JSON Schema of the config, with each criterion's options, for editors."""
    schema = Config.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "evalgate config"
    props = {}
    for name, cls in sorted(REGISTRY.items()):
        options = cls.model_json_schema(by_alias=False)
        options.pop("title", None)
        low, high = (int(x) if x.is_integer() else x for x in threshold_range(cls))
        schema.setdefault("$defs", {}).update(options.pop("$defs", {}))
        props[name] = {
            "description": (cls.__doc__ or "").strip().splitlines()[0],
            "anyOf": [{"type": "number", "minimum": low, "maximum": high}, options],
        }
    for name in efficiency.METRICS:
        props[name] = {
            "description": "ADK's informational efficiency metric, always reported; takes no threshold.",
            "anyOf": [{"type": "null"}, {"const": True}, {"type": "object", "maxProperties": 0}],
        }
    custom = {
        "description": "A custom metric declared in the suite's custom_metrics: its threshold (any number), or an object with "
        "'threshold' and the metric's own parameters (given to the function in eval_metric.criterion).",
        "anyOf": [{"type": "number"}, {"type": "object", "properties": {"threshold": {"type": "number"}}, "required": ["threshold"]}],
    }
    criteria_schema = {"type": "object", "properties": props, "additionalProperties": custom}
    suite = schema["$defs"]["SuiteConfig"]["properties"]
    suite["criteria"] = {
        "description": suite["criteria"].get("description"),
        "anyOf": [{"type": "string", "description": "Path to an ADK test_config.json or an agents-cli eval_config.yaml"}, criteria_schema, {"type": "null"}],
    }
    for key in ("evalsets", "actual", "traces"):
        suite[key] = {"description": suite[key].get("description"), "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
    agent = schema["$defs"]["AgentConfig"]["properties"]
    agent["command"] = {
        "description": agent["command"].get("description"),
        "anyOf": [{"type": "string", "description": "split as a shell would"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}, {"type": "null"}],
    }
    return schema
