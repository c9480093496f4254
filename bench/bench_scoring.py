"""Benchmark: evalgate's tool_trajectory and response_match scoring against ADK 2.13's, in one process.

    python bench/bench_scoring.py [--invocations 10000] [--seed N] [--repeat 3] [--profile]

Generates ADK-shaped cases (the generator in tests/adk_cases.py), builds both sides'
models from the same dicts, scores every criterion with each side, checks that the scores
are identical and prints timings. Exits 1 if any score or status differs, 2 without ADK.
"""

from __future__ import annotations

import argparse
import random
import cProfile
import gc
import io
import pstats
import resource
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import adk_cases as gen  # noqa: E402

GOAL = 20.0

SPECS = [
    *(
        gen.Spec("tool_trajectory_avg_score", 1.0, match_type, ignore_args)
        for match_type in gen.MATCH_TYPES
        for ignore_args in (False, True)
    ),
    gen.Spec("response_match_score", 0.8),
]


def _short(spec: gen.Spec) -> str:
    if spec.metric == "response_match_score":
        return "response_match"
    return f"trajectory {spec.match_type}" + (" ignore_args" if spec.ignore_args else "")


def _clear_evalgate_caches() -> None:
    from evalgate.criteria import response_match

    response_match._counts.cache_clear()
    response_match._WORDS.clear()


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    # As timeit does, time with the garbage collector off: its passes would scan every
    # live object, both sides' models included, and so charge each side for the other.
    gc.disable()
    try:
        t0 = time.perf_counter()
        out = fn()
        return time.perf_counter() - t0, out
    finally:
        gc.enable()


def _word(rng: random.Random, script: str) -> str:
    if script == "en":  # pronounceable pseudo-words, so the Porter stemmer does real work
        syllables = rng.randint(1, 4)
        word = "".join(rng.choice("bcdfghklmnprstvw") + rng.choice("aeiou") for _ in range(syllables))
        return word + rng.choice(["", "s", "ing", "ed", "ly", "tion", "er"])
    if script == "ko":
        return "".join(chr(rng.randint(0xAC00, 0xD7A3)) for _ in range(rng.randint(2, 4)))
    pool = "のはをにがでとしてですますあるいうえおかきくけこアイウエオカキクケコ東京大阪注文配送返品確認"
    return "".join(rng.choice(pool) for _ in range(rng.randint(2, 6)))


