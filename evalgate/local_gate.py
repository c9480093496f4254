"""`evalgate gate`: the action's pull-request path on a developer's machine, without GitHub.

Run the agent as `evalgate run` does, compare with the baseline of the base commit, print
the verdict, write `comment.md` (the comment the action would post) and `report.html`, and
exit by the verdict. As the action does, it first re-runs the suspects (`gate.confirm`,
evalgate.gate.confirm) and compares again. As in the action's PR mode, the run is judged under
its base's policy (evalgate.gate.base_policy): the `gate:`, `judge:` and `vertex:` sections of the config as the base commit has it (`git show`)
and each suite's criteria as the baseline recorded them; a working tree that changes its
own policy is told so in comment.md, and the change takes effect once merged.

The base commit is `--base-sha` (any git revision), or by default the merge-base of HEAD
with the default branch (origin's HEAD, else main or master). Its baseline is looked up as
the action does: that commit's or its nearest first-parent ancestor's, in the config's
store, and in the data branch of the github store when this clone has fetched it.

The steps are the action's, in one place (evalgate.pipeline.gate_change): this module is
their source (git and files) and their sink (the terminal, comment.md and report.html).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from evalgate import i18n
from evalgate.errors import InputError, Problem
from evalgate.i18n import _, mark, n_

COMMENT_FILE = "comment.md"
# Where a shortened comment sends the reader: report.html beside comment.md (translated where
# the comment shows it).
FULL_REPORT = mark("report.html beside comment.md, which shows every case")


@dataclass
class Base:
    """What the run is compared with, and the words that say so."""

    commit: Optional[str] = None  # the base commit (full sha); None: none known
    how: str = ""  # how the base commit was chosen
    results: Any = None  # the baseline's results; None: absolute thresholds
    info: Any = None  # evalgate.gate.model.BaselineInfo
    ledger: Any = None
    trend: Any = None
    where: str = ""  # the store or file the baseline came from
    notes: list[str] = field(default_factory=list)


def _git(args: list[str], cwd: Path) -> Optional[str]:
    from evalgate.scaffold import git_out

    return git_out(args, cwd)


FULL_SHA = re.compile(r"[0-9a-fA-F]{40}")


def resolve_commit(ref: str, repo: Path, flag: str = "--base-sha") -> str:
    """Any revision git resolves (a branch, a tag, a short or full sha, `HEAD~2`) as the full
    lowercase sha, asked of the repository at `repo`. A full sha needs no git (a baseline store
    may be read outside a checkout). Anything else is an input error naming `flag`."""
    ref = (ref or "").strip()
    if FULL_SHA.fullmatch(ref):
        return ref.lower()
    if not ref or ref.startswith("-"):
        raise InputError(Problem(None, flag, f"'{ref}' is not a commit", "Give a commit sha, a branch or a tag of this repository."))
    sha = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], repo)
    if not sha:
        if not _git(["rev-parse", "--git-dir"], repo):
            raise InputError(Problem(None, flag, f"'{ref}' is not a full commit sha, and {repo} is not in a git checkout that could resolve it", "Give the full 40-character sha, or run inside the repository."))
        raise InputError(Problem(None, flag, f"git knows no commit '{ref}' in {repo}", "Give a commit or branch of this repository (git fetch it first if it is on the remote only)."))
    return sha.lower()


def choose_base(args: argparse.Namespace, repo: Optional[Path]) -> Base:
    """The base commit: --base-sha, else the merge-base of HEAD with the default branch."""
    if args.base_sha:
        if repo is None:
            raise InputError(Problem(None, "--base-sha", "needs a git checkout, and the config is not in one", "Run evalgate gate inside the repository, or pass --baseline FILE."))
        commit = resolve_commit(args.base_sha, repo)
        return Base(commit, f"--base-sha {args.base_sha}")  # a command, never translated
    if repo is None:
        return Base(notes=[_("not in a git checkout, so there is no base commit: judged on absolute thresholds (pass --baseline FILE to compare with one)")])
    from evalgate.scaffold import default_branch

    known = default_branch(repo)
    if known is None:
        return Base(notes=[_("git names no default branch here (no origin/HEAD, main or master): judged on absolute thresholds (pass --base-sha REF)")])
    ref = known[1]
    commit = _git(["merge-base", "HEAD", ref], repo)
    if not commit:
        return Base(notes=[_("HEAD and {ref} have no common commit: judged on absolute thresholds (pass --base-sha REF)", ref=ref)])
    return Base(commit.lower(), _("the merge-base of HEAD and {ref}", ref=ref))


def _stores(gate: Any, loaded: Any, repo: Optional[Path], notes: list[str]) -> list[Any]:
    """The stores to look in: the config's, and the github store's data branch as this clone
    fetched it (the action keeps its baselines there unless told otherwise)."""
    from evalgate.baselines import DirStore, GitBranchStore

    stores: list[Any] = []
    if gate.baseline.store == "dir":
        path = Path(gate.baseline.path)
        stores.append(DirStore(path if path.is_absolute() else loaded.base / path, gate_id=gate.id))
    branch = gate.baseline.branch
    fetched = None
    if repo is not None:
        fetched = next((ref for ref in (f"origin/{branch}", branch) if _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], repo)), None)
    if fetched is not None:
        stores.append(GitBranchStore(repo, fetched, gate_id=gate.id))  # type: ignore[arg-type]
    elif gate.baseline.store == "github":
        notes.append(_("the baselines are on the data branch {branch}, which this clone has not fetched (git fetch origin {branch})", branch=branch))
    return stores


def _data_branch_hint(stores: list[Any], gate: Any) -> str:
    from evalgate.baselines import GitBranchStore

    if gate.baseline.store == "github" or any(isinstance(s, GitBranchStore) for s in stores):
        return ""
    branch = gate.baseline.branch
    return _("; the action's baselines are on the data branch {branch} unless it is told otherwise: git fetch origin {branch}", branch=branch)


def _describe(store: Any) -> str:
    from evalgate.baselines import DirStore

    if isinstance(store, DirStore):
        from evalgate.errors import display_path

        return _("the folder {path}", path=display_path(store.path))
    return _("the data branch {ref} (through git)", ref=store.ref)


def find_base_baseline(base: Base, gate: Any, loaded: Any, repo: Optional[Path]) -> None:
    """Fill `base` with the baseline of its commit or the nearest first-parent ancestor that
    has one, and its store's ledger and trend; a note when there is none."""
    from evalgate.baselines import find_baseline, git_first_parent
    from evalgate.reading import read_note

    if base.commit is None or repo is None:
        return
    stores = _stores(gate, loaded, repo, base.notes)
    for store in stores:
        found = find_baseline(store, base.commit, lambda sha: git_first_parent(sha, repo), gate.baseline.max_depth)
        if found is not None:
            base.results, base.info = found[0].results, found[1]
            base.ledger, base.trend, base.where = store.load_ledger(gate.id), store.load_trend(gate.id), _describe(store)
            base.notes.extend(n for n in (read_note(base.results), read_note(base.trend)) if n)
            return
    # TRANSLATORS: between two stores' descriptions: "the folder X or the data branch Y (through git)".
    looked = _(" or ").join(_describe(s) for s in stores) or _("no store")
    base.notes.append(
        _(
            "no baseline for {commit} or its {depth} nearest first-parent ancestors in {stores}: "
            "judged on absolute thresholds (evalgate baseline save --results R --commit SHA saves one{hint})",
            commit=base.commit[:12],
            depth=gate.baseline.max_depth,
            stores=looked,
            hint=_data_branch_hint(stores, gate),
        )
    )


