"""The storage seam: everything the engine keeps, behind one small Protocol.

Two backends implement :class:`Store`: files under ``$MTAGENT_HOME`` (the embedded default,
:mod:`mtagent.session.files_store`) and PostgreSQL (:mod:`mtagent.session.postgres`) for fleets
of workers that must resume any session, keep tenants apart and leave an audit trail.

Both give the same guarantees, and one conformance suite checks them on both:

* the transcript is append-only; each record is whole or absent after a crash;
* one writer per session — a second gets :class:`~mtagent.errors.SessionLocked` naming the holder;
* resume reads only what follows the last compact boundary (its first kept message), found
  through an index, never by reading the session from the start;
* an artifact is cut at ``max_artifact_bytes`` (64 MB by default) and marked truncated.

The Protocol holds what callers use, and callers use nothing else: no code outside ``session/``
asks which backend it has. Where a reader was built for files (``sessions show``, the explain UI,
recall's catch-up) the store hands it a file in the files layout — its own (files) or an up-to-date
local mirror of its rows (PostgreSQL, :mod:`mtagent.session.store_catalog`). The one question a
caller may ask is :attr:`Store.dsn` — the LangGraph checkpointer beside the transcript lives in the
same database when there is one (``agent/storage.py``; ``session/`` never imports LangGraph).
Local state (memory files, the recall index, caches) lives under :attr:`Store.local_home`, one
folder per tenant (:mod:`mtagent.session.local`).

Sessions are addressed by ``(project, session_id)`` where ``project`` is
:func:`mtagent.paths.project_hash` of the project folder, so the same key means the same
session in every backend (``mtagent sessions migrate`` relies on that). Positions returned by
:meth:`TranscriptAppender.append` are increasing integers whose meaning is the backend's own
(a byte offset in a file, a sequence number in PostgreSQL): pass them back, never compute them.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from mtagent import paths
from mtagent.errors import ConfigError
from mtagent.session.artifacts import ArtifactMeta, ArtifactStore
from mtagent.session.audit import AuditSink
from mtagent.session.catalog import SessionInfo
from mtagent.session.store_types import ResumeRead, validate_tenant
from mtagent.session.reader import Entry


@runtime_checkable
class TranscriptAppender(Protocol):
    """The one writer of a session (a :class:`~mtagent.session.transcript.RecordSink`)."""

    session_id: str

    def append(self, record: dict[str, Any]) -> int: ...

    def end_turn(self) -> None: ...

    def close(self) -> None: ...

    def __enter__(self) -> TranscriptAppender: ...

    def __exit__(self, *exc: object) -> None: ...


@runtime_checkable
class Store(Protocol):
    """What the engine stores, for one tenant. Methods raise typed ``MTAgentError``s."""

    backend: str  # a label for people (audit tables, migrate); never a branch outside session/
    tenant: str
    max_artifact_bytes: int
    audit: AuditSink
    dsn: str | None  # the database, when there is one (the agent's checkpointer goes there too)
    local_home: Path  # this tenant's local state on this machine (session.local)

    # transcripts
    def open_writer(self, project: str, session_id: str) -> TranscriptAppender: ...

    def projects(self) -> list[str]: ...

    def sessions(self, project: str) -> list[str]: ...

    def read_entries(self, project: str, session_id: str, *, start: int = 0,
                     skip_corrupt: bool = False) -> list[Entry]: ...

    def read_since_boundary(self, project: str, session_id: str, *, skip_corrupt: bool = False) -> ResumeRead:
        """``skip_corrupt``: a bad record is skipped with a note instead of raising ``TranscriptCorrupt``
        (rows of a database are whole records; files may hold a damaged line)."""
        ...

    def record_count(self, project: str, session_id: str) -> int: ...

    def discard_empty(self, project: str, session_id: str) -> bool:
        """Remove a closed session that holds no message (a REPL opened and left): True when removed.
        A session is written for its first message, so an empty one never becomes ``latest``."""
        ...

    def session_start(self, project: str, session_id: str) -> dict[str, Any] | None: ...

    # artifacts and session memory
    def write_artifact(self, project: str, session_id: str, relative: str, text: str) -> ArtifactMeta: ...

    def read_artifact(self, project: str, session_id: str, relative: str) -> str: ...

    def list_artifacts(self, project: str, session_id: str) -> list[str]: ...

    def read_session_memory(self, project: str, session_id: str) -> str | None: ...

    def write_session_memory(self, project: str, session_id: str, text: str) -> None: ...

    # long-term memory
    def read_memory(self, project: str, name: str) -> str | None: ...

    def write_memory(self, project: str, name: str, text: str) -> None: ...

    def list_memory(self, project: str) -> list[str]: ...

    # what the readers and the agent open, in the files layout
    def session_infos(self, project: str) -> list[SessionInfo]:
        """``mtagent sessions list`` figures of a project's sessions, oldest first."""
        ...

    def transcript_file(self, project: str, session_id: str, *, beside: bool = True) -> Path:
        """A file holding the session's transcript as stored, up to date (with its artifacts, notes
        and the project memory beside it when ``beside``); ``SessionNotFound`` when absent."""
        ...

    def history_folder(self, project: str) -> Path:
        """A folder of the project's transcripts, up to date (recall catches up from it)."""
        ...

    def tenant_folder(self) -> Path:
        """A home in the files layout holding every session of the tenant, up to date (the explain UI)."""
        ...

    def session_artifacts(self, project: str, session_id: str) -> ArtifactStore:
        """The session's artifact folder (a local cache written and read through the store if need be)."""
        ...

    def open_session_writer(self, project: str, session_id: str, artifacts: Any) -> TranscriptAppender:
        """The writer a live session appends through: :meth:`open_writer`, plus whatever keeps the
        session's notes (``artifacts``) and the project's memory in the store."""
        ...

    def close(self) -> None: ...


