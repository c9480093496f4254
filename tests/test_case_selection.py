"""Choosing cases: `evalsets: ["file.json:id1,id2"]` as `adk eval` reads it, and `run --case PATTERN`.

The selector is read as ADK 2.13's own parser reads it (checked against
`google.adk.cli.cli_eval.parse_and_get_evals_to_run`), and a real `adk eval` on the weather
agent with the fake Gemini runs the same cases as `evalgate run` on the same selectors.
Unlike ADK, ids are trimmed and an unknown id is an error listing the ids there are.
`--case` composes with shards, merge, --resume and compare, and its results never become a
baseline. Korean and Japanese eval ids are used throughout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import write_json

IDS = {"paris": "パリの天気", "seoul_ko": "서울_날씨", "two_turns": "두_번_質問"}


def _echo_turn(text: str) -> dict:
    return {
        "invocation_id": "t",
        "user_content": {"parts": [{"text": text}], "role": "user"},
        "final_response": {"parts": [{"text": f"echo: {text}"}], "role": "model"},
        "intermediate_data": {"tool_uses": [], "tool_responses": [], "intermediate_responses": []},
    }


ECHO_AGENT = """
import json, sys
sys.stdin.reconfigure(encoding="utf-8"); sys.stdout.reconfigure(encoding="utf-8")
for line in sys.stdin:
    turn = json.loads(line)
    with open("calls.log", "a", encoding="utf-8") as log:
        log.write(turn["eval_id"] + "\\n")
    text = turn["user_content"]["parts"][0]["text"]
    print(json.dumps({"final_response": {"parts": [{"text": "echo: " + text}], "role": "model"}}, ensure_ascii=False), flush=True)
