"""One update at a time, with a trailing run: no request is lost, no two updates overlap.

A request that arrives while an update runs is *parked* (merged with any other parked request,
each message once) and the running caller runs one trailing update with everything parked before
it returns. A failed update leaves its parked messages for the next request. This is the only
threading in session memory; the manager supplies what one update does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from langchain_core.messages import BaseMessage

__all__ = ["SerialUpdates", "merge_messages"]

R = TypeVar("R")


def merge_messages(pending: list[BaseMessage] | None, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Parked messages plus a new request's, each message once, in first-seen order."""
    if pending is None:
        return list(messages)
    seen = {id(m) for m in pending} | {m.id for m in pending if m.id is not None}
    out = list(pending)
    for m in messages:
        if id(m) in seen or (m.id is not None and m.id in seen):
            continue
        out.append(m)
    return out


class SerialUpdates(Generic[R]):
    """Runs ``update(batch, token_count)`` sequentially; see the module docstring."""

    def __init__(self, update: Callable[[list[BaseMessage], int | None], R]) -> None:
        self._update = update
        self._cond = threading.Condition()
        self._running = False
        self._pending: list[BaseMessage] | None = None
        self._scheduled = 0

    def run(self, messages: Sequence[BaseMessage], token_count: int | None, *, scheduled: bool = False) -> R | None:
        """Run an update now, or park ``messages`` and return ``None`` when one is running."""
        with self._cond:
            if scheduled:
                self._scheduled -= 1
            if self._running:
                self._pending = merge_messages(self._pending, messages)
                return None
            self._running = True
            batch = merge_messages(self._pending, messages) if self._pending is not None else list(messages)
            self._pending = None  # left over from a failed update: folded into this one
        try:
            result = self._update(batch, token_count)
            while True:
                with self._cond:
                    pending, self._pending = self._pending, None
                    if pending is None:  # stop under the lock, so no request parks after the last look
                        self._running = False
                        self._cond.notify_all()
                        return result
                result = self._update(pending, None)
        except BaseException:
            with self._cond:
                self._running = False
                self._cond.notify_all()
            raise

    def start(self, messages: Sequence[BaseMessage], token_count: int | None) -> threading.Thread | None:
        """Run an update on a daemon thread (returned), or park ``messages`` when one is running."""
        snapshot = list(messages)
        with self._cond:
            if self._running:  # park without a thread; the running update's trailing run takes it
                self._pending = merge_messages(self._pending, snapshot)
                return None
            self._scheduled += 1
        thread = threading.Thread(target=self.run, args=(snapshot, token_count), kwargs={"scheduled": True},
                                  name="session-memory-update", daemon=True)
        thread.start()
        return thread

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until no update is running or scheduled (or ``timeout`` passed); True when idle."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._running or self._scheduled > 0:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True
