"""The README's pictures, made from the bundled example: its PR comment as GitHub shows it,
and its HTML report.

    python docs/images/render.py

writes docs/images/comment.png and docs/images/report.png (run it from any folder, in a
checkout); `--language ko` writes comment.ko.png and report.ko.png, the same in Korean (the
README links comment.ko.png: refresh it with the others). Refresh them whenever the comment's or the report's look changes (the templates,
report.css, report.js) or examples/quickstart changes: run the command and commit the two
PNGs. `--out DIR` writes them elsewhere; `--markdown FILE` renders any comment.md instead of
the example's (to look at a comment before it is posted); `--keep` keeps the temp folder.

What it does:
1. Gates examples/quickstart exactly as the README's first command does (`evalgate gate
   --baseline` the baseline main's shipped store holds, examples/quickstart/main/store,
   which brings main's flake ledger): two stable Korean cases broke, a Japanese case was
   fixed, an English case that is flaky on main is not blamed.
2. comment.png: the comment.md that gate wrote, rendered in headless Chromium by `marked`
   (GitHub Flavored Markdown: tables, strikethrough, task lists, autolinks) with
   `marked-alert` (GitHub's `> [!NOTE]` alerts, in GitHub's markup with its icons), styled by
   `github-markdown-css` (GitHub's Markdown stylesheet, generated from GitHub's own CSS; light
   theme), in a comment box 1012 px wide. Three things GitHub does beyond marked's output
   are done here by hand, as GitHub does them: ```diff blocks are coloured line by line (the
   stylesheet's pl-md / pl-mi1 classes), task lists get GitHub's classes, and raw HTML must
   be of the tags GitHub keeps (the script fails on any other: GitHub would strip it). One
   `<details>` is shown open, as after a reader's click (the first that holds a tool-call
   diff); the others stay closed, as GitHub first shows them.
3. report.png: report.html's Overview at 1400 px wide, the whole view.
4. Optimises both PNGs with pngquant (256 colours) and optipng when they are installed, and
   prints each file's size.

Needs: Debian's chromium and a CJK font (`apt-get install chromium fonts-noto-cjk`; another
chromium: EVALGATE_CHROMIUM=/path), Playwright's Python package (in the test extra:
`pip install -e '.[test]'`; its own browser download is never used), git, and npm: the three
npm packages (pinned below) are installed once into ~/.cache/evalgate/pictures (or
EVALGATE_PICTURES_NPM) from the npm registry and loaded from there; the page fetches nothing.
For small files: `apt-get install pngquant optipng`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
EXAMPLE = ROOT / "examples" / "quickstart"
CHROMIUM = os.environ.get("EVALGATE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"]
NPM_PACKAGES = {"marked": "18.2.1", "marked-alert": "2.1.2", "github-markdown-css": "5.9.0"}
NPM_DIR = Path(os.environ.get("EVALGATE_PICTURES_NPM") or Path.home() / ".cache" / "evalgate" / "pictures")

COMMENT_WIDTH = 1012  # css px: about as wide as a comment in a pull request's conversation on a wide screen
REPORT_WIDTH = 1400
PAGE_PAD = 16

# The tags GitHub's sanitiser keeps in rendered Markdown (html-pipeline's allowlist, as far as
# a comment can use them); svg only inside an alert's title, where GitHub itself puts it.
GITHUB_TAGS = set(
    "h1 h2 h3 h4 h5 h6 h7 h8 br b i strong em a pre code img tt div ins del sup sub p ol ul table thead tbody tfoot "
    "blockquote dl dt dd kbd q samp var hr ruby rt rp li tr td th s strike summary details caption figure figcaption "
    "abbr bdo cite dfn mark small span time wbr input picture source".split()
)


def evalgate(*args: str, cwd: Path, check_codes=(0, 1)) -> str:
    """Run this checkout's evalgate (not an installed one) and return what it printed."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    p = subprocess.run([sys.executable, "-m", "evalgate", *args], cwd=cwd, env=env, capture_output=True, text=True, encoding="utf-8")
    if p.returncode not in check_codes:
        sys.exit(f"evalgate {' '.join(args)} exited {p.returncode}:\n{p.stdout}{p.stderr}")
    return p.stdout + p.stderr


