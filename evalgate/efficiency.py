"""ADK 2.13's informational efficiency metrics: tool calls, model calls, tokens and seconds per turn.

`adk eval` adds `tool_call_count_v1`, `inference_call_count_v1`, `token_usage_v1` and
`invocation_duration_v1` to every eval (google/adk/evaluation/_efficiency_evaluators.py).
They never pass or fail: ADK records them as INFORMATIONAL and the case status ignores
them. evalgate computes the same values from the actual invocations, stores them beside
the criteria (`CaseResult.efficiency`) and shows them; they never decide a case, enter
the gate or change a count.

ADK's rules, kept exactly:

- a value is per invocation (per turn); None means "not available", never 0;
- tool calls: function-call parts of the events (or `tool_uses`), 0 without intermediate
  data; the case value is the mean over all turns;
- model calls: events with `usage_metadata` or `model_version`; None for the older
  `tool_uses` shape; the case value is the mean over the turns that have one;
- tokens: each field summed over the turn's events that report it (input = prompt +
  tool-use prompt, output = candidates + thoughts, total = input + output, the
  backend's total ignored); the case value of a field is the sum of the turns that have
  it divided by the number of all turns, None if no turn has it;
- seconds: `duration`, `model_duration`, `tool_duration` of the invocation, framework =
  round(max(total - model - tool, 0), 3), all None without `duration`; the case value of
  a field is the mean over the turns that have it, rounded to 3 decimals.

Several runs of a case (num_runs) are pooled, as the criteria pool them: the case value
applies ADK's rule to the invocations of every run together (one run: exactly ADK's
value), and `runs` keeps each run's own value.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional

from evalgate.adk import Invocation, InvocationEvents
from evalgate.results import EfficiencyResult, EfficiencyValue

TOOL_CALLS = "tool_call_count_v1"
MODEL_CALLS = "inference_call_count_v1"
TOKENS = "token_usage_v1"
DURATION = "invocation_duration_v1"
METRICS = (TOOL_CALLS, MODEL_CALLS, TOKENS, DURATION)  # ADK's order (eval_config._DEFAULT_EFFICIENCY_METRICS)

# ADK's TokenUsageDetails and DurationDetails fields, in ADK's order.
TOKEN_FIELDS = (
    "total_tokens",
    "input_tokens",
    "prompt_tokens",
    "cached_tokens",
    "tool_use_tokens",
    "output_tokens",
    "candidates_tokens",
    "reasoning_tokens",
)
DURATION_FIELDS = ("total_seconds", "model_seconds", "tool_seconds", "framework_seconds")

Details = dict[str, Optional[float]]


# --- one invocation ----------------------------------------------------------------------


def tool_call_count(inv: Invocation) -> Optional[float]:
    return float(len(inv.tool_calls()))


def inference_call_count(inv: Invocation) -> Optional[float]:
    data = inv.intermediate_data
    if not isinstance(data, InvocationEvents):
        return None
    return float(sum(1 for e in data.invocation_events if e.usage_metadata is not None or e.model_version is not None))


def _count(usage: dict[str, Any], snake: str) -> Optional[int]:
    camel = snake.split("_")[0] + "".join(w.title() for w in snake.split("_")[1:])
    value = usage.get(snake, usage.get(camel))
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value  # type: ignore[return-value]


def _add(total: Optional[float], count: Optional[float]) -> Optional[float]:
    if count is None:
        return total
    return (total or 0) + count


def token_details(inv: Invocation) -> Details:
    """The turn's token counts by kind, summed over its model calls (None: never reported)."""
    out: Details = dict.fromkeys(TOKEN_FIELDS)
    data = inv.intermediate_data
    events = data.invocation_events if isinstance(data, InvocationEvents) else []
    for event in events:
        if event.usage_metadata is None:
            continue
        usage = event.usage_metadata
        prompt = _count(usage, "prompt_token_count")
        tool_use = _count(usage, "tool_use_prompt_token_count")
        candidates = _count(usage, "candidates_token_count")
        thoughts = _count(usage, "thoughts_token_count")
        call_input = None if prompt is None and tool_use is None else (prompt or 0) + (tool_use or 0)
        call_output = None if candidates is None and thoughts is None else (candidates or 0) + (thoughts or 0)
        for name, value in (
            ("input_tokens", call_input),
            ("prompt_tokens", prompt),
            ("cached_tokens", _count(usage, "cached_content_token_count")),
            ("tool_use_tokens", tool_use),
            ("output_tokens", call_output),
            ("candidates_tokens", candidates),
            ("reasoning_tokens", thoughts),
        ):
            out[name] = _add(out[name], value)
    if out["input_tokens"] is not None or out["output_tokens"] is not None:
        out["total_tokens"] = (out["input_tokens"] or 0) + (out["output_tokens"] or 0)
    return out


