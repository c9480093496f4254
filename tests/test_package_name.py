"""The distribution is `adk-evalgate`: the package registry's bare `evalgate` is an unrelated
project, so no doc, hint or workflow may tell anyone to install that name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO

# An install command whose package is the bare name: `pip install evalgate`,
# `pip install 'evalgate[judge]'`, `pipx install evalgate`, `uv add evalgate==1.0`, ...
BARE = re.compile(r"(?:pip3?\s+install|pipx\s+install|uv\s+pip\s+install|uv\s+add)(?:\s+-{1,2}[\w-]+(?:=\S+)?)*\s+['\"]?evalgate(?![\w-])")


def _texts() -> list[Path]:
    patterns = ["*.md", "docs/**/*.md", "bench/*.md", "examples/**/*.md", "evalgate/**/*.py", "entrypoint/*.py",
                "Dockerfile", "action.yml", ".github/workflows/*.yml", ".ci/*", "docs/schemas/*.json"]
    return sorted({p for pattern in patterns for p in REPO.glob(pattern) if p.is_file()})


@pytest.mark.parametrize(
    "text, bare",
    [
        ("pip install evalgate", True),
        ("pip install 'evalgate[judge]'", True),
        ('pip install --upgrade "evalgate[vertex]"', True),
        ("uv add evalgate==0.3.0", True),
        ("pip install 'adk-evalgate[judge]'", False),
        ("pip install adk-evalgate", False),
        ("pip install -e '.[test]'", False),
        ("pip install evalgate-tools", False),
    ],
)
def test_the_check_tells_the_bare_name_apart(text, bare):
    assert bool(BARE.search(text)) is bare


def test_no_doc_hint_or_workflow_installs_the_bare_name():
    offenders = []
    for path in _texts():
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
            if BARE.search(line):
                offenders.append(f"{path.relative_to(REPO)}:{n}: {line.strip()[:120]}")
    assert not offenders, "install adk-evalgate, never the bare name:\n" + "\n".join(offenders)
    assert len(_texts()) > 20


def test_the_distribution_is_adk_evalgate_and_the_command_evalgate():
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^name = "adk-evalgate"$', text, re.M)
    assert re.search(r'^evalgate = "evalgate\.cli:main"$', text, re.M)
    assert "adk-evalgate" in (REPO / "README.md").read_text(encoding="utf-8")
    release = (REPO / ".github" / "workflows" / "release.yml").read_text(encoding="utf-8")
    assert "adk_evalgate-${version}-py3-none-any.whl" in release
