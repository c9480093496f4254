"""Publishing a verdict through the real client to the fake GitHub API: comment, statuses, forks."""

from __future__ import annotations

import pytest

from evalgate.gate import Comparison, SuiteComparison, Verdict
from evalgate.github import GitHubClient
from evalgate.publish import publish, status_description
from evalgate.reports.markdown import marker
from fake_github import fake_github  # noqa: F401  (fixture)

PR = 7


def _comparison(verdict: Verdict, suites=("home",)) -> Comparison:
    return Comparison(
        verdict=verdict,
        reasons=[],
        suites=[SuiteComparison(name=n, verdict=verdict, reasons=[f"{n}: reason"], criteria=[], changes=[], added=[], removed=[], changed=[], skipped_criteria=[]) for n in suites],
        baseline=None,
        config_changed=False,
        mode="absolute",
    )


@pytest.fixture
def client(fake_github):  # noqa: F811
    return GitHubClient(fake_github.url, fake_github.repository, fake_github.token, sleep=lambda s: None)


@pytest.fixture
def head(fake_github):  # noqa: F811
    return fake_github.add_commit(message="PR head")


def test_second_run_edits_the_first_comment_and_status_lands_on_head(fake_github, client, head):  # noqa: F811
    first = publish(client, _comparison(Verdict.FAIL), f"{marker('evalgate')}\nfirst", pr_number=PR, head_sha=head, counts=(3, 1))
    second = publish(client, _comparison(Verdict.PASS), f"{marker('evalgate')}\nsecond", pr_number=PR, head_sha=head, counts=(4, 0))
    assert first.comment_created and not second.comment_created
    assert first.comment_url == second.comment_url
    assert [c["body"] for c in fake_github.issue_comments(PR)] == [f"{marker('evalgate')}\nsecond"]
    states = [(s["context"], s["state"], s["description"]) for s in fake_github.statuses[head]]
    assert states == [
        ("evalgate", "failure", "evalgate failed: 3 passed, 1 failed"),
        ("evalgate", "success", "evalgate passed: 4 passed, 0 failed"),
    ]
    assert first.warnings == second.warnings == []


def test_two_gates_keep_two_comments(fake_github, client, head):  # noqa: F811
    for gate in ("agent-a", "agent-b"):
        for run in (1, 2):
            publish(client, _comparison(Verdict.PASS), f"{marker(gate)}\n{gate} run {run}", pr_number=PR, head_sha=head, gate_id=gate, context=f"evalgate/{gate}")
    assert sorted(c["body"] for c in fake_github.issue_comments(PR)) == [f"{marker('agent-a')}\nagent-a run 2", f"{marker('agent-b')}\nagent-b run 2"]


def test_per_suite_statuses(fake_github, client, head):  # noqa: F811
    out = publish(client, _comparison(Verdict.FAIL, suites=("home", "서울")), "x", pr_number=None, head_sha=head, per_suite=True, target_url="https://ci.example/run/1")
    assert out.statuses == [("evalgate", "failure"), ("evalgate/home", "failure"), ("evalgate/서울", "failure")]
    assert {s["target_url"] for s in fake_github.statuses[head]} == {"https://ci.example/run/1"}
    assert not fake_github.issue_comments(PR)  # no PR: no comment


def test_fork_token_degrades_to_warnings(fake_github, client, head):  # noqa: F811
    fake_github.read_only = True
    out = publish(client, _comparison(Verdict.FAIL), "report", pr_number=PR, head_sha=head)
    assert out.comment_url is None and out.statuses == []
    assert len(out.warnings) == 2
    assert "read-only token" in out.warnings[0] and "commit statuses" in out.warnings[1]
    assert all(fake_github.token not in w for w in out.warnings)


def test_outage_is_a_warning_never_a_crash(fake_github, client, head):  # noqa: F811
    fake_github.fail(r".*/comments", 502, times=50)
    out = publish(client, _comparison(Verdict.PASS), "report", pr_number=PR, head_sha=head)
    assert out.comment_url is None
    assert out.warnings and "could not post the PR comment" in out.warnings[0]
    assert out.statuses == [("evalgate", "success")]


def test_status_description_fits_and_says_the_verdict():
    # The line names the verdict and its cause, never "passed": the state may be a failure.
    assert status_description(Verdict.INCONCLUSIVE, 10, 0, 0) == "evalgate inconclusive (see the report): 10 passed, 0 failed"
    assert status_description(Verdict.FAIL, 1, 2, 3) == "evalgate failed: 1 passed, 2 failed, 3 regressed"
    assert len(status_description(Verdict.ERROR, 10**60, 10**60, 10**60)) <= 140
