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
