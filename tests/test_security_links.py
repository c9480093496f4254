"""Issue 34, holes 1, 2, 12-15: links the pull request commits, templates from its config, the
cache view taken before `install`.

Each test is the attack as a pull request makes it, run through the entrypoint as the action
runs it (or the CLI where the action adds nothing), against the fake GitHub and the fake
Gemini; each failed on the code before issue 34 (what happened then is in its docstring).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fake_gemini import clear_judge_env, fake_gemini  # noqa: F401  (fixture)
from fake_github import fake_github  # noqa: F401  (fixture)
from test_entrypoint import PR, Action, _pull_request, _push, _set_outputs, action, main_with_baseline, ws  # noqa: F401  (fixtures)
from test_security import GIT, _always_valid, git, judged_project, move_as_default_writer, needs_git, planting_build_backend


def _statuses(fake, sha: str) -> list[str]:
    return [s["state"] for s in fake.statuses.get(sha, [])]


@pytest.fixture
def based(action):
    """main's commit carries the config and has a baseline; the PR's agent regresses lights-en."""
    base = main_with_baseline(action)
    _set_outputs(action.ws, regressed=True)
    return base


LOOSE = ("  deterministic_flips: fail\n", "  deterministic_flips: test\n  margin_deterministic: 1.0\n")


# --- hole 1: the config as a link -------------------------------------------------------------


def test_a_config_replaced_by_a_link_to_a_looser_one_is_refused(action, based):
    """Before: the base was asked for the link's target (policies/loose.yaml), which it lacks, so
    the pull request's own looser gate judged it, the comment showed no policy change, and the
    regressed pull request got `success`."""
    config = action.ws / "evalgate.yaml"
    loose = action.ws / "policies" / "loose.yaml"
    loose.parent.mkdir()
    loose.write_text(config.read_text(encoding="utf-8").replace(*LOOSE), encoding="utf-8")
    config.unlink()
    config.symlink_to(Path("policies") / "loose.yaml")
    head = action.fake.add_commit([based], "evalgate.yaml -> policies/loose.yaml")
    code = action("pull_request", _pull_request(head, based), sha=head)
    assert code == 2, action.stdout
    [error] = [line for line in action.stdout.splitlines() if line.startswith("::error")]
    assert "evalgate.yaml" in error and "symbolic link" in error and "policies/loose.yaml" in error, error
    assert "success" not in _statuses(action.fake, head)


def test_a_config_in_a_linked_folder_is_refused_in_a_merge_queue(action, based):
    """The link may be any folder on the way: `config: cfg/evalgate.yaml` with cfg a link."""
    real = action.ws / "real"
    shutil.copytree(action.ws / "evals", real / "evals")
    shutil.copytree(action.ws / "runs", real / "runs")
    (real / "evalgate.yaml").write_text((action.ws / "evalgate.yaml").read_text(encoding="utf-8").replace(*LOOSE), encoding="utf-8")
    (action.ws / "cfg").symlink_to("real")
    head = action.fake.add_commit([based], "queue head")
    event = {"merge_group": {"head_sha": head, "base_sha": based, "head_ref": "refs/heads/gh-readonly-queue/main/pr-7"},
             "repository": {"full_name": "octo/hello", "default_branch": "main"}}
    code = action("merge_group", event, sha=head, ref="refs/heads/gh-readonly-queue/main/pr-7", config="cfg/evalgate.yaml")
    assert code == 2, action.stdout
    assert "symbolic link" in action.stdout and "success" not in _statuses(action.fake, head)


def test_a_linked_config_is_refused_in_publish_mode(action, fake_github):  # noqa: F811
    """The trusted job reads the default branch's checkout; a link there is refused as in a
    pull request's run (the rule is per mode, not per who made the link)."""
    from test_trusted_publish import _publish

    fake = action.fake
    base = fake.linear_history(2)[1]
    assert action("push", _push(base), sha=base) == 0, action.stdout
    config = action.ws / "evalgate.yaml"
    (action.ws / "shared.yaml").write_text(config.read_text(encoding="utf-8"), encoding="utf-8")
    config.unlink()
    config.symlink_to("shared.yaml")
    code, head = _publish(action, base)
    assert code == 2, action.stdout
    assert "symbolic link" in action.stdout and head not in fake.statuses


