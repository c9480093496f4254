"""Reading files another evalgate version wrote: keys this version does not know are dropped and named.

evalgate's own file models forbid unknown keys, so what this version writes is exactly its
schema, and a typo in our code fails at once. Output records, results and baselines written
by a newer (or older) evalgate may carry fields this one does not know; reading them must
not fail on that. `validate_known` drops those keys, returns where they were (for one
warning), and keeps every other check: a known field that is malformed still raises its
ValidationError, with the keys that were dropped no longer in it. So does a likely typo in a
file a person may have written by hand (`invocation` for a missing `invocations`): a key
within a letter or two of a known field that its object lacks is not a new field.
"""

from __future__ import annotations

import difflib
from typing import Any, Callable, Iterable, Optional, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel

from evalgate.errors import _UNION_TAGS, json_path
from evalgate.i18n import _, n_

M = TypeVar("M", bound=BaseModel)


TYPO = 0.9  # how alike (difflib's ratio) an unknown key and a missing known field are when it is a typo


def validate_known(model: type[M], data: Any, valid_keys_for: Optional[Callable[[tuple], Iterable[str]]] = None) -> tuple[M, list[str]]:
    """`model` from `data` without the keys `model` does not know; (value, their JSON paths).
    Raises ValidationError when a known field is malformed, as `model.model_validate` does,
    and, with `valid_keys_for(loc)` (the field names at an object's location), for an unknown
    key that is a likely typo of a field its object lacks."""
    try:
        return model.model_validate(data), []
    except ValidationError as e:
        error = e
        extra = [tuple(err["loc"]) for err in e.errors(include_url=False) if err.get("type") == "extra_forbidden"]
        if not extra:
            raise
    dropped = []
    for loc in extra:
        if valid_keys_for is not None and _typo(data, loc, valid_keys_for(loc[:-1])):
            continue
        stripped = _without(data, loc)
        if stripped is not None:  # not found in the data: left to fail as before
            data = stripped
            dropped.append(json_path(loc))
    if not dropped:
        raise error
    return model.model_validate(data), dropped


def _typo(data: Any, loc: tuple, valid: Iterable[str]) -> bool:
    """Whether the unknown key at `loc` is a near miss of a known field its object does not have."""
    parent = data
    for part in loc[:-1]:
        if isinstance(parent, dict) and part in parent:
            parent = parent[part]
        elif isinstance(parent, list) and isinstance(part, int) and 0 <= part < len(parent):
            parent = parent[part]
        elif not (isinstance(part, str) and part in _UNION_TAGS):
            return False
    if not isinstance(parent, dict) or not isinstance(loc[-1], str):
        return False
    near = difflib.get_close_matches(loc[-1], list(valid), n=3, cutoff=TYPO)
    return any(name not in parent and to_camel(name) not in parent for name in near)


def _without(data: Any, loc: tuple) -> Any:
    """A copy of `data` without the key at `loc` (only the containers on its path are copied), or None."""
    if not loc:
        return None
    head, rest = loc[0], loc[1:]
    if isinstance(data, dict) and isinstance(head, str) and head in data:
        if not rest:
            return {k: v for k, v in data.items() if k != head}
        inner = _without(data[head], rest)
        return None if inner is None else {**data, head: inner}
    if isinstance(head, str) and head in _UNION_TAGS:  # a discriminated union's tag: not a key of the data
        return _without(data, rest)
    if isinstance(data, list) and isinstance(head, int) and 0 <= head < len(data) and rest:
        inner = _without(data[head], rest)
        return None if inner is None else [*data[:head], inner, *data[head + 1:]]
    return None


def ignored_note(shown: str, place: str | None, keys: list[str], more: int = 0) -> str:
    """One warning for a file's unknown keys: the first place that had them, and how many more.
    In the report's language; `place` is a location as error messages write it (`line 3`)."""
    where = f"{shown}: {place}" if place else shown
    names = ", ".join(f"'{k}'" for k in keys[:5])
    if len(keys) > 5:
        names = _("{names} and {n} more", names=names, n=len(keys) - 5)
    also = n_("; {n} more place in it had unknown keys too", "; {n} more places in it had unknown keys too", more) if more else ""
    return n_(
        "{where}: ignored key {names}, which this evalgate does not know (written by another evalgate version?){also}. "
        "Read with the evalgate version that wrote it to use them.",
        "{where}: ignored keys {names}, which this evalgate does not know (written by another evalgate version?){also}. "
        "Read with the evalgate version that wrote it to use them.",
        len(keys),
        where=where,
        names=names,
        also=also,
    )


def read_known(model: type[M], data: Any, shown: str) -> M:
    """`validate_known`, with the warning about the keys it dropped (if any) kept on the
    value for whoever reports it (`read_note`). The model declares `_read_note`."""
    value, keys = validate_known(model, data)
    if keys:
        value._read_note = ignored_note(shown, None, keys)  # type: ignore[attr-defined]
    return value


def read_note(value: Any) -> str | None:
    """The warning `read_known` left on a value read from a file: keys this evalgate ignored."""
    return getattr(value, "_read_note", None)
