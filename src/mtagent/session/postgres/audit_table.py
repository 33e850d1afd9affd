"""The audit trail in PostgreSQL: ``mtagent_audit``, insert-only for the application role."""

from __future__ import annotations

from datetime import datetime

from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from mtagent.session.audit import AuditEvent, bounded_detail


class PostgresAuditSink:
    """Rows go in with the tenant's connection; the table's trigger refuses any change after."""

    def __init__(self, pool: ConnectionPool, tenant: str) -> None:
        self.pool = pool
        self.tenant = tenant

    def record(self, event: AuditEvent) -> None:
        with self.pool.connection() as conn:
            conn.execute("INSERT INTO mtagent_audit (tenant, at, who, action, session_id, detail)"
                         " VALUES (%s, %s, %s, %s, %s, %s)",
                         (self.tenant, datetime.fromisoformat(event.at), event.who, event.action,
                          event.session_id, Jsonb(bounded_detail(event.detail))))

    def events(self, *, session_id: str | None = None, action: str | None = None,
               limit: int | None = None) -> list[AuditEvent]:
        sql = "SELECT at, who, action, session_id, detail FROM mtagent_audit WHERE tenant = %s"
        params: list[object] = [self.tenant]
        if session_id is not None:
            sql += " AND session_id = %s"
            params.append(session_id)
        if action is not None:
            sql += " AND action = %s"
            params.append(action)
        sql += " ORDER BY id DESC"
        if limit:
            sql += " LIMIT %s"
            params.append(limit)
        with self.pool.connection() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [AuditEvent(action=a, who=w, tenant=self.tenant, session_id=s, detail=dict(d or {}),
                           at=at.isoformat(timespec="milliseconds")) for at, w, a, s, d in reversed(rows)]
