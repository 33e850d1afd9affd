"""Keeping the project's recall index up to date with the transcripts.

The index **catches up**: :meth:`RecallIndexer.catch_up` reads each transcript of the project (and
:meth:`~RecallIndexer.catch_up_file` one session's, :class:`~mtagent.context.recall.sink.SessionIndex`)
from the byte offset it reached last time — a live session, a resumed one, one run by another front
end or a rebuilt index (from 0) alike — so the index never misses what the truth holds, and no
turn indexes its own records. Idempotent: an item is keyed by a stable uid, so seeing a record
twice is harmless (:meth:`RecallIndexer.add_record` also takes records one by one).

Long-term memory is re-synced on :meth:`sync_memory` (its files are small and hand-edited) and
workspace files, when ``recall.index_workspace`` is on, by :mod:`mtagent.context.recall.workspace`.
Indexing never fails a turn: every error is logged and the record is left for the next catch-up.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mtagent import paths
from mtagent.config import RecallSettings
from mtagent.context.recall import documents
from mtagent.context.recall.store import Doc, RecallStore
from mtagent.context.recall.workspace import sync_workspace
from mtagent.context.static import memory
from mtagent.context.static.memory_meta import NAMESPACE_AUTHORITY
from mtagent.redaction import Redactor
from mtagent.session import schema
from mtagent.session.artifacts import ArtifactStore
from mtagent.session.store_types import validate_tenant
from mtagent.session.reader import ReadReport, iter_entries

log = logging.getLogger(__name__)

INDEX_FILE = "recall.sqlite"
DEFAULT_TENANT = "default"
FLUSH_DOCS = 256
FLUSH_CHARS = 4_000_000


def index_path(project_root: str | os.PathLike[str], tenant: str = DEFAULT_TENANT, *,
               home: Path | None = None) -> Path:
    """``<home>/projects/<project-hash>/recall.sqlite`` — beside the project's memory, in the
    tenant's local home (:func:`mtagent.session.local.local_home`; ``$MTAGENT_HOME`` by default).

    Another tenant than the default gets ``recall.<tenant>.sqlite`` too: a machine serving several
    tenants must never answer one tenant's recall with another's text."""
    folder = paths.project_state_dir(project_root, home)
    if tenant == DEFAULT_TENANT:
        return folder / INDEX_FILE
    return folder / f"recall.{validate_tenant(tenant)}.sqlite"


class RecallIndexer:
    """The index of one project, caught up from its transcripts (see module docstring)."""

    def __init__(self, project_root: str | os.PathLike[str], settings: RecallSettings | None = None, *,
                 store: RecallStore | None = None, in_memory: bool = False, tenant: str = DEFAULT_TENANT,
                 history: Callable[[], Path] | None = None, home: Path | None = None,
                 redactor: Redactor | None = None) -> None:
        self.root = Path(project_root).resolve()
        self.redactor = redactor  # the session's secrets for workspace files (default: the environment's)
        self.history = history  # PostgreSQL mode: the tenant's refreshed mirror of the project's transcripts
        self.settings = settings or RecallSettings()
        self.store = store or RecallStore(None if in_memory else index_path(self.root, tenant, home=home))
        self.home = home
        self._trackers: dict[str, documents.CallTracker] = {}
        self._artifacts: dict[str, ArtifactStore] = {}
        self._pending: list[Doc] = []
        self._pending_chars = 0
        self._lock = threading.RLock()  # parallel tool threads append records through one sink

    def flush(self) -> int:
        """Write the records indexed since the last flush, in one transaction (a transaction per
        record would cost FTS5 a segment and a merge each time). Searches flush first."""
        with self._lock:
            if not self._pending:
                return 0
            docs, self._pending, self._pending_chars = self._pending, [], 0
            return len(self.store.add(docs))

    def close(self) -> None:
        self.flush()
        self.store.close()

    def _tracker(self, session: str) -> documents.CallTracker:
        return self._trackers.setdefault(session, documents.CallTracker())

    def artifact_store(self, session: str) -> ArtifactStore:
        if session not in self._artifacts:
            self._artifacts[session] = ArtifactStore.for_session(self.root, session)
        return self._artifacts[session]

    # ---- records -----------------------------------------------------------------------------

    def extract(self, record: dict[str, Any], session: str) -> documents.Extracted:
        kind = record.get("type")
        cap = self.settings.item_max_chars
        if kind == schema.TRANSCRIPT_MESSAGE:
            return documents.from_message(record, session, self.root, self._tracker(session), cap,
                                          self.settings.chunk_lines)
        if kind == schema.TOOL_RESULT_ARTIFACT:
            return documents.from_artifact(record, session, self.artifact_store(session), self._tracker(session),
                                           self.root, self.settings.chunk_lines, cap)
        if kind == schema.SESSION_MEMORY_UPDATE:
            return documents.from_session_memory(record, session, self.artifact_store(session), cap)
        if kind == schema.COMPACT_BOUNDARY:
            return documents.from_boundary(record, session, cap)
        return documents.Extracted()

    def add_record(self, record: dict[str, Any], session: str) -> int:
        """Index one transcript record of ``session`` (written at the next :meth:`flush`); returns
        the items it yields — an item already indexed is skipped when written. Never raises."""
        try:
            with self._lock:
                return self._add_record(record, session)
        except Exception as exc:  # noqa: BLE001 - indexing is a cache; the transcript keeps the truth
            log.warning("recall: could not index a %s record of %s: %s",
                        record.get("type") if isinstance(record, dict) else type(record).__name__, session, exc)
            return 0

    def _add_record(self, record: dict[str, Any], session: str) -> int:
        if session not in self._trackers:
            paths.validate_session_id(session)
        if not isinstance(record, dict):
            return 0
        found = self.extract(record, session)
        count = 0
        for doc in found.drain():  # written a batch at a time
            count += 1
            self._pending.append(doc)
            self._pending_chars += len(doc.text)
            if len(self._pending) >= FLUSH_DOCS or self._pending_chars >= FLUSH_CHARS:
                self.flush()
        for edit in found.edits:
            self.store.add_edit(edit.file_key, edit.ts, session, edit.message_id)
        if found.compacted_before is not None:
            self.flush()
            self.store.mark_compacted(session, found.compacted_before or None)
        return count

    # ---- catch-up ----------------------------------------------------------------------------

    def catch_up(self) -> int:
        """Index what the project's transcripts (subagents' too: ``<session>/subagents/<child>.jsonl``)
        hold beyond what was indexed; returns items added."""
        folder = self.history() if self.history is not None else paths.history_dir(self.root)
        if not folder.is_dir():
            return 0
        before = self.store.count()
        for path in [*sorted(folder.glob("*.jsonl")), *sorted(folder.glob("*/subagents/*.jsonl"))]:
            if path.is_file():
                self.catch_up_file(path)
        return self.store.count() - before

    def catch_up_file(self, path: Path) -> int:
        """Index one transcript (its session: the file's name) beyond its last offset; returns items added."""
        session = path.stem
        try:
            paths.validate_session_id(session)
            size = path.stat().st_size
        except Exception:  # noqa: BLE001 - not a session transcript
            return 0
        source = f"transcript:{path.name}"
        offset, _, _ = self.store.source_state(source)
        if offset > size:  # the file was replaced: read it again
            offset = 0
        if offset == size:
            return 0
        end = [offset]

        def seen(line_offset: int, line: bytes) -> None:
            end[0] = line_offset + len(line) + 1

        added = 0
        try:
            for entry in iter_entries(path, start=offset, skip_corrupt=True, report=ReadReport(),
                                      on_line=seen):
                added += self.add_record(entry.record, session)
        except Exception as exc:  # noqa: BLE001 - a damaged transcript is indexed as far as it reads
            log.warning("recall: stopped indexing %s: %s", path, exc)
        self.flush()
        self.store.set_source_state(source, end[0], size)
        return added

    # ---- memory ------------------------------------------------------------------------------

    def sync_memory(self) -> int:
        """Make the index's long-term memory items equal to the memory files (every namespace)."""
        docs: list[Doc] = []
        for namespace in memory.SCOPES:
            try:
                entries = memory.list_memories(namespace, self.root, home=self.home)
            except Exception:  # noqa: BLE001 - an unreadable memory file is simply not searchable
                continue
            for entry in entries:
                if entry.obsolete:
                    continue
                digest = hashlib.sha256(f"{entry.text}|{entry.meta}".encode()).hexdigest()[:16]
                docs.append(Doc(uid=f"mem:{namespace}:{digest}", kind="memory", text=entry.text,
                                path=str(memory.memory_path(namespace, self.root, home=self.home)), line_start=entry.line_index + 1,
                                line_end=entry.line_index + 1, namespace=namespace,
                                authority=entry.meta.authority or NAMESPACE_AUTHORITY.get(namespace, "memory"),
                                expires_at=entry.meta.expires_at.timestamp() if entry.meta.expires_at else None,
                                ts=entry.meta.at.timestamp() if entry.meta.at else None,
                                message_id=entry.meta.key))
        self.flush()
        self.store.delete_where("mem:", keep={d.uid for d in docs})
        return len(self.store.add(docs))

    def refresh(self) -> int:
        """Everything a search should see: transcripts caught up, memory synced, workspace if on."""
        added = self.catch_up() + self.sync_memory()
        if self.settings.index_workspace:
            added += sync_workspace(self.root, self.store, self.settings, self.redactor)
        return added
