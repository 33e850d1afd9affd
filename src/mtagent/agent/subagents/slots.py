"""``subagents.max_parallel`` bounds the whole tree, not each session.

The root session's runner makes one :class:`TreeSlots`; every child's runner shares it. A child
holds a slot while it works (:meth:`TreeSlots.held`); while it waits for its own children it
lends the slot back (:meth:`TreeSlots.lent`) — a waiting child does no work, and keeping its
slot would deadlock a tree deeper than ``max_parallel``. So at most ``max_parallel`` children of
the whole tree work at once, however deep it is.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from mtagent.agent.subagents.child import SubagentCancelled

SLOT_WAIT_SLICE_SECONDS = 0.1


class TreeSlots:
    """A counter of working children whose waits give up when the caller is cancelled (Ctrl-C)."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self.busy = 0
        self._changed = threading.Condition()

    def _take(self, cancelled: Callable[[], bool], *, must: bool) -> None:
        """Take a slot; on cancel raise — or, when ``must`` (a child returning to work it will
        stop at once), take it anyway so every exit gives back exactly one."""
        with self._changed:
            while self.busy >= self.size:
                self._changed.wait(SLOT_WAIT_SLICE_SECONDS)
                if cancelled():
                    if must:
                        break
                    raise SubagentCancelled("the parent session was interrupted before this subagent could start")
            self.busy += 1

    def _give(self) -> None:
        with self._changed:
            self.busy -= 1
            self._changed.notify_all()

    @contextmanager
    def held(self, cancelled: Callable[[], bool]) -> Iterator[None]:
        """Hold a slot while a child works."""
        self._take(cancelled, must=False)
        try:
            yield
        finally:
            self._give()

    @contextmanager
    def lent(self, cancelled: Callable[[], bool]) -> Iterator[None]:
        """Give the held slot back while waiting; take one again before working on."""
        self._give()
        try:
            yield
        finally:
            self._take(cancelled, must=True)
