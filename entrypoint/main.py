"""The GitHub Action's entrypoint: read the Actions environment, choose the activity, gate, publish.

Activities (from the event, or forced by the `mode` input):

- `pr` (pull_request): score, compare with the baseline of the PR's
  base commit (read only), comment and set the status on the PR's head commit.
- `baseline` (push to the default branch): score, compare with the previous baseline,
  save this commit's baseline and update the flake ledger.
- `nightly` (schedule, workflow_dispatch): score, compare with the default branch head's
  baseline, update the ledger, and open / update / close one tracking issue.
- `merge_group` (merge_group, the merge queue's): as `pr` for the queue's head commit
  against its base's baseline; the status is set on that commit, and nothing is commented.
- `publish` (workflow_run): the trusted half of the fork-safe flow: compare the results a
  pull request's run uploaded, comment and set the status.
- `score` (anything else, e.g. a push to another branch): score and judge on absolute
  thresholds; nothing is written to GitHub.
- `shard` (the `shard` input, a matrix leg): score shard K of N into `out`, for the merge
  job; nothing is written to GitHub, and the leg succeeds whatever its cases scored.

`mode: merge` chooses the activity from the event as `auto` does (pr, baseline, nightly,
score), but instead of scoring it merges the legs' outputs from the `shards` folder. A
missing shard makes the verdict ERROR and writes no baseline and no ledger.

Every run writes the results and report.html under `out`, the step outputs and the job
summary. Exit codes are the CLI's: 0 passed, 1 failed, 2 unusable input or configuration,
3 internal error.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shlex
import subprocess
import sys
import time
import traceback
from collections import deque
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, MutableMapping, Optional

from evalgate import __version__
from evalgate.i18n import _, mark, n_
from evalgate.errors import InputError, Problem

if __package__ in (None, ""):  # run as a script: python /path/to/entrypoint/main.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from entrypoint.commands import Workflow  # noqa: E402
from entrypoint.ownership import hand_back  # noqa: E402
from entrypoint.settings import Settings, read_settings, secrets  # noqa: E402

EXIT_PASSED, EXIT_FAILED, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
PR_EVENTS = ("pull_request",)
# Runs with a write token and the repository's secrets in the base's context: the one event
# on which running a pull request's agent hands those to its code. Refused (see choose_activity).
REFUSED_EVENTS = ("pull_request_target",)
# Where a shortened comment sends the reader ("The full report is in the ..."): the job summary,
# and report.html in the output folder, which the documented workflows upload as an artifact.
# Translated where the report shows it (evalgate.reports.markdown).
FULL_REPORT = mark("job summary of the run, and every case in report.html among the run's artifacts")
NIGHTLY_EVENTS = ("schedule", "workflow_dispatch")
# Activities that judge a pull request in a checkout it wrote: no path in it is followed
# through a symbolic link (evalgate.writing), whether evalgate reads or writes there.
GUARDED = ("pr", "merge_group", "publish")


@dataclass
class Outcome:
    """What an activity decided, for the report, the outputs and the exit code."""

    comparison: Any
    results: Any
    comment_url: str = ""
    notes: list[str] = field(default_factory=list)  # trusted Markdown lines for the summary
    superseded: bool = False  # results of a commit the PR has moved on from: nothing posted, exit 0
    leg: bool = False  # a matrix leg's shard: the merge job decides, the leg exits 0
    baseline: Any = None  # the baseline's results, for report.html's side-by-side view
    trend: Any = None  # the default branch's runs before this one (evalgate.gate.trends), for the charts


@dataclass
class Context:
    settings: Settings
    workflow: Workflow
    env: MutableMapping[str, str]
    warnings: list[str] = field(default_factory=list)
    missing: Optional[str] = None  # mode merge: which shards did not arrive (the verdict is then ERROR)
    secrets: tuple[str, ...] = ()  # values never written where the agent's output goes (the token, ...)
    _client: Any = None

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        self.workflow.warning(message)

    def client(self, required_for: Optional[str] = None):
        """The GitHub client, or None (with a warning, or an error when `required_for`) without a token."""
        from evalgate.github import GitHubClient

        s = self.settings
        if self._client is None and s.token and s.repository:
            self._client = GitHubClient(s.api_url, s.repository, s.token, identity=s.github_identity)
        if self._client is None and required_for:
            missing = "GITHUB_REPOSITORY" if s.token else "the github-token input (EVALGATE_GITHUB_TOKEN)"
            raise InputError(Problem(None, "input 'github-token' (EVALGATE_GITHUB_TOKEN)", f"{required_for} needs {missing}", "Pass github-token: ${{ github.token }} (the default)."))
        return self._client


# --- choosing the activity ---------------------------------------------------------------


def choose_activity(s: Settings) -> str:
    event = s.event_name
    if event in REFUSED_EVENTS:
        raise InputError(
            Problem(
                None,
                "GITHUB_EVENT_NAME",
                f"evalgate does not run on {event}: that event gives the job a write token and the repository's secrets, "
                "and running the pull request's agent (or reading its config) there hands them to the pull request's code",
                "Use the fork-safe two-phase flow (docs/workflows.md): run evalgate on pull_request, upload its output "
                "folder as an artifact, and publish it from a workflow_run job with mode: publish.",
            )
        )
    if s.shard is not None:
        return "shard"
    if s.mode == "merge":
        activity = choose_activity(replace(s, mode="auto"))
        if activity == "publish":
            raise InputError(
                Problem(None, "input 'mode' (EVALGATE_MODE)", "mode merge runs in the workflow whose matrix ran the legs, not on workflow_run", "Merge in the same workflow (a job with needs: on the matrix job).")
            )
        return activity
    wanted = {
        "pr": PR_EVENTS,
        "nightly": NIGHTLY_EVENTS,
        "publish": ("workflow_run",),
        "baseline": ("push", *NIGHTLY_EVENTS),
    }
    if s.mode == "auto":
        if event in PR_EVENTS:
            return "pr"
        if event == "merge_group":
            return "merge_group"
        if event == "push":
            return "baseline" if s.ref == f"refs/heads/{_default_branch(s) or ''}" else "score"
        if event in NIGHTLY_EVENTS:
            return "nightly"
        if event == "workflow_run":
            return "publish"
        return "score"
    if s.mode == "pr" and event == "merge_group":
        return "merge_group"
    if s.mode == "publish" and s.artifact_dir is not None:
        return "publish"  # the artifact may also come from elsewhere; the payload check still applies
    if event not in wanted[s.mode]:
        raise InputError(
            Problem(
                None,
                "input 'mode' (EVALGATE_MODE)",
                f"mode '{s.mode}' runs on {', '.join(wanted[s.mode])} events; this run is a '{event or 'unknown'}' event",
                "Use mode: auto, or run this step on one of those events.",
            )
        )
    return s.mode


def _default_branch(s: Settings) -> Optional[str]:
    repo = s.event.get("repository")
    return repo.get("default_branch") if isinstance(repo, dict) else None


# --- scoring -----------------------------------------------------------------------------


def _load(s: Settings):
    from evalgate import i18n
    from evalgate.config import CONFIG_NAMES, load_config

    paths = [s.config] if s.config is not None else [s.working_directory / n for n in CONFIG_NAMES if os.path.lexists(s.working_directory / n)]
    if paths:
        _no_link(s, paths[0], "input 'config' (EVALGATE_CONFIG)", "Commit the config itself at that path, not a link to it.")
        loaded = load_config(paths[0])
        i18n.configured(loaded.config.report.language)
        return loaded
    raise InputError(
        Problem(
            None,
            "input 'config' (EVALGATE_CONFIG)",
            f"no config file in {_shown(s, s.working_directory) or '.'} (looked for {', '.join(CONFIG_NAMES)})",
            "Add evalgate.yaml to the repository (docs/action.md shows one), or set the config input to its path relative to working-directory.",
        )
    )


def _no_link(s: Settings, path: Path, where: str, fix: str) -> None:
    """In a pull request's checkout (GUARDED, evalgate.writing.confined): refuse `path` when it
    is, or passes through, a symbolic link. A link there is the pull request's choice of what
    evalgate reads or overwrites: a config link makes the base commit be asked for another
    file (and the pull request's own gate judge it), an output link aims evalgate's writes
    at a file of the runner."""
    from evalgate import writing

    def written(p: Path) -> str:  # as written, relative to the workspace: not where a link leads
        try:
            return Path(os.path.abspath(p)).relative_to(s.workspace).as_posix()
        except ValueError:
            return str(p)

    link = writing.first_link(path)
    if link is None:
        return
    raise InputError(
        Problem(
            written(path),
            where,
            f"{written(link)} is a symbolic link (to {os.readlink(link)}); in pull request, merge queue "
            "and publish runs evalgate follows no link in the checkout, which the pull request may have made",
            fix,
        )
    )


def _gate(s: Settings, loaded) -> Any:
    gate = loaded.config.gate if loaded is not None else None
    if gate is None:
        from evalgate.config import GateConfig

        gate = GateConfig()
    update: dict[str, Any] = {}
    if s.gate_id:
        update["id"] = s.gate_id
    if s.baseline_branch:
        update["baseline"] = gate.baseline.model_copy(update={"branch": s.baseline_branch})
    if s.fail_on == "inconclusive":
        update["inconclusive"] = "fail"
    return gate.model_copy(update=update) if update else gate


def cache_policy(s: Settings):
    """This run as a writer of judge cache entries, and whose entries it believes.

    A pull request run (and a merge group's, whose head holds the pull request's code)
    believes only what default-branch runs wrote (and what it writes itself): whatever else
    a pull request's cache holds was written in a job that ran the pull request's code, so
    an earlier commit of it could vouch for a later one. Runs of the
    default branch (push, schedule, manual runs on it, and the trusted workflow_run job) and
    of other branches believe every entry that git does not track.
    """
    from evalgate.judge.cache import CachePolicy

    default = _default_branch(s)
    on_default = bool(default) and s.ref == f"refs/heads/{default}"
    # A merge group's head is the pull request merged onto its target: its code (and agent)
    # is the pull request's, and its status is the one the queue waits for.
    if s.event_name in PR_EVENTS or s.event_name == "merge_group":
        return CachePolicy("pull_request", s.event_name, s.ref, frozenset({"default"}))
    # A schedule always runs on the default branch; a push or a manual run may be on any.
    if s.event_name in ("workflow_run", "schedule") or (on_default and s.event_name in ("push", "workflow_dispatch")):
        return CachePolicy("default", s.event_name, s.ref)
    return CachePolicy("branch", s.event_name, s.ref)


def score(ctx: Context, loaded, outputs: Optional[Path] = None, policy: Optional[Callable[[list], None]] = None) -> tuple[Any, list]:
    """Score every suite (as `evalgate run`; only shard K of N on a matrix leg) and write
    results.json, junit.xml and ADK results. Under mode merge: merge the legs' instead.
    With `outputs` (a pull request's inference.jsonl, mode publish), no agent runs: the
    trusted config's cases are scored on the records it holds for them (evalgate.trusted). `policy`, when
    given, sets the plans' criteria before anything runs (PR mode: the base's)."""
    from evalgate import engine, writing
    from evalgate.pipeline import judge_runtime
    from evalgate.plan import build_plans, config_digest
    from evalgate.reports.adk_results import write_adk_results
    from evalgate.reports.agents_cli import DIR as AGENTS_CLI_DIR, traces_of, write_agents_cli_results
    from evalgate.reports.junit import junit_xml
    from evalgate.reports.terminal import summary_table
    from evalgate.results import ShardInfo
    from evalgate.shards import current_commit, select

    from evalgate.infer import RESUME_FILE, needs_runtime, resumable, total_runs

    s = ctx.settings
    plans = build_plans(loaded)
    if policy is not None:
        policy(plans)
    digest = config_digest(loaded, plans)  # of the whole run, before a leg keeps its shard
    if s.mode == "merge":
        return merge_shards(ctx, loaded, digest), plans  # no runs in them: gate.confirm re-runs suspects from scratch
    commit = s.sha or current_commit(loaded.base)
    if s.shard is not None:
        ctx.workflow.log(select(plans, s.shard))
    reuse: dict = {}
    if s.resume is not None and total_runs(plans):
        if (s.resume / RESUME_FILE).is_file():
            reuse = resumable(s.resume, digest, commit)
        else:  # an earlier attempt that stopped before running the agent (a failed install, say)
            ctx.warn(f"resume: {_shown(s, s.resume)} holds no finished agent runs ({RESUME_FILE} is missing); running every case")
    if s.cache_dir is not None:
        judge = loaded.config.judge.model_copy(update={"cache_dir": os.path.abspath(s.cache_dir)})  # not resolved: a link stays one
        loaded.config = loaded.config.model_copy(update={"judge": judge})
    runtime, workers = None, 1
    if needs_runtime(plans):
        runtime, workers = judge_runtime(loaded, s.judge_concurrency, cache_policy=cache_policy(s))
    try:
        if outputs is not None:
            from evalgate.trusted import attach_outputs, known_cases, read_outputs

            for note in attach_outputs(plans, read_outputs(outputs, known_cases(plans))):
                ctx.warn(note)
            agent: dict = {}
        else:
            agent = _run_agents(ctx, plans, loaded, runtime, digest, commit, reuse)
        run = engine.run(plans, digest, runtime=runtime, workers=workers)
        if runtime is not None:
            for warning in engine.credential_warnings(runtime, [case for p in plans for case in p.cases]):
                ctx.warn(warning)
    finally:
        if runtime is not None:
            runtime.close()
    run.run.agent = agent
    if outputs is not None:
        from evalgate.trusted import FORK_NOTE

        run.run.outputs = FORK_NOTE
    if s.shard is not None:
        run.shard = ShardInfo(index=s.shard.index, count=s.shard.count, commit=commit)
    _write_results(ctx, run)
    try:
        if agent or outputs is not None:
            from evalgate.infer import write_inference, write_traces

            write_inference(plans, s.out / "inference.jsonl")
            if agent:  # the agent ran on agents-cli dataset cases: their traces, for agents-cli eval grade
                write_traces(plans, s.out / "traces")
        writing.write_text(s.out / "junit.xml", junit_xml(run))
        write_adk_results(run, plans, s.out / "adk")
        write_agents_cli_results(run, traces_of(plans), s.out / AGENTS_CLI_DIR)
    except OSError as e:
        raise _unwritable(s, e) from None
    with ctx.workflow.verbatim():  # case text is the agent's: no workflow commands from it
        ctx.workflow.log(summary_table(run, color=False))
    return run, plans


def _run_agents(ctx: Context, plans: list, loaded, runtime: Any, digest: str, commit: Optional[str], reuse: dict) -> dict:
    """Run the agent where a suite has one (evalgate.infer), with a progress line per tenth;
    each finished case run is written to `out` at once, for a resumed attempt."""
    from evalgate import infer
    from evalgate.reports.terminal import Progress

    s = ctx.settings
    total = infer.total_runs(plans)
    if not total:
        return {}
    reused = f", {len(reuse)} finished ones found in {_shown(s, s.resume)}" if s.resume is not None else ""
    ctx.workflow.log(f"running the agent: {total} case runs{reused}")
    progress = Progress(total, ctx.workflow.stream, label="agent runs", tty=False)
    try:
        journal = infer.Journal(s.out, digest, commit, str(s.shard) if s.shard else None)
    except OSError as e:
        raise _unwritable(s, e) from None
    try:
        return infer.run_agents(plans, loaded, progress=progress.advance, runtime=runtime, journal=journal, reuse=reuse, secrets=ctx.secrets, score_ahead=True)
    finally:
        journal.close()


def merge_shards(ctx: Context, loaded, digest: str) -> Any:
    """Mode merge: the legs' outputs (one folder each under `shards`) merged into `out`.
    Shards of another config or commit are an input error; a missing shard leaves the
    results of the others and `ctx.missing`, which makes the verdict ERROR."""
    from evalgate.merge import merge_partial, read_shard, shard_folders, write
    from evalgate.reports.terminal import summary_table

    s = ctx.settings
    assert s.shards is not None
    shards = [read_shard(p) for p in shard_folders([s.shards])]
    _warn_ignored(ctx, *(sh.results for sh in shards))
    run, missing = merge_partial(shards)
    if run.config_digest != digest:
        raise InputError(
            Problem(_shown(s, s.shards), "config_digest", "the legs ran another config than this job's checkout", "Check out the same commit in the legs and the merge job (one workflow run).")
        )
    commits = {sh.results.shard.commit for sh in shards if sh.results.shard and sh.results.shard.commit}
    if s.sha and commits and commits != {s.sha}:
        raise InputError(
            Problem(_shown(s, s.shards), "shard.commit", f"the legs evaluated {', '.join(c[:12] for c in sorted(commits))}, this run is for {s.sha[:12]}", "Merge only the artifacts of this workflow run (download-artifact without run-id).")
        )
    if missing is not None:
        ctx.missing = f"{missing.problems[0].what}: their cases were not scored, so the gate cannot pass"
        ctx.warn(ctx.missing)
    try:
        write(shards, run, s.out)
    except OSError as e:
        raise _unwritable(s, e) from None
    ctx.workflow.log(f"merged {len(shards)} shards from {_shown(s, s.shards)}: {run.counts.cases} cases")
    with ctx.workflow.verbatim():
        ctx.workflow.log(summary_table(run, color=False))
    return run


def _incomplete(ctx: Context, comparison: Any) -> Any:
    """A merge with missing shards: the verdict is ERROR (evalgate.pipeline.incomplete)."""
    from evalgate.pipeline import incomplete

    return incomplete(comparison, ctx.missing)


def install(s: Settings, workflow: Workflow) -> None:
    """`pip install <install>` in this container, so the agent's code and dependencies are
    importable before anything is loaded. pip's output goes to the log as it comes (in a
    group, with workflow commands off); a failure is the input's problem (exit 2)."""
    if not s.install:
        return
    from evalgate.agents.environment import agent_environment

    # As root in the action's container, pip's root warning is noise.
    command = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--root-user-action=ignore", *s.install]
    workflow.log(f"::group::pip install {shlex.join(s.install)}")
    tail: deque[str] = deque(maxlen=3)
    with workflow.verbatim():
        with subprocess.Popen(
            command, cwd=s.working_directory, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace", bufsize=1,
            env=agent_environment(secrets=[s.token]),  # a setup.py is the project's code: no token, no ACTIONS_*
        ) as pip:
            assert pip.stdout is not None
            for line in pip.stdout:
                workflow.log(line.rstrip("\n"))
                if line.strip():
                    tail.append(line.strip())
        code = pip.returncode
    workflow.log("::endgroup::")
    if code != 0:
        raise InputError(
            Problem(
                None,
                "input 'install' (EVALGATE_INSTALL)",
                f"pip install {shlex.join(s.install)} failed (exit {code}): {' '.join(tail)[-600:]}",
                "Fix the requirements (the log above has pip's full output), or the arguments.",
            )
        )
    importlib.invalidate_caches()  # what pip just installed is importable in this process


