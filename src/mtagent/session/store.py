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

Sessions are addressed by ``(project, session_id)`` where ``project`` is
:func:`mtagent.paths.project_hash` of the project folder, so the same key means the same
session in every backend (``mtagent sessions migrate`` relies on that). Positions returned by
:meth:`TranscriptAppender.append` are increasing integers whose meaning is the backend's own
(a byte offset in a file, a sequence number in PostgreSQL): pass them back, never compute them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from mtagent.errors import ConfigError
from mtagent.session.artifacts import ArtifactMeta
from mtagent.session.audit import AuditSink
from mtagent.session.store_types import (
    Document, ResumeRead, query_terms, validate_name, validate_tenant, visible,
)
from mtagent.session.transcript import Entry

__all__ = [
    "Document", "Entry", "ResumeRead", "Store", "TranscriptAppender", "open_store", "validate_name",
    "validate_tenant", "visible", "query_terms",
]


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

    backend: str
    tenant: str
    max_artifact_bytes: int
    audit: AuditSink

    # transcripts
    def open_writer(self, project: str, session_id: str) -> TranscriptAppender: ...

    def projects(self) -> list[str]: ...

    def sessions(self, project: str) -> list[str]: ...

    def read_entries(self, project: str, session_id: str, *, start: int = 0) -> list[Entry]: ...

    def read_since_boundary(self, project: str, session_id: str) -> ResumeRead: ...

    def record_count(self, project: str, session_id: str) -> int: ...

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

    # keyed documents (recall index rows), retrieved by tenant and ACL
    def put_document(self, doc: Document) -> None: ...

    def delete_document(self, collection: str, key: str) -> None: ...

    def list_documents(self, collection: str, *, principals: Sequence[str] = ()) -> list[Document]: ...

    def search_documents(self, collection: str, query: str, *, principals: Sequence[str] = (),
                         limit: int = 20) -> list[Document]: ...

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
