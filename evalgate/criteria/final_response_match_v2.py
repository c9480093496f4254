"""`final_response_match_v2`: an LLM judge decides whether the final response is valid against the reference.

ADK 2.13 semantics, our own prompt. Each invocation is judged `num_samples` times; each
parsed sample is a verdict, valid (1.0) or invalid (0.0); a sample whose reply cannot be
read is a failed sample (None), not a verdict. The invocation scores 1.0 when more parsed
samples say valid than invalid, else 0.0 (a tie is invalid); with no parsed sample it is
NOT_EVALUATED with the reasons. The engine's mean over evaluated invocations is then the
share judged valid, as ADK's score. The user prompt is the expected invocation's (as ADK);
with `include_intermediate_responses_in_final`, intermediate text joins both the response
and the reference.
"""

from __future__ import annotations

from typing import Any, ClassVar, Optional

from evalgate.adk import Invocation
from evalgate.criteria.base import Outcome, criterion
from evalgate.judge.request import JudgeReply
from evalgate.criteria.judging import (
    JudgeCriterion,
    ReplyError,
    short_of_quorum,
    block,
    majority,
    parse_reply,
    response_text,
    text_field,
    word,
)

_TASK = """\
Task: decide whether the agent's final response is a valid answer to the user's request, \
using the reference response as the answer key.

The reference response was written by the test's author and is correct. Compare the agent's \
response with it:
- It is valid when it gives the same answer as the reference: the same key facts, entities, \
values and conclusions.
- Wording, structure and format may differ (a sentence instead of a list, "TX" instead of \
"Texas", 1,000,000 instead of 1000000, a table laid out differently), unless the user's request \
asks for a particular format.
- More detail than the reference is fine when it is correct. A wrong or missing key fact, or a \
detail that contradicts the reference, makes the response invalid.
- Numbers must agree with the reference, and so must their units: 100 miles is not 100 km. \
Rounding is acceptable when the user asked for no particular precision and the rounded value \
leads to the same conclusion.
- Trust the reference for calculations and facts it states; do not recompute them or look \
anything up.
- If the reference answers and the agent declines, says it cannot answer, asks for information \
it was already given, or answers a different question, the response is invalid. If the \
reference itself declines or asks for clarification, a response that does the same is valid.

"""

_REPLY = """

Reply with a JSON object: "reasoning" (a short explanation naming the key facts you compared) \
and "verdict" ("valid" or "invalid")."""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string"},
        "verdict": {"type": "string", "enum": ["valid", "invalid"]},
    },
    "required": ["reasoning", "verdict"],
}

# Labels a judge might use for a verdict, as ADK's parser maps them.
_LABELS = {
    "valid": True,
    "true": True,
    "invalid": False,
    "false": False,
    "partially_valid": False,
    "partially": False,
    "almost": False,
}


def build_prompt(user: str, reference: str, response: str) -> str:
    return _TASK + "\n\n".join([
        block("user_prompt", user),
        block("reference_response", reference),
        block("agent_response", response),
    ]) + _REPLY


def read_verdict(value: Any) -> tuple[bool, str]:
    """(valid?, reasoning) from a reply's JSON."""
    if not isinstance(value, dict):
        raise ReplyError("the reply is not a JSON object")
    verdict = _LABELS.get(word(value.get("verdict")) or "")
    if verdict is None:
        raise ReplyError(f"verdict {value.get('verdict')!r} is neither valid nor invalid")
    return verdict, text_field(value, "reasoning")


def verdict_ballot(verdict: tuple[bool, str]) -> list[bool]:
    """A read sample's vote, for sequential sampling: valid or not."""
    return [verdict[0]]


def vote(replies: list[JudgeReply]) -> Outcome:
    """Majority of the parsed samples; a tie is invalid; no parsed sample is NOT_EVALUATED."""
    samples: list[Optional[float]] = []
    reasons: list[str] = []
    votes: list[bool] = []
    failures: list[str] = []
    for reply in replies:
        try:
            valid, reasoning = parse_reply(reply, read_verdict)
        except ReplyError as e:
            samples.append(None)
            reasons.append(f"failed: {e}")
            failures.append(str(e))
            continue
        votes.append(valid)
        samples.append(1.0 if valid else 0.0)
        reasons.append(reasoning)
    details = {"samples": samples, "reasons": reasons}
    why = short_of_quorum(samples, failures)
    if why:
        return Outcome(None, details, error=why)
    verdict = majority(votes)
    return Outcome(1.0 if verdict else 0.0, details)


@criterion
class FinalResponseMatchV2(JudgeCriterion):
    """LLM judge: is the final response valid against the reference (ADK `final_response_match_v2`)."""

    name: ClassVar[str] = "final_response_match_v2"
    reads: ClassVar[frozenset[str]] = frozenset({"final_response", "intermediate"})  # the reference, with intermediate text when asked
    prompt_version: ClassVar[str] = "1"
    majority_vote: ClassVar[bool] = True

    def score_invocation(self, actual: Invocation, expected: Optional[Invocation]) -> Outcome:
        assert expected is not None
        include = self.include_intermediate_responses_in_final
        reference = response_text(expected, include)
        if not reference.strip():
            return Outcome(None, error="no reference: the expected invocation has no final response text to compare with")
        prompt = build_prompt(expected.user_text(), reference, response_text(actual, include))
        return vote(self.ask_samples(prompt, SCHEMA, read_verdict, ballot=verdict_ballot))
