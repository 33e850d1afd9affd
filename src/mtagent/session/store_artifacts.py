"""Artifacts of a session whose truth is a shared :class:`~mtagent.session.store.Store`.

The engine and the tools work with an artifact *folder* (they read files by path, page through
them, hand them to ``read_file``), so in PostgreSQL mode the folder stays — as a local cache —
and the store is written through and read through: a result persisted by one worker is in the
database before its preview reaches the model, and another worker resuming the session fetches
it on first use. Paths are checked by the folder first (the transcript naming them is untrusted).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtagent.errors import ArtifactPathError, UsageError
from mtagent.session.artifacts import ArtifactMeta, ArtifactStore
from mtagent.session.schema import SESSION_MEMORY_UPDATE
from mtagent.session.store_types import validate_name


@dataclass(slots=True)
class StoreArtifacts(ArtifactStore):
    store: Any = None
    project: str = ""
    session_id: str = ""

    def write_text(self, relative: str, text: str) -> ArtifactMeta:
        meta = ArtifactStore.write_text(self, relative, text)
        self.store.write_artifact(self.project, self.session_id, relative, self.redactor.text(text))
        return meta

    def read_text(self, relative: str) -> str:
        target = self.resolve(relative)
        if target.is_file():
            return ArtifactStore.read_text(self, relative)
        text = self.store.read_artifact(self.project, self.session_id, relative)  # ArtifactPathError if absent
        ArtifactStore.write_text(self, relative, text)
        return text

    def exists(self, relative: str) -> bool:
        if ArtifactStore.exists(self, relative):
            return True
        try:
            self.read_text(relative)
        except ArtifactPathError:
            return False
        return True

    # The session-memory notes are edited as a local file (the manager, a subagent's merge, a
    # hand edit); the store holds the truth another worker resumes from.
    def pull_session_memory(self) -> None:
        """Replace the local notes with the store's, when the store has notes."""
        text = self.store.read_session_memory(self.project, self.session_id)
        path = self.session_memory_path
        if text is not None and (not path.is_file() or path.read_text("utf-8", errors="replace") != text):
            ArtifactStore.write_text(self, str(path.relative_to(self.root)), text)

    def push_session_memory(self) -> None:
        """Write the local notes to the store when they differ from it."""
        path = self.session_memory_path
        if not path.is_file():
            return
        text = self.redactor.text(path.read_text("utf-8", errors="replace"))
        if self.store.read_session_memory(self.project, self.session_id) != text:
            self.store.write_session_memory(self.project, self.session_id, text)


@dataclass(slots=True)
class NotesThroughStore:
    """A session's writer that also keeps its session-memory notes in the store.

    The notes reach the store *before* the ``session_memory_update`` record that announces them
    (a worker resuming from that record finds the notes it names), and again at the end of each
    turn and on close, which catches writes no record announces (a subagent's merge).
    """

    inner: Any
    artifacts: StoreArtifacts
    memory_dir: Path | None = None  # the tenant's local memory folder of the project, pushed with the notes

    def append(self, record: dict[str, Any]) -> Any:
        if record.get("type") == SESSION_MEMORY_UPDATE:
            self.artifacts.push_session_memory()
        return self.inner.append(record)

    def _push(self) -> None:
        self.artifacts.push_session_memory()
        if self.memory_dir is not None:
            push_memory(self.artifacts.store, self.artifacts.project, self.memory_dir)

    def end_turn(self) -> None:
        self._push()
        self.inner.end_turn()

    def close(self) -> None:
        try:
            self._push()
        finally:
            self.inner.close()

    def __enter__(self) -> NotesThroughStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def session_id(self) -> str:
        return str(self.inner.session_id)

    @property
    def path(self) -> Path:
        """The writer's transcript path (a label for a store's rows; see the writer)."""
        return Path(self.inner.path)


def _memory_files(folder: Path) -> list[Path]:
    """The top-level memory files (``MEMORY.md``, topic files); names the store accepts."""
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.iterdir()):
        try:
            validate_name("memory name", path.name)
        except UsageError:
            continue
        if path.is_file() and not path.is_symlink():
            found.append(path)
    return found


def pull_memory(store: Any, project: str, folder: Path) -> None:
    """Write the store's long-term memory files of ``project`` into ``folder``.

    The store is the truth in PostgreSQL mode: a worker starts from what any worker last saved.
    ``folder`` is the tenant's own (in its local home, :mod:`mtagent.session.local`), so nothing is
    moved aside or renamed.
    """
    for name in store.list_memory(project):
        text = store.read_memory(project, name)
        target = folder / validate_name("memory name", name)
        if text is None or (target.is_file() and target.read_text("utf-8", errors="replace") == text):
            continue
        folder.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.pull.tmp")
        tmp.write_text(text, "utf-8")
        tmp.replace(target)


def push_memory(store: Any, project: str, folder: Path) -> None:
    """Save the local memory files that differ from the store's."""
    for path in _memory_files(folder):
        text = path.read_text("utf-8", errors="replace")
        if store.read_memory(project, path.name) != text:
            store.write_memory(project, path.name, text)
