"""The PR comment and job summary in English, Korean and Japanese: the bundled example's comment
as snapshots in each language, the real command writing the same text, and the size limits
counted right for Korean and Japanese text.

The snapshots are tests/snapshots/markdown/quickstart.{en,ko,ja}.md, compared whole. After an
intended change (a message or a translation), rewrite them and read every changed file:

    EVALGATE_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_comment_languages.py
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import REPO, check_snapshot
from evalgate import i18n
from evalgate.gate import CaseChange, CaseKey, Verdict, compare
from evalgate.reports import markdown
from evalgate.reports.markdown import comment_length, render_comment, render_summary
from fake_gemini import fake_gemini  # noqa: F401  (fixture)
from fake_github import fake_github  # noqa: F401  (fixture)
from test_entrypoint import action, history  # noqa: F401  (fixtures; `ws` below: the project in Korean)
from result_builders import case as _case, crit as _crit, inv as _inv
from test_markdown import RM, RUN_URL, TT, _comparison, _row, _run, _suite, check_safe, scenario_hostile

SNAPSHOTS = Path(__file__).parent / "snapshots" / "markdown"
EXAMPLE = REPO / "examples" / "quickstart"
MAIN_BASELINE = "examples/quickstart/main/store/baselines/evalgate/3832eed6a8ce36e43c268dbb5a3d7a83d18bd21c.json.gz"
# The run's own clock, fixed: the comment says how much older the baseline (2025-03-08 12:00) is.
STARTED_AT = "2025-03-11T12:00:00Z"


def _quickstart_comment(code: str) -> str:
    """What `evalgate gate --baseline MAIN_BASELINE` writes to comment.md for the bundled
    example, in language `code`, with the run's start time, duration and version fixed."""
    from evalgate import engine, local_gate
    from evalgate.config import load_config
    from evalgate.plan import build_plans, config_digest

    loaded = load_config(EXAMPLE / "evalgate.yaml")
    plans = build_plans(loaded)
    current = engine.run(plans, config_digest(loaded, plans))
    current.evalgate_version = "0.1.0"
    current.run = current.run.model_copy(update={"started_at": STARTED_AT, "duration_seconds": 1.9})
    base = local_gate.Base()
    local_gate._read_file(base, str(REPO / MAIN_BASELINE))  # the baseline, its store's ledger and trend, as the command reads them
    gate = loaded.config.gate  # the baseline's commit is not in this clone: the working tree's gate section
    with i18n.language(code):  # the gate's reasons are written in the language too
        comparison = compare(base.results, current, gate, base.ledger, base.info)
        return render_comment(comparison, current, gate_id=gate.id, full_report_hint=local_gate.FULL_REPORT, trend=base.trend)


def _snapshot(name: str, text: str) -> None:
    check_snapshot(SNAPSHOTS / name, text)


@pytest.mark.parametrize("code", i18n.LANGUAGES)
def test_quickstart_comment_snapshot(code, monkeypatch):
    monkeypatch.chdir(REPO)
    text = _quickstart_comment(code)
    _snapshot(f"quickstart.{code}.md", text)
    check_safe(text, markdown.COMMENT_LIMIT, run_url=None)
    # The cases' Korean and Japanese text is quoted as written, in every language.
    assert "주문번호 B2019 배송이 어디쯤 왔는지 알려주세요." in text
    assert i18n.current() == "en"


# Words of the comment in each language: headings, table headers, the case kinds, the headline.
WORDS = {
    "en": ["### Regressed cases (3)", "| criterion | threshold | cases | baseline |", "<b>broken stable</b>", "3 regressed cases (2 broken stable)", "### Fixed cases (1)"],
    "ko": ["### 회귀한 케이스 (3)", "| 기준 | 임계값 | 케이스 | 베이스라인 |", "<b>깨짐 (안정적이던 케이스)</b>", "회귀한 케이스 3개 (안정적이던 케이스 2개 깨짐)", "### 새로 통과한 케이스 (1)"],
    "ja": ["### 悪化したケース（3）", "| 基準 | しきい値 | ケース | ベースライン |", "<b>壊れた安定ケース</b>", "悪化したケース 3 件（うち 2 件は安定していたケース）", "### 直ったケース（1）"],
}


