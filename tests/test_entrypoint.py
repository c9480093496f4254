"""The Action's entrypoint, run in-process on real event payloads against the stateful fake GitHub API.

Each test writes the files GitHub Actions would (event payload, GITHUB_OUTPUT,
GITHUB_STEP_SUMMARY), calls `main(env=...)`, and checks what the fake received.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from conftest import REPO

if str(REPO) not in sys.path:  # `entrypoint/` is not an installed package; `python -m pytest` finds it anyway
    sys.path.insert(0, str(REPO))

from entrypoint.main import main  # noqa: E402
from entrypoint.settings import read_settings  # noqa: E402
from evalgate.errors import InputError  # noqa: E402
from entrypoint.tracking import tracking_marker, tracking_title  # noqa: E402
from evalgate.baselines import decode_ledger, decode_trend  # noqa: E402
from evalgate.efficiency import METRICS as EFFICIENCY  # noqa: E402
from evalgate.reports.markdown import marker  # noqa: E402
from fake_github import fake_github  # noqa: F401,E402  (fixture)
from test_inputs import CASES, make_project
from test_inputs import CONFIG as BASE_CONFIG  # noqa: E402

PR = 7
CONFIG = BASE_CONFIG + "gate:\n  deterministic_flips: fail\n"  # one flip fails: a clear regression


def _lines(regressed: bool, case: str, room: str) -> list[dict]:
    lines = [{"eval_set_id": "home", "eval_id": k, "invocations": json.loads(json.dumps(v))} for k, v in CASES.items()]
    if regressed:  # the agent's tool call goes to the wrong room
        [line] = [x for x in lines if x["eval_id"] == case]
        line["invocations"][0]["intermediate_data"]["tool_uses"][0]["args"]["room"] = room
    return lines


def _set_outputs(ws: Path, regressed: bool, case: str = "lights-en", room: str = "kitchen") -> None:
    """The agent's recorded outputs; regressed, `case` calls its tool for `room`."""
    lines = _lines(regressed, case, room)
    (ws / "runs" / "out.jsonl").write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n", encoding="utf-8")


@pytest.fixture
def ws(tmp_path):
    return make_project(tmp_path / "ws", config=CONFIG)


class Action:
    """Runs the entrypoint the way the runner would, one event at a time."""

    def __init__(self, fake, ws: Path, tmp: Path, capsys):
        self.fake, self.ws, self.tmp, self.capsys = fake, ws, tmp, capsys
        self.n = 0

    def __call__(self, event_name: str, payload: dict, *, sha: str, ref: str = "refs/heads/main", **inputs: str):
        self.n += 1
        run = self.tmp / f"run{self.n}"
        run.mkdir()
        (run / "event.json").write_text(json.dumps(payload), encoding="utf-8")
        self.env = {
            "GITHUB_EVENT_NAME": event_name,
            "GITHUB_EVENT_PATH": str(run / "event.json"),
            "GITHUB_REPOSITORY": self.fake.repository,
            "GITHUB_API_URL": self.fake.url,
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_RUN_ID": str(1000 + self.n),
            "GITHUB_REF": ref,
            "GITHUB_SHA": sha,
            "GITHUB_OUTPUT": str(run / "output"),
            "GITHUB_STEP_SUMMARY": str(run / "summary.md"),
            "GITHUB_WORKSPACE": str(self.ws),
            "EVALGATE_GITHUB_TOKEN": self.fake.token,
            **{f"EVALGATE_{k.upper()}": v for k, v in inputs.items()},
        }
        self.code = main([], env=self.env)
        self.stdout = self.capsys.readouterr().out
        self.summary = (run / "summary.md").read_text(encoding="utf-8") if (run / "summary.md").exists() else ""
        self.outputs = _parse_outputs(run / "output")
        return self.code