def _use_response_sized_texts(cases: list, seed: int) -> None:
    """Give every invocation an agent-sized reference and a reworded actual response.

    Unique per invocation, so whole-text caching cannot help; words repeat across texts
    the way a vocabulary does, which the per-word stem cache may use (as in a real run).
    """
    rng = random.Random(seed * 7919)
    vocab = {script: [_word(rng, script) for _ in range(3000)] for script in ("en", "ko", "ja")}
    for case in cases:
        for expected, actual in zip(case.expected, case.actual):
            script = rng.choices(["en", "ko", "ja"], weights=[60, 20, 20])[0]
            words = [rng.choice(vocab[script]) for _ in range(rng.randint(40, 160))]
            reworded = [w if rng.random() > 0.2 else rng.choice(vocab[script]) for w in words]
            reworded = reworded[: max(1, len(reworded) - rng.randint(0, 20))]
            for inv, text in ((expected, words), (actual, reworded)):
                inv.pop("finalResponse", None)  # the generator writes either casing
                inv["final_response"] = {"role": "model", "parts": [{"text": " ".join(text)}]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--invocations", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3, help="timings per side; the best is reported")
    parser.add_argument("--profile", action="store_true", help="profile evalgate's scoring even if the goal is met")
    parser.add_argument(
        "--texts",
        choices=["edge", "responses"],
        default="edge",
        help="edge: the parity generator's short edge-case texts (<= ~12 words); responses: "
        "agent-sized responses (40-160 words, English, Korean, Japanese), unique per invocation",
    )
    args = parser.parse_args(argv)

    try:
        from google.adk.evaluation.eval_case import Invocation as AdkInvocation
    except ImportError:
        print("google-adk is not installed: pip install 'google-adk==2.13.0'", file=sys.stderr)
        return 2
    from evalgate.adk import Invocation
    from evalgate.engine import CaseInput, score_criterion

    t_gen, cases = _timed(lambda: gen.generate_invocations(args.seed, args.invocations))
    if args.texts == "responses":
        _use_response_sized_texts(cases, args.seed)
    n_inv = sum(len(c.expected) for c in cases)

    def parse_adk():
        return [
            ([AdkInvocation.model_validate(d) for d in c.actual], [AdkInvocation.model_validate(d) for d in c.expected])
            for c in cases
        ]

    def parse_ours():
        return [
            CaseInput(
                eval_set_id="bench",
                eval_id=c.eval_id,
                criteria={},
                expected_digest="",
                expected=[Invocation.model_validate(d) for d in c.expected],
                actual=[Invocation.model_validate(d) for d in c.actual],
            )
            for c in cases
        ]

    adk_crits = {s: gen.adk_evaluator(s) for s in SPECS}
    our_crits = {s: gen.evalgate_criterion(s) for s in SPECS}

    def score_adk(spec, adk_cases):
        ev = adk_crits[spec]
        return [ev.evaluate_invocations(actual, expected) for actual, expected in adk_cases]

    def score_ours(spec, our_cases):
        crit = our_crits[spec]
        return [score_criterion(crit, case) for case in our_cases]

    # Models, built once per side for the parity check and the scoring timings; model
    # construction is timed on its own, as often as scoring.
    adk_cases, our_cases = parse_adk(), parse_ours()
    results = {("adk", s): score_adk(s, adk_cases) for s in SPECS}
    _clear_evalgate_caches()
    results.update({("evalgate", s): score_ours(s, our_cases) for s in SPECS})

    # Parity: every case, every criterion, per invocation.
    mismatches = []
    for spec in SPECS:
        for case, ours, theirs in zip(cases, results[("evalgate", spec)], results[("adk", spec)]):
            for problem in gen.differences(ours, theirs):
                mismatches.append(f"{case.eval_id} {spec.label}: {problem}")
    del results

    best: dict[tuple[str, Any], float] = {}

    def keep_best(key: tuple[str, Any], seconds: float) -> None:
        best[key] = min(seconds, best.get(key, float("inf")))

    def run_side(side: str) -> None:
        keep_best((side, "parse"), _timed(parse_adk if side == "adk" else parse_ours)[0])
        for spec in SPECS:
            if side == "adk":
                keep_best((side, spec), _timed(lambda: score_adk(spec, adk_cases))[0])
            else:
                _clear_evalgate_caches()  # each timing starts cold: no help from earlier ones
                keep_best((side, spec), _timed(lambda: score_ours(spec, our_cases))[0])

    for r in range(args.repeat):
        for side in ("adk", "evalgate") if r % 2 == 0 else ("evalgate", "adk"):
            run_side(side)

    # Memory of evalgate's scoring alone (tracemalloc slows it, so not during the timings).
    _clear_evalgate_caches()
    tracemalloc.start()
    kept = [score_ours(spec, our_cases) for spec in SPECS]
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del kept
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux

    # Report.
    print(f"{n_inv} invocations in {len(cases)} cases (seed {args.seed}), best of {args.repeat} timings per side,")
    print("alternating which side goes first, garbage collector off while timing (as timeit does);")
    print("evalgate's caches are cleared before each of its timings (caching repeated texts")
    print("within one run is allowed, as in a real run).\n")
    print(f"{'criterion':<32} {'ADK s':>9} {'evalgate s':>11} {'ADK/evalgate':>13}")
    print("-" * 68)
    total_adk = total_ours = 0.0
    for spec in SPECS:
        a, o = best[("adk", spec)], best[("evalgate", spec)]
        total_adk += a
        total_ours += o
        print(f"{_short(spec):<32} {a:>9.4f} {o:>11.4f} {a / o:>12.1f}x")
    print("-" * 68)
    ratio = total_adk / total_ours
    print(f"{'scoring total':<32} {total_adk:>9.4f} {total_ours:>11.4f} {ratio:>12.1f}x")
    pa, po = best[("adk", "parse")], best[("evalgate", "parse")]
    print(f"{'model construction (parse)':<32} {pa:>9.4f} {po:>11.4f} {pa / po:>12.1f}x")
    print(f"\ncase generation: {t_gen:.3f} s (not part of either side)")
    print(f"evalgate scoring peak memory (tracemalloc, all criteria, results kept): {peak / 2**20:.1f} MiB")
    print(f"process max RSS (includes ADK, both sides' models and results): {maxrss:.0f} MiB")
    print(f"goal: evalgate scoring at least {GOAL:.0f}x faster than ADK: {'met' if ratio >= GOAL else 'NOT met'}")

    if args.profile or ratio < GOAL:
        _clear_evalgate_caches()
        gc.disable()
        profiler = cProfile.Profile()
        profiler.enable()
        for spec in SPECS:
            score_ours(spec, our_cases)
        profiler.disable()
        gc.enable()
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("tottime").print_stats(20)
        print("\nevalgate scoring profile (all criteria, top 20 by own time):")
        print(out.getvalue())

    if mismatches:
        print(f"\n{len(mismatches)} differences between evalgate and ADK:", file=sys.stderr)
        for m in mismatches:
            print("  " + m, file=sys.stderr)
        return 1
    print("\nscores and statuses identical to ADK's on every case, criterion and invocation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
