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

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Protocol

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
    if plans and confirm(comparison, current, plans, loaded, gate, runtime, sink, secrets, agents):
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
) -> bool:
    """Confirmation runs (`gate.confirm`): the suspects the gate picks (evalgate.gate.confirm.
    suspects) re-run into `current` (evalgate.rerun), results written again; whether anything
    was re-run, so the caller compares again. Its notes (how many were re-run, left out by
    max_cases, or had nothing to re-run) go to the sink's log; the counts into
    `current.run.agent["confirm"]`, outside the comparable payload. One step: what else
    confirms a suspect (re-running it at the base commit too) belongs here."""
    from evalgate.gate.confirm import rerun_any, suspects
    from evalgate.rerun import rerun

    policy = gate.confirm
    if policy.runs < 1 or comparison.baseline is None:
        return False
    chosen, left = suspects(comparison, current, policy.max_cases, flips=gate.deterministic_flips == "fail")
    if not chosen:
        return False
    counts = rerun(chosen, plans, loaded, policy.runs, make_runtime, current, secrets, agents=agents)
    current.run.agent = {**current.run.agent, "confirm": {"suspects": len(chosen), "left_out": left, **counts}}
    for note in _confirm_notes(counts, len(chosen), left, policy.runs):
        sink.log(note)
    if not rerun_any(current):
        return False
    sink.rewrote(current)
    return True


def _confirm_notes(counts: dict, chosen: int, left: int, runs: int) -> list[str]:
    notes = []
    if counts["agent"] or counts["judge"]:
        notes.append(_("confirmation: {cases} suspect case(s) re-run {runs} time(s) each ({agent} agent runs, {judge} judge re-draws)",
                       cases=chosen - counts["none"] - counts["unstarted"], runs=runs, agent=counts["agent"], judge=counts["judge"]))
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
