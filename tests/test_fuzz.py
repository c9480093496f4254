"""Property-based search over everything a fork or an agent puts in front of the trusted job.

Hypothesis generates what a fork's run can upload (inference.jsonl lines: records mutated
from a real run's, with any JSON in any place, unknown keys, deep nesting, lone surrogates,
workflow commands, other case ids and suites, broken lines; and pr.json) and what an agent
can answer (its text and tool arguments, read from `actual:` files). The properties:

- never an internal error: the publish flow exits 0, 1 or 2, and `evalgate run` the same;
- never a write outside the workspace's output and cache folders;
- bounded memory and work: reading an artifact takes at most the memory its lines' `cost`
  bounds, and a number of Python steps linear in its size (counted, not timed);
- never a `success` status for a suite whose cases were not all scored.

A bounded budget runs with the tests (about a minute on two cores). A longer search:
`EVALGATE_FUZZ_EXAMPLES=5000 python -m pytest tests/test_fuzz.py` (docs/development.md).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings, target
from hypothesis import strategies as st

from test_entrypoint import PR, _artifact, action, baseline, history, ws  # noqa: F401  (fixtures)
from fake_github import fake_github  # noqa: F401  (fixture)
from test_fork_cost import _steps

LONG = os.environ.get("EVALGATE_FUZZ_EXAMPLES")


def budget(normal: int) -> settings:
    """`normal` examples in an ordinary run; EVALGATE_FUZZ_EXAMPLES in a long one."""
    return settings(
        max_examples=int(LONG) if LONG else normal,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
        derandomize=not LONG,  # the ordinary run is the same every time; a long one searches anew
        database=None if not LONG else settings.default.database,  # a long run keeps what it found in .hypothesis/
        print_blob=True,
    )


# --- what a fork can write ---------------------------------------------------------------------

# Text a fork would try: lone surrogates (valid JSON escapes), workflow commands, markers,
# control characters, paths, Korean and Japanese, an emoji, HTML and Markdown.
TRICKY = [
    "\ud800", "\udfff", "a\ud83d", "::error::forged", "::stop-commands::x", "%0A::warning::x", "\x00", "\x1b[31m",
    "<!-- evalgate:gate=evalgate -->", "../../../outside", "/etc/passwd", "거실 난방", "照明を消して", "😀", "</script><script>alert(1)</script>",
    "| a | b |\n|---|", "{{ 7*7 }}", "\u2028", "\r\n", " ", "",
]
text = st.one_of(st.text(st.characters(exclude_categories=()), max_size=40), st.sampled_from(TRICKY))
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-(10**30), max_value=10**30), st.floats(allow_nan=True, allow_infinity=True), text
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4), max_leaves=24)


def nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for i in range(depth):
        value = {"a": value} if i % 2 else [value]
    return value


deep = st.builds(nested, st.integers(min_value=0, max_value=400), scalars)
anything = st.one_of(values, deep)

FIELDS = ["suite", "eval_set_id", "eval_id", "run", "invocations", "error", "ended", "expected_digest", "log"]
INVOCATION_PATHS = [
    ("user_content",), ("user_content", "parts"), ("final_response",), ("final_response", "parts", 0, "text"), ("final_response", "role"),
    ("intermediate_data",), ("intermediate_data", "tool_uses"), ("intermediate_data", "tool_uses", 0, "args"),
    ("intermediate_data", "tool_uses", 0, "args", "room"), ("intermediate_data", "tool_uses", 0, "name"), ("invocation_id",),
    ("rubrics",), ("app_details",), ("creation_timestamp",), ("intermediate_data", "invocation_events"),
]


def _set(target: Any, path: tuple, value: Any) -> None:
    for part in path[:-1]:
        if isinstance(target, dict):
            target = target.setdefault(part, {})
        elif isinstance(target, list) and isinstance(part, int) and part < len(target):
            target = target[part]
        else:
            return
    if isinstance(target, dict):
        target[path[-1]] = value
    elif isinstance(target, list) and isinstance(path[-1], int) and path[-1] < len(target):
        target[path[-1]] = value


@st.composite
def mutated(draw, record: dict) -> dict:
    """A record of a real run with some of its fields replaced: what the agent said (its
    answer's text, a tool's name and arguments) most often, else any field of the record or
    of its invocation, by anything; and perhaps unknown keys added."""
    record = json.loads(json.dumps(record))
    inv = record["invocations"][0] if record.get("invocations") else None
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 1, 2, 3]))):
        where = draw(st.integers(min_value=0, max_value=5))
        if where == 0:
            record[draw(st.sampled_from(FIELDS))] = draw(anything)
        elif inv is None or not isinstance(inv, dict):
            continue
        elif where == 1:
            _set(inv, draw(st.sampled_from(INVOCATION_PATHS)), draw(anything))
        elif where in (2, 3):
            _set(inv, ("final_response", "parts", 0, "text"), draw(text))
        else:
            _set(inv, ("intermediate_data", "tool_uses", 0, "args"), draw(st.dictionaries(text, anything, max_size=3)))
    if draw(st.integers(min_value=0, max_value=4)) == 0:
        record.update(draw(st.dictionaries(text, values, max_size=5)))
    if draw(st.integers(min_value=0, max_value=9)) == 0:  # many of one cheap thing: what costs memory
        k = draw(st.integers(min_value=1, max_value=1500))
        many = draw(st.sampled_from([[{}] * k, [[]] * k, [0] * k, {f"k{i}": 0 for i in range(k)}, {f"k{i}": {} for i in range(k)}]))
        if isinstance(many, dict) and draw(st.booleans()):
            record.update(many)  # unknown keys
        elif inv is not None and isinstance(inv, dict):
            _set(inv, draw(st.sampled_from(INVOCATION_PATHS)), many)
    return record


@st.composite
def artifact_lines(draw, records: list[dict]) -> list[bytes]:
    """inference.jsonl as a fork could write it: mutated, dropped, repeated and reordered
    records, and lines that are not records at all."""
    lines = []
    if draw(st.booleans()):  # every record once, as a run writes them, before the rest
        lines += [json.dumps(r).encode("utf-8") for r in draw(st.permutations(records))]
    for _ in range(draw(st.integers(min_value=0, max_value=6))):
        kind = draw(st.integers(min_value=0, max_value=12))
        if kind <= 9:
            record = draw(mutated(draw(st.sampled_from(records))))
            lines.append(json.dumps(record, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass"))
        elif kind == 10:
            lines.append(json.dumps(draw(anything)).encode("utf-8", "surrogatepass"))
        elif kind == 11:
            lines.append(draw(st.binary(max_size=64)).replace(b"\n", b" "))
        else:
            lines.append(b"")
    return lines


def _write_lines(path: Path, lines: list[bytes]) -> int:
    data = b"".join(line + b"\n" for line in lines)
    path.write_bytes(data)
    return len(data)


# --- reading an artifact ------------------------------------------------------------------------

RECORD = {
    "suite": "home", "eval_set_id": "home", "eval_id": "lights-en", "run": 1,
    "invocations": [
        {
            "invocation_id": "i1",
            "user_content": {"role": "user", "parts": [{"text": "Turn off the bedroom light."}]},
            "final_response": {"role": "model", "parts": [{"text": "The bedroom light is off."}]},
            "intermediate_data": {"tool_uses": [{"name": "set_light", "args": {"room": "bedroom", "on": False}}]},
        }
    ],
}
KO = dict(json.loads(json.dumps(RECORD)), eval_id="난방-ko")
KNOWN = {"home": {("home", "lights-en"), ("home", "난방-ko")}}

STEPS_PER_BYTE = 400  # Python lines run per byte of the artifact, at most (a 5,000-example search: steps / (bytes + 1,000) at most 29)
STEPS_FIXED = 20_000


@budget(200)
@given(lines=artifact_lines([RECORD, KO]))
def test_reading_any_artifact_is_bounded_and_never_raises(tmp_path_factory, lines):
    """read_outputs takes any bytes: a record or a skipped line, never an exception; its work
    is linear in the file's size."""
    from evalgate.trusted import read_outputs

    path = tmp_path_factory.mktemp("artifact") / "inference.jsonl"
    size = _write_lines(path, lines)
    outputs = None

    def read() -> None:
        nonlocal outputs
        outputs = read_outputs(path, KNOWN)

    steps = _steps(read)
    target(steps / (size + 1000), label="steps per byte")  # the search looks for the costliest bytes
    assert steps <= STEPS_PER_BYTE * size + STEPS_FIXED, (steps, size)
    kept = [rec for table in (outputs.unnamed, *outputs.by_suite.values()) for runs in table.values() for rec in runs]
    assert len(kept) + outputs.skipped + outputs.unknown_cases <= len(lines)
    for rec in kept:  # what is kept can be written: no lone surrogate, within the limits
        rec.model_dump_json()


