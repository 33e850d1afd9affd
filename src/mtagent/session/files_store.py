"""The files backend of :class:`~mtagent.session.store.Store`: the layout under ``$MTAGENT_HOME``.

An adapter, not a second implementation: transcripts go through
:class:`~mtagent.session.transcript.TranscriptWriter` (flock, single-write lines, torn-tail
repair), resume through :func:`~mtagent.session.index.locate_resume_point`, artifacts through
:class:`~mtagent.session.artifacts.ArtifactStore`, listings through
:mod:`mtagent.session.catalog`. The files backend serves one user, so its tenant is a label on
audit events, not an isolation boundary.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from mtagent import paths
from mtagent.errors import SessionLocked, SessionNotFound
from mtagent.session.artifacts import ArtifactMeta, ArtifactStore, TOOL_RESULTS_DIR
from mtagent.session.audit import JsonlAuditSink
from mtagent.session.index import index_path, locate_resume_point
from mtagent.session.catalog import SessionInfo, session_info
from mtagent.session.store_types import ResumeRead, validate_name
from mtagent.session.reader import Entry, ReadReport, iter_entries, read_first_record
from mtagent.session.schema import TRANSCRIPT_MESSAGE
from mtagent.session.transcript import FsyncPolicy, TranscriptWriter, lock_path



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
        self.dsn: str | None = None  # no server: checkpoints are a SQLite file beside the session
        self.audit = JsonlAuditSink(self.home / "audit.jsonl", tenant)

    # layout ------------------------------------------------------------------------------
    def history_folder(self, project: str) -> Path:
        return self.home / "history" / validate_name("project", project)

    def transcript_path(self, project: str, session_id: str) -> Path:
        return self.history_folder(project) / f"{paths.validate_session_id(session_id)}.jsonl"

    def transcript_file(self, project: str, session_id: str, *, beside: bool = True) -> Path:
        """The session's transcript, which must exist (``beside``: the store protocol's; files are always here)."""
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
        folder = self.history_folder(project)
        return sorted(p.stem for p in folder.glob("*.jsonl") if p.is_file()) if folder.is_dir() else []

    def read_entries(self, project: str, session_id: str, *, start: int = 0,
                     skip_corrupt: bool = False) -> list[Entry]:
        return list(iter_entries(self.transcript_file(project, session_id), start=start, skip_corrupt=skip_corrupt,
                                 report=ReadReport()))

    def read_since_boundary(self, project: str, session_id: str, *, skip_corrupt: bool = False) -> ResumeRead:
        path = self.transcript_file(project, session_id)
        point = locate_resume_point(path)
        report = ReadReport()
        entries = list(iter_entries(path, start=point.start, skip_corrupt=skip_corrupt, report=report))
        return ResumeRead(entries, point.boundary_id, point.boundary_offset, point.start,
                          [*point.notes, *report.warnings])

    def record_count(self, project: str, session_id: str) -> int:
        path = self.transcript_path(project, session_id)
        if not path.is_file():
            return 0
        report = ReadReport()
        for _ in iter_entries(path, report=report):
            pass
        return report.records

    def discard_empty(self, project: str, session_id: str) -> bool:
        path = self.transcript_path(project, session_id)
        if not path.is_file() or any(entry.record.get("type") == TRANSCRIPT_MESSAGE
                                     for entry in iter_entries(path, skip_corrupt=True, report=ReadReport())):
            return False
        try:
            writer = TranscriptWriter(path, session_id=session_id, index=False)
        except SessionLocked:
            return False  # another process writes it: it is not ours to remove
        with writer:
            for leftover in (path, index_path(path)):
                leftover.unlink(missing_ok=True)
        lock_path(path).unlink(missing_ok=True)
        shutil.rmtree(self.history_folder(project) / "artifacts" / paths.validate_session_id(session_id),
                      ignore_errors=True)
        return True

    def session_start(self, project: str, session_id: str) -> dict[str, Any] | None:
        return read_first_record(self.transcript_file(project, session_id))

    # artifacts and session memory ----------------------------------------------------------
    def write_artifact(self, project: str, session_id: str, relative: str, text: str) -> ArtifactMeta:
        return self.session_artifacts(project, session_id).write_text(relative, text)

    def read_artifact(self, project: str, session_id: str, relative: str) -> str:
        return self.session_artifacts(project, session_id).read_text(relative)

    def list_artifacts(self, project: str, session_id: str) -> list[str]:
        store = self.session_artifacts(project, session_id)
        return [f"{TOOL_RESULTS_DIR}/{p.name}" for p in store.list_tool_results()]

    def read_session_memory(self, project: str, session_id: str) -> str | None:
        path = self.session_artifacts(project, session_id).session_memory_path
        return path.read_text("utf-8", errors="replace") if path.is_file() else None

    def write_session_memory(self, project: str, session_id: str, text: str) -> None:
        store = self.session_artifacts(project, session_id)
        store.write_text(str(store.session_memory_path.relative_to(store.root)), text)

    # long-term memory ------------------------------------------------------------------------
    def _memory_path(self, project: str, name: str) -> Path:
        folder = paths.memory_dir_of(validate_name("project", project), self.home)
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

    # what the readers and the agent open, in the files layout -------------------------------
    def session_infos(self, project: str) -> list[SessionInfo]:
        folder = self.history_folder(project)
        return [session_info(p) for p in sorted(folder.glob("*.jsonl")) if p.is_file()] if folder.is_dir() else []

    def tenant_folder(self) -> Path:
        return self.home

    def session_artifacts(self, project: str, session_id: str) -> ArtifactStore:
        root = self.history_folder(project) / "artifacts" / paths.validate_session_id(session_id)
        return ArtifactStore(root, self.max_artifact_bytes)

    def open_session_writer(self, project: str, session_id: str, artifacts: Any) -> TranscriptWriter:
        return self.open_writer(project, session_id)

    def close(self) -> None:
        """Nothing to release: every file is opened and closed by the call that uses it."""

    def __enter__(self) -> FilesStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

