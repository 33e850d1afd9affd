"""The PostgreSQL schema as a plain ordered list of versioned migrations.

Each migration runs once, in its own transaction, recorded in ``mtagent_schema``; every worker
runs :func:`migrate` on start under one transaction-level advisory lock, so a fleet starting at
once applies each step exactly once and a half-applied step never exists (DDL is
transactional in PostgreSQL). Append new steps at the end; never edit a released one.

Tenancy: every table but the schema ledger has a ``tenant`` column and a row-level security
policy comparing it with ``current_setting('app.tenant')``, which the store sets on each of its
connections. ``FORCE ROW LEVEL SECURITY`` makes the policies bind the tables' owner too, and the
store switches to the ``mtagent_tenant`` role (no ``BYPASSRLS``) when it may, so even a
superuser's DSN reads through the policies. Without ``app.tenant`` a connection sees nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

APP_ROLE = "mtagent_tenant"
MIGRATION_LOCK_KEY = 0x6D74_6167_656E_7401  # "mtagent" + 1: serialises migrate() across workers
_TENANT = "current_setting('app.tenant', true)"


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def _if_role(statement: str) -> str:
    """``statement`` (granting something to the app role) run only where that role exists."""
    return f"""
    DO $$ BEGIN
        IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
            EXECUTE {statement};
        END IF;
    END $$;
"""


def _tenant_table(table: str, privileges: str) -> str:
    return f"""
        ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;
        ALTER TABLE {table} FORCE ROW LEVEL SECURITY;
        DROP POLICY IF EXISTS tenant_isolation ON {table};
        CREATE POLICY tenant_isolation ON {table}
            USING (tenant = {_TENANT}) WITH CHECK (tenant = {_TENANT});
    """ + _if_role(f"'GRANT {privileges} ON {table} TO {APP_ROLE}'")


_ROLE = f"""
    DO $$ BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
            CREATE ROLE {APP_ROLE} NOLOGIN NOSUPERUSER NOBYPASSRLS;
        END IF;
        EXECUTE format('GRANT {APP_ROLE} TO %I', current_user);
    EXCEPTION WHEN insufficient_privilege THEN
        RAISE NOTICE 'cannot create role {APP_ROLE}; row-level security relies on FORCE and the DSN role';
    END $$;
""" + _if_role(f"format('GRANT USAGE ON SCHEMA %I TO {APP_ROLE}', current_schema())")

_TABLES = f"""
    CREATE TABLE mtagent_sessions (
        tenant text NOT NULL DEFAULT {_TENANT},
        project text NOT NULL,
        session_id text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        writer_pid integer,
        writer_host text,
        writer_since timestamptz,
        PRIMARY KEY (tenant, project, session_id)
    );
    CREATE TABLE mtagent_transcript (
        tenant text NOT NULL DEFAULT {_TENANT},
        project text NOT NULL,
        session_id text NOT NULL,
        seq bigint NOT NULL,
        kind text NOT NULL,
        message_id text,
        line bytea NOT NULL,
        PRIMARY KEY (tenant, project, session_id, seq)
    );
    CREATE INDEX mtagent_transcript_boundary ON mtagent_transcript (tenant, project, session_id, seq)
        WHERE kind = 'compact_boundary';
    CREATE INDEX mtagent_transcript_message ON mtagent_transcript (tenant, project, session_id, message_id)
        WHERE message_id IS NOT NULL;
    CREATE TABLE mtagent_artifacts (
        tenant text NOT NULL DEFAULT {_TENANT},
        project text NOT NULL,
        session_id text NOT NULL,
        path text NOT NULL,
        body bytea NOT NULL,
        original_chars bigint NOT NULL,
        truncated boolean NOT NULL,
        sha256 text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant, project, session_id, path)
    );
    CREATE TABLE mtagent_session_memory (
        tenant text NOT NULL DEFAULT {_TENANT},
        project text NOT NULL,
        session_id text NOT NULL,
        body text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant, project, session_id)
    );
    CREATE TABLE mtagent_memory (
        tenant text NOT NULL DEFAULT {_TENANT},
        project text NOT NULL,
        name text NOT NULL,
        body text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant, project, name)
    );
    CREATE TABLE mtagent_documents (
        tenant text NOT NULL DEFAULT {_TENANT},
        collection text NOT NULL,
        key text NOT NULL,
        body text NOT NULL,
        meta jsonb NOT NULL DEFAULT '{{}}',
        acl text[] NOT NULL DEFAULT '{{}}',
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant, collection, key)
    );
    CREATE TABLE mtagent_audit (
        id bigserial PRIMARY KEY,
        tenant text NOT NULL DEFAULT {_TENANT},
        at timestamptz NOT NULL DEFAULT now(),
        who text NOT NULL,
        action text NOT NULL,
        session_id text,
        detail jsonb NOT NULL DEFAULT '{{}}'
    );
    CREATE INDEX mtagent_audit_tenant_at ON mtagent_audit (tenant, at);
    CREATE FUNCTION mtagent_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP;
    END $$;
    CREATE TRIGGER mtagent_audit_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON mtagent_audit
        FOR EACH STATEMENT EXECUTE FUNCTION mtagent_append_only();
    CREATE TRIGGER mtagent_transcript_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON mtagent_transcript
        FOR EACH STATEMENT EXECUTE FUNCTION mtagent_append_only();
