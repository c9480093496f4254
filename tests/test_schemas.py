"""The JSON Schemas published in docs/schemas are the ones the code enforces."""

from __future__ import annotations

import json

import pytest

from conftest import REPO


@pytest.mark.parametrize("which", ["config", "results", "inference", "agent-io"])
def test_published_schema_is_current(cli, which):
    code, out, _ = cli("schema", which)
    assert code == 0
    published = json.loads((REPO / "docs" / "schemas" / f"{which}.schema.json").read_text(encoding="utf-8"))
    assert json.loads(out) == published, f"run: evalgate schema {which} > docs/schemas/{which}.schema.json"


def test_config_schema_lists_every_criterion(cli):
    from evalgate.criteria import REGISTRY

    _, out, _ = cli("schema")
    schema = json.loads(out)
    criteria = schema["$defs"]["SuiteConfig"]["properties"]["criteria"]["anyOf"][1]
    assert set(criteria["properties"]) == set(REGISTRY)
    assert criteria["additionalProperties"] is False
