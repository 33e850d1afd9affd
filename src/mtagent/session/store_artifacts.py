"""Artifacts of a session whose truth is a shared :class:`~mtagent.session.store.Store`.

The engine and the tools work with an artifact *folder* (they read files by path, page through
them, hand them to ``read_file``), so in PostgreSQL mode the folder stays — as a local cache —
and the store is written through and read through: a result persisted by one worker is in the
database before its preview reaches the model, and another worker resuming the session fetches
it on first use. Paths are checked by the folder first (the transcript naming them is untrusted).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtagent.errors import ArtifactPathError
from mtagent.session.artifacts import ArtifactMeta, ArtifactStore


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


def open_in_store(store: Any, project_root: Path, session_id: str,
                  max_bytes: int) -> tuple[Any, list[dict[str, Any]], StoreArtifacts]:
    """A session kept in ``store``: its audited writer, the records after its last boundary, its artifacts.

    For front ends (the LangChain middleware) handed a store instead of the files under
    ``$MTAGENT_HOME``. The records are empty for a new session.
    """
    from mtagent import paths
    from mtagent.errors import SessionNotFound
    from mtagent.session.audit import AuditingSink

    project = paths.project_hash(project_root)
    try:
        existing = store.read_since_boundary(project, session_id).records
    except SessionNotFound:
        existing = []
    writer = store.open_writer(project, session_id)
    artifacts = StoreArtifacts(paths.session_artifact_dir(project_root, session_id), max_bytes, store, project,
                               session_id)
    return AuditingSink(writer, store.audit, store.tenant, session_id), existing, artifacts
