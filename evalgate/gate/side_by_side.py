"""The side-by-side test (`gate.pairwise`): a suite's changed answers, judged against the baseline's
(evalgate.gate.pairwise asks the judge), lose significantly more often than they win.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from evalgate.gate.model import GatePolicy, Verdict
from evalgate.gate.pairwise import SuitePairs
from evalgate.gate.stats import binomial_upper, sign_test, signed_rank_test
from evalgate.gate.words import fmt_p
from evalgate.i18n import _, n_, name_list


# How the test scores a case by how decisive its verdicts were (evalgate.gate.stats.signed_rank_test):
# its net verdict cubed (a mean over rounds when gate.pairwise.confirm judged it twice), so a case
# lost in every order weighs 8 times one lost in one order and tied in the other (2 samples).
# Measured (bench/bench_pairwise.py --biased, issue 37's biased judge, 90 cases, 20% dropped
# detail, the net verdicts measured at the wire, 2 samples): caught with the sign test 24%,
# squares 80%, cubes 81%; with gate.pairwise.confirm, squares 85-86%, cubes 94%; unchanged
# paraphrases FAIL 0.3-0.4% with each.
SCORES = "cubes"


@dataclass
class PairwiseComparison:
    """A suite's changed answers judged side by side with the baseline's (`gate.pairwise`,
    evalgate.gate.pairwise): losses against wins, ties set aside, one-sided exact sign test.

    The pull request's preference score of a case is 1 for a win, 1/2 for a tie (unchanged
    answers included) and 0 for a loss; `delta` is its mean over the compared cases less 1/2,
    (wins - losses) / (2 * compared), on the scale of a criterion's score, so `resolution`
    means what it means for a criterion; the margin is `gate.pairwise.margin` (default 0:
    one request sees both answers, so no judge mood moves one side alone, and the two
    orders cancel a position bias). The test: H0, the expected drop is at most the margin;
    given the n decided cases, each is lost with probability at most 1/2 + margin * compared
    / n, however decisively. The test weighs how decisive each case was: an exact sign-flip
    test on the cases' net verdicts, each scored by its net cubed (SCORES;
    evalgate.gate.stats.signed_rank_test), conditional on the nets' sizes: a case lost in both
    orders weighs 8 times one lost in one order and tied in the other, which is what a
    judge's length or position preference makes of a paraphrase; a case whose verdicts all
    picked one side was judged a second round (gate.pairwise.confirm) and its net is the mean
    of the two, so a leaning that did not repeat weighs as a one-order verdict. Before issue 37 it was the
    sign test, p = P(Binomial(n, that) >= losses), kept in `sign_p`.
    Measured in bench/bench_pairwise.py --biased. One entry in the gate's Holm family. INCONCLUSIVE by the gate's rule: the drop is beyond the margin, not
    significant, and its one-sided 95% upper bound (Clopper-Pearson on the share of losses)
    is beyond max(resolution, margin).
    """

    suite: str
    pairs: SuitePairs
    compared: int  # cases compared: judged or unchanged (NOT_EVALUATED and left-out ones not)
    changed: int  # of them, with a changed answer (judged)
    losses: int
    wins: int
    ties: int  # unchanged answers included
    not_evaluated: int
    delta: Optional[float] = None  # (wins - losses) / (2 * compared)
    drop_upper: Optional[float] = None  # one-sided 95% upper bound of -delta
    p_value: Optional[float] = None  # the signed-rank test on the cases' net verdicts
    p_adjusted: Optional[float] = None
    sign_p: Optional[float] = None  # the sign test on losses against wins (before issue 37; shown beside, not in Holm)
    status: Verdict = Verdict.PASS
    reasons: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """`judged side by side: 14 of 20 changed answers worse than the baseline's, 3 better, 3 equal`."""
        equal = self.changed - self.losses - self.wins
        text = n_(
            "judged side by side: {losses} of {n} changed answer worse than the baseline's, {wins} better, {equal} equal",
            "judged side by side: {losses} of {n} changed answers worse than the baseline's, {wins} better, {equal} equal",
            self.changed,
            losses=self.losses,
            wins=self.wins,
            equal=equal,
        )
        unchanged = self.compared - self.changed
        if unchanged:
            text = _("{summary}, {unchanged} unchanged", summary=text, unchanged=unchanged)
        unheard = n_("{n} case not evaluated", "{n} cases not evaluated", self.not_evaluated) if self.not_evaluated else None
        left = _("{n} left out by max_cases", n=len(self.pairs.left_out)) if self.pairs.left_out else None
        if unheard and left:
            text = _("{summary} ({not_evaluated}, {left_out})", summary=text, not_evaluated=unheard, left_out=left)
        elif unheard or left:
            text = _("{summary} ({notes})", summary=text, notes=unheard or left)
        if self.p_adjusted is not None:
            text = _("{summary}; p = {p} after Holm", summary=text, p=fmt_p(self.p_adjusted))
        return text


def measure(pairs: SuitePairs, policy: GatePolicy) -> PairwiseComparison:
    """Counts, drop and sign test of a suite's pairs (see PairwiseComparison)."""
    counted = [c for c in pairs.cases if c.outcome != "not_evaluated"]
    losses = sum(c.outcome == "loss" for c in counted)
    wins = sum(c.outcome == "win" for c in counted)
    comp = PairwiseComparison(
        suite=pairs.suite,
        pairs=pairs,
        compared=len(counted),
        changed=sum(c.changed for c in counted),
        losses=losses,
        wins=wins,
        ties=len(counted) - losses - wins,
        not_evaluated=len(pairs.cases) - len(counted),
    )
    if not counted:
        return comp
    n, total = losses + wins, len(counted)
    comp.delta = (wins - losses) / (2 * total)
    if n:
        margin = policy.pairwise.margin
        share = 0.5 + margin * total / n
        # How decisive each case's verdicts were (lost both orders, or one): the signed-rank
        # test on the cases' net verdicts; the sign test, which counts only their signs, beside it.
        comp.sign_p = sign_test(losses, wins, share)
        comp.p_value = signed_rank_test([_net(c) for c in counted], share, SCORES)
        upper = binomial_upper(losses, n)
        comp.drop_upper = None if upper is None else (2 * upper - 1) * n / (2 * total)
    return comp


