"""Judge reply cache: one JSON file per request, named by the sha256 of everything that shapes the reply.

The key covers the judge model, system instruction, prompt, response schema, generation
settings, sample index, criterion and the criterion's prompt version, so a changed case
(or prompt) misses and an unchanged one hits. A Vertex AI evaluation (`eval_cache_key`) is
keyed by the kind "vertex", the metric, the instance JSON, the criterion and its prompt
version, and keeps its result as JSON text in the same kind of file. Files live at
`root/ab/abcdef….json` (works with `actions/cache`), are written atomically, and a file that
cannot be read is a miss. Only successful replies are stored; the runtime decides that.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from evalgate.judge.request import JudgeRequest
from evalgate.vertex.service import EvalRequest

CACHE_FORMAT = 1  # bump when the key or the file changes meaning: old entries then miss


@dataclass(frozen=True)
class CachedReply:
    text: str
    usage: dict[str, int] = field(default_factory=dict)


def cache_key(request: JudgeRequest) -> str:
    """sha256 (hex) of the canonical JSON of everything that shapes the judge's reply."""
    payload = {
        "format": CACHE_FORMAT,
        "criterion": request.criterion,
        "prompt_version": request.prompt_version,
        "model": request.model,
        "system": request.system,
        "prompt": request.prompt,
        "response_schema": request.response_schema,
        "config": [[str(k), v] for k, v in sorted(request.config, key=lambda item: str(item[0]))],
        "sample": request.sample,
    }
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_not_json)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def eval_cache_key(request: EvalRequest) -> str:
    """sha256 (hex) of everything that shapes a Vertex AI evaluation's result."""
    payload = {
        "format": CACHE_FORMAT,
        "kind": "vertex",
        "criterion": request.criterion,
        "prompt_version": request.prompt_version,
        "metric": request.metric,
        "instance": request.instance_json,
    }
    if request.metric_spec_json is not None:  # a metric of the criterion's own (keys of managed metrics unchanged)
        payload["metric_spec"] = request.metric_spec_json
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class JudgeCache:
    """Content-addressed files under `root`."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Optional[CachedReply]:
        """The stored reply, or None when absent or unreadable (a corrupt file is a miss)."""
        try:
            data = json.loads(self.path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT or data.get("key") != key:
            return None
        text, usage = data.get("text"), data.get("usage", {})
        if not isinstance(text, str) or not text.strip() or not isinstance(usage, dict):
            return None
        if not all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in usage.items()):
            return None
        return CachedReply(text, dict(usage))

    def put(self, key: str, text: str, usage: dict[str, int]) -> None:
        """Store a reply atomically (write a temporary file beside it, then rename over)."""
        target = self.path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        data = json.dumps(
            {"format": CACHE_FORMAT, "key": key, "text": text, "usage": dict(usage)},
            ensure_ascii=False,
            sort_keys=True,
        )
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{key[:12]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(data)
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise


def _not_json(value: Any) -> Any:
    # Generation settings come from JSON/YAML config, so this is a programming error: say which value.
    raise TypeError(f"judge cache key: {type(value).__name__} value {value!r} is not JSON")
