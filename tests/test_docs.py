"""The README and docs/: links resolve, every page is reachable, the generated page is
current, and the README's first command does what the README says it does."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path
from urllib.parse import unquote

import pytest
import yaml

from conftest import REPO

README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").rglob("*.md"))]

FENCE = re.compile(r"^(```|~~~).*?^\1\s*$", re.M | re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.M)


def _prose(text: str) -> str:
    """The page without its fenced code blocks (whose brackets are code, not links)."""
    return FENCE.sub("", text)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*|__", "", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link's text
    text = text.strip().lower()
    kept = "".join(c for c in text if c in "-_ " or unicodedata.category(c)[0] in "LNM")
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for match in HEADING.finditer(_prose(page.read_text(encoding="utf-8"))):
        slug = _slug(match.group(2))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def links(page: Path) -> list[str]:
    return [m.group(1) for m in LINK.finditer(_prose(page.read_text(encoding="utf-8")))]


def _relative(target: str) -> bool:
    return not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) and not target.startswith("//")


def test_slug_matches_githubs():
    assert _slug("The four verdicts, by example") == "the-four-verdicts-by-example"
    assert _slug("gate.pairwise: changed answers judged side by side") == "gatepairwise-changed-answers-judged-side-by-side"
    assert _slug("`vertexai:final_response_match_v2`") == "vertexaifinal_response_match_v2"
    assert _slug("Efficiency (informational)") == "efficiency-informational"
    assert _slug("한국어 제목") == "한국어-제목"


def test_every_relative_link_resolves():
    broken = []
    for page in PAGES:
        for target in links(page):
            if not _relative(target):
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / unquote(path)).resolve() if path else page
            shown = f"{page.relative_to(REPO)}: ({target})"
            rel = file.relative_to(REPO).as_posix() if file.is_relative_to(REPO) else str(file)
            if not file.exists():
                broken.append(f"{shown}: no file {rel}")
                continue
            if anchor and file.suffix == ".md" and anchor not in anchors(file):
                broken.append(f"{shown}: {rel} has no heading #{anchor}")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_every_docs_page_is_reachable_from_the_readme():
    seen, todo = {README}, [README]
    while todo:
        page = todo.pop()
        for target in links(page):
            path = target.partition("#")[0]
            if not _relative(target) or not path:
                continue
            file = (page.parent / unquote(path)).resolve()
            if file.suffix == ".md" and file.is_file() and file not in seen:
                seen.add(file)
                todo.append(file)
    unreachable = [p.relative_to(REPO).as_posix() for p in PAGES if p.resolve() not in seen]
    assert not unreachable, f"not reachable from README.md by links: {unreachable}"


def test_configuration_page_is_generated_from_the_schema():
    spec = importlib.util.spec_from_file_location("make_configuration", REPO / "docs" / "make_configuration.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    page = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert page == module.render(), "docs/configuration.md is stale: run python docs/make_configuration.py"
    # Every key of the config appears in it: the generator missed no object.
    from evalgate.config import json_schema

    schema = json_schema()
    for name, definition in schema["$defs"].items():
        for key in definition.get("properties", {}):
            assert f"| `{key}`" in page, f"{name}.{key} is not in docs/configuration.md"


def _readme_block(lang: str, index: int = 0) -> str:
    blocks = re.findall(rf"^```{lang}\n(.*?)^```", README.read_text(encoding="utf-8"), re.M | re.S)
    return blocks[index]


def _first_command() -> str:
    return next(line for line in _readme_block("sh").splitlines() if line.strip() and not line.startswith("#"))


def test_readme_first_command_runs_as_written(tmp_path):
    """The README's first command, from a fresh folder holding the repository's examples: its
    install is left out (too slow for a test; the measured fresh-clone run does it), the
    evalgate part runs as written against this checkout, offline. What the README says it
    prints, it prints."""
    parts = [p.strip() for p in _first_command().split("&&")]
    assert parts[:2] == ["python3 -m venv .venv", ".venv/bin/pip install ."]
    argv = shlex.split(parts[2])
    assert argv[0] == ".venv/bin/evalgate"
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "GEMINI_", "GITHUB_"))}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run([sys.executable, "-m", "evalgate", *argv[1:]], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)

    readme = README.read_text(encoding="utf-8")
    assert "It exits 1:" in readme and done.returncode == 1, done.stderr
    shown = _readme_block("text")
    for line in shown.splitlines():
        line = line.split("; ...")[0]  # the README shortens the longest line
        assert any(out.startswith(line) for out in done.stdout.splitlines()), f"README shows {line!r}; the command printed:\n{done.stdout}"
    assert (tmp_path / "evalgate-results" / "comment.md").is_file()
    assert (tmp_path / "evalgate-results" / "report.html").is_file()


def test_readme_second_command_names_what_exists():
    line = [ln for ln in _readme_block("sh").splitlines() if ln.strip() and not ln.startswith("#")][1]
    assert line == 'python3 -m venv .venv && .venv/bin/pip install -e ".[test]" && .venv/bin/python -m pytest -q'
    import tomllib

    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert "test" in extras
    assert (REPO / ".ci" / "run").is_file()  # "CI runs the second command through .ci/run"


def test_readme_action_is_the_pull_request_workflow():
    """The README's ten lines are the pull-request workflow of docs/workflows.md, shortened:
    the same triggers, permissions and action input."""
    workflow = yaml.safe_load(_readme_block("yaml"))
    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    docs = yaml.safe_load(re.search(r"```yaml\n(name: evalgate-pr\n.*?)```", (REPO / "docs" / "workflows.md").read_text(encoding="utf-8"), re.S).group(1))
    on = workflow[True]  # YAML 1.1 reads the key `on` as true
    assert sorted(on) == sorted(docs[True])
    assert workflow["permissions"] == docs["permissions"]
    steps = workflow["jobs"]["gate"]["steps"]
    assert steps[0]["uses"] == "actions/checkout@v7"
    assert steps[1]["uses"].startswith("OWNER/evalgate@") and set(steps[1]["with"]) <= set(action["inputs"])
    assert len(_readme_block("yaml").strip().splitlines()) <= 11  # a comment and ten lines
