"""The nightly run's tracking issue: one open issue per gate, found by a hidden marker, kept current.

On a failing nightly run the open tracking issue's body is replaced with the latest report
(or the issue is opened); when a later nightly run passes, the issue gets a comment saying
so and is closed. A closed issue is left alone: the next regression opens a new one, so
each incident keeps its own history.

The issue calls go through `GitHubClient`'s one request path (`_send`), so they share its
retries and token handling; they belong in `GitHubClient` once a second caller needs them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Optional
from urllib.parse import quote

from evalgate.github import GitHubClient


def tracking_marker(gate_id: str) -> str:
    return f"<!-- evalgate:nightly={quote(gate_id, safe='._-')} -->"


def tracking_title(gate_id: str) -> str:
    return f"evalgate: nightly regression ({gate_id})"


@dataclass
class Tracked:
    action: str  # "opened" | "updated" | "closed" | "none"
    url: Optional[str] = None
    number: Optional[int] = None


def _open_issues(client: GitHubClient) -> Iterator[dict[str, Any]]:
    url: Optional[str] = client._repo_path("issues")
    params: Optional[dict[str, Any]] = {"state": "open", "per_page": 100}
    while url:
        response = client._send("GET", url, params=params)
        yield from response.json()
        url = client._next_page(response)
        params = None


def find_tracking_issue(client: GitHubClient, gate_id: str) -> Optional[dict[str, Any]]:
    """The open issue whose body starts with the gate's marker (pull requests are not issues)."""
    marker = tracking_marker(gate_id)
    for issue in _open_issues(client):
        if "pull_request" not in issue and (issue.get("body") or "").startswith(marker):
            return issue
    return None


def track(client: GitHubClient, gate_id: str, failing: bool, report: str, sha: str) -> Tracked:
    """Open or update the tracking issue when `failing`; close it when the gate passes again."""
    marker = tracking_marker(gate_id)
    found = find_tracking_issue(client, gate_id)
    if failing:
        body = f"{marker}\n{report}"
        if found is None:
            issue = client._send(
                "POST", client._repo_path("issues"), json={"title": tracking_title(gate_id), "body": body}
            ).json()
            return Tracked("opened", issue.get("html_url"), issue.get("number"))
        if found.get("body") != body:
            client._send("PATCH", client._repo_path(f"issues/{int(found['number'])}"), json={"body": body})
        return Tracked("updated", found.get("html_url"), found.get("number"))
    if found is None:
        return Tracked("none")
    number = int(found["number"])
    client._send(
        "POST",
        client._repo_path(f"issues/{number}/comments"),
        json={"body": f"The nightly run passes again at {sha[:12]}; closing this issue."},
    )
    client._send("PATCH", client._repo_path(f"issues/{number}"), json={"state": "closed", "state_reason": "completed"})
    return Tracked("closed", found.get("html_url"), number)
