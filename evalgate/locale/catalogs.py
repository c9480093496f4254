"""Keep the message catalogs in step with the code (Babel: `pip install ".[test]"` has it).

    python -m evalgate.locale.catalogs update   # extract, merge into ko/ja .po, compile .mo
    python -m evalgate.locale.catalogs check    # what tests/test_i18n.py checks; exit 1 if any
    python -m evalgate.locale.catalogs style ja # one language's wording rules only (STYLE_CHECKS)
    python -m evalgate.locale.catalogs fill ko FILE.json   # translations from {"msgid": "msgstr"} ("context|msgid" for p_)

`update` extracts every marked message (`_`, `n_`, `mark` in Python; `_`, `n_` in the
Jinja templates; `t`, `nt` in report.js) into evalgate.pot, adds the new ones to each
language's .po with an empty translation, drops the ones the code no longer has, and compiles
the .mo files evalgate reads. Fill the empty `msgstr`s in the .po files (by hand, or `fill` from a JSON object of
message -> translation; a plural message's key is its singular), then run `update` again.
Output is stable (no dates, no line numbers), so a diff shows only real changes; `check`
compares messages, not bytes, so another Babel version's headers do not count as stale.
"""

from __future__ import annotations

import gettext
import io
import re
import string
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Optional

from babel.messages.catalog import Catalog, Message
from babel.messages.extract import extract_from_dir
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

HERE = Path(__file__).parent
PACKAGE = HERE.parent
DOMAIN = "evalgate"
LANGUAGES = ("ko", "ja")  # English is the source language
TEMPLATE = HERE / f"{DOMAIN}.pot"
_FIXED = datetime(2026, 1, 1, tzinfo=timezone.utc)  # no churn from dates
_NAMES = {"ko": "Korean", "ja": "Japanese"}

# Two passes, each with its own names: report.js's `t`/`nt` must not be read as messages in
# Python, where `t` is an ordinary variable name.
PASSES = [
    (
        [("locale/**", "ignore"), ("**.py", "python"), ("templates/**.j2", "jinja2.ext:babel_extract")],
        {"_": None, "n_": (1, 2), "p_": ((1, "c"), 2), "mark": None},
    ),
    ([("templates/**.js", "javascript")], {"t": None, "nt": (1, 2)}),
]


def po_path(code: str, root: Path = HERE) -> Path:
    return root / code / "LC_MESSAGES" / f"{DOMAIN}.po"


def mo_path(code: str, root: Path = HERE) -> Path:
    return po_path(code, root).with_suffix(".mo")


def extract(package: Path = PACKAGE) -> Catalog:
    """Every marked message in the package, in a template catalog (for evalgate itself, also
    the GitHub Action's entrypoint beside it, whose job summary notes read from the same catalogs)."""
    catalog = Catalog(project="evalgate", domain=DOMAIN, creation_date=_FIXED, fuzzy=False)
    sources = [(package, "")]
    if package == PACKAGE and (package.parent / "entrypoint").is_dir():
        sources.append((package.parent / "entrypoint", "../entrypoint/"))
    for root, prefix in sources:
        for methods, keywords in PASSES:
            for filename, lineno, message, comments, context in extract_from_dir(
                root, methods, keywords=keywords, comment_tags=("TRANSLATORS:",), strip_comment_tags=True
            ):
                catalog.add(message, None, [(prefix + filename, lineno)], auto_comments=comments, context=context)
    return catalog


def _po_bytes(catalog: Catalog) -> bytes:
    out = io.BytesIO()
    write_po(out, catalog, width=100, include_lineno=False, sort_by_file=False)
    return out.getvalue()


def _mo_bytes(catalog: Catalog) -> bytes:
    out = io.BytesIO()
    write_mo(out, catalog)
    return out.getvalue()


def read(code: str, root: Path = HERE) -> Catalog:
    path = po_path(code, root)
    if not path.exists():
        return Catalog(locale=code, project="evalgate", domain=DOMAIN, creation_date=_FIXED, revision_date=_FIXED, fuzzy=False)
    with path.open("rb") as f:
        return read_po(f, locale=code, domain=DOMAIN)


def merged(template: Catalog, code: str, root: Path = HERE) -> Catalog:
    """The language's catalog with the template's messages: translations kept, new messages
    empty, messages the code no longer has dropped (never guessed from similar ones)."""
    catalog = read(code, root)
    catalog.update(template, no_fuzzy_matching=True, update_header_comment=False, update_creation_date=False)
    catalog.obsolete.clear()
    catalog.creation_date = catalog.revision_date = _FIXED
    catalog.fuzzy = False
    catalog.last_translator = catalog.language_team = "evalgate"
    catalog.project, catalog.version = "evalgate", ""
    catalog.header_comment = (
        f"# {_NAMES[code]} messages of evalgate's reports (the PR comment, job summary, report.html\n"
        "# and terminal summary), written for developers who read ADK's guides in this language.\n"
        "# Keep each {field} of the English message; `python -m evalgate.locale.catalogs check`."
    )
    return catalog


