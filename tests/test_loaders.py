"""Loaders read what ADK reads: its own fixtures, both casings, eval history, folders."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import write_json
from evalgate.adk import Invocation
from evalgate.errors import InputError
from evalgate.loaders.actual import load_actual
from evalgate.loaders.evalsets import load_evalset

adk_evaluator = pytest.importorskip("google.adk.evaluation.agent_evaluator")


def _fixture_files(root: Path) -> list[Path]:
    files = sorted(root.rglob("*.test.json")) + sorted(root.rglob("*.evalset.json"))
    assert files, f"no fixtures under {root}"
    return files


def test_every_adk_fixture_loads_like_adk(shared_fixtures):
    """Same cases, invocations, tool calls and texts as ADK's own loader."""
    files = _fixture_files(shared_fixtures / "adk")
    assert len(files) == 11
    for path in files:
        ours = load_evalset(path).eval_set
        from google.adk.evaluation.eval_config import EvalConfig

        theirs = adk_evaluator.AgentEvaluator._load_eval_set_from_file(str(path), EvalConfig(), {})
        assert len(ours.eval_cases) == len(theirs.eval_cases), path
        for a, b in zip(ours.eval_cases, theirs.eval_cases):
            assert len(a.conversation) == len(b.conversation), path
            for inv_a, inv_b in zip(a.conversation, b.conversation):
                from google.adk.evaluation.eval_case import get_all_tool_calls

                calls_b = get_all_tool_calls(inv_b.intermediate_data)
                assert [(c.name, c.args) for c in inv_a.tool_calls()] == [(c.name, c.args) for c in calls_b], path
                assert inv_a.user_text() == "\n".join(p.text for p in inv_b.user_content.parts if p.text)
                ref_b = "\n".join(p.text for p in (inv_b.final_response.parts or []) if p.text) if inv_b.final_response else ""
                assert inv_a.final_text() == ref_b


def test_legacy_fixture_is_one_multi_turn_case_named_by_path(shared_fixtures):
    path = shared_fixtures / "adk" / "trip_planner_agent" / "trip_inquiry.test.json"
    loaded = load_evalset(path, base=shared_fixtures / "adk")
    assert loaded.legacy
    (case,) = loaded.eval_set.eval_cases
    assert case.eval_id == loaded.eval_set.eval_set_id == "trip_planner_agent/trip_inquiry.test.json"
    assert len(case.conversation) == 2
    assert [c.name for c in case.conversation[1].tool_calls()] == ["transfer_to_agent"]


def test_camel_case_and_snake_case_read_the_same(tmp_path):
    snake = {
        "eval_set_id": "s",
        "eval_cases": [
            {
                "eval_id": "c",
                "conversation": [
                    {
                        "user_content": {"parts": [{"text": "こんにちは"}], "role": "user"},
                        "final_response": {"parts": [{"text": "はい"}], "role": "model"},
                        "intermediate_data": {"tool_uses": [{"name": "t", "args": {"a": 1}}]},
                    }
                ],
            }
        ],
    }
    camel = {
        "evalSetId": "s",
        "evalCases": [
            {
                "evalId": "c",
                "conversation": [
                    {
                        "userContent": {"parts": [{"text": "こんにちは"}], "role": "user"},
                        "finalResponse": {"parts": [{"text": "はい"}], "role": "model"},
                        "intermediateData": {"toolUses": [{"name": "t", "args": {"a": 1}}]},
                    }
                ],
            }
        ],
    }
    a = load_evalset(write_json(tmp_path / "a.evalset.json", snake)).eval_set
    b = load_evalset(write_json(tmp_path / "b.evalset.json", camel)).eval_set
    assert a == b
    assert a.eval_cases[0].conversation[0].tool_calls()[0].args == {"a": 1}


