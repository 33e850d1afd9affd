"""Screenshots of every page of the explain UI: ``python -m mtagent.ui.screenshots OUTDIR``.

By default a fresh ``mtagent demo`` session is made in a temporary ``MTAGENT_HOME`` (so the
pictures are reproducible and show nobody's real sessions); ``--home DIR`` shows an existing
home instead. The pages are opened in the system's headless Chromium through Playwright
(``pip install 'mtagent[ui]' playwright``; Debian: ``apt-get install chromium``) and each is
checked with :data:`LAYOUT_CHECK_JS`: no two pieces of text overlap, and every series named in
a chart's legend is drawn. Problems are printed and make the exit code 1.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
VIEWPORT = {"width": 1280, "height": 900}
README_VIEWPORT = {"width": 1200, "height": 720}

# Returns {"overlaps": [[textA, textB], …], "missing": [series, …]} for the current page.
LAYOUT_CHECK_JS = r"""
() => {
  const clipOf = (el) => {
    let clip = {left: -1e9, top: -1e9, right: 1e9, bottom: 1e9};
    for (let a = el; a && a !== document.documentElement; a = a.parentElement) {
      const cs = getComputedStyle(a);
      if (cs.display === 'none' || cs.visibility === 'hidden') return null;
      if (a instanceof HTMLElement && (cs.overflowX !== 'visible' || cs.overflowY !== 'visible')) {
        const r = a.getBoundingClientRect();
        clip = {left: Math.max(clip.left, r.left), top: Math.max(clip.top, r.top),
                right: Math.min(clip.right, r.right), bottom: Math.min(clip.bottom, r.bottom)};
      }
    }
    return clip;
  };
  const boxes = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (!n.textContent.trim()) continue;
    const el = n.parentElement;
    if (!el || el.closest('title, script, style, option, select, details:not([open]) > :not(summary)')) continue;
    const clip = clipOf(el);
    if (!clip) continue;
    const range = document.createRange();
    range.selectNodeContents(n);
    for (const r of range.getClientRects()) {
      const b = {left: Math.max(r.left, clip.left), top: Math.max(r.top, clip.top),
                 right: Math.min(r.right, clip.right), bottom: Math.min(r.bottom, clip.bottom)};
      if (b.right - b.left > 0.5 && b.bottom - b.top > 0.5) boxes.push({b, node: n, text: n.textContent.trim().slice(0, 40)});
    }
  }
  boxes.sort((p, q) => p.b.top - q.b.top);
  const overlaps = [];
  const slack = 1.5;
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length && boxes[j].b.top < boxes[i].b.bottom - slack; j++) {
      if (boxes[i].node === boxes[j].node) continue;
      const a = boxes[i].b, c = boxes[j].b;
      const w = Math.min(a.right, c.right) - Math.max(a.left, c.left);
      const h = Math.min(a.bottom, c.bottom) - Math.max(a.top, c.top);
      if (w > slack && h > slack) overlaps.push([boxes[i].text, boxes[j].text]);
    }
  }
  const missing = [];
  for (const li of document.querySelectorAll('ul.legend li[data-series]')) {
    const name = li.getAttribute('data-series');
    const shapes = [...document.querySelectorAll('svg.chart [data-bucket], svg.chart g.series[data-series]')]
      .filter((e) => (e.getAttribute('data-bucket') || e.getAttribute('data-series')) === name);
    const drawn = shapes.some((e) => {
      const r = e.getBoundingClientRect();
      const cs = getComputedStyle(e.matches('g') ? e.querySelector('polyline') || e : e);
      const paint = e.matches('g') ? cs.stroke : cs.fill;
      return (r.width > 0 || r.height > 0) && r.width * r.height >= 0 && paint !== 'none'
        && cs.visibility !== 'hidden' && parseFloat(cs.opacity) > 0 && (e.matches('g') || (r.width >= 1 && r.height >= 1));
    });
    if (!drawn) missing.push(name);
  }
  return {overlaps: overlaps.slice(0, 20), missing};
}
"""


def chromium_executable() -> Path | None:
    """The system Chromium: ``MTAGENT_CHROMIUM``, else ``/usr/bin/chromium`` or one on PATH."""
    for candidate in (os.environ.get("MTAGENT_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                      shutil.which("chromium-browser")):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


@dataclass(slots=True, frozen=True)
class Shot:
    name: str
    path: str  # URL path on the UI server
    full_page: bool = True


def pages_of(home: Path) -> list[Shot]:
    """One shot per page, over the newest session that has a compaction (else the newest)."""
    from mtagent.ui.app import session_url
    from mtagent.ui.calls import call_points
    from mtagent.ui.catalog import Catalog
    from mtagent.ui.records import TranscriptCache

    catalog = Catalog(home)
    entries = [e for p in catalog.projects() for e in catalog.sessions(p)]
    if not entries:
        raise SystemExit(f"no sessions under {home}; run `mtagent demo` first or leave out --home")
    entry = next((e for e in entries if e.stats.compactions), entries[0])
    outline = TranscriptCache().outline(entry.path)
    records = outline.records
    points = call_points(records)
    call = next((p.number for p in points if records[p.offset].get("dropped")), len(points) or 1)
    artifact = next((r.get("path") for r in records if r.get("type") == "tool_result_artifact"), None)
    shots = [Shot("sessions", "/"), Shot("timeline", session_url(entry)),
             Shot("call", session_url(entry, tail=f"/call/{call}")),
             Shot("artifacts", session_url(entry, tail="/artifacts?q=def+build")),
             Shot("memory", session_url(entry, tail="/memory"))]
    if artifact:
        from urllib.parse import quote

        shots.append(Shot("artifact", session_url(entry, tail=f"/artifact?path={quote(str(artifact))}"), False))
    ref = f"session:{entry.project}:{entry.key}"
    from urllib.parse import urlencode

    query = urlencode([("source", ref), ("strategy", "mtagent"), ("strategy", "masking"),
                       ("strategy", "lc-clear-tool-uses"), ("window", str(_window(points)))])
    shots.append(Shot("replay", f"/replay?{query}"))
    return shots


def _window(points: list[Any]) -> int:
    return next((p.token_limit for p in reversed(points) if p.token_limit), 16_384)


@contextmanager
def demo_home() -> Iterator[Path]:
    """A temporary MTAGENT_HOME holding one fresh ``mtagent demo`` session."""
    import mtagent
    from mtagent.agent.demo import run_demo

    with tempfile.TemporaryDirectory(prefix="mtagent-ui-shots-") as tmp:
        before = os.environ.get("MTAGENT_HOME")
        os.environ["MTAGENT_HOME"] = tmp
        try:
            run_demo(Path(mtagent.__file__).resolve().parent)  # mtagent's own source, as `mtagent demo`
            yield Path(tmp)
        finally:
            if before is None:
                os.environ.pop("MTAGENT_HOME", None)
            else:
                os.environ["MTAGENT_HOME"] = before


def take(outdir: Path, home: Path, readme: Path | None = None) -> list[str]:
    """Screenshot every page into ``outdir``; returns the layout problems found (empty when none)."""
    from playwright.sync_api import sync_playwright

    from mtagent.ui.app import UiOptions
    from mtagent.ui.server import BackgroundServer

    chromium = chromium_executable()
    if chromium is None:
        raise SystemExit("headless Chromium not found (apt-get install chromium, or set MTAGENT_CHROMIUM)")
    outdir.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    shots = pages_of(home)
    with BackgroundServer(UiOptions(home=home)) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport=VIEWPORT)  # type: ignore[arg-type]
            for shot in shots:
                page.goto(url + shot.path, timeout=120_000)
                found = page.evaluate(LAYOUT_CHECK_JS)
                problems += [f"{shot.name}: text overlaps: {a!r} / {b!r}" for a, b in found["overlaps"]]
                problems += [f"{shot.name}: series {s!r} is in the legend but not drawn" for s in found["missing"]]
                page.screenshot(path=str(outdir / f"{shot.name}.png"), full_page=shot.full_page)
                print(f"{outdir / (shot.name + '.png')}  {shot.path}")
            if readme is not None:
                page.set_viewport_size(README_VIEWPORT)  # type: ignore[arg-type]
                page.goto(url + shots[1].path)
                page.screenshot(path=str(readme), full_page=False)
                print(f"{readme}  (README picture: the timeline)")
        finally:
            browser.close()
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mtagent.ui.screenshots",
                                     description="Screenshot every page of the explain UI (and check its layout).")
    parser.add_argument("outdir", type=Path, help="folder for the PNG files (created)")
    parser.add_argument("--home", type=Path, help="an existing MTAGENT_HOME to show (default: a fresh demo session)")
    parser.add_argument("--readme", type=Path, help="also write the README picture (the timeline) to this file")
    args = parser.parse_args(argv)
    if args.home is not None:
        problems = take(args.outdir, args.home.expanduser().resolve(), args.readme)
    else:
        with demo_home() as home:
            problems = take(args.outdir, home, args.readme)
    for line in problems:
        print(f"layout: {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
