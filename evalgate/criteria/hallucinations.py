"""`hallucinations_v1`: an LLM judge checks each sentence of the response against what the agent knew.

ADK 2.13 semantics, our own prompts. Each response text is checked in two requests: a
segmenter splits it into sentences, then a validator labels each sentence supported,
unsupported, contradictory, disputed or not_applicable against the context: the developer
instructions and tool definitions (when the data has them), the user prompt, and the agent's
activity before the response (its tool calls with their results and what it said). A
response scores the share of its sentences labelled supported or not_applicable.

What is checked: the final response, and with `evaluate_intermediate_nl_responses` also each
text the agent produced before it, each against the activity that preceded it. A sample
scores the mean over the responses it could check (ADK's per-invocation score); the
invocation scores the mean over its parsed samples (ADK makes one pass and ignores
`num_samples`: with `num_samples: 1` the two agree). A check fails when a reply cannot be
read or leaves a sentence unlabelled; a sample in which every check failed is a failed
sample, and an invocation without a parsed sample, or without any response text, is
NOT_EVALUATED with the reason.

Unlike ADK, tool calls recorded in the older `intermediate_data` shape (tool_uses and
tool_responses) are context too; that shape does not say where intermediate texts fall
among the calls, so there every call counts as before every intermediate text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional

from pydantic import Field

from evalgate import reasons
from evalgate.adk import FunctionCall, FunctionResponse, IntermediateData, Invocation, InvocationEvents
from evalgate.criteria.base import Outcome, criterion
from evalgate.criteria.judging import (
    JudgeCriterion,
    ReplyError,
    short_of_quorum,
    as_json,
    block,
    context_blocks,
    mean,
    parse_reply,
    readable,
    text_field,
    unescape,
    word,
)

POSITIVE = ("supported", "not_applicable")
NEGATIVE = ("unsupported", "contradictory", "disputed")
LABELS = POSITIVE + NEGATIVE

_SEGMENT = """\
Task: split the text in <text> into sentences, so that each can be fact-checked on its own.

- Copy each sentence exactly as written: the same words, language and numbers. Do not \
translate, correct, shorten or merge sentences.
- Keep the original order and cover the whole text.
- A list item, a table row and a heading each count as a sentence; a code block is one sentence.

"""

_SEGMENT_REPLY = """

Reply with a JSON object: "sentences", the list of sentences as strings."""

SEGMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"sentences": {"type": "array", "items": {"type": "string"}}},
    "required": ["sentences"],
}

_VALIDATE = """\
Task: label each sentence in <sentences>, which the agent wrote as its response, against the \
context the agent had: the developer instructions and tool definitions when given, the user's \
request, and <agent_activity> (the tool calls the agent made before this response with their \
results, and what it said before it).

Labels:
- "supported": the context states the claim or it follows directly from the context.
- "unsupported": the sentence claims something (a fact, number, name, date or result) that the \
context neither states nor implies.
- "contradictory": the context says otherwise.
- "disputed": the context holds evidence both for and against the claim.
- "not_applicable": the sentence makes no claim to check, such as a greeting, a question to the \
user, an offer of help, or a restatement of the request.

Simple reasoning over the context is allowed (arithmetic on its numbers, the plain meaning of \
words); specific facts from outside the context are not evidence.

"""

_VALIDATE_REPLY = """