def test_invocation_events_and_tool_uses_give_the_same_calls():
    calls = [{"name": "get_weather", "args": {"city": "서울"}}, {"name": "get_time", "args": {}}]
    flat = Invocation.model_validate({"user_content": {"parts": [{"text": "q"}]}, "intermediate_data": {"tool_uses": calls}})
    events = Invocation.model_validate(
        {
            "user_content": {"parts": [{"text": "q"}]},
            "intermediate_data": {
                "invocation_events": [
                    {"author": "agent", "content": {"parts": [{"function_call": calls[0]}, {"text": "thinking"}]}},
                    {"author": "tool", "content": {"parts": [{"function_response": {"name": "get_weather", "response": {"t": 3}}}]}},
                    {"author": "agent", "content": {"parts": [{"functionCall": calls[1]}]}},
                ]
            },
        }
    )
    assert [(c.name, c.args) for c in flat.tool_calls()] == [(c.name, c.args) for c in events.tool_calls()]
    assert [r.response for r in events.tool_responses()] == [{"t": 3}]


def _adk_history(eval_set_id: str, eval_id: str, invocations: list[dict]) -> str:
    """An eval-history file written by ADK's own models."""
    from google.adk.evaluation.eval_case import Invocation as AdkInvocation
    from google.adk.evaluation.eval_metrics import EvalMetricResultPerInvocation
    from google.adk.evaluation.eval_result import EvalCaseResult, EvalSetResult
    from google.adk.evaluation.evaluator import EvalStatus

    per = [EvalMetricResultPerInvocation(actual_invocation=AdkInvocation.model_validate(i), eval_metric_results=[]) for i in invocations]
    case = EvalCaseResult(
        eval_set_id=eval_set_id,
        eval_id=eval_id,
        final_eval_status=EvalStatus.PASSED,
        overall_eval_metric_results=[],
        eval_metric_result_per_invocation=per,
        session_id="s1",
    )
    result = EvalSetResult(eval_set_result_id="r", eval_set_id=eval_set_id, eval_case_results=[case], creation_timestamp=12.5)
    return result.model_dump_json(indent=2)


INVOCATIONS = [
    {
        "user_content": {"parts": [{"text": "불 꺼 줘"}], "role": "user"},
        "final_response": {"parts": [{"text": "껐습니다"}], "role": "model"},
        "intermediate_data": {"tool_uses": [{"name": "set_light", "args": {"on": False}}]},
    }
]


@pytest.mark.parametrize("double_encoded", [False, True])
def test_eval_history_as_adk_writes_it(tmp_path, double_encoded):
    text = _adk_history("home", "c1", INVOCATIONS)
    if double_encoded:  # ADK <= 1.20 wrote a JSON string holding the JSON
        text = json.dumps(text)
    path = tmp_path / "run.evalset_result.json"
    path.write_text(text, encoding="utf-8")
    (record,) = load_actual(path)
    assert (record.eval_set_id, record.eval_id, record.timestamp) == ("home", "c1", 12.5)
    assert record.invocations[0].final_text() == "껐습니다"
    assert [c.name for c in record.invocations[0].tool_calls()] == ["set_light"]


def test_unknown_actual_file_shape(tmp_path):
    path = write_json(tmp_path / "x.json", {"hello": 1})
    with pytest.raises(InputError, match="not ADK eval history, evalgate inference JSONL nor agents-cli traces"):
        load_actual(path)


