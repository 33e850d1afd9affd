"""``/context``: what the window holds (the grid, ``stats``, ``artifacts``, ``explain``, ``messages``), and
what is wrong with it: MCP servers serving no tools, anything building the context refused or cut."""

from __future__ import annotations

import difflib
from dataclasses import replace

from rich.table import Table
from rich.text import Text

from mtagent.cli import context_render as render
from mtagent.cli.slash_host import SlashCommand, SlashHost, SlashOutcome
from mtagent.errors import UsageError
from mtagent.terminal_text import terminal_safe


def print_meter(host: SlashHost) -> None:
    """The window's current size as ``/context stats`` shows it, with the moment it measures."""
    usage = host.window_usage()
    if usage is not None and usage.basis:
        host.console.print(f"window: {usage.used:,} / {usage.token_limit:,} tokens ({usage.basis})")



_CONTEXT_SUBCOMMANDS = ("stats", "artifacts", "explain", "messages")


def cmd_context(host: SlashHost, command: SlashCommand) -> SlashOutcome:
    sub = command.rest.split()[0].lower() if command.rest else ""
    if sub and sub not in _CONTEXT_SUBCOMMANDS:
        close = difflib.get_close_matches(sub, _CONTEXT_SUBCOMMANDS, n=1)
        hint = f"; did you mean /context {close[0]}?" if close else ""
        raise UsageError(f"unknown /context view {sub!r}{hint} (use stats, artifacts, explain or messages)")
    if sub == "messages":
        rows = host.history_rows()
        if not rows:
            host.console.print("[dim]No messages yet.[/]")
            return SlashOutcome.CONTINUE
        table = Table(title=f"Messages the engine plans from ({len(rows)})", title_justify="left")
        table.add_column("id", no_wrap=True, min_width=max(len(row[0]) for row in rows))
        table.add_column("role", no_wrap=True, min_width=max(len(row[1]) for row in rows))
        table.add_column("text", max_width=80)
        for message_id, role, text in rows:
            table.add_row(terminal_safe(message_id), terminal_safe(role),
                          Text(terminal_safe(text), no_wrap=True, overflow="ellipsis"))
        host.console.print(table)
        host.console.print("[dim]/compact from <id> summarises everything before that message.[/]")
        return SlashOutcome.CONTINUE
    if sub == "artifacts":
        report = host.session_report()
        if report is None:
            host.console.print("[dim]No session yet: send a message first.[/]")
        else:
            host.console.print(render.render_artifacts(report, host.artifact_root()))
        return SlashOutcome.CONTINUE
    if sub == "explain":
        plan, explanation = host.last_plan()
        print_meter(host)
        for line in render.setup_lines(host.window_usage()):  # the window's source, the tool-schema mode
            host.console.print(line)
        host.console.print(render.render_plan_explain(plan, explanation))
        return SlashOutcome.CONTINUE
    usage = host.window_usage()
    if usage is None:
        host.console.print("[dim]No context yet: send a message first.[/]")
        return SlashOutcome.CONTINUE
    if sub == "stats":
        host.console.print(render.render_context_stats(
            usage, host.session_report(), effective_limit=host.effective_limit(),
            counters=host.stats_counters()))
    else:
        said = (host.session_id, usage.schemas)
        if said == host.schemas_said:  # the plain grid says the tool line once, until it changes
            usage = replace(usage, schemas=None)  # (stats and explain always show it)
        host.schemas_said = said
        host.console.print(render.render_context_grid(usage, report=host.session_report()))
        for line in render.plan_lines(host.work_plan()):  # the engine's plan
            host.console.print(terminal_safe(line), markup=False)
    _print_mcp_trouble(host)
    _print_context_warnings(host)
    return SlashOutcome.CONTINUE


def _print_context_warnings(host: SlashHost) -> None:
    for warning in host.context_warnings():  # a refused @include, a cut rule file
        host.console.print(f"context: {terminal_safe(warning)}", markup=False, style="dim")


def _print_mcp_trouble(host: SlashHost) -> None:
    """One line per MCP server that is not serving tools (failed and why, untrusted, invalid)."""
    servers = host.mcp_servers()
    for status in (servers or ([], []))[0]:
        if status.state in ("failed", "untrusted", "invalid"):
            host.console.print(f"MCP server {terminal_safe(status.name)}: {status.state} — "
                               f"{terminal_safe(status.note)} (/mcp lists every server)", markup=False, style="dim")
