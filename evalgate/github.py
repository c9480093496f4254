"""A small GitHub REST client: the PR comment, the commit status and the baseline data branch.

Built from explicit values (API URL, "owner/name", token); it never reads the environment,
which is the entrypoint's job. The token lives only in the request's Authorization header:
it is hidden from `repr`, and scrubbed from every message this module raises or logs.
One place (`GitHubClient._send`) decides what is retried and how long to wait.
"""

from __future__ import annotations

import base64
import email.utils
import logging
import random
import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional
from urllib.parse import quote, urlsplit

import requests

log = logging.getLogger(__name__)

API_VERSION = "2022-11-28"
# Who a workflow's GITHUB_TOKEN writes as. `GET /user` answers 403 to that token (and to a
# GitHub App's installation token), so it cannot be asked; a personal token's user can be.
ACTIONS_BOT = "github-actions[bot]"
COMMENT_LIMIT = 65_536  # characters in an issue comment body
STATUS_DESCRIPTION_LIMIT = 140  # characters in a commit status description
STATUS_STATES = frozenset({"success", "failure", "error", "pending"})

_SHA = re.compile(r"^[0-9a-fA-F]{7,64}$")
_FORBIDDEN_HINT = (
    "The token may not write here: a pull request from a fork gets a read-only token. "
    "Otherwise grant the workflow the permission this call needs "
    "(pull-requests: write, statuses: write or contents: write)."
)


class GitHubError(Exception):
    """A GitHub API call failed; the message names the endpoint, never the token."""

    def __init__(self, message: str, *, status: Optional[int] = None, endpoint: Optional[str] = None):
        super().__init__(message)
        self.status = status
        self.endpoint = endpoint


class GitHubForbidden(GitHubError):
    """403 that is not a rate limit: the token may not do this (a fork PR's read-only token)."""


class GitHubNotFound(GitHubError):
    """404."""


class GitHubConflict(GitHubError):
    """A write found the thing changed under us (stale blob sha, ref already exists): re-read, retry."""


class GitHubRateLimited(GitHubError):
    """Still rate limited after the retries, or the limit resets later than we are willing to wait."""


@dataclass(frozen=True)
class RetryPolicy:
    """What `GitHubClient` retries: 5xx, 429, rate-limited 403, and network errors."""

    attempts: int = 5  # total tries per request, the first included
    backoff: float = 1.0  # seconds before the first retry; doubled for each next one, with jitter
    max_wait: float = 60.0  # never sleep longer than this; a later rate-limit reset is an error


@dataclass(frozen=True)
class RepoFile:
    path: str
    sha: str  # blob sha: the optimistic-concurrency token for replacing the file
    content: bytes


class _BearerAuth(requests.auth.AuthBase):
    """Adds the token at send time, so it is on no object a caller might print."""

    def __init__(self, token: str):
        self._token = token

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        r.headers["Authorization"] = f"Bearer {self._token}"
        return r

    def __repr__(self) -> str:
        return "<bearer token ***>"