def test_folder_discovery_uses_each_test_config(shared_fixtures, tmp_path, cli):
    """A folder suite picks up every *.test.json with the test_config.json beside it."""
    # Inside the project: a config's paths may not lead out of it (issue 26).
    folder = Path(shutil.copytree(shared_fixtures / "adk" / "home_automation_agent", tmp_path / "home_automation_agent"))
    lines = []
    for path in _fixture_files(folder):
        es = load_evalset(path, base=tmp_path).eval_set
        for case in es.eval_cases:
            invs = [i.model_dump(mode="json", exclude_none=True) for i in case.conversation]
            lines.append(json.dumps({"eval_set_id": es.eval_set_id, "eval_id": case.eval_id, "invocations": invs}, ensure_ascii=False))
    (tmp_path / "actual.jsonl").write_text("\n".join(lines), encoding="utf-8")
    (tmp_path / "evalgate.yaml").write_text(f"suites:\n  - name: home\n    evalsets: [{folder}]\n    actual: actual.jsonl\n", encoding="utf-8")
    code, out, err = cli("run", "--out", str(tmp_path / "out"), "--no-color", cwd=tmp_path)
    assert code == 0, out + err
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    (suite,) = results["suites"]
    assert suite["counts"] == {"cases": 7, "passed": 7, "failed": 0, "not_evaluated": 0, "incomplete": 0}
    for case in suite["cases"]:
        beside = (tmp_path / case["source"]["evalset"]).resolve().parent / "test_config.json"
        wanted = json.loads(beside.read_text(encoding="utf-8"))["criteria"]
        assert {k: v["threshold"] for k, v in case["criteria"].items()} == wanted, case["eval_id"]
    kinds = {frozenset(c["criteria"]) for c in suite["cases"]}
    assert len(kinds) == 2  # the folder mixes test_configs with different criteria


@pytest.mark.parametrize("run_from", ["project", "outside"])
def test_legacy_history_named_from_another_folder_still_matches(tmp_path, cli, run_from):
    """ADK names a legacy case by the path it was given; evalgate finds it from any folder."""
    project = tmp_path / "repo" / "agent"
    write_json(project / "evals" / "lights.test.json", [{"query": "불 꺼 줘", "expected_tool_use": [{"tool_name": "set_light", "tool_input": {"on": False}}], "reference": "껐습니다"}])
    history = _adk_history("3f1c-uuid", "agent/evals/lights.test.json", INVOCATIONS)  # ADK ran from repo/
    (project / "runs").mkdir()
    (project / "runs" / "a.evalset_result.json").write_text(history, encoding="utf-8")
    (project / "evalgate.yaml").write_text("suites:\n  - name: legacy\n    evalsets: [evals]\n    actual: [runs/*.evalset_result.json]\n", encoding="utf-8")
    cwd = project if run_from == "project" else tmp_path
    code, out, err = cli("validate", "--config", str(project / "evalgate.yaml"), cwd=cwd)
    assert code == 0, err
    assert "1 suite, 1 case\n" in out


def test_a_record_is_never_scored_for_another_eval_sets_case(cli, tmp_path):
    inv = INVOCATIONS
    for set_id in ("s", "B"):
        write_json(tmp_path / f"{set_id}.evalset.json", {"eval_set_id": set_id, "eval_cases": [{"eval_id": "c1", "conversation": inv}]})
    (tmp_path / "a.jsonl").write_text(json.dumps({"eval_set_id": "B", "eval_id": "c1", "invocations": inv}), encoding="utf-8")
    (tmp_path / "evalgate.yaml").write_text("suites:\n  - name: x\n    evalsets: ['*.evalset.json']\n    actual: a.jsonl\n", encoding="utf-8")
    code, _, err = cli("validate", cwd=tmp_path)
    assert code == 2 and "no actual outputs for eval case 'c1' (eval set 's')" in err


def test_several_adk_runs_of_a_legacy_file_newest_wins(cli, tmp_path):
    write_json(tmp_path / "evals" / "l.test.json", [{"query": "불 꺼 줘", "expected_tool_use": [{"tool_name": "set_light", "tool_input": {"on": False}}], "reference": "껐습니다"}])
    old = json.loads(_adk_history("uuid-1", "evals/l.test.json", INVOCATIONS))
    new = json.loads(_adk_history("uuid-2", "evals/l.test.json", INVOCATIONS))
    new["creation_timestamp"] = 99.0
    new["eval_case_results"][0]["eval_metric_result_per_invocation"][0]["actual_invocation"]["final_response"]["parts"][0]["text"] = "새 답"
    write_json(tmp_path / "runs" / "1.evalset_result.json", old)
    write_json(tmp_path / "runs" / "2.evalset_result.json", new)
    (tmp_path / "evalgate.yaml").write_text("suites:\n  - name: x\n    evalsets: evals\n    actual: 'runs/*.evalset_result.json'\n", encoding="utf-8")
    code, out, err = cli("run", "--out", "o", "--no-color", cwd=tmp_path)
    results = json.loads((tmp_path / "o" / "results.json").read_text(encoding="utf-8"))
    (case,) = results["suites"][0]["cases"]
    assert case["invocations"][0]["actual_response"] == "새 답"
    assert case["source"]["actual"] == "runs/2.evalset_result.json eval_case_results[0]"


