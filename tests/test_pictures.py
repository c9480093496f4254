"""docs/images/render.py, the README's pictures: the example gated as the script gates it,
report.html screenshot at 1400 px with every criterion table inside its card, and the
comment rendered as GitHub renders Markdown.

The browser tests use test_html_report's chromium (skip without it, fail under
EVALGATE_BROWSER=require). The comment test needs the script's pinned npm packages
(`python docs/images/render.py` installs them once); without them it skips.
"""

from __future__ import annotations

import importlib.util
import json
import re
import struct
import sys
from pathlib import Path

import pytest

from test_html_report import Watched, _fit, browser  # noqa: F401  (browser is a fixture)

ROOT = Path(__file__).resolve().parents[1]


def _render_module():
    spec = importlib.util.spec_from_file_location("evalgate_pictures", ROOT / "docs" / "images" / "render.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules.setdefault("evalgate_pictures", module)
    spec.loader.exec_module(module)
    return module


render = _render_module()


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


@pytest.fixture(scope="module")
def gated(tmp_path_factory) -> Path:
    return render.gate_example(tmp_path_factory.mktemp("pictures"))


def test_the_example_is_gated_against_a_baseline(gated):
    """The picture shows a comparison: a verdict against a baseline, with a regression."""
    comment = (gated / "comment.md").read_text(encoding="utf-8")
    assert "No baseline found" not in comment and "absolute thresholds only" not in comment
    assert re.match(r"\*\*evalgate (FAIL|INCONCLUSIVE|PASS)\*\*", comment.splitlines()[1])
    assert "### Regressed cases" in comment and "<details>" in comment
    assert (gated / "report.html").is_file()


def test_the_report_picture_fits_at_1400px(browser, gated, tmp_path):
    png = tmp_path / "report.png"
    render.screenshot_report(browser, gated / "report.html", png)
    width, height = _png_size(png)
    assert width == render.REPORT_WIDTH == 1400 and 600 < height < 4000
    w = Watched(browser, gated / "report.html", viewport=(1400, 900))
    try:
        fits = _fit(w.page)
        assert fits and "support-agent" in [f["suite"] for f in fits]
        for f in fits:
            assert f["table_right"] <= f["card_inner_right"] + 0.5 and f["hidden"] <= 0, f
        assert w.clean() == []
    finally:
        w.close()


def test_the_comment_renders_as_github_does(browser, tmp_path):
    modules = render.NPM_DIR / "node_modules"
    if not all((modules / name / "package.json").is_file() for name in render.NPM_PACKAGES):
        pytest.skip(f"the pictures' npm packages are not in {render.NPM_DIR} (python docs/images/render.py installs them)")
    markdown = "\n".join([
        "**evalgate FAIL** · 1 regressed case",
        "",
        "> [!WARNING]",
        "> **The configuration changed since the baseline.**",
        "",
        "| criterion | score |",
        "|---|--:|",
        "| ~~old~~ response\\_match\\_score | 0.44 |",
        "",
        "<details>",
        "<summary><b>regressed</b> order-status-ko: 注文 / 주문</summary>",
        "",
        "```diff",
        "- lookup_order({\"order_id\":\"B2019\"})",
        "+ get_shipping_status({\"tracking_id\":\"B2019\"})",
        "```",
        "",
        "</details>",
        "",
        "<details><summary>closed</summary>",
        "",
        "hidden",
        "",
        "</details>",
    ])
    png = tmp_path / "comment.png"
    render.render_comment(browser, markdown, png)
    assert _png_size(png)[0] == render.COMMENT_WIDTH
    # The same page again, to read what it drew.
    page = browser.new_page()
    try:
        css = (modules / "github-markdown-css" / "github-markdown-light.css").read_text(encoding="utf-8")
        page.set_content(render.COMMENT_PAGE.format(css=css, width=render.COMMENT_WIDTH, pad=render.PAGE_PAD))
        page.add_script_tag(path=str(modules / "marked" / "lib" / "marked.umd.js"))
        page.add_script_tag(path=str(modules / "marked-alert" / "dist" / "index.umd.js"))
        tags = page.evaluate(render.RENDER, markdown)
        assert set(tags) <= render.GITHUB_TAGS
        assert page.text_content(".markdown-alert-warning .markdown-alert-title").strip() == "Warning"
        assert page.locator(".markdown-alert-warning svg.octicon").count() == 1
        assert page.eval_on_selector(".markdown-alert-warning", "e => getComputedStyle(e).borderLeftColor") != "rgba(0, 0, 0, 0)"
        assert page.locator("table del").count() == 1 and page.text_content("table td:last-child").strip() == "0.44"
        assert page.eval_on_selector_all("details", "ds => ds.map(d => d.open)") == [True, False]  # the one with a diff opened
        assert page.text_content("code.language-diff .pl-md").startswith("- lookup_order")
        assert page.text_content("code.language-diff .pl-mi1").startswith("+ get_shipping_status")
        assert "注文 / 주문" in page.text_content("summary")
    finally:
        page.close()
    # A tag GitHub strips is refused, not drawn.
    with pytest.raises(SystemExit, match="GitHub strips: iframe"):
        render.render_comment(browser, "<iframe src=x></iframe>", tmp_path / "bad.png")