@pytest.mark.parametrize("code", i18n.LANGUAGES)
def test_the_comment_speaks_the_language_and_keeps_the_tokens(code, monkeypatch):
    monkeypatch.chdir(REPO)
    text = _quickstart_comment(code)
    for word in WORDS[code]:
        assert word in text, word
    for other in set(i18n.LANGUAGES) - {code}:
        assert not any(word in text for word in WORDS[other][:3]), other
    # Never translated: verdicts, criterion names, case ids, the marker, config values.
    lines = text.splitlines()
    assert lines[0] == "<!-- evalgate:gate=evalgate -->"
    assert lines[1].startswith("**evalgate FAIL** · ")
    assert "**FAIL** (p=0.008)" in text and "**INCONCLUSIVE** (p=0.025)" in text
    sep = {"ja": "、"}.get(code, ", ")  # each language's list separator (GLOSSARY.md, "Lists")
    assert f"shop_support / order-status-ko: response_match_score 0.92 → 0.44{sep}tool_trajectory_avg_score 1.00 → 0.00" in text
    assert "regression" in lines[-1]  # gate.mode, a config value


@pytest.mark.parametrize("code", ["ko", "ja"])
def test_the_command_writes_the_snapshots_text(code, cli, tmp_path):
    """`evalgate gate --language` writes what the snapshot shows, but for the two lines that
    depend on the clock (the baseline's age and the run time)."""
    out = tmp_path / "gate"
    status, _, err = cli("gate", "--config", "examples/quickstart/evalgate.yaml", "--baseline", MAIN_BASELINE, "--out", str(out), "--no-color", "--language", code, cwd=REPO)
    assert status == 1, err
    written = (out / "comment.md").read_text(encoding="utf-8").splitlines()
    snapshot = (SNAPSHOTS / f"quickstart.{code}.md").read_text(encoding="utf-8").splitlines()
    assert len(written) == len(snapshot)
    differ = [i for i, (a, b) in enumerate(zip(written, snapshot)) if a != b]
    baseline_line = next(i for i, line in enumerate(snapshot) if "3832eed6a8ce" in line)
    assert set(differ) <= {baseline_line, len(snapshot) - 1}, [written[i] for i in differ]


