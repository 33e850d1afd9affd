"""A total deadline per model call, a stream included.

The OpenAI client's ``timeout`` bounds each *read*: a model that keeps streaming never trips
it, so one call ran 423 s against a 240 s setting. These httpx transports give every request
its own deadline (``agent.request_timeout_seconds`` from the moment it is sent): a read never
waits past it, and a stream that is still running when it passes is closed and raises
:class:`CallDeadlineExceeded`. That error is not retried: the same request would run as long again;
its message names the two settings that help.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator

import httpx


class CallDeadlineExceeded(httpx.ReadTimeout):
    """The whole call took longer than ``agent.request_timeout_seconds``."""

    total_deadline_exceeded = True  # how the engine's classifier recognises it without importing agent/


def _limit(request: httpx.Request, deadline: float) -> None:
    """No single wait of this request may run past the deadline."""
    remaining = max(0.001, deadline - time.monotonic())
    timeout = dict(request.extensions.get("timeout") or {})
    for key in ("connect", "read", "write", "pool"):
        value = timeout.get(key)
        timeout[key] = remaining if value is None else min(value, remaining)
    request.extensions["timeout"] = timeout


def _expired(request: httpx.Request, seconds: float) -> CallDeadlineExceeded:
    return CallDeadlineExceeded(
        f"the call ran past agent.request_timeout_seconds ({seconds:g} s) and was stopped; raise it, "
        "or lower agent.max_output_tokens", request=request)


class _Stream(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, request: httpx.Request, deadline: float, seconds: float):
        self.inner, self.request, self.deadline, self.seconds = inner, request, deadline, seconds

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.inner:
            if time.monotonic() > self.deadline:
                self.inner.close()
                raise _expired(self.request, self.seconds)
            yield chunk

    def close(self) -> None:
        self.inner.close()


class _AsyncStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, request: httpx.Request, deadline: float, seconds: float):
        self.inner, self.request, self.deadline, self.seconds = inner, request, deadline, seconds

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            if time.monotonic() > self.deadline:
                await self.inner.aclose()
                raise _expired(self.request, self.seconds)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class DeadlineTransport(httpx.BaseTransport):
    """Wraps a transport so each request ends by its deadline."""

    def __init__(self, inner: httpx.BaseTransport, seconds: float) -> None:
        self.inner, self.seconds = inner, seconds

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        deadline = time.monotonic() + self.seconds
        _limit(request, deadline)
        response = self.inner.handle_request(request)
        assert isinstance(response.stream, httpx.SyncByteStream)
        response.stream = _Stream(response.stream, request, deadline, self.seconds)
        return response

    def close(self) -> None:
        self.inner.close()


class AsyncDeadlineTransport(httpx.AsyncBaseTransport):
    """The asyncio twin of :class:`DeadlineTransport` (LangChain's ``ainvoke``/``astream``)."""

    def __init__(self, inner: httpx.AsyncBaseTransport, seconds: float) -> None:
        self.inner, self.seconds = inner, seconds

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        deadline = time.monotonic() + self.seconds
        _limit(request, deadline)
        response = await self.inner.handle_async_request(request)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _AsyncStream(response.stream, request, deadline, self.seconds)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def deadline_clients(seconds: float) -> tuple[httpx.Client, httpx.AsyncClient]:
    """Sync and async clients (proxies from the environment kept) whose every request ends by ``seconds``."""
    sync = httpx.Client(timeout=seconds, follow_redirects=True)
    sync._transport = DeadlineTransport(sync._transport, seconds)  # keeps trust_env proxy mounts below
    sync._mounts = {k: (DeadlineTransport(v, seconds) if v is not None else v) for k, v in sync._mounts.items()}
    asyn = httpx.AsyncClient(timeout=seconds, follow_redirects=True)
    asyn._transport = AsyncDeadlineTransport(asyn._transport, seconds)
    asyn._mounts = {k: (AsyncDeadlineTransport(v, seconds) if v is not None else v) for k, v in asyn._mounts.items()}
    return sync, asyn