Reply with a JSON object: "labels", one entry per sentence, each with "index" (copied from \
<sentences>), "label", "rationale" (short) and "evidence" (a short quote from the context that \
supports or contradicts the sentence, or "" when there is none)."""

VALIDATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "labels": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "index": {"type": "integer"},
                    "label": {"type": "string", "enum": list(LABELS)},
                    "rationale": {"type": "string"},
                    "evidence": {"type": "string"},
                },
                "required": ["index", "label", "rationale", "evidence"],
            },
        }
    },
    "required": ["labels"],
}


@dataclass
class _Event:
    """One step of the agent's activity, in either intermediate-data shape."""

    author: str
    texts: list[str] = field(default_factory=list)
    calls: list[FunctionCall] = field(default_factory=list)
    results: list[FunctionResponse] = field(default_factory=list)

    def as_data(self) -> dict[str, Any]:
        out: dict[str, Any] = {"author": self.author}
        if self.texts:
            out["said"] = "\n".join(self.texts)
        if self.calls:
            out["tool_calls"] = [{"tool": c.name, "args": c.args} for c in self.calls]
        if self.results:
            out["tool_results"] = [{"tool": r.name, "result": r.response} for r in self.results]
        return out


def _events(inv: Invocation) -> list[_Event]:
    data = inv.intermediate_data
    if isinstance(data, InvocationEvents):
        events = []
        for e in data.invocation_events:
            parts = e.content.parts if e.content and e.content.parts else []
            events.append(_Event(
                author=e.author,
                texts=[p.text for p in parts if p.text],
                calls=[p.function_call for p in parts if p.function_call],
                results=[p.function_response for p in parts if p.function_response],
            ))
        return events
    if isinstance(data, IntermediateData):
        events = []
        if data.tool_uses or data.tool_responses:
            events.append(_Event(author="agent", calls=list(data.tool_uses), results=list(data.tool_responses)))
        for author, parts in data.intermediate_responses:
            texts = [p.text for p in parts if p.text]
            if texts:
                events.append(_Event(author=author, texts=texts))
        return events
    return []


@dataclass
class Step:
    """One response text to check, with the context it is checked against."""

    text: str
    final: bool
    context: str


def segment_prompt(text: str) -> str:
    return _SEGMENT + block("text", text) + _SEGMENT_REPLY


def validate_prompt(context: str, sentences: list[str]) -> str:
    listed = as_json([{"index": i, "sentence": s} for i, s in enumerate(sentences)])
    return _VALIDATE + context + "\n\n" + block("sentences", listed) + _VALIDATE_REPLY


def read_sentences(value: Any) -> list[str]:
    items = value.get("sentences") if isinstance(value, dict) else value
    if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
        raise ReplyError("the reply has no 'sentences' list of strings")
    # The segmenter copies escaped text; the validator gets the sentences as written.
    sentences = [unescape(s).strip() for s in items]
    sentences = [s for s in sentences if s]
    if not sentences:
        raise ReplyError("no sentences in the reply")
    return sentences


def read_labels(value: Any, n: int) -> list[dict[str, str]]:
    """One {label, rationale, evidence} per sentence index 0..n-1; all of them, or the check fails."""
    items = value.get("labels") if isinstance(value, dict) else value
    if not isinstance(items, list):
        raise ReplyError("the reply has no 'labels' list")
    found: dict[int, dict[str, str]] = {}
    for item in items:
        if not isinstance(item, dict):
            continue
        index = item.get("index")
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n:
            continue
        label = word(item.get("label"))
        if label not in LABELS:
            raise ReplyError(f"sentence {index}: unknown label {item.get('label')!r}")
        if index in found and found[index]["label"] != label:
            raise ReplyError(f"sentence {index}: two different labels")
        found.setdefault(index, {"label": label, "rationale": text_field(item, "rationale"),
                                 "evidence": text_field(item, "evidence")})
    missing = [str(i) for i in range(n) if i not in found]
    if missing:
        raise ReplyError("no label for sentence " + ", ".join(missing))
    return [found[i] for i in range(n)]


@dataclass
class Check:
    """One response checked in one sample: its sentences with labels, or why it failed."""

    sentences: list[str] = field(default_factory=list)
    labels: list[dict[str, str]] = field(default_factory=list)
    error: Optional[str] = None

    @property
    def score(self) -> float:
        return mean([1.0 if x["label"] in POSITIVE else 0.0 for x in self.labels])