def test_results_do_not_depend_on_the_working_folder(cli, tmp_path):
    from conftest import REPO

    config = str(REPO / "examples" / "quickstart" / "evalgate.yaml")
    payloads = []
    for cwd in (REPO, tmp_path):
        cli("run", "--config", config, "--out", str(tmp_path / f"o{len(payloads)}"), "--quiet", cwd=cwd)
        data = json.loads((tmp_path / f"o{len(payloads)}" / "results.json").read_text(encoding="utf-8"))
        data.pop("run")
        payloads.append(data)
    assert payloads[0] == payloads[1]


def _digest_as_before(case) -> str:
    """expected_digest as it was computed before issue 12: the whole dump walked."""
    from evalgate.results import digest

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("creation_timestamp", "invocation_id")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return digest(strip(case.model_dump(mode="json", exclude_none=True)))


def test_expected_digest_is_unchanged_and_ignores_ids_and_timestamps_anywhere():
    import copy

    import adk_cases as gen
    from evalgate.adk import EvalCase
    from evalgate.loaders.evalsets import expected_digest

    cases = [EvalCase(eval_id=c.eval_id, conversation=c.expected) for c in gen.generate_cases(4, 300)]
    assert len({expected_digest(c) for c in cases}) == len(cases)
    for case in cases:
        assert expected_digest(case) == _digest_as_before(case)

    # The keys in user data (tool args, session state) are left out as well, and so is
    # what re-saving a file changes.
    data = {
        "eval_id": "예약-確認",
        "creation_timestamp": 1.5,
        "session_input": {"app_name": "a", "user_id": "u", "state": {"invocation_id": "s-1", "order": "注文"}},
        "conversation": [{
            "invocation_id": "e-1",
            "creation_timestamp": 2.0,
            "user_content": {"parts": [{"text": "예약을 확인해 주세요"}]},
            "intermediate_data": {"tool_uses": [{"name": "find", "args": {"creation_timestamp": 3, "q": "東京"}}]},
        }],
    }
    resaved = copy.deepcopy(data)
    resaved["creation_timestamp"] = 9.0
    resaved["conversation"][0]["invocation_id"] = "e-2"
    resaved["conversation"][0]["intermediate_data"]["tool_uses"][0]["args"]["creation_timestamp"] = 4
    resaved["session_input"]["state"]["invocation_id"] = "s-2"
    a, b = EvalCase.model_validate(data), EvalCase.model_validate(resaved)
    assert expected_digest(a) == expected_digest(b) == _digest_as_before(a)
    resaved["conversation"][0]["intermediate_data"]["tool_uses"][0]["args"]["q"] = "大阪"
    assert expected_digest(EvalCase.model_validate(resaved)) != expected_digest(a)


# --- ADK's older named-case list: [{name, data: [turns], initial_session}] ----------------------

NAMED_CASES = [
    {
        "name": "天気_東京",
        "data": [
            {
                "query": "東京の天気は？",
                "expected_tool_use": [{"tool_name": "get_weather", "tool_input": {"city": "東京", "単位": "摂氏"}}],
                "expected_intermediate_agent_responses": [{"author": "planner", "text": "天気を調べます"}],
                "reference": "東京は晴れ、気温は20度です。",
            },
            {"query": "ありがとう", "expected_tool_use": [], "reference": "どういたしまして。"},
        ],
        "initial_session": {"app_name": "weather_app", "user_id": "田中", "state": {"言語": "日本語", "履歴": [1, {"都市": "大阪"}]}},
    },
    {"name": "挨拶", "data": [{"query": "こんにちは"}], "initial_session": {}},  # no reference: ""; empty session: none
    {"name": "予約", "data": [{"query": "明日の予約を確認して", "expected_tool_use": [{"tool_name": "find_booking", "tool_input": {}}], "reference": "明日10時に予約があります。"}], "initial_session": {"state": {"会員": True}}},
]


