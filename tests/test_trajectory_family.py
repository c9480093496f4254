"""trajectory_precision, trajectory_recall, trajectory_single_tool_use: semantics, config, a run.

Vertex AI computes these remotely (the installed SDK only builds the request), so there is no
local peer to equal. What can be checked against a peer is checked against ADK's own
TrajectoryEvaluator: a score of 1.0 is exactly multiset containment, which is ADK's ANY_ORDER.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import write_json
from evalgate import engine
from evalgate.adk import Invocation
from evalgate.criteria import REGISTRY
from evalgate.criteria.trajectory_overlap import TrajectoryPrecision, TrajectoryRecall, overlap
from evalgate.criteria.trajectory_single_tool_use import TrajectorySingleToolUse
from evalgate.results import Status

FAMILY = ("trajectory_precision", "trajectory_recall", "trajectory_single_tool_use")


def _call(name, args=None):
    return {"name": name, "args": {} if args is None else args}


def _inv(calls, user="q", response="r") -> Invocation:
    return Invocation.model_validate(
        {
            "user_content": {"parts": [{"text": user}]},
            "final_response": {"parts": [{"text": response}]},
            "intermediate_data": {"tool_uses": calls},
        }
    )


F, G, X = _call("f", {"a": 1}), _call("g", {"b": "x"}), _call("x")
SEOUL = _call("get_weather", {"city": "서울", "단위": "섭씨"})
BUSAN = _call("get_weather", {"city": "부산", "단위": "섭씨"})

# (id, ignore_args, actual calls, expected calls, precision, recall)
TABLE = [
    ("identical", False, [F, G], [F, G], 1.0, 1.0),
    ("order-does-not-count", False, [G, F], [F, G], 1.0, 1.0),
    ("one-extra", False, [F, X, G], [F, G], 2 / 3, 1.0),
    ("one-missing", False, [F], [F, G], 1.0, 0.5),
    ("disjoint", False, [X], [F, G], 0.0, 0.0),
    ("repeat-in-actual-counts-once", False, [F, F], [F], 0.5, 1.0),
    ("repeat-in-expected-needs-two", False, [F], [F, F], 1.0, 0.5),
    ("repeats-on-both-sides", False, [F, F, G], [F, F, F], 2 / 3, 2 / 3),
    ("both-empty", False, [], [], 1.0, 1.0),
    ("actual-empty", False, [], [F], 0.0, 0.0),
    ("expected-empty", False, [F], [], 0.0, 0.0),
    ("args-differ", False, [_call("f", {"a": 2})], [F], 0.0, 0.0),
    ("args-differ-ignored", True, [_call("f", {"a": 2})], [F], 1.0, 1.0),
    ("ignore-args-still-counts-repeats", True, [_call("f", {"a": 2}), _call("f", {"a": 3})], [F], 0.5, 1.0),
    ("ignore-args-names-must-match", True, [_call("F", {"a": 1})], [F], 0.0, 0.0),
    ("int-equals-float", False, [_call("f", {"a": 1.0})], [F], 1.0, 1.0),
    ("null-args-differ-from-empty", False, [{"name": "x", "args": None}], [X], 0.0, 0.0),
    ("korean-args", False, [BUSAN, SEOUL], [SEOUL], 0.5, 1.0),
    ("korean-args-ignored", True, [BUSAN, SEOUL], [SEOUL], 0.5, 1.0),
    ("korean-args-key-order", False, [_call("get_weather", {"단위": "섭씨", "city": "서울"})], [SEOUL], 1.0, 1.0),
]


@pytest.mark.parametrize("ignore_args, actual, expected, precision, recall", [t[1:] for t in TABLE], ids=[t[0] for t in TABLE])
def test_precision_and_recall(ignore_args, actual, expected, precision, recall):
    got, want = _inv(actual), _inv(expected)
    p = TrajectoryPrecision(threshold=0.5, ignore_args=ignore_args).score_invocation(got, want)
    r = TrajectoryRecall(threshold=0.5, ignore_args=ignore_args).score_invocation(got, want)
    assert (p.score, r.score) == (pytest.approx(precision), pytest.approx(recall))
    assert p.details["matched"] == r.details["matched"]
    assert (p.details["actual_calls"], p.details["expected_calls"]) == (len(actual), len(expected))


def test_details_name_the_unmatched_calls():
    out = TrajectoryRecall(threshold=1.0).score_invocation(_inv([BUSAN, X]), _inv([SEOUL, X]))
    assert out.details == {
        "matched": 1,
        "actual_calls": 2,
        "expected_calls": 2,
        "unexpected": [{"name": "get_weather", "args": {"city": "부산", "단위": "섭씨"}}],
        "missing": [{"name": "get_weather", "args": {"city": "서울", "단위": "섭씨"}}],
    }
    named = TrajectoryPrecision(threshold=1.0, ignore_args=True).score_invocation(_inv([F, X]), _inv([F]))
    assert named.details["unexpected"] == ["x"] and "missing" not in named.details


def test_overlap_is_the_largest_multiset_matching():
    # Whatever order the calls come in, the matched count is the multiset intersection's size.
    import itertools

    got, want = ["a", "b", "a", "c"], ["a", "a", "a", "b", "d"]
    for perm in itertools.permutations(got):
        matched, extra, missing = overlap(list(perm), want)
        assert matched == 3 and sorted(extra) == ["c"] and sorted(missing) == ["a", "d"]


# (id, tool_name, actual calls per invocation, per-invocation scores)
SINGLE = [
    ("called", "get_weather", [[SEOUL]], [1.0]),
    ("called-twice-still-one", "get_weather", [[SEOUL, BUSAN]], [1.0]),
    ("not-called", "get_weather", [[F, G]], [0.0]),
    ("no-calls", "get_weather", [[]], [0.0]),
    ("name-is-case-sensitive", "Get_Weather", [[SEOUL]], [0.0]),
    ("korean-tool-name", "날씨_조회", [[_call("날씨_조회", {"도시": "서울"})], [F]], [1.0, 0.0]),
    ("args-are-not-read", "f", [[_call("f", {"a": 999})]], [1.0]),
]


@pytest.mark.parametrize("tool_name, turns, scores", [s[1:] for s in SINGLE], ids=[s[0] for s in SINGLE])
def test_single_tool_use(tool_name, turns, scores):
    crit = TrajectorySingleToolUse(threshold=1.0, tool_name=tool_name)
    outcomes = crit.score_invocations([_inv(c) for c in turns], None)
    assert [o.score for o in outcomes] == scores


def test_single_tool_use_needs_no_expected_conversation():
    """The engine scores it on a case without expected turns (a simulated conversation):
    the case score is the share of turns that called the tool."""
    crit = TrajectorySingleToolUse(threshold=0.5, tool_name="get_weather")
    case = engine.CaseInput(eval_set_id="s", eval_id="c", criteria={}, expected_digest="d", expected=None, actual=[_inv([SEOUL]), _inv([])])
    result = engine.score_criterion(crit, case)
    assert (result.score, result.status) == (0.5, Status.PASSED)
    precision = engine.score_criterion(TrajectoryPrecision(threshold=0.5), case)
    assert precision.status is Status.NOT_EVALUATED and "expected conversation" in precision.error


def test_case_score_is_the_mean_over_invocations():
    case = engine.CaseInput(
        eval_set_id="s",
        eval_id="c",
        criteria={},
        expected_digest="d",
        expected=[_inv([F, G]), _inv([SEOUL])],
        actual=[_inv([F]), _inv([SEOUL, BUSAN])],
    )
    p = engine.score_criterion(TrajectoryPrecision(threshold=0.8), case)
    r = engine.score_criterion(TrajectoryRecall(threshold=0.8), case)
    assert (p.score, p.status) == ((1.0 + 0.5) / 2, Status.FAILED)
    assert (r.score, r.status) == ((0.5 + 1.0) / 2, Status.FAILED)
    assert [i.score for i in p.per_invocation] == [1.0, 0.5]


# --- against ADK's ANY_ORDER, on the parity tests' generated cases -------------------------


@pytest.mark.parametrize("ignore_args", [False, True], ids=["args", "ignore_args"])
def test_full_scores_are_adks_any_order(ignore_args):
    """recall == 1 exactly when ADK's ANY_ORDER passes; precision == 1 exactly when ANY_ORDER
    passes with actual and expected swapped. Except where exactly one side is empty: ANY_ORDER
    passes an empty expected list, and here nothing overlaps, so both scores are 0."""
    pytest.importorskip("google.adk")
    from google.adk.evaluation import eval_case as adk_eval_case
    from google.adk.evaluation.eval_metrics import EvalMetric, ToolTrajectoryCriterion
    from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator

    sys.path.insert(0, str(Path(__file__).parent))
    import adk_cases as gen

    criterion = ToolTrajectoryCriterion(threshold=1.0, match_type="ANY_ORDER", ignore_args=ignore_args)
    any_order = TrajectoryEvaluator(eval_metric=EvalMetric(metric_name="tool_trajectory_avg_score", criterion=criterion))
    precision, recall = TrajectoryPrecision(threshold=1.0, ignore_args=ignore_args), TrajectoryRecall(threshold=1.0, ignore_args=ignore_args)
    seen = {"full": 0, "partial": 0, "one_side_empty": 0}
    mismatches = []
    for case in gen.generate_cases(20240613, 300):
        adk_actual = [adk_eval_case.Invocation.model_validate(d) for d in case.actual]
        adk_expected = [adk_eval_case.Invocation.model_validate(d) for d in case.expected]
        forward = any_order.evaluate_invocations(adk_actual, adk_expected).per_invocation_results
        backward = any_order.evaluate_invocations(adk_expected, adk_actual).per_invocation_results
        for i, (a, e) in enumerate(zip(case.actual, case.expected)):
            ours_a, ours_e = Invocation.model_validate(a), Invocation.model_validate(e)
            r = recall.score_invocation(ours_a, ours_e).score
            p = precision.score_invocation(ours_a, ours_e).score
            one_side_empty = bool(ours_a.call_keys) != bool(ours_e.call_keys)
            want_r = forward[i].score == 1.0 and not one_side_empty
            want_p = backward[i].score == 1.0 and not one_side_empty
            if one_side_empty:
                seen["one_side_empty"] += 1
            if (r == 1.0) != want_r or (p == 1.0) != want_p:
                mismatches.append(f"{case.eval_id}[{i}]: precision {p}, recall {r}; ADK any-order {forward[i].score}, swapped {backward[i].score}")
            seen["full" if p == r == 1.0 else "partial"] += 1
    assert not mismatches, "\n".join(mismatches[:20])
    assert min(seen.values()) >= 10, seen  # the comparison saw every kind of outcome


# --- config: names, options, errors ---------------------------------------------------------


def test_registered_under_vertex_names():
    assert {n: REGISTRY[n] for n in FAMILY} == {
        "trajectory_precision": TrajectoryPrecision,
        "trajectory_recall": TrajectoryRecall,
        "trajectory_single_tool_use": TrajectorySingleToolUse,
    }
    for name in FAMILY:
        cls = REGISTRY[name]
        assert not cls.judge and cls.service is None  # local: no service, no extra
        assert (cls.__doc__ or "").strip(), name


def test_options_as_in_adk_syntax():
    from evalgate.config import parse_criteria

    crits = parse_criteria(
        {
            "trajectory_precision": 0.5,
            "trajectory_recall": {"threshold": 0.75, "ignoreArgs": True},
            "trajectory_single_tool_use": {"threshold": 1.0, "tool_name": "날씨_조회"},
        },
        "t.json",
        lambda *loc: ".".join(map(str, loc)),
    )
    assert crits["trajectory_precision"].options() == {"ignore_args": False, "include_intermediate_responses_in_final": False}
    assert crits["trajectory_recall"].ignore_args is True
    assert crits["trajectory_single_tool_use"].options()["tool_name"] == "날씨_조회"


def _project(root: Path, criteria_yaml: str) -> Path:
    """An eval set with Korean tool arguments, its recorded outputs, and a config."""
    expected = {
        "eval_set_id": "weather",
        "eval_cases": [
            {"eval_id": "서울", "conversation": [_raw("서울 날씨 알려줘", "맑음", [SEOUL])]},
            {"eval_id": "두-도시", "conversation": [_raw("서울과 부산 날씨", "둘 다 맑음", [SEOUL, BUSAN]), _raw("고마워", "천만에요", [])]},
            {"eval_id": "잡담", "conversation": [_raw("안녕", "안녕하세요", [])]},
        ],
    }
    actual = {
        "서울": [_raw("서울 날씨 알려줘", "맑음", [SEOUL, SEOUL])],  # a repeated call
        "두-도시": [_raw("서울과 부산 날씨", "둘 다 맑음", [BUSAN]), _raw("고마워", "천만에요", [])],  # one missing
        "잡담": [_raw("안녕", "안녕하세요", [])],
    }
    write_json(root / "evals" / "weather.evalset.json", expected)
    lines = [json.dumps({"eval_set_id": "weather", "eval_id": k, "invocations": v}, ensure_ascii=False) for k, v in actual.items()]
    (root / "runs").mkdir(parents=True, exist_ok=True)
    (root / "runs" / "out.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "evalgate.yaml").write_text(
        "suites:\n  - name: weather\n    evalsets: evals/weather.evalset.json\n    actual: runs/out.jsonl\n    criteria:\n" + criteria_yaml,
        encoding="utf-8",
    )
    return root


def _raw(user, response, calls):
    return {
        "user_content": {"role": "user", "parts": [{"text": user}]},
        "final_response": {"role": "model", "parts": [{"text": response}]},
        "intermediate_data": {"tool_uses": calls},
    }


def test_evalgate_run_scores_the_family(cli, tmp_path):
    root = _project(
        tmp_path,
        "      trajectory_precision: 0.6\n"
        "      trajectory_recall: {threshold: 0.6, ignore_args: true}\n"
        "      trajectory_single_tool_use: {threshold: 0.5, tool_name: get_weather}\n",
    )
    code, out, err = cli("run", "--out", "out", cwd=root)
    results = json.loads((root / "out" / "results.json").read_text(encoding="utf-8"))
    cases = {c["eval_id"]: c for s in results["suites"] for c in s["cases"]}
    scores = {eid: {n: c["criteria"][n]["score"] for n in FAMILY} for eid, c in cases.items()}
    assert scores == {
        # [서울, 서울] against [서울]: the second call is unmatched.
        "서울": {"trajectory_precision": 0.5, "trajectory_recall": 1.0, "trajectory_single_tool_use": 1.0},
        # turn 1: [부산] against [서울, 부산]; turn 2: no calls either side.
        "두-도시": {"trajectory_precision": 1.0, "trajectory_recall": 0.75, "trajectory_single_tool_use": 0.5},
        "잡담": {"trajectory_precision": 1.0, "trajectory_recall": 1.0, "trajectory_single_tool_use": 0.0},
    }
    statuses = {eid: c["status"] for eid, c in cases.items()}
    assert statuses == {"서울": "FAILED", "두-도시": "PASSED", "잡담": "FAILED"}
    assert code == 1, (out, err)
    assert cases["서울"]["criteria"]["trajectory_precision"]["per_invocation"][0]["details"]["unexpected"] == [
        {"name": "get_weather", "args": {"city": "서울", "단위": "섭씨"}}
    ]


@pytest.mark.parametrize(
    "criteria_yaml, message",
    [
        ("      trajectory_single_tool_use: 0.5\n", "criteria.trajectory_single_tool_use (line 6): field required. Add 'tool_name'."),
        ("      trajectory_single_tool_use: {threshold: 1.0, tool_name: '  '}\n", "tool_name is empty"),
        ("      trajectory_single_tool_use: {threshold: 1.0, tool_name: f, ignore_args: true}\n", "unknown option 'ignore_args' for trajectory_single_tool_use"),
        ("      trajectory_precision: {threshold: 1.0, match_type: IN_ORDER}\n", "unknown option 'match_type' for trajectory_precision"),
        ("      trajectory_precison: 1.0\n", "Did you mean 'trajectory_precision'?"),
    ],
    ids=["tool-name-missing", "tool-name-blank", "single-has-no-ignore-args", "no-match-type", "typo"],
)
def test_bad_options_are_config_errors(cli, tmp_path, criteria_yaml, message):
    root = _project(tmp_path, criteria_yaml)
    code, out, err = cli("validate", cwd=root)
    assert code == 2 and "Traceback" not in err
    assert "evalgate.yaml" in err and message in err, err
