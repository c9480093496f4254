"""The results files' fast JSON writer writes what json.dumps(indent=2) wrote, byte for byte."""

from __future__ import annotations

import json
import random
import shutil

import pytest

from conftest import REPO
from evalgate import results
from evalgate.results import json_chunks

TEXTS = ["", " ", "서울의 날씨는 맑습니다", "東京の天気は晴れです。", "カタカナ", "e-mail 1e-05", "0.00001", "a\"b\\c",
         "\n\r\t\b\f\x00\x1f\x7f", "\u2028\u2029", "ＡＢＣ", "😀", "</script>"]
SCALARS = [None, True, False, 0, -3, 10**30, -(10**20), 0.5, 1 / 3, -0.0, 1e15, 1e16, 1.5e300, 1e-05, -2.5e-07,
           1e-310, 0.0001, 0.00012, float("inf"), float("-inf"), float("nan"), *TEXTS]


def _value(rng: random.Random, depth: int):
    r = rng.random()
    if depth < 5 and r < 0.3:
        return {rng.choice(TEXTS + ["k", "b", "a"]) + str(rng.randint(0, 3)): _value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    if depth < 5 and r < 0.5:
        items = [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
        return tuple(items) if rng.random() < 0.1 else items
    return rng.choice(SCALARS)


def _text(chunks) -> str:
    return "".join(c if isinstance(c, str) else c.decode("utf-8") for c in chunks)


@pytest.mark.parametrize("sort_keys", [True, False])
def test_equals_json_dumps(sort_keys):
    rng = random.Random(12)
    for _ in range(4000):
        value = _value(rng, 0)
        expected = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=sort_keys) + "\n"
        assert _text(json_chunks(value, sort_keys)) == expected, value


@pytest.mark.parametrize("sort_keys", [True, False])
def test_each_writer_takes_its_turn(sort_keys):
    # pydantic's writer where its floats read as Python's; else, sorted, the exact
    # walker (one piece), unsorted, json.dumps (two pieces).
    plain = {"text": "한국어 1e-05 日本語", "score": 0.25, "list": [1, 2.5, {"e-": "0.00001", "b": None}]}
    chunks = json_chunks(plain, sort_keys)
    assert isinstance(chunks[0], bytes)
    assert _text(chunks) == json.dumps(plain, indent=2, ensure_ascii=False, sort_keys=sort_keys) + "\n"
    for tiny in (1e-05, 2.5e-07, 1e16, [1e300]):
        value = {"b": {"z": tiny, "a": "東京"}, "a": 1}
        chunks = json_chunks(value, sort_keys)
        assert isinstance(chunks[0], str) and len(chunks) == (1 if sort_keys else 2)
        assert _text(chunks) == json.dumps(value, indent=2, ensure_ascii=False, sort_keys=sort_keys) + "\n"


def test_non_string_keys_fall_back():
    value = {"b": {2: "x", 1: [1]}, "a": [{}]}
    assert _text(json_chunks(value, False)) == json.dumps(value, indent=2, ensure_ascii=False) + "\n"
    value = {"b": {2: "x", 1: [1]}}
    assert _text(json_chunks(value, True)) == json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def test_run_writes_todays_bytes(cli, tmp_path):
    """results.json and the ADK-shaped files of a run with Korean and Japanese text are the
    bytes the writers before (json.dumps with indent=2) gave."""
    project = tmp_path / "quickstart"
    shutil.copytree(REPO / "examples" / "quickstart", project)
    code, out, err = cli("run", "--out", "out", "--no-color", cwd=project)
    assert code == 1, out + err  # the quickstart fails on purpose

    path = project / "out" / "results.json"
    text = path.read_text(encoding="utf-8")
    assert "배송" in text and "注文" in text
    run = results.read(path)
    assert text == json.dumps(run.model_dump(mode="json"), sort_keys=True, indent=2, ensure_ascii=False) + "\n"

    adk_files = sorted((project / "out" / "adk").rglob("*.evalset_result.json"))
    assert len(adk_files) == 2
    for adk_file in adk_files:
        text = adk_file.read_text(encoding="utf-8")
        assert text == json.dumps(json.loads(text), indent=2, ensure_ascii=False) + "\n"
    assert any("배송" in f.read_text(encoding="utf-8") for f in adk_files)
