"""A self-contained HTML replay report: inline SVG charts and tables, no external JS or CSS.

Per session: view tokens per model call for each strategy (the window as a dashed line),
fact retention per call, a strip marking each strategy's compactions, and the totals table.

Readable when strategies agree: identical series are common (every strategy equals ``raw``
until the first compaction; retention sits at 1.0), so lines are drawn widest first, each
strategy narrower than the one beneath and with its own dash, and every line stays visible
as a coloured edge. Compactions go in a strip under the plot (one row per strategy), not as
dots on the lines, where a strategy that compacts at every call would draw a solid band.
Ticks are round numbers (1, 2 or 5 × 10^k); axis titles sit above the plot and below the
tick labels, never on them. A one-call session has nothing to chart and says so. Charts
scale to the page width (viewBox).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path

from mtagent.replay.report import SessionReplay, replay_names, row

# colour and dash per strategy; unknown names get a neutral style
STYLES: dict[str, tuple[str, str]] = {
    "raw": ("#9a9a9a", ""),
    "mtagent": ("#d62728", ""),
    "mtagent-sm": ("#e377c2", "7,3"),
    "masking": ("#1f77b4", "2,2"),
    "lc-summarization": ("#2ca02c", "9,3,2,3"),
    "lc-clear-tool-uses": ("#9467bd", "5,2"),
    "threshold-compact": ("#ff7f0e", "3,3"),
}
WIDTH, PLOT_HEIGHT = 900, 200
TOP, RIGHT, BOTTOM = 30, 20, 44  # y title above the plot; x tick labels and x title below it
RUG_ROW = 15
FONT_PX, CHAR_PX = 11, 6.6  # text size, and a generous average glyph width for layout
LINE_MIN, LINE_STEP = 2.0, 1.2  # narrowest line; each layer beneath is this much wider

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fff;max-width:1150px}
h1{font-size:20px}h2{font-size:16px;margin-top:32px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
td:first-child,th:first-child{text-align:left;white-space:nowrap}.legend span{margin-right:14px;white-space:nowrap}
.sw{display:inline-block;width:22px;height:0;margin-right:5px;vertical-align:middle;border-top-width:3px}
svg.chart{display:block;width:100%;height:auto;background:#fafafa;border:1px solid #ddd;margin:6px 0}
svg text{font-family:system-ui,sans-serif}.tw{overflow-x:auto}.note{color:#555;font-style:italic}
"""


def nice_step(span: float, target: int = 5) -> float:
    """A round tick step (1, 2 or 5 × 10^k) giving about ``target`` ticks over ``span``."""
    if span <= 0:
        return 1.0
    raw = span / target
    power = 10 ** math.floor(math.log10(raw))
    for mult in (1, 2, 5, 10):
        if mult * power >= raw:
            return float(mult * power)
    return float(10 * power)


def nice_ticks(top: float, target: int = 5, *, integer: bool = False) -> list[float]:
    """Ticks from 0 to the first round value at or above ``top``."""
    step = nice_step(top, target)
    if integer:
        step = max(1.0, round(step))
    count = max(1, math.ceil(top / step - 1e-9))
    return [i * step for i in range(count + 1)]


def tick_label(value: float, step: float) -> str:
    if step >= 1000 and value % 1000 == 0:
        return f"{value / 1000:,.0f}k"
    if step >= 1:
        return f"{value:,.0f}"
    return f"{value:.1f}"


@dataclass(slots=True)
class PlotArea:
    """Where the plot sits inside the SVG, and the data ranges it maps."""

    left: float
    height: float
    max_x: int
    max_y: float

    @property
    def plot_bottom(self) -> float:
        return TOP + PLOT_HEIGHT

    def x(self, call: int) -> float:
        return self.left + (WIDTH - RIGHT - self.left) * ((call - 1) / max(self.max_x - 1, 1))

    def y(self, value: float) -> float:
        return self.plot_bottom - PLOT_HEIGHT * (value / self.max_y if self.max_y else 0)


def _text(x: float, y: float, body: str, *, anchor: str = "start", size: int = FONT_PX, cls: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}"{klass}>'
            f"{escape(body)}</text>")


