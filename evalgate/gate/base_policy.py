"""The gate's policy as the base commit has it: a pull request is judged by its base's rules.

The policy is what decides a verdict: the `gate:` section of the config (margins, alpha,
flips, where the baseline is kept), the `judge:` and `vertex:` sections (whether a judged
criterion is heard at all: deadline, timeout, attempts, endpoint) and, per suite, its
criteria with their thresholds and options. A pull request that changes its own config could
otherwise loosen the gate that judges it. So in PR mode those sections are read from the
config file at the base commit, and each suite's criteria are those the baseline (written by
a trusted run of the default branch) recorded; the pull request's own policy is only compared with it, and the
difference is shown in the comment. It takes effect once merged.
"""

from __future__ import annotations

import difflib
from typing import Any, Optional

import yaml

from evalgate.i18n import _
from evalgate.results import RunResults

# The longest diff the comment shows, in lines; the rest is counted.
MAX_DIFF_LINES = 80


def gate_policy(gate: Any) -> dict[str, Any]:
    """The parts of a `gate:` section that decide a verdict or choose the baseline (the gate's
    id only names its comment and ledger)."""
    return gate.model_dump(mode="json", exclude={"id"})


def suites_policy(suites: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per suite, its criteria as {threshold, options...}, from CriterionSpec-like objects."""
    return {
        name: {c: {"threshold": spec.threshold, **spec.options} for c, spec in sorted(criteria.items())}
        for name, criteria in sorted(suites.items())
    }


def policy_of_results(gate: Any, results: Optional[RunResults]) -> dict[str, Any]:
    out: dict[str, Any] = {"gate": gate_policy(gate)}
    if results is not None:
        out["suites"] = suites_policy({s.name: s.criteria for s in results.suites})
        out["not_evaluated"] = {s.name: s.not_evaluated_policy for s in sorted(results.suites, key=lambda s: s.name)}
    return out


def policy_of_plans(gate: Any, plans: list) -> dict[str, Any]:
    """A config's own policy as it takes effect: its gate, and each suite's criteria (those
    of its first case, as results record them)."""
    from evalgate.engine import _specs

    return {
        "gate": gate_policy(gate),
        "suites": suites_policy({p.name: _specs(p.cases) for p in plans}),
        "not_evaluated": {p.name: p.not_evaluated for p in sorted(plans, key=lambda p: p.name)},
    }


def diff(base: dict[str, Any], pr: dict[str, Any], base_name: str = "base") -> Optional[str]:
    """A unified diff of the two policies (YAML, keys sorted), or None when they agree. Only
    the parts the base has are compared: without a baseline, the suites are not. `base_name`
    heads the base's side."""
    if "suites" not in base:
        pr = {k: v for k, v in pr.items() if k not in ("suites", "not_evaluated")}
    elif "not_evaluated" in pr:  # suites the baseline lacks are the pull request's own
        pr = {**pr, "not_evaluated": {k: v for k, v in pr["not_evaluated"].items() if k in base.get("not_evaluated", {})}}
    a, b = _yaml(base) if base else "", _yaml(pr)
    if a == b:
        return None
    lines = list(difflib.unified_diff(a.splitlines(), b.splitlines(), base_name, "pull request", lineterm="", n=2))
    if len(lines) > MAX_DIFF_LINES:
        lines = lines[:MAX_DIFF_LINES] + [_("... {n} more lines", n=len(lines) - MAX_DIFF_LINES)]
    return "\n".join(lines)


def _yaml(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, sort_keys=True, allow_unicode=True, default_flow_style=False)


def base_criteria(plans: list, baseline: RunResults) -> list[str]:
    """Give each suite the baseline has what the baseline recorded, in place of the pull
    request's: its not_evaluated policy, at least its number of runs, and for a case the
    baseline scored its criteria and thresholds (eval sets of one suite may have their own
    test_config.json), for a new case the suite's. Options are the suite's (results record
    them per suite). Returns a note for each thing that could not be done as the base had it."""
    from evalgate.config import parse_criteria
    from evalgate.errors import InputError, json_path

    notes = []
    for plan in plans:
        suite = next((s for s in baseline.suites if s.name == plan.name), None)
        if suite is None:
            continue
        # What a NOT_EVALUATED case does to the suite is the base's too: otherwise a pull
        # request could set `not_evaluated: ignore` and make its agent fail the cases it breaks.
        if suite.not_evaluated_policy in ("fail", "warn", "ignore"):
            plan.not_evaluated = suite.not_evaluated_policy
        # So is how often the agent runs: fewer runs than the baseline's weaken the tests that
        # tell a drop from noise (a real regression would look inconclusive).
        base_runs = max((len(r.runs) for c in suite.cases for r in c.criteria.values() if r.runs), default=1)
        if plan.agent is not None and base_runs > plan.agent.num_runs:
            notes.append(
                _(
                    "suite {suite}: the agent runs {runs} times per case, as in the baseline (the pull request sets num_runs: {own})",
                    suite=plan.name,
                    runs=base_runs,
                    own=plan.agent.num_runs,
                )
            )
            plan.agent = plan.agent.model_copy(update={"num_runs": base_runs})
        if not suite.criteria:
            continue
        options = {name: spec.options for name, spec in suite.criteria.items()}
        # agents-cli's metrics (no threshold) are named by the user or by the eval service's
        # versions, and some share a name with an ADK criterion evalgate knows (safety_v1): they
        # are never rebuilt from the registry; the pull request's own (from its eval config) is used.
        own_only = {name for name, spec in suite.criteria.items() if spec.no_threshold}
        thresholds_of = {
            (c.eval_set_id, c.eval_id): tuple(sorted((n, r.threshold) for n, r in c.criteria.items() if n in options))
            for c in suite.cases
        }
        default = tuple(sorted((n, spec.threshold) for n, spec in suite.criteria.items()))
        # Each criterion on its own: one the baseline records but this evalgate cannot rebuild
        # from it (a custom metric, whose function is named in the config's custom_metrics; an
        # option that no longer parses) must not hand the suite's other criteria back to the
        # pull request. That one is the pull request's criterion of the same name, with the
        # baseline's threshold; without one, it is left out (noted).
        built: dict[tuple, tuple[dict, dict]] = {}
        unreadable: dict[str, str] = {}
        for case in plan.cases:
            wanted = thresholds_of.get((case.eval_set_id, case.eval_id)) or default
            if wanted not in built:
                parsed, failed = {}, {}
                for name, threshold in wanted:
                    if name in own_only:
                        failed[name] = threshold
                        continue
                    raw = {name: {"threshold": threshold, **options[name]}}
                    try:
                        parsed.update(parse_criteria(raw, f"the baseline's criteria of suite {plan.name}", lambda *loc: json_path(loc)))
                    except InputError as e:
                        failed[name] = threshold
                        unreadable.setdefault(name, e.problems[0].what)
                built[wanted] = (parsed, failed)
            parsed, failed = built[wanted]
            if not failed:
                case.criteria = parsed
                continue
            criteria = dict(parsed)
            for name, threshold in failed.items():
                own = case.criteria.get(name)
                if own is not None:
                    criteria[name] = own.model_copy(update={"threshold": threshold})
            case.criteria = criteria
        for name, why in sorted(unreadable.items()):
            notes.append(
                _(
                    "suite {suite}: the baseline's criterion {criterion} cannot be rebuilt by this evalgate ({why}); "
                    "the pull request's criterion of that name was used with the baseline's threshold, where it has one",
                    suite=plan.name,
                    criterion=name,
                    why=why,
                )
            )
    return notes


# --- reading the base commit's policy (shared by the action's PR and merge-queue modes and
# `evalgate gate`) ------------------------------------------------------------------------


def git_show(repo: Any, commit: str, path: str) -> Optional[str]:
    """The text of `path` (relative to the repository's root, or `./x` relative to `repo`) at
    `commit`, from the git history in `repo`; None when git, the commit or the file is missing."""
    data = git_show_bytes(repo, commit, path)
    return data.decode("utf-8", errors="replace") if data is not None else None


def git_show_bytes(repo: Any, commit: str, path: str) -> Optional[bytes]:
    """As `git_show`, the file's bytes."""
    import shutil
    import subprocess

    git = shutil.which("git")
    if git is None:
        return None
    try:
        proc = subprocess.run([git, "-C", str(repo), "show", f"{commit}:{path}"], capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout


def config_of_text(text: str, name: str) -> Any:
    """The config (evalgate.config.Config) in a config file's text (named `name`, whose suffix
    says YAML or JSON). Raises InputError when the config is not valid."""
    import tempfile
    from pathlib import Path

    from evalgate.config import load_config

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_text(text, encoding="utf-8")
        return load_config(path).config


def gate_of_text(text: str, name: str) -> Any:
    """The `gate:` section of a config file's text (`config_of_text`)."""
    return config_of_text(text, name).gate


def scoring_policy(config: Any) -> dict[str, Any]:
    """The parts of a config's `judge:` and `vertex:` sections that decide how criteria are
    scored: a pull request that gives its own judge a deadline of a microsecond, a timeout
    no request meets or an endpoint that does not answer would leave every judged case
    NOT_EVALUATED. The cache folder is left out: it only says where verdicts are kept, and
    the run reads it as it was before any project code ran (evalgate.judge.cache.snapshot)."""
    return {"judge": config.judge.model_dump(mode="json", exclude={"cache_dir"}), "vertex": config.vertex.model_dump(mode="json")}


def with_base_policy(own: Any, base: Any) -> Any:
    """`own` (a Config) with the base config's `gate:`, `judge:` and `vertex:` sections; the
    judge's cache folder stays `own`'s (`scoring_policy` says why)."""
    judge = base.judge.model_copy(update={"cache_dir": own.judge.cache_dir})
    return own.model_copy(update={"gate": base.gate, "judge": judge, "vertex": base.vertex})


class UnderBase:
    """A run scored under its base's policy: `apply` gives the plans the baseline's criteria
    (and notes what it could not), keeping the config's own policy to compare; `change` is
    the difference, for the report. `base_gate` is the base commit's gate section (None:
    unknown, e.g. the base has no config), `own_gate` the working config's. `missing`: the
    config's path (as written) when the base commit has no file there: the pull request's
    gate is then diffed against nothing, never against itself, and the diff says so.
    `base_scoring` and `own_scoring`: their configs' `scoring_policy` (the judge and Vertex
    AI settings; None: not compared)."""

    def __init__(
        self,
        own_gate: Any,
        base_gate: Any,
        baseline: Optional[RunResults],
        missing: Optional[str] = None,
        own_scoring: Optional[dict[str, Any]] = None,
        base_scoring: Optional[dict[str, Any]] = None,
    ):
        self.own_gate, self.base_gate, self.baseline = own_gate, base_gate, baseline
        self.missing = missing
        self.own_scoring, self.base_scoring = own_scoring, base_scoring
        self.own: Optional[dict[str, Any]] = None

    def apply(self, plans: list) -> list[str]:
        self.own = policy_of_plans(self.own_gate, plans)  # before the base's criteria replace the plans'
        return base_criteria(plans, self.baseline) if self.baseline is not None else []

    def change(self) -> Optional[str]:
        if self.own is None:
            return None
        if self.base_gate is None and self.missing is not None:
            base = {k: v for k, v in policy_of_results(self.own_gate, self.baseline).items() if k != "gate"}
            return diff(base, {**self.own, **(self.own_scoring or {})}, _("base: no {file}", file=self.missing))
        if self.base_gate is None and self.baseline is None:
            return None
        base, own = policy_of_results(self.base_gate or self.own_gate, self.baseline), self.own
        if self.base_scoring is not None and self.own_scoring is not None:
            base, own = {**base, **self.base_scoring}, {**own, **self.own_scoring}
        return diff(base, own)