def _read_file(base: Base, path: str) -> None:
    from evalgate.baselines import read_baseline_file
    from evalgate.reading import read_note

    base.results, base.info = read_baseline_file(Path(path))
    base.where = path
    if read_note(base.results):
        base.notes.append(read_note(base.results))
    if base.info is not None and base.info.commit:
        base.commit, base.how = base.info.commit, _("the commit {path} was saved for", path=path)
        _read_store_of(base, Path(path))


def _read_store_of(base: Base, file: Path) -> None:
    """A saved baseline in a store's layout (<store>/baselines/<gate id>/<sha>.json.gz) brings
    that store's flake ledger and trend, as --base-sha would: the history of the branch it
    was saved on, which tells a flaky case from a broken one."""
    from evalgate.baselines import DirStore, baseline_path

    store = file.parent.parent.parent
    try:
        if file.parent.parent.name != "baselines" or file.name != Path(baseline_path(file.parent.name, base.commit or "")).name:
            return
        found = DirStore(store, gate_id=file.parent.name)
    except (InputError, ValueError):
        return
    from evalgate.reading import read_note

    base.ledger, base.trend = found.load_ledger(found.gate_id), found.load_trend(found.gate_id)
    if read_note(base.trend):
        base.notes.append(read_note(base.trend))
    if base.ledger or base.trend:
        base.where = _("{file}, with the flake ledger of {store}", file=file, store=store)


