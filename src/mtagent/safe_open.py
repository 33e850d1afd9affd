"""Open files under given roots through directory descriptors, so no interleaving escapes them.

:meth:`Workspace.resolve <mtagent.tools.workspace.Workspace.resolve>` checks a path's spelling
and where it resolves *now*; a hostile repository (or a process running beside the agent) can
swap a checked folder for a symlink to ``/`` between that check and the ``open``. So every tool
opens what ``resolve`` returned by walking it from the root's descriptor, one component at a
time, with ``O_NOFOLLOW | O_DIRECTORY`` (``openat``-style). The resolved path has no symlinks
left in it, so a symlink met during the walk means the tree changed under us: the open is
refused (``ELOOP``/``ENOTDIR`` → :class:`~mtagent.errors.WorkspacePathError`), never followed.

The final component is opened with ``O_NOFOLLOW | O_NONBLOCK`` (a FIFO cannot block the open)
and checked on the descriptor itself: a regular file with exactly one link. A file with more
than one hard link is refused for reads *and* writes — its other names may be outside the
workspace (``ln /etc/passwd x``), and nothing portable can tell where they are.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from mtagent.errors import WorkspacePathError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_SWAPPED = (errno.ELOOP, errno.ENOTDIR, errno.EMLINK)


class NotRegularFile(WorkspacePathError):
    """The path names a folder, a pipe, a socket or a device, not a regular file."""

    def __init__(self, message: str, *, is_dir: bool) -> None:
        super().__init__(message)
        self.is_dir = is_dir


def split_under(roots: tuple[Path, ...], path: Path) -> tuple[Path, tuple[str, ...]]:
    """The root ``path`` lies under (the deepest one) and its components below that root."""
    best: Path | None = None
    for root in roots:
        if (path == root or root in path.parents) and (best is None or len(root.parts) > len(best.parts)):
            best = root
    if best is None:
        raise WorkspacePathError(f"{path} is outside the workspace")
    return best, path.relative_to(best).parts


def _swapped(path: Path, exc: OSError) -> WorkspacePathError:
    return WorkspacePathError(
        f"{path} changed while it was being opened (a folder on the way is now a symlink or a file); "
        "tools never follow a symlink met mid-walk — check the folder and try again"
    )


def open_dir(roots: tuple[Path, ...], path: Path, *, create: bool = False) -> int:
    """A descriptor for the folder ``path`` (resolved, inside ``roots``), walked without following
    any symlink; ``create`` makes missing folders on the way (``mkdir -p`` through descriptors)."""
    root, parts = split_under(roots, path)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    part = ""
    try:
        for part in parts:
            try:
                nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
                nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nfd
    except OSError as exc:
        try:
            if exc.errno in _SWAPPED and (exc.errno != errno.ENOTDIR or _is_link(fd, part)):
                raise _swapped(path, exc) from exc
        finally:
            os.close(fd)
        raise
    return fd


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return True


@dataclass(slots=True, frozen=True)
class Opened:
    """An open regular file: its descriptor and the ``fstat`` taken right after opening."""

    fd: int
    st: os.stat_result


def _check_opened(path: Path, fd: int, *, writing: bool) -> os.stat_result:
    st = os.fstat(fd)
    if stat.S_ISDIR(st.st_mode):
        raise NotRegularFile(f"{path.name} is a folder, not a file", is_dir=True)
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFile(f"{path.name} is not a regular file (a pipe, socket or device), so using it could "
                             "block forever; inspect it with shell (e.g. `ls -l`, `file`) instead", is_dir=False)
    if st.st_nlink > 1:
        verb = "write" if writing else "read"
        raise WorkspacePathError(
            f"refusing to {verb} {path.name}: it is a hard link ({st.st_nlink} names for one file), and its other "
            "names may be outside the workspace. If you trust it, make a private copy with shell "
            "(`cp --remove-destination`) first"
        )
    return st


def open_file(roots: tuple[Path, ...], path: Path, *, write: bool = False, create: bool = False) -> Opened:
    """Open the regular file ``path`` for reading, or for writing (``create`` makes it and any
    missing folders). Never truncates before the checks: the caller truncates through the fd."""
    if path in roots:
        raise NotRegularFile(f"{path} is a folder, not a file", is_dir=True)
    dfd = open_dir(roots, path.parent, create=create)
    flags = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    flags |= (os.O_WRONLY | (os.O_CREAT if create else 0)) if write else os.O_RDONLY
    try:
        try:
            fd = os.open(path.name, flags, 0o666, dir_fd=dfd)
        except IsADirectoryError as exc:
            raise NotRegularFile(f"{path.name} is a folder, not a file", is_dir=True) from exc
        except OSError as exc:
            if exc.errno in _SWAPPED:
                raise _swapped(path, exc) from exc
            if exc.errno == errno.ENXIO:  # a FIFO with no reader, opened for writing
                raise NotRegularFile(f"{path.name} is not a regular file (a pipe)", is_dir=False) from exc
            raise
    finally:
        os.close(dfd)
    try:
        st = _check_opened(path, fd, writing=write)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return Opened(fd, st)


@contextmanager
def reading(roots: tuple[Path, ...], path: Path) -> Iterator[tuple[object, os.stat_result]]:
    """``with reading(roots, path) as (fh, st)``: a buffered binary reader of the checked file."""
    opened = open_file(roots, path)
    with os.fdopen(opened.fd, "rb") as fh:
        yield fh, opened.st


def lstat_in(roots: tuple[Path, ...], path: Path) -> os.stat_result | None:
    """``lstat`` of ``path`` through its parent's descriptor (None when it does not exist)."""
    if path in roots:
        return os.stat(path)
    try:
        dfd = open_dir(roots, path.parent)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        return os.stat(path.name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    finally:
        os.close(dfd)