def _texts(content) -> str:
    return "\n".join(p.text for p in (content.parts or []) if p.text) if content else ""


def test_named_case_list_loads_as_adk_loads_it(tmp_path):
    """The same file through ADK's loader (what `adk eval` calls) and ours: the same cases,
    turns, expected responses, tool calls, intermediate responses and session input."""
    from google.adk.evaluation.eval_case import get_all_tool_calls
    from google.adk.evaluation.local_eval_sets_manager import load_eval_set_from_file

    path = write_json(tmp_path / "evals" / "weather.test.json", NAMED_CASES)
    loaded = load_evalset(path, base=tmp_path)
    ours = loaded.eval_set
    theirs = load_eval_set_from_file(str(path), str(path))  # as `adk eval` calls it: the id is the path given
    assert not loaded.legacy and ours.eval_set_id == "evals/weather.test.json"
    assert loaded.case_places == {"天気_東京": "[0]", "挨拶": "[1]", "予約": "[2]"}
    assert [c.eval_id for c in ours.eval_cases] == [c.eval_id for c in theirs.eval_cases] == ["天気_東京", "挨拶", "予約"]
    for a, b in zip(ours.eval_cases, theirs.eval_cases):
        assert len(a.conversation) == len(b.conversation)
        for inv_a, inv_b in zip(a.conversation, b.conversation):
            assert inv_a.user_text() == _texts(inv_b.user_content)
            assert inv_a.final_text() == _texts(inv_b.final_response)
            assert [(c.name, c.args) for c in inv_a.tool_calls()] == [(c.name, c.args) for c in get_all_tool_calls(inv_b.intermediate_data)]
            ours_steps = [(author, [p.text for p in parts]) for author, parts in inv_a.intermediate_data.intermediate_responses]
            adk_steps = [(author, [p.text for p in parts]) for author, parts in inv_b.intermediate_data.intermediate_responses]
            assert ours_steps == adk_steps
        if b.session_input is None:
            assert a.session_input is None, a.eval_id
        else:
            keys = ("app_name", "user_id", "state")  # ADK's model also has a session_id, never set here
            assert a.session_input.model_dump(include=set(keys)) == b.session_input.model_dump(include=set(keys)), a.eval_id
    assert ours.eval_cases[0].session_input.state == {"言語": "日本語", "履歴": [1, {"都市": "大阪"}]}
    assert ours.eval_cases[2].session_input.app_name == ""  # ADK's defaults for what is left out


def test_named_case_list_runs_against_adk_eval_history(tmp_path, cli):
    """`adk eval agent evals/weather.test.json` names the eval set by the path it was given
    and each case by its name; evalgate pairs that history with the file's cases."""
    write_json(tmp_path / "evals" / "weather.test.json", [NAMED_CASES[0], NAMED_CASES[2]])
    expected = load_evalset(tmp_path / "evals" / "weather.test.json").eval_set
    runs = tmp_path / "runs"
    runs.mkdir()
    for i, case in enumerate(expected.eval_cases):
        invocations = [inv.model_dump(mode="json", exclude_none=True) for inv in case.conversation]
        (runs / f"{i}.evalset_result.json").write_text(_adk_history("agent/evals/weather.test.json", case.eval_id, invocations), encoding="utf-8")
    (tmp_path / "evalgate.yaml").write_text(
        "suites:\n  - name: weather\n    evalsets: evals/weather.test.json\n    actual: 'runs/*.evalset_result.json'\n"
        "    criteria: {tool_trajectory_avg_score: 1.0, response_match_score: 0.8}\n",
        encoding="utf-8",
    )
    code, out, err = cli("run", "--out", "o", "--no-color", cwd=tmp_path)
    assert code == 0, (out, err)
    results = json.loads((tmp_path / "o" / "results.json").read_text(encoding="utf-8"))
    cases = results["suites"][0]["cases"]
    assert sorted((c["eval_set_id"], c["eval_id"], c["status"]) for c in cases) == [
        ("evals/weather.test.json", "予約", "PASSED"),
        ("evals/weather.test.json", "天気_東京", "PASSED"),
    ]


