"""Optional: the project's own files in the recall index, honouring ``.gitignore``.

Off by default (``recall.index_workspace``): a session's history is what compaction forgets,
the workspace is always there to grep. When on, text files under the project root are chunked
by lines; ``.git/`` and whatever the root ``.gitignore`` excludes are skipped (``pathspec``'s
GitIgnoreSpec), as are symlinks (a link could lead outside the project), binary files and files
over ``recall.workspace_max_file_bytes``. A file is re-indexed only when its size or mtime changed.

Files are read under :mod:`mtagent.confine`'s rule, like every reader of project content: opened
through the project's descriptor (a folder swapped for a symlink mid-refresh is refused), never
a hard link (its other name may be outside), at most ``workspace_max_file_bytes + 1`` bytes read,
and redacted before anything is stored — the index never holds a secret the files held.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pathspec

from mtagent import confine
from mtagent.config import RecallSettings
from mtagent.context.recall.documents import chunk_lines
from mtagent.context.recall.store import Doc, RecallStore
from mtagent.redaction import Redactor

log = logging.getLogger(__name__)

ALWAYS_SKIPPED = (".git/", ".hg/", ".svn/", ".venv/", "node_modules/", "__pycache__/", ".mtagent/")
MAX_FILES = 20_000
MAX_DEPTH = 64  # folders below the project root that are indexed, at most


def _ignore_spec(root: Path) -> pathspec.GitIgnoreSpec:
    lines = list(ALWAYS_SKIPPED)
    try:
        lines += (root / ".gitignore").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        pass
    return pathspec.GitIgnoreSpec.from_lines(lines)


def workspace_files(root: Path) -> list[Path]:
    """Regular files under ``root`` that .gitignore does not exclude (symlinks never followed).

    Walked with an explicit stack, at most :data:`MAX_DEPTH` folders deep (``os.walk`` recurses: a
    hostile tree of 1,400 nested folders raised RecursionError out of every refresh)."""
    spec = _ignore_spec(root)
    found: list[Path] = []
    stack: list[tuple[Path, str, int]] = [(root, "", 0)]
    while stack:
        folder, prefix, depth = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        subfolders = []
        for entry in entries:
            rel = f"{prefix}{entry.name}"
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth < MAX_DEPTH and not spec.match_file(f"{rel}/"):
                        subfolders.append((Path(entry.path), f"{rel}/", depth + 1))
                    continue
                if spec.match_file(rel) or not entry.is_file(follow_symlinks=False):
                    continue
            except OSError:
                continue
            found.append(Path(entry.path))
            if len(found) >= MAX_FILES:
                return found
        stack.extend(reversed(subfolders))
    return found


def _read_text(root: Path, path: Path, limit: int, redactor: Redactor) -> str | None:
    """The file's redacted text, or None: over ``limit``, binary, refused or unreadable."""
    result = confine.read_text(root, path, max_bytes=limit, redactor=redactor, decode_errors="replace")
    if result.text is None or result.truncated:  # confine refuses binary (NUL) files itself
        if result.problem and not result.truncated:
            log.debug("workspace index: %s", result.problem)
        return None
    return result.text


def sync_workspace(root: Path, store: RecallStore, settings: RecallSettings, redactor: Redactor | None = None) -> int:
    """Index new and changed workspace files; drop files that disappeared. Returns items added.

    ``redactor``: the session's (default: this process's secrets and every known key shape)."""
    redactor = redactor or confine.default_redactor()
    root = confine.real_path(root)
    added = 0
    seen: set[str] = set()
    for path in workspace_files(root):
        rel = path.relative_to(root).as_posix()
        seen.add(rel)
        try:
            stat = path.stat()
        except OSError:
            continue
        source = f"file:{rel}"
        _, size, mtime = store.source_state(source)
        if size == stat.st_size and mtime == stat.st_mtime:
            continue
        text = _read_text(root, path, settings.workspace_max_file_bytes, redactor)
        store.delete_where(f"file:{rel}:")
        if text is not None:
            docs = [Doc(uid=f"file:{rel}:{first}", kind="file", text=body[:settings.item_max_chars], path=rel,
                        line_start=first, line_end=last, authority="retrieval", ts=stat.st_mtime, file_key=rel)
                    for first, last, body in chunk_lines(text, settings.chunk_lines)]
            added += len(store.add(docs))
        store.set_source_state(source, 0, stat.st_size, stat.st_mtime)
    for (source,) in store.execute("SELECT source FROM sources WHERE substr(source, 1, 5) = 'file:'"):
        rel = str(source)[5:]
        if rel not in seen:
            store.delete_where(f"file:{rel}:")
            store.run(lambda c, s=source: c.execute("DELETE FROM sources WHERE source=?", (s,)), None)
    return added
