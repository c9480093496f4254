"""User-facing input errors: what went wrong, where, and how to fix it.

Every problem a user can cause (a missing file, bad JSON, a typo in the config, data that
does not fit) becomes a `Problem`. Loaders collect as many problems as they can in one pass
and raise them together in one `InputError`; the CLI prints them and exits with code 2.
"""

from __future__ import annotations

import difflib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

# Tags used by discriminated unions in our models; they appear in pydantic error
# locations but mean nothing to a user, so they are left out of the printed path.
_UNION_TAGS = frozenset({"events", "data", "function-after", "function-before"})


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input."""

    file: str | None
    where: str | None
    what: str
    fix: str | None = None

    def __str__(self) -> str:
        head = ": ".join(p for p in (self.file, self.where) if p)
        text = f"{head}: {self.what}" if head else self.what
        if self.fix:
            text = text.rstrip(".") + ". " + self.fix
        return text


class InputError(Exception):
    """Unusable input: one or more problems, reported together (exit code 2)."""

    def __init__(self, problems: Iterable[Problem] | Problem):
        if isinstance(problems, Problem):
            problems = [problems]
        self.problems: list[Problem] = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class ProblemCollector:
    """Gathers problems across a pass so they can be raised together."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, file: str | None, where: str | None, what: str, fix: str | None = None) -> None:
        self.problems.append(Problem(file, where, what, fix))

    def extend(self, problems: Iterable[Problem]) -> None:
        self.problems.extend(problems)

    def run(self, fn, *args, **kwargs):
        """Call fn; record its InputError problems instead of raising. Returns None on error."""
        try:
            return fn(*args, **kwargs)
        except InputError as e:
            self.problems.extend(e.problems)
            return None

    def raise_if_any(self) -> None:
        if self.problems:
            raise InputError(self.problems)


def closest(name: str, valid: Iterable[str]) -> str | None:
    """The valid name most like `name`, if any is close."""
    matches = difflib.get_close_matches(name, list(valid), n=1, cutoff=0.6)
    return matches[0] if matches else None


def did_you_mean(name: str, valid: Iterable[str]) -> str:
    valid = sorted(valid)
    near = closest(name, valid)
    # Names with a family prefix ("vertexai:...") are summarised, so the list stays readable.
    plain = [v for v in valid if ":" not in v]
    families = sorted({v.split(":", 1)[0] for v in valid if ":" in v})
    shown = plain + [f"{f}:<metric>" for f in families]
    listed = f" Valid names: {', '.join(shown)}." if len(shown) <= 32 else ""
    if near:
        return f"Did you mean '{near}'?{listed}"
    return listed.strip() or "Check the spelling against the format's documentation."


def json_path(loc: Iterable[Any], prefix: str = "") -> str:
    """Turn a pydantic error location into a JSON path like `eval_cases[3].conversation`."""
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in _UNION_TAGS:
            continue
        else:
            out += f".{part}" if out and not out.endswith(" ") else str(part)
    return out or "(top level)"


def _fix_for(err: dict[str, Any], valid_keys: Iterable[str] | None) -> str | None:
    kind = err.get("type", "")
    loc = err.get("loc", ())
    if kind == "missing":
        return f"Add the field '{loc[-1]}'." if loc else "Add the missing field."
    if kind == "extra_forbidden":
        if valid_keys:
            return "Remove it or fix the spelling. " + did_you_mean(str(loc[-1]), valid_keys)
        return "Remove it or fix the spelling."
    if kind in ("string_type", "str_type"):
        return "Give a string."
    if kind in ("float_type", "float_parsing", "int_type", "int_parsing"):
        return "Give a number."
    if kind in ("bool_type", "bool_parsing"):
        return "Give true or false."
    if kind in ("list_type", "tuple_type"):
        return "Give a list."
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return "Give an object."
    return None


