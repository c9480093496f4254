"""Trends: each criterion's mean over the last default-branch runs.

Every run that speaks for the default branch (the baseline of a push, a nightly or manual run
there) adds one point to the store's trend file, `trends/<gate_id>.json.gz`: its commit, when,
and per suite and criterion the mean score over the run's evaluated cases and how many cases
that was. The file keeps the last `KEEP` points; reports draw the last `SHOWN`.

A point is the run's own mean, over every case the run evaluated: not the comparison's paired
mean, which depends on the baseline it was paired with. So a point never changes after it is
written, and a run's value (a pull request's too) is comparable with the points: `position`
says where it sits against the range of the runs before it.

Reports read a `Trend` (the points before this run) and this run's means; they draw the
points and then this run, marked as such. Pure: no clock, no I/O here (the stores in
`evalgate.baselines` keep the file).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from evalgate.results import RunResults

TREND_SCHEMA_VERSION = 1
KEEP = 60  # points kept in the file
SHOWN = 30  # points a report draws (the last ones), as the issue tracker and summary show them
MIN_POINTS = 3  # runs of history before a report says where a run sits


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CriterionMean(_Model):
    mean: float = Field(allow_inf_nan=False)
    cases: int = Field(description="Cases the mean is over (evaluated ones).")


class TrendPoint(_Model):
    # A hex id (checked on every read): reports print its first 7 characters into charts as is.
    commit: str = Field(pattern=r"^[0-9a-f]{7,64}$")
    ref: str = ""
    created_at: str = Field(description="ISO 8601, UTC.")
    config_digest: str = ""
    means: dict[str, dict[str, CriterionMean]] = Field(default_factory=dict, description="suite -> criterion -> mean.")


class Trend(_Model):
    schema_version: int = TREND_SCHEMA_VERSION
    gate_id: str
    points: list[TrendPoint] = Field(default_factory=list, description="Oldest first.")
    _read_note: Optional[str] = PrivateAttr(None)  # keys of its file this evalgate ignored (evalgate.reading)


def run_means(results: RunResults) -> dict[str, dict[str, CriterionMean]]:
    """Per suite and criterion: the mean of the cases' scores (cases not evaluated left out)."""
    out: dict[str, dict[str, CriterionMean]] = {}
    for suite in results.suites:
        scores: dict[str, list[float]] = {}
        for case in suite.cases:
            for name, result in case.criteria.items():
                if result.score is not None and math.isfinite(result.score):
                    scores.setdefault(name, []).append(result.score)
        means = {name: CriterionMean(mean=round(sum(v) / len(v), 6), cases=len(v)) for name, v in sorted(scores.items())}
        if means:
            out[suite.name] = means
    return out


def add_point(trend: Optional[Trend], gate_id: str, results: RunResults, commit: str, ref: str, now: datetime) -> Trend:
    """`trend` with this run appended (the oldest points beyond `KEEP` dropped)."""
    if now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)
    point = TrendPoint(
        commit=commit,
        ref=ref,
        created_at=now.astimezone(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        config_digest=results.config_digest,
        means=run_means(results),
    )
    points = (list(trend.points) if trend is not None else []) + [point]
    return Trend(gate_id=gate_id, points=points[-KEEP:])


@dataclass(frozen=True)
class Series:
    """One criterion of one suite over the shown runs, and this run's value."""

    suite: str
    criterion: str
    labels: list[str]  # the runs' short commit ids, oldest first
    values: list[float]
    current: Optional[float]  # this run's mean; None when this run did not evaluate it

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)


def series(trend: Optional[Trend], current: RunResults, shown: int = SHOWN) -> list[Series]:
    """Every criterion with history in the last `shown` points, in the order of the run's
    suites and then by name; criteria the run has but history lacks are left out."""
    if trend is None or not trend.points:
        return []
    points = trend.points[-shown:]
    now = run_means(current)
    order = [s.name for s in current.suites]
    names = sorted({(s, c) for p in points for s, cs in p.means.items() for c in cs}, key=lambda k: (order.index(k[0]) if k[0] in order else len(order), k))
    out = []
    for suite, criterion in names:
        labels, values = [], []
        for p in points:
            m = p.means.get(suite, {}).get(criterion)
            if m is not None:
                labels.append(p.commit[:7])
                values.append(m.mean)
        mine = now.get(suite, {}).get(criterion)
        if suite in order and values:
            out.append(Series(suite, criterion, labels, values, None if mine is None else mine.mean))
    return out


@dataclass(frozen=True)
class Position:
    """Where this run's value sits against the runs before it."""

    where: Literal["below", "within", "above"]
    value: float
    low: float
    high: float
    runs: int
    rank: int  # 1 + how many earlier runs were lower (1: lowest of all, runs + 1: highest)


def position(s: Series) -> Optional[Position]:
    """None with fewer than `MIN_POINTS` runs of history, or no value now."""
    if s.current is None or len(s.values) < MIN_POINTS:
        return None
    value, low, high = s.current, s.low, s.high
    # Means are written rounded to 6 places; a value equal to the edge at that precision is within.
    where: Literal["below", "within", "above"] = "below" if value < low - 1e-9 else "above" if value > high + 1e-9 else "within"
    rank = 1 + sum(v < value - 1e-9 for v in s.values)
    return Position(where, value, low, high, len(s.values), rank)


def placement(s: Series) -> Optional[tuple[str, str, str]]:
    """(`▼ 0.712`, `below 0.780–0.860`, "below"): this run's value and where it sits against
    the earlier runs' range, in words the reports print; None when `position` places nothing."""
    pos = position(s)
    if pos is None:
        return None
    mark = {"below": "▼ ", "above": "▲ ", "within": ""}[pos.where]
    return f"{mark}{pos.value:.3f}", f"{pos.where} {pos.low:.3f}–{pos.high:.3f}", pos.where


def axis_range(values: list[float]) -> tuple[float, float]:
    """A chart's y axis for `values`: their range padded a little, on whole hundredths, kept
    within [0, 1] when the values are (scores usually are)."""
    low, high = min(values), max(values)
    pad = max((high - low) * 0.2, 0.02)
    # rounded first: 0.66 must not become 0.65 through 65.99999...
    low, high = math.floor(round((low - pad) * 100, 6)) / 100, math.ceil(round((high + pad) * 100, 6)) / 100
    if min(values) >= 0 and max(values) <= 1:
        low, high = max(low, 0.0), min(high, 1.0)
    return low, high


def header(trends: list[Series]) -> str:
    """The tables' column title: "this run against the last 12 default-branch runs"."""
    n = max((len(t.values) for t in trends), default=0)
    if not n:
        return ""
    return "this run against the last default-branch run" if n == 1 else f"this run against the last {n} default-branch runs"
