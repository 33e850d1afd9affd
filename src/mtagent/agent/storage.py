"""What an agent session keeps beside its transcript, per ``storage.backend``: checkpoints and audit.

The transcript writer, the resumed view and the artifact folder come from here too, so one
setting moves a session between a file and PostgreSQL rows. Files (the default): LangGraph checkpoints in ``<artifacts>/checkpoints.sqlite`` and the audit
trail in ``$MTAGENT_HOME/audit.jsonl``. PostgreSQL: checkpoints through
``langgraph-checkpoint-postgres`` in the same database (its own tables, created idempotently by
``setup()``), thread ids prefixed with the tenant, and the ``mtagent_audit`` table. This lives in
``agent/`` because ``session/`` never imports LangGraph.
"""

from __future__ import annotations

import atexit
import contextlib
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from mtagent import paths
from mtagent.config import Settings, load_settings
from mtagent.context.view import ResumedSession, ResumeStats, build_resume_view, load_session
from mtagent.session.artifacts import ArtifactStore
from mtagent.session.audit import AuditingSink, AuditSink, JsonlAuditSink
from mtagent.session import store_catalog
from mtagent.session.catalog import SessionInfo, list_sessions
from mtagent.session.store import open_store, validate_tenant
from mtagent.session.store_artifacts import NotesThroughStore, StoreArtifacts, pull_memory
from mtagent.session.store_artifacts import memory_dir as store_memory_dir
from mtagent.session.transcript import ReadReport, TranscriptWriter, iter_entries

CHECKPOINT_FILE = "checkpoints.sqlite"


@dataclass(slots=True)
class SessionStorage:
    checkpointer: BaseCheckpointSaver[Any]
    audit: AuditSink
    tenant: str
    settings: Settings
    thread_prefix: str = ""
    _closers: list[Callable[[], None]] = field(default_factory=list)

    def audited(self, sink: Any, session_id: str) -> AuditingSink:
        """``sink`` with the decisions among its records also written to the audit trail."""
        return AuditingSink(sink, self.audit, self.tenant, session_id)

    def artifacts(self, project_root: Path, session_id: str, max_bytes: int) -> ArtifactStore:
        """The session's artifact folder; in PostgreSQL mode a cache written and read through the store."""
        return _artifacts(self.settings, project_root, session_id, max_bytes)

    def thread_id(self, session_id: str) -> str:
        return f"{self.thread_prefix}{session_id}"

    def close(self) -> None:
        for close in reversed(self._closers):
            with contextlib.suppress(Exception):
                close()
        self._closers.clear()


_STORES: dict[tuple[str, str], Any] = {}


def _pg_store(settings: Settings) -> Any:
    """One PostgreSQL store per (DSN, tenant) and process: migrations and the pool happen once."""
    key = (str(settings.storage.dsn), validate_tenant(settings.storage.tenant))
    store = _STORES.get(key)
    if store is None:
        store = _STORES[key] = open_store(settings)
        atexit.register(store.close)
    return store


def is_postgres(settings: Settings) -> bool:
    return settings.storage.backend == "postgres"


def open_writer(settings: Settings, project_root: Path, session_id: str) -> Any:
    """The session's one writer: a transcript file, or rows in PostgreSQL."""
    if not is_postgres(settings):
        return TranscriptWriter(paths.session_transcript_path(project_root, session_id), session_id=session_id,
                                fsync=settings.transcript.fsync)
    store, project = _pg_store(settings), paths.project_hash(project_root)
    writer = store.open_writer(project, session_id)
    artifacts = _artifacts(settings, project_root, session_id, settings.tool_results.artifact_max_bytes)
    memory_dir = store_memory_dir(store, project_root)
    pull_memory(store, project, memory_dir)  # long-term memory as any worker last saved it
    return NotesThroughStore(writer, artifacts, memory_dir)  # type: ignore[arg-type]  # memory in the store too


def load_for_resume(settings: Settings, project_root: Path, session_id: str,
                    skip_corrupt: bool) -> tuple[ResumedSession, list[dict[str, Any]]]:
    """The resumed view and the records it was built from (those after the last boundary)."""
    if not is_postgres(settings):
        resumed = load_session(project_root, session_id, skip_corrupt=skip_corrupt)
        records = [e.record for e in iter_entries(resumed.path, start=resumed.stats.start_offset, skip_corrupt=True)]
        return resumed, records
    store, project = _pg_store(settings), paths.project_hash(project_root)
    began = time.perf_counter()
    read = store.read_since_boundary(project, session_id)
    records = read.records
    report = ReadReport(warnings=list(read.notes), records=len(records))
    stats = ResumeStats(0, read.start, 0, len(records), "index" if read.boundary_id else "none",
                        time.perf_counter() - began)
    artifacts = _artifacts(settings, project_root, session_id, settings.tool_results.artifact_max_bytes)
    artifacts.pull_session_memory()  # type: ignore[attr-defined]  # the notes another worker wrote
    resumed = ResumedSession(session_id, Path("postgres") / store.tenant / project / session_id,
                             build_resume_view(records), store.session_start(project, session_id), stats, report,
                             artifacts)
    return resumed, records