def test_a_linked_config_still_works_where_no_pull_request_is_judged(action, based):
    """A push to the default branch reads a linked config as before (a maintainer's choice)."""
    config = action.ws / "evalgate.yaml"
    (action.ws / "shared.yaml").write_text(config.read_text(encoding="utf-8"), encoding="utf-8")
    config.unlink()
    config.symlink_to("shared.yaml")
    _set_outputs(action.ws, regressed=False)
    head = action.fake.add_commit([based], "main again")
    action.fake.refs["refs/heads/main"] = head
    assert action("push", _push(head), sha=head) == 0, action.stdout


def test_a_base_without_a_config_is_named_and_diffed_against_nothing(action):
    """The base commit has a baseline but no evalgate.yaml (its config was elsewhere, or the
    pull request moved it). Before: the pull request's own gate was used and compared with
    itself: no policy change shown. Now the comment says the base has no config there and shows
    the pull request's whole gate section as added."""
    fake, ws = action.fake, action.ws
    base, _ = fake.linear_history(2)  # commits with no files: no config at the base
    assert action("push", _push(base), sha=base) == 0, action.stdout
    config = ws / "evalgate.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace(*LOOSE), encoding="utf-8")
    head = fake.add_commit([base], "loosen")
    action("pull_request", _pull_request(head, base), sha=head)
    [comment] = fake.issue_comments(PR)
    body = comment["body"]
    assert "This pull request changes the gate" in body, body
    assert "--- base: no evalgate.yaml" in body, body
    assert "+  deterministic_flips: test" in body and "\n-  " not in body.split("```diff", 1)[1].split("```", 1)[0]
    assert "- the base commit has no evalgate.yaml: this pull request's own gate section was used" in body
    assert "the base commit has no evalgate.yaml" in action.summary


def test_evalgate_gate_asks_the_base_for_the_config_at_the_path_as_written(cli, tmp_path):
    """`evalgate gate` on a developer's machine: the branch made evalgate.yaml a link to a looser
    config. Before: git was asked for policies/loose.yaml at the base, which has none, and the
    branch's own gate judged it (PASS). Now the base's evalgate.yaml is read: FAIL."""
    from test_local_gate import _comment, _git, _regress, _repo

    repo, _base = _repo(cli, tmp_path)
    _regress(repo)
    config = repo / "evalgate.yaml"
    (repo / "policies").mkdir()
    (repo / "policies" / "loose.yaml").write_text(config.read_text(encoding="utf-8").replace(*LOOSE), encoding="utf-8")
    config.unlink()
    config.symlink_to(Path("policies") / "loose.yaml")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "evalgate.yaml -> policies/loose.yaml")
    code, out, err = cli("gate", cwd=repo)
    assert code == 1, out + err
    assert "-  deterministic_flips: fail" in _comment(repo)


# --- hole 2: the baseline folder as a link ---------------------------------------------------


def _dir_store_base(action) -> str:
    """main's commit with the config and a committed `dir` baseline store."""
    fake, ws = action.fake, action.ws
    base, _ = fake.linear_history(2)
    assert action("push", _push(base), sha=base, baseline_store="dir") == 0, action.stdout
    files = {"evalgate.yaml": (ws / "evalgate.yaml").read_bytes()}
    for path in (ws / ".evalgate" / "baselines").rglob("*"):
        if path.is_file():
            files[path.relative_to(ws).as_posix()] = path.read_bytes()
    fake.commits[base]["tree"] = fake.commits[fake.add_commit([], "tree", files=files)]["tree"]
    return base


