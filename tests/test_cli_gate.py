"""`evalgate compare` and `evalgate baseline` end to end, on the quickstart's real results."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess

import pytest

from conftest import REPO


@pytest.fixture
def quickstart_results(cli, tmp_path):
    """The quickstart's results.json, and a project folder whose config stores baselines in it."""
    project = tmp_path / "project"
    shutil.copytree(REPO / "examples" / "quickstart", project)
    shutil.rmtree(project / "main" / "store")  # the store of main's runs it ships: these tests save their own
    code, _, err = cli("run", "--config", str(project / "evalgate.yaml"), "--out", str(tmp_path / "out"), "--quiet", cwd=tmp_path)
    assert code == 1, err  # the quickstart fails on purpose
    return project, tmp_path / "out" / "results.json"


def _regress(results_path, out_path, eval_ids):
    """A copy of the results in which the given cases now fail tool_trajectory_avg_score."""
    data = json.loads(results_path.read_text(encoding="utf-8"))
    data = copy.deepcopy(data)
    for suite in data["suites"]:
        for case in suite["cases"]:
            if case["eval_id"] in eval_ids:
                crit = case["criteria"]["tool_trajectory_avg_score"]
                crit["score"], crit["status"] = 0.0, "FAILED"
                for inv in crit["per_invocation"]:
                    inv["score"], inv["status"] = 0.0, "FAILED"
                case["status"] = "FAILED"
    out_path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return out_path


def test_compare_same_run_passes(cli, quickstart_results, tmp_path):
    project, results = quickstart_results
    code, out, err = cli("compare", "--baseline", str(results), "--current", str(results), "--config", str(project / "evalgate.yaml"), cwd=tmp_path)
    assert code == 0, out + err
    assert out.startswith("**evalgate PASS**")
    assert "<!-- evalgate" not in out  # the job-summary form carries no comment marker


def test_compare_flags_a_regression(cli, quickstart_results, tmp_path):
    project, results = quickstart_results
    current = _regress(results, tmp_path / "regressed.json", {"order-status-en"})
    args = ("compare", "--baseline", str(results), "--current", str(current), "--output", str(tmp_path / "report.md"))
    # Default policy: one flip of a deterministic criterion is weighed as noise could be.
    code, out, _ = cli(*args, "--config", str(project / "evalgate.yaml"), cwd=tmp_path)
    assert code == 0 and out.startswith("**evalgate INCONCLUSIVE**")
    assert "order-status-en" in out
    # Replayed outputs: any deterministic flip fails the gate.
    (project / "evalgate.yaml").write_text((project / "evalgate.yaml").read_text().replace("gate:\n", "gate:\n  deterministic_flips: fail\n"), encoding="utf-8")
    code, out, _ = cli(*args, "--config", str(project / "evalgate.yaml"), cwd=tmp_path)
    assert code == 1 and out.startswith("**evalgate FAIL**")
    assert (tmp_path / "report.md").read_text(encoding="utf-8") + "\n" == out


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_baseline_save_show_and_lookup_through_first_parents(cli, quickstart_results, tmp_path):
    project, results = quickstart_results
    _git(project, "init", "-q")
    _git(project, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "base")
    base = _git(project, "rev-parse", "HEAD")
    _git(project, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "next")
    head = _git(project, "rev-parse", "HEAD")
    config = str(project / "evalgate.yaml")

    code, out, err = cli("baseline", "save", "--results", str(results), "--commit", base, "--ref", "refs/heads/main", "--config", config, cwd=project)
    assert code == 0, err
    assert (project / "main" / "store" / "baselines" / "evalgate" / f"{base}.json.gz").is_file()

    code, out, _ = cli("baseline", "show", "--commit", head, "--config", config, cwd=project)
    assert code == 0
    assert f"baseline {base[:12]} (ancestor, 1 commits before {head[:12]})" in out
    assert "support-agent: FAILED (9 cases" in out

    current = _regress(results, tmp_path / "regressed.json", {"order-status-en"})
    code, out, _ = cli("compare", "--current", str(current), "--base-sha", head, "--config", config, cwd=project)
    assert code == 0 and "INCONCLUSIVE" in out.splitlines()[0]
    assert base[:12] in out
    # One saved run is a trend of one point: drawn, too short to place this run in.
    assert "this run against the last default-branch run |" in out and "(1 run: too few to place this one)" in out
    assert out.count("```mermaid") == 4  # one chart per criterion of the quickstart
    assert f'x-axis ["{base[:7]}", "this run"]' in out

    # Two more saved runs: now the regressed run is placed below the range it had.
    for _ in range(2):
        code, _, err = cli("baseline", "save", "--results", str(results), "--commit", base, "--ref", "refs/heads/main", "--config", config, cwd=project)
        assert code == 0, err
    code, out, _ = cli("compare", "--current", str(current), "--base-sha", head, "--config", config, cwd=project)
    rows = [line for line in out.splitlines() if line.startswith("| tool\\_trajectory\\_avg\\_score")]
    assert any("**▼ " in row and ", below " in row for row in rows), rows
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert html.count('<svg class="trend"') == 4 and "this run against the last 3 default-branch runs" in html


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_baseline_show_without_one(cli, tmp_path):
    (tmp_path / "evalgate.yaml").write_text("suites:\n  - name: s\n    traces: t.json\n    criteria: {trace_value: 0.5}\n", encoding="utf-8")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "only")
    code, out, _ = cli("baseline", "show", "--commit", _git(tmp_path, "rev-parse", "HEAD"), cwd=tmp_path)
    assert code == 1 and "no baseline for" in out


def test_baseline_lookup_outside_a_git_checkout_says_so(cli, tmp_path):
    (tmp_path / "evalgate.yaml").write_text("suites:\n  - name: s\n    traces: t.json\n    criteria: {trace_value: 0.5}\n", encoding="utf-8")
    code, _, err = cli("baseline", "show", "--commit", "a" * 40, cwd=tmp_path)
    assert code == 2 and "git cannot find commit" in err and "Traceback" not in err


def test_compare_rejects_a_file_that_is_not_results(cli, tmp_path):
    (tmp_path / "x.json").write_text('{"hello": 1}', encoding="utf-8")
    code, _, err = cli("compare", "--baseline", str(tmp_path / "x.json"), "--current", str(tmp_path / "x.json"), cwd=tmp_path)
    assert code == 2 and "x.json: " in err and "Traceback" not in err
