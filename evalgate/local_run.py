"""`evalgate run`'s work on a developer's machine: run the agents, score, write the run's
files and print its summary (`evalgate run`, `merge` and `gate` share it; the action has
its own log and files: entrypoint/main.py).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Optional

from evalgate.i18n import _, n_
from evalgate.pipeline import EXIT_FAILED, EXIT_PASSED, judge_runtime


def select_cases(plans, patterns: list[str] | None):
    """`--case`: keep the matching cases in the plans; None when every case runs."""
    if not patterns:
        return None
    from evalgate.plan import select_cases as select

    return select(plans, patterns)


@contextmanager
def gc_paused(pause: bool = True) -> Iterator[None]:
    """Python's cyclic garbage collector off for a step that only builds and reads data.

    Loading, scoring and writing a large run create millions of small objects and almost
    no reference cycles; each of the collector's passes scans every live object, and those
    passes took about half of a 10,000-invocation run (issue 12). Reference counting still
    frees what the step drops. Steps that talk to agents or judges (long, and their
    clients do leave cycles) run with the collector on."""
    if not pause or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def run_and_write(loaded: Any, plans: list, args: Any) -> Any:
    """`evalgate run` on `plans`: run the agents where suites have one, score, write the
    outputs into `args.out` and print the summary; the results. `args` holds run's options
    (`evalgate gate` hands its own: the options it lacks are run's defaults)."""
    from evalgate import engine, infer
    from evalgate.plan import config_digest, selected_digest
    from evalgate.reports.terminal import Progress, plain
    from evalgate.results import SelectionInfo, ShardInfo
    from evalgate.shards import current_commit, select as select_shard

    digest = config_digest(loaded, plans)  # of the whole run: every shard's is the same
    selection = select_cases(plans, args.case)
    if selection is not None and not args.quiet:
        print(selection, file=sys.stderr)
    shard = args.shard
    resume = getattr(args, "resume", None)
    commit = current_commit(loaded.base) if shard or resume or infer.total_runs(plans) else None
    if shard is not None:
        held = select_shard(plans, shard)
        if not args.quiet:
            print(held, file=sys.stderr)
    out = Path(args.out)
    reuse = infer.resumable(Path(resume), digest, commit) if resume else {}

    total = sum(len(p.cases) for p in plans)
    runtime, workers = None, 1
    if infer.needs_runtime(plans):
        runtime, workers = judge_runtime(loaded, args.judge_concurrency, args.no_cache)
    agent: dict = {}
    runs_total = infer.total_runs(plans)
    try:
        if runs_total:
            journal = _journal(out, digest, commit, shard)
            try:
                live = getattr(args, "agent_logs", "capture") == "live"
                # Live log lines are the progress; a bar would be drawn over them.
                with Progress(runs_total, sys.stderr, enabled=not args.quiet and not live, label=_("agent runs"), tty=sys.stderr.isatty()) as agent_progress:
                    logs = infer.LogOptions(live=sys.stderr if live else None, failed=None if args.quiet else _failed_line(agent_progress))
                    agent = infer.run_agents(plans, loaded, progress=agent_progress.advance, runtime=runtime, journal=journal, reuse=reuse, logs=logs, score_ahead=True)
            finally:
                journal.close()
        with Progress(total, sys.stderr, enabled=sys.stderr.isatty() and not args.quiet) as progress, gc_paused(runtime is None):
            # A selection's results carry their own digest (the journal keeps the config's, so
            # --resume reuses a case's runs whatever chose it).
            scored = digest if selection is None else selected_digest(digest, selection.patterns)
            run = engine.run(plans, scored, progress=progress.advance, runtime=runtime, workers=workers)
    finally:
        if runtime is not None:
            runtime.close()
    if runtime is not None and args.quiet:  # otherwise the summary says it
        for warning in engine.credential_warnings(runtime, [case for p in plans for case in p.cases]):
            print(_("warning: {text}", text=plain(warning)), file=sys.stderr)

    run.run.agent = agent
    if selection is not None:
        run.selection = SelectionInfo(patterns=selection.patterns, cases=selection.cases, of=selection.of)
    if shard is not None:
        run.shard = ShardInfo(index=shard.index, count=shard.count, commit=commit)
    with gc_paused():
        traces = write_outputs(run, plans, out, gate=loaded.config.gate)
        print_summary(run, out, args, agent, resumed_from=resume, traces=traces)
    return run


def _failed_line(progress):
    """One line on stderr per failed case run, as it ends: which, and why (its log is in the results)."""
    from evalgate.reports.terminal import failed_run_line

    def failed(suite, case, run) -> None:
        progress.note(failed_run_line(suite, case.eval_id, run.run if len(case.runs) > 1 else None, run.error or "", run.log))

    return failed


def _journal(out: Path, digest: str, commit, shard):
    from evalgate.errors import InputError, Problem
    from evalgate.infer import Journal

    try:
        return Journal(out, digest, commit, str(shard) if shard else None)
    except OSError as e:
        raise InputError(Problem(str(out), None, f"cannot write the results there ({e.strerror or e})", "Pass --out a folder you can write to.")) from None


def write_outputs(run, plans, out: Path, gate) -> Optional[Path]:
    """Write the run's files into `out`; the agents-cli traces file, when one was written."""
    from evalgate import infer, results, writing
    from evalgate.errors import InputError, Problem
    from evalgate.reports.adk_results import write_adk_results
    from evalgate.reports.agents_cli import DIR as AGENTS_CLI_DIR, traces_of, write_agents_cli_results
    from evalgate.reports.junit import junit_xml

    try:
        infer.write_inference(plans, out / "inference.jsonl")
        traces = infer.write_traces(plans, out / "traces")
        results.write(run, out / "results.json")
        writing.write_text(out / "junit.xml", junit_xml(run))
        write_adk_results(run, plans, out / "adk")
        write_agents_cli_results(run, traces_of(plans), out / AGENTS_CLI_DIR)
        write_html_alone(run, out, gate)
        return traces
    except OSError as e:
        raise InputError(Problem(str(out), None, f"cannot write the results there ({e.strerror or e})", "Pass --out a folder you can write to.")) from None


def write_html_alone(run, out: Path, gate) -> None:
    """report.html of a run on its own: the verdict on absolute thresholds, as `compare` without a baseline gives it."""
    from evalgate.pipeline import compare
    from evalgate.reports.html import REPORT_FILE, write_html

    write_html(out / REPORT_FILE, compare(None, run, gate), run, gate_id=gate.id)


def print_summary(run, out: Path, args: argparse.Namespace, agent: dict, resumed_from: str | None = None, traces: Optional[Path] = None) -> None:
    from evalgate.reports import duration, incomplete_note
    from evalgate.reports.terminal import summary_table

    color = not args.no_color and sys.stdout.isatty() and "NO_COLOR" not in os.environ
    if args.quiet:
        c = run.counts
        # TRANSLATORS: the quiet one-line verdict; {incomplete} is empty or "; N incomplete, ...".
        print(_("evalgate: {status} ({passed} passed, {failed} failed, {not_evaluated} not evaluated{incomplete})", status=run.status.value, passed=c.passed, failed=c.failed, not_evaluated=c.not_evaluated, incomplete=incomplete_note(c)))
        return
    print(summary_table(run, color=color))
    for name, u in (agent.get("suites") or {}).items():
        tokens = _(", {tokens} model tokens", tokens=f"{u['tokens']['total']:,}") if "total" in u.get("tokens", {}) else ""
        failed = _(", {failed} failed", failed=u["failed"]) if u["failed"] else ""
        reused = _(", {reused} reused from {folder}", reused=u["reused"], folder=resumed_from) if u.get("reused") else ""
        print(_("agent: {suite}: {runs}{failed}{reused} in {seconds}{tokens}", suite=name, runs=n_("{n} case run", "{n} case runs", u["case_runs"]), failed=failed, reused=reused, seconds=duration(agent["seconds"]), tokens=tokens))
    inference = (out / "inference.jsonl").is_file() and agent
    outputs = _("  agent outputs: {path}", path=out / "inference.jsonl") if inference else ""
    print(_("results: {results}  junit: {junit}", results=out / "results.json", junit=out / "junit.xml") + outputs)
    if (out / "report.html").is_file():
        print(_("report: {path}", path=out / "report.html"))
    if traces is not None:
        # TRANSLATORS: the agents-cli traces of the run (agents-cli is a program's name).
        print(_("traces for agents-cli eval grade: {path}", path=traces))


def run_exit(run) -> int:
    """`run` and `merge`: exit 1 when a suite failed or nothing in it was evaluated (an agent
    that never ran is no pass: a CI job must not read green for it)."""
    if run.counts.cases == 0:  # a shard that holds no case: nothing to pass or fail
        return EXIT_PASSED
    return EXIT_PASSED if run.status.value == "PASSED" else EXIT_FAILED