def _parse_outputs(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    text, out = path.read_text(encoding="utf-8"), {}
    for m in re.finditer(r"^([\w-]+)<<(ghadelimiter_[0-9a-f]+)\n(.*?)\n\2$", text, re.S | re.M):
        out[m.group(1)] = m.group(3)
    return out


@pytest.fixture
def action(fake_github, ws, tmp_path, capsys):  # noqa: F811
    return Action(fake_github, ws, tmp_path, capsys)


def _push(sha: str) -> dict:
    return {"ref": "refs/heads/main", "after": sha, "repository": {"full_name": "octo/hello", "default_branch": "main"}}


def main_with_baseline(action) -> str:
    """main's commit carries the config in its tree (the contents API serves it at that sha)
    and has a baseline, saved by a push; the fake's request log is then cleared."""
    fake = action.fake
    config = (action.ws / "evalgate.yaml").read_bytes()
    root = fake.add_commit([], "root", files={"evalgate.yaml": config})
    base = fake.add_commit([root], "main", files={"evalgate.yaml": config})
    fake.refs["refs/heads/main"] = base
    assert action("push", _push(base), sha=base) == 0, action.stdout
    fake.log.clear()
    return base


def _pull_request(head: str, base: str) -> dict:
    return {
        "action": "synchronize",
        "number": PR,
        "pull_request": {"number": PR, "head": {"sha": head, "ref": "feature"}, "base": {"sha": base, "ref": "main"}},
        "repository": {"full_name": "octo/hello", "default_branch": "main"},
    }


@pytest.fixture
def history(fake_github):  # noqa: F811
    """Two commits on main; the second gets the baseline."""
    return fake_github.linear_history(2)


@pytest.fixture
def baseline(action, history):
    assert action("push", _push(history[1]), sha=history[1]) == 0
    action.fake.log.clear()
    return history[1]


def _writes(fake) -> list[str]:
    return [f"{r.method} {r.path}" for r in fake.log if r.method != "GET"]


# --- (1) push on the default branch ------------------------------------------------------


def test_push_to_default_branch_saves_baseline_and_ledger(action, history):
    sha = history[1]
    assert action("push", _push(sha), sha=sha) == 0, action.stdout
    fake = action.fake
    assert fake.branch_files("evalgate-data") == [
        "README.md", f"baselines/evalgate/{sha}.json.gz", "ledger/evalgate.json.gz", "trends/evalgate.json.gz"
    ]
    assert _writes(fake) == [
        "POST /repos/octo/hello/git/trees",
        "POST /repos/octo/hello/git/commits",
        "POST /repos/octo/hello/git/refs",
        f"PUT /repos/octo/hello/contents/baselines/evalgate/{sha}.json.gz",
        "PUT /repos/octo/hello/contents/ledger/evalgate.json.gz",
        "PUT /repos/octo/hello/contents/trends/evalgate.json.gz",
    ]
    assert not fake.statuses and not fake.comments
    ledger = decode_ledger(fake.read_file("evalgate-data", "ledger/evalgate.json.gz"), "ledger")
    scored = {k: v for k, v in ledger.items() if not any(m in k for m in EFFICIENCY)}
    assert scored and all(v == [1.0] for v in scored.values())
    assert any(k for k in ledger if "token_usage_v1" in k)  # efficiency values too (gate.efficiency)
    trend = decode_trend(fake.read_file("evalgate-data", "trends/evalgate.json.gz"), "trend")
    [point] = trend.points
    assert point.commit == sha and point.ref == "refs/heads/main"
    assert point.means["home"]["tool_trajectory_avg_score"].mean == 1.0
    assert point.means["home"]["tool_trajectory_avg_score"].cases == 2
    assert action.outputs["verdict"] == "PASS"
    assert action.outputs["results-path"] == "evalgate-results/results.json"
    assert action.outputs["cases"] == "2" and action.outputs["passed"] == "2" and action.outputs["regressions"] == "0"
    for name in ("results.json", "junit.xml", "report.md", "report.html", "adk/home/home.evalset_result.json"):
        assert (action.ws / "evalgate-results" / name).is_file(), name
    assert f"Saved the baseline of `{sha[:12]}`" in action.summary
    assert "::add-mask::" + fake.token in action.stdout


def test_push_to_another_branch_only_scores(action, history):
    assert action("push", {**_push(history[1]), "ref": "refs/heads/feature"}, sha=history[1], ref="refs/heads/feature") == 0
    assert _writes(action.fake) == []
    assert action.outputs["activity"] == "score"


# --- (2) and (3) a pull request that regresses, then is fixed ---------------------------


def test_a_baseline_a_newer_evalgate_saved_is_compared_with_and_its_new_keys_named(action, baseline):
    """The default branch moved to a newer evalgate, which saved fields this one does not know:
    a pull request still run by this one compares with that baseline (it stopped on an input
    error before) and says once which keys of the stored file it ignored."""
    import gzip

    fake = action.fake
    path = f"baselines/evalgate/{baseline}.json.gz"
    data = json.loads(gzip.decompress(fake.read_file("evalgate-data", path)))
    data["results"]["suites"][0]["cases"][0]["근거"] = "新しい"
    fake.write_file("evalgate-data", path, gzip.compress(json.dumps(data, ensure_ascii=False).encode("utf-8"), mtime=0))
    head = fake.add_commit([baseline], "PR head")
    _set_outputs(action.ws, regressed=True)
    assert action("pull_request", _pull_request(head, baseline), sha=head) == 1, action.stdout
    assert action.outputs["verdict"] == "FAIL" and action.outputs["regressions"] == "1"
    [warning] = [line for line in action.stdout.splitlines() if "which this evalgate does not know" in line]
    assert warning.startswith("::warning") and f"{path}: ignored key 'results.suites[0].cases[0].근거'" in warning


def test_pull_request_regression_then_fix_edits_the_same_comment(action, baseline):
    fake = action.fake
    head = fake.add_commit([baseline], "PR head")
    merge = fake.add_commit([baseline, head], "merge")
    _set_outputs(action.ws, regressed=True)

    assert action("pull_request", _pull_request(head, baseline), sha=merge, ref=f"refs/pull/{PR}/merge") == 1, action.stdout
    [comment] = fake.issue_comments(PR)
    comment = dict(comment)  # the fake edits its own copy in place
    assert comment["body"].startswith(marker("evalgate"))
    assert "lights-en" in comment["body"] and "FAIL" in comment["body"]
    assert [(s["context"], s["state"]) for s in fake.statuses[head]] == [("evalgate", "failure")]
    assert fake.statuses[head][0]["target_url"] == "https://github.com/octo/hello/actions/runs/1002"
    assert merge not in fake.statuses
    assert _writes(fake) == [f"POST /repos/octo/hello/issues/{PR}/comments", f"POST /repos/octo/hello/statuses/{head}"]
    # The baseline of the base commit was read, not written.
    assert fake.requests("GET", rf"/repos/octo/hello/contents/baselines/evalgate/{baseline}\.json\.gz")
    assert action.outputs["verdict"] == "FAIL"
    assert action.outputs["regressions"] == "1" and action.outputs["failed"] == "1"
    assert action.outputs["comment-url"] == comment["html_url"]
    assert "lights-en" in action.summary and action.summary == (action.ws / "evalgate-results" / "report.md").read_text(encoding="utf-8")
    page = (action.ws / "evalgate-results" / "report.html").read_text(encoding="utf-8")
    assert ">FAIL<" in page and '"ch":"regressed"' in page and '"id":"lights-en"' in page  # compared with the base's baseline

    fake.log.clear()
    head2 = fake.add_commit([head], "fix")
    _set_outputs(action.ws, regressed=False)
    assert action("pull_request", _pull_request(head2, baseline), sha=fake.add_commit([baseline, head2])) == 0, action.stdout
    [edited] = fake.issue_comments(PR)
    assert edited["id"] == comment["id"] and edited["body"] != comment["body"]
    assert "PASS" in edited["body"]
    assert _writes(fake) == [f"PATCH /repos/octo/hello/issues/comments/{comment['id']}", f"POST /repos/octo/hello/statuses/{head2}"]
    assert [s["state"] for s in fake.statuses[head2]] == ["success"]
    assert action.outputs["verdict"] == "PASS" and action.outputs["comment-url"] == comment["html_url"]


def test_comment_off_and_per_suite_statuses(action, baseline):
    head = action.fake.add_commit([baseline])
    assert action("pull_request", _pull_request(head, baseline), sha=head, comment="false", status_per_suite="true", status_context="agents") == 0
    assert not action.fake.comments
    assert [(s["context"], s["state"]) for s in action.fake.statuses[head]] == [("agents", "success"), ("agents/home", "success")]


# --- (4) a fork's read-only token ---------------------------------------------------------


def test_fork_pull_request_warns_and_still_writes_the_summary(action, baseline):
    fake = action.fake
    fake.read_only = True
    head = fake.add_commit([baseline])
    _set_outputs(action.ws, regressed=True)
    assert action("pull_request", _pull_request(head, baseline), sha=head) == 1
    warnings = [line for line in action.stdout.splitlines() if line.startswith("::warning")]
    assert len(warnings) == 2
    assert "read-only token" in warnings[0] and "commit statuses" in warnings[1]
    assert not fake.comments and not fake.statuses
    assert "lights-en" in action.summary and "read-only token" in action.summary
    assert action.outputs["verdict"] == "FAIL" and action.outputs["comment-url"] == ""
    assert "Traceback" not in action.stdout


def test_missing_baseline_is_a_warning(action, history):
    head = action.fake.add_commit([history[1]])
    assert action("pull_request", _pull_request(head, history[1]), sha=head) == 0
    assert any("no baseline for" in line for line in action.stdout.splitlines() if line.startswith("::warning"))
    assert [s["state"] for s in action.fake.statuses[head]] == ["success"]


# --- (5) the nightly run ------------------------------------------------------------------


def test_schedule_updates_ledger_and_tracks_one_issue(action, baseline):
    fake = action.fake
    _set_outputs(action.ws, regressed=True)
    schedule = {"schedule": "0 3 * * *"}  # GitHub's schedule payload names no default branch

    assert action("schedule", schedule, sha=baseline) == 1, action.stdout
    [issue] = fake.issues.values()
    assert issue["title"] == tracking_title("evalgate") == "evalgate: nightly regression (evalgate)"
    assert issue["body"].startswith(tracking_marker("evalgate")) and "lights-en" in issue["body"]
    assert action.outputs["comment-url"] == issue["html_url"]
    ledger = decode_ledger(fake.read_file("evalgate-data", "ledger/evalgate.json.gz"), "ledger")
    scored = {k: v for k, v in ledger.items() if not any(m in k for m in EFFICIENCY)}
    assert sorted(len(v) for v in scored.values()) == [2] * 8  # outcomes and values of 4 case-criteria
    assert any(v[-1] == 0.0 for v in scored.values())
    assert not fake.statuses and not fake.comments  # nightly runs neither comment nor set statuses
    assert not [r for r in fake.log if r.method == "PUT" and "baselines/" in r.path]  # nor overwrite the baseline

    assert action("schedule", schedule, sha=baseline) == 1
    assert len(fake.issues) == 1
    assert fake.requests("PATCH", rf"/repos/octo/hello/issues/{issue['number']}")

    _set_outputs(action.ws, regressed=False)
    assert action("schedule", schedule, sha=baseline) == 0
    assert fake.issues[issue["number"]]["state"] == "closed"
    assert "passes again" in fake.issue_comments(issue["number"])[0]["body"]


def test_default_branch_runs_build_a_trend_that_pr_and_nightly_reports_draw(action, fake_github):  # noqa: F811
    fake = action.fake
    shas = fake.linear_history(3)
    for sha in shas:
        assert action("push", _push(sha), sha=sha) == 0, action.stdout
    trend = decode_trend(fake.read_file("evalgate-data", "trends/evalgate.json.gz"), "trend")
    assert [p.commit for p in trend.points] == shas
    assert "and the trend" in action.summary

    # A pull request whose agent calls the wrong room: its trajectory mean (0.5) sits below
    # every earlier run's (1.0), and the comment says so on the criterion's row.
    head = fake.add_commit([shas[-1]], "PR head")
    merge = fake.add_commit([shas[-1], head], "merge")
    _set_outputs(action.ws, regressed=True)
    assert action("pull_request", _pull_request(head, shas[-1]), sha=merge, ref=f"refs/pull/{PR}/merge") == 1, action.stdout
    [comment] = fake.comments.values()
    assert "this run against the last 3 default-branch runs |" in comment["body"]
    [row] = [line for line in comment["body"].splitlines() if line.startswith("| tool\\_trajectory\\_avg\\_score")]
    assert row.endswith("| ▁▁▁ **▼ 0.500**, below 1.000–1.000 |"), row
    # The job summary draws each criterion: the three runs, then this one.
    charts = re.findall(r"```mermaid\n(.*?)\n```", action.summary, re.S)
    assert len(charts) == 2, action.summary
    assert f'x-axis ["{shas[0][:7]}", "{shas[1][:7]}", "{shas[2][:7]}", "this run"]' in charts[1]
    assert "line [1.0000, 1.0000, 1.0000, 0.5000]" in charts[1]
    html = (action.ws / "evalgate-results" / "report.html").read_text(encoding="utf-8")
    assert html.count('<svg class="trend"') == 2 and "▼ 0.500, below 1.000–1.000" in html

    # The nightly run on main: the tracking issue carries the charts; the run joins the trend.
    assert action("schedule", {"schedule": "0 3 * * *"}, sha=shas[-1]) == 1
    [issue] = fake.issues.values()
    assert issue["body"].count("```mermaid") == 2 and "xychart-beta" in issue["body"]
    trend = decode_trend(fake.read_file("evalgate-data", "trends/evalgate.json.gz"), "trend")
    assert len(trend.points) == 4 and trend.points[-1].means["home"]["tool_trajectory_avg_score"].mean == 0.5


# --- (6) the trusted half of the fork-safe flow ------------------------------------------


def _artifact(action, baseline: str, head: str, head_sha: str | None = None) -> Path:
    from evalgate.cli import main as cli

    artifact = action.ws / "evalgate-artifact"  # downloaded into the workspace, as the docs say
    _set_outputs(action.ws, regressed=True)
    assert cli(["run", "--config", str(action.ws / "evalgate.yaml"), "--out", str(artifact), "--quiet"]) == 1
    (artifact / "pr.json").write_text(json.dumps({"number": PR, "head_sha": head_sha or head, "base_sha": baseline}))
    action.capsys.readouterr()
    return artifact


def test_workflow_run_publishes_a_fork_pull_requests_results(action, baseline):
    fake = action.fake
    head = fake.add_commit([baseline], "fork head")
    fake.add_pull(PR, head, baseline, fork=True)
    _artifact(action, baseline, head)
    event = {"action": "completed", "workflow_run": {"id": 99, "event": "pull_request", "head_sha": head, "head_branch": "feature", "head_repository": {"full_name": "someone/hello"}, "pull_requests": []}}

    assert action("workflow_run", event, sha=baseline, artifact_dir="evalgate-artifact") == 1, action.stdout
    [comment] = fake.issue_comments(PR)
    assert comment["body"].startswith(marker("evalgate")) and "lights-en" in comment["body"]
    assert [s["state"] for s in fake.statuses[head]] == ["failure"]
    assert _writes(fake) == [f"POST /repos/octo/hello/issues/{PR}/comments", f"POST /repos/octo/hello/statuses/{head}"]
    assert fake.requests("GET", rf"/repos/octo/hello/pulls/{PR}")
    assert action.outputs["verdict"] == "FAIL" and action.outputs["regressions"] == "1"
    assert (action.ws / "evalgate-results" / "results.json").is_file()


def test_workflow_run_refuses_an_artifact_for_another_commit(action, baseline):
    fake = action.fake
    head = fake.add_commit([baseline])
    fake.add_pull(PR, head, baseline, fork=True)
    _artifact(action, baseline, head, head_sha="a" * 40)
    event = {"workflow_run": {"id": 99, "head_sha": head, "head_branch": "feature", "head_repository": {"full_name": "someone/hello"}}}
    assert action("workflow_run", event, sha=baseline, artifact_dir="evalgate-artifact") == 2
    assert "is not the commit the triggering run tested" in action.stdout
    assert _writes(fake) == []


# --- (7) bad input ------------------------------------------------------------------------


def test_bad_config_is_annotated_on_its_line(action, history):
    (action.ws / "evalgate.yaml").write_text(CONFIG.replace("    actual:", "    actuals:"), encoding="utf-8")
    assert action("push", _push(history[1]), sha=history[1]) == 2
    errors = [line for line in action.stdout.splitlines() if line.startswith("::error")]
    assert errors[0].startswith("::error file=evalgate.yaml,line=4,title=evalgate%3A bad input::evalgate.yaml: suites[0].actuals (line 4): unknown key 'actuals'")
    assert action.summary.startswith("## :x: evalgate: unusable input or configuration\n\n- evalgate.yaml: suites\\[0\\].actuals (line 4): unknown key 'actuals'")
    assert action.summary.rstrip().endswith("Nothing was published; fix the input and run again.")
    assert action.outputs == {"verdict": "ERROR"}
    assert _writes(action.fake) == [] and "Traceback" not in action.stdout


def test_annotation_paths_are_relative_to_the_repository_root(action, history, tmp_path):
    sub = make_project(action.ws / "agents" / "home", config=CONFIG.replace("  deterministic_flips: fail", "  deterministic_flip: fail"))
    assert action("push", _push(history[1]), sha=history[1], working_directory="agents/home") == 2
    errors = [line for line in action.stdout.splitlines() if line.startswith("::error")]
    assert errors == [
        "::error file=agents/home/evalgate.yaml,line=9,title=evalgate%3A bad input::evalgate.yaml: gate.deterministic_flip (line 9): "
        "unknown key 'deterministic_flip'. Remove it or fix the spelling. Did you mean 'deterministic_flips'?"
        " Valid names: alpha, baseline, confirm, deterministic_flips, efficiency, history_runs, id, inconclusive, margin_deterministic, margin_judge, mode, pairwise, permutations, removed_cases, resolution, run_sd_deterministic, run_sd_judge, seed, stable_min_runs."
    ]
    assert sub.is_dir()


def test_dir_store_keeps_baselines_in_the_working_directory(action, history):
    sha = history[1]
    assert action("push", _push(sha), sha=sha, baseline_store="dir") == 0
    assert (action.ws / ".evalgate" / "baselines" / "baselines" / "evalgate" / f"{sha}.json.gz").is_file()
    assert _writes(action.fake) == []
    head = action.fake.add_commit([sha])
    _set_outputs(action.ws, regressed=True)
    assert action("pull_request", _pull_request(head, sha), sha=head, baseline_store="dir") == 1
    assert "Baseline: " + sha[:12] in action.summary
    assert [s["state"] for s in action.fake.statuses[head]] == ["failure"]


def test_every_bad_setting_is_reported_together(action, history):
    code = action("push", _push(history[1]), sha=history[1], mode="sometimes", fail_on="maybe", judge_concurrency="0", comment="perhaps")
    assert code == 2
    errors = [line for line in action.stdout.splitlines() if line.startswith("::error")]
    assert len(errors) == 4
    for name in ("EVALGATE_MODE", "EVALGATE_FAIL_ON", "EVALGATE_JUDGE_CONCURRENCY", "EVALGATE_COMMENT"):
        assert any(name in e for e in errors), name
    assert "4 problems" in action.summary


def test_baseline_mode_is_refused_on_a_pull_request(action, history):
    head = action.fake.add_commit([history[1]])
    assert action("pull_request", _pull_request(head, history[1]), sha=head, mode="baseline") == 2
    assert "mode 'baseline' runs on push, schedule, workflow_dispatch events" in action.stdout
    assert _writes(action.fake) == []


def test_fail_on_never_and_inconclusive(action, baseline):
    head = action.fake.add_commit([baseline])
    _set_outputs(action.ws, regressed=True)
    assert action("pull_request", _pull_request(head, baseline), sha=head, fail_on="never") == 0
    assert action.outputs["verdict"] == "FAIL"  # reported, but the step passes


# --- settings ------------------------------------------------------------------------------


def test_settings_hide_the_token_and_map_credentials(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "gha-creds-1234.json").write_text("{}")
    env = {
        "GITHUB_WORKSPACE": str(ws),
        "EVALGATE_GITHUB_TOKEN": "ghs_secret",
        "GOOGLE_APPLICATION_CREDENTIALS": "/home/runner/work/hello/hello/gha-creds-1234.json",
    }
    settings = read_settings(env, tmp_path)
    assert "ghs_secret" not in repr(settings) and settings.token == "ghs_secret"
    assert settings.google_credentials == ws / "gha-creds-1234.json"
    assert (settings.mode, settings.fail_on, settings.baseline_store, settings.comment) == ("auto", "fail", "github", True)
    assert settings.out == ws / "evalgate-results"


def test_secrets_are_masked_first(action, history):
    action.fake  # noqa: B018
    env_extra = {"GOOGLE_API_KEY": "AIza-not-a-real-key"}
    (action.ws / "evalgate.yaml").write_text("nonsense: [", encoding="utf-8")
    action.n += 1
    run = action.tmp / "masks"
    run.mkdir()
    code = main([], env={"GITHUB_WORKSPACE": str(action.ws), "EVALGATE_GITHUB_TOKEN": "ghs_x", "GITHUB_STEP_SUMMARY": str(run / "s"), **env_extra})
    out = action.capsys.readouterr().out
    assert code == 2
    assert out.splitlines()[:2] == ["::add-mask::ghs_x", "::add-mask::AIza-not-a-real-key"]


# --- what a review of the action found ---------------------------------------------------


RUNNER_WS = "/home/runner/work/hello/hello"  # ${{ github.workspace }} on the runner


def test_absolute_runner_paths_are_found_in_the_container(action, history):
    # A workflow that writes ${{ github.workspace }}/... gets the runner's path; the container
    # sees the same folder at GITHUB_WORKSPACE, and runner-workspace says how they relate.
    sha = history[1]
    code = action("push", {**_push(sha), "ref": "refs/heads/feature"}, sha=sha, ref="refs/heads/feature",
                  runner_workspace=RUNNER_WS, config=f"{RUNNER_WS}/evalgate.yaml", out=f"{RUNNER_WS}/gate-out")
    assert code == 0, action.stdout
    assert (action.ws / "gate-out" / "results.json").is_file()
    assert action.outputs["results-path"] == "gate-out/results.json"


@pytest.mark.parametrize(
    ("inputs", "named"),
    [
        ({"out": "/somewhere/else"}, "input 'output-dir' (EVALGATE_OUT)"),
        ({"out": "../outside"}, "input 'output-dir' (EVALGATE_OUT)"),
        ({"working_directory": "../.."}, "input 'working-directory' (EVALGATE_WORKING_DIRECTORY)"),
        ({"config": f"{RUNNER_WS}/../other/evalgate.yaml", "runner_workspace": RUNNER_WS}, "input 'config' (EVALGATE_CONFIG)"),
        ({"cache_dir": "/tmp/cache"}, "input 'cache-dir' (EVALGATE_CACHE_DIR)"),
    ],
)
def test_paths_outside_the_workspace_are_refused(action, history, inputs, named):
    # The container mounts only the workspace: results written elsewhere would be lost.
    assert action("push", _push(history[1]), sha=history[1], **inputs) == 2
    [error] = [line for line in action.stdout.splitlines() if line.startswith("::error")]
    assert named in error and "is outside the workspace" in error
    assert _writes(action.fake) == [] and "Traceback" not in action.stdout


@pytest.mark.parametrize(
    ("inputs", "named", "what"),
    [
        ({"out": "loop"}, "input 'output-dir' (EVALGATE_OUT)", "cannot be followed"),
        ({"runner_workspace": "/"}, "input 'runner-workspace' (EVALGATE_RUNNER_WORKSPACE)", "is not the runner's absolute path"),
        ({"runner_workspace": "work/hello"}, "input 'runner-workspace' (EVALGATE_RUNNER_WORKSPACE)", "is not the runner's absolute path"),
    ],
)
def test_unusable_paths_name_their_input(action, history, inputs, named, what):
    (action.ws / "loop").symlink_to(action.ws / "loop")
    assert action("push", _push(history[1]), sha=history[1], **inputs) == 2
    [error] = [line for line in action.stdout.splitlines() if line.startswith("::error")]
    assert named in error and what in error, error
    assert "Traceback" not in action.stdout


def test_a_missing_workspace_is_named_once(tmp_path):
    with pytest.raises(InputError) as e:
        read_settings({"GITHUB_WORKSPACE": str(tmp_path / "gone")}, tmp_path)
    assert [p.where for p in e.value.problems] == ["GITHUB_WORKSPACE"]


def test_no_config_names_the_config_input(action, history):
    (action.ws / "evalgate.yaml").unlink()
    assert action("push", _push(history[1]), sha=history[1]) == 2
    [error] = [line for line in action.stdout.splitlines() if line.startswith("::error")]
    assert "input 'config' (EVALGATE_CONFIG): no config file in . (looked for evalgate.yaml" in error
    assert "--config" not in error  # a CLI flag means nothing in a workflow


def test_an_unwritable_output_dir_names_the_input(action, history):
    (action.ws / "blocked").write_text("a file, not a folder", encoding="utf-8")
    assert action("push", {**_push(history[1]), "ref": "refs/heads/feature"}, sha=history[1], ref="refs/heads/feature", out="blocked") == 2
    [error] = [line for line in action.stdout.splitlines() if line.startswith("::error")]
    assert "input 'output-dir' (EVALGATE_OUT): cannot write the results to blocked" in error
    assert "file=" not in error  # the input is at fault, not the file in the way


def test_publish_without_an_artifact_names_the_step_env(action, baseline):
    event = {"workflow_run": {"id": 99, "head_sha": baseline, "head_branch": "feature", "head_repository": {"full_name": "someone/hello"}}}
    assert action("workflow_run", event, sha=baseline, mode="publish") == 2
    assert "EVALGATE_ARTIFACT_DIR (the step's env): the publish mode needs" in action.stdout
    assert "input 'artifact-dir'" not in action.stdout  # there is no such input


def test_a_yaml_syntax_error_is_annotated_on_its_line(action, history):
    (action.ws / "evalgate.yaml").write_text("suites:\n  - name: home\n    evalsets: [evals/*.evalset.json\n", encoding="utf-8")
    assert action("push", _push(history[1]), sha=history[1]) == 2
    [error] = [line for line in action.stdout.splitlines() if line.startswith("::error")]
    assert error.startswith("::error file=evalgate.yaml,line="), error


def test_the_first_push_notes_rather_than_warns_that_no_earlier_baseline_exists(action, history):
    assert action("push", _push(history[1]), sha=history[1]) == 0
    assert not [line for line in action.stdout.splitlines() if line.startswith("::warning")]
    assert "No earlier baseline to compare with" in action.summary


def test_a_manual_run_on_a_feature_branch_leaves_the_tracking_issue_alone(action, baseline):
    fake = action.fake
    _set_outputs(action.ws, regressed=True)
    assert action("schedule", {"schedule": "0 3 * * *"}, sha=baseline) == 1
    [issue] = fake.issues.values()
    ledger_before = fake.read_file("evalgate-data", "ledger/evalgate.json.gz")
    fake.log.clear()

    _set_outputs(action.ws, regressed=False)  # the feature branch passes...
    feature = fake.add_commit([baseline])
    assert action("workflow_dispatch", {"ref": "refs/heads/feature", "repository": {"default_branch": "main"}},
                  sha=feature, ref="refs/heads/feature") == 0
    assert fake.issues[issue["number"]]["state"] == "open"  # ...which says nothing about main
    assert _writes(fake) == []
    assert fake.read_file("evalgate-data", "ledger/evalgate.json.gz") == ledger_before
    assert any("tracking issue were left alone" in line for line in action.stdout.splitlines() if line.startswith("::warning"))


def test_inconclusive_status_line_never_says_passed_when_the_state_is_failure(action, history):
    (action.ws / "evalgate.yaml").write_text(
        CONFIG.replace("      response_match_score: 0.8\n", "      response_match_score: 0.8\n      final_response_match_v2: 0.5\n"),
        encoding="utf-8",
    )  # a judge criterion without credentials: NOT_EVALUATED, so INCONCLUSIVE
    baseline = history[1]
    assert action("push", _push(baseline), sha=baseline) == 0  # the base's policy has the judge criterion
    head = action.fake.add_commit([baseline])
    assert action("pull_request", _pull_request(head, baseline), sha=head, fail_on="inconclusive") == 1
    [status] = action.fake.statuses[head]
    assert status["state"] == "failure"
    assert status["description"] == "evalgate inconclusive (see the report): 2 passed, 0 failed"


def test_a_publish_for_a_head_the_pr_has_moved_on_from_posts_nothing_and_passes(action, baseline):
    fake = action.fake
    old = fake.add_commit([baseline], "first push")
    fake.add_pull(PR, fake.add_commit([old], "second push"), baseline, fork=True)  # pushed again meanwhile
    _artifact(action, baseline, old)
    event = {"workflow_run": {"id": 99, "head_sha": old, "head_branch": "feature", "head_repository": {"full_name": "someone/hello"}}}
    assert action("workflow_run", event, sha=baseline, artifact_dir="evalgate-artifact") == 0, action.stdout
    assert _writes(fake) == []
    assert any("were not posted" in line for line in action.stdout.splitlines() if line.startswith("::warning"))


def test_problems_name_each_variable_by_its_action_input():
    from entrypoint.settings import _label
    from test_action_files import INPUTS

    for name, var in INPUTS.items():
        assert _label(var) == f"input '{name}' ({var})"


def test_credentials_map_through_the_runner_workspace(tmp_path):
    # The exact mapping wins over the longest-tail search, which would take the decoy.
    ws = tmp_path / "ws"
    for folder in (ws / "creds", ws / "hello" / "creds"):
        folder.mkdir(parents=True)
        (folder / "gha-creds-1.json").write_text("{}")
    env = {"GITHUB_WORKSPACE": str(ws), "EVALGATE_RUNNER_WORKSPACE": RUNNER_WS,
           "GOOGLE_APPLICATION_CREDENTIALS": f"{RUNNER_WS}/creds/gha-creds-1.json"}
    assert read_settings(env, tmp_path).google_credentials == ws / "creds" / "gha-creds-1.json"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root, as a container action runs")
def test_files_written_as_root_are_handed_to_the_workspace_owner(action, history):
    # A container action runs as root; the runner's user must still be able to delete what
    # it wrote (the next checkout on a self-hosted runner cleans the workspace).
    os.chown(action.ws, 1001, 1001)
    nested = "reports/gate"  # folders created on the way belong to the owner too
    assert action("push", _push(history[1]), sha=history[1], out=nested, cache_dir=".cache/verdicts") == 0, action.stdout
    written = [action.ws / "reports", *(action.ws / "reports").rglob("*")]
    assert len(written) > 4
    assert {(p.lstat().st_uid, p.lstat().st_gid) for p in written} == {(1001, 1001)}
    assert (action.ws / "evals").stat().st_uid == 0  # what the action did not write is left alone


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root, as a container action runs")
def test_handing_back_touches_only_what_this_run_wrote_inside_the_workspace(action, history, tmp_path):
    os.chown(action.ws, 1001, 1001)
    old = action.ws / "vendor" / "lib.js"  # root-owned, from an earlier step: not ours to give
    old.parent.mkdir()
    old.write_text("x")
    os.utime(old, (1, 1))
    os.utime(old.parent, (1, 1))
    outside = tmp_path / "outside.txt"  # a hard link in the workspace to a file outside it
    outside.write_text("secret")
    os.link(outside, action.ws / "linked.txt")
    (action.ws / "loop").symlink_to(action.ws / "loop")  # a symlink loop must not break the run

    assert action("push", _push(history[1]), sha=history[1], out=".") == 0, action.stdout  # output-dir: the root
    assert (action.ws / "results.json").stat().st_uid == 1001
    assert {p.stat().st_uid for p in (action.ws / "adk").rglob("*")} == {1001}
    assert old.stat().st_uid == 0 and old.parent.stat().st_uid == 0
    assert outside.stat().st_uid == 0
    assert "Traceback" not in action.stdout


# --- (9) a matrix of shard legs and one merge ---------------------------------------------


def _legs(action, event: str, payload: dict, sha: str, n: int, **env) -> None:
    from evalgate.shards import shard_of  # noqa: F401  (the tests below place cases with it)

    for k in range(1, n + 1):
        assert action(event, payload, sha=sha, shard=f"{k}/{n}", out=f"legs/leg-{k}", **env) == 0, action.stdout
        assert action.outputs["activity"] == "shard" and "merge job" in action.summary


def test_matrix_legs_publish_nothing_and_the_merge_comments_once(action, baseline):
    import shutil

    from evalgate.shards import shard_of

    fake = action.fake
    head = fake.add_commit([baseline], "PR head")
    merge = fake.add_commit([baseline, head], "merge")
    _set_outputs(action.ws, regressed=True)  # lights-en calls its tool for the wrong room
    event, ref = _pull_request(head, baseline), f"refs/pull/{PR}/merge"
    home = shard_of("home", "home", "lights-en", 3)
    assert home == 1  # the case lives on leg 1, the other case on leg 2, leg 3 is empty
    _legs(action, "pull_request", event, merge, 3, ref=ref)
    assert _writes(fake) == []  # legs write nothing to GitHub
    leg = json.loads((action.ws / "legs" / f"leg-{home}" / "results.json").read_text(encoding="utf-8"))
    assert [c["eval_id"] for s in leg["suites"] for c in s["cases"]] == ["lights-en"] and leg["shard"]["commit"] == merge

    assert action("pull_request", event, sha=merge, ref=ref, mode="merge", shards="legs") == 1, action.stdout
    [comment] = fake.issue_comments(PR)
    comment = dict(comment)
    assert "lights-en" in comment["body"] and "FAIL" in comment["body"]
    assert [(s["context"], s["state"]) for s in fake.statuses[head]] == [("evalgate", "failure")]
    assert _writes(fake) == [f"POST /repos/octo/hello/issues/{PR}/comments", f"POST /repos/octo/hello/statuses/{head}"]
    assert action.outputs["activity"] == "pr" and action.outputs["cases"] == "2" and action.outputs["regressions"] == "1"
    merged = json.loads((action.ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    assert "shard" not in merged and [s["index"] for s in merged["run"]["shards"]] == [1, 2, 3]

    # The leg holding the regression never uploaded: ERROR, never PASS, on the same comment.
    shutil.rmtree(action.ws / "legs" / f"leg-{home}")
    _set_outputs(action.ws, regressed=False)
    fake.log.clear()
    assert action("pull_request", event, sha=merge, ref=ref, mode="merge", shards="legs") == 1
    [edited] = fake.issue_comments(PR)
    assert edited["id"] == comment["id"]
    assert "ERROR" in edited["body"] and f"shard {home}/3 of the run is missing" in edited["body"]
    assert fake.statuses[head][-1]["state"] in ("failure", "error") and action.outputs["verdict"] == "ERROR"


def test_merge_on_the_default_branch_saves_a_baseline_only_when_every_shard_is_there(action, history):
    import shutil

    sha, fake = history[1], action.fake
    _legs(action, "push", _push(sha), sha, 2)
    shutil.rmtree(action.ws / "legs" / "leg-2")
    assert action("push", _push(sha), sha=sha, mode="merge", shards="legs") == 1
    assert action.outputs["verdict"] == "ERROR" and "No baseline was saved" in action.summary
    assert not fake.requests("PUT", r"/repos/octo/hello/contents/baselines/.*")

    assert action("push", _push(sha), sha=sha, shard="2/2", out="legs/leg-2") == 0
    assert action("push", _push(sha), sha=sha, mode="merge", shards="legs") == 0, action.stdout
    assert action.outputs["activity"] == "baseline" and action.outputs["verdict"] == "PASS"
    assert fake.branch_files("evalgate-data") == [
        "README.md", f"baselines/evalgate/{sha}.json.gz", "ledger/evalgate.json.gz", "trends/evalgate.json.gz"
    ]
    # The incomplete merge added no point: the trend holds the whole run only.
    assert [p.commit for p in decode_trend(fake.read_file("evalgate-data", "trends/evalgate.json.gz"), "t").points] == [sha]


def test_merge_refuses_legs_of_another_commit_and_a_leg_refuses_a_mode(action, history):
    sha, other = history[1], history[0]
    _legs(action, "push", _push(other), other, 2, mode="auto")
    assert action("push", _push(sha), sha=sha, mode="merge", shards="legs") == 2
    assert "the legs evaluated" in action.summary and action.outputs["verdict"] == "ERROR"
    assert action("push", _push(sha), sha=sha, shard="1/2", mode="baseline") == 2
    assert "Leave mode at auto on the legs" in action.summary
    assert action("push", _push(sha), sha=sha, shard="3/2") == 2
    assert "input 'shard' (EVALGATE\\_SHARD)" in action.summary


# --- markers: only the token's own comments and issues are evalgate's (issue 26) ---------------


def test_a_planted_marker_comment_is_left_alone_and_evalgate_posts_its_own(action, baseline):
    fake = action.fake
    head = fake.add_commit([baseline], "PR head")
    # Someone starts a comment with the gate's marker, hoping evalgate writes its verdict into
    # it (and then editing it back to "PASS").
    planted = dict(fake.add_comment(PR, f"{marker('evalgate')}\n## evalgate: PASS\nall good", user={"login": "mallory", "id": 666, "type": "User"}))
    _set_outputs(action.ws, regressed=True)
    assert action("pull_request", _pull_request(head, baseline), sha=head) == 1, action.stdout
    assert fake.comments[planted["id"]]["body"] == planted["body"]
    assert not fake.requests("PATCH", rf"/repos/octo/hello/issues/comments/{planted['id']}")
    [ours] = [c for c in fake.issue_comments(PR) if c["id"] != planted["id"]]
    assert ours["user"]["login"] == "github-actions[bot]" and "FAIL" in ours["body"]
    assert action.outputs["comment-url"] == ours["html_url"]
    # The next run edits evalgate's own comment, never the planted one.
    _set_outputs(action.ws, regressed=False)
    assert action("pull_request", _pull_request(head, baseline), sha=head) == 0, action.stdout
    assert len(fake.issue_comments(PR)) == 2
    assert fake.comments[planted["id"]]["body"] == planted["body"]
    assert fake.requests("PATCH", rf"/repos/octo/hello/issues/comments/{ours['id']}")


def test_a_personal_token_finds_its_own_comment_by_its_user(action, baseline):
    fake = action.fake
    fake.as_user("release-bot-person")
    head = fake.add_commit([baseline], "PR head")
    _set_outputs(action.ws, regressed=True)
    action("pull_request", _pull_request(head, baseline), sha=head)
    _set_outputs(action.ws, regressed=False)
    action("pull_request", _pull_request(head, baseline), sha=head)
    [comment] = fake.issue_comments(PR)  # edited in place: the token's user wrote it
    assert comment["user"]["login"] == "release-bot-person" and "PASS" in comment["body"]


def test_a_planted_tracking_issue_is_left_alone_and_evalgate_opens_its_own(action, baseline):
    fake = action.fake
    planted = fake.add_issue("evalgate: nightly regression (evalgate)", f"{tracking_marker('evalgate')}\nnothing to see", user={"login": "mallory", "id": 666, "type": "User"})
    schedule = {"schedule": "0 3 * * *"}
    _set_outputs(action.ws, regressed=True)
    assert action("schedule", schedule, sha=baseline) == 1, action.stdout
    [ours] = [i for i in fake.issues.values() if i["number"] != planted["number"]]
    assert ours["user"]["login"] == "github-actions[bot]" and "lights-en" in ours["body"]
    assert fake.issues[planted["number"]]["body"] == f"{tracking_marker('evalgate')}\nnothing to see"
    # Passing again closes evalgate's issue only.
    _set_outputs(action.ws, regressed=False)
    assert action("schedule", schedule, sha=baseline) == 0
    assert fake.issues[ours["number"]]["state"] == "closed"
    assert fake.issues[planted["number"]]["state"] == "open" and not fake.issue_comments(planted["number"])
    assert not fake.requests("PATCH", rf"/repos/octo/hello/issues/{planted['number']}")


def test_the_github_identity_input_names_an_apps_bot(action, baseline):
    fake = action.fake
    fake.actor = {"login": "evalgate-app[bot]", "id": 99, "type": "Bot"}  # an app's installation token
    head = fake.add_commit([baseline], "PR head")
    _set_outputs(action.ws, regressed=True)
    action("pull_request", _pull_request(head, baseline), sha=head, github_identity="evalgate-app[bot]")
    _set_outputs(action.ws, regressed=False)
    action("pull_request", _pull_request(head, baseline), sha=head, github_identity="evalgate-app[bot]")
    [comment] = fake.issue_comments(PR)
    assert "PASS" in comment["body"] and not fake.requests("GET", "/user")
    # A login that cannot be one is a bad input.
    assert action("pull_request", _pull_request(head, baseline), sha=head, github_identity="not a login") == 2
    assert "input 'github-identity' (EVALGATE_GITHUB_IDENTITY)" in action.stdout
