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
    from evalgate import efficiency
    from evalgate.criteria import REGISTRY

    _, out, _ = cli("schema")
    schema = json.loads(out)
    criteria = schema["$defs"]["SuiteConfig"]["properties"]["criteria"]["anyOf"][1]
    assert set(criteria["properties"]) == set(REGISTRY) | set(efficiency.METRICS)  # the informational ones too
    # Any other name is a custom metric's (declared in the suite's custom_metrics, which a
    # schema cannot cross-check): a threshold, or an object with one. `evalgate validate`
    # still refuses a name that is neither.
    assert criteria["additionalProperties"]["anyOf"][0] == {"type": "number"}


def test_inference_schema_accepts_the_files_evalgate_and_adk_write():
    """Snake_case, as written; the quickstart's recorded file and a line of an agent run."""
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((REPO / "docs" / "schemas" / "inference.schema.json").read_text(encoding="utf-8"))
    lines = (REPO / "examples" / "quickstart" / "runs" / "support.inference.jsonl").read_text(encoding="utf-8").splitlines()
    generated = {
        "eval_set_id": "weather",
        "eval_id": "paris",
        "run": 2,
        "invocations": [
            {
                "invocation_id": "e-1",
                "user_content": {"parts": [{"text": "서울 날씨?"}], "role": "user"},
                "final_response": {"parts": [{"text": "맑음"}], "role": "model"},
                "intermediate_data": {"invocation_events": [{"author": "weather", "usage_metadata": {"total_token_count": 27}, "model_version": "m"}]},
                "duration": 0.5,
            }
        ],
    }
    for record in [json.loads(line) for line in lines if line.strip()] + [generated, {"eval_set_id": "s", "eval_id": "c", "run": 1, "error": "timed out"}]:
        jsonschema.validate(record, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"eval_set_id": "s", "eval_id": "c", "invocations": [{"userContent": {"parts": []}, "tool_use": []}]}, schema)
