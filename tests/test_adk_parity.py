"""evalgate's tool_trajectory_avg_score and response_match_score equal ADK 2.13's, exactly.

Generated cases are validated by ADK's models and by ours from the same dicts, then scored
by ADK's evaluators and by evalgate's engine; scores must be equal (==) and statuses the
same, per invocation and per case. Hand-written tables pin down the semantics.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("google.adk")

from google.adk.evaluation import eval_case as adk_eval_case  # noqa: E402

from evalgate import adk  # noqa: E402
from evalgate.criteria.base import Outcome  # noqa: E402
from evalgate.criteria.response_match import ResponseMatch  # noqa: E402
from evalgate.criteria.tool_trajectory import ToolTrajectory  # noqa: E402
from evalgate.engine import CaseInput, aggregate, score_criterion  # noqa: E402
from evalgate.results import Status  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
import adk_cases as gen  # noqa: E402

SEED = 20240613
N_CASES = 600


class Pair:
    """One generated case validated by both sides."""

    def __init__(self, case: gen.Case):
        self.case = case
        self.adk_expected = [adk_eval_case.Invocation.model_validate(d) for d in case.expected]
        self.adk_actual = [adk_eval_case.Invocation.model_validate(d) for d in case.actual]
        self.ours = CaseInput(
            eval_set_id="parity",
            eval_id=case.eval_id,
            criteria={},
            expected_digest="",
            expected=[adk.Invocation.model_validate(d) for d in case.expected],
            actual=[adk.Invocation.model_validate(d) for d in case.actual],
        )


@pytest.fixture(scope="module")
def pairs() -> list[Pair]:
    return [Pair(c) for c in gen.generate_cases(SEED, N_CASES)]


def _report(mismatches: dict[str, list[str]], pairs: list[Pair]) -> str:
    by_id = {p.case.eval_id: p.case for p in pairs}
    lines = [f"{len(mismatches)} of {len(pairs)} cases differ from ADK:"]
    for eval_id, problems in sorted(mismatches.items()):
        case = by_id[eval_id]
        lines.append(f"\n{eval_id}:")
        lines.extend(f"  {p}" for p in problems)
        lines.append("  expected: " + json.dumps(case.expected, ensure_ascii=False, sort_keys=True))
        lines.append("  actual:   " + json.dumps(case.actual, ensure_ascii=False, sort_keys=True))
    return "\n".join(lines)


def _compare(specs_for, pairs: list[Pair]) -> dict[str, list[str]]:
    ours_cache: dict = {}
    adk_cache: dict = {}
    mismatches: dict[str, list[str]] = {}
    for index, pair in enumerate(pairs):
        for spec in specs_for(index):
            if spec not in ours_cache:
                ours_cache[spec] = gen.evalgate_criterion(spec)
                adk_cache[spec] = gen.adk_evaluator(spec)
            ours = score_criterion(ours_cache[spec], pair.ours)
            try:
                theirs = adk_cache[spec].evaluate_invocations(pair.adk_actual, pair.adk_expected)
            except Exception as e:  # ADK failing where we score is a difference too
                problems = [f"ADK raised {type(e).__name__}: {e}"]
            else:
                problems = gen.differences(ours, theirs)
            if problems:
                mismatches.setdefault(pair.case.eval_id, []).extend(f"{spec.label}: {p}" for p in problems)
    return mismatches


# --- the generator covers what the parity tests claim ---------------------------------

REQUIRED_TAGS = {
    "invocations_1", "invocations_2", "invocations_3", "invocations_4",
    "expected_empty", "actual_empty", "both_empty", "dup_expected", "dup_actual",
    "args_missing", "args_null", "args_empty", "args_nested", "args_shape_swap", "int_float_twin",
    "name_case",
    "shape_tool_uses", "shape_toolUses", "shape_invocation_events", "shape_invocationEvents",
    "intermediate_absent",
    "text_en", "text_ko", "text_ja", "text_zh", "text_th", "text_mixed", "text_fullwidth",
    "text_punct", "text_emoji", "text_other", "text_empty", "stem_variant",
    "final_missing", "final_no_parts", "multi_part", "mixed_parts",
}  # fmt: skip


def test_generator_covers_the_edge_cases(pairs):
    counts = {tag: sum(tag in p.case.tags for p in pairs) for tag in REQUIRED_TAGS}
    rare = {tag: n for tag, n in counts.items() if n < 10}
    assert not rare, f"edge cases generated fewer than 10 times: {rare}"
    assert len(pairs) >= 300


def test_generator_is_reproducible():
    a, b = gen.generate_cases(7, 20), gen.generate_cases(7, 20)
    assert [(c.expected, c.actual) for c in a] == [(c.expected, c.actual) for c in b]


# --- parity with ADK's evaluators -----------------------------------------------------


@pytest.mark.parametrize("ignore_args", [False, True], ids=["args", "ignore_args"])
@pytest.mark.parametrize("match_type", gen.MATCH_TYPES)
def test_tool_trajectory_equals_adk(pairs, match_type, ignore_args):
    spellings = gen.MATCH_TYPE_SPELLINGS[match_type]

    def specs(index):
        spelling = spellings[index % len(spellings)]  # every spelling, over the cases
        return [gen.Spec("tool_trajectory_avg_score", t, spelling, ignore_args) for t in gen.THRESHOLDS]

    mismatches = _compare(specs, pairs)
    assert not mismatches, _report(mismatches, pairs)


def test_response_match_equals_adk(pairs):
    def specs(index):
        return [gen.Spec("response_match_score", t) for t in gen.THRESHOLDS]

    mismatches = _compare(specs, pairs)
    assert not mismatches, _report(mismatches, pairs)


def test_parity_tests_can_fail(pairs):
    """The comparison sees a difference when there is one."""
    pair = pairs[0]
    spec = gen.Spec("response_match_score", 0.5)
    ours = score_criterion(gen.evalgate_criterion(spec), pair.ours)
    theirs = gen.adk_evaluator(spec).evaluate_invocations(pair.adk_actual, pair.adk_expected)
    assert gen.differences(ours, theirs) == []
    assert gen.differences(ours.model_copy(update={"score": ours.score + 1e-12}), theirs)
    flipped = Status.FAILED if ours.status is Status.PASSED else Status.PASSED
    assert gen.differences(ours.model_copy(update={"status": flipped}), theirs)


@pytest.mark.parametrize("spelling", [s for m in gen.MATCH_TYPES for s in gen.MATCH_TYPE_SPELLINGS[m]])
def test_match_type_spellings_read_as_adk_reads_them(spelling):
    ours = gen.evalgate_criterion(gen.Spec("tool_trajectory_avg_score", 1.0, spelling)).match_type
    theirs = gen.adk_evaluator(gen.Spec("tool_trajectory_avg_score", 1.0, spelling))._match_type
    assert ours.name == theirs.name


@pytest.mark.parametrize("metric", ["tool_trajectory_avg_score", "response_match_score"])
def test_no_invocations_is_not_evaluated_on_both_sides(metric):
    spec = gen.Spec(metric, 0.5, "EXACT")
    ours = score_criterion(
        gen.evalgate_criterion(spec),
        CaseInput(eval_set_id="s", eval_id="c", criteria={}, expected_digest="", expected=[], actual=[]),
    )
    theirs = gen.adk_evaluator(spec).evaluate_invocations([], [])
    assert gen.differences(ours, theirs) == []
    assert ours.status is Status.NOT_EVALUATED and ours.score is None


# --- both shapes of intermediate data -------------------------------------------------


def test_both_intermediate_shapes_yield_the_same_calls():
    def calls_of(model) -> list[tuple]:
        return [(c.name, c.args) for c in model]

    checked = 0
    for calls in gen.random_calls(SEED, 200):
        want = [(c.get("name"), c.get("args")) for c in calls]
        for shape, data in gen.intermediate_shapes(calls).items():
            d = {"user_content": {"parts": [{"text": "hi"}]}, "intermediate_data": data}
            ours = adk.Invocation.model_validate(d)
            theirs = adk_eval_case.Invocation.model_validate(d)
            assert calls_of(ours.tool_calls()) == want, shape
            assert calls_of(adk_eval_case.get_all_tool_calls(theirs.intermediate_data)) == want, shape
            checked += bool(calls)
    assert checked > 400


def test_intermediate_shapes_are_told_apart():
    call = {"name": "f", "args": {"a": 1}}
    shapes = gen.intermediate_shapes([call])
    kinds = {
        name: type(adk.Invocation.model_validate({"userContent": {}, "intermediateData": d}).intermediate_data)
        for name, d in shapes.items()
    }
    assert kinds == {
        "tool_uses": adk.IntermediateData,
        "toolUses": adk.IntermediateData,
        "invocation_events": adk.InvocationEvents,
        "invocationEvents": adk.InvocationEvents,
    }


# --- semantics, by hand ----------------------------------------------------------------


def _call(name, args=...):
    return {"name": name} if args is ... else {"name": name, "args": args}


F = _call("f", {"a": 1})
G = _call("g", {"q": "x"})
X = _call("x")

# (id, match_type, ignore_args, expected calls, actual calls, score)
TRAJECTORY_TABLE = [
    ("exact-equal", "EXACT", False, [F, G], [F, G], 1.0),
    ("exact-both-empty", "EXACT", False, [], [], 1.0),
    ("exact-empty-expected-needs-empty-actual", "EXACT", False, [], [F], 0.0),
    ("exact-extra-call", "EXACT", False, [F, G], [F, X, G], 0.0),
    ("exact-missing-call", "EXACT", False, [F, G], [F], 0.0),
    ("exact-order-matters", "EXACT", False, [F, G], [G, F], 0.0),
    ("in-order-empty-expected", "IN_ORDER", False, [], [F], 1.0),
    ("in-order-empty-actual", "IN_ORDER", False, [F], [], 0.0),
    ("in-order-extras-between", "IN_ORDER", False, [F, G], [X, F, X, G, X], 1.0),
    ("in-order-wrong-order", "IN_ORDER", False, [F, G], [G, F], 0.0),
    ("in-order-duplicate-needs-two", "IN_ORDER", False, [F, F], [F, G], 0.0),
    ("any-order-empty-expected", "ANY_ORDER", False, [], [], 1.0),
    ("any-order-reordered", "ANY_ORDER", False, [F, G], [G, X, F], 1.0),
    ("any-order-duplicate-needs-two-distinct", "ANY_ORDER", False, [F, F], [F, G], 0.0),
    ("any-order-duplicate-with-two", "ANY_ORDER", False, [F, F, G], [G, F, X, F], 1.0),
    ("any-order-missing", "ANY_ORDER", False, [F, G], [F, X], 0.0),
    ("int-equals-float", "EXACT", False, [_call("f", {"a": 1})], [_call("f", {"a": 1.0})], 1.0),
    ("nested-int-equals-float", "EXACT", False,
     [_call("f", {"p": [{"q": [1, {"r": 2}]}]})], [_call("f", {"p": [{"q": [1.0, {"r": 2.0}]}]})], 1.0),
    ("nested-differs", "EXACT", False,
     [_call("f", {"p": [{"q": [1, {"r": 2}]}]})], [_call("f", {"p": [{"q": [1, {"r": 3}]}]})], 0.0),
    ("key-order-irrelevant", "EXACT", False, [_call("f", {"a": 1, "b": 2})], [_call("f", {"b": 2, "a": 1})], 1.0),
    ("list-order-matters", "EXACT", False, [_call("f", {"a": [1, 2]})], [_call("f", {"a": [2, 1]})], 0.0),
    ("string-is-not-number", "EXACT", False, [_call("f", {"a": 1})], [_call("f", {"a": "1"})], 0.0),
    ("true-equals-1-as-in-python", "EXACT", False, [_call("f", {"a": 1})], [_call("f", {"a": True})], 1.0),
    ("null-args-differ-from-empty", "EXACT", False, [_call("f", None)], [_call("f", {})], 0.0),
    ("missing-args-equal-null", "EXACT", False, [_call("f")], [_call("f", None)], 1.0),
    ("ignore-args-null-vs-empty", "EXACT", True, [_call("f", None)], [_call("f", {})], 1.0),
    ("ignore-args-different-args", "ANY_ORDER", True, [_call("f", {"a": 1})], [_call("f", {"a": 2})], 1.0),
    ("name-case-matters", "EXACT", False, [_call("get_weather")], [_call("Get_Weather")], 0.0),
    ("name-case-matters-ignoring-args", "IN_ORDER", True, [_call("get_weather")], [_call("GET_WEATHER")], 0.0),
]  # fmt: skip


def _tool_invocation(calls: list[dict], text: str | None = None) -> dict:
    d: dict = {"user_content": {"parts": [{"text": "q"}]}, "intermediate_data": {"tool_uses": calls}}
    if text is not None:
        d["final_response"] = {"parts": [{"text": text}]}
    return d


def _ours(criterion, expected: dict, actual: dict):
    case = CaseInput(
        eval_set_id="s",
        eval_id="c",
        criteria={},
        expected_digest="",
        expected=[adk.Invocation.model_validate(expected)],
        actual=[adk.Invocation.model_validate(actual)],
    )
    return score_criterion(criterion, case)


def _theirs(spec: gen.Spec, expected: dict, actual: dict):
    return gen.adk_evaluator(spec).evaluate_invocations(
        [adk_eval_case.Invocation.model_validate(actual)], [adk_eval_case.Invocation.model_validate(expected)]
    )


@pytest.mark.parametrize(
    "match_type, ignore_args, expected, actual, score", [r[1:] for r in TRAJECTORY_TABLE], ids=[r[0] for r in TRAJECTORY_TABLE]
)
def test_tool_trajectory_semantics(match_type, ignore_args, expected, actual, score):
    crit = ToolTrajectory(threshold=1.0, match_type=match_type, ignore_args=ignore_args)
    result = _ours(crit, _tool_invocation(expected), _tool_invocation(actual))
    assert result.score == score
    assert result.status is (Status.PASSED if score == 1.0 else Status.FAILED)


@pytest.mark.parametrize(
    "match_type, ignore_args, expected, actual, score", [r[1:] for r in TRAJECTORY_TABLE], ids=[r[0] for r in TRAJECTORY_TABLE]
)
def test_tool_trajectory_table_is_adks(match_type, ignore_args, expected, actual, score):
    spec = gen.Spec("tool_trajectory_avg_score", 1.0, match_type, ignore_args)
    assert _theirs(spec, _tool_invocation(expected), _tool_invocation(actual)).overall_score == score


def _f(overlap: int, n_ref: int, n_cand: int) -> float:
    """ROUGE-1 F-measure as rouge-score computes it from counts."""
    p, r = overlap / max(n_cand, 1), overlap / max(n_ref, 1)
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


# (id, reference, candidate, F-measure); None means no final_response at all.
RESPONSE_TABLE = [
    ("identical", "The weather is sunny.", "The weather is sunny.", 1.0),
    ("stemmed-running-runs", "running", "runs", 1.0),  # both stem to "run"
    ("short-words-unstemmed", "ran", "running", 0.0),  # "ran" has 3 letters: not stemmed
    ("partial-english", "the cat sat", "the cat", _f(2, 3, 2)),
    ("case-and-punctuation", "Hello, World!", "hello world", 1.0),
    ("both-empty", "", "", 0.0),
    ("punctuation-only", "!!! ...", "!!! ...", 0.0),
    ("missing-final-response", "answer", None, 0.0),
    ("fullwidth-is-nfkc-ascii", "ＡＢＣ１２３ Ｒｕｎｎｉｎｇ", "abc123 running", 1.0),
    ("halfwidth-katakana", "ｶﾀｶﾅ", "カタカナ", 1.0),
    ("han-per-character", "東京", "京東", 1.0),
    ("hangul-per-syllable", "서울 날씨", "서울의 날씨", _f(4, 4, 5)),
    ("chinese-partial", "今天天气很好", "今天很好", _f(4, 6, 4)),  # 今 天 天 气 很 好 vs 今 天 很 好
    ("thai-clusters", "ข้าว", "ขาว", _f(2, 3, 3)),  # ข้ า ว vs ข า ว
    ("thai-same", "ฉันกินข้าวแล้ว", "ฉันกินข้าวแล้ว", 1.0),
    ("mixed-scripts", "flight KE123 東京", "KE123 東京 flight", 1.0),
    ("emoji-only", "👍 🎉", "👍 🎉", 0.0),
    ("variation-selector-is-a-mark", "❤️", "❤️", 1.0),  # U+FE0F is category Mn: a token
    ("cyrillic-words", "Привет мир", "привет", _f(1, 2, 1)),
]


@pytest.mark.parametrize("reference, candidate, f", [r[1:] for r in RESPONSE_TABLE], ids=[r[0] for r in RESPONSE_TABLE])
def test_response_match_semantics(reference, candidate, f):
    result = _ours(ResponseMatch(threshold=0.5), _tool_invocation([], reference), _tool_invocation([], candidate))
    assert result.score == f


@pytest.mark.parametrize("reference, candidate, f", [r[1:] for r in RESPONSE_TABLE], ids=[r[0] for r in RESPONSE_TABLE])
def test_response_match_table_is_adks(reference, candidate, f):
    spec = gen.Spec("response_match_score", 0.5)
    assert _theirs(spec, _tool_invocation([], reference), _tool_invocation([], candidate)).overall_score == f


def test_case_score_is_adks_running_sum():
    """ADK sums invocation scores left to right in floats; the mean must be that same float.

    Python 3.12's sum() is compensated and gives 0.6 for [0.1, 0.2, 0.3] where the running
    sum gives 0.6000000000000001, which moves the mean across a 0.2 threshold.
    """
    scores = [0.1, 0.2, 0.3]
    total = 0.0
    for s in scores:
        total += s
    result = aggregate([Outcome(s) for s in scores], threshold=0.2)
    assert result.score == total / 3 == 0.20000000000000004
    assert result.status is Status.PASSED


def test_response_match_mean_over_invocations_is_adks():
    """Scores 1.0, 1/3, 1.0: the running sum gives ...777, a compensated sum ...778."""
    texts = [("alpha", "alpha"), ("alpha beta", "alpha x0 x1 x2"), ("alpha", "alpha")]
    expected = [_tool_invocation([], ref) for ref, _ in texts]
    actual = [_tool_invocation([], cand) for _, cand in texts]
    threshold = 0.7777777777777778
    ours = score_criterion(
        ResponseMatch(threshold=threshold),
        CaseInput(
            eval_set_id="s",
            eval_id="c",
            criteria={},
            expected_digest="",
            expected=[adk.Invocation.model_validate(d) for d in expected],
            actual=[adk.Invocation.model_validate(d) for d in actual],
        ),
    )
    theirs = gen.adk_evaluator(gen.Spec("response_match_score", threshold)).evaluate_invocations(
        [adk_eval_case.Invocation.model_validate(d) for d in actual],
        [adk_eval_case.Invocation.model_validate(d) for d in expected],
    )
    assert [p.score for p in ours.per_invocation] == [1.0, 1 / 3, 1.0]
    assert theirs.overall_score == 0.7777777777777777
    assert ours.score == 0.7777777777777777
    assert ours.status is Status.FAILED


def test_tokens_equal_adks_tokenizer_and_fast_counts():
    """tokenize() equals ADK's tokenizer, and the fast counting path counts the same tokens."""
    import random
    from collections import Counter

    from google.adk.evaluation.final_response_match_v1 import _UnicodeAwareTokenizer

    from evalgate.criteria.response_match import _token_counts, tokenize

    adk = _UnicodeAwareTokenizer(use_stemmer=True)
    rng = random.Random(7)
    texts = [gen._pick_text(rng, set()) for _ in range(2000)]
    texts += ["東京タワー ＡＢＣ running", "ข้าว กับ ขาว", "서울 Seoul 東京", "", "!!!", "ﬁne café İstanbul"]
    for text in texts:
        assert tokenize(text) == adk.tokenize(text), text
        assert _token_counts(text) == Counter(tokenize(text)), text


