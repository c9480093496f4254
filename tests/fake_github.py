"""A stateful stand-in for the GitHub REST API on 127.0.0.1, for tests through the real client.

It speaks the shapes in shared/notes/wire-protocols.md: issue comments with Link-header
pagination (next links use `/repositories/{id}/...` as GitHub does), commit statuses,
the contents API on branches with blob shas and conflict answers, git refs / trees /
commits / blobs, commits with parents, issues (list / create / edit, for the nightly
tracking issue), `GET /pulls/{n}` and `GET /user`. Comments and issues carry their author
(`user.login`, `user.type`): what the token writes is written as `actor`, by default the
workflow token's `github-actions[bot]` (a Bot, to which `GET /user` answers 403 as GitHub
does); `as_user(login)` makes the token a person's (a personal access token). Tests can inject faults, switch to a fork's
read-only token, hook a callback before a request (a concurrent writer), and read the
request log.

Use the `fake_github` fixture: `from fake_github import fake_github`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Optional
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

import fake_http

BOT = {"login": "github-actions[bot]", "id": 41898282, "type": "Bot"}
NOT_FOUND = {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}
FORK_403 = {
    "message": "Resource not accessible by integration",
    "documentation_url": "https://docs.github.com/rest",
    "status": "403",
}


@dataclass
class Request:
    method: str
    path: str  # without the API prefix and query, `/repositories/{id}` rewritten to `/repos/{o}/{r}`
    query: dict[str, str]
    body: Any  # parsed JSON, or None
    headers: dict[str, str]  # lower-case names
    status: Optional[int] = None  # what the fake answered


@dataclass
class Fault:
    method: Optional[str]
    path: re.Pattern
    status: int
    times: int
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    delay: float = 0.0


@dataclass
class Hook:
    method: Optional[str]
    path: re.Pattern
    fn: Callable[["FakeGitHub"], None]
    times: int


class _Reply(Exception):
    def __init__(self, status: int, body: Any = None, headers: Optional[dict[str, str]] = None):
        self.status, self.body, self.headers = status, body, headers or {}


def git_blob_sha(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def _sha1_of(value: Any) -> str:
    return hashlib.sha1(json.dumps(value, sort_keys=True).encode()).hexdigest()


class FakeGitHub:
    """GitHub for one repository, `octo/hello`, with a `main` branch holding one commit."""

    owner = "octo"
    name = "hello"
    repo_id = 1296269

    def __init__(self, token: str = "ghs_FAKEtoken0123456789abcdef", prefix: str = ""):
        self.token = token
        self.prefix = prefix.rstrip("/")
        self.default_per_page = 30  # when the client sends no per_page
        self.max_per_page = 100  # GitHub's cap; lower it to force many pages
        self.large_file_limit = 1_000_000  # contents GET leaves `content` empty above this size
        self.read_only = False  # a fork PR's token: every write answers 403
        self.actor: dict[str, Any] = dict(BOT)  # who the token writes as
        self.link_base: Optional[str] = None  # override the host in Link headers
        self.log: list[Request] = []
        self.faults: list[Fault] = []
        self.hooks: list[Hook] = []
        self.comments: dict[int, dict[str, Any]] = {}
        self.statuses: dict[str, list[dict[str, Any]]] = {}
        self.blobs: dict[str, bytes] = {}
        self.trees: dict[str, dict[str, str]] = {}  # tree sha -> {path: blob sha}
        self.commits: dict[str, dict[str, Any]] = {}  # sha -> {"tree", "parents", "message"}
        self.refs: dict[str, str] = {}  # "refs/heads/x" -> commit sha
        self.issues: dict[int, dict[str, Any]] = {}  # number -> issue (not pull requests)
        self.pulls: dict[int, dict[str, Any]] = {}  # number -> pull request
        self._issue_numbers = iter(range(100, 10**6))
        self._ids = iter(range(1001, 10**9))
        self._tick = 0
        self._lock = threading.RLock()
        self._server: Optional[ThreadingHTTPServer] = None
        self.refs["refs/heads/main"] = self.add_commit(message="initial commit")

    # --- lifecycle -------------------------------------------------------------------

    def start(self) -> "FakeGitHub":
        self._server = fake_http.serve(_Handler, github=self)
        return self

    def stop(self) -> None:
        fake_http.stop(self._server)

    @property
    def url(self) -> str:
        return f"{fake_http.base_url(self._server)}{self.prefix}"

    @property
    def repository(self) -> str:
        return f"{self.owner}/{self.name}"

    # --- test controls ---------------------------------------------------------------

    def fail(
        self,
        path: str,
        status: int,
        *,
        method: Optional[str] = None,
        times: int = 1,
        headers: Optional[dict[str, str]] = None,
        body: Any = None,
        delay: float = 0.0,
    ) -> None:
        """The next `times` requests whose path fully matches the regex `path` answer `status`."""
        default = {"message": "Server Error"} if status >= 500 else {"message": f"HTTP {status}"}
        self.faults.append(
            Fault(method, re.compile(path), status, times, dict(headers or {}), default if body is None else body, delay)
        )

    def on(self, path: str, fn: Callable[["FakeGitHub"], None], *, method: Optional[str] = None, times: int = 1) -> None:
        """Run fn(fake) before handling the next `times` requests matching `path` (a concurrent actor)."""
        self.hooks.append(Hook(method, re.compile(path), fn, times))

    def requests(self, method: Optional[str] = None, path: Optional[str] = None) -> list[Request]:
        """Logged requests, filtered by method and by a regex fully matching the path."""
        return [
            r
            for r in self.log
            if (method is None or r.method == method) and (path is None or re.fullmatch(path, r.path))
        ]

    def as_user(self, login: str, uid: int = 583231) -> None:
        """The token is a person's (a personal access token): it writes as them, and `GET /user` answers."""
        self.actor = {"login": login, "id": uid, "type": "User"}

    def add_comment(self, number: int, body: str, user: Optional[dict[str, Any]] = None) -> dict[str, Any]:
        with self._lock:
            return self._new_comment(number, body, user or {"login": "someone", "id": 7, "type": "User"})

    def add_pull(self, number: int, head_sha: str, base_sha: str, *, fork: bool = False) -> dict[str, Any]:
        """A pull request (for `GET /pulls/{n}`); from a fork when `fork`."""
        repo = "someone/hello" if fork else self.repository
        with self._lock:
            self.pulls[number] = {
                "number": number,
                "state": "open",
                "html_url": f"https://github.com/{self.repository}/pull/{number}",
                "head": {"sha": head_sha, "ref": "feature", "repo": {"full_name": repo}},
                "base": {"sha": base_sha, "ref": "main", "repo": {"full_name": self.repository}},
            }
            return self.pulls[number]

    def add_issue(self, title: str, body: str = "", state: str = "open", user: Optional[dict[str, Any]] = None) -> dict[str, Any]:
        with self._lock:
            return self._new_issue(title, body, state, user or {"login": "someone", "id": 7, "type": "User"})

    def issue_comments(self, number: int) -> list[dict[str, Any]]:
        return [c for c in self.comments.values() if c["_issue"] == number]

    def add_commit(
        self, parents: tuple[str, ...] | list[str] = (), message: str = "", sha: Optional[str] = None, files: Optional[dict[str, bytes]] = None
    ) -> str:
        """A commit with the given parents and a tree of `files` (default: empty); returns its sha."""
        with self._lock:
            tree = self._tree({path: self._blob(content) for path, content in (files or {}).items()})
            sha = sha or _sha1_of({"tree": tree, "parents": list(parents), "message": message, "n": self._next_tick()})
            self.commits[sha] = {"tree": tree, "parents": list(parents), "message": message}
            return sha

    def linear_history(self, n: int) -> list[str]:
        """n commits in a chain, oldest first (the first one a root)."""
        shas: list[str] = []
        for i in range(n):
            shas.append(self.add_commit(shas[-1:], f"commit {i}"))
        return shas

    def write_file(self, branch: str, path: str, content: bytes, message: str = "direct write") -> str:
        """Commit a file to a branch directly, as another writer would; returns the blob sha."""
        with self._lock:
            return self._commit_file(branch, path, content, message)

    def read_file(self, branch: str, path: str) -> Optional[bytes]:
        with self._lock:
            head = self.refs.get(f"refs/heads/{branch}")
            if head is None:
                return None
            blob = self.trees[self.commits[head]["tree"]].get(path)
            return None if blob is None else self.blobs[blob]

    def branch_files(self, branch: str) -> list[str]:
        head = self.refs[f"refs/heads/{branch}"]
        return sorted(self.trees[self.commits[head]["tree"]])

    # --- internals -------------------------------------------------------------------

    def _next_tick(self) -> int:
        self._tick += 1
        return self._tick

    def _timestamp(self) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1_700_000_000 + self._next_tick()))

    def _tree(self, entries: dict[str, str]) -> str:
        sha = _sha1_of(sorted(entries.items()))
        self.trees[sha] = dict(entries)
        return sha

    def _blob(self, content: bytes) -> str:
        sha = git_blob_sha(content)
        self.blobs[sha] = content
        return sha

    def _commit_file(self, branch: str, path: str, content: bytes, message: str) -> str:
        ref = f"refs/heads/{branch}"
        head = self.refs[ref]
        entries = dict(self.trees[self.commits[head]["tree"]])
        entries[path] = blob = self._blob(content)
        tree = self._tree(entries)
        sha = _sha1_of({"tree": tree, "parents": [head], "message": message, "n": self._next_tick()})
        self.commits[sha] = {"tree": tree, "parents": [head], "message": message}
        self.refs[ref] = sha
        return blob

    def _new_comment(self, number: int, body: str, user: dict[str, Any]) -> dict[str, Any]:
        cid = next(self._ids)
        now = self._timestamp()
        comment = {
            "id": cid,
            "node_id": f"IC_{cid}",
            "url": f"{self._api()}/repos/{self.repository}/issues/comments/{cid}",
            "html_url": f"https://github.com/{self.repository}/pull/{number}#issuecomment-{cid}",
            "issue_url": f"{self._api()}/repos/{self.repository}/issues/{number}",
            "body": body,
            "user": dict(user),
            "created_at": now,
            "updated_at": now,
            "author_association": "NONE",
            "_issue": number,
        }
        self.comments[cid] = comment
        return comment

    def _new_issue(self, title: str, body: str, state: str, user: dict[str, Any]) -> dict[str, Any]:
        number = next(self._issue_numbers)
        now = self._timestamp()
        issue = {
            "id": next(self._ids),
            "number": number,
            "title": title,
            "body": body,
            "state": state,
            "state_reason": None,
            "labels": [],
            "user": dict(user),
            "url": f"{self._api()}/repos/{self.repository}/issues/{number}",
            "html_url": f"https://github.com/{self.repository}/issues/{number}",
            "created_at": now,
            "updated_at": now,
        }
        self.issues[number] = issue
        return issue

    def _api(self) -> str:
        return self.url

    def _handle(self, method: str, raw_path: str, headers: dict[str, str], raw_body: bytes) -> _Reply:
        request = Request(method, raw_path, {}, None, headers)
        reply = self._answer(request, raw_body)
        request.status = reply.status
        return reply

    def _answer(self, request: Request, raw_body: bytes) -> _Reply:
        method, raw_path, headers = request.method, request.path, request.headers
        split = urlsplit(raw_path)
        path = split.path
        if self.prefix:
            if not path.startswith(self.prefix + "/"):
                return _Reply(404, NOT_FOUND)
            path = path[len(self.prefix):]
        path = re.sub(rf"^/repositories/{self.repo_id}/", f"/repos/{self.repository}/", path)
        query = {k: v[-1] for k, v in parse_qs(split.query).items()}
        try:
            body = json.loads(raw_body) if raw_body else None
        except ValueError:
            return _Reply(400, {"message": "Problems parsing JSON"})
        with self._lock:
            request.path, request.query, request.body = path, query, body
            self.log.append(request)
            hooks = [h for h in self.hooks if h.times > 0 and h.method in (None, method) and h.path.fullmatch(path)]
            for h in hooks:
                h.times -= 1
            fault = next(
                (f for f in self.faults if f.times > 0 and f.method in (None, method) and f.path.fullmatch(path)), None
            )
            if fault:
                fault.times -= 1
        for h in hooks:
            h.fn(self)
        if fault:
            if fault.delay:
                time.sleep(fault.delay)
            return _Reply(fault.status, fault.body, fault.headers)
        if headers.get("authorization") != f"Bearer {self.token}":
            return _Reply(401, {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"})
        if self.read_only and method != "GET":
            return _Reply(403, FORK_403)
        with self._lock:
            try:
                return self._route(method, path, query, body)
            except _Reply as reply:
                return reply

    def _route(self, method: str, path: str, query: dict[str, str], body: Any) -> _Reply:
        if method == "GET" and path == "/user":
            # An installation token (GITHUB_TOKEN, an app's) is no user: GitHub answers 403.
            if self.actor.get("type") == "Bot":
                raise _Reply(403, {"message": "Resource not accessible by integration", "documentation_url": "https://docs.github.com/rest/users/users#get-the-authenticated-user", "status": "403"})
            return _Reply(200, {**self.actor, "site_admin": False})
        repo = f"/repos/{self.repository}"
        if not path.startswith(repo + "/") and path != repo:
            raise _Reply(404, NOT_FOUND)
        rest = path[len(repo):]
        for verb, pattern, handler in self._routes():
            if verb == method and (m := re.fullmatch(pattern, rest)):
                return handler(query, body, *[unquote(g) for g in m.groups()])
        raise _Reply(404, NOT_FOUND)

    def _routes(self):
        return [
            ("GET", r"", self._get_repo),
            ("GET", r"/issues/(\d+)/comments", self._list_comments),
            ("POST", r"/issues/(\d+)/comments", self._create_comment),
            ("PATCH", r"/issues/comments/(\d+)", self._update_comment),
            ("POST", r"/statuses/([0-9a-fA-F]+)", self._create_status),
            ("GET", r"/commits/([0-9a-fA-F]+)", self._get_commit),
            ("GET", r"/contents/(.+)", self._get_contents),
            ("PUT", r"/contents/(.+)", self._put_contents),
            ("GET", r"/git/ref/heads/(.+)", self._get_ref),
            ("POST", r"/git/refs", self._create_ref),
            ("POST", r"/git/trees", self._create_tree),
            ("POST", r"/git/commits", self._create_git_commit),
            ("GET", r"/git/blobs/([0-9a-f]+)", self._get_blob),
            ("GET", r"/issues", self._list_issues),
            ("POST", r"/issues", self._create_issue),
            ("GET", r"/issues/(\d+)", self._get_issue),
            ("PATCH", r"/issues/(\d+)", self._update_issue),
            ("GET", r"/pulls/(\d+)", self._get_pull),
        ]

    # --- endpoints -------------------------------------------------------------------

    def _get_repo(self, query, body):
        return _Reply(200, {"id": self.repo_id, "full_name": self.repository, "default_branch": "main"})

    def _list_comments(self, query, body, number):
        number = int(number)
        items = sorted(self.issue_comments(number), key=lambda c: c["id"])
        chunk, headers = self._page(items, query, f"/issues/{number}/comments")
        return _Reply(200, [_public(c) for c in chunk], headers)

    def _page(self, items: list, query: dict[str, str], path: str, keep: tuple[str, ...] = ()) -> tuple[list, dict[str, str]]:
        """One page of `items` as GitHub serves it: `per_page` (capped) and `page` from the
        query, and a Link header with next/last and prev/first links under
        `/repositories/{id}`, keeping the query parameters named in `keep`."""
        per_page = min(int(query.get("per_page", self.default_per_page)), self.max_per_page)
        page = max(1, int(query.get("page", 1)))
        last = max(1, -(-len(items) // per_page))
        chunk = items[(page - 1) * per_page : page * per_page]
        base = f"{self.link_base or self._api()}/repositories/{self.repo_id}{path}"
        kept = "".join(f"{k}={query[k]}&" for k in keep if k in query)

        def link(n: int, rel: str) -> str:
            return f'<{base}?{kept}per_page={per_page}&page={n}>; rel="{rel}"'

        links = []
        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links += [link(page - 1, "prev"), link(1, "first")]
        return chunk, ({"Link": ", ".join(links)} if links else {})

    def _create_comment(self, query, body, number):
        text = (body or {}).get("body")
        if not isinstance(text, str) or not text:
            raise _Reply(422, {"message": "Validation Failed", "errors": [{"resource": "IssueComment", "code": "missing_field", "field": "body"}]})
        if len(text) > 65536:
            raise _Reply(422, {"message": "Validation Failed", "errors": [{"message": "Body is too long (maximum is 65536 characters)"}]})
        return _Reply(201, _public(self._new_comment(int(number), text, self.actor)))

    def _update_comment(self, query, body, cid):
        comment = self.comments.get(int(cid))
        if comment is None:
            raise _Reply(404, NOT_FOUND)
        text = (body or {}).get("body")
        if not isinstance(text, str) or len(text) > 65536:
            raise _Reply(422, {"message": "Validation Failed"})
        comment["body"] = text
        comment["updated_at"] = self._timestamp()
        return _Reply(200, _public(comment))

    def _create_status(self, query, body, sha):
        body = body or {}
        state = body.get("state")
        if state not in ("error", "failure", "pending", "success"):
            raise _Reply(422, {"message": "Validation Failed", "errors": [{"field": "state", "code": "invalid"}]})
        if len(body.get("description") or "") > 140:
            raise _Reply(422, {"message": "Validation Failed", "errors": [{"message": "description is too long (maximum is 140 characters)"}]})
        if sha not in self.commits:
            raise _Reply(422, {"message": f"No commit found for SHA: {sha}"})
        sid = next(self._ids)
        now = self._timestamp()
        status = {
            "id": sid,
            "url": f"{self._api()}/repos/{self.repository}/statuses/{sha}",
            "state": state,
            "description": body.get("description"),
            "target_url": body.get("target_url"),
            "context": body.get("context", "default"),
            "created_at": now,
            "updated_at": now,
            "creator": dict(BOT),
        }
        self.statuses.setdefault(sha, []).append(status)
        return _Reply(201, status)

    def _get_commit(self, query, body, sha):
        commit = self.commits.get(sha)
        if commit is None:
            raise _Reply(422, {"message": f"No commit found for SHA: {sha}"})
        return _Reply(
            200,
            {
                "sha": sha,
                "url": f"{self._api()}/repos/{self.repository}/commits/{sha}",
                "html_url": f"https://github.com/{self.repository}/commit/{sha}",
                "commit": {"message": commit["message"], "tree": {"sha": commit["tree"]}},
                "parents": [{"sha": p, "url": f"{self._api()}/repos/{self.repository}/commits/{p}"} for p in commit["parents"]],
                "files": [],
            },
        )

    def _resolve(self, ref: Optional[str]) -> Optional[str]:
        ref = ref or "main"
        if f"refs/heads/{ref}" in self.refs:
            return self.refs[f"refs/heads/{ref}"]
        return ref if ref in self.commits else None

    def _content_object(self, path: str, blob: str) -> dict[str, Any]:
        return {
            "type": "file",
            "name": path.rsplit("/", 1)[-1],
            "path": path,
            "sha": blob,
            "size": len(self.blobs[blob]),
            "url": f"{self._api()}/repos/{self.repository}/contents/{path}",
            "git_url": f"{self._api()}/repos/{self.repository}/git/blobs/{blob}",
            "html_url": f"https://github.com/{self.repository}/blob/{path}",
            "download_url": f"https://raw.githubusercontent.com/{self.repository}/{path}",
        }

    def _get_contents(self, query, body, path):
        commit = self._resolve(query.get("ref"))
        if commit is None:
            raise _Reply(404, {"message": f"No commit found for the ref {query.get('ref')}", "documentation_url": "https://docs.github.com/rest"})
        blob = self.trees[self.commits[commit]["tree"]].get(path)
        if blob is None:
            raise _Reply(404, NOT_FOUND)
        obj = self._content_object(path, blob)
        content = self.blobs[blob]
        if len(content) > self.large_file_limit:
            obj.update(content="", encoding="none")
        else:
            encoded = base64.b64encode(content).decode()
            obj.update(content="\n".join(encoded[i : i + 60] for i in range(0, len(encoded), 60)) + "\n", encoding="base64")
        return _Reply(200, obj)

    def _put_contents(self, query, body, path):
        body = body or {}
        if not body.get("message") or "content" not in body:
            raise _Reply(422, {"message": "Invalid request.\n\n\"message\" and \"content\" are required."})
        branch = body.get("branch") or "main"
        ref = f"refs/heads/{branch}"
        if ref not in self.refs:
            raise _Reply(404, {"message": f"Branch {branch} not found"})
        current = self.trees[self.commits[self.refs[ref]]["tree"]].get(path)
        given = body.get("sha")
        if current is not None and not given:
            raise _Reply(422, {"message": "Invalid request.\n\n\"sha\" wasn't supplied."})
        if given and given != current:
            raise _Reply(409, {"message": f"{path} does not match {given}", "documentation_url": "https://docs.github.com/rest"})
        try:
            content = base64.b64decode(body["content"], validate=True)
        except ValueError:
            raise _Reply(422, {"message": "content is not valid Base64"}) from None
        blob = self._commit_file(branch, path, content, body["message"])
        head = self.refs[ref]
        return _Reply(
            201 if current is None else 200,
            {
                "content": self._content_object(path, blob),
                "commit": {"sha": head, "message": body["message"], "tree": {"sha": self.commits[head]["tree"]},
                           "parents": [{"sha": p} for p in self.commits[head]["parents"]]},
            },
        )

    def _get_ref(self, query, body, branch):
        sha = self.refs.get(f"refs/heads/{branch}")
        if sha is None:
            raise _Reply(404, NOT_FOUND)
        return _Reply(200, {"ref": f"refs/heads/{branch}", "object": {"sha": sha, "type": "commit"}})

    def _create_ref(self, query, body, *_):
        ref, sha = (body or {}).get("ref", ""), (body or {}).get("sha")
        if not ref.startswith("refs/") or ref.count("/") < 2:
            raise _Reply(422, {"message": "Reference name must start with 'refs/' and have at least two slashes."})
        if sha not in self.commits:
            raise _Reply(422, {"message": "Object does not exist"})
        if ref in self.refs:
            raise _Reply(422, {"message": "Reference already exists"})
        self.refs[ref] = sha
        return _Reply(201, {"ref": ref, "object": {"sha": sha, "type": "commit"}})

    def _create_tree(self, query, body, *_):
        entries = dict(self.trees.get((body or {}).get("base_tree") or "", {}))
        for item in (body or {}).get("tree", []):
            if "content" in item:
                entries[item["path"]] = self._blob(item["content"].encode("utf-8"))
            elif item.get("sha"):
                entries[item["path"]] = item["sha"]
        if not entries:
            raise _Reply(422, {"message": "Invalid tree info"})
        sha = self._tree(entries)
        return _Reply(201, {"sha": sha, "tree": [{"path": p, "mode": "100644", "type": "blob", "sha": b} for p, b in sorted(entries.items())]})

    def _create_git_commit(self, query, body, *_):
        body = body or {}
        if body.get("tree") not in self.trees:
            raise _Reply(422, {"message": "Tree SHA does not exist"})
        parents = list(body.get("parents") or [])
        if any(p not in self.commits for p in parents):
            raise _Reply(422, {"message": "Parent SHA does not exist or is not a commit object"})
        sha = _sha1_of({"tree": body["tree"], "parents": parents, "message": body.get("message"), "n": self._next_tick()})
        self.commits[sha] = {"tree": body["tree"], "parents": parents, "message": body.get("message", "")}
        return _Reply(201, {"sha": sha, "tree": {"sha": body["tree"]}, "parents": [{"sha": p} for p in parents], "message": body.get("message")})

    def _get_blob(self, query, body, sha):
        if sha not in self.blobs:
            raise _Reply(404, NOT_FOUND)
        content = self.blobs[sha]
        return _Reply(200, {"sha": sha, "size": len(content), "encoding": "base64", "content": base64.b64encode(content).decode() + "\n"})


    # issues (the nightly tracking issue) and pull requests --------------------------------

    def _list_issues(self, query, body):
        state = query.get("state", "open")
        # GitHub lists newest first by default (sort=created, direction=desc).
        items = sorted(
            (i for i in self.issues.values() if state == "all" or i["state"] == state), key=lambda i: -i["number"]
        )
        chunk, headers = self._page(items, {**query, "state": state}, "/issues", keep=("state",))
        return _Reply(200, [dict(i) for i in chunk], headers)

    def _create_issue(self, query, body):
        body = body or {}
        if not isinstance(body.get("title"), str) or not body["title"]:
            raise _Reply(422, {"message": "Validation Failed", "errors": [{"resource": "Issue", "code": "missing_field", "field": "title"}]})
        if len(body.get("body") or "") > 65536:
            raise _Reply(422, {"message": "Validation Failed", "errors": [{"message": "body is too long (maximum is 65536 characters)"}]})
        return _Reply(201, dict(self._new_issue(body["title"], body.get("body") or "", "open", self.actor)))

    def _get_issue(self, query, body, number):
        issue = self.issues.get(int(number))
        if issue is None:
            raise _Reply(404, NOT_FOUND)
        return _Reply(200, dict(issue))

    def _update_issue(self, query, body, number):
        issue = self.issues.get(int(number))
        if issue is None:
            raise _Reply(404, NOT_FOUND)
        body = body or {}
        if "state" in body and body["state"] not in ("open", "closed"):
            raise _Reply(422, {"message": "Validation Failed", "errors": [{"field": "state", "code": "invalid"}]})
        if len(body.get("body") or "") > 65536:
            raise _Reply(422, {"message": "Validation Failed", "errors": [{"message": "body is too long (maximum is 65536 characters)"}]})
        for key in ("title", "body", "state", "state_reason"):
            if key in body:
                issue[key] = body[key]
        issue["updated_at"] = self._timestamp()
        return _Reply(200, dict(issue))

    def _get_pull(self, query, body, number):
        pull = self.pulls.get(int(number))
        if pull is None:
            raise _Reply(404, NOT_FOUND)
        return _Reply(200, pull)


def _public(comment: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in comment.items() if not k.startswith("_")}


class _Handler(BaseHTTPRequestHandler):
    github: FakeGitHub
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes; no 40 ms stalls

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        reply = self.github._handle(self.command, self.path, headers, raw)
        payload = b"" if reply.body is None else json.dumps(reply.body).encode()
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("X-GitHub-Api-Version-Selected", headers.get("x-github-api-version", ""))
            for k, v in reply.headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass


@pytest.fixture
def fake_github():
    """A started FakeGitHub; stopped after the test."""
    fake = FakeGitHub().start()
    yield fake
    fake.stop()