@budget(60)
@given(lines=artifact_lines([RECORD, KO]))
def test_reading_any_artifact_takes_no_more_memory_than_its_cost_bound(tmp_path_factory, lines):
    import tracemalloc

    from evalgate.trusted import MAX_RECORD_ERRORS, read_outputs
    from evalgate.untrusted import ERROR_COST, cost

    path = tmp_path_factory.mktemp("artifact") / "inference.jsonl"
    _write_lines(path, lines)
    # the lines' bound, one line's errors listed, and the reader's own few objects
    bound = sum(cost(line) for line in lines if line.strip()) + MAX_RECORD_ERRORS * ERROR_COST + 64 * 1024
    tracemalloc.start()
    try:
        read_outputs(path, KNOWN)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    target(peak / bound, label="memory over its bound")
    assert peak <= bound, (peak, bound)


# --- the publish flow, end to end ----------------------------------------------------------------


def _files(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            p = Path(dirpath) / name
            try:
                st_ = p.lstat()
            except OSError:
                continue
            out[str(p)] = (st_.st_mtime_ns, st_.st_size)
    return out


@pytest.fixture
def published(action, baseline):  # noqa: F811
    """A fork's pull request whose run uploaded a real artifact; `publish(lines, pr)` publishes
    a forged one and returns (exit code, the statuses it set)."""
    fake = action.fake
    head = fake.add_commit([baseline], "fork head")
    fake.add_pull(PR, head, baseline, fork=True)
    artifact = _artifact(action, baseline, head)  # lights-en regressed
    records = [json.loads(line) for line in (artifact / "inference.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    fixed = json.loads(json.dumps(next(r for r in records if r["eval_id"] == "lights-en")))
    fixed["invocations"][0]["intermediate_data"]["tool_uses"][0]["args"]["room"] = "bedroom"
    records.append(fixed)  # and as on main: with it, the pull request passes
    (artifact / "results.json").unlink()
    event = {"action": "completed", "workflow_run": {"id": 99, "event": "pull_request", "head_sha": head, "pull_requests": []}}
    allowed = (action.ws / "evalgate-results", action.ws / ".evalgate")  # and the runner's files: event, outputs, summary

    def harness(p: Path) -> bool:
        return p.is_relative_to(action.tmp) and not p.is_relative_to(action.ws) and p.relative_to(action.tmp).parts[0].startswith("run")

    def publish(lines: list[bytes], pr: Any = None) -> tuple[int, list[dict]]:
        _write_lines(artifact / "inference.jsonl", lines)
        pr = {"number": PR, "head_sha": head, "base_sha": baseline} if pr is None else pr
        (artifact / "pr.json").write_bytes(json.dumps(pr).encode("utf-8", "surrogatepass"))
        before_files = _files(action.tmp.parent)
        before = len(fake.statuses.get(head, []))
        code = action("workflow_run", event, sha=baseline, artifact_dir="evalgate-artifact", status_per_suite="true")
        changed = {p for p, v in _files(action.tmp.parent).items() if before_files.get(p) != v}
        outside = {p for p in changed if not harness(Path(p)) and not any(Path(p).is_relative_to(a) for a in allowed)}
        assert not outside, outside
        return code, fake.statuses.get(head, [])[before:]

    publish.records = records
    publish.action = action
    return publish


def _all_scored(results_path: Path) -> bool:
    results = json.loads(results_path.read_text(encoding="utf-8"))
    return all(
        not suite.get("agent_error") and all(crit["status"] in ("PASSED", "FAILED") for case in suite["cases"] for crit in case["criteria"].values())
        for suite in results["suites"]
    )


def _check(publish, code: int, statuses: list[dict]) -> None:
    action = publish.action
    event(f"exit {code}, evalgate: {next((s['state'] for s in statuses if s['context'] == 'evalgate'), 'no status')}")
    assert code in (0, 1, 2), action.stdout[-3000:]
    assert "internal error" not in action.stdout
    states = {s["context"]: s["state"] for s in statuses}
    if code == 2:
        assert "success" not in states.values()
    if states.get("evalgate") == "success" or states.get("evalgate/home") == "success":
        assert _all_scored(action.ws / "evalgate-results" / "results.json"), action.stdout[-3000:]


@budget(120)
@given(data=st.data())
def test_no_artifact_makes_an_internal_error_a_write_outside_or_an_unscored_success(published, data):
    lines = data.draw(artifact_lines(published.records))
    code, statuses = published(lines)
    _check(published, code, statuses)


pr_json = st.one_of(
    st.fixed_dictionaries(
        {"number": st.one_of(st.just(PR), st.sampled_from([float("inf"), float("nan"), 1e300, True, -1, 0, "7", 2**63]), anything), "head_sha": anything},
        optional={"base_sha": anything},
    ),
    anything,
)


@budget(40)
@given(data=st.data())
def test_no_pr_json_makes_an_internal_error(published, data):
    pr = data.draw(pr_json)
    code, statuses = published([json.dumps(r).encode() for r in published.records], pr)
    _check(published, code, statuses)


# --- an agent's answers, read from `actual:` files -------------------------------------------------


@st.composite
def answers(draw, records: list[dict]) -> list[bytes]:
    """What an agent says in each case: any text, any tool name, any arguments."""
    lines = []
    for record in records:
        record = json.loads(json.dumps(record))
        inv = record["invocations"][0]
        if draw(st.booleans()):
            inv["final_response"]["parts"][0]["text"] = draw(text)
        if draw(st.booleans()):
            inv["intermediate_data"]["tool_uses"][0]["name"] = draw(text)
        if draw(st.booleans()):
            inv["intermediate_data"]["tool_uses"][0]["args"] = draw(st.dictionaries(text, anything, max_size=3))
        lines.append(json.dumps(record, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass"))
    return lines


@budget(60)
@given(data=st.data())
def test_no_agent_answer_makes_an_internal_error(cli, tmp_path_factory, data):
    """`evalgate run` on recorded outputs (what an agent answered: any text, tool names and
    arguments): 0, 1 or 2, and when it scored, every results file was written."""
    from test_inputs import CASES, make_project

    root = make_project(tmp_path_factory.mktemp("project"))
    records = [{"eval_set_id": "home", "eval_id": k, "invocations": v} for k, v in CASES.items()]
    _write_lines(root / "runs" / "out.jsonl", data.draw(answers(records)))
    code, out, err = cli("run", "--out", str(root / "out"), "--quiet", cwd=root)
    event(f"exit {code}")
    assert code in (0, 1, 2), err
    if code != 2:
        for name in ("results.json", "junit.xml", "report.html", "inference.jsonl"):
            (root / "out" / name).read_text(encoding="utf-8")
