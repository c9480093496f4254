"""The command line end to end: trace suites, start-up imports, output files."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import write_json


def test_trace_suite_through_the_cli(cli, shared_fixtures, tmp_path):
    ref = json.loads((shared_fixtures / "kp" / "reference.json").read_text(encoding="utf-8"))
    lines = [json.dumps(t, ensure_ascii=False) for t in ref["traces"].values()]
    (tmp_path / "traces.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "evalgate.yaml").write_text("suites:\n  - name: kp\n    traces: traces.jsonl\n    criteria: {trace_value: 0.7}\n", encoding="utf-8")
    code, out, err = cli("run", "--out", "out", "--no-color", cwd=tmp_path)
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    scores = {c["eval_id"]: c["criteria"]["trace_value"]["score"] for c in results["suites"][0]["cases"]}
    by_id = {t["id"]: ref["expected_no_embedder"][k] for k, t in ref["traces"].items()}
    assert scores == by_id
    # T3 scores 0.6085 < 0.7: the suite fails and the exit code says so.
    assert code == 1 and results["status"] == "FAILED", out + err
    assert (tmp_path / "out" / "junit.xml").is_file()


def test_trace_criteria_only_in_trace_suites(cli, tmp_path):
    write_json(tmp_path / "t.json", {"id": "x", "steps": []})
    (tmp_path / "evalgate.yaml").write_text("suites:\n  - name: kp\n    traces: t.json\n    criteria: {response_match_score: 0.5}\n", encoding="utf-8")
    code, _, err = cli("validate", cwd=tmp_path)
    assert code == 2
    assert "evalgate.yaml: suites[0].criteria.response_match_score (line 4): 'response_match_score' scores eval sets, not traces" in err


def test_help_and_version_import_no_heavy_sdk():
    code = (
        "import sys, contextlib, io\n"
        "from evalgate.cli import main\n"
        "for args in (['--help'], ['--version'], ['run', '--help'], ['init', '--help']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        try: main(args)\n"
        "        except SystemExit: pass\n"
        "heavy = [m for m in ('google.genai', 'google.cloud.aiplatform', 'vertexai', 'sentence_transformers', 'torch', 'numpy', 'nltk', 'rouge_score') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_no_command_prints_help_and_exits_2(cli):
    code, out, _ = cli()
    assert code == 2 and "usage: evalgate" in out


@pytest.mark.parametrize("flag", ["--quiet", "--no-color"])
def test_run_output_modes(cli, flag, tmp_path):
    from test_inputs import make_project

    root = make_project(tmp_path)
    code, out, _ = cli("run", "--out", "o", flag, cwd=root)
    assert code == 0
    if flag == "--quiet":
        assert out.strip() == "evalgate: PASSED (2 passed, 0 failed, 0 not evaluated)"
    else:
        assert "overall: PASSED" in out and "\x1b[" not in out
    assert sorted(p.name for p in (root / "o").iterdir()) == ["adk", "agents-cli", "inference.jsonl", "junit.xml", "report.html", "results.json"]


@pytest.mark.parametrize("args", [("schema",), ("run", "--out", "out")])
def test_a_closed_stdout_ends_quietly(args, tmp_path):
    """`evalgate ... | head`: when stdout's reader is gone, no 'internal error' and no
    traceback; the status of a process SIGPIPE ended (141), as other tools give; files
    written before are complete."""
    import os
    import shutil

    from conftest import REPO

    project = tmp_path / "quickstart"
    shutil.copytree(REPO / "examples" / "quickstart", project)
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before anything is written
    try:
        proc = subprocess.run([sys.executable, "-m", "evalgate", *args], cwd=project, stdout=write_end, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(write_end)
    assert (proc.returncode, proc.stderr) == (141, "")
    if args[0] == "run":
        assert json.loads((project / "out" / "results.json").read_text(encoding="utf-8"))["status"] == "FAILED"


def test_run_turns_the_garbage_collector_back_on(cli, tmp_path):
    """run pauses the cyclic garbage collector while it loads, scores and writes (issue 12);
    it is on again afterwards, also when the input was bad."""
    import gc
    import shutil

    from conftest import REPO

    project = tmp_path / "quickstart"
    shutil.copytree(REPO / "examples" / "quickstart", project)
    assert gc.isenabled()
    code, _, err = cli("run", "--out", "out", cwd=project)
    assert code == 1 and gc.isenabled(), err
    (project / "evalgate.yaml").write_text("version: 1\nsuites: [{name: x, evalsets: nowhere.json, actual: x.jsonl}]\n", encoding="utf-8")
    code, _, err = cli("run", "--out", "out", cwd=project)
    assert code == 2 and gc.isenabled(), err


def test_a_deterministic_run_imports_no_heavy_sdk(tmp_path):
    """Scoring tool trajectories and ROUGE imports neither a judge's or Vertex's SDK nor
    numpy, scipy or nltk's package (whose init alone took 2 s); issue 12."""
    import shutil

    from conftest import REPO

    project = tmp_path / "quickstart"
    shutil.copytree(REPO / "examples" / "quickstart", project)
    code = (
        "import sys, contextlib, io\n"
        "from evalgate.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['run', '--out', 'out']) == 1\n"
        "heavy = [m for m in ('google.genai', 'google.cloud.aiplatform', 'vertexai', 'sentence_transformers', 'torch', 'numpy', 'scipy', 'nltk', 'pandas') if m in sys.modules]\n"
        "print(heavy, 'rouge_score.tokenize' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] True"  # ROUGE did run
