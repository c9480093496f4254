"""Reading files another evalgate version wrote: keys this version does not know are dropped and named.

evalgate's own file models forbid unknown keys, so what this version writes is exactly its
schema, and a typo in our code fails at once. Output records, results and baselines written
by a newer (or older) evalgate may carry fields this one does not know; reading them must
not fail on that. `validate_known` drops those keys, returns where they were (for one
warning), and keeps every other check: a known field that is malformed still raises its
ValidationError, with the keys that were dropped no longer in it.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from evalgate.errors import _UNION_TAGS, json_path

M = TypeVar("M", bound=BaseModel)


def validate_known(model: type[M], data: Any) -> tuple[M, list[str]]:
    """`model` from `data` without the keys `model` does not know; (value, their JSON paths).
    Raises ValidationError when a known field is malformed, as `model.model_validate` does."""
    try:
        return model.model_validate(data), []
    except ValidationError as e:
        extra = [tuple(err["loc"]) for err in e.errors(include_url=False) if err.get("type") == "extra_forbidden"]
        if not extra:
            raise
    dropped = []
    for loc in extra:
        stripped = _without(data, loc)
        if stripped is not None:  # not found in the data: left to fail as before
            data = stripped
            dropped.append(json_path(loc))
    if not dropped:
        raise e
    return model.model_validate(data), dropped


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
    """One warning for a file's unknown keys: the first place that had them, and how many more."""
    where = f"{shown}: {place}" if place else shown
    names = ", ".join(f"'{k}'" for k in keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")
    also = f"; {more} more {'places' if more > 1 else 'place'} in it had unknown keys too" if more else ""
    return (
        f"{where}: ignored {'keys' if len(keys) > 1 else 'key'} {names}, which this evalgate does not know "
        f"(written by another evalgate version?){also}. Read with the evalgate version that wrote it to use them."
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
