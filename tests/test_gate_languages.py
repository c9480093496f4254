"""The gate's words in Korean and Japanese (evalgate.i18n): every reason a test's decide() writes,
the verdict's and the suites' reasons, the confirmation lines and `evalgate gate`'s lines, on
real comparisons (built as tests/test_compare.py builds them, with Korean and Japanese case
names) and on the bundled example against main's baseline.

Snapshots live in tests/snapshots/gate/ and are compared whole. To rewrite them after an
intended change, run with EVALGATE_UPDATE_SNAPSHOTS=1, then read every changed file: the
English one must not change unless a message was wrong (many tests compare its sentences).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

import pytest

from evalgate import i18n
from evalgate.gate import GatePolicy, compare, ledger_key, update_ledger
from evalgate.gate.confirm import lines, words
from evalgate.gate.pairwise import CasePair, InvocationPair, SuitePairs
from evalgate.results import Rerun, RunResults
from conftest import REPO, check_snapshot
from test_compare import K, _moody, _rouge_world, _history, MOODS, crit, one, run, scores, suite
from test_confirm import _rerun
from test_cost import _policy as cost_policy, _run as cost_run, _suite as cost_suite, _tokens

SNAPSHOTS = Path(__file__).parent / "snapshots" / "gate"
POLICY = GatePolicy()

KO = [f"주문_조회_{i:02d}" for i in range(40)]  # Korean case names
JA = [f"注文の確認_{i:02d}" for i in range(40)]  # Japanese case names


def _judged(ids: list[str], broke: int) -> tuple[RunResults, RunResults]:
    """A judge criterion over `ids`, every sample passing in the baseline; `broke` cases failing every sample now."""
    base = one({e: {"judge": [1.0] * 5} for e in ids})
    cur = one({e: {"judge": [0.0] * 5 if i < broke else [1.0] * 5} for i, e in enumerate(ids)})
    return base, cur


# --- scenarios: (comparison, current run) -------------------------------------------------


def drop_significant():
    return _compare(*_judged(KO, 10))


def drop_inconclusive():
    return _compare(*_judged(JA, 2))


def drop_inconclusive_fails():
    return _compare(*_judged(KO, 2), policy=GatePolicy(inconclusive="fail"))


def drop_one_case():
    return _compare(one({"주문_조회": {"judge": [1.0] * 5}}), one({"주문_조회": {"judge": [0.0] * 5}}))


def level_within():
    baseline, current, ledger = _moody(MOODS + [0.06], now=0.0)
    return compare(baseline, current, POLICY, ledger=ledger), current


def level_inconclusive():
    baseline, current, ledger = _moody(MOODS + [0.0], now=-0.08)
    return compare(baseline, current, POLICY, ledger=ledger), current


def level_moved():
    moved = [m - 0.25 for m in MOODS[:7]] + MOODS[7:] + [0.0]
    baseline, current, ledger = _moody(moved, now=0.0, drop=0.06)
    return compare(baseline, current, POLICY, ledger=ledger), current


def level_moved_last_run():
    baseline, current, ledger = _moody([m - 0.25 for m in MOODS] + [0.0], now=0.0, drop=0.06)
    return compare(baseline, current, POLICY, ledger=ledger), current


def partial_drop():
    import random

    draw = _rouge_world(random.Random(5), 200, drift=0.012, flaky=0.1)
    baseline, ledger = _history(draw)
    current = one(draw(set(range(0, 200, 4))))
    return compare(baseline, current, POLICY, ledger=ledger), current


def _stable_ledger(ids, name, runs=10):
    return {ledger_key(K(e), name): [1.0] * runs for e in ids}


def breakage_significant():
    base, cur = _judged(JA, 0)
    cur = one({e: {"judge": [0.0] * 5 if e in (JA[1], JA[7], JA[9]) else [1.0] * 5} for e in JA})
    return compare(base, cur, POLICY, ledger=_stable_ledger(JA, "judge")), cur


def breakage_not_significant():
    base, cur = _judged(KO, 1)
    return compare(base, cur, POLICY, ledger=_stable_ledger(KO, "judge")), cur


def breakage_continuous():
    import random

    rng = random.Random(5)
    level = {e: 0.58 if i < 10 else 0.95 for i, e in enumerate(KO)}

    def values(fallen=()):
        return one({e: {"score": 0.3 if e in fallen else level[e] + rng.gauss(0, 0.005)} for e in KO})

    ledger: dict = {}
    for _ in range(10):
        baseline = values()
        ledger = update_ledger(ledger, baseline, 10)
    current = values({KO[20], KO[21]})
    return compare(baseline, current, POLICY, ledger=ledger), current


def _with_reruns(results: RunResults, reruns: dict[str, list[float]]) -> RunResults:
    for case in results.suites[0].cases:
        if case.eval_id in reruns:
            case.reruns = [_rerun(i, v) for i, v in enumerate(reruns[case.eval_id], start=1)]
    return results


def confirmed():
    broke = (KO[1], KO[7], KO[9], KO[11])
    base = one({e: {"traj": 1.0} for e in KO})
    cur = one({e: {"traj": 0.0 if e in broke else 1.0} for e in KO})
    cur = _with_reruns(cur, {KO[1]: [0.0, 0.0], KO[7]: [0.0, 0.0], KO[9]: [0.0, 0.0], KO[11]: [0.0, 1.0]})
    return compare(base, cur, POLICY, ledger=_stable_ledger(KO, "traj")), cur


def confirmed_all_flaky():
    broke = (JA[1], JA[7], JA[9])
    base = one({e: {"traj": 1.0} for e in JA})
    cur = one({e: {"traj": 0.0 if e in broke else 1.0} for e in JA})
    cur = _with_reruns(cur, {e: [1.0, 0.0] for e in broke})
    return compare(base, cur, POLICY, ledger=_stable_ledger(JA, "traj")), cur


def flips():
    base = one({e: {"tool": 1.0} for e in JA[:8]})
    cur = one({e: {"tool": 0.0 if i < 7 else 1.0} for i, e in enumerate(JA[:8])})
    return compare(base, cur, GatePolicy(deterministic_flips="fail")), cur


def _pairs(outcomes: list[str], left_out: int = 0) -> SuitePairs:
    cases = []
    for i, o in enumerate(outcomes):
        invs = [] if o == "tie" else [InvocationPair(0, "주문 B2019는 어디쯤 왔나요?", "내일 도착합니다.", "곧 도착합니다.")]
        error = "ジャッジの応答が JSON ではありません" if o == "not_evaluated" else None  # the judge's words: data
        cases.append(CasePair("shop", f"{KO[i]}", o, invs, error=error))  # type: ignore[arg-type]
    return SuitePairs("s", "gemini-2.5-flash", 2, cases, [("shop", f"追加_{j:02d}") for j in range(left_out)])


def _side_by_side(outcomes: list[str], left_out: int = 0, policy: GatePolicy = POLICY):
    ids = [KO[i] for i in range(len(outcomes))]
    base = run(suite("s", {e: {"rouge": 0.8} for e in ids}, set_id="shop"))
    cur = run(suite("s", {e: {"rouge": 0.8} for e in ids}, set_id="shop"))
    return compare(base, cur, policy, pairwise={"s": _pairs(outcomes, left_out)}), cur


def side_by_side_fail():
    return _side_by_side(["loss"] * 14 + ["win"] * 2 + ["tie"] * 4 + ["not_evaluated"] * 5, left_out=12)


def side_by_side_inconclusive():
    return _side_by_side(["loss"] * 4 + ["win"] * 2 + ["tie"] * 2)


def side_by_side_pass_absolute():
    return _side_by_side(["loss"] * 2 + ["win"] * 3, policy=GatePolicy(mode="absolute"))


def efficiency_fail():
    cur = cost_run(cost_suite(_tokens(2, raise_half=1.3)))
    return compare(cost_run(cost_suite(_tokens(1))), cur, cost_policy(token_usage_v1=0.05)), cur


def efficiency_reported_and_within():
    base = cost_run(cost_suite(_tokens(1), tools=[float(i % 3) for i in range(40)], seconds=[1.0 + i % 4 for i in range(40)]))
    tokens = _tokens(2)
    tokens[0] = tokens[1] = 0.0
    cur = cost_run(cost_suite(tokens, tools=[float(i % 3) for i in range(40)], seconds=[1.1 + i % 4 for i in range(40)]))
    return compare(base, cur, cost_policy(token_usage_v1=0.05)), cur


def efficiency_absolute():
    cur = cost_run(cost_suite(_tokens(2, raise_half=1.3)))
    return compare(cost_run(cost_suite(_tokens(1))), cur, GatePolicy.model_validate({"mode": "absolute", "efficiency": {"token_usage_v1": 0.05}})), cur


def no_baseline():
    cur = one({"주문_조회": {"judge": [0.0] * 5, "tool": 1.0}, "注文の確認": {"judge": None, "tool": 1.0}, "faq": {"judge": None, "tool": 0.0}})
    return compare(None, cur, POLICY), cur


def not_evaluated_fail():
    base = {e: {"tool": 1.0, "judge": 1.0} for e in KO[:3]}
    cur = {KO[0]: {"tool": 1.0, "judge": None}, KO[1]: {"tool": 1.0, "judge": None}, KO[2]: {"judge": None}}
    current = one(cur, policy="fail")
    return compare(one(base, policy="fail"), current, POLICY), current


def not_evaluated_many_reasons():
    current = one({e: {"judge": None, "tool": 1.0} for e in JA[:5]}, policy="warn")
    for i, case in enumerate(current.suites[0].cases):
        case.criteria["judge"] = crit(None, error=["timeout", "no judge credentials", "quota", "reply is not JSON", "timeout"][i])
    return compare(None, current, POLICY), current


def config_and_criteria_changed():
    base = one({e: {"tool": 1.0, "old": 1.0} for e in JA[:2]}, thresholds={"tool": 0.8})
    cur = run(suite("s", {JA[0]: {"tool": 1.0, "new": 0.0}, JA[1]: {"tool": 1.0, "new": 1.0}}, thresholds={"tool": 0.9}), config="other")
    return compare(base, cur, POLICY), cur


def suites_new_removed_empty():
    base = run(suite("kept", scores("tool", [1.0])), suite("gone", scores("tool", [1.0, 1.0])))
    cur = run(suite("kept", scores("tool", [1.0])), suite("fresh", scores("tool", [0.0])), suite("empty", {}))
    return compare(base, cur, GatePolicy(removed_cases="fail")), cur


def added_cases_fail():
    base = one({e: {"tool": 1.0} for e in KO[:3]})
    cur = one({**{e: {"tool": 1.0} for e in KO[:3]}, **{e: {"tool": 0.0} for e in JA[:7]}})
    return compare(base, cur, POLICY), cur


def absolute_mode():
    base, cur = _judged(KO[:10], 0)
    cur = one({e: {"judge": [0.0] * 5 if i == 0 else [1.0] * 5} for i, e in enumerate(KO[:10])})
    return compare(base, cur, GatePolicy(mode="absolute")), cur


def mixed_sampling():
    from test_compare import _sampled

    base = _sampled(one({e: {"judge": [1.0, 1.0, 0.0, 1.0, 0.0]} for e in JA[:30]}), None)
    cur = _sampled(one({e: {"judge": [1.0, 1.0, 1.0]} for e in JA[:30]}), "early_stop")
    return compare(base, cur, POLICY), cur


def refused_by_the_judge():
    """Issue 34: the judge refused two answers (its service up), and was down for a third."""
    base = one({e: {"tool": 1.0, "judge": 1.0} for e in KO[:4]})
    current = one({e: {"tool": 1.0, "judge": 1.0 if i == 3 else None} for i, e in enumerate(KO[:4])})
    cases = current.suites[0].cases
    for case in cases[:2]:
        case.criteria["judge"] = crit(None, error="judge refused the prompt (promptFeedback.blockReason PROHIBITED_CONTENT)")
    cases[2].criteria["judge"] = crit(None, error="timeout")
    cases[2].criteria["judge"].unavailable = "judge"
    return compare(base, current, POLICY), current


def changed_case_fails():
    """Issue 34: a case the baseline passed, edited by the pull request, fails now."""
    base = one({e: {"tool": 1.0} for e in JA[:3]}, digests={JA[0]: "old"})
    cur = one({e: {"tool": 0.0 if i == 0 else 1.0} for i, e in enumerate(JA[:3])}, digests={JA[0]: "new"})
    return compare(base, cur, POLICY), cur


def _compare(base, cur, policy=POLICY):
    return compare(base, cur, policy), cur


SCENARIOS: dict[str, Callable[[], tuple]] = {
    f.__name__: f
    for f in (
        drop_significant,
        drop_inconclusive,
        drop_inconclusive_fails,
        drop_one_case,
        level_within,
        level_inconclusive,
        level_moved,
        level_moved_last_run,
        partial_drop,
        breakage_significant,
        breakage_not_significant,
        breakage_continuous,
        confirmed,
        confirmed_all_flaky,
        flips,
        side_by_side_fail,
        side_by_side_inconclusive,
        side_by_side_pass_absolute,
        efficiency_fail,
        efficiency_reported_and_within,
        efficiency_absolute,
        no_baseline,
        not_evaluated_fail,
        not_evaluated_many_reasons,
        config_and_criteria_changed,
        suites_new_removed_empty,
        added_cases_fail,
        absolute_mode,
        mixed_sampling,
        refused_by_the_judge,
        changed_case_fails,
    )
}


def reasons_text(comparison, current) -> str:
    """Every text the gate wrote for a reader in a comparison, one per line, where it stands."""
    out = [f"verdict {comparison.verdict.value}"]
    out += [f"  {r}" for r in comparison.reasons]
    for s in comparison.suites:
        out.append(f"suite {s.name}: {s.verdict.value}")
        out += [f"  {r}" for r in s.reasons]
        out += [f"  skipped: {r}" for r in s.skipped_criteria]
        for c in s.criteria:
            out += [f"  {c.criterion} ({c.status.value}): {r}" for r in c.reasons]
        for row in s.costs:
            out += [f"  {row.label} ({row.status}): {r}" for r in row.reasons]
        if s.pairwise is not None:
            out += [f"  side by side ({s.pairwise.status.value}): {r}" for r in s.pairwise.reasons]
    out += [f"  re-run {line.suite}: {line.case}: {line.text}" for line in lines(comparison, current)]
    return "\n".join(out) + "\n"


def _all(code: str) -> str:
    with i18n.language(code):
        return "".join(f"## {name}\n{reasons_text(*build())}\n" for name, build in SCENARIOS.items())


def _check_snapshot(text: str, path: Path) -> None:
    check_snapshot(path, text)


@pytest.fixture(scope="module")
def rendered() -> dict[str, str]:
    return {code: _all(code) for code in i18n.LANGUAGES}


@pytest.mark.parametrize("code", i18n.LANGUAGES)
def test_every_reason_in_each_language(rendered, code):
    _check_snapshot(rendered[code], SNAPSHOTS / f"reasons.{code}.txt")


# Words of the English messages that a Korean or Japanese reason must not carry (config keys,
# criterion names, commands and tokens such as `num_runs` or PASSED are allowed).
ENGLISH = re.compile(
    r"\b(dropped|rose|broke|stable|flaky|baseline|history|margin|cases?|criteri(on|a)|threshold|evaluated|"
    r"compared|significant|drop|level|runs?|re-runs?|judged?|answers?|suite|tolerated|reported|after Holm|"
    r"within|passed on|more|not|no|and|of|the)\b"
)
ALLOWED = re.compile(
    r"`[^`]*`|\(not_evaluated: warn\)|gate\.[a-z_.]+|num_[a-z]+|judge\.early_stop|run --case|temperature 0|\(?\bflaky\b\)?|"
    r"\b(judge|tool|traj|rouge|score|new|old)(?=:)|no judge credentials|judge refused the prompt|timeout|quota|reply is not JSON"  # criterion names, errors (data)
)


@pytest.mark.parametrize("code, script", [("ko", r"[\uac00-\ud7a3]"), ("ja", r"[\u3040-\u30ff]")])
def test_each_reason_is_written_in_the_language(rendered, code, script):
    """Every line the English snapshot gives a sentence is a sentence of the language: its
    fields filled (no `{name}` left), no English words of ours (names, keys and numbers are
    the same in every language), and the numbers the English one shows."""
    english = rendered["en"].splitlines()
    translated = rendered[code].splitlines()
    assert len(english) == len(translated)
    sentences, wrong = 0, []
    for en, text in zip(english, translated):
        assert not re.search(r"\{[a-z_]+\}", text), text
        numbers = sorted(re.findall(r"-?\d+\.\d+(?:e-\d+)?", en))
        assert sorted(re.findall(r"-?\d+\.\d+(?:e-\d+)?", text)) == numbers, (en, text)
        if text.startswith("##") or text.startswith("verdict ") or text.startswith("suite ") or text == "":
            continue
        body = text.split(": ", 1)[1] if text.startswith("  re-run") else text
        for name in re.findall(r"[\w/.-]+", "shop set " + " ".join(KO + JA)):
            body = body.replace(name, "")
        body = ALLOWED.sub("", re.sub(r"^  .+? \((?:[A-Z_]+|reported|pass|fail)\): |^  skipped: [a-z_]+: ", "", body))
        if en == text:  # nothing of ours in it: a name, or a reason quoted from elsewhere
            continue
        sentences += 1
        if not re.search(script, body) or ENGLISH.search(body):
            wrong.append((en, text, ENGLISH.search(body)))
    assert wrong == []
    assert sentences > 80


def test_confirmation_words_in_each_language():
    runs = [_rerun(1, 0.0), _rerun(2, 0.0)]
    flaky = [_rerun(1, 1.0), _rerun(2, 0.0)]
    judged = [Rerun(run=r.run, how="judge", status=r.status, criteria=r.criteria) for r in flaky]
    unheard = [_rerun(1, 0.0), Rerun(run=2, how="agent", status=_rerun(2, 0.0).status, criteria={"traj": crit(None)})]
    got = {}
    for code in i18n.LANGUAGES:
        with i18n.language(code):
            got[code] = [words(r, ["traj"], {}) for r in (runs, flaky, judged, unheard, None)]
    assert got["en"] == [
        "failed 2 of 2 re-runs: broken",
        "passed on re-run: flaky, not counted (1 of 2 passed)",
        "passed on re-draw: flaky, not counted (1 of 2 passed)",
        "1 of 2 re-runs not evaluated: not confirmed, the first run stands",
        "not re-run",
    ]
    assert got["ko"] == [
        "재실행 2회 중 2회 실패: 깨짐",
        "재실행에서 통과: flaky로 보고 집계에서 제외 (2회 중 1회 통과)",
        "재샘플링에서 통과: flaky로 보고 집계에서 제외 (2회 중 1회 통과)",
        "재실행 2회 중 1회 평가되지 않음: 확인되지 않아 첫 실행 결과를 유지",
        "재실행하지 않음",
    ]
    assert got["ja"] == [
        "再実行 2 回のうち 2 回不合格: 壊れたと判定",
        "再実行で合格: flaky として集計から除外（2 回中 1 回合格）",
        "再サンプリングで合格: flaky として集計から除外（2 回中 1 回合格）",
        "再実行 2 回のうち 1 回が未評価: 確認できないため、最初の実行の結果を採用",
        "再実行なし",
    ]


def test_a_list_of_names_is_one_message_a_translator_can_reorder():
    from evalgate.gate.words import case_names

    keys = [K(e) for e in KO[:8]]
    with i18n.language("ko"):
        assert case_names(keys) == ", ".join(f"set/{e}" for e in KO[:5]) + " 외 3개"
    with i18n.language("ja"):
        assert case_names(keys[:6]) == "、".join(f"set/{e}" for e in KO[:5]) + " ほか 1 件"  # Japanese lists with 、
    assert case_names(keys) == ", ".join(f"set/{e}" for e in KO[:5]) + " and 3 more"
    assert case_names(keys[:5]) == ", ".join(f"set/{e}" for e in KO[:5])


# --- the bundled example: `evalgate gate` against main's baseline -------------------------

MAIN_BASELINE = "examples/quickstart/main/store/baselines/evalgate/3832eed6a8ce36e43c268dbb5a3d7a83d18bd21c.json.gz"


def _quickstart_comparison(results_json: Path):
    from evalgate import results
    from evalgate.baselines import read_baseline_file
    from evalgate.baselines import DirStore

    baseline, info = read_baseline_file(REPO / MAIN_BASELINE)
    ledger = DirStore(REPO / "examples/quickstart/main/store", gate_id="evalgate").load_ledger("evalgate")
    current = results.read(results_json)
    return compare(baseline, current, GatePolicy(), ledger, info), current


@pytest.mark.parametrize("code", i18n.LANGUAGES)
def test_the_bundled_examples_verdict_reasons(cli, tmp_path, code):
    out = tmp_path / "gate"
    status, stdout, err = cli(
        "gate", "--language", code, "--config", "examples/quickstart/evalgate.yaml", "--baseline", MAIN_BASELINE,
        "--out", str(out), "--no-color", cwd=REPO,
    )
    assert status == 1, err
    with i18n.language(code):
        comparison, current = _quickstart_comparison(out / "results.json")
        text = reasons_text(comparison, current)
    _check_snapshot(text, SNAPSHOTS / f"quickstart.{code}.txt")
    # What `evalgate gate` prints: the verdict line and the reasons, in the language.
    head = {"en": "evalgate gate: FAIL against the baseline", "ko": "evalgate gate: FAIL (베이스라인 대비)", "ja": "evalgate gate: ベースラインとの比較で FAIL"}[code]
    shown = stdout[stdout.index(head):].splitlines()
    assert shown[0] == head
    assert shown[1 : 1 + len(comparison.reasons)] == [f"  {r}" for r in comparison.reasons]
    broke = {"en": "shop_support/faq-ko broke (a stable case)", "ko": "shop_support/faq-ko 깨짐(안정적이던 케이스)", "ja": "安定していたケース shop_support/faq-ko が壊れました"}[code]
    assert f"  support-agent: {broke}" in shown
    comment = {"en": "comment: ", "ko": "코멘트: ", "ja": "コメント: "}[code]
    assert shown[-1].startswith(comment) and str(out / "comment.md") in shown[-1]
    note = {
        "en": "note: the baseline's commit 3832eed6a8ce is not in this clone",
        "ko": "참고: 베이스라인 커밋(3832eed6a8ce)이 이 클론에 없습니다",
        "ja": "注記: ベースラインのコミット 3832eed6a8ce がこのクローンにありません",
    }[code]
    assert note in err or "not in this clone" not in err, err
    where = {"en": "with the flake ledger of", "ko": "의 flaky 기록 포함", "ja": "の flaky 記録を使用"}[code]
    assert where in err, err


# --- notes beside the verdict: the local gate's, the base policy's, a fork's outputs ------


def test_notes_beside_the_verdict_in_each_language():
    import argparse

    from evalgate.engine import SuitePlan
    from evalgate.gate.absolute import absolute_verdict
    from evalgate.gate.base_policy import MAX_DIFF_LINES, diff
    from evalgate.local_gate import choose_base
    from evalgate.trusted import NOTHING_FOR_SUITE, Outputs, attach_outputs

    def notes() -> list[str]:
        out = choose_base(argparse.Namespace(base_sha=None), None).notes
        base = {"gate": {f"key_{i}": i for i in range(MAX_DIFF_LINES)}}
        out.append(diff(base, {"gate": {f"key_{i}": i + 1 for i in range(MAX_DIFF_LINES)}}).splitlines()[-1])  # type: ignore[union-attr]
        plan = SuitePlan("ホーム", [])
        out += attach_outputs([plan], Outputs(skipped=3))
        assert plan.agent_error == NOTHING_FOR_SUITE  # results.json keeps it in English
        result = suite("ホーム", {}).model_copy(update={"cases": [crit_case()], "agent_error": plan.agent_error})
        out += absolute_verdict(result)[1]
        return out

    got = {}
    for code in i18n.LANGUAGES:
        with i18n.language(code):
            got[code] = notes()
    assert got["en"] == [
        "not in a git checkout, so there is no base commit: judged on absolute thresholds (pass --baseline FILE to compare with one)",
        "... 84 more lines",  # 80 changed keys: 164 lines of unified diff, the first 80 shown
        "suite ホーム: the pull request's outputs hold nothing for this suite, so none of its cases was scored",
        "3 lines of the pull request's inference.jsonl were not inference records and were skipped",
        "the pull request's outputs hold nothing for this suite, so none of its cases was scored",
    ]
    more = 84
    assert got["ko"] == [
        "git 체크아웃이 아니어서 베이스 커밋이 없으므로 절대 임계값으로 판정했습니다(베이스라인과 비교하려면 --baseline FILE을 지정하십시오)",
        f"... {more}줄 더 있음",
        "스위트 ホーム: PR의 출력에 이 스위트의 내용이 없어 어떤 케이스도 채점하지 못했습니다",
        "PR의 inference.jsonl 중 3줄은 추론 레코드가 아니어서 건너뛰었습니다",
        "PR의 출력에 이 스위트의 내용이 없어 어떤 케이스도 채점하지 못했습니다",
    ]
    assert got["ja"] == [
        "git のチェックアウトではないため、ベースコミットがありません。絶対しきい値で判定しました（ベースラインと比較するには --baseline FILE を指定してください）",
        f"... ほか {more} 行",
        "スイート ホーム: PR の出力にこのスイートのものがないため、このスイートのケースは 1 件も採点していません",
        "PR の inference.jsonl のうち 3 行は推論のレコードではないため、スキップしました",
        "PR の出力にこのスイートのものがないため、このスイートのケースは 1 件も採点していません",
    ]


def crit_case():
    return one({"주문_조회": {"tool": 1.0}}).suites[0].cases[0]
