"""Tenant isolation on every path, and the PostgreSQL-only guarantees (migrations, append-only, index)."""

from __future__ import annotations

import threading
import uuid

import pytest

pytest.importorskip("psycopg", reason="the postgres extra is not installed: pip install -e '.[dev]'")

import psycopg  # noqa: E402

from mtagent.errors import ArtifactPathError, SessionNotFound, StorageError  # noqa: E402
from mtagent.session import schema  # noqa: E402
from mtagent.session.audit import AuditEvent  # noqa: E402
from mtagent.session.postgres import migrations  # noqa: E402
from mtagent.session.postgres.connect import tenant_configurer  # noqa: E402
from mtagent.session.postgres.store import PostgresStore  # noqa: E402

PROJECT = "proj-0123456789ab"
TABLES = ["mtagent_sessions", "mtagent_transcript", "mtagent_artifacts", "mtagent_session_memory",
          "mtagent_memory", "mtagent_documents", "mtagent_audit"]


def _fill(store: PostgresStore, sid: str) -> None:
    with store.open_writer(PROJECT, sid) as writer:
        writer.append(schema.session_start_record(sid, "/w", "m", "0"))
        writer.append(schema.boundary_record(summary="secret summary", first_kept_id=None, boundary_id="cb-a"))
    store.write_artifact(PROJECT, sid, "tool-results/c1.txt", "secret artifact")
    store.write_session_memory(PROJECT, sid, "secret notes")
    store.write_memory(PROJECT, "MEMORY.md", "secret memory")
    store.audit.record(AuditEvent("export", "alice", store.tenant, sid))


@pytest.fixture
def two_tenants(pg_dsn: str):
    a = PostgresStore(pg_dsn, tenant=f"a-{uuid.uuid4().hex[:8]}", pool_max_size=2)
    b = PostgresStore(pg_dsn, tenant=f"b-{uuid.uuid4().hex[:8]}", pool_max_size=2)
    _fill(a, "shared-id")
    yield a, b
    a.close()
    b.close()


def test_tenant_b_cannot_read_tenant_a_through_the_store(two_tenants) -> None:
    a, b = two_tenants
    assert a.sessions(PROJECT) == ["shared-id"] and len(a.read_entries(PROJECT, "shared-id")) == 2
    assert b.projects() == [] and b.sessions(PROJECT) == []
    with pytest.raises(SessionNotFound):
        b.read_entries(PROJECT, "shared-id")
    with pytest.raises(SessionNotFound):
        b.read_since_boundary(PROJECT, "shared-id")
    assert b.record_count(PROJECT, "shared-id") == 0
    with pytest.raises(ArtifactPathError):
        b.read_artifact(PROJECT, "shared-id", "tool-results/c1.txt")
    assert b.list_artifacts(PROJECT, "shared-id") == []
    assert b.read_session_memory(PROJECT, "shared-id") is None
    assert b.read_memory(PROJECT, "MEMORY.md") is None and b.list_memory(PROJECT) == []
    assert b.audit.events() == []


def test_the_same_session_id_in_two_tenants_is_two_sessions(two_tenants) -> None:
    a, b = two_tenants
    with b.open_writer(PROJECT, "shared-id") as writer:  # a's writer lock does not block b
        writer.append(schema.session_start_record("shared-id", "/b", "m", "0"))
    assert [e.record["cwd"] for e in b.read_entries(PROJECT, "shared-id")] == ["/b"]
    assert a.read_entries(PROJECT, "shared-id")[0].record["cwd"] == "/w"


def _tenant_conn(store: PostgresStore, tenant: str | None) -> psycopg.Connection:
    conn = psycopg.connect(store.dsn, autocommit=True)
    if tenant is None:
        conn.execute(f'SET ROLE "{store.role}"')
    else:
        tenant_configurer(tenant, store.role)(conn)
    return conn


