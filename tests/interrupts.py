"""Ctrl-C in tests that does not depend on how pytest was started.

A non-interactive shell starts a background job (``bash -c 'python -m pytest … & wait'``) with
SIGINT set to "ignore", and that disposition is inherited by pytest and by every child it starts:
``_thread.interrupt_main()`` then does nothing and a child's Ctrl-C is lost. Tests that press
Ctrl-C set the handler they need: :func:`sigint_delivered` in the test process,
:func:`sigint_default_in_child` as the ``preexec_fn`` of the processes they spawn.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

DEADLINE = 60.0  # seconds: generous for a loaded 2-core box; a passing wait returns at once


def sigint_default_in_child() -> None:
    """``preexec_fn`` of a spawned child: SIGINT back to its default (Python then installs its
    own KeyboardInterrupt handler at start-up, as in a terminal)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def sigint_delivered() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt in this process for the test, whatever pytest inherited."""
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)


def wait_for(condition: Callable[[], object], what: str, *, timeout: float = DEADLINE,
             poll: float = 0.02) -> None:
    """Wait until ``condition()`` is true; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:.0f} s for {what}")
        time.sleep(poll)


def alive(pid: int) -> bool:
    """True while ``pid`` runs. A zombie (exited, not yet reaped — a killed child re-parented to an
    init that reaps late) counts as gone: it runs nothing, only its exit status is left."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def live_descendants(root: int) -> set[int]:
    """Processes descending from ``root`` that are still alive (zombies are dead: left out). Linux."""
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_bytes()
                fields = stat[stat.rindex(b")") + 2:].split()
                if fields[0] != b"Z":
                    parents[int(name)] = int(fields[1])
            except (OSError, ValueError, IndexError):
                continue
    found: set[int] = set()
    grew = True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if pid not in found and (parent == root or parent in found):
                found.add(pid)
                grew = True
    return found
