"""The GitHub client against the fake GitHub API: comments, statuses, data-branch files, retries, errors."""

from __future__ import annotations

import base64
import logging
import socket

import pytest

from evalgate.reports.markdown import marker as gate_marker
from evalgate.github import (
    GitHubClient,
    GitHubConflict,
    GitHubError,
    GitHubForbidden,
    GitHubRateLimited,
    RetryPolicy,
    truncate,
)
from fake_github import BOT, FakeGitHub, fake_github  # noqa: F401  (fixture)

PR = 5
COMMENTS = rf"/repos/octo/hello/issues/{PR}/comments"


@pytest.fixture
def waits() -> list[float]:
    return []


@pytest.fixture
def client(fake_github, waits) -> GitHubClient:  # noqa: F811
    # jitter 0.5 makes the backoff exact: backoff * 2^(n-1) * 0.75
    return GitHubClient(fake_github.url, fake_github.repository, fake_github.token, sleep=waits.append, jitter=lambda: 0.5)


def _no_token_anywhere(fake: FakeGitHub, *texts: str) -> None:
    for text in texts:
        assert fake.token not in text


# --- requests on the wire ---------------------------------------------------------------


def test_every_request_carries_the_documented_headers(fake_github, client):  # noqa: F811
    client.upsert_comment(PR, "hello", gate_marker("default"))
    client.set_status(fake_github.refs["refs/heads/main"], "success", "evalgate", "ok")
    assert len(fake_github.log) == 3
    for r in fake_github.log:
        assert r.headers["authorization"] == f"Bearer {fake_github.token}"
        assert r.headers["accept"] == "application/vnd.github+json"
        assert r.headers["x-github-api-version"] == "2022-11-28"


def test_comments_are_read_across_all_pages_following_link_headers(fake_github, client):  # noqa: F811
    fake_github.max_per_page = 2
    for i in range(5):
        fake_github.add_comment(PR, f"comment {i}")
    fake_github.add_comment(PR + 1, "another PR")

    bodies = [c["body"] for c in client.iter_issue_comments(PR)]

    assert bodies == [f"comment {i}" for i in range(5)]
    gets = fake_github.requests("GET", COMMENTS)
    # The first page is asked with per_page=100; the next ones come from the Link header
    # (GitHub's /repositories/{id}/... form, which the fake maps back).
    assert [r.query for r in gets] == [
        {"per_page": "100"},
        {"per_page": "2", "page": "2"},
        {"per_page": "2", "page": "3"},
    ]


def test_per_page_is_sent(fake_github, client):  # noqa: F811
    for i in range(4):
        fake_github.add_comment(PR, f"comment {i}")
    assert len(list(client.iter_issue_comments(PR, per_page=3))) == 4
    assert [r.query.get("page", "1") for r in fake_github.requests("GET", COMMENTS)] == ["1", "2"]


def test_a_next_link_to_another_host_is_not_followed(fake_github, client):  # noqa: F811
    fake_github.max_per_page = 1
    fake_github.link_base = "http://evil.example"
    fake_github.add_comment(PR, "a")
    fake_github.add_comment(PR, "b")
    with pytest.raises(GitHubError, match="another host") as e:
        list(client.iter_issue_comments(PR))
    _no_token_anywhere(fake_github, str(e.value))
    assert len(fake_github.log) == 1


# --- the sticky comment -----------------------------------------------------------------


def test_a_second_upsert_edits_the_first_comment_even_on_page_3(fake_github, client):  # noqa: F811
    fake_github.max_per_page = 2
    marker = gate_marker("default")
    for i in range(4):  # pages 1 and 2
        fake_github.add_comment(PR, f"chatter {i}")
    url, created = client.upsert_comment(PR, f"{marker}\nfirst run", marker)  # page 3
    assert created
    first = fake_github.issue_comments(PR)[-1]
    assert url == first["html_url"]
    for i in range(3):  # page 3 (after ours) and page 4
        fake_github.add_comment(PR, f"later {i}")
    fake_github.log.clear()

    url2, created2 = client.upsert_comment(PR, f"{marker}\nsecond run", marker)

    assert (url2, created2) == (url, False)
    assert [r.query.get("page", "1") for r in fake_github.requests("GET", COMMENTS)] == ["1", "2", "3", "4"]
    assert fake_github.requests("POST") == []
    [patch] = fake_github.requests("PATCH")
    assert patch.path == f"/repos/octo/hello/issues/comments/{first['id']}"
    assert patch.body == {"body": f"{marker}\nsecond run"}
    assert len(fake_github.issue_comments(PR)) == 8
    assert fake_github.comments[first["id"]]["body"] == f"{marker}\nsecond run"


