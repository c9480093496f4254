"""Sequential sampling (`judge.early_stop`): for every sequence of sample answers, the early-stopped
outcome is the full vote's, what the gate's ledger reads of it (every sample failed; a majority
of samples passed) is what it reads of full sampling, and it stops where drawing one sample at a
time would (or draws them all, once every sample so far failed)."""

from __future__ import annotations

import itertools
import json

import pytest

from evalgate.criteria.final_response_match_v2 import FinalResponseMatchV2
from evalgate.criteria.hallucinations import Hallucinations
from evalgate.criteria.judging import decided, next_round
from evalgate.criteria.per_turn_user_simulator import PerTurnUserSimulatorQuality
from evalgate.criteria.rubric_final_response import RubricFinalResponseQuality
from evalgate.judge.request import JudgeReply
from test_judge_criteria import KOREAN, JAPANESE, F, I, ScriptedJudge, V, by_sample, frm_reply, inv, rubric

N_MAX = 5  # num_samples up to ADK's default


def frm_outcome(labels: tuple, early_stop: bool):
    judge = ScriptedJudge(by_sample([frm_reply(x) for x in labels]), early_stop=early_stop)
    crit = FinalResponseMatchV2(threshold=THRESHOLD, judge_model_options={"num_samples": len(labels)}).bind(judge)
    outcome = crit.score_invocation(inv(user=KOREAN, final=JAPANESE), inv(user=KOREAN, final=JAPANESE))
    return outcome, sorted(r.sample for r in judge.requests)


def reference_vote(votes: list) -> float | None:
    """The full vote spelled out: NOT_EVALUATED (None) unless more than half of the samples
    answered; then valid when more said valid than invalid (a tie is invalid)."""
    usable = [v for v in votes if v is not None]
    if 2 * len(usable) <= len(votes):
        return None
    return 1.0 if sum(usable) * 2 > len(usable) else 0.0


THRESHOLD = 0.5


def stopping_point(n: int, ballots: list) -> int:
    """Where drawing one sample at a time stops: the first prefix that decides the vote."""
    return next(m for m in range(n + 1) if decided(n, ballots[:m], THRESHOLD))


def ledger_reads(samples: list) -> tuple[bool, bool] | None:
    """What the gate's ledger reads of a case's samples (evalgate.gate.values.outcome): whether
    every sample failed (a stable case broke), whether more than half passed (stays stable)."""
    usable = [s for s in samples if s is not None]
    if not usable:
        return None
    passed = sum(s >= THRESHOLD for s in usable)
    return passed == 0, passed * 2 > len(usable)


@pytest.mark.parametrize("n", range(1, N_MAX + 1))
def test_final_response_match_early_stop_equals_the_full_vote_for_every_sequence(n):
    stopped_early = 0
    for labels in itertools.product((V, I, F), repeat=n):
        full, asked_full = frm_outcome(labels, early_stop=False)
        early, asked = frm_outcome(labels, early_stop=True)
        votes = [None if x is F else x == V for x in labels]
        assert asked_full == list(range(n))
        assert full.score == reference_vote(votes), labels  # the full vote is the rule we think it is
        assert early.score == full.score, labels  # the same verdict, or NOT_EVALUATED for both
        assert (early.error is None) == (full.error is None), labels
        m = len(asked)
        assert asked == list(range(m)), labels  # a prefix of the sample indices: the cache serves a rerun
        # Rounds stop where one at a time would, or draw all the rest once every sample failed.
        assert m in (stopping_point(n, [None if v is None else [v] for v in votes]), n), labels
        assert early.details["samples"] == full.details["samples"][:m]
        if full.score is not None:  # the ledger reads the same: broken, and stable, exactly as with every sample
            assert ledger_reads(early.details["samples"]) == ledger_reads(full.details["samples"]), labels
        assert early.details["reasons"] == full.details["reasons"][:m]
        stopped_early += m < n
    assert stopped_early > 0 or n == 1  # with one sample nothing can be saved


# A rubric sample: a verdict per rubric ("a", "b"), or None for a reply that cannot be read.
RUBRIC_SAMPLES = [{"a": 1, "b": 1}, {"a": 1, "b": 0}, {"a": 0, "b": 1}, {"a": 0, "b": 0}, None]


