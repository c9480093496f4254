"""A run judged under its base's policy: the base commit's config read from git, the pull
request's plans given the criteria the baseline recorded, and the difference kept for the
report (evalgate.gate.base_policy holds the policy's parts and their diff).

The pipeline (evalgate.pipeline) applies it for every way in: `evalgate gate`, the action's
pull request and merge queue activities, and a sharded run's legs and merge job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from evalgate.gate.base_policy import diff, gate_policy, policy_of_results, suites_policy
from evalgate.i18n import _
from evalgate.results import RunResults


@dataclass
class _Spec:
    threshold: Optional[float]
    options: dict[str, Any]


def _first_specs(cases: list) -> dict[str, _Spec]:
    """Each criterion's threshold and options as the first case that has it holds them (as
    the engine records a suite's criteria in its results)."""
    specs: dict[str, _Spec] = {}
    for case in cases:
        for name, crit in case.criteria.items():
            if name not in specs:
                specs[name] = _Spec(crit.threshold, crit.options())
    return specs


def policy_of_plans(gate: Any, plans: list) -> dict[str, Any]:
    """A config's own policy as it takes effect: its gate, and each suite's criteria (those
    of its first case, as results record them)."""
    return {
        "gate": gate_policy(gate),
        "suites": suites_policy({p.name: _first_specs(p.cases) for p in plans}),
        "not_evaluated": {p.name: p.not_evaluated for p in sorted(plans, key=lambda p: p.name)},
    }


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