def test_the_newest_marked_comment_is_the_one_edited(fake_github, client):  # noqa: F811
    marker = gate_marker("default")
    old = fake_github.add_comment(PR, f"{marker}\nold", user=BOT)  # both evalgate's own
    new = fake_github.add_comment(PR, f"{marker}\nnewer", user=BOT)
    client.upsert_comment(PR, "third", marker)
    assert fake_github.comments[old["id"]]["body"] == f"{marker}\nold"
    assert fake_github.comments[new["id"]]["body"] == f"{marker}\nthird"  # marker added when missing


def test_two_gate_ids_keep_two_comments(fake_github, client):  # noqa: F811
    for run in ("one", "two"):
        client.upsert_comment(PR, f"{gate_marker('api')}\napi {run}", gate_marker("api"))
        client.upsert_comment(PR, f"{gate_marker('api-v2')}\nv2 {run}", gate_marker("api-v2"))
    bodies = sorted(c["body"] for c in fake_github.issue_comments(PR))
    assert bodies == [f"{gate_marker('api')}\napi two", f"{gate_marker('api-v2')}\nv2 two"]
    assert len(fake_github.requests("POST", COMMENTS)) == 2
    assert len(fake_github.requests("PATCH")) == 2


def test_an_unchanged_comment_is_not_rewritten(fake_github, client):  # noqa: F811
    marker = gate_marker("default")
    client.upsert_comment(PR, f"{marker}\nsame", marker)
    fake_github.log.clear()
    assert client.upsert_comment(PR, f"{marker}\nsame", marker)[1] is False
    assert [(r.method, r.path) for r in fake_github.log] == [("GET", COMMENTS), ("GET", "/user")]  # who we are: asked once


def test_a_comment_over_githubs_limit_is_refused_before_sending(fake_github, client):  # noqa: F811
    marker = gate_marker("default")
    with pytest.raises(ValueError, match="65536"):
        client.upsert_comment(PR, marker + "x" * 65_536, marker)
    assert fake_github.log == []


# --- commit status ----------------------------------------------------------------------


def test_the_status_lands_on_the_head_sha_with_a_140_character_description(fake_github, client):  # noqa: F811
    head = fake_github.add_commit(message="PR head")
    merge = fake_github.add_commit([fake_github.refs["refs/heads/main"], head], "merge commit")
    description = "회귀 " + "日本語の説明" * 40  # far over 140 characters

    status = client.set_status(head, "failure", "evalgate/api", description, "https://github.com/octo/hello/actions/runs/1")

    assert merge not in fake_github.statuses
    [posted] = fake_github.statuses[head]
    assert posted == status
    assert posted["state"] == "failure"
    assert posted["context"] == "evalgate/api"
    assert posted["target_url"] == "https://github.com/octo/hello/actions/runs/1"
    assert len(posted["description"]) == 140
    assert posted["description"].startswith("회귀 日本語の説明")
    assert posted["description"].endswith("…")


@pytest.mark.parametrize(
    "text, limit, expected",
    [
        ("short", 140, "short"),
        ("가" * 140, 140, "가" * 140),
        ("가" * 141, 140, "가" * 139 + "…"),
        ("a  b\n c", 140, "a b c"),  # one line
        ("word " * 3, 6, "word…"),  # no dangling space before the ellipsis
        ("😀" * 10, 5, "😀😀😀😀…"),
    ],
)
def test_truncate_counts_characters(text, limit, expected):
    assert truncate(text, limit) == expected
    assert len(truncate(text, limit)) <= limit


