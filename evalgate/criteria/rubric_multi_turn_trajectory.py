"""`rubric_based_multi_turn_trajectory_quality_v1`: an LLM judge checks a whole conversation against rubrics.

ADK 2.13 semantics (`RubricBasedMultiTurnTrajectoryEvaluator`), our own prompt:

- One judgement per case, made on the last turn with the whole conversation: every turn's
  user message, the agents' texts, tool calls and tool outputs, then the final response,
  plus each agent's instructions and tool list from the invocations' `app_details`. Turns
  1..N-1 are NOT_EVALUATED placeholders; the case's score and status are the last turn's.
- Rubrics: the criterion's `rubrics`, plus the rubrics of type TRAJECTORY_QUALITY on the
  last turn (the case's rubrics and the last expected invocation's, which the loader puts
  on the expected turn; an actual turn's own copies, as in ADK results files, count once).
  None at all, or one rubric_id used by the criterion and by the case or invocation (or by
  two different rubrics there), is NOT_EVALUATED with the reason, as in ADK.
- Replies are read as ADK reads its judge: each entry is matched to a rubric by its id,
  else by its property text (normalised: case, spacing, typographic quotes, markdown
  decoration); unmatched entries are dropped; a verdict containing "yes" is 1.0, else one
  containing "no" is 0.0, else no score. A reply that is not the JSON asked for, or has an
  entry without a verdict, gives no verdicts (ADK drops such a sample); it still counts
  as drawn.
- Samples -> verdict, per rubric (ADK's majority aggregator): more yes than no is yes, a
  tie is no, only unscored entries keep no score; rubrics in the order they first appear
  in the samples, each with the rationale of its first sample agreeing with the verdict.
  Score = mean of the scored rubrics (none scored: NOT_EVALUATED). Any judge call that
  failed (no reply text after retries) makes the case NOT_EVALUATED, even when the other
  samples answered, as ADK treats a sample that raised.
- Early stop (`judge.early_stop`): samples are drawn in rounds until every rubric's
  verdict is out of reach of the samples not yet drawn (counting a tie as no), and never
  while every scored sample so far is below the threshold (the gate reads "every sample
  failed"). A failed call among the drawn samples decides (NOT_EVALUATED) at once.

Where evalgate differs from ADK 2.13 on the same data:
- Tool declarations read from JSON (every recorded or loaded invocation) and built-in
  tools without function declarations (google_search, code execution) are listed for the
  judge; ADK's evaluator raises on both (AttributeError / TypeError) and records
  NOT_EVALUATED.
- A reply that judges one rubric twice counts it once when the answers agree and gives no
  verdicts when they disagree; ADK counts every repeat as a vote. (With one vote per
  rubric per sample, early stopping is exact.)
- A judge reply that carries no text (blocked, empty, cut off) is a failed call, so the
  case is NOT_EVALUATED; ADK counts it as a sample without verdicts.
- Non-ASCII tool arguments reach the judge as written (ADK escapes them as \\uXXXX).
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass
from typing import Any, ClassVar, Optional, Sequence

from evalgate import reasons
from evalgate.adk import Invocation, InvocationEvents, Rubric
from evalgate.criteria.base import CaseOutcome, Outcome, Scope, criterion
from evalgate.criteria.judging import (
    ReplyError,
    RubricCriterion,
    RubricError,
    as_json,
    block,
    mean,
    parse_reply,
    readable,
    unescape,
)
from evalgate.judge.request import JudgeReply

RUBRIC_TYPE = "TRAJECTORY_QUALITY"

_TASK = """\
Task: assess how an AI agent (or a team of agents) handled a whole conversation with a user, \
against each property listed in <rubrics>.

What you are given:
- <agent_instructions>: the instructions each agent ran with (when recorded).
- <agent_tools>: the tools each agent could call, with their descriptions (when recorded).
- <conversation>: the conversation from its first turn to its last, one step per line. \
"USER TURN i" is the user's message in turn i; "AGENT (name) TURN i" is what that agent said \
in turn i; "(tool call)" lines give a tool's name and the arguments the agent passed; \
"(tool output)" lines give what the tool returned.