def rubric_reply(sample) -> JudgeReply:
    if sample is None:
        return JudgeReply(text="판정: 예")  # not JSON: a failed sample
    return JudgeReply(text=json.dumps({"verdicts": [
        {"rubric_id": rid, "rationale": f"{rid}: {'満たす' if v else '満たさない'}", "verdict": "yes" if v else "no"}
        for rid, v in sample.items()]}, ensure_ascii=False))


def rubric_outcome(samples: tuple, early_stop: bool):
    judge = ScriptedJudge(by_sample([rubric_reply(s) for s in samples]), early_stop=early_stop)
    crit = RubricFinalResponseQuality(
        threshold=THRESHOLD, judge_model_options={"num_samples": len(samples)},
        rubrics=[rubric("a", "답이 정확하다."), rubric("b", "質問の言語で答える。")],
    ).bind(judge)
    outcome = crit.score_invocation(inv(user=KOREAN, final=KOREAN), None)
    return outcome, sorted(r.sample for r in judge.requests)


@pytest.mark.parametrize("n", range(1, N_MAX + 1))
def test_rubric_early_stop_decides_every_rubric_as_the_full_vote_for_every_sequence(n):
    stopped_early = 0
    for samples in itertools.product(RUBRIC_SAMPLES, repeat=n):
        full, _ = rubric_outcome(samples, early_stop=False)
        early, asked = rubric_outcome(samples, early_stop=True)
        for rid in ("a", "b"):  # each rubric's full vote, spelled out
            expected = reference_vote([None if s is None else bool(s[rid]) for s in samples])
            got = None if full.score is None else next(r["verdict"] for r in full.details["rubrics"] if r["rubric_id"] == rid)
            assert got == (None if expected is None else ("yes" if expected else "no")), samples
        assert early.score == full.score, samples
        assert (early.error is None) == (full.error is None), samples
        if full.score is not None:  # every rubric's verdict, and the rationale of its first agreeing sample
            assert [(r["rubric_id"], r["verdict"], r["rationale"]) for r in early.details["rubrics"]] == \
                   [(r["rubric_id"], r["verdict"], r["rationale"]) for r in full.details["rubrics"]], samples
        m = len(asked)
        assert asked == list(range(m))
        ballots = [None if s is None else [bool(s["a"]), bool(s["b"])] for s in samples]
        assert m in (stopping_point(n, ballots), n), samples
        assert early.details["samples"] == full.details["samples"][:m]
        if full.score is not None:  # a rubric case breaks (every sample below the threshold) exactly as with every sample
            assert ledger_reads(early.details["samples"])[0] == ledger_reads(full.details["samples"])[0], samples
        stopped_early += m < n
    assert stopped_early > 0 or n == 1


# ADK's aggregators vote over whatever samples scored (a failed sample does not vote); ours
# first asks for a quorum. Where a quorum is met, the early-stopped score is ADK's full one.
@pytest.mark.filterwarnings("ignore::UserWarning")  # ADK marks its judges experimental
@pytest.mark.parametrize("n", range(1, N_MAX + 1))
def test_early_stopped_verdicts_equal_adks_full_aggregation(n):
    pytest.importorskip("google.adk")
    from google.adk.evaluation.eval_case import Invocation as AdkInvocation
    from google.adk.evaluation.eval_metrics import EvalMetric, LlmAsAJudgeCriterion
    from google.adk.evaluation.eval_rubrics import RubricScore
    from google.adk.evaluation.evaluator import PerInvocationResult
    from google.adk.evaluation.final_response_match_v2 import FinalResponseMatchV2Evaluator
    from google.adk.evaluation.rubric_based_evaluator import MajorityVotePerInvocationResultsAggregator

    adk_inv = AdkInvocation.model_validate({"user_content": {"parts": [{"text": KOREAN}]}})
    evaluator = FinalResponseMatchV2Evaluator(
        EvalMetric(metric_name="final_response_match_v2", criterion=LlmAsAJudgeCriterion(threshold=0.5)))
    compared = 0
    for labels in itertools.product((V, I, F), repeat=n):
        early, _ = frm_outcome(labels, early_stop=True)
        if early.score is None:
            continue
        samples = [PerInvocationResult(actual_invocation=adk_inv, score=None if x is F else float(x == V)) for x in labels]
        assert evaluator.aggregate_per_invocation_samples(samples).score == early.score, labels
        compared += 1
    aggregator = MajorityVotePerInvocationResultsAggregator()
    for samples in itertools.product(RUBRIC_SAMPLES, repeat=n):
        early, _ = rubric_outcome(samples, early_stop=True)
        if early.score is None:
            continue
        per_sample = [
            PerInvocationResult(actual_invocation=adk_inv,
                                rubric_scores=[RubricScore(rubric_id=k, score=float(v)) for k, v in s.items()])
            for s in samples if s is not None
        ]
        adk = aggregator.aggregate(per_sample, 0.5)
        assert adk.score == early.score, samples
        assert {r.rubric_id: r.score for r in adk.rubric_scores} == \
               {r["rubric_id"]: float(r["verdict"] == "yes") for r in early.details["rubrics"]}, samples
        compared += 1
    assert compared > 0