def _base_config(base: Base, loaded: Any, repo: Optional[Path]) -> tuple[Any, Optional[str]]:
    """The config as the base commit has it (its `gate:`, `judge:` and `vertex:` sections
    decide); None (with a note) when it cannot be read: the working tree's is used. Second,
    the config's path when the base commit has no file there (its policy is then shown
    against nothing)."""
    from evalgate.under_base import config_of_text, git_show

    if base.commit is None or repo is None:
        return None, None
    # The path as written (a link is not followed: the base is asked for its own file there);
    # a folder above the repository may be reached through a link, so the repository's own
    # path is tried as written, then resolved.
    rel = None
    for top in (Path(os.path.abspath(repo)), repo.resolve()):
        for path in (Path(os.path.abspath(loaded.path)), loaded.path.parent.resolve() / loaded.path.name):
            try:
                rel = path.relative_to(top).as_posix()
                break
            except ValueError:
                continue
        if rel is not None:
            break
    if rel is None:
        return None, None
    text = git_show(repo, base.commit, rel)
    if text is None and not _git(["rev-parse", "--verify", "--quiet", f"{base.commit}^{{commit}}"], repo):
        base.notes.append(_("the baseline's commit {commit} is not in this clone: the working tree's gate, judge and vertex sections were used", commit=base.commit[:12]))
        return None, None
    if text is None:  # the verdict's reasons say so (evalgate.pipeline)
        return None, rel
    try:
        return config_of_text(text, loaded.path.name), None
    except InputError as e:
        # The problem itself is an input error: English, as every error is.
        base.notes.append(_("the base commit's {file} is not valid ({problem}): the working tree's gate, judge and vertex sections were used", file=rel, problem=e.problems[0].what))
        return None, None


class _Files:
    """The source of `evalgate gate` (evalgate.pipeline.Source): the base commit's config from
    git, its baseline, ledger and trend from the config's store, the data branch this clone
    fetched, or the --baseline file."""

    def __init__(self, args: argparse.Namespace, loaded: Any, repo: Optional[Path]):
        self.loaded, self.repo, self.quiet = loaded, repo, args.quiet
        self.file = args.baseline
        if self.file:
            self.found = Base()
            _read_file(self.found, self.file)
        else:
            self.found = choose_base(args, repo)

    def base_config(self, loaded: Any) -> tuple[Any, Optional[str]]:
        return _base_config(self.found, loaded, self.repo)

    def baseline(self, gate: Any, base: Any) -> None:
        if not self.file:
            find_base_baseline(self.found, gate, self.loaded, self.repo)
        base.results, base.info, base.ledger, base.trend = self.found.results, self.found.info, self.found.ledger, self.found.trend
        _say_base(self.found, self.quiet)

    def base_tree(self) -> tuple[Optional[Path], Optional[str], Optional[str]]:
        commit = self.found.commit
        if self.repo is None:
            return None, None, _("not in a git checkout")
        if commit is None:
            return None, None, _("no base commit is known here")
        if not _git(["rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"], self.repo):
            return None, None, _("the base commit {commit} is not in this clone", commit=commit[:12])
        return self.repo, commit, None


class _Terminal:
    """The sink of `evalgate gate` (evalgate.pipeline.Sink): notes on stderr, the results in --out."""

    def __init__(self, args: argparse.Namespace):
        self.out, self.quiet = Path(args.out), args.quiet

    def note(self, text: str) -> None:
        from evalgate.reports.terminal import plain  # a note may quote a file's keys or problems

        print(_("note: {text}", text=plain(text)), file=sys.stderr)

    def log(self, text: str) -> None:
        if not self.quiet:
            self.note(text)  # a note may quote the agent's start error

    def rewrote(self, current: Any) -> None:
        from evalgate import results

        results.write(current, self.out / "results.json")


def gate(args: argparse.Namespace) -> int:
    from evalgate.config import find_config, load_config
    from evalgate.local_run import run_and_write
    from evalgate.pipeline import exit_code, gate_change, judge_runtime
    from evalgate.plan import build_plans

    loaded = load_config(find_config(args.config))
    i18n.configured(loaded.config.report.language)
    top = _git(["rev-parse", "--show-toplevel"], loaded.base)
    repo = Path(top) if top else None
    source = _Files(args, loaded, repo)

    def run(loaded: Any, policy: Any) -> tuple[Any, list]:
        """`evalgate run` on the plans under the base's policy, with gate's run options."""
        plans = build_plans(loaded)
        policy(plans)
        if args.quiet:  # the gate's verdict line, not the run's on absolute thresholds
            with contextlib.redirect_stdout(io.StringIO()):
                return run_and_write(loaded, plans, args), plans
        return run_and_write(loaded, plans, args), plans

    decision = gate_change(loaded, source, _Terminal(args), run, lambda loaded: lambda: judge_runtime(loaded, args.judge_concurrency, args.no_cache))
    _write(args, decision)
    _say_verdict(decision.comparison, args, source.found, decision.results)
    return exit_code(decision.comparison.verdict, decision.gate)