def test_a_bad_status_state_is_refused(client):
    with pytest.raises(ValueError, match="state"):
        client.set_status("a" * 40, "passed")


# --- retries ----------------------------------------------------------------------------


def test_a_502_is_retried_with_exponential_backoff_then_succeeds(fake_github, client, waits, caplog):  # noqa: F811
    fake_github.add_comment(PR, "hi")
    fake_github.fail(COMMENTS, 502, times=2)
    with caplog.at_level(logging.DEBUG):
        assert [c["body"] for c in client.iter_issue_comments(PR)] == ["hi"]
    assert [r.status for r in fake_github.log] == [502, 502, 200]
    assert waits == [0.75, 1.5]
    assert "HTTP 502; retrying" in caplog.text
    _no_token_anywhere(fake_github, caplog.text)


@pytest.mark.parametrize("status", [429, 403])
def test_retry_after_is_honoured(fake_github, client, waits, status):  # noqa: F811
    fake_github.fail(COMMENTS, status, headers={"retry-after": "7"}, body={"message": "You have exceeded a secondary rate limit."})
    client.upsert_comment(PR, "x", gate_marker("default"))
    assert waits == [7.0]
    assert len(fake_github.requests("GET", COMMENTS)) == 2


def test_ratelimit_reset_is_honoured(fake_github, waits):  # noqa: F811
    client = GitHubClient(fake_github.url, fake_github.repository, fake_github.token, sleep=waits.append, clock=lambda: 1_000.0)
    fake_github.fail(
        COMMENTS,
        403,
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1012", "x-ratelimit-limit": "1000"},
        body={"message": "API rate limit exceeded for installation ID 1."},
    )
    assert list(client.iter_issue_comments(PR)) == []
    assert waits == [13.0]  # until the reset second has passed


def test_a_rate_limit_without_a_time_waits_a_minute(fake_github, client, waits):  # noqa: F811
    fake_github.fail(COMMENTS, 403, body={"message": "You have exceeded a secondary rate limit."})
    list(client.iter_issue_comments(PR))
    assert waits == [60.0]


