"""`response_match_score`: ROUGE-1 F-measure of the final response against the reference.

Semantics follow ADK 2.13: the response text is the text parts joined with newlines; the
score is rouge-score's ROUGE-1 F-measure with Porter stemming, computed over ADK's
Unicode-aware tokens:

- the text is NFKC-normalised and lowercased;
- Han (U+4E00-9FFF), Hiragana, Katakana and Hangul syllables are one token per character;
- Thai, Lao, Khmer and Myanmar are split into grapheme clusters (a base character plus the
  combining marks after it);
- other Unicode letters, digits and combining marks form words; everything else separates;
- a pure-ASCII word goes through rouge-score's own tokenizer (stemmed when longer than 3).

Two empty texts score 0.0, as in rouge-score.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import threading
import types
import unicodedata
from collections import Counter
from functools import lru_cache
from itertools import chain
from typing import Any, Callable, ClassVar

from evalgate.adk import Invocation
from evalgate.criteria.base import Criterion, Outcome, criterion

# The exact code-point ranges ADK 2.13 treats specially; parity depends on them.
_PER_CHARACTER = ((0x4E00, 0x9FFF), (0x3040, 0x309F), (0x30A0, 0x30FF), (0xAC00, 0xD7AF))
_CLUSTERED = ((0x0E00, 0x0E7F), (0x0E80, 0x0EFF), (0x1780, 0x17FF), (0x1000, 0x109F))


def _in(ranges: tuple[tuple[int, int], ...], code: int) -> bool:
    return any(lo <= code <= hi for lo, hi in ranges)


class _SpacingTable(dict):
    """str.translate table, filled lazily: what each character becomes before splitting."""

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        is_mark = unicodedata.category(ch).startswith("M")
        if _in(_PER_CHARACTER, code):
            out = f" {ch} "
        elif _in(_CLUSTERED, code):
            out = ch if is_mark else f" {ch}"
        elif ch.isalnum() or is_mark:
            out = ch
        else:
            out = " "
        self[code] = out
        return out


_SPACING = _SpacingTable()


def _porter_stemmer() -> Any:
    """nltk's PorterStemmer, the one rouge-score stems with, loaded without running nltk's
    package `__init__`: that imports most of nltk and scipy (about 2 s of a run's start)
    for one 700-line module. The stemmer's own code is nltk's, unchanged; if this nltk's
    porter module needs more of nltk than it did, the ordinary import does it."""
    before = set(sys.modules)
    if "nltk" not in before:
        spec = importlib.util.find_spec("nltk")
        if spec is not None and spec.submodule_search_locations:
            root = list(spec.submodule_search_locations)[0]
            try:
                for name, folder in (("nltk", root), ("nltk.stem", os.path.join(root, "stem"))):
                    package = types.ModuleType(name)
                    package.__path__ = [folder]
                    sys.modules[name] = package
                return importlib.import_module("nltk.stem.porter").PorterStemmer()
            except Exception:  # noqa: BLE001 - whatever went wrong, the ordinary import below decides
                pass
            finally:  # nothing of nltk stays half-initialised for whoever imports it next
                for name in set(sys.modules) - before:
                    if name == "nltk" or name.startswith("nltk."):
                        del sys.modules[name]
    from nltk.stem.porter import PorterStemmer

    return PorterStemmer()


_LOADING = threading.Lock()  # judge criteria score cases on several threads


@lru_cache(maxsize=1)
def _ascii_tokenizer() -> Callable[[str], list[str]]:
    """rouge-score's DefaultTokenizer(use_stemmer=True).tokenize, the same two calls."""
    from rouge_score import tokenize  # its own imports are the standard library and six

    with _LOADING:  # one thread at a time puts its stand-ins into sys.modules
        stemmer = _porter_stemmer()
    return lambda text: tokenize.tokenize(text, stemmer)


class _WordTable(dict):
    """word -> its tokens, filled lazily: an ASCII word through rouge-score's stemming
    tokenizer, any other word as it is. Looked up from C (map + dict), so a text's
    tokens cost no Python call per word once its words have been seen."""

    LIMIT = 500_000  # distinct words kept; past that the table starts afresh

    def __missing__(self, word: str) -> tuple[str, ...]:
        if len(self) >= self.LIMIT:
            self.clear()
        tokens = tuple(_ascii_tokenizer()(word)) if word.isascii() else (word,)
        self[word] = tokens
        return tokens


_WORDS = _WordTable()


# Fast paths with the same tokens. A per-character script's characters are tokens on
# their own, so they can be counted directly and replaced by spaces without changing the
# rest; and ASCII needs no Unicode table (ASCII letters and digits are words, the rest
# separates), so a bytes table does it.
_PER_CHARACTER_RE = re.compile("[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _PER_CHARACTER) + "]")
_ASCII_SPACING = bytes(c if (0x30 <= c <= 0x39 or 0x61 <= c <= 0x7A) else 0x20 for c in range(256))


def _words(lowered: str) -> list[str]:
    if lowered.isascii():
        return lowered.encode("ascii").translate(_ASCII_SPACING).decode("ascii").split()
    return lowered.translate(_SPACING).split()


def _token_counts(text: str) -> Counter:
    lowered = unicodedata.normalize("NFKC", text).lower()
    singles = [] if lowered.isascii() else _PER_CHARACTER_RE.findall(lowered)  # those scripts are not ASCII
    if singles:
        lowered = _PER_CHARACTER_RE.sub(" ", lowered)
    counts = Counter(singles)
    counts.update(chain.from_iterable(map(_WORDS.__getitem__, _words(lowered))))
    return counts


def tokenize(text: str) -> list[str]:
    """ADK 2.13's Unicode-aware ROUGE tokens for `text`, in order."""
    words = unicodedata.normalize("NFKC", text).lower().translate(_SPACING).split()
    return list(chain.from_iterable(map(_WORDS.__getitem__, words)))


@lru_cache(maxsize=2048)  # repeated texts (a reference against each run, a stock answer) come close together
def _counts(text: str) -> tuple[Counter, int]:
    counts = _token_counts(text)
    return counts, sum(counts.values())


def rouge1(reference: str, candidate: str) -> tuple[float, float, float]:
    """(precision, recall, F-measure) of ROUGE-1, as rouge-score computes them."""
    ref, n_ref = _counts(reference)
    cand, n_cand = _counts(candidate)
    common = ref.keys() & cand.keys()
    # Sum of min counts over shared tokens (integers, so the order does not matter).
    overlap = sum(map(min, map(ref.__getitem__, common), map(cand.__getitem__, common)))
    precision = overlap / max(n_cand, 1)
    recall = overlap / max(n_ref, 1)
    f = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return precision, recall, f


@criterion
class ResponseMatch(Criterion):
    """ROUGE-1 F-measure of the final response against the reference (ADK `response_match_score`)."""

    name: ClassVar[str] = "response_match_score"
    reads: ClassVar[frozenset[str]] = frozenset({"final_response"})

    def score_invocation(self, actual: Invocation, expected: Invocation | None) -> Outcome:
        assert expected is not None
        precision, recall, f = rouge1(expected.final_text(), actual.final_text())
        return Outcome(f, {"precision": precision, "recall": recall})