def test_raw_sql_on_a_tenant_connection_sees_only_that_tenant(two_tenants) -> None:
    a, b = two_tenants
    assert b.role == migrations.APP_ROLE, "a superuser DSN acts as the application role"
    with _tenant_conn(b, b.tenant) as conn:
        assert conn.execute("SELECT current_user").fetchone()[0] == migrations.APP_ROLE
        for table in TABLES:  # no WHERE clause: the policy alone hides tenant a
            count = conn.execute(f"SELECT count(*) FROM {table} WHERE tenant = %s", (a.tenant,)).fetchone()[0]
            assert count == 0, table
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # WITH CHECK: no writing as a
            conn.execute("INSERT INTO mtagent_memory (tenant, project, name, body) VALUES (%s, 'p', 'x', 'y')",
                         (a.tenant,))
    with _tenant_conn(b, None) as conn:  # no app.tenant at all: nothing
        for table in TABLES:
            assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table


def test_tables_force_row_level_security(pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn) as conn:
        rows = conn.execute("SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class"
                            " WHERE relname = ANY(%s)", (TABLES,)).fetchall()
    assert sorted(r[0] for r in rows) == sorted(TABLES)
    assert all(r[1] and r[2] for r in rows)


def test_a_superuser_dsn_without_the_app_role_is_refused(fresh_db: str) -> None:
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        migrations.migrate(conn)
        conn.execute("CREATE ROLE mtagent_bypass LOGIN BYPASSRLS")
        conn.execute("GRANT ALL ON ALL TABLES IN SCHEMA public TO mtagent_bypass")
    dsn = fresh_db.replace("mtagent_admin@", "mtagent_bypass@")
    with pytest.raises(StorageError, match="bypasses row-level security"):
        PostgresStore(dsn, tenant="x", migrate=False)


def test_transcript_and_audit_are_append_only_even_for_the_owner(two_tenants, pg_dsn: str) -> None:
    a, _ = two_tenants
    with psycopg.connect(pg_dsn, autocommit=True) as conn:  # the superuser who owns the tables
        for sql in ("UPDATE mtagent_transcript SET kind = 'x'", "DELETE FROM mtagent_audit",
                    "TRUNCATE mtagent_transcript"):
            with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
                conn.execute(sql)
    assert len(a.read_entries(PROJECT, "shared-id")) == 2


def test_migrations_are_versioned_and_idempotent(fresh_db: str) -> None:
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        assert migrations.migrate(conn) == [m.version for m in migrations.MIGRATIONS]
        assert migrations.migrate(conn) == []
        versions = [r[0] for r in conn.execute("SELECT version FROM mtagent_schema ORDER BY version")]
    assert versions == [m.version for m in migrations.MIGRATIONS]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)


def test_concurrent_workers_apply_each_migration_once(fresh_db: str) -> None:
    applied: list[list[int]] = []

    def worker() -> None:
        with psycopg.connect(fresh_db, autocommit=True) as conn:
            applied.append(migrations.migrate(conn))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(v for run in applied for v in run) == [m.version for m in migrations.MIGRATIONS]


def test_a_later_migration_is_applied_on_top(fresh_db: str) -> None:
    extra = migrations.Migration(99, "test column", "ALTER TABLE mtagent_memory ADD COLUMN note text")
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        migrations.migrate(conn)
        assert migrations.migrate(conn, [*migrations.MIGRATIONS, extra]) == [99]
        assert migrations.migrate(conn, [*migrations.MIGRATIONS, extra]) == []


def test_resume_lookups_use_the_indexes(two_tenants, pg_dsn: str) -> None:
    a, _ = two_tenants
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")
        plan = "\n".join(r[0] for r in conn.execute(
            "EXPLAIN SELECT seq FROM mtagent_transcript WHERE tenant = 'x' AND project = 'p' AND session_id = 's'"
            " AND kind = 'compact_boundary' ORDER BY seq DESC LIMIT 1"))
        assert "mtagent_transcript_boundary" in plan
        plan = "\n".join(r[0] for r in conn.execute(
            "EXPLAIN SELECT seq FROM mtagent_transcript WHERE tenant = 'x' AND project = 'p' AND session_id = 's'"
            " AND message_id = 'm' AND seq < 10 ORDER BY seq DESC LIMIT 1"))
        assert "mtagent_transcript_message" in plan or "mtagent_transcript_pkey" in plan


def test_an_unreachable_server_is_one_clear_error() -> None:
    with pytest.raises(StorageError, match="cannot use PostgreSQL at postgresql://u:\\*\\*\\*@127.0.0.1:1/x"):
        PostgresStore("postgresql://u:hunter2@127.0.0.1:1/x", tenant="t", connect_timeout=2)
