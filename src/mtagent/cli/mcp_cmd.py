"""``mtagent mcp list / add / get / remove``: the MCP servers a session here would start.

``add``, ``get`` and ``remove`` edit the ``[mcp.servers.NAME]`` tables of your config (``--scope
user``, the default) or the project's (``--scope project``) as you would by hand (:mod:`.mcp_edit`).

Each configured server — from your config, the project's config or its ``.mcp.json`` — with its
source, whether it may run (a project's own servers wait for ``mtagent trust``), its state after a
start (``ready``, ``failed`` with the reason, ``untrusted``, ``disabled``, ``invalid``), its tool
count and what it runs. Trusted servers are started to be checked (in parallel, bounded by their
start timeouts) and stopped before the command returns; ``--no-start`` only reads the config.
The REPL's ``/mcp`` shows the running session's servers the same way (:func:`print_servers`).
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from mtagent import trust
from mtagent.cli import mcp_edit
from mtagent.cli.output import console, user_errors
from mtagent.errors import UsageError
from mtagent.config import load_settings
from mtagent.terminal_text import json_text, terminal_safe
from mtagent.trust_scope import visible
from mtagent.tools.mcp import McpServerStatus

HELP = "List, add, show and remove MCP servers: what a session here would start."
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
            table.add_row(escape(visible(s.name)), s.source, "yes" if s.trusted else "no", state,
                          str(s.tool_count) if s.state == "ready" else "-", escape(visible(s.command)))
        out.print(table)
        for s in servers:
            if s.note:  # one line each: a newline a name or note holds is shown, never printed
                out.print(f"{visible(s.name)}: {visible(s.note)}", markup=False, style="dim")
    for note in notes:
        out.print(terminal_safe(note), markup=False, style="dim")


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
    trust.refuse_if_changed(root)
    from mtagent.agent.opener import open_mcp  # the agent stack only for this command (keeps --help quick)

    with open_mcp(load_settings(root), root) as manager:
        if start:
            manager.start()
        servers, notes = manager.servers(), list(manager.notes)
    if as_json:
        typer.echo(json_text({"servers": [s.to_dict() for s in servers], "notes": notes}, indent=2))
        return
    print_servers(console, servers, notes)


_SCOPE_HELP = "user: your ~/.mtagent/config.toml (default); project: this project's .mtagent/config.toml."


def _scope(scope: str) -> mcp_edit.Scope:
    if scope not in ("user", "project"):
        raise UsageError(f"--scope takes user or project, not {scope!r}")
    return scope  # type: ignore[return-value]


@mcp_app.command("add")
@user_errors
def add_cmd(
    name: str = typer.Argument(..., help="The server's name (letters, digits, '-', '_'); its tools are "
                               "mcp__NAME__TOOL."),
    command: list[str] = typer.Argument(None, help="After --: the program and its arguments (stdio)."),
    url: str = typer.Option(None, "--url", help="A streamable-HTTP server's endpoint, instead of a command."),
    env: list[str] = typer.Option([], "--env", "-e", help="KEY=VALUE passed to the server (repeatable)."),
    header: list[str] = typer.Option([], "--header", "-H", help="'Name: value' sent to an HTTP server (repeatable)."),
    server_cwd: str = typer.Option(None, "--server-cwd", help="The folder it starts in (default: its own folder "
                                   "under $MTAGENT_HOME/mcp; never the project unless you say so)."),
    scope: str = typer.Option("user", "--scope", help=_SCOPE_HELP),
    replace: bool = typer.Option(False, "--replace", help="Replace a server of that name."),
    cwd: Path = typer.Option(Path("."), "--cwd", help="The project folder (for --scope project)."),
) -> None:
    """Add a server: `mtagent mcp add time -- mcp-server-time`, or `mtagent mcp add docs --url URL`."""
    path = mcp_edit.config_file(_scope(scope), cwd.resolve())
    table = mcp_edit.server_table(list(command or []), url, env, header, server_cwd)
    mcp_edit.add_server(path, name, table, replace=replace)
    console.print(f"added MCP server {name!r} to {path}", markup=False)
    if scope == "project":
        console.print("a project's servers start only once you trust the project: `mtagent trust`",
                      markup=False, style="dim")


@mcp_app.command("get")
@user_errors
def get_cmd(
    name: str = typer.Argument(..., help="The server's name."),
    scope: str = typer.Option("user", "--scope", help=_SCOPE_HELP),
    cwd: Path = typer.Option(Path("."), "--cwd", help="The project folder (for --scope project)."),
    as_json: bool = typer.Option(False, "--json", help="Print the server's table as JSON (values masked)."),
) -> None:
    """Show one server's table as it stands in the config file; env and header values are masked."""
    path = mcp_edit.config_file(_scope(scope), cwd.resolve())
    table = mcp_edit.get_server(path, name)
    if table is None:
        raise UsageError(f"no MCP server {name!r} in {path}; `mtagent mcp list` shows every configured server")
    for secret in ("env", "headers"):
        if isinstance(table.get(secret), dict):
            table[secret] = {key: "***" for key in table[secret]}
    if as_json:
        typer.echo(json_text({"name": name, "file": str(path), **table}, indent=2))
        return
    console.print(f"{terminal_safe(name)} ({path})", markup=False)
    for key, value in table.items():
        console.print(f"  {key} = {terminal_safe(json_text(value))}", markup=False)


@mcp_app.command("remove")
@user_errors
def remove_cmd(
    name: str = typer.Argument(..., help="The server's name."),
    scope: str = typer.Option("user", "--scope", help=_SCOPE_HELP),
    cwd: Path = typer.Option(Path("."), "--cwd", help="The project folder (for --scope project)."),
) -> None:
    """Remove a server's table from the config file (the rest of the file is kept as it was)."""
    path = mcp_edit.config_file(_scope(scope), cwd.resolve())
    if not mcp_edit.remove_server(path, name):
        raise UsageError(f"no MCP server {name!r} in {path}")
    console.print(f"removed MCP server {name!r} from {path}", markup=False)


def register(app: typer.Typer) -> None:
    app.add_typer(mcp_app, name="mcp")