How to judge:
- Judge the agent's conduct over the whole conversation, not one reply. Read every turn: a \
later turn can put right an earlier mistake, and a mistake that is never put right counts \
against the property it concerns.
- Take the tool calls into account: which tools were called, with which arguments, whether \
their outputs were used correctly, and whether a call that was needed was missing.
- Verdict "yes": the agent's conduct fulfils the property, or the property does not apply to \
this conversation. Verdict "no": the property applies and the conduct does not fulfil it; \
then say in the rationale at which turn (or turns) it falls short.
- Judge each property on its own, give a verdict for every property, and add none of your own.

"""

_REPLY = """

Reply with a JSON object: "verdicts", one entry per property in the order given, each with \
"rubric_id" (copied from <rubrics>), "property" (the property's text, copied as written), \
"rationale" (a short explanation that names the turns it rests on) and "verdict" ("yes" or "no")."""


def reply_schema(ids: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "verdicts": {
                "type": "array",
                "description": "One entry per property, in the order given.",
                "items": {
                    "type": "object",
                    "properties": {
                        "rubric_id": {"type": "string", "enum": list(ids)},
                        "property": {"type": "string"},
                        "rationale": {"type": "string"},
                        "verdict": {"type": "string", "enum": ["yes", "no"]},
                    },
                    "required": ["rubric_id", "property", "rationale", "verdict"],
                },
            }
        },
        "required": ["verdicts"],
    }


# --- what the judge sees ---------------------------------------------------------------------


def _field(data: dict[str, Any], snake: str) -> Any:
    """A key of recorded ADK data in either casing."""
    if snake in data:
        return data[snake]
    head, *rest = snake.split("_")
    return data.get(head + "".join(w.title() for w in rest))


def _agents(inv: Invocation) -> list[tuple[str, dict[str, Any]]]:
    details = inv.app_details if isinstance(inv.app_details, dict) else {}
    agents = _field(details, "agent_details")
    if not isinstance(agents, dict):
        return []
    return [(str(name), info) for name, info in agents.items() if isinstance(info, dict)]


def _tool_lines(tool: Any) -> list[str]:
    """`- name: description` per function a tool declares; a built-in tool (no function
    declarations, e.g. google_search) by its kind."""
    if not isinstance(tool, dict):
        return []
    functions = _field(tool, "function_declarations")
    if functions is None and isinstance(tool.get("name"), str):  # a bare function declaration
        functions = [tool]
    if isinstance(functions, list) and functions:
        out = []
        for f in functions:
            if isinstance(f, dict) and f.get("name"):
                description = f.get("description")
                out.append(f"- {f['name']}: {description}" if description else f"- {f['name']}")
        return out
    kinds = [k for k, v in tool.items() if v is not None and k not in ("function_declarations", "functionDeclarations")]
    return [f"- {kind} (built-in tool)" for kind in kinds]


def agent_instructions(conversation: Sequence[Invocation]) -> str:
    """Each agent's instructions over the conversation, each distinct (agent, text) once."""
    seen: dict[str, None] = {}
    for inv in conversation:
        for name, info in _agents(inv):
            text = info.get("instructions")
            seen[f"Agent {name}:\n{text if isinstance(text, str) and text.strip() else '(no instructions)'}"] = None
    return "\n\n".join(seen)


def agent_tools(conversation: Sequence[Invocation]) -> str:
    """`Agent: name` and its tools, each agent and each tool line once."""
    by_agent: dict[str, dict[str, None]] = {}
    for inv in conversation:
        for name, info in _agents(inv):
            lines = by_agent.setdefault(name, {})
            tools = _field(info, "tool_declarations")
            for tool in tools if isinstance(tools, list) else []:
                for line in _tool_lines(tool):
                    lines[line] = None
    return "\n".join(f"Agent: {name}" + "".join(f"\n{line}" for line in lines) for name, lines in by_agent.items())


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if value else "{}"


def dialogue(conversation: Sequence[Invocation]) -> str:
    """The conversation as ADK's multi-turn judge reads it, one line per step."""
    lines: list[str] = []
    for i, inv in enumerate(conversation, 1):
        texts = [p.text for p in inv.user_content.parts or [] if p.text]
        if texts:
            lines.append(f"USER TURN {i}: {' '.join(texts)}")
        events = inv.intermediate_data.invocation_events if isinstance(inv.intermediate_data, InvocationEvents) else []
        for event in events:
            if event.content is None or not event.content.parts:
                continue
            role = "USER" if event.author.lower() == "user" else f"AGENT ({event.author})"
            texts = [p.text for p in event.content.parts if p.text]
            if texts:
                lines.append(f"{role} TURN {i}: {' '.join(texts)}")
            for p in event.content.parts:
                if p.function_call:
                    lines.append(f"{role} TURN {i} (tool call): {p.function_call.name}({_json(p.function_call.args)})")
                if p.function_response:
                    lines.append(f"{role} TURN {i} (tool output): {p.function_response.name} -> {_json(p.function_response.response)}")
        if inv.final_response is not None and inv.final_response.parts:
            texts = [p.text for p in inv.final_response.parts if p.text]
            if texts:
                author = events[0].author if events else "agent"
                lines.append(f"AGENT ({author}) TURN {i}: {' '.join(texts)}")
    return "\n".join(lines)