def open_store(settings: Any, *, migrate: bool = True) -> Store:
    """The store ``settings.storage`` names (``files`` by default; ``postgres`` needs ``storage.dsn``)."""
    storage = settings.storage
    max_bytes = settings.tool_results.artifact_max_bytes
    tenant = validate_tenant(storage.tenant)
    if storage.backend == "postgres":
        if not storage.dsn:
            raise ConfigError("storage.backend is postgres but storage.dsn is not set; set it in "
                              "~/.mtagent/config.toml or MTAGENT_STORAGE__DSN=postgresql://user@host/db")
        _require_postgres_extra()
        from mtagent.session.postgres.store import PostgresStore

        return PostgresStore(storage.dsn, tenant=tenant, max_artifact_bytes=max_bytes,
                             pool_max_size=storage.pool_max_size,
                             connect_timeout=storage.connect_timeout_seconds, migrate=migrate,
                             fsync=settings.transcript.fsync)
    from mtagent.session.files_store import FilesStore

    return FilesStore(tenant=tenant, max_artifact_bytes=max_bytes, fsync=settings.transcript.fsync)


def _require_postgres_extra() -> None:
    """psycopg and its pool come with the ``postgres`` extra; without them the user gets what to
    install, not an import traceback."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"storage.backend = postgres needs the PostgreSQL extra ({exc.name} is not installed): "
                          "pip install 'mtagent[postgres]', or set storage.backend = files") from None


_SHARED: dict[tuple[Any, ...], Store] = {}


def shared_store(settings: Any) -> Store:
    """This process's store for ``settings``: opened once (migrations, a connection pool), closed at exit.

    Keyed by everything that picks the store — backend, server, tenant and ``$MTAGENT_HOME`` — so
    two tenants (or a test's fresh home) never share one."""
    storage = settings.storage
    key = (storage.backend, storage.dsn, validate_tenant(storage.tenant), str(paths.mtagent_home()),
           settings.transcript.fsync, settings.tool_results.artifact_max_bytes)
    store = _SHARED.get(key)
    if store is None:
        store = _SHARED[key] = open_store(settings)
        atexit.register(store.close)
    return store


def recall_history(settings: Any, project_root: str | os.PathLike[str]) -> Callable[[], Path]:
    """Where recall catches up from: the configured store's folder of the project's transcripts,
    brought up to date on each call (:meth:`~mtagent.session.store.Store.history_folder` — the files'
    own history folder, or the tenant's mirror, so a session another worker wrote is searchable).

    Through the process's :func:`shared_store` — the one an agent session already holds — so a
    catch-up (every ``recall`` call) opens no store of its own."""

    def refreshed() -> Path:
        return shared_store(settings).history_folder(paths.project_hash(project_root))

    return refreshed


def record_audit(settings: Any, action: str, session_id: str | None, detail: dict[str, Any]) -> None:
    """One audit event in the configured store, for commands that act outside a session (export).

    A failure is logged, not raised: the command already did what the user asked.
    """
    import logging

    from mtagent.session.audit import AuditEvent, current_principal

    try:
        store = open_store(settings)
        try:
            store.audit.record(AuditEvent(action, current_principal(), store.tenant, session_id, detail))
        finally:
            store.close()
    except Exception as exc:  # noqa: BLE001 - see the docstring
        logging.getLogger(__name__).warning("could not record audit event %s: %s", action, exc)
