"""A self-contained HTML replay report: inline SVG charts and tables, no external JS or CSS.

Per session: view tokens per turn for each strategy (compactions marked with a dot, the window
as a dashed line), fact retention per turn, and the totals table.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path

from mtagent.replay.report import SessionReplay, row

COLORS = {
    "raw": "#888888",
    "mtagent": "#d62728",
    "mtagent-sm": "#e377c2",
    "masking": "#1f77b4",
    "lc-summarization": "#2ca02c",
    "lc-clear-tool-uses": "#9467bd",
    "threshold-compact": "#ff7f0e",
}
WIDTH, HEIGHT, PAD = 760, 240, 48

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:20px}h2{font-size:16px;margin-top:32px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}.legend span{margin-right:14px;white-space:nowrap}
.sw{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}
svg{background:#fafafa;border:1px solid #ddd}
"""


def _polyline(points: list[tuple[float, float]], color: str) -> str:
    coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    return f'<polyline fill="none" stroke="{color}" stroke-width="1.6" points="{coords}"/>'


def _axes(max_x: int, max_y: float, label: str, y_fmt: str) -> str:
    parts = [
        f'<line x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - 10}" y2="{HEIGHT - PAD}" stroke="#444"/>',
        f'<line x1="{PAD}" y1="10" x2="{PAD}" y2="{HEIGHT - PAD}" stroke="#444"/>',
        f'<text x="{WIDTH / 2:.0f}" y="{HEIGHT - 12}" text-anchor="middle" font-size="11">model call (turn), 0–{max_x}</text>',
        f'<text x="12" y="{HEIGHT / 2:.0f}" font-size="11" transform="rotate(-90 12 {HEIGHT / 2:.0f})" text-anchor="middle">{escape(label)}</text>',
    ]
    for frac in (0.0, 0.5, 1.0):
        y = HEIGHT - PAD - frac * (HEIGHT - PAD - 10)
        parts.append(f'<text x="{PAD - 4}" y="{y + 4:.0f}" font-size="10" text-anchor="end">{y_fmt.format(max_y * frac)}</text>')
    return "".join(parts)


def _scale(turn: int, value: float, turns: int, max_y: float) -> tuple[float, float]:
    x = PAD + (WIDTH - PAD - 10) * (turn / max(turns - 1, 1))
    y = HEIGHT - PAD - (HEIGHT - PAD - 10) * (value / max_y if max_y else 0)
    return x, y


def tokens_chart(session: SessionReplay, strategies: Sequence[str]) -> str:
    turns = len(session.raw.turns)
    max_y = max([session.window] + [t.view_tokens for s in strategies for t in session.results[s].turns]) * 1.05
    body = [_axes(turns, max_y, "view tokens", "{:,.0f}")]
    _, wy = _scale(0, session.window, turns, max_y)
    body.append(f'<line x1="{PAD}" y1="{wy:.1f}" x2="{WIDTH - 10}" y2="{wy:.1f}" stroke="#000" stroke-dasharray="5,4"/>')
    body.append(f'<text x="{WIDTH - 12}" y="{wy - 4:.1f}" font-size="10" text-anchor="end">window {session.window:,}</text>')
    for name in strategies:
        color = COLORS.get(name, "#333")
        points = [_scale(t.turn, t.view_tokens, turns, max_y) for t in session.results[name].turns]
        body.append(_polyline(points, color))
        for t, (x, y) in zip(session.results[name].turns, points, strict=True):
            if t.compacted:
                body.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.2" fill="{color}"><title>{escape(name)} compacted at turn {t.turn}</title></circle>')
    return f'<svg width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img">{"".join(body)}</svg>'


def retention_chart(session: SessionReplay, strategies: Sequence[str]) -> str:
    turns = len(session.raw.turns)
    body = [_axes(turns, 1.0, "fact retention", "{:.1f}")]
    for name in strategies:
        points = [_scale(t.turn, t.retention, turns, 1.0) for t in session.results[name].turns if t.retention is not None]
        if points:
            body.append(_polyline(points, COLORS.get(name, "#333")))
    return f'<svg width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img">{"".join(body)}</svg>'


def totals_table(session: SessionReplay, strategies: Sequence[str]) -> str:
    head = ("strategy", "tokens sent", "× raw", "cost anthropic", "cost openai", "peak", "compactions",
            "summary calls", "violations", "retention")
    lines = ["<table><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]
    for name in strategies:
        r = row(session, name)
        cells = [
            f'<span class="sw" style="background:{COLORS.get(name, "#333")}"></span>{escape(name)}',
            f"{r['cumulative_tokens']:,}", f"{r['ratio_to_raw']:.3f}",
            f"{r['cached_cost'].get('anthropic', 0):,.0f}", f"{r['cached_cost'].get('openai', 0):,.0f}",
            f"{r['peak_tokens']:,}", str(r["compactions"]), str(r["summary_calls"]), str(r["violations"]),
            f"{r['retention']:.3f}" if r["retention"] is not None else "–",
        ]
        lines.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    recorded = session.raw.recorded_input
    if recorded:
        lines.append(f'<tr><td>recorded (the agent\'s own usage)</td><td>{recorded:,}</td><td colspan="8"></td></tr>')
    lines.append("</table>")
    return "".join(lines)


def render_report(sessions: Sequence[SessionReplay], strategies: Sequence[str]) -> str:
    names = ["raw", *[s for s in strategies if s != "raw"]]
    legend = "".join(
        f'<span><span class="sw" style="background:{COLORS.get(n, "#333")}"></span>{escape(n)}</span>' for n in names
    )
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>mtagent replay report</title>",
        f"<style>{_CSS}</style></head><body><h1>mtagent replay report</h1>",
        ("<p>Open-loop replay: at every recorded model call, the view each strategy would have sent. "
         "Costs are input-token equivalents under a prefix-cache model (summary calls included). "
         "Dots mark compactions; the dashed line is the window.</p>"),
        f'<p class="legend">{legend}</p>',
    ]
    for session in sessions:
        parts.append(f"<h2>{escape(session.label)} <small>({escape(session.trajectory.format)}, "
                     f"{len(session.raw.turns)} model calls, window {session.window:,})</small></h2>")
        parts.append(tokens_chart(session, names))
        parts.append(retention_chart(session, names))
        parts.append(totals_table(session, names))
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(path: Path, sessions: Sequence[SessionReplay], strategies: Sequence[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(sessions, strategies), encoding="utf-8")
