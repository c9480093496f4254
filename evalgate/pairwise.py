"""The pairwise judge (`gate.pairwise`): is the pull request's answer better or worse than the baseline's, case by case.

A step between scoring and `evalgate.gate.compare`: for every case both runs share (expected data
unchanged) whose final response changed (per invocation, beyond whitespace), a judge sees the
conversation so far (the user's turns, each side's tool calls and results) and the two
answers, labelled only A and B, and says which serves the user better, or that they are
equally good, with a reason. Every pair is asked in both orders: sample j shows the
baseline's answer as A when j is even and the pull request's when j is odd (`num_samples`
is even). A case's verdicts are counted in complete order pairs (samples 2m and 2m + 1):
the pull request's answer scores +1 per verdict it wins and -1 per verdict it loses; the
case is a loss when the sum is negative, a win when positive, else a tie. A judge that
always picks one position, or picks at random between paraphrases, thus gives ties or
wins and losses alike. Unchanged answers are ties and cost no request.

An answer whose verdicts all picked one side, in both orders, is judged once more under
`confirm` (on by default): samples num_samples .. 2 num_samples - 1, in both orders again,
and its net verdict is the mean of the two rounds (`InvocationPair.score`, kept on one
round's scale). A judge's leaning (the longer of two equal answers, a position) picks one
side in every verdict now and then and seldom twice in a row; a missing detail loses every
time. Which answers are confirmed depends only on how unanimous the verdicts were, never on
which side they favoured, so the side-by-side test's null (a case's net is as likely
positive as negative) holds as before. Measured in bench/bench_pairwise.py --biased: with
issue 37's biased judge, the extra requests were 8% of the first round's on unchanged
paraphrases and 23% where the PR dropped a detail from a fifth of its answers.

A reply that was cut off (finishReason MAX_TOKENS or another early stop, or empty) or cannot
be read as a verdict is asked again once (the runtime never caches it, so the second ask
reaches the judge); a request the judge refused or could not answer (down, no credentials,
an error after the runtime's retries) is not asked again. A case whose changed invocations
do not all have a complete order pair of readable verdicts after that is NOT_EVALUATED with
the reason: never a loss, never a win. `max_cases` bounds the cases judged; the rest are named (`left_out`), chosen by a hash
of their ids so the same cases are judged from run to run (and the cache serves them).

Everything goes through the run's `JudgeRuntime` (pool, rate cap, retries, cache: a
request's key covers the prompt, which holds both answers in their order, and the sample
index, so an unchanged rerun makes no request). The statistics (a sign test in the gate's
Holm family) are `evalgate.gate.side_by_side`'s; this module only asks and counts; the
policy and the verdicts' shapes are `evalgate.gate.pairwise`'s.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Callable, Optional

from evalgate.gate.pairwise import (
    DEFAULT_INSTRUCTIONS,
    CasePair,
    Choice,
    InvocationPair,
    Outcome,
    PairVerdict,
    PairwisePolicy,
    SuitePairs,
)
from evalgate.i18n import _, n_
from evalgate.results import CaseResult, InvocationSummary, RunResults, SuiteResult

CRITERION = "pairwise"  # the runtime's stats and the cache key name it so
PROMPT_VERSION = "1"  # part of every request's cache key: bump when the prompt or schema changes
TEXT_LIMIT = 6000  # characters of one answer or user turn shown to the judge
STEPS_LIMIT = 6000  # characters of one side's tool calls and results shown to the judge


# --- which cases ------------------------------------------------------------------------


def _norm(text: str) -> str:
    return " ".join(text.split())


def changed_invocations(base: CaseResult, cur: CaseResult) -> list[int]:
    """Indices of the invocations whose final response differs (beyond whitespace)."""
    return [
        i
        for i, (b, c) in enumerate(zip(base.invocations, cur.invocations))
        if _norm(b.actual_response) != _norm(c.actual_response)
    ]


def _budget_order(case: CaseResult) -> str:
    return hashlib.sha256(f"{case.eval_set_id}\x1f{case.eval_id}".encode("utf-8")).hexdigest()


# --- the prompt ---------------------------------------------------------------------------


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more characters not shown]"


def _steps(inv: InvocationSummary) -> str:
    """One side's tool calls with their results (when the results file kept them), as JSON."""
    if not inv.actual_tools:
        return "(no tool calls)"
    results = list(inv.actual_tool_results)
    steps = []
    for call in inv.actual_tools:
        step: dict[str, Any] = {"tool": call.get("name"), "args": call.get("args")}
        match = next((r for r in results if r.get("name") == call.get("name")), None)
        if match is not None:
            results.remove(match)
            step["result"] = match.get("response")
        else:
            step["result"] = "(not recorded)"
        steps.append(step)
    return _clip(json.dumps(steps, ensure_ascii=False, indent=1, default=str), STEPS_LIMIT)