def problems_from_validation(
    error: Any,
    file: str | None,
    prefix: str = "",
    valid_keys_for: Any = None,
) -> list[Problem]:
    """Problems for each error of a pydantic ValidationError, with JSON paths.

    `valid_keys_for(loc)` may return the valid field names at a location, so an unknown
    key can be answered with the closest valid one.
    """
    problems = []
    for err in error.errors(include_url=False):
        loc = tuple(err.get("loc", ()))
        where = json_path(loc, prefix)
        msg = err.get("msg", "invalid value")
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        if err.get("type") == "extra_forbidden":
            msg = f"unknown key '{loc[-1]}'" if loc else "unknown key"
        valid = valid_keys_for(loc[:-1]) if valid_keys_for and loc else None
        problems.append(Problem(file, where, msg[:1].lower() + msg[1:], _fix_for(err, valid)))
    return problems


def display_path(path: Path | str, base: Path | None = None) -> str:
    """`path` relative to `base` (default: the working directory), posix-style, '..' allowed."""
    root = base if base is not None else Path.cwd()
    try:
        rel = os.path.relpath(Path(path).resolve(), Path(root).resolve())
    except ValueError:  # another drive on Windows
        return Path(path).as_posix()
    return Path(rel).as_posix()


def read_text(path: Path, shown: str | None = None) -> str:
    """Read a UTF-8 file, turning OS errors into a Problem."""
    shown = shown or display_path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(Problem(shown, None, "file not found", "Check the path.")) from None
    except IsADirectoryError:
        raise InputError(Problem(shown, None, "is a directory, not a file", "Name a file, or a folder where a folder is allowed.")) from None
    except OSError as e:
        raise InputError(Problem(shown, None, f"cannot be read ({e.strerror})", "Check the file's permissions.")) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(Problem(shown, f"byte {e.start}", "is not valid UTF-8", "Save the file as UTF-8.")) from None


def parse_json(text: str, shown: str) -> Any:
    """json.loads with a Problem naming line and column on a syntax error. A lone surrogate
    (`"\\ud800"`, valid JSON) reads as U+FFFD: no UTF-8 file could hold it when written again."""
    from evalgate.untrusted import may_hold_surrogates, without_surrogates

    try:
        value = json.loads(text)
        return without_surrogates(value) if may_hold_surrogates(text) else value
    except json.JSONDecodeError as e:
        raise InputError(
            Problem(shown, f"line {e.lineno}, column {e.colno}", f"invalid JSON: {e.msg}", "Fix the JSON syntax at that place.")
        ) from None
    except (ValueError, RecursionError) as e:  # integers past Python's digit limit, absurd nesting
        raise InputError(Problem(shown, None, f"unreadable JSON: {_short_error(e)}", "Keep numbers under 4,300 digits and nesting shallow.")) from None


def _short_error(e: BaseException) -> str:
    return "nested too deeply" if isinstance(e, RecursionError) else str(e).split(";")[0]


def read_jsonl(text: str, shown: str) -> list[tuple[int, Any]]:
    """(line number, value) for each non-blank line; every bad line reported together. A line
    beyond evalgate.untrusted's depth and text limits is a bad line; lone surrogates read as
    U+FFFD.

    Lines end at "\n" only: json.dumps(ensure_ascii=False) leaves U+2028 and other Unicode
    line separators unescaped inside strings, and str.splitlines() would split there."""
    from evalgate.untrusted import checked

    problems = ProblemCollector()
    out = []
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value, beyond = checked(json.loads(line))
            if beyond is not None:
                problems.add(shown, f"line {n}", beyond, "An agent's output is not nested that deep nor that long; check what wrote this line.")
                continue
            out.append((n, value))
        except json.JSONDecodeError as e:
            problems.add(shown, f"line {n}, column {e.colno}", f"invalid JSON: {e.msg}", "Each line must be one complete JSON object.")
        except (ValueError, RecursionError) as e:
            problems.add(shown, f"line {n}", f"unreadable JSON: {_short_error(e)}", "Keep numbers under 4,300 digits and nesting shallow.")
    problems.raise_if_any()
    return out


def load_json_file(path: Path, shown: str | None = None) -> Any:
    shown = shown or display_path(path)
    return parse_json(read_text(path, shown), shown)
