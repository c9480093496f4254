"""The terminal summary and the end-of-run lines in English, Korean and Japanese.

Snapshots live in tests/snapshots/terminal/ and are compared exactly (whole text, no colour).
After an intended change, run with EVALGATE_UPDATE_SNAPSHOTS=1, then read every changed file.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO, check_snapshot
from evalgate import adk, efficiency, i18n
from evalgate.criteria.response_match import ResponseMatch
from evalgate.criteria.tool_trajectory import ToolTrajectory
from evalgate.reports.terminal import Progress, display_width, failed_run_line, summary_table
from test_reports import RM, TT, _cut, _invocation, _pair, _run, _scored, _suite, _unscored

SNAPSHOTS = Path(__file__).parent / "snapshots" / "terminal"
V2 = "final_response_match_v2"


def _snapshot(name: str, text: str) -> None:
    check_snapshot(SNAPSHOTS / name, text)


def _turn(tokens: int, seconds: float, tools: int) -> adk.Invocation:
    """A turn as ADK records it: model calls with token usage, tool calls, durations."""
    calls = [{"function_call": {"name": "lookup_order", "args": {"주문": "B2019"}}} for _ in range(tools)]
    usage = {"prompt_token_count": tokens - 20, "candidates_token_count": 20}
    return adk.Invocation.model_validate({
        "invocation_id": "i",
        "user_content": {"role": "user", "parts": [{"text": "주문 B2019 어디쯤 왔나요?"}]},
        "final_response": {"role": "model", "parts": [{"text": "配送中です。"}]},
        "intermediate_data": {"invocation_events": [
            {"author": "agent", "content": {"role": "model", "parts": calls}, "usage_metadata": usage, "model_version": "m"},
            {"author": "agent", "usage_metadata": usage, "model_version": "m"},
        ]},
        "duration": seconds,
        "model_duration": seconds * 0.6,
        "tool_duration": seconds * 0.25,
    })


def _with_efficiency(pair, turns: list[adk.Invocation]):
    pair[1].efficiency = efficiency.compute_one(turns)
    return pair


def _results():
    """Two suites with Korean and Japanese eval sets and case ids: passed, failed, not
    evaluated (no outputs), incomplete (a judge without credentials), efficiency values, a
    threshold that varies, a warning, and a policy that fails incomplete cases."""
    hello = _invocation("배송 조회", "배송 중입니다.", [("lookup_order", {"id": "B2019"})])
    wrong = _invocation("返品したい", "承知しました。", [("cancel_order", {"id": "C3051"})])
    both = {TT: ToolTrajectory(threshold=1.0), RM: ResponseMatch(threshold=0.7)}
    support = _suite(
        "고객지원",
        "warn",
        [
            _with_efficiency(_pair("주문_문의", "배송_조회", both, {TT: _scored(1.0, 1.0), RM: _scored(0.7, 0.91)}, [hello], [hello]), [_turn(1200, 2.0, 1)]),
            _with_efficiency(_pair("주문_문의", "환불_요청", both, {TT: _scored(1.0, 0.0), RM: _scored(0.7, 0.42)}, [wrong], [hello]), [_turn(1500, 3.1, 2), _turn(900, 1.5, 0)]),
            _pair("注文セット", "配送状況の確認", both, {TT: _unscored(1.0), RM: _unscored(0.7)}, None, [hello]),
        ],
        warnings=["1 of 3 cases were not evaluated"],
    )
    judged = {TT: ToolTrajectory(threshold=1.0)}
    legacy = _suite(
        "レガシー",
        "fail",
        [
            _pair("返品", "返品について", judged, {TT: _scored(1.0, 1.0), V2: _unscored(0.8, "no judge credentials")}, [hello], [hello]),
            _pair("返品", "반품_문의", judged, {TT: _scored(0.5, 1.0), V2: _scored(0.6, 0.75)}, [hello], [hello]),
        ],
    )
    return _run(support, legacy)[0]


@pytest.mark.parametrize("code", i18n.LANGUAGES)
def test_summary_snapshot_in_each_language(code):
    with i18n.language(code):
        text = summary_table(_results(), color=False)
    _snapshot(f"summary.{code}.txt", text)


def _tables(text: str) -> list[list[str]]:
    """Each table's rows, header first: after a suite's heading (up to its efficiency line)
    and after the section titles, in the current language."""
    titles = ("  " + i18n._("failed cases"), "  " + i18n._("not evaluated"))
    tables = []
    for block in (b.splitlines() for b in text.split("\n\n")):
        if block and (not block[0].startswith(" ") and len(block) > 1 or block[0] in titles):
            tables.append([r for r in block[1:] if not r.startswith("  " + i18n._("efficiency"))])
    return tables


@pytest.mark.parametrize("code", i18n.LANGUAGES)
def test_korean_and_japanese_headers_align_with_their_columns(code):
    """A header in Hangul or kana takes two columns a character: every column starts at the
    same display offset in the header and in every row, and right-aligned columns end together."""
    with i18n.language(code):
        text = summary_table(_results(), color=False)
        tables = _tables(text)
    assert len(tables) == 5, text  # per suite its criteria and not-evaluated tables; the first's failed cases
    if code != "en":  # the check below would pass on ASCII alone: make sure wide headers are in it
        assert any(len(t[0]) < display_width(t[0]) for t in tables)
    for rows in tables:
        header = rows[0]
        starts = [display_width(header[: m.start()]) for m in re.finditer(r"(?<=  )\S", header)]
        assert starts, header
        for row in rows[1:]:
            for col in starts:
                prefix = _cut(row, col)
                assert display_width(prefix) == col and prefix.endswith("  "), (code, row, col)
        if not rows[0].rstrip().endswith(("reason", "이유", "理由")):  # a right-aligned last column
            assert len({display_width(r) for r in rows}) == 1, rows


def test_english_is_byte_identical_to_what_scripts_parse():
    """The lines a script may read stay as they were in English."""
    text = summary_table(_results(), color=False)
    assert "\noverall: FAILED (5 cases in 2 suites: 3 passed, 1 failed, 1 not evaluated; 2 incomplete, with a criterion not evaluated)\n" in text
    assert "  criterion                  threshold  mean  passed  failed  not evaluated\n" in text


@pytest.mark.parametrize(
    "code, line",
    [
        ("en", "agent run failed: 고객지원/환불_요청 run 2: RuntimeError: 타임아웃 (its output, 3 lines: results.json, report.html)"),
        ("ko", "에이전트 실행 실패: 고객지원/환불_요청 2번째 실행: RuntimeError: 타임아웃 (출력 3줄: results.json, report.html)"),
        ("ja", "エージェントの実行に失敗: 고객지원/환불_요청（2 回目の実行）: RuntimeError: 타임아웃（出力 3 行は results.json と report.html に記録）"),
    ],
)
def test_failed_run_line_in_each_language(code, line):
    with i18n.language(code):
        assert failed_run_line("고객지원", "환불_요청", 2, "RuntimeError: 타임아웃", "a\nb\nc") == line


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    "code, label, lines",
    [
        ("en", None, ["cases: 1/2 (50%) 4 s, about 4 s left", "cases: 2/2 (100%) 9 s", "1/3 cases  1 min 5 s, about 2 min 11 s left"]),
        ("ko", "에이전트 실행", ["에이전트 실행: 1/2 (50%) 4초 경과, 약 4초 남음", "에이전트 실행: 2/2 (100%) 9초",
                            "1/3 에이전트 실행  1분 5초 경과, 약 2분 11초 남음"]),
        ("ja", None, ["ケース: 1/2 (50%) 4 秒経過、残り約 4 秒", "ケース: 2/2 (100%) 9 秒", "1/3 ケース  1 分 5 秒経過、残り約 2 分 11 秒"]),
    ],
)
def test_progress_label_in_each_language(code, label, lines):
    """The elapsed time and the time left in the report's language, as every other duration
    (evalgate.reports.duration): `9 秒`, `1분 5초`, not `9s`."""
    import io

    out, clock = io.StringIO(), _Clock()
    with i18n.language(code):
        progress = Progress(2, out, tty=False, clock=clock, **({"label": label} if label else {}))
        clock.now = 4.2
        progress.advance()
        clock.now = 9.0
        progress.advance()
        bar, clock = io.StringIO(), _Clock()  # the terminal's bar, drawn after a minute
        progress = Progress(3, bar, tty=True, clock=clock, **({"label": label} if label else {}))
        clock.now = 65.4
        progress.advance()
    assert out.getvalue().splitlines() == lines[:2]
    assert bar.getvalue() == "\r\x1b[K[" + "#" * 10 + "-" * 20 + "] " + lines[2]


# --- the CLI ------------------------------------------------------------------------------

MAIN_BASELINE = "examples/quickstart/main/store/baselines/evalgate/3832eed6a8ce36e43c268dbb5a3d7a83d18bd21c.json.gz"


def _gate_ko(cli, tmp_path, *extra: str) -> tuple[int, str, str]:
    out = tmp_path / "gate"
    code, stdout, err = cli("gate", "--config", "examples/quickstart/evalgate.yaml", "--baseline", MAIN_BASELINE, "--out", str(out), "--no-color", "--language", "ko", *extra, cwd=REPO)
    return code, stdout.replace(str(out), "OUT"), err.replace(str(out), "OUT")


def test_gate_on_the_bundled_example_in_korean(cli, tmp_path):
    """The README's first command with --language ko: the whole terminal output, as a snapshot."""
    code, stdout, err = _gate_ko(cli, tmp_path)
    assert code == 1, err
    _snapshot("gate.quickstart.ko.txt", stdout)
    # The verdict, the lines a script may look for, the where-the-files-are line: in Korean,
    # with the tokens that are never translated kept.
    assert "evalgate gate: FAIL (베이스라인 대비)\n" in stdout
    assert "shop_support/order-status-ko 깨짐(안정적이던 케이스)" in stdout
    assert "코멘트: OUT/comment.md  리포트: OUT/report.html\n" in stdout
    assert f"베이스 커밋: 3832eed6a8ce ({MAIN_BASELINE}에 담긴 결과의 커밋)\n" in err
    assert f"베이스라인: 커밋 3832eed6a8ce, 출처: {MAIN_BASELINE}, examples/quickstart/main/store의 flaky 기록 포함\n" in err
    assert "overall:" not in stdout and "  criterion " not in stdout and "results:" not in stdout  # English left only in the gate's reasons (not translated here yet)


