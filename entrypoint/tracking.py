"""The nightly run's tracking issue: one open issue per gate, found by a hidden marker, kept current.

Only an issue written by the token's own identity can be the tracking issue (see
`GitHubClient.is_ours`). On a failing nightly run the open tracking issue's body is replaced with the latest report
(or the issue is opened); when a later nightly run passes, the issue gets a comment saying
so and is closed. A closed issue is left alone: the next regression opens a new one, so
each incident keeps its own history.

The issue calls are `GitHubClient` methods, so they share its retries and token handling.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional
from urllib.parse import quote

from evalgate.github import GitHubClient
from evalgate.i18n import _


def tracking_marker(gate_id: str) -> str:
    return f"<!-- evalgate:nightly={quote(gate_id, safe='._-')} -->"


def tracking_title(gate_id: str) -> str:
    return _("evalgate: nightly regression ({gate})", gate=gate_id)  # in the report's language; the issue is found by its marker


@dataclass
class Tracked:
    action: str  # "opened" | "updated" | "closed" | "none"
    url: Optional[str] = None
    number: Optional[int] = None


def find_tracking_issue(client: GitHubClient, gate_id: str) -> Optional[dict[str, Any]]:
    """The open issue evalgate opened for the gate: written by the token's identity, the
    marker its first line (`GitHubClient.is_ours`; pull requests are not issues). An issue
    someone else opened with the marker is not it."""
    marker = tracking_marker(gate_id)
    for issue in client.iter_open_issues():
        if "pull_request" not in issue and client.is_ours(issue, marker):
            return issue
    return None


def track(client: GitHubClient, gate_id: str, failing: bool, report: str, sha: str) -> Tracked:
    """Open or update the tracking issue when `failing`; close it when the gate passes again."""
    marker = tracking_marker(gate_id)
    found = find_tracking_issue(client, gate_id)
    if failing:
        body = f"{marker}\n{report}"
        if found is None:
            issue = client.create_issue(tracking_title(gate_id), body)
            return Tracked("opened", issue.get("html_url"), issue.get("number"))
        if found.get("body") != body:
            client.edit_issue(int(found["number"]), body=body)
        return Tracked("updated", found.get("html_url"), found.get("number"))
    if found is None:
        return Tracked("none")
    number = int(found["number"])
    client.comment_on_issue(number, _("The nightly run passes again at {sha}; closing this issue.", sha=sha[:12]))
    client.edit_issue(number, state="closed", state_reason="completed")
    return Tracked("closed", found.get("html_url"), number)
