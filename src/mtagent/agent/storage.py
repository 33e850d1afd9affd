"""What an agent session keeps beside its transcript: LangGraph checkpoints, and thin helpers over the store.

Everything else a session stores goes through the configured :class:`~mtagent.session.store.Store`
(:func:`~mtagent.session.store.shared_store`), which decides alone how it keeps it. The checkpointer
lives here because ``session/`` never imports LangGraph; it asks the store where its database is:
none (files) — a SQLite file in the session's artifact folder; PostgreSQL — LangGraph's own tables
in the same database (created idempotently by ``setup()``), thread ids prefixed with the tenant.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from mtagent import paths
from mtagent.config import Settings
from mtagent.session.store import shared_store

CHECKPOINT_FILE = "checkpoints.sqlite"
CHECKPOINT_SETUP_LOCK = 0x6D74_6167_636B  # an advisory lock key of its own ("mtagck")


@dataclass(slots=True)
class SessionStorage:
    """A session's LangGraph checkpointer, and what to close with it."""

    checkpointer: BaseCheckpointSaver[Any]
    thread_prefix: str = ""
    _closers: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        for close in reversed(self._closers):
            with contextlib.suppress(Exception):
                close()
        self._closers.clear()


def session_ids(settings: Settings, project_root: Path) -> list[str]:
    """A project's session ids in the configured store, oldest first (ids sort by creation time)."""
    return shared_store(settings).sessions(paths.project_hash(project_root))


def open_session_storage(settings: Settings, artifact_dir: Path) -> SessionStorage:
    """The session's LangGraph checkpointer, where the configured store keeps its database.

    The one question asked of the store is where its database is (:attr:`Store.dsn`): none — a
    SQLite file beside the session's artifacts; a PostgreSQL server — LangGraph's tables in it."""
    store = shared_store(settings)  # migrations, the tenant's pool, the audit table
    if store.dsn is None:
        db = sqlite3.connect(str(paths.ensure_dir(artifact_dir) / CHECKPOINT_FILE), check_same_thread=False)
        from langgraph.checkpoint.sqlite import SqliteSaver

        return SessionStorage(SqliteSaver(db))
    from langgraph.checkpoint.postgres import PostgresSaver

    conn = _postgres_checkpoints(store, settings.storage.connect_timeout_seconds)
    return SessionStorage(PostgresSaver(conn), f"{store.tenant}/", [conn.close])


def _postgres_checkpoints(store: Any, timeout: float) -> Any:
    """A connection for LangGraph's saver, bound to the tenant by row-level security; the checkpoint
    tables are set up (and given their tenancy) once per process and database."""
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row, tuple_row

    from mtagent.session.postgres import migrations
    from mtagent.session.postgres.connect import connect_kwargs, tenant_configurer, unreachable

    kwargs = connect_kwargs(timeout)
    try:
        if store.dsn not in _CHECKPOINT_SCHEMA:
            with psycopg.connect(store.dsn, **kwargs) as admin:
                # LangGraph's setup() is not safe to run twice at once (its ledger's primary key), nor
                # beside our tenancy migration of its tables: a fleet starting together takes turns.
                _take_turn(admin, timeout)
                try:
                    if not _checkpoints_current(admin):  # set up by the owner once; a worker role may not
                        admin.row_factory = dict_row  # type: ignore[assignment]
                        PostgresSaver(admin).setup()  # type: ignore[arg-type]
                        admin.row_factory = tuple_row  # type: ignore[assignment]
                    migrations.migrate(admin, migrations.CHECKPOINT_MIGRATIONS)
                finally:
                    admin.execute("SELECT pg_advisory_unlock(%s)", (CHECKPOINT_SETUP_LOCK,))
            _CHECKPOINT_SCHEMA.add(store.dsn)
        conn = psycopg.connect(store.dsn, **kwargs, prepare_threshold=0, row_factory=dict_row)
        tenant_configurer(store.tenant, store.role)(conn)  # row-level security binds the saver's queries
    except (psycopg.Error, TimeoutError) as exc:
        raise unreachable(store.dsn, exc) from None
    return conn


def _take_turn(admin: Any, timeout: float) -> None:
    """Hold the checkpoint setup lock. Polled, not waited on: setup() builds an index CONCURRENTLY,
    which waits for every open transaction — a worker blocked inside ``pg_advisory_lock`` is one."""
    deadline = time.monotonic() + max(timeout, 1) * 6
    while not admin.execute("SELECT pg_try_advisory_lock(%s)", (CHECKPOINT_SETUP_LOCK,)).fetchone()[0]:
        if time.monotonic() > deadline:
            raise TimeoutError("another worker is still setting up LangGraph's checkpoint tables")
        time.sleep(0.05)


_CHECKPOINT_SCHEMA: set[str] = set()


def _checkpoints_current(conn: Any) -> bool:
    """LangGraph's checkpoint tables exist at the version this ``langgraph-checkpoint-postgres`` wants."""
    from langgraph.checkpoint.postgres import PostgresSaver

    found = conn.execute("SELECT to_regclass('checkpoint_migrations') IS NOT NULL").fetchone()
    if not found or not found[0]:
        return False
    latest = conn.execute("SELECT max(v) FROM checkpoint_migrations").fetchone()
    return latest is not None and latest[0] is not None and latest[0] >= len(PostgresSaver.MIGRATIONS) - 1