def build_prompt(base: list[InvocationSummary], cur: list[InvocationSummary], index: int, current_first: bool, instructions: str) -> str:
    """The judge's prompt for invocation `index`, with the pull request's answer as A when `current_first`."""
    from evalgate.criteria.judging import block

    a, b = (cur, base) if current_first else (base, cur)
    out = [
        "Two assistants, A and B, were given the same conversation with a user. Compare their final answers in the "
        "last turn and decide which one serves the user better, or whether they are equally good.",
        block("what_better_means", instructions),
    ]
    earlier = []
    for i in range(index):
        ua, ub = a[i].user, b[i].user
        turn = [f"User: {ua}" if _norm(ua) == _norm(ub) else f"User (to A): {ua}\nUser (to B): {ub}"]
        ra, rb = a[i].actual_response, b[i].actual_response
        turn.append(f"Assistant: {ra}" if _norm(ra) == _norm(rb) else f"Assistant A: {ra}\nAssistant B: {rb}")
        earlier.append("\n".join(turn))
    if earlier:
        out.append(block("earlier_turns", _clip("\n\n".join(earlier), 3 * TEXT_LIMIT)))
    if _norm(a[index].user) == _norm(b[index].user):
        out.append(block("user_message", _clip(a[index].user, TEXT_LIMIT)))
    else:
        out.append(block("user_message", _clip(a[index].user, TEXT_LIMIT), to="A"))
        out.append(block("user_message", _clip(b[index].user, TEXT_LIMIT), to="B"))
    for label, side in (("A", a[index]), ("B", b[index])):
        out.append(block("tool_steps", _steps(side), assistant=label))
        out.append(block("final_answer", _clip(side.actual_response, TEXT_LIMIT), assistant=label))
    out.append(
        'Which final answer serves the user better? The order in which they are shown means nothing. Give your reason '
        'first, then "A", "B", or "equal" when neither is better. Answer as JSON: {"reason": "...", "better": "A" | "B" | "equal"}.'
    )
    return "\n\n".join(out)


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"reason": {"type": "string"}, "better": {"type": "string", "enum": ["A", "B", "equal"]}},
    "required": ["reason", "better"],
}

_LABELS = {"a": "A", "assistant_a": "A", "b": "B", "assistant_b": "B", "equal": "equal", "tie": "equal",
           "same": "equal", "neither": "equal", "both": "equal", "equally_good": "equal"}


def read_verdict(value: Any) -> tuple[str, str]:
    """("A" | "B" | "equal", reason) from a reply's JSON; ReplyError when it says neither."""
    from evalgate.criteria.judging import ReplyError, text_field, word

    if not isinstance(value, dict):
        raise ReplyError("the reply is not a JSON object")
    label = _LABELS.get(word(value.get("better")) or "")
    if label is None:
        raise ReplyError(f"'better' is {value.get('better')!r}, not A, B or equal")
    return label, text_field(value, "reason")


# --- asking ---------------------------------------------------------------------------------


def _choice(label: str, current_first: bool) -> Choice:
    if label == "equal":
        return "equal"
    return "current" if (label == "A") == current_first else "baseline"


# How evalgate.judge.transport says a reply came back, but incomplete (its finishReason, or no text).
_CUT_OFF = ("judge reply cut off", "judge reply stopped early", "judge returned an empty reply")


def _incomplete(reply: Any) -> bool:
    """A reply worth asking again once: it came back cut off, stopped early or empty, or its
    text could not be read as a verdict. Not a judge that is down or refused the request
    (the runtime already retried what can be retried; asking again would repeat it)."""
    if reply.down:
        return False
    if reply.error is None:
        return True  # text that is not a verdict
    return reply.error.startswith(_CUT_OFF)


def _stats_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after.get(k, 0) - before.get(k, 0) for k in after}


