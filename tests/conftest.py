"""Shared test helpers: where ../shared/fixtures is, and running the CLI in-process."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = REPO.parent / "shared" / "fixtures"


@pytest.fixture
def shared_fixtures() -> Path:
    if not SHARED_FIXTURES.is_dir():
        pytest.skip("../shared/fixtures is not beside the checkout")
    return SHARED_FIXTURES


@pytest.fixture(autouse=True)
def english_after_each_test():
    """A test that renders in Korean or Japanese (or runs a command whose config asks for it)
    must not leave the rest of the session in that language."""
    yield
    from evalgate import i18n

    i18n.reset()


@pytest.fixture
def cli(capsys, monkeypatch):
    """Run `evalgate ARGS` in-process from a folder; returns (exit code, stdout, stderr)."""
    from evalgate.cli import main

    def run(*args: str, cwd: Path | None = None):
        if cwd is not None:
            monkeypatch.chdir(cwd)
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def check_snapshot(path: Path, text: str) -> None:
    """`text` must equal the snapshot file, byte for byte. EVALGATE_UPDATE_SNAPSHOTS=1 rewrites
    it (read the diff before committing); a missing snapshot is written and the test fails once,
    so that someone reads it."""
    import os

    update = os.environ.get("EVALGATE_UPDATE_SNAPSHOTS") == "1"
    if update or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
        if not update:
            pytest.fail(f"{path} was missing and has been written: read it, then run again")
    assert text == path.read_bytes().decode("utf-8"), f"{path} differs (EVALGATE_UPDATE_SNAPSHOTS=1 rewrites it)"


def write_json(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


class FakeClock:
    """A monotonic clock that only moves when something sleeps on it (thread-safe)."""

    def __init__(self):
        self.now = 0.0
        self.sleeps: list[float] = []
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(seconds)
            self.now += seconds
