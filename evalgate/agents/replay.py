"""`tools: replay`: answer a tool call from the eval set's recorded tool responses.

A call whose name and arguments equal one of the case's expected tool calls gets that
call's recorded response instead of running the tool, so tools that read live data (the
weather, a price, a database) cannot make the gate flaky. A call with no recorded match
runs live. Calls pair with responses by id, else by position (legacy `tool_uses` /
`tool_responses`).
"""

from __future__ import annotations

import copy
import threading
from typing import Any, Optional

from evalgate.adk import IntermediateData, Invocation


def recorded_calls(expected: list[Invocation]) -> list[dict[str, Any]]:
    """[{name, args, response}] for every expected tool call that has a recorded response."""
    out = []
    for inv in expected:
        calls = inv.tool_calls()
        responses = inv.tool_responses()
        by_id = {r.id: r for r in responses if r.id}
        for i, call in enumerate(calls):
            response = by_id.get(call.id) if call.id else None
            if response is None and isinstance(inv.intermediate_data, IntermediateData) and i < len(responses) and not responses[i].id:
                response = responses[i]
            if response is None and call.id is None and i < len(responses) and responses[i].name == call.name:
                response = responses[i]
            if response is not None and response.response is not None and call.name:
                out.append({"name": call.name, "args": call.args or {}, "response": response.response})
    return out


class ToolReplay:
    def __init__(self, expected: list[Invocation]):
        self.calls = recorded_calls(expected)
        self._counts = {"replayed": 0, "live": 0}
        self._lock = threading.Lock()

    def lookup(self, name: str, args: dict[str, Any]) -> Optional[dict[str, Any]]:
        """The recorded response for this call, or None (run the tool)."""
        for call in self.calls:
            if call["name"] == name and call["args"] == (args or {}):
                with self._lock:
                    self._counts["replayed"] += 1
                return copy.deepcopy(call["response"])
        with self._lock:
            self._counts["live"] += 1
        return None

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)
