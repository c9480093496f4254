"""How the gate's reasons write numbers, p-values, case names and counts (every test's words use them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from evalgate.i18n import name_list

if TYPE_CHECKING:
    from evalgate.gate.model import CaseKey


def fmt(x: Optional[float]) -> str:
    """A mean or bound: `0.812`, or `n/a`."""
    return "n/a" if x is None else f"{x:.3f}"


def fmt_p(p: float) -> str:
    """A p-value: `0.004`, or `3.2e-05` below 0.001."""
    return f"{p:.1e}" if p < 0.001 else f"{p:.3f}"


def _name(key: CaseKey) -> str:
    return f"{key.eval_set_id}/{key.eval_id}"


def case_names(keys: list[CaseKey], limit: int = 5) -> str:
    """`set/a, set/b and 3 more` (see name_list)."""
    return name_list([_name(k) for k in keys], limit)

