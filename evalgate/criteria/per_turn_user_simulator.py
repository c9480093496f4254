"""`per_turn_user_simulator_quality_v1`: did the simulated user follow its conversation plan?

ADK 2.13 semantics, our own prompt. It tells a bad simulator from a bad agent. Only for
conversation_scenario cases. Turn 1 scores 1.0 when the user's message is the scenario's
starting prompt (no judge). Every later turn is judged `num_samples` times: given the plan,
the persona and the conversation before it, is the user's message a faithful next step?
The majority of the parsed samples decides (a tie is a failure). Then the ending is judged
the same way, as if the user's next message were the stop signal: ending there must be
what the plan calls for; if not, the last turn's score is replaced by that failure. The
case score is the mean over turns, the share of turns the simulated user got right.
"""

from __future__ import annotations

from typing import Any, ClassVar, Optional

from pydantic import Field

from evalgate import reasons
from evalgate.adk import Invocation
from evalgate.criteria.base import Outcome, criterion
from evalgate.criteria.final_response_match_v2 import read_verdict, verdict_ballot, vote
from evalgate.criteria.judging import JudgeCriterion, block
from evalgate.simulated_user import STOP_SIGNAL, Scenario

_TASK = """\
Task: an automated test had a language model play a user talking to an AI agent. The model \
was given a conversation plan (and sometimes a persona) and wrote the user's messages one at \
a time. Decide whether the user's message below is a faithful next message for that user.

It is valid when all of these hold:
- It follows the plan: it pursues what the plan says the user wants, in a sensible order, and \
reveals only details the plan gives (or that the user would plausibly know), when they are \
needed or asked for.
- It responds to the conversation so far: it answers the agent's questions, and points out \
mistakes the plan lets the user notice.
- It stays in character as the user (and the persona, if there is one): it does not describe \
the plan, speak as the agent, or invent goals the plan does not have.
- If the message is exactly the stop signal {stop}, it ends the conversation: that is valid \
only when what the plan asks for is done or the agent clearly cannot help further, and invalid \
when the plan still has steps the user should take.

"""

_REPLY = """

Reply with a JSON object: "reasoning" (a short explanation naming the plan step you checked) \
and "verdict" ("valid" or "invalid")."""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"reasoning": {"type": "string"}, "verdict": {"type": "string", "enum": ["valid", "invalid"]}},
    "required": ["reasoning", "verdict"],
}


def history(invocations: list[Invocation]) -> str:
    lines = []
    for inv in invocations:
        lines.append(f"user: {inv.user_text()}")
        if inv.final_response is not None:
            lines.append(f"agent: {inv.final_text()}")
    return "\n\n".join(lines)


def build_prompt(scenario: Scenario, before: list[Invocation], message: str) -> str:
    blocks = [block("conversation_plan", scenario.conversation_plan)]
    if scenario.persona:
        blocks.append(block("persona", scenario.persona))
    blocks += [block("conversation_so_far", history(before)), block("user_message", message)]
    return _TASK.format(stop=STOP_SIGNAL) + "\n\n".join(blocks) + _REPLY


@criterion
class PerTurnUserSimulatorQuality(JudgeCriterion):
    """LLM judge: did the simulated user follow its plan, turn by turn (ADK `per_turn_user_simulator_quality_v1`)."""

    name: ClassVar[str] = "per_turn_user_simulator_quality_v1"
    prompt_version: ClassVar[str] = "1"
    needs_expected: ClassVar[bool] = False
    needs_scenario: ClassVar[bool] = True
    majority_vote: ClassVar[bool] = True

    stop_signal: str = Field(default=STOP_SIGNAL, min_length=1, description="The simulator's stop signal (ADK's default).")

    def score_scenario(self, actual: list[Invocation], scenario: dict[str, Any]) -> list[Outcome]:
        plan = Scenario.of(scenario)
        if not actual:
            return []
        first = actual[0].user_text().strip() == plan.starting_prompt.strip()
        outcomes = [Outcome(1.0 if first else 0.0, {"check": "starting prompt"})]
        for i in range(1, len(actual)):
            outcomes.append(self._judge(plan, actual[:i], actual[i].user_text()))
        ending = self._judge(plan, actual, self.stop_signal)
        if ending.score == 0.0:
            ending.details["check"] = "ending the conversation here"
            outcomes[-1] = ending
        return outcomes

    def _judge(self, plan: Scenario, before: list[Invocation], message: str) -> Outcome:
        prompt = build_prompt(plan, before, message)
        return vote(self.ask_samples(prompt, SCHEMA, read_verdict, ballot=verdict_ballot))

    def score_invocation(self, actual: Invocation, expected: Optional[Invocation]) -> Outcome:
        return Outcome(None, error=reasons.NO_SCENARIO)