@pytest.mark.parametrize(
    "n, ballots, decided_, next_",
    [
        (5, [], False, 3),  # a majority of 5 needs 3 agreeing samples
        (5, [[True]] * 3, True, 0),
        (5, [[True], [False], [True]], False, 1),  # 2-1: one more agreeing sample decides
        (5, [[True], [False], [True], [False]], False, 1),
        (5, [None, None, None], True, 0),  # 3 of 5 failed: no quorum, whatever the rest say
        (5, [[True], [True], None], False, 1),  # 2 usable of 5: a quorum needs one more answer
        (4, [], False, 2),  # 2 failures of 4 already leave no quorum: fewer could not decide, so 2 first
        (4, [[False], [False]], False, 1),  # 2 "invalid" of 4 are no quorum yet; a third decides
        (4, [[False], [False], [False]], True, 0),
        (1, [], False, 1),
        (3, [[True, False], [True, True]], False, 1),  # rubric b still open
    ],
)
def test_decided_and_next_round(n, ballots, decided_, next_):
    assert decided(n, ballots) is decided_
    if not decided_:
        assert next_round(n, ballots) == next_


@pytest.mark.parametrize(
    "n, ballots, decided_, next_",
    [
        (5, [[False]] * 3, False, 2),  # 3 of 5 invalid decide the verdict, not whether all 5 fail: draw the rest
        (5, [[False], [True], [False]], False, 1),  # one passed: the case did not break; the vote decides
        (5, [[False], [False], [False], [True]], True, 0),
        (5, [[True, False], [False, False], [True, False]], False, 2),  # rubric samples scoring 0.5 < 0.8
        (5, [None, None, None], True, 0),  # no quorum: nothing to read
    ],
)
def test_samples_that_all_failed_are_drawn_to_the_end(n, ballots, decided_, next_):
    assert decided(n, ballots, 0.8) is decided_
    if not decided_:
        assert next_round(n, ballots, 0.8) == next_


def test_per_turn_user_simulator_stops_early_too():
    judge = ScriptedJudge(lambda r: frm_reply(V), early_stop=True)
    crit = PerTurnUserSimulatorQuality(threshold=0.5, judge_model_options={"num_samples": 5}).bind(judge)
    outcomes = crit.score_scenario([inv(user="안녕하세요"), inv(user="東京の天気は？")],
                                   {"starting_prompt": "안녕하세요", "conversation_plan": "天気を聞く。"})
    assert [o.score for o in outcomes] == [1.0, 1.0]
    assert len(judge.requests) == 2 * 3  # turn 2 and the ending: 3 agreeing samples each, not 5
    assert crit.sampling() == "early_stop"


