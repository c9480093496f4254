"""The config digest (evalgate.plan.config_digest) a baseline is stamped with: it moves when what
takes effect moves, and only then."""

from __future__ import annotations

import json

from pydantic import create_model

from evalgate.config import load_config
from evalgate.plan import build_plans, config_digest

EVALSET = {"eval_set_id": "s", "eval_cases": [{"eval_id": "c1", "conversation": [
    {"invocation_id": "i1", "user_content": {"role": "user", "parts": [{"text": "在庫はありますか"}]},
     "final_response": {"role": "model", "parts": [{"text": "はい、あります。"}]}}]}]}


def _digest(tmp_path, gate: str, later: bool = False) -> str:
    (tmp_path / "evals").mkdir(exist_ok=True)
    (tmp_path / "evals" / "s.evalset.json").write_text(json.dumps(EVALSET, ensure_ascii=False), encoding="utf-8")
    path = tmp_path / "evalgate.yaml"
    path.write_text("agent: {command: [python, agent.py]}\nsuites:\n  - name: shop\n    evalsets: [evals]\n"
                    "    criteria: {response_match_score: {threshold: 0.5}}\n" + gate, encoding="utf-8")
    loaded = load_config(path)
    plans = build_plans(loaded)
    if later:  # the same section read by a release whose gate has one more field, at its default
        later_gate = create_model("LaterGate", __base__=type(loaded.config.gate), a_knob_added_later=(int, 3))
        loaded.config.gate = later_gate.model_validate(loaded.config.gate.model_dump())
    return config_digest(loaded, plans)


def test_the_gate_policy_counts_by_what_differs_from_the_defaults(tmp_path):
    """A default spelled out, a gate field added by a release with its default, or the gate's
    id leave the digest alone (so upgrading evalgate does not make every baseline read "the
    config changed"); a changed value moves it."""
    plain = _digest(tmp_path, "")
    assert _digest(tmp_path, "", later=True) == plain
    assert _digest(tmp_path, "gate: {alpha: 0.05}\n", later=True) == _digest(tmp_path, "gate: {alpha: 0.05}\n")
    assert _digest(tmp_path, "gate: {alpha: 0.01, confirm: {runs: 2}, pairwise: {confirm: true}}\n") == plain
    assert _digest(tmp_path, "gate: {id: nightly}\n") == plain
    assert _digest(tmp_path, "gate: {alpha: 0.05}\n") != plain
    assert _digest(tmp_path, "gate: {confirm: {runs: 3}}\n") != plain
    assert _digest(tmp_path, "gate: {pairwise: {confirm: false}}\n") != plain