def test_stemmer_loaded_without_nltks_init_stems_as_rouge_score():
    """The ASCII tokenizer loads nltk's Porter stemmer without nltk's package init (seconds
    of scipy), leaves no half-initialised nltk behind, and stems as rouge-score does."""
    import subprocess

    code = (
        "import json, random, sys\n"
        "from evalgate.criteria.response_match import _ascii_tokenizer\n"
        "tokenize = _ascii_tokenizer()\n"
        "left = sorted(m for m in sys.modules if m.split('.')[0] in ('nltk', 'scipy'))\n"
        "rng = random.Random(5)\n"
        "words = ['running', 'runs', 'generously', 'relational', 'conditional', 'hopefully', 'caresses', 'ponies',\n"
        "         'sensibility', 'agreed', 'feed', 'plastered', 'motoring', 'happy', 'electrical', 'a1b2c3', 'ies', 'x']\n"
        "words += [''.join(rng.choice('bcdfghklmnprstvwaeiouy') for _ in range(rng.randint(1, 12)))\n"
        "          + rng.choice(['', 's', 'ing', 'ed', 'ly', 'ational', 'ization', 'ness', 'ful', 'ement']) for _ in range(20000)]\n"
        "ours = [tokenize(w) for w in words]\n"
        "from rouge_score import tokenizers\n"  # the ordinary way: all of nltk
        "theirs = [tokenizers.DefaultTokenizer(use_stemmer=True).tokenize(w) for w in words]\n"
        "print(json.dumps({'left': left, 'differ': [w for w, a, b in zip(words, ours, theirs) if a != b]}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == {"left": [], "differ": []}