def judge_suite(
    suite: str, base: SuiteResult, cur: SuiteResult, policy: PairwisePolicy, runtime: Any
) -> SuitePairs:
    """Judge one suite's changed answers on `runtime` (an `evalgate.judge.runtime.JudgeRuntime`)."""
    from evalgate.criteria.judging import SYSTEM, ReplyError, parse_reply, readable
    from evalgate.gate.values import compared_parts, same_data
    from evalgate.judge.request import JudgeRequest

    out = SuitePairs(suite=suite, judge_model=policy.judge_model, num_samples=policy.num_samples)
    base_cases = {(c.eval_set_id, c.eval_id): c for c in base.cases}
    parts = compared_parts(base, cur)
    shared = []
    for c in cur.cases:
        b = base_cases.get((c.eval_set_id, c.eval_id))
        if b is not None and same_data(b, c, parts):
            shared.append((b, c))
    shared.sort(key=lambda bc: (bc[1].eval_set_id, bc[1].eval_id))
    instructions = policy.instructions or DEFAULT_INSTRUCTIONS

    judged: list[tuple[CaseResult, CaseResult, list[int]]] = []
    for b, c in shared:
        if not c.invocations or not b.invocations:
            why = _("this run has no answers for this case") if not c.invocations else _("the baseline has no answers for this case")
            out.cases.append(CasePair(c.eval_set_id, c.eval_id, "not_evaluated", error=why))
            continue
        idx = changed_invocations(b, c)
        if not idx:
            out.cases.append(CasePair(c.eval_set_id, c.eval_id, "tie"))
        else:
            judged.append((b, c, idx))
    if policy.max_cases is not None and len(judged) > policy.max_cases:
        judged.sort(key=lambda t: _budget_order(t[1]))
        out.left_out = sorted((c.eval_set_id, c.eval_id) for _, c, _ in judged[policy.max_cases :])
        judged = judged[: policy.max_cases]

    read = readable(read_verdict)

    def asking(b: CaseResult, c: CaseResult, pair: InvocationPair, samples: range) -> list[Callable[[], Any]]:
        """One job per sample j: the pair shown with the pull request's answer as A when j is odd."""
        jobs = []
        for j in samples:
            current_first = j % 2 == 1
            request = JudgeRequest(
                criterion=CRITERION,
                prompt_version=PROMPT_VERSION,
                model=policy.judge_model,
                system=SYSTEM,
                prompt=build_prompt(b.invocations, c.invocations, pair.index, current_first, instructions),
                response_schema=SCHEMA,
                sample=j,
            )

            def ask(request=request, pair=pair, j=j, current_first=current_first) -> None:
                for again in (False, True):
                    reply = runtime.ask(request, read)
                    try:
                        label, reason = parse_reply(reply, read_verdict)
                    except ReplyError as e:
                        if not again and _incomplete(reply):  # cut off or unreadable: asked once more (never cached)
                            continue
                        pair.verdicts.append(PairVerdict(j, current_first, None, error=str(e)))
                        return
                    pair.verdicts.append(PairVerdict(j, current_first, _choice(label, current_first), reason, cached=reply.cached))
                    return

            jobs.append(ask)
        return jobs

    n = policy.num_samples
    jobs: list[Callable[[], Any]] = []
    pairs: list[tuple[CaseResult, CaseResult, list[InvocationPair]]] = []
    for b, c, idx in judged:
        inv_pairs = [InvocationPair(i, c.invocations[i].user, b.invocations[i].actual_response, c.invocations[i].actual_response)
                     for i in idx]
        for pair in inv_pairs:
            jobs += asking(b, c, pair, range(n))
        pairs.append((b, c, inv_pairs))
    before = runtime.stats().get(CRITERION, {})
    if jobs:
        runtime.map(jobs)
        if policy.confirm:  # every verdict for one side: judged once more (samples n .. 2n - 1), the rounds averaged
            again = [job for b, c, inv_pairs in pairs for pair in inv_pairs if pair.unanimous(n)
                     for job in asking(b, c, pair, range(n, 2 * n))]
            if again:
                runtime.map(again)
    out.stats = _stats_delta(before, runtime.stats().get(CRITERION, {})) if jobs else {}
    for _base, c, inv_pairs in pairs:
        for p in inv_pairs:
            p.verdicts.sort(key=lambda v: v.sample)
        scores = [p.score(n) for p in inv_pairs]
        missing = [p for p, s in zip(inv_pairs, scores) if s is None]
        if missing:
            reasons = sorted({e for p in missing for e in p.errors()}) or [_("no verdict in both orders")]
            error = n_(
                "{missing} of {n} changed answers got no verdict in both orders: {reasons}",
                "{missing} of {n} changed answers got no verdict in both orders: {reasons}",
                len(inv_pairs),
                missing=len(missing),
                reasons="; ".join(reasons),
            )
            out.cases.append(CasePair(c.eval_set_id, c.eval_id, "not_evaluated", inv_pairs, 0, error))
            continue
        net = sum(s for s in scores if s is not None)
        outcome: Outcome = "win" if net > 0 else "loss" if net < 0 else "tie"
        out.cases.append(CasePair(c.eval_set_id, c.eval_id, outcome, inv_pairs, net))
    out.cases.sort(key=lambda p: (p.eval_set_id, p.eval_id))
    return out


def judge_pairs(baseline: Optional[RunResults], current: RunResults, policy: PairwisePolicy, runtime: Any) -> Optional[dict[str, SuitePairs]]:
    """Every suite's pairs (suite name -> SuitePairs) when `policy.enabled` and there is a baseline, else None."""
    if not policy.enabled or baseline is None:
        return None
    base_suites = {s.name: s for s in baseline.suites}
    return {s.name: judge_suite(s.name, base_suites[s.name], s, policy, runtime) for s in current.suites if s.name in base_suites}
