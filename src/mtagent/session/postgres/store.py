"""The PostgreSQL backend of :class:`~mtagent.session.store.Store`, for one tenant.

Every query names the tenant *and* runs on a connection whose ``app.tenant`` is that tenant,
acting as a role bound by row-level security: the ``WHERE tenant =`` clauses make the indexes
work, the policies make a forgotten clause harmless. A pooled connection is configured once,
when the pool opens it, and never changes tenant.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from mtagent import paths
from mtagent.errors import ArtifactPathError, SessionNotFound, TranscriptCorrupt
from mtagent.session import schema
from mtagent.session.artifacts import ArtifactMeta, DEFAULT_ARTIFACT_MAX_BYTES
from mtagent.session.postgres import migrations
from mtagent.session.postgres.audit_table import PostgresAuditSink
from mtagent.session.local import redact_dsn, shared_home
from mtagent.session.postgres.connect import choose_role, connect_kwargs, tenant_configurer, unreachable
from mtagent.session.postgres.writer import PostgresWriter
from mtagent.session import store_catalog
from mtagent.session.catalog import SessionInfo
from mtagent.session.store_artifacts import NotesThroughStore, StoreArtifacts, pull_memory
from mtagent.session.store_types import ResumeRead, validate_name
from mtagent.session.reader import Entry
from mtagent.session.transcript import FsyncPolicy

_SESSION = "tenant = %s AND project = %s AND session_id = %s"


def check_artifact_path(relative: str) -> str:
    """The same refusals as the files backend: a transcript names artifacts, and it is untrusted."""
    if not relative or "\x00" in relative or "\\" in relative:
        raise ArtifactPathError(f"artifact path {relative!r} is empty or contains NUL or a backslash")
    if relative.startswith("/") or (len(relative) > 1 and relative[1] == ":"):
        raise ArtifactPathError(f"artifact path {relative!r} is absolute; transcripts may only name paths "
                                "inside the session's artifact folder")
    normal = posixpath.normpath(relative)
    if normal == ".." or normal.startswith("../") or normal == ".":
        raise ArtifactPathError(f"artifact path {relative!r} escapes the session's artifact folder")
    return normal


class PostgresStore:
    """See the module docstring. ``migrate`` applies the schema migrations first (idempotent)."""

    backend = "postgres"

    def __init__(self, dsn: str, *, tenant: str = "default",
                 max_artifact_bytes: int = DEFAULT_ARTIFACT_MAX_BYTES, pool_max_size: int = 4,
                 connect_timeout: float = 10, migrate: bool = True, fsync: FsyncPolicy = "turn") -> None:
        self.dsn = dsn
        self.tenant = tenant
        self._where = redact_dsn(dsn)
        self.max_artifact_bytes = max_artifact_bytes
        self.fsync: FsyncPolicy = fsync
        self._timeout = connect_timeout
        try:
            with psycopg.connect(dsn, **connect_kwargs(connect_timeout)) as conn:
                if migrate:
                    migrations.migrate(conn)
                elif not migrations.applied_versions(conn):
                    raise SessionNotFound(f"no mtagent schema at {redact_dsn(dsn)}; run any mtagent command "
                                          "with storage.backend = \"postgres\" once to create it")
                self.role = choose_role(conn, dsn)
        except psycopg.Error as exc:
            raise unreachable(dsn, exc) from None
        self.pool = ConnectionPool(dsn, min_size=1, max_size=pool_max_size, kwargs=connect_kwargs(connect_timeout),
                                   configure=tenant_configurer(tenant, self.role), timeout=connect_timeout,
                                   open=False, name=f"mtagent-{tenant}")
        try:
            self.pool.open(wait=True, timeout=connect_timeout)
        except PoolTimeout as exc:
            self.pool.close()
            raise unreachable(dsn, exc) from None
        self.audit = PostgresAuditSink(self.pool, tenant)

    @property
    def local_home(self) -> Path:
        """This tenant's folders on this machine (:mod:`mtagent.session.local`), under the current home."""
        return shared_home(self._where, self.tenant)

    def _all(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        try:
            with self.pool.connection() as conn:
                return conn.execute(sql, params).fetchall()
        except (psycopg.OperationalError, PoolTimeout) as exc:
            raise unreachable(self.dsn, exc) from None

    def _run(self, sql: str, params: Sequence[Any]) -> None:
        try:
            with self.pool.connection() as conn:
                conn.execute(sql, params)
        except (psycopg.OperationalError, PoolTimeout) as exc:
            raise unreachable(self.dsn, exc) from None

    # transcripts -------------------------------------------------------------------------
    def open_writer(self, project: str, session_id: str) -> PostgresWriter:
        paths.validate_session_id(session_id)
        return PostgresWriter(self.dsn, tenant=self.tenant, role=self.role, project=validate_name("project", project),
                              session_id=session_id, fsync=self.fsync, timeout=self._timeout)

    def projects(self) -> list[str]:
        rows = self._all("SELECT DISTINCT project FROM mtagent_sessions WHERE tenant = %s ORDER BY project",
                         (self.tenant,))
        return [r[0] for r in rows]

    def sessions(self, project: str) -> list[str]:
        rows = self._all("SELECT session_id FROM mtagent_sessions WHERE tenant = %s AND project = %s"
                         " ORDER BY session_id", (self.tenant, project))
        return [r[0] for r in rows]

    def _require(self, project: str, session_id: str) -> None:
        if not self._all(f"SELECT 1 FROM mtagent_sessions WHERE {_SESSION}", (self.tenant, project, session_id)):
            raise SessionNotFound(f"no session {session_id} in project {project}; see `mtagent sessions list`")

    def _entries(self, rows: list[tuple[Any, ...]], session_id: str, skip_corrupt: bool = False) -> list[Entry]:
        out: list[Entry] = []
        for seq, line in rows:
            try:
                out.append(Entry(int(seq), schema.parse_record(schema.loads_line(bytes(line)))))
            except schema.UnknownRecord:
                continue
            except (schema.RecordError, ValueError, RecursionError) as exc:
                if skip_corrupt:
                    continue
                raise TranscriptCorrupt(f"postgres:{session_id}", int(seq) + 1, str(exc)[:200]) from None
        return out

    def read_entries(self, project: str, session_id: str, *, start: int = 0,
                     skip_corrupt: bool = False) -> list[Entry]:
        self._require(project, session_id)
        rows = self._all(f"SELECT seq, line FROM mtagent_transcript WHERE {_SESSION} AND seq >= %s ORDER BY seq",
                         (self.tenant, project, session_id, start))
        return self._entries(rows, session_id, skip_corrupt)

    def read_since_boundary(self, project: str, session_id: str, *, skip_corrupt: bool = False) -> ResumeRead:
        """Two indexed look-ups (last boundary, its first kept message), then only the rows after."""
        self._require(project, session_id)
        found = self._all(f"SELECT seq, line FROM mtagent_transcript WHERE {_SESSION}"
                          " AND kind = 'compact_boundary' ORDER BY seq DESC LIMIT 1",
                          (self.tenant, project, session_id))
        if not found:
            return ResumeRead(self.read_entries(project, session_id, skip_corrupt=skip_corrupt))
        seq, line = found[0]
        boundary = schema.loads_line(bytes(line))
        start, notes = int(seq), []
        kept_id = boundary.get("first_kept_id")
        if isinstance(kept_id, str):
            kept = self._all(f"SELECT seq FROM mtagent_transcript WHERE {_SESSION} AND message_id = %s"
                             " AND seq < %s ORDER BY seq DESC LIMIT 1",
                             (self.tenant, project, session_id, kept_id, seq))
            if kept:
                start = int(kept[0][0])
            else:
                notes.append(f"first kept message {kept_id} of boundary {boundary.get('id')} not found before it")
        rows = self._all(f"SELECT seq, line FROM mtagent_transcript WHERE {_SESSION} AND seq >= %s ORDER BY seq",
                         (self.tenant, project, session_id, start))
        return ResumeRead(self._entries(rows, session_id, skip_corrupt), str(boundary.get("id")), int(seq), start,
                          notes)

    def record_count(self, project: str, session_id: str) -> int:
        rows = self._all(f"SELECT count(*) FROM mtagent_transcript WHERE {_SESSION}", (self.tenant, project, session_id))
        return int(rows[0][0])

    def discard_empty(self, project: str, session_id: str) -> bool:
        """Never: in a database transcripts are append-only for the application role (no DELETE is
        granted on them, so a fleet's history and audit cannot be erased from an agent), and an empty
        session is kept."""
        return False

    def session_start(self, project: str, session_id: str) -> dict[str, Any] | None:
        self._require(project, session_id)
        rows = self._all(f"SELECT seq, line FROM mtagent_transcript WHERE {_SESSION} AND seq = 0",
                         (self.tenant, project, session_id))
        entries = self._entries(rows, session_id)
        return entries[0].record if entries else None

    # artifacts and session memory ----------------------------------------------------------
    def write_artifact(self, project: str, session_id: str, relative: str, text: str) -> ArtifactMeta:
        path = check_artifact_path(relative)
        data = text.encode("utf-8", errors="replace")
        truncated = len(data) > self.max_artifact_bytes
        if truncated:
            data = data[: self.max_artifact_bytes].decode("utf-8", errors="ignore").encode("utf-8")
        digest = hashlib.sha256(data).hexdigest()
        self._run("INSERT INTO mtagent_artifacts (tenant, project, session_id, path, body, original_chars,"
                  " truncated, sha256) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
                  " ON CONFLICT (tenant, project, session_id, path) DO UPDATE SET body = excluded.body,"
                  " original_chars = excluded.original_chars, truncated = excluded.truncated,"
                  " sha256 = excluded.sha256",
                  (self.tenant, project, session_id, path, data, len(text), truncated, digest))
        return ArtifactMeta(relative, len(text), len(data), truncated, digest)

    def read_artifact(self, project: str, session_id: str, relative: str) -> str:
        path = check_artifact_path(relative)
        rows = self._all(f"SELECT body FROM mtagent_artifacts WHERE {_SESSION} AND path = %s",
                         (self.tenant, project, session_id, path))
        if not rows:
            raise ArtifactPathError(f"artifact {relative!r} is missing from session {session_id} in PostgreSQL; "
                                    "it may never have been stored or was migrated without it")
        return bytes(rows[0][0]).decode("utf-8", errors="replace")

    def list_artifacts(self, project: str, session_id: str) -> list[str]:
        rows = self._all(f"SELECT path FROM mtagent_artifacts WHERE {_SESSION} ORDER BY path",
                         (self.tenant, project, session_id))
        return [r[0] for r in rows]

    def read_session_memory(self, project: str, session_id: str) -> str | None:
        rows = self._all(f"SELECT body FROM mtagent_session_memory WHERE {_SESSION}", (self.tenant, project, session_id))
        return rows[0][0] if rows else None

    def write_session_memory(self, project: str, session_id: str, text: str) -> None:
        self._run("INSERT INTO mtagent_session_memory (tenant, project, session_id, body) VALUES (%s, %s, %s, %s)"
                  " ON CONFLICT (tenant, project, session_id) DO UPDATE SET body = excluded.body, updated_at = now()",
                  (self.tenant, project, session_id, text))

    # long-term memory ------------------------------------------------------------------------
    def read_memory(self, project: str, name: str) -> str | None:
        rows = self._all("SELECT body FROM mtagent_memory WHERE tenant = %s AND project = %s AND name = %s",
                         (self.tenant, project, validate_name("memory name", name)))
        return rows[0][0] if rows else None

    def write_memory(self, project: str, name: str, text: str) -> None:
        self._run("INSERT INTO mtagent_memory (tenant, project, name, body) VALUES (%s, %s, %s, %s)"
                  " ON CONFLICT (tenant, project, name) DO UPDATE SET body = excluded.body, updated_at = now()",
                  (self.tenant, validate_name("project", project), validate_name("memory name", name), text))

    def list_memory(self, project: str) -> list[str]:
        rows = self._all("SELECT name FROM mtagent_memory WHERE tenant = %s AND project = %s ORDER BY name",
                         (self.tenant, project))
        return [r[0] for r in rows]

    # what the readers and the agent open, in the files layout -------------------------------
    def session_infos(self, project: str) -> list[SessionInfo]:
        return store_catalog.session_infos(self, project)

    def transcript_file(self, project: str, session_id: str, *, beside: bool = True) -> Path:
        return store_catalog.mirror_session(self, project, session_id, beside=beside)

    def history_folder(self, project: str) -> Path:
        return store_catalog.mirror_project(self, project)

    def tenant_folder(self) -> Path:
        return store_catalog.mirror_tenant(self)

    def session_artifacts(self, project: str, session_id: str) -> StoreArtifacts:
        return StoreArtifacts(store_catalog.session_cache_dir(self, project, session_id), self.max_artifact_bytes,
                              self, project, session_id)

    def open_session_writer(self, project: str, session_id: str, artifacts: Any) -> NotesThroughStore:
        """The session's writer, with its notes and the project's memory pulled first and kept in the rows."""
        artifacts.pull_session_memory()  # the notes another worker wrote
        folder = paths.memory_dir_of(validate_name("project", project), self.local_home)
        pull_memory(self, project, folder)  # long-term memory as any worker last saved it
        return NotesThroughStore(self.open_writer(project, session_id), artifacts, folder)

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
