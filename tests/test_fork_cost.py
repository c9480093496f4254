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


def _unknown_keys(tmp_path: Path, n: int) -> int:
    from evalgate.trusted import read_outputs

    path = _write(tmp_path / f"keys{n}.jsonl", _record(**{f"未知{i}": i for i in range(n)}))
    outputs = read_outputs(path, KNOWN)
    assert len(outputs.of("home", ("set", "난방-ko"))) == 1
    assert f"ignored keys '未知0', '未知1', '未知2', '未知3', '未知4' and {n - 5} more" in outputs.ignored_keys
    return _steps(lambda: read_outputs(path, KNOWN))


def test_a_record_with_thousands_of_unknown_keys_is_read_in_linear_steps(tmp_path):
    """Before: each unknown key was dropped by copying the record, so 24,000 keys (380 KB) took
    11 s and four times the keys took sixteen times the work. Now the keys go in one copy."""
    small, large = _unknown_keys(tmp_path, 500), _unknown_keys(tmp_path, 2000)
    assert large < 6 * small, (small, large)  # 4x the keys: about 4x the steps (before: about 16x)
