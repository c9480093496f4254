"""A small real ADK agent for the runner tests: an LlmAgent with Python tools.

Its model is whatever answers at GOOGLE_GEMINI_BASE_URL (the tests' fake Gemini, scripted
by tests/agent_model.py). WEATHER_TABLE_VERSION switches the tool's data, so a test can
change "the code" and see the answer change.
"""

import os

from google.adk.agents import Agent

FORECASTS = {
    "Paris": "sunny, 21 C",
    "London": "cloudy, 14 C",
    "서울": "맑음, 18도",
    "東京": "晴れ、20度",
}


def get_weather(city: str) -> dict:
    """Returns the current weather in a city."""
    if city == "Atlantis":
        raise ValueError("no weather station in Atlantis")
    table = dict(FORECASTS)
    if os.environ.get("WEATHER_TABLE_VERSION") == "2":
        table["Paris"] = "rain, 12 C"
    return {"city": city, "forecast": table.get(city, "unknown")}


def get_stock_price(symbol: str) -> dict:
    """Returns a live stock price (fails here: there is no live data in tests)."""
    raise RuntimeError(f"live data for {symbol} cannot be fetched in a test")


root_agent = Agent(
    name="weather",
    model="gemini-2.5-flash",
    instruction="You answer questions about the weather and stock prices. Use the tools. Units: {units?}.",
    tools=[get_weather, get_stock_price],
)
