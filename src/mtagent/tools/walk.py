"""Walking the workspace race-free: folders listed through descriptors, files re-opened safely.

``grep``, ``glob`` and the Python grep engine see the tree only through here, so a folder
swapped for a symlink to outside mid-walk is never entered and its files never read.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from mtagent.errors import WorkspacePathError
from mtagent.tools.workspace import IGNORED_DIRS, Workspace

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def walk_files(ws: Workspace, base: Path) -> Iterator[Path]:
    """Files under ``base`` in ripgrep's ``--sort path`` order (names sorted per folder, files and
    folders interleaved), skipping ignored folders; folder symlinks are not followed and file
    symlinks that leave the roots are skipped. Folders are listed through descriptors opened with
    ``O_NOFOLLOW`` from the root, so a folder swapped for a symlink mid-walk is never entered."""
    st = ws.lstat(base) if base not in ws.roots else os.stat(base)
    if st is None:
        return
    if stat.S_ISREG(st.st_mode):
        yield base
        return
    try:
        fd = ws.open_dir(base)
    except (OSError, WorkspacePathError):
        return
    yield from _walk_fd(ws, fd, base)


def _walk_fd(ws: Workspace, fd: int, here: Path) -> Iterator[Path]:
    try:
        with os.scandir(fd) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in entries:
            path = here / entry.name
            if entry.is_dir(follow_symlinks=False):
                if entry.name in IGNORED_DIRS:
                    continue
                try:
                    child = os.open(entry.name, _DIR_FLAGS, dir_fd=fd)
                except OSError:
                    continue
                if _is_venv(child):
                    os.close(child)
                    continue
                yield from _walk_fd(ws, child, path)
            elif entry.is_symlink():
                try:
                    target = ws.resolve(str(path))
                    found = ws.lstat(target)
                except (OSError, WorkspacePathError):
                    continue
                if found is not None and stat.S_ISREG(found.st_mode):
                    yield path
            elif entry.is_file(follow_symlinks=False):
                yield path
    except OSError:
        return
    finally:
        os.close(fd)


def _is_venv(dir_fd: int) -> bool:
    try:
        return stat.S_ISREG(os.stat("pyvenv.cfg", dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def has_venv_marker(dir_fd: int, name: str) -> bool:
    try:
        child = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError:
        return False
    try:
        return _is_venv(child)
    finally:
        os.close(child)


def read_workspace_file(ws: Workspace, file: Path, max_bytes: int | None = None) -> bytes | None:
    """A walked file's bytes read race-free (its real path re-checked, opened through descriptors);
    None when it is now outside, a hard link, not regular, gone or over ``max_bytes``."""
    try:
        real = ws.resolve(str(file))
        with ws.open_read(real) as (fh, st):
            if max_bytes is not None and st.st_size > max_bytes:
                return None
            return fh.read()
    except (OSError, WorkspacePathError):
        return None