def _write_results(ctx: Context, run) -> None:
    from evalgate import results

    try:
        results.write(run, ctx.settings.out / "results.json")
    except OSError as e:
        raise _unwritable(ctx.settings, e) from None


def _unwritable(s: Settings, e: OSError) -> InputError:
    return InputError(
        Problem(
            None,
            "input 'output-dir' (EVALGATE_OUT)",
            f"cannot write the results to {_shown(s, s.out)} ({e.strerror or e})",
            "Set output-dir to a folder of the workspace the action can write (default evalgate-results).",
        )
    )


# --- baselines ---------------------------------------------------------------------------


def _store(ctx: Context, gate, loaded, *, required_for: Optional[str] = None, base_sha: Optional[str] = None):
    """The baseline store the settings name, or None (warned) when it cannot be reached.
    With `base_sha` (PR mode) a `dir` store is read as that commit has it (`_DirAtBase`)."""
    from evalgate.baselines import DirStore, GitHubStore

    if ctx.settings.baseline_store == "dir":
        path = Path(gate.baseline.path)
        base = loaded.base if loaded is not None else ctx.settings.working_directory
        folder = path if path.is_absolute() else base / path
        if base_sha:
            return _dir_at_base(ctx, folder, gate.id, base_sha)
        _no_link(ctx.settings, folder, "gate.baseline.path", "Keep the baseline folder itself in the repository, not a link to it.")  # publish: refused
        return DirStore(folder, gate_id=gate.id)
    client = ctx.client(required_for)
    if client is None:
        ctx.warn("no GitHub token: the baseline store on the data branch cannot be read; judged on absolute thresholds")
        return None
    return GitHubStore(client, branch=gate.baseline.branch, gate_id=gate.id)


