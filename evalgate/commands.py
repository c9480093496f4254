"""The `evalgate` commands' work: what each subcommand does once cli.py has parsed its
arguments (cli.py parses and dispatches; the gate's pipeline is evalgate.pipeline).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from evalgate import i18n
from evalgate.i18n import _, listing, n_
from evalgate.local_run import gc_paused, print_summary, run_and_write, run_exit, select_cases, write_html_alone
from evalgate.pipeline import EXIT_FAILED, EXIT_PASSED

EXIT_INPUT, EXIT_INTERNAL = 2, 3


def _load(config_arg: str | None):
    from evalgate.config import find_config, load_config
    from evalgate.plan import build_plans

    loaded = load_config(find_config(config_arg))
    i18n.configured(loaded.config.report.language)
    return loaded, build_plans(loaded)


def cmd_run(args: argparse.Namespace) -> int:
    with gc_paused():
        loaded, plans = _load(args.config)
    return run_exit(run_and_write(loaded, plans, args))


def cmd_init(args: argparse.Namespace) -> int:
    from evalgate.scaffold import init

    return init(args.dir, args.action, args.branch, args.dry_run, sys.stdout)


def cmd_validate(args: argparse.Namespace) -> int:
    from evalgate import infer
    from evalgate.reports.terminal import plain  # a warning may quote an eval set's text

    loaded, plans = _load(args.config)
    infer.check(plans, loaded)
    selection = select_cases(plans, args.case)
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


def cmd_merge(args: argparse.Namespace) -> int:
    from evalgate.config import GateConfig
    from evalgate.errors import InputError, Problem
    from evalgate.merge import merge_folders

    out = Path(args.out)
    _merge_language()
    try:
        with gc_paused():
            run, shards = merge_folders([Path(p) for p in args.shards], out)
            write_html_alone(run, out, GateConfig())
    except OSError as e:
        raise InputError(Problem(str(out), None, f"cannot write the merged results there ({e.strerror or e})", "Pass --out a folder you can write to.")) from None
    _warn_ignored(*(s.results for s in shards))
    if not args.quiet:
        print(_("merged {shards}: {cases}", shards=n_("{n} shard", "{n} shards", len(shards)), cases=n_("{n} case", "{n} cases", run.counts.cases)), file=sys.stderr)
    print_summary(run, out, args, run.run.agent)
    return run_exit(run)


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
    from evalgate.baselines import DirStore
    from evalgate.errors import InputError, Problem

    if gate.baseline.store != "dir":
        raise InputError(
            Problem(None, "gate.baseline.store", "the github store is used by the GitHub Action, not by this command", "Use the action, or set store: dir for local baselines.")
        )
    path = Path(gate.baseline.path)
    return DirStore(path if path.is_absolute() else base / path, gate_id=gate.id)


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


def _pairwise(config_arg: str | None, gate, baseline, current):
    """gate.pairwise: the changed answers judged side by side (evalgate.pipeline.pairwise), on a
    judge runtime from the config's judge section; None when off or without a baseline."""
    if not gate.pairwise.enabled or baseline is None:
        return None
    from evalgate.config import find_config, load_config
    from evalgate.pipeline import judge_runtime, pairwise

    loaded = load_config(find_config(config_arg))
    return pairwise(gate, baseline, current, lambda: judge_runtime(loaded))


def cmd_compare(args: argparse.Namespace) -> int:
    from evalgate import results
    from evalgate.baselines import find_baseline, git_first_parent, read_baseline_file
    from evalgate.errors import InputError, Problem
    from evalgate.pipeline import compare, exit_code, selected_baseline
    from evalgate.reports.html import REPORT_FILE, write_html
    from evalgate.reports.markdown import render_summary

    gate, base = _gate_config(args.config, required=bool(args.base_sha))
    current = results.read(Path(args.current))
    _whole_run(current, args.current)
    baseline, info, ledger, trend = None, None, None, None
    if args.baseline:
        baseline, info = read_baseline_file(Path(args.baseline))
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
        baseline = selected_baseline(baseline, current.selection)
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
    return exit_code(comparison.verdict, gate)


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
        from evalgate.baselines import DirStore

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
    from evalgate.baselines import make_baseline
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
            from evalgate.i18n import name_list

            left = name_list(imported.unmatched_cases, 10)
            print(plain(n_("note: {n} graded case is not a case of suite {suite}, left out: {cases}", "note: {n} graded cases are not cases of suite {suite}, left out: {cases}", len(imported.unmatched_cases), suite=plan.name, cases=left)), file=sys.stderr)
        if imported.unknown_metrics:
            print(plain(_("note: metrics that are not criteria of suite {suite}, left out: {metrics}", suite=plan.name, metrics=listing(imported.unknown_metrics))), file=sys.stderr)
    gate = loaded.config.gate
    if args.store:  # the data branch's layout is the dir store's
        from evalgate.baselines import DirStore

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
                metrics=listing(imported.metrics),
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
    from evalgate.baselines import find_baseline, git_first_parent
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
