"""The fixed reasons a criterion is NOT_EVALUATED: written in English (results.json and JUnit
are machine-read) and shown in the reader's language by the reports (`shown`).

The code that makes a reason formats one of these English messages (`NO_ACTUAL`,
`AGENT_FAILED.format(error=...)`); a report passes the stored text through `shown`, which
recognises the messages (also inside the `turn 2: ...`, `run 1: ...` and `; ` joins the engine
builds) and translates them, leaving any other text, and every field but a nested reason
(the exception's own words, a file name), as it came. A results.json written before a
message existed, or by another version, simply shows its English.
"""

from __future__ import annotations

import re
import string
from functools import lru_cache
from typing import Optional

from evalgate import i18n
from evalgate.i18n import mark, p_

# The engine (evalgate/engine.py)
AGENT_FAILED = mark("the agent run failed: {error}")
NO_ACTUAL = mark("no actual outputs for this case")
NO_SCENARIO = mark("needs a conversation_scenario (a simulated conversation), and this case has none")
NO_EXPECTED = mark("needs an expected conversation, and this case has none")
NO_TRACE = mark("scores traces, and this case has none")
COUNT_MISMATCH = mark("{actual} actual invocations for {expected} expected; they must agree")
NOTHING = mark("nothing to evaluate")
NOT_EVALUATED = mark("not evaluated")
TURN = mark("turn {n}: {reason}")
RUN = mark("run {n}: {reason}")
SOME_TURNS = mark("{missing} of {total} turns not evaluated: {reason}")
# The judges (evalgate/judge/transport.py, evalgate/criteria/)
NO_JUDGE_CREDENTIALS = mark(
    "no judge credentials: set GOOGLE_API_KEY or GEMINI_API_KEY, or GOOGLE_GENAI_USE_VERTEXAI "
    "with GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION"
)
NO_JUDGE_CREDENTIALS_DETAIL = mark(
    "no judge credentials: set GOOGLE_API_KEY or GEMINI_API_KEY, or GOOGLE_GENAI_USE_VERTEXAI "
    "with GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION ({error})"
)
NO_VERTEX_CREDENTIALS = mark("no Vertex AI credentials: {error}")
RUBRICS_MET = mark("{met} of {total} rubrics met")
SAMPLE_FAILED = mark("failed: {error}")
ONE_SAMPLE_FAILED = mark("the judge sample failed: {error}")
ALL_SAMPLES_FAILED = mark("all {n} judge samples failed: {error}")
SHORT_OF_QUORUM = mark("only {usable} of {n} judge samples were usable (more than half are needed); {error}")
JUDGE_CALL_FAILED = mark("a judge call failed, so the case is not evaluated (as in ADK): {error}")
NO_USABLE_VERDICT = mark("the judge gave no usable verdict in {n} sample(s): {error}")
NO_SCORE = mark("the judge gave no score")
NO_INVOCATIONS = mark("no invocations to judge")
CASE_NO_INVOCATIONS = mark("the case has no invocations to judge")
SERVICE_NO_SCORE = mark("the evaluation service returned no score for {metric}")
NO_RESPONSE_TEXT = mark("nothing to check: the invocation has no response text")
NOT_AN_ACLI_CASE = mark("an agents-cli metric scores agents-cli dataset cases and traces; this case is an ADK eval case")
NO_USER_TEXT = mark("the invocation has no user text: coherence is rated against the prompt")
NO_FINAL_TEXT = mark("the invocation has no final response text to rate")
NO_COHERENCE = mark("the evaluation service returned no coherence rating")
COHERENCE_OUT_OF_RANGE = mark("the evaluation service returned coherence rating {score}, outside [1, 5]")

# Fields that hold a reason themselves (translated in turn); every other field is kept.
_NESTED = {"reason"}
_ALL = [value for name, value in list(globals().items()) if name.isupper() and isinstance(value, str)]


@lru_cache(maxsize=None)
def _patterns() -> list[tuple[str, re.Pattern[str]]]:
    """Each message as an anchored pattern, longest first (a message that another one begins
    with, like the credentials one without its detail, must not win over the longer)."""
    out = []
    for message in sorted(_ALL, key=len, reverse=True):
        parts, names = [], []
        for literal, name, _spec, _conv in string.Formatter().parse(message):
            parts.append(re.escape(literal))
            if name is not None:
                parts.append(r"(?P<%s>\d[\d,]*)" % name if name in ("n", "missing", "total", "met", "usable", "actual", "expected")
                             else r"(?P<%s>.+)" % name)
                names.append(name)
        out.append((message, re.compile("".join(parts) + r"\Z", re.S)))
    return out


def _one(text: str) -> Optional[str]:
    for message, pattern in _patterns():
        m = pattern.match(text)
        if m:
            fields = {k: (shown(v) if k in _NESTED else v) for k, v in m.groupdict().items()}
            return i18n._(message, **fields)
    return None


_ITEM = re.compile(r"(?:turn|run|sample) \d+(?: of \d+)?: ")


def shown(text: Optional[str]) -> str:
    """A stored reason in the language of the moment (English: as stored)."""
    if not text or i18n.current() == "en":
        return text or ""
    whole = _one(text)
    if whole is not None:
        return whole
    # The engine joins several turns' or runs' reasons with "; ": split where an item starts.
    pieces = text.split("; ")
    items: list[str] = []
    for piece in pieces:
        if items and not _ITEM.match(piece):
            items[-1] += "; " + piece
        else:
            items.append(piece)
    if len(items) < 2:
        return text
    return p_("between reasons", "; ").join(_one(item) or item for item in items)
