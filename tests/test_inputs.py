"""Bad input: one clear message per problem (file, place, fix), exit code 2, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import write_json


def _invocation(user: str, response: str, calls: list[dict]) -> dict:
    return {
        "user_content": {"role": "user", "parts": [{"text": user}]},
        "final_response": {"role": "model", "parts": [{"text": response}]},
        "intermediate_data": {"tool_uses": calls},
    }


CASES = {
    "lights-en": [_invocation("Turn off the bedroom light.", "The bedroom light is off.", [{"name": "set_light", "args": {"room": "bedroom", "on": False}}])],
    "난방-ko": [_invocation("거실 난방을 켜 줘.", "거실 난방을 켰습니다.", [{"name": "set_heating", "args": {"room": "거실", "on": True}}])],
}


CONFIG = (
    "suites:\n"
    "  - name: home\n"
    "    evalsets: [evals/*.evalset.json]\n"
    "    actual: runs/out.jsonl\n"
    "    criteria:\n"
    "      tool_trajectory_avg_score: {threshold: 1.0, match_type: IN_ORDER}\n"
    "      response_match_score: 0.8\n"
)


def make_project(root: Path, **overrides) -> Path:
    """A small valid project: one eval set, its inference JSONL, a config."""
    eval_set = {
        "eval_set_id": "home",
        "eval_cases": [{"eval_id": k, "conversation": v} for k, v in CASES.items()],
    }
    write_json(root / "evals" / "home.evalset.json", overrides.get("eval_set", eval_set))
    lines = overrides.get(
        "actual_lines",
        [{"eval_set_id": "home", "eval_id": k, "invocations": v} for k, v in CASES.items()],
    )
    (root / "runs").mkdir(exist_ok=True)
    (root / "runs" / "out.jsonl").write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n", encoding="utf-8")
    config = overrides.get("config", CONFIG)
    (root / "evalgate.yaml").write_text(config, encoding="utf-8")
    return root


def _bad(cli, root: Path, *must_contain: str) -> str:
    code, out, err = cli("validate", cwd=root)
    assert code == 2, (out, err)
    assert "Traceback" not in err and "Traceback" not in out
    for text in must_contain:
        assert text in err, f"{text!r} not in:\n{err}"
    # The same input must not score either: `run` exits 2 and writes no results.
    code, _, _ = cli("run", "--out", str(root / "out"), cwd=root)
    assert code == 2
    assert not (root / "out" / "results.json").exists()
    return err


def test_valid_project_validates(cli, tmp_path):
    code, out, err = cli("validate", cwd=make_project(tmp_path))
    assert code == 0, err
    assert "1 suite, 2 cases" in out


def test_missing_file(cli, tmp_path):
    root = make_project(tmp_path)
    (root / "evalgate.yaml").write_text(
        "suites:\n  - name: home\n    evalsets: [evals/nope.evalset.json]\n    actual: runs/out.jsonl\n", encoding="utf-8"
    )
    _bad(cli, root, "evalgate.yaml: suites[0].evalsets[0] (line 3): 'evals/nope.evalset.json' does not exist", "Check the path")


def test_missing_config(cli, tmp_path):
    code, _, err = cli("validate", "--config", "nowhere.yaml", cwd=tmp_path)
    assert code == 2 and "nowhere.yaml: file not found" in err


def test_invalid_json_names_line_and_column(cli, tmp_path):
    root = make_project(tmp_path)
    (root / "evals" / "home.evalset.json").write_text('{\n  "eval_set_id": "home",\n  "eval_cases": [,]\n}\n', encoding="utf-8")
    _bad(cli, root, "evals/home.evalset.json: line 3, column 18: invalid JSON", "Fix the JSON syntax")


def test_invalid_yaml_names_line_and_column(cli, tmp_path):
    root = make_project(tmp_path, config="suites:\n  - name: home\n    evalsets: [evals\n    actual: x\n")
    _bad(cli, root, "evalgate.yaml: line 4, column 11: invalid YAML", "Fix the YAML syntax")


def test_schema_error_names_json_path(cli, tmp_path):
    eval_set = {"eval_set_id": "home", "eval_cases": [{"eval_id": "a", "conversation": [{"final_response": {"parts": [{"text": "x"}]}}]}]}
    root = make_project(tmp_path, eval_set=eval_set)
    _bad(cli, root, "evals/home.evalset.json: eval_cases[0].conversation[0].user_content: field required", "Add the field 'user_content'")


def test_unknown_criterion_lists_valid_names(cli, tmp_path):
    root = make_project(tmp_path)
    text = (root / "evalgate.yaml").read_text().replace("response_match_score: 0.8", "response_match: 0.8")
    (root / "evalgate.yaml").write_text(text)
    _bad(cli, root, "suites[0].criteria.response_match (line 7): unknown criterion 'response_match'", "Did you mean 'response_match_score'?", "Valid names:")


def test_threshold_outside_unit_interval(cli, tmp_path):
    root = make_project(tmp_path)
    text = (root / "evalgate.yaml").read_text().replace("response_match_score: 0.8", "response_match_score: 80")
    (root / "evalgate.yaml").write_text(text)
    _bad(cli, root, "suites[0].criteria.response_match_score (line 7): threshold 80 is outside [0, 1]", "between 0 and 1")


def test_unknown_match_type(cli, tmp_path):
    root = make_project(tmp_path)
    text = (root / "evalgate.yaml").read_text().replace("IN_ORDER", "SOME_ORDER")
    (root / "evalgate.yaml").write_text(text)
    _bad(cli, root, "suites[0].criteria.tool_trajectory_avg_score.match_type (line 6): unknown match_type 'SOME_ORDER'", "EXACT, IN_ORDER or ANY_ORDER")


def test_unknown_config_key_suggests_closest(cli, tmp_path):
    root = make_project(tmp_path)
    text = (root / "evalgate.yaml").read_text().replace("actual:", "actuals:")
    (root / "evalgate.yaml").write_text(text)
    _bad(cli, root, "suites[0].actuals (line 4): unknown key 'actuals'", "Did you mean 'actual'?")


def test_duplicate_eval_id(cli, tmp_path):
    case = {"eval_id": "lights-en", "conversation": CASES["lights-en"]}
    root = make_project(tmp_path, eval_set={"eval_set_id": "home", "eval_cases": [case, case]})
    _bad(cli, root, "evals/home.evalset.json: eval_cases[1].eval_id: duplicate eval_id 'lights-en' (first at eval_cases[0])")


def test_actual_outputs_missing_for_a_case(cli, tmp_path):
    lines = [{"eval_set_id": "home", "eval_id": "lights-en", "invocations": CASES["lights-en"]}]
    root = make_project(tmp_path, actual_lines=lines)
    _bad(cli, root, "evals/home.evalset.json: eval_cases[1]: no actual outputs for eval case '난방-ko'", "record its output")


def test_invocation_count_mismatch(cli, tmp_path):
    lines = [
        {"eval_set_id": "home", "eval_id": "lights-en", "invocations": CASES["lights-en"] * 2},
        {"eval_set_id": "home", "eval_id": "난방-ko", "invocations": CASES["난방-ko"]},
    ]
    root = make_project(tmp_path, actual_lines=lines)
    _bad(cli, root, "runs/out.jsonl: line 1: eval case 'lights-en' has 1 expected invocations", "but 2 actual ones", "one actual invocation per expected turn")


def test_jsonl_bad_line(cli, tmp_path):
    root = make_project(tmp_path)
    with (root / "runs" / "out.jsonl").open("a") as f:
        f.write('{"eval_set_id": "home", "eval_id": \n')
    _bad(cli, root, "runs/out.jsonl: line 3, column", "invalid JSON")


def test_jsonl_unknown_key(cli, tmp_path):
    lines = [{"eval_set_id": "home", "eval_id": k, "invocation": v} for k, v in CASES.items()]
    root = make_project(tmp_path, actual_lines=lines)
    _bad(cli, root, "runs/out.jsonl: line 1: invocation: unknown key 'invocation'", "Did you mean 'invocations'?")


def test_all_problems_reported_together(cli, tmp_path):
    root = make_project(tmp_path)
    text = (root / "evalgate.yaml").read_text().replace("IN_ORDER", "SOMETIMES").replace("0.8", "8")
    (root / "evalgate.yaml").write_text(text)
    err = _bad(cli, root, "unknown match_type", "outside [0, 1]", "2 problems.")
    assert err.count("error:") == 2


def test_errors_keep_korean_text(cli, tmp_path):
    lines = [{"eval_set_id": "home", "eval_id": "lights-en", "invocations": CASES["lights-en"]}]
    root = make_project(tmp_path, actual_lines=lines)
    err = _bad(cli, root, "'난방-ko'")
    assert "\\u" not in err


@pytest.mark.parametrize("value", ["yes", True, [1]])
def test_threshold_must_be_number_or_object(cli, tmp_path, value):
    root = make_project(tmp_path)
    text = (root / "evalgate.yaml").read_text().replace("response_match_score: 0.8", f"response_match_score: {json.dumps(value)}")
    (root / "evalgate.yaml").write_text(text)
    _bad(cli, root, "'response_match_score' must be a threshold number or an object")


# --- found in review: holes through which nothing, or the wrong thing, could pass ---------


def test_typo_in_adk_keys_is_an_error_not_a_silent_pass(cli, tmp_path):
    inv = dict(CASES["lights-en"][0])
    inv["intermediate_data"] = {"tool_use": [{"name": "set_light"}]}  # "tool_uses" misspelt
    root = make_project(tmp_path, eval_set={"eval_set_id": "home", "eval_cases": [{"eval_id": "lights-en", "conversation": [inv]}, {"eval_id": "난방-ko", "conversation": CASES["난방-ko"]}]})
    _bad(cli, root, "eval_cases[0].conversation[0].intermediate_data.tool_use: unknown key 'tool_use'", "Did you mean 'tool_uses'?")


def test_case_without_conversation(cli, tmp_path):
    cases = [{"eval_id": "lights-en", "conversations": CASES["lights-en"]}, {"eval_id": "난방-ko", "conversation": CASES["난방-ko"]}]
    root = make_project(tmp_path, eval_set={"eval_set_id": "home", "eval_cases": cases})
    _bad(cli, root, "eval_cases[0]: a case needs exactly one of 'conversation'")


def test_suite_with_no_cases(cli, tmp_path):
    root = make_project(tmp_path, eval_set={"eval_set_id": "home", "eval_cases": []}, actual_lines=[])
    _bad(cli, root, "suites[0] (line 2): the suite has no eval cases")


def test_trace_criterion_in_an_eval_set_suite(cli, tmp_path):
    root = make_project(tmp_path)
    text = (root / "evalgate.yaml").read_text().replace("response_match_score: 0.8", "trace_value: 0.5")
    (root / "evalgate.yaml").write_text(text)
    _bad(cli, root, "suites[0].criteria.trace_value (line 7): 'trace_value' scores traces, not eval sets")


def test_test_config_without_criteria(cli, tmp_path):
    root = make_project(tmp_path, config="suites:\n  - name: home\n    evalsets: [evals/*.evalset.json]\n    actual: runs/out.jsonl\n")
    write_json(root / "evals" / "test_config.json", {"criteria": {}})
    _bad(cli, root, "evals/test_config.json: criteria: names no criteria")


def test_duplicate_config_keys(cli, tmp_path):
    root = make_project(tmp_path)
    text = (root / "evalgate.yaml").read_text() + "      response_match_score: 0.1\n"
    (root / "evalgate.yaml").write_text(text)
    _bad(cli, root, "suites[0].criteria.response_match_score (line 8): duplicate key (also on line 7)")


@pytest.mark.parametrize("payload", ["[" * 100000, '{"eval_set_id": "x", "n": 1' + "0" * 5000 + "}"])
def test_absurd_json_is_an_input_error(cli, tmp_path, payload):
    root = make_project(tmp_path)
    (root / "evals" / "home.evalset.json").write_text(payload)
    _bad(cli, root, "evals/home.evalset.json: unreadable JSON")


def test_legacy_field_of_the_wrong_type(cli, tmp_path):
    root = make_project(tmp_path, config="suites:\n  - name: legacy\n    evalsets: evals/l.test.json\n    actual: runs/out.jsonl\n")
    write_json(root / "evals" / "l.test.json", [{"query": "q", "expected_tool_use": 5, "reference": "r"}])
    _bad(cli, root, "evals/l.test.json: [0].expected_tool_use: must be a list")


def test_unwritable_out_is_an_input_error(cli, tmp_path):
    root = make_project(tmp_path)
    (root / "afile").write_text("x")
    code, _, err = cli("run", "--out", "afile", cwd=root)
    assert code == 2 and "afile: cannot write the results there" in err


def test_glob_takes_only_eval_set_files(cli, tmp_path):
    root = make_project(tmp_path, config="suites:\n  - name: home\n    evalsets: [evals/*.json]\n    actual: runs/out.jsonl\n")
    write_json(root / "evals" / "test_config.json", {"criteria": {"response_match_score": 0.5}})
    code, out, err = cli("validate", cwd=root)
    assert code == 0, err


def test_unicode_line_separator_inside_jsonl_strings(cli, tmp_path):
    lines = [{"eval_set_id": "home", "eval_id": k, "invocations": v} for k, v in CASES.items()]
    lines[0] = json.loads(json.dumps(lines[0]).replace("The bedroom light is off.", "Off.\u2028Done."))
    root = make_project(tmp_path, actual_lines=lines)
    code, _, err = cli("validate", cwd=root)
    assert code == 0, err