def combine(steps: list[Step], checks: list[list[Check]]) -> Outcome:
    """checks[k][j]: step k in sample j. Sample score = mean over its good checks; invocation
    score = mean over parsed samples."""
    n = len(checks[0]) if checks else 0
    samples: list[Optional[float]] = []
    reasons: list[str] = []
    failures: list[str] = []
    sentences: list[dict[str, Any]] = []
    for j in range(n):
        good = [checks[k][j] for k in range(len(steps)) if checks[k][j].error is None]
        bad = [f"response {k}: {checks[k][j].error}" for k in range(len(steps)) if checks[k][j].error is not None]
        if bad:  # a response left unchecked must not drop out of the score: the sample failed
            samples.append(None)
            reason = "; ".join(bad)
            reasons.append(f"failed: {reason}")
            failures.append(reason)
            continue
        samples.append(mean([c.score for c in good]))
        total = sum(len(c.labels) for c in good)
        ok = sum(1 for c in good for x in c.labels if x["label"] in POSITIVE)
        reasons.append("; ".join([f"{ok} of {total} sentences supported or not applicable", *bad]))
    for k, step in enumerate(steps):
        for j in range(n):
            check = checks[k][j]
            for text, x in zip(check.sentences, check.labels):
                sentences.append({"response": k, "final": step.final, "sample": j, "sentence": text, **x})
    details = {"samples": samples, "reasons": reasons, "sentences": sentences}
    why = short_of_quorum(samples, failures)
    if why:
        return Outcome(None, details, error=why)
    return Outcome(mean([s for s in samples if s is not None]), details)


@criterion
class Hallucinations(JudgeCriterion):
    """LLM judge: share of response sentences the context supports (ADK `hallucinations_v1`)."""

    name: ClassVar[str] = "hallucinations_v1"
    prompt_version: ClassVar[str] = "1"
    needs_expected: ClassVar[bool] = False

    evaluate_intermediate_nl_responses: bool = Field(
        default=False, description="Also check the text the agent produced before its final response."
    )

    def steps(self, inv: Invocation) -> list[Step]:
        events = _events(inv)
        head = context_blocks(inv)

        def context(before: list[_Event]) -> str:
            activity = [e.as_data() for e in before if e.texts or e.calls or e.results]
            shown = as_json(activity) if activity else "(nothing: no tool calls and no earlier text)"
            return "\n\n".join([*head, block("agent_activity", shown)])

        out = []
        if self.evaluate_intermediate_nl_responses:
            for i, event in enumerate(events):
                for text in event.texts:
                    out.append(Step(text, final=False, context=context(events[:i])))
        final = inv.final_text()
        if final.strip():
            out.append(Step(final, final=True, context=context(events)))
        return out

    def check(self, step: Step, sample: int) -> Check:
        """Segment, then validate: two requests, in order."""
        runtime = self.runtime
        reply = runtime.ask(self.request(segment_prompt(step.text), SEGMENT_SCHEMA, sample), readable(read_sentences))
        try:
            sentences = parse_reply(reply, read_sentences)
        except ReplyError as e:
            return Check(error=f"segmenter: {e}")
        reply = runtime.ask(
            self.request(validate_prompt(step.context, sentences), VALIDATE_SCHEMA, sample),
            readable(lambda v: read_labels(v, len(sentences))),
        )
        try:
            labels = parse_reply(reply, lambda v: read_labels(v, len(sentences)))
        except ReplyError as e:
            return Check(error=f"validator: {e}")
        return Check(sentences, labels)

    def score_invocation(self, actual: Invocation, expected: Optional[Invocation]) -> Outcome:
        steps = self.steps(actual)
        if not steps:
            return Outcome(None, error=reasons.NO_RESPONSE_TEXT)
        n = self.judge_model_options.num_samples
        flat = self.runtime.map([lambda k=k, j=j: self.check(steps[k], j) for k in range(len(steps)) for j in range(n)])
        return combine(steps, [flat[k * n:(k + 1) * n] for k in range(len(steps))])
