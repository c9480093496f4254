"""The flake ledger: its keys, each case's histories, which cases are stable, and its update after a default-branch run.

`update_ledger()` appends a default-branch run's outcomes to the flake ledger; the tests
(evalgate.gate: drop, level, partial, breakage, efficiency) read it.
"""

from __future__ import annotations

from typing import Iterable, Optional

from evalgate.gate.efficiency import HistoryOf
from evalgate.gate.model import CaseChange, CaseKey, GatePolicy
from evalgate.gate.stats import EPSILON, MIN_HISTORY, failed
from evalgate.gate.values import case_value, is_evaluated, outcome
from evalgate.results import RunResults

PARTIAL_MIN_CASES = 10  # cases with a history needed for the partial-drop test (and the level's)

# The flake ledger: per (suite, eval_set_id, eval_id, criterion), the last K outcomes of
# default-branch runs, oldest first. An outcome is the fraction of the criterion's samples
# that passed in that run (1.0 / 0.0 for a deterministic criterion), or None when the
# criterion was NOT_EVALUATED. Beside each outcome history, under `value_key`, the case's
# compared values in the same runs (its score, or a judge case's mean sample score): the
# gate measures from them how much a criterion's mean moves between runs. Both are
# appended together, so the two histories of a case line up from their ends (a ledger
# written before values were kept has outcomes only, and values start with the next run).
Ledger = dict[str, list[Optional[float]]]

_SEP = "\x1f"
_VALUE = "value"


def ledger_key(key: CaseKey, criterion: str) -> str:
    return _SEP.join((key.suite, key.eval_set_id, key.eval_id, criterion))


def value_key(key: CaseKey, criterion: str) -> str:
    return _SEP.join((key.suite, key.eval_set_id, key.eval_id, criterion, _VALUE))


def ledger_histories(ledger: Ledger) -> dict[tuple[str, str], tuple[list[list[float]], list[list[float]]]]:
    """(suite, criterion) -> (every case's recorded outcomes, every case's recorded values),
    None left out: the populations the breakage test fits its break rates to."""
    out: dict[tuple[str, str], tuple[list[list[float]], list[list[float]]]] = {}
    for key, history in ledger.items():
        parts = key.split(_SEP)
        if len(parts) in (4, 5):  # ledger_key (an outcome) or value_key (a value)
            outcomes, values = out.setdefault((parts[0], parts[3]), ([], []))
            (outcomes if len(parts) == 4 else values).append([float(o) for o in history if o is not None])
    return out


def stable_history(history: Iterable[Optional[float]], policy: GatePolicy) -> Optional[list[float]]:
    """The recorded outcomes that make a case stable, or None when it is not."""
    recorded = [float(o) for o in history if o is not None][-policy.history_runs :]
    if len(recorded) < policy.stable_min_runs or any(failed(o) for o in recorded):
        return None
    return recorded


def update_ledger(ledger: Optional[Ledger], results: RunResults, k: int) -> Ledger:
    """A new ledger: this run's outcomes appended, each history trimmed to its last k.

    Cases and criteria absent from this run are dropped, so the ledger follows the
    default branch's current cases. The ledger does not know expected-data digests: a case
    whose expected data changes keeps its history. Pure: `ledger` is not modified.
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    old = ledger or {}
    new: Ledger = {}
    for suite in results.suites:
        for case in suite.cases:
            key = CaseKey(suite.name, case.eval_set_id, case.eval_id)
            for name, result in case.criteria.items():
                spec = suite.criteria.get(name)
                judge = bool(spec and spec.judge)
                lk, vk = ledger_key(key, name), value_key(key, name)
                new[lk] = (list(old.get(lk, [])) + [outcome(result, judge)])[-k:]
                value = case_value(result, "samples") if is_evaluated(result) else None
                new[vk] = (list(old.get(vk, [])) + [value])[-k:]
            for name, result in case.efficiency.items():  # evalgate.gate.efficiency measures their run-to-run spread
                vk = value_key(key, name)
                new[vk] = (list(old.get(vk, [])) + [result.value])[-k:]
    return dict(sorted(new.items()))


def flaky_history(change: CaseChange, ledger: Ledger) -> Optional[tuple[int, int]]:
    """(runs passed, runs recorded) of a regressed case's least reliable criterion in the
    ledger, when that history holds a failure among at least MIN_HISTORY runs; else None."""
    worst: Optional[tuple[int, int]] = None
    for name in change.criteria:
        history = [v for v in ledger.get(ledger_key(change.key, name)) or [] if v is not None]
        if len(history) < MIN_HISTORY:
            continue
        passed = sum(1 for v in history if v > 0.5)
        if passed < len(history) and (worst is None or passed / len(history) < worst[0] / worst[1]):
            worst = (passed, len(history))
    return worst


def efficiency_history(suite: str, ledger: Optional[Ledger]) -> Optional[HistoryOf]:
    """The ledger's values of an efficiency metric for a suite's case (evalgate.gate.efficiency)."""
    if not ledger:
        return None
    return lambda set_id, case_id, metric: ledger.get(value_key(CaseKey(suite, set_id, case_id), metric))


def own_histories(keys: list[CaseKey], criterion: str, ledger: Ledger, base_values: list[float]) -> tuple[list[int], list[list[float]]]:
    """(positions in keys, rows): the ledger's values of the cases with a complete history
    over the most recent runs that at least half of the cases (and PARTIAL_MIN_CASES) have,
    at least MIN_HISTORY of them, without the baseline's own run. The baseline must not
    measure a case's spread: a case whose baseline was an outlier would then look steady
    when the pull request's run comes back, and ordinary when it is the pull request's run
    that is the outlier. The ledger holds the baseline's run when, at one position from
    the end, every case's recorded value is its baseline value."""
    histories = [list(ledger.get(value_key(k, criterion)) or []) for k in keys]
    longest = max((len(h) for h in histories), default=0)
    for back in range(1, longest + 1):
        pairs = [(h[-back], b) for h, b in zip(histories, base_values) if len(h) >= back]
        if all(v is not None and abs(v - b) <= EPSILON for v, b in pairs):
            histories = [h[: len(h) - back] + h[len(h) - back + 1 :] if len(h) >= back else h for h in histories]
            break
    longest = max((len(h) for h in histories), default=0)
    for runs in range(longest, MIN_HISTORY - 1, -1):
        chosen = [i for i, h in enumerate(histories) if len(h) >= runs and all(v is not None for v in h[-runs:])]
        if len(chosen) >= max(PARTIAL_MIN_CASES, len(keys) / 2):
            return chosen, [[float(v) for v in histories[i][-runs:]] for i in chosen]
    return [], []
