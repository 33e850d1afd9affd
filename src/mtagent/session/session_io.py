"""One session's storage, opened through a :class:`~mtagent.session.store.Store`: its writer, the
records after its last boundary, and its artifact folder.

The engine's opener (:mod:`mtagent.context.opener`) calls :func:`open_session_io` and nothing else
of the storage layer, so which backend keeps the session is decided here, once. Files (the
default): the store's transcript file and the artifact folder beside it. Any other store
(PostgreSQL): rows through the store, the artifact folder as a local cache written and read through
it, and the session-memory notes and long-term memory kept in the store too
(:mod:`mtagent.session.store_artifacts`).

A subagent child's transcript sits beside its parent's (``child_of``), in every backend a file —
children are not listed as sessions of their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtagent import paths
from mtagent.session.artifacts import ArtifactStore
from mtagent.session.index import locate_resume_point
from mtagent.session.store_artifacts import StoreArtifacts, open_in_store
from mtagent.session.store_catalog import session_cache_dir
from mtagent.session.transcript import TranscriptWriter, iter_entries

__all__ = ["SessionIO", "open_session_io"]


@dataclass(slots=True)
class SessionIO:
    """The opened storage of one session. ``records``: what follows its last boundary (empty when new)."""

    writer: Any
    artifacts: ArtifactStore
    records: list[dict[str, Any]] = field(default_factory=list)
    is_new: bool = True


def _file_records(path: Path) -> list[dict[str, Any]]:
    if not path.is_file() or path.stat().st_size == 0:
        return []
    start = locate_resume_point(path).start
    return [entry.record for entry in iter_entries(path, start=start, skip_corrupt=True)]


def _child_path(store: Any, project_root: Path, parent_id: str, child_id: str) -> Path:
    """``<history>/<parent-id>/subagents/<child-id>.jsonl`` (in the store's home for the files backend)."""
    if store.backend != "files":
        return paths.subagent_transcript_path(project_root, parent_id, child_id)
    parent = store.transcript_path(paths.project_hash(project_root), parent_id)
    return parent.with_suffix("") / "subagents" / f"{paths.validate_session_id(child_id)}.jsonl"


def _empty(path: Path) -> bool:
    return not path.is_file() or path.stat().st_size == 0


def open_session_io(store: Any, project_root: Path, session_id: str, *, child_of: str | None = None,
                    read_records: bool = True) -> SessionIO:
    """Open ``session_id`` of ``project_root`` in ``store`` (see the module docstring).

    ``read_records=False`` skips reading what exists (a caller that read it already, with its own
    corruption policy).
    """
    project = paths.project_hash(project_root)
    files = store.backend == "files"
    if child_of is not None or files:
        path = _child_path(store, project_root, child_of, session_id) if child_of is not None \
            else store.transcript_path(project, session_id)
        is_new, records = _empty(path), _file_records(path) if read_records else []
        writer: Any = TranscriptWriter(path, session_id=session_id, fsync=getattr(store, "fsync", "turn"))
        if files:
            return SessionIO(writer, store._artifacts(project, session_id), records, is_new)
    if child_of is not None:  # a child of a store-backed session: its transcript a file, artifacts through the store
        artifacts = StoreArtifacts(session_cache_dir(store, project, session_id), store.max_artifact_bytes, store,
                                   project, session_id)
        return SessionIO(writer, artifacts, records, is_new)
    audited, records, artifacts = open_in_store(store, project_root, session_id, store.max_artifact_bytes)
    is_new = not records and store.record_count(project, session_id) == 0
    return SessionIO(audited.inner, artifacts, records if read_records else [], is_new)  # the opener audits
