"""A non-ADK agent for evalgate's `command` runner (docs/agent-io.md): the weather from a table."""

import json
import sys

FORECASTS = {"Paris": "sunny, 21 C", "London": "cloudy, 14 C", "서울": "맑음, 18도"}

sys.stdin.reconfigure(encoding="utf-8")
sys.stdout.reconfigure(encoding="utf-8")
for line in sys.stdin:  # one line per user turn; the next comes after our answer
    turn = json.loads(line)
    text = " ".join(part.get("text", "") for part in turn["user_content"]["parts"])
    city = next((c for c in FORECASTS if c in text), None)
    if city is None:
        print(json.dumps({"final_response": {"parts": [{"text": "Which city do you mean?"}], "role": "model"}}), flush=True)
        continue
    call = {"name": "get_weather", "args": {"city": city}}
    # Under `tools: replay` evalgate sends the eval set's recorded tool responses: use them.
    recorded = [t["response"] for t in turn.get("tool_responses", []) if t["name"] == call["name"] and t["args"] == call["args"]]
    result = recorded[0] if recorded else {"city": city, "forecast": FORECASTS[city]}
    answer = {
        "final_response": {"parts": [{"text": f"The weather in {city}: {result['forecast']}."}], "role": "model"},
        "intermediate_data": {
            "tool_uses": [call],
            "tool_responses": [{"name": "get_weather", "response": result}],
        },
    }
    print(json.dumps(answer, ensure_ascii=False), flush=True)