def test_hallucinations_is_a_mean_not_a_vote_and_draws_every_sample():
    def answer(request):
        if "sentences" in request.response_schema["properties"]:
            return {"sentences": [KOREAN]}
        return {"labels": [{"index": 0, "label": "supported", "rationale": "ok", "evidence": KOREAN}]}

    judge = ScriptedJudge(answer, early_stop=True)
    crit = Hallucinations(threshold=0.5, judge_model_options={"num_samples": 5}).bind(judge)
    outcome = crit.score_invocation(inv(user=KOREAN, final=KOREAN), None)
    assert outcome.score == 1.0 and len(outcome.details["samples"]) == 5
    assert len(judge.requests) == 5 * 2  # segmenter and validator per sample
    assert crit.sampling() is None


def test_sampling_is_recorded_only_when_samples_may_stop_early():
    assert FinalResponseMatchV2(threshold=0.5).bind(ScriptedJudge(lambda r: None, early_stop=True)).sampling() == "early_stop"
    assert FinalResponseMatchV2(threshold=0.5).bind(ScriptedJudge(lambda r: None, early_stop=False)).sampling() is None
    assert FinalResponseMatchV2(threshold=0.5).sampling() is None  # unbound: nothing was drawn


def test_the_plain_rule_stops_on_failing_samples_too():
    """`stop_on_failing` (the runtime's; evalgate uses it with confirmation runs on): three
    "invalid" of five decide the verdict, so the last two are not drawn; the verdict stays the
    full vote's for every sequence, and samples are still a prefix."""
    def outcome(labels, plain):
        judge = ScriptedJudge(by_sample([frm_reply(x) for x in labels]), early_stop=True)
        judge.stop_on_failing = plain
        crit = FinalResponseMatchV2(threshold=0.8, judge_model_options={"num_samples": len(labels)}).bind(judge)
        out = crit.score_invocation(inv(user=KOREAN, final=JAPANESE), inv(user=KOREAN, final=JAPANESE))
        return out, sorted(r.sample for r in judge.requests)

    early, asked = outcome((I, I, I, V, V), plain=True)
    assert early.score == 0.0 and asked == [0, 1, 2] and early.details["samples"] == [0.0, 0.0, 0.0]
    exact, asked = outcome((I, I, I, V, V), plain=False)
    assert exact.score == 0.0 and asked == [0, 1, 2, 3, 4]  # evalgate's rule: all-failing drawn to the end
    fewer = 0
    for labels in itertools.product((V, I, F), repeat=5):
        plain, asked_plain = outcome(labels, plain=True)
        full, _ = outcome(labels, plain=False)
        assert plain.score == full.score and asked_plain == list(range(len(asked_plain))), labels
        fewer += len(asked_plain) < len(full.details["samples"])
    assert fewer > 0


def test_rubric_trajectory_settles_on_failing_samples_with_the_plain_rule():
    from evalgate.criteria.rubric_multi_turn_trajectory import Entry, Sample, next_round as rounds, settled

    failing = [Sample(entries=(Entry("a", 0.0, "아니요"),))] * 3  # 3 of 5 "no": the verdict is decided
    assert not settled(5, failing, ["a"], 0.8) and rounds(5, failing, ["a"], 0.8) == 2  # evalgate's rule: draw the rest
    assert settled(5, failing, ["a"], None)  # the plain rule stops here


@pytest.mark.parametrize("confirm, plain", [("", True), ("gate:\n  confirm: {runs: 0}\n", False)])
def test_the_plain_rule_is_the_rule_only_with_confirmation_runs(tmp_path, confirm, plain):
    """`evalgate run`'s judge runtime stops on failing samples too when gate.confirm re-runs
    suspects (on by default), and keeps samples that all failed drawn to the end without it."""
    from evalgate.pipeline import judge_runtime
    from evalgate.config import load_config

    (tmp_path / "evals").mkdir()
    (tmp_path / "evalgate.yaml").write_text(
        "agent: {command: [python, agent.py]}\nsuites:\n  - name: 판정\n    evalsets: [evals]\n    criteria:\n      final_response_match_v2: 0.8\n" + confirm,
        encoding="utf-8")
    runtime, _ = judge_runtime(load_config(tmp_path / "evalgate.yaml"), no_cache=True)
    assert runtime.early_stop is True and runtime.stop_on_failing is plain
    crit = FinalResponseMatchV2(threshold=0.8).bind(runtime)
    assert crit.stop_threshold() == (None if plain else 0.8)
