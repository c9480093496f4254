"""Seeded generator of ADK-shaped eval cases, shared by the ADK parity tests and the benchmark.

Cases are plain JSON-like dicts in ADK's `Invocation` shape, so the same dict can be
validated by ADK (`google.adk.evaluation.eval_case.Invocation`) and by evalgate
(`evalgate.adk.Invocation`). Every case carries coverage tags saying which edge cases it
exercises, so a test can check that the generator still covers what it claims to.

The helpers that build the two sides' scorers and compare their results live here too,
so the test and the benchmark score and compare the same way. google-adk is imported
only inside them.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from typing import Any, Iterator

# --- texts ----------------------------------------------------------------------------

# Each language has several texts; actual responses are derived from expected ones.
TEXTS: dict[str, list[str]] = {
    "en": [
        "The runner was running quickly and runs every day.",
        "I am running the tests; the test runs passed.",
        "Your flight to Paris is booked for Monday at 9:30.",
        "The weather in London is cloudy, 14 degrees, with light rain.",
        "Booked! Confirmation number ABC123, total $420.50.",
        "Searching the databases returned three matching documents.",
        "He ran, she runs, they are running: everyone has run.",
        "Connection connected connecting connections.",
    ],
    "ko": [
        "서울의 날씨는 맑고 따뜻합니다.",
        "항공편이 예약되었습니다. 확인 번호는 ABC123입니다.",
        "오늘 회의는 오후 3시에 시작합니다",
    ],
    "ja": [
        "東京の天気は晴れです。",
        "カタカナとひらがなのテストです",
        "予約が完了しました。ありがとうございます！",
    ],
    "zh": [
        "今天北京的天气很好。",
        "您的航班已预订，确认号码是ABC123。",
        "我们正在运行测试",
    ],
    "th": [
        "วันนี้อากาศดีมาก",
        "ฉันกินข้าวแล้ว",
        "จองเที่ยวบินเรียบร้อยแล้วค่ะ",
        "\u0e34\u0e49 นำหน้าด้วยสระลอย",  # combining marks with no base character first
    ],
    "other": [  # other scripts ADK treats specially or not at all
        "नमस्ते दुनिया, परीक्षण चल रहा है",
        "مرحبا بالعالم",
        "ΟΔΟΣ Σοφία ΣΟΦΙΑ",
        "İstanbul ISTANBUL straße STRASSE",
        "ສະບາຍດີ ປະເທດລາວ",
        "សួស្តី ពិភពលោក",
        "မင်္ဂလာပါ",
        "Привет, мир! Тесты проходят.",
    ],
    "mixed": [
        "Booking 확인: flight KE123 東京→Paris done",
        "Running テスト in 北京 and กรุงเทพ: all runs passed",
        "Status: OK 良好 양호 ดี",
    ],
    "fullwidth": [
        "ＡＢＣ１２３　Ｒｕｎｎｉｎｇ　ｔｅｓｔｓ",
        "ｶﾀｶﾅ ﾃｽﾄ ｶﾞｷﾞ",
        "ﬁle ﬂow ㍿ ①②③ ｘ²",
    ],
    "punct": [
        "!!! ... ???",
        "—–-… «» „“ ‘’ ・、。",
        "(-_-) [*] {#} <&> @@@",
    ],
    "emoji": [
        "👍",
        "❤️ 🎉 👨‍👩‍👧",
        "1️⃣ 2️⃣ done ✅",
        "Great job 👏🏽 running 🏃‍♀️ runs",
    ],
    "empty": ["", "   ", "\n\t"],
}

# Stemming-relevant swaps: the Porter stemmer maps some of these together and not others.
_STEM_SWAPS = {
    "running": "runs",
    "runs": "run",
    "run": "ran",
    "ran": "running",
    "tests": "testing",
    "test": "tested",
    "connected": "connection",
    "connection": "connections",
    "databases": "database",
    "booked": "booking",
    "matching": "matched",
}

# --- tool calls -----------------------------------------------------------------------

TOOL_NAMES = [
    "get_weather",
    "search",
    "book_flight",
    "lookup_user",
    "send_email",
    "transfer_to_agent",
    "get_time",
]

_STRINGS = ["Paris", "london", "LONDON", "서울", "東京", "", "a b", "ﬁle", "1"]


def _scalar(rng: random.Random) -> Any:
    kind = rng.randrange(7)
    if kind == 0:
        return rng.randrange(-3, 10)
    if kind == 1:
        return float(rng.randrange(0, 5))  # integral floats, equal to ints
    if kind == 2:
        return rng.choice([0.5, 2.25, -1.5, 1e-3])
    if kind == 3:
        return rng.choice([True, False])
    if kind == 4:
        return None
    return rng.choice(_STRINGS)


def _value(rng: random.Random, depth: int) -> Any:
    if depth <= 0 or rng.random() < 0.6:
        return _scalar(rng)
    if rng.random() < 0.5:
        return [_value(rng, depth - 1) for _ in range(rng.randrange(0, 4))]
    return {k: _value(rng, depth - 1) for k in rng.sample(["a", "b", "c", "id", "q"], rng.randrange(0, 4))}


def _nested_args(rng: random.Random) -> dict[str, Any]:
    """Dicts in lists in dicts."""
    return {
        "filters": [{"field": rng.choice(["city", "date"]), "values": [_scalar(rng), {"deep": [_scalar(rng)]}]}],
        "limit": rng.randrange(1, 5),
    }


def _args(rng: random.Random) -> tuple[bool, Any]:
    """(present, value): absent args, null, {}, flat or nested."""
    r = rng.random()
    if r < 0.08:
        return False, None
    if r < 0.16:
        return True, None
    if r < 0.26:
        return True, {}
    if r < 0.45:
        return True, _nested_args(rng)
    keys = rng.sample(["city", "query", "date", "n", "unit", "to", "amount"], rng.randrange(1, 4))
    return True, {k: _value(rng, 2) for k in keys}


def _call(rng: random.Random) -> dict[str, Any]:
    call: dict[str, Any] = {"name": rng.choice(TOOL_NAMES)}
    if rng.random() < 0.02:
        del call["name"]  # a call without a name: ADK keeps it as None
    present, value = _args(rng)
    if present:
        call["args"] = value
    return call


def _int_float_twin(value: Any) -> tuple[Any, bool]:
    """The same value with ints as floats (and integral floats as ints); equal in Python."""
    if isinstance(value, bool):
        return value, False
    if isinstance(value, int):
        return float(value), True
    if isinstance(value, float) and value.is_integer():
        return int(value), True
    if isinstance(value, list):
        out = [_int_float_twin(v) for v in value]
        return [v for v, _ in out], any(c for _, c in out)
    if isinstance(value, dict):
        out = {k: _int_float_twin(v) for k, v in value.items()}
        return {k: v for k, (v, _) in out.items()}, any(c for _, c in out.values())
    return value, False


def _change_a_value(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    args = copy.deepcopy(args)
    if not args:
        args["extra"] = 1
        return args
    key = rng.choice(sorted(args))
    old = args[key]
    new = _value(rng, 2)
    args[key] = new if new != old else "changed"
    return args


def _swap_case(name: str | None, rng: random.Random) -> str | None:
    if not name:
        return name
    return rng.choice([name.upper(), name.capitalize(), name.swapcase()])


def _mutate_calls(rng: random.Random, expected: list[dict], tags: set[str]) -> list[dict]:
    """Actual calls derived from the expected ones: equal, or off in one or two ways."""
    actual = copy.deepcopy(expected)
    for _ in range(rng.choice([0, 1, 1, 1, 2])):
        op = rng.choice(
            [
                "reorder", "drop", "extra", "duplicate", "dedupe", "arg_change", "args_shape",
                "int_float", "int_float", "name_case", "empty", "swap_adjacent", "replace_all",
            ]
        )
        if op == "reorder":
            rng.shuffle(actual)
        elif op == "drop" and actual:
            del actual[rng.randrange(len(actual))]
        elif op == "extra":
            actual.insert(rng.randrange(len(actual) + 1), _call(rng))
        elif op == "duplicate" and actual:
            i = rng.randrange(len(actual))
            actual.insert(rng.randrange(len(actual) + 1), copy.deepcopy(actual[i]))
            tags.add("dup_actual")
        elif op == "dedupe":
            seen: list[dict] = []
            for c in actual:
                if c not in seen:
                    seen.append(c)
            actual = seen
        elif op == "arg_change" and actual:
            c = rng.choice(actual)
            c["args"] = _change_a_value(rng, c.get("args") or {})
        elif op == "args_shape" and actual:
            # None, {} and a missing key: missing and None are the same to both sides;
            # {} is not None.
            c = rng.choice(actual)
            shape = rng.choice(["missing", "null", "empty"])
            c.pop("args", None)
            if shape != "missing":
                c["args"] = None if shape == "null" else {}
            tags.add("args_shape_swap")
        elif op == "int_float" and actual:
            c = rng.choice(actual)
            twin, changed = _int_float_twin(c.get("args"))
            if changed:
                c["args"] = twin
                tags.add("int_float_twin")
        elif op == "name_case" and actual:
            c = rng.choice(actual)
            c["name"] = _swap_case(c.get("name"), rng)
            tags.add("name_case")
        elif op == "empty":
            actual = []
        elif op == "swap_adjacent" and len(actual) > 1:
            i = rng.randrange(len(actual) - 1)
            actual[i], actual[i + 1] = actual[i + 1], actual[i]
        elif op == "replace_all":
            actual = [_call(rng) for _ in range(rng.randrange(0, 4))]
    return actual


def _expected_calls(rng: random.Random, tags: set[str]) -> list[dict]:
    n = rng.choices([0, 1, 2, 3, 4, 5], weights=[12, 25, 25, 18, 12, 8])[0]
    calls = [_call(rng) for _ in range(n)]
    if calls and rng.random() < 0.2:
        calls.insert(rng.randrange(len(calls) + 1), copy.deepcopy(rng.choice(calls)))
        tags.add("dup_expected")
    return calls


def _tag_args(calls: list[dict], tags: set[str]) -> None:
    for c in calls:
        if "args" not in c:
            tags.add("args_missing")
        elif c["args"] is None:
            tags.add("args_null")
        elif c["args"] == {}:
            tags.add("args_empty")
        elif _has_nested(c["args"]):
            tags.add("args_nested")


def _has_nested(value: Any, inside_list: bool = False, inside_dict: bool = False) -> bool:
    """A dict inside a list inside a dict."""
    if isinstance(value, dict):
        if inside_list:
            return True
        return any(_has_nested(v, False, True) for v in value.values())
    if isinstance(value, list):
        return any(_has_nested(v, inside_dict, inside_dict) for v in value)
    return False


# --- texts for responses --------------------------------------------------------------


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else ("\u3000" if c == " " else c) for c in text)


def _derive_text(rng: random.Random, reference: str, tags: set[str]) -> str:
    """An actual response derived from the reference: equal, close, or unrelated."""
    op = rng.choice(
        ["same", "shuffle", "drop_words", "stem", "fullwidth", "upper", "decorate", "other", "concat", "chars"]
    )
    words = reference.split()
    if op == "same":
        return reference
    if op == "shuffle":
        rng.shuffle(words)
        return " ".join(words)
    if op == "drop_words" and len(words) > 1:
        return " ".join(w for w in words if rng.random() < 0.6)
    if op == "stem":
        tags.add("stem_variant")
        return " ".join(_STEM_SWAPS.get(w.lower().strip(".,;:!"), w) for w in words)
    if op == "fullwidth":
        tags.add("text_fullwidth")
        return _fullwidth(reference)
    if op == "upper":
        return reference.upper()
    if op == "decorate":
        return rng.choice(["", "OK! ", "✅ "]) + reference + rng.choice(["", " 🙂", "!!", " (done)"])
    if op == "concat":
        return reference + rng.choice([" ", "\n", ""]) + _pick_text(rng, tags)
    if op == "chars" and reference:
        # Character-level damage: matters for scripts tokenised per character or cluster.
        chars = list(reference)
        del chars[rng.randrange(len(chars))]
        return "".join(chars)
    return _pick_text(rng, tags)


def _pick_text(rng: random.Random, tags: set[str]) -> str:
    lang = rng.choice(list(TEXTS))
    tags.add(f"text_{lang}")
    return rng.choice(TEXTS[lang])


# --- ADK JSON shapes ------------------------------------------------------------------

_ABSENT = object()  # leave the key out

_NULL_PART = {
    "video_metadata": None,
    "thought": None,
    "inline_data": None,
    "file_data": None,
    "code_execution_result": None,
    "executable_code": None,
    "function_call": None,
    "function_response": None,
    "text": None,
}


def _key(rng: random.Random, snake: str, camel_bias: float) -> str:
    if rng.random() >= camel_bias:
        return snake
    head, *rest = snake.split("_")
    return head + "".join(w.capitalize() for w in rest)


def _text_part(rng: random.Random, text: str, camel: float) -> dict[str, Any]:
    if rng.random() < 0.15:  # the null-filled dump ADK writes
        part = {_key(rng, k, camel): None for k in _NULL_PART}
        part["text"] = text
        return part
    return {"text": text}


def _final_response(rng: random.Random, text: str | None, camel: float, tags: set[str]) -> Any:
    """A final_response Content for `text`; None means leave final_response out."""
    if text is None:
        return None
    if not text:
        tags.add("text_empty")
    shape = rng.random()
    if shape < 0.6:
        parts = [_text_part(rng, text, camel)]
    elif shape < 0.75 and "\n" not in text and " " in text:
        # Several text parts: both sides join them with newlines.
        i = text.index(" ")
        parts = [_text_part(rng, text[:i], camel), _text_part(rng, text[i + 1 :], camel)]
        tags.add("multi_part")
    elif shape < 0.85:
        # A thought part and a function call ride along; only text counts, thoughts included.
        parts = [
            {"text": text},
            {_key(rng, "function_call", camel): {"name": "noop", "args": {}}},
            {"text": "", "thought": True},
        ]
        tags.add("mixed_parts")
    else:
        parts = [{"text": text}]
    content: dict[str, Any] = {"parts": parts}
    if rng.random() < 0.8:
        content["role"] = "model"
    return content


def _function_call_dict(rng: random.Random, call: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(call)
    if rng.random() < 0.1:
        out.setdefault("id", f"call-{rng.randrange(1000)}")
    return out


def _intermediate(rng: random.Random, calls: list[dict], camel: float, tags: set[str]) -> Any:
    """intermediate_data in one of ADK's two shapes, or None or _ABSENT when there are no calls."""
    shape = rng.choice(["tool_uses", "toolUses", "invocation_events", "invocationEvents"])
    if not calls and rng.random() < 0.25:
        tags.add("intermediate_absent")
        return rng.choice([_ABSENT, None])
    if calls:
        tags.add(f"shape_{shape}")
    if shape in ("tool_uses", "toolUses"):
        data: dict[str, Any] = {shape: [_function_call_dict(rng, c) for c in calls]}
        if calls and rng.random() < 0.3:
            data[_key(rng, "tool_responses", camel)] = [
                {"name": c.get("name"), "response": {"ok": True}} for c in calls
            ]
        return data
    camel_parts = shape == "invocationEvents"
    fc_key = "functionCall" if camel_parts else "function_call"
    fr_key = "functionResponse" if camel_parts else "function_response"
    events: list[dict[str, Any]] = []
    i = 0
    while i < len(calls):
        k = rng.randint(1, min(3, len(calls) - i))  # several calls may share one event
        parts: list[dict[str, Any]] = [{fc_key: _function_call_dict(rng, c)} for c in calls[i : i + k]]
        if rng.random() < 0.3:
            parts.insert(0, {"text": "Let me check."})
        events.append({"author": "agent", "content": {"role": "model", "parts": parts}})
        if rng.random() < 0.5:
            events.append(
                {
                    "author": "agent",
                    "content": {
                        "role": "user",
                        "parts": [{fr_key: {"name": c.get("name"), "response": {"result": 1}}} for c in calls[i : i + k]],
                    },
                }
            )
        if rng.random() < 0.1:
            events.append({"author": "agent", "content": None})
        if rng.random() < 0.1:
            events.append({"author": "agent", "content": {"parts": None}})
        i += k
    return {shape: events}


