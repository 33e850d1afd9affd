"""One session's storage, opened through a :class:`~mtagent.session.store.Store`: its writer, the
records after its last boundary, and its artifact folder.

The engine's opener (:mod:`mtagent.context.opener`) calls :func:`open_session_io` and nothing else
of the storage layer. It asks the store alone: the store's :meth:`~mtagent.session.store.Store.session_artifacts`
(files: the folder beside the transcript; PostgreSQL: a local cache written and read through the
rows) and its :meth:`~mtagent.session.store.Store.open_session_writer` (PostgreSQL also keeps the
session-memory notes and the project's long-term memory in the rows, :mod:`mtagent.session.store_artifacts`).

A subagent child's transcript sits beside its parent's (``child_of``), in every backend a file —
children are not listed as sessions of their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtagent import paths
from mtagent.errors import SessionNotFound
from mtagent.session import reader
from mtagent.session.artifacts import ArtifactStore
from mtagent.session.index import locate_resume_point
from mtagent.session.transcript import TranscriptWriter


@dataclass(slots=True)
class SessionIO:
    """The opened storage of one session. ``records``: what follows its last boundary (empty when new)."""

    writer: Any
    artifacts: ArtifactStore
    records: list[dict[str, Any]] = field(default_factory=list)
    is_new: bool = True


def _child_path(store: Any, project_root: Path, parent_id: str, child_id: str) -> Path:
    """``<history>/<parent-id>/subagents/<child-id>.jsonl`` (in the store's home for the files backend)."""
    if store.backend != "files":
        return paths.subagent_transcript_path(project_root, parent_id, child_id)
    parent = store.transcript_path(paths.project_hash(project_root), parent_id)
    return parent.with_suffix("") / "subagents" / f"{paths.validate_session_id(child_id)}.jsonl"


def open_session_io(store: Any, project_root: Path, session_id: str, *, child_of: str | None = None,
                    read_records: bool = True) -> SessionIO:
    """Open ``session_id`` of ``project_root`` in ``store`` (see the module docstring).

    ``read_records=False`` skips reading what exists (a caller that read it already, with its own
    corruption policy). A damaged record is skipped here, as resume always did.
    """
    project = paths.project_hash(project_root)
    artifacts = store.session_artifacts(project, session_id)
    if child_of is not None:
        path = _child_path(store, project_root, child_of, session_id)
        is_new = not path.is_file() or path.stat().st_size == 0
        records = [] if is_new or not read_records else reader.read_records(
            path, start=locate_resume_point(path).start, skip_corrupt=True)
        return SessionIO(TranscriptWriter(path, session_id=session_id, fsync=getattr(store, "fsync", "turn")),
                         artifacts, records, is_new)
    try:
        records = store.read_since_boundary(project, session_id, skip_corrupt=True).records if read_records else []
        # nothing stored yet: one look at the first record, never a count of a long transcript
        is_new = not records and store.session_start(project, session_id) is None
    except SessionNotFound:
        records, is_new = [], True
    return SessionIO(store.open_session_writer(project, session_id, artifacts), artifacts, records, is_new)