def _write(args: argparse.Namespace, decision: Any) -> None:
    """comment.md (the comment the action would post) and report.html, into --out."""
    from evalgate.reports.html import REPORT_FILE, write_html
    from evalgate.reports.markdown import render_comment

    comparison, current, gate_, trend = decision.comparison, decision.results, decision.gate, decision.base.trend
    out = Path(args.out)
    comment = render_comment(comparison, current, gate_id=gate_.id, full_report_hint=FULL_REPORT, trend=trend)
    try:
        from evalgate import writing

        writing.write_text(out / COMMENT_FILE, comment)
        write_html(out / REPORT_FILE, comparison, current, decision.baseline, gate_id=gate_.id, trend=trend)
    except OSError as e:
        raise InputError(Problem(str(out), None, f"cannot write the report there ({e.strerror or e})", "Pass --out a folder you can write to.")) from None


def _say_base(base: Base, quiet: bool) -> None:
    from evalgate.reports.terminal import plain  # a note may quote a file's keys or problems

    for note in base.notes:
        print(_("note: {text}", text=plain(note)), file=sys.stderr)
    if quiet:
        return
    if base.commit is not None:
        print(_("base: {commit} ({how})", commit=base.commit[:12], how=base.how), file=sys.stderr)
    if base.results is not None:
        info = base.info
        if info is not None and info.commit and info.distance:
            line = n_(
                "baseline of {commit}, {n} commit before it: from {where}",
                "baseline of {commit}, {n} commits before it: from {where}",
                info.distance,
                commit=info.commit[:12],
                where=base.where,
            )
        elif info is not None and info.commit:
            line = _("baseline of {commit}: from {where}", commit=info.commit[:12], where=base.where)
        else:
            line = _("baseline: from {where}", where=base.where)
        print(line, file=sys.stderr)


def _say_verdict(comparison: Any, args: argparse.Namespace, base: Base, current: Any = None) -> None:
    from evalgate.gate.confirm import lines
    from evalgate.reports.html import REPORT_FILE
    from evalgate.reports.markdown import flaky_words
    from evalgate.reports.terminal import plain  # case ids and reasons quote the pull request's data

    out = Path(args.out)
    held = _(" (shard {shard}: its cases only)", shard=args.shard) if args.shard is not None else ""
    verdict = comparison.verdict.value
    if base.results is None:
        print(_("evalgate gate: {verdict} against absolute thresholds (no baseline){shard}", verdict=verdict, shard=held))
    else:
        print(_("evalgate gate: {verdict} against the baseline{shard}", verdict=verdict, shard=held))
    if args.quiet:
        return
    for reason in comparison.reasons:  # the gate's reasons, in the report's language where they are made
        print("  " + plain(reason))
    for suite in comparison.suites:
        for change in suite.changes:
            if change.kind in ("regressed", "broken_stable"):
                case = f"{change.key.eval_set_id}/{change.key.eval_id}"
                flaky = flaky_words(change)
                if change.kind == "broken_stable" and flaky:
                    line = _("{suite}: {case} broke (a stable case) ({flaky})", suite=suite.name, case=case, flaky=flaky)
                elif change.kind == "broken_stable":
                    line = _("{suite}: {case} broke (a stable case)", suite=suite.name, case=case)
                elif flaky:
                    line = _("{suite}: {case} regressed ({flaky})", suite=suite.name, case=case, flaky=flaky)
                else:
                    line = _("{suite}: {case} regressed", suite=suite.name, case=case)
                print("  " + plain(line))
    for line in lines(comparison, current) if current is not None else []:  # gate.confirm
        print("  " + plain(_("{suite}: {case} re-run: {text}", suite=line.suite, case=line.case, text=line.text)))
    if comparison.gate_change:
        print("  " + _("the working tree changes the gate's policy: judged under the base's (the diff is in comment.md)"))
    print(_("comment: {comment}  report: {report}", comment=out / COMMENT_FILE, report=out / REPORT_FILE))
