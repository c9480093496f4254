"""Gate simulation: how often the real `compare()` fails or doubts an unchanged agent, and how
often it catches a broken one, in worlds that behave like real projects. Standard library
only (plus evalgate).

    python bench/bench_gate.py                  # --prs 500 --workers 2 --seed 1 [--world NAME] [--early-stop]
    python bench/bench_gate.py --moved --prs 100 --early-stop   # the branch moved within the window
    python bench/bench_gate.py --confirm --prs 15   # confirmation runs (gate.confirm) beside num_runs: 3
    python bench/bench_gate.py --confirm --rules --prs 100   # judge early stopping: evalgate's rule beside the plain one
    python bench/bench_gate.py --ablate --prs 100 --workers 1   # each gate test switched off in turn, same draws
    python bench/bench_gate.py --sharper --prs 200   # issue 37: 2 broken stable cases, newly flaky ones, an outage, the first day
    python bench/bench_gate.py --calibration --prs 200   # the graded breakage test's fitted chances against the true ones

Every case carries three criteria at once, as real suites do:

- `tool_trajectory_avg_score` (deterministic, threshold 1.0, one agent run per case);
- `response_match_score` (continuous ROUGE-like score, threshold 0.5);
- `final_response_match_v2` (a judge, 5 samples per case, majority vote; the per-sample
  scores go in `details["samples"]` as `evalgate run` writes them). With `--early-stop`,
  samples are drawn in rounds until the majority is decided (`judge.early_stop`, with
  evalgate's own rule: samples that all failed are drawn to the end), so `details["samples"]`
  holds 3 to 5 of them, and both the history and the PR's run say `sampling: early_stop`.
  With `--confirm --rules`, each PR is simulated under that rule and under the plain
  majority rule (stop on failing samples too, evalgate's rule with `gate.confirm` on) on
  the same draws: every sample is drawn whether it is read or not.

What makes a world harsh (each world's parameters are in WORLDS):

1. **The agent is nondeterministic.** In each run a case "goes off" (a different tool path,
   a worse answer) with its own probability: most cases almost never (`rare_flip`), a
   minority often (`flaky_share` of cases, `often_flip`). When it does, its trajectory
   fails, its ROUGE drops by U(0.2, 0.5) and its judge samples mostly fail. ROUGE also
   wobbles per case and run (rephrasing, sd U(0.01, `rouge_sd`)).
2. **The judge's mood drifts per run:** one run's judge is stricter or more lenient for
   every case at once: a shift ~ N(0, `mood`) of every case's per-sample pass probability
   on the logit scale (per-sample probabilities: 85% of cases U(0.97, 1), 15% U(0.5, 0.8)).
3. **The agent's serving drifts per run** (`rouge_drift`): every case's ROUGE moves by the
   same N(0, sd) in a run.

Per simulated PR: `history` default-branch runs go through `update_ledger()`; the last is
the baseline. Then, each drawn afresh: an unchanged run; runs in which 4% of the stable
cases of one criterion break (stable: passed all `history` runs; broken: trajectory fails,
ROUGE falls below its threshold, judge samples fail); a run whose ROUGE drops by 0.1 on a
quarter of the cases. Each is compared with the real `compare()` (default policy) with the
ledger and without it. PRs are seeded by (seed, world, index): the table does not depend
on --workers.

With `--confirm`: per PR, the first four scenarios, each three ways: the gate on the first
run alone; the gate with confirmation runs as the action runs it (`compare`, then
`evalgate.gate.confirm.suspects`, each suspect drawn again `gate.confirm.runs` times right after
the PR's run, with its judge mood and serving drift, as `CaseResult.reruns`, then `compare`
again); and a fixed `num_runs: 3` design (its own 10 runs of history and a PR run with every
case run 3 times, scored as `evalgate run` scores several runs). Extra agent runs are
counted per PR run as a share of the run's cases.

With `--ablate`: each of the gate's tests switched off in turn (ABLATIONS: the mean-drop test,
its FAIL alone, the level test, the breakage test, its value-based chances, the partial-drop
test and each of its halves, and the opt-in `deterministic_flips: fail`), on the same PRs:
the runs are drawn once per PR and every configuration compares the same ones; confirmation
re-runs draw from a stream per case, so every configuration that re-runs a case sees the same
re-runs. Per world and scenario: FAIL / INCONCLUSIVE counts of the full gate and of each
ablation, and how many PRs' verdicts changed, on the first run alone, with confirmation runs
and without history. Besides WORLDS: two worlds of recorded outputs (`actual:`: the flaky
agent's outputs drawn once and replayed in every run, only the judge draws afresh; a
suspect's re-runs re-draw its judge samples, a deterministic suspect keeps its first run, as
evalgate.gate.confirm does), one of them under `deterministic_flips: fail`, with one more
scenario (a single stable trajectory broken); and `--moved`'s rows. This is an ablation
study, not a test of the gate: a test is switched off by replacing that one function of the
gate for the bench process only (`_switched_off`); and pure functions of
evalgate.gate.stats that every configuration calls with the same arguments are remembered
within a PR (`_remember_stats`), which changes no result.

With `--sharper` (issue 37): a world the gate was not tuned on (SHARP_WORLD: 150 cases, 12% of
them flaky, a judge mood, serving drift), each PR drawn with 10 runs of history, on the first
day (one baseline run, no ledger) and on a first day whose ledger was filled when the gate was
set up (the first baseline run repeated SETUP_RUNS times). Scenarios: unchanged; 2 or 6 stable
trajectories broken for good; 6 made to pass half the time (newly flaky); a tool outage that
fails 4 stable trajectories on both commits, in the run and in the re-runs. Each is decided
three ways: the first run alone; with confirmation runs as the pipeline makes them (`compare`,
`evalgate.gate.confirm.suspects`, re-runs right after the run with its mood and drift into
`CaseResult.reruns`, a suspect that failed some of them re-run as often again when
`evalgate.gate.control.more` says so, `compare` again, and where `evalgate.gate.control.extension`
names suspects (the breakage test suggestive, not decisive) they are re-run further and
`compare` runs a third time: `_pipeline`, `_further`); and with the base commit's re-runs as the
control as well (each suspect that `evalgate.gate.control.wanted` re-run as often on the base
commit, the PR's change absent and the outage present, into the baseline's
`CaseResult.reruns`), counting the extra agent runs of each.

Under each world's table, a bound on the trajectory-breakage row: the same pooled test
(`stats.break_test`) alone at alpha / 7 (the gate's Holm family in these worlds), given
the simulation's true chances, which no history measures: each stable case's own, and
equal ones summing to the true total (a clean streak of 10 runs is all a robust case and
a lucky flaky one show; the gate can at best estimate that total).
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalgate.gate import CaseKey, GatePolicy, compare, ledger_key, stable_history, update_ledger  # noqa: E402
from evalgate.criteria.judging import decided, next_round  # noqa: E402
from evalgate.gate.confirm import suspects  # noqa: E402
from evalgate.engine import case_status  # noqa: E402
from evalgate.results import CriterionResult, Rerun, RunResults  # noqa: E402
from evalgate.gate.stats import break_test  # noqa: E402

TRAJ, ROUGE, JUDGE = "tool_trajectory_avg_score", "response_match_score", "final_response_match_v2"
THRESHOLDS = {TRAJ: 1.0, ROUGE: 0.5, JUDGE: 0.8}
JUDGED = {TRAJ: False, ROUGE: False, JUDGE: True}  # each criterion: judged? (what the gate's control functions ask)
SAMPLES = 5
SUITE = "bench"
HALF, DOWN = "half", "down"  # --sharper: `broken` keys of trajectories made flaky (pass half the time), and of a tool outage

# name -> parameters. cases: suite size; history: default-branch runs before the PR.
WORLDS: dict[str, dict] = {
    "steady": dict(cases=200, history=10, rare_flip=0.002, flaky_share=0.05, often_flip=(0.05, 0.2), mood=0.1, rouge_sd=0.03, rouge_drift=0.0),
    "flaky agent": dict(cases=200, history=10, rare_flip=0.005, flaky_share=0.15, often_flip=(0.1, 0.5), mood=0.2, rouge_sd=0.06, rouge_drift=0.0),
    "moody judge": dict(cases=200, history=10, rare_flip=0.003, flaky_share=0.10, often_flip=(0.1, 0.4), mood=0.6, rouge_sd=0.04, rouge_drift=0.0),
    "drifting serving": dict(cases=200, history=10, rare_flip=0.003, flaky_share=0.10, often_flip=(0.1, 0.4), mood=0.4, rouge_sd=0.04, rouge_drift=0.01),
    "large, flaky": dict(cases=600, history=10, rare_flip=0.005, flaky_share=0.15, often_flip=(0.1, 0.5), mood=0.3, rouge_sd=0.05, rouge_drift=0.005),
}
SCENARIOS = ("unchanged", f"4% of stable {TRAJ} broken", f"4% of stable {ROUGE} broken", f"4% of stable {JUDGE} broken", "ROUGE -0.1 on 1/4 of cases")


def _logit(p: float) -> float:
    p = min(max(p, 1e-9), 1 - 1e-9)
    return math.log(p / (1 - p))


def _sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


class World:
    """One project: its cases' true behaviour, drawn once per simulated PR."""

    def __init__(self, rng: random.Random, params: dict, early_stop: bool = False, plain: bool = False):
        self.p = params
        self.early_stop = early_stop
        self.plain = plain  # early stop on failing samples too (the plain majority rule)
        self.judge_offset = 0.0  # added to every case's judge logit (--moved: the branch's judge level moved)
        n = params["cases"]
        self.flip = [rng.uniform(*params["often_flip"]) if rng.random() < params["flaky_share"] else rng.uniform(0, 2 * params["rare_flip"]) for _ in range(n)]
        self.rouge = [rng.uniform(0.55, 0.95) for _ in range(n)]
        self.rouge_sd = [rng.uniform(0.01, params["rouge_sd"]) for _ in range(n)]
        self.judge_logit = [_logit(rng.uniform(0.97, 1.0) if rng.random() < 0.85 else rng.uniform(0.5, 0.8)) for _ in range(n)]
        # Recorded outputs (`actual:`, --ablate's RECORDED worlds): each case's output drawn once,
        # the same in every run; only the judge's samples are drawn afresh.
        self.recorded = None
        if params.get("recorded"):
            self.recorded = [self._output(i, rng, 0.0) for i in range(n)]

    def run(self, rng: random.Random, broken: dict[str, set[int]] | None = None, rouge_drop: set[int] | None = None, num_runs: int = 1) -> RunResults:
        """One run of every case (`num_runs` agent runs each, scored as `evalgate run` does:
        each run's score in `runs`, the criterion's score their mean)."""
        broken = broken or {}
        mood = rng.gauss(0, self.p["mood"])
        drift = rng.gauss(0, self.p["rouge_drift"]) if self.p["rouge_drift"] else 0.0
        self.last = (mood, drift)  # confirmation runs of this run's suspects follow right after: same mood and drift
        cases = []
        passed = 0
        for i in range(len(self.flip)):
            criteria = self.case(i, rng, mood, drift, broken, rouge_drop, num_runs)
            ok = all(c["status"] == "PASSED" for c in criteria.values())
            passed += ok
            cases.append(
                {
                    "eval_set_id": "set",
                    "eval_id": f"case{i:04d}",
                    "expected_digest": f"d{i}",
                    "status": "PASSED" if ok else "FAILED",
                    "criteria": criteria,
                }
            )
        n = len(cases)
        counts = {"cases": n, "passed": passed, "failed": n - passed, "not_evaluated": 0}
        status = "PASSED" if passed == n else "FAILED"
        specs = {name: {"threshold": t, "version": "1", "judge": name == JUDGE} for name, t in THRESHOLDS.items()}
        if self.early_stop:
            specs[JUDGE]["sampling"] = "early_stop"
        suite = {"name": SUITE, "status": status, "not_evaluated_policy": "warn", "counts": counts, "criteria": specs, "cases": cases}
        return RunResults.model_validate({"config_digest": "bench", "status": status, "counts": counts, "suites": [suite]})

    def case(self, i: int, rng: random.Random, mood: float, drift: float, broken: dict[str, set[int]], rouge_drop: set[int] | None, num_runs: int = 1) -> dict:
        """Case i's criteria in one run (results.json's shape)."""
        draws = [self._draw(i, rng, mood, drift, broken, rouge_drop) for _ in range(num_runs)]
        if num_runs == 1:
            traj, rouge, samples, vote = draws[0]
            return {TRAJ: _criterion(traj, TRAJ), ROUGE: _criterion(rouge, ROUGE), JUDGE: _criterion(vote, JUDGE, {"samples": samples})}
        return {
            TRAJ: _runs_criterion([(d[0], None) for d in draws], TRAJ),
            ROUGE: _runs_criterion([(d[1], None) for d in draws], ROUGE),
            JUDGE: _runs_criterion([(d[3], {"samples": d[2]}) for d in draws], JUDGE),
        }

    def _draw(self, i: int, rng: random.Random, mood: float, drift: float, broken: dict[str, set[int]], rouge_drop: set[int] | None) -> tuple:
        """One agent run of case i: (trajectory, ROUGE, judge samples, their majority vote)."""
        off, rouge = self.recorded[i] if self.recorded is not None else self._output(i, rng, drift)
        traj = 0.0 if off or i in broken.get(TRAJ, ()) or i in broken.get(DOWN, ()) else 1.0
        if i in broken.get(HALF, ()) and rng.random() < 0.5:  # --sharper: made to pass half the time
            traj = 0.0
        if i in broken.get(ROUGE, ()):
            rouge = min(rouge, rng.uniform(0.1, 0.45))
        if rouge_drop and i in rouge_drop:
            rouge -= 0.1
        rouge = min(1.0, max(0.0, rouge))
        p = _sigmoid(self.judge_logit[i] + self.judge_offset + mood) * (0.15 if off else 1.0)
        if i in broken.get(JUDGE, ()):
            p = 0.0
        # Every sample's draw is made whether it is asked for or not, so the sampling rules
        # see the same draws (a rule only decides how long a prefix of them it reads).
        draws = [1.0 if rng.random() < p else 0.0 for _ in range(SAMPLES)]
        if self.early_stop:
            stop = None if self.plain else THRESHOLDS[JUDGE]
            samples = []
            while not decided(SAMPLES, [[s == 1.0] for s in samples], stop):
                k = next_round(SAMPLES, [[s == 1.0] for s in samples], stop)
                samples += draws[len(samples):len(samples) + k]
        else:
            samples = draws
        vote = 1.0 if sum(samples) * 2 > len(samples) else 0.0  # the full vote's, either way
        return traj, rouge, samples, vote


    def _output(self, i: int, rng: random.Random, drift: float) -> tuple[bool, float]:
        """What case i's agent did in one run: (it went off, its ROUGE before any PR's change)."""
        off = rng.random() < self.flip[i]
        return off, self.rouge[i] + drift + rng.gauss(0, self.rouge_sd[i]) - (rng.uniform(0.2, 0.5) if off else 0.0)


