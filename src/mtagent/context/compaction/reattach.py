"""Post-compact re-attachment of recently read files (spec 002 §压缩后附件).

A summary loses "which files the model has looked at". After a compaction the most recently
read files that are *still current on disk* (mtime unchanged since the read) and not already
visible in the kept tail are re-attached as one message, at most ``reattach_max_files`` (5)
files and ``reattach_max_tokens`` (50K) tokens, newest read first.

Recent reads come from a read-state object (the read_file tool's cache) when one is given —
anything with ``recent_reads() -> Iterable[item]`` where an item has ``file_path`` (or
``path``) and ``mtime`` as attributes or keys, oldest first — otherwise from the ``read_file``
``ToolMessage``\\ s whose ``artifact`` carries ``file_path`` and ``mtime``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from mtagent.frames import frame

REATTACHED_KIND = "reattached"
READ_TOOL = "read_file"
# mtimes survive JSON round trips as floats; this absorbs float formatting, not real edits.
MTIME_TOLERANCE_SECONDS = 1e-3
# Cut a too-long file a little below the proportional line count so the next try usually fits.
_SHRINK_MARGIN = 0.9


class RecentReads(Protocol):
    def recent_reads(self) -> Iterable[Any]: ...


@dataclass(slots=True, frozen=True)
class FileRead:
    path: str
    mtime: float


def _field(item: Any, *names: str) -> Any:
    for name in names:
        value = item.get(name) if isinstance(item, dict) else getattr(item, name, None)
        if value is not None:
            return value
    return None


def _as_read(item: Any) -> FileRead | None:
    path = _field(item, "file_path", "path")
    mtime = _field(item, "mtime")
    if not isinstance(path, str) or not path or mtime is None:
        return None
    try:
        return FileRead(path, float(mtime))
    except (TypeError, ValueError):
        return None


def reads_in_messages(messages: Iterable[BaseMessage]) -> list[FileRead]:
    """``read_file`` results whose artifact records the file path and its mtime, oldest first."""
    found: list[FileRead] = []
    for message in messages:
        if isinstance(message, ToolMessage) and message.name == READ_TOOL and message.status != "error":
            read = _as_read(message.artifact) if isinstance(message.artifact, dict) else None
            if read is not None:
                found.append(read)
    return found


def recent_reads(messages: Sequence[BaseMessage], read_state: RecentReads | None) -> list[FileRead]:
    """Distinct files, newest read first."""
    if read_state is not None:
        reads = [r for r in (_as_read(item) for item in read_state.recent_reads()) if r is not None]
    else:
        reads = reads_in_messages(messages)
    seen: set[str] = set()
    newest_first: list[FileRead] = []
    for read in reversed(reads):
        if read.path not in seen:
            seen.add(read.path)
            newest_first.append(read)
    return newest_first


def _resolve(path: str, root: Path | None) -> Path:
    candidate = Path(path).expanduser()
    if not candidate.is_absolute() and root is not None:
        candidate = root / candidate
    return candidate


def _numbered(lines: Sequence[str], start: int = 1) -> str:
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, start))


def build_reattachment(
    summarized: Sequence[BaseMessage],
    kept: Sequence[BaseMessage],
    *,
    message_id: str,
    max_files: int,
    max_tokens: int,
    count: Callable[[str], int],
    read_state: RecentReads | None = None,
    root: Path | None = None,
) -> HumanMessage | None:
    """One message with the current content of recently read, unchanged files, or None."""
    if max_files <= 0 or max_tokens <= 0:
        return None
    visible = {read.path for read in reads_in_messages(kept)}
    blocks: list[str] = []
    paths: list[str] = []
    budget = max_tokens
    for read in recent_reads([*summarized, *kept], read_state):
        if len(blocks) >= max_files or budget <= 0:
            break
        if read.path in visible:
            continue
        file = _resolve(read.path, root)
        try:
            if abs(os.stat(file).st_mtime - read.mtime) > MTIME_TOLERANCE_SECONDS:
                continue
            lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        block, used = _fit_file(read.path, lines, budget, count)
        if block is None:
            continue
        blocks.append(block)
        paths.append(read.path)
        budget -= used
    if not blocks:
        return None
    header = ("Files you read before this compaction, re-attached with their current content "
              "(unchanged on disk since you read them):")
    return HumanMessage(
        content=header + "\n\n" + "\n\n".join(blocks),
        id=message_id,
        response_metadata={"mtagent": {"kind": REATTACHED_KIND, "paths": paths}},
    )


def _fit_file(path: str, lines: list[str], budget: int, count: Callable[[str], int]) -> tuple[str | None, int]:
    total = len(lines)
    shown = total
    while shown > 0:
        body = _numbered(lines[:shown])
        more = f"\n… {total - shown} more lines; read_file with offset to see them" if shown < total else ""
        block = frame("reattached_file", body + more, path=path, lines=f"1-{shown}", total_lines=total)
        used = count(block)
        if used <= budget:
            return block, used
        shown = min(shown - 1, int(shown * budget / used * _SHRINK_MARGIN))
    return None, 0
