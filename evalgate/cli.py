"""The `evalgate` command: run, validate, merge, compare, gate, baseline, schema.

Exit codes: 0 passed, 1 failed, 2 unusable input or configuration, 3 internal error;
141 when stdout's reader went away (as SIGPIPE would end a tool).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from evalgate import __version__, i18n
from evalgate.i18n import LANGUAGES, _, n_

EXIT_PASSED, EXIT_FAILED, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_BROKEN_PIPE = 128 + 13  # 128 + SIGPIPE: what a shell reports for a tool that a closed pipe ended


def _concurrency(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= 256:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number from 1 to 256")
    return n


def _shard(text: str):
    from evalgate.shards import parse_shard

    try:
        return parse_shard(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _shard_count(text: str) -> int:
    return _shard(f"1/{text}").count


def _pattern(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty pattern; write a glob on eval_id, e.g. 'refund_*'")
    return text.strip()


_CASE_HELP = "run only the cases whose eval_id matches PATTERN (a glob: * ? [abc]); repeat for more. For trying changes: such results are not a baseline."


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evalgate",
        description="Score agent eval sets with ADK's criteria and gate on the results.",
    )
    parser.add_argument("--version", action="version", version=f"evalgate {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", help="score every suite and write results (exit 1 when a suite fails)")
    run.add_argument("--config", "-c", help="config file (default: evalgate.yaml, evalgate.yml or evalgate.json here)")
    run.add_argument("--out", "-o", default="evalgate-results", help="output folder (default: %(default)s)")
    run.add_argument("--language", choices=LANGUAGES, help="language of the reports and the summary: en, ko or ja (default: the config's report.language, else en)")
    run.add_argument("--no-color", action="store_true", help="plain terminal output")
    run.add_argument("--quiet", "-q", action="store_true", help="print only the verdict line")
    run.add_argument("--no-cache", action="store_true", help="ignore the judge verdict cache (neither read nor write it)")
    run.add_argument("--judge-concurrency", type=_concurrency, metavar="N", help="judge requests in flight at once, 1-256 (default: the config's, 8)")
    run.add_argument("--shard", type=_shard, metavar="K/N", help="run only shard K of N (a CI matrix leg); `evalgate merge` puts the shards together")
    run.add_argument("--case", action="append", type=_pattern, metavar="PATTERN", help=_CASE_HELP)
    run.add_argument("--resume", metavar="DIR", help="reuse the finished agent runs of an earlier, interrupted or partly failed run of this config in DIR (its --out); run only the rest")
    run.add_argument(
        "--agent-logs",
        choices=["capture", "live"],
        default="capture",
        help="what the agent, its tools and ADK write while cases run: kept per case run in results.json, inference.jsonl and "
        "report.html (capture, the default), and also shown on stderr as it comes, each line prefixed by its case run (live)",
    )
    run.set_defaults(func=cmd_run)

    init = sub.add_parser(
        "init",
        help="find an ADK project's agents and eval sets; write evalgate.yaml and three GitHub workflows (never overwrites a file)",
    )
    init.add_argument("dir", nargs="?", default=".", metavar="DIR", help="the ADK project's folder, the one you run `adk web` from (default: here)")
    init.add_argument("--action", metavar="REF", help="the evalgate action the workflows use, e.g. owner/evalgate@<commit-sha> (default: OWNER/evalgate@v1, to replace)")
    init.add_argument("--branch", metavar="NAME", help="the default branch, where baselines are saved (default: origin's HEAD, else main or master)")
    init.add_argument("--dry-run", action="store_true", help="print what would be written; write nothing")
    init.set_defaults(func=cmd_init)

    validate = sub.add_parser("validate", help="check the config and every data file without scoring")
    validate.add_argument("--config", "-c", help="config file")
    validate.add_argument("--case", action="append", type=_pattern, metavar="PATTERN", help="count only the cases whose eval_id matches PATTERN, as `run --case` would run them")
    validate.add_argument("--shards", type=_shard_count, metavar="N", help="also say how many cases each of N shards would hold")
    validate.set_defaults(func=cmd_validate)

    merge = sub.add_parser("merge", help="merge the outputs of `run --shard K/N` into one run's outputs (exit 1 when a suite fails)")
    merge.add_argument("shards", nargs="+", metavar="DIR", help="shard output folders, or a folder holding them (one subfolder each)")
    merge.add_argument("--out", "-o", default="evalgate-results", help="output folder (default: %(default)s)")
    merge.add_argument("--language", choices=LANGUAGES, help="language of the reports and the summary: en, ko or ja (default: the config's report.language, else en)")
    merge.add_argument("--no-color", action="store_true", help="plain terminal output")
    merge.add_argument("--quiet", "-q", action="store_true", help="print only the verdict line")
    merge.set_defaults(func=cmd_merge)

    compare = sub.add_parser("compare", help="compare a run with a baseline; print the PR report (exit 1 when the gate fails)")
    compare.add_argument("--current", required=True, help="this run's results.json")
    where = compare.add_mutually_exclusive_group()
    where.add_argument("--baseline", help="the baseline: a results.json or a saved baseline file")
    where.add_argument("--base-sha", metavar="REF", help="look the baseline up in the config's store: this commit (any git revision) or its nearest first-parent ancestor (local git)")
    compare.add_argument("--config", "-c", help="config whose 'gate' section sets the policy (default: evalgate.yaml here, if any)")
    compare.add_argument("--output", "-o", help="also write the Markdown report to this file")
    compare.add_argument("--language", choices=LANGUAGES, help="language of the reports and the summary: en, ko or ja (default: the config's report.language, else en)")
    compare.add_argument("--run-url", help="link to the CI run, shown in the report")
    compare.add_argument("--html", metavar="PATH", help="where to write the HTML report (default: report.html beside --current)")
    compare.set_defaults(func=cmd_compare)

    gate = sub.add_parser(
        "gate",
        help="the pull request gate, locally: run, compare with the base commit's baseline under its policy, write comment.md and report.html (exit 1 when the gate fails)",
    )
    gate.add_argument("--config", "-c", help="config file (default: evalgate.yaml, evalgate.yml or evalgate.json here)")
    gate.add_argument("--out", "-o", default="evalgate-results", help="output folder (default: %(default)s)")
    gate_base = gate.add_mutually_exclusive_group()
    gate_base.add_argument("--base-sha", metavar="REF", help="the base commit (any git revision); its baseline, or its nearest first-parent ancestor's, from the store (default: the merge-base of HEAD and the default branch)")
    gate_base.add_argument("--baseline", metavar="FILE", help="compare with this results.json or saved baseline file instead")
    gate.add_argument("--language", choices=LANGUAGES, help="language of the reports and the summary: en, ko or ja (default: the config's report.language, else en)")
    gate.add_argument("--no-color", action="store_true", help="plain terminal output")
    gate.add_argument("--quiet", "-q", action="store_true", help="print only the verdict line (and notes)")
    gate.add_argument("--no-cache", action="store_true", help="ignore the judge verdict cache (neither read nor write it)")
    gate.add_argument("--judge-concurrency", type=_concurrency, metavar="N", help="judge requests in flight at once, 1-256 (default: the config's, 8)")
    gate.add_argument("--shard", type=_shard, metavar="K/N", help="run and gate only shard K of N, against the baseline's cases of that shard")
    gate.add_argument("--case", action="append", type=_pattern, metavar="PATTERN", help=_CASE_HELP + " The baseline is cut to the same cases.")
    gate.set_defaults(func=cmd_gate)

    baseline = sub.add_parser("baseline", help="save or show baselines in the config's store")
    bsub = baseline.add_subparsers(dest="baseline_command", metavar="ACTION", required=True)
    save = bsub.add_parser("save", help="save a run's results as the baseline of a commit, and record it in the flake ledger and the trend")
    save.add_argument(
        "--results",
        required=True,
        nargs="+",
        metavar="RESULTS",
        help="the run's results.json; several runs of the same commit, oldest first, each go into the flake ledger "
        "(the first day: history for the gate at once) and the last is the baseline",
    )
    save.add_argument("--commit", required=True, help="the commit the results belong to (any git revision: a sha, short or full, a branch, a tag)")
    save.add_argument("--ref", default="", help="the branch, e.g. refs/heads/main")
    save.add_argument("--config", "-c", help="config file (its gate section names the store)")
    save.add_argument("--store", metavar="DIR", help="save into this folder instead of the config's store: a checkout of the github store's data branch, to push")
    save.set_defaults(func=cmd_baseline_save)
    imp = bsub.add_parser(
        "import",
        help="save the scores another tool graded as the baseline of a commit, for the config's suite: an agents-cli results file (results_<ts>.json)",
    )
    imp.add_argument("--agents-cli", required=True, nargs="+", dest="agents_cli", metavar="FILE", help="what `agents-cli eval grade` or `eval run` wrote: artifacts/grade_results/results_<ts>.json; several gradings of one commit go into the flake ledger, the last is the baseline")
    imp.add_argument("--commit", required=True, help="the commit the results belong to (any git revision; a full sha needs no git)")
    imp.add_argument("--ref", default="", help="the branch, e.g. refs/heads/main")
    imp.add_argument("--config", "-c", help="config file (default: evalgate.yaml, evalgate.yml or evalgate.json here): its suite's cases and criteria, its gate section's store")
    imp.add_argument("--suite", metavar="NAME", help="the suite the results belong to (default: the config's only suite, else the one holding their cases)")
    imp.add_argument("--eval-set", dest="eval_set", metavar="ID", help="the eval set of every graded case, where the suite has several (a dataset's id is its file name without .json; default: the one holding each case's id)")
    imp.add_argument("--store", metavar="DIR", help="save into this folder instead of the config's store: a checkout of the github store's data branch, to push (default: the config's gate.baseline)")
    imp.set_defaults(func=cmd_baseline_import)
    show = bsub.add_parser("show", help="show the baseline of a commit (or of its nearest ancestor that has one)")
    show.add_argument("--commit", required=True, help="the commit (any git revision); its baseline, or its nearest first-parent ancestor's")
    show.add_argument("--config", "-c", help="config file")
    show.add_argument("--json", action="store_true", help="print the whole baseline as JSON")
    show.set_defaults(func=cmd_baseline_show)

    schema = sub.add_parser("schema", help="print a JSON Schema: the config (default), results, inference JSONL or agent-io lines")
    schema.add_argument("which", nargs="?", metavar="SCHEMA", choices=["config", "results", "inference", "agent-io"], default="config", help="config (default), results, inference or agent-io")
    schema.set_defaults(func=cmd_schema)
    return parser


def _load(config_arg: str | None):
    from evalgate.config import find_config, load_config
    from evalgate.plan import build_plans

    loaded = load_config(find_config(config_arg))
    i18n.configured(loaded.config.report.language)
    return loaded, build_plans(loaded)


def _select(plans, patterns: list[str] | None):
    """`--case`: keep the matching cases in the plans; None when every case runs."""
    if not patterns:
        return None
    from evalgate.plan import select_cases

    return select_cases(plans, patterns)


def _judge_runtime(loaded, args: argparse.Namespace, cache_policy=None):
    """The run's judge runtime, from the config's judge section and the command line.
    `cache_policy` (evalgate.judge.cache.CachePolicy): the action's; a local run by default."""
    from evalgate.judge.cache import CachePolicy
    from evalgate.judge.runtime import JudgeRuntime

    judge = loaded.config.judge
    concurrency = args.judge_concurrency or judge.concurrency
    cache_dir = Path(judge.cache_dir)
    runtime = JudgeRuntime(
        concurrency=concurrency,
        rpm=judge.rpm,
        timeout_s=judge.timeout_s,
        deadline_s=judge.deadline_s,
        max_attempts=judge.max_attempts,
        cache_dir=cache_dir if cache_dir.is_absolute() else loaded.base / cache_dir,
        use_cache=judge.cache and not args.no_cache,
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


def cmd_init(args: argparse.Namespace) -> int:
    from evalgate.scaffold import init

    return init(args.dir, args.action, args.branch, args.dry_run, sys.stdout)


def cmd_validate(args: argparse.Namespace) -> int:
    from evalgate import infer
    from evalgate.reports.terminal import plain  # a warning may quote an eval set's text

    loaded, plans = _load(args.config)
    infer.check(plans, loaded)
    selection = _select(plans, args.case)
    cases = sum(len(p.cases) for p in plans)
    suites_word = "suite" if len(plans) == 1 else "suites"
    cases_word = "case" if cases == 1 else "cases"
    print(f"{loaded.shown}: OK, {len(plans)} {suites_word}, {cases:,} {cases_word}")
    if selection is not None:
        print(f"  {selection}")
    for plan in plans:
        if plan.agent is not None:
            runs = f", {plan.agent.num_runs} runs each" if plan.agent.num_runs > 1 else ""
            print(f"  {plan.name}: runs the agent ({plan.agent.kind}) on {len(plan.cases)} cases{runs}")
    if args.shards:
        from evalgate.shards import describe

        print(f"  {args.shards} shards hold {describe(plans, args.shards)}")
    for plan in plans:
        for warning in plan.warnings:
            print(_("warning: {text}", text=plain(f"{plan.name}: {warning}")), file=sys.stderr)
    return EXIT_PASSED


@contextmanager
def _gc_paused(pause: bool = True) -> Iterator[None]:
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


def cmd_run(args: argparse.Namespace) -> int:
    with _gc_paused():
        loaded, plans = getattr(args, "planned", None) or _load(args.config)  # `evalgate gate` plans under the base's policy

    from evalgate import engine, infer
    from evalgate.plan import config_digest, selected_digest
    from evalgate.reports.terminal import Progress, plain
    from evalgate.results import SelectionInfo, ShardInfo
    from evalgate.shards import current_commit, select

    digest = config_digest(loaded, plans)  # of the whole run: every shard's is the same
    selection = _select(plans, args.case)
    if selection is not None and not args.quiet:
        print(selection, file=sys.stderr)
    shard = args.shard
    commit = current_commit(loaded.base) if shard or args.resume or infer.total_runs(plans) else None
    if shard is not None:
        held = select(plans, shard)
        if not args.quiet:
            print(held, file=sys.stderr)
    out = Path(args.out)
    reuse = infer.resumable(Path(args.resume), digest, commit) if args.resume else {}

    total = sum(len(p.cases) for p in plans)
    runtime, workers = None, 1
    if infer.needs_runtime(plans):
        runtime, workers = _judge_runtime(loaded, args)
    agent: dict = {}
    runs_total = infer.total_runs(plans)
    try:
        if runs_total:
            journal = _journal(out, digest, commit, shard)
            try:
                live = args.agent_logs == "live"
                # Live log lines are the progress; a bar would be drawn over them.
                with Progress(runs_total, sys.stderr, enabled=not args.quiet and not live, label=_("agent runs"), tty=sys.stderr.isatty()) as agent_progress:
                    logs = infer.LogOptions(live=sys.stderr if live else None, failed=None if args.quiet else _failed_line(agent_progress))
                    agent = infer.run_agents(plans, loaded, progress=agent_progress.advance, runtime=runtime, journal=journal, reuse=reuse, logs=logs, score_ahead=True)
            finally:
                journal.close()
        with Progress(total, sys.stderr, enabled=sys.stderr.isatty() and not args.quiet) as progress, _gc_paused(runtime is None):
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
    with _gc_paused():
        traces = _write_outputs(run, plans, out, gate=loaded.config.gate)
        _print_summary(run, out, args, agent, resumed_from=args.resume, traces=traces)
    return _run_exit(run)


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


def _write_outputs(run, plans, out: Path, gate) -> Optional[Path]:
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
        _write_html(run, out, gate)
        return traces
    except OSError as e:
        raise InputError(Problem(str(out), None, f"cannot write the results there ({e.strerror or e})", "Pass --out a folder you can write to.")) from None


def _write_html(run, out: Path, gate) -> None:
    """report.html of a run on its own: the verdict on absolute thresholds, as `compare` without a baseline gives it."""
    from evalgate.gate import compare
    from evalgate.reports.html import REPORT_FILE, write_html

    write_html(out / REPORT_FILE, compare(None, run, gate), run, gate_id=gate.id)


def _print_summary(run, out: Path, args: argparse.Namespace, agent: dict, resumed_from: str | None = None, traces: Optional[Path] = None) -> None:
    from evalgate.reports import incomplete_note
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
        print(_("agent: {suite}: {runs}{failed}{reused} in {seconds} s{tokens}", suite=name, runs=n_("{n} case run", "{n} case runs", u["case_runs"]), failed=failed, reused=reused, seconds=f"{agent['seconds']:.1f}", tokens=tokens))
    inference = (out / "inference.jsonl").is_file() and agent
    outputs = _("  agent outputs: {path}", path=out / "inference.jsonl") if inference else ""
    print(_("results: {results}  junit: {junit}", results=out / "results.json", junit=out / "junit.xml") + outputs)
    if (out / "report.html").is_file():
        print(_("report: {path}", path=out / "report.html"))
    if traces is not None:
        # TRANSLATORS: the agents-cli traces of the run (agents-cli is a program's name).
        print(_("traces for agents-cli eval grade: {path}", path=traces))


def cmd_merge(args: argparse.Namespace) -> int:
    from evalgate.config import GateConfig
    from evalgate.errors import InputError, Problem
    from evalgate.merge import merge_folders

    out = Path(args.out)
    _merge_language()
    try:
        with _gc_paused():
            run, shards = merge_folders([Path(p) for p in args.shards], out)
            _write_html(run, out, GateConfig())
    except OSError as e:
        raise InputError(Problem(str(out), None, f"cannot write the merged results there ({e.strerror or e})", "Pass --out a folder you can write to.")) from None
    _warn_ignored(*(s.results for s in shards))
    if not args.quiet:
        print(_("merged {shards}: {cases}", shards=n_("{n} shard", "{n} shards", len(shards)), cases=n_("{n} case", "{n} cases", run.counts.cases)), file=sys.stderr)
    _print_summary(run, out, args, run.run.agent)
    return _run_exit(run)


def _merge_language() -> None:
    """`merge` speaks the config's report.language, like the runs it merges, when the config is
    in this folder (--language, if given, wins): the merged suites' warnings are derived again here."""
    from evalgate.config import CONFIG_NAMES, find_config, load_config

    if any(Path(n).exists() for n in CONFIG_NAMES):
        i18n.configured(load_config(find_config(None)).config.report.language)


def _warn_ignored(*read: Any) -> None:
    """The keys of files another evalgate version wrote that were ignored (evalgate.reading)."""
    from evalgate.reading import read_note
    from evalgate.reports.terminal import plain  # the keys are the file's, which a fork may write

    for value in read:
        if read_note(value):
            print(_("warning: {text}", text=plain(read_note(value))), file=sys.stderr)


def _gate_config(config_arg: str | None, required: bool = False):
    """The config's gate section (and the config's folder), or defaults when there is no config."""
    from evalgate.config import CONFIG_NAMES, GateConfig, find_config, load_config

    if config_arg or required or any(Path(n).exists() for n in CONFIG_NAMES):
        loaded = load_config(find_config(config_arg))
        i18n.configured(loaded.config.report.language)
        from evalgate.confine import config_path_problems
        from evalgate.errors import InputError

        problems = config_path_problems(loaded)  # the baseline folder among them
        if problems:
            raise InputError(problems)
        return loaded.config.gate, loaded.base
    return GateConfig(), Path.cwd()


def _store(gate, base: Path):
    from evalgate.gate.baselines import DirStore
    from evalgate.errors import InputError, Problem

    if gate.baseline.store != "dir":
        raise InputError(
            Problem(None, "gate.baseline.store", "the github store is used by the GitHub Action, not by this command", "Use the action, or set store: dir for local baselines.")
        )
    path = Path(gate.baseline.path)
    return DirStore(path if path.is_absolute() else base / path, gate_id=gate.id)


def _read_baseline_or_results(path: Path):
    """(results, baseline info or None) from a results.json or a saved baseline (gzipped or not)."""
    from evalgate.gate.baselines import baseline_from, decode_baseline
    from evalgate.gate import BaselineInfo
    from evalgate.errors import InputError, display_path, parse_json, problems_from_validation, read_text
    from evalgate.reading import read_known
    from evalgate.results import RunResults
    from pydantic import ValidationError

    shown = display_path(path)
    if path.is_file() and path.read_bytes()[:2] == b"\x1f\x8b":  # gzipped, as the stores keep them
        baseline = decode_baseline(path.read_bytes(), shown)
    else:
        data = parse_json(read_text(path, shown), shown)
        try:
            if isinstance(data, dict) and "provenance" in data:
                baseline = baseline_from(data, shown)
            else:
                return read_known(RunResults, data, shown), None
        except ValidationError as e:
            raise InputError(problems_from_validation(e, shown)) from None
    p = baseline.provenance
    return baseline.results, BaselineInfo(commit=p.commit, requested_commit=p.commit, distance=0, created_at=p.created_at)


def _whole_run(run, shown: str) -> None:
    """Shard results hold a part of the cases: compared alone, every other case would read as removed."""
    from evalgate.errors import InputError, Problem

    if run.shard is not None:
        raise InputError(
            Problem(shown, "shard", f"holds shard {run.shard.index} of {run.shard.count}, not the whole run", "Merge the shards first (evalgate merge DIR... --out DIR), then compare the merged results.json.")
        )


def _not_a_selection(run, shown: str) -> None:
    """The results of `run --case` hold some cases only: as a baseline, every other case would
    read as removed on the next pull request (and come back as added after it)."""
    from evalgate.errors import InputError, Problem

    if run.selection is not None:
        s = run.selection
        raise InputError(
            Problem(shown, "selection", f"holds the {s.cases} of {s.of} cases `run --case` chose, not the whole run", "Run every case (evalgate run without --case) to make a baseline.")
        )


def _selected_baseline(baseline, selection):
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


def _run_exit(run) -> int:
    """`run` and `merge`: exit 1 when a suite failed or nothing in it was evaluated (an agent
    that never ran is no pass: a CI job must not read green for it)."""
    if run.counts.cases == 0:  # a shard that holds no case: nothing to pass or fail
        return EXIT_PASSED
    return EXIT_PASSED if run.status.value == "PASSED" else EXIT_FAILED


def _exit_for(verdict, gate) -> int:
    from evalgate.gate import Verdict

    if verdict in (Verdict.FAIL, Verdict.ERROR):
        return EXIT_FAILED
    if verdict is Verdict.INCONCLUSIVE and gate.inconclusive == "fail":
        return EXIT_FAILED
    return EXIT_PASSED


def _pairwise(config_arg: str | None, gate, baseline, current):
    """gate.pairwise: the changed answers judged side by side (evalgate.gate.pairwise), on a judge
    runtime from the config's judge section; None when off or without a baseline."""
    if not gate.pairwise.enabled or baseline is None:
        return None
    from evalgate.config import find_config, load_config
    from evalgate.gate.pairwise import run_pairwise

    return run_pairwise(load_config(find_config(config_arg)), gate, baseline, current)


def cmd_compare(args: argparse.Namespace) -> int:
    from evalgate import results
    from evalgate.gate.baselines import find_baseline, git_first_parent
    from evalgate.gate import compare
    from evalgate.errors import InputError, Problem
    from evalgate.reports.html import REPORT_FILE, write_html
    from evalgate.reports.markdown import render_summary

    gate, base = _gate_config(args.config, required=bool(args.base_sha))
    current = results.read(Path(args.current))
    _whole_run(current, args.current)
    baseline, info, ledger, trend = None, None, None, None
    if args.baseline:
        baseline, info = _read_baseline_or_results(Path(args.baseline))
    elif args.base_sha:
        from evalgate.local_gate import resolve_commit

        store = _store(gate, base)
        found = find_baseline(store, resolve_commit(args.base_sha, base), git_first_parent, gate.baseline.max_depth)
        if found is not None:
            baseline, info = found[0].results, found[1]
        ledger = store.load_ledger(gate.id)
        trend = store.load_trend(gate.id)
    _warn_ignored(current, baseline, trend)
    if baseline is not None and current.selection is not None and baseline.selection is None:
        baseline = _selected_baseline(baseline, current.selection)
        print(_("compared the cases --case chose ({cases} of {of}) with the same cases of the baseline ({baseline})", cases=current.selection.cases, of=current.selection.of, baseline=baseline.counts.cases), file=sys.stderr)
    comparison = compare(baseline, current, gate, ledger, info, pairwise=_pairwise(args.config, gate, baseline, current))
    if current.selection is not None:
        s = current.selection
        comparison.reasons.insert(
            0, i18n._("a selection: {cases} of the config's {total} cases, chosen by {command}", cases=s.cases, total=s.of, command="run --case " + " --case ".join(s.patterns))
        )
    report = render_summary(comparison, current, gate_id=gate.id, run_url=args.run_url, trend=trend)
    if args.output:
        from evalgate import writing

        writing.write_text(Path(args.output), report)
    html_path = Path(args.html) if args.html else Path(args.current).parent / REPORT_FILE
    try:
        write_html(html_path, comparison, current, baseline, gate_id=gate.id, run_url=args.run_url, trend=trend)
    except OSError as e:
        raise InputError(Problem(str(html_path), None, f"cannot write the HTML report there ({e.strerror or e})", "Pass --html a path you can write to.")) from None
    print(report)
    print(_("report: {path}", path=html_path), file=sys.stderr)
    return _exit_for(comparison.verdict, gate)


def cmd_gate(args: argparse.Namespace) -> int:
    from evalgate.local_gate import gate

    return gate(args)


def cmd_baseline_save(args: argparse.Namespace) -> int:
    from evalgate import results
    from evalgate.errors import InputError, Problem, display_path
    from evalgate.local_gate import resolve_commit

    gate, base = _gate_config(args.config)
    commit = resolve_commit(args.commit, base, "--commit")
    runs = []
    for path in args.results:
        run = results.read(Path(path))
        _whole_run(run, path)
        _not_a_selection(run, path)
        runs.append(run)
    digests = {r.config_digest for r in runs}
    if len(digests) > 1:
        raise InputError(Problem(None, "--results", f"the {len(runs)} runs were made with different configs or eval sets", "Give runs of one commit and config (evalgate run, repeated)."))
    if args.store:  # the data branch's layout is the dir store's
        from evalgate.gate.baselines import DirStore

        store = DirStore(Path(args.store), gate_id=gate.id)
    else:
        store = _store(gate, base)
    _save_baseline(store, gate, runs, commit, args.ref)
    into = f", and {len(runs)} runs into the flake ledger" if len(runs) > 1 else ""
    print(f"saved the baseline of {commit} for gate '{gate.id}' in {display_path(store.path)}{into}")
    return EXIT_PASSED


def _save_baseline(store, gate, runs: list, commit: str, ref: str) -> None:
    """The last of `runs` (of one commit) saved as the baseline of `commit`; every one recorded
    in the flake ledger, the last in the trend."""
    from datetime import datetime, timezone

    from evalgate.gate import update_ledger
    from evalgate.gate.baselines import make_baseline
    from evalgate.gate.trends import add_point

    run = runs[-1]
    now = datetime.now(timezone.utc)
    store.save(make_baseline(run, commit, ref, now))

    def appended(old):
        for r in runs:
            old = update_ledger(old, r, gate.history_runs)
        return old

    store.save_ledger(gate.id, appended)
    store.save_trend(gate.id, lambda old: add_point(old, gate.id, run, commit, ref, now))


def cmd_baseline_import(args: argparse.Namespace) -> int:
    from evalgate.agents_cli.baseline import choose_suite, import_results, read_results
    from evalgate.errors import display_path
    from evalgate.local_gate import resolve_commit
    from evalgate.plan import config_digest

    loaded, plans = _load(args.config)
    commit = resolve_commit(args.commit, loaded.base, "--commit")
    digest = config_digest(loaded, plans)
    from evalgate.reports.terminal import plain  # ids and names are the file's

    runs, plan = [], None
    for name in args.agents_cli:
        shown = display_path(Path(name))
        graded, created = read_results(Path(name), shown)
        plan = plan or choose_suite(plans, graded, args.suite, shown)  # every file for the first one's suite
        imported = import_results(graded, plan, digest, shown, args.eval_set, created)
        runs.append(imported.results)
        if imported.unmatched_cases:
            left = ", ".join(imported.unmatched_cases[:10]) + (", ..." if len(imported.unmatched_cases) > 10 else "")
            print(plain(n_("note: {n} graded case is not a case of suite {suite}, left out: {cases}", "note: {n} graded cases are not cases of suite {suite}, left out: {cases}", len(imported.unmatched_cases), suite=plan.name, cases=left)), file=sys.stderr)
        if imported.unknown_metrics:
            print(plain(_("note: metrics that are not criteria of suite {suite}, left out: {metrics}", suite=plan.name, metrics=", ".join(imported.unknown_metrics))), file=sys.stderr)
    gate = loaded.config.gate
    if args.store:  # the data branch's layout is the dir store's
        from evalgate.gate.baselines import DirStore

        store = DirStore(Path(args.store), gate_id=gate.id)
    else:
        store = _store(gate, loaded.base)
    _save_baseline(store, gate, runs, commit, args.ref)
    cases = n_("{n} case", "{n} cases", imported.results.counts.cases)
    # TRANSLATORS: follows "... in {store}" when several agents-cli results files were imported.
    ledger = n_(", and {n} grading into the flake ledger", ", and {n} gradings into the flake ledger", len(runs)) if len(runs) > 1 else ""
    print(
        plain(
            _(
                "imported {cases} of suite {suite} ({metrics}) from {file} as the baseline of {commit} for gate '{gate}' in {store}{ledger}",
                cases=cases,
                suite=imported.suite,
                metrics=", ".join(imported.metrics),
                file=shown,
                commit=commit,
                gate=gate.id,
                store=display_path(store.path),
                ledger=ledger,
            )
        )
    )
    return EXIT_PASSED


def cmd_baseline_show(args: argparse.Namespace) -> int:
    from evalgate.gate.baselines import find_baseline, git_first_parent
    from evalgate.reports import incomplete_note

    from evalgate.local_gate import resolve_commit

    gate, base = _gate_config(args.config)
    commit = resolve_commit(args.commit, base, "--commit")
    found = find_baseline(_store(gate, base), commit, git_first_parent, gate.baseline.max_depth)
    if found is None:
        print(f"no baseline for {commit} or its {gate.baseline.max_depth} nearest first-parent ancestors")
        return EXIT_FAILED
    baseline, info = found
    if args.json:
        print(baseline.model_dump_json(indent=2))
        return EXIT_PASSED
    p, c = baseline.provenance, baseline.results.counts
    ancestor = f" (ancestor, {info.distance} commits before {info.requested_commit[:12]})" if info.distance else ""
    print(f"baseline {p.commit[:12]}{ancestor}: {p.ref or 'no ref'}, saved {p.created_at}, evalgate {p.evalgate_version}")
    print(f"  {baseline.results.status.value}: {c.cases} cases, {c.passed} passed, {c.failed} failed, {c.not_evaluated} not evaluated{incomplete_note(c)}")
    for suite in baseline.results.suites:
        crits = ", ".join(f"{n} {s.threshold:g}" for n, s in suite.criteria.items())
        print(f"  {suite.name}: {suite.status.value} ({suite.counts.cases} cases; {crits})")
    return EXIT_PASSED


def cmd_schema(args: argparse.Namespace) -> int:
    if args.which == "config":
        from evalgate.config import json_schema
    elif args.which == "results":
        from evalgate.results import json_schema
    elif args.which == "agent-io":
        from evalgate.agents.agent_io import agent_io_schema as json_schema
    else:
        from evalgate.loaders.actual import inference_schema as json_schema
    print(json.dumps(json_schema(), indent=2, ensure_ascii=False))
    return EXIT_PASSED


def _reader_gone() -> int:
    """stdout's reader went away (`evalgate ... | head`): end quietly with the status of a
    process that SIGPIPE ended, as other command-line tools do. Whatever was written to
    files is complete."""
    try:  # what is still buffered for stdout must not fail again when Python exits
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return EXIT_BROKEN_PIPE


def main(argv: list[str] | None = None) -> int:
    from evalgate.errors import InputError

    # A console or pipe that cannot encode Korean or Japanese must not crash a finished run.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_INPUT
    func: Callable[[argparse.Namespace], int] = args.func
    i18n.reset()
    if getattr(args, "language", None):
        i18n.choose(args.language)
    try:
        code = func(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return code
    except BrokenPipeError:
        return _reader_gone()
    except InputError as e:
        for problem in e.problems:
            print(f"error: {problem}", file=sys.stderr)
        if len(e.problems) > 1:
            print(f"{len(e.problems)} problems.", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a bug of ours: say so plainly; the traceback on request
        print(f"evalgate: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        if os.environ.get("EVALGATE_DEBUG"):
            traceback.print_exc()
        else:
            print("Set EVALGATE_DEBUG=1 for the traceback, and please report it.", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    raise SystemExit(main())
