"""JSON that someone else chose (a fork's artifact, an agent's output): limits on its depth, text and memory, and text safe to write.

A fork chooses every byte of the `inference.jsonl` that the trusted publish job reads, so
what reading it costs must be bounded by the file's size, not by its shape: a line of
`[{},{},...]` is three bytes per object and each object is a dict or a model of hundreds of
bytes. `cost(raw)` bounds, before the line is parsed, the memory it takes once parsed and
validated; `checked(value)` then refuses a value nested deeper or holding longer text than
any agent's output needs (what would fail later, deep in serialization, as an internal
error), and replaces lone surrogates (`"\\ud800"` is valid JSON but no UTF-8 file can hold
it) with U+FFFD, so that writing the results never fails on the text.
"""

from __future__ import annotations

import re
from typing import Any, Optional

MAX_DEPTH = 64  # objects and lists inside one another in one record (an invocation's own structure takes about 11)
MAX_TEXT = 1024 * 1024  # characters in one string: an answer, a tool argument, a key

# cost(): bytes of memory, at most, per object (a model of ADK's, or a dict parsed and then
# validated into another), per list, per key (a key that this evalgate does not know also
# costs an error record while it is dropped), per other value (a malformed one, an error
# record in pydantic), and per byte of the line (text: up to 4 bytes a character, held
# parsed and validated). A reader also lists the errors of one line at a time, at most
# ERROR_COST each (evalgate.trusted reads at most MAX_RECORD_ERRORS of them). Measured on the costliest
# shapes (a list of empty parts, each a model; empty objects in tool arguments; thousands of
# unknown keys), at 1.6 times the worst seen or more; tests/test_fork_cost.py and the
# fuzzer check that the bound holds.
OBJECT_COST = 900
LIST_COST = 200
KEY_COST = 1000
VALUE_COST = 200
BYTE_COST = 16
ERROR_COST = 1500

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_SURROGATE_TEXT_HINT = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def cost(raw: bytes) -> int:
    """An upper bound, in bytes, of the memory one JSON line takes once parsed and validated
    (see OBJECT_COST), from its bytes alone: counted in C, without parsing it."""
    bare = _STRING.sub(b"", raw)  # strings hold no structure; their text is counted by length
    # A key comes before each ":"; a value follows "[", "," or ":" (or starts the line).
    keys = bare.count(b":")
    values = 1 + bare.count(b"[") + bare.count(b",") + keys
    return OBJECT_COST * bare.count(b"{") + LIST_COST * bare.count(b"[") + KEY_COST * keys + VALUE_COST * values + BYTE_COST * len(raw)


def checked(value: Any, max_depth: Optional[int] = MAX_DEPTH, max_text: Optional[int] = MAX_TEXT) -> tuple[Any, Optional[str]]:
    """`value` (parsed JSON) with lone surrogates replaced by U+FFFD, and why it is beyond the
    limits (MAX_DEPTH, MAX_TEXT; None: no limit), or None. Iterative: no depth makes it recurse."""
    if isinstance(value, str):
        return writable(value), _too_long("a text", value, max_text)
    stack: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        node, depth = stack.pop()
        if max_depth is not None and depth > max_depth:
            return value, f"nested deeper than {max_depth} levels"
        items = node.items() if isinstance(node, dict) else enumerate(node)
        renamed = []
        for key, item in items:
            if isinstance(item, str):
                if max_text is not None and len(item) > max_text:
                    return value, _too_long("a text", item, max_text)
                if _SURROGATE.search(item):
                    node[key] = writable(item)
            elif isinstance(item, (dict, list)):
                stack.append((item, depth + 1))
            if isinstance(key, str):
                if max_text is not None and len(key) > max_text:
                    return value, _too_long("a key", key, max_text)
                if _SURROGATE.search(key):
                    renamed.append(key)
        for key in renamed:  # after the loop: a dict must not change size while it is read
            node[writable(key)] = node.pop(key)
    return value, None


def _too_long(what: str, text: str, limit: Optional[int]) -> Optional[str]:
    if limit is None or len(text) <= limit:
        return None
    return f"{what} of {len(text):,} characters, over the limit of {limit:,}"


def without_surrogates(value: Any) -> Any:
    """`value` (parsed JSON) with lone surrogates replaced by U+FFFD, at any depth."""
    return checked(value, None, None)[0]


def writable(text: str) -> str:
    """`text` with each lone surrogate (which UTF-8 cannot encode) replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def may_hold_surrogates(text: str) -> bool:
    """Whether JSON text may decode to a lone surrogate (it has a `\\udXXX` escape, or one)."""
    return _SURROGATE_TEXT_HINT.search(text) is not None