def gate_example(tmp: Path, language: str = "en") -> Path:
    """Gate the example as the README's first command does (in `language`); the folder
    holding its comment.md and report.html."""
    [baseline] = sorted((EXAMPLE / "main" / "store" / "baselines" / "evalgate").glob("*.json.gz"))
    out = tmp / "gate"
    said = evalgate(
        "gate", "--config", str(EXAMPLE / "evalgate.yaml"), "--baseline", str(baseline), "--out", str(out), "--quiet", "--language", language, cwd=ROOT
    )
    print(said.strip().splitlines()[0] if said.strip() else "gated")
    return out


# --- 2. and 3. the pictures -------------------------------------------------------------


def npm_packages() -> Path:
    """The folder of the pinned npm packages, installed on first use."""
    modules = NPM_DIR / "node_modules"
    want = {name: version for name, version in NPM_PACKAGES.items()}
    have = {}
    for name in want:
        pkg = modules / name / "package.json"
        if pkg.is_file():
            have[name] = json.loads(pkg.read_text(encoding="utf-8")).get("version")
    if have != want:
        npm = shutil.which("npm")
        if not npm:
            sys.exit("npm is needed once, to install " + ", ".join(f"{n}@{v}" for n, v in want.items()) + " (apt-get install npm)")
        NPM_DIR.mkdir(parents=True, exist_ok=True)
        print(f"npm install {' '.join(f'{n}@{v}' for n, v in want.items())} into {NPM_DIR}")
        subprocess.run([npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(NPM_DIR), *(f"{n}@{v}" for n, v in want.items())], check=True)
    return modules


