"""``mtagent memory list|add|remove``: long-term memory outside the REPL (same as ``/memory``).

Global facts live under ``## Agent Memories`` in ``~/.mtagent/CONTEXT.md``; project facts in
the project's ``MEMORY.md``; ``--namespace user|team`` selects the user's and the team's files.
All are plain markdown, so ``$EDITOR`` works as well as this. ``--key`` and ``--ttl`` give a fact
a conflict key and an expiry (spec 003 v1.2); ``list --expired`` shows the facts past their TTL.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from mtagent.cli.output import bare_group_help, console, user_errors
from mtagent.context.static import memory
from mtagent.context.static.memory import Scope
from mtagent.context.static.memory_meta import FactMeta, clean_key, parse_ttl, writer_authority
from mtagent.terminal_text import json_text, terminal_safe

memory_app = typer.Typer(help="List, add and remove long-term memories (global or per project).")
bare_group_help(memory_app)

_SCOPE_HELP = "--project: this project's MEMORY.md; --global: ~/.mtagent/CONTEXT.md (default)."
_CWD_HELP = "Project folder whose memory --project means."


_NAMESPACE_HELP = "global, project, user or team (overrides --project/--global)."


def _scope(project: bool | None, namespace: str | None = None) -> Scope:
    if namespace is not None:
        return memory.parse_namespace(namespace)
    return "project" if project else "global"


def memory_home(cwd: Path) -> Path:
    """Where this project's memory files are for the configured store's tenant (session.local)."""
    from mtagent.config import load_settings
    from mtagent.session.local import local_home

    return local_home(load_settings(cwd))


def _entries(scope: Scope, cwd: Path, expired_only: bool) -> list[memory.MemoryEntry]:
    entries = memory.list_memories(scope, cwd, home=memory_home(cwd))
    return [e for e in entries if e.expired] if expired_only else entries


def print_scopes(out: Console, scopes: list[Scope], cwd: Path, expired_only: bool = False) -> None:
    """Each scope's facts, numbered as ``remove`` takes them (``mtagent memory list``, ``/memory list``)."""
    for i, scope in enumerate(scopes):
        if i:
            out.print()
        entries = _entries(scope, cwd, expired_only)
        path = memory.memory_path(scope, cwd, home=memory_home(cwd))
        out.print(f"[bold]{scope} memory[/]{' (expired)' if expired_only else ''} [dim]({escape(str(path))})[/]")
        if not entries:
            out.print("  (none)")
        for e in entries:
            fact = escape(terminal_safe(e.text))
            text = f"[strike dim]{fact}[/] [dim](obsolete)[/]" if e.obsolete else fact
            if e.expired:
                text = f"[dim]{fact} (expired {e.meta.expires_at:%Y-%m-%d})[/]"
            key = f" [dim]key={escape(terminal_safe(e.meta.key))}[/]" if e.meta.key else ""
            out.print(f"  {e.number}. {text}{key}", soft_wrap=True)


def print_saved(out: Console, scope: str, result: memory.AddResult) -> None:
    verb = "remembered" if result.added else "no longer obsolete" if result.reactivated else "already remembered"
    out.print(f"{verb} ({scope}, #{result.entry.number}): {escape(terminal_safe(result.entry.text))}", soft_wrap=True)


def print_removed(out: Console, scope: str, entry: memory.MemoryEntry, obsolete: bool) -> None:
    out.print(f"{'marked obsolete' if obsolete else 'removed'} ({scope}): {escape(terminal_safe(entry.text))}",
              soft_wrap=True)


@memory_app.command("list")
@user_errors
def list_cmd(
    project: bool = typer.Option(None, "--project/--global", help="Only one scope (default: both)."),
    namespace: str = typer.Option(None, "--namespace", "-n", help="Only this namespace: " + _NAMESPACE_HELP),
    expired: bool = typer.Option(False, "--expired", help="Only facts whose TTL has passed (never injected)."),
    cwd: Path = typer.Option(Path("."), "--cwd", help=_CWD_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON array (scope, number, text, obsolete, path, "
                                 "key, expires_at, expired)."),
) -> None:
    """Show remembered facts, numbered as `memory remove` expects."""
    root = cwd.resolve()
    if namespace is not None:
        scopes: list[Scope] = [_scope(None, namespace)]
    else:
        scopes = ["global", "project"] if project is None else [_scope(project)]
    if as_json:
        typer.echo(json_text([{"scope": scope, "number": e.number, "text": e.text, "obsolete": e.obsolete,
                               "path": str(memory.memory_path(scope, root, home=memory_home(root))), "key": e.meta.key,
                               "expires_at": e.meta.expires_at.isoformat() if e.meta.expires_at else None,
                               "expired": e.expired}
                              for scope in scopes for e in _entries(scope, root, expired)]))
        return
    print_scopes(console, scopes, root, expired)


@memory_app.command("add")
@user_errors
def add_cmd(
    fact: str = typer.Argument(..., help="The fact, one line."),
    project: bool = typer.Option(False, "--project/--global", help=_SCOPE_HELP),
    namespace: str = typer.Option(None, "--namespace", "-n", help=_NAMESPACE_HELP),
    key: str = typer.Option(None, "--key", help="A conflict key: a newer fact on the same key supersedes this one."),
    ttl: str = typer.Option(None, "--ttl", help="Expire after this long (30d, 12h, 2w) or at a date (2027-01-31)."),
    cwd: Path = typer.Option(Path("."), "--cwd", help=_CWD_HELP),
) -> None:
    """Remember a fact. The same fact (ignoring case and spacing) is stored once."""
    scope = _scope(project, namespace)
    cleaned = clean_key(key)
    meta = FactMeta(key=cleaned, expires_at=parse_ttl(ttl),
                    authority=writer_authority("user", scope) if cleaned else None) if (key or ttl) else None
    result = memory.save_memory(fact, scope, cwd.resolve(), meta=meta, home=memory_home(cwd))
    _audit("add", scope, result.entry.number)
    print_saved(console, scope, result)


@memory_app.command("remove")
@user_errors
def remove_cmd(
    selector: str = typer.Argument(..., help="The number from `memory list`, or the fact's text."),
    project: bool = typer.Option(False, "--project/--global", help=_SCOPE_HELP),
    obsolete: bool = typer.Option(False, "--obsolete", help="Keep the line, marked obsolete, instead of deleting it."),
    namespace: str = typer.Option(None, "--namespace", "-n", help=_NAMESPACE_HELP),
    cwd: Path = typer.Option(Path("."), "--cwd", help=_CWD_HELP),
) -> None:
    """Forget a fact (or with --obsolete, keep it struck through and stop using it)."""
    scope = _scope(project, namespace)
    forget = memory.mark_memory_obsolete if obsolete else memory.remove_memory
    print_removed(console, scope, forget(selector, scope, cwd.resolve(), home=memory_home(cwd)), obsolete)
    _audit("obsolete" if obsolete else "remove", scope, None)


def _audit(change: str, scope: str, number: int | None) -> None:
    """Memory writes from the command line go to the audit trail (the fact's text stays in memory)."""
    from mtagent.config import load_settings
    from mtagent.session.store import record_audit

    record_audit(load_settings(None), "memory.write", None, {"change": change, "scope": str(scope), "number": number})


def register(app: typer.Typer) -> None:
    app.add_typer(memory_app, name="memory")