def _invocation(
    rng: random.Random, inv_id: str, user: str, calls: list[dict], response: str | None, tags: set[str]
) -> dict[str, Any]:
    camel = rng.choice([0.0, 0.0, 0.5, 1.0])  # snake, mixed or camel keys
    inv: dict[str, Any] = {
        _key(rng, "invocation_id", camel): inv_id,
        _key(rng, "user_content", camel): {"role": "user", "parts": [{"text": user}]},
    }
    final = _final_response(rng, response, camel, tags)
    if response is None:
        if rng.random() < 0.5:
            inv[_key(rng, "final_response", camel)] = None
        tags.add("final_missing")
    else:
        if rng.random() < 0.03:
            final = rng.choice([{"parts": []}, {"parts": None, "role": "model"}])
            tags.add("final_no_parts")
        inv[_key(rng, "final_response", camel)] = final
    data = _intermediate(rng, calls, camel, tags)
    if data is not _ABSENT:
        inv[_key(rng, "intermediate_data", camel)] = data
    if rng.random() < 0.3:
        inv[_key(rng, "creation_timestamp", camel)] = 1700000000.0 + rng.randrange(10**6)
    return inv


@dataclass
class Case:
    """One generated case: expected and actual invocations as ADK JSON dicts."""

    eval_id: str
    expected: list[dict[str, Any]]
    actual: list[dict[str, Any]]
    tags: set[str] = field(default_factory=set)


