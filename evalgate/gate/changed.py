"""The changed-case test: a case whose data its criteria read changed, which the baseline passed and the run fails.

A case is compared with its baseline only while what its criteria read is the same
(evalgate.gate.values.same_data); a changed one has nothing to be compared with, and was
only listed. A pull request could then break a case and edit it in the same change, and the
case left the gate. So a changed case that the baseline PASSED and that FAILED now FAILs its
suite, named: either the edit is right and the agent must now pass it, or the edit is
wrong. A changed case that failed in the baseline too, or passes now, decides nothing.
"""

from __future__ import annotations

from typing import Optional

from evalgate.gate.model import CaseKey
from evalgate.gate.words import case_names
from evalgate.i18n import n_
from evalgate.results import CaseResult, Status


def measure(changed: list[CaseKey], base_cases: dict[CaseKey, CaseResult], cur_cases: dict[CaseKey, CaseResult]) -> list[CaseKey]:
    """The changed cases the baseline passed that fail now."""
    return [k for k in changed if base_cases[k].status is Status.PASSED and cur_cases[k].status is Status.FAILED]


def decide(broken: list[CaseKey]) -> Optional[str]:
    """Why the suite FAILs (the changed cases the baseline passed that fail now), or None."""
    if not broken:
        return None
    return n_(
        "{n} changed case the baseline passed fails now: {cases} (its expected data changed in this run; a case does not leave the gate by being edited)",
        "{n} changed cases the baseline passed fail now: {cases} (their expected data changed in this run; a case does not leave the gate by being edited)",
        len(broken),
        cases=case_names(sorted(broken)),
    )
