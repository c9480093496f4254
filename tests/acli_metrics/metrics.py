"""Code metrics for tests/test_acli_code_metrics.py, as a team would write them for agents-cli."""


def evaluate(instance):
    """How many tool calls the agent made, with the prompt's first word as the explanation."""
    calls = 0
    for turn in (instance.get("agent_data") or {}).get("turns", []):
        for event in turn.get("events", []):
            for part in (event.get("content") or {}).get("parts", []):
                if "function_call" in part:
                    calls += 1
    prompt = "".join(p.get("text", "") for p in (instance.get("prompt") or {}).get("parts", []))
    return {"score": calls, "explanation": prompt.split()[0] if prompt.split() else ""}
