"""The one pipeline that gates a change: load under the base's policy, run, score, judge
pairs, compare, confirm, compare again; the way in renders what it decided.

Every way in calls `gate_change`: `evalgate gate` (evalgate.local_gate), the action's `pr`
and `merge_group` activities and a sharded run's merge job (entrypoint/main.py), and the
trusted half of the fork-safe flow (`publish`). They differ in two small seams only:

- a `Source`: where the base's config, baseline, flake ledger and trend come from (git and
  files for `evalgate gate`; the GitHub API and the data branch for the action);
- a `Sink`: where the notes, the rewritten results and the verdict go (the terminal,
  comment.md and report.html; the workflow log, the comment, the status and the summary),

and in how the agent's outputs are had (`run`: run here, merge the legs' outputs, or take a
fork's recorded outputs). The decision itself is evalgate.gate's, which imports nothing from
here: what it needs (the criteria's scales, the side-by-side verdicts, the re-runs) is
handed in.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Protocol

from evalgate.i18n import _, n_

EXIT_PASSED, EXIT_FAILED = 0, 1

# (judge runtime or None, workers): a judge runtime made when a step needs one.
MakeRuntime = Callable[[], tuple[Any, int]]


@dataclass
class Base:
    """What a change is compared with, as its source found it."""

    config: Any = None  # the base commit's Config; None: unknown or unreadable (the working tree's decides)
    missing: Optional[str] = None  # the config's path when the base commit has no file there
    results: Any = None  # the baseline's results; None: judged on absolute thresholds
    info: Any = None  # evalgate.gate.model.BaselineInfo
    ledger: Any = None  # the default branch's flake ledger
    trend: Any = None  # the default branch's runs before this one (evalgate.gate.trends)


class Source(Protocol):
    def base_config(self, loaded: Any) -> tuple[Any, Optional[str]]:
        """(the base commit's config or None, the config's path when the base has none there)."""

    def baseline(self, gate: Any, base: Base) -> None:
        """Fill `base` with the baseline of the base commit (or its nearest first-parent
        ancestor's) under the gate section `gate`, and its store's ledger and trend."""

    def base_tree(self) -> tuple[Optional[Path], Optional[str], Optional[str]]:
        """(the git repository, the base commit) whose tree the confirmation step may check
        out to run a suspect's agent at the base commit (evalgate.gate.control), or (None,
        None, why not): no git checkout, the commit not in this clone, no agent run here."""


class Sink(Protocol):
    def note(self, text: str) -> None:
        """A note for the reader, said before the verdict (a warning in the action)."""

    def log(self, text: str) -> None:
        """A line about the work (the confirmation runs): the terminal or the workflow log."""

    def rewrote(self, current: Any) -> None:
        """`current` changed after it was written (confirmation re-runs): write it again."""


@dataclass
class Decision:
    """What `gate_change` decided, for the way in to render and publish."""

    comparison: Any
    results: Any  # the run's results (with the confirmation re-runs)
    plans: list
    base: Base
    gate: Any  # the gate section in force (the base's)
    baseline: Any = None  # the baseline as compared (cut to the run's shard or selection)


def gate_change(
    loaded: Any,
    source: Source,
    sink: Sink,
    run: Callable[[Any, Callable[[list], None]], tuple[Any, list]],
    make_runtime: Callable[[Any], MakeRuntime],
    *,
    gate_of: Callable[[Any], Any] = lambda loaded: loaded.config.gate,
    secrets: tuple[str, ...] = (),
    missing_shards: Callable[[], Optional[str]] = lambda: None,
    agents: bool = True,
    policy_change: bool = True,
) -> Decision:
    """Gate a change: `loaded` (the working config) under its base's policy, run and scored by
    `run(loaded, policy)` (which calls `policy(plans)` before anything runs and returns the
    results and the plans), compared with the base's baseline.

    `make_runtime(loaded)` gives a maker of judge runtimes (the side-by-side judge, the
    confirmation runs). `gate_of(loaded)` is the gate section in force (the action's inputs
    may override its id or branch). `missing_shards()`: why the run is incomplete (a merge
    whose legs did not all arrive), which makes the verdict ERROR. `agents`: whether a
    suspect's agent may be re-run here (not in the trusted publish job, which never runs the
    pull request's code: its suspects' judges are re-drawn instead). `policy_change`: whether
    the working config's own policy is shown against the base's (not where the config is
    the trusted one)."""
    from evalgate.gate.base_policy import scoring_policy, with_base_policy
    from evalgate.under_base import UnderBase

    own = loaded.config
    base = Base()
    base.config, base.missing = source.base_config(loaded)
    if base.config is not None:  # the base's gate, judge and vertex sections decide
        loaded.config = with_base_policy(own, base.config)
    gate = gate_of(loaded)
    source.baseline(gate, base)
    under = UnderBase(
        own.gate,
        base.config.gate if base.config is not None else None,
        base.results,
        base.missing,
        scoring_policy(own),
        scoring_policy(base.config) if base.config is not None else None,
    )

    def policy(plans: list) -> None:
        for note in under.apply(plans):
            sink.note(note)

    current, plans = run(loaded, policy)
    baseline = cut_to_run(base.results, current)
    runtime = make_runtime(loaded)
    pairs = pairwise(gate, baseline, current, runtime)  # gate.pairwise (off by default)
    comparison = compare(baseline, current, gate, base.ledger, base.info, pairwise=pairs)
    done = confirm(comparison, current, plans, loaded, gate, runtime, sink, secrets, agents, baseline, source.base_tree) if plans else None
    if done is not None:
        comparison = compare(baseline, current, gate, base.ledger, base.info, pairwise=pairs)
        if further(done, comparison, sink):
            comparison = compare(baseline, current, gate, base.ledger, base.info, pairwise=pairs)
    comparison = cached_new_cases(incomplete(comparison, missing_shards()), current)
    comparison.gate_change = under.change() if policy_change else None
    if base.missing is not None and policy_change:
        comparison.reasons.insert(
            0, _("the base commit has no {file}: this pull request's own gate section was used, shown whole as the change", file=base.missing)
        )
    return Decision(comparison, current, plans, base, gate, baseline)


# --- the steps ---------------------------------------------------------------------------


def compare(baseline: Any, current: Any, gate: Any, ledger: Any = None, info: Any = None, pairwise: Any = None) -> Any:
    """The gate's decision (evalgate.gate.compare), handed the criteria's scales."""
    from evalgate.criteria import scales
    from evalgate.gate import compare as decide

    return decide(baseline, current, gate, ledger, info, pairwise=pairwise, scales=scales())


def cut_to_run(baseline: Any, current: Any) -> Any:
    """The baseline cut to what the run holds: shard K of N's cases (`run --shard`), or the
    cases `--case` chose, so no other case reads as removed."""
    if baseline is None:
        return None
    if current.shard is not None and baseline.shard is None:
        baseline = shard_of_results(baseline, current.shard)
    if current.selection is not None and baseline.selection is None:
        baseline = selected_baseline(baseline, current.selection)
    return baseline


def pairwise(gate: Any, baseline: Any, current: Any, make_runtime: MakeRuntime) -> Optional[dict]:
    """gate.pairwise: the changed answers judged side by side (evalgate.pairwise) on a judge
    runtime of their own; None when off or without a baseline."""
    policy = getattr(gate, "pairwise", None)
    if policy is None or not policy.enabled or baseline is None:
        return None
    from evalgate.pairwise import judge_pairs

    runtime, _workers = make_runtime()
    with runtime:
        return judge_pairs(baseline, current, policy, runtime)


def confirm(
    comparison: Any,
    current: Any,
    plans: list,
    loaded: Any,
    gate: Any,
    make_runtime: MakeRuntime,
    sink: Sink,
    secrets: tuple[str, ...] = (),
    agents: bool = True,
    baseline: Any = None,
    base_tree: Optional[Callable[[], tuple[Optional[Path], Optional[str], Optional[str]]]] = None,
) -> Optional["Confirmation"]:
    """Confirmation runs (`gate.confirm`), in the order evalgate.gate.control describes:
    the suspects the gate picks (evalgate.gate.confirm.suspects) re-run `runs` times into
    `current` (evalgate.rerun); a suspect whose re-runs both failed and passed re-run `runs`
    times more (control.more); a suspect that failed every re-run (control.wanted) run
    `runs` times at the base commit too, its agent in the base commit's tree (`base_tree()`
    says where, or why not), those runs scored into `baseline`'s case `.reruns` (in memory:
    `baseline` is the comparison's, never written to a store). Results written again;
    what was re-run (a `Confirmation`, for `further`), or None when nothing was, so the
    caller compares again when there is one. Its notes (how many were
    re-run, at the base commit or why not, left out by max_cases, or had nothing to re-run)
    go to the sink's log; the counts
    into `current.run.agent["confirm"]`, outside the comparable payload."""
    from evalgate.gate import control
    from evalgate.gate.confirm import rerun_any, suspects
    from evalgate.rerun import rerun

    policy = gate.confirm
    if policy.runs < 1 or comparison.baseline is None:
        return None
    chosen, left = suspects(comparison, current, policy.max_cases, flips=gate.deterministic_flips == "fail")
    skipped = {(k.suite, k.eval_set_id, k.eval_id) for s in comparison.suites for c in s.criteria for k in c.first_day_skipped}
    skipped -= {(s.suite, s.eval_set_id, s.eval_id) for s in chosen}  # re-run for another reason (a flip, a crash)
    if skipped:  # evalgate.gate.firstday.could_decide; the verdict's reasons name them
        sink.log(_("confirmation: {cases} first-day suspect case(s) not re-run: too few to FAIL their criterion without history "
                   "(the verdict's reasons say how many it would take)", cases=len(skipped)))
    if not chosen:
        return None
    kept: dict = {}
    counts = rerun(chosen, plans, loaded, policy.runs, make_runtime, current, secrets, agents=agents, kept=kept)
    judge = {s.name: {c.criterion: c.judge for c in s.criteria} for s in comparison.suites}
    cases = {(s.name, c.eval_set_id, c.eval_id): c for s in current.suites for c in s.cases}

    def reruns(s: Any) -> Optional[list]:
        return cases[s.suite, s.eval_set_id, s.eval_id].reruns

    again = [s for s in chosen if (s.suite, s.eval_set_id, s.eval_id) in kept
             and control.more(reruns(s), s.criteria, judge.get(s.suite, {}), policy.runs, s.stable)]
    if again:
        more = rerun(again, plans, loaded, policy.runs, make_runtime, current, secrets, agents=agents, kept=kept)
        counts["agent"] += more["agent"]
        counts["more"] = more["agent"]
    wanted = [s for s in chosen if control.wanted(reruns(s), s.criteria, judge.get(s.suite, {})) or not reruns(s)]
    for note in _confirm_notes(counts, len(chosen), left, policy.runs, len(again)):
        sink.log(note)
    counts.update(at_base(wanted, kept, plans, loaded, policy.runs, make_runtime, baseline, secrets, agents, base_tree, sink))
    if counts.get("base"):
        sink.log(_("confirmation: {cases} suspect case(s) that failed every re-run also run {runs} time(s) each at the base commit {commit}, as a control ({agent} agent runs)",
                   cases=counts["base_cases"], runs=policy.runs, commit=counts["base_commit"][:12], agent=counts["base"]))
    current.run.agent = {**current.run.agent, "confirm": {"suspects": len(chosen), "left_out": left, **counts}}
    if not rerun_any(current):
        return None
    sink.rewrote(current)
    return Confirmation(chosen, kept, judge, reruns, counts, plans, loaded, policy.runs, make_runtime, current, secrets, agents)


@dataclass
class Confirmation:
    """What `confirm` re-ran, for its further round (`further`): the suspects, each one's agent
    re-runs so far (`kept`, evalgate.rerun), per suite {criterion: judge?}, the case's re-runs
    in the results (`reruns(suspect)`), the counts written into the results, and what
    re-running takes."""

    chosen: list
    kept: dict
    judge: dict
    reruns: Callable[[Any], Optional[list]]
    counts: dict
    plans: list
    loaded: Any
    runs: int
    make_runtime: MakeRuntime
    current: Any
    secrets: tuple[str, ...]
    agents: bool


def further(done: Confirmation, comparison: Any, sink: Sink) -> bool:
    """The further round of confirmation (evalgate.gate.control.extension): where the
    comparison with the re-runs in leaves a criterion's breakage test suggestive but not
    decisive, its undecided stable suspects whose agent was re-run are re-run
    `EXTEND x runs` times more, appended to their re-runs. Results written again; whether
    any was, so the caller compares again."""
    from evalgate.gate import control
    from evalgate.rerun import rerun

    chosen = [s for s in control.extension(comparison, done.chosen, done.reruns, done.judge)
              if (s.suite, s.eval_set_id, s.eval_id) in done.kept]
    if not chosen:
        return False
    runs = control.EXTEND * done.runs
    counts = rerun(chosen, done.plans, done.loaded, runs, done.make_runtime, done.current, done.secrets, agents=done.agents,
                   kept=done.kept)
    if counts.get("unstarted"):
        sink.log(_("confirmation: the agent could not start here ({why}): {cases} suspect case(s) not re-run further, their re-runs "
                   "so far stand", why=counts.get("why"), cases=counts["unstarted"]))
    if not counts["agent"]:
        return False
    done.counts["agent"] += counts["agent"]
    done.counts["further"] = counts["agent"]
    done.current.run.agent = {**done.current.run.agent, "confirm": {**done.current.run.agent.get("confirm", {}), **done.counts}}
    sink.log(_("confirmation: the breakage test was suggestive but not decisive (p < {p} before Holm): {cases} suspect case(s) "
               "that passed some re-runs re-run {runs} time(s) more each ({agent} agent runs)",
               p=f"{control.EXTEND_P:g}", cases=len(chosen), runs=runs, agent=counts["agent"]))
    sink.rewrote(done.current)
    return True


def at_base(
    wanted: list,
    kept: dict,
    plans: list,
    loaded: Any,
    runs: int,
    make_runtime: MakeRuntime,
    baseline: Any,
    secrets: tuple[str, ...],
    agents: bool,
    base_tree: Optional[Callable[[], tuple[Optional[Path], Optional[str], Optional[str]]]],
    sink: Sink,
) -> dict:
    """The control (evalgate.gate.control): the `wanted` suspects' agent run `runs` times at
    the base commit, beside their pull-request re-runs, with the same runner and installed
    environment, the agent's files as the base commit has them (a detached `git worktree`
    of the base commit in a temporary folder, removed after). Their scored runs go into
    `baseline`'s cases' `.reruns`. Where that cannot be (recorded outputs, no agent run in
    this job, a running server, no base commit in this clone), the sink's log says so and
    the gate decides without the control. Returns {"base": agent runs made at the base commit,
    "base_commit": its sha} or {}."""
    if not wanted or baseline is None:
        return {}
    plan_of = {p.name: p for p in plans}
    runnable = [s for s in wanted if (s.suite, s.eval_set_id, s.eval_id) in kept]
    recorded = [s for s in wanted if plan_of[s.suite].agent is None]
    unrun = [s for s in wanted if plan_of[s.suite].agent is not None and s not in runnable]

    def without(cases: int, why: str) -> None:
        sink.log(_("confirmation: {cases} suspect case(s) could not be run at the base commit as a control ({why}): decided without it",
                    cases=cases, why=why))

    if recorded:
        without(len(recorded), _("their outputs were recorded: no agent runs here"))
    if unrun and not agents:
        without(len(unrun), _("this job runs no agent"))
    if not runnable:
        return {}
    why = None
    if any(plan_of[s.suite].agent.url is not None for s in runnable):
        why = _("the agent is a running server (agent.url), which serves the pull request's code")
    repo = commit = None
    if why is None:
        repo, commit, why = base_tree() if base_tree is not None else (None, None, _("no base commit is known here"))
    if why is None and repo is not None and commit is not None:
        with base_checkout(repo, commit, loaded) as (there, failed):
            if there is not None:
                counts = _rerun_at(runnable, plans, there, runs, make_runtime, baseline, secrets)
                if counts.get("unstarted"):
                    why = _("the agent could not start in the base commit's tree ({why})", why=counts.get("why"))
                else:
                    return {"base": counts["agent"], "base_cases": len(runnable), "base_commit": commit}
            else:
                why = failed
    without(len(runnable), why or _("no base commit is known here"))
    return {"base": 0}


def _rerun_at(chosen: list, plans: list, there: Any, runs: int, make_runtime: MakeRuntime, baseline: Any, secrets: tuple[str, ...]) -> dict:
    from evalgate.rerun import rerun

    return rerun(chosen, plans, there, runs, make_runtime, None, secrets, kept={}, into=baseline, only_agent=True)


@contextlib.contextmanager
def base_checkout(repo: Path, commit: str, loaded: Any) -> Iterator[tuple[Any, Optional[str]]]:
    """(`loaded` as seen inside the base commit's tree, None) for the time of the `with`: a
    detached `git worktree` of `commit` in a temporary folder, removed after; the config's
    folder (its relative paths: the agent's module or command) is the same folder inside
    that tree. (None, why) when git cannot check it out there."""
    import dataclasses
    import shutil
    import subprocess
    import tempfile

    top = Path(repo).resolve()
    try:
        inside = Path(loaded.base).resolve().relative_to(top)
    except ValueError:
        yield None, _("the config is outside the repository {repo}", repo=str(repo))
        return
    tmp = Path(tempfile.mkdtemp(prefix="evalgate-base-"))
    tree = tmp / (top.name or "tree")  # named as the repository: an agent folder at its top (`adk: .`) keeps its package name
    try:
        added = subprocess.run(["git", "-C", str(top), "worktree", "add", "--detach", "--quiet", str(tree), commit],
                               capture_output=True, text=True, errors="replace", timeout=600)
    except (OSError, subprocess.SubprocessError) as e:
        added = subprocess.CompletedProcess([], 1, "", str(e))
    try:
        if added.returncode != 0:
            yield None, _("git could not check out the base commit {commit}: {error}", commit=commit[:12],
                          error=(added.stderr.strip().splitlines() or ["?"])[-1])
            return
        yield dataclasses.replace(loaded, base=tree / inside), None
    finally:
        if added.returncode == 0:
            subprocess.run(["git", "-C", str(top), "worktree", "remove", "--force", str(tree)], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run(["git", "-C", str(top), "worktree", "prune"], capture_output=True)


def _confirm_notes(counts: dict, chosen: int, left: int, runs: int, again: int = 0) -> list[str]:
    notes = []
    if counts["agent"] or counts["judge"]:
        notes.append(_("confirmation: {cases} suspect case(s) re-run {runs} time(s) each ({agent} agent runs, {judge} judge re-draws)",
                       cases=chosen - counts["none"] - counts["unstarted"], runs=runs, agent=counts["agent"], judge=counts["judge"]))
    if again:
        notes.append(_("confirmation: {cases} suspect case(s) failed some re-runs and passed others: re-run {runs} time(s) more each ({agent} agent runs, counted above)",
                       cases=again, runs=runs, agent=counts.get("more", 0)))
    if counts.get("unstarted"):
        notes.append(_("confirmation: the agent could not start here ({why}): {cases} suspect case(s) not re-run, the first run stands",
                       why=counts.get("why"), cases=counts["unstarted"]))
    if counts["none"]:
        notes.append(_("confirmation: {cases} suspect case(s) of recorded outputs and deterministic criteria: nothing to re-run, the first run stands",
                       cases=counts["none"]))
    if left:
        notes.append(_("confirmation: {cases} more suspect case(s) beyond gate.confirm.max_cases were not re-run; their criteria keep the first run's test",
                       cases=left))
    return notes


def incomplete(comparison: Any, missing: Optional[str]) -> Any:
    """A merge with missing shards: the verdict is ERROR, whatever the shards that arrived say."""
    from evalgate.gate import Verdict

    if missing is None:
        return comparison
    comparison.verdict = Verdict.ERROR
    comparison.reasons.insert(0, missing)
    return comparison


def cached_new_cases(comparison: Any, run: Any) -> Any:
    """Say in each suite's reasons (the comment and the summary show them) how many judge
    verdicts of the cases the change added or changed came from the cache. Those cases have
    no baseline to be compared with, so their verdict is all there is; a reader should know
    it was not asked afresh (a pull request's run believes only default-branch runs' entries:
    entrypoint.main.cache_policy)."""
    for suite in comparison.suites:
        new = {(k.eval_set_id, k.eval_id) for k in (*suite.added, *suite.changed)}
        if not new:
            continue
        result = next((r for r in run.suites if r.name == suite.name), None)
        cases = [c for c in (result.cases if result is not None else []) if (c.eval_set_id, c.eval_id) in new]
        hits = sum(c.judge_cache_hits or 0 for c in cases)
        if hits:
            with_hits = sum(1 for c in cases if c.judge_cache_hits)
            suite.reasons.append(
                _(
                    "judge cache: {verdicts} of {cases} came from the cache, not from the judge",
                    verdicts=n_("{n} verdict", "{n} verdicts", hits),
                    cases=n_("{n} added or changed case", "{n} added or changed cases", with_hits),
                )
            )
    return comparison


# --- what every way in shares --------------------------------------------------------------


def judge_runtime(loaded: Any, concurrency: Optional[int] = None, no_cache: bool = False, cache_policy: Any = None) -> tuple[Any, int]:
    """The run's judge runtime, from the config's judge section (`concurrency`, `no_cache`:
    the command line's). `cache_policy` (evalgate.judge.cache.CachePolicy): whose cached
    verdicts the run believes; a local run's by default. Second, the case threads to use."""
    from evalgate.judge.cache import CachePolicy
    from evalgate.judge.runtime import JudgeRuntime

    judge = loaded.config.judge
    concurrency = concurrency or judge.concurrency
    cache_dir = Path(judge.cache_dir)
    runtime = JudgeRuntime(
        concurrency=concurrency,
        rpm=judge.rpm,
        timeout_s=judge.timeout_s,
        deadline_s=judge.deadline_s,
        max_attempts=judge.max_attempts,
        cache_dir=cache_dir if cache_dir.is_absolute() else loaded.base / cache_dir,
        use_cache=judge.cache and not no_cache,
        cache_policy=cache_policy or CachePolicy(),
        vertex_project=loaded.config.vertex.project,
        vertex_location=loaded.config.vertex.location,
        vertex_endpoint=loaded.config.vertex.endpoint,
        early_stop=judge.early_stop,
        # With confirmation runs a suspect's re-runs re-draw its failures, so early stopping may
        # stop on failing samples too (the plain majority rule; bench/README.md measured it);
        # without them, samples that all failed are drawn to the end.
        stop_on_failing=loaded.config.gate.confirm.runs > 0,
    )
    # Case threads mostly wait on the judge; enough of them to keep the pool full.
    return runtime, concurrency * 4


def exit_code(verdict: Any, gate: Any) -> int:
    """1 when the gate fails (FAIL, ERROR, or INCONCLUSIVE under `inconclusive: fail`), else 0."""
    from evalgate.gate import Verdict

    if verdict in (Verdict.FAIL, Verdict.ERROR):
        return EXIT_FAILED
    if verdict is Verdict.INCONCLUSIVE and gate.inconclusive == "fail":
        return EXIT_FAILED
    return EXIT_PASSED


def selected_baseline(baseline: Any, selection: Any) -> Any:
    """The baseline's cases that `selection`'s patterns choose, as `run --case` would have run
    them: suites derived again from those cases, and the digest a selection of it would carry."""
    from evalgate.engine import derived_warnings, finish_run, finish_suite
    from evalgate.plan import case_matches, selected_digest

    suites = []
    for suite in baseline.suites:
        cases = [c for c in suite.cases if case_matches(c.eval_id, selection.patterns)]
        if cases:
            kept = [w for w in suite.warnings if w not in derived_warnings(suite)]
            suites.append(finish_suite(suite.name, suite.not_evaluated_policy, cases, suite.criteria, kept, suite.agent_error))
    out = finish_run(suites, selected_digest(baseline.config_digest, selection.patterns), baseline.run)
    out.evalgate_version, out.selection = baseline.evalgate_version, selection
    return out


def shard_of_results(results: Any, shard: Any) -> Any:
    """The results of the cases shard K of N holds (evalgate.shards), counts and statuses
    recomputed: a baseline cut to what `run --shard` ran, so no other case reads as removed."""
    from evalgate.engine import derived_warnings, finish_run, finish_suite
    from evalgate.shards import shard_of

    suites = []
    for suite in results.suites:
        cases = [c for c in suite.cases if shard_of(suite.name, c.eval_set_id, c.eval_id, shard.count) == shard.index]
        derived = derived_warnings(suite)  # finish_suite derives these again
        warnings = [w for w in suite.warnings if w not in derived]
        suites.append(finish_suite(suite.name, suite.not_evaluated_policy, cases, suite.criteria, warnings, suite.agent_error if cases else None))  # type: ignore[arg-type]
    cut = finish_run(suites, results.config_digest, results.run)
    cut.evalgate_version = results.evalgate_version
    return cut