def duration_details(inv: Invocation) -> Details:
    """Where the turn's seconds went: model, tools, and the framework's remainder."""
    if inv.duration is None:
        return dict.fromkeys(DURATION_FIELDS)
    model, tool = inv.model_duration, inv.tool_duration
    framework = None if model is None or tool is None else round(max(inv.duration - model - tool, 0.0), 3)
    return {"total_seconds": inv.duration, "model_seconds": model, "tool_seconds": tool, "framework_seconds": framework}


# --- a case --------------------------------------------------------------------------------


def _mean_present(values: list[Optional[float]]) -> Optional[float]:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None  # builtin sum, as ADK adds


def _tokens_case(per: list[Details]) -> Details:
    # A field is averaged over every turn (a turn that did not report it spent none);
    # a field no turn reported stays None.
    out: Details = {}
    for name in TOKEN_FIELDS:
        present = [d[name] for d in per if d[name] is not None]
        out[name] = sum(present) / len(per) if present else None  # type: ignore[arg-type]
    return out


def _duration_case(per: list[Details]) -> Details:
    out: Details = {}
    for name in DURATION_FIELDS:
        mean = _mean_present([d[name] for d in per])
        out[name] = round(mean, 3) if mean is not None else None
    return out


def _counted(invocations: list[Invocation], value: Callable[[Invocation], Optional[float]]) -> EfficiencyResult:
    per = [value(inv) for inv in invocations]
    return EfficiencyResult(value=_mean_present(per), per_invocation=[EfficiencyValue(value=v) for v in per])


def _detailed(
    invocations: list[Invocation], details: Callable[[Invocation], Details], case: Callable[[list[Details]], Details], key: str
) -> EfficiencyResult:
    per = [details(inv) for inv in invocations]
    if not per:
        return EfficiencyResult(value=None)
    overall = case(per)
    return EfficiencyResult(
        value=overall[key],
        details=overall,
        per_invocation=[EfficiencyValue(value=d[key], details=d) for d in per],
    )


def compute_one(invocations: list[Invocation]) -> dict[str, EfficiencyResult]:
    """The four metrics of one run's invocations, as ADK computes them."""
    return {
        TOOL_CALLS: _counted(invocations, tool_call_count),
        MODEL_CALLS: _counted(invocations, inference_call_count),
        TOKENS: _detailed(invocations, token_details, _tokens_case, "total_tokens"),
        DURATION: _detailed(invocations, duration_details, _duration_case, "total_seconds"),
    }


def compute(runs: Iterable[Optional[list[Invocation]]]) -> dict[str, EfficiencyResult]:
    """The four metrics of a case from its runs' invocations (None: a run that failed).

    One run: ADK's values. Several: ADK's rule over the invocations of every run pooled,
    with each run's own value in `runs` (None for a failed run). No run with invocations:
    nothing (an empty dict)."""
    runs = list(runs)
    done = [r for r in runs if r is not None]
    if not done:
        return {}
    pooled = compute_one([inv for r in done for inv in r])
    if len(runs) > 1:
        each = [compute_one(r) if r is not None else None for r in runs]
        for name, result in pooled.items():
            result.runs = [e[name].value if e is not None else None for e in each]
    return pooled


def summarize(cases: Iterable[Any]) -> dict[str, EfficiencyValue]:
    """A suite's values per turn: ADK's rule over the turns of all its cases (and runs), from
    the results' per-invocation values. Metrics no case has are left out."""
    per: dict[str, list[EfficiencyValue]] = {name: [] for name in METRICS}
    for case in cases:
        for name, result in case.efficiency.items():
            if name in per:
                per[name].extend(result.per_invocation)
    out: dict[str, EfficiencyValue] = {}
    for name, values in per.items():
        if not values:
            continue
        if name in (TOOL_CALLS, MODEL_CALLS):
            out[name] = EfficiencyValue(value=_mean_present([v.value for v in values]))
            continue
        fields, case, key = (TOKEN_FIELDS, _tokens_case, "total_tokens") if name == TOKENS else (DURATION_FIELDS, _duration_case, "total_seconds")
        details = case([{f: v.details.get(f) for f in fields} for v in values])
        out[name] = EfficiencyValue(value=details[key], details=details)
    return out


# --- config ----------------------------------------------------------------------------------

ACCEPTED = "null, {} or true"


def config_problem(name: str, value: Any) -> Optional[tuple[str, str]]:
    """Why naming an efficiency metric in `criteria` with this value is wrong (what, fix), or
    None when it is fine. They are always reported and never gate, so they take no threshold
    (ADK rejects one too, but only logs it and reports the metric as not evaluated)."""
    if value is None or value is True or value == {}:
        return None
    fix = f"Remove it; efficiency metrics are informational, always reported and never gate (or write '{name}: {{}}')."
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"'{name}' takes no threshold ({value})", fix
    if isinstance(value, dict):
        if "threshold" in value:
            return f"'{name}' takes no threshold ({value['threshold']})", fix
        return f"'{name}' takes no options ({', '.join(map(str, value))})", fix
    return f"'{name}' must be {ACCEPTED}, not {value!r}", fix