def rubrics_block(rubrics: Sequence[Rubric]) -> str:
    items = []
    for r in rubrics:
        item = {"rubric_id": r.rubric_id, "property": r.rubric_content.text_property}
        if r.type:
            item["type"] = r.type
        items.append(item)
    return block("rubrics", as_json(items))


def build_conversation_prompt(conversation: Sequence[Invocation], rubrics: Sequence[Rubric]) -> str:
    return _TASK + "\n\n".join([
        block("agent_instructions", agent_instructions(conversation) or "(none recorded)"),
        block("agent_tools", agent_tools(conversation) or "(none recorded)"),
        block("conversation", dialogue(conversation)),
        rubrics_block(rubrics),
    ]) + _REPLY


# --- reading replies ---------------------------------------------------------------------------

_TYPOGRAPHIC = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"})
_DECORATION = " *_`#>-\u2022\"'"


def normalized(text: Any) -> str:
    """Property text as ADK compares it: NFKC, plain quotes and dashes, single spaces, no
    markdown decoration at the ends, lower case."""
    if not isinstance(text, str):
        return ""
    text = unicodedata.normalize("NFKC", text).translate(_TYPOGRAPHIC)
    return " ".join(text.split()).strip(_DECORATION).lower()


def verdict_score(value: Any) -> Optional[float]:
    """ADK's reading of a verdict: containing "yes" is 1.0, else containing "no" is 0.0, else None."""
    if not isinstance(value, str):
        return None
    low = value.lower()
    return 1.0 if "yes" in low else 0.0 if "no" in low else None


@dataclass(frozen=True)
class Entry:
    """One rubric's answer in one sample."""

    rubric_id: str
    score: Optional[float]  # 1.0 yes, 0.0 no, None unclear
    rationale: str


def read_entries(value: Any, rubrics: Sequence[Rubric]) -> tuple[Entry, ...]:
    """A reply's answers, one per rubric it answered, in reply order (ADK's matching rules;
    see the module docstring). Raises ReplyError when the reply gives no verdicts."""
    items = value.get("verdicts") if isinstance(value, dict) else value
    if not isinstance(items, list):
        raise ReplyError("the reply has no 'verdicts' list")
    ids = {r.rubric_id for r in rubrics}
    by_text = {normalized(r.rubric_content.text_property): r.rubric_id for r in rubrics}
    found: dict[str, list[Entry]] = {}
    for item in items:
        if not isinstance(item, dict) or "verdict" not in item:
            raise ReplyError("an entry of the reply has no verdict")
        raw_id = item.get("rubric_id")
        rid = str(raw_id).strip() if isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool) else ""
        prop = item.get("property")
        matched = rid if rid in ids else by_text.get(normalized(unescape(prop) if isinstance(prop, str) else prop))
        if matched is None:
            continue  # ADK drops an answer to a property it did not ask about
        rationale = item.get("rationale")
        found.setdefault(matched, []).append(
            Entry(matched, verdict_score(item["verdict"]), rationale.strip() if isinstance(rationale, str) else ""))
    if not found:
        raise ReplyError("no entry of the reply answers one of the rubrics")
    out = []
    for rid, entries in found.items():
        scored = {e.score for e in entries if e.score is not None}
        if len(scored) > 1:
            raise ReplyError(f"rubric {rid}: contradicting verdicts")
        out.append(next((e for e in entries if e.score is not None), entries[0]))
    return tuple(out)


# --- samples, votes and early stop ------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """One judge sample: its answers, or why it has none; `raised` when the call failed."""

    entries: tuple[Entry, ...] = ()
    problem: Optional[str] = None
    raised: bool = False

    @property
    def score(self) -> Optional[float]:
        scores = [e.score for e in self.entries if e.score is not None]
        return mean(scores) if scores else None

    def reason(self) -> str:
        if self.problem is not None:
            return f"failed: {self.problem}"
        met = sum(1 for e in self.entries if e.score == 1.0)
        return f"{met} of {len(self.entries)} rubrics met"


