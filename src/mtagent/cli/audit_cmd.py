"""``mtagent audit``: who approved, denied, remembered, compacted or exported what, and when."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from mtagent.cli.output import console, user_errors
from mtagent.config import load_settings
from mtagent.session.store import open_store
from mtagent.terminal_text import json_text, terminal_safe

HELP = "List the audit trail: approvals, denials, memory writes, compactions, exports (--json)."


@user_errors
def audit_cmd(
    session: str = typer.Option(None, "--session", "-s", help="Only this session's events."),
    action: str = typer.Option(None, "--action", "-a", help="Only this action (e.g. tool.denied, memory.write)."),
    limit: int = typer.Option(200, "--limit", "-n", min=1, help="The most recent N events."),
    cwd: Path = typer.Option(None, "--cwd", "-C", help="Project whose configuration names the store."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON array of events."),
) -> None:
    """List the audit trail: approvals, denials, memory writes, compactions, exports (--json).

    Events come from the configured store (storage.backend): ``$MTAGENT_HOME/audit.jsonl`` for
    files, the ``mtagent_audit`` table for PostgreSQL — only the configured tenant's.
    """
    with closing(open_store(load_settings(cwd))) as store:
        events = store.audit.events(session_id=session, action=action, limit=limit)
    if as_json:
        typer.echo(json_text([e.as_dict() for e in events], default=str))
        return
    if not events:
        console.print(f"no audit events for tenant {store.tenant}")
        return
    table = Table(title=f"audit trail ({store.backend}, tenant {store.tenant})", title_justify="left")
    for name in ("when", "who", "action", "session", "detail"):
        table.add_column(name, no_wrap=name != "detail")
    for e in events:
        detail = ", ".join(f"{k}={v}" for k, v in e.detail.items() if v not in (None, ""))
        table.add_row(*(escape(terminal_safe(c)) for c in (e.at, e.who, e.action, e.session_id or "-", detail)))
    console.print(table)


def register(app: typer.Typer) -> None:
    app.command("audit", help=HELP)(audit_cmd)