def _dir_at_base(ctx: Context, folder: Path, gate_id: str, base_sha: str):
    """A `dir` store in a pull request's checkout: where the folder is committed, its files
    are the pull request's to rewrite (a baseline re-recorded from the regressed agent, or
    deleted so that the pull request's own criteria judge it). So each file is read as the
    base commit has it (contents API, else git); a file the base lacks is read from the
    checkout only when git does not track it there (restored by actions/cache, say).

    Paths are asked of the base as written, never where a link leads: a pull request that
    makes the folder a link (to an empty folder, say) would otherwise have the base asked
    for files it never had, and its own criteria judge it. A folder reached through a link
    is read only as the base commit has it (warned)."""
    from evalgate import writing
    from evalgate.baselines import DirStore
    from evalgate.github import GitHubError
    from evalgate.judge.cache import tracked_files
    from evalgate.under_base import git_show_bytes

    s = ctx.settings
    link = writing.first_link(folder, s.workspace)
    tracked = tracked_files(folder) if link is None else None
    if link is not None:
        ctx.warn(
            f"the baseline folder {Path(os.path.abspath(folder)).relative_to(s.workspace).as_posix()} leads through "
            f"{Path(os.path.abspath(link)).relative_to(s.workspace).as_posix()}, which is a symbolic link: its files were read only as the base commit {base_sha[:12]} has them"
        )
    client = ctx.client()
    warned: list[str] = []

    class _DirAtBase(DirStore):
        def _bytes(self, file: Path) -> Optional[bytes]:
            try:
                rel = Path(os.path.abspath(file)).relative_to(s.workspace).as_posix()
            except ValueError:
                return None  # outside the repository: nothing the base commit could vouch for
            data = None
            if client is not None:
                try:
                    found = client.get_file(rel, base_sha)
                    data = found.content if found is not None else None
                except GitHubError as e:
                    if not warned:
                        warned.append(rel)
                        ctx.warn(f"could not read {rel} at the base commit {base_sha[:12]} ({e}); the baseline folder's committed files were not used")
            else:
                data = git_show_bytes(s.workspace, base_sha, rel)
            if data is not None:
                return data
            if link is not None or writing.first_link(file, s.workspace) is not None:
                return None  # never through a link of the pull request's
            try:
                inside = Path(os.path.abspath(file)).relative_to(os.path.abspath(folder)).as_posix()
            except ValueError:
                return None
            if tracked is None or inside in tracked:
                return None  # the pull request's own copy of a committed file
            return super()._bytes(file)

    return _DirAtBase(folder, gate_id=gate_id)


