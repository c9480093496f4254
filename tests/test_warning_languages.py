"""The suite warnings in English, Korean and Japanese: made while the run happens, in the run's
language (`--language`, else the config's report.language), stored so in results.json, and
shown by the terminal summary, report.html and (the agent error, as the suite's reason) the
comment. Warnings derived from a suite's cases are recognised in any language where a suite is
derived again (merge, a `run --case` baseline, a shard's cut), so none is doubled.

A project in Korean and Japanese with every kind of warning a run without a judge can have:
an actual record of no case, unknown keys of another evalgate version, a case whose recorded
run failed (incomplete), an agent that fails every case run, a custom metric criteria never
names. Snapshots: tests/snapshots/terminal/warnings.{en,ko,ja}.txt (the terminal summary,
compared whole; EVALGATE_UPDATE_SNAPSHOTS=1 rewrites them, then read the diff).
"""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path

import pytest

from evalgate import i18n, results
from evalgate.gate import compare
from evalgate.config import GateConfig
from evalgate.reports.markdown import render_comment
from evalgate.reports.terminal import summary_table
from fake_github import fake_github  # noqa: F401  (fixture)
from test_entrypoint import action, history  # noqa: F401  (fixtures; `ws` below: the project in Japanese)
from test_terminal_languages import _snapshot

# The agent says why as google-adk does when the key is missing: the warning names that cause.
RUNNER_ERROR = "the command exited with code 1 before answering turn 1 of 1; stderr: No API key was provided"

# What each suite warns, in each language, in the order the run made them.
WARNINGS = {
    "en": {
        "고객지원": [
            "outputs.jsonl: line 1: ignored key '새_필드', which this evalgate does not know (written by another evalgate version?); "
            "1 more place in it had unknown keys too. Read with the evalgate version that wrote it to use them.",
            "evals/test_config.json: custom metric '정확도' is not named in criteria, so it never runs (nor under adk eval); add it to criteria with a threshold to run it",
            "1 actual record matches no eval case ('存在しないケース'); it was not scored",
            "1 of 2 cases have criteria that were not evaluated",
        ],
        "エージェント": [
            "evals/test_config.json: custom metric '정확도' is not named in criteria, so it never runs (nor under adk eval); add it to criteria with a threshold to run it",
            "the agent failed on every case run, so nothing it does was scored; without its model's key (a fork's pull request has no secrets) "
            f"the gate cannot judge it here. The error of 2 of 2 runs: {RUNNER_ERROR}",
            "2 of 2 cases have criteria that were not evaluated",
        ],
    },
    "ko": {
        "고객지원": [
            "outputs.jsonl: line 1: 이 evalgate 버전이 모르는 키를 무시했습니다('새_필드'). 다른 evalgate 버전이 쓴 파일일 수 있습니다. "
            "이 파일의 다른 1곳에도 알 수 없는 키가 있습니다. 이 키를 쓰려면 파일을 쓴 evalgate 버전으로 읽으십시오.",
            "evals/test_config.json: 사용자 정의 지표 '정확도': criteria에 없어 실행되지 않습니다(adk eval에서도 마찬가지입니다). 실행하려면 임계값과 함께 criteria에 추가하십시오",
            "actual 파일의 레코드 1개가 어떤 평가 케이스와도 맞지 않아 채점하지 않았습니다(예: '存在しないケース')",
            "케이스 2개 중 1개에 평가되지 않은 기준이 있습니다",
        ],
        "エージェント": [
            "evals/test_config.json: 사용자 정의 지표 '정확도': criteria에 없어 실행되지 않습니다(adk eval에서도 마찬가지입니다). 실행하려면 임계값과 함께 criteria에 추가하십시오",
            "에이전트가 모든 케이스 실행에서 실패해 그 동작을 하나도 채점하지 못했습니다. 모델 키가 없으면(포크의 PR에는 시크릿이 없습니다) "
            f"여기서는 게이트가 판단할 수 없습니다. 실행 2회 중 2회의 오류: {RUNNER_ERROR}",
            "케이스 2개 중 2개에 평가되지 않은 기준이 있습니다",
        ],
    },
    "ja": {
        "고객지원": [
            "outputs.jsonl: line 1: この evalgate が知らないキー '새_필드' を無視しました（別のバージョンの evalgate で書かれたファイルの可能性があります）。"
            "このファイル内のほかの 1 か所にも、この evalgate が知らないキーがありました。これらを使うには、そのファイルを書いたバージョンの evalgate で読み込んでください。",
            "evals/test_config.json: カスタム指標 '정확도' は criteria にないため実行されません（adk eval でも同じです）。実行するには、しきい値を付けて criteria に追加してください",
            "actual ファイルのレコード 1 件がどの評価ケースにも一致しないため、採点していません（例: '存在しないケース'）",
            "ケース 2 件中 1 件に未評価の基準があります",
        ],
        "エージェント": [
            "evals/test_config.json: カスタム指標 '정확도' は criteria にないため実行されません（adk eval でも同じです）。実行するには、しきい値を付けて criteria に追加してください",
            "エージェントがすべてのケース実行で失敗したため、何も採点できていません。モデルのキーがないため（フォークからの PR にはシークレットがありません）、"
            f"ここではゲートが判定できません。2 回の実行のうち 2 回のエラー: {RUNNER_ERROR}",
            "ケース 2 件中 2 件に未評価の基準があります",
        ],
    },
}
PREFIX = {"en": "warning: ", "ko": "경고: ", "ja": "警告: "}