def read_sample(reply: JudgeReply, rubrics: Sequence[Rubric]) -> Sample:
    if reply.error is not None:
        return Sample(problem=reply.error, raised=True)
    try:
        return Sample(entries=parse_reply(reply, lambda v: read_entries(v, rubrics)))
    except ReplyError as e:
        return Sample(problem=str(e))


def _counts(samples: Sequence[Sample], rid: str) -> tuple[int, int]:
    yes = sum(1 for s in samples for e in s.entries if e.rubric_id == rid and e.score == 1.0)
    no = sum(1 for s in samples for e in s.entries if e.rubric_id == rid and e.score == 0.0)
    return yes, no


def _all_failing(samples: Sequence[Sample], threshold: Optional[float]) -> bool:
    scores = [s.score for s in samples if s.score is not None]
    return threshold is not None and bool(scores) and all(x < threshold for x in scores)


def settled(n: int, samples: Sequence[Sample], ids: Sequence[str], threshold: Optional[float]) -> bool:
    """Whether the samples drawn fix the outcome of ADK's vote over all `n`: a call failed
    (NOT_EVALUATED), or every rubric's verdict is out of reach of the samples left (each
    votes at most once per rubric; a tie is no), and not every scored sample is below the
    threshold (only all of them can say that every sample failed)."""
    left = n - len(samples)
    if left <= 0 or any(s.raised for s in samples):
        return True
    if _all_failing(samples, threshold):
        return False
    for rid in ids:
        yes, no = _counts(samples, rid)
        if not (yes > no + left or yes + left <= no):
            return False
    return True


