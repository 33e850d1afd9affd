"""Rich rendering of the context window: the ``/context`` grid, stats, artifacts and explain.

Every renderer takes plain data — a :class:`WindowUsage` (tokens per bucket against the window
and the auto-compact threshold), a :class:`~mtagent.cli.session_report.SessionReport`, or a
context plan as its transcript record — and returns a rich renderable. So the same code draws
the live window in the REPL, a resumed session, and the end of ``mtagent demo``, and tests
assert on ``Console(record=True)`` text without a terminal.

The grid is :data:`GRID_CELLS` cells, each a glyph coloured by the bucket that owns that share
of the window. Used tokens are ``⛁``, free space before auto compaction ``⛶``, and the
auto-compact buffer (the window above the threshold: reserved summary output + safety buffer)
``⛝`` — the layout the best CLI agents use, so it reads at a glance (``#``, ``.`` and ``x`` where
the terminal cannot draw them: :mod:`mtagent.cli.glyphs`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from mtagent.context.budget import BudgetBuckets
from mtagent.cli.glyphs import UNICODE, glyphs
from mtagent.cli.output import fmt_size
from mtagent.cli.session_report import SessionReport

GRID_CELLS = 100
GRID_COLUMNS = 10
USED_GLYPH, FREE_GLYPH, BUFFER_GLYPH = UNICODE.used, UNICODE.free, UNICODE.buffer
FREE = "free"
BUFFER = "autocompact_buffer"


@dataclass(slots=True, frozen=True)
class BucketStyle:
    label: str
    colour: str
    always: bool = True


# Display order (the order a prompt is assembled in), labels and colours. Buckets marked
# ``always=False`` appear in the legend only when they hold tokens.
BUCKET_STYLES: dict[str, BucketStyle] = {
    "system": BucketStyle("System prompt", "bright_black"),
    "tools": BucketStyle("Tool definitions", "cyan"),
    "mcp_tools": BucketStyle("MCP tool definitions", "dark_cyan", always=False),
    "deferred_tools": BucketStyle("Deferred tools (names)", "cadet_blue", always=False),
    "skills": BucketStyle("Skills (listing)", "gold3", always=False),
    "mcp_instructions": BucketStyle("MCP server instructions", "steel_blue", always=False),
    "rules": BucketStyle("Rules (CONTEXT.md)", "magenta"),
    "session_context": BucketStyle("Session context", "orchid", always=False),
    "memory": BucketStyle("Memory", "yellow"),
    "summary": BucketStyle("Compact summary", "green"),
    "messages": BucketStyle("Messages", "blue"),
    "tool_results": BucketStyle("Tool results", "red"),
    "reattached": BucketStyle("Re-attached files", "dark_orange", always=False),
    "retrieved": BucketStyle("Retrieved (recall)", "bright_cyan", always=False),
}
FREE_STYLE = BucketStyle("Free space", "grey50")
BUFFER_STYLE = BucketStyle("Autocompact buffer", "grey37")


def fmt_tokens(n: int) -> str:
    """``1234`` → ``1.2k``; ``131072`` → ``131.1k``; small numbers stay exact."""
    if abs(n) < 1000:
        return str(n)
    if abs(n) < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.2f}M"


@dataclass(slots=True, frozen=True)
class WindowUsage:
    """Tokens per bucket of the view sent to the model, against its window."""

    token_limit: int
    threshold: int
    buckets: Mapping[str, int] = field(default_factory=dict)
    model: str | None = None
    basis: str | None = None  # which moment the numbers measure: "as of call N" or "estimated now"
    window_source: str | None = None  # where the window's size came from (a setting, the server, the table)
    schemas: str | None = None  # the tool-schema mode and why (SchemaChoice.describe())

    @classmethod
    def from_budget(cls, budget: BudgetBuckets, model: str | None = None) -> WindowUsage:
        return cls(budget.token_limit, budget.threshold, budget.as_dict(), model)

    @classmethod
    def from_plan_record(cls, record: Mapping[str, Any], token_limit: int,
                         model: str | None = None) -> WindowUsage:
        """From a ``context_plan`` transcript record (its threshold, else ``token_limit``)."""
        buckets = {str(k): int(v) for k, v in (record.get("buckets") or {}).items()}
        threshold = record.get("threshold") or token_limit
        limit = int(record.get("token_limit") or token_limit)
        return cls(limit, int(threshold), buckets, model)

    @property
    def used(self) -> int:
        return sum(max(0, v) for v in self.buckets.values())

    @property
    def free(self) -> int:
        """Tokens that can still be added before auto compaction fires."""
        return max(0, self.threshold - self.used)

    @property
    def buffer(self) -> int:
        """The window above the threshold that is not already used."""
        return max(0, self.token_limit - max(self.used, self.threshold))

    def segments(self) -> list[tuple[str, BucketStyle, int]]:
        """(key, style, tokens) in display order; used buckets, then free, then the buffer."""
        rows: list[tuple[str, BucketStyle, int]] = []
        for key, style in BUCKET_STYLES.items():
            tokens = max(0, int(self.buckets.get(key, 0)))
            if tokens or style.always:
                rows.append((key, style, tokens))
        for key, tokens in self.buckets.items():
            if key not in BUCKET_STYLES and tokens > 0:
                rows.append((key, BucketStyle(key.replace("_", " ").capitalize(), "white"), int(tokens)))
        rows.append((FREE, FREE_STYLE, self.free))
        rows.append((BUFFER, BUFFER_STYLE, self.buffer))
        return rows


def allocate_cells(amounts: Sequence[int], cells: int = GRID_CELLS) -> list[int]:
    """Split ``cells`` in proportion to ``amounts`` (largest remainder).

    Every non-zero amount gets at least one cell — a bucket that exists must be visible — taken
    from the largest allocation. The result always sums to ``cells`` (when any amount is > 0).
    """
    total = sum(max(0, a) for a in amounts)
    if total <= 0 or cells <= 0:
        return [0 for _ in amounts]
    exact = [max(0, a) * cells / total for a in amounts]
    counts = [math.floor(x) for x in exact]
    order = sorted(range(len(amounts)), key=lambda i: (exact[i] - counts[i], amounts[i]), reverse=True)
    for i in order[: cells - sum(counts)]:
        counts[i] += 1
    for i, amount in enumerate(amounts):
        if amount > 0 and counts[i] == 0:
            donor = max(range(len(counts)), key=lambda j: counts[j])
            if counts[donor] > 1:
                counts[donor] -= 1
                counts[i] += 1
    return counts


def grid_counts(amounts: Sequence[int], cells: int = GRID_CELLS) -> list[int]:
    """Cells per segment, where the last two amounts are free space and the buffer.

    The window is split into used / free / buffer first and the used cells among the buckets
    second, so the grid's share of used cells matches the headline percentage.
    """
    used_amounts = list(amounts[:-2])
    nonzero = sum(1 for a in used_amounts if a > 0)
    used, free, buffer = allocate_cells([sum(max(0, a) for a in used_amounts), *amounts[-2:]], cells)
    while used < nonzero and (free > 1 or buffer > 1):
        if free >= buffer:
            free -= 1
        else:
            buffer -= 1
        used += 1
    return [*allocate_cells(used_amounts, used), free, buffer]


def _glyph(key: str) -> str:
    current = glyphs()
    if key == FREE:
        return current.free
    if key == BUFFER:
        return current.buffer
    return current.used


def render_context_grid(usage: WindowUsage, *, title: str = "Context usage",
                        report: SessionReport | None = None) -> RenderableType:
    """The ``/context`` view: a coloured grid of the window beside a legend with tokens and %
    (and, on a line of their own, the subagents' tokens: spent in their windows, not this one)."""
    segments = usage.segments()
    whole = max(usage.token_limit, usage.used)
    counts = grid_counts([tokens for _, _, tokens in segments])
    cells: list[Text] = []
    for (key, style, _), count in zip(segments, counts):
        cells.extend(Text(_glyph(key), style=style.colour) for _ in range(count))
    rows = [Text(" ").join(cells[i:i + GRID_COLUMNS]) for i in range(0, len(cells), GRID_COLUMNS)]

    head = Text()
    head.append(title, style="bold")
    if usage.model:
        head.append(f" · {usage.model}", style="dim")
    pct = usage.used / usage.token_limit if usage.token_limit else 0.0
    head.append(f"\n{fmt_tokens(usage.used)}/{fmt_tokens(usage.token_limit)} tokens ({pct:.0%})")
    head.append(f"\nauto-compact at {fmt_tokens(usage.threshold)}")
    left = usage.threshold - usage.used
    head.append(f" · {fmt_tokens(max(0, left))} left" if left >= 0 else " · over the threshold",
                style=None if left >= 0 else "bold red")

    for line in setup_lines(usage):
        head.append("\n")
        head.append_text(line)
    legend: list[Text] = [head, Text("")]
    for key, style, tokens in segments:
        line = Text()
        line.append(f"{_glyph(key)} ", style=style.colour)
        line.append(f"{style.label}: ")
        share = tokens / whole if whole else 0.0
        line.append(f"{tokens:,} tokens ({share:.1%})", style="dim" if key in (FREE, BUFFER) else None)
        legend.append(line)
    children = subagent_line(report)
    if children is not None:
        legend += [Text(""), children]

    layout = Table.grid(padding=(0, 3))
    layout.add_column(no_wrap=True)
    layout.add_column()
    layout.add_row(Text("\n").join(rows), Text("\n").join(legend))
    return layout


def setup_lines(usage: WindowUsage | None) -> list[Text]:
    """Where the window's size came from and which tool schemas are sent (``/context`` and its views)."""
    if usage is None:
        return []
    lines = []
    if usage.window_source:
        lines.append(Text(f"window {usage.token_limit:,} tokens from {usage.window_source}", style="dim"))
    if usage.schemas:
        lines.append(Text(usage.schemas, style="dim"))
    return lines


def render_context_stats(usage: WindowUsage, report: SessionReport | None = None,
                         *, effective_limit: int | None = None,
                         counters: Mapping[str, int] | None = None) -> RenderableType:
    """``/context stats``: tokens per bucket, threshold, room left, and compaction history."""
    title = "Token estimate per bucket" + (f" ({usage.basis})" if usage.basis else "")
    table = Table(title=title, title_justify="left", show_footer=True)
    table.add_column("bucket", footer="total used")
    table.add_column("tokens", justify="right", footer=f"{usage.used:,}")
    table.add_column("% of window", justify="right",
                     footer=f"{usage.used / usage.token_limit:.1%}" if usage.token_limit else "-")
    for key, style, tokens in usage.segments():
        if key in (FREE, BUFFER):
            continue
        share = f"{tokens / usage.token_limit:.1%}" if usage.token_limit else "-"
        table.add_row(style.label, f"{tokens:,}", share)

    facts = Table.grid(padding=(0, 2))
    facts.add_column(style="bold")
    facts.add_column(justify="right")
    facts.add_row("context window", f"{usage.token_limit:,}")
    if effective_limit is not None:
        facts.add_row("effective limit", f"{effective_limit:,}")
    facts.add_row("auto-compact threshold", f"{usage.threshold:,}")
    facts.add_row("tokens left before auto compact", f"{max(0, usage.threshold - usage.used):,}")
    if report is not None:  # the whole session, earlier processes too (a resume starts the counters below at 0)
        facts.add_row("compactions (whole session)", f"{len(report.compactions):,}")
        facts.add_row("persisted tool results (whole session)", f"{len(report.persisted):,}")
        if report.shell_commands:
            facts.add_row("shell commands sandboxed (whole session)",
                          f"{report.sandboxed_commands:,} of {report.shell_commands:,}")
    if counters:
        facts.add_row(Text("since this session was opened here:", style="dim"), "")
    for name, value in (counters or {}).items():
        facts.add_row(name.replace("_", " "), f"{value:,}")
    if report is not None and (report.cache_read_tokens or report.cache_write_tokens):
        share = report.cache_read_tokens / report.input_tokens if report.input_tokens else 0.0
        facts.add_row("prompt cache reads", f"{report.cache_read_tokens:,} ({share:.0%} of input)")
        facts.add_row("prompt cache writes", f"{report.cache_write_tokens:,}")
    for name, value in subagent_rows(report):
        facts.add_row(name, value)

    parts: list[RenderableType] = [table, Text(""), facts, *setup_lines(usage), Text("")]
    parts.append(render_compaction_history(report))
    return Group(*parts)


def subagent_rows(report: SessionReport | None) -> list[tuple[str, str]]:
    """Subagents' tokens, counted apart: they were spent in the children's own windows, not this one."""
    if report is None or not report.transcript.is_file():
        return []
    from mtagent.agent.subagents.tree import children_usage, subagent_tree

    total = children_usage(subagent_tree(report.transcript))
    if not total["children"]:
        return []
    return [("subagents (own windows)", f"{total['children']:,}"),
            ("subagent input tokens (not in this window)", f"{total['input_tokens']:,}"),
            ("subagent model calls", f"{total['model_calls']:,}")]


def subagent_line(report: SessionReport | None) -> Text | None:
    """The ``/context`` grid's line for the children: counted apart, since not in this window."""
    if report is None or not report.transcript.is_file():
        return None
    from mtagent.agent.subagents.tree import children_usage, subagent_tree

    total = children_usage(subagent_tree(report.transcript))
    if not total["children"]:
        return None
    count = total["children"]
    line = Text()
    line.append(f"{glyphs().result} ", style="magenta")  # not a cell of the grid: these tokens are elsewhere
    line.append(f"Subagents: {count:,} {'child' if count == 1 else 'children'} · {total['input_tokens']:,} input "
                f"tokens · {total['model_calls']:,} model calls (own windows, not in this window)")
    return line


def render_compaction_history(report: SessionReport | None) -> RenderableType:
    if report is None or not (report.compactions or report.microcompacts):
        return Text("No compaction yet in this session.", style="dim")
    table = Table(title="Compaction history", title_justify="left")
    for name, justify in (("#", "right"), ("trigger", "left"), ("before", "right"), ("after", "right"),
                          ("saved", "right"), ("summary from", "left")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for i, c in enumerate(report.compactions, 1):
        table.add_row(str(i), c.trigger, f"{c.pre_tokens:,}", f"{c.post_tokens:,}",
                      f"{c.saved_tokens:,}", c.summary_source or "-")
    lines: list[RenderableType] = [table] if report.compactions else []
    if report.microcompacts:
        lines.append(Text(
            f"microcompact: {len(report.microcompacts)} time(s), "
            f"{report.cleared_results} old tool result(s) cleared from the view"))
    return Group(*lines)


def render_artifacts(report: SessionReport, artifact_root: str | None = None) -> RenderableType:
    """``/context artifacts``: the session's persisted tool results (id, tool, size, path)."""
    if not report.persisted:
        return Text("No tool result has been persisted in this session.", style="dim")
    table = Table(title=f"Persisted tool results ({len(report.persisted)})", title_justify="left")
    table.add_column("id", overflow="fold")
    table.add_column("tool")
    table.add_column("size", justify="right")
    table.add_column("chars", justify="right")
    table.add_column("path", overflow="fold")
    for p in report.persisted:
        where = f"{artifact_root.rstrip('/')}/{p.path}" if artifact_root else p.path
        size = fmt_size(p.stored_bytes) + (" (capped)" if p.truncated else "")
        table.add_row(p.tool_call_id, p.tool or "-", size, f"{p.original_chars:,}", escape(where))
    return table


def _selected_count(selected: list[Any]) -> tuple[int, int]:
    """(conversation messages, system messages) named by a plan's ``selected`` entries — ``id``,
    ``first..last (n)`` or ``system:n`` — counted apart, as the engine's own explanation counts them."""
    messages = system = 0
    for entry in map(str, selected):
        if (ranged := re.search(r"\((\d+)\)$", entry)) is not None:
            messages += int(ranged.group(1))
        elif entry.startswith("system:") and entry[len("system:"):].isdigit():
            system += int(entry[len("system:"):])
        else:
            messages += 1
    return messages, system


def render_plan_explain(plan: Mapping[str, Any] | None, explanation: str | None = None) -> RenderableType:
    """``/context explain``: the last plan's selected, compressed and dropped items, and why.

    ``explanation`` is the engine's own text (``ContextPlan.explain()``) when it has one; it is
    shown first, and the record's lists follow so nothing is hidden behind a summary.
    """
    if plan is None and not explanation:
        return Text("No context plan yet: send a message first.", style="dim")
    parts: list[RenderableType] = []
    if explanation:
        parts.append(Text(explanation))
    if plan is not None:
        selected = list(plan.get("selected") or [])
        compressed = list(plan.get("compressed") or [])
        dropped = list(plan.get("dropped") or [])
        conflicts = list(plan.get("conflicts") or [])
        head = Text()
        head.append(f"Context plan (turn {plan.get('turn', '?')})", style="bold")
        head.append(f": {int(plan.get('tokens') or 0):,} tokens")
        if plan.get("threshold"):
            head.append(f", threshold {int(plan['threshold']):,}")
        messages, system = _selected_count(selected)
        head.append(f" — {messages} messages (+ {system} system) selected, {len(compressed)} compressed, "
                    f"{len(dropped)} dropped")
        parts.append(head)
        if compressed:
            table = Table(title="Compressed", title_justify="left")
            for name in ("id", "from", "to", "method"):
                table.add_column(name, justify="right" if name in ("from", "to") else "left")
            for item in compressed:
                table.add_row(str(item.get("id", "")), f"{int(item.get('from_tokens') or 0):,}",
                              f"{int(item.get('to_tokens') or 0):,}", str(item.get("method", "")))
            parts.append(table)
        if dropped:
            table = Table(title="Dropped", title_justify="left")
            table.add_column("id")
            table.add_column("why")
            for item in dropped:
                table.add_row(str(item.get("id", "")), str(item.get("reason", "")))
            parts.append(table)
        if conflicts:
            parts.append(Text("Conflicts: " + "; ".join(str(c) for c in conflicts), style="yellow"))
        retrieved = plan.get("retrieved") or {}
        if retrieved.get("items") or retrieved.get("dropped"):
            table = Table(title=f"Retrieved (hot): {retrieved.get('reason', '')}", title_justify="left")
            for name in ("ref", "names", "confidence", "tokens"):
                table.add_column(name, justify="right" if name in ("confidence", "tokens") else "left")
            for item in retrieved.get("items") or []:
                table.add_row(escape(str(item.get("reference", item.get("ref", "")))),
                              escape(str(item.get("identifier", ""))), f"{float(item.get('confidence') or 0):.2f}",
                              f"{int(item.get('tokens') or 0):,}")
            for item in retrieved.get("dropped") or []:
                table.add_row(escape(str(item.get("ref", ""))), f"dropped: {escape(str(item.get('reason', '')))}", "", "")
            parts.append(table)
    return Group(*parts)


def render_demo_summary(report: SessionReport, *, tokens_kept_out: int | None = None) -> RenderableType:
    """What the engine did during a run: persisted results, compactions, and what that saved.

    ``tokens_kept_out`` is the exact token count of persisted output the model did not read,
    when the caller measured it; otherwise the saving is given in characters.
    """
    lines: list[RenderableType] = []
    head = Text("What the context engine did", style="bold")
    lines.append(head)
    if report.persisted:
        table = Table(title=f"Persisted tool results: {len(report.persisted)}", title_justify="left")
        table.add_column("tool")
        table.add_column("original chars", justify="right")
        table.add_column("model saw", justify="right")
        table.add_column("artifact", overflow="fold")
        for p in report.persisted:
            seen = f"{p.preview_chars:,}" if p.preview_chars is not None else "preview"
            table.add_row(p.tool or "-", f"{p.original_chars:,}", seen, p.path)
        lines.append(table)
    else:
        lines.append(Text("Persisted tool results: 0"))
    if report.compactions:
        table = Table(title=f"Compactions: {len(report.compactions)}", title_justify="left")
        for name in ("trigger", "before", "after", "saved", "summary from"):
            table.add_column(name, justify="left" if name in ("trigger", "summary from") else "right")
        for c in report.compactions:
            table.add_row(c.trigger, f"{c.pre_tokens:,} tokens", f"{c.post_tokens:,} tokens",
                          f"{c.saved_tokens:,}", c.summary_source or "-")
        lines.append(table)
    else:
        lines.append(Text("Compactions: 0"))
    lines.append(Text(f"Microcompacts: {len(report.microcompacts)} "
                      f"({report.cleared_results} old tool result(s) cleared from the view)"))
    if tokens_kept_out is None:
        kept_out = f"{report.chars_kept_out:,} characters of tool output kept out of the window"
    else:
        kept_out = (f"{tokens_kept_out:,} tokens of tool output kept out of the window "
                    f"(total {report.compaction_tokens_saved + tokens_kept_out:,} tokens)")
    lines.append(Text(f"Saved: {report.compaction_tokens_saved:,} tokens by compaction; {kept_out}"))
    return Group(*lines)


def plan_lines(plan: Any) -> list[str]:
    """``/context``'s plan lines: where the plan stands, then one line per step (none without a plan)."""
    if plan is None:
        return []
    return [f"Plan · {plan.summary_line()}", *plan.render().splitlines()]

