"""Baselines: the file format, the dir and GitHub stores, the first-parent lookup, who may write."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import subprocess
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from evalgate.baselines import (
    Baseline,
    DirStore,
    GitHubStore,
    baseline_age,
    baseline_path,
    encode_baseline,
    encode_ledger,
    find_baseline,
    git_first_parent,
    ledger_path,
    make_baseline,
    may_write_baseline,
)
from evalgate.gate import BaselineInfo
from evalgate.errors import InputError
from evalgate.github import GitHubClient, GitHubError, GitHubForbidden
from evalgate.results import (
    CaseResult,
    Counts,
    CriterionResult,
    CriterionSpec,
    RunInfo,
    RunResults,
    Status,
    SuiteResult,
)
from fake_github import FakeGitHub, fake_github  # noqa: F401  (fixture)

NOW = datetime(2024, 6, 1, 12, 30, tzinfo=timezone.utc)
RM = "response_match_score"
JUDGE = "hallucinations_v1"


def sha(n: int | str) -> str:
    return hashlib.sha1(str(n).encode()).hexdigest()


def results(score: float = 1.0) -> RunResults:
    status = Status.PASSED if score >= 0.5 else Status.FAILED
    case = CaseResult(
        eval_set_id="home",
        eval_id="불 끄기",
        expected_digest="sha256:e1",
        status=status,
        criteria={RM: CriterionResult(score=score, status=status, threshold=0.5)},
    )
    suite = SuiteResult(
        name="demo",
        status=status,
        not_evaluated_policy="warn",
        counts=Counts.of([case]),
        criteria={
            RM: CriterionSpec(threshold=0.5, version="1"),
            JUDGE: CriterionSpec(threshold=0.8, version="v1", judge=True, options={"judge_model": "gemini-2.5-flash"}),
        },
        cases=[case],
    )
    return RunResults(
        config_digest="sha256:cfg", status=status, counts=Counts.of([case]), suites=[suite],
        run=RunInfo(started_at="2024-06-01T12:29:00Z", duration_seconds=3.5),
    )


def baseline(commit: str, score: float = 1.0) -> Baseline:
    return make_baseline(results(score), commit, "refs/heads/main", NOW)


# --- the baseline -----------------------------------------------------------------------


def test_make_baseline_records_provenance():
    b = make_baseline(results(), sha(1), "refs/heads/main", NOW)
    p = b.provenance
    assert (p.commit, p.ref, p.created_at, p.config_digest) == (sha(1), "refs/heads/main", "2024-06-01T12:30:00Z", "sha256:cfg")
    assert p.evalgate_version == b.results.evalgate_version
    assert {s: {c: v.model_dump() for c, v in crits.items()} for s, crits in p.criteria.items()} == {
        "demo": {
            JUDGE: {"version": "v1", "judge": True, "options": {"judge_model": "gemini-2.5-flash"}},
            RM: {"version": "1", "judge": False, "options": {}},
        }
    }
    assert b.results == results()


def test_a_naive_time_is_taken_as_utc_and_other_zones_are_converted():
    assert make_baseline(results(), sha(1), "r", datetime(2024, 6, 1, 12, 30)).provenance.created_at == "2024-06-01T12:30:00Z"
    tokyo = datetime(2024, 6, 1, 21, 30, tzinfo=timezone(timedelta(hours=9)))
    assert make_baseline(results(), sha(1), "r", tokyo).provenance.created_at == "2024-06-01T12:30:00Z"


@pytest.mark.parametrize("bad", ["abc123", "A" * 40, sha(1)[:39], "../" + sha(1)])
def test_make_baseline_wants_a_full_commit_sha(bad):
    with pytest.raises(ValueError, match="commit sha"):
        make_baseline(results(), bad, "r", NOW)


@pytest.mark.parametrize(
    "event, ref, allowed",
    [
        ("push", "refs/heads/main", True),
        ("schedule", "refs/heads/main", True),
        ("workflow_dispatch", "refs/heads/main", True),
        ("push", "refs/heads/feature", False),
        ("workflow_dispatch", "refs/heads/feature", False),
        ("push", "refs/tags/main", False),  # a tag named like the branch
        ("push", "main", False),  # bare names are ambiguous
        ("pull_request", "refs/heads/main", False),
        ("pull_request", "refs/pull/5/merge", False),
        ("pull_request_target", "refs/heads/main", False),
        ("merge_group", "refs/heads/main", False),
        ("push", "refs/heads/", False),
    ],
)
def test_only_default_branch_runs_may_write_baselines(event, ref, allowed):
    assert may_write_baseline(event, ref, "main") is allowed


def test_no_default_branch_means_no_writes():
    assert may_write_baseline("push", "refs/heads/", "") is False


def test_baseline_age():
    info = BaselineInfo(commit=sha(1), requested_commit=sha(2), distance=1, created_at="2024-06-01T12:30:00Z")
    assert baseline_age(info, NOW + timedelta(days=2, hours=1)) == timedelta(days=2, hours=1)
    assert baseline_age(BaselineInfo(sha(1), sha(1), 0, None), NOW) is None


# --- the dir store ----------------------------------------------------------------------


def test_dir_store_round_trip_and_layout(tmp_path):
    store = DirStore(tmp_path, gate_id="api")
    assert store.load(sha(1)) is None
    store.save(baseline(sha(1)))
    file = tmp_path / "baselines" / "api" / f"{sha(1)}.json.gz"
    assert file.is_file()
    assert store.load(sha(1)) == baseline(sha(1))
    assert DirStore(tmp_path, gate_id="other").load(sha(1)) is None
    assert json.loads(gzip.decompress(file.read_bytes()))["schema_version"] == 1


def test_dir_store_bytes_are_deterministic(tmp_path):
    DirStore(tmp_path / "a").save(baseline(sha(1)))
    DirStore(tmp_path / "b").save(baseline(sha(1)))
    a = (tmp_path / "a" / baseline_path("default", sha(1))).read_bytes()
    b = (tmp_path / "b" / baseline_path("default", sha(1))).read_bytes()
    assert a == b == encode_baseline(baseline(sha(1)))
    assert a[:2] == b"\x1f\x8b" and a[4:8] == b"\0\0\0\0"  # gzip, mtime 0
    DirStore(tmp_path / "c").save_ledger("default", lambda _: {"k": [1.0, None]})
    DirStore(tmp_path / "d").save_ledger("default", lambda _: {"k": [1.0, None]})
    assert (tmp_path / "c" / ledger_path("default")).read_bytes() == (tmp_path / "d" / ledger_path("default")).read_bytes()


def test_dir_store_ledger_updates(tmp_path):
    store = DirStore(tmp_path)
    assert store.load_ledger("default") == {}
    assert store.save_ledger("default", lambda old: {**old, "a": [1.0]}) == {"a": [1.0]}
    store.save_ledger("default", lambda old: {**old, "a": old["a"] + [None, 0.4]})
    assert store.load_ledger("default") == {"a": [1.0, None, 0.4]}
    assert store.load_ledger("other") == {}
    assert (tmp_path / "ledger" / "default.json.gz").is_file()


def test_dir_store_concurrent_ledger_writers_lose_nothing(tmp_path):
    def writer(n: int) -> None:
        store = DirStore(tmp_path)
        for i in range(10):
            store.save_ledger("default", lambda old: {**old, "k": old.get("k", []) + [n + i / 100]})

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(DirStore(tmp_path).load_ledger("default")["k"]) == sorted(n + i / 100 for n in range(6) for i in range(10))


def test_a_corrupt_baseline_is_reported_with_its_file_and_a_fix(tmp_path):
    file = tmp_path / baseline_path("default", sha(1))
    file.parent.mkdir(parents=True)
    file.write_bytes(b"not gzip")
    with pytest.raises(InputError) as e:
        DirStore(tmp_path).load(sha(1))
    assert str(file) in str(e.value) and "not gzip-compressed JSON" in str(e.value) and "Delete it" in str(e.value)

    file.write_bytes(gzip.compress(b'{"provenance": {}}', mtime=0))
    with pytest.raises(InputError, match="is not an evalgate baseline"):
        DirStore(tmp_path).load(sha(1))


def test_a_corrupt_ledger_is_reported(tmp_path):
    file = tmp_path / ledger_path("default")
    file.parent.mkdir(parents=True)
    file.write_bytes(gzip.compress(b'{"schema_version": 1, "entries": {"k": ["x"]}}', mtime=0))
    with pytest.raises(InputError, match="is not an evalgate flake ledger"):
        DirStore(tmp_path).load_ledger("default")


@pytest.mark.parametrize("gate_id", ["", "../up", "a/b", ".hidden", "x" * 101])
def test_a_gate_id_must_be_a_safe_folder_name(tmp_path, gate_id):
    with pytest.raises(InputError, match="gate id"):
        DirStore(tmp_path, gate_id=gate_id)


# --- the GitHub store -------------------------------------------------------------------


@pytest.fixture
def client(fake_github) -> GitHubClient:  # noqa: F811
    return GitHubClient(fake_github.url, fake_github.repository, fake_github.token, sleep=lambda s: None)


def test_github_store_creates_the_branch_on_first_write_only(fake_github, client):  # noqa: F811
    store = GitHubStore(client, gate_id="api")
    assert store.load(sha(1)) is None
    assert store.load_ledger("api") == {}
    assert [r.method for r in fake_github.log] == ["GET", "GET"]  # reading creates nothing
    assert "refs/heads/evalgate-data" not in fake_github.refs

    store.save(baseline(sha(1)))

    assert [(r.method, r.path, r.status) for r in fake_github.log[2:]] == [
        ("GET", "/repos/octo/hello/git/ref/heads/evalgate-data", 404),
        ("POST", "/repos/octo/hello/git/trees", 201),
        ("POST", "/repos/octo/hello/git/commits", 201),
        ("POST", "/repos/octo/hello/git/refs", 201),
        ("GET", f"/repos/octo/hello/contents/baselines/api/{sha(1)}.json.gz", 404),
        ("PUT", f"/repos/octo/hello/contents/baselines/api/{sha(1)}.json.gz", 201),
    ]
    assert fake_github.log[4].body["parents"] == []  # an orphan commit: no code, no workflows
    assert fake_github.log[5].body["ref"] == "refs/heads/evalgate-data"
    root = fake_github.commits[fake_github.refs["refs/heads/evalgate-data"]]["parents"][0]
    assert fake_github.commits[root]["parents"] == []
    assert fake_github.branch_files("evalgate-data") == ["README.md", f"baselines/api/{sha(1)}.json.gz"]
    stored = fake_github.read_file("evalgate-data", f"baselines/api/{sha(1)}.json.gz")
    assert stored == encode_baseline(baseline(sha(1)))  # gzip, sent base64 through the contents API
    assert store.load(sha(1)) == baseline(sha(1))

    fake_github.log.clear()
    store.save(baseline(sha(2)))
    store.save_ledger("api", lambda old: {"k": [1.0]})
    assert fake_github.requests("POST") == []  # the branch is there now
    assert GitHubStore(client, gate_id="api").load_ledger("api") == {"k": [1.0]}


def test_github_store_tolerates_a_concurrent_branch_creation(fake_github, client):  # noqa: F811
    def other_run_creates_it(fake: FakeGitHub) -> None:
        fake.refs["refs/heads/evalgate-data"] = fake.add_commit(message="other run")

    fake_github.on(r"/repos/octo/hello/git/refs", other_run_creates_it, method="POST")
    GitHubStore(client).save(baseline(sha(1)))
    assert fake_github.requests("POST", r"/repos/octo/hello/git/refs")[0].status == 422
    assert GitHubStore(client).load(sha(1)) == baseline(sha(1))


@pytest.mark.parametrize("existing", [False, True], ids=["other-creates-file", "other-updates-file"])
def test_a_concurrent_ledger_writer_loses_nothing(fake_github, client, existing):  # noqa: F811
    ours = GitHubStore(client, gate_id="api")
    theirs = GitHubStore(GitHubClient(fake_github.url, fake_github.repository, fake_github.token), gate_id="api")
    if existing:
        theirs.save_ledger("api", lambda old: {"k": [1.0]})
    calls = []

    def append(value):
        return lambda old: {**old, "k": old.get("k", []) + [value]}

    def ours_update(old):
        calls.append(dict(old))
        if len(calls) == 1:  # another run writes between our read and our write
            theirs.save_ledger("api", append(0.5))
        return append(0.0)(old)

    ours.save_ledger("api", ours_update)

    expected = ([1.0] if existing else []) + [0.5, 0.0]
    assert ours.load_ledger("api") == {"k": expected}
    assert len(calls) == 2 and calls[1] == {"k": expected[:-1]}  # re-read, re-applied
    puts = fake_github.requests("PUT", r".*/ledger/api\.json\.gz")
    assert [r.status for r in puts][-3:] == [201 if not existing else 200, 422 if not existing else 409, 200]


def test_a_conflicting_baseline_write_loses_no_baseline(fake_github, client):  # noqa: F811
    store = GitHubStore(client, gate_id="api")
    store.save(baseline(sha(0)))
    path = rf"/repos/octo/hello/contents/baselines/api/{sha(1)}\.json\.gz"

    def other_run(fake: FakeGitHub) -> None:
        # Another default-branch run writes its own baseline and the same commit's, and the
        # branch head moves under us (GitHub answers 409 to the racing write).
        fake.write_file("evalgate-data", baseline_path("api", sha(2)), encode_baseline(baseline(sha(2), 0.9)))
        fake.write_file("evalgate-data", baseline_path("api", sha(1)), encode_baseline(baseline(sha(1), 0.1)))

    fake_github.on(path, other_run, method="PUT")
    store.save(baseline(sha(1)))

    assert [r.status for r in fake_github.requests("PUT", path)] == [422, 200]
    assert store.load(sha(0)) == baseline(sha(0))
    assert store.load(sha(1)) == baseline(sha(1))  # ours, written after re-reading
    assert store.load(sha(2)) == baseline(sha(2), 0.9)


def test_a_write_that_keeps_conflicting_gives_up(fake_github, client):  # noqa: F811
    store = GitHubStore(client, gate_id="api", max_attempts=3)
    store.save_ledger("api", lambda old: {"k": [1.0]})
    fake_github.fail(r".*/ledger/api\.json\.gz", 409, method="PUT", times=10)
    with pytest.raises(GitHubError, match=r"gave up writing octo/hello@evalgate-data:ledger/api\.json\.gz after 3"):
        store.save_ledger("api", lambda old: {"k": old["k"] + [0.0]})
    assert len(fake_github.requests("PUT")) == 1 + 3


def test_a_fork_token_cannot_write_baselines(fake_github, client):  # noqa: F811
    GitHubStore(client).save(baseline(sha(1)))
    fake_github.read_only = True
    store = GitHubStore(client)
    assert store.load(sha(1)) == baseline(sha(1))  # reading still works
    with pytest.raises(GitHubForbidden) as e:
        store.save(baseline(sha(2)))
    assert fake_github.token not in str(e.value)
    with pytest.raises(GitHubForbidden):
        store.save_ledger("default", lambda old: {"k": [1.0]})


# --- lookup -----------------------------------------------------------------------------


def test_the_nearest_first_parent_ancestor_with_a_baseline_is_found(fake_github, client):  # noqa: F811
    c = fake_github.linear_history(6)
    store = GitHubStore(client)
    store.save(baseline(c[0], 0.2))
    store.save(baseline(c[2], 0.8))
    fake_github.log.clear()

    found = find_baseline(store, c[5], client.first_parent)

    assert found is not None
    b, info = found
    assert b == baseline(c[2], 0.8)
    assert info == BaselineInfo(commit=c[2], requested_commit=c[5], distance=3, created_at="2024-06-01T12:30:00Z")
    assert [r.path.split("/")[4] for r in fake_github.log] == ["contents", "commits"] * 3 + ["contents"]


def test_the_base_commits_own_baseline_is_distance_zero(fake_github, client):  # noqa: F811
    c = fake_github.linear_history(2)
    store = GitHubStore(client)
    store.save(baseline(c[1]))
    fake_github.log.clear()
    _, info = find_baseline(store, c[1], client.first_parent)
    assert (info.commit, info.distance) == (c[1], 0)
    assert fake_github.requests("GET", r".*/commits/.*") == []


def test_the_walk_is_bounded_and_stops_at_the_root(tmp_path):
    c = [sha(i) for i in range(6)]
    parents = {c[i]: c[i - 1] for i in range(1, 6)} | {c[0]: None}
    store = DirStore(tmp_path)
    store.save(baseline(c[2]))
    assert find_baseline(store, c[5], parents.get, max_depth=3)[1].distance == 3
    assert find_baseline(store, c[5], parents.get, max_depth=2) is None
    empty = DirStore(tmp_path / "empty")
    walked = []
    assert find_baseline(empty, c[5], lambda s: walked.append(s) or parents[s], max_depth=50) is None
    assert walked == c[::-1]  # c5 .. c0, whose parent is None


def test_the_walk_ignores_second_parents(fake_github, client):  # noqa: F811
    a, b = fake_github.linear_history(2)
    side = fake_github.add_commit([a], "feature work")
    merge = fake_github.add_commit([b, side], "merge feature")
    store = GitHubStore(client)
    store.save(baseline(side, 0.1))
    store.save(baseline(a, 0.9))
    found, info = find_baseline(store, merge, client.first_parent)
    assert (info.commit, info.distance) == (a, 2)
    assert found == baseline(a, 0.9)


# --- local history through git ----------------------------------------------------------


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main", *args],
        cwd=cwd, check=True, capture_output=True, text=True,
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path) -> tuple[Path, list[str]]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    path = tmp_path / "repo"
    path.mkdir()
    _git(path, "init", "-q")
    shas = []
    for i in range(4):
        (path / "f.txt").write_text(str(i))
        _git(path, "add", "f.txt")
        _git(path, "commit", "-q", "-m", f"c{i}")
        shas.append(_git(path, "rev-parse", "HEAD"))
    return path, shas


def test_git_first_parent_walks_a_local_repository(repo, tmp_path):
    path, c = repo
    assert git_first_parent(c[3], cwd=path) == c[2]
    assert git_first_parent(c[0], cwd=path) is None
    store = DirStore(tmp_path / "store")
    store.save(baseline(c[1]))
    _, info = find_baseline(store, c[3], lambda s: git_first_parent(s, cwd=path))
    assert (info.commit, info.requested_commit, info.distance) == (c[1], c[3], 2)


def test_git_first_parent_explains_an_unknown_commit(repo):
    path, _ = repo
    with pytest.raises(InputError, match=f"git cannot find commit {sha('nope')}"):
        git_first_parent(sha("nope"), cwd=path)


def test_git_first_parent_explains_a_shallow_clone(repo, tmp_path):
    path, c = repo
    shallow = tmp_path / "shallow"
    _git(tmp_path, "clone", "-q", "--depth", "1", f"file://{path}", str(shallow))
    with pytest.raises(InputError, match="shallow clone.*fetch-depth: 0"):
        git_first_parent(c[3], cwd=shallow)


def test_git_first_parent_without_git_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(InputError, match="the git program was not found.*github baseline store"):
        git_first_parent(sha(1))


def test_ledger_encoding_is_deterministic_and_versioned():
    data = encode_ledger("api", {"b": [None], "a": [1.0, 0.5]})
    assert data == encode_ledger("api", {"a": [1.0, 0.5], "b": [None]})
    assert json.loads(gzip.decompress(data)) == {"schema_version": 1, "gate_id": "api", "entries": {"a": [1.0, 0.5], "b": [None]}}


# --- files another evalgate version wrote -------------------------------------------------------


def _with_newer_keys(value: dict) -> dict:
    """A baseline as a newer evalgate might write it: fields this one does not know, at three depths."""
    value["signature"] = "新しい署名"
    value["provenance"]["runner"] = {"os": "linux"}
    value["results"]["suites"][0]["cases"][0]["판정_근거"] = "새 필드"
    return value


def test_a_baseline_a_newer_evalgate_wrote_is_read_and_its_new_keys_named(tmp_path):
    """Before: "is not an evalgate baseline (signature: Extra inputs are not permitted)", an
    input error for every pull request after the default branch moved to a newer evalgate."""
    from evalgate.reading import read_note
    from evalgate.gate.trends import add_point

    file = tmp_path / baseline_path("default", sha(1))
    file.parent.mkdir(parents=True)
    value = _with_newer_keys(baseline(sha(1)).model_dump(mode="json"))
    file.write_bytes(gzip.compress(json.dumps(value, ensure_ascii=False).encode("utf-8"), mtime=0))
    loaded = DirStore(tmp_path).load(sha(1))
    assert loaded.model_dump() == baseline(sha(1)).model_dump()  # every known field as written
    note = read_note(loaded.results)
    assert note is not None and note.startswith(f"{file}: ignored keys ")
    assert all(k in note for k in ("'signature'", "'provenance.runner'", "'results.suites[0].cases[0].판정_근거'"))

    trend = add_point(None, "default", results(), sha(1), "refs/heads/main", NOW).model_dump(mode="json")
    trend["points"][0]["p90"] = 0.9
    (tmp_path / "trends").mkdir()
    (tmp_path / "trends" / "default.json.gz").write_bytes(gzip.compress(json.dumps(trend).encode("utf-8"), mtime=0))
    stored = DirStore(tmp_path).load_trend("default")
    assert stored is not None and len(stored.points) == 1 and "'points[0].p90'" in (read_note(stored) or "")


@pytest.mark.parametrize("code", ["en", "ko", "ja"])
def test_a_hostile_unknown_key_cannot_drive_the_terminal_in_any_language(tmp_path, cli, code):
    """A results file from a fork names its own keys: one with terminal escapes and a forged
    workflow command is warned about on one line, its control characters taken out."""
    from evalgate import results as results_io

    results_io.write(results(), tmp_path / "current" / "results.json")
    current = json.loads((tmp_path / "current" / "results.json").read_text(encoding="utf-8"))
    current["suites"][0]["x\x1b[2J\x1b]0;pwned\x07\r\n::error::forged"] = 1
    (tmp_path / "current" / "results.json").write_text(json.dumps(current, ensure_ascii=False), encoding="utf-8")
    code_, out, err = cli("compare", "--current", "current/results.json", "--language", code, cwd=tmp_path)
    assert code_ in (0, 1), out + err
    assert "[2J" in err  # the key is named, its escapes taken out
    for text in (out, err):
        assert not any(ord(ch) < 32 and ch != "\n" for ch in text), repr(text)
        assert not any(line.startswith("::") for line in text.splitlines()), text


def test_a_malformed_known_field_of_a_newer_baseline_is_still_an_error(tmp_path):
    file = tmp_path / baseline_path("default", sha(1))
    file.parent.mkdir(parents=True)
    value = _with_newer_keys(baseline(sha(1)).model_dump(mode="json"))
    value["results"]["suites"][0]["cases"][0]["status"] = "GREAT"
    file.write_bytes(gzip.compress(json.dumps(value).encode("utf-8"), mtime=0))
    with pytest.raises(InputError) as e:
        DirStore(tmp_path).load(sha(1))
    assert "is not an evalgate baseline (results.suites.0.cases.0.status: Input should be" in str(e.value)


def test_compare_reads_results_and_a_baseline_of_another_evalgate_version_with_a_warning(tmp_path, cli):
    from evalgate import results as results_io

    results_io.write(results(), tmp_path / "current" / "results.json")
    current = json.loads((tmp_path / "current" / "results.json").read_text(encoding="utf-8"))
    current["suites"][0]["cost_usd"] = 0.25
    (tmp_path / "current" / "results.json").write_text(json.dumps(current, ensure_ascii=False), encoding="utf-8")
    (tmp_path / "base.json").write_text(json.dumps(_with_newer_keys(baseline(sha(1)).model_dump(mode="json")), ensure_ascii=False), encoding="utf-8")
    code, out, err = cli("compare", "--current", "current/results.json", "--baseline", "base.json", cwd=tmp_path)
    assert code == 0, out + err
    warnings = [line for line in err.splitlines() if "which this evalgate does not know" in line]
    assert len(warnings) == 2
    assert warnings[0].startswith("warning: current/results.json: ignored key 'suites[0].cost_usd'")
    assert warnings[1].startswith("warning: base.json: ignored keys 'provenance.runner', 'results.suites[0].cases[0].판정_근거', 'signature',")

    current["suites"][0]["counts"] = "many"  # a known field malformed: the error it always gave
    (tmp_path / "current" / "results.json").write_text(json.dumps(current), encoding="utf-8")
    code, _, err = cli("compare", "--current", "current/results.json", "--baseline", "base.json", cwd=tmp_path)
    assert code == 2 and "suites[0].counts" in err and "cost_usd" not in err
