"""The artifact store: full tool results (and session memory) beside the transcript.

Paths recorded in a transcript are relative to the session's artifact folder
(``tool-results/<tool-call-id>.txt``). A transcript is untrusted input, so every path read or
written is resolved and refused with :class:`ArtifactPathError` if it lands outside that folder
(``..``, absolute paths, symlinks that point out); a file is read through the folder's descriptor
and refused when it has more than one hard link (:mod:`mtagent.safe_open`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtagent import paths, safe_open
from mtagent.errors import ArtifactPathError, WorkspacePathError
from mtagent.redaction import Redactor, collect_secrets

DEFAULT_ARTIFACT_MAX_BYTES = 64 * 1024 * 1024
TOOL_RESULTS_DIR = "tool-results"
SESSION_MEMORY_DIR = "session-memory"
_UNSAFE_ID = re.compile(r"[^A-Za-z0-9._-]")
_WRITE_CHARS = 1 << 20  # characters encoded and written at a time
_MAX_ID_CHARS = 120  # file names stay well under the usual 255-byte limit


@dataclass(slots=True, frozen=True)
class ArtifactMeta:
    """What the transcript records about a stored tool result."""

    path: str  # relative to the session's artifact folder
    original_chars: int
    stored_bytes: int
    truncated: bool
    sha256: str

    def as_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "original_chars": self.original_chars,
            "stored_bytes": self.stored_bytes,
            "truncated": self.truncated,
            "sha256": self.sha256,
        }


def get_tool_result_path(tool_call_id: str) -> str:
    """Relative artifact path for a tool call; ids are sanitised so they stay one file name."""
    safe = _UNSAFE_ID.sub("_", tool_call_id).lstrip(".") or "result"
    if safe != tool_call_id or len(safe) > _MAX_ID_CHARS:
        safe = f"{safe[:80]}-{hashlib.sha256(tool_call_id.encode()).hexdigest()[:8]}"
    return f"{TOOL_RESULTS_DIR}/{safe}.txt"


@dataclass(slots=True)
class ArtifactStore:
    """One session's artifact folder. Created lazily on first write."""

    root: Path
    max_bytes: int = DEFAULT_ARTIFACT_MAX_BYTES
    # Artifacts are written before the agent redacts a tool result for the model, so the store
    # redacts on its own: secret env values and every known key shape never reach the disk.
    redactor: Redactor = field(default_factory=lambda: Redactor(collect_secrets()), repr=False, kw_only=True)

    @classmethod
    def for_session(cls, project_root: str | os.PathLike[str], session_id: str,
                    max_bytes: int = DEFAULT_ARTIFACT_MAX_BYTES) -> ArtifactStore:
        return cls(paths.session_artifact_dir(project_root, session_id), max_bytes)

    def resolve(self, relative: str) -> Path:
        """Absolute path of ``relative`` inside the store, or :class:`ArtifactPathError`."""
        if not relative or "\x00" in relative:
            raise ArtifactPathError(f"artifact path {relative!r} is empty or contains NUL")
        if os.path.isabs(relative) or relative.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", relative):
            raise ArtifactPathError(
                f"artifact path {relative!r} is absolute; transcripts may only name paths "
                "inside the session's artifact folder"
            )
        root = self.root.resolve()
        target = (root / relative).resolve()
        if target != root and root not in target.parents:
            raise ArtifactPathError(
                f"artifact path {relative!r} escapes the session's artifact folder {root}"
            )
        return target

    def write_text(self, relative: str, text: str) -> ArtifactMeta:
        """Store ``text``; beyond ``max_bytes`` it is cut on a UTF-8 boundary and marked truncated."""
        target = self.resolve(relative)
        paths.ensure_dir(target.parent)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        digest, stored, truncated = hashlib.sha256(), 0, False
        # redacted and encoded a piece at a time: a 50 MB result is never held a second time (#33)
        chunks = (piece[start:start + _WRITE_CHARS] for piece in self.redactor.pieces(text, _WRITE_CHARS)
                  for start in range(0, len(piece), _WRITE_CHARS))
        with open(tmp, "wb") as fh:
            for chunk in chunks:
                data = chunk.encode("utf-8", errors="replace")
                if stored + len(data) > self.max_bytes:
                    data = data[: self.max_bytes - stored].decode("utf-8", errors="ignore").encode("utf-8")
                    truncated = True
                fh.write(data)
                digest.update(data)
                stored += len(data)
                if truncated:
                    break
        os.replace(tmp, target)
        return ArtifactMeta(relative, len(text), stored, truncated, digest.hexdigest())

    def _reading(self, relative: str) -> contextlib.AbstractContextManager[tuple[Any, os.stat_result]]:
        """The artifact opened for reading through the store's folder descriptor, refused when its last
        component is a symlink or it has more than one hard link (its other name may be anywhere:
        ``ln ~/.ssh/id_rsa tool-results/x.txt``), like every other confined open."""
        target = self.resolve(relative)
        return _confined(self.root.resolve(), target, relative, self.root)

    def read_text(self, relative: str) -> str:
        with self._reading(relative) as (fh, _):
            return fh.read().decode("utf-8", errors="replace")

    def read_lines(self, relative: str) -> Iterator[str]:
        """The artifact's lines as ``str.splitlines`` gives them, read as they are needed: an indexer
        going through a 50 MB result must not hold it (and its lines) at once."""
        with self._reading(relative) as (fh, _):
            for raw in fh:
                yield from raw.decode("utf-8", errors="replace").splitlines()

    def read_head(self, relative: str, max_bytes: int) -> str:
        """At most ``max_bytes`` of an artifact as text, with a note of what was left out (readers
        that print artifacts must not load 64 MB to show a screenful)."""
        with self._reading(relative) as (fh, st):
            data = fh.read(max_bytes + 1)
            size = st.st_size
        text = data[:max_bytes].decode("utf-8", errors="replace")
        if len(data) > max_bytes:
            text += f"… [{size - max_bytes:,} more bytes in {relative}]"
        return text

    def exists(self, relative: str) -> bool:
        try:
            return self.resolve(relative).is_file()
        except ArtifactPathError:
            return False

    def list_tool_results(self) -> list[Path]:
        folder = self.root / TOOL_RESULTS_DIR
        return sorted(folder.glob("*.txt")) if folder.is_dir() else []

    @property
    def session_memory_path(self) -> Path:
        return self.root / SESSION_MEMORY_DIR / "summary.md"


@contextlib.contextmanager
def _confined(root: Path, target: Path, relative: str, shown: Path) -> Iterator[tuple[Any, os.stat_result]]:
    try:
        with safe_open.reading((root,), target) as (fh, st):
            yield fh, st
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise ArtifactPathError(
            f"artifact {relative!r} is missing from {shown}; the session's artifact folder "
            "may have been moved or cleaned"
        ) from exc
    except WorkspacePathError as exc:
        raise ArtifactPathError(f"artifact {relative!r} was not read: {exc}") from exc

