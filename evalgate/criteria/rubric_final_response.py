"""`rubric_based_final_response_quality_v1`: an LLM judge checks the final answer against rubrics.

ADK 2.13 semantics, our own prompt. Per rubric one yes/no verdict with a rationale per
sample; a sample counts only when its reply gives a clear verdict for every rubric. Per
rubric the majority of the parsed samples decides (a tie is "no"); the invocation scores
the share of its rubrics judged "yes". Rubrics: the criterion's, plus the case's and the
invocation's of type FINAL_RESPONSE_QUALITY (see `RubricCriterion`). The judge sees the
developer instructions and tool definitions (when the data has them), the user prompt, the
tool calls with their results as evidence, and the final answer (with
`include_intermediate_responses_in_final`, the intermediate text before it).
"""

from __future__ import annotations

from typing import ClassVar

from evalgate.adk import Invocation, Rubric
from evalgate.criteria.base import criterion
from evalgate.criteria.judging import RubricCriterion, as_json, block, context_blocks, response_text, rubrics_block, tool_steps

_TASK = """\
Task: assess the agent's final answer against each property listed in <rubrics>.

For each property give a verdict:
- "yes": the final answer fulfils the property, or the property's condition does not apply to \
this conversation.
- "no": the property applies and the final answer does not fulfil it, or the answer makes a \
claim the property concerns that the evidence does not establish.

Evidence is what the user asked, the developer instructions and tool definitions when given, \
and the results of the agent's tool calls in <tool_activity> (each call with its arguments and \
its result; null when no result was recorded). The agent's own statements are not evidence \
for themselves, and a call made with wrong or missing arguments gives no trustworthy result. \
Accept different wording with the same meaning, and numbers that agree up to sensible rounding.

Judge each property on its own, give a verdict for every one, and add no properties of your own.

"""

_REPLY = """

Reply with a JSON object: "verdicts", one entry per property, each with "rubric_id" (copied \
from <rubrics>), "rationale" (a short explanation that cites the evidence) and "verdict" \
("yes" or "no")."""


@criterion
class RubricFinalResponseQuality(RubricCriterion):
    """LLM judge: the final answer against rubrics (ADK `rubric_based_final_response_quality_v1`)."""

    name: ClassVar[str] = "rubric_based_final_response_quality_v1"
    prompt_version: ClassVar[str] = "1"
    rubric_type: ClassVar[str] = "FINAL_RESPONSE_QUALITY"

    def build_prompt(self, actual: Invocation, rubrics: list[Rubric]) -> str:
        steps = tool_steps(actual)
        return _TASK + "\n\n".join([
            *context_blocks(actual),
            block("tool_activity", as_json(steps) if steps else "(no tool calls)"),
            block("final_answer", response_text(actual, self.include_intermediate_responses_in_final)),
            rubrics_block(rubrics),
        ]) + _REPLY
