"""Where a unit's session runs: a *lane*, a path that does not depend on ``--scratch``.

The model is shown its working directory (the system prompt's runtime section, the session
context), so the workspace path is part of every request: a longer ``--scratch`` path made every
request a few tokens longer, which moved compactions and changed the figures — identical results
needed scratch paths of equal length. A unit therefore runs in
``<temp dir>/mtagent-eval-<uid>/<lane>/<slot>/<unit>``, where ``<lane>`` is one digit (0–9, one
token whichever it is) held with a file lock for the unit's duration, so parallel workers — and
two evaluations at once — never share a workspace. When the unit is done its workspace is moved
to ``<scratch>/<slot>/<unit>`` as before, for reading.

The lanes' folder is the user's own (mode 0700); one that is a symbolic link or belongs to
someone else is refused, since another local user could otherwise plant files where the agent
runs its commands.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from mtagent.errors import UsageError

LANES = 10
LANES_ENV = "MTAGENT_EVAL_LANES"  # another folder for the lanes (tests; a machine whose temp dir is shared)


def lanes_root() -> Path:
    """The user's lanes folder, made private on first use."""
    configured = os.environ.get(LANES_ENV)
    root = Path(configured) if configured else Path(tempfile.gettempdir()) / f"mtagent-eval-{os.getuid()}"
    try:
        root.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(root)
    except OSError as exc:
        raise UsageError(f"cannot make the evaluation lanes folder {root}: {exc.strerror or exc}; set {LANES_ENV} "
                         "to a folder of yours") from None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise UsageError(f"{root} is not a folder of yours (a link, or someone else's): evaluation will not run "
                         f"there; remove it or set {LANES_ENV} to a folder of yours")
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(root, 0o700)
    return root


@contextlib.contextmanager
def lane() -> Iterator[Path]:
    """A free lane folder (``<root>/<digit>``), held until the block ends; waits when all are busy."""
    root = lanes_root()
    handles = []
    try:
        for number in range(LANES):
            fh = open(root / f"{number}.lock", "a+")  # noqa: SIM115 — held for the block
            handles.append(fh)
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            yield root / str(number)
            return
        fcntl.flock(handles[0], fcntl.LOCK_EX)  # every lane busy: wait for the first
        yield root / "0"
    finally:
        for fh in handles:
            fh.close()