def _first_parent(ctx: Context) -> Callable[[str], Optional[str]]:
    from evalgate.baselines import git_first_parent
    from evalgate.github import GitHubError

    if ctx.settings.baseline_store == "github":
        walk = ctx.client().first_parent
    else:
        walk = lambda sha: git_first_parent(sha, ctx.settings.working_directory)  # noqa: E731

    def parent(sha: str) -> Optional[str]:
        try:
            return walk(sha)
        except (GitHubError, InputError) as e:
            ctx.warn(f"the history walk stopped at {sha[:12]}: {e}")
            return None

    return parent


def find(ctx: Context, store, gate, sha: Optional[str], *, warn_missing: bool = True):
    """(baseline results, info) of `sha` or its nearest first-parent ancestor, or (None, None)."""
    from evalgate.baselines import find_baseline
    from evalgate.github import GitHubError

    if store is None or not sha:
        return None, None
    try:
        found = find_baseline(store, sha, _first_parent(ctx), gate.baseline.max_depth)
    except GitHubError as e:
        ctx.warn(f"could not read the baseline store: {e}; judged on absolute thresholds")
        return None, None
    if found is None:
        if not warn_missing:
            return None, None
        ctx.warn(
            f"no baseline for {sha[:12]} or its {gate.baseline.max_depth} nearest first-parent ancestors in {store!r}; "
            "judged on absolute thresholds (a push to the default branch saves one)"
        )
        return None, None
    _warn_ignored(ctx, found[0].results)
    return found[0].results, found[1]


def _warn_ignored(ctx: Context, *read: Any) -> None:
    """The keys of stored files another evalgate version wrote that were ignored (evalgate.reading)."""
    from evalgate.reading import read_note

    for value in read:
        if read_note(value):
            ctx.warn(read_note(value))


def _read(ctx: Context, store, what: str, load: Callable[[Any], Any]):
    """`load(store)`; None without a store, or with a warning when GitHub does not answer."""
    from evalgate.github import GitHubError

    if store is None:
        return None
    try:
        return load(store)
    except GitHubError as e:
        ctx.warn(f"could not read {what}: {e}")
        return None


def ledger(ctx: Context, store, gate):
    return _read(ctx, store, "the flake ledger", lambda st: st.load_ledger(gate.id))


def trend(ctx: Context, store, gate):
    """The default branch's trend, as stored before this run; None without one."""
    found = _read(ctx, store, "the trend", lambda st: st.load_trend(gate.id))
    _warn_ignored(ctx, found)
    return found


def _record(ctx: Context, store, gate, run) -> None:
    """Add this default-branch run to the trend."""
    from evalgate.gate.trends import add_point

    s = ctx.settings
    if not s.sha:
        return
    _write_guard("write the trend", lambda: store.save_trend(gate.id, lambda old: add_point(old, gate.id, run, s.sha, s.ref, datetime.now(timezone.utc))))


def _write_guard(what: str, fn: Callable[[], Any]) -> Any:
    from evalgate.github import GitHubForbidden

    try:
        return fn()
    except GitHubForbidden as e:
        raise InputError(
            Problem(None, "input 'github-token' (EVALGATE_GITHUB_TOKEN)", f"the token may not {what}: {e}", "Grant the workflow `permissions: contents: write` on default-branch runs.")
        ) from None


# --- activities --------------------------------------------------------------------------


def _pr_from_event(s: Settings) -> tuple[int, str, str]:
    pr = s.event.get("pull_request")
    try:
        return int(pr["number"]), str(pr["head"]["sha"]), str(pr["base"]["sha"])
    except (TypeError, KeyError, ValueError):
        raise InputError(
            Problem(None, "event payload (GITHUB_EVENT_PATH): pull_request", "the event payload has no pull_request with number, head.sha and base.sha", "Run the pr mode on pull_request events.")
        ) from None


def _publish(ctx: Context, gate, comparison, results, number: Optional[int], head_sha: str, history=None) -> str:
    from evalgate.publish import publish
    from evalgate.reports.markdown import render_comment

    s = ctx.settings
    client = ctx.client()
    if client is None:
        ctx.warn("no GitHub token: no comment and no commit status; the report is in the job summary")
        return ""
    comment = render_comment(comparison, results, gate_id=gate.id, run_url=s.run_url, full_report_hint=FULL_REPORT, trend=history)
    out = publish(
        client,
        comparison,
        comment,
        pr_number=number,
        head_sha=head_sha,
        gate_id=gate.id,
        context=s.status_context or gate.id,
        per_suite=s.status_per_suite,
        target_url=s.run_url,
        counts=(results.counts.passed, results.counts.failed),
        rescored=results.run.outputs is not None,
        inconclusive=gate.inconclusive,
        post_comment=s.comment,
    )
    for warning in out.warnings:
        ctx.warn(warning)
    return out.comment_url or ""


def _base_config_text(ctx: Context, loaded, base_sha: str) -> tuple[Optional[tuple[str, str]], Optional[str]]:
    """The config file as the base commit has it, and its name: through the contents API
    when there is a token, else from git (the checkout's history). A config the pull request
    renamed (evalgate.yaml to evalgate.yml, say) is found under the base's name in the same
    folder: otherwise the pull request would pass for one that adds evalgate, and its own
    policy would judge it. None when the base has no config there or it cannot be read
    (warned); then, when the base has none, the path asked for (as written)."""
    from evalgate.config import CONFIG_NAMES
    from evalgate.github import GitHubError
    from evalgate.under_base import git_show

    s = ctx.settings
    try:
        # The path as written, never a link's target: the base is asked for its own file there.
        rel = Path(os.path.abspath(loaded.path)).relative_to(s.workspace).as_posix()
    except ValueError:
        ctx.warn("the config is outside the repository, so the base commit's gate policy cannot be read; the pull request's own was used")
        return None, None
    folder, _sep, name = rel.rpartition("/")
    names = [name] + [n for n in CONFIG_NAMES if n != name]
    candidates = [(f"{folder}/{n}" if folder else n, n) for n in names]
    client = ctx.client()
    for path, found_name in candidates:
        if client is not None:
            try:
                found = client.get_file(path, base_sha)
            except GitHubError as e:
                ctx.warn(f"could not read {path} at the base commit {base_sha[:12]} ({e}); the pull request's own gate policy was used")
                return None, None
            if found is not None:
                return (found.content.decode("utf-8", errors="replace"), found_name), None
            continue
        text = git_show(s.workspace, base_sha, path)
        if text is not None:
            return (text, found_name), None
    if client is None:
        ctx.warn(f"could not read {rel} at the base commit {base_sha[:12]} from git (fetch-depth: 0 in actions/checkout gives the history); the pull request's own gate policy was used")
        return None, None
    return None, rel  # said in the comment (`_gate_under_base`)


