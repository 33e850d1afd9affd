"""The append-only JSONL transcript: one writer per session, any number of readers.

Why it is built this way:

* **A line is written whole.** Each record is serialised to one ``bytes`` ending in ``\\n`` and
  handed to a single ``os.write`` on an ``O_APPEND`` descriptor, so a crash leaves at most one
  torn line, at the very end.
* **One writer.** An exclusive ``flock`` on ``<session>.lock`` (which holds the writer's pid)
  makes a second writer fail with :class:`~mtagent.errors.SessionLocked` instead of interleaving.
* **Readers never modify the file.** A torn last line — one *without* its newline — is reported
  and ignored; only the next writer repairs it, by truncating exactly that tail. Any complete
  line that does not parse, last or not, is :class:`~mtagent.errors.TranscriptCorrupt` unless
  the caller asks to skip it; it is never deleted.
* **fsync policy** ``always`` (every record), ``turn`` (on :meth:`TranscriptWriter.end_turn`
  and close; the default) or ``never``.

Reading lives in :mod:`mtagent.session.reader`: the boundary index
(:mod:`mtagent.session.index`) reads with it and the writer updates the index, so neither needs
the other's module back.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from mtagent import paths
from mtagent.errors import SessionLocked
from mtagent.session import schema
from mtagent.session.index import WriterIndex

log = logging.getLogger(__name__)

FsyncPolicy = Literal["always", "turn", "never"]
TAIL_BLOCK_BYTES = 1024 * 1024


class RecordSink(Protocol):
    """Where engine parts append transcript records (a writer, or a list in tests)."""

    def append(self, record: dict[str, Any]) -> object: ...


@dataclass(slots=True)
class MemorySink:
    """A list-backed sink for tests and for components running without a transcript."""

    records: list[dict[str, Any]] = field(default_factory=list)

    def append(self, record: dict[str, Any]) -> None:
        self.records.append(record)


def lock_path(transcript: Path) -> Path:
    return transcript.with_suffix(".lock")


def _acquire_lock(path: Path, session_id: str) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        holder = _read_pid(fd)
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise SessionLocked(session_id, holder) from None
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def probe_lock(transcript: Path, session_id: str) -> None:
    """:class:`SessionLocked` now if another process holds the session's writer lock, without taking it
    (a front end says so before it loads the session, not after)."""
    try:
        fd = os.open(lock_path(transcript), os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return  # no lock file (never opened) or unreadable: the writer's own open decides
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise SessionLocked(session_id, _read_pid(fd)) from None
            return
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _read_pid(fd: int) -> int | None:
    try:
        raw = os.pread(fd, 32, 0).strip()
        return int(raw) if raw else None
    except (OSError, ValueError):
        return None


def find_torn_tail(path: Path) -> int | None:
    """Offset where a torn last line starts, or None if the file ends with a newline.

    Only a last line *without* its newline is torn: every record is one write ending in ``\n``,
    so a crash can cut a line short but never leave a complete, newline-terminated one. A complete
    last line that does not parse (invalid UTF-8, nesting too deep, not a record) is data someone
    wrote; it is kept and reported by readers, never truncated away."""
    with open(path, "rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        if size == 0:
            return None
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return None
        return _line_start(fh, size)


def _line_start(fh: Any, end: int) -> int:
    """Offset just after the last newline before ``end`` (0 if none)."""
    pos = end
    while pos > 0:
        step = min(TAIL_BLOCK_BYTES, pos)
        fh.seek(pos - step)
        block = fh.read(step)
        nl = block.rfind(b"\n")
        if nl >= 0:
            return pos - step + nl + 1
        pos -= step
    return 0


class TranscriptWriter:
    """The one writer of a session's transcript. Use as a context manager, or call :meth:`close`."""

    def __init__(self, path: str | os.PathLike[str], *, session_id: str | None = None,
                 fsync: FsyncPolicy = "turn", validate: bool = True, index: bool = True) -> None:
        self.path = Path(path)
        self.session_id = session_id or self.path.stem
        if fsync not in ("always", "turn", "never"):
            raise ValueError(f"fsync policy must be always, turn or never, not {fsync!r}")
        self.fsync_policy: FsyncPolicy = fsync
        self.validate = validate
        self._mutex = threading.Lock()  # parallel tool threads may share one writer
        paths.ensure_dir(self.path.parent)
        self._lock_fd: int | None = _acquire_lock(lock_path(self.path), self.session_id)
        self._fd: int | None = None
        try:
            self.repaired_bytes = self._repair()
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            self._size = os.fstat(self._fd).st_size
            self._index = WriterIndex.open(self.path, self._size) if index else None
        except BaseException:
            self.close()
            raise

    @classmethod
    def for_session(cls, project_root: str | os.PathLike[str], session_id: str, *,
                    fsync: FsyncPolicy = "turn") -> TranscriptWriter:
        """The writer of ``<history>/<project-hash>/<session-id>.jsonl`` (created on first use)."""
        return cls(paths.session_transcript_path(project_root, session_id), session_id=session_id, fsync=fsync)

    def _repair(self) -> int:
        if not self.path.exists():
            return 0
        torn = find_torn_tail(self.path)
        if torn is None:
            return 0
        size = self.path.stat().st_size
        log.warning("transcript %s: removing a torn last line (%d bytes at offset %d) left by a crash",
                    self.path, size - torn, torn)
        os.truncate(self.path, torn)
        return size - torn

    @property
    def size(self) -> int:
        """Bytes in the file (the offset the next record will get)."""
        return self._size

    def append(self, record: dict[str, Any]) -> int:
        """Write one record as one line; return the byte offset where its line starts."""
        if self._fd is None:
            raise ValueError(f"transcript writer for {self.path} is closed")
        data = schema.encode_record(record, validate=self.validate)
        with self._mutex:
            offset = self._size
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            self._size += len(data)
            if self.fsync_policy == "always":
                os.fsync(self._fd)
            if self._index is not None:
                self._index.observe(record, offset)
        return offset

    def end_turn(self) -> None:
        """A turn finished: under the ``turn`` policy this is when the data reaches the disk."""
        if self._fd is not None and self.fsync_policy != "never":
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                if self.fsync_policy != "never":
                    os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._lock_fd, 0)
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> TranscriptWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()
