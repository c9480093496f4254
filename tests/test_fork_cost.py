"""A fork's files have bounded cost (issue 34, holes 8 to 11).

What the trusted publish job reads from a pull request's artifact is read in linear time,
within a memory budget and within depth and text limits; a record beyond them is not a
record (its suite ERROR), never an internal error; and whatever text the artifact holds,
writing the results never fails on it. Each test is one attack, made through the real
publish flow (the entrypoint against the fake GitHub API) or through `read_outputs`, the one
reader of the artifact's `inference.jsonl`. Sizes and counts are measured, never seconds.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from test_entrypoint import PR, action, baseline, history, ws  # noqa: F401  (fixtures)
from test_trusted_publish import _publish, _records, _write_records
from fake_github import fake_github  # noqa: F401  (fixture)

INV = {"invocation_id": "i1", "user_content": {"parts": [{"text": "불 꺼 줘"}]}, "final_response": {"parts": [{"text": "消しました"}]}}
KNOWN = {"home": {("set", "난방-ko")}}


def _record(**fields) -> dict:
    return {"suite": "home", "eval_set_id": "set", "eval_id": "난방-ko", "invocations": [INV], **fields}


def _write(path: Path, *records: dict) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def _steps(fn) -> int:
    """How many Python lines `fn()` executes (a loop's every pass counts): the work done,
    counted, so that no test depends on the machine's speed."""
    count = 0

    def trace(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
        return trace

    before = sys.gettrace()
    sys.settrace(trace)
    try:
        fn()
    finally:
        sys.settrace(before)
    return count


# --- hole 8: linear-time reading ------------------------------------------------------------


def _unknown_keys(n: int) -> int:
    """The steps to read a record with `n` unknown keys (as results, baselines and `actual:`
    files are read: every key dropped and named)."""
    from evalgate.loaders.actual import InferenceRecord, record_keys
    from evalgate.reading import ignored_note, validate_known

    data = _record(**{f"未知{i}": i for i in range(n)})
    rec, unknown = validate_known(InferenceRecord, data, record_keys)
    assert rec.eval_id == "난방-ko" and len(unknown) == n
    assert f"ignored keys '未知0', '未知1', '未知2', '未知3', '未知4' and {n - 5:,} more" in ignored_note("f", None, unknown)
    return _steps(lambda: validate_known(InferenceRecord, data, record_keys))


def test_a_record_with_thousands_of_unknown_keys_is_read_in_linear_steps():
    """Before: each unknown key was dropped by copying the record, so 24,000 keys (380 KB) took
    11 s and four times the keys took ten times the work. Now the keys go in one copy."""
    small, large = _unknown_keys(500), _unknown_keys(2000)
    assert large < 6 * small, (small, large)  # 4x the keys: about 4x the steps (before: about 10x)


def test_a_fork_record_with_more_unknown_keys_than_the_limit_is_not_a_record(tmp_path):
    """From a fork's artifact, a record with more unknown keys (or malformed fields) than
    another evalgate version would write is not a record: skipped before its errors are listed."""
    from evalgate.trusted import read_outputs

    n = 3000
    path = _write(tmp_path / "inference.jsonl", _record(**{f"未知{i}": i for i in range(n)}), _record(run=2, 新=1))
    outputs = None

    def read() -> None:
        nonlocal outputs
        outputs = read_outputs(path, KNOWN)

    steps = _steps(read)
    assert steps < 10 * n, steps  # each key looked at a few times (before: 4.5 million steps, dropping them one copy at a time)
    assert [r.run for r in outputs.of("home", ("set", "난방-ko"))] == [2]
    assert outputs.first_skipped == "line 1: 3,000 unknown keys or malformed fields, over the limit of 1,000"


# --- holes 10 and 11: depth and text limits; text that no UTF-8 file can hold ----------------


def _nest(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def _forge_lights(artifact: Path, change) -> None:
    records = _records(artifact)
    for r in records:
        if r["eval_id"] == "lights-en":
            change(r)
    _write_records(artifact, records)


def _deep_args(artifact: Path) -> None:
    """Hole 10: the failing case's tool argument nested 300 levels deep (600 bytes)."""

    def change(r: dict) -> None:
        r["invocations"][0]["intermediate_data"]["tool_uses"][0]["args"]["room"] = _nest(300)

    _forge_lights(artifact, change)


def _long_key(artifact: Path) -> None:
    def change(r: dict) -> None:
        r["invocations"][0]["intermediate_data"]["tool_uses"][0]["args"]["부" * (2**20 + 1)] = 1

    _forge_lights(artifact, change)


@pytest.mark.parametrize(
    "forge, why",
    [
        pytest.param(_deep_args, "nested deeper than 64 levels", id="a tool argument 300 levels deep"),
        pytest.param(_long_key, "a key of 1,048,577 characters, over the limit of 1,048,576", id="a key of a million characters"),
    ],
)
def test_a_record_beyond_the_depth_and_text_limits_is_not_a_record(action, baseline, forge, why):  # noqa: F811
    """Before: the 300-level argument was read, scored, and failed in writing results.json
    (pydantic: "Maximum serialization depth exceeded"): internal error, exit 3, no comment and
    no status. Now the record is not a record: its case has no output, the suite is ERROR."""
    code, head = _publish(action, baseline, forge)
    assert code == 1, action.stdout
    states = {s["context"]: s["state"] for s in action.fake.statuses[head]}
    assert states["evalgate/home"] == "error" and states["evalgate"] in ("failure", "error")
    [comment] = action.fake.issue_comments(PR)
    assert "1 of 2 cases have no output" in comment["body"]
    assert f"the first line beyond the limits on what a pull request's outputs may cost: line 1: {why}" in action.stdout


def _lone_surrogate(artifact: Path) -> None:
    """Hole 11: a lone surrogate in the fork's answer: `\\ud800` is valid JSON, and no UTF-8
    file can hold what it decodes to."""
    records = _records(artifact)
    for r in records:
        if r["eval_id"] == "lights-en":
            r["invocations"][0]["final_response"]["parts"][0]["text"] = "The bedroom light is off. SURROGATE"
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    (artifact / "inference.jsonl").write_text(text.replace("SURROGATE", "\\ud800"), encoding="utf-8")


def test_a_lone_surrogate_in_a_forks_answer_is_scored_and_written(action, baseline):  # noqa: F811
    """Before: UnicodeEncodeError writing results.json, exit 3, nothing posted. Now the
    surrogate reads as U+FFFD and the case is scored as the agent said (it regressed)."""
    code, head = _publish(action, baseline, _lone_surrogate)
    assert code == 1, action.stdout
    states = {s["context"]: s["state"] for s in action.fake.statuses[head]}
    assert states == {"evalgate": "failure", "evalgate/home": "failure"}
    results = json.loads((action.ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    assert {c["eval_id"]: c["status"] for c in results["suites"][0]["cases"]} == {"lights-en": "FAILED", "난방-ko": "PASSED"}
    [written] = [r for r in _records(action.ws / "evalgate-results") if r["eval_id"] == "lights-en"]
    assert written["invocations"][0]["final_response"]["parts"][0]["text"] == "The bedroom light is off. \ufffd"
    for name in ("report.md", "report.html", "junit.xml"):
        (action.ws / "evalgate-results" / name).read_text(encoding="utf-8")  # valid UTF-8


# --- hole 9: a memory budget -----------------------------------------------------------------


def _empty_objects(tmp_path: Path, lines: int, line_bytes: int) -> Path:
    """Records of the known case whose tool argument is a list of `{}`: three bytes for each
    object, which costs a dict parsed and another validated."""
    call = {"name": "set_light", "args": {"rooms": [{}] * (line_bytes // 3)}}
    inv = dict(INV, intermediate_data={"tool_uses": [call]})
    return _write(tmp_path / "inference.jsonl", *(_record(run=n, invocations=[inv]) for n in range(1, lines + 1)))


def _peak(fn) -> int:
    import tracemalloc

    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_line_that_would_take_too_much_memory_is_not_parsed(tmp_path, monkeypatch):
    """Before: 24 bytes of memory for each byte read of such lines (8 MiB of them: 204 MB);
    the 512 MiB file limit let a fork ask for 12 GiB. Now a line whose parsed size would pass
    the budget is skipped before it is parsed, with its reason."""
    from evalgate import trusted

    monkeypatch.setattr(trusted, "MAX_RECORD_COST", 8 * 2**20, raising=False)
    path = _empty_objects(tmp_path, 4, 256 * 1024)
    outputs = None

    def read() -> None:
        nonlocal outputs
        outputs = trusted.read_outputs(path, KNOWN)

    peak = _peak(read)
    size = path.stat().st_size
    assert peak < size, f"{peak:,} bytes of memory to read {size:,} bytes"
    assert outputs.of("home", ("set", "난방-ko")) == [] and outputs.skipped == 4
    assert outputs.first_skipped.startswith("line 1: would take more than 8 MiB of memory once read (349,836 bytes of densely")


def test_records_past_the_memory_budget_stop_the_reading(tmp_path, monkeypatch):
    """Each line within the budget for one, together past the budget for all: reading stops
    there (memory stays within the budget) and the outputs say so."""
    from evalgate import trusted

    monkeypatch.setattr(trusted, "MAX_RECORD_COST", 8 * 2**20, raising=False)
    monkeypatch.setattr(trusted, "MAX_OUTPUTS_COST", 8 * 2**20, raising=False)
    path = _empty_objects(tmp_path, 64, 16 * 1024)
    outputs = None

    def read() -> None:
        nonlocal outputs
        outputs = trusted.read_outputs(path, KNOWN)

    peak = _peak(read)
    assert peak < 8 * 2**20 + path.stat().st_size // 64 * 64, f"{peak:,} bytes"  # the budget, and one line's bytes held while parsed
    assert getattr(outputs, "over_budget", False)
    assert 0 < len(outputs.of("home", ("set", "난방-ko"))) < 64


def test_the_memory_bound_holds_for_the_costliest_shapes(tmp_path):
    """`cost(line)` is an upper bound of what the line takes once parsed and validated: the
    budget is only as good as that. Measured on the shapes that cost the most per byte."""
    from evalgate.reading import validate_known
    from evalgate.loaders.actual import InferenceRecord, record_keys
    from evalgate.untrusted import checked, cost

    n = 5000
    args = lambda value: [dict(INV, intermediate_data={"tool_uses": [{"name": "t", "args": {"a": value}}]})]  # noqa: E731
    shapes = {
        "empty parts": [dict(INV, user_content={"parts": [{}] * n})],
        "empty tool calls": [dict(INV, intermediate_data={"tool_uses": [{}] * n})],
        "empty invocations": [{"user_content": {}}] * n,
        "events": [dict(INV, intermediate_data={"invocation_events": [{"author": "a", "content": {}}] * n})],
        "empty objects in arguments": args([{}] * n),
        "empty lists in arguments": args([[]] * n),
        "keys in arguments": args({f"k{i}": {} for i in range(n)}),
        "numbers in arguments": args([0.5] * n),
        "text with an emoji": [dict(INV, final_response={"parts": [{"text": "😀" + "a" * (20 * n)}]})],
        "unknown keys": {f"k{i}": 0 for i in range(n)},
        "unknown keys in each invocation": [dict(INV, new=0, newer=None)] * n,
        "unknown keys in tool-use data": [dict(INV, intermediate_data={"tool_uses": [], **{f"k{i}": 0 for i in range(n)}})],
    }
    for name, shape in shapes.items():
        record = _record(**shape) if isinstance(shape, dict) else _record(invocations=shape)
        raw = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        kept = []
        peak = _peak(lambda: kept.append(validate_known(InferenceRecord, checked(json.loads(raw))[0], record_keys)))
        assert peak < cost(raw), (name, peak, cost(raw))


# --- what an agent answers: the same limits, and every results file written ------------------

_AGENT = r'''
import json, sys
sys.stdin.reconfigure(encoding="utf-8")
sys.stdout.reconfigure(encoding="utf-8")
for line in sys.stdin:
    text = " ".join(p.get("text", "") for p in json.loads(line)["user_content"]["parts"])
    args = {"city": "Paris"}
    if "London" in text:  # a tool argument 300 levels deep
        for _ in range(300):
            args = {"a": args}
    answer = {"final_response": {"parts": [{"text": "날씨: SURROGATE"}], "role": "model"}, "intermediate_data": {"tool_uses": [{"name": "get_weather", "args": args}]}}
    print(json.dumps(answer, ensure_ascii=False).replace("SURROGATE", "\\ud800"), flush=True)
'''


def test_an_agents_deep_arguments_fail_its_run_and_its_lone_surrogates_are_written(cli, tmp_path):
    """Before: `evalgate run` stopped with an internal error (exit 3) writing results.json, for
    either. Now the deep argument fails its case run (NOT_EVALUATED, with the reason), the
    surrogate is U+FFFD, and every results file is written as UTF-8."""
    from test_runner_command import _project, _run

    code, err, cases, inference = _run(cli, tmp_path, _project(tmp_path, _AGENT))
    assert code == 1, err
    assert "internal error" not in err
    london = [c for c in cases.values() if any("nested deeper than 64 levels" in (crit.get("error") or "") for crit in c["criteria"].values())]
    assert len(london) == 1 and london[0]["status"] == "NOT_EVALUATED"
    texts = [inv["final_response"]["parts"][0]["text"] for r in inference for inv in r.get("invocations", [])]
    assert texts and set(texts) == {"날씨: \ufffd"}
    for name in ("results.json", "junit.xml", "report.html", "inference.jsonl"):
        (tmp_path / "out" / name).read_text(encoding="utf-8")


def test_recorded_outputs_and_eval_sets_with_lone_surrogates_or_deep_arguments(cli, tmp_path):
    """`actual:` files and eval sets are read by the same rules: a lone surrogate reads as
    U+FFFD (before: internal error writing results.json), a line beyond the limits is bad
    input naming its line (exit 2)."""
    from test_inputs import CASES, make_project

    lines = [{"eval_set_id": "home", "eval_id": k, "invocations": json.loads(json.dumps(v))} for k, v in CASES.items()]
    lines[0]["invocations"][0]["final_response"]["parts"][0]["text"] = "Nothing SURROGATE here"
    # Copies: CASES is test_inputs' module data, which later tests read as it was.
    eval_set = {"eval_set_id": "home", "eval_cases": [{"eval_id": k, "conversation": json.loads(json.dumps(v))} for k, v in CASES.items()]}
    eval_set["eval_cases"][1]["conversation"][0]["final_response"]["parts"][0]["text"] = "거실 SURROGATE 난방"
    root = make_project(tmp_path / "p", actual_lines=lines, eval_set=eval_set)
    for name in ("runs/out.jsonl", "evals/home.evalset.json"):
        path = root / name
        path.write_text(path.read_text(encoding="utf-8").replace("SURROGATE", "\\ud800"), encoding="utf-8")
    code, out, err = cli("run", "--out", str(root / "out"), cwd=root)
    assert code == 1, err  # both cases' answers now differ from what was expected
    written = (root / "out" / "results.json").read_text(encoding="utf-8")
    assert "Nothing \ufffd here" in written and "거실 \ufffd 난방" in written

    lines[0]["invocations"][0]["intermediate_data"]["tool_uses"][0]["args"] = _nest(300)
    (root / "runs" / "out.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    code, out, err = cli("run", "--out", str(root / "out"), cwd=root)
    assert code == 2 and "runs/out.jsonl: line 1: nested deeper than 64 levels" in err, err


def test_no_text_fails_a_results_writer(cli, tmp_path, capsys):
    """Whatever text reaches the writers (a judge's rationale, a baseline's, an exception's
    message: each may hold a lone surrogate, which UTF-8 cannot encode), results.json,
    junit.xml, report.html, the Markdown report and the terminal summary are written; JSON
    keeps the surrogate as its escape."""
    from entrypoint.commands import Workflow
    from evalgate.local_run import write_outputs
    from evalgate.config import GateConfig
    from evalgate.gate import compare
    from evalgate.reports.markdown import render_comment, render_summary
    from evalgate.reports.terminal import summary_table
    from evalgate.results import RunResults
    from test_inputs import CASES, make_project

    lines = [{"eval_set_id": "home", "eval_id": k, "invocations": json.loads(json.dumps(v))} for k, v in CASES.items()]
    lines[0]["invocations"][0]["final_response"]["parts"][0]["text"] = "Nothing here."
    root = make_project(tmp_path / "p", actual_lines=lines)
    assert cli("run", "--out", str(root / "out"), cwd=root)[0] != 3
    data = json.loads((root / "out" / "results.json").read_text(encoding="utf-8"))

    def spoil(value):
        if isinstance(value, dict):
            return {k: (v + "\ud800" if k in ("actual_response", "error", "agent_error") and isinstance(v, str) else spoil(v)) for k, v in value.items()}
        if isinstance(value, list):
            return [spoil(v) + "\udfff" if isinstance(v, str) else spoil(v) for v in value]
        return value

    run = RunResults.model_validate(spoil(data))
    assert "\ud800" in json.dumps(run.model_dump(mode="json"), ensure_ascii=False)
    gate = GateConfig()
    out = tmp_path / "written"
    out.mkdir()
    write_outputs(run, [], out, gate)
    assert json.loads((out / "results.json").read_text(encoding="utf-8")) == json.loads(json.dumps(run.model_dump(mode="json")))
    assert "\\ud800" in (out / "report.html").read_text(encoding="utf-8")
    (out / "junit.xml").read_text(encoding="utf-8")  # XML cannot hold a surrogate, escaped or not: junit_xml leaves it out
    comparison = compare(None, run, gate)
    report = render_comment(comparison, run) + render_summary(comparison, run) + "\ud800"
    Workflow(str(out / "output"), str(out / "summary.md")).summary(report)  # the action's job summary
    assert "\\ud800" in (out / "summary.md").read_text(encoding="utf-8")
    print(summary_table(run, color=False))


@pytest.mark.parametrize("number", [float("inf"), float("nan"), 1e300, True, [PR], "7x"])
def test_a_pr_json_number_that_is_no_number_is_bad_input(action, baseline, number):  # noqa: F811
    """Before: `"number": Infinity` (which Python's JSON reads) was an internal error (int() of
    an infinite float: OverflowError), exit 3, nothing posted."""

    def forge(artifact: Path) -> None:
        pr = json.loads((artifact / "pr.json").read_text(encoding="utf-8"))
        (artifact / "pr.json").write_text(json.dumps(dict(pr, number=number)), encoding="utf-8")

    code, head = _publish(action, baseline, forge)
    assert code == 2, action.stdout
    assert "pr.json" in action.stdout and "needs 'number'" in action.stdout
    assert action.fake.statuses.get(head) is None


def test_outputs_past_the_memory_budget_make_every_suite_error(action, baseline, monkeypatch):  # noqa: F811
    """The publish flow with a budget that holds one of the two records: reading stops, and
    the suite is ERROR with the reason, though the records read so far would have passed."""
    from evalgate import trusted
    from evalgate.untrusted import cost

    def forge(artifact: Path) -> None:
        records = _records(artifact)
        for r in records:  # both cases as on main: the suite would pass
            if r["eval_id"] == "lights-en":
                r["invocations"][0]["intermediate_data"]["tool_uses"][0]["args"]["room"] = "bedroom"
        _write_records(artifact, records)
        first = (artifact / "inference.jsonl").read_bytes().split(b"\n")[0] + b"\n"
        monkeypatch.setattr(trusted, "MAX_OUTPUTS_COST", cost(first), raising=False)

    code, head = _publish(action, baseline, forge)
    assert code == 1, action.stdout
    states = {s["context"]: s["state"] for s in action.fake.statuses[head]}
    assert states["evalgate/home"] == "error" and "success" not in states.values()
    [comment] = action.fake.issue_comments(PR)
    assert "holds more outputs of this config's cases than the trusted job reads" in comment["body"]
