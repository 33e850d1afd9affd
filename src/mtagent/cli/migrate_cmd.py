"""``mtagent sessions migrate --to postgres|files``: move sessions between the two backends."""

from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.table import Table

from mtagent import paths
from mtagent.cli.output import console, print_error, user_errors
from mtagent.errors import ConfigError, UsageError

if TYPE_CHECKING:  # the stores and config models load when a migration runs, not for completion or help
    from mtagent.session.store import Store

TARGETS = ("postgres", "files")


def _stores(settings: Any, target: str, dsn: str | None) -> tuple[Store, Store]:
    from mtagent.session.files_store import FilesStore
    from mtagent.session.store_types import validate_tenant

    dsn = dsn or settings.storage.dsn
    if not dsn:
        raise ConfigError("no PostgreSQL DSN: pass --dsn postgresql://user@host/db, or set storage.dsn "
                          "(MTAGENT_STORAGE__DSN)")
    from mtagent.session.postgres.store import PostgresStore

    tenant = validate_tenant(settings.storage.tenant)
    max_bytes = settings.tool_results.artifact_max_bytes
    files = FilesStore(tenant=tenant, max_artifact_bytes=max_bytes, fsync=settings.transcript.fsync)
    try:
        pg = PostgresStore(dsn, tenant=tenant, max_artifact_bytes=max_bytes,
                           pool_max_size=settings.storage.pool_max_size,
                           connect_timeout=settings.storage.connect_timeout_seconds, fsync=settings.transcript.fsync)
    except BaseException:
        files.close()
        raise
    return (files, pg) if target == "postgres" else (pg, files)


@user_errors
def migrate_cmd(
    to: str = typer.Option(..., "--to", help="The backend to copy into: postgres or files (the other is the source)."),
    dsn: str = typer.Option(None, "--dsn", help="PostgreSQL DSN; default storage.dsn (MTAGENT_STORAGE__DSN)."),
    cwd: Path = typer.Option(None, "--cwd", "-C", help="Only this project's sessions (default: every project)."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON report (sessions, records, artifacts)."),
) -> None:
    """Copy sessions, artifacts and memory between files and PostgreSQL (idempotent, resumable).

    Run it again after an interruption: it continues where it stopped and copies nothing twice.
    The source keeps every record (a torn last line left by a crash is trimmed, as any writer
    would). A session in use by a running mtagent is skipped and named (exit 1): run the command
    again once it is closed.
    """
    if to not in TARGETS:
        raise UsageError(f"--to must be postgres or files, not {to!r}")
    from mtagent.session.migrate import copy_store

    from mtagent.config import load_settings

    settings = load_settings(cwd)
    src, dst = _stores(settings, to, dsn)
    with closing(src), closing(dst):
        projects = [paths.project_hash(cwd)] if cwd is not None else None
        report = copy_store(src, dst, projects=projects)
    if as_json:
        typer.echo(json.dumps({
            "from": src.backend, "to": dst.backend, "tenant": dst.tenant,
            "records_copied": report.records_copied, "artifacts_copied": report.artifacts_copied,
            "memories_copied": report.memories_copied, "in_use": report.in_use,
            "sessions": [{"project": s.project, "session_id": s.session_id, "records_copied": s.records_copied,
                          "records_present": s.records_present, "artifacts_copied": s.artifacts_copied,
                          "session_memory_copied": s.session_memory_copied} for s in report.sessions]}))
        raise typer.Exit(1 if report.in_use else 0)
    table = Table(title=f"{src.backend} -> {dst.backend} (tenant {dst.tenant})", title_justify="left")
    for name in ("project", "session", "copied", "already there", "artifacts"):
        table.add_column(name, justify="left" if name in ("project", "session") else "right")
    for s in report.sessions:
        table.add_row(escape(s.project), escape(s.session_id), str(s.records_copied), str(s.records_present),
                      str(s.artifacts_copied))
    console.print(table)
    console.print(f"{len(report.sessions)} sessions: {report.records_copied} records, {report.artifacts_copied} "
                  f"artifacts and {report.memories_copied} memory files copied")
    for skipped in report.in_use:
        print_error(f"skipped {skipped}; run `mtagent sessions migrate` again once it is closed")
    if report.in_use:
        raise typer.Exit(1)


def register(sessions_app: typer.Typer) -> None:
    sessions_app.command("migrate")(migrate_cmd)
