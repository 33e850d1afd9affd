"""``mtagent tools list`` and ``mtagent tools search``: the tool catalog as the next request would see it.

``list`` shows every tool a session in this project would have — built-in, MCP (``mcp:<server>``,
from the servers the project may start) and skills — with its schema tokens and whether it is
``loaded`` (sent in full) or ``deferred`` (listed by name, found with ``tool_search``), then what
the tool definitions and listings take in the next request. ``search`` runs ``tool_search``'s
ranking for each query, in order, without loading anything. Both take ``--json`` for scripts.

MCP servers are started to learn their tools (and stopped before the command returns); ``--no-mcp``
leaves them alone. A ``recall.embeddings`` that cannot be set up is one warning on stderr and
keyword-only search, as in a session (stdout stays the listing, or valid JSON).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from mtagent import trust
from mtagent.cli.output import console, err_console, user_errors
from mtagent.config import load_settings
from mtagent.context.toolset import Toolset
from mtagent.errors import ConfigError, UsageError
from mtagent.terminal_text import json_text, terminal_safe

HELP = "List the tools a session here would have (built-in, MCP, skills; loaded or deferred) and search them."
tools_app = typer.Typer(help=HELP, no_args_is_help=True)


def _warn(exc: ConfigError) -> None:
    """A ``recall.embeddings`` that cannot be set up: one warning, keyword-only search (BM25), as a session."""
    err_console.print(f"[yellow]warning:[/] {escape(terminal_safe(str(exc)))} — tool search uses keywords "
                      "only, as a session would", soft_wrap=True)


@contextmanager
def project_toolset(root: Path, *, window: int | None, mcp: bool) -> Iterator[tuple[Toolset, list[str]]]:
    """The toolset a session in ``root`` would open (the opener's :func:`~mtagent.agent.opener.project_catalog`),
    and notes (MCP servers that did not start, skills skipped)."""
    from mtagent.agent.opener import project_catalog  # the agent stack only for this command

    trust.refuse_if_changed(root)
    with project_catalog(root, load_settings(root), window=window, mcp=mcp, warn=_warn) as opened:
        yield opened


def _cwd_option() -> Any:
    return typer.Option(Path("."), "--cwd", help="The project folder.")


@tools_app.command("list")
@user_errors
def list_cmd(
    cwd: Path = _cwd_option(),
    window: int = typer.Option(None, "--window", min=256, help="Context window to plan for "
                               "(default context.token_limit)."),
    mcp: bool = typer.Option(True, "--mcp/--no-mcp", help="Start the project's MCP servers to list their tools."),
    as_json: bool = typer.Option(False, "--json", help="Print {tools: [...], summary: {...}} as JSON."),
) -> None:
    """Every tool: name, source, schema tokens, loaded or deferred; and what they take in the next request."""
    with project_toolset(cwd.resolve(), window=window, mcp=mcp) as (toolset, notes):
        rows, summary = toolset.rows(), toolset.summary()
    if as_json:
        typer.echo(json_text({"tools": rows, "summary": summary, "notes": notes}, indent=2))
        return
    table = Table(show_footer=False)
    for column, justify in (("tool", "left"), ("source", "left"), ("tokens", "right"), ("state", "left")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for row in rows:
        table.add_row(escape(terminal_safe(row["name"])), escape(terminal_safe(row["source"])),
                      f"{row['tokens']:,}", row["state"])
    console.print(table)
    buckets = summary["buckets"]
    parts = ", ".join(f"{name} {n:,}" for name, n in buckets.items() if n)
    console.print(f"Next request: {summary['definition_tokens']:,} tokens of tool definitions; "
                  f"{summary['context_tokens']:,} with listings and instructions ({parts}).")
    console.print(f"Deferral: {'on' if summary['deferral']['deferring'] else 'off'} — "
                  f"{escape(summary['deferral']['reason'])}.")
    for note in notes:
        console.print(f"[dim]{escape(terminal_safe(note))}[/dim]")


@tools_app.command("search")
@user_errors
def search_cmd(
    queries: list[str] = typer.Argument(..., help="One or more queries, each searched on its own."),
    k: int = typer.Option(None, "-k", min=1, max=200, help="Results per query (default tools.search_default_k)."),
    cwd: Path = _cwd_option(),
    mcp: bool = typer.Option(True, "--mcp/--no-mcp", help="Start the project's MCP servers to search their tools."),
    as_json: bool = typer.Option(False, "--json", help="Print [{query, results: [...]}] as JSON."),
) -> None:
    """For each query, what tool_search returns, in order (nothing is loaded)."""
    if not any(q.strip() for q in queries):
        raise UsageError("give a query, e.g. mtagent tools search 'create a github issue'")
    with project_toolset(cwd.resolve(), window=None, mcp=mcp) as (toolset, notes):
        answers = [(q, toolset.search(q, k)) for q in queries]
    if as_json:
        typer.echo(json_text([{"query": q, "results": [h.to_dict() for h in hits]} for q, hits in answers],
                             indent=2))
        return
    for query, hits in answers:
        console.print(f"[bold]{escape(terminal_safe(query))}[/bold]")
        if not hits:
            console.print("  (no match)")
        for rank, hit in enumerate(hits, 1):
            console.print(f"  {rank}. {escape(terminal_safe(hit.name))} [dim]({escape(hit.source)}, "
                          f"{hit.score:.2f})[/dim] {escape(terminal_safe(hit.description))}")
    for note in notes:
        console.print(f"[dim]{escape(terminal_safe(note))}[/dim]")


def register(app: typer.Typer) -> None:
    app.add_typer(tools_app, name="tools")
