"""The `evalgate` command: run, validate, schema.

Exit codes: 0 passed, 1 failed, 2 unusable input or configuration, 3 internal error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Callable

from evalgate import __version__

EXIT_PASSED, EXIT_FAILED, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3


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
    run.add_argument("--no-color", action="store_true", help="plain terminal output")
    run.add_argument("--quiet", "-q", action="store_true", help="print only the verdict line")
    run.set_defaults(func=cmd_run)

    validate = sub.add_parser("validate", help="check the config and every data file without scoring")
    validate.add_argument("--config", "-c", help="config file")
    validate.set_defaults(func=cmd_validate)

    schema = sub.add_parser("schema", help="print a JSON Schema: the config (default), results or inference JSONL")
    schema.add_argument("which", nargs="?", choices=["config", "results", "inference"], default="config")
    schema.set_defaults(func=cmd_schema)
    return parser


def _load(config_arg: str | None):
    from evalgate.config import find_config, load_config
    from evalgate.plan import build_plans

    loaded = load_config(find_config(config_arg))
    return loaded, build_plans(loaded)


def cmd_validate(args: argparse.Namespace) -> int:
    loaded, plans = _load(args.config)
    cases = sum(len(p.cases) for p in plans)
    print(f"{loaded.shown}: OK, {len(plans)} suites, {cases} cases")
    for plan in plans:
        for warning in plan.warnings:
            print(f"warning: {plan.name}: {warning}", file=sys.stderr)
    return EXIT_PASSED


def cmd_run(args: argparse.Namespace) -> int:
    from evalgate.errors import InputError, Problem

    loaded, plans = _load(args.config)

    from evalgate import engine, results
    from evalgate.plan import config_digest
    from evalgate.reports.adk_results import write_adk_results
    from evalgate.reports.junit import junit_xml
    from evalgate.reports.terminal import Progress, summary_table

    total = sum(len(p.cases) for p in plans)
    progress = Progress(total, sys.stderr, enabled=sys.stderr.isatty() and not args.quiet)
    try:
        run = engine.run(plans, config_digest(loaded, plans), progress=progress.advance)
    finally:
        progress.close()

    out = Path(args.out)
    try:
        results.write(run, out / "results.json")
        (out / "junit.xml").write_text(junit_xml(run), encoding="utf-8")
        write_adk_results(run, plans, out / "adk")
    except OSError as e:
        raise InputError(Problem(str(out), None, f"cannot write the results there ({e.strerror or e})", "Pass --out a folder you can write to.")) from None

    color = not args.no_color and sys.stdout.isatty() and "NO_COLOR" not in os.environ
    if args.quiet:
        print(f"evalgate: {run.status.value} ({run.counts.passed} passed, {run.counts.failed} failed, {run.counts.not_evaluated} not evaluated)")
    else:
        print(summary_table(run, color=color))
        print(f"results: {out / 'results.json'}  junit: {out / 'junit.xml'}")
    return EXIT_FAILED if run.status.value == "FAILED" else EXIT_PASSED


def cmd_schema(args: argparse.Namespace) -> int:
    if args.which == "config":
        from evalgate.config import json_schema
    elif args.which == "results":
        from evalgate.results import json_schema
    else:
        from evalgate.loaders.actual import inference_schema as json_schema
    print(json.dumps(json_schema(), indent=2, ensure_ascii=False))
    return EXIT_PASSED


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
    try:
        return func(args)
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