def _criterion(score: float, name: str, details: dict | None = None) -> dict:
    status = "PASSED" if score >= THRESHOLDS[name] else "FAILED"
    per = {"score": score, "status": status}
    if details:
        per["details"] = details
    return {"score": score, "status": status, "threshold": THRESHOLDS[name], "per_invocation": [per]}


def _runs_criterion(runs: list[tuple[float, dict | None]], name: str) -> dict:
    """A criterion over several agent runs, as engine.score_runs writes it: one invocation per
    run, each run's score in `runs`, the score their mean."""
    per = []
    for score, details in runs:
        inv = {"score": score, "status": "PASSED" if score >= THRESHOLDS[name] else "FAILED"}
        if details:
            inv["details"] = details
        per.append(inv)
    score = sum(r for r, _ in runs) / len(runs)
    status = "PASSED" if score >= THRESHOLDS[name] else "FAILED"
    return {"score": score, "status": status, "threshold": THRESHOLDS[name], "per_invocation": per, "runs": [r for r, _ in runs]}


def _stable(ledger: dict, name: str, n: int, policy: GatePolicy) -> list[int]:
    return [i for i in range(n) if stable_history(ledger.get(ledger_key(CaseKey(SUITE, "set", f"case{i:04d}"), name), []), policy) is not None]


def _history(world: World, rng: random.Random, policy: GatePolicy, offsets: list[float]) -> tuple[RunResults, dict]:
    """(the baseline, the ledger): one default-branch run per judge offset, the last the baseline."""
    ledger: dict = {}
    for offset in offsets:
        world.judge_offset = offset
        baseline = world.run(rng)
        ledger = update_ledger(ledger, baseline, policy.history_runs)
    return baseline, ledger