COMMENT_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><style>{css}</style><style>
  body {{ margin: 0; background: #fff; }}
  /* A comment box as on a pull request's conversation: a header over the rendered body. */
  .comment {{ width: {width}px; box-sizing: border-box; margin: {pad}px; border: 1px solid #d0d7de; border-radius: 6px; overflow: hidden; }}
  .comment .head {{ background: #f6f8fa; border-bottom: 1px solid #d0d7de; padding: 8px 16px; color: #59636e;
    font: 14px/1.5 -apple-system, BlinkMacSystemFont, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; }}
  .comment .head b {{ color: #1f2328; }}
  .comment .head .bot {{ border: 1px solid #d0d7de; border-radius: 2em; padding: 0 7px; font-size: 12px; margin: 0 4px; }}
  .markdown-body {{ padding: 16px; }}
</style></head>
<body><div class="comment" id="comment"><div class="head"><b>github-actions</b><span class="bot">bot</span> commented</div>
<article class="markdown-body" id="body"></article></div></body></html>
"""

RENDER = """(md) => {
  marked.use({ gfm: true }, markedAlert());
  const body = document.getElementById('body');
  body.innerHTML = marked.parse(md);
  // GitHub colours ```diff blocks line by line; marked leaves code plain.
  for (const code of body.querySelectorAll('pre > code.language-diff')) {
    const lines = code.textContent.replace(/\\n$/, '').split('\\n');
    code.textContent = '';
    lines.forEach((line, i) => {
      const cls = line.startsWith('-') ? 'pl-md' : line.startsWith('+') ? 'pl-mi1' : line.startsWith('@@') ? 'pl-mdr' : null;
      const span = document.createElement('span');
      if (cls) span.className = cls;
      span.textContent = line;
      code.appendChild(span);
      if (i < lines.length - 1) code.appendChild(document.createTextNode('\\n'));
    });
  }
  // GitHub's classes for task lists (no bullets); marked writes bare checkboxes.
  for (const box of body.querySelectorAll('li > input[type=checkbox]:first-child')) {
    box.parentElement.classList.add('task-list-item');
    box.classList.add('task-list-item-checkbox');
    box.parentElement.parentElement.classList.add('contains-task-list');
  }
  // One <details> open, as after a reader's click: the first with a tool-call diff, else the first.
  const details = [...body.querySelectorAll('details')];
  const shown = details.find(d => d.querySelector('code.language-diff')) || details[0];
  if (shown) shown.open = true;
  const tags = new Set();
  for (const e of body.querySelectorAll('*')) {
    if (!e.closest('.markdown-alert-title')) tags.add(e.tagName.toLowerCase());
  }
  return [...tags];
}"""


def launch(playwright):
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        sys.exit(f"no chromium at {CHROMIUM}: apt-get install chromium fonts-noto-cjk (or set EVALGATE_CHROMIUM)")
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


def render_comment(browser, markdown: str, png: Path) -> None:
    modules = npm_packages()
    css = (modules / "github-markdown-css" / "github-markdown-light.css").read_text(encoding="utf-8")
    page = browser.new_page(viewport={"width": COMMENT_WIDTH + 2 * PAGE_PAD, "height": 800})
    page.route("**/*", lambda route: route.abort())  # nothing from the network, even if the comment links an image
    try:
        page.set_content(COMMENT_PAGE.format(css=css, width=COMMENT_WIDTH, pad=PAGE_PAD))
        page.add_script_tag(path=str(modules / "marked" / "lib" / "marked.umd.js"))
        page.add_script_tag(path=str(modules / "marked-alert" / "dist" / "index.umd.js"))
        tags = page.evaluate(RENDER, markdown)
        stripped = sorted(set(tags) - GITHUB_TAGS)
        if stripped:
            sys.exit(f"the comment uses HTML that GitHub strips: {', '.join(stripped)}")
        page.evaluate("document.fonts.ready")
        page.locator("#comment").screenshot(path=str(png))
    finally:
        page.close()


def screenshot_report(browser, report: Path, png: Path) -> None:
    page = browser.new_page(viewport={"width": REPORT_WIDTH, "height": 900})
    try:
        page.goto(report.as_uri())
        page.wait_for_selector("body.ready")
        # The views scroll inside the page: grow the window to the Overview's height.
        grow = page.evaluate("() => { const e = document.getElementById('overview'); return e.scrollHeight - e.clientHeight; }")
        page.set_viewport_size({"width": REPORT_WIDTH, "height": min(900 + int(grow) + 2, 4000)})
        page.evaluate("document.fonts.ready")
        page.screenshot(path=str(png))
    finally:
        page.close()


def optimise(png: Path) -> str:
    """Shrink a PNG with the tools at hand; what was done."""
    done = []
    if shutil.which("pngquant"):
        subprocess.run(["pngquant", "--force", "--skip-if-larger", "--speed", "1", "--strip", "--quality", "80-100", "--output", str(png), str(png)], check=False)
        done.append("pngquant")
    if shutil.which("optipng"):
        subprocess.run(["optipng", "-quiet", "-o5", "-strip", "all", str(png)], check=True)
        done.append("optipng")
    return " + ".join(done) or "not optimised (apt-get install pngquant optipng)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=HERE, help="folder for comment.png and report.png (default: docs/images)")
    parser.add_argument("--markdown", type=Path, help="render this comment.md (comment.png only) instead of gating the example")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder (the gate's outputs) and print its path")
    parser.add_argument("--language", choices=["en", "ko", "ja"], default="en", help="the reports' language; other than en, the files are comment.LANG.png and report.LANG.png")
    args = parser.parse_args(argv)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sys.exit("Playwright's Python package is needed: pip install -e '.[test]' (or pip install playwright)")
    args.out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="evalgate-pictures-"))
    try:
        shots = []
        with sync_playwright() as p:
            browser = launch(p)
            # Made and optimised in the temp folder, then copied: the pictures in docs/images
            # are replaced only when both came out (and optimisers never work in place there).
            suffix = "" if args.language == "en" else f".{args.language}"
            comment_png, report_png = tmp / f"comment{suffix}.png", tmp / f"report{suffix}.png"
            if args.markdown:
                render_comment(browser, args.markdown.read_text(encoding="utf-8"), comment_png)
                shots.append(comment_png)
            else:
                gated = gate_example(tmp, args.language)
                render_comment(browser, (gated / "comment.md").read_text(encoding="utf-8"), comment_png)
                screenshot_report(browser, gated / "report.html", report_png)
                shots += [comment_png, report_png]
            browser.close()
        done = [(png, optimise(png)) for png in shots]
        args.out.mkdir(parents=True, exist_ok=True)
        for png, how in done:
            target = args.out / png.name
            shutil.copyfile(png, target)
            print(f"{target}: {target.stat().st_size / 1024:.0f} kB ({how})")
    finally:
        if args.keep:
            print(f"kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