def _axes(frame: PlotArea, y_ticks: list[float], y_title: str, fmt: Callable[[float], str]) -> list[str]:
    bottom = frame.plot_bottom
    parts = [
        f'<line x1="{frame.left}" y1="{bottom}" x2="{WIDTH - RIGHT}" y2="{bottom}" stroke="#444"/>',
        f'<line x1="{frame.left}" y1="{TOP}" x2="{frame.left}" y2="{bottom}" stroke="#444"/>',
        _text(frame.left, TOP - 12, y_title, cls="axis-title"),
    ]
    for value in y_ticks:
        y = frame.y(value)
        parts.append(f'<line x1="{frame.left - 4}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" '
                     f'stroke="#e4e4e4" stroke-width="1"/>')
        parts.append(_text(frame.left - 7, y + 4, fmt(value), anchor="end", cls="tick"))
    x_ticks = [t for t in nice_ticks(frame.max_x, 8, integer=True) if 1 <= t <= frame.max_x] or [1.0]
    for call in x_ticks:
        x = frame.x(int(call))
        parts.append(f'<line x1="{x:.1f}" y1="{bottom}" x2="{x:.1f}" y2="{bottom + 4}" stroke="#444"/>')
        parts.append(_text(x, bottom + 16, f"{int(call):,}", anchor="middle", cls="tick"))
    parts.append(_text((frame.left + WIDTH - RIGHT) / 2, bottom + 34, f"model call (1–{frame.max_x:,})",
                       anchor="middle", cls="axis-title"))
    return parts


def _line(name: str, points: list[tuple[float, float]], layer: int, layers: int) -> str:
    color, dash = STYLES.get(name, ("#333333", "3,3"))
    width = LINE_MIN + LINE_STEP * (layers - 1 - layer)
    coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
    return (f'<polyline class="series" data-strategy="{escape(name)}" fill="none" stroke="{color}" '
            f'stroke-width="{width:.1f}" stroke-linejoin="round"{dash_attr} points="{coords}">'
            f"<title>{escape(name)}</title></polyline>")


def _left_margin(labels: Sequence[str]) -> float:
    return 14 + CHAR_PX * max((len(s) for s in labels), default=4)


def _svg(body: list[str], height: float, label: str) -> str:
    return (f'<svg class="chart" viewBox="0 0 {WIDTH} {height:.0f}" role="img" aria-label="{escape(label)}" '
            f'preserveAspectRatio="xMidYMid meet">{"".join(body)}</svg>')


def _rug(frame: PlotArea, session: SessionReplay, strategies: Sequence[str]) -> tuple[list[str], float]:
    """A row per compacting strategy under the x-axis title, a short tick at each compaction."""
    parts: list[str] = []
    top = frame.plot_bottom + BOTTOM + 4
    rows = [n for n in strategies if any(t.compacted for t in session.results[n].turns)]
    if rows:
        parts.append(_text(frame.left, top + 2, "compactions", size=10, cls="axis-title"))
    for i, name in enumerate(rows):
        y = top + 8 + i * RUG_ROW
        color = STYLES.get(name, ("#333333", ""))[0]
        parts.append(_text(frame.left - 7, y + 8, name, anchor="end", size=10, cls="tick"))
        for t in session.results[name].turns:
            if t.compacted:
                x = frame.x(t.turn + 1)
                parts.append(f'<line class="compaction" x1="{x:.1f}" y1="{y + 1}" x2="{x:.1f}" y2="{y + 9}" '
                             f'stroke="{color}" stroke-width="1.5"><title>{escape(name)} compacted at call '
                             f"{t.turn + 1}</title></line>")
    return parts, (top + 8 + len(rows) * RUG_ROW + 4) if rows else frame.plot_bottom + BOTTOM


def tokens_chart(session: SessionReplay, strategies: Sequence[str]) -> str:
    calls = len(session.raw.turns)
    top = max([session.window] + [t.view_tokens for s in strategies for t in session.results[s].turns])
    y_ticks = nice_ticks(top * 1.02)
    step = y_ticks[1] - y_ticks[0] if len(y_ticks) > 1 else 1.0
    labels = [tick_label(v, step) for v in y_ticks]
    rug_names = [n for n in strategies if any(t.compacted for t in session.results[n].turns)]
    frame = PlotArea(_left_margin(labels + rug_names), 0, calls, y_ticks[-1])
    body = _axes(frame, y_ticks, "view tokens sent per model call", lambda v: tick_label(v, step))
    wy = frame.y(session.window)
    body.append(f'<line x1="{frame.left}" y1="{wy:.1f}" x2="{WIDTH - RIGHT}" y2="{wy:.1f}" stroke="#000" '
                'stroke-dasharray="6,4"/>')
    body.append(_text(WIDTH - RIGHT - 4, TOP - 12, f"- - - window {session.window:,} tokens", anchor="end",
                      cls="axis-title"))
    for layer, name in enumerate(strategies):
        points = [(frame.x(t.turn + 1), frame.y(t.view_tokens)) for t in session.results[name].turns]
        body.append(_line(name, points, layer, len(strategies)))
    rug, height = _rug(frame, session, strategies)
    return _svg(body + rug, height, f"view tokens per model call, {session.label}")


