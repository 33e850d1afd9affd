"""Whose file is at the recall index's path: ours to use or rebuild, or someone else's to set aside.

The index is a cache mtagent may delete and rebuild at will — but only when the file is its own.
Anything else found at the path (a symlink, wherever it points; a directory; a hard link; another
program's SQLite database; bytes that are not SQLite) is *set aside*: renamed, in the same
folder, to ``<name>.set-aside-<time>``, never opened for writing, truncated or unlinked, so
nothing that is not ours is ever modified. Ours means: a regular file with one link whose SQLite
header carries :data:`APPLICATION_ID` (``PRAGMA application_id``, set when the index is created)
or, written before that id, holds our tables; or an empty file. The check reads the first 100
bytes through ``O_NOFOLLOW``; the database is then opened with SQLite's ``nofollow`` flag, so a
symlink swapped in after the check is refused too.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from pathlib import Path
from urllib.parse import quote

from mtagent.context.recall.driver import SQLITE

APPLICATION_ID = 0x6D746172  # "mtar": mtagent recall
SQLITE_MAGIC = b"SQLite format 3\x00"
HEADER_BYTES = 100
_APP_ID_OFFSET = 68


def database_uri(path: Path) -> str:
    """The URI SQLite opens the index by: read-write, created if missing, never through a symlink."""
    return f"file:{quote(str(path))}?mode=rwc&nofollow=1"


def _not_a_plain_file(path: Path) -> tuple[str | None, int]:
    """(why ``path`` is not a plain file of ours, an open descriptor or -1); (None, -1): nothing there."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None, -1
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "it is a symbolic link", -1
        if exc.errno == errno.EISDIR:
            return "it is a directory", -1
        return f"it cannot be opened ({exc.strerror})", -1
    info = os.fstat(fd)
    reason = None
    if stat.S_ISDIR(info.st_mode):
        reason = "it is a directory"
    elif not stat.S_ISREG(info.st_mode):
        reason = "it is not a regular file"
    elif info.st_nlink != 1:
        reason = "it is a hard link to another file"
    if reason is not None:
        os.close(fd)
        return reason, -1
    return None, fd


def foreign_reason(path: Path) -> str | None:
    """Why the thing at ``path`` is not our index (None: ours, or nothing there)."""
    reason, fd = _not_a_plain_file(path)
    if fd < 0:
        return reason
    try:
        header = os.read(fd, HEADER_BYTES)
    finally:
        os.close(fd)
    if not header:
        return None  # an index whose creation was cut short
    if not header.startswith(SQLITE_MAGIC) or len(header) < HEADER_BYTES:
        return "it is not an SQLite database"
    app_id = int.from_bytes(header[_APP_ID_OFFSET:_APP_ID_OFFSET + 4], "big")
    if app_id != APPLICATION_ID and not (app_id == 0 and _older_index(path)):
        return "it is another program's SQLite database"
    return None


def _older_index(path: Path) -> bool:
    """An index written before the application id: our tables and ``meta.schema_version``.

    Read with ``immutable=1`` (no lock, no journal, nothing created or written)."""
    db = SQLITE.module
    try:
        conn = db.connect(f"file:{quote(str(path))}?mode=ro&immutable=1&nofollow=1", uri=True)
    except db.Error:
        return False
    try:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not {"meta", "items", "sources"} <= names:
            return False
        return conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() is not None
    except db.Error:
        return False
    finally:
        conn.close()


def set_aside(path: Path) -> Path:
    """Rename ``path`` (and its ``-wal``/``-shm`` companions) out of the way; returns the new name."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    for n in range(1000):
        target = path.with_name(f"{path.name}.set-aside-{stamp}" + (f"-{n}" if n else ""))
        if not os.path.lexists(target):
            break
    os.rename(path, target)
    for suffix in ("-wal", "-shm"):
        companion = Path(f"{path}{suffix}")
        if os.path.lexists(companion):
            os.rename(companion, Path(f"{target}{suffix}"))
    return target


def claim(path: Path) -> str | None:
    """Make ``path`` free for our index: set aside what is there when it is not ours.

    Returns a one-line note of what was set aside and why (None when nothing was)."""
    reason = foreign_reason(path)
    if reason is None:
        return None
    moved = set_aside(path)
    return f"{path.name} was set aside as {moved.name} ({reason}); the index is rebuilt beside it"


def remove_own(path: Path) -> None:
    """Delete our own unreadable index (and its WAL files); anything not ours is set aside instead."""
    if claim(path) is not None:
        return
    for suffix in ("", "-wal", "-shm"):
        target = Path(f"{path}{suffix}")
        reason, fd = _not_a_plain_file(target)
        if fd >= 0:
            os.close(fd)
            target.unlink(missing_ok=True)
        elif reason is not None:
            set_aside(target)  # a companion that is a symlink or a hard link is not ours to delete
