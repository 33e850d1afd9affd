"""The one writer of a session in PostgreSQL: an advisory lock, one committed row per record.

* **One writer.** ``pg_try_advisory_lock`` on a key derived from (tenant, project, session) is
  held by the writer's own connection for its lifetime; the server releases it when that
  connection ends — including when the process is killed. A second writer gets
  :class:`~mtagent.errors.SessionLocked` naming the holder's pid and host, like the files backend.
* **Whole or absent.** Each record is one ``INSERT`` committed on its own, so a crash leaves
  every record either committed whole or not there; there is no torn tail to repair.
* **Durability** follows ``transcript.fsync``: ``always`` commits synchronously; ``turn`` and
  ``never`` commit asynchronously (a process crash loses nothing, an OS crash may lose the last
  milliseconds) and ``turn`` forces the WAL to disk at :meth:`end_turn`.
* A lost connection means a lost lock, so the writer stops with a clear error instead of
  reconnecting behind another writer's back.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import Any

import psycopg

from mtagent.errors import SessionLocked, StorageError
from mtagent.session import schema
from mtagent.session.postgres.connect import (
    connect_kwargs, host_name, lock_key, tenant_configurer, unreachable,
)
from mtagent.session.transcript import FsyncPolicy


class PostgresWriter:
    """See the module docstring. Built by :meth:`PostgresStore.open_writer`."""

    def __init__(self, dsn: str, *, tenant: str, role: str | None, project: str, session_id: str,
                 fsync: FsyncPolicy = "turn", timeout: float = 10, validate: bool = True) -> None:
        self.session_id = session_id
        self.project = project
        self.path = Path("postgres") / tenant / project / session_id  # a label for messages, not a file
        self.tenant = tenant
        self.fsync_policy: FsyncPolicy = fsync
        self.validate = validate
        self._mutex = threading.Lock()
        self._key = lock_key(tenant, project, session_id)
        try:
            self._conn: psycopg.Connection | None = psycopg.connect(dsn, **connect_kwargs(timeout))
        except psycopg.Error as exc:
            raise unreachable(dsn, exc) from None
        try:
            tenant_configurer(tenant, role)(self._conn)
            self._lock()
            if fsync != "always":
                self._conn.execute("SET synchronous_commit = off")
            row = self._conn.execute(
                "SELECT coalesce(max(seq) + 1, 0) FROM mtagent_transcript"
                " WHERE tenant = %s AND project = %s AND session_id = %s",
                (tenant, project, session_id)).fetchone()
            self._next = int(row[0]) if row else 0
        except BaseException:
            self._conn.close()
            self._conn = None
            raise

    def _lock(self) -> None:
        assert self._conn is not None
        got = self._conn.execute("SELECT pg_try_advisory_lock(%s)", (self._key,)).fetchone()
        if not got or not got[0]:
            holder = self._conn.execute(
                "SELECT writer_pid, writer_host FROM mtagent_sessions"
                " WHERE tenant = %s AND project = %s AND session_id = %s",
                (self.tenant, self.project, self.session_id)).fetchone()
            raise SessionLocked(self.session_id, holder[0] if holder else None, holder[1] if holder else None)
        self._conn.execute(
            "INSERT INTO mtagent_sessions (tenant, project, session_id, writer_pid, writer_host, writer_since)"
            " VALUES (%s, %s, %s, %s, %s, now())"
            " ON CONFLICT (tenant, project, session_id) DO UPDATE SET writer_pid = excluded.writer_pid,"
            " writer_host = excluded.writer_host, writer_since = excluded.writer_since",
            (self.tenant, self.project, self.session_id, os.getpid(), host_name()))

    @property
    def size(self) -> int:
        """Records in the session (the position the next record will get)."""
        return self._next

    def append(self, record: dict[str, Any]) -> int:
        """Commit one record as one row; return its sequence number."""
        if self._conn is None:
            raise ValueError(f"transcript writer for session {self.session_id} is closed")
        line = schema.encode_record(record, validate=self.validate).rstrip(b"\n")
        kind = str(record.get("type"))
        message_id = record.get("id") if kind == schema.TRANSCRIPT_MESSAGE and isinstance(record.get("id"), str) \
            else None
        with self._mutex:
            seq = self._next
            try:
                self._conn.execute(
                    "INSERT INTO mtagent_transcript (tenant, project, session_id, seq, kind, message_id, line)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s)",
                    (self.tenant, self.project, self.session_id, seq, kind, message_id, line))
            except psycopg.OperationalError as exc:
                self._drop()
                raise StorageError(
                    f"lost the connection to PostgreSQL while writing session {self.session_id} "
                    f"({str(exc).strip()[:200]}); its lock is gone, so nothing more is written. "
                    f"Resume it with `mtagent --resume {self.session_id}`") from None
            self._next = seq + 1
        return seq

    def end_turn(self) -> None:
        """Under the ``turn`` policy, make every record so far durable (a synchronous commit)."""
        if self._conn is None or self.fsync_policy != "turn":
            return
        with self._mutex, self._conn.transaction():
            self._conn.execute("SET LOCAL synchronous_commit = on")
            self._conn.execute(
                "UPDATE mtagent_sessions SET writer_since = writer_since"
                " WHERE tenant = %s AND project = %s AND session_id = %s",
                (self.tenant, self.project, self.session_id))

    def _drop(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None

    def close(self) -> None:
        if self._conn is None:
            return
        with contextlib.suppress(psycopg.Error):
            self.end_turn()
            self._conn.execute(
                "UPDATE mtagent_sessions SET writer_pid = NULL, writer_host = NULL"
                " WHERE tenant = %s AND project = %s AND session_id = %s AND writer_pid = %s",
                (self.tenant, self.project, self.session_id, os.getpid()))
            self._conn.execute("SELECT pg_advisory_unlock(%s)", (self._key,))
        self._drop()

    def __enter__(self) -> PostgresWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()
