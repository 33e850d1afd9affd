"""What an agent session keeps beside its transcript, per ``storage.backend``: checkpoints and audit.

Files (the default): LangGraph checkpoints in ``<artifacts>/checkpoints.sqlite`` and the audit
trail in ``$MTAGENT_HOME/audit.jsonl``. PostgreSQL: checkpoints through
``langgraph-checkpoint-postgres`` in the same database (its own tables, created idempotently by
``setup()``), thread ids prefixed with the tenant, and the ``mtagent_audit`` table. This lives in
``agent/`` because ``session/`` never imports LangGraph.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from mtagent import paths
from mtagent.config import Settings
from mtagent.session.audit import AuditingSink, AuditSink, JsonlAuditSink
from mtagent.session.store import open_store, validate_tenant

CHECKPOINT_FILE = "checkpoints.sqlite"


@dataclass(slots=True)
class SessionStorage:
    checkpointer: BaseCheckpointSaver[Any]
    audit: AuditSink
    tenant: str
    thread_prefix: str = ""
    _closers: list[Callable[[], None]] = field(default_factory=list)

    def audited(self, sink: Any, session_id: str) -> AuditingSink:
        """``sink`` with the decisions among its records also written to the audit trail."""
        return AuditingSink(sink, self.audit, self.tenant, session_id)

    def thread_id(self, session_id: str) -> str:
        return f"{self.thread_prefix}{session_id}"

    def close(self) -> None:
        for close in reversed(self._closers):
            with contextlib.suppress(Exception):
                close()
        self._closers.clear()


def open_session_storage(settings: Settings, artifact_dir: Path) -> SessionStorage:
    tenant = validate_tenant(settings.storage.tenant)
    if settings.storage.backend != "postgres":
        db = sqlite3.connect(str(paths.ensure_dir(artifact_dir) / CHECKPOINT_FILE), check_same_thread=False)
        from langgraph.checkpoint.sqlite import SqliteSaver

        return SessionStorage(SqliteSaver(db), JsonlAuditSink.default(tenant), tenant, "", [db.close])
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    from mtagent.session.postgres.connect import connect_kwargs, unreachable

    store = open_store(settings)  # migrations, the tenant's pool, the audit table
    try:
        conn = psycopg.connect(store.dsn, **connect_kwargs(settings.storage.connect_timeout_seconds),  # type: ignore[attr-defined]
                               prepare_threshold=0, row_factory=dict_row)
    except psycopg.Error as exc:
        store.close()
        raise unreachable(store.dsn, exc) from None  # type: ignore[attr-defined]
    saver = PostgresSaver(conn)
    saver.setup()
    return SessionStorage(saver, store.audit, tenant, f"{tenant}/", [store.close, conn.close])
