"""The `evalgate` command: run, validate, merge, compare, gate, baseline, schema. This module
parses the arguments and dispatches; each command's work is evalgate.commands'.

Exit codes: 0 passed, 1 failed, 2 unusable input or configuration, 3 internal error;
141 when stdout's reader went away (as SIGPIPE would end a tool).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from typing import Callable

from evalgate import __version__, i18n
from evalgate.commands import (
    EXIT_FAILED,
    EXIT_INPUT,
    EXIT_INTERNAL,
    EXIT_PASSED,
    cmd_baseline_import,
    cmd_baseline_save,
    cmd_baseline_show,
    cmd_compare,
    cmd_gate,
    cmd_init,
    cmd_merge,
    cmd_run,
    cmd_schema,
    cmd_validate,
)
from evalgate.i18n import LANGUAGES

__all__ = ["EXIT_FAILED", "EXIT_INPUT", "EXIT_INTERNAL", "EXIT_PASSED", "main"]
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