""" + _if_role(f"'GRANT USAGE ON SEQUENCE mtagent_audit_id_seq TO {APP_ROLE}'")

_POLICIES = "".join([
    _tenant_table("mtagent_sessions", "SELECT, INSERT, UPDATE"),
    _tenant_table("mtagent_transcript", "SELECT, INSERT"),
    _tenant_table("mtagent_artifacts", "SELECT, INSERT, UPDATE"),
    _tenant_table("mtagent_session_memory", "SELECT, INSERT, UPDATE"),
    _tenant_table("mtagent_memory", "SELECT, INSERT, UPDATE"),
    _tenant_table("mtagent_documents", "SELECT, INSERT, UPDATE, DELETE"),
    _tenant_table("mtagent_audit", "SELECT, INSERT"),
])

# Transcript lines and artifacts are large and written once: lz4 compresses them several times
# faster than the default pglz (appends of 20 kB tool results ran ~1.7x faster). Servers built
# without lz4 keep pglz.
_LZ4 = """
    DO $$ BEGIN
        ALTER TABLE mtagent_transcript ALTER COLUMN line SET COMPRESSION lz4;
        ALTER TABLE mtagent_artifacts ALTER COLUMN body SET COMPRESSION lz4;
    EXCEPTION WHEN feature_not_supported OR invalid_parameter_value OR syntax_error THEN
        RAISE NOTICE 'lz4 compression unavailable; keeping pglz';
    END $$;
"""

MIGRATIONS: list[Migration] = [
    Migration(1, "application role", _ROLE),
    Migration(2, "tables", _TABLES),
    Migration(3, "row-level security", _POLICIES),
    Migration(4, "lz4 compression for large columns", _LZ4),
    # a login role that acts as the app role (not the owner) checks the schema version on start
    Migration(5, "the app role reads the schema ledger", _if_role(f"'GRANT SELECT ON mtagent_schema TO {APP_ROLE}'")),
]

# LangGraph's checkpoint tables belong to ``langgraph-checkpoint-postgres`` (its ``setup()``
# creates them), so their tenancy is a separate list, applied right after that ``setup()``: a
# ``tenant`` column (rows written before it get the tenant their thread id is prefixed with)
# defaulting to the connection's ``app.tenant``, and the same forced policy as mtagent's tables.
# The saver's queries never name the tenant; the policy filters every read and checks every write.
CHECKPOINT_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")


def _checkpoint_tenancy() -> str:
    return "".join(f"""
        ALTER TABLE {table} ADD COLUMN IF NOT EXISTS tenant text;
        UPDATE {table} SET tenant = split_part(thread_id, '/', 1) WHERE tenant IS NULL;
        ALTER TABLE {table} ALTER COLUMN tenant SET DEFAULT {_TENANT};
        ALTER TABLE {table} ALTER COLUMN tenant SET NOT NULL;
    """ + _tenant_table(table, "SELECT, INSERT, UPDATE, DELETE") for table in CHECKPOINT_TABLES)


CHECKPOINT_MIGRATIONS: list[Migration] = [
    Migration(101, "row-level security on LangGraph's checkpoint tables", _checkpoint_tenancy()),
    Migration(102, "the app role reads LangGraph's migration ledger",
              _if_role(f"'GRANT SELECT ON checkpoint_migrations TO {APP_ROLE}'")),
]

_LEDGER = """
    CREATE TABLE IF NOT EXISTS mtagent_schema (
        version integer PRIMARY KEY,
        name text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
    )
"""


def applied_versions(conn: psycopg.Connection) -> set[int]:
    exists = conn.execute("SELECT to_regclass('mtagent_schema') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return set()
    return {row[0] for row in conn.execute("SELECT version FROM mtagent_schema")}


def migrate(conn: psycopg.Connection, migrations: list[Migration] | None = None) -> list[int]:
    """Apply the missing migrations in order; return the versions applied now (idempotent)."""
    steps = MIGRATIONS if migrations is None else migrations
    if {m.version for m in steps} <= applied_versions(conn):
        return []  # the common case: no lock, no DDL
    applied_now: list[int] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
        conn.execute(_LEDGER)
    for step in sorted(steps, key=lambda m: m.version):
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
            done = conn.execute("SELECT 1 FROM mtagent_schema WHERE version = %s", (step.version,)).fetchone()
            if done:
                continue
            conn.execute(step.sql.encode())
            conn.execute("INSERT INTO mtagent_schema (version, name) VALUES (%s, %s)", (step.version, step.name))
            applied_now.append(step.version)
    return applied_now