"""

ECHO_IDS = ["주문_상태", "返品_質問", "refund_1", "refund_2", "refund_10", "greeting"]


def echo_project(root: Path, evalsets=("evals",), cases: list[str] = ECHO_IDS) -> Path:
    """An eval set answered by a small command agent that logs each case it runs."""
    write_json(root / "evals" / "echo.evalset.json", {"eval_set_id": "echo", "eval_cases": [{"eval_id": i, "conversation": [_echo_turn(f"質問 {i}")]} for i in cases]})
    (root / "agent.py").write_text(ECHO_AGENT, encoding="utf-8")
    config = {
        "agent": {"command": [sys.executable, "agent.py"], "concurrency": 2},
        "suites": [{"name": "echo", "evalsets": list(evalsets), "criteria": {"response_match_score": 0.9}}],
    }
    (root / "evalgate.yaml").write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return root / "evalgate.yaml"


def calls(root: Path) -> list[str]:
    log = root / "calls.log"
    return sorted(log.read_text(encoding="utf-8").split()) if log.exists() else []


def case_ids(out: Path) -> list[str]:
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    return sorted(c["eval_id"] for s in data["suites"] for c in s["cases"])


def results(out: Path) -> dict:
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


# --- the selector, as ADK's parser reads it ------------------------------------------------

ITEMS = [
    "evals/a.evalset.json",
    "evals/a.evalset.json:x",
    "evals/a.evalset.json:x,y",
    "evals/a.evalset.json:",
    "evals/a.evalset.json:,,",
    "evals/a.evalset.json:x,,y,",
    "evals/a.evalset.json:파리,東京_天気",
    r"C:\evals\a.evalset.json",
    r"C:\evals\a.evalset.json:x,y",
    "C:/evals/a.evalset.json:x",
    "/abs/a.evalset.json:x",
    "ab:x",  # not a drive: 'ab' is the path
    "é:/x.json",  # not an ASCII drive letter: the path is "é"
]


@pytest.mark.parametrize("item", ITEMS)
def test_selector_is_read_as_adks_parser_reads_it(item):
    pytest.importorskip("google.adk")
    from google.adk.cli.cli_eval import parse_and_get_evals_to_run

    from evalgate.loaders.evalsets import split_selector

    [(their_path, their_ids)] = parse_and_get_evals_to_run([item]).items()
    path, ids = split_selector(item)
    assert path == their_path
    assert (ids or []) == their_ids


def test_items_are_trimmed_where_adk_keeps_the_spaces():
    from evalgate.loaders.evalsets import split_selector

    assert split_selector("a.json: x , y\u3000,\t서울_날씨 ") == ("a.json", ["x", "y", "서울_날씨"])
    assert split_selector("a.json: , ") == ("a.json", [])  # blank items only: every case, as in ADK


@pytest.mark.parametrize(
    "item, message",
    [
        ("a.json:x:y", "has a second ':' in its selector ('x:y'); adk eval would read only 'x' and drop the rest"),
        (":x", "names no eval set file before ':'"),
    ],
)
def test_a_selector_adk_would_misread_is_refused(item, message):
    from evalgate.loaders.evalsets import split_selector

    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        split_selector(item)


# --- the same cases as `adk eval` --------------------------------------------------------------


@pytest.mark.skipif(not (Path(sys.executable).parent / "adk").exists(), reason="adk is not installed beside this Python")
def test_selectors_run_the_cases_adk_eval_runs(tmp_path, monkeypatch, cli):
    """One `adk eval` process and one `evalgate run` over the same selectors: a file named whole
    and with ids (ADK puts the ids together, so only they run), blank items, Korean and
    Japanese ids, and a second file with an empty selector (every case)."""
    pytest.importorskip("google.adk")
    from agent_project import agent_model_server, make_project

    project = make_project(tmp_path, agent={"adk": "weather_agent"})
    data = json.loads(project.evalset.read_text(encoding="utf-8"))
    for case in data["eval_cases"]:
        case["eval_id"] = IDS[case["eval_id"]]
    a = project.root / "evals" / "a.evalset.json"
    b = project.root / "evals" / "b.evalset.json"
    write_json(a, data)
    write_json(b, {**data, "eval_set_id": "weather_b"})
    project.evalset.unlink()
    adk_items = ["evals/a.evalset.json", "evals/a.evalset.json:パリの天気,,서울_날씨", "evals/b.evalset.json:"]
    ours = ["evals/a.evalset.json", "evals/a.evalset.json: パリの天気 ,, 서울_날씨", "evals/b.evalset.json:"]
    config = yaml.safe_load(project.config.read_text(encoding="utf-8"))
    config["suites"][0]["evalsets"] = ours
    project.config.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")

    with agent_model_server(monkeypatch) as fake:
        env = {k: v for k, v in os.environ.items() if k != "GOOGLE_GENAI_USE_VERTEXAI"}
        adk = Path(sys.executable).parent / "adk"
        done = subprocess.run([str(adk), "eval", str(project.agent_dir), *adk_items], cwd=project.root, env=env, capture_output=True, text=True, timeout=300)
        assert "Eval Run Summary" in done.stdout, done.stdout[-2000:] + done.stderr[-3000:]
        code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out))
        assert fake.responder_errors == []
    assert code == 0, out + err
    theirs = set()
    for path in (project.agent_dir / ".adk" / "eval_history").glob("*.evalset_result.json"):
        history = json.loads(path.read_text(encoding="utf-8"))
        theirs |= {(history["eval_set_id"], c["eval_id"]) for c in history["eval_case_results"]}
    mine = {(c["eval_set_id"], c["eval_id"]) for s in results(project.out)["suites"] for c in s["cases"]}
    expected = {("weather", "パリの天気"), ("weather", "서울_날씨"), *(("weather_b", i) for i in IDS.values())}
    assert theirs == expected  # what ADK ran, and so what the selectors mean
    assert mine == theirs
    assert "selection" not in results(project.out)  # chosen in the config: the suite is these cases


# --- errors in the config --------------------------------------------------------------------


def test_an_unknown_id_names_the_file_the_place_and_the_ids_closest_first(tmp_path, cli):
    many = ECHO_IDS + [f"case_{i:02d}" for i in range(30)]
    config = echo_project(tmp_path, evalsets=["evals/echo.evalset.json:返品_質問", "evals/echo.evalset.json: 주문_상태 , refund_01"], cases=many)
    code, out, err = cli("validate", cwd=tmp_path)
    assert code == 2 and out == "" and "Traceback" not in err
    [line] = [x for x in err.splitlines() if x.startswith("error:")]
    at = next(n for n, text in enumerate(config.read_text(encoding="utf-8").splitlines(), 1) if "refund_01" in text)
    assert line.startswith(
        f"error: evalgate.yaml: suites[0].evalsets[1] (line {at}): evals/echo.evalset.json has no eval case 'refund_01'. "
        "Its eval ids, closest first: 'refund_1', 'refund_10', 'refund_2',"
    ), line
    assert line.endswith(" and 26 more. Fix the id, or remove it from the selector."), line
    assert line.count("'") == 2 * (1 + 10)  # the unknown id and ten of the ids there are

    config = echo_project(tmp_path, evalsets=["evals/echo.evalset.json:주문_상태,返品_質問"])
    code, out, err = cli("validate", "--config", str(config))
    assert code == 0 and "OK, 1 suite, 2 cases" in out, err


@pytest.mark.parametrize(
    "item, message",
    [
        ("evals/*.evalset.json:refund_1", "'evals/*.evalset.json:refund_1': a case selector needs one eval set file, and 'evals/*.evalset.json' is a glob"),
        ("evals:refund_1", "'evals:refund_1': a case selector needs one eval set file, and 'evals' is a folder"),
        ("evals/echo.evalset.json:refund_1:refund_2", "has a second ':' in its selector"),
        ("evals/nope.evalset.json:refund_1", "'evals/nope.evalset.json' does not exist"),
    ],
)
def test_a_selector_needs_one_existing_file(tmp_path, cli, item, message):
    config = echo_project(tmp_path, evalsets=[item])
    code, _, err = cli("validate", "--config", str(config))
    assert code == 2 and "suites[0].evalsets[0] (line " in err and message in err, err


# --- --case -------------------------------------------------------------------------------------


def test_case_runs_only_the_matching_cases_and_says_so(tmp_path, cli):
    config = echo_project(tmp_path)
    code, out, err = cli("validate", "--config", str(config), "--case", "refund_*", "--case", "주문_*")
    assert code == 0 and "OK, 1 suite, 4 cases" in out and "selected 4 of 6 cases (--case 'refund_*' --case '주문_*')" in out

    code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / "out"), "--case", "refund_?", "--case", " 返品_質問 ")
    assert code == 0, out + err
    assert "selected 3 of 6 cases" in err
    assert calls(tmp_path) == sorted(["refund_1", "refund_2", "返品_質問"])  # the agent ran these only
    assert case_ids(tmp_path / "out") == sorted(["refund_1", "refund_2", "返品_質問"])
    assert results(tmp_path / "out")["selection"] == {"patterns": ["refund_?", "返品_質問"], "cases": 3, "of": 6}
    infer = [json.loads(x)["eval_id"] for x in (tmp_path / "out" / "inference.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sorted(infer) == sorted(["refund_1", "refund_2", "返品_質問"])


def test_case_that_matches_nothing_lists_ids(tmp_path, cli):
    config = echo_project(tmp_path)
    code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / "out"), "--case", "refund", "--case", "返品*")
    assert code == 2 and out == ""
    assert "error: --case: 'refund' matches no eval case. Did you mean 'refund*'? Eval ids here, closest first: 'refund_1', 'refund_2', 'refund_10'," in err, err
    code, _, err = cli("validate", "--config", str(config), "--case", "質問", "--case", "nothing")
    assert code == 2 and "'質問' matches no eval case. Did you mean '*質問*'?" in err
    assert "'nothing' matches no eval case. Eval ids here" in err
    assert "返品*" not in err  # that one matches
    assert not (tmp_path / "calls.log").exists() and not (tmp_path / "out").exists()
    with pytest.raises(SystemExit) as e:
        cli("run", "--config", str(config), "--case", "  ")
    assert e.value.code == 2


def test_case_composes_with_config_selectors_and_drops_emptied_suites(tmp_path, cli):
    config = echo_project(tmp_path)
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["suites"][0]["evalsets"] = ["evals/echo.evalset.json:refund_1,refund_2,주문_상태"]
    data["suites"].append({"name": "second", "evalsets": ["evals/echo.evalset.json:greeting"], "criteria": {"response_match_score": 0.9}})
    config.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / "out"), "--case", "refund_*", "-q")
    assert code == 0, out + err
    run = results(tmp_path / "out")
    assert [s["name"] for s in run["suites"]] == ["echo"]  # 'second' holds no chosen case
    assert case_ids(tmp_path / "out") == ["refund_1", "refund_2"]  # refund_10: not in the config's selection
    assert run["selection"] == {"patterns": ["refund_*"], "cases": 2, "of": 4}
    code, _, err = cli("run", "--config", str(config), "--case", "refund_10")
    assert code == 2 and "'refund_10' matches no eval case" in err


def test_a_selection_is_not_a_baseline_and_compares_with_the_same_cases(tmp_path, cli):
    config = echo_project(tmp_path)
    whole, part = tmp_path / "whole", tmp_path / "part"
    assert cli("run", "--config", str(config), "--out", str(whole), "-q")[0] == 0
    assert cli("run", "--config", str(config), "--out", str(part), "-q", "--case", "refund_*")[0] == 0
    w, p = results(whole), results(part)
    assert "selection" not in w and p["config_digest"] != w["config_digest"]

    code, _, err = cli("baseline", "save", "--results", str(part / "results.json"), "--commit", "a" * 40, "--config", str(config))
    assert code == 2 and "holds the 3 of 6 cases `run --case` chose, not the whole run" in err
    assert not (tmp_path / ".evalgate").exists()

    code, out, err = cli("compare", "--current", str(part / "results.json"), "--baseline", str(whole / "results.json"), "--config", str(config))
    assert code == 0, out + err
    assert "compared the cases --case chose (3 of 6) with the same cases of the baseline (3)" in err
    assert "config changed" not in out and "removed" not in out.lower()
    assert "- a selection: 3 of the config's 6 cases, chosen by run --case refund" in out


def test_case_with_shards_merge_and_resume(tmp_path, cli):
    config = echo_project(tmp_path)
    legs = []
    for k in (1, 2):
        leg = tmp_path / f"leg-{k}"
        code, out, err = cli("run", "--config", str(config), "--out", str(leg), "--shard", f"{k}/2", "--case", "refund_*", "--case", "주문_상태")
        assert code == 0, out + err
        assert "selected 4 of 6 cases" in err and f"shard {k}/2: " in err and " of 4 cases" in err
        legs.append(leg)
    merged = tmp_path / "merged"
    code, out, err = cli("merge", *map(str, legs), "--out", str(merged), "-q")
    assert code == 0, out + err
    assert case_ids(merged) == sorted(["refund_1", "refund_2", "refund_10", "주문_상태"])
    assert results(merged)["selection"] == {"patterns": ["refund_*", "주문_상태"], "cases": 4, "of": 6}
    code, _, err = cli("baseline", "save", "--results", str(merged / "results.json"), "--commit", "b" * 40, "--config", str(config))
    assert code == 2 and "not the whole run" in err

    # A leg of another selection is not merged with these.
    other = tmp_path / "other"
    cli("run", "--config", str(config), "--out", str(other), "--shard", "2/2", "--case", "refund_*", "-q")
    code, _, err = cli("merge", str(legs[0]), str(other), "--out", str(tmp_path / "mixed"))
    assert code == 2 and "was run with another config" in err

    # --resume reuses the chosen cases' agent runs in a run of every case.
    (tmp_path / "calls.log").unlink()
    code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / "all"), "--resume", str(legs[0]))
    assert code == 0, out + err
    first_leg = [c["eval_id"] for s in results(legs[0])["suites"] for c in s["cases"]]
    assert first_leg and calls(tmp_path) == sorted(set(ECHO_IDS) - set(first_leg))
    assert f"{len(first_leg)} reused from" in out
    assert "selection" not in results(tmp_path / "all") and case_ids(tmp_path / "all") == sorted(ECHO_IDS)


def test_a_selector_over_recorded_outputs_leaves_the_other_records_unscored_without_a_warning(tmp_path, cli):
    config = echo_project(tmp_path)
    assert cli("run", "--config", str(config), "--out", str(tmp_path / "first"), "-q")[0] == 0
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data.pop("agent")
    data["suites"][0].update(evalsets=["evals/echo.evalset.json:返品_質問,refund_2"], actual=["first/inference.jsonl"])
    config.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    code, out, err = cli("run", "--config", str(config), "--out", str(tmp_path / "second"))
    assert code == 0, out + err
    assert case_ids(tmp_path / "second") == sorted(["返品_質問", "refund_2"])
    assert "match no eval case" not in out + err and results(tmp_path / "second")["suites"][0]["warnings"] == []
    data["suites"][0]["evalsets"] = ["evals/echo.evalset.json"]
    lines = (tmp_path / "first" / "inference.jsonl").read_text(encoding="utf-8").splitlines()
    (tmp_path / "two.jsonl").write_text("".join(x + "\n" for x in lines if json.loads(x)["eval_id"] in ("返品_質問", "refund_2")), encoding="utf-8")
    data["suites"][0]["actual"] = ["two.jsonl"]
    config.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    code, _, err = cli("validate", "--config", str(config))
    assert code == 2 and "no actual outputs for eval case '주문_상태'" in err  # the check still bites