def test_gate_quiet_line_in_korean_and_english(cli, tmp_path):
    code, stdout, _ = _gate_ko(cli, tmp_path, "--quiet")
    assert (code, stdout) == (1, "evalgate gate: FAIL (베이스라인 대비)\n")
    out = tmp_path / "en"
    code, stdout, _ = cli("gate", "--config", "examples/quickstart/evalgate.yaml", "--baseline", MAIN_BASELINE, "--out", str(out), "--quiet", cwd=REPO)
    assert (code, stdout) == (1, "evalgate gate: FAIL against the baseline\n")


@pytest.mark.parametrize(
    "code, quiet, report",
    [
        ("en", "evalgate: FAILED (7 passed, 3 failed, 0 not evaluated)\n", "report: OUT/report.html"),
        ("ko", "evalgate: FAILED (통과 7, 실패 3, 미평가 0)\n", "리포트: OUT/report.html"),
        ("ja", "evalgate: FAILED (合格 7、不合格 3、未評価 0)\n", "レポート: OUT/report.html"),
    ],
)
def test_run_prints_its_verdict_and_files_in_each_language(cli, tmp_path, code, quiet, report):
    out = tmp_path / "o"
    args = ("run", "--config", "examples/quickstart/evalgate.yaml", "--out", str(out), "--no-color", "--language", code)
    status, stdout, _ = cli(*args, "--quiet", cwd=REPO)
    assert (status, stdout) == (1, quiet)
    status, stdout, err = cli(*args, "--case", "*-ko", cwd=REPO)
    stdout, err = stdout.replace(str(out), "OUT"), err.replace(str(out), "OUT")
    assert report + "\n" in stdout
    selected = {"en": "selected 3 of 10 cases (--case '*-ko')", "ko": "케이스 10개 중 3개 선택 (--case '*-ko')", "ja": "ケース 10 件中 3 件を選択（--case '*-ko'）"}
    assert selected[code] + "\n" in err