def _net(case) -> float:
    """A case's net verdict, its sign its outcome's (a case built without its verdicts counts 1)."""
    if case.outcome == "loss":
        return case.score if case.score < 0 else -1
    if case.outcome == "win":
        return case.score if case.score > 0 else 1
    return 0


def decide(comp: PairwiseComparison, policy: GatePolicy) -> tuple[Optional[str], Optional[str]]:
    """(why it FAILs, why it is INCONCLUSIVE), each None when not; sets comp.status and reasons."""
    margin = policy.pairwise.margin
    what = comp.summary()
    if comp.not_evaluated:
        comp.reasons.append(_unheard(comp))
    if comp.pairs.left_out:
        names = [f"{a}/{b}" for a, b in comp.pairs.left_out]
        comp.reasons.append(
            n_(
                "{n} changed case not judged side by side (beyond gate.pairwise.max_cases): {cases}",
                "{n} changed cases not judged side by side (beyond gate.pairwise.max_cases): {cases}",
                len(names),
                cases=name_list(names, 10),
            )
        )
    drop = None if comp.delta is None else -comp.delta
    if comp.p_adjusted is not None and comp.p_adjusted < policy.alpha:
        comp.status = Verdict.FAIL
        text = _(
            "{what}: the pull request's answers lose significantly more often than they win (drop {drop}, beyond the margin {margin})",
            what=what,
            drop=f"{drop:.3f}",
            margin=f"{margin:g}",
        )
        comp.reasons.insert(0, text)
        return text, None
    if drop is not None and drop > margin and (comp.drop_upper is None or comp.drop_upper > max(policy.resolution, margin)):
        comp.status = Verdict.INCONCLUSIVE
        fields = dict(what=what, drop=f"{drop:.3f}", margin=f"{margin:g}", resolution=f"{max(policy.resolution, margin):g}")
        if comp.drop_upper is None:
            text = _(
                "{what}: losing more often than winning (drop {drop}, margin {margin}), not significantly; this run cannot "
                "rule out a drop bigger than {resolution}; more changed cases would settle it",
                **fields,
            )
        else:
            text = _(
                "{what}: losing more often than winning (drop {drop}, margin {margin}), not significantly; this run cannot "
                "rule out a drop bigger than {resolution} (95% upper bound {bound}); more changed cases would settle it",
                **fields,
                bound=f"{comp.drop_upper:.3f}",
            )
        comp.reasons.insert(0, text)
        return None, text
    comp.status = Verdict.PASS
    comp.reasons.insert(0, what)
    return None, None


def apply(verdict: Verdict, reasons: list[str], comp: PairwiseComparison, policy: GatePolicy, not_evaluated: str) -> Verdict:
    """A regression-mode suite's verdict with its pairwise test folded in. Cases the judge could
    not decide are never losses; they follow the suite's `not_evaluated` policy as any case not
    evaluated does: `fail` fails the suite, `warn` makes a pass INCONCLUSIVE, `ignore` nothing."""
    fail, unsure = decide(comp, policy)
    if verdict is Verdict.ERROR:
        return verdict
    unheard = _unheard(comp) if comp.not_evaluated else None
    if fail:
        reasons.insert(0, fail)
        return Verdict.FAIL
    if unheard is not None and not_evaluated != "ignore":
        reasons.append(unheard)
        if not_evaluated == "fail":
            return Verdict.FAIL
        if verdict is Verdict.PASS and not unsure:  # `warn`: answers the judge did not hear cannot be called a pass
            verdict = Verdict.INCONCLUSIVE
    if unsure:
        reasons.append(unsure)
        if verdict is Verdict.PASS:
            if policy.inconclusive == "fail":
                reasons.append(_("inconclusive, and the gate's `inconclusive` policy is `fail`"))
                return Verdict.FAIL
            return Verdict.INCONCLUSIVE
    return verdict


def _unheard(comp: PairwiseComparison) -> str:
    """The reason for the cases the judge could not decide side by side (decide() lists it;
    apply() folds it into the verdict under the suite's `not_evaluated` policy)."""
    failed_cases = [c for c in comp.pairs.cases if c.outcome == "not_evaluated"]
    return n_(
        "{n} case not evaluated side by side: {cases} ({error})",
        "{n} cases not evaluated side by side: {cases} ({error})",
        len(failed_cases),
        cases=name_list([f"{c.eval_set_id}/{c.eval_id}" for c in failed_cases], 3),
        error=failed_cases[0].error,
    )
