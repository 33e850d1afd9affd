"""Connections for one tenant: the role they act as, ``app.tenant``, and errors a user can act on."""

from __future__ import annotations

import hashlib
import os
import socket
from collections.abc import Callable
from typing import Any

import psycopg

from mtagent.errors import StorageError
from mtagent.session.local import redact_dsn
from mtagent.session.postgres.migrations import APP_ROLE

APPLICATION_NAME = "mtagent"


def unreachable(dsn: str, exc: BaseException) -> StorageError:
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
    return StorageError(
        f"cannot use PostgreSQL at {redact_dsn(dsn)}: {reason}. Check storage.dsn "
        "(or MTAGENT_STORAGE__DSN) and that the server is running, or set storage.backend = \"files\""
    )


def connect_kwargs(timeout: float) -> dict[str, Any]:
    return {"autocommit": True, "connect_timeout": max(1, int(timeout)),
            "application_name": f"{APPLICATION_NAME} pid {os.getpid()}"}


def choose_role(conn: psycopg.Connection, dsn: str) -> str | None:
    """The role tenant connections switch to, so row-level security binds them whoever logs in.

    A login role that is a member of ``mtagent_tenant`` acts as it. Otherwise the login role
    itself must not bypass row-level security: a superuser or ``BYPASSRLS`` role without the
    application role would see every tenant, so that is refused rather than silently allowed.
    """
    row = conn.execute(
        "SELECT r.rolsuper, r.rolbypassrls, EXISTS (SELECT 1 FROM pg_roles WHERE rolname = %s)"
        " FROM pg_roles r WHERE r.rolname = current_user", (APP_ROLE,)).fetchone()
    if row is None:
        raise StorageError(f"cannot inspect the login role of {redact_dsn(dsn)}")
    superuser, bypass, app_role_exists = row
    if app_role_exists:
        member = conn.execute("SELECT pg_has_role(current_user, %s, 'MEMBER')", (APP_ROLE,)).fetchone()
        if member and member[0]:
            return APP_ROLE
    if superuser or bypass:
        raise StorageError(
            f"the login role of {redact_dsn(dsn)} bypasses row-level security and cannot act as "
            f"{APP_ROLE}; tenants would not be kept apart. Run the first mtagent with a role that may "
            f"create roles, or `GRANT {APP_ROLE} TO <login role>`"
        )
    return None


def tenant_configurer(tenant: str, role: str | None) -> Callable[[psycopg.Connection], None]:
    """Prepare a fresh connection for one tenant (the pool calls it once per connection)."""

    def configure(conn: psycopg.Connection) -> None:
        if role:
            conn.execute(f'SET ROLE "{role}"')
        conn.execute("SELECT set_config('app.tenant', %s, false)", (tenant,))

    return configure


def lock_key(tenant: str, project: str, session_id: str) -> int:
    """The advisory-lock key of one session: 64 bits of a hash, as PostgreSQL's signed bigint."""
    digest = hashlib.sha256(f"mtagent\0{tenant}\0{project}\0{session_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def host_name() -> str:
    return socket.gethostname()[:255]
