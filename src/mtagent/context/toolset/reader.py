"""Bounded, confined reads of skill files: no symlink followed, no hard link, no file past a cap.

A project's ``.mtagent/skills`` or ``.claude/skills`` is written by whoever wrote the repository. A
``SKILL.md`` that is a symlink to ``~/.ssh/id_rsa`` or a hard link to ``/etc/shadow`` must not be
read into the model's context, a 2 GB one must not be read whole, and a FIFO must not hang the
session. So every component below the base folder is opened relative to its parent's descriptor
with ``O_NOFOLLOW`` (a symlink anywhere on the way is refused, not followed), the file is checked on
its descriptor (regular, one link) and read up to ``max_bytes + 1``.

This is the same rule as the file tools' ``safe_fs`` (which the engine layer cannot import); the
shared reader of issue 27 replaces it when it lands.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class UnsafeRead(OSError):
    """The file is a symlink, a hard link, not regular, or over the cap (the message says which)."""


@contextmanager
def open_folder(base: Path, parts: Sequence[str]) -> Iterator[int]:
    """A descriptor of ``base/parts…``, each part opened without following a symlink."""
    fd = os.open(base, _DIR)
    try:
        for part in parts:
            if part in ("", ".", "..") or "/" in part or "\x00" in part:
                raise UnsafeRead(errno.EINVAL, f"bad path component {part!r}")
            nxt = os.open(part, _DIR, dir_fd=fd)
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)


def subfolders(base: Path, parts: Sequence[str]) -> list[str]:
    """Names of the real folders (not symlinks) in ``base/parts…``, sorted; [] when it is absent."""
    try:
        with open_folder(base, parts) as fd:
            with os.scandir(fd) as it:
                return sorted(e.name for e in it if e.is_dir(follow_symlinks=False))
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            return []
        raise


def read_bounded(base: Path, parts: Sequence[str], max_bytes: int) -> bytes:
    """The bytes of ``base/parts…`` (the last part a file), read under the rules of the module docstring."""
    *folders, name = parts
    with open_folder(base, folders) as dir_fd:
        if "/" in name or name in ("", ".", ".."):
            raise UnsafeRead(errno.EINVAL, f"bad file name {name!r}")
        try:
            fd = os.open(name, _FILE, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnsafeRead(errno.ELOOP, f"{name} is a symlink; skills are never read through one") from exc
            raise
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise UnsafeRead(errno.EINVAL, f"{name} is not a regular file")
            if info.st_nlink != 1:
                raise UnsafeRead(errno.EMLINK, f"{name} has {info.st_nlink} hard links; its other names may be "
                                 "outside the project")
            if info.st_size > max_bytes:
                raise UnsafeRead(errno.EFBIG, f"{name} is {info.st_size:,} bytes (over {max_bytes:,})")
            os.set_blocking(fd, True)
            chunks, left = [], max_bytes + 1
            while left > 0:
                chunk = os.read(fd, min(left, 65_536))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            data = b"".join(chunks)
            if len(data) > max_bytes:
                raise UnsafeRead(errno.EFBIG, f"{name} grew past {max_bytes:,} bytes while being read")
            return data
        finally:
            os.close(fd)
