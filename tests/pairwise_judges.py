"""Fake pairwise judges with known preferences, as `FakeGemini` responders (tests and bench/bench_pairwise.py).

Each reads the two final answers out of evalgate's pairwise prompt (the blocks
`<final_answer assistant="A">` and `"B"`) and answers in the requested JSON shape
{"reason", "better"}. What they prefer depends only on the text they are shown and,
for the random ones, a seeded generator: never on which side is the pull request.
"""

from __future__ import annotations

import random
import re
import threading
from typing import Any, Callable

from fake_gemini import prompt_text

_ANSWER = re.compile(r'<final_answer assistant="(A|B)">\n(.*?)\n</final_answer>', re.S)
KEY = re.compile(r"(ORD-\d+|TRK\d+|#\d+)")


def answers(body: Any) -> dict[str, str]:
    """{"A": text, "B": text} from a pairwise request's prompt."""
    found = dict(_ANSWER.findall(prompt_text(body)))
    assert set(found) == {"A", "B"}, "not a pairwise prompt"
    return found


def _keys(text: str) -> int:
    return len(set(KEY.findall(text)))


def _reply(better: str, reason: str) -> dict[str, str]:
    return {"reason": reason, "better": better}


def always(label: str) -> Callable[[Any], dict]:
    """A judge that always prefers one position, whatever it is shown."""
    return lambda body: (answers(body), _reply(label, f"{label} reads better."))[1]


def equal_paraphrases() -> Callable[[Any], dict]:
    """Prefers the answer that keeps more of the key details (order number, tracking id);
    says "equal" when they keep as many (paraphrases)."""

    def respond(body: Any) -> dict:
        a = answers(body)
        ka, kb = _keys(a["A"]), _keys(a["B"])
        if ka == kb:
            return _reply("equal", "Both say the same thing.")
        return _reply("A" if ka > kb else "B", "It keeps the order number and the tracking id.")

    return respond


def detail_judge(seed: int, position_bias: float = 0.0) -> Callable[[Any], dict]:
    """Prefers the answer that keeps more of the key details; between paraphrases (as many
    details) it picks at random. With `position_bias` b it answers "A" outright with
    probability b (whatever it is shown) before looking: b = 0.4 makes it prefer position A
    70% of the time between paraphrases."""
    rng = random.Random(seed)
    lock = threading.Lock()

    def respond(body: Any) -> dict:
        a = answers(body)
        with lock:
            biased, coin = rng.random() < position_bias, rng.random() < 0.5
        if biased:
            return _reply("A", "The first answer is better.")
        ka, kb = _keys(a["A"]), _keys(a["B"])
        if ka == kb:
            return _reply("A" if coin else "B", "Slightly clearer.")
        return _reply("A" if ka > kb else "B", "It keeps the order number and the tracking id.")

    return respond


def cut_off(text: str = '{"reason": "Both answers give the order status, but the first') -> Any:
    """A reply stopped at the output token limit: finishReason MAX_TOKENS, the JSON cut off."""
    from fake_gemini import Reply

    return Reply(200, {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "MAX_TOKENS",
                                       "index": 0}], "usageMetadata": {"promptTokenCount": 10, "totalTokenCount": 10}})


def biased_judge(seed: int, longer: float = 0.25, position: float = 0.15, cut: float = 0.03) -> Callable[[Any], Any]:
    """A judge with the biases published for modern judges (issue 37): it prefers the answer
    that keeps more of the key details; between answers that keep as many it says "equal",
    except that with chance `longer` it prefers the longer one; with chance `position` it
    answers "A" whatever it is shown; and a share `cut` of its replies are cut off at the
    output token limit (`cut_off`)."""
    rng = random.Random(seed)
    lock = threading.Lock()

    def respond(body: Any) -> Any:
        a = answers(body)
        with lock:
            r_cut, r_pos, r_len = rng.random(), rng.random(), rng.random()
        if r_cut < cut:
            return cut_off()
        if r_pos < position:
            return _reply("A", "The first answer is better.")
        ka, kb = _keys(a["A"]), _keys(a["B"])
        if ka != kb:
            return _reply("A" if ka > kb else "B", "It keeps the order number and the tracking id.")
        if r_len < longer and len(a["A"]) != len(a["B"]):
            return _reply("A" if len(a["A"]) > len(a["B"]) else "B", "It is more thorough.")
        return _reply("equal", "Both say the same thing.")

    return respond
