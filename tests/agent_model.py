"""A scripted model for tests/agents/weather_agent, answering through the fake Gemini server.

`respond(body)` reads a generateContent request as the agent sends it and answers as a
well-behaved model would: a question naming a known city gets a get_weather call, one
naming a stock symbol a get_stock_price call; a tool response gets a sentence built from
it; anything else a plain reply. Deterministic, so runs can be compared exactly.
"""

from __future__ import annotations

import re
from typing import Any

from fake_http import Reply

CITIES = ("Paris", "London", "서울", "東京", "Atlantis")


def _reply(parts: list[dict[str, Any]], model: str = "gemini-2.5-flash") -> Reply:
    return Reply(
        200,
        {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 7, "totalTokenCount": 27},
            "modelVersion": model,
        },
    )


def respond(body: Any) -> Reply:
    contents = (body or {}).get("contents") or []
    last = contents[-1] if contents else {}
    parts = last.get("parts") or []
    responses = [p["functionResponse"] for p in parts if "functionResponse" in p]
    if responses:
        r = responses[0]
        data = r.get("response") or {}
        if r.get("name") == "get_weather":
            return _reply([{"text": f"The weather in {data.get('city')}: {data.get('forecast')}."}])
        if "error" in data:
            return _reply([{"text": f"Sorry, that failed: {data['error']}"}])
        return _reply([{"text": f"{data.get('symbol')} trades at {data.get('price')}."}])
    text = " ".join(p.get("text", "") for p in parts)
    for city in CITIES:
        if city in text:
            return _reply([{"functionCall": {"name": "get_weather", "args": {"city": city}}}])
    stock = re.search(r"\$([A-Z]{1,5})\b", text)
    if stock:
        return _reply([{"functionCall": {"name": "get_stock_price", "args": {"symbol": stock.group(1)}}}])
    return _reply([{"text": "Which city do you mean?"}])
