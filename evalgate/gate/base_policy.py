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
