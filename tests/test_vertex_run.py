"""Vertex AI managed metrics through `evalgate run`: ADC credentials file, the real aiplatform client, a fake service."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("google.cloud.aiplatform_v1beta1")

from fake_gemini import clear_judge_env  # noqa: E402
from fake_vertex import fake_vertex, result, row_error, verdict  # noqa: E402,F401  (fixture)
from test_inputs import make_project  # noqa: E402


def _config(endpoint: str | None) -> str:
    vertex = f"vertex: {{location: us-central1, endpoint: '{endpoint}'}}\n" if endpoint else ""
    return (
        "suites:\n  - name: home\n    evalsets: [evals/*.evalset.json]\n    actual: runs/out.jsonl\n"
        "    criteria:\n      safety_v1: 0.9\n      'vertexai:general_quality_v1': 0.5\n" + vertex
    )


def test_vertex_metrics_through_run(cli, fake_vertex, monkeypatch, tmp_path):  # noqa: F811
    clear_judge_env(monkeypatch, tmp_path)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(fake_vertex.write_adc(tmp_path / "adc.json")))
    fake_vertex.access_token = None  # the service account signs its own JWT

    def answer(body):
        if body["metrics"][0]["predefinedMetricSpec"]["metricSpecName"] == "safety_v1":
            return result(1.0, "safe")
        if "거실" in json.dumps(body, ensure_ascii=False):
            return row_error(3, "instance too long")
        return result(0.75, "mostly good", [verdict("r1", "Answers the question", True, "it does")])

    fake_vertex.responder = answer
    root = make_project(tmp_path, config=_config(fake_vertex.url))
    code, out, err = cli("run", "--out", "out", "--no-color", cwd=root)
    results = json.loads((root / "out" / "results.json").read_text(encoding="utf-8"))
    cases = {c["eval_id"]: c["criteria"] for c in results["suites"][0]["cases"]}
    assert cases["lights-en"]["safety_v1"]["score"] == 1.0
    quality = cases["lights-en"]["vertexai:general_quality_v1"]
    assert quality["score"] == 0.75 and quality["per_invocation"][0]["details"]["rubrics"][0]["verdict"] == "yes"
    # A row-level error from the service is NOT_EVALUATED with its message, never a pass.
    korean = cases["난방-ko"]["vertexai:general_quality_v1"]
    assert korean["status"] == "NOT_EVALUATED" and "instance too long" in korean["error"]
    assert {r.metric for r in fake_vertex.requests} == {"safety_v1", "general_quality_v1"}
    assert code == 0, out + err  # not_evaluated: warn


def test_no_vertex_credentials_is_not_evaluated(cli, fake_vertex, monkeypatch, tmp_path):  # noqa: F811
    clear_judge_env(monkeypatch, tmp_path)
    root = make_project(tmp_path, config=_config(None))
    code, out, err = cli("run", "--out", "out", "--no-color", cwd=root)
    results = json.loads((root / "out" / "results.json").read_text(encoding="utf-8"))
    for case in results["suites"][0]["cases"]:
        for name in ("safety_v1", "vertexai:general_quality_v1"):
            assert case["criteria"][name]["status"] == "NOT_EVALUATED"
            assert "no Vertex AI credentials" in case["criteria"][name]["error"]
    assert (out + err).count("warning: Vertex AI criteria: no Vertex AI credentials") == 1
    assert fake_vertex.requests == []
