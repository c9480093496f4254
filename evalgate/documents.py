"""YAML and JSON documents a person writes (evalgate.yaml, agents-cli's eval config): their
data, and the line of every place in them, so an error can name it."""

from __future__ import annotations

from typing import Any

import yaml

from evalgate.errors import InputError, Problem, parse_json


def line_map(node: yaml.Node, loc: tuple, out: dict[tuple, int], duplicates: list[tuple[tuple, int, int]]) -> None:
    """Map each JSON path in a YAML/JSON document to its 1-based line; note duplicate keys
    (YAML and JSON parsers keep the last one silently, which hides a typo'd override)."""
    out[loc] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            k = key.value if isinstance(key, yaml.ScalarNode) else str(key.value)
            line = key.start_mark.line + 1
            if loc + (k,) in out:
                duplicates.append((loc + (k,), out[loc + (k,)], line))
            line_map(value, loc + (k,), out, duplicates)
            out[loc + (k,)] = line  # a key's place is its own line, not its value's
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            line_map(item, loc + (i,), out, duplicates)


def parse_document(text: str, shown: str, is_json: bool) -> Any:
    """A YAML or JSON document's data; InputError naming the file and the place on bad syntax."""
    if is_json:
        return parse_json(text, shown)
    try:
        return yaml.safe_load(text)
    except (ValueError, RecursionError) as e:
        what = "nested too deeply" if isinstance(e, RecursionError) else str(e).split(";")[0]
        raise InputError(Problem(shown, None, f"unreadable YAML: {what}", "Simplify the file.")) from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        what = f"invalid YAML: {e.problem or e.context}"
        raise InputError(Problem(shown, where, what, "Fix the YAML syntax at that place.")) from None
    except yaml.YAMLError as e:
        raise InputError(Problem(shown, None, f"invalid YAML: {e}", "Fix the YAML syntax.")) from None
