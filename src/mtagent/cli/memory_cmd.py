"""``mtagent memory list|add|remove``: long-term memory outside the REPL (same as ``/memory``).

Global facts live under ``## Agent Memories`` in ``~/.mtagent/CONTEXT.md``; project facts in
the project's ``MEMORY.md``. Both are plain markdown, so ``$EDITOR`` works as well as this.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape

from mtagent.cli.output import bare_group_help, console, user_errors
from mtagent.context.static import memory
from mtagent.context.static.memory import Scope

memory_app = typer.Typer(help="List, add and remove long-term memories (global or per project).")
bare_group_help(memory_app)

_SCOPE_HELP = "--project: this project's MEMORY.md; --global: ~/.mtagent/CONTEXT.md (default)."
_CWD_HELP = "Project folder whose memory --project means."


def _scope(project: bool | None) -> Scope:
    return "project" if project else "global"


def _print_scope(scope: Scope, cwd: Path) -> None:
    entries = memory.list_memories(scope, cwd)
    path = memory.memory_path(scope, cwd)
    console.print(f"[bold]{scope} memory[/] [dim]({escape(str(path))})[/]")
    if not entries:
        console.print("  (none)")
    for e in entries:
        text = f"[strike dim]{escape(e.text)}[/] [dim](obsolete)[/]" if e.obsolete else escape(e.text)
        console.print(f"  {e.number}. {text}", soft_wrap=True)


@memory_app.command("list")
@user_errors
def list_cmd(
    project: bool = typer.Option(None, "--project/--global", help="Only one scope (default: both)."),
    cwd: Path = typer.Option(Path("."), "--cwd", help=_CWD_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON array (scope, number, text, obsolete, path)."),
) -> None:
    """Show remembered facts, numbered as `memory remove` expects."""
    root = cwd.resolve()
    scopes: list[Scope] = ["global", "project"] if project is None else [_scope(project)]
    if as_json:
        typer.echo(json.dumps([{"scope": scope, "number": e.number, "text": e.text, "obsolete": e.obsolete,
                                "path": str(memory.memory_path(scope, root))}
                               for scope in scopes for e in memory.list_memories(scope, root)], ensure_ascii=False))
        return
    for i, scope in enumerate(scopes):
        if i:
            console.print()
        _print_scope(scope, root)


@memory_app.command("add")
@user_errors
def add_cmd(
    fact: str = typer.Argument(..., help="The fact, one line."),
    project: bool = typer.Option(False, "--project/--global", help=_SCOPE_HELP),
    cwd: Path = typer.Option(Path("."), "--cwd", help=_CWD_HELP),
) -> None:
    """Remember a fact. The same fact (ignoring case and spacing) is stored once."""
    scope = _scope(project)
    result = memory.save_memory(fact, scope, cwd.resolve())
    if result.added:
        console.print(f"remembered ({scope}, #{result.entry.number}): {escape(result.entry.text)}", soft_wrap=True)
    elif result.reactivated:
        console.print(f"no longer obsolete ({scope}, #{result.entry.number}): {escape(result.entry.text)}",
                      soft_wrap=True)
    else:
        console.print(f"already remembered ({scope}, #{result.entry.number}): {escape(result.entry.text)}",
                      soft_wrap=True)


@memory_app.command("remove")
@user_errors
def remove_cmd(
    selector: str = typer.Argument(..., help="The number from `memory list`, or the fact's text."),
    project: bool = typer.Option(False, "--project/--global", help=_SCOPE_HELP),
    obsolete: bool = typer.Option(False, "--obsolete", help="Keep the line, marked obsolete, instead of deleting it."),
    cwd: Path = typer.Option(Path("."), "--cwd", help=_CWD_HELP),
) -> None:
    """Forget a fact (or with --obsolete, keep it struck through and stop using it)."""
    scope = _scope(project)
    if obsolete:
        entry = memory.mark_memory_obsolete(selector, scope, cwd.resolve())
        console.print(f"marked obsolete ({scope}): {escape(entry.text)}", soft_wrap=True)
    else:
        entry = memory.remove_memory(selector, scope, cwd.resolve())
        console.print(f"removed ({scope}): {escape(entry.text)}", soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.add_typer(memory_app, name="memory")
