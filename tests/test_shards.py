"""Shards, merge and resume: `run --shard K/N`, `merge`, `run --resume`, through the CLI.

The generated project has three suites: recorded outputs over two eval sets whose
test_config.json files set different thresholds (Korean and Japanese text among them); a
`command` agent (docs/examples/weather_agent.py) run twice per case; and an agent that
fails on every case run (the suite's agent_error). Sharded and merged, every output must
equal the unsharded run's, byte for byte where the results are deterministic.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO

QUICKSTART = REPO / "examples" / "quickstart"
EXAMPLE_AGENT = REPO / "docs" / "examples" / "weather_agent.py"
CITIES = ["Paris", "London", "서울", "東京"]  # 東京 is not in the agent's table: it asks back, and fails
WORDS = ["주문 상태를 알려 주세요", "返品したいです", "Where is my order?", "配送はいつですか", "환불 가능한가요"]


def _turn(user: str, answer: str, tools: list[dict], i: int) -> dict:
    return {
        "invocation_id": f"t{i}",
        "user_content": {"parts": [{"text": user}], "role": "user"},
        "final_response": {"parts": [{"text": answer}], "role": "model"},
        "intermediate_data": {"tool_uses": tools, "tool_responses": [], "intermediate_responses": []},
    }


def _write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")


def generated_project(root: Path, cases: int = 40) -> Path:
    """Three suites (see the module docstring); returns the config's path."""
    records = []
    for s, (set_id, threshold) in enumerate((("alpha", 0.4), ("beta", 0.7))):
        eval_cases = []
        for i in range(cases):
            user = f"{WORDS[i % len(WORDS)]} #{i}"
            expected = f"{WORDS[(i + 1) % len(WORDS)]} answer {i}"
            tool = [{"name": "lookup", "args": {"id": i}}]
            eval_cases.append({"eval_id": f"{set_id}-{i:03d}", "conversation": [_turn(user, expected, tool, 1)]})
            actual = expected if i % 3 else f"something else {i}"
            actual_tool = tool if i % 5 else [{"name": "lookup", "args": {"id": -1}}]
            records.append({"eval_set_id": set_id, "eval_id": f"{set_id}-{i:03d}", "invocations": [_turn(user, actual, actual_tool, 1)]})
        _write(root / "recorded" / set_id / f"{set_id}.evalset.json", {"eval_set_id": set_id, "eval_cases": eval_cases})
        _write(
            root / "recorded" / set_id / "test_config.json",
            {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": threshold}},
        )
    (root / "runs").mkdir(parents=True, exist_ok=True)
    (root / "runs" / "recorded.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")

    weather = []
    for i in range(cases // 2):
        city = CITIES[i % len(CITIES)]
        forecast = {"Paris": "sunny, 21 C", "London": "cloudy, 14 C", "서울": "맑음, 18도"}.get(city, "?")
        weather.append(
            {
                "eval_id": f"weather-{i:03d}",
                "conversation": [_turn(f"What's the weather in {city}? ({i})", f"The weather in {city}: {forecast}.", [{"name": "get_weather", "args": {"city": city}}], 1)],
            }
        )
    _write(root / "agent" / "weather.evalset.json", {"eval_set_id": "weather", "eval_cases": weather})
    _write(root / "broken" / "broken.evalset.json", {"eval_set_id": "broken", "eval_cases": weather[:10]})
    shutil.copy(EXAMPLE_AGENT, root / "weather_agent.py")
    (root / "broken_agent.py").write_text("import sys\nsys.stderr.write('no model key\\n')\nsys.exit(1)\n", encoding="utf-8")
    config = {
        "version": 1,
        "suites": [
            {"name": "recorded", "evalsets": "recorded", "actual": "runs/recorded.jsonl"},
            {
                "name": "agent",
                "evalsets": "agent",
                "agent": {"command": [sys.executable, "weather_agent.py"], "num_runs": 2, "concurrency": 4},
                "criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8},
            },
            {
                "name": "broken",
                "evalsets": "broken",
                "agent": {"command": [sys.executable, "broken_agent.py"], "concurrency": 4},
                "criteria": {"tool_trajectory_avg_score": 1.0},
            },
        ],
    }
    path = root / "evalgate.yaml"
    _write(path, config)
    return path


def _comparable(folder: Path) -> str:
    from evalgate import results

    return json.dumps(results.read(folder / "results.json").comparable(), sort_keys=True, ensure_ascii=False)


def _files(folder: Path, under: str) -> dict[str, bytes]:
    root = folder / under
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    root = tmp_path_factory.mktemp("generated")
    return generated_project(root)


@pytest.mark.parametrize("project", ["quickstart", "generated"])
@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_sharded_and_merged_equals_unsharded(cli, tmp_path, generated, project, n):
    config = QUICKSTART / "evalgate.yaml" if project == "quickstart" else generated
    whole = tmp_path / "whole"
    code_whole, _, _ = cli("run", "-c", str(config), "-o", str(whole), "-q")
    for k in range(1, n + 1):
        code, _, err = cli("run", "-c", str(config), "--shard", f"{k}/{n}", "-o", str(tmp_path / "shards" / f"shard-{k}"))
        assert code in (0, 1), err
        assert f"shard {k}/{n}: " in err
    code, out, err = cli("merge", str(tmp_path / "shards"), "-o", str(tmp_path / "merged"))
    assert code == code_whole, err
    merged = tmp_path / "merged"
    assert _comparable(merged) == _comparable(whole)
    assert (merged / "junit.xml").read_bytes() == (whole / "junit.xml").read_bytes()
    # A live agent's invocations carry their own ids and times: equal but for those.
    assert _steady(_files(merged, "adk")) == _steady(_files(whole, "adk")) and _files(whole, "adk")
    if project == "generated":
        assert _steady({"": (merged / "inference.jsonl").read_bytes()}) == _steady({"": (whole / "inference.jsonl").read_bytes()})
        data = json.loads((merged / "results.json").read_text(encoding="utf-8"))
        assert [s["index"] for s in data["run"]["shards"]] == list(range(1, n + 1))
        assert data["run"]["agent"]["suites"]["agent"]["case_runs"] == 40  # 20 cases x 2 runs, over every shard
        legs = [json.loads((tmp_path / "shards" / f"shard-{k}" / "results.json").read_text(encoding="utf-8"))["run"]["scoring"] for k in range(1, n + 1)]
        added = sum(leg.get("agent", {}).get("criteria", {}).get("response_match_score", 0.0) for leg in legs)
        assert data["run"]["scoring"]["agent"]["criteria"]["response_match_score"] == pytest.approx(added, abs=0.01)  # the legs' time, added up
        broken = next(s for s in data["suites"] if s["name"] == "broken")
        assert "The error of 10 of 10 runs" in broken["agent_error"]
    assert (merged / "report.html").is_file() and f"report: {merged / 'report.html'}" in out


def test_merged_files_are_byte_identical_for_the_same_agent_outputs(cli, tmp_path, generated):
    """With the same agent outputs (each leg resumes the whole run's), every merged file is
    the unsharded run's, byte for byte: ADK results and inference lines included."""
    whole = tmp_path / "whole"
    cli("run", "-c", str(generated), "-o", str(whole), "-q")
    for k in (1, 2, 3):
        cli("run", "-c", str(generated), "--shard", f"{k}/3", "--resume", str(whole), "-o", str(tmp_path / "shards" / f"s{k}"), "-q")
    cli("merge", str(tmp_path / "shards"), "-o", str(tmp_path / "merged"), "-q")
    merged = tmp_path / "merged"
    for name in ("junit.xml", "inference.jsonl"):
        assert (merged / name).read_bytes() == (whole / name).read_bytes(), name
    assert _files(merged, "adk") == _files(whole, "adk")
    assert _comparable(merged) == _comparable(whole)


def _steady(files: dict[str, bytes]) -> dict[str, object]:
    """Files as JSON (or JSON lines) without the keys a live run makes anew."""
    volatile = {"creation_timestamp", "invocation_id", "duration", "model_duration", "tool_duration"}

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in volatile}
        if isinstance(value, list):  # the seconds ADK's invocation_duration_v1 measured
            return [strip(v) for v in value if not (isinstance(v, dict) and v.get("metric_name") == "invocation_duration_v1")]
        return value

    return {name: [strip(json.loads(line)) for line in data.decode("utf-8").split("\n") if line.strip()] if name == "" else strip(json.loads(data)) for name, data in files.items()}


def test_the_generated_project_exercises_what_a_merge_must_get_right(cli, tmp_path, generated):
    """Guards the test above: per-eval-set thresholds, failures, several runs, an agent error."""
    code, _, _ = cli("run", "-c", str(generated), "-o", str(tmp_path / "out"), "-q")
    data = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    recorded, agent, broken = data["suites"]
    thresholds = {c["eval_set_id"]: c["criteria"]["response_match_score"]["threshold"] for c in recorded["cases"]}
    assert thresholds == {"alpha": 0.4, "beta": 0.7}
    assert recorded["counts"]["failed"] > 0 and recorded["counts"]["passed"] > 0
    assert agent["counts"]["failed"] > 0 and all(len(c["criteria"]["response_match_score"]["runs"]) == 2 for c in agent["cases"])
    assert broken["agent_error"] and code == 1


def test_validate_and_run_say_how_many_cases_each_shard_holds(cli, generated):
    from evalgate.config import load_config
    from evalgate.plan import build_plans
    from evalgate.shards import sizes

    code, out, _ = cli("validate", "-c", str(generated), "--shards", "3")
    expected = sizes(build_plans(load_config(generated)), 3)
    assert code == 0 and sum(expected) == 110
    assert f"3 shards hold {expected[0]}, {expected[1]}, {expected[2]} cases" in out


def test_assignment_is_stable_when_cases_are_added_and_balanced():
    from evalgate.shards import shard_of

    keys = [("suite", f"set-{i % 7}", f"case-{i}") for i in range(2000)]
    for n in (2, 3, 7, 16):
        before = {k: shard_of(*k, n) for k in keys}
        added = [("suite", "set-new", f"new-{i}") for i in range(200)] + [("other suite", "set-0", f"case-{i}") for i in range(10)]
        after = {k: shard_of(*k, n) for k in keys + added}
        assert all(after[k] == before[k] for k in keys)  # no existing case moves
        counts = [list(before.values()).count(s) for s in range(1, n + 1)]
        assert set(before.values()) == set(range(1, n + 1))
        mean = len(keys) / n
        assert max(abs(c - mean) for c in counts) < 5 * mean**0.5, counts  # binomial spread, not a skew


@pytest.mark.parametrize("text", ["0/3", "4/3", "3", "a/b", "1/0", "1/300", ""])
def test_a_bad_shard_is_a_usage_error(cli, text):
    with pytest.raises(SystemExit) as e:
        cli("run", "--shard", text)
    assert e.value.code == 2


# --- bad merges -------------------------------------------------------------------------


def _shards(cli, tmp_path: Path, config: Path, n: int, only=None, env: dict | None = None) -> Path:
    for k in only or range(1, n + 1):
        code, _, err = cli("run", "-c", str(config), "--shard", f"{k}/{n}", "-o", str(tmp_path / "shards" / f"leg-{k}"), "-q")
        assert code in (0, 1), err
    return tmp_path / "shards"


def test_a_missing_shard_is_refused_and_named(cli, tmp_path):
    shards = _shards(cli, tmp_path, QUICKSTART / "evalgate.yaml", 3, only=[1, 3])
    code, _, err = cli("merge", str(shards), "-o", str(tmp_path / "merged"))
    assert code == 2
    assert "shard 2/3 of the run is missing" in err and "leg-1" in err and "Traceback" not in err
    assert not (tmp_path / "merged" / "results.json").exists()


def test_shards_of_different_configs_are_refused(cli, tmp_path):
    a = tmp_path / "a"
    shutil.copytree(QUICKSTART, a)
    _shards(cli, tmp_path, a / "evalgate.yaml", 2, only=[1])
    text = (a / "evalgate.yaml").read_text(encoding="utf-8").replace("response_match_score: 0.5", "response_match_score: 0.6")
    (a / "evalgate.yaml").write_text(text, encoding="utf-8")
    _shards(cli, tmp_path, a / "evalgate.yaml", 2, only=[2])
    code, _, err = cli("merge", str(tmp_path / "shards" / "leg-1"), str(tmp_path / "shards" / "leg-2"), "-o", str(tmp_path / "m"))
    assert code == 2
    assert "leg-2" in err and "shard 2 was run with another config than shard 1" in err


def test_shards_of_different_commits_or_counts_are_refused(cli, tmp_path, monkeypatch):
    config = QUICKSTART / "evalgate.yaml"
    monkeypatch.setenv("GITHUB_SHA", "a" * 40)
    _shards(cli, tmp_path, config, 2, only=[1])
    monkeypatch.setenv("GITHUB_SHA", "b" * 40)
    _shards(cli, tmp_path, config, 2, only=[2])
    code, _, err = cli("merge", str(tmp_path / "shards"), "-o", str(tmp_path / "m"))
    assert code == 2 and "shard 2 evaluated commit bbbbbbbbbbbb, shard 1 commit aaaaaaaaaaaa" in err

    other = tmp_path / "other"
    code, _, _ = cli("run", "-c", str(config), "--shard", "2/3", "-o", str(other / "leg-x"), "-q")
    code, _, err = cli("merge", str(tmp_path / "shards" / "leg-2"), str(other / "leg-x"), "-o", str(tmp_path / "m"))
    assert code == 2 and "is shard 2/3, but" in err


def test_overlapping_shards_are_refused(cli, tmp_path):
    shards = _shards(cli, tmp_path, QUICKSTART / "evalgate.yaml", 2)
    shutil.copytree(shards / "leg-2", tmp_path / "copy-of-2")
    code, _, err = cli("merge", str(shards / "leg-1"), str(shards / "leg-2"), str(tmp_path / "copy-of-2"), "-o", str(tmp_path / "m"))
    assert code == 2 and "shard 2 is given twice" in err and "copy-of-2" in err

    # A shard folder holding another shard's case (edited by hand, or a bug): refused by name.
    data = json.loads((shards / "leg-1" / "results.json").read_text(encoding="utf-8"))
    other = json.loads((shards / "leg-2" / "results.json").read_text(encoding="utf-8"))
    data["suites"][0]["cases"].append(other["suites"][0]["cases"][0])
    (shards / "leg-1" / "results.json").write_text(json.dumps(data), encoding="utf-8")
    code, _, err = cli("merge", str(shards / "leg-1"), str(shards / "leg-2"), "-o", str(tmp_path / "m"))
    assert code == 2 and "belongs to shard 2, not 1: these shards overlap" in err


def test_whole_runs_are_not_merged_and_shards_are_not_compared(cli, tmp_path):
    config = QUICKSTART / "evalgate.yaml"
    cli("run", "-c", str(config), "-o", str(tmp_path / "whole"), "-q")
    code, _, err = cli("merge", str(tmp_path / "whole"), "-o", str(tmp_path / "m"))
    assert code == 2 and "not of a shard" in err
    _shards(cli, tmp_path, config, 2, only=[1])
    code, _, err = cli("compare", "--current", str(tmp_path / "shards" / "leg-1" / "results.json"), "--baseline", str(tmp_path / "whole" / "results.json"))
    assert code == 2 and "holds shard 1 of 2, not the whole run" in err and "evalgate merge" in err
    code, _, err = cli("merge", str(tmp_path / "nothing-here"), "-o", str(tmp_path / "m"))
    assert code == 2 and "does not exist" in err


# --- resume -------------------------------------------------------------------------------

COUNTING_AGENT = """
import json, os, sys, time
sys.stdin.reconfigure(encoding="utf-8"); sys.stdout.reconfigure(encoding="utf-8")
for line in sys.stdin:
    turn = json.loads(line)
    with open("calls.log", "a", encoding="utf-8") as log:
        log.write(f"{turn['eval_id']} {turn.get('run', 1)}\\n")
    if os.path.exists("fail-" + turn["eval_id"]):
        sys.exit("the model is down")
    time.sleep(float(os.environ.get("AGENT_DELAY", "0")))
    text = turn["user_content"]["parts"][0]["text"]
    print(json.dumps({"final_response": {"parts": [{"text": "echo: " + text}], "role": "model"}}, ensure_ascii=False), flush=True)
"""


def _resume_project(root: Path, cases: int = 12, **agent) -> Path:
    eval_cases = [{"eval_id": f"c{i:02d}", "conversation": [_turn(f"質問 {i}", f"echo: 質問 {i}", [], 1)]} for i in range(cases)]
    _write(root / "evals" / "echo.evalset.json", {"eval_set_id": "echo", "eval_cases": eval_cases})
    (root / "agent.py").write_text(COUNTING_AGENT, encoding="utf-8")
    config = {
        "version": 1,
        "agent": {"command": [sys.executable, "agent.py"], "concurrency": 2, **agent},
        "suites": [{"name": "echo", "evalsets": "evals", "criteria": {"response_match_score": 0.9}}],
    }
    _write(root / "evalgate.yaml", config)
    return root / "evalgate.yaml"


def _calls(root: Path) -> list[str]:
    log = root / "calls.log"
    return log.read_text(encoding="utf-8").split() if log.exists() else []


def test_resume_runs_only_the_failed_case_runs(cli, tmp_path):
    config = _resume_project(tmp_path / "p", num_runs=2)
    root = config.parent
    for eval_id in ("c03", "c07"):
        (root / f"fail-{eval_id}").write_text("", encoding="utf-8")
    out = tmp_path / "out"
    code, _, _ = cli("run", "-c", str(config), "-o", str(out), "-q")
    first = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert first["run"]["agent"]["suites"]["echo"]["failed"] == 4 and first["counts"]["not_evaluated"] == 2
    for f in root.glob("fail-*"):
        f.unlink()
    (root / "calls.log").unlink()

    code, stdout, _ = cli("run", "-c", str(config), "-o", str(out), "--resume", str(out))
    assert sorted(_calls(root)[0::2]) == ["c03", "c03", "c07", "c07"]  # 2 cases x 2 runs, nothing else
    assert "20 reused from" in stdout
    resumed = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert resumed["run"]["agent"]["suites"]["echo"]["reused"] == 20
    assert resumed["counts"]["passed"] == 12 and code == 0

    fresh = tmp_path / "fresh"
    cli("run", "-c", str(config), "-o", str(fresh), "-q")
    assert _comparable(out) == _comparable(fresh)
    assert _steady({"": (out / "inference.jsonl").read_bytes()}) == _steady({"": (fresh / "inference.jsonl").read_bytes()})


def test_resume_picks_up_an_interrupted_run(tmp_path):
    """A real process killed mid-run leaves its finished case runs; the resumed run runs the rest."""
    config = _resume_project(tmp_path / "p", cases=20)
    root, out = config.parent, tmp_path / "out"
    env = {**os.environ, "AGENT_DELAY": "0.3", "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "evalgate", "run", "-c", str(config), "-o", str(out), "-q"], env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            lines = (out / "inference.jsonl").read_text(encoding="utf-8").splitlines() if (out / "inference.jsonl").exists() else []
            if len(lines) >= 6:
                break
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert not (out / "results.json").exists()
    done = {json.loads(line)["eval_id"] for line in (out / "inference.jsonl").read_text(encoding="utf-8").splitlines() if line.strip().endswith("}")}
    assert 6 <= len(done) < 20
    before = len(_calls(root)) // 2

    run = subprocess.run(
        [sys.executable, "-m", "evalgate", "run", "-c", str(config), "-o", str(out), "--resume", str(out), "-q"],
        env={**env, "AGENT_DELAY": "0"}, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr
    again = _calls(root)[2 * before:][0::2]
    assert not done & set(again) and len(again) <= 20 - len(done) + 2  # at most the runs cut off mid-answer run twice
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["counts"]["passed"] == 20 and results["run"]["agent"]["suites"]["echo"]["reused"] == len(done)


def test_resume_refuses_another_config_and_reruns_changed_cases(cli, tmp_path):
    config = _resume_project(tmp_path / "p")
    root, out = config.parent, tmp_path / "out"
    cli("run", "-c", str(config), "-o", str(out), "-q")
    code, _, err = cli("run", "-c", str(config), "-o", str(tmp_path / "o2"), "--resume", str(tmp_path / "nowhere"))
    assert code == 2 and "has no resume.json" in err

    # A changed case runs again; the others are reused.
    data = json.loads((root / "evals" / "echo.evalset.json").read_text(encoding="utf-8"))
    data["eval_cases"][4]["conversation"][0]["user_content"]["parts"][0]["text"] = "新しい質問"
    data["eval_cases"][4]["conversation"][0]["final_response"]["parts"][0]["text"] = "echo: 新しい質問"
    _write(root / "evals" / "echo.evalset.json", data)
    (root / "calls.log").unlink()
    code, _, err = cli("run", "-c", str(config), "-o", str(out), "--resume", str(out), "-q")
    assert code == 0, err
    assert _calls(root) == ["c04", "1"]

    text = config.read_text(encoding="utf-8").replace("0.9", "0.8")
    config.write_text(text, encoding="utf-8")
    code, _, err = cli("run", "-c", str(config), "-o", str(out), "--resume", str(out), "-q")
    assert code == 2 and "resume.json: config_digest: the earlier run had another config" in err


def test_shards_another_evalgate_version_wrote_are_merged_and_their_new_keys_named(cli, tmp_path):
    """Keys a newer evalgate wrote into a leg's results.json are ignored, one warning per file;
    before, the merge stopped on "unknown key"."""
    shards = _shards(cli, tmp_path, QUICKSTART / "evalgate.yaml", 2)
    for k in (1, 2):
        path = shards / f"leg-{k}" / "results.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        data["suites"][0]["비용"] = {"usd": 0.1}
        path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    code, _, err = cli("merge", str(shards), "-o", str(tmp_path / "merged"))
    assert code in (0, 1), err
    warnings = [line for line in err.splitlines() if "which this evalgate does not know" in line]
    assert [w.split(": ignored")[0] for w in warnings] == [f"warning: {shards / f'leg-{k}' / 'results.json'}" for k in (1, 2)]
    assert "'suites[0].비용'" in warnings[0]
    assert "비용" not in (tmp_path / "merged" / "results.json").read_text(encoding="utf-8")