def update(package: Path = PACKAGE) -> None:
    root = package / "locale"
    template = extract(package)
    (root / TEMPLATE.name).write_bytes(_po_bytes(template))
    for code in LANGUAGES:
        catalog = merged(template, code, root)
        po_path(code, root).parent.mkdir(parents=True, exist_ok=True)
        po_path(code, root).write_bytes(_po_bytes(catalog))
        mo_path(code, root).write_bytes(_mo_bytes(read(code, root)))
        messages = [m for m in catalog if m.id]
        missing = sum(1 for m in messages if not _translated(m))
        print(f"{po_path(code, root).relative_to(package.parent)}: {len(messages)} messages, {missing} without a translation")


def fill(code: str, translations: dict[str, str], root: Path = HERE) -> None:
    """Set translations in a language's .po (messages it lacks are refused: run update first)."""
    catalog = read(code, root)
    unknown = [
        k for k in translations
        if catalog.get(k) is None and catalog.get(k.partition("|")[2], context=k.partition("|")[0]) is None
        and not any(isinstance(m.id, tuple) and m.id[0] == k for m in catalog)
    ]
    if unknown:
        raise SystemExit(f"{code}: not in the catalog (run update first, or check the spelling): {unknown[:5]}")
    for message in catalog:
        key = message.id if isinstance(message.id, str) else message.id[0] if message.id else None
        if key is not None and message.context is not None:
            key = f"{message.context}|{key}"
        if key in translations:
            text = translations[key]
            message.string = tuple([text] * catalog.num_plurals) if isinstance(message.id, tuple) else text
            message.flags.discard("fuzzy")
    po_path(code, root).write_bytes(_po_bytes(catalog))
    mo_path(code, root).write_bytes(_mo_bytes(catalog))


def _translated(message: Message) -> bool:
    strings = message.string if isinstance(message.string, (list, tuple)) else [message.string]
    return not message.fuzzy and all(s for s in strings)


def _fields(text: str) -> Optional[set[str]]:
    try:
        return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}
    except ValueError:
        return None


def _key(message: Message) -> object:
    key = message.id if isinstance(message.id, str) else tuple(message.id)
    return key if message.context is None else (message.context, key)


def _compiled(mo: bytes) -> dict:
    """What a compiled catalog gives gettext, header aside."""
    table = dict(gettext.GNUTranslations(io.BytesIO(mo))._catalog)  # type: ignore[attr-defined]
    table.pop("", None)
    return table


def _where(message: Message) -> str:
    return message.locations[0][0] if message.locations else "?"


# Korean particles whose form depends on the last sound of the word before them (은/는, 이/가,
# 을/를, 과/와, 으로/로, the copula 이다/다 and its forms 이며/이고/이나/이라/이면/였...). After a
# {field} the translator cannot know that sound (`{criterion}을` renders
# `response_match_score을`), so they must not follow one. Particles that do not vary (에, 에서,
# 의, 도, 만, 까지, 부터, 보다, 에게, 처럼) are fine: `{path}에서`, `{n}개의`.
_KO_VARYING = "은는이가을를과와으로랑라며나다면였야아"
# Words a field (a count) may run into that merely start with one of those syllables.
_KO_WORDS = ("가지", "이상", "이하", "이내", "이후", "이전", "이번", "다음", "나중", "년", "아래")
_KO_GLUED = re.compile(r"\}[`'\"*_’”»」]*([가-힣]+)")
# The "either form" fallbacks: 이(가), 을(를), 은(는), 와(과), (으)로, (이)다, (이)나 ...
_KO_FALLBACK = re.compile(r"\((?:이|가|을|를|은|는|과|와|으|이다|이며|이나|이라|아|야)\)")


def _strings(message: Message) -> list[str]:
    return [s for s in (message.string if isinstance(message.string, (list, tuple)) else [message.string]) if s]


def korean_problems(catalog: Catalog) -> list[str]:
    """A Korean translation with a sound-dependent particle glued to a `{field}`, or an
    `이(가)`-style fallback (GLOSSARY.md, "Rules for every translation")."""
    found = []
    for m in catalog:
        if not m.id:
            continue
        for text in _strings(m):
            for word in _KO_GLUED.findall(text):
                if word[0] in _KO_VARYING and not word.startswith(_KO_WORDS):
                    found.append(f"ko: a particle glued to a field ('}}{word}') in the translation of {m.id!r}: "
                                 "put the field in parentheses after a noun, or after a colon")
                    break
            fallback = _KO_FALLBACK.search(text)
            if fallback:
                found.append(f"ko: the fallback {fallback.group(0)!r} in the translation of {m.id!r}: "
                             "rewrite so one form fits (the field in parentheses after a noun)")
    return found


# Kana, kanji and full-width forms: Japanese text (evalgate.i18n.aside decides the same way).
_JA_TEXT = re.compile(r"[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")
_JA_HALF_PARENS = re.compile(r"\(([^()]*)\)")
# A status line keeps the half-width parentheses after its status token (GLOSSARY.md, Japanese):
# `全体: {status} (ケース 2 件: 合格 2、…)`.
_JA_STATUS_BEFORE = re.compile(r"(?:\{status\}|PASSED|FAILED|NOT_EVALUATED|PASS|FAIL|INCONCLUSIVE) $")


