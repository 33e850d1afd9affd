"""The files backend of :class:`~mtagent.session.store.Store`: the layout under ``$MTAGENT_HOME``.

An adapter, not a second implementation: transcripts go through
:class:`~mtagent.session.transcript.TranscriptWriter` (flock, single-write lines, torn-tail
repair), resume through :func:`~mtagent.session.index.locate_resume_point`, artifacts through
:class:`~mtagent.session.artifacts.ArtifactStore`. Only the keyed documents are new: one SQLite
file, ``$MTAGENT_HOME/index/documents.sqlite``. The files backend serves one user, so its
tenant is a label on rows (audit events, documents), not an isolation boundary.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mtagent import paths
from mtagent.errors import SessionNotFound
from mtagent.session.artifacts import ArtifactMeta, ArtifactStore, TOOL_RESULTS_DIR
from mtagent.session.audit import JsonlAuditSink
from mtagent.session.index import locate_resume_point
from mtagent.session.store_types import Document, ResumeRead, query_terms, validate_name, visible
from mtagent.session.transcript import (
    Entry, FsyncPolicy, ReadReport, TranscriptWriter, iter_entries, read_first_record,
)

DOCUMENTS_DB = "documents.sqlite"
MEMORY_SUFFIX = ".md"


class FilesStore:
    """See the module docstring."""

    backend = "files"

    def __init__(self, *, tenant: str = "default", max_artifact_bytes: int = 64 * 1024 * 1024,
                 fsync: FsyncPolicy = "turn", home: Path | None = None) -> None:
        self.tenant = tenant
        self.max_artifact_bytes = max_artifact_bytes
        self.fsync: FsyncPolicy = fsync
        self.home = home or paths.mtagent_home()
        self.local_home = self.home  # memory, recall index and caches: the classic layout (session.local)
        self.audit = JsonlAuditSink(self.home / "audit.jsonl", tenant)
        self._db: sqlite3.Connection | None = None
        self._db_lock = threading.Lock()

    # layout ------------------------------------------------------------------------------
    def _history(self, project: str) -> Path:
        return self.home / "history" / validate_name("project", project)

    def transcript_path(self, project: str, session_id: str) -> Path:
        return self._history(project) / f"{paths.validate_session_id(session_id)}.jsonl"

    def _artifacts(self, project: str, session_id: str) -> ArtifactStore:
        root = self._history(project) / "artifacts" / paths.validate_session_id(session_id)
        return ArtifactStore(root, self.max_artifact_bytes)

    def _existing(self, project: str, session_id: str) -> Path:
        path = self.transcript_path(project, session_id)
        if not path.is_file():
            raise SessionNotFound(f"no session {session_id} in project {project}; see `mtagent sessions list`")
        return path

    # transcripts -------------------------------------------------------------------------
    def open_writer(self, project: str, session_id: str) -> TranscriptWriter:
        return TranscriptWriter(self.transcript_path(project, session_id), session_id=session_id,
                                fsync=self.fsync)

    def projects(self) -> list[str]:
        root = self.home / "history"
        return sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []

    def sessions(self, project: str) -> list[str]:
        folder = self._history(project)
        return sorted(p.stem for p in folder.glob("*.jsonl") if p.is_file()) if folder.is_dir() else []

    def read_entries(self, project: str, session_id: str, *, start: int = 0) -> list[Entry]:
        return list(iter_entries(self._existing(project, session_id), start=start, report=ReadReport()))

    def read_since_boundary(self, project: str, session_id: str) -> ResumeRead:
        path = self._existing(project, session_id)
        point = locate_resume_point(path)
        entries = list(iter_entries(path, start=point.start, report=ReadReport()))
        return ResumeRead(entries, point.boundary_id, point.boundary_offset, point.start, list(point.notes))

    def record_count(self, project: str, session_id: str) -> int:
        path = self.transcript_path(project, session_id)
        if not path.is_file():
            return 0
        report = ReadReport()
        for _ in iter_entries(path, report=report):
            pass
        return report.records

    def session_start(self, project: str, session_id: str) -> dict[str, Any] | None:
        return read_first_record(self._existing(project, session_id))

    # artifacts and session memory ----------------------------------------------------------
    def write_artifact(self, project: str, session_id: str, relative: str, text: str) -> ArtifactMeta:
        return self._artifacts(project, session_id).write_text(relative, text)

    def read_artifact(self, project: str, session_id: str, relative: str) -> str:
        return self._artifacts(project, session_id).read_text(relative)

    def list_artifacts(self, project: str, session_id: str) -> list[str]:
        store = self._artifacts(project, session_id)
        return [f"{TOOL_RESULTS_DIR}/{p.name}" for p in store.list_tool_results()]

    def read_session_memory(self, project: str, session_id: str) -> str | None:
        path = self._artifacts(project, session_id).session_memory_path
        return path.read_text("utf-8", errors="replace") if path.is_file() else None

    def write_session_memory(self, project: str, session_id: str, text: str) -> None:
        store = self._artifacts(project, session_id)
        store.write_text(str(store.session_memory_path.relative_to(store.root)), text)

    # long-term memory ------------------------------------------------------------------------
    def _memory_path(self, project: str, name: str) -> Path:
        folder = self.home / "projects" / validate_name("project", project) / "memory"
        return folder / validate_name("memory name", name)

    def read_memory(self, project: str, name: str) -> str | None:
        path = self._memory_path(project, name)
        return path.read_text("utf-8", errors="replace") if path.is_file() else None

    def write_memory(self, project: str, name: str, text: str) -> None:
        path = self._memory_path(project, name)
        paths.ensure_dir(path.parent)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text, "utf-8")
        os.replace(tmp, path)

    def list_memory(self, project: str) -> list[str]:
        folder = self._memory_path(project, "MEMORY.md").parent
        return sorted(p.name for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")) \
            if folder.is_dir() else []

    # keyed documents -------------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            folder = paths.ensure_dir(self.home / "index")
            db = sqlite3.connect(str(folder / DOCUMENTS_DB), check_same_thread=False, timeout=30)
            db.execute("CREATE TABLE IF NOT EXISTS documents (tenant TEXT NOT NULL, collection TEXT NOT NULL,"
                       " key TEXT NOT NULL, body TEXT NOT NULL, meta TEXT NOT NULL, acl TEXT NOT NULL,"
                       " PRIMARY KEY (tenant, collection, key))")
            db.commit()
            self._db = db
        return self._db

    def put_document(self, doc: Document) -> None:
        validate_name("collection", doc.collection)
        with self._db_lock:
            db = self._conn()
            db.execute("INSERT OR REPLACE INTO documents VALUES (?, ?, ?, ?, ?, ?)",
                       (self.tenant, doc.collection, doc.key, doc.text, json.dumps(doc.meta),
                        json.dumps(list(doc.acl))))
            db.commit()

    def delete_document(self, collection: str, key: str) -> None:
        with self._db_lock:
            db = self._conn()
            db.execute("DELETE FROM documents WHERE tenant = ? AND collection = ? AND key = ?",
                       (self.tenant, collection, key))
            db.commit()

    def _rows(self, collection: str) -> list[Document]:
        with self._db_lock:
            rows = self._conn().execute(
                "SELECT collection, key, body, meta, acl FROM documents WHERE tenant = ? AND collection = ?"
                " ORDER BY key", (self.tenant, collection)).fetchall()
        return [Document(c, k, b, json.loads(m), tuple(json.loads(a))) for c, k, b, m, a in rows]

    def list_documents(self, collection: str, *, principals: Sequence[str] = ()) -> list[Document]:
        return [d for d in self._rows(collection) if visible(d.acl, principals)]

    def search_documents(self, collection: str, query: str, *, principals: Sequence[str] = (),
                         limit: int = 20) -> list[Document]:
        terms = query_terms(query)
        found = [d for d in self.list_documents(collection, principals=principals)
                 if terms and all(t in d.text.lower() for t in terms)]
        return found[:limit]

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> FilesStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

