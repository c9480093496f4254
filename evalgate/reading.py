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
from evalgate.i18n import _, n_, name_list

M = TypeVar("M", bound=BaseModel)


TYPO = 0.9  # how alike (difflib's ratio) an unknown key and a missing known field are when it is a typo


def validate_known(
    model: type[M], data: Any, valid_keys_for: Optional[Callable[[tuple], Iterable[str]]] = None, max_errors: Optional[int] = None
) -> tuple[M, list[str]]:
    """`model` from `data` without the keys `model` does not know; (value, their JSON paths).
    Raises ValidationError when a known field is malformed, as `model.model_validate` does,
    and, with `valid_keys_for(loc)` (the field names at an object's location), for an unknown
    key that is a likely typo of a field its object lacks. With `max_errors`, data with more
    unknown keys and malformed fields than that raises at once, before they are listed (each
    listed error costs about a kilobyte: an untrusted record chooses how many it has)."""
    try:
        return model.model_validate(data), []
    except ValidationError as e:
        if max_errors is not None and e.error_count() > max_errors:
            raise
        error = e
        extra = [tuple(err["loc"]) for err in e.errors(include_url=False, include_context=False, include_input=False) if err.get("type") == "extra_forbidden"]
        if not extra:
            raise
    paths = []  # (where in the data, as pydantic wrote it) of each key to drop
    for loc in extra:
        if valid_keys_for is not None and _typo(data, loc, valid_keys_for(loc[:-1])):
            continue
        path = _data_path(data, loc)
        if path is not None:  # not found in the data: left to fail as before
            paths.append((path, loc))
    if not paths:
        raise error
    # All at once: a copy per key would be quadratic in a record with thousands of them.
    return model.model_validate(_without(data, [p for p, _loc in paths])), [json_path(loc) for _p, loc in paths]


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


def _data_path(data: Any, loc: tuple) -> Optional[tuple]:
    """The keys and indexes that lead to the key at `loc` in `data` (a discriminated
    union's tag is not one of them), or None when it is not there."""
    path = []
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(data, dict) and isinstance(part, str) and part in data:
            path.append(part)
            data = data[part] if not last else None
        elif isinstance(part, str) and part in _UNION_TAGS and not last:
            continue
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data) and not last:
            path.append(part)
            data = data[part]
        else:
            return None
    return tuple(path) if path else None


_DROP = object()  # a leaf of the tree of keys to drop


def _without(data: Any, paths: list[tuple]) -> Any:
    """A copy of `data` without the keys at `paths`: the containers on their way are copied,
    each once; everything else is shared."""
    tree: dict = {}
    for path in paths:
        node = tree
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if node is _DROP:
                break
        else:
            node[path[-1]] = _DROP
    return _pruned(data, tree)


def _pruned(data: Any, tree: dict) -> Any:
    if isinstance(data, dict):
        return {k: v if k not in tree else _pruned(v, tree[k]) for k, v in data.items() if tree.get(k) is not _DROP}
    return [v if i not in tree else _pruned(v, tree[i]) for i, v in enumerate(data)]


def ignored_note(shown: str, place: str | None, keys: list[str], more: int = 0) -> str:
    """One warning for a file's unknown keys: the first place that had them, and how many more.
    In the report's language; `place` is a location as error messages write it (`line 3`)."""
    where = f"{shown}: {place}" if place else shown
    names = name_list([f"'{k}'" for k in keys])
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