def next_round(n: int, samples: Sequence[Sample], ids: Sequence[str], threshold: Optional[float]) -> int:
    """How many samples to draw next: the fewest after which every verdict could be fixed
    (each rubric's votes going to its nearer verdict); all the rest while every scored
    sample is below the threshold."""
    left = n - len(samples)
    if _all_failing(samples, threshold):
        return max(left, 1)
    need = 1
    for rid in ids:
        yes, no = _counts(samples, rid)
        to_yes = max((no + left - yes) // 2 + 1, 0)  # yes + t > no + (left - t)
        to_no = max(-(-(yes + left - no) // 2), 0)  # yes + (left - t) <= no + t
        need = max(need, min(to_yes, to_no))
    return min(need, max(left, 1))


def _distinct(reasons: Sequence[str]) -> str:
    counts: dict[str, int] = {}
    for r in reasons:
        counts[r] = counts.get(r, 0) + 1
    return "; ".join(r if c == 1 else f"{r} (x{c})" for r, c in counts.items())


def vote(samples: Sequence[Sample], n: int) -> Outcome:
    """ADK's majority aggregation over the samples drawn (of `n` asked for)."""
    details: dict[str, Any] = {"samples": [s.score for s in samples], "reasons": [s.reason() for s in samples]}
    raised = [f"sample {j + 1} of {n}: {s.problem}" for j, s in enumerate(samples) if s.raised]
    if raised:
        return Outcome(None, details, error="a judge call failed, so the case is not evaluated (as in ADK): "
                       + _distinct(raised))
    buckets: dict[str, tuple[list[Entry], list[Entry], list[Entry]]] = {}
    for s in samples:
        for e in s.entries:
            yes, no, unclear = buckets.setdefault(e.rubric_id, ([], [], []))
            (yes if e.score == 1.0 else no if e.score == 0.0 else unclear).append(e)
    rubrics = []
    for rid, (yes, no, unclear) in buckets.items():
        kept = unclear[0] if not yes and not no else yes[0] if len(yes) > len(no) else no[0]
        rubrics.append({
            "rubric_id": rid,
            "verdict": "yes" if kept.score == 1.0 else "no" if kept.score == 0.0 else "no verdict",
            "score": kept.score,
            "rationale": kept.rationale,
            "votes": {"yes": len(yes), "no": len(no), "unclear": len(unclear)},
        })
    details["rubrics"] = rubrics
    scores = [r["score"] for r in rubrics if r["score"] is not None]
    if not scores:
        why = _distinct([s.problem for s in samples if s.problem]) or "no verdict was yes or no"
        return Outcome(None, details, error=f"the judge gave no usable verdict in {len(samples)} sample(s): {why}")
    return Outcome(mean(scores), details)


# --- the criterion -------------------------------------------------------------------------------


@criterion
class RubricMultiTurnTrajectoryQuality(RubricCriterion):
    """LLM judge: a whole conversation against rubrics (ADK `rubric_based_multi_turn_trajectory_quality_v1`)."""

    name: ClassVar[str] = "rubric_based_multi_turn_trajectory_quality_v1"
    prompt_version: ClassVar[str] = "1"
    rubric_type: ClassVar[str] = RUBRIC_TYPE
    scope: ClassVar[Scope] = "case"

    def effective_rubrics(self, actual: Invocation, expected: Optional[Invocation]) -> list[Rubric]:
        """The last turn's rubrics, as ADK settles them: the criterion's, then the typed ones
        of the case and the last expected invocation (an actual turn's identical copies once)."""
        chosen: dict[str, Rubric] = {r.rubric_id: r for r in self.rubrics}
        from_data: dict[str, Rubric] = {}
        other_type = 0
        for inv in (expected, actual):
            for r in (inv.rubrics or []) if inv is not None else []:
                if r.type != self.rubric_type:
                    other_type += 1
                    continue
                if not (r.rubric_content.text_property or "").strip():
                    raise RubricError(f"rubric '{r.rubric_id}' (eval case) has no rubric_content.text_property")
                if r.rubric_id in from_data:
                    if from_data[r.rubric_id] == r:
                        continue  # the same rubric copied onto the actual turn
                    raise RubricError(f"two different rubrics have rubric_id '{r.rubric_id}' in the eval case; rename one")
                if r.rubric_id in chosen:
                    raise RubricError(
                        f"rubric_id '{r.rubric_id}' is used by the criterion and by the eval case "
                        "(ADK refuses this too); rename one of them")
                from_data[r.rubric_id] = r
        chosen.update(from_data)
        if not chosen:
            hint = ""
            if other_type:
                hint = (f" ({other_type} rubric(s) on the case or invocation do not count here: "
                        f"only those with type {self.rubric_type} do, as in ADK)")
            raise RubricError("no rubrics: add rubrics to the criterion, or case rubrics with type "
                              f"{self.rubric_type}" + hint)
        return list(chosen.values())

    def build_prompt(self, actual: Invocation, rubrics: list[Rubric]) -> str:
        """The prompt for a one-turn conversation."""
        return build_conversation_prompt([actual], rubrics)

    def score_invocation(self, actual: Invocation, expected: Optional[Invocation]) -> Outcome:
        """A one-turn conversation."""
        return self.judge_conversation([actual], expected)

    def score_case(self, actual: list[Invocation], expected: Optional[list[Invocation]],
                   scenario: Optional[dict[str, Any]]) -> CaseOutcome:
        if not actual:
            return CaseOutcome(Outcome(None, error=reasons.NO_INVOCATIONS), [])
        last = self.judge_conversation(actual, expected[-1] if expected else None)
        return CaseOutcome(last, [Outcome(None) for _ in actual[:-1]] + [last])

    def judge_conversation(self, conversation: Sequence[Invocation], last_expected: Optional[Invocation]) -> Outcome:
        """One judgement of the whole conversation, on its last turn."""
        try:
            rubrics = self.effective_rubrics(conversation[-1], last_expected)
        except RubricError as e:
            return Outcome(None, error=str(e))
        prompt = build_conversation_prompt(conversation, rubrics)
        samples = self.draw(prompt, rubrics)
        return vote(samples, self.judge_model_options.num_samples)

    def draw(self, prompt: str, rubrics: Sequence[Rubric]) -> list[Sample]:
        """The samples, in sample order: all `num_samples`, or with early stop a prefix
        drawn in rounds until `settled`."""
        runtime = self.runtime
        n = self.judge_model_options.num_samples
        ids = [r.rubric_id for r in rubrics]
        schema = reply_schema(ids)
        accept = readable(lambda v: read_entries(v, rubrics))

        def ask(j: int):
            return lambda: read_sample(runtime.ask(self.request(prompt, schema, j), accept), rubrics)

        if not self.early_stopping():
            return runtime.map([ask(j) for j in range(n)])
        samples: list[Sample] = []
        stop = self.stop_threshold()
        while not settled(n, samples, ids, stop):
            k = next_round(n, samples, ids, stop)
            samples += runtime.map([ask(j) for j in range(len(samples), len(samples) + k)])
        return samples
