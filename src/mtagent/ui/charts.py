"""Inline SVG charts drawn on the server: the session timeline and the replay comparison.

No JavaScript and no style attributes: colours come from CSS classes in ``static/ui.css`` (the
page's Content-Security-Policy forbids inline styles and scripts), and every text that reaches
the SVG is escaped here. Each series element carries a class naming its series, so a browser
test can check that every series in the legend is actually drawn.

A non-zero bucket is drawn at least :data:`MIN_SEGMENT_PX` tall: a 50-token rules bucket in a
130K window would otherwise be invisible. The exact numbers are in each bar's tooltip and on
the call's page.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

from mtagent.ui.calls import BUCKET_ORDER, CallPoint, as_int

WIDTH, HEIGHT = 960, 340
LEFT, RIGHT, TOP, BOTTOM = 64, 112, 28, 40
MIN_SEGMENT_PX = 2.0
MAX_X_LABELS = 12


def css_name(name: str) -> str:
    """A series name as a CSS class suffix (letters, digits, '-')."""
    return re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-") or "other"


def fmt_tokens(n: float) -> str:
    n = float(n)
    if abs(n) < 1000:
        return f"{n:.0f}"
    if abs(n) < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.2f}M"


def fmt_tick(n: float) -> str:
    """An axis tick: a round number without trailing zeros (150k, 1.5M, 2M)."""
    n = float(n)
    if abs(n) < 1000:
        return f"{n:.0f}"
    value, unit = (n / 1000, "k") if abs(n) < 1_000_000 else (n / 1_000_000, "M")
    return f"{value:.2f}".rstrip("0").rstrip(".") + unit


TICKS = 4  # intervals on the y axis


def nice_max(peak: float, intervals: int = TICKS) -> float:
    """The smallest round top (a 1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 × 10^k step per interval) at or above ``peak``, so
    the ticks read 0, 50k, 100k … instead of 35.4k, 70.8k, 141.6k."""
    if peak <= 0:
        return 1.0
    raw = peak / intervals
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10) if m * power >= raw)
    return step * intervals


@dataclass(slots=True, frozen=True)
class Frame:
    """The plot area and its scales."""

    count: int
    max_y: float
    width: int = WIDTH
    height: int = HEIGHT

    @property
    def plot_w(self) -> float:
        return self.width - LEFT - RIGHT

    @property
    def plot_h(self) -> float:
        return self.height - TOP - BOTTOM

    def x(self, i: int) -> float:
        """Centre of the i-th (0-based) call."""
        step = self.plot_w / max(self.count, 1)
        return LEFT + step * (i + 0.5)

    def y(self, value: float) -> float:
        return TOP + self.plot_h - self.plot_h * (value / self.max_y if self.max_y else 0)

    @property
    def slot(self) -> float:
        return self.plot_w / max(self.count, 1)


def _axes(frame: Frame, x_label: str, y_fmt: Callable[[float], str], labels: Sequence[str]) -> list[str]:
    bottom = TOP + frame.plot_h
    parts = [f'<line class="axis" x1="{LEFT}" y1="{bottom:.1f}" x2="{LEFT + frame.plot_w:.1f}" y2="{bottom:.1f}"/>',
             f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom:.1f}"/>']
    for frac in (i / TICKS for i in range(TICKS + 1)):
        y = frame.y(frame.max_y * frac)
        parts.append(f'<line class="grid" x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + frame.plot_w:.1f}" y2="{y:.1f}"/>')
        parts.append(f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
                     f"{escape(y_fmt(frame.max_y * frac))}</text>")
    every = max(1, -(-frame.count // MAX_X_LABELS))
    for i in range(0, frame.count, every):
        parts.append(f'<text class="tick" x="{frame.x(i):.1f}" y="{bottom + 16:.1f}" text-anchor="middle">'
                     f"{escape(labels[i])}</text>")
    parts.append(f'<text class="axis-label" x="{LEFT + frame.plot_w / 2:.1f}" y="{frame.height - 6}" '
                 f'text-anchor="middle">{escape(x_label)}</text>')
    return parts


def _hline(frame: Frame, value: float, cls: str, label: str, above: bool) -> list[str]:
    y = frame.y(value)
    end = LEFT + frame.plot_w
    ty = y - 4 if above else y + 12
    return [f'<line class="{cls}" x1="{LEFT}" y1="{y:.1f}" x2="{end:.1f}" y2="{y:.1f}"/>',
            f'<text class="{cls}-label" x="{end + 6:.1f}" y="{ty:.1f}">{escape(label)}</text>']


def _svg(body: Sequence[str], label: str, frame: Frame, cls: str) -> str:
    return (f'<svg class="chart {cls}" role="img" aria-label="{escape(label)}" width="{frame.width}" '
            f'height="{frame.height}" viewBox="0 0 {frame.width} {frame.height}" '
            f'xmlns="http://www.w3.org/2000/svg">{"".join(body)}</svg>')


def _call_title(p: CallPoint) -> str:
    lines = [f"call {p.number}: {p.tokens:,} tokens"]
    lines += [f"{b}: {p.buckets[b]:,}" for b in timeline_buckets([p]) if p.buckets.get(b)]
    lines += [f"compaction {c.get('id', '')}: {c.get('trigger', '')} {as_int(c.get('pre_tokens')):,} → "
              f"{as_int(c.get('post_tokens')):,}" for c in p.compactions]
    lines += [f"microcompact ({m.get('trigger', '')}): {len(m.get('cleared_ids') or [])} result(s) cleared"
              for m in p.microcompacts]
    return "\n".join(lines)


def timeline_buckets(points: Sequence[CallPoint]) -> list[str]:
    """Buckets that hold tokens in any call, in assembly order (unknown names last)."""
    used = {b for p in points for b, v in p.buckets.items() if v > 0}
    return [b for b in BUCKET_ORDER if b in used] + sorted(used - set(BUCKET_ORDER))


def timeline_svg(points: Sequence[CallPoint], href: Callable[[int], str], *, window: int | None,
                 threshold: int | None) -> str:
    """One stacked bar per model call (by bucket), a point on its total, threshold and window lines,
    compactions (▼ above the bar, dashed rule) and microcompacts (◆) marked; a bar links to its call."""
    if not points:
        return ""
    peak = max([p.tokens for p in points] + [sum(p.buckets.values()) for p in points] + [window or 0, threshold or 0])
    frame = Frame(len(points), nice_max(peak * 1.02))
    buckets = timeline_buckets(points)
    body = _axes(frame, "model call", fmt_tick, [str(p.number) for p in points])
    bar = max(2.0, min(28.0, frame.slot * 0.7))
    totals: list[tuple[float, float]] = []
    for i, p in enumerate(points):
        x = frame.x(i)
        parts = [f'<a class="call" href="{escape(href(p.number))}" data-call="{p.number}">',
                 f"<title>{escape(_call_title(p))}</title>",
                 f'<rect class="hit" x="{x - frame.slot / 2:.1f}" y="{TOP}" width="{frame.slot:.1f}" '
                 f'height="{frame.plot_h:.1f}"/>']
        base = frame.y(0)
        for b in buckets:
            tokens = p.buckets.get(b, 0)
            if tokens <= 0:
                continue
            h = max(MIN_SEGMENT_PX, frame.plot_h * tokens / frame.max_y)
            parts.append(f'<rect class="seg b-{css_name(b)}" data-bucket="{escape(b)}" x="{x - bar / 2:.1f}" '
                         f'y="{base - h:.2f}" width="{bar:.1f}" height="{h:.2f}"/>')
            base -= h
        total_y = frame.y(p.tokens) if p.tokens else base
        totals.append((x, total_y))
        parts.append(f'<circle class="point" cx="{x:.1f}" cy="{total_y:.1f}" r="3"/>')
        parts.append("</a>")
        body.extend(parts)
        if p.compactions:
            left = x - frame.slot / 2
            body.append(f'<line class="compaction-rule" x1="{left:.1f}" y1="{TOP}" x2="{left:.1f}" '
                        f'y2="{TOP + frame.plot_h:.1f}"/>')
            body.append(f'<path class="marker compaction" data-call="{p.number}" '
                        f'd="M{x - 6:.1f},{TOP - 14} L{x + 6:.1f},{TOP - 14} L{x:.1f},{TOP - 4} Z">'
                        f"<title>{escape(_call_title(p))}</title></path>")
        if p.microcompacts:
            cy = TOP - 9 if not p.compactions else TOP - 22
            body.append(f'<path class="marker microcompact" data-call="{p.number}" '
                        f'd="M{x:.1f},{cy - 5} L{x + 5:.1f},{cy} L{x:.1f},{cy + 5} L{x - 5:.1f},{cy} Z">'
                        f"<title>{escape(_call_title(p))}</title></path>")
    coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in totals)
    body.append(f'<polyline class="total-line" points="{coords}"/>')
    if window:
        body.extend(_hline(frame, window, "window", f"window {window:,}", above=True))
    if threshold:
        body.extend(_hline(frame, threshold, "threshold", f"threshold {threshold:,}", above=False))
    return _svg(body, "context window per model call, stacked by bucket", frame, "timeline")


@dataclass(slots=True, frozen=True)
class Series:
    """One line of a line chart: a value per call, and the calls to mark (compactions)."""

    name: str
    values: Sequence[float]
    marked: Sequence[int] = ()


def line_chart(series: Sequence[Series], *, title: str, y_fmt: Callable[[float], str] = fmt_tick,
               limit: float | None = None, limit_label: str = "", width: int = 600, height: int = 300) -> str:
    """Lines over model calls (replay comparison): one per series, dots on marked calls."""
    count = max((len(s.values) for s in series), default=0)
    if count == 0:
        return ""
    peak = max([v for s in series for v in s.values] + [limit or 0])
    frame = Frame(count, nice_max(peak * 1.02), width, height)
    body = _axes(frame, "model call", y_fmt, [str(i + 1) for i in range(count)])
    for s in series:
        cls = f"s-{css_name(s.name)}"
        coords = " ".join(f"{frame.x(i):.1f},{frame.y(v):.1f}" for i, v in enumerate(s.values))
        body.append(f'<g class="series {cls}" data-series="{escape(s.name)}"><title>{escape(s.name)}</title>')
        body.append(f'<polyline class="line" points="{coords}"/>')
        for i in s.marked:
            if 0 <= i < len(s.values):
                body.append(f'<circle class="dot" cx="{frame.x(i):.1f}" cy="{frame.y(s.values[i]):.1f}" r="3">'
                            f"<title>{escape(s.name)}: compaction at call {i + 1}</title></circle>")
        body.append("</g>")
    if limit:
        body.extend(_hline(frame, limit, "window", limit_label or f"{limit:,.0f}", above=True))
    return _svg(body, title, frame, "lines")
