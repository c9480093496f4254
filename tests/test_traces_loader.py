"""Trace files: one object, a list, or JSONL; every bad input named by file, place and fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalgate.errors import InputError
from evalgate.loaders.traces import ReasoningTrace, load_traces


def trace(id: str = "kp:trace:1", **overrides) -> dict:
    t = {
        "@context": "https://openknowledgepulse.org/schema/v1",
        "@type": "ReasoningTrace",
        "id": id,
        "metadata": {"created_at": "2026-01-01T00:00:00.000Z", "task_domain": "code", "success": True},
        "task": {"objective": "Fix the payment tests"},
        "steps": [
            {"step_id": 0, "type": "thought", "content": "Run them"},
            {"step_id": 1, "type": "tool_call", "tool": {"name": "run_tests", "mcp_server": "ci"}, "input": {"path": "tests"}, "latency_ms": 12},
        ],
        "outcome": {"result_summary": "green", "confidence": 0.85},
    }
    t.update(overrides)
    return t


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def jsonl(*items) -> str:
    return "".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items)


def load(path: Path) -> list[tuple[str, ReasoningTrace]]:
    return load_traces(path, f"traces/{path.name}")


def error_of(path: Path) -> str:
    with pytest.raises(InputError) as e:
        load(path)
    return str(e.value)


# ---- what loads ----


def test_single_object(tmp_path):
    loaded = load(write(tmp_path, "one.json", json.dumps(trace(), indent=2)))
    assert [(where, t.id) for where, t in loaded] == [("(top level)", "kp:trace:1")]
    t = loaded[0][1]
    assert (t.metadata.task_domain, t.metadata.success, t.outcome.confidence) == ("code", True, 0.85)
    assert [s.type for s in t.steps] == ["thought", "tool_call"]
    assert t.steps[0].tool is None
    assert t.steps[1].tool.name == "run_tests"


def test_unknown_keys_are_kept(tmp_path):
    t = load(write(tmp_path, "one.json", json.dumps(trace())))[0][1]
    assert t.model_extra["@type"] == "ReasoningTrace"
    assert t.steps[1].model_extra == {"step_id": 1, "input": {"path": "tests"}, "latency_ms": 12}
    assert t.steps[1].tool.model_extra == {"mcp_server": "ci"}


def test_list_in_file_order(tmp_path):
    loaded = load(write(tmp_path, "many.json", json.dumps([trace("kp:trace:b"), trace("kp:trace:a"), trace("kp:trace:c")])))
    assert [(where, t.id) for where, t in loaded] == [("[0]", "kp:trace:b"), ("[1]", "kp:trace:a"), ("[2]", "kp:trace:c")]


def test_jsonl_with_blank_lines(tmp_path):
    text = "\n" + json.dumps(trace("kp:trace:1")) + "\n   \n" + json.dumps(trace("kp:trace:2")) + "\r\n"
    loaded = load(write(tmp_path, "runs.jsonl", text))
    assert [(where, t.id) for where, t in loaded] == [("line 2", "kp:trace:1"), ("line 4", "kp:trace:2")]


def test_jsonl_content_in_a_json_file_is_read_as_jsonl(tmp_path):
    loaded = load(write(tmp_path, "runs.json", jsonl(trace("kp:trace:1"), trace("kp:trace:2"))))
    assert [(where, t.id) for where, t in loaded] == [("line 1", "kp:trace:1"), ("line 2", "kp:trace:2")]


def test_korean_and_japanese_text_is_kept(tmp_path):
    t = trace("kp:trace:결제-001", task={"objective": "결제 모듈의 실패한 테스트 수정"})
    t["steps"][0]["content"] = "テストを実行して失敗を確認する"
    t["metadata"]["task_domain"] = "금융"
    # With a byte-order mark, as some Windows editors save UTF-8.
    path = tmp_path / "ko-ja.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + jsonl(t).encode("utf-8"))
    (where, loaded), = load(path)
    assert where == "line 1"
    assert loaded.id == "kp:trace:결제-001"
    assert loaded.task.objective == "결제 모듈의 실패한 테스트 수정"
    assert loaded.steps[0].content == "テストを実行して失敗を確認する"
    assert loaded.metadata.task_domain == "금융"


def test_tool_objects(tmp_path):
    t = trace()
    t["steps"] = [
        {"type": "tool_call", "tool": {}},
        {"type": "tool_call", "tool": None},
        {"type": "tool_call"},
    ]
    steps = load(write(tmp_path, "t.json", json.dumps(t)))[0][1].steps
    assert steps[0].tool is not None and steps[0].tool.name is None  # {} is a tool without a name
    assert steps[1].tool is None and steps[2].tool is None


def test_optional_parts_default(tmp_path):
    t = trace()
    del t["task"]
    del t["metadata"]["task_domain"]
    t["steps"] = []
    loaded = load(write(tmp_path, "t.json", json.dumps(t)))[0][1]
    assert (loaded.task.objective, loaded.metadata.task_domain, loaded.steps) == (None, None, [])


def test_duplicate_ids_are_left_to_the_caller(tmp_path):
    loaded = load(write(tmp_path, "dup.json", json.dumps([trace("kp:trace:same"), trace("kp:trace:same")])))
    assert [t.id for _, t in loaded] == ["kp:trace:same", "kp:trace:same"]


# ---- what does not, and what the user is told ----


def test_invalid_json_names_line_and_column(tmp_path):
    path = write(tmp_path, "bad.json", '[\n  {"id": "kp:trace:1",\n   "steps": [}\n]\n')
    assert error_of(path) == (
        "traces/bad.json: line 3, column 14: invalid JSON: Expecting value. Fix the JSON syntax at that place."
    )


def test_invalid_jsonl_names_the_line_of_the_file(tmp_path):
    path = write(tmp_path, "bad.jsonl", json.dumps(trace()) + "\n\n" + '{"id": "kp:trace:2", "steps": [,]}\n' + json.dumps(trace()) + "\n")
    assert error_of(path) == (
        "traces/bad.jsonl: line 3, column 32: invalid JSON: Expecting value. "
        "Each line must be one complete JSON object."
    )


def test_invalid_jsonl_line_in_a_json_file(tmp_path):
    path = write(tmp_path, "bad.json", json.dumps(trace()) + "\n" + "{oops}\n")
    assert error_of(path) == (
        "traces/bad.json: line 2, column 2: invalid JSON: Expecting property name enclosed in double quotes. "
        "Each line must be one complete JSON object."
    )


def test_two_pretty_printed_objects_are_a_json_error(tmp_path):
    # Not JSONL: its first line is not an object by itself, so the JSON error stands.
    path = write(tmp_path, "two.json", json.dumps(trace(), indent=1) + "\n" + json.dumps(trace(), indent=1))
    lines = json.dumps(trace(), indent=1).count("\n") + 2
    assert error_of(path) == f"traces/two.json: line {lines}, column 1: invalid JSON: Extra data. Fix the JSON syntax at that place."


def test_missing_id(tmp_path):
    no_id = trace()
    del no_id["id"]
    path = write(tmp_path, "t.json", json.dumps([trace(), no_id]))
    assert error_of(path) == "traces/t.json: [1].id: field required. Give the trace a unique id, such as 'kp:trace:<uuid>'."


def test_empty_id(tmp_path):
    path = write(tmp_path, "t.json", json.dumps(trace(id="")))
    assert error_of(path) == (
        "traces/t.json: id: string should have at least 1 character. Give the trace a unique id, such as 'kp:trace:<uuid>'."
    )


def test_schema_errors_in_jsonl_name_line_and_path(tmp_path):
    bad = trace()
    bad["steps"][1]["type"] = "tool-call"
    path = write(tmp_path, "t.jsonl", jsonl(trace(), trace(), bad))
    assert error_of(path) == (
        "traces/t.jsonl: line 3: steps[1].type: input should be 'thought', 'tool_call', 'observation' or 'error_recovery'. "
        "Use one of KnowledgePulse's step types. Did you mean 'tool_call'? "
        "Valid names: error_recovery, observation, thought, tool_call."
    )


def test_every_problem_of_a_file_is_reported_together(tmp_path):
    no_confidence = trace()
    del no_confidence["outcome"]["confidence"]
    string_success = trace()
    string_success["metadata"]["success"] = "true"
    too_confident = trace(outcome={"confidence": 1.5})
    path = write(tmp_path, "t.json", json.dumps([no_confidence, "kp:trace:9", string_success, too_confident, trace()]))
    with pytest.raises(InputError) as e:
        load(path)
    assert [str(p) for p in e.value.problems] == [
        "traces/t.json: [0].outcome.confidence: field required. "
        "Add outcome.confidence, a number from 0 to 1; KnowledgePulse requires it and has no default.",
        "traces/t.json: [1]: is a string, not a trace object. Each trace must be one JSON object with id, metadata, steps and outcome.",
        "traces/t.json: [2].metadata.success: input should be a valid boolean. Give true or false.",
        "traces/t.json: [3].outcome.confidence: input should be less than or equal to 1. Give a number from 0 to 1.",
    ]


def test_missing_success_says_there_is_no_default(tmp_path):
    t = trace()
    del t["metadata"]["success"]
    assert error_of(write(tmp_path, "t.json", json.dumps(t))) == (
        "traces/t.json: metadata.success: field required. "
        "Add metadata.success, true or false; KnowledgePulse requires it and has no default."
    )


def test_steps_must_be_a_list(tmp_path):
    assert error_of(write(tmp_path, "t.json", json.dumps(trace(steps={"0": {"type": "thought"}})))) == (
        "traces/t.json: steps: input should be a valid list. Give a list."
    )


def test_not_a_trace_at_all(tmp_path):
    assert error_of(write(tmp_path, "t.json", '"kp:trace:1"')) == (
        "traces/t.json: holds a string, not a trace. Give one ReasoningTrace object, a list of them, or JSONL with one per line."
    )


@pytest.mark.parametrize("name, text", [("empty.json", "[]"), ("empty.jsonl", "\n\n")])
def test_no_traces(tmp_path, name, text):
    assert error_of(write(tmp_path, name, text)) == (
        f"traces/{name}: holds no traces. Add at least one ReasoningTrace object, or leave this file out."
    )


def test_missing_file(tmp_path):
    assert error_of(tmp_path / "absent.json").startswith("traces/absent.json: file not found.")