def test_a_baseline_folder_made_a_link_to_an_empty_folder_still_reads_the_bases_baseline(action):
    """Before: the base commit was asked for the link's target (empty/...), which it lacks, and
    the checkout's copy was empty: "no baseline", so the pull request's own criteria (a zeroed
    threshold) judged its regression, and it got `success`."""
    fake, ws = action.fake, action.ws
    base = _dir_store_base(action)
    _set_outputs(ws, regressed=True)
    config = ws / "evalgate.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("tool_trajectory_avg_score: {threshold: 1.0,", "tool_trajectory_avg_score: {threshold: 0.0,"), encoding="utf-8")
    shutil.rmtree(ws / ".evalgate" / "baselines")
    (ws / "empty").mkdir()
    (ws / ".evalgate" / "baselines").symlink_to(ws / "empty")
    head = fake.add_commit([base], "baselines -> empty")
    code = action("pull_request", _pull_request(head, base), sha=head, baseline_store="dir")
    assert code == 1, action.stdout
    assert _statuses(fake, head) == ["failure"]
    results = json.loads((ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    assert results["suites"][0]["criteria"]["tool_trajectory_avg_score"]["threshold"] == 1.0  # the base's
    assert "is a symbolic link" in action.stdout  # said, and read from the base commit only


def test_a_dir_stores_files_and_lock_files_committed_as_links_are_replaced(tmp_path):
    """Saving a baseline, the ledger and the trend (a default-branch run) into a folder whose
    baseline file and lock files were committed as links: the files outside stay as they were.
    Before: each lock file's target was created (opened for appending through the link)."""
    from datetime import datetime, timezone

    from evalgate.baselines import DirStore, baseline_path, ledger_path, make_baseline, trend_path
    from evalgate.gate.trends import Trend
    from evalgate.results import RunInfo
    from result_builders import run_of

    store = DirStore(tmp_path / "store", gate_id="evalgate")
    outside = tmp_path / "outside"
    outside.mkdir()
    sha = "a" * 40
    names = [baseline_path("evalgate", sha)] + [str(Path(rel).with_suffix(".lock")) for rel in (ledger_path("evalgate"), trend_path("evalgate"))]
    for name in names:
        target = outside / name.replace("/", "_")
        if not name.endswith(".lock"):
            target.write_text("precious\n", encoding="utf-8")
        (store.path / name).parent.mkdir(parents=True, exist_ok=True)
        (store.path / name).symlink_to(target)  # a lock file's target does not exist: not to be created
    store.save(make_baseline(run_of([], "0" * 64, RunInfo()), sha, "refs/heads/main", datetime.now(timezone.utc)))
    store.save_ledger("evalgate", lambda old: old)
    store.save_trend("evalgate", lambda old: Trend(gate_id="evalgate"))
    assert [p.read_text(encoding="utf-8") for p in outside.iterdir()] == ["precious\n"]
    assert not any(p.is_symlink() for p in store.path.rglob("*"))
    assert store.load(sha) is not None


# --- hole 12: the output files as links --------------------------------------------------------

OUTPUTS = ("report.md", "results.json", "junit.xml", "report.html", "inference.jsonl", "resume.json")


def _outputs_linked_outside(ws: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The pull request's evalgate-results/ with every output file a link to a file outside
    the workspace that says "precious". Returns (outside, out)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    out = ws / "evalgate-results"
    shutil.rmtree(out)  # the base's push wrote it; the pull request's checkout has its own
    out.mkdir()
    for name in OUTPUTS:
        (outside / name).write_text("precious\n", encoding="utf-8")
        (out / name).symlink_to(outside / name)
    return outside, out


def test_output_files_committed_as_links_are_replaced_not_written_through(action, based, tmp_path):
    """Before: report.md, results.json, junit.xml and report.html were written through the links:
    the files outside the workspace were overwritten (the action runs as root)."""
    outside, out = _outputs_linked_outside(action.ws, tmp_path)
    (outside / "adk").mkdir()
    (out / "adk").symlink_to(outside / "adk")  # a folder the writers descend into
    head = action.fake.add_commit([based], "links")
    code = action("pull_request", _pull_request(head, based), sha=head)
    assert code == 2, action.stdout  # adk/ is a folder on the way: refused, naming the input
    assert "output-dir" in action.stdout and "symbolic link" in action.stdout
    for name in OUTPUTS:
        assert (outside / name).read_text(encoding="utf-8") == "precious\n", name
    assert list((outside / "adk").iterdir()) == []
    assert "success" not in _statuses(action.fake, head)


def test_the_agents_cli_results_folder_as_a_link_is_refused(action, based, tmp_path):
    """agents-cli/ (agents-cli's results file, evalgate.reports.agents_cli) is written as the
    other outputs are: a pull request that commits it as a link gets exit 2, nothing written there."""
    outside = tmp_path / "outside"
    (outside / "agents-cli").mkdir(parents=True)
    out = action.ws / "evalgate-results"
    shutil.rmtree(out)
    out.mkdir()
    (out / "agents-cli").symlink_to(outside / "agents-cli")
    head = action.fake.add_commit([based], "links")
    code = action("pull_request", _pull_request(head, based), sha=head)
    assert code == 2 and "symbolic link" in action.stdout, action.stdout
    assert list((outside / "agents-cli").iterdir()) == []
    assert "success" not in _statuses(action.fake, head)


def test_every_output_file_is_replaced_not_written_through(action, based, tmp_path):
    """The same links, with no linked folder on the way: the run succeeds in writing its own
    files, and nothing outside changes."""
    outside, out = _outputs_linked_outside(action.ws, tmp_path)
    head = action.fake.add_commit([based], "links")
    assert action("pull_request", _pull_request(head, based), sha=head) == 1, action.stdout
    for name in OUTPUTS:
        assert (outside / name).read_text(encoding="utf-8") == "precious\n", name
    for name in ("report.md", "results.json", "junit.xml", "report.html"):
        assert (out / name).is_file() and not (out / name).is_symlink(), name
    assert json.loads((out / "results.json").read_text(encoding="utf-8"))["suites"]


def test_a_local_run_replaces_linked_output_files_and_may_write_into_a_linked_folder(cli, tmp_path):
    """Outside the action's pull request runs the same holds for the files (replaced, never
    written through); a folder the user linked is theirs to choose."""
    from test_inputs import make_project

    root = make_project(tmp_path / "project")
    outside, elsewhere = tmp_path / "outside", tmp_path / "elsewhere"
    outside.mkdir()
    elsewhere.mkdir()
    (root / "out").mkdir()
    for name in ("results.json", "junit.xml", "report.html"):
        (outside / name).write_text("precious\n", encoding="utf-8")
        (root / "out" / name).symlink_to(outside / name)
    (root / "linked").symlink_to(elsewhere)
    for out in ("out", "linked"):
        code, stdout, err = cli("run", "--out", out, "--quiet", cwd=root)
        assert code == 0, stdout + err
    assert all((outside / n).read_text(encoding="utf-8") == "precious\n" for n in ("results.json", "junit.xml", "report.html"))
    assert not (root / "out" / "results.json").is_symlink() and (elsewhere / "results.json").is_file()


def test_an_output_folder_that_is_a_link_is_refused_in_pr_mode(action, based):
    """A link inside the workspace (here to .github) passes the check that paths stay in the
    workspace; the pull request must not choose where evalgate writes."""
    (action.ws / ".github").mkdir()
    shutil.rmtree(action.ws / "evalgate-results")
    (action.ws / "evalgate-results").symlink_to(".github")
    head = action.fake.add_commit([based], "out -> .github")
    assert action("pull_request", _pull_request(head, based), sha=head) == 2, action.stdout
    assert "output-dir" in action.stdout and "symbolic link" in action.stdout
    assert list((action.ws / ".github").iterdir()) == []


# --- hole 13: the judge cache's folders as links ----------------------------------------------


@pytest.fixture
def judged(fake_github, tmp_path, capsys):  # noqa: F811
    return Action(fake_github, judged_project(tmp_path / "ws"), tmp_path, capsys)


def test_cache_folders_committed_as_links_are_not_written_through(judged, fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    """Before: the judge's verdicts were written into the folder outside the workspace."""
    fake, ws = judged.fake, judged.ws
    base, _ = fake.linear_history(2)
    head = fake.add_commit([base], "PR head")
    outside = tmp_path / "outside"
    outside.mkdir()
    cache = ws / ".evalgate" / "cache"
    cache.mkdir(parents=True)
    for i in range(256):
        (cache / f"{i:02x}").symlink_to(outside)
    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = _always_valid
    judged("pull_request", _pull_request(head, base), sha=head, ref=f"refs/pull/{PR}/merge")
    assert len(fake_gemini.requests) == 2, judged.stdout  # judged, not stopped
    assert list(outside.iterdir()) == []
    results = json.loads((ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    assert {c["criteria"]["final_response_match_v2"]["status"] for c in results["suites"][0]["cases"]} == {"PASSED"}


def test_a_cache_folder_that_is_a_link_is_refused_in_pr_mode(judged):
    fake, ws = judged.fake, judged.ws
    base, _ = fake.linear_history(2)
    head = fake.add_commit([base], "PR head")
    (ws / "verdicts").mkdir()
    (ws / ".evalgate").mkdir()
    (ws / ".evalgate" / "cache").symlink_to(ws / "verdicts")
    assert judged("pull_request", _pull_request(head, base), sha=head, ref=f"refs/pull/{PR}/merge") == 2, judged.stdout
    assert "judge.cache_dir" in judged.stdout and ".evalgate/cache is a symbolic link" in judged.stdout
    assert not fake.statuses


@needs_git
def test_committed_verdicts_reached_through_a_linked_cache_folder_are_not_believed(judged, fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    """The pull request commits verdicts (claiming a default-branch writer) under docs/, and the
    cache's key folders as links to them: git tracks the links, not the entries as cache files.
    Before: the entries were read through the links and believed: PASSED without a judge."""
    fake, ws = judged.fake, judged.ws
    base, _ = fake.linear_history(2)
    head = fake.add_commit([base], "PR head")
    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = _always_valid
    judged("pull_request", _pull_request(head, base), sha=head, ref=f"refs/pull/{PR}/merge")  # the attacker's endpoint
    cache = ws / ".evalgate" / "cache"
    planted = ws / "docs" / "verdicts"
    planted.mkdir(parents=True)
    for path in list(cache.rglob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["writer"] = {"kind": "default", "event": "push", "ref": "refs/heads/main"}
        (planted / path.name).write_text(json.dumps(data), encoding="utf-8")
    shutil.rmtree(cache)
    cache.mkdir(parents=True)
    for path in planted.iterdir():
        link = cache / path.name[:2]
        if not link.is_symlink():
            link.symlink_to(Path("..") / ".." / "docs" / "verdicts")
    shutil.rmtree(ws / "evalgate-results")
    git(ws, "init", "-q")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "pr")
    clear_judge_env(monkeypatch, tmp_path)
    judged("pull_request", _pull_request(head, base), sha=head, ref=f"refs/pull/{PR}/merge")
    results = json.loads((ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    assert {c["criteria"]["final_response_match_v2"]["status"] for c in results["suites"][0]["cases"]} == {"NOT_EVALUATED"}, judged.stdout


# --- hole 15: the install step moves the cache --------------------------------------------------


def test_a_cache_folder_the_install_step_names_is_not_believed(judged, fake_gemini, monkeypatch, tmp_path):  # noqa: F811
    """`pip install .` runs the pull request's build backend after the cache's view was taken: it
    plants entries (claiming a default-branch writer) in a new folder and points judge.cache_dir
    at it. Before: that folder's view was taken when the cache opened, after the planting, so
    the planted verdicts counted as there "before the run": PASSED with no judge credentials."""
    fake, ws = judged.fake, judged.ws
    base, _ = fake.linear_history(2)
    head = fake.add_commit([base], "PR head")
    fake_gemini.use_gemini_api(monkeypatch)
    fake_gemini.responder = _always_valid
    judged("pull_request", _pull_request(head, base), sha=head, ref=f"refs/pull/{PR}/merge")
    cache, planted = ws / ".evalgate" / "cache", tmp_path / "planted"
    move_as_default_writer(cache, planted)
    config = ws / "evalgate.yaml"
    planting_build_backend(
        ws,
        f"shutil.copytree({str(planted)!r}, {str(ws / 'elsewhere')!r}, dirs_exist_ok=True)\n"
        f"open({str(config)!r}, 'a').write('judge:\\n  cache_dir: elsewhere\\n')\n",
    )
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    clear_judge_env(monkeypatch, tmp_path)
    judged("pull_request", _pull_request(head, base), sha=head, ref=f"refs/pull/{PR}/merge", install="--dry-run --no-deps --no-build-isolation .")
    assert "cache_dir: elsewhere" in config.read_text(encoding="utf-8") and list((ws / "elsewhere").rglob("*.json")), judged.stdout
    results = json.loads((ws / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    assert {c["criteria"]["final_response_match_v2"]["status"] for c in results["suites"][0]["cases"]} == {"NOT_EVALUATED"}, judged.stdout
    assert "judge.cache_dir names elsewhere now, not the folder found before the install step (.evalgate/cache)" in judged.stdout


def test_a_cache_folder_no_view_was_taken_of_holds_nothing_from_before_the_run(tmp_path):
    """The same at the cache: once the run took its views (before install), a cache opened on
    another folder believes none of the entries found there, only what the run writes."""
    from evalgate.judge.cache import CachePolicy, JudgeCache, session, snapshot
    from test_security import _plant_entry

    policy = CachePolicy("pull_request", "pull_request", "refs/pull/7/merge", frozenset({"default"}))
    seen, other = tmp_path / "seen", tmp_path / "other"
    _plant_entry(seen, "a" * 64, "from main")
    _plant_entry(other, "b" * 64, "planted")
    with session():
        snapshot(seen)
        assert JudgeCache(seen, policy).get("a" * 64).text == "from main"
        cache = JudgeCache(other, policy)
        assert cache.get("b" * 64) is None and cache.refused == {"late": 1}
        cache.put("c" * 64, "the judge's answer", {})
        assert cache.get("c" * 64).text == "the judge's answer"
    with session():  # without views taken first (gate.pairwise's own tests): the first cache's view
        assert JudgeCache(other, policy).get("b" * 64).text == "planted"


# --- hole 14: templates from the config --------------------------------------------------------


def test_custom_instructions_cannot_reach_os_system(tmp_path, monkeypatch, cli):
    """Before: the template was rendered by a plain jinja2 Environment, and the command ran."""
    pytest.importorskip("google.adk")
    from agent_project import agent_model_server, make_project
    from test_simulated_user import respond, scenario

    marker = tmp_path / "pwned"
    instructions = (
        "{{ cycler.__init__.__globals__.os.system('touch " + str(marker) + "') }}"
        "{{ conversation_plan }} {{ conversation_history }} {{ stop_signal }}"
    )
    project = make_project(
        tmp_path / "p", agent={"adk": "weather_agent"}, extra_cases=(scenario("tour", "Weather in Paris?", ["London"]),),
        criteria={"tool_trajectory_avg_score": 1.0}, suite={"user_simulator": {"custom_instructions": instructions}},
    )
    with agent_model_server(monkeypatch) as fake:
        fake.responder = respond
        code, out, err = cli("run", "--config", str(project.config), "--out", str(project.out))
    assert not marker.exists()
    assert code == 0, out + err  # the case is NOT_EVALUATED (warned), the others pass
    tour = project.cases()["tour"]
    assert tour["status"] == "NOT_EVALUATED", tour
    assert "custom_instructions could not be rendered: SecurityError" in json.dumps(tour, ensure_ascii=False)