def _korean_regressions(n: int, size: int) -> tuple:
    """`n` regressed cases whose messages and responses are `size` characters of Korean."""
    body = ("주문번호 B2019 배송이 어디쯤 왔는지 알려주세요. 죄송합니다, 조회되는 배송 정보가 없습니다. " * (size // 50 + 1))[:size]
    cases, changes = [], []
    for i in range(n):
        eval_id = f"배송-문의-{i:04d}"
        cases.append(_case("고객지원", eval_id, {TT: _crit(1.0, (0.0, {})), RM: _crit(0.7, (0.1, {"reasons": [body]}))},
                           [_inv(f"질문 {i}: {body}", body, body, [("lookup_order", {"order_id": f"B{i}", "메모": body[:200]})], [("lookup_order", {"order_id": f"B{i}"})])]))
        changes.append(CaseChange(CaseKey("지원", "고객지원", eval_id), "regressed", {TT: (1.0, 0.0), RM: (0.9, 0.1)}))
    current = _run({"지원": cases})
    comparison = _comparison(
        Verdict.FAIL,
        [_suite("지원", Verdict.FAIL, [_row("지원", TT, 1.0, n, 1.0, 0.0, Verdict.FAIL, p=0.0001), _row("지원", RM, 0.7, n, 0.9, 0.1, Verdict.FAIL, p=0.0001)],
                reasons=[f"케이스 {n}개 회귀"], changes=changes, added=[CaseKey("지원", "고객지원", f"신규-{i}") for i in range(n // 10)])],
        reasons=["지원: 기준 2개 하락"],
    )
    return comparison, current


def test_comment_length_counts_as_github_does():
    assert comment_length("abc") == 3
    assert comment_length("회귀한 케이스") == 7  # one a character, like Latin
    assert comment_length("悪化したケース") == 7
    assert comment_length("😀") == 2  # beyond the BMP: two UTF-16 units


@pytest.mark.parametrize("code", ["ko", "ja"])
def test_a_korean_comment_is_cut_to_githubs_limit(code):
    comparison, current = _korean_regressions(300, 3_000)
    with i18n.language("en"):
        whole = render_summary(comparison, current)
    assert len(whole) > 2 * markdown.COMMENT_LIMIT  # far over, so the comment must be cut
    with i18n.language(code):
        text = render_comment(comparison, current, run_url=RUN_URL, full_report_hint="job summary of the run, and every case in report.html among the run's artifacts")
    check_safe(text, markdown.COMMENT_LIMIT)
    assert comment_length(text) <= markdown.COMMENT_LIMIT
    assert len(text.encode("utf-8")) <= 262_144  # what GitHub stores, in bytes
    assert comment_length(text) > markdown.COMMENT_LIMIT * 0.5  # cut to fit, not to nothing
    shortened = {"ko": "**코멘트 길이 제한 65,000자에 맞춰 줄였습니다**: ", "ja": "**コメントの上限 65,000 文字に収めるため短縮しました**: "}[code]
    assert shortened in text
    # The hint the action passes is translated too.
    assert {"ko": "전체 리포트: 실행의 job summary", "ja": "レポート全体は実行の job summary"}[code] in text


def test_emoji_count_twice_against_the_comment_limit():
    """A comment of emoji that fits by code points but not by UTF-16 units is cut."""
    comparison, current = _korean_regressions(12, 3_000)
    for case in current.suites[0].cases:
        case.invocations[0].actual_response = "😀" * 3_000
    with i18n.language("ko"):
        full = render_comment(comparison, current, limit=10**6)
        limit = len(full)  # what counting code points would have let through whole
        assert comment_length(full) > limit
        text = render_comment(comparison, current, limit=limit)
    assert comment_length(text) <= limit
    assert f"**코멘트 길이 제한 {limit:,}자에 맞춰 줄였습니다**" in text


@pytest.mark.parametrize("code", ["ko", "ja"])
def test_the_job_summary_limit_counts_utf8_bytes(code):
    comparison, current = _korean_regressions(60, 2_000)
    with i18n.language(code):
        text = render_summary(comparison, current, limit=60_000)
    assert len(text.encode("utf-8")) <= 60_000
    assert len(text) < 40_000  # three bytes a Korean character: far fewer characters than the limit's number
    assert {"ko": "job summary 크기 제한 60,000바이트", "ja": "job summary の上限 60,000 バイト"}[code] in text


@pytest.mark.parametrize("code", ["ko", "ja"])
def test_hostile_text_stays_inert_in_every_language(code):
    with i18n.language(code):
        text = render_comment(*scenario_hostile(), run_url=RUN_URL)
    check_safe(text, markdown.COMMENT_LIMIT)


def test_commit_status_description_in_each_language():
    from evalgate.publish import status_description

    with i18n.language("ko"):
        ko = status_description(Verdict.FAIL, 7, 3, 3)
        ko_fork = status_description(Verdict.INCONCLUSIVE, 1_204, 0, 0, rescored=True)
    with i18n.language("ja"):
        ja = status_description(Verdict.FAIL, 7, 3, 3)
    assert ko == "evalgate 실패: 통과 7, 실패 3, 회귀 3"
    assert ko_fork == "evalgate 판단 보류 (리포트 참조) (포크의 출력을 다시 채점): 통과 1204, 실패 0"
    assert ja == "evalgate 不合格: 合格 7、不合格 3、悪化 3"
    assert status_description(Verdict.FAIL, 7, 3, 3) == "evalgate failed: 7 passed, 3 failed, 3 regressed"
    with i18n.language("ko"):
        assert len(status_description(Verdict.ERROR, 10**60, 10**60, 10**60)) <= 140


def test_the_side_by_side_section_in_japanese(fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    """gate.pairwise's row and its worst losses, judged through the real client against a fake
    Gemini API, in Japanese."""
    from pairwise_judges import equal_paraphrases
    from test_pairwise import DROPPED, KEPT, PARAPHRASE, _judge, _policy, _run as _pair_run

    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = equal_paraphrases()
    baseline = _pair_run({f"c{i:02}": [KEPT.format(n=i)] for i in range(20)})
    current = _pair_run({f"c{i:02}": [DROPPED if i < 14 else PARAPHRASE.format(n=i) if i < 17 else KEPT.format(n=i)] for i in range(20)})
    _, comparison = _judge(baseline, current, _policy(), tmp_path)
    with i18n.language("ja"):
        comment = render_comment(comparison, current)
    assert "| ペアワイズ判定 (ジャッジ、両方の順序) | – | 20 | – | – | ベースラインと異なる回答 17 件のうち、ベースラインより悪い 14 件、良い 0 件、同等 3 件" in comment
    assert "### ペアワイズ判定でベースラインより悪い回答（14）" in comment
    assert "_差が最も明確な 5 件です。すべての組は report.html にあります。_" in comment
    assert "ベースラインの回答を A として提示: **ベースラインの回答を支持**: It keeps the order number and the tracking id." in comment
    assert "ベースラインの回答:" in comment and "この PR の回答:" in comment
    check_safe(comment, markdown.COMMENT_LIMIT, run_url=None)


# --- the action: comment, commit status, job summary and tracking issue in the config's language


@pytest.fixture
def ws(tmp_path):
    from test_entrypoint import CONFIG
    from test_inputs import make_project

    return make_project(tmp_path / "ws", config=CONFIG + "report:\n  language: ko\n")


def test_the_action_speaks_the_configs_language(action, history):
    """report.language: ko: the job summary's notes, the PR comment, the commit status's
    description and the tracking issue are Korean; the status context, the step outputs and
    the hidden markers stay as they are (programs read them)."""
    from entrypoint.tracking import tracking_marker
    from evalgate.reports.markdown import marker
    from test_entrypoint import PR, _pull_request, _push, _set_outputs

    fake = action.fake
    assert action("push", _push(history[1]), sha=history[1]) == 0, action.stdout
    assert f"`{history[1][:12]}`의 베이스라인을 저장하고 flaky 기록과 추이를 갱신했습니다 (게이트 `evalgate`, 브랜치 `evalgate-data`)." in action.summary

    head = fake.add_commit([history[1]], "PR head")
    _set_outputs(action.ws, regressed=True)
    assert action("pull_request", _pull_request(head, history[1]), sha=head) == 1, action.stdout
    [comment] = fake.issue_comments(PR)
    headline = "**evalgate FAIL** · 회귀한 케이스 1개 · 케이스 2개: 통과 1, 실패 1, 미평가 0"
    assert comment["body"].startswith(marker("evalgate") + "\n" + headline + "\n")
    assert "<summary><b>회귀</b> home / lights-en: tool_trajectory_avg_score 1.00 → 0.00</summary>" in comment["body"]
    assert [(s["context"], s["state"], s["description"]) for s in fake.statuses[head]] == [("evalgate", "failure", "evalgate 실패: 통과 1, 실패 1, 회귀 1")]
    assert action.summary.startswith(headline + "\n") and "[워크플로 실행](https://github.com/octo/hello/actions/runs/" in action.summary
    assert action.outputs["verdict"] == "FAIL" and action.outputs["regressions"] == "1"

    assert action("schedule", {"schedule": "0 3 * * *"}, sha=history[1]) == 1, action.stdout
    [issue] = fake.issues.values()
    assert issue["title"] == "evalgate: 야간 실행 회귀 (evalgate)"
    assert issue["body"].startswith(tracking_marker("evalgate") + "\n" + headline)
    assert f"추적 이슈 #{issue['number']}: 열림." in action.summary
    assert 'x-axis ["' in issue["body"] and '"이번 실행"]' in issue["body"] and 'y-axis "평균"' in issue["body"]  # the trend charts

    _set_outputs(action.ws, regressed=False)
    assert action("schedule", {"schedule": "0 3 * * *"}, sha=history[1]) == 0, action.stdout
    assert fake.issue_comments(issue["number"])[0]["body"].startswith("야간 실행이 ")
