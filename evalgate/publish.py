"""Publish a verdict on a pull request: one sticky comment and a commit status per context.

The last step of the data flow. Failures to publish never change the verdict and never
crash the run: a read-only token (a fork's pull request) or a GitHub outage becomes a
warning, and the results still reach the job summary and the results file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional

from evalgate.gate import Comparison, Verdict
from evalgate.github import GitHubClient, GitHubError, GitHubForbidden, truncate
from evalgate.i18n import _, mark
from evalgate.reports.markdown import marker

_STATE = {Verdict.PASS: "success", Verdict.INCONCLUSIVE: "success", Verdict.FAIL: "failure", Verdict.ERROR: "error"}


@dataclass
class Published:
    comment_url: Optional[str] = None
    comment_created: bool = False
    statuses: list[tuple[str, str]] = field(default_factory=list)  # (context, state)
    warnings: list[str] = field(default_factory=list)


def status_state(verdict: Verdict, inconclusive: Literal["pass", "fail"] = "pass") -> str:
    if verdict is Verdict.INCONCLUSIVE and inconclusive == "fail":
        return "failure"
    return _STATE[verdict]


# Per-suite statuses (per_suite): at most this many, so no run posts an unbounded number.
MAX_SUITE_STATUSES = 20


def status_description(verdict: Verdict, passed: int, failed: int, regressions: int, rescored: bool = False) -> str:
    """A commit status line (GitHub allows 140 characters).

    It names the verdict, not the state: an INCONCLUSIVE verdict is a success or a failure
    depending on the gate's policy, and the line must not contradict either. Its causes
    (a drop that is not significant, cases not evaluated) are too varied for one line, so
    it points to the report. In the report's language (the status *context* stays as configured).
    """
    if regressions:
        detail = _("{passed} passed, {failed} failed, {regressed} regressed", passed=passed, failed=failed, regressed=regressions)
    else:
        detail = _("{passed} passed, {failed} failed", passed=passed, failed=failed)
    outcome = _(_OUTCOME[verdict])
    if rescored:
        return truncate(_("evalgate {outcome} (fork's outputs, re-scored): {detail}", outcome=outcome, detail=detail), 140)
    return truncate(_("evalgate {outcome}: {detail}", outcome=outcome, detail=detail), 140)


_OUTCOME = {  # the verdict in a status line's words (translated where used)
    Verdict.PASS: mark("passed"),
    Verdict.INCONCLUSIVE: mark("inconclusive (see the report)"),
    Verdict.FAIL: mark("failed"),
    Verdict.ERROR: mark("could not compare"),
}


def publish(
    client: GitHubClient,
    comparison: Comparison,
    comment: str,
    *,
    pr_number: Optional[int],
    head_sha: str,
    gate_id: str = "evalgate",
    context: str = "evalgate",
    per_suite: bool = False,
    target_url: Optional[str] = None,
    counts: tuple[int, int] = (0, 0),
    inconclusive: Literal["pass", "fail"] = "pass",
    post_comment: bool = True,
    rescored: bool = False,
) -> Published:
    """Post or update the gate's comment (when there is a PR) and set the status(es) on the head commit.

    `head_sha` must be the pull request's head, not the merge commit GitHub tests on.
    With `per_suite`, one status per suite as `<context>/<suite>`, plus the overall one.
    """
    out = Published()
    if post_comment and pr_number is not None:
        try:
            out.comment_url, out.comment_created = client.upsert_comment(pr_number, comment, marker(gate_id))
        except GitHubForbidden:
            out.warnings.append(_("the token may not comment on this pull request (a fork's read-only token?); the report is in the job summary"))
        except GitHubError as e:
            out.warnings.append(_("could not post the PR comment: {error}", error=e))

    regressions = sum(1 for s in comparison.suites for c in s.changes if c.kind in ("regressed", "broken_stable"))
    targets = [(context, comparison.verdict, status_description(comparison.verdict, *counts, regressions, rescored))]
    if per_suite:
        for suite in comparison.suites[:MAX_SUITE_STATUSES]:
            reason = suite.reasons[0] if suite.reasons else _("no change")
            targets.append((f"{context}/{suite.name}", suite.verdict, truncate(f"{suite.verdict.value}: {reason}", 140)))
    for ctx, verdict, description in targets:
        state = status_state(verdict, inconclusive)
        try:
            client.set_status(head_sha, state, ctx, description, target_url)
            out.statuses.append((ctx, state))
        except GitHubForbidden:
            out.warnings.append(_("the token may not set commit statuses ({context}); the verdict is in the job summary and the exit code", context=ctx))
            break
        except GitHubError as e:
            out.warnings.append(_("could not set the commit status {context}: {error}", context=ctx, error=e))
    return out