def _turn(question: str, answer: str, tool: str, order: str) -> dict:
    return {
        "invocation_id": "t1",
        "user_content": {"role": "user", "parts": [{"text": question}]},
        "final_response": {"role": "model", "parts": [{"text": answer}]},
        "intermediate_data": {"tool_uses": [{"name": tool, "args": {"id": order}}], "tool_responses": [], "intermediate_responses": []},
    }


DELIVERY = _turn("주문 B2019 배송 어디쯤 왔나요?", "주문 B2019는 배송 중입니다.", "lookup_order", "B2019")
RETURN = _turn("注文 C3051 を返品したいです。", "C3051 の返品を受け付けました。", "start_return", "C3051")


def _project(root: Path, language: str | None = None) -> Path:
    """Two suites on one Korean/Japanese eval set: 고객지원 scores recorded outputs, エージェント runs
    an agent that fails every time (no model key)."""
    (root / "evals").mkdir(parents=True)
    evalset = {"eval_set_id": "주문", "eval_cases": [{"eval_id": "배송_조회", "conversation": [DELIVERY]}, {"eval_id": "返品の相談", "conversation": [RETURN]}]}
    (root / "evals" / "주문.evalset.json").write_text(json.dumps(evalset, ensure_ascii=False), encoding="utf-8")
    test_config = {
        "criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8},
        "custom_metrics": {"정확도": {"code_config": {"name": "metrics.accuracy"}}},  # never named in criteria
    }
    (root / "evals" / "test_config.json").write_text(json.dumps(test_config, ensure_ascii=False), encoding="utf-8")
    records = [
        {"eval_set_id": "주문", "eval_id": "배송_조회", "invocations": [DELIVERY], "새_필드": 1},  # a newer evalgate's key
        {"eval_set_id": "주문", "eval_id": "返品の相談", "invocations": [], "error": "タイムアウト (30 秒)"},  # its run failed: incomplete
        {"eval_set_id": "주문", "eval_id": "存在しないケース", "invocations": [RETURN], "새_필드": 2},  # no such case
    ]
    (root / "outputs.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    (root / "agent.py").write_text('import sys\nsys.stderr.write("No API key was provided\\n")\nsys.exit(1)\n', encoding="utf-8")
    config = {
        "version": 1,
        "suites": [
            {"name": "고객지원", "evalsets": "evals", "actual": "outputs.jsonl"},
            {"name": "エージェント", "evalsets": "evals", "agent": {"command": [sys.executable, "agent.py"]}},
        ],
    }
    if language:
        config["report"] = {"language": language}
    (root / "evalgate.yaml").write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
    return root


def _warnings(path: Path) -> dict[str, list[str]]:
    return {s["name"]: s["warnings"] for s in json.loads(path.read_text(encoding="utf-8"))["suites"]}


@pytest.mark.parametrize("code", i18n.LANGUAGES)
def test_a_runs_warnings_speak_its_language(code, cli, tmp_path):
    project = _project(tmp_path / "p")
    status, stdout, err = cli("run", "--language", code, "--no-color", "--out", "out", cwd=project)
    assert status == 1, err  # the agent's suite was not evaluated at all: no green exit for it
    # Stored as made: in the run's language (results.json's machine-read fields stay English).
    assert _warnings(project / "out" / "results.json") == WARNINGS[code]
    stored = json.loads((project / "out" / "results.json").read_text(encoding="utf-8"))
    assert [s["status"] for s in stored["suites"]] == ["PASSED", "NOT_EVALUATED"]
    # The terminal summary shows every one of them, with its prefix in the same language.
    for suite in WARNINGS[code].values():
        for w in suite:
            assert f"\n  {PREFIX[code]}{w}\n" in stdout, w
    run = results.read(project / "out" / "results.json")
    with i18n.language(code):
        _snapshot(f"warnings.{code}.txt", summary_table(run, color=False, times=False))  # the measured seconds differ per run
    # report.html lists them (the agent error once, as the suite's reason, not again as a warning).
    page = html.unescape((project / "out" / "report.html").read_text(encoding="utf-8"))
    listed = [re.sub(r"<[^>]+>", "", li).strip() for ul in re.findall(r'<ul class="reasons warnings">(.*?)</ul>', page, re.S) for li in re.findall(r"<li[^>]*>(.*?)</li>", ul, re.S)]
    agent_error = WARNINGS[code]["エージェント"][1]
    assert listed == [w for ws in WARNINGS[code].values() for w in ws if w != agent_error]
    assert agent_error in page
    # The comment: the agent error is the suite's ERROR reason, in the same words.
    comparison = compare(None, run, GateConfig())
    with i18n.language(code):
        comment = render_comment(comparison, run, gate_id="evalgate")
    assert f"- エージェント: ERROR: {agent_error}\n" in comment.replace("\\", "")
    # ... and every other warning of the run under each suite it concerns, marked as one (the
    # agent error is not said twice).
    flat = comment.replace("\\", "")
    for w in {w for ws in WARNINGS[code].values() for w in ws}:
        suites = sum(w in ws for ws in WARNINGS[code].values())
        assert flat.count(f"- :warning: {w}\n") == (0 if w == agent_error else suites), w


def test_the_configs_language_is_set_before_anything_is_made(cli, tmp_path):
    """report.language in the config, no --language: run and merge speak it (merge reads the
    config of the folder it runs in)."""
    project = _project(tmp_path / "p", language="ja")
    for k in (1, 2):
        status, _, err = cli("run", "--shard", f"{k}/2", "--no-color", "--out", f"s{k}", cwd=project)
        assert status == 1, err  # each shard holds a case of the agent that never ran
    status, _, err = cli("run", "--no-color", "--out", "whole", cwd=project)
    assert _warnings(project / "whole" / "results.json") == WARNINGS["ja"]
    status, stdout, err = cli("merge", "s1", "s2", "--out", "merged", "--no-color", cwd=project)
    assert status == 1, err
    # Each warning once, as the unsharded run has them: the shards' shared ones kept once, the
    # derived ones (incomplete cases, the agent error) made again in the config's language.
    assert _warnings(project / "merged" / "results.json") == WARNINGS["ja"]
    assert "警告: ケース 2 件中 1 件に未評価の基準があります" in stdout


def test_a_merge_in_another_language_derives_its_warnings_again_without_doubling(cli, tmp_path):
    project = _project(tmp_path / "p")
    for k in (1, 2):
        cli("run", "--shard", f"{k}/2", "--language", "ko", "--no-color", "--out", f"s{k}", cwd=project)
    status, _, err = cli("merge", "s1", "s2", "--out", "merged", "--language", "en", "--no-color", cwd=project)
    assert status == 1, err
    merged = _warnings(project / "merged" / "results.json")
    # What the shards' runs made stays in Korean; what the merge derives is in its English.
    assert merged == {
        "고객지원": WARNINGS["ko"]["고객지원"][:3] + WARNINGS["en"]["고객지원"][3:],
        "エージェント": WARNINGS["ko"]["エージェント"][:1] + WARNINGS["en"]["エージェント"][1:],
    }


@pytest.mark.parametrize("cut", ["selection", "shard"])
def test_a_suite_cut_from_results_of_another_language_drops_their_derived_warnings(cut, cli, tmp_path):
    """A `run --case` baseline and a shard's cut of a baseline are suites derived again from
    some of their cases: the incomplete-cases warning of the whole is dropped whatever language
    wrote it, and made again for the cut in the current one."""
    from evalgate.pipeline import selected_baseline, shard_of_results
    from evalgate.results import SelectionInfo
    from evalgate.shards import Shard

    project = _project(tmp_path / "p")
    cli("run", "--language", "ja", "--no-color", "--out", "out", cwd=project)
    whole = results.read(project / "out" / "results.json")
    with i18n.language("ko"):
        if cut == "selection":
            part = selected_baseline(whole, SelectionInfo(patterns=["返品*"], cases=1, of=2))
        else:
            part = shard_of_results(whole, Shard(1, 2))
    for suite in part.suites:
        ja = WARNINGS["ja"][suite.name]
        made = [w for w in ja if w not in (ja[-1], WARNINGS["ja"]["エージェント"][1])]
        derived = [suite.agent_error] if suite.agent_error else []
        if suite.counts.incomplete:
            derived.append(f"케이스 {suite.counts.cases}개 중 {suite.counts.incomplete}개에 평가되지 않은 기준이 있습니다")
        assert suite.warnings == made + derived, suite.name
    assert any(s.counts.incomplete for s in part.suites)  # a derived warning was made again


# --- publishing: what the action could not post, in the job summary and the log -----------


@pytest.fixture
def ws(tmp_path):
    from test_entrypoint import CONFIG
    from test_inputs import make_project

    return make_project(tmp_path / "ws", config=CONFIG + "report:\n  language: ja\n")


def test_a_forks_read_only_token_is_warned_in_the_configs_language(action, history):
    from test_entrypoint import _pull_request, _push, _set_outputs

    fake = action.fake
    assert action("push", _push(history[1]), sha=history[1]) == 0, action.stdout
    fake.read_only = True
    head = fake.add_commit([history[1]])
    _set_outputs(action.ws, regressed=True)
    assert action("pull_request", _pull_request(head, history[1]), sha=head) == 1
    said = [
        "このトークンではこの PR にコメントできません（フォークの読み取り専用トークンの可能性があります）。レポートは job summary にあります",
        "このトークンではコミットステータスを設定できません（evalgate）。判定は job summary と終了コードで確認できます",
    ]
    assert [line.rpartition("::")[2] for line in action.stdout.splitlines() if line.startswith("::warning")] == said
    for line in said:
        assert f"- :warning: {line}\n" in action.summary
    assert not fake.comments and not fake.statuses


@pytest.mark.parametrize(
    "code, posted",
    [
        ("en", "could not post the PR comment: "),
        ("ko", "PR 코멘트를 게시하지 못했습니다: "),
        ("ja", "PR コメントを投稿できませんでした: "),
    ],
)
def test_an_outage_is_warned_in_the_reports_language(code, posted, fake_github):  # noqa: F811
    from evalgate.github import GitHubClient
    from evalgate.publish import publish
    from test_publish import _comparison
    from evalgate.gate import Verdict

    client = GitHubClient(fake_github.url, fake_github.repository, fake_github.token, sleep=lambda s: None)
    head = fake_github.add_commit(message="PR head")
    fake_github.fail(r".*/comments", 502, times=50)
    with i18n.language(code):
        out = publish(client, _comparison(Verdict.PASS), "report", pr_number=7, head_sha=head)
    assert len(out.warnings) == 1 and out.warnings[0].startswith(posted), out.warnings
    assert "502" in out.warnings[0]  # GitHub's own words follow, as they came