def _base_config(ctx: Context, loaded, base_sha: str) -> tuple[Any, Optional[str]]:
    """The base commit's config (None: the base has no readable config, as when this pull
    request adds evalgate), and the config's path when the base has none."""
    from evalgate.under_base import config_of_text

    found, missing = _base_config_text(ctx, loaded, base_sha)
    if found is None:
        return None, missing
    text, name = found
    try:
        return config_of_text(text, name), None
    except InputError as e:
        ctx.warn(f"the base commit's config is not valid ({e.problems[0].what}); the pull request's own gate policy was used")
        return None, None


def activity_pr(ctx: Context, loaded) -> Outcome:
    """Score the pull request's code under its base's policy: the gate section comes from the
    base commit's config and each suite's criteria from the baseline (evalgate.gate.base_policy); the
    baseline is read before the agent runs. A pull request that changes the policy is
    judged by the base's, and the comment shows the change."""
    number, head_sha, base_sha = _pr_from_event(ctx.settings)
    d = _gate_under_base(ctx, loaded, base_sha)
    url = _publish(ctx, d.gate, d.comparison, d.results, number, head_sha, d.base.trend)
    return Outcome(d.comparison, d.results, url, baseline=d.baseline, trend=d.base.trend)


class _GitHub:
    """The action's source (evalgate.pipeline.Source): the base commit's config through the
    contents API (else git), its baseline, ledger and trend from the store the settings name.
    `trusted` (the publish job): the checkout's config is the default branch's, which judges;
    its `dir` store is read as checked out."""

    def __init__(self, ctx: Context, loaded, base_sha: Optional[str], trusted: bool = False):
        self.ctx, self.loaded, self.base_sha, self.trusted = ctx, loaded, base_sha, trusted

    def base_config(self, loaded) -> tuple[Any, Optional[str]]:
        if self.trusted or not self.base_sha:
            return None, None
        return _base_config(self.ctx, loaded, self.base_sha)

    def baseline(self, gate, base) -> None:
        ctx = self.ctx
        store = _store(ctx, gate, self.loaded) if self.trusted else _store(ctx, gate, self.loaded, base_sha=self.base_sha)
        base.results, base.info = find(ctx, store, gate, self.base_sha)
        base.ledger = ledger(ctx, store, gate)
        base.trend = trend(ctx, store, gate)

    def base_tree(self) -> tuple[Optional[Path], Optional[str], Optional[str]]:
        """The checkout, when it holds the base commit (actions/checkout with fetch-depth: 0)."""
        if self.trusted or not self.base_sha:
            return None, None, _("no base commit is known here")
        workspace = self.ctx.settings.workspace
        try:
            found = subprocess.run(["git", "-C", str(workspace), "cat-file", "-e", f"{self.base_sha}^{{commit}}"], capture_output=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            found = None
        if found is None or found.returncode != 0:
            return None, None, _("the base commit {commit} is not in this clone: actions/checkout with fetch-depth: 0 fetches the history", commit=self.base_sha[:12])
        return Path(workspace), self.base_sha, None


class _Workflow:
    """The action's sink (evalgate.pipeline.Sink) while gating: notes are warnings (the summary
    lists them), the confirmation's lines go to the log, results.json is rewritten in `out`."""

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def note(self, text: str) -> None:
        self.ctx.warn(text)

    def log(self, text: str) -> None:
        from evalgate.reports.terminal import plain

        self.ctx.workflow.log(plain(text))  # a note may quote an agent's error: no control characters in the log

    def rewrote(self, current: Any) -> None:
        _write_results(self.ctx, current)


def _gate_under_base(ctx: Context, loaded, base_sha: str, outputs: Optional[Path] = None, trusted: bool = False):
    """Gate the change (evalgate.pipeline.gate_change) under `base_sha`'s policy against its
    baseline: the decision. The config's gate, judge and vertex sections become the base's
    (`loaded` is changed). With `outputs` (the trusted publish job) no agent runs: the
    pull request's recorded outputs are scored, and a suspect's judge re-drawn."""
    from evalgate.pipeline import gate_change, judge_runtime

    s = ctx.settings
    return gate_change(
        loaded,
        _GitHub(ctx, loaded, base_sha, trusted),
        _Workflow(ctx),
        lambda loaded, policy: score(ctx, loaded, outputs=outputs, policy=policy),
        lambda loaded: lambda: judge_runtime(loaded, s.judge_concurrency, cache_policy=cache_policy(s)),
        gate_of=lambda loaded: _gate(s, loaded),
        secrets=ctx.secrets,
        missing_shards=lambda: ctx.missing,
        agents=outputs is None,
        policy_change=not trusted,
    )


def _merge_group_from_event(s: Settings) -> tuple[str, str]:
    group = s.event.get("merge_group")
    try:
        head_sha, base_sha = str(group["head_sha"]), str(group["base_sha"])
    except (TypeError, KeyError):
        head_sha = base_sha = ""
    if not head_sha or not base_sha:
        raise InputError(
            Problem(None, "event payload (GITHUB_EVENT_PATH): merge_group", "the event payload has no merge_group with head_sha and base_sha", "Run this activity on merge_group events (the merge queue's).")
        )
    return head_sha, base_sha


def activity_merge_group(ctx: Context, loaded) -> Outcome:
    """The merge queue: gate the queue's head commit (the pull request merged onto its target
    and the groups ahead) against its base's baseline under the base's policy, as in PR mode,
    and set the status on that commit, which the queue waits for. No comment: a merge group
    has no pull request to comment on."""
    head_sha, base_sha = _merge_group_from_event(ctx.settings)
    d = _gate_under_base(ctx, loaded, base_sha)
    _publish(ctx, d.gate, d.comparison, d.results, None, head_sha, d.base.trend)
    return Outcome(d.comparison, d.results, baseline=d.baseline, trend=d.base.trend)


def activity_baseline(ctx: Context, loaded) -> Outcome:
    from evalgate.baselines import make_baseline, may_write_baseline
    from evalgate.gate import update_ledger
    from evalgate.pipeline import compare

    s = ctx.settings
    default = _default_branch(s) or _repo_default_branch(ctx)
    if not may_write_baseline(s.event_name, s.ref, default or ""):
        raise InputError(
            Problem(None, "input 'mode' (EVALGATE_MODE)", f"baselines are saved only by push, schedule or manual runs on the default branch ({default or 'unknown'}); this is a '{s.event_name}' run on {s.ref or 'no ref'}", "Use mode: auto, which saves baselines only where that is safe.")
        )
    if not s.sha:
        raise InputError(Problem(None, "GITHUB_SHA", "is not set", "Run evalgate as a step of a GitHub Actions workflow."))
    gate = _gate(s, loaded)
    run, _plans = score(ctx, loaded)
    store = _store(ctx, gate, loaded, required_for="saving the baseline on the data branch")
    parent = _first_parent(ctx)(s.sha)
    # No earlier baseline is expected on the first push after adopting evalgate: a note, not a warning.
    baseline, info = find(ctx, store, gate, parent, warn_missing=False) if parent else (None, None)
    comparison = _incomplete(ctx, compare(baseline, run, gate, ledger(ctx, store, gate), info))
    history = trend(ctx, store, gate)
    if ctx.missing is not None:
        return Outcome(comparison, run, notes=[_("No baseline was saved: a baseline must hold every case.")], baseline=baseline, trend=history)
    _write_guard("write the baseline", lambda: store.save(make_baseline(run, s.sha, s.ref, datetime.now(timezone.utc))))
    _write_guard("write the flake ledger", lambda: store.save_ledger(gate.id, lambda old: update_ledger(old, run, gate.history_runs)))
    _record(ctx, store, gate, run)
    notes = [_("Saved the baseline of `{sha}` and updated the flake ledger and the trend (gate `{gate}`, {where}).", sha=s.sha[:12], gate=gate.id, where=_where(store))]
    if baseline is None:
        notes.append(_("No earlier baseline to compare with: judged on absolute thresholds. Pull requests based on this commit are compared with this baseline."))
    return Outcome(comparison, run, notes=notes, baseline=baseline)


def _where(store) -> str:
    from evalgate.baselines import GitHubStore

    return _("branch `{branch}`", branch=store.branch) if isinstance(store, GitHubStore) else _("the baseline folder")


def _repo_default_branch(ctx: Context) -> Optional[str]:
    from evalgate.github import GitHubError

    client = ctx.client()
    if client is None:
        return None
    try:
        return client.get_repo().get("default_branch")
    except GitHubError as e:
        ctx.warn(f"could not read the repository's default branch: {e}")
        return None


def activity_nightly(ctx: Context, loaded) -> Outcome:
    from entrypoint.tracking import track
    from evalgate.baselines import may_write_baseline
    from evalgate.gate import Verdict, update_ledger
    from evalgate.pipeline import compare
    from evalgate.github import GitHubError
    from evalgate.reports.markdown import render_summary

    s = ctx.settings
    gate = _gate(s, loaded)
    default = _default_branch(s) or _repo_default_branch(ctx)
    on_default = bool(default) and s.ref == f"refs/heads/{default}"
    run, _plans = score(ctx, loaded)
    store = _store(ctx, gate, loaded)
    head = s.sha if on_default else _default_head(ctx, gate, default)
    baseline, info = find(ctx, store, gate, head)
    comparison = _incomplete(ctx, compare(baseline, run, gate, ledger(ctx, store, gate), info))
    history = trend(ctx, store, gate)
    notes = []
    # Only runs of the default branch speak for it: a manual run on a feature branch must
    # neither record its outcomes nor open or close the default branch's tracking issue.
    official = may_write_baseline(s.event_name, s.ref, default or "")
    if not default:
        ctx.warn("the default branch is unknown (it is read through the API with github-token): the flake ledger and the tracking issue were left alone")
    elif not official:
        ctx.warn(f"not a run on the default branch ({default}): the flake ledger and the tracking issue were left alone")
    elif store is not None and ctx.missing is None:
        _write_guard("write the flake ledger", lambda: store.save_ledger(gate.id, lambda old: update_ledger(old, run, gate.history_runs)))
        _record(ctx, store, gate, run)
        notes.append(_("Recorded this run in the flake ledger and the trend (gate `{gate}`).", gate=gate.id))
    failing = comparison.verdict in (Verdict.FAIL, Verdict.ERROR) or (comparison.verdict is Verdict.INCONCLUSIVE and gate.inconclusive == "fail")
    client = ctx.client()
    url = ""
    if not official:
        pass
    elif client is None:
        ctx.warn("no GitHub token: no tracking issue")
    else:
        report = render_summary(comparison, run, gate_id=gate.id, run_url=s.run_url, limit=60_000, full_report_hint=FULL_REPORT, trend=history)
        try:
            tracked = track(client, gate.id, failing, report, s.sha or head or "")
        except GitHubError as e:
            ctx.warn(f"could not update the tracking issue (grant `issues: write`): {e}")
        else:
            url = tracked.url or ""
            if tracked.action != "none":
                notes.append(_("Tracking issue #{number}: {action}.", number=tracked.number, action=_(_TRACKED.get(tracked.action, tracked.action))))
    return Outcome(comparison, run, url, notes, baseline=baseline, trend=history)


_TRACKED = {"opened": mark("opened"), "updated": mark("updated"), "closed": mark("closed")}  # the tracking issue, in the summary's words


def _default_head(ctx: Context, gate, default: Optional[str]) -> Optional[str]:
    from evalgate.github import GitHubError

    client = ctx.client()
    if client is None or not default:
        return None
    try:
        return client.branch_head(default)
    except GitHubError as e:
        ctx.warn(f"could not read the head of {default}: {e}")
        return None


def _artifact(ctx: Context) -> tuple[Path, int, str]:
    """The pull request run's agent outputs (its inference.jsonl, read by `score` for the
    trusted config's cases only) and PR number from the artifact; the head sha
    checked against the event. Nothing else in the artifact is read: no verdict, status,
    count, digest, threshold or policy (evalgate.trusted)."""
    from evalgate.trusted import outputs_file, read_pr_json

    s = ctx.settings
    if s.artifact_dir is None:
        raise InputError(
            Problem(None, "EVALGATE_ARTIFACT_DIR (the step's env)", "the publish mode needs the folder holding the pull request run's inference.jsonl and pr.json", "Download the artifact into the workspace first (actions/download-artifact with run-id: ${{ github.event.workflow_run.id }}), then set EVALGATE_ARTIFACT_DIR to that folder in the evalgate step's env.")
        )
    pr = read_pr_json(s.artifact_dir / "pr.json")
    try:
        number, head_sha = int(pr["number"]), str(pr["head_sha"]).lower()
    except (TypeError, KeyError, ValueError):
        raise InputError(Problem(str(s.artifact_dir / "pr.json"), None, "needs 'number' and 'head_sha'", 'Write {"number": N, "head_sha": "...", "base_sha": "..."} in the pull request run.')) from None
    trusted = s.event.get("workflow_run", {}).get("head_sha") if isinstance(s.event.get("workflow_run"), dict) else None
    if trusted and trusted.lower() != head_sha:
        raise InputError(
            Problem(str(s.artifact_dir / "pr.json"), "head_sha", f"{head_sha[:12]} is not the commit the triggering run tested ({trusted[:12]})", "Publish only the artifact of the workflow_run that triggered this run.")
        )
    return outputs_file(s.artifact_dir / "inference.jsonl"), number, head_sha


def _triggering_run(s: Settings) -> Optional[tuple[str, str, list[int]]]:
    """(head repository, head branch, its pull requests' numbers) of the workflow_run that
    triggered this job, from the event GitHub wrote; None when this is not a workflow_run
    event (mode publish on another event, with an artifact from elsewhere). A workflow_run
    that does not say what it tested is an input error: nothing could bind pr.json to it."""
    run = s.event.get("workflow_run")
    if s.event_name != "workflow_run" and not isinstance(run, dict):
        return None
    run = run if isinstance(run, dict) else {}
    repo = run.get("head_repository")
    name = repo.get("full_name") if isinstance(repo, dict) else None
    branch = run.get("head_branch")
    if not isinstance(name, str) or not name or not isinstance(branch, str) or not branch:
        raise InputError(
            Problem(
                None,
                "event payload (GITHUB_EVENT_PATH): workflow_run",
                "has no head_repository.full_name and head_branch, so the pull request in pr.json cannot be bound to the run that tested it",
                "Run the publish job on workflow_run events (GitHub's payload has both).",
            )
        )
    pulls = [p.get("number") for p in run.get("pull_requests") or [] if isinstance(p, dict)]
    return name, branch, [n for n in pulls if isinstance(n, int)]


def _bound_to_run(s: Settings, pull: dict, number: int) -> None:
    """The pull request pr.json names must be the one the triggering run tested: its head
    repository and branch are the run's, and where GitHub lists the run's pull requests (a
    same-repository branch) it is among them. pr.json only confirms: a fork's run writes it,
    and could otherwise name another pull request whose head is the same commit (its comment
    and status would then be the fork's)."""
    run = _triggering_run(s)
    if run is None:
        return
    run_repo, run_branch, run_pulls = run
    head = pull.get("head") if isinstance(pull.get("head"), dict) else {}
    repo = head.get("repo") if isinstance(head.get("repo"), dict) else {}
    pr_repo, pr_branch = str(repo.get("full_name") or "(a deleted repository)"), str(head.get("ref") or "")
    if pr_repo.lower() != run_repo.lower() or pr_branch != run_branch or (run_pulls and number not in run_pulls):
        raise InputError(
            Problem(
                None,
                "pr.json",
                f"pull request #{number} is {pr_repo}:{pr_branch}; the triggering run tested {run_repo}:{run_branch}"
                + (f" for pull request {', '.join(f'#{n}' for n in run_pulls)}" if run_pulls else ""),
                "Publish only the artifact of the workflow_run that triggered this run: its pr.json names that run's pull request.",
            )
        )


def activity_publish(ctx: Context, loaded) -> Outcome:
    from evalgate.github import GitHubError

    outputs, number, head_sha = _artifact(ctx)
    client = ctx.client(required_for="publishing a pull request's results")
    # The PR's base comes from GitHub, not the artifact: a fork must not choose its baseline.
    try:
        pull = client.get_pull(number)
    except GitHubError as e:
        raise InputError(Problem(None, "pr.json", f"cannot read pull request #{number}: {e}", "Check the artifact's PR number.")) from None
    _bound_to_run(ctx.settings, pull, number)
    current = str((pull.get("head") or {}).get("sha") or "").lower()
    if not current:
        raise InputError(Problem(None, "pr.json", f"pull request #{number} has no head commit", "Check the artifact's PR number."))
    # The trusted checkout's config and eval sets, the trusted job's judge credentials; the
    # artifact gives the agent's outputs only. Gated as a pull request is (evalgate.pipeline).
    d = _gate_under_base(ctx, loaded, pull.get("base", {}).get("sha"), outputs=outputs, trusted=True)
    comparison, run, baseline, history, gate = d.comparison, d.results, d.baseline, d.base.trend, d.gate
    if current != head_sha:
        # Routine: the PR was pushed again while its earlier run was finishing. The newer
        # run publishes its own results; these are for a commit that is no longer the head.
        ctx.warn(
            f"pull request #{number}'s head is now {current[:12]}, not {head_sha[:12]}: these results were not posted. "
            "Either the pull request was pushed again (its newer run publishes its own results), or pr.json names the wrong pull request."
        )
        return Outcome(comparison, run, superseded=True, baseline=baseline, trend=history)
    return Outcome(comparison, run, _publish(ctx, gate, comparison, run, number, head_sha, history), baseline=baseline, trend=history)


def activity_score(ctx: Context, loaded) -> Outcome:
    from evalgate.pipeline import compare

    run, _plans = score(ctx, loaded)
    return Outcome(_incomplete(ctx, compare(None, run, _gate(ctx.settings, loaded))), run)


def activity_shard(ctx: Context, loaded) -> Outcome:
    """A matrix leg: score shard K of N into `out` and stop; the merge job compares and publishes."""
    from evalgate.pipeline import compare

    s = ctx.settings
    _base_scoring(ctx, loaded)
    run, _plans = score(ctx, loaded)
    note = _(
        "Shard {shard}: {cases} scored into `{out}`. Upload that folder (actions/upload-artifact); "
        "the merge job (`mode: merge`) compares the whole run and publishes one verdict.",
        shard=s.shard,
        cases=n_("{n} case", "{n} cases", run.counts.cases),
        out=_shown(s, s.out),
    )
    return Outcome(compare(None, run, _gate(s, loaded)), run, notes=[note], leg=True)


def _base_scoring(ctx: Context, loaded) -> None:
    """A leg of a pull request's (or merge group's) sharded run scores under its base's
    `gate:`, `judge:` and `vertex:` sections, as the merge job compares under them: a pull
    request must not starve the legs' judge (a deadline of a microsecond) to leave its cases
    unheard. The suites' criteria stay the legs' own (docs/gate.md)."""
    from evalgate.gate.base_policy import with_base_policy  # the legs score under the base's sections

    s = ctx.settings
    if s.event_name in PR_EVENTS:
        base_sha = _pr_from_event(s)[2]
    elif s.event_name == "merge_group":
        base_sha = _merge_group_from_event(s)[1]
    else:
        return
    base, _missing = _base_config(ctx, loaded, base_sha)
    if base is not None:
        loaded.config = with_base_policy(loaded.config, base)


ACTIVITIES = {
    "pr": activity_pr,
    "merge_group": activity_merge_group,
    "baseline": activity_baseline,
    "nightly": activity_nightly,
    "publish": activity_publish,
    "score": activity_score,
    "shard": activity_shard,
}


# --- reporting ---------------------------------------------------------------------------


def exit_code(verdict, inconclusive_fails: bool, fail_on: str) -> int:
    from evalgate.gate import Verdict

    if fail_on == "never":
        return EXIT_PASSED
    if verdict in (Verdict.FAIL, Verdict.ERROR) or (verdict is Verdict.INCONCLUSIVE and inconclusive_fails):
        return EXIT_FAILED
    return EXIT_PASSED


def _shown(s: Settings, path: Path) -> str:
    """A path as later steps of the job can use it: relative to the workspace when inside it."""
    try:
        return path.resolve().relative_to(s.workspace).as_posix()
    except ValueError:
        return str(path)


def report(ctx: Context, activity: str, outcome: Outcome, gate) -> int:
    from evalgate.reports.html import REPORT_FILE, write_html
    from evalgate.reports.markdown import render_summary
    from evalgate.reports.sanitize import md

    s = ctx.settings
    comparison, run = outcome.comparison, outcome.results
    summary = render_summary(comparison, run, gate_id=gate.id, run_url=s.run_url, trend=outcome.trend)
    extra = list(outcome.notes) + [f"- :warning: {md(w, 2000)}" for w in ctx.warnings]
    if extra:
        summary = summary.rstrip("\n") + "\n\n" + "\n".join(extra) + "\n"
    report_path = s.out / "report.md"
    from evalgate import writing

    try:
        writing.write_text(report_path, summary)
        write_html(s.out / REPORT_FILE, comparison, run, outcome.baseline, gate_id=gate.id, run_url=s.run_url, trend=outcome.trend)
    except OSError as e:
        raise _unwritable(s, e) from None
    ctx.workflow.summary(summary)
    regressions = sum(1 for suite in comparison.suites for c in suite.changes if c.kind in ("regressed", "broken_stable"))
    ctx.workflow.outputs(
        {
            "verdict": comparison.verdict.value,
            "results-path": _shown(s, s.out / "results.json"),
            "report-path": _shown(s, report_path),
            "comment-url": outcome.comment_url,
            "cases": str(run.counts.cases),
            "passed": str(run.counts.passed),
            "failed": str(run.counts.failed),
            "regressions": str(regressions),
            "activity": activity,
        }
    )
    code = EXIT_PASSED if outcome.superseded or outcome.leg else exit_code(comparison.verdict, gate.inconclusive == "fail", s.fail_on)
    ctx.workflow.log(f"evalgate {activity}: {comparison.verdict.value} ({run.counts.passed} passed, {run.counts.failed} failed, {regressions} regressed); exit {code}")
    return code


def _problem_file(s: Optional[Settings], problem: Problem, cwd: Path) -> Optional[str]:
    """The problem's file relative to the repository root, so the annotation lands on it."""
    if not problem.file:
        return None
    path = (cwd / problem.file).resolve()
    try:
        return path.relative_to(s.workspace if s else cwd.resolve()).as_posix()
    except ValueError:
        return problem.file


def _fatal_summary(workflow: Workflow, title: str, lines: list[str]) -> None:
    workflow.summary(f"## :x: evalgate: {title}\n\n" + "\n".join(lines) + "\n")


def main(argv: Optional[list[str]] = None, env: Optional[MutableMapping[str, str]] = None) -> int:
    """Run the action. `env` defaults to the process environment (tests pass their own)."""
    from evalgate.github import GitHubError
    from evalgate.reports.sanitize import md

    parser = argparse.ArgumentParser(prog="entrypoint", description="The evalgate GitHub Action (configured by EVALGATE_* variables).")
    parser.add_argument("--version", action="version", version=f"evalgate {__version__}")
    parser.parse_args(argv if argv is not None else [])
    from evalgate import i18n

    i18n.reset()  # English until the config says otherwise
    for stream in (sys.stdout, sys.stderr):  # the log shows a lone surrogate in an agent's text as \udXXX, never fails on it
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    env = os.environ if env is None else env
    workflow = Workflow(env.get("GITHUB_OUTPUT"), env.get("GITHUB_STEP_SUMMARY"))
    known = secrets(env)
    for secret in known:
        workflow.mask(secret)
    cwd = Path.cwd()
    # File times come from a coarse clock that can lag time.time() by a tick: a second of slack.
    started = time.time() - 1.0
    settings: Optional[Settings] = None
    loaded = None
    try:
        settings = read_settings(env, cwd)
        # The settings hold the token now; the code under test (install, agents) runs after this.
        from evalgate.agents.environment import withhold

        known += [v for v in withhold(env) if v not in known]
        if settings.google_credentials is not None:
            env["GOOGLE_APPLICATION_CREDENTIALS"] = str(settings.google_credentials)
        os.chdir(settings.working_directory)
        activity = choose_activity(settings)  # before install: a refused event runs no project code
        from evalgate import writing
        from evalgate.judge.cache import session, snapshot

        with writing.confined(settings.workspace if activity in GUARDED else None):
            _no_link(settings, settings.out, "input 'output-dir' (EVALGATE_OUT)", "Remove the link from the repository, or set output-dir to a folder that is not one.")
            # Every judge cache of this run is read as the folder was before any project code ran
            # (install's setup.py, custom metric modules, the agent): what appears later is refused
            # under a pull request's policy, whoever claims to have written it. One view, one
            # folder: the one found now, whatever the config says once project code has run.
            with session():
                cache_folders = _cache_folders(settings)
                for folder in cache_folders:
                    _no_link(settings, folder, "judge.cache_dir (or the cache-dir input)", "Keep the judge cache in a folder of the workspace that is not a link (default .evalgate/cache).")
                    snapshot(folder)
                install(settings, workflow)
                ctx = Context(settings, workflow, env, secrets=tuple(known))
                workflow.log(f"evalgate {__version__}: {activity} ({settings.event_name or 'no event'})")
                # Every activity reads the config; publish re-scores the pull request's outputs under it.
                loaded = _load(settings)
                _keep_cache_folder(ctx, loaded, cache_folders[0])
                outcome = ACTIVITIES[activity](ctx, loaded)
            return report(ctx, activity, outcome, _gate(settings, loaded))
    except InputError as e:
        here = Path.cwd()
        for problem in e.problems:
            workflow.problem(problem, _problem_file(settings, problem, here))
        _fatal_summary(
            workflow,
            "unusable input or configuration",
            [f"- {md(str(p), 4000)}" for p in e.problems]
            + ["", f"{len(e.problems)} problem{'s' if len(e.problems) != 1 else ''}. Nothing was published; fix the input and run again."],
        )
        workflow.outputs({"verdict": "ERROR"})
        return EXIT_INPUT
    except GitHubError as e:
        workflow.error(f"GitHub API: {e}")
        _fatal_summary(workflow, "a GitHub API call failed", [md(str(e), 4000), "", "Check the token's permissions and GitHub's status, then re-run."])
        workflow.outputs({"verdict": "ERROR"})
        return EXIT_INPUT
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a bug of ours: say so plainly; the traceback on request
        workflow.error(f"internal error: {type(e).__name__}: {e}. Please report it.")
        _fatal_summary(workflow, "internal error", [md(f"{type(e).__name__}: {e}", 4000), "", "This is a bug in evalgate; please report it. Re-run with debug logging for the traceback."])
        if env.get("EVALGATE_DEBUG") or env.get("RUNNER_DEBUG") == "1":
            traceback.print_exc()
        return EXIT_INTERNAL
    finally:
        if settings is not None:
            for failure in hand_back(_written(settings, loaded), settings.workspace, started):
                workflow.warning(failure)
        os.chdir(cwd)


def _cache_folders(s: Settings) -> list[Path]:
    """The judge cache folder this run will use, found before any project code runs: the
    cache-dir input, else the config's judge.cache_dir (read here only for that; a config
    that cannot be read is reported later, as always)."""
    if s.cache_dir is not None:
        return [s.cache_dir]
    try:
        loaded = _load(s)
    except InputError:
        return [s.working_directory / ".evalgate" / "cache"]
    folder = Path(loaded.config.judge.cache_dir)
    return [folder if folder.is_absolute() else loaded.base / folder]


def _keep_cache_folder(ctx: Context, loaded, folder: Path) -> None:
    """The judge cache is the folder whose view was taken before `install` ran: project code
    (a setup.py, a build backend) that rewrites judge.cache_dir to a folder it filled does not
    move it. Said when the config now names another folder."""
    named = Path(loaded.config.judge.cache_dir)
    named = named if named.is_absolute() else loaded.base / named
    if ctx.settings.cache_dir is None and os.path.abspath(named) != os.path.abspath(folder):
        ctx.warn(
            f"judge.cache_dir names {_shown(ctx.settings, named)} now, not the folder found before the install step "
            f"({_shown(ctx.settings, folder)}); that one was used"
        )
    loaded.config = loaded.config.model_copy(update={"judge": loaded.config.judge.model_copy(update={"cache_dir": os.path.abspath(folder)})})


def _written(s: Settings, loaded) -> list[Path]:
    """The folders the run may have written into the workspace."""
    paths = [s.out, s.working_directory / ".evalgate"]
    if s.shards is not None:
        paths.append(s.shards)
    if s.cache_dir is not None:
        paths.append(s.cache_dir)
    if loaded is not None:
        paths.append(loaded.base / loaded.config.judge.cache_dir)
        if s.baseline_store == "dir":
            paths.append(loaded.base / loaded.config.gate.baseline.path)
    return paths


def _has_config() -> bool:
    from evalgate.config import CONFIG_NAMES

    return any(Path(n).exists() for n in CONFIG_NAMES)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