def test_a_reset_beyond_the_cap_fails_at_once(fake_github, waits):  # noqa: F811
    client = GitHubClient(fake_github.url, fake_github.repository, fake_github.token, sleep=waits.append, clock=lambda: 1_000.0)
    fake_github.fail(COMMENTS, 429, headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": "4600"})
    with pytest.raises(GitHubRateLimited, match=r"GET /repos/octo/hello/issues/5/comments\?per_page=100.*3601 s"):
        list(client.iter_issue_comments(PR))
    assert waits == []


def test_attempts_are_bounded_and_the_error_names_the_endpoint(fake_github, client, waits):  # noqa: F811
    fake_github.fail(COMMENTS, 500, times=100, body={"message": f"oops, token {fake_github.token} leaked by the server"})
    with pytest.raises(GitHubError) as e:
        list(client.iter_issue_comments(PR))
    assert str(e.value).startswith("GitHub API GET /repos/octo/hello/issues/5/comments?per_page=100: HTTP 500 after 5 attempts")
    assert "***" in str(e.value)
    _no_token_anywhere(fake_github, str(e.value), repr(e.value))
    assert len(fake_github.log) == 5
    assert waits == [0.75, 1.5, 3.0, 6.0]


def test_backoff_is_capped(fake_github, waits):  # noqa: F811
    client = GitHubClient(
        fake_github.url, fake_github.repository, fake_github.token,
        sleep=waits.append, jitter=lambda: 1.0, retry=RetryPolicy(attempts=4, backoff=40, max_wait=60),
    )
    fake_github.fail(COMMENTS, 503, times=3)
    list(client.iter_issue_comments(PR))
    assert waits == [40.0, 60.0, 60.0]


def test_a_timeout_is_retried(fake_github, client, waits):  # noqa: F811
    client.timeout = 0.2
    fake_github.fail(COMMENTS, 200, body=[], delay=1.0)
    assert list(client.iter_issue_comments(PR)) == []
    assert waits == [0.75]
    assert len(fake_github.log) == 2


def test_no_server_is_an_error_naming_the_endpoint(waits):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens here
    client = GitHubClient(f"http://127.0.0.1:{port}", "octo/hello", "ghs_secret_value", sleep=waits.append,
                          retry=RetryPolicy(attempts=2))
    with pytest.raises(GitHubError, match=r"GitHub API POST /repos/octo/hello/statuses/a{40}: no answer after 2 attempts") as e:
        client.set_status("a" * 40, "success")
    assert "ghs_secret_value" not in str(e.value)
    assert len(waits) == 1


# --- permissions and the token -----------------------------------------------------------


def test_a_fork_token_gets_github_forbidden_without_retries_and_the_token_stays_hidden(
    fake_github, client, waits, caplog  # noqa: F811
):
    fake_github.read_only = True
    head = fake_github.refs["refs/heads/main"]
    calls = [
        lambda: client.upsert_comment(PR, "report", gate_marker("default")),
        lambda: client.set_status(head, "failure", "evalgate", "1 regression"),
        lambda: client.put_file("ledger/default.json.gz", b"x", branch="main", message="m", sha=None),
    ]
    with caplog.at_level(logging.DEBUG):
        for call in calls:
            with pytest.raises(GitHubForbidden) as e:
                call()
            assert "HTTP 403: Resource not accessible by integration" in str(e.value)
            assert "fork" in str(e.value)
            assert e.value.status == 403
            _no_token_anywhere(fake_github, str(e.value), repr(e.value), repr(e.value.args))
    _no_token_anywhere(fake_github, caplog.text)
    assert waits == []
    assert [r.method for r in fake_github.log] == ["GET", "POST", "POST", "PUT"]
    assert fake_github.issue_comments(PR) == [] and fake_github.statuses == {}


def test_the_token_is_hidden_from_repr_and_str(fake_github, client):  # noqa: F811
    for text in (repr(client), str(client), repr(client._session.auth), repr(client._session.headers)):
        _no_token_anywhere(fake_github, text)
    assert "token=***" in repr(client)


def test_bad_credentials_are_reported_without_the_token(fake_github, waits):  # noqa: F811
    client = GitHubClient(fake_github.url, fake_github.repository, "ghs_wrong_token_123", sleep=waits.append)
    with pytest.raises(GitHubError, match="HTTP 401: Bad credentials") as e:
        list(client.iter_issue_comments(PR))
    assert "ghs_wrong_token_123" not in str(e.value)
    assert waits == []


def test_explicit_values_are_required():
    with pytest.raises(ValueError, match="owner/name"):
        GitHubClient("https://api.github.com", "hello", "t")
    with pytest.raises(ValueError, match="token"):
        GitHubClient("https://api.github.com", "octo/hello", "")


def test_an_enterprise_server_api_prefix_is_kept():
    fake = FakeGitHub(prefix="/api/v3").start()
    try:
        fake.max_per_page = 1
        fake.add_comment(PR, "a")
        fake.add_comment(PR, "b")
        client = GitHubClient(fake.url, fake.repository, fake.token)
        assert fake.url.endswith("/api/v3")
        assert [c["body"] for c in client.iter_issue_comments(PR)] == ["a", "b"]
        assert len(fake.log) == 2
    finally:
        fake.stop()


# --- data branch and history -------------------------------------------------------------


def test_files_are_read_and_written_with_blob_shas(fake_github, client):  # noqa: F811
    assert client.get_file("ledger/x.json.gz", ref="main") is None
    assert client.get_file("ledger/x.json.gz", ref="no-such-branch") is None
    sha = client.put_file("ledger/x.json.gz", b"\x1f\x8b binary", branch="main", message="add", sha=None)
    got = client.get_file("ledger/x.json.gz", ref="main")
    assert (got.sha, got.content) == (sha, b"\x1f\x8b binary")
    [put] = fake_github.requests("PUT")
    assert put.body == {"message": "add", "content": base64.b64encode(b"\x1f\x8b binary").decode(), "branch": "main"}

    sha2 = client.put_file("ledger/x.json.gz", b"v2", branch="main", message="update", sha=sha)
    assert fake_github.read_file("main", "ledger/x.json.gz") == b"v2"
    with pytest.raises(GitHubConflict, match="HTTP 409"):
        client.put_file("ledger/x.json.gz", b"v3", branch="main", message="stale", sha=sha)
    with pytest.raises(GitHubConflict, match="HTTP 422"):
        client.put_file("ledger/x.json.gz", b"v3", branch="main", message="no sha", sha=None)
    assert client.get_file("ledger/x.json.gz", ref="main").sha == sha2


def test_a_file_over_the_contents_limit_is_read_through_the_blob_api(fake_github, client):  # noqa: F811
    fake_github.large_file_limit = 10
    fake_github.write_file("main", "big.bin", bytes(range(256)) * 4)
    assert client.get_file("big.bin", ref="main").content == bytes(range(256)) * 4
    assert [r.path.split("/")[4] for r in fake_github.log] == ["contents", "git"]


def test_an_orphan_branch_is_created_once(fake_github, client):  # noqa: F811
    assert client.branch_head("data") is None
    assert client.create_orphan_branch("data", {"README.md": "hi"}, "create") is True
    head = client.branch_head("data")
    assert fake_github.commits[head]["parents"] == []
    assert fake_github.read_file("data", "README.md") == b"hi"
    assert client.create_orphan_branch("data", {"README.md": "again"}, "create") is False
    assert client.branch_head("data") == head


def test_first_parent_follows_the_first_parent(fake_github, client):  # noqa: F811
    a, b = fake_github.linear_history(2)
    side = fake_github.add_commit([a], "side")
    merge = fake_github.add_commit([b, side], "merge")
    assert client.first_parent(merge) == b
    assert client.first_parent(b) == a
    assert client.first_parent(a) is None
    assert fake_github.requests("GET")[0].path == f"/repos/octo/hello/commits/{merge}"


def test_a_quoted_marker_in_someone_elses_comment_is_not_ours(client, fake_github):  # noqa: F811
    marker = gate_marker("default")
    fake_github.add_comment(PR, f"> {marker}\nquoting the bot", user={"login": "someone"})
    url, created = client.upsert_comment(PR, "report", marker)
    assert created
    bodies = [c["body"] for c in client.iter_issue_comments(PR)]
    assert bodies == [f"> {marker}\nquoting the bot", f"{marker}\nreport"]


# --- whose comment it is (issue 26) --------------------------------------------------------


def test_a_comment_starting_with_the_marker_by_someone_else_is_not_ours(client, fake_github):  # noqa: F811
    marker = gate_marker("default")
    planted = fake_github.add_comment(PR, f"{marker}\nPASS", user={"login": "mallory", "id": 666, "type": "User"})
    url, created = client.upsert_comment(PR, "report", marker)
    assert created and fake_github.comments[planted["id"]]["body"] == f"{marker}\nPASS"
    assert client.identity() == "github-actions[bot]"  # GET /user answered 403 to the workflow token


def test_the_marker_must_be_the_whole_first_line(client, fake_github):  # noqa: F811
    marker = gate_marker("default")
    other = fake_github.add_comment(PR, f"{marker} but not alone\nx", user=BOT)
    assert client.upsert_comment(PR, "report", marker)[1] is True
    assert fake_github.comments[other["id"]]["body"] == f"{marker} but not alone\nx"


def test_a_personal_tokens_identity_comes_from_get_user(fake_github):  # noqa: F811
    fake_github.as_user("octocat")
    client = GitHubClient(fake_github.url, fake_github.repository, fake_github.token)
    assert client.identity() == "octocat"
    assert client.identity() == "octocat" and len(fake_github.requests("GET", "/user")) == 1


def test_a_given_identity_is_not_looked_up(fake_github):  # noqa: F811
    client = GitHubClient(fake_github.url, fake_github.repository, fake_github.token, identity="my-app[bot]")
    assert client.identity() == "my-app[bot]" and fake_github.log == []
