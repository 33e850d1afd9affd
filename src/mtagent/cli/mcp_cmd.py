"""``mtagent mcp list [--json]``: the MCP servers a session here would start, and how they are doing.

Each configured server — from your config, the project's config or its ``.mcp.json`` — with its
source, whether it may run (a project's own servers wait for ``mtagent trust``), its state after a
start (``ready``, ``failed`` with the reason, ``untrusted``, ``disabled``, ``invalid``), its tool
count and what it runs. Trusted servers are started to be checked (in parallel, bounded by their
start timeouts) and stopped before the command returns; ``--no-start`` only reads the config.
The REPL's ``/mcp`` shows the running session's servers the same way (:func:`print_servers`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from mtagent.cli.output import console, user_errors
from mtagent.config import load_settings
from mtagent.terminal_text import json_text, terminal_safe
from mtagent.tools.mcp import McpManager, McpServerStatus

HELP = "List the MCP servers a session here would start: source, trusted or not, state, tools."
mcp_app = typer.Typer(help=HELP, no_args_is_help=True)
_STATE_STYLE = {"ready": "green", "failed": "red", "untrusted": "yellow", "invalid": "red", "disabled": "dim"}


def print_servers(out: Console, servers: list[McpServerStatus], notes: list[str]) -> None:
    """The servers as a table (every server-supplied text made terminal-safe), then the notes."""
    if not servers:
        out.print("No MCP servers configured. Add one under [mcp.servers.NAME] in ~/.mtagent/config.toml "
                  "(command/args/env, or url), or a .mcp.json in the project (see docs/tools.md).", markup=False)
    else:
        table = Table(title_justify="left")
        for column, justify in (("server", "left"), ("source", "left"), ("trusted", "left"), ("state", "left"),
                                ("tools", "right"), ("runs", "left")):
            table.add_column(column, justify=justify)  # type: ignore[arg-type]
        for s in servers:
            style = _STATE_STYLE.get(s.state, "")
            state = f"[{style}]{escape(s.state)}[/]" if style else escape(s.state)
            table.add_row(escape(terminal_safe(s.name)), s.source, "yes" if s.trusted else "no", state,
                          str(s.tool_count) if s.state == "ready" else "-", escape(terminal_safe(s.command)))
        out.print(table)
        for s in servers:
            if s.note:
                out.print(f"{terminal_safe(s.name)}: {terminal_safe(s.note)}", markup=False, style="dim")
    for note in notes:
        out.print(terminal_safe(note), markup=False, style="dim")


def server_rows(servers: list[McpServerStatus]) -> list[dict[str, Any]]:
    return [s.to_dict() for s in servers]


@mcp_app.command("list")
@user_errors
def list_cmd(
    cwd: Path = typer.Option(Path("."), "--cwd", help="The project folder."),
    start: bool = typer.Option(True, "--start/--no-start", help="Start trusted servers to check them and count "
                               "their tools (stopped again before this returns)."),
    as_json: bool = typer.Option(False, "--json", help="Print {servers: [...], notes: [...]} as JSON."),
) -> None:
    """Every configured MCP server: source, trusted, state, tool count, and what it runs."""
    root = cwd.resolve()
    with McpManager.for_project(load_settings(root), root) as manager:
        if start:
            manager.start()
        servers, notes = manager.servers(), list(manager.notes)
    if as_json:
        typer.echo(json_text({"servers": server_rows(servers), "notes": notes}, indent=2))
        return
    print_servers(console, servers, notes)


def register(app: typer.Typer) -> None:
    app.add_typer(mcp_app, name="mcp")
