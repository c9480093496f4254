"""The language a reader sees: the PR comment, the job summary, report.html and the terminal
summary, verdict reasons included, in English, Korean or Japanese (`report.language`, or
`--language` on the command line).

Standard gettext machinery: messages are marked in the code with `_()`, `n_()` and `p_()` (and the
same names in the Jinja templates and `t()` in report.js), Babel extracts them into
`evalgate/locale/evalgate.pot`, translators fill `evalgate/locale/<lang>/LC_MESSAGES/
evalgate.po`, and Babel compiles those to the `.mo` files read here by the standard library's
`gettext`. `python -m evalgate.locale.catalogs update` does all three; tests fail when a
message has no translation or a catalog is stale (tests/test_i18n.py).

Messages use named `str.format` fields, filled by the call: `_("{n} cases broke", n=3)`. A
translation must use the same fields (the check says which are missing). Machine-read text
(results.json keys, statuses, JUnit, commit status contexts) stays English.

The language is one per process (a command renders one report), set by `use()`; `language()`
sets it for a block (tests, a second report in another language).
"""

from __future__ import annotations

import contextlib
import gettext
import re
from pathlib import Path
from typing import Iterable, Iterator

LANGUAGES = ("en", "ko", "ja")
DOMAIN = "evalgate"
LOCALE_DIR = Path(__file__).parent / "locale"

_NULL = gettext.NullTranslations()
_current: gettext.NullTranslations = _NULL
_code = "en"
_loaded: dict[str, gettext.NullTranslations] = {"en": _NULL}
_chosen = False  # --language was given: a config's report.language does not override it


def translations(code: str) -> gettext.NullTranslations:
    """The compiled catalog of a language (English: the messages as written)."""
    if code not in LANGUAGES:
        raise ValueError(f"unknown report language {code!r}; choose one of {', '.join(LANGUAGES)}")
    if code not in _loaded:
        # fallback=False: a missing catalog is a broken installation, not English by surprise.
        _loaded[code] = gettext.translation(DOMAIN, localedir=str(LOCALE_DIR), languages=[code])
    return _loaded[code]


def use(code: str) -> None:
    """Set the language of everything rendered from now on in this process."""
    global _current, _code
    _current, _code = translations(code), code


def choose(code: str) -> None:
    """`--language`: the language of this process, whatever the config says."""
    global _chosen
    use(code)
    _chosen = True


def configured(code: str) -> None:
    """A config's `report.language`, unless `--language` chose one."""
    if not _chosen:
        use(code)


def reset() -> None:
    """English, nothing chosen: how every command starts (`evalgate.cli.main` calls it, so a
    process that runs several commands does not carry one's language into the next)."""
    global _chosen
    use("en")
    _chosen = False


def current() -> str:
    return _code


@contextlib.contextmanager
def language(code: str) -> Iterator[None]:
    """The language of a block; the previous one is restored after it."""
    previous = _code
    use(code)
    try:
        yield
    finally:
        use(previous)


def _(message: str, /, **fields: object) -> str:
    """A message in the current language, its `{fields}` filled. The empty message is itself
    (gettext would give the catalog's header for it: never shown in place of empty text)."""
    text = _current.gettext(message) if message else message
    return text.format(**fields) if fields else text


def n_(singular: str, plural: str, n: int, /, **fields: object) -> str:
    """A message whose wording depends on a count `n` (available to it as `{n}`, with thousands
    separated: `1,204 cases`, as Korean and Japanese write them too)."""
    return _current.ngettext(singular, plural, n).format(n=f"{n:,}", **fields)


def p_(context: str, message: str, /, **fields: object) -> str:
    """A message whose translation depends on where it stands, e.g. `p_("agent runs",
    "failed")` (a run that crashed) beside `_("failed")` (a case below its threshold)."""
    text = _current.pgettext(context, message)
    return text.format(**fields) if fields else text


def mark(message: str, /) -> str:
    """Marks a message for extraction where it is defined (a table of labels); it is translated
    where it is shown, with `_(label)`."""
    return message


def separator() -> str:
    """What separates the items of a list in a line: `, `; Japanese `、` (GLOSSARY.md, "Lists")."""
    # TRANSLATORS: what separates the items of a list in a line ("a, b, c"); Japanese: "、".
    return p_("list", ", ")


def listing(items: Iterable[str]) -> str:
    """The items of a list in a line, in the current language: `a, b, c`; Japanese `a、b、c`."""
    return separator().join(items)


def name_list(names: list[str], limit: int = 5) -> str:
    """`a, b and 3 more`: the first `limit` names, and how many more, in the current language
    (Korean `a, b 외 3개`, Japanese `a、b ほか 3 件`)."""
    shown = listing(names[:limit])
    if len(names) <= limit:
        return shown
    # TRANSLATORS: {names} is a list of case names, {n} how many more were not listed.
    return n_("{names} and {n} more", "{names} and {n} more", len(names) - limit, names=shown)


# Kana, kanji and the full-width forms: text a Japanese reader reads as Japanese.
_JAPANESE = re.compile(r"[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")


def aside(text: str) -> str:
    """A parenthetical that follows a phrase, its leading space included: ` (text)`. In Japanese,
    text with Japanese in it goes in full-width parentheses with no space (`（直近 8 回…）`),
    ASCII (a config key, `p = 0.004`) keeps ` (...)` (GLOSSARY.md, "Parentheses")."""
    if _code == "ja" and _JAPANESE.search(text):
        return f"\uff08{text}\uff09"
    return f" ({text})"