def simulate(job: tuple[int, str, int, bool]) -> tuple[list[tuple[str, str]], tuple[float, float]]:
    """One simulated PR in one world: per scenario, (with history, without) overall verdicts;
    and the trajectory-breakage oracle's p-values (`_oracle`)."""
    seed, world_name, index, early_stop = job
    rng = random.Random(f"{seed}/{world_name}/{index}")
    params = WORLDS[world_name]
    world = World(rng, params, early_stop)
    policy = GatePolicy()
    baseline, ledger = _history(world, rng, policy, [0.0] * params["history"])
    n = params["cases"]
    out = []
    oracle = (1.0, 1.0)
    for scenario in SCENARIOS:
        broken: dict[str, set[int]] = {}
        drop: set[int] = set()
        for name in (TRAJ, ROUGE, JUDGE):
            if name in scenario:
                stable = _stable(ledger, name, n, policy)
                broken[name] = set(rng.sample(stable, max(1, round(0.04 * len(stable)))))
        if scenario.startswith("ROUGE -0.1"):
            drop = set(rng.sample(range(n), n // 4))
        current = world.run(rng, broken, drop)
        out.append((compare(baseline, current, policy, ledger=ledger).verdict.value, compare(baseline, current, policy).verdict.value))
        if TRAJ in broken:
            oracle = _oracle(world, current, stable)  # the trajectory's stable cases, drawn from above
    return out, oracle


def _oracle(world: World, current: RunResults, stable: list[int]) -> tuple[float, float]:
    """The pooled breakage test of the trajectories, given what no history can measure: the
    simulation's true chance that each stable case goes off (its trajectory then fails).
    (p with each case's own chance, p with equal chances summing to the true total: all
    that clean streaks of equal length can tell the cases apart by.)"""
    scores = {c.eval_id: c.criteria[TRAJ].score for c in current.suites[0].cases}
    broken = [scores[f"case{i:04d}"] == 0.0 for i in stable]
    chances = [world.flip[i] for i in stable]
    total = sum(chances)
    return break_test(broken, chances), break_test(broken, [total / len(chances)] * len(chances))


# --confirm: confirmation runs (gate.confirm) beside a fixed num_runs: 3 design.
CONFIRM_SCENARIOS = SCENARIOS[:4]
FIXED_RUNS = 3


def _confirmed(world: World, rng: random.Random, baseline: RunResults, current: RunResults, ledger: dict, policy: GatePolicy,
               broken: dict[str, set[int]], drop: set[int]) -> tuple[str, int]:
    """The gate with confirmation runs, as the action runs it: compare, pick the suspects
    (`evalgate.gate.confirm.suspects`), run each again `policy.confirm.runs` times right after the
    PR's run (the same judge mood and serving drift: the harsher case, failures repeat more),
    put the re-runs into the results (`CaseResult.reruns`), re-run again the suspects
    `evalgate.gate.control.more` asks for (on a stream of their own) and compare again. (verdict,
    extra agent runs)."""
    first = compare(baseline, current, policy, ledger=ledger)
    chosen, _ = suspects(first, current, policy.confirm.max_cases, flips=policy.deterministic_flips == "fail")
    if not chosen:
        return first.verdict.value, 0
    mood, drift = world.last
    cases = {c.eval_id: c for c in current.suites[0].cases}
    judge = JUDGED
    runs = 0
    for s in chosen:
        i = int(s.eval_id[4:])
        reruns = []
        for r in range(1, policy.confirm.runs + 1):
            criteria = {k: CriterionResult.model_validate(v) for k, v in world.case(i, rng, mood, drift, broken, drop).items()}
            reruns.append(Rerun(run=r, how="agent", status=case_status(criteria), criteria=criteria))
        extra = _control.more(reruns, s.criteria, judge, policy.confirm.runs, s.stable) if _control is not None and hasattr(_control, "more") else 0
        more_rng = random.Random(f"{mood}/{drift}/{i}/more")  # its own stream: the other draws are the same whatever `more` says
        for r in range(len(reruns) + 1, len(reruns) + 1 + extra):  # as the pipeline does (evalgate.gate.control.more)
            criteria = {k: CriterionResult.model_validate(v) for k, v in world.case(i, more_rng, mood, drift, broken, drop).items()}
            reruns.append(Rerun(run=r, how="agent", status=case_status(criteria), criteria=criteria))
        cases[s.eval_id].reruns = reruns
        runs += len(reruns)
    second = compare(baseline, current, policy, ledger=ledger)
    verdict, more = _further(world, second, chosen, cases, policy, broken, drop, lambda: compare(baseline, current, policy, ledger=ledger))
    return verdict, runs + more


def _further(world: World, comparison, chosen: list, cases: dict, policy: GatePolicy, broken: dict, drop: set[int] | None,
             again) -> tuple[str, int]:
    """The pipeline's further round (evalgate.pipeline.further): the suspects
    `evalgate.gate.control.extension` names in `comparison` re-run `EXTEND x runs` more times,
    right after the others (the run's mood and drift), each on a stream of its own, then
    `again()` (compare a third time). (verdict, extra agent runs)."""
    if _control is None or not hasattr(_control, "extension"):  # the gate before the further round
        return comparison.verdict.value, 0
    judge = {SUITE: JUDGED}
    chosen = _control.extension(comparison, chosen, lambda s: cases[s.eval_id].reruns, judge)
    if not chosen:
        return comparison.verdict.value, 0
    mood, drift = world.last
    runs = 0
    for s in chosen:
        i = int(s.eval_id[4:])
        reruns = cases[s.eval_id].reruns
        stream = random.Random(f"{mood}/{drift}/{i}/further")
        for r in range(len(reruns) + 1, len(reruns) + 1 + _control.EXTEND * policy.confirm.runs):
            criteria = {k: CriterionResult.model_validate(v) for k, v in world.case(i, stream, mood, drift, broken, drop or set()).items()}
            reruns.append(Rerun(run=r, how="agent", status=case_status(criteria), criteria=criteria))
            runs += 1
    return again().verdict.value, runs


def simulate_confirm(job: tuple) -> list[tuple[str, str, int, str, float]]:
    """One simulated PR: per scenario (the first four), (verdict on the first run alone,
    verdict with confirmation runs, extra agent runs, verdict of a num_runs: 3 design whose
    history and PR run each ran every case 3 times, judge samples drawn in the PR's run as a
    share of every sample). With `plain` (the job's fifth item), early stopping stops on
    failing samples too; without `fixed` (its sixth), the num_runs: 3 design is skipped ("-").
    The draws do not depend on either."""
    seed, world_name, index, early_stop, plain, fixed_design = (tuple(job) + (False, True))[:6]
    rng = random.Random(f"{seed}/{world_name}/{index}/confirm")
    params = WORLDS[world_name]
    world = World(rng, params, early_stop, plain)
    policy = GatePolicy()
    n = params["cases"]
    baseline, ledger = _history(world, rng, policy, [0.0] * params["history"])
    fixed_ledger: dict = {}
    fixed_rng = random.Random(f"{seed}/{world_name}/{index}/fixed")  # its own stream: skipping it changes no other draw
    for _ in range(params["history"] if fixed_design else 0):
        fixed_base = world.run(fixed_rng, num_runs=FIXED_RUNS)
        fixed_ledger = update_ledger(fixed_ledger, fixed_base, policy.history_runs)
    out = []
    for scenario in CONFIRM_SCENARIOS:
        broken: dict[str, set[int]] = {}
        fixed_broken: dict[str, set[int]] = {}
        for name in (TRAJ, ROUGE, JUDGE):
            if name in scenario:
                stable = _stable(ledger, name, n, policy)
                broken[name] = set(rng.sample(stable, max(1, round(0.04 * len(stable)))))
                if fixed_design:
                    stable = _stable(fixed_ledger, name, n, policy)
                    fixed_broken[name] = set(fixed_rng.sample(stable, max(1, round(0.04 * len(stable))))) if stable else set()
        current = world.run(rng, broken, set())
        drawn = sum(len((c.criteria[JUDGE].per_invocation[0].details or {}).get("samples", ())) for c in current.suites[0].cases) / (SAMPLES * n)
        alone = compare(baseline, current, policy, ledger=ledger).verdict.value
        confirmed, extra = _confirmed(world, rng, baseline, current, ledger, policy, broken, set())
        fixed = "-"
        if fixed_design:
            fixed = compare(fixed_base, world.run(fixed_rng, fixed_broken, set(), num_runs=FIXED_RUNS), policy, ledger=fixed_ledger).verdict.value
        out.append((alone, confirmed, extra, fixed, drawn))
    return out


def confirm_table(args: argparse.Namespace) -> int:
    worlds = args.world or list(WORLDS)
    t0 = time.perf_counter()
    jobs = [(args.seed, w, i, args.early_stop) for w in worlds for i in range(args.prs)]
    if args.workers > 1:
        with multiprocessing.Pool(args.workers) as pool:
            results = pool.map(simulate_confirm, jobs, chunksize=2)
    else:
        results = [simulate_confirm(j) for j in jobs]
    policy = GatePolicy()
    print(f"{args.prs} simulated PRs per world; confirmation runs: {policy.confirm.runs} per suspect, at most "
          f"{policy.confirm.max_cases} suspects; beside them a fixed num_runs: {FIXED_RUNS} design; "
          f"{time.perf_counter() - t0:.0f} s with {args.workers} worker(s)")
    print()
    print("% of PRs that FAIL (INC: INCONCLUSIVE), first run alone -> with confirmation runs | num_runs: 3; "
          "agent runs per PR run as a share of the first run's")
    print()
    print("| world | unchanged: FAIL | INC | extra agent runs | trajectory broken | ROUGE broken | judge broken | agent runs vs num_runs: 3 |")
    print("|---|---|---|---:|---|---|---|---:|")
    goals: list[tuple[str, bool]] = []
    for w in worlds:
        rows = [r for job, r in zip(jobs, results) if job[1] == w]
        n = WORLDS[w]["cases"]
        pct = lambda s, col, v: 100 * sum(r[s][col] == v for r in rows) / len(rows)  # noqa: E731
        extra = sum(r[0][2] for r in rows) / len(rows) / n  # unchanged PRs' extra runs, share of the run's n
        caught = [f"{pct(s, 0, 'FAIL'):.0f} -> **{pct(s, 1, 'FAIL'):.0f}** \\| {pct(s, 3, 'FAIL'):.0f}" for s in (1, 2, 3)]
        broken_extra = sum(r[s][2] for r in rows for s in (1, 2, 3)) / (3 * len(rows)) / n
        print(f"| {w} | {pct(0, 0, 'FAIL'):.1f} -> {pct(0, 1, 'FAIL'):.1f} \\| {pct(0, 3, 'FAIL'):.1f} | "
              f"{pct(0, 0, 'INCONCLUSIVE'):.0f} -> {pct(0, 1, 'INCONCLUSIVE'):.0f} \\| {pct(0, 3, 'INCONCLUSIVE'):.0f} | "
              f"{extra:.1%} (broken PRs: {broken_extra:.1%}) | {' | '.join(caught)} | {(1 + extra) / FIXED_RUNS:.2f}x |")
        goals += [
            (f"{w}: unchanged, false FAIL <= 1% with confirmation", pct(0, 1, "FAIL") <= 1),
            (f"{w}: unchanged, INCONCLUSIVE <= 5% with confirmation", pct(0, 1, "INCONCLUSIVE") <= 5),
            (f"{w}: unchanged, extra agent runs <= 5% of the run's", extra <= 0.05),
            (f"{w}: agent runs <= 0.4x num_runs: 3's", (1 + extra) / FIXED_RUNS <= 0.4),
        ]
        for s in (1, 2, 3):
            goals.append((f"{w}: {CONFIRM_SCENARIOS[s]} caught >= 95% with confirmation", pct(s, 1, "FAIL") >= 95))
            goals.append((f"{w}: {CONFIRM_SCENARIOS[s]} caught at least as often as num_runs: 3", pct(s, 1, "FAIL") >= pct(s, 3, "FAIL")))
    print()
    for text, ok in goals:
        print(f"{'met' if ok else 'MISSED'}: {text}")
    return 0 if all(ok for _, ok in goals) else 1


def rules_table(args: argparse.Namespace) -> int:
    """--confirm --rules: the confirming gate with judge early stopping under evalgate's rule
    (samples that all failed drawn to the end) and under the plain majority rule (stop on
    failing samples too), on the same draws; the num_runs: 3 design skipped."""
    worlds = args.world or list(WORLDS)
    t0 = time.perf_counter()
    jobs = [(args.seed, w, i, True, plain, False) for plain in (False, True) for w in worlds for i in range(args.prs)]
    if args.workers > 1:
        with multiprocessing.Pool(args.workers) as pool:
            results = pool.map(simulate_confirm, jobs, chunksize=2)
    else:
        results = [simulate_confirm(j) for j in jobs]
    print(f"{args.prs} simulated PRs per world, seed {args.seed}; judge early stopping, confirmation runs on; "
          f"{time.perf_counter() - t0:.0f} s with {args.workers} worker(s)")
    print()
    print("% of PRs that FAIL (INC: INCONCLUSIVE), first run alone -> with confirmation runs; judge samples drawn "
          "in an unchanged PR's run as a share of every sample")
    print()
    print("| world | rule | judge samples drawn | unchanged: FAIL | INC | extra agent runs | trajectory broken | ROUGE broken | judge broken |")
    print("|---|---|---:|---|---|---:|---|---|---|")
    goals: list[tuple[str, bool]] = []
    for w in worlds:
        n = WORLDS[w]["cases"]
        for plain in (False, True):
            rows = [r for job, r in zip(jobs, results) if job[1] == w and job[4] == plain]
            pct = lambda s, col, v: 100 * sum(r[s][col] == v for r in rows) / len(rows)  # noqa: E731
            extra = sum(r[0][2] for r in rows) / len(rows) / n
            drawn = sum(r[0][4] for r in rows) / len(rows)
            caught = [f"{pct(s, 0, 'FAIL'):.1f} -> **{pct(s, 1, 'FAIL'):.1f}**" for s in (1, 2, 3)]
            rule = "plain majority" if plain else "all-failing drawn to the end"
            print(f"| {w} | {rule} | {drawn:.1%} | {pct(0, 0, 'FAIL'):.1f} -> {pct(0, 1, 'FAIL'):.1f} | "
                  f"{pct(0, 0, 'INCONCLUSIVE'):.1f} -> {pct(0, 1, 'INCONCLUSIVE'):.1f} | {extra:.1%} | {' | '.join(caught)} |")
            if plain:
                goals += [
                    (f"{w}: plain rule, judge breakage caught >= 95% with confirmation", pct(3, 1, "FAIL") >= 95),
                    (f"{w}: plain rule, unchanged false FAIL <= 1% with confirmation", pct(0, 1, "FAIL") <= 1),
                ]
    print()
    for text, ok in goals:
        print(f"{'met' if ok else 'MISSED'}: {text}")
    return 0 if all(ok for _, ok in goals) else 1


# --sharper (issue 37): the world of issue 37 (the gate was not tuned on it), two broken stable
# cases, newly flaky cases, a tool outage, and the first day (one baseline run, no ledger).
SHARP_WORLD = dict(cases=150, history=10, rare_flip=0.003, flaky_share=0.12, often_flip=(0.1, 0.4), mood=0.4, rouge_sd=0.04,
                   rouge_drift=0.005)
SHARP_HISTORY = (
    ("unchanged", {}),
    ("2 stable trajectories broken", {TRAJ: 2}),
    ("6 stable trajectories broken", {TRAJ: 6}),
    ("6 stable trajectories newly flaky (pass half the time)", {HALF: 6}),
    ("tool outage: 4 stable trajectories fail on both commits", {DOWN: 4}),
)
SHARP_FIRST = (
    ("first day, unchanged", {}),
    ("first day, 6 stable trajectories broken", {TRAJ: 6}),
    ("first day, tool outage: 4 stable trajectories fail on both commits", {DOWN: 4}),
)
SETUP_RUNS = 5  # the alternative "fill the ledger when the gate is set up": the first baseline run repeated this many times

try:
    from evalgate.gate import control as _control  # the base commit as a control (issue 37); absent before it
except ImportError:  # the gate before issue 37: no control
    _control = None


def _pipeline(world: World, rng: random.Random, baseline: RunResults, current: RunResults, ledger: dict | None, policy: GatePolicy,
              broken: dict, with_control: bool) -> tuple[str, int, int]:
    """The gate as the pipeline runs it: `compare`, `evalgate.gate.confirm.suspects`, each suspect
    re-run `gate.confirm.runs` times on the PR right after its run (same judge mood and serving
    drift); with `with_control`, each suspect that `evalgate.gate.control.wanted` re-run as often
    on the base commit at the same time (the PR's breakage absent, the outage present) into the
    baseline's `CaseResult.reruns`; then `compare` again. (verdict, PR re-runs, base re-runs)."""
    for run in (baseline, current):
        for case in run.suites[0].cases:
            case.reruns = None
    first = compare(baseline, current, policy, ledger=ledger)
    chosen, _ = suspects(first, current, policy.confirm.max_cases, flips=policy.deterministic_flips == "fail")
    if not chosen:
        return first.verdict.value, 0, 0
    mood, drift = world.last
    cases = {c.eval_id: c for c in current.suites[0].cases}
    base_cases = {c.eval_id: c for c in baseline.suites[0].cases}
    base_broken = {DOWN: broken.get(DOWN, set())}  # the base commit: the outage, not the PR's change
    judge = JUDGED
    pr_runs = base_runs = 0
    base_rng = random.Random(rng.random())  # its own stream: the PR's re-runs are the same with and without the control
    for s in chosen:
        i = int(s.eval_id[4:])
        reruns = []
        for r in range(1, policy.confirm.runs + 1):
            criteria = {k: CriterionResult.model_validate(v) for k, v in world.case(i, rng, mood, drift, broken, set()).items()}
            reruns.append(Rerun(run=r, how="agent", status=case_status(criteria), criteria=criteria))
        extra = _control.more(reruns, s.criteria, judge, policy.confirm.runs, s.stable) if _control is not None and hasattr(_control, "more") else 0
        for r in range(len(reruns) + 1, len(reruns) + 1 + extra):  # a newly flaky suspect: re-run again (control.more)
            criteria = {k: CriterionResult.model_validate(v) for k, v in world.case(i, rng, mood, drift, broken, set()).items()}
            reruns.append(Rerun(run=r, how="agent", status=case_status(criteria), criteria=criteria))
        cases[s.eval_id].reruns = reruns
        pr_runs += len(reruns)
        if with_control and _control is not None and _control.wanted(reruns, s.criteria, judge):
            base = []
            for r in range(1, policy.confirm.runs + 1):
                criteria = {k: CriterionResult.model_validate(v) for k, v in world.case(i, base_rng, mood, drift, base_broken, set()).items()}
                base.append(Rerun(run=r, how="agent", status=case_status(criteria), criteria=criteria))
            base_cases[s.eval_id].reruns = base
            base_runs += len(base)
    second = compare(baseline, current, policy, ledger=ledger)
    verdict, more = _further(world, second, chosen, cases, policy, broken, set(), lambda: compare(baseline, current, policy, ledger=ledger))
    for run in (baseline, current):
        for case in run.suites[0].cases:
            case.reruns = None
    return verdict, pr_runs + more, base_runs


def _pick(rng: random.Random, world: World, baseline: RunResults, ledger: dict | None, policy: GatePolicy, what: dict) -> dict:
    """The cases a scenario changes: stable trajectories (by the ledger; on the first day, cases
    the baseline passed whose true chance of going off is rare)."""
    n = len(world.flip)
    if ledger is not None:
        stable = _stable(ledger, TRAJ, n, policy)
    else:
        passed = {c.eval_id for c in baseline.suites[0].cases if c.criteria[TRAJ].status.value == "PASSED"}
        stable = [i for i in range(n) if f"case{i:04d}" in passed and world.flip[i] < 0.01]
    return {k: set(rng.sample(stable, v)) for k, v in what.items()}


def simulate_sharper(job: tuple[int, int]) -> dict:
    """One PR of issue 37's world: {scenario: (first run alone, confirmed, confirmed with the
    base commit's control, extra agent runs without / with the control)}, with history, on the
    first day, and on a first day whose ledger was filled at setup (SETUP_RUNS runs)."""
    seed, index = job
    rng = random.Random(f"{seed}/sharper/{index}")
    world = World(rng, SHARP_WORLD)
    policy = GatePolicy()
    out: dict = {}
    baseline, ledger = _history(world, rng, policy, [0.0] * SHARP_WORLD["history"])
    first_base, _ = _history(world, rng, policy, [0.0])
    setup_base, setup_ledger = _history(world, rng, policy, [0.0] * SETUP_RUNS)
    for label, base, led, scenarios in (("history", baseline, ledger, SHARP_HISTORY), ("first day", first_base, None, SHARP_FIRST),
                                       ("setup", setup_base, setup_ledger, SHARP_FIRST)):
        for name, what in scenarios:
            broken = _pick(rng, world, base, led, policy, what)
            current = world.run(rng, broken, set())
            state = random.getstate()
            alone = compare(base, current, policy, ledger=led).verdict.value
            fork = random.Random(rng.random())  # both ways re-run from the same draws
            seed_rr = fork.random()
            plain, runs, _ = _pipeline(world, random.Random(seed_rr), base, current, led, policy, broken, False)
            ctrl, runs_c, base_runs = _pipeline(world, random.Random(seed_rr), base, current, led, policy, broken, True)
            random.setstate(state)
            out[(label, name)] = (alone, plain, ctrl, runs, runs_c + base_runs)
    return out


def sharper_table(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    jobs = [(args.seed, i) for i in range(args.prs)]
    if args.workers > 1:
        with multiprocessing.Pool(args.workers) as pool:
            results = pool.map(simulate_sharper, jobs, chunksize=2)
    else:
        results = [simulate_sharper(j) for j in jobs]
    p = SHARP_WORLD
    print(f"issue 37's world: {p['cases']} cases, judge mood sd {p['mood']}, {p['flaky_share']:.0%} of cases go off "
          f"{p['often_flip'][0]:g}-{p['often_flip'][1]:g} of runs, the rest ~{p['rare_flip']:g}, serving drift sd {p['rouge_drift']:g}; "
          f"{args.prs} PRs, seed {args.seed}; {time.perf_counter() - t0:.0f} s with {args.workers} worker(s)")
    print()
    print("% of PRs that FAIL: first run alone | with confirmation runs (PR re-runs) | with confirmation and the base commit's "
          "re-runs as control; extra agent runs per PR as a share of the run's cases (without | with the control)")
    print()
    print("| when | scenario | alone | confirmed | confirmed + control | extra runs | extra runs + control |")
    print("|---|---|---:|---:|---:|---:|---:|")
    n = p["cases"]
    rows: dict = {}
    for key in results[0]:
        vals = [r[key] for r in results]
        pct = lambda col: 100 * sum(v[col] == "FAIL" for v in vals) / len(vals)  # noqa: E731
        extra = lambda col: 100 * sum(v[col] for v in vals) / len(vals) / n  # noqa: E731
        rows[key] = (pct(0), pct(1), pct(2), extra(3), extra(4))
        label = {"history": f"{p['history']} runs of history", "first day": "first day (1 baseline run)",
                 "setup": f"first day, ledger filled at setup ({SETUP_RUNS} runs)"}[key[0]]
        print(f"| {label} | {key[1]} | {rows[key][0]:.1f} | {rows[key][1]:.1f} | {rows[key][2]:.1f} | {rows[key][3]:.1f}% | {rows[key][4]:.1f}% |")
    print()
    goals = sharper_goals(rows)
    for text, ok in goals:
        print(f"{'met' if ok else 'MISSED'}: {text}")
    return 0 if all(ok for _, ok in goals) else 1


def sharper_goals(rows: dict) -> list[tuple[str, bool]]:
    """Issue 37's goals against --sharper's rows ({(when, scenario): (alone, confirmed, + control,
    extra runs, extra runs + control)}, in %): the pipeline's default (confirmation with the
    base commit as the control) against each."""
    def row(when: str, scenario: str) -> tuple:
        return rows[(when, scenario)]

    h, first = "history", "first day"
    return [
        ("2 broken stable cases caught >= 90% with history", row(h, SHARP_HISTORY[1][0])[2] >= 90),
        ("first day: 6 broken stable cases caught >= 80%", row(first, SHARP_FIRST[1][0])[2] >= 80),
        ("first day: unchanged PRs FAIL <= 1%", row(first, SHARP_FIRST[0][0])[2] <= 1),
        ("unchanged PRs with history FAIL <= 1%", row(h, SHARP_HISTORY[0][0])[2] <= 1),
        ("extra agent runs on unchanged PRs <= 5% (with history and on the first day)",
         row(h, SHARP_HISTORY[0][0])[4] <= 5 and row(first, SHARP_FIRST[0][0])[4] <= 5),
        ("a tool outage seen on the base commit's re-runs too is blamed in <= 5% of PRs (history, first day)",
         row(h, SHARP_HISTORY[4][0])[2] <= 5 and row(first, SHARP_FIRST[2][0])[2] <= 5),
        ("6 newly flaky stable cases caught >= 80%", row(h, SHARP_HISTORY[3][0])[2] >= 80),
    ]


# --calibration: the graded test's null (evalgate.gate.flakiness) against the simulation's truth.
CALIBRATION_GRADES = ((2, 2), (1, 4), (2, 4), (3, 4), (0, 2))  # (re-runs failed, re-runs made), as control.more makes them


def _calibration_ledger(job: tuple[int, int]) -> dict:
    """One ledger of --sharper's world (10 runs of history of the trajectories, which fail
    exactly when a case goes off): per smoothing width, per grade (j, m), the fitted chance
    summed over the stable cases divided by the true one (the simulation's own rates)."""
    from evalgate.gate import flakiness

    seed, index = job
    rng = random.Random(f"{seed}/calibration/{index}")
    world = World(rng, SHARP_WORLD)
    n, history = len(world.flip), SHARP_WORLD["history"]
    rows = [[0.0 if rng.random() < world.flip[i] else 1.0 for _ in range(history)] for i in range(n)]
    stable = [i for i in range(n) if all(o == 1.0 for o in rows[i])]
    from collections import Counter

    from evalgate.gate.stats import rate_mixture

    grid, fitted = rate_mixture(Counter((len(r), sum(o == 0.0 for o in r)) for r in rows))
    # The protocol's ways to each grade: 2 re-runs, 2 more when they were mixed (control.more).
    ways = {(2, 2): 1, (1, 4): 2, (2, 4): 4, (3, 4): 2, (0, 2): 1}
    out = {}
    for width in sorted({0.0, flakiness.SMOOTH}):
        post = flakiness._posterior(grid, flakiness.smooth(fitted, width), history, 0)
        for j, m in CALIBRATION_GRADES:
            fit = len(stable) * ways[j, m] * sum(w * p ** (1 + j) * (1 - p) ** (m - j) for w, p in zip(post, grid))
            true = sum(ways[j, m] * world.flip[i] ** (1 + j) * (1 - world.flip[i]) ** (m - j) for i in stable)
            out[width, (j, m)] = fit / true if true > 0 else math.inf
    return out


def calibration_table(args: argparse.Namespace) -> int:
    """--calibration: per grade of the graded test, fitted / true chance over `--prs` ledgers."""
    jobs = [(args.seed, i) for i in range(args.prs)]
    results = [_calibration_ledger(j) for j in jobs]
    print(f"{args.prs} ledgers of issue 37's world (10 runs of history), seed {args.seed}: a stable trajectory's chance of "
          "breaking now and failing j of m re-runs, summed over the stable cases, fitted (the mixture, smoothed by a kernel "
          "of sd `width` grid steps) / true (the simulation's rates): median, 10th percentile, smallest")
    print()
    print("| width | " + " | ".join(f"{j} of {m}" for j, m in CALIBRATION_GRADES) + " |")
    print("|---|" + "---|" * len(CALIBRATION_GRADES))
    for width in sorted({k[0] for k in results[0]}):
        cells = []
        for grade in CALIBRATION_GRADES:
            ratios = sorted(r[width, grade] for r in results)
            cells.append(f"{ratios[len(ratios) // 2]:.2f} / {ratios[len(ratios) // 10]:.2f} / {ratios[0]:.3f}")
        print(f"| {width:g} | " + " | ".join(cells) + " |")
    return 0


# --moved: the default branch's judge level moved (logit offset) three runs before the PR.
MOVED_WORLD = "moody judge"
MOVES = (
    ("regressed by 2 logit", -2.0, 0.0, "unchanged"),
    ("improved by 2 logit", 2.0, 0.0, "unchanged"),
    ("improved by 2 logit", 2.0, -2.5, "drops the judge by 2.5 logit"),
    ("did not move", 0.0, -2.5, "drops the judge by 2.5 logit"),
)


def simulate_moved(job: tuple[int, int, int, bool]) -> tuple[str, str, float, bool]:
    """One PR after a move of the branch: (verdict against the level, verdict against the
    baseline run alone, the judge's mean drop, whether a move was found)."""
    seed, move, index, early_stop = job
    _, step, now, _ = MOVES[move]
    rng = random.Random(f"{seed}/moved/{move}/{index}")
    params = WORLDS[MOVED_WORLD]
    world = World(rng, params, early_stop)
    policy = GatePolicy()
    baseline, ledger = _history(world, rng, policy, [-step] * (params["history"] - 3) + [0.0] * 3)
    world.judge_offset = now
    comp = next(c for c in compare(baseline, world.run(rng), policy, ledger=ledger).suites[0].criteria if c.criterion == JUDGE)
    margin = policy.margin(True)
    alone_unsure = comp.delta < -margin and (comp.lower_bound is None or comp.lower_bound < -max(policy.resolution, margin))
    alone = "FAIL" if comp.status.value == "FAIL" else "INCONCLUSIVE" if alone_unsure else "PASS"
    return comp.status.value, alone, comp.delta, comp.level_shift


def moved(args: argparse.Namespace) -> int:
    jobs = [(args.seed, m, i, args.early_stop) for m in range(len(MOVES)) for i in range(args.prs)]
    with multiprocessing.Pool(max(1, args.workers)) as pool:
        results = pool.map(simulate_moved, jobs, chunksize=5)
    print(f"{MOVED_WORLD}: the judge's level moved three runs before the PR; {args.prs} PRs per row; judge verdicts, "
          "% against the baseline run alone -> against the default branch's level")
    print()
    print("| the branch, 3 runs back | the PR | mean drop | PASS | INCONCLUSIVE | FAIL | a move found |")
    print("|---|---|---:|---|---|---|---:|")
    for m, (branch, _, _, pr) in enumerate(MOVES):
        rows = [r for job, r in zip(jobs, results) if job[1] == m]
        pct = lambda col, v: 100 * sum(r[col] == v for r in rows) / len(rows)  # noqa: E731
        cells = " | ".join(f"{pct(1, v):.0f} -> {pct(0, v):.0f}" for v in ("PASS", "INCONCLUSIVE", "FAIL"))
        drop = -sum(r[2] for r in rows) / len(rows)
        print(f"| {branch} | {pr} | {drop:.3f} | {cells} | {100 * sum(r[3] for r in rows) / len(rows):.0f} |")
    return 0


# --ablate: each of the gate's tests switched off in turn, on the same draws.
#
# An ablation study, not a test of the gate: to switch a test off, the bench replaces that one
# function of the gate (a test's `measure` in evalgate/gate/) for the bench process only (`_switched_off`), runs the same PRs,
# and puts the function back. Nothing outside this process sees the replacement.
RECORDED = {
    # Recorded outputs (`actual:` in the eval sets): the agent's outputs are the same in every
    # run, only the judge draws afresh; the flaky agent's outputs, recorded once per PR.
    "recorded outputs": dict(WORLDS["flaky agent"], rouge_drift=0.0, recorded=True),
    # The same, under the policy docs/gate.md recommends for replayed outputs.
    "recorded outputs, flips: fail": dict(WORLDS["flaky agent"], rouge_drift=0.0, recorded=True, policy={"deterministic_flips": "fail"}),
}
ABLATE_WORLDS = {**WORLDS, **RECORDED}
MOVED_ABLATE = "moody judge, the branch moved (--moved)"  # --moved's rows as one more world
ONE_BROKEN = f"1 stable {TRAJ} broken"  # recorded worlds only: where one flip is already a regression


def _no_drop(original):
    def test_drop(comp, diffs, keys, policy, ledger):
        original(comp, diffs, keys, policy, ledger)  # run_sd and history stay: the level test reads them
        comp.p_value = None  # no Holm entry, no FAIL, no INCONCLUSIVE (which the verdict asks only of a tested drop)
    return test_drop


def _no_drop_fail(original):
    def test_drop(comp, diffs, keys, policy, ledger):
        original(comp, diffs, keys, policy, ledger)
        if comp.p_value is not None:
            comp.p_value = 1.0  # never significant; its INCONCLUSIVE stays (and its place in Holm)
    return test_drop


def _no_partial_half(keep: str):
    def replace(original):
        def test_partial(comp, diffs, own, policy):
            original(comp, diffs, own, policy)
            if comp.partial_p is not None:
                comp.partial_p = getattr(comp, keep)  # the other half gone, and with it the Bonferroni factor 2
        return test_partial
    return replace


def _outcome_hazards(original):
    def test_breakage(comp, pairs, policy, ledger, outcomes, values, reruns=None):
        original(comp, pairs, policy, ledger, outcomes, None, reruns)  # continuous criteria too: chances from pass/fail histories
    return test_breakage


def _nothing(original):
    return lambda *args, **kwargs: None


# name -> (what is switched off, the function replaced (module:name), its replacement
# given the original; or a gate policy change instead of a function).
ABLATIONS: dict[str, tuple[str, str, object]] = {
    "drop": ("the mean-drop test (its FAIL, its Holm entry, and the INCONCLUSIVE it asks)", "evalgate.gate.drop:measure", _no_drop),
    "drop FAIL": ("the mean-drop test's FAIL only (its INCONCLUSIVE kept)", "evalgate.gate.drop:measure", _no_drop_fail),
    "level": ("the level test (INCONCLUSIVE against the baseline run alone)", "evalgate.gate.level:measure", _nothing),
    "breakage": ("the breakage test (and with it every suspect to confirm)", "evalgate.gate.breakage:measure", _nothing),
    "breakage: values": ("a continuous criterion's chances from its own values (from outcomes instead)", "evalgate.gate.breakage:measure", _outcome_hazards),
    "partial": ("the partial-drop test", "evalgate.gate.partial:measure", _nothing),
    "partial: lopsided": ("the partial-drop test's count of cases fell against rose", "evalgate.gate.partial:measure", _no_partial_half("steady_p")),
    "partial: steady": ("the partial-drop test's drop in units of each case's spread", "evalgate.gate.partial:measure", _no_partial_half("lopsided_p")),
    "flips": ("deterministic_flips: fail (opt-in; where a world's policy sets it, back to test)", "", {"deterministic_flips": "test"}),
}


class _switched_off:
    """`with _switched_off(name):` the gate with one test switched off (ABLATIONS), for this process."""

    def __init__(self, name: str | None):
        self.name = name
        self.saved = None

    def __enter__(self):
        if self.name is not None and ABLATIONS[self.name][1]:
            import importlib

            where, replace = ABLATIONS[self.name][1:]
            path, attribute = where.split(":")
            module = importlib.import_module(path)
            self.saved = (module, attribute, getattr(module, attribute))
            setattr(module, attribute, replace(self.saved[2]))
        return self

    def __exit__(self, *exc):
        if self.saved is not None:
            setattr(*self.saved)


# Pure functions of evalgate.gate.stats that every configuration calls with the same arguments
# (the breakage test's chances and tails do not depend on which other test is off): the
# bench remembers their results within one PR, which changes no result and saves most of the
# time. Where a module imported one by name, its copy there is replaced too.
_CACHED = {"break_test": ("evalgate.gate.stats", "evalgate.gate.breakage"), "rate_mixture": ("evalgate.gate.stats",),
           "beta_quantile": ("evalgate.gate.stats",), "_beta_inc": ("evalgate.gate.stats",)}
_cache: dict = {}


def _key(value):
    if isinstance(value, (list, tuple)):
        return tuple(_key(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted(value.items()))
    return value


def _remembered(name: str, original):
    def function(*args):
        key = (name, _key(args))
        if key not in _cache:
            _cache[key] = original(*args)
        return _cache[key]
    return function


def _remember_stats() -> None:
    import importlib

    for name, modules in _CACHED.items():
        original = getattr(importlib.import_module(modules[0]), name)
        for module in modules:
            setattr(importlib.import_module(module), name, _remembered(name, original))


def _gate_policy(params: dict, ablation: str | None) -> GatePolicy:
    """The world's gate policy (the default, or its `policy`), with a policy ablation applied."""
    settings = dict(params.get("policy", {}))
    if ablation is not None and not ABLATIONS[ablation][1]:
        settings.update(ABLATIONS[ablation][2])  # type: ignore[arg-type]
    return GatePolicy(**settings)


def _ablated_verdicts(world: World, baseline: RunResults, current: RunResults, ledger: dict, policy: GatePolicy,
                      broken: dict[str, set[int]], drop: set[int], tag: str) -> tuple[str, str, str, int]:
    """(first run alone, with confirmation runs, without history, agent or judge re-runs made)
    under the gate as it is switched now. Re-runs draw from a stream of their own per case
    (`tag`), so every configuration that re-runs a case sees the same re-runs."""
    for case in current.suites[0].cases:
        case.reruns = None
    first = compare(baseline, current, policy, ledger=ledger)
    alone = first.verdict.value
    chosen, _ = suspects(first, current, policy.confirm.max_cases, flips=policy.deterministic_flips == "fail")
    mood, drift = world.last
    cases = {c.eval_id: c for c in current.suites[0].cases}
    made = 0
    for s in chosen:
        how = "agent" if world.recorded is None else "judge" if s.judged else None  # evalgate.confirm.how
        if how is None:
            continue  # recorded outputs, deterministic criteria: nothing to re-run, the first run stands
        i = int(s.eval_id[4:])
        rng = random.Random(f"{tag}/{s.eval_id}/rerun")
        reruns = []
        for r in range(1, policy.confirm.runs + 1):
            # A recorded case's re-draw keeps its outputs (World.recorded): only the judge's samples are new.
            criteria = {k: CriterionResult.model_validate(v) for k, v in world.case(i, rng, mood, drift, broken, drop).items()}
            reruns.append(Rerun(run=r, how=how, status=case_status(criteria), criteria=criteria))
        cases[s.eval_id].reruns = reruns
        made += 1
    confirmed = compare(baseline, current, policy, ledger=ledger).verdict.value if made else alone
    for case in current.suites[0].cases:
        case.reruns = None
    return alone, confirmed, compare(baseline, current, policy).verdict.value, made


def simulate_ablate(job: tuple[int, str, int, tuple]) -> list[dict]:
    """One simulated PR: per scenario, {configuration: (first run alone, with confirmation,
    without history, re-runs)}, the full gate under None and each ablation under its name.
    The runs are drawn once per PR; every configuration compares the same ones."""
    seed, world_name, index, names = job
    if not _cache:
        _remember_stats()
    _cache.clear()
    _cache[None] = None  # installed
    if world_name == MOVED_ABLATE:
        return [_ablate_moved(seed, m, index, names) for m in range(len(MOVES))]
    rng = random.Random(f"{seed}/{world_name}/{index}/ablate")
    params = ABLATE_WORLDS[world_name]
    world = World(rng, params)
    policy = _gate_policy(params, None)
    baseline, ledger = _history(world, rng, policy, [0.0] * params["history"])
    n = params["cases"]
    out = []
    for s, scenario in enumerate(_ablate_scenarios(world_name)):
        broken: dict[str, set[int]] = {}
        drop: set[int] = set()
        for name in (TRAJ, ROUGE, JUDGE):
            if name in scenario:
                stable = _stable(ledger, name, n, policy)
                broken[name] = set(rng.sample(stable, 1 if scenario == ONE_BROKEN else max(1, round(0.04 * len(stable)))))
        if scenario.startswith("ROUGE -0.1"):
            drop = set(rng.sample(range(n), n // 4))
        current = world.run(rng, broken, drop)
        out.append(_each_ablation(world, params, baseline, current, ledger, broken, drop, names, f"{seed}/{world_name}/{index}/{s}"))
    return out


def _ablate_moved(seed: int, move: int, index: int, names: tuple) -> dict:
    """One PR of --moved's row `move` (the branch's judge level moved 3 runs back), under each ablation."""
    _, step, now, _ = MOVES[move]
    rng = random.Random(f"{seed}/moved/{move}/{index}/ablate")
    params = WORLDS[MOVED_WORLD]
    world = World(rng, params)
    baseline, ledger = _history(world, rng, GatePolicy(), [-step] * (params["history"] - 3) + [0.0] * 3)
    world.judge_offset = now
    current = world.run(rng)
    return _each_ablation(world, params, baseline, current, ledger, {}, set(), names, f"{seed}/moved/{move}/{index}")


def _each_ablation(world: World, params: dict, baseline: RunResults, current: RunResults, ledger: dict,
                   broken: dict[str, set[int]], drop: set[int], names: tuple, tag: str) -> dict:
    """{configuration: _ablated_verdicts(...)} of one PR's run, the full gate under None."""
    row = {}
    for ablation in (None, *names):
        if ablation == "flips" and "policy" not in params:
            continue  # the default policy has no flips rule to switch off
        with _switched_off(ablation):
            row[ablation] = _ablated_verdicts(world, baseline, current, ledger, _gate_policy(params, ablation), broken, drop, tag)
    return row


def _ablate_scenarios(world_name: str) -> tuple[str, ...]:
    if world_name == MOVED_ABLATE:
        return tuple(f"the branch {branch} 3 runs back, the PR {pr}" for branch, _, _, pr in MOVES)
    return SCENARIOS + ((ONE_BROKEN,) if world_name in RECORDED else ())


def ablate_table(args: argparse.Namespace) -> int:
    names = tuple(args.test or ABLATIONS)
    worlds = args.world or [*ABLATE_WORLDS, MOVED_ABLATE]
    t0 = time.perf_counter()
    jobs = [(args.seed, w, i, names) for w in worlds for i in range(args.prs)]
    if args.workers > 1:
        with multiprocessing.Pool(args.workers) as pool:
            results = pool.map(simulate_ablate, jobs, chunksize=1)
    else:
        results = [simulate_ablate(j) for j in jobs]
    print(f"{args.prs} simulated PRs per world, seed {args.seed}; {time.perf_counter() - t0:.0f} s with {args.workers} worker(s)")
    return print_ablation(jobs, results)


def print_ablation(jobs: list[tuple], results: list[list[dict]]) -> int:
    """The --ablate tables of simulate_ablate's `results` for `jobs`."""
    names = jobs[0][3]
    worlds = list(dict.fromkeys(job[1] for job in jobs))
    policy = GatePolicy()
    print(f"Each test switched off in turn on the same draws; judge samples: all {SAMPLES}; confirmation: "
          f"{policy.confirm.runs} re-runs per suspect, at most {policy.confirm.max_cases}")
    print()
    print("Switched off:")
    for name in names:
        print(f"- {name}: {ABLATIONS[name][0]}")
    print()
    print("Cells: FAIL / INCONCLUSIVE verdicts (PASS the rest) of the PRs; beside an ablation, (how many PRs' verdicts "
          "changed against the full gate's) when any did. Columns: first run alone | with confirmation runs | without history.")
    changed: dict[str, list[str]] = {name: [] for name in names}
    for w in worlds:
        rows = [r for job, r in zip(jobs, results) if job[1] == w]
        shown = [None] + [a for a in names if a in rows[0][0]]
        print()
        print(f"### {w}")
        print()
        print("| scenario | " + " | ".join("full gate" if a is None else f"- {a}" for a in shown) + " |")
        print("|---|" + "---|" * len(shown))
        for s, scenario in enumerate(_ablate_scenarios(w)):
            cells = []
            for a in shown:
                parts = []
                for col, label in ((0, "alone"), (1, "confirmed"), (2, "no history")):
                    fails = sum(r[s][a][col] == "FAIL" for r in rows)
                    unsure = sum(r[s][a][col] == "INCONCLUSIVE" for r in rows)
                    moved = sum(r[s][a][col] != r[s][None][col] for r in rows)
                    parts.append(f"{fails}/{unsure}" + (f" ({moved})" if a is not None and moved else ""))
                    if a is not None and moved:
                        changed[a].append(f"{w}, {scenario}, {label}: {moved}")
                cells.append(" \\| ".join(parts))
            print(f"| {scenario} | " + " | ".join(cells) + " |")
        reruns = sum(r[0][None][3] for r in rows) / len(rows)
        print()
        print(f"Suspects re-run per unchanged PR (full gate): {reruns:.2f}")
    print()
    print("Verdicts each switched-off test changed (PRs, of the full gate's):")
    for name in names:
        where = changed[name]
        measured = any(name in r[0] for r in results)
        print(f"- {name}: " + ("; ".join(where) if where else "none: it changed no verdict in these worlds" if measured else "not measured here"))
    print()
    print("In one table: PRs whose verdict changed in the scenario where the most did, first run alone / with confirmation "
          "runs / without history (0: none anywhere; -: not measured)")
    print()
    print("| switched off | " + " | ".join(worlds) + " |")
    print("|---|" + "---:|" * len(worlds))
    for name in names:
        cells = []
        for w in worlds:
            rows = [r for job, r in zip(jobs, results) if job[1] == w]
            if name not in rows[0][0]:
                cells.append("-")
                continue
            most = [max(sum(r[s][name][col] != r[s][None][col] for r in rows) for s in range(len(rows[0]))) for col in (0, 1, 2)]
            cells.append("/".join(map(str, most)) if any(most) else "0")
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prs", type=int, default=500, help="simulated pull requests per world (default 500)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--world", action="append", choices=sorted([*ABLATE_WORLDS, MOVED_ABLATE]),
                        help="only this world (repeatable; default: all; the recorded-output and moved worlds with --ablate only)")
    parser.add_argument("--early-stop", action="store_true", help="judge samples stop once the majority is decided")
    parser.add_argument("--moved", action="store_true", help=f"instead: PRs after the branch's judge level moved ({MOVED_WORLD})")
    parser.add_argument("--confirm", action="store_true", help="instead: confirmation runs (gate.confirm) beside a fixed num_runs: 3 design")
    parser.add_argument("--rules", action="store_true", help="with --confirm: judge early stopping, evalgate's rule beside the plain majority rule, same draws")
    parser.add_argument("--sharper", action="store_true", help="instead: issue 37's world (two broken stable cases, newly flaky "
                        "cases, a tool outage, the first day), with and without the base commit's control")
    parser.add_argument("--calibration", action="store_true", help="instead: the graded breakage test's fitted chances "
                        "against the simulation's true ones, over --prs ledgers of --sharper's world")
    parser.add_argument("--ablate", action="store_true", help="instead: each test of the gate switched off in turn, same draws")
    parser.add_argument("--test", action="append", choices=list(ABLATIONS), help="with --ablate: only this ablation (repeatable; default: all)")
    args = parser.parse_args(argv)
    if args.ablate:
        return ablate_table(args)
    if args.sharper:
        return sharper_table(args)
    if args.calibration:
        return calibration_table(args)
    if any(w in RECORDED or w == MOVED_ABLATE for w in args.world or ()):
        parser.error("the recorded-output and moved worlds of --ablate are simulated with --ablate only")
    if args.confirm and args.rules:
        return rules_table(args)
    if args.moved:
        return moved(args)
    if args.confirm:
        return confirm_table(args)
    worlds = args.world or list(WORLDS)

    t0 = time.perf_counter()
    jobs = [(args.seed, w, i, args.early_stop) for w in worlds for i in range(args.prs)]
    if args.workers > 1:
        with multiprocessing.Pool(args.workers) as pool:
            results = pool.map(simulate, jobs, chunksize=5)
    else:
        results = [simulate(j) for j in jobs]
    elapsed = time.perf_counter() - t0

    policy = GatePolicy()
    print(
        f"{args.prs} simulated PRs per world; default policy (alpha {policy.alpha:g}, margins {policy.margin_deterministic:g} / "
        f"{policy.margin_judge:g}, resolution {policy.resolution:g}); judge samples: "
        f"{'early stop' if args.early_stop else 'all 5'}; {elapsed:.0f} s with {args.workers} worker(s)"
    )
    goals: list[tuple[str, bool]] = []
    for w in worlds:
        rows = [r for job, (r, _) in zip(jobs, results) if job[1] == w]
        oracles = [o for job, (_, o) in zip(jobs, results) if job[1] == w]
        p = WORLDS[w]
        print()
        print(f"### {w}: {p['cases']} cases, {p['history']} runs of history, judge mood sd {p['mood']} (logit), "
              f"{p['flaky_share']:.0%} of cases go off {p['often_flip'][0]:g}-{p['often_flip'][1]:g} of runs, the rest ~{p['rare_flip']:g}, "
              f"serving drift sd {p['rouge_drift']:g}")
        print()
        print("| scenario | with history: FAIL | INCONCLUSIVE | without history: FAIL | INCONCLUSIVE |")
        print("|---|---:|---:|---:|---:|")
        for s, scenario in enumerate(SCENARIOS):
            share = lambda col, v: sum(r[s][col] == v for r in rows) / len(rows)  # noqa: E731
            print(f"| {scenario} | {share(0, 'FAIL'):.1%} | {share(0, 'INCONCLUSIVE'):.1%} | {share(1, 'FAIL'):.1%} | {share(1, 'INCONCLUSIVE'):.1%} |")
            if s == 0:
                goals += [
                    (f"{w}: false FAIL <= 1% with history", share(0, "FAIL") <= 0.01),
                    (f"{w}: INCONCLUSIVE <= 5% with history", share(0, "INCONCLUSIVE") <= 0.05),
                    (f"{w}: false FAIL <= 1% without history", share(1, "FAIL") <= 0.01),
                ]
            elif scenario.startswith("ROUGE"):
                goals.append((f"{w}: detection >= 90% of {scenario} with history", share(0, "FAIL") >= 0.90))
            else:
                goals.append((f"{w}: detection >= 95% of {scenario} with history", share(0, "FAIL") >= 0.95))
        level = policy.alpha / 7  # the gate's Holm family here: 3 drop, 3 breakage and 1 partial-drop test
        print()
        print(f"What the history cannot know: the trajectory breakage test alone at alpha / 7 with the simulation's true "
              f"chances caught {sum(o[0] < level for o in oracles) / len(oracles):.1%} with each case's own chance, "
              f"{sum(o[1] < level for o in oracles) / len(oracles):.1%} with equal chances summing to the true total.")
    print()
    for text, ok in goals:
        print(f"{'met' if ok else 'MISSED'}: {text}")
    return 0 if all(ok for _, ok in goals) else 1


if __name__ == "__main__":
    sys.exit(main())
