"""Pairwise benchmark: `gate.pairwise` against fake Gemini judges with known preferences, at the wire.

    python bench/bench_pairwise.py        # --cases 400 --prs 5 --seed 1 --concurrency 8
    python bench/bench_pairwise.py --biased --prs 20   # issue 37: a biased judge, 90 cases in en/ko/ja

One fake `generateContent` server (tests/fake_gemini.py) on 127.0.0.1, reached through
google-genai with GOOGLE_API_KEY and GOOGLE_GEMINI_BASE_URL, as evalgate reaches Gemini;
evalgate's own code path end to end: `evalgate.pairwise.judge_pairs` on a `JudgeRuntime`,
then `evalgate.gate.compare` with `gate.pairwise` on (its defaults: num_samples 2,
margin 0, alpha 0.01, Holm over the suite's tests).

Data: a support agent's suite of `--cases` single-turn cases with no reference answer (no
expected response; one deterministic criterion that does not move, so the Holm family
holds two tests, as a real gate's does). The baseline's answers keep the order number and
the tracking id; the pull request's are paraphrases of them, written differently from run
to run, except where the PR drops the key detail.

Judges (tests/pairwise_judges.py): J1 prefers the answer that keeps the order number and
the tracking id, and picks at random between paraphrases; J2 is J1 that answers "A"
outright 40% of the time, so between paraphrases it prefers position A 70% of the time.

Worlds:
  unchanged: every answer a paraphrase;
  dropped:   each answer independently, with probability 0.15, drops the key detail.

For each world and judge, `--prs` pull requests run at the wire (the cache off, so every
verdict is asked). Their case outcomes measure the chance that a case is a loss and a win
(per kind of case: paraphrased, dropped); from those measured chances, the exact chance
that a pull request of `--cases` cases FAILs follows from the sign test (a trinomial sum:
the number of losses and wins among the cases), since cases are independent given the
judge. That is the false-FAIL rate (unchanged world) and the detection rate (dropped world).
A paraphrased case's loss and win are taken as equally likely (the judge cannot know which
side is the PR's; the 1% tail is too sensitive to the noise of a measured split), and that
symmetry is tested on the measured counts: a bug mapping A/B back would show there.
The PRs at the wire are too few to measure 1% directly, and are shown beside the exact rate
as a check. Then one PR with the cache on, and its rerun: requests per changed invocation,
and requests on the rerun.

Goals (issue 28): false FAIL at most 1% with either judge; a PR dropping the key detail in
15% of cases caught in at least 90% of PRs; 2 requests per changed invocation (and, since
issue 37, 2 more for an answer whose verdicts all picked one side: gate.pairwise.confirm), 0
on a rerun. The FAIL rates here come from the sign test on each case's outcome; both judges
give every case a net of -2, 0 or +2 per round, where the gate's cubes weigh every decided
case alike, as the sign test does (confirmation rounds aside). The --biased table runs the
gate's own test.
Prints the table with each figure as a ratio to its goal, and exits 1 when a judge request
failed or a case was not evaluated (a missed goal is printed, not an exit code).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from evalgate.gate import GatePolicy, Verdict, compare  # noqa: E402
from evalgate.judge.runtime import JudgeRuntime  # noqa: E402
from evalgate.gate.pairwise import PairwisePolicy  # noqa: E402
from evalgate.pairwise import judge_pairs  # noqa: E402
from evalgate.results import Counts, CriterionSpec, RunInfo, Status, SuiteResult  # noqa: E402
from evalgate.gate.stats import binomial_sf, sign_test  # noqa: E402
from fake_gemini import FAKE_API_KEY, FakeGemini  # noqa: E402
from pairwise_judges import detail_judge  # noqa: E402
from result_builders import case, crit, inv, run_of  # noqa: E402

KEEP = [
    "Your order ORD-{n} has shipped; the tracking id is TRK{n}.",
    "Good news: order ORD-{n} is on its way, tracking number TRK{n}.",
    "Order ORD-{n} left our warehouse today. Track it with TRK{n}.",
    "ORD-{n} shipped! Use tracking id TRK{n} to follow it.",
    "We sent order ORD-{n}; its tracking id is TRK{n}.",
]
DROP = [
    "Your order has shipped and should arrive soon.",
    "Good news: your parcel is on its way.",
    "It left our warehouse today and will arrive in a few days.",
]
ALPHA = 0.01
DROP_SHARE = 0.15


def _suite_run(texts: dict[str, str]):
    cases = [
        case("support", eid, {"exact_status": crit(0.5, (1.0, {}))}, [inv(f"Where is my order {eid}?", t)])
        for eid, t in sorted(texts.items())
    ]
    suite = SuiteResult(
        name="support", status=Status.PASSED, not_evaluated_policy="warn", counts=Counts.of(cases),
        criteria={"exact_status": CriterionSpec(threshold=0.5, version="1")}, cases=cases,
    )
    return run_of([suite], "sha256:bench", RunInfo())


def _pr(n_cases: int, world: str, rng: random.Random, salt: int):
    """(baseline, current, the ids whose answer dropped the detail)."""
    base, cur, dropped = {}, {}, set()
    for i in range(n_cases):
        eid, num = f"case-{i:04}", f"{salt}{i:04}"
        b = rng.randrange(len(KEEP))
        base[eid] = KEEP[b].format(n=num)
        if world == "dropped" and rng.random() < DROP_SHARE:
            cur[eid] = rng.choice(DROP)
            dropped.add(eid)
        else:
            cur[eid] = KEEP[(b + 1 + rng.randrange(len(KEEP) - 1)) % len(KEEP)].format(n=num)  # another wording
    return _suite_run(base), _suite_run(cur), dropped


def _log_pmf(n: int, k: int, p: float) -> float:
    if p <= 0.0:
        return 0.0 if k == 0 else -math.inf
    if p >= 1.0:
        return 0.0 if k == n else -math.inf
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * math.log(p) + (n - k) * math.log1p(-p)


def exact_fail_rate(n_cases: int, p_loss: float, p_win: float, tests: int = 2, margin: float = 0.0) -> float:
    """P(FAIL) for a PR of n_cases independent cases, each a loss with p_loss and a win with
    p_win: the sign test's p (with the margin, as compare computes it) times `tests` (Holm's
    first step, the smallest of `tests` p-values) below ALPHA."""
    decided = p_loss + p_win
    if decided <= 0:
        return 0.0
    share = p_loss / decided
    total = 0.0
    for n in range(1, n_cases + 1):
        wn = _log_pmf(n_cases, n, decided)
        if wn < -40:
            continue
        # The fewest losses that FAIL (p falls as losses rise): bisection.
        lo, hi = 0, n + 1
        while lo < hi:
            mid = (lo + hi) // 2
            if sign_test(mid, n - mid, 0.5 + margin * n_cases / n) * tests < ALPHA:
                hi = mid
            else:
                lo = mid + 1
        if lo <= n:
            total += math.exp(wn) * binomial_sf(lo, n, share)
    return total


# --biased (issue 37): a support agent of 90 cases in English, Korean and Japanese; the PR drops
# the order number from 20% of its answers; the judge prefers the longer of two equally good
# answers ~25% of the time, position A ~15%, and 3% of its replies are cut off.
BIASED_KEEP = {
    "en": ["Your order ORD-{n} has shipped; the tracking id is TRK{n}.",
           "Good news: order ORD-{n} is on its way. You can follow it any time with tracking number TRK{n} on our site.",
           "ORD-{n} shipped! Track it with TRK{n}."],
    "ko": ["주문 ORD-{n}이 발송되었습니다. 운송장 번호는 TRK{n}입니다.",
           "좋은 소식입니다. 주문 ORD-{n}은 배송 중이며, 운송장 번호 TRK{n}으로 언제든지 배송 상황을 확인하실 수 있습니다.",
           "ORD-{n} 발송 완료, 운송장 TRK{n}."],
    "ja": ["ご注文 ORD-{n} は発送済みです。追跡番号は TRK{n} です。",
           "ご注文 ORD-{n} は現在配送中です。追跡番号 TRK{n} でいつでも配送状況をご確認いただけます。",
           "ORD-{n} 発送済み、追跡 TRK{n}。"],
}
BIASED_DROP = {
    "en": ["Your order has shipped; the tracking id is TRK{n}.", "Good news: your parcel is on its way with tracking number TRK{n}."],
    "ko": ["주문이 발송되었습니다. 운송장 번호는 TRK{n}입니다.", "배송 중이며 운송장 번호는 TRK{n}입니다."],
    "ja": ["ご注文は発送済みです。追跡番号は TRK{n} です。", "配送中です。追跡番号は TRK{n} です。"],
}
BIASED_CASES, BIASED_DROP_SHARE = 90, 0.20


def _biased_pr(world: str, rng: random.Random, salt: int):
    """(baseline, current, the ids whose answer dropped the order number): 30 cases per language."""
    base, cur, dropped = {}, {}, set()
    for i in range(BIASED_CASES):
        lang = ("en", "ko", "ja")[i % 3]
        eid, num = f"{lang}-{i:03}", f"{salt}{i:03}"
        b = rng.randrange(3)
        base[eid] = BIASED_KEEP[lang][b].format(n=num)
        if world == "dropped" and rng.random() < BIASED_DROP_SHARE:
            cur[eid] = rng.choice(BIASED_DROP[lang]).format(n=num)
            dropped.add(eid)
        else:
            cur[eid] = BIASED_KEEP[lang][(b + 1 + rng.randrange(2)) % 3].format(n=num)
    return _suite_run(base), _suite_run(cur), dropped


def biased(args: argparse.Namespace) -> int:
    """The --biased table: PRs at the wire measure each kind of case's net verdict (-2..2) and
    how often a case is not evaluated; then `--draws` PRs of 90 cases drawn from those measured
    chances go through the gate's own test (evalgate.gate.side_by_side.measure, then Holm's first
    step over the suite's 2 tests), which is what decides FAIL."""
    from evalgate.gate import side_by_side
    from evalgate.gate.pairwise import CasePair, SuitePairs
    from pairwise_judges import biased_judge

    fake = FakeGemini().start()
    os.environ.update({"GOOGLE_API_KEY": FAKE_API_KEY, "GOOGLE_GEMINI_BASE_URL": fake.url})
    for var in ("GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        os.environ.pop(var, None)
    rng = random.Random(args.seed)
    policy = GatePolicy(pairwise=PairwisePolicy(enabled=True, num_samples=args.samples, confirm=not args.no_confirm))
    if args.scores:  # a variant of the test measured beside the gate's own (side_by_side.SCORES)
        side_by_side.SCORES = args.scores
    started = time.monotonic()
    nets: dict[str, dict[str, list]] = {}
    wire: dict[str, list[int]] = {}
    try:
        fake.responder = biased_judge(args.seed)
        salt = 0
        for world in ("unchanged", "dropped"):
            kinds = nets[world] = {"paraphrase": [], "dropped": []}
            wire[world] = [0, 0, 0, 0]  # PRs, FAIL, INCONCLUSIVE, cases not evaluated
            for _ in range(args.prs):
                salt += 1
                baseline, current, dropped = _biased_pr(world, rng, salt)
                requests = len(fake.requests)
                with JudgeRuntime(concurrency=args.concurrency, use_cache=False, cache_dir=Path(tempfile.gettempdir())) as rt:
                    pairs = judge_pairs(baseline, current, policy.pairwise, rt)
                suite = compare(baseline, current, policy, pairwise=pairs).suites[0]
                w = wire[world]
                w[0] += 1
                w[1] += suite.verdict is Verdict.FAIL
                w[2] += suite.verdict is Verdict.INCONCLUSIVE
                for c in pairs["support"].cases:
                    w[3] += c.outcome == "not_evaluated"
                    kinds["dropped" if c.eval_id in dropped else "paraphrase"].append(None if c.outcome == "not_evaluated" else c.score)
                wire[world].append(len(fake.requests) - requests)
    finally:
        fake.stop()
    draw = random.Random(args.seed + 1)
    para = [x for world in nets.values() for x in world["paraphrase"]]
    para = para + [None if x is None else -x for x in para]  # the judge cannot know the PR's side: symmetric
    drop = nets["dropped"]["dropped"]
    print(f"gate.pairwise, issue 37's biased judge (prefers the longer of equal answers 25%, position A 15%, 3% of replies cut "
          f"off): {BIASED_CASES} cases (en/ko/ja), the PR drops the order number from {BIASED_DROP_SHARE:.0%}; {args.prs} PRs at the "
          f"wire per world, {args.draws} drawn PRs; num_samples {args.samples}, confirm {not args.no_confirm}, scores "
          f"{side_by_side.SCORES}; {time.monotonic() - started:.0f} s")
    print()
    hist = lambda xs: " ".join(f"{k:+g}:{sum(x == k for x in xs) / len(xs):.3f}" for k in sorted({x for x in xs if x is not None})) + (  # noqa: E731
        f" NE:{sum(x is None for x in xs) / len(xs):.3f}")
    print(f"net verdicts, paraphrased cases: {hist(para)}")
    print(f"net verdicts, dropped-detail cases: {hist(drop)}")
    out = {}
    for world in ("unchanged", "dropped"):
        fails = unsure = 0
        for _ in range(args.draws):
            cases = []
            for i in range(BIASED_CASES):
                kind = drop if world == "dropped" and draw.random() < BIASED_DROP_SHARE else para
                net = kind[draw.randrange(len(kind))]
                outcome = "not_evaluated" if net is None else "win" if net > 0 else "loss" if net < 0 else "tie"
                cases.append(CasePair("set", f"c{i}", outcome, score=net or 0, error="cut off" if net is None else None))
            comp = side_by_side.measure(SuitePairs("support", "m", args.samples, cases), policy)
            comp.p_adjusted = None if comp.p_value is None else min(1.0, 2 * comp.p_value)  # Holm's first step, 2 tests
            fails += comp.p_adjusted is not None and comp.p_adjusted < ALPHA
            unsure += comp.not_evaluated > 0 and not (comp.p_adjusted is not None and comp.p_adjusted < ALPHA)
        out[world] = (fails / args.draws, unsure / args.draws)
        w = wire[world]
        print(f"{world:9}: FAIL {out[world][0]:.2%} of drawn PRs, passing PRs with a case not evaluated (INCONCLUSIVE under "
              f"not_evaluated: warn) {out[world][1]:.2%}; at the wire FAIL {w[1]}/{w[0]}, INCONCLUSIVE {w[2]}/{w[0]}, cases not "
              f"evaluated {w[3]} of {w[0] * BIASED_CASES}, requests per PR {sum(w[4:]) / max(1, len(w) - 4):.0f}")
    ok_fp, ok_tp = out["unchanged"][0] <= 0.01, out["dropped"][0] >= 0.90
    print()
    print(f"goals: false FAIL <= 1%: {out['unchanged'][0]:.2%} (ratio {out['unchanged'][0] / 0.01:.2f}) {'met' if ok_fp else 'MISSED'}; "
          f"20% dropped detail caught >= 90%: {out['dropped'][0]:.2%} (ratio {out['dropped'][0] / 0.90:.2f}) {'met' if ok_tp else 'MISSED'}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=400)
    ap.add_argument("--prs", type=int, default=5, help="pull requests at the wire per world and judge")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--biased", action="store_true", help="instead: issue 37's biased judge, 90 cases in en/ko/ja, 20%% dropped detail")
    ap.add_argument("--draws", type=int, default=20000, help="with --biased: PRs drawn from the measured chances")
    ap.add_argument("--samples", type=int, default=2, help="with --biased: gate.pairwise.num_samples (even)")
    ap.add_argument("--no-confirm", action="store_true", help="with --biased: gate.pairwise.confirm off")
    ap.add_argument("--scores", choices=("signs", "ranks", "squares", "cubes"), help="with --biased: the test's scores "
                    "instead of the gate's (evalgate.gate.side_by_side.SCORES)")
    args = ap.parse_args()
    if args.biased:
        return biased(args)

    fake = FakeGemini().start()
    os.environ.update({"GOOGLE_API_KEY": FAKE_API_KEY, "GOOGLE_GEMINI_BASE_URL": fake.url})
    for var in ("GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        os.environ.pop(var, None)
    rng = random.Random(args.seed)
    policy = GatePolicy(pairwise=PairwisePolicy(enabled=True))
    judges = {"J1 random between paraphrases": 0.0, "J2 prefers position A 70%": 0.4}
    problems = 0
    rows = []
    started = time.monotonic()
    try:
        salt = 0
        for j, (jname, bias) in enumerate(judges.items()):
            fake.responder = detail_judge(args.seed * 100 + j, position_bias=bias)
            for world in ("unchanged", "dropped"):
                counts = {"paraphrase": [0, 0, 0], "dropped": [0, 0, 0]}  # cases, losses, wins
                fails = inconclusive = 0
                t0 = time.monotonic()
                for _ in range(args.prs):
                    salt += 1
                    baseline, current, dropped = _pr(args.cases, world, rng, salt)
                    with JudgeRuntime(concurrency=args.concurrency, use_cache=False, cache_dir=Path(tempfile.gettempdir())) as rt:
                        pairs = judge_pairs(baseline, current, policy.pairwise, rt)
                    comparison = compare(baseline, current, policy, pairwise=pairs)
                    suite = comparison.suites[0]
                    fails += suite.verdict is Verdict.FAIL
                    inconclusive += suite.verdict is Verdict.INCONCLUSIVE
                    stats = pairs["support"].stats
                    problems += stats.get("failures", 0)
                    for c in pairs["support"].cases:
                        problems += c.outcome == "not_evaluated"
                        k = counts["dropped" if c.eval_id in dropped else "paraphrase"]
                        k[0] += 1
                        k[1] += c.outcome == "loss"
                        k[2] += c.outcome == "win"
                seconds = time.monotonic() - t0
                share = DROP_SHARE if world == "dropped" else 0.0
                para, drop = counts["paraphrase"], counts["dropped"]
                pl_p, pw_p = para[1] / para[0], para[2] / para[0]
                pl_d, pw_d = (drop[1] / drop[0], drop[2] / drop[0]) if drop[0] else (0.0, 0.0)
                p_loss = (1 - share) * pl_p + share * pl_d
                p_win = (1 - share) * pw_p + share * pw_d
                measured = exact_fail_rate(args.cases, p_loss, p_win)
                # The judge does not know which side is the PR's, so a paraphrased case's loss and
                # win are equally likely if evalgate maps A/B back right in both orders: the rate
                # takes their measured share of decided cases split evenly (the 1% tail is too
                # sensitive to the measured split's noise), and the symmetry is tested ("sym. p":
                # a mapping bug shows as lopsided counts). Dropped cases count as measured.
                even = (pl_p + pw_p) / 2
                rate = exact_fail_rate(args.cases, (1 - share) * even + share * pl_d, (1 - share) * even + share * pw_d)
                sym = min(1.0, 2 * min(sign_test(para[1], para[2]), sign_test(para[2], para[1])))
                rows.append((jname, world, args.prs, fails, inconclusive, pl_p, pw_p, pl_d, pw_d, rate, measured, sym, seconds))

        # Requests per changed invocation, and an unchanged rerun, with the cache on.
        fake.responder = detail_judge(args.seed)
        baseline, current, _ = _pr(args.cases, "dropped", rng, salt + 1)
        with tempfile.TemporaryDirectory() as cache:
            before = len(fake.requests)
            with JudgeRuntime(concurrency=args.concurrency, cache_dir=Path(cache)) as rt:
                first = judge_pairs(baseline, current, policy.pairwise, rt)
            asked = len(fake.requests) - before
            changed = sum(len(c.invocations) for c in first["support"].cases)
            confirmed = sum(len(p.verdicts) > 2 for c in first["support"].cases for p in c.invocations)
            before = len(fake.requests)
            with JudgeRuntime(concurrency=args.concurrency, cache_dir=Path(cache)) as rt:
                again = judge_pairs(baseline, current, policy.pairwise, rt)
            rerun = len(fake.requests) - before
            same = [c.outcome for c in again["support"].cases] == [c.outcome for c in first["support"].cases]
    finally:
        fake.stop()

    print(f"gate.pairwise: {args.cases} cases per PR, {args.prs} PRs at the wire per world and judge, num_samples 2, alpha {ALPHA}")
    print()
    head = (f"{'judge':30} {'world':9} {'FAIL@wire':>9} {'INCONCL.':>8} {'loss/win paraphrased':>20} {'sym. p':>6} "
            f"{'loss/win dropped':>16} {'FAIL rate':>9} {'(as measured)':>13} {'goal':>6} {'ratio':>6} {'s/PR':>5}")
    print(head)
    print("-" * len(head))
    met = True
    for jname, world, prs, fails, inc, pl_p, pw_p, pl_d, pw_d, rate, measured, sym, seconds in rows:
        goal, ok = (0.01, rate <= 0.01) if world == "unchanged" else (0.90, rate >= 0.90)
        ok &= sym > 0.01
        met &= ok or jname.startswith("J2") and world == "dropped"  # the detection goal is the detail judge's (J1)
        drop_cell = f"{pl_d:.3f}/{pw_d:.3f}" if world == "dropped" else "–"
        sym_cell = f"{sym:.2f}"
        print(
            f"{jname:30} {world:9} {f'{fails}/{prs}':>9} {f'{inc}/{prs}':>8} {f'{pl_p:.3f}/{pw_p:.3f}':>20} {sym_cell:>6} {drop_cell:>16} "
            f"{rate:>9.2%} {measured:>13.2%} {('<=' if world == 'unchanged' else '>=') + f'{goal:.0%}':>6} {rate / goal:>6.2f} {seconds / prs:>5.1f}"
        )
    print()
    print("FAIL rate: exact, for a PR of this size, from the case outcomes measured at the wire: the paraphrased cases'")
    print("decided share split evenly between losses and wins (their symmetry tested in 'sym. p'), the dropped cases' as")
    print("measured; '(as measured)' takes the paraphrased cases' measured split as it is, noise and all.")
    print()
    print(f"requests per changed invocation: {asked / changed:.2f} (goal 2, and 2 more for the {confirmed / changed:.0%} whose "
          f"verdicts all picked one side, gate.pairwise.confirm: {2 + 2 * confirmed / changed:.2f}; ratio "
          f"{asked / (2 * changed + 2 * confirmed):.2f}); on an unchanged rerun: {rerun} (goal 0), outcomes the same: {same}")
    print(f"judge failures and cases not evaluated: {problems}; wall time {time.monotonic() - started:.0f} s")
    met &= asked == 2 * changed + 2 * confirmed and rerun == 0 and same
    print("goals met" if met else "GOAL MISSED (see the table)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
