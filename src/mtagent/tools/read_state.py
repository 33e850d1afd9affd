"""What the model has read, and whether that is still what is on disk (spec 000 M3).

One :class:`ReadState` per session. ``read_file`` records each read (path, range, file stamp,
tool_call_id); ``write_file`` / ``edit_file`` record writes, which make every earlier read of
that file *stale*. The engine uses it to

* answer an identical re-read with a short ``file_unchanged`` stub (:meth:`unchanged_read`);
* refuse an edit of a file that was never read or changed on disk since (:meth:`check_editable`);
* say which earlier reads a write made stale (:meth:`record_write`);
* re-attach the files the model was working on after a compact (:meth:`recent_reads`), and
  forget reads whose content has left the view (:meth:`forget`), so a later re-read returns
  the content again instead of a stub pointing at something the model no longer sees.

A file's identity is its stamp: mtime (ns), size and, for files up to
:data:`DIGEST_MAX_BYTES`, a SHA-256 of the content — mtime alone misses two writes within
one filesystem clock tick.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, NamedTuple

from mtagent.events import EventBus, EventType

# Hashing is how quick successive writes are told apart; beyond this size mtime+size suffice.
DIGEST_MAX_BYTES = 16 * 1024 * 1024


@dataclass(slots=True, frozen=True)
class FileStamp:
    mtime_ns: int
    size: int
    digest: str | None

    @property
    def mtime(self) -> float:
        return self.mtime_ns / 1e9


@dataclass(slots=True)
class ReadRecord:
    path: str  # absolute, resolved
    tool_call_id: str
    offset: int | None
    limit: int | None
    stamp: FileStamp
    start_line: int
    num_lines: int
    stale: bool = False  # a write by the agent came after it
    forgotten: bool = False  # its content is no longer in the model's view
    message_id: str | None = None  # the ToolMessage that carried it (microcompact names those)
    saved: str | None = None  # the artifact a read too large for the window was saved to


class RecentRead(NamedTuple):
    """What the compaction re-attachment needs about one read."""

    path: str
    tool_call_id: str
    mtime: float


@dataclass
class ReadState:
    """Per-session read/write bookkeeping; thread-safe (tools may run in parallel)."""

    _reads: list[ReadRecord] = field(default_factory=list)
    _known: dict[str, FileStamp] = field(default_factory=dict)  # last stamp the agent saw or wrote
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # Set by a compaction that freed too little to make progress: re-reads are answered by reference.
    by_reference: bool = False

    def record_read(self, path: Path, tool_call_id: str, *, offset: int | None, limit: int | None,
                    stamp: FileStamp, start_line: int, num_lines: int, saved: str | None = None) -> ReadRecord:
        record = ReadRecord(str(path), tool_call_id, offset, limit, stamp, start_line, num_lines, saved=saved)
        with self._lock:
            self._reads.append(record)
            self._known[str(path)] = stamp
        return record

    def record_write(self, path: Path, stamp: FileStamp | None) -> list[ReadRecord]:
        """Mark earlier reads of ``path`` stale; the agent now knows the new content."""
        key = str(path)
        with self._lock:
            staled = [r for r in self._reads if r.path == key and not r.stale]
            for r in staled:
                r.stale = True
            if stamp is not None:
                self._known[key] = stamp
            else:
                self._known.pop(key, None)
        return staled

    def _identical(self, path: Path, offset: int | None, limit: int | None, stamp: FileStamp) -> list[ReadRecord]:
        """Earlier reads of this range of the file as it is now that no write made stale, newest first."""
        key = str(path)
        with self._lock:
            return [r for r in reversed(self._reads)
                    if r.path == key and r.offset == offset and r.limit == limit and r.stamp == stamp and not r.stale]

    def unchanged_read(self, path: Path, offset: int | None, limit: int | None,
                       stamp: FileStamp) -> ReadRecord | None:
        """The earlier identical read whose content the model still has, if any."""
        return next((r for r in self._identical(path, offset, limit, stamp) if not r.forgotten), None)

    def reread_after_pressure(self, path: Path, offset: int | None, limit: int | None,
                              stamp: FileStamp) -> ReadRecord | None:
        """After a compaction that freed too little (:attr:`by_reference`), the earlier identical
        read of an unchanged file that the compaction took out of view: sending it again would
        refill the window and compact again (the loop of issue #38), so it is answered by reference."""
        newest = next(iter(self._identical(path, offset, limit, stamp)), None) if self.by_reference else None
        return newest if newest is not None and newest.forgotten else None

    def check_editable(self, path: Path, current: FileStamp) -> str | None:
        """Why the agent may not edit ``path`` now (a message for the model), or None."""
        with self._lock:
            known = self._known.get(str(path))
        if known is None:
            return (f"you have not read {path.name} in this session; read it with read_file first "
                    "so the edit is based on its current content")
        if known != current:
            return (f"{path.name} changed on disk since you last read it (mtime {known.mtime:.3f} → "
                    f"{current.mtime:.3f}); read it again before editing")
        return None

    def recent_reads(self) -> list[RecentRead]:
        """The latest read of each file, oldest first (so the newest is last)."""
        with self._lock:
            reads = list(self._reads)
        latest: dict[str, ReadRecord] = {}
        for r in reads:
            latest.pop(r.path, None)  # re-insert so dict order follows each file's latest read
            latest[r.path] = r
        return [RecentRead(r.path, r.tool_call_id, r.stamp.mtime) for r in latest.values()]

    def bind_message(self, tool_call_id: str, message_id: str | None) -> None:
        """Remember which ToolMessage carried a read, so it can be forgotten by message id."""
        with self._lock:
            for r in self._reads:
                if r.tool_call_id == tool_call_id:
                    r.message_id = message_id

    def forget(self, tool_call_ids: set[str] | None = None, *, message_ids: set[str] | None = None) -> int:
        """The model no longer sees these reads (all when both are None): re-reads return content.

        Give ``tool_call_ids`` or ``message_ids`` (what a microcompact record names)."""
        everything = tool_call_ids is None and message_ids is None
        with self._lock:
            count = 0
            for r in self._reads:
                hit = everything or (tool_call_ids is not None and r.tool_call_id in tool_call_ids) or (
                    message_ids is not None and r.message_id in message_ids)
                if hit and not r.forgotten:
                    r.forgotten = True
                    count += 1
        return count

    def follow(self, bus: EventBus) -> None:
        """Forget reads the engine takes out of the view: those a microcompact clears, and all of
        them at a compact boundary (re-attachment brings back the files that matter)."""
        bus.subscribe(lambda event: self.forget(message_ids=set(event.data.get("cleared_ids") or ())),
                      EventType.MICRO_COMPACTED)
        bus.subscribe(self._compacted, EventType.COMPACT_BOUNDARY)
        bus.subscribe(self._compaction_failed, EventType.COMPACT_FAILED)

    def _compacted(self, _event: object) -> None:
        self.forget()
        self.by_reference = False  # a compaction that made room; one that did not says so right after

    def _compaction_failed(self, event: object) -> None:
        if (getattr(event, "data", None) or {}).get("low_progress"):
            self.by_reference = True


def stamp_of_open(fh: BinaryIO, st: os.stat_result) -> FileStamp:
    """The stamp of an already opened file (its ``fstat`` and content), read from its start; the
    file position is left at the start again."""
    digest = None
    if st.st_size <= DIGEST_MAX_BYTES:
        fh.seek(0)
        h = hashlib.sha256()
        while chunk := fh.read(1 << 20):
            h.update(chunk)
        digest = h.hexdigest()
        fh.seek(0)
    return FileStamp(st.st_mtime_ns, st.st_size, digest)