def latest_session_id(project_root: Path, settings: Settings | None) -> str | None:
    """The most recently started session of a project in the configured store."""
    ids = session_ids(settings or load_settings(project_root), project_root)
    return ids[-1] if ids else None


def session_ids(settings: Settings, project_root: Path) -> list[str]:
    """A project's session ids in the configured store, oldest first (ids sort by creation time)."""
    if not is_postgres(settings):  # names only: no transcript is opened
        folder = paths.history_dir(project_root)
        return sorted(p.stem for p in folder.glob("*.jsonl") if p.is_file()) if folder.is_dir() else []
    return _pg_store(settings).sessions(paths.project_hash(project_root))


def session_infos(settings: Settings, project_root: Path) -> list[SessionInfo]:
    """What the REPL's session picker lists, from the configured store."""
    if not is_postgres(settings):
        return list_sessions(project_root)
    return store_catalog.session_infos(_pg_store(settings), paths.project_hash(project_root))


def recorded_model(settings: Settings, project_root: Path, session_id: str) -> str | None:
    """The model a session's ``session_start`` names (None for the files, read by the caller)."""
    if not is_postgres(settings):
        return None
    start = _pg_store(settings).session_start(paths.project_hash(project_root), session_id) or {}
    model = start.get("model")
    return model if isinstance(model, str) else None


def _artifacts(settings: Settings, project_root: Path, session_id: str, max_bytes: int) -> ArtifactStore:
    if not is_postgres(settings):
        return ArtifactStore.for_session(project_root, session_id, max_bytes)
    store, project = _pg_store(settings), paths.project_hash(project_root)
    return StoreArtifacts(store_catalog.session_cache_dir(store, project, session_id), max_bytes, store, project,
                          session_id)


def open_session_storage(settings: Settings, artifact_dir: Path) -> SessionStorage:
    tenant = validate_tenant(settings.storage.tenant)
    if not is_postgres(settings):
        db = sqlite3.connect(str(paths.ensure_dir(artifact_dir) / CHECKPOINT_FILE), check_same_thread=False)
        from langgraph.checkpoint.sqlite import SqliteSaver

        return SessionStorage(SqliteSaver(db), JsonlAuditSink.default(tenant), tenant, settings)
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row, tuple_row

    from mtagent.session.postgres import migrations
    from mtagent.session.postgres.connect import connect_kwargs, tenant_configurer, unreachable

    store = _pg_store(settings)  # migrations, the tenant's pool, the audit table
    kwargs = connect_kwargs(settings.storage.connect_timeout_seconds)
    try:
        if store.dsn not in _CHECKPOINT_SCHEMA:  # LangGraph's tables, then their tenancy: once per process
            with psycopg.connect(store.dsn, **kwargs) as admin:
                if not _checkpoints_current(admin):  # set up by the owner once; a worker role may not
                    admin.row_factory = dict_row  # type: ignore[assignment]
                    PostgresSaver(admin).setup()  # type: ignore[arg-type]
                    admin.row_factory = tuple_row  # type: ignore[assignment]
                migrations.migrate(admin, migrations.CHECKPOINT_MIGRATIONS)
            _CHECKPOINT_SCHEMA.add(store.dsn)
        conn = psycopg.connect(store.dsn, **kwargs, prepare_threshold=0, row_factory=dict_row)
        tenant_configurer(tenant, store.role)(conn)  # row-level security binds the saver's queries
    except psycopg.Error as exc:
        raise unreachable(store.dsn, exc) from None
    return SessionStorage(PostgresSaver(conn), store.audit, tenant, settings, f"{tenant}/", [conn.close])


_CHECKPOINT_SCHEMA: set[str] = set()


def _checkpoints_current(conn: Any) -> bool:
    """LangGraph's checkpoint tables exist at the version this ``langgraph-checkpoint-postgres`` wants."""
    from langgraph.checkpoint.postgres import PostgresSaver

    found = conn.execute("SELECT to_regclass('checkpoint_migrations') IS NOT NULL").fetchone()
    if not found or not found[0]:
        return False
    latest = conn.execute("SELECT max(v) FROM checkpoint_migrations").fetchone()
    return latest is not None and latest[0] is not None and latest[0] >= len(PostgresSaver.MIGRATIONS) - 1