def retention_chart(session: SessionReplay, strategies: Sequence[str]) -> str:
    calls = len(session.raw.turns)
    y_ticks = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    frame = PlotArea(_left_margin(["0.0"]), 0, calls, 1.08)  # headroom: lines at 1.0 stay off the top edge
    body = _axes(frame, y_ticks, "fact retention (share of earlier facts still in the view)",
                 lambda v: f"{v:.1f}")
    for layer, name in enumerate(strategies):
        points = [(frame.x(t.turn + 1), frame.y(t.retention)) for t in session.results[name].turns
                  if t.retention is not None]
        if points:
            body.append(_line(name, points, layer, len(strategies)))
    return _svg(body, frame.plot_bottom + BOTTOM, f"fact retention per model call, {session.label}")


def totals_table(session: SessionReplay, strategies: Sequence[str]) -> str:
    head = ("strategy", "tokens sent", "× raw", "cost anthropic", "cost openai", "peak", "compactions",
            "summary calls", "violations", "retention", "work state lost / checked")
    lines = ['<div class="tw"><table><tr>' + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]
    for name in strategies:
        r = row(session, name)
        cells = [
            f"{_swatch(name)}{escape(name)}",
            f"{r['cumulative_tokens']:,}", f"{r['ratio_to_raw']:.3f}" if r["ratio_to_raw"] is not None else "–",
            f"{r['cached_cost'].get('anthropic', 0):,.0f}", f"{r['cached_cost'].get('openai', 0):,.0f}",
            f"{r['peak_tokens']:,}", str(r["compactions"]), str(r["summary_calls"]), str(r["violations"]),
            f"{r['retention']:.3f}" if r["retention"] is not None else "–",
            _work_cell(r["work_state"]),
        ]
        lines.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    recorded = session.raw.recorded_input
    if recorded:
        lines.append(f'<tr><td>recorded (the agent\'s own usage)</td><td>{recorded:,}</td><td colspan="9"></td></tr>')
    lines.append("</table></div>")
    return "".join(lines)


def _work_cell(state: dict) -> str:
    """``lost / checked`` with what was lost by kind as a tooltip; ``–`` when nothing was checked."""
    if not state.get("checked"):
        return "–"
    kinds = ", ".join(f"{kind} {n}" for kind, n in state.get("lost_by_kind", {}).items())
    title = f' title="lost: {escape(kinds)}"' if kinds else ""
    return f"<span{title}>{state['lost']} / {state['checked']}</span>"


def _swatch(name: str) -> str:
    color, dash = STYLES.get(name, ("#333333", "3,3"))
    style = "dashed" if dash else "solid"
    return f'<span class="sw" style="border-top-style:{style};border-top-color:{color}"></span>'


def render_report(sessions: Sequence[SessionReplay], strategies: Sequence[str]) -> str:
    names = replay_names(strategies)
    legend = "".join(f"<span>{_swatch(n)}{escape(n)}</span>" for n in names)
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><meta name='viewport' content='width=device-width'>"
        "<title>mtagent replay report</title>",
        f"<style>{_CSS}</style></head><body><h1>mtagent replay report</h1>",
        ("<p>Open-loop replay: at every recorded model call, the view each strategy would have sent. "
         "Costs are input-token equivalents under a prefix-cache model (summary calls included). "
         "Where strategies send the same view their lines coincide: each is drawn narrower than the one "
         "beneath it, so a coloured edge shows every strategy. The dashed black line is the window; "
         "the strip under a chart marks each strategy's compactions. Work state: at each compaction, the items "
         "of the recording's hand-off ledger (goal, latest request, rules, plan steps, files changed, last "
         "verification …) that the next view lost, of those checked.</p>"),
        f'<p class="legend">{legend}</p>',
    ]
    for session in sessions:
        calls = len(session.raw.turns)
        parts.append(f"<h2>{escape(session.label)} <small>({escape(session.trajectory.format)}, "
                     f"{calls} model call{'s' if calls != 1 else ''}, window {session.window:,})</small></h2>")
        if calls < 2:
            parts.append('<p class="note">One model call: there is no course to chart; the table has the '
                         "numbers.</p>")
        else:
            parts.append(tokens_chart(session, names))
            parts.append(retention_chart(session, names))
        parts.append(totals_table(session, names))
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(path: Path, sessions: Sequence[SessionReplay], strategies: Sequence[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(sessions, strategies), encoding="utf-8")