def japanese_problems(catalog: Catalog) -> list[str]:
    """A Japanese translation with a half-width `;` (GLOSSARY.md: 。 between sentences, 、 inside
    one), half-width parentheses around Japanese text (full-width （…） there, except a status
    line's after its status token), or a space beside a full-width parenthesis."""
    found = []
    for m in catalog:
        if not m.id:
            continue
        texts = _strings(m)
        if any(";" in text for text in texts):
            found.append(f"ja: a half-width ';' in the translation of {m.id!r}: use 。 or 、")
        for text in texts:
            half = [h for h in _JA_HALF_PARENS.finditer(text)
                    if _JA_TEXT.search(h.group(1)) and not _JA_STATUS_BEFORE.search(text[: h.start()])]
            if half:
                found.append(f"ja: half-width parentheses around Japanese text ({half[0].group(0)!r}) in the translation "
                             f"of {m.id!r}: use （）")
                break
            if re.search(r" [（）]|[（）] ", text):
                found.append(f"ja: a space beside a full-width parenthesis in the translation of {m.id!r}: "
                             "（） need no space")
                break
    return found


STYLE = {"ko": korean_problems, "ja": japanese_problems}
# The languages whose wording rules `problems()` (and so `check` and tests/test_i18n.py)
# enforces; `check` reports the others' count as a note.
STYLE_CHECKED: tuple[str, ...] = ("ko", "ja")


def problems(package: Path = PACKAGE, style: Iterable[str] = STYLE_CHECKED) -> list[str]:
    """Everything that is out of step in a package's catalogs (`package`/locale): stale
    template or catalogs, untranslated messages, translations whose `{fields}` differ from the
    message's, stale .mo files, and for the languages in `style` their wording rules (STYLE)."""
    style = tuple(style)
    found: list[str] = []
    root = package / "locale"
    template_path = root / TEMPLATE.name
    template = extract(package)
    ids = {_key(m) for m in template if m.id}
    with template_path.open("rb") if template_path.exists() else io.BytesIO() as f:
        if not template_path.exists() or ids != {_key(m) for m in read_po(f) if m.id}:
            found.append(f"{TEMPLATE.name} is stale: run `python -m evalgate.locale.catalogs update`")
    for code in LANGUAGES:
        catalog = read(code, root)
        have = {_key(m) for m in catalog if m.id}
        for msgid in sorted(ids - have, key=str):
            found.append(f"{code}: no entry for {msgid!r}: run `python -m evalgate.locale.catalogs update`, then translate it")
        for msgid in sorted(have - ids, key=str):
            found.append(f"{code}: {msgid!r} is no longer in the code: run `python -m evalgate.locale.catalogs update`")
        for m in catalog:
            if not m.id:
                continue
            if not _translated(m):
                found.append(f"{code}: no translation for {m.id!r} ({_where(m)})")
                continue
            sources = m.id if isinstance(m.id, (list, tuple)) else [m.id]
            wanted = set().union(*(_fields(s) or set() for s in sources))
            if isinstance(m.id, (list, tuple)):
                wanted.add("n")
            for text in m.string if isinstance(m.string, (list, tuple)) else [m.string]:
                got = _fields(text)
                if got is None:
                    found.append(f"{code}: translation of {m.id!r} has unbalanced braces: {text!r}")
                elif not got <= wanted or (not isinstance(m.id, (list, tuple)) and got != wanted):
                    found.append(f"{code}: translation of {m.id!r} uses fields {sorted(got)}, the message {sorted(wanted)}")
        if code in style:
            found.extend(STYLE[code](catalog))
        mo = mo_path(code, root)
        if not mo.exists() or _compiled(mo.read_bytes()) != _compiled(_mo_bytes(catalog)):
            found.append(f"{mo.name} of {code} is stale: run `python -m evalgate.locale.catalogs update`")
    return found


def main(argv: Iterable[str]) -> int:
    args = list(argv)
    if args == ["update"]:
        update()
        return 0
    if len(args) == 3 and args[0] == "fill" and args[1] in LANGUAGES:
        import json

        fill(args[1], json.loads(Path(args[2]).read_text(encoding="utf-8")))
        return 0
    if args == ["check"]:
        found = problems()
        for line in found:
            print(line)
        for code in LANGUAGES:
            if code not in STYLE_CHECKED:
                unchecked = STYLE[code](read(code))
                print(f"note: {len(unchecked)} {code} wording problems not enforced yet "
                      f"(`python -m evalgate.locale.catalogs style {code}`; catalogs.STYLE_CHECKED)")
        return 1 if found else 0
    if len(args) == 2 and args[0] == "style" and args[1] in LANGUAGES:
        found = STYLE[args[1]](read(args[1]))
        for line in found:
            print(line)
        return 1 if found else 0
    print("usage: python -m evalgate.locale.catalogs update | check | style ko|ja | fill ko|ja FILE.json", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
