"""Filters that make untrusted text safe to print in the report's Markdown (PR comment, job summary,
tracking issue).

Agent text, eval ids, suite and criterion names, tool names and arguments, and the
comparison's reasons (which quote them) are untrusted. The templates run with autoescape
off, and every value they print must come out of exactly one of these filters, chosen by
where it lands (the environment's `finalize` refuses any other string, so a forgotten
filter is an error, not a hole):

- `md`: Markdown inline text: table cells, list items, headings, paragraphs. One line;
  `\\ ` * _ [ ] | ~ $` backslash-escaped (no emphasis, code, links, images, table cells,
  math); `& < >` as entities (no HTML, no HTML comments, no quote); a leading `#`, `+`,
  `-` or `1. ` escaped (no heading, list or rule); mentions and references neutralized.
- `html`: text inside an HTML element on a raw-HTML line (`<summary>`), where Markdown is
  not parsed and backslashes would show: one line, `& < > "` as entities, and `\\ ` [ ] $`
  as numeric entities too (shown the same; no link, code or math should a renderer parse
  Markdown there after all); mentions and references neutralized.
- `fenced(info)`: a whole fenced code block around the text: verbatim, since GitHub links
  nothing and parses nothing inside code; the fence is one backtick longer than the
  longest backtick run in the text, so no line of it can close the block, and `<!--`
  gets a WORD JOINER after `<!` so no text can forge the comment marker.
- `url`: a link destination: http(s) only, with spaces, quotes, brackets and parentheses
  percent-encoded.

In all of them, characters that hide or reorder text (Unicode format characters such as
U+200B, U+202E, U+2066, tag characters; control characters but newline and tab; runs of
variation selectors) are shown as `{U+202E}`. Mentions (`@user`, `@org/team`), issue
references (`#123`, `GH-123`) and bare autolinks (`https://`, `www.`) get a WORD JOINER
(U+2060) after `@`, `#`, `GH-`, `:` or `www`, which GitHub does not link and a reader does
not see. Everything else, Korean and Japanese included, is kept as written.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Optional
from urllib.parse import quote


class Markdown(str):
    """Text safe to place in the report: a filter's output, or text we composed ourselves."""


class UnfilteredText(TypeError):
    """A template printed a string that went through no filter: a bug in the template."""


_WJ = "\u2060"  # WORD JOINER: invisible, and breaks GitHub's mention and link detection
NEWLINES = re.compile(r"\r\n|[\r\n\x0b\x0c\x85\u2028\u2029]")
_VARIATION = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef]{2,}")
_NEUTRALIZE = [
    (re.compile(r"@(?=[A-Za-z0-9_])"), "@" + _WJ),  # @user, @org/team, user@host
    (re.compile(r"#(?=[0-9])"), "#" + _WJ),  # #123, owner/repo#123
    (re.compile(r"(?i)(gh)-(?=[0-9])"), r"\1-" + _WJ),  # GH-123
    (re.compile(r"(?i)(?<=[a-z0-9]):(?=//)"), ":" + _WJ),  # https://github.com/o/r/issues/1
    (re.compile(r"(?i)(www)(?=\.)"), r"\1" + _WJ),  # www.example.com
]
_MD_ESCAPES = str.maketrans(
    {c: "\\" + c for c in "\\`*_[]|~$"} | {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
)
_HTML_ESCAPES = str.maketrans(
    {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"} | {c: f"&#x{ord(c):X};" for c in "\\`[]$"}
)
_LEADING = re.compile(r"^(?:([#+\-])|([0-9]{1,9})([.)])(?= |$))")


def _shown(ch: str) -> str:
    return f"{{U+{ord(ch):04X}}}"


def _reveal(text: str, keep: str) -> str:
    """Show what would otherwise be invisible or reorder the text around it."""
    text = _VARIATION.sub(lambda m: "".join(_shown(c) for c in m.group()), text)
    hidden = {
        ord(ch): _shown(ch)
        for ch in set(text)
        if ch not in keep and unicodedata.category(ch) in ("Cc", "Cf", "Cs")
    }
    return text.translate(hidden) if hidden else text


def _one_line(text: str) -> str:
    return _reveal(NEWLINES.sub(" ", text).replace("\t", " "), keep="").strip()


def _neutralize(text: str) -> str:
    for pattern, repl in _NEUTRALIZE:
        text = pattern.sub(repl, text)
    return text


def cut(text: str, limit: Optional[int]) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[: max(limit - 1, 1)].rstrip() + "…"


def _untrusted(value: object, name: str) -> str:
    if isinstance(value, Markdown):
        raise TypeError(f"{name}: the text was already filtered once")
    if not isinstance(value, str):
        raise TypeError(f"{name}: expected text, got {type(value).__name__}")
    return value


def md(value: str, limit: Optional[int] = None) -> Markdown:
    """Untrusted text as Markdown inline content (cell, list item, heading, paragraph)."""
    text = _neutralize(_one_line(cut(_untrusted(value, "md"), limit)))
    text = text.translate(_MD_ESCAPES)
    return Markdown(_LEADING.sub(lambda m: "\\" + m.group(1) if m.group(1) else m.group(2) + "\\" + m.group(3), text))


def html(value: str, limit: Optional[int] = None) -> Markdown:
    """Untrusted text inside an HTML element on a raw-HTML line, such as `<summary>`."""
    return Markdown(_neutralize(_one_line(cut(_untrusted(value, "html"), limit))).translate(_HTML_ESCAPES))


def fence_for(text: str) -> str:
    """A backtick fence longer than any backtick run in the text (at least three)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def fenced(value: str, info: str = "text") -> Markdown:
    """Untrusted text as a whole fenced code block, verbatim but for hidden characters."""
    text = _reveal(NEWLINES.sub("\n", _untrusted(value, "fenced")), keep="\n\t")
    text = text.replace("<!--", "<!" + _WJ + "--")
    fence = fence_for(text)
    return Markdown(f"{fence}{info}\n{text}\n{fence}")


def url(value: str) -> Markdown:
    """A link destination: http(s) only, anything that could end it percent-encoded."""
    value = _untrusted(value, "url")
    if not re.match(r"(?i)https?://", value):
        raise ValueError(f"not an http(s) URL: {value!r}")
    return Markdown(quote(value, safe=":/?#@!$&*+,;=%-._~"))


def finalize(value: object) -> object:
    if isinstance(value, Markdown) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise UnfilteredText(f"the report template printed {type(value).__name__} {str(value)[:60]!r} without a filter")