def _case(rng: random.Random, index: int) -> Case:
    tags: set[str] = set()
    n = rng.choices([1, 2, 3, 4], weights=[40, 25, 20, 15])[0]
    tags.add(f"invocations_{n}")
    expected, actual = [], []
    for i in range(n):
        want = _expected_calls(rng, tags)
        got = _mutate_calls(rng, want, tags) if rng.random() < 0.75 else copy.deepcopy(want)
        if not want:
            tags.add("expected_empty")
        if not got:
            tags.add("actual_empty")
        if not want and not got:
            tags.add("both_empty")
        _tag_args(want + got, tags)

        r = rng.random()
        reference: str | None = None if r < 0.05 else _pick_text(rng, tags)
        if reference is None:
            response = None if rng.random() < 0.5 else _pick_text(rng, tags)
        elif rng.random() < 0.06:
            response = None
        else:
            response = _derive_text(rng, reference, tags)
        user = _pick_text(rng, set())
        expected.append(_invocation(rng, f"e{index}-{i}", user, want, reference, tags))
        actual.append(_invocation(rng, f"a{index}-{i}", user, got, response, tags))
    return Case(eval_id=f"case-{index:05d}", expected=expected, actual=actual, tags=tags)


def random_calls(seed: int, count: int) -> list[list[dict[str, Any]]]:
    """`count` reproducible tool-call lists (possibly empty) as ADK FunctionCall dicts."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        calls = _expected_calls(rng, set())
        out.append(_mutate_calls(rng, calls, set()) if rng.random() < 0.5 else calls)
    return out


def intermediate_shapes(calls: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The same calls as intermediate_data in each spelling of ADK's two shapes."""
    return {
        "tool_uses": {"tool_uses": copy.deepcopy(calls)},
        "toolUses": {"toolUses": copy.deepcopy(calls)},
        "invocation_events": {
            "invocation_events": [
                {"author": "agent", "content": {"role": "model", "parts": [{"function_call": copy.deepcopy(c)}]}}
                for c in calls
            ]
        },
        "invocationEvents": {
            "invocationEvents": [
                {"author": "agent", "content": None},
                {
                    "author": "agent",
                    "content": {
                        "role": "model",
                        "parts": [{"text": "thinking"}]
                        + [{"functionCall": copy.deepcopy(c)} for c in calls]
                        + [{"functionResponse": {"name": c.get("name"), "response": {}}} for c in calls],
                    },
                },
            ]
        },
    }


