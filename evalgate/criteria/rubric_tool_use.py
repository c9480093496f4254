"""`rubric_based_tool_use_quality_v1`: an LLM judge checks the agent's tool use against rubrics.

ADK 2.13 semantics, our own prompt; voting as in `rubric_based_final_response_quality_v1`.
Rubrics: the criterion's, plus the case's and the invocation's of type TOOL_USE_QUALITY. The
judge sees the tool definitions (when the data has them), the user prompt, and every tool
call in order with its arguments and its result.
"""

from __future__ import annotations

from typing import ClassVar

from evalgate.adk import Invocation, Rubric
from evalgate.criteria.base import criterion
from evalgate.criteria.judging import RubricCriterion, as_json, block, rubrics_block, tool_definitions, tool_steps

_TASK = """\
Task: assess how the agent used its tools, against each property listed in <rubrics>.

<tool_activity> lists every tool call the agent made in this turn, in order: the tool's name, \
the arguments it passed and the result it got back (null when no result was recorded). Judge \
the calls themselves: which tools were called, in which order, with which arguments, and \
whether results were passed on correctly to later calls.

For each property give a verdict:
- "yes": the agent's tool use fulfils the property, or the property does not apply (for \
example, it concerns the arguments of a call that was never made and whose absence another \
property already covers).
- "no": the property applies and the tool use does not fulfil it.
Tool names must match exactly. An argument may be worded differently from what a property \
expects when it means the same, unless the property asks for an exact value.

Judge each property on its own, give a verdict for every one, and add no properties of your own.

"""

_REPLY = """

Reply with a JSON object: "verdicts", one entry per property, each with "rubric_id" (copied \
from <rubrics>), "rationale" (a short explanation that refers to the calls) and "verdict" \
("yes" or "no")."""


@criterion
class RubricToolUseQuality(RubricCriterion):
    """LLM judge: tool use against rubrics (ADK `rubric_based_tool_use_quality_v1`)."""

    name: ClassVar[str] = "rubric_based_tool_use_quality_v1"
    prompt_version: ClassVar[str] = "1"
    rubric_type: ClassVar[str] = "TOOL_USE_QUALITY"

    def build_prompt(self, actual: Invocation, rubrics: list[Rubric]) -> str:
        blocks = []
        tools = tool_definitions(actual)
        if tools:
            blocks.append(block("tool_definitions", as_json(tools)))
        steps = tool_steps(actual)
        blocks += [
            block("user_prompt", actual.user_text()),
            block("tool_activity", as_json(steps) if steps else "(no tool calls)"),
            rubrics_block(rubrics),
        ]
        return _TASK + "\n\n".join(blocks) + _REPLY
