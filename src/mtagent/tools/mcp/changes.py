"""A server's "my tools changed" signal, coalesced into a bounded number of re-lists.

A server that declares ``tools.listChanged`` may add or remove tools while it runs. It says so in
one of two ways, by protocol era: a ``notifications/tools/list_changed`` notification (handshake
era, seen by the client's message handler) or a ``tools_list_changed`` event on a
``subscriptions/listen`` stream the client opened (2026-07-28). Both only *mark* the list stale;
one task per connection re-lists after a short quiet period, and never more often than once per
:data:`MIN_INTERVAL_SECONDS` — so a server that floods a thousand notifications costs a handful of
re-lists, not a thousand. The re-listed tools go through the same cleaning as at start (the
caller's ``relist``), and the caller decides what is new.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio.lowlevel

DEBOUNCE_SECONDS = 0.05  # notifications arriving this close together become one re-list
MIN_INTERVAL_SECONDS = 0.5  # at most one re-list per interval, however fast a server signals
SETTLE_SECONDS = 5.0  # a call whose server signalled a change waits this long, at most, for the re-list
_log = logging.getLogger(__name__)


class ChangeWatcher:
    """Marks a server's tool list stale and re-lists it, coalesced (see the module docstring).

    ``relist()`` re-lists and hands the result on; it runs on the session's loop, one at a time.
    """

    def __init__(self, relist: Callable[[], Awaitable[None]]) -> None:
        self._relist = relist
        self._stale = asyncio.Event()
        self._settled = asyncio.Event()
        self._settled.set()
        self._tasks: list[asyncio.Task[None]] = []
        self.relists = 0  # how many re-lists ran (a flood test reads it)
        self.signals = 0  # how many change signals arrived

    def mark(self) -> None:
        """The server said its tools changed (cheap: called once per notification)."""
        self.signals += 1
        self._settled.clear()
        self._stale.set()

    async def on_message(self, message: Any) -> None:
        """The SDK's message handler: a handshake-era ``notifications/tools/list_changed`` marks the list stale."""
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            self.mark()
        await anyio.lowlevel.checkpoint()

    @property
    def pending(self) -> bool:
        return not self._settled.is_set()

    def start(self, client: Any, listen: bool) -> None:
        """Run the re-list task, and with ``listen`` a ``subscriptions/listen`` stream for tool changes."""
        self._tasks.append(asyncio.create_task(self._relister(), name="mcp-relist"))
        if listen:
            self._tasks.append(asyncio.create_task(self._listen(client), name="mcp-listen"))

    async def settle(self, timeout: float = SETTLE_SECONDS) -> None:
        """Wait (bounded) until a change already signalled has been re-listed."""
        if self.pending and self._tasks:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._settled.wait(), timeout)

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        self._settled.set()

    async def _relister(self) -> None:
        loop = asyncio.get_running_loop()
        last = -MIN_INTERVAL_SECONDS
        while True:
            await self._stale.wait()
            await asyncio.sleep(max(DEBOUNCE_SECONDS, last + MIN_INTERVAL_SECONDS - loop.time()))
            self._stale.clear()
            last = loop.time()
            self.relists += 1
            try:
                await self._relist()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the server's problem; the tools it had stay, the next signal retries
                _log.debug("re-listing tools failed: %s", exc)
            if not self._stale.is_set():
                self._settled.set()

    async def _listen(self, client: Any) -> None:
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    self.mark()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # an older server or a dropped stream: the message handler still hears
            _log.debug("subscriptions/listen ended: %s", exc)