@pytest.mark.parametrize(
    "code, shard, merged, compared",
    [
        ("en", "shard 1/2: 4 of 10 cases (the 2 shards hold 4, 6 cases)", "merged 2 shards: 10 cases", "report: OUT/report.html"),
        ("ko", "샤드 1/2: 케이스 10개 중 4개 (샤드 2개가 각각 케이스 4, 6개)", "샤드 2개 병합: 케이스 10개", "리포트: OUT/report.html"),
        ("ja", "シャード 1/2: ケース 10 件中 4 件（2 個のシャードのケース数: 4、6 件）", "シャード 2 個をマージ: ケース 10 件", "レポート: OUT/report.html"),
    ],
)
def test_shards_merge_and_compare_say_so_in_each_language(cli, tmp_path, code, shard, merged, compared):
    config = ("--config", "examples/quickstart/evalgate.yaml", "--no-color", "--language", code)
    errs = []
    for k in (1, 2):
        status, _, err = cli("run", *config, "--shard", f"{k}/2", "--out", str(tmp_path / f"s{k}"), cwd=REPO)
        assert status in (0, 1), err
        errs.append(err)
    assert errs[0].splitlines()[0] == shard
    status, stdout, err = cli("merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out", str(tmp_path / "OUT"), "--no-color", "--language", code, cwd=tmp_path)
    assert status == 1 and err == merged + "\n", err
    status, _, err = cli("compare", "--current", "OUT/results.json", "--baseline", str(REPO / MAIN_BASELINE), "--language", code, cwd=tmp_path)
    assert err.splitlines()[-1] == compared, err