class GitHubClient:
    """GitHub REST API calls for one repository."""

    def __init__(
        self,
        api_url: str,
        repository: str,
        token: str,
        *,
        timeout: float = 30.0,
        retry: RetryPolicy = RetryPolicy(),
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        jitter: Callable[[], float] = random.random,
        session: Optional[requests.Session] = None,
        identity: Optional[str] = None,
    ):
        if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repository or ""):
            raise ValueError(f"repository must look like 'owner/name', got {repository!r}")
        if not token:
            raise ValueError("a GitHub token is required")
        self.api_url = api_url.rstrip("/")
        self.repository = repository
        self.timeout = timeout
        self.retry = retry
        self._sleep = sleep
        self._clock = clock
        self._jitter = jitter
        self._token = token
        self._session = session or requests.Session()
        self._session.auth = _BearerAuth(token)
        self._session.headers.update(
            {
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": API_VERSION,
                "User-Agent": "evalgate",
            }
        )
        origin = urlsplit(self.api_url)
        self._origin = (origin.scheme, origin.netloc)
        self._identity = identity.strip() if identity and identity.strip() else None

    def __repr__(self) -> str:
        return f"GitHubClient(api_url={self.api_url!r}, repository={self.repository!r}, token=***)"

    __str__ = __repr__

    # --- who we are ----------------------------------------------------------------

    def identity(self) -> str:
        """The login this token writes as: comments and issues are evalgate's only when this
        login wrote them. Given at construction, or found once: `GET /user` for a personal
        token; the Actions bot when the token may not read it (GITHUB_TOKEN, an app's token:
        an app's bot login must then be given)."""
        if self._identity is None:
            try:
                login = self._send("GET", f"{self.api_url}/user").json().get("login")
            except (GitHubForbidden, GitHubNotFound):
                login = None
            self._identity = login if isinstance(login, str) and login else ACTIONS_BOT
        return self._identity

    def is_ours(self, item: dict[str, Any], marker: str) -> bool:
        """Whether a comment or issue is evalgate's: written by this token's identity, with
        `marker` as its whole first line. Anyone can type the marker; nobody else can write
        as the token's identity (the `[bot]` suffix is not allowed in a user's login)."""
        user = item.get("user")
        login = user.get("login") if isinstance(user, dict) else None
        if not isinstance(login, str) or login.casefold() != self.identity().casefold():
            return False
        first = (item.get("body") or "").split("\n", 1)[0]
        return first.rstrip("\r") == marker

    # --- issue comments ------------------------------------------------------------

    def iter_issue_comments(self, number: int, *, per_page: int = 100) -> Iterator[dict[str, Any]]:
        """Every comment on an issue or pull request, oldest first, across all pages."""
        return self._pages(f"issues/{int(number)}/comments", {"per_page": per_page})

    def iter_open_issues(self, *, per_page: int = 100) -> Iterator[dict[str, Any]]:
        """Every open issue (GitHub lists pull requests here too: they carry `pull_request`)."""
        return self._pages("issues", {"state": "open", "per_page": per_page})

    def get_repo(self) -> dict[str, Any]:
        return self._send("GET", self._repo_path("").rstrip("/")).json()

    def get_pull(self, number: int) -> dict[str, Any]:
        return self._send("GET", self._repo_path(f"pulls/{int(number)}")).json()

    def create_issue(self, title: str, body: str) -> dict[str, Any]:
        return self._send("POST", self._repo_path("issues"), json={"title": title, "body": body}).json()

    def edit_issue(self, number: int, **fields: Any) -> dict[str, Any]:
        """PATCH an issue: body, state, state_reason, ..."""
        return self._send("PATCH", self._repo_path(f"issues/{int(number)}"), json=fields).json()

    def comment_on_issue(self, number: int, body: str) -> dict[str, Any]:
        return self._send("POST", self._repo_path(f"issues/{int(number)}/comments"), json={"body": body}).json()

    def _pages(self, path: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
        url: Optional[str] = self._repo_path(path)
        query: Optional[dict[str, Any]] = params
        while url:
            response = self._send("GET", url, params=query)
            yield from response.json()
            url = self._next_page(response)
            query = None  # the next link carries its own query

    def upsert_comment(self, number: int, body: str, marker: str) -> tuple[str, bool]:
        """Update evalgate's comment carrying `marker` in place, or create it if there is none.

        Searches all pages; when several of evalgate's comments carry the marker, the newest
        one is edited. A comment is evalgate's only when this token's identity wrote it and
        its first line is the marker (`is_ours`): someone else's comment that starts with the
        marker is left alone. Returns (the comment's html_url, whether it was created).
        """
        if not marker:
            raise ValueError("a marker is required to find the comment again")
        if not body.startswith(marker):
            body = f"{marker}\n{body}"
        if len(body) > COMMENT_LIMIT:
            raise ValueError(f"comment body has {len(body)} characters; GitHub accepts at most {COMMENT_LIMIT}")
        found: Optional[dict[str, Any]] = None
        for comment in self.iter_issue_comments(number):
            # A person quoting or planting the marker must not make us edit their comment (and
            # then be able to edit our verdict back): the author must be the token's identity.
            if self.is_ours(comment, marker) and (found is None or comment["id"] > found["id"]):
                found = comment
        if found is None:
            created = self._send("POST", self._repo_path(f"issues/{int(number)}/comments"), json={"body": body})
            return created.json()["html_url"], True
        if found.get("body") == body:
            return found["html_url"], False
        updated = self._send("PATCH", self._repo_path(f"issues/comments/{int(found['id'])}"), json={"body": body})
        return updated.json()["html_url"], False

    # --- commit status -------------------------------------------------------------

    def set_status(
        self,
        sha: str,
        state: str,
        context: str = "evalgate",
        description: str = "",
        target_url: Optional[str] = None,
    ) -> dict[str, Any]:
        """Set a commit status. On a pull request pass the head sha, not the merge commit."""
        if state not in STATUS_STATES:
            raise ValueError(f"state must be one of {sorted(STATUS_STATES)}, got {state!r}")
        payload: dict[str, Any] = {
            "state": state,
            "context": context,
            "description": truncate(description, STATUS_DESCRIPTION_LIMIT),
        }
        if target_url:
            payload["target_url"] = target_url
        return self._send("POST", self._repo_path(f"statuses/{_check_sha(sha)}"), json=payload).json()

    # --- commits -------------------------------------------------------------------

    def first_parent(self, sha: str) -> Optional[str]:
        """The first parent of a commit, or None for a root commit."""
        commit = self._send("GET", self._repo_path(f"commits/{_check_sha(sha)}")).json()
        parents = commit.get("parents") or []
        return parents[0]["sha"] if parents else None

    # --- data branch ---------------------------------------------------------------

    def get_file(self, path: str, ref: str) -> Optional[RepoFile]:
        """A file on a branch (or at a commit); None when the file or the branch is absent."""
        try:
            response = self._send("GET", self._repo_path("contents/" + quote(path, safe="/")), params={"ref": ref})
        except GitHubNotFound:
            return None
        data = response.json()
        if isinstance(data, list) or data.get("type") != "file":
            raise GitHubError(f"GitHub API GET {self._endpoint(response.url)}: {path} is not a file", endpoint=path)
        if data.get("encoding") == "base64" and (data.get("content") or not data.get("size")):
            content = base64.b64decode(data.get("content") or "")
        else:
            # Files over 1 MB come without content ("encoding": "none"); the blob API has them.
            blob = self._send("GET", self._repo_path(f"git/blobs/{_check_sha(data['sha'])}")).json()
            content = base64.b64decode(blob["content"])
        return RepoFile(path=path, sha=data["sha"], content=content)

    def put_file(self, path: str, content: bytes, *, branch: str, message: str, sha: Optional[str]) -> str:
        """Create (sha=None) or replace (sha of the blob being replaced) a file; returns the new blob sha.

        A stale or missing sha raises GitHubConflict: re-read and try again.
        """
        payload: dict[str, Any] = {
            "message": message,
            "content": base64.b64encode(content).decode("ascii"),
            "branch": branch,
        }
        if sha:
            payload["sha"] = sha
        response = self._send(
            "PUT", self._repo_path("contents/" + quote(path, safe="/")), json=payload, conflict=(409, 422)
        )
        return response.json()["content"]["sha"]

    def branch_head(self, branch: str) -> Optional[str]:
        """The commit a branch points to, or None if there is no such branch."""
        try:
            ref = self._send("GET", self._repo_path("git/ref/heads/" + quote(branch, safe="/"))).json()
        except GitHubNotFound:
            return None
        return ref["object"]["sha"]

    def create_orphan_branch(self, branch: str, files: dict[str, str], message: str) -> bool:
        """Create `branch` as a root commit holding `files` (git data API).

        An orphan branch shares no history with the code: it carries no workflows, so
        writing to it runs nothing. Returns False if someone created it first.
        """
        tree = self._send(
            "POST",
            self._repo_path("git/trees"),
            json={"tree": [{"path": p, "mode": "100644", "type": "blob", "content": c} for p, c in sorted(files.items())]},
        ).json()
        commit = self._send(
            "POST", self._repo_path("git/commits"), json={"message": message, "tree": tree["sha"], "parents": []}
        ).json()
        try:
            self._send(
                "POST",
                self._repo_path("git/refs"),
                json={"ref": f"refs/heads/{branch}", "sha": commit["sha"]},
                conflict=(409, 422),
            )
        except GitHubConflict:  # 422 "Reference already exists": a concurrent run won the race
            return False
        return True

    # --- plumbing ------------------------------------------------------------------

    def _repo_path(self, rest: str) -> str:
        return f"{self.api_url}/repos/{self.repository}/{rest}"

    def _endpoint(self, url: str) -> str:
        """`url` as shown in messages: the path under the API URL, query included."""
        if url.startswith(self.api_url):
            url = url[len(self.api_url):] or "/"
        return self._scrub(url)

    def _scrub(self, text: str) -> str:
        return text.replace(self._token, "***") if self._token else text

    def _next_page(self, response: requests.Response) -> Optional[str]:
        url = response.links.get("next", {}).get("url")
        if url is None:
            return None
        parts = urlsplit(url)
        if (parts.scheme, parts.netloc) != self._origin:
            # Never send the token to another host, whatever a Link header says.
            raise GitHubError(
                f"GitHub API GET {self._endpoint(response.url)}: next page link points to another host "
                f"({parts.scheme}://{parts.netloc}); refusing to follow it",
                endpoint=self._endpoint(response.url),
            )
        return url

    def _send(
        self,
        method: str,
        url: str,
        *,
        params: Optional[dict[str, Any]] = None,
        json: Any = None,
        conflict: tuple[int, ...] = (409,),
    ) -> requests.Response:
        """One API call under the retry policy; raises GitHubError (or a subclass) on failure.

        `conflict`: statuses that mean "changed under us" for this call (GitHubConflict).
        """
        attempts = max(1, self.retry.attempts)
        endpoint = self._endpoint(requests.Request(method, url, params=params).prepare().url or url)
        what = f"GitHub API {method} {endpoint}"
        for attempt in range(1, attempts + 1):
            try:
                response = self._session.request(method, url, params=params, json=json, timeout=self.timeout)
            except requests.RequestException as e:
                reason = self._scrub(f"{type(e).__name__}: {e}")
                if attempt == attempts:
                    raise GitHubError(f"{what}: no answer after {attempts} attempts ({reason})", endpoint=endpoint) from None
                wait = self._backoff(attempt)
                log.warning("%s: %s; retrying in %.1f s (attempt %d of %d)", what, reason, wait, attempt + 1, attempts)
                self._sleep(wait)
                continue

            status = response.status_code
            if status < 400:
                return response
            message = self._scrub(_error_message(response))
            rate_limited = status == 429 or (status == 403 and _is_rate_limit(response, message))
            if not (rate_limited or status >= 500):
                if status in conflict:
                    raise GitHubConflict(f"{what}: HTTP {status}: {message}", status=status, endpoint=endpoint)
                raise _error_for(status, f"{what}: HTTP {status}: {message}", endpoint)

            wait = self._server_wait(response) if rate_limited else None
            if wait is not None and wait > self.retry.max_wait:
                raise GitHubRateLimited(
                    f"{what}: HTTP {status}: rate limited for another {wait:.0f} s, longer than evalgate waits "
                    f"({self.retry.max_wait:.0f} s): {message}",
                    status=status,
                    endpoint=endpoint,
                )
            if attempt == attempts:
                kind = GitHubRateLimited if rate_limited else GitHubError
                raise kind(f"{what}: HTTP {status} after {attempts} attempts: {message}", status=status, endpoint=endpoint)
            if wait is None:
                # GitHub asks for at least a minute after a secondary rate limit that gives no time.
                wait = self.retry.max_wait if rate_limited else self._backoff(attempt)
            log.warning("%s: HTTP %d; retrying in %.1f s (attempt %d of %d)", what, status, wait, attempt + 1, attempts)
            self._sleep(wait)
        raise AssertionError("unreachable")

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with jitter: backoff * 2^(attempt-1), scaled by 0.5..1."""
        base = self.retry.backoff * (2 ** (attempt - 1))
        return min(self.retry.max_wait, base * (0.5 + 0.5 * self._jitter()))

    def _server_wait(self, response: requests.Response) -> Optional[float]:
        """Seconds the server asked us to wait (retry-after, or until x-ratelimit-reset), if it said."""
        after = response.headers.get("retry-after")
        if after:
            try:
                return max(0.0, float(after))
            except ValueError:
                try:
                    when = email.utils.parsedate_to_datetime(after)  # the HTTP-date form
                except (TypeError, ValueError):
                    when = None
                if when is not None and when.tzinfo is not None:
                    return max(0.0, when.timestamp() - self._clock())
        if response.headers.get("x-ratelimit-remaining") == "0" and response.headers.get("x-ratelimit-reset"):
            try:
                reset = float(response.headers["x-ratelimit-reset"])
            except ValueError:
                return None
            return max(0.0, reset - self._clock()) + 1.0  # the reset second itself may still be limited
        return None


def truncate(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters (code points, so Korean and Japanese are safe), with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "…"




def _check_sha(sha: str) -> str:
    if not _SHA.match(sha or ""):
        raise ValueError(f"not a commit sha: {sha!r}")
    return sha


def _error_message(response: requests.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return (response.text or response.reason or "").strip()[:300]
    if not isinstance(data, dict):
        return str(data)[:300]
    message = str(data.get("message") or response.reason or "")
    errors = data.get("errors")
    if errors:
        details = [e.get("message") or e.get("code") if isinstance(e, dict) else str(e) for e in errors]
        message += " (" + "; ".join(str(d) for d in details if d) + ")"
    return message


def _is_rate_limit(response: requests.Response, message: str) -> bool:
    h = response.headers
    return bool(h.get("retry-after")) or h.get("x-ratelimit-remaining") == "0" or "rate limit" in message.lower()


def _error_for(status: int, message: str, endpoint: str) -> GitHubError:
    if status == 403:
        return GitHubForbidden(f"{message}. {_FORBIDDEN_HINT}", status=status, endpoint=endpoint)
    if status == 404:
        return GitHubNotFound(message, status=status, endpoint=endpoint)
    if status == 401:
        return GitHubError(f"{message}. Check the token passed to evalgate.", status=status, endpoint=endpoint)
    return GitHubError(message, status=status, endpoint=endpoint)