@pytest.mark.parametrize(
    "data, where, what, fix",
    [
        ([{"name": "a", "data": [{"query": "こんにちは"}]}, {"name": "a", "data": [{"query": "やあ"}]}], "[1].name", "duplicate name 'a' (first at [0])", "Give each case a unique name."),
        ([{"data": [{"query": "こんにちは"}]}], "[0].name", "missing, empty or not a string", "Name the case (its eval_id) as 'name'."),
        ([{"name": "a", "turns": [{"query": "こんにちは"}]}], "[0].data", "missing or not a list", "Give the case's turns as \"data\""),
        ([{"name": "a", "data": []}], "[0].data", "the case has no turns", "Add at least one {query, reference} turn."),
        ([{"name": "a", "data": [{"text": "こんにちは"}]}], "[0].data[0].query", "missing or not a string", "Add the user's message as 'query'."),
        ([{"name": "a", "data": [{"query": "東京", "expected_tool_use": [{"tool_name": "f"}]}]}], "[0].data[0].expected_tool_use[0].tool_input", "missing or not an object", "'tool_input'"),
        ([{"name": "a", "data": [{"query": "東京"}], "initial_session": {"state": "日本語"}}], "[0].initial_session.state", "must be an object", "Give the session state as"),
        ([{"name": "a", "data": [{"query": "東京"}], "initial_session": ["x"]}], "[0].initial_session", "must be an object", '"initial_session": {"app_name"'),
        ([{"name": "a", "data": [{"query": "東京"}]}, {"query": "迷子のターン"}], "[1]", "a turn among named cases", "Move it into a case's 'data' list"),
        ([{"name": "a", "data": [{"query": "東京"}]}, "文字列"], "[1]", "a named case must be an object", 'Write {"name": "case_1"'),
    ],
    ids=["duplicate-name", "no-name", "no-data", "no-turns", "turn-without-query", "call-without-input", "state-not-object", "session-not-object", "stray-turn", "not-an-object"],
)
def test_a_malformed_named_case_list_names_file_place_and_fix(tmp_path, cli, data, where, what, fix):
    write_json(tmp_path / "evals" / "bad.test.json", data)
    (tmp_path / "evalgate.yaml").write_text("suites:\n  - name: x\n    evalsets: evals/bad.test.json\n    actual: runs.jsonl\n", encoding="utf-8")
    (tmp_path / "runs.jsonl").write_text("", encoding="utf-8")
    code, out, err = cli("validate", cwd=tmp_path)
    assert code == 2 and "Traceback" not in err, err
    line = next((ln for ln in err.splitlines() if "bad.test.json" in ln), "")
    assert f"evals/bad.test.json: {where}: {what}" in line, err
    assert fix in line, err


def test_a_list_of_turns_is_still_one_case_named_by_its_path(tmp_path):
    """The older turn list is unchanged: one case, named by the file's path."""
    path = write_json(tmp_path / "l.test.json", [{"query": "東京の天気", "reference": "晴れ"}, {"query": "ありがとう"}])
    loaded = load_evalset(path, base=tmp_path)
    assert loaded.legacy and [c.eval_id for c in loaded.eval_set.eval_cases] == ["l.test.json"]
    assert len(loaded.eval_set.eval_cases[0].conversation) == 2
    with pytest.raises(InputError) as e:
        load_evalset(write_json(tmp_path / "bad.test.json", [{"reference": "晴れ"}]))
    assert "[0].query: missing or not a string. Add the user's message as 'query'." in str(e.value)


