"""gate.pairwise: changed answers judged side by side with the baseline's, through a fake Gemini at the wire.

Semantics (both orders, order-balanced case outcomes, the sign test, max_cases, the cache,
failed judge calls) on hand-built results and the real JudgeRuntime / google-genai client;
the reports; and the config's strictness.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from evalgate.gate import GatePolicy, Verdict, compare
from evalgate.judge.runtime import JudgeRuntime
from evalgate.gate.pairwise import DEFAULT_INSTRUCTIONS, PairwisePolicy
from evalgate.pairwise import build_prompt, judge_pairs
from evalgate.reports.html import render_html
from evalgate.reports.markdown import render_comment
from evalgate.results import Counts, CriterionSpec, InvocationSummary, RunInfo, RunResults, Status, SuiteResult
from evalgate.gate.stats import binomial_sf, binomial_upper, sign_test
from fake_gemini import error, fake_gemini, prompt_text  # noqa: F401  (fixture)
from pairwise_judges import always, answers, detail_judge, equal_paraphrases
from result_builders import case, crit, inv, run_of

KEPT = "Your order ORD-{n} has shipped; the tracking id is TRK{n}."
PARAPHRASE = "Good news: order ORD-{n} is on its way, tracking TRK{n}."
DROPPED = "Your order has shipped and should arrive soon."


def _run(answers_by_case: dict[str, list[str]], users: dict[str, list[str]] | None = None) -> RunResults:
    cases = []
    for eval_id, texts in sorted(answers_by_case.items()):
        turns = (users or {}).get(eval_id) or [f"Where is my order? ({eval_id})"] * len(texts)
        invs = [inv(u, t) for u, t in zip(turns, texts)]
        cases.append(case("shop", eval_id, {"response_match_score": crit(0.0, *[(1.0, {}) for _ in invs])}, invs))
    suite = SuiteResult(
        name="support",
        status=Status.PASSED,
        not_evaluated_policy="warn",
        counts=Counts.of(cases),
        criteria={"response_match_score": CriterionSpec(threshold=0.0, version="1")},
        cases=cases,
    )
    return run_of([suite], "sha256:config", RunInfo())


def _runtime(tmp_path: Path, **kw) -> JudgeRuntime:
    return JudgeRuntime(concurrency=4, cache_dir=tmp_path / "cache", sleep=lambda s: None, **kw)


def _policy(**kw) -> GatePolicy:
    return GatePolicy(pairwise=PairwisePolicy(enabled=True, **kw))


def _judge(baseline, current, policy, tmp_path):
    with _runtime(tmp_path) as rt:
        pairs = judge_pairs(baseline, current, policy.pairwise, rt)
    return pairs, compare(baseline, current, policy, pairwise=pairs)


# --- the sign test, by hand -------------------------------------------------------------------


def test_sign_test_by_hand():
    # 8 losses, 2 wins: P(X >= 8), X ~ Binomial(10, 1/2) = (45 + 10 + 1) / 1024.
    assert sign_test(8, 2) == pytest.approx(56 / 1024, rel=1e-12)
    assert sign_test(0, 5) == 1.0 and sign_test(3, 0) == pytest.approx(1 / 8)
    # P(X >= 2), X ~ Binomial(3, 0.6) = 3 * 0.36 * 0.4 + 0.216
    assert binomial_sf(2, 3, 0.6) == pytest.approx(0.648, rel=1e-12)
    # Clopper-Pearson: 0 of n lost, the 95% upper bound is 1 - 0.05^(1/n).
    assert binomial_upper(0, 10) == pytest.approx(1 - 0.05 ** 0.1, rel=1e-9)
    # Large n stays finite and exact enough: the normal approximation's neighbourhood.
    assert sign_test(600, 500) == pytest.approx(0.5 * math.erfc((599.5 - 550) / math.sqrt(275) / math.sqrt(2)), rel=0.05)


def test_num_samples_must_be_even_and_keys_are_strict():
    with pytest.raises(ValueError, match="must be even"):
        PairwisePolicy(num_samples=3)
    with pytest.raises(ValueError):
        PairwisePolicy(num_sample=2)


# --- semantics through the wire ------------------------------------------------------------


def test_both_orders_are_asked_and_a_dropped_detail_fails_the_gate(fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = equal_paraphrases()
    n = 20
    baseline = _run({f"c{i:02}": [KEPT.format(n=i)] for i in range(n)})
    # 14 answers drop the order number and tracking id, 6 are paraphrases.
    current = _run({f"c{i:02}": [DROPPED if i < 14 else PARAPHRASE.format(n=i)] for i in range(n)})
    pairs, comparison = _judge(baseline, current, _policy(), tmp_path)

    # 2 per changed invocation; the 14 lost in both orders are judged once more, both orders (gate.pairwise.confirm)
    assert len(fake_gemini.requests) == 2 * n + 2 * 14
    firsts = {}
    for r in fake_gemini.requests:
        a = answers(r.body)
        firsts.setdefault(a["A"] == DROPPED or a["A"].startswith("Good news"), 0)
        firsts[a["A"] == DROPPED or a["A"].startswith("Good news")] += 1
    assert firsts == {True: n + 14, False: n + 14}  # half with the pull request's answer as A, half with the baseline's

    [suite] = comparison.suites
    pw = suite.pairwise
    assert (pw.losses, pw.wins, pw.ties, pw.changed, pw.compared) == (14, 0, 6, 20, 20)
    assert pw.p_value == pytest.approx(sign_test(14, 0))  # (1/2)^14: no margin by default
    assert pw.p_value == pytest.approx(0.5**14)
    _, with_margin = _judge(baseline, current, _policy(margin=0.1), tmp_path)  # from the cache
    assert with_margin.suites[0].pairwise.p_value == pytest.approx(sign_test(14, 0, 0.5 + 0.1 * 20 / 14))
    assert pw.p_adjusted is not None and pw.p_adjusted < 0.01
    assert pw.status is Verdict.FAIL and suite.verdict is Verdict.FAIL and comparison.verdict is Verdict.FAIL
    assert suite.reasons[0].startswith("judged side by side: 14 of 20 changed answers worse than the baseline's, 0 better, 6 equal")
    assert pw.pairs.stats["requests"] == 2 * n + 2 * 14 and pw.pairs.stats["cache_hits"] == 0
    assert [c.score for c in pw.pairs.cases] == [-2] * 14 + [0] * 6  # two rounds lost in full: the mean, -2


def test_a_judge_that_always_prefers_one_position_gives_ties(fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    fake_gemini.use_gemini_api(monkeypatch)
    baseline = _run({f"c{i}": [KEPT.format(n=i)] for i in range(12)})
    current = _run({f"c{i}": [DROPPED] for i in range(12)})  # every answer worse: the judge does not look
    for label in ("A", "B"):
        fake_gemini.responder = always(label)
        _, comparison = _judge(baseline, current, _policy(), tmp_path / label)
        pw = comparison.suites[0].pairwise
        assert (pw.losses, pw.wins, pw.ties) == (0, 0, 12), label
        assert pw.p_value is None and pw.status is Verdict.PASS and comparison.verdict is Verdict.PASS


def test_a_judge_that_cannot_tell_paraphrases_apart_gives_ties_or_no_verdict(fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    fake_gemini.use_gemini_api(monkeypatch)
    baseline = _run({f"c{i:02}": [KEPT.format(n=i)] for i in range(40)})
    current = _run({f"c{i:02}": [PARAPHRASE.format(n=i)] for i in range(40)})
    fake_gemini.responder = equal_paraphrases()  # says so
    _, comparison = _judge(baseline, current, _policy(), tmp_path / "equal")
    pw = comparison.suites[0].pairwise
    assert (pw.losses, pw.wins, pw.ties) == (0, 0, 40) and comparison.verdict is Verdict.PASS
    fake_gemini.responder = detail_judge(seed=3, position_bias=0.4)  # picks at random, prefers A 70% of the time
    _, comparison = _judge(baseline, current, _policy(), tmp_path / "random")
    pw = comparison.suites[0].pairwise
    assert pw.losses + pw.wins + pw.ties == 40 and pw.ties > 0
    assert comparison.verdict is not Verdict.FAIL and pw.status is not Verdict.FAIL


def test_unchanged_answers_are_ties_and_cost_nothing(fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = equal_paraphrases()
    baseline = _run({"a": [KEPT.format(n=1)], "b": [KEPT.format(n=2)]})
    current = _run({"a": [KEPT.format(n=1) + "  "], "b": [DROPPED]})  # whitespace is no change
    pairs, comparison = _judge(baseline, current, _policy(), tmp_path)
    assert len(fake_gemini.requests) == 4  # b's 2, and 2 more to confirm its loss in both orders
    [a, b] = pairs["support"].cases
    assert (a.outcome, a.changed, b.outcome) == ("tie", False, "loss")
    assert [v.current_first for v in b.invocations[0].verdicts] == [False, True, False, True]
    assert [v.choice for v in b.invocations[0].verdicts] == ["baseline"] * 4


def test_max_cases_names_the_cases_left_out(fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = equal_paraphrases()
    baseline = _run({f"c{i}": [KEPT.format(n=i)] for i in range(5)} | {"same": ["unchanged"]})
    current = _run({f"c{i}": [DROPPED] for i in range(5)} | {"same": ["unchanged"]})
    pairs, comparison = _judge(baseline, current, _policy(max_cases=3, confirm=False), tmp_path)
    suite = pairs["support"]
    assert len(fake_gemini.requests) == 3 * 2
    judged = sorted(c.eval_id for c in suite.cases if c.changed)
    left = sorted(i for _, i in suite.left_out)
    assert len(judged) == 3 and len(left) == 2 and sorted(judged + left) == [f"c{i}" for i in range(5)]
    pw = comparison.suites[0].pairwise
    assert pw.compared == 4 and pw.changed == 3  # the unchanged case is a tie; the left-out ones are not counted
    [named] = [r for r in pw.reasons if "not judged side by side" in r]
    assert "(2 left out by max_cases)" in pw.reasons[0]
    assert all(f"shop/{i}" in named for i in left) and not any(f"shop/{i}" in named for i in judged)
    # The same cases are chosen again (a hash of their ids), so a rerun hits the cache.
    again, _ = _judge(baseline, current, _policy(max_cases=3, confirm=False), tmp_path)
    assert again["support"].left_out == suite.left_out
    assert len(fake_gemini.requests) == 3 * 2


def test_an_unchanged_rerun_makes_no_request(fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = equal_paraphrases()
    baseline = _run({f"c{i}": [KEPT.format(n=i)] for i in range(6)})
    current = _run({f"c{i}": [DROPPED if i % 2 else PARAPHRASE.format(n=i)] for i in range(6)})
    first, c1 = _judge(baseline, current, _policy(), tmp_path)
    assert len(fake_gemini.requests) == 12 + 3 * 2  # the 3 dropped details lose in both orders: confirmed
    fake_gemini.reset()
    second, c2 = _judge(baseline, current, _policy(), tmp_path)
    assert len(fake_gemini.requests) == 0  # the confirmation round comes from the cache too
    assert second["support"].stats["requests"] == 0 and second["support"].stats["cache_hits"] == 18
    assert [c.outcome for c in second["support"].cases] == [c.outcome for c in first["support"].cases]
    # The cache is keyed by both answers and their order: a changed answer asks again, both orders.
    current2 = _run({f"c{i}": [DROPPED if i % 2 else PARAPHRASE.format(n=i)] for i in range(5)} | {"c5": ["Shipped."]})
    _judge(baseline, current2, _policy(confirm=False), tmp_path)
    assert len(fake_gemini.requests) == 2


def test_a_failed_judge_call_is_not_evaluated_never_a_loss(fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = equal_paraphrases()
    baseline = _run({f"c{i}": [KEPT.format(n=i)] for i in range(4)})
    current = _run({f"c{i}": [DROPPED] for i in range(4)})
    # One of c0's two orders fails for good (400 is not retried).
    fake_gemini.queue(error(400, "API key not valid"), times=1, when=lambda body: "(c0)" in prompt_text(body) and '"A">\nYour order has shipped' in prompt_text(body))
    pairs, comparison = _judge(baseline, current, _policy(), tmp_path)
    by_id = {c.eval_id: c for c in pairs["support"].cases}
    assert by_id["c0"].outcome == "not_evaluated" and "API key not valid" in by_id["c0"].error
    assert [by_id[f"c{i}"].outcome for i in (1, 2, 3)] == ["loss"] * 3
    pw = comparison.suites[0].pairwise
    assert (pw.losses, pw.not_evaluated, pw.compared) == (3, 1, 3)
    assert any("not evaluated side by side: shop/c0" in r for r in pw.reasons)
    assert any("not evaluated side by side: shop/c0" in r for r in comparison.suites[0].reasons)  # named in the suite
    assert comparison.suites[0].verdict is Verdict.INCONCLUSIVE  # not_evaluated: warn
    strict = current.model_copy(deep=True)
    strict.suites[0].not_evaluated_policy = "fail"
    assert compare(baseline, strict, _policy(), pairwise=pairs).suites[0].verdict is Verdict.FAIL
    # Without credentials every pair is NOT_EVALUATED, and nothing is decided.
    fake_gemini.reset()
    monkeypatch.delenv("GOOGLE_API_KEY")
    pairs, comparison = _judge(baseline, current, _policy(), tmp_path / "nocreds")
    assert {c.outcome for c in pairs["support"].cases} == {"not_evaluated"}
    assert comparison.suites[0].pairwise.p_value is None and comparison.verdict is Verdict.INCONCLUSIVE
    assert "no judge credentials" in comparison.suites[0].reasons[-1]
    assert len(fake_gemini.requests) == 0


def test_the_judge_sees_the_conversation_tools_and_results_in_korean(fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = equal_paraphrases()
    users = {"주문": ["주문 상태를 알려 주세요.", "배송 번호는요?"]}
    baseline = _run({"주문": ["주문을 확인했습니다.", "배송 번호는 TRK77 입니다. 주문 ORD-77"]}, users)
    current = _run({"주문": ["주문을 확인했습니다.", "곧 도착합니다."]}, users)
    lookup = [{"name": "track", "args": {"order": "ORD-77"}}]
    for run, result in ((baseline, {"tracking": "TRK77", "상태": "배송 중"}), (current, {"tracking": "TRK77", "상태": "배송 중"})):
        last = run.suites[0].cases[0].invocations[1]
        last.actual_tools = lookup
        last.actual_tool_results = [{"name": "track", "response": result}]
    pairs, comparison = _judge(baseline, current, _policy(confirm=False), tmp_path)
    assert len(fake_gemini.requests) == 2  # only the second invocation changed
    prompt = prompt_text(fake_gemini.requests[0].body)
    assert "주문 상태를 알려 주세요." in prompt and "배송 번호는요?" in prompt  # the user's turns so far
    assert "Assistant: 주문을 확인했습니다." in prompt  # the earlier answer, the same on both sides
    assert '"상태": "배송 중"' in prompt and '"order": "ORD-77"' in prompt  # tool calls with their results
    assert "ORD-" not in prompt.split("<what_better_means>")[0]
    [c] = pairs["support"].cases
    assert c.outcome == "loss" and c.invocations[0].index == 1
    comment = render_comment(comparison, current)
    assert "배송 번호는 TRK77 입니다." in comment and "곧 도착합니다." in comment
    assert "1 of 1 changed answer worse than the baseline's, 0 better, 0 equal" in comment


def test_an_old_baseline_without_tool_results_is_read_and_judged(fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    # A summary as results.json held it before tool results were kept: read as it is, and
    # written back without the key (results without tool results stay byte for byte as they were).
    base = InvocationSummary.model_validate({"user": "where?", "actual_response": KEPT.format(n=1), "actual_tools": [{"name": "track", "args": {}}]})
    assert base.actual_tool_results == [] and "actual_tool_results" not in base.model_dump(mode="json")
    prompt = build_prompt([base], [inv("where?", DROPPED)], 0, False, DEFAULT_INSTRUCTIONS)
    assert '"result": "(not recorded)"' in prompt and "(no tool calls)" in prompt


# --- reports ---------------------------------------------------------------------------------


def test_the_comment_and_the_html_report_show_the_pairs(fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = equal_paraphrases()
    baseline = _run({f"c{i:02}": [KEPT.format(n=i)] for i in range(20)})
    current = _run({f"c{i:02}": [DROPPED if i < 14 else PARAPHRASE.format(n=i) if i < 17 else KEPT.format(n=i)] for i in range(20)})
    current.suites[0].cases[0].invocations[0].actual_response = "Shipped. @octocat <!-- hidden --> see #12"
    _, comparison = _judge(baseline, current, _policy(), tmp_path)
    comment = render_comment(comparison, current)
    assert "| judged side by side (judge, both orders) | – | 20 | – | – | 14 of 17 changed answers worse than the baseline's, 0 better, 3 equal" in comment
    assert "### Worse than the baseline, judged side by side (14)" in comment
    assert "The baseline's answer:" in comment and "This pull request's answer:" in comment
    assert "the baseline's answer shown as A: **prefers the baseline's**: It keeps the order number and the tracking id." in comment
    assert "the pull request's answer shown as A: **prefers the baseline's**" in comment
    assert "net -4 of 4 verdicts" in comment  # both rounds (gate.pairwise.confirm), every verdict counted as read
    assert comment.count("<!--") == 1  # the marker only: the agent's text cannot forge one (sanitize.fenced)
    assert "| support: side by side |" in comment or "| side by side |" in comment  # judge usage
    page = render_html(comparison, current, baseline)
    assert '"pw":{' in page and '"o":"loss"' in page and '"cf":1' in page and '"cf":0' in page and '"net":-4' in page
    assert "judged side by side: 14 of 17 changed answers" in page


# --- the CLI: evalgate run twice, then evalgate compare ------------------------------------


def test_evalgate_compare_judges_side_by_side_and_keeps_tool_results(cli, fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    import json

    from test_inputs import CASES, CONFIG, make_project

    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = equal_paraphrases()
    root = make_project(tmp_path / "p", config=CONFIG + "gate:\n  pairwise: {enabled: true}\n")

    def outputs(answer: str) -> None:
        lines = []
        for eval_id, invs in CASES.items():
            invs = json.loads(json.dumps(invs))
            invs[0]["intermediate_data"]["tool_responses"] = [{"name": invs[0]["intermediate_data"]["tool_uses"][0]["name"], "response": {"order": "ORD-5", "상태": "완료"}}]
            if eval_id == "lights-en":
                invs[0]["final_response"]["parts"][0]["text"] = answer
            lines.append(json.dumps({"eval_set_id": "home", "eval_id": eval_id, "invocations": invs}, ensure_ascii=False))
        (root / "runs" / "out.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")

    outputs("The bedroom light is off (order ORD-5).")
    cli("run", "--out", "base", "--quiet", cwd=root)  # exits 1: response_match_score is below 0.8 on the changed answer
    saved = json.loads((root / "base" / "results.json").read_text(encoding="utf-8"))
    [summary] = saved["suites"][0]["cases"][0]["invocations"]
    assert summary["actual_tool_results"] == [{"name": "set_light", "response": {"order": "ORD-5", "상태": "완료"}}]
    outputs("The light is off.")
    cli("run", "--out", "cur", "--quiet", cwd=root)
    code, out, err = cli("compare", "--current", "cur/results.json", "--baseline", "base/results.json", cwd=root)
    assert len(fake_gemini.requests) == 4, err  # both orders, then again: the loss was unanimous (gate.pairwise.confirm)
    assert '"상태": "완료"' in prompt_text(fake_gemini.requests[0].body)  # the tool's result, from results.json
    assert "| judged side by side (judge, both orders) | – | 2 | – | – | 1 of 1 changed answer worse than the baseline's, 0 better, 0 equal" in out
    assert "The light is off." in out and "The bedroom light is off (order ORD-5)." in out


# --- issue 37: how decisive each case was, and a cut-off reply asked again ---------------------


def _signs_tail(values: list[int], weight) -> float:
    """P(W' >= W) over all 2^n sign assignments of the non-zero values' sizes, W the sum of
    weight(size) over the negative ones: the exact conditional null by enumeration."""
    import itertools

    sizes = [abs(v) for v in values if v]
    observed = sum(weight(abs(v), sizes) for v in values if v < 0)
    hits = sum(1 for signs in itertools.product((0, 1), repeat=len(sizes))
               if sum(weight(s, sizes) for s, neg in zip(sizes, signs) if neg) >= observed - 1e-9)
    return hits / 2 ** len(sizes)


def _mean_rank(size, sizes):
    ordered = sorted(sizes)
    return (ordered.index(size) + 1 + len(ordered) - ordered[::-1].index(size)) / 2


def test_signed_rank_test_against_textbook_values_and_enumeration():
    from evalgate.gate.stats import signed_rank_test

    # Textbook (Wilcoxon, n = 8, no ties): P(T+ <= 3) = 5/256. Ranks 1 and 2 positive, 3..8 negative.
    assert signed_rank_test([1, 2, -3, -4, -5, -6, -7, -8]) == pytest.approx(5 / 256, rel=1e-12)
    # n = 10, T+ = 8: P(T+ <= 8) = 25/1024 (the textbook's 0.0244).
    assert signed_rank_test([1, 3, 4, -2, -5, -6, -7, -8, -9, -10]) == pytest.approx(25 / 1024, rel=1e-12)
    # Net verdicts with ties (mean ranks) and zeros set aside, against every sign assignment.
    for values in ([-2, -1, 1, 2, -2, 0], [-2, -2, -2, -1, 1, 1, 0, 0, -1], [-4, -3, 2, -1, 1, 0, -2, -2, 3, -4], [1, 1, 1, -2]):
        assert signed_rank_test(values) == pytest.approx(_signs_tail(values, _mean_rank), rel=1e-12)
        assert signed_rank_test(values, scores="squares") == pytest.approx(_signs_tail(values, lambda s, _: s * s), rel=1e-12)
        losses, wins = sum(v < 0 for v in values), sum(v > 0 for v in values)
        assert signed_rank_test(values, scores="signs") == pytest.approx(sign_test(losses, wins), rel=1e-12)
    # A margin: each sign negative with 0.6, by enumeration weighted by its chance.
    import itertools

    values = [-2, -1, 1, -2, 2]
    observed = sum(v * v for v in values if v < 0)
    tail = sum(0.6 ** sum(signs) * 0.4 ** (5 - sum(signs)) for signs in itertools.product((0, 1), repeat=5)
               if sum(abs(v) ** 2 for v, neg in zip(values, signs) if neg) >= observed)
    assert signed_rank_test(values, 0.6, "squares") == pytest.approx(tail, rel=1e-12)
    assert signed_rank_test([0, 0]) == 1.0


def test_cubes_of_mean_net_verdicts_against_enumeration():
    """The side-by-side test's scores (cubes) on net verdicts averaged over confirmation rounds
    (halves beside whole numbers; one scale for all), and on sizes with no common step."""
    from evalgate.gate.side_by_side import SCORES
    from evalgate.gate.stats import signed_rank_test

    assert SCORES == "cubes"
    for values in ([-2, -1.5, 1, 0.5, -2, 0, 1], [-1, -1, 1.5, -0.5, 2, -2, -2, 1], [-2, 1, 1, 1, 1, 1, 1, 1], [4, -10 / 3, 2, -1, -2 / 3]):
        assert signed_rank_test(values, scores="cubes") == pytest.approx(_signs_tail(values, lambda s, _: s**3), rel=1e-12)
        assert signed_rank_test(values, scores="squares") == pytest.approx(_signs_tail(values, lambda s, _: s * s), rel=1e-12)
    # Before one scale, whole sizes were scored on 1 and fractional ones on 1/1000 (a 1.5 weighed 562 times a 2): 0.5.
    assert signed_rank_test([-1.5, 2, 2], scores="squares") == pytest.approx(7 / 8, rel=1e-12)


def test_decisive_losses_weigh_more_than_split_ones(fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    """Five cases lost in both orders and five paraphrases won in one order (tied in the other)
    are 5 losses against 5 wins to the sign test (p 0.62), and a twentieth of that (0.031) to the
    side-by-side test, which weighs a both-orders loss 8 times a one-order win (cubes)."""
    from evalgate.gate.pairwise import CasePair, SuitePairs
    from evalgate.gate.side_by_side import measure

    cases = [CasePair("s", f"d{i}", "loss", score=-2) for i in range(5)] + [CasePair("s", f"p{i}", "win", score=1) for i in range(5)]
    comp = measure(SuitePairs("support", "m", 2, cases), _policy())
    assert comp.sign_p == pytest.approx(sign_test(5, 5))
    assert comp.p_value == pytest.approx(_signs_tail([-2] * 5 + [1] * 5, lambda s, _: s**3), rel=1e-12)
    assert comp.p_value < comp.sign_p / 15  # 0.031 against 0.62


def test_a_cut_off_reply_is_asked_again_once(fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    from pairwise_judges import cut_off

    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = equal_paraphrases()
    baseline = _run({f"c{i}": [KEPT.format(n=i)] for i in range(3)})
    current = _run({f"c{i}": [DROPPED] for i in range(3)})
    c0_first = lambda body: "(c0)" in prompt_text(body) and '"A">\nYour order has shipped' in prompt_text(body)  # noqa: E731
    # c0's order with the PR's answer first is cut off once: asked again, answered, a loss like the others.
    fake_gemini.queue(cut_off(), times=1, when=c0_first)
    pairs, _ = _judge(baseline, current, _policy(confirm=False), tmp_path / "a")
    assert len(fake_gemini.requests) == 3 * 2 + 1
    assert [c.outcome for c in pairs["support"].cases] == ["loss"] * 3
    # Cut off twice: asked twice, then NOT_EVALUATED with the reason (never a third time).
    fake_gemini.reset()
    fake_gemini.queue(cut_off(), times=2, when=c0_first)
    pairs, _ = _judge(baseline, current, _policy(confirm=False), tmp_path / "b")
    assert len(fake_gemini.requests) == 3 * 2 + 1
    c0 = pairs["support"].cases[0]
    assert c0.outcome == "not_evaluated" and "cut off" in c0.error
    # A reply that is text but no verdict is asked again too; a refused request (400) is not.
    fake_gemini.reset()
    fake_gemini.queue(error(400, "API key not valid"), times=1, when=c0_first)
    pairs, _ = _judge(baseline, current, _policy(confirm=False), tmp_path / "c")
    assert len(fake_gemini.requests) == 3 * 2 and pairs["support"].cases[0].outcome == "not_evaluated"


# --- gate.pairwise.confirm: an answer whose verdicts all picked one side is judged once more ---


def _first_time_then_equal():
    """Prefers the answer that keeps the order number the first time it sees a pair of
    answers (in either order), and calls them equal every time after: a leaning that does not
    repeat. Deterministic whichever order the requests come in."""
    import threading

    from pairwise_judges import _keys, _reply

    seen: dict[frozenset, int] = {}
    lock = threading.Lock()

    def respond(body):
        a = answers(body)
        key = frozenset((a["A"], a["B"]))
        with lock:
            seen[key] = seen.get(key, 0) + 1
            round_ = (seen[key] - 1) // 2  # both orders of a round, then the next round
        ka, kb = _keys(a["A"]), _keys(a["B"])
        if round_ == 0 and ka != kb:
            return _reply("A" if ka > kb else "B", "It keeps the order number.")
        return _reply("equal", "Both say the same thing.")

    return respond


def test_a_unanimous_verdict_is_judged_once_more_and_the_rounds_are_averaged(fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    fake_gemini.use_gemini_api(monkeypatch)
    baseline = _run({"a": [KEPT.format(n=1)], "b": [KEPT.format(n=2)]})
    current = _run({"a": [DROPPED], "b": [PARAPHRASE.format(n=2)]})
    # A leaning that does not repeat: a's first round is lost in full (-2), its second tied (0): net -1.
    fake_gemini.responder = _first_time_then_equal()
    pairs, _ = _judge(baseline, current, _policy(), tmp_path / "1")
    a, b = pairs["support"].cases
    assert [v.sample for v in a.invocations[0].verdicts] == [0, 1, 2, 3]
    assert [v.choice for v in a.invocations[0].verdicts] == ["baseline", "baseline", "equal", "equal"]
    assert (a.outcome, a.score) == ("loss", -1)
    assert [v.sample for v in b.invocations[0].verdicts] == [0, 1] and (b.outcome, b.score) == ("tie", 0)  # equal: not confirmed
    assert len(fake_gemini.requests) == 2 + 2 + 2
    # A difference that repeats stays -2; a judge that always picks position A is split, never confirmed.
    fake_gemini.reset()
    fake_gemini.responder = equal_paraphrases()
    pairs, _ = _judge(baseline, current, _policy(), tmp_path / "2")
    assert pairs["support"].cases[0].score == -2 and len(fake_gemini.requests) == 6
    fake_gemini.reset()
    fake_gemini.responder = always("A")
    pairs, _ = _judge(baseline, current, _policy(), tmp_path / "3")
    assert [c.score for c in pairs["support"].cases] == [0, 0] and len(fake_gemini.requests) == 4
    # confirm: false asks one round only.
    fake_gemini.reset()
    fake_gemini.responder = equal_paraphrases()
    pairs, _ = _judge(baseline, current, _policy(confirm=False), tmp_path / "4")
    assert pairs["support"].cases[0].score == -2 and len(fake_gemini.requests) == 4


def test_confirmation_does_not_favour_either_side(fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    """Which answers are judged again depends on how unanimous the verdicts were, not on the
    side they favoured: with the roles of baseline and pull request swapped, every case's net
    verdict is negated exactly, confirmation rounds included (the test's null stays symmetric)."""
    fake_gemini.use_gemini_api(monkeypatch)
    texts = [KEPT, PARAPHRASE, "Shipped: ORD-{n}, tracking TRK{n}, arriving Friday.", DROPPED, "ORD-{n} shipped."]
    one = _run({f"c{i}": [texts[i % 5].format(n=i)] for i in range(10)})
    two = _run({f"c{i}": [texts[(i + 1 + i // 5) % 5].format(n=i)] for i in range(10)})
    fake_gemini.responder = _first_time_then_equal()
    forward, _ = _judge(one, two, _policy(), tmp_path / "f")
    fake_gemini.responder = _first_time_then_equal()
    backward, _ = _judge(two, one, _policy(), tmp_path / "b")
    nets = [c.score for c in forward["support"].cases]
    assert nets == [-c.score for c in backward["support"].cases]
    assert any(n == -1 or n == 1 for n in nets) and any(len(c.invocations[0].verdicts) == 4 for c in forward["support"].cases if c.changed)
