"""Read a session's files ahead while its libraries import (``run``'s and the REPL's first seconds).

Under one GIL nothing that needs the interpreter overlaps the imports of the warm-up thread
(:mod:`mtagent.cli.warmup`); waiting for a disk does. So, once the imports are under way, the main
thread asks the kernel for the files the session is about to read — the configs and trust
decisions, the tail of the transcript it continues (and that transcript's boundary index), the
project's context files and rules, the memory indexes — and the kernel reads them into the page
cache while Python imports (``posix_fadvise(WILLNEED)``, or a bounded read where that is missing).
Nothing read here is used: the loaders read the files as always, now from memory, so nothing is
parsed twice and nothing can be stale.

Nothing here imports a library: a second thread importing modules of the same tree beside the
warm-up can be handed a half-initialized module. And every file is opened as an untrusted
project's file is: never through a symbolic link (``O_NOFOLLOW``; a link's target is for the
confined reader to judge), never blocking (a FIFO named ``CONTEXT.md`` cannot hang the start),
regular files only, a bounded number of them, and only a transcript's last :data:`TAIL_BYTES`.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from mtagent import paths

TAIL_BYTES = 16 * 1024 * 1024  # resume reads from the last boundary; a long tail is rarer than this
MAX_FILES = 256
MAX_MODULE_FILES = 4096  # the agent stack loads about 1,500 modules
MODULES_FILE = "startup-modules.txt"  # in $MTAGENT_HOME/cache: what the last session open imported
_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NOCTTY", 0)


def session_files(root: Path, *, resume: str | None = None, latest: bool = False) -> list[Path]:
    """The files a session of ``root`` reads as it opens (those that exist; links are left out).

    ``resume``: the id (or a prefix of it, or ``latest``) of the session to continue; ``latest``:
    ``--continue``. Only the files backend's transcripts are known here (PostgreSQL's are not files).
    """
    files = [paths.global_config_path(), paths.trust_store_path(), paths.project_config_path(root),
             paths.global_context_path()]
    files += [root / name for name in (*paths.PROJECT_CONTEXT_FILES, paths.LOCAL_CONTEXT_FILE)]
    files += _walk(root / paths.RULES_DIR)
    memory = paths.project_memory_dir(root)
    files += _walk(memory, depth=1) + _walk(paths.mtagent_home() / "memory", depth=0)
    transcript = _transcript(paths.history_dir(root), resume, latest)
    if transcript is not None:
        files += [transcript, transcript.with_suffix(".idx")]
    return files[:MAX_FILES]


def _walk(folder: Path, depth: int = 8) -> list[Path]:
    """Regular files under ``folder``, links not followed, at most :data:`MAX_FILES`."""
    found: list[Path] = []
    pending = [(folder, 0)]
    while pending and len(found) < MAX_FILES:
        here, level = pending.pop()
        try:
            with os.scandir(here) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        if level < depth:
                            pending.append((Path(entry.path), level + 1))
                    elif entry.is_file(follow_symlinks=False):
                        found.append(Path(entry.path))
        except OSError:
            continue
    return found[:MAX_FILES]


def _transcript(history: Path, resume: str | None, latest: bool) -> Path | None:
    """The transcript ``--resume``/``--continue`` names (ids sort by creation time, as the store's do)."""
    if resume is None and not latest:
        return None
    prefix = "" if resume in (None, "latest") else resume
    try:
        with os.scandir(history) as entries:
            names = [e.name for e in entries
                     if e.name.endswith(".jsonl") and e.name.startswith(prefix) and e.is_file(follow_symlinks=False)]
    except OSError:
        return None
    return history / max(names) if names else None


def module_files() -> list[Path]:
    """The bytecode and extension files the last session open imported (written by
    :func:`remember_modules`): read ahead, the warm-up thread finds them in memory on a cold start."""
    try:
        text = paths.cache_path(MODULES_FILE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    return [Path(line) for line in text.splitlines()[:MAX_MODULE_FILES] if line.startswith("/")]


def remember_modules() -> None:
    """Write what this process imported (once the session is open) for the next start's read-ahead;
    nothing when the list is unchanged or the home is read-only."""
    found = {str(f) for m in list(sys.modules.values())
             if isinstance(f := getattr(m, "__cached__", None) or getattr(m, "__file__", None), str)
             and os.path.isabs(f) and not f.endswith(".py")}
    data = ("\n".join(sorted(found)[:MAX_MODULE_FILES]) + "\n").encode("utf-8")
    target = paths.cache_path(MODULES_FILE)
    try:
        if target.read_bytes() == data:
            return
    except OSError:
        pass  # not written yet
    paths.write_cache(target, data)


def read_ahead(files: list[Path], *, tail_bytes: int = TAIL_BYTES, limit: int = MAX_FILES) -> int:
    """Ask the kernel to read ``files`` (the last ``tail_bytes`` of each, at most ``limit`` files) into
    the page cache; the number of files asked for. Errors are ignored: the loaders will meet them."""
    asked = 0
    for path in files[:limit]:
        try:
            fd = os.open(path, _FLAGS)
        except OSError:
            continue
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1 or info.st_size == 0:
                continue  # /proc's files say size 0: nothing to read ahead there, ever
            start = max(0, info.st_size - tail_bytes)
            if hasattr(os, "posix_fadvise"):
                os.posix_fadvise(fd, start, info.st_size - start, os.POSIX_FADV_WILLNEED)
            else:  # pragma: no cover — macOS, Windows: read it (bounded), the cache keeps it
                os.lseek(fd, start, os.SEEK_SET)
                while os.read(fd, 1 << 20):
                    pass
            asked += 1
        except OSError:
            continue
        finally:
            os.close(fd)
    return asked
