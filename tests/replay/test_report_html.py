"""The HTML replay report: round ticks, one-call sessions, and its layout in headless Chromium.

The browser tests load a real report (two recorded sessions, a window small enough that four
strategies compact) and check what a reader sees: no two text boxes overlap, every strategy's
line can be hit somewhere (so none is hidden under another), the charts follow the page width,
and a full-page screenshot shows every strategy's colour.
"""

from __future__ import annotations

import base64
import dataclasses
from pathlib import Path

import pytest

from mtagent.config import load_settings
from mtagent.replay.names import STRATEGY_NAMES
from mtagent.replay.executors.local import LocalExecutor
from mtagent.replay.units import replay_parallel
from mtagent.replay.report_html import STYLES, nice_ticks, render_report, write_report

SMALL = "mini-swe-agent/tests__test_data__github_issue.traj.json"
TRAJECTORIES = Path(__file__).resolve().parents[3] / "shared" / "trajectories"
TIGHT = {"MTAGENT_CONTEXT__SUMMARY_RESERVED_TOKENS": "500", "MTAGENT_CONTEXT__AUTOCOMPACT_BUFFER_TOKENS": "500",
         "MTAGENT_CONTEXT__COMPRESSION_PRESERVE_MIN_TOKENS": "500",
         "MTAGENT_CONTEXT__COMPRESSION_PRESERVE_MAX_TOKENS": "1500"}


@pytest.fixture(scope="module")
def sessions(request):
    if not TRAJECTORIES.is_dir():
        pytest.skip(f"shared trajectories not found at {TRAJECTORIES}")
    settings = load_settings(None, environ=TIGHT)
    return replay_parallel([TRAJECTORIES / SMALL, TRAJECTORIES / "claude-code/tool_heavy.jsonl"], list(STRATEGY_NAMES),
                           2048, None, settings, LocalExecutor(1))[0]


@pytest.fixture
def report(tmp_path, sessions) -> Path:
    path = tmp_path / "report.html"
    write_report(path, sessions, list(STRATEGY_NAMES))
    return path


def test_ticks_are_round_numbers():
    assert nice_ticks(2150) == [0, 500, 1000, 1500, 2000, 2500]
    assert nice_ticks(131_072 * 1.02) == [0, 50_000, 100_000, 150_000]
    assert nice_ticks(10, 8, integer=True) == [0, 2, 4, 6, 8, 10]
    assert nice_ticks(2, 8, integer=True) == [0, 1, 2]


def test_one_call_session_says_so_instead_of_an_empty_chart(sessions):
    one = sessions[0]
    short = dataclasses.replace(one, results={k: dataclasses.replace(v, turns=v.turns[:1])
                                              for k, v in one.results.items()})
    html = render_report([short], list(STRATEGY_NAMES))
    assert "<svg" not in html and "One model call" in html and "<table>" in html


def test_charts_scale_and_mark_compactions_in_a_strip(report):
    html = report.read_text()
    assert 'width="760"' not in html and 'viewBox="0 0 900' in html
    assert html.count('class="compaction"') >= 10 and "<circle" not in html
    assert html.count('class="series"') == 4 * len(STRATEGY_NAMES)


LAYOUT_JS = """
() => {
  const out = {overlaps: [], hidden: [], widths: []};
  const hit = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  for (const svg of document.querySelectorAll('svg.chart')) {
    svg.scrollIntoView({block: 'center'});
    out.widths.push(svg.getBoundingClientRect().width);
    const texts = [...svg.querySelectorAll('text')].map(t => [t.textContent, t.getBoundingClientRect()]);
    for (let i = 0; i < texts.length; i++)
      for (let j = i + 1; j < texts.length; j++)
        if (hit(texts[i][1], texts[j][1])) out.overlaps.push(texts[i][0] + ' / ' + texts[j][0]);
    for (const line of svg.querySelectorAll('polyline.series')) {
      const m = line.getScreenCTM(); const pts = line.points; let seen = false;
      for (let k = 0; k < pts.numberOfItems - 1 && !seen; k++) {
        const a = pts.getItem(k), b = pts.getItem(k + 1);
        for (const f of [0.2, 0.35, 0.5, 0.65, 0.8]) {
          const p = new DOMPoint(a.x + (b.x - a.x) * f, a.y + (b.y - a.y) * f).matrixTransform(m);
          for (let d = -7; d <= 7 && !seen; d += 0.5)
            if (document.elementFromPoint(p.x, p.y + d) === line) seen = true;
        }
      }
      if (!seen) out.hidden.push(svg.getAttribute('aria-label') + ': ' + line.dataset.strategy);
    }
  }
  return out;
}
"""


@pytest.mark.parametrize("viewport_width", [1000, 700])
def test_layout_no_overlapping_text_and_every_line_visible(chromium_page, report, viewport_width):
    chromium_page.set_viewport_size({"width": viewport_width, "height": 900})
    chromium_page.goto(report.as_uri())
    result = chromium_page.evaluate(LAYOUT_JS)
    assert len(result["widths"]) == 4
    assert result["overlaps"] == []
    assert result["hidden"] == []
    assert all(w <= viewport_width - 40 for w in result["widths"])


COLOUR_JS = """
async ([png, colours]) => {
  const img = new Image(); img.src = 'data:image/png;base64,' + png; await img.decode();
  const canvas = document.createElement('canvas'); canvas.width = img.width; canvas.height = img.height;
  const ctx = canvas.getContext('2d'); ctx.drawImage(img, 0, 0);
  const data = ctx.getImageData(0, 0, img.width, img.height).data;
  const rgb = colours.map(c => [1, 3, 5].map(i => parseInt(c.slice(i, i + 2), 16)));
  const counts = rgb.map(() => 0);
  for (let i = 0; i < data.length; i += 4)
    rgb.forEach((c, k) => { if (Math.abs(data[i] - c[0]) + Math.abs(data[i + 1] - c[1]) + Math.abs(data[i + 2] - c[2]) < 30) counts[k]++; });
  return {counts, width: img.width, height: img.height};
}
"""


def test_screenshot_shows_every_strategy_colour(chromium_page, report, tmp_path):
    chromium_page.goto(report.as_uri())
    png = chromium_page.screenshot(full_page=True)
    (tmp_path / "report.png").write_bytes(png)
    chromium_page.set_content("<html><body></body></html>")
    colours = [STYLES[name][0] for name in STRATEGY_NAMES]
    result = chromium_page.evaluate(COLOUR_JS, [base64.b64encode(png).decode(), colours])
    assert result["width"] == 1000 and result["height"] > 1500
    missing = [name for name, count in zip(STRATEGY_NAMES, result["counts"]) if count < 150]
    assert missing == [], dict(zip(STRATEGY_NAMES, result["counts"]))