def test_inference_records_of_another_evalgate_version_are_read_with_one_warning(cli, tmp_path):
    """Keys this evalgate does not know (a newer one wrote them) are ignored and named once,
    with the file and the first line; the run scores the records."""
    write_json(tmp_path / "s.evalset.json", {"eval_set_id": "s", "eval_cases": [{"eval_id": f"c{i}", "conversation": INVOCATIONS} for i in (1, 2)]})
    newer = [dict(invocation_id="x", **INVOCATIONS[0], 新しい欄="値")]
    lines = [{"eval_set_id": "s", "eval_id": "c1", "invocations": INVOCATIONS, "cost": {"usd": 0.5}}, {"eval_set_id": "s", "eval_id": "c2", "invocations": newer}]
    (tmp_path / "a.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in lines), encoding="utf-8")
    (tmp_path / "evalgate.yaml").write_text("suites:\n  - name: x\n    evalsets: ['*.evalset.json']\n    actual: a.jsonl\n    criteria: {tool_trajectory_avg_score: 1.0}\n", encoding="utf-8")
    code, out, err = cli("run", "--out", "o", "--no-color", cwd=tmp_path)
    assert code == 0, out + err
    results = json.loads((tmp_path / "o" / "results.json").read_text(encoding="utf-8"))
    [suite] = results["suites"]
    assert suite["counts"]["passed"] == 2
    [warning] = [w for w in suite["warnings"] if "does not know" in w]
    assert warning.startswith("a.jsonl: line 1: ignored key 'cost',") and "1 more place" in warning

    warnings: list[str] = []
    [_, second] = load_actual(tmp_path / "a.jsonl", warnings)
    assert second.invocations[0].user_content.parts[0].text == "불 꺼 줘" and len(warnings) == 1


def test_a_malformed_known_field_is_still_an_error_beside_an_unknown_one(cli, tmp_path):
    write_json(tmp_path / "s.evalset.json", {"eval_set_id": "s", "eval_cases": [{"eval_id": "c1", "conversation": INVOCATIONS}]})
    record = {"eval_set_id": "s", "eval_id": "c1", "run": 0, "cost": 1, "invocations": [dict(INVOCATIONS[0], final_response="答え")]}
    (tmp_path / "a.jsonl").write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
    (tmp_path / "evalgate.yaml").write_text("suites:\n  - name: x\n    evalsets: ['*.evalset.json']\n    actual: a.jsonl\n", encoding="utf-8")
    code, _, err = cli("validate", cwd=tmp_path)
    assert code == 2
    assert "a.jsonl: line 1: run: input should be greater than or equal to 1" in err
    assert "line 1: invocations[0].final_response" in err
    assert "cost" not in err  # the unknown key is not what is wrong


def test_a_likely_typo_of_a_missing_field_is_still_an_error_not_a_new_field(cli, tmp_path):
    """`final_reponse` beside no `final_response` is a typo (it would drop the answer), not a
    field of a newer evalgate: the error it always was, with the suggestion."""
    write_json(tmp_path / "s.evalset.json", {"eval_set_id": "s", "eval_cases": [{"eval_id": "c1", "conversation": INVOCATIONS}]})
    inv = {k: v for k, v in INVOCATIONS[0].items() if k != "final_response"}
    record = {"eval_set_id": "s", "eval_id": "c1", "invocations": [dict(inv, final_reponse={"parts": [{"text": "消しました"}]})]}
    (tmp_path / "a.jsonl").write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
    (tmp_path / "evalgate.yaml").write_text("suites:\n  - name: x\n    evalsets: ['*.evalset.json']\n    actual: a.jsonl\n", encoding="utf-8")
    code, _, err = cli("validate", cwd=tmp_path)
    assert code == 2
    assert "a.jsonl: line 1: invocations[0].final_reponse: unknown key 'final_reponse'" in err and "Did you mean 'final_response'?" in err
