"""agents-cli's eval config (`tests/eval/eval_config.yaml`) read as a suite's criteria.

The file is what `agents-cli eval grade --config` reads (google/agents/cli/eval/eval_utils.py:
`load_eval_config`, `prepare_eval_metrics`), read by the same rules, with evalgate's errors:
every problem at once, each with its file, place (and line) and fix.

- `metrics_to_run: [names]` selects; it must name at least one metric.
- `custom_metrics: [{name, ...}]` is a pool; an entry runs only when `metrics_to_run` names it.
- A selected name that is not in the pool is a built-in, resolved as the SDK resolves a bare
  name: its pinned version (v1; FINAL_RESPONSE_MATCH v2), or the versioned name as written.
- A pool entry with `custom_function` (inline) or `custom_function_file` (relative to the
  config file) is a local code metric: `def evaluate(instance)`. `execution: remote` (the
  service's sandbox) is refused: evalgate runs code metrics on the machine.
- A pool entry with `prompt_template` is an LLM metric, judged on evalgate's judge runtime.
- A pool entry with neither, named after a built-in, parameterizes it at its newest version, as
  agents-cli does: `metric_spec_parameters`, and the judge (`judge_model`,
  `judge_model_sampling_count`, `judge_model_generation_config`: the request's autorater_config).
  Per-step judges (`judge_model_step_configs`) are refused: not supported yet.
- As in agents-cli: a body under a name the service reserves (a versioned built-in name) and
  `rubric_group_name` are refused; metric names are lower-cased (the SDK's Metric does so).

Two keys are evalgate's own, and agents-cli ignores them: `score_range: [low, high]` (the
scale of the metric's scores, either end null when unbounded; the gate's margins are fractions
of it) and `judge: true` (a code metric that asks an LLM: its scores are noisy).

There are no thresholds: each criterion's score is recorded, and the gate compares it with the
baseline's (docs/criteria.md: agents-cli metrics).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any, Optional

from evalgate.errors import InputError, Problem, ProblemCollector, did_you_mean, display_path, json_path

# The versioned metrics the eval service registers (agentplatform/_genai/_evals_constant.py,
# SUPPORTED_PREDEFINED_METRICS of the SDK agents-cli 1.11.0 pins; a test holds it equal).
SUPPORTED_PREDEFINED_METRICS = frozenset(
    {
        "general_quality_v1", "text_quality_v1", "instruction_following_v1", "grounding_v1", "safety_v1",
        "multi_turn_general_quality_v1", "multi_turn_text_quality_v1", "multi_turn_tool_use_quality_v1",
        "multi_turn_trajectory_quality_v1", "multi_turn_task_success_v1", "final_response_match_v2",
        "final_response_reference_free_v1", "final_response_quality_v1", "hallucination_v1",
        "tool_use_quality_v1", "gecko_text2image_v1", "gecko_text2video_v1",
        "general_quality_v2", "instruction_following_v2", "text_quality_v2", "grounding_v2", "hallucination_v2",
        "safety_v3", "multi_turn_general_quality_v2", "multi_turn_text_quality_v2", "tool_use_quality_v2",
        "final_response_quality_v2", "final_response_match_v3", "final_response_reference_free_v2",
        "gecko_text2image_v2", "gecko_text2video_v2",
    }
)

# A bare name in metrics_to_run: the SDK's RubricMetric.<NAME> pins these versions.
PINNED = {
    "general_quality": "v1", "text_quality": "v1", "instruction_following": "v1", "safety": "v1",
    "multi_turn_general_quality": "v1", "multi_turn_text_quality": "v1", "multi_turn_tool_use_quality": "v1",
    "multi_turn_trajectory_quality": "v1", "multi_turn_task_success": "v1", "final_response_match": "v2",
    "final_response_reference_free": "v1", "final_response_quality": "v1", "hallucination": "v1",
    "grounding": "v1", "groundedness": "v1", "tool_use_quality": "v1", "gecko_text2image": "v1",
    "gecko_text2video": "v1",
}
_ALIASES = {"groundedness": "grounding"}  # the SDK's deprecated name for grounding_v1

# RubricMetric names the SDK loads from a Cloud Storage bucket at run time (no service metric).
BUCKET_METRICS = frozenset(
    {"coherence", "fluency", "verbosity", "summarization_quality", "question_answering_quality",
     "multi_turn_chat_quality", "multi_turn_safety"}
)

BODY_KEYS = ("prompt_template", "custom_function", "custom_function_file", "remote_custom_function")
OWN_KEYS = ("score_range", "judge")  # evalgate's; agents-cli ignores them
LLM_KEYS = ("judge_model", "judge_model_sampling_count", "judge_model_system_instruction", "judge_model_generation_config")
BUILTIN_KEYS = ("metric_spec_parameters", "judge_model_step_configs")  # the second is refused (not supported yet)
# Fields of the SDK's Metric that evalgate does not carry out (yet): refused, not ignored.
UNSUPPORTED_KEYS = {
    "return_raw_output": "evalgate reads the judge's score and explanation",
    "result_parsing_function": "evalgate reads the judge's reply as JSON {score, explanation}",
    "parse_and_reduce_fn": "it is a Python callable, which a config file cannot hold",
    "aggregate_summary_fn": "it is a Python callable, which a config file cannot hold",
    "metric_resource_name": "registered metrics live in a Google Cloud project evalgate does not read",
    "remote_custom_function": "evalgate runs code metrics on this machine; write it as custom_function",
}


def looks_like_eval_config(data: Any) -> bool:
    """An agents-cli eval config, by content: a mapping with `metrics_to_run`, or whose
    `custom_metrics` is a list (ADK's test_config.json has `criteria` and a `custom_metrics` object)."""
    return isinstance(data, dict) and (
        "metrics_to_run" in data or isinstance(data.get("custom_metrics"), list)
    ) and "criteria" not in data


def resolve_builtin(name: str) -> Optional[str]:
    """A built-in's versioned name at its newest version (agents-cli's `_resolve_predefined_metric_name`,
    for a name in custom_metrics), or None when the name is no built-in."""
    lowered = name.lower()
    if lowered in SUPPORTED_PREDEFINED_METRICS:
        return lowered
    versions = [int(m.group(1)) for c in SUPPORTED_PREDEFINED_METRICS if (m := re.fullmatch(rf"{re.escape(lowered)}_v(\d+)", c))]
    return f"{lowered}_v{max(versions)}" if versions else None


def resolve_bare(name: str) -> Optional[str]:
    """A name in metrics_to_run, not in custom_metrics, as the SDK resolves it (RubricMetric):
    a pinned version for the base names, the name itself when it is versioned; else None."""
    lowered = name.lower()
    if lowered in PINNED:
        resolved = f"{_ALIASES.get(lowered, lowered)}_{PINNED[lowered]}"
        return resolved if resolved in SUPPORTED_PREDEFINED_METRICS else None
    return lowered if lowered in SUPPORTED_PREDEFINED_METRICS else None


def is_sdk_computed(name: str) -> bool:
    """exact_match, bleu and rouge_*: computed by the service from the name alone."""
    lowered = name.lower()
    return lowered in ("exact_match", "bleu") or lowered.startswith("rouge")


def read_eval_config(path: Path, text: Optional[str] = None) -> dict[str, Any]:
    """The criteria an agents-cli eval config selects, by result name (the versioned built-in
    name, or a custom metric's own name, lower-cased). InputError with every problem."""
    from evalgate.documents import line_map, parse_document
    import yaml

    shown = display_path(path)
    if text is None:
        from evalgate.errors import read_text

        text = read_text(path, shown)
    data = parse_document(text, shown, path.suffix.lower() == ".json")
    positions: dict[tuple, int] = {}
    try:
        node = yaml.compose(text)
        if node is not None:
            line_map(node, (), positions, [])
    except (yaml.YAMLError, ValueError, RecursionError):
        pass
    return _Reader(path, shown, positions).read(data)


class _Reader:
    def __init__(self, path: Path, shown: str, positions: dict[tuple, int]):
        self.path = path
        self.shown = shown
        self.positions = positions
        self.problems = ProblemCollector()

    def where(self, *loc: Any) -> str:
        line = self.positions.get(tuple(loc))
        return json_path(loc) + (f" (line {line})" if line else "")

    def add(self, loc: tuple, what: str, fix: str) -> None:
        self.problems.add(self.shown, self.where(*loc) if loc else None, what, fix)

    def read(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise InputError(Problem(self.shown, None, "an agents-cli eval config is a mapping with 'metrics_to_run' and 'custom_metrics'",
                                     "Write metrics_to_run: [a metric] and, for your own metrics, custom_metrics: [{name: ..., custom_function: ...}]."))
        for key in data:
            if key not in ("metrics_to_run", "custom_metrics"):
                self.add((key,), f"unknown key '{key}' (agents-cli reads metrics_to_run and custom_metrics)",
                         "Remove it. " + did_you_mean(str(key), ["metrics_to_run", "custom_metrics"]))
        selected = data.get("metrics_to_run", [])
        pool_raw = data.get("custom_metrics", [])
        if selected is None:
            selected = []
        if pool_raw is None:
            pool_raw = []
        if not isinstance(selected, list) or not all(isinstance(n, str) and n.strip() for n in selected):
            self.add(("metrics_to_run",), "must be a list of metric names", "Write metrics_to_run: [final_response_quality, my_metric].")
            selected = []
        if not isinstance(pool_raw, list):
            self.add(("custom_metrics",), "must be a list of metric objects, each with a 'name'",
                     "Write custom_metrics: [{name: my_metric, custom_function_file: my_metric.py}].")
            pool_raw = []
        pool: dict[str, tuple[int, dict[str, Any]]] = {}
        for j, entry in enumerate(pool_raw):
            if not isinstance(entry, dict):
                self.add(("custom_metrics", j), "must be an object with a 'name'", "Write {name: my_metric, custom_function: ...}.")
                continue
            name = entry.get("name")
            if not isinstance(name, str) or not name.strip():
                self.add(("custom_metrics", j), "has no 'name' (agents-cli skips such an entry, so it could never run)", "Give it a name, and list that name in metrics_to_run.")
                continue
            if name in pool:
                self.add(("custom_metrics", j, "name"), f"'{name}' is also custom_metrics[{pool[name][0]}] (agents-cli would keep only the last)", "Give each metric its own name.")
                continue
            pool[name] = (j, entry)
        if not selected and not self.problems.problems:
            self.add(("metrics_to_run",) if "metrics_to_run" in data else (), "names no metric (agents-cli refuses to grade then)",
                     "List the metrics to run, e.g. metrics_to_run: [" + (", ".join(list(pool)[:2]) or "final_response_quality") + "].")
        out: dict[str, Any] = {}
        where_from: dict[str, int] = {}
        for k, name in enumerate(selected):
            crit = self.metric(name, pool, ("metrics_to_run", k))
            if crit is None:
                continue
            result = crit.metric_name
            if result in out:
                self.add(("metrics_to_run", k), f"'{name}' is the metric {result}, which metrics_to_run[{where_from[result]}] names already",
                         "Name each metric once.")
                continue
            out[result] = crit
            where_from[result] = k
        self.problems.raise_if_any()
        return out

    # --- one metric -----------------------------------------------------------------------------

    def metric(self, name: str, pool: dict[str, tuple[int, dict[str, Any]]], at: tuple) -> Any:
        from evalgate.criteria.acli_service_metric import AcliServiceMetric

        if name not in pool:
            resolved = resolve_bare(name)
            if resolved is not None:
                return AcliServiceMetric.declare(resolved, {}, self.shown, self.where(*at))
            lowered = name.lower()
            if is_sdk_computed(name):
                self.add(at, f"'{name}' is computed by the eval service from exact text (exact_match, bleu, rouge): not supported by evalgate yet",
                         "Remove it; evalgate's own response_match_score (ROUGE-1, as ADK) scores ADK eval sets.")
            elif lowered in BUCKET_METRICS:
                self.add(at, f"'{name}' is a metric the SDK downloads from a Cloud Storage bucket at run time, not one the eval service computes: not supported",
                         "Use a built-in of `agents-cli eval metric list` (e.g. general_quality), or write it as a custom metric with a prompt_template.")
            else:
                known = sorted({*PINNED, *SUPPORTED_PREDEFINED_METRICS, *pool})
                self.add(at, f"unknown metric '{name}': neither in custom_metrics nor a built-in",
                         "Declare it in custom_metrics, or use a built-in (`agents-cli eval metric list`). " + did_you_mean(lowered, known))
            return None
        j, entry = pool[name]
        here = ("custom_metrics", j)
        if "rubric_group_name" in entry:
            self.add(here + ("rubric_group_name",), "'rubric_group_name' is not supported (agents-cli refuses it too: the service would demand rubric verdicts a custom prompt cannot give)",
                     "To grade a case's rubric_groups, use a built-in such as final_response_quality with metric_spec_parameters: {rubric_group_key: ...}; "
                     "to judge with your own prompt_template, remove rubric_group_name.")
            return None
        bad = False
        for key in entry:
            if key in UNSUPPORTED_KEYS:
                self.add(here + (key,), f"'{key}' is not supported: {UNSUPPORTED_KEYS[key]}", "Remove it.")
                bad = True
        if bad:
            return None
        builtin = resolve_builtin(name)
        own_body = any(k in entry for k in BODY_KEYS)
        if own_body and builtin == name.lower():
            self.add(here + ("name",), f"'{name}' is a name the eval service reserves; it would ignore your definition",
                     f"Rename the metric, e.g. 'my_{name}' (in metrics_to_run too).")
            return None
        if "custom_function" in entry or "custom_function_file" in entry:
            return self.code_metric(name, entry, here)
        if "prompt_template" in entry:
            return self.llm_metric(name, entry, here)
        if builtin is None:
            if is_sdk_computed(name):
                self.add(here, f"'{name}' is computed by the eval service from exact text (exact_match, bleu, rouge): not supported by evalgate yet",
                         "Remove it from metrics_to_run.")
            else:
                self.add(here, f"custom metric '{name}' has no prompt_template nor custom_function, and '{name}' is no built-in to parameterize",
                         "Add a prompt_template or a custom_function (or custom_function_file), or use a built-in name (`agents-cli eval metric list`). "
                         + did_you_mean(name.lower(), sorted(PINNED)))
            return None
        params = self.keys(entry, here, ("name", *BUILTIN_KEYS, *LLM_KEYS, *OWN_KEYS), "a built-in's parameters")
        if "judge_model_step_configs" in entry:
            self.add(here + ("judge_model_step_configs",), "'judge_model_step_configs' is not supported by evalgate yet (the google-cloud-aiplatform client "
                     "evalgate sends with has no field for per-step judges)", "Remove it; the service's default judges grade the metric.")
            params = None
        if "judge_model_system_instruction" in entry:
            self.add(here + ("judge_model_system_instruction",), "a built-in metric has its own instructions: the SDK does not send this for it",
                     "Remove it, or write your own metric with a prompt_template.")
            params = None
        if params is not None and not self.judge_settings(entry, here):
            params = None
        if params is None:
            return None
        for key in BUILTIN_KEYS:
            if key in entry and not isinstance(entry[key], dict):
                self.add(here + (key,), "must be a mapping", "Write e.g. metric_spec_parameters: {rubric_group_key: my_rubrics}.")
                return None
        scale = self.scale(entry, here)
        if scale is False:
            return None
        return AcliServiceMetric.declare(builtin, params, self.shown, self.where(*here), scale=scale)

    def judge_settings(self, entry: dict[str, Any], here: tuple) -> bool:
        """Whether the entry's judge_model, judge_model_sampling_count and judge_model_generation_config are usable."""
        ok = True
        count = entry.get("judge_model_sampling_count")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 32):
            self.add(here + ("judge_model_sampling_count",), f"judge_model_sampling_count {count!r} is not a whole number from 1 to 32", "Use 1 to 32.")
            ok = False
        for key in ("judge_model", "judge_model_system_instruction"):
            if key in entry and entry[key] is not None and (not isinstance(entry[key], str) or not entry[key].strip()):
                self.add(here + (key,), "must be a non-empty string", f"Write {key}: ... or remove it.")
                ok = False
        config = entry.get("judge_model_generation_config")
        if config is not None:
            problem = _generation_config_problem(config)
            if problem:
                self.add(here + ("judge_model_generation_config",), problem, "Give generation settings such as {temperature: 0, max_output_tokens: 2048}.")
                ok = False
        return ok

    def keys(self, entry: dict[str, Any], here: tuple, allowed: tuple, what: str) -> Optional[dict[str, Any]]:
        ok = True
        for key in entry:
            if key not in allowed:
                self.add(here + (key,), f"unknown key '{key}' for {what}", "Remove it. " + did_you_mean(str(key), [k for k in allowed if k != "name"]))
                ok = False
        return {k: v for k, v in entry.items() if k != "name"} if ok else None

    def scale(self, entry: dict[str, Any], here: tuple) -> Any:
        """The entry's `score_range` as (low, high), None when not given, False when wrong."""
        if "score_range" not in entry:
            return None
        value = entry["score_range"]
        ok = (isinstance(value, list) and len(value) == 2
              and all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in value))
        if ok and value[0] is not None and value[1] is not None and not value[0] < value[1]:
            ok = False
        if not ok:
            self.add(here + ("score_range",), "must be [lowest, highest] with lowest < highest (null for an unbounded end)",
                     "Write score_range: [1, 5] for a 1-5 judge, or [0, null] for a count.")
            return False
        return (None if value[0] is None else float(value[0]), None if value[1] is None else float(value[1]))

    def code_metric(self, name: str, entry: dict[str, Any], here: tuple) -> Any:
        from evalgate.criteria.acli_code_metric import AcliCodeMetric

        if self.keys(entry, here, ("name", "custom_function", "custom_function_file", "execution", *OWN_KEYS), "a code metric") is None:
            return None
        if "custom_function" in entry and "custom_function_file" in entry:
            self.add(here + ("custom_function_file",), "a code metric has custom_function or custom_function_file, not both", "Remove one of them.")
            return None
        execution = entry.get("execution", "local")
        if execution == "remote":
            self.add(here + ("execution",), "'execution: remote' runs the function in the eval service's sandbox; evalgate runs code metrics on this machine",
                     "Remove 'execution: remote' (or write 'execution: local'); the function then runs in evalgate's process, as agents-cli's default does.")
            return None
        if execution != "local":
            self.add(here + ("execution",), f"invalid execution '{execution}'", "Write 'local' (or leave it out).")
            return None
        judge = entry.get("judge", False)
        if not isinstance(judge, bool):
            self.add(here + ("judge",), "must be true or false", "Write judge: true for a metric that asks an LLM.")
            return None
        scale = self.scale(entry, here)
        if scale is False:
            return None
        if "custom_function_file" in entry:
            ref = entry["custom_function_file"]
            if not isinstance(ref, str) or not ref.strip():
                self.add(here + ("custom_function_file",), "must be a path to a .py file", "Write custom_function_file: my_metric.py (relative to this file).")
                return None
            file = Path(ref) if Path(ref).is_absolute() else self.path.parent / ref
            from evalgate.confine import FIX, escapes, project_root

            root = project_root(self.path.parent)
            if escapes(file, root):  # as every file a config names (evalgate.confine): it is read and run
                self.add(here + ("custom_function_file",), f"'{ref}' ({file.resolve()}) leads outside the project ({root})", FIX)
                return None
            if not file.is_file():
                self.add(here + ("custom_function_file",), f"'{ref}' not found (resolved to {display_path(file)}, relative to this file's folder, as agents-cli resolves it)",
                         "Fix the path, or create the file with def evaluate(instance).")
                return None
            try:
                source = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                self.add(here + ("custom_function_file",), f"cannot read '{ref}': {e}", "Make it a readable UTF-8 Python file.")
                return None
            origin, where = display_path(file), self.where(*here, "custom_function_file")
        else:
            source = entry["custom_function"]
            if not isinstance(source, str) or not source.strip():
                self.add(here + ("custom_function",), "must be Python source defining evaluate(instance)", "Write custom_function: |\n  def evaluate(instance): ...")
                return None
            origin, where = f"<custom_metric:{name}>", self.where(*here, "custom_function")
        why = _source_problem(source, origin)
        if why:
            self.add(here + (("custom_function_file",) if "custom_function_file" in entry else ("custom_function",)), why,
                     "Define a top-level function: def evaluate(instance): return {'score': ..., 'explanation': ...}.")
            return None
        return AcliCodeMetric.declare(name, source, origin, self.shown, where, judge=judge, scale=scale)

    def llm_metric(self, name: str, entry: dict[str, Any], here: tuple) -> Any:
        from evalgate.criteria.acli_llm_metric import AcliLLMMetric

        if self.keys(entry, here, ("name", "prompt_template", *LLM_KEYS, *OWN_KEYS), "a prompt_template metric") is None:
            return None
        template = entry["prompt_template"]
        ok = True
        if not isinstance(template, str) or not template.strip():
            self.add(here + ("prompt_template",), "the prompt template is empty", "Write the judge's instructions with {prompt} and {response}.")
            ok = False
        ok = self.judge_settings(entry, here) and ok
        scale = self.scale(entry, here)
        if scale is False or not ok:
            return None
        return AcliLLMMetric.declare(name, entry, self.shown, self.where(*here), scale=scale)


