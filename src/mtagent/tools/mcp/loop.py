"""A session's own asyncio loop in a background thread, so the sync agent can use the async MCP SDK.

The agent loop (LangGraph) is synchronous; the MCP SDK is async and keeps long-lived tasks per
server (pipe readers, the JSON-RPC dispatcher). One daemon thread per session runs an event loop
for them; the agent hands it coroutines and waits for the answer with a bound. Ctrl-C while
waiting cancels the coroutine (the SDK then tells the server the request was cancelled) and
propagates, so the turn is interrupted the usual way.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """One event loop in one daemon thread; :meth:`run` is safe to call from any other thread."""

    def __init__(self, name: str = "mtagent-mcp") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            self.loop.close()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and not self.loop.is_closed()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """The coroutine's result; ``TimeoutError`` after ``timeout`` seconds (the coroutine is cancelled)."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("LoopThread.run called from its own loop; await the coroutine instead")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"no answer within {timeout:g} s") from None
        except BaseException:
            future.cancel()  # Ctrl-C: stop the work on the loop too
            raise

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the loop and wait for the thread (tasks still pending are abandoned with it)."""
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout)