def iter_cases(seed: int) -> Iterator[Case]:
    """An endless, reproducible stream of cases with 1-4 invocations each."""
    rng = random.Random(seed)
    index = 0
    while True:
        yield _case(rng, index)
        index += 1


def generate_cases(seed: int, count: int) -> list[Case]:
    """`count` cases from `iter_cases(seed)`."""
    stream = iter_cases(seed)
    return [next(stream) for _ in range(count)]


def generate_invocations(seed: int, invocations: int) -> list[Case]:
    """Cases totalling exactly `invocations` invocations (the last case is trimmed)."""
    out, total = [], 0
    for case in iter_cases(seed):
        keep = min(len(case.expected), invocations - total)
        out.append(Case(case.eval_id, case.expected[:keep], case.actual[:keep], case.tags))
        total += keep
        if total == invocations:
            return out
    raise AssertionError("unreachable")


# --- the two sides' scorers -----------------------------------------------------------

MATCH_TYPES = ("EXACT", "IN_ORDER", "ANY_ORDER")

# How a match type may be written in config: ADK accepts all of these.
MATCH_TYPE_SPELLINGS: dict[str, tuple[Any, ...]] = {
    "EXACT": ("EXACT", "exact", "Exact", " exact ", 0),
    "IN_ORDER": ("IN_ORDER", "in_order", "In-Order", "in order", 1),
    "ANY_ORDER": ("ANY_ORDER", "any_order", "Any-Order", "ANY ORDER", 2),
}