def _source_problem(source: str, origin: str) -> Optional[str]:
    """Why `source` cannot give agents-cli's `evaluate(instance)`, or None. The source is only
    parsed here: it runs when the metric first scores (importing its modules then)."""
    try:
        tree = ast.parse(source, filename=origin)
    except SyntaxError as e:
        return f"invalid Python: {e.msg} (line {e.lineno})"
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "evaluate":
            return None
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.ImportFrom, ast.Import)):
            targets = []
            if isinstance(node, ast.Assign):
                targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                targets = [node.target.id]
            else:
                targets = [a.asname or a.name for a in node.names]
            if "evaluate" in targets:
                return None
    return "defines no function 'evaluate' at its top level (agents-cli calls evaluate(instance))"


_GENERATION_SET_BY_EVALGATE = ("response_mime_type", "response_schema", "response_json_schema", "candidate_count", "responseMimeType",
                               "responseSchema", "responseJsonSchema", "candidateCount")


def _generation_config_problem(config: Any) -> Optional[str]:
    """Why `config` cannot be the judge's generation settings, or None. Only its shape is
    checked here (no SDK import when validating); Gemini refuses a wrong setting by name."""
    if not isinstance(config, dict):
        return "must be a mapping of generation settings"
    for key in config:
        if key in _GENERATION_SET_BY_EVALGATE:
            return f"'{key}' cannot be set: evalgate asks the judge for JSON {{score, explanation}} itself, one request per sample"
    return None