THRESHOLDS = (0.0, 0.25, 1 / 3, 0.5, 2 / 3, 0.75, 1.0)


@dataclass(frozen=True)
class Spec:
    """One criterion configuration, built the same way on both sides."""

    metric: str  # "tool_trajectory_avg_score" or "response_match_score"
    threshold: float
    match_type: Any = None
    ignore_args: bool = False

    @property
    def label(self) -> str:
        if self.metric == "response_match_score":
            return f"response_match(threshold={self.threshold:.4g})"
        return (
            f"tool_trajectory(match_type={self.match_type!r}, ignore_args={self.ignore_args},"
            f" threshold={self.threshold:.4g})"
        )


def evalgate_criterion(spec: Spec):
    from evalgate.criteria.response_match import ResponseMatch
    from evalgate.criteria.tool_trajectory import ToolTrajectory

    if spec.metric == "response_match_score":
        return ResponseMatch(threshold=spec.threshold)
    return ToolTrajectory(threshold=spec.threshold, match_type=spec.match_type, ignore_args=spec.ignore_args)


def adk_evaluator(spec: Spec):
    from google.adk.evaluation.eval_metrics import EvalMetric, ToolTrajectoryCriterion
    from google.adk.evaluation.final_response_match_v1 import RougeEvaluator
    from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator

    if spec.metric == "response_match_score":
        return RougeEvaluator(EvalMetric(metric_name=spec.metric, threshold=spec.threshold))
    criterion = ToolTrajectoryCriterion(
        threshold=spec.threshold, match_type=spec.match_type, ignore_args=spec.ignore_args
    )
    return TrajectoryEvaluator(eval_metric=EvalMetric(metric_name=spec.metric, criterion=criterion))


def differences(ours, theirs) -> list[str]:
    """How an evalgate CriterionResult differs from an ADK EvaluationResult; [] when equal.

    Scores are compared exactly; statuses by name.
    """
    out = []
    if ours.score != theirs.overall_score:
        out.append(f"score: evalgate {ours.score!r} != ADK {theirs.overall_score!r}")
    if ours.status.name != theirs.overall_eval_status.name:
        out.append(f"status: evalgate {ours.status.name} != ADK {theirs.overall_eval_status.name}")
    if len(ours.per_invocation) != len(theirs.per_invocation_results):
        out.append(
            f"invocations: evalgate {len(ours.per_invocation)} != ADK {len(theirs.per_invocation_results)}"
        )
    for i, (a, b) in enumerate(zip(ours.per_invocation, theirs.per_invocation_results)):
        if a.score != b.score:
            out.append(f"invocation {i} score: evalgate {a.score!r} != ADK {b.score!r}")
        if a.status.name != b.eval_status.name:
            out.append(f"invocation {i} status: evalgate {a.status.name} != ADK {b.eval_status.name}")
    if out and ours.error:  # e.g. a criterion that raised: say why
        out.append(f"evalgate error: {ours.error}")
    return out
