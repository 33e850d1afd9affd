"""One MCP server's life on the session's event loop: start, list tools, call, crash, restart, stop.

The SDK's ``Client`` is an async context manager whose enter and exit must run in one task, so a
*holder* task per server enters it, publishes the connection, and waits for a stop signal; calls
run from other tasks on the same loop. Every wait is bounded — the start by
``start_timeout_seconds``, a call by ``call_timeout_seconds`` — and every failure is turned into a
:class:`McpServerError` whose message says what happened and what comes next, with the state and
a one-line note kept for ``/mcp`` and ``/context``. A server that crashed, hung or timed out is
stopped (its whole process group: the SDK starts it in a new session) and started again by the
next call of one of its tools. While it runs, a change of its tools (``tools/list_changed``) is
re-listed through :mod:`.changes`, and its resources are listed and read on request (:mod:`.resources`).
How the server is reached (its process or endpoint, its stderr) is :mod:`.transport`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp import MCPError
from mcp_types import CONNECTION_CLOSED
from pydantic import ValidationError

from mtagent.config import McpSettings
from mtagent.tools.mcp.changes import ChangeWatcher
from mtagent.tools.mcp.errors import McpServerError
from mtagent.tools.mcp.specs import ServerSpec
from mtagent.tools.mcp.transport import StderrLog, sdk_client
from mtagent.tools.mcp.untrusted import clean_schema, clean_text

MAX_LIST_PAGES = 50  # tools/list pages followed, at most (a paginator that never ends cannot hang a start)
STOP_SECONDS = 10.0  # the SDK's own shutdown (stdin close, SIGTERM, SIGKILL) takes at most ~6 s
# The SDK logs each unparsable stdout line at ERROR; without a handler Python would print it (with a
# traceback) on the user's terminal. The failure reaches the user as the server's state instead.
logging.getLogger("mcp").addHandler(logging.NullHandler())
logging.getLogger("mcp").propagate = False


@dataclass(slots=True)
class ListedTool:
    """A tool as the server listed it, already cleaned (untrusted text cut, schema checked)."""

    name: str
    description: str
    schema: dict[str, Any]
    note: str = ""


async def list_tools(client: Any, config: McpSettings, cache_mode: str = "use") -> list[ListedTool]:
    """The server's tools, cleaned, at most ``mcp.max_tools_per_server`` (pages up to :data:`MAX_LIST_PAGES`)."""
    listed: list[ListedTool] = []
    cursor = None
    for _ in range(MAX_LIST_PAGES):
        page = await client.list_tools(cursor=cursor, cache_mode=cache_mode)
        for tool in page.tools:
            if len(listed) >= config.max_tools_per_server:
                return listed
            schema, note = clean_schema(tool.input_schema, description_limit=config.description_max_chars,
                                        max_chars=config.schema_max_chars)
            listed.append(ListedTool(clean_text(tool.name, 200),
                                     clean_text(tool.description or "", config.description_max_chars),
                                     schema, note))
        cursor = page.next_cursor
        if not cursor:
            break
    return listed


@dataclass
class ServerConnection:
    """One server's connection: started (again) on demand, held by one task, asked bounded requests, stopped."""

    spec: ServerSpec
    config: McpSettings
    state: str = "not started"
    note: str = ""
    tools: list[ListedTool] = field(default_factory=list)
    instructions: str = ""
    starts: int = 0
    on_tools_changed: Callable[[ServerConnection], None] | None = None  # after a re-list (on the loop)
    watcher: ChangeWatcher | None = None
    has_resources: bool = False  # the server offers resources (known once it started: :func:`_offers_resources`)
    _client: Any = None
    _holder: asyncio.Task[None] | None = None
    _all_holders: set[asyncio.Task[None]] = field(default_factory=set)  # also those still stopping
    _stop: asyncio.Event | None = None
    _lock: asyncio.Lock | None = None
    _stderr: StderrLog = field(default_factory=StderrLog)

    @property
    def status(self) -> tuple[str, str]:
        """(state, note) as ``/mcp`` shows it: a server that exited while idle shows ``failed`` as soon
        as its closed pipe is seen, not only once the next call finds out (and starts it again)."""
        if self.state == "ready" and _closed(self._client):
            return "failed", "exited while idle; the next call starts it again"
        return self.state, self.note

    @property
    def start_timeout(self) -> float:
        return (self.spec.settings and self.spec.settings.start_timeout_seconds) or self.config.start_timeout_seconds

    @property
    def call_timeout(self) -> float:
        return (self.spec.settings and self.spec.settings.call_timeout_seconds) or self.config.call_timeout_seconds

    # start -------------------------------------------------------------------------------
    async def ensure_started(self) -> None:
        """Connected and tools listed, or :class:`McpServerError` (state ``failed`` and a note)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self.state == "ready" and self._holder is not None and not self._holder.done():
                return
            await self._stop_holder()
            await self._start()

    async def _start(self) -> None:
        self.state, self.note = "starting", ""
        self.starts += 1
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        ready.add_done_callback(lambda f: f.cancelled() or f.exception())  # a late failure is not "unretrieved"
        self._stop = asyncio.Event()
        self._holder = asyncio.create_task(self._hold(self._stop, ready), name=f"mcp:{self.spec.name}")
        self._all_holders.add(self._holder)
        self._holder.add_done_callback(self._all_holders.discard)
        try:
            await asyncio.wait_for(asyncio.shield(ready), self.start_timeout)
        except TimeoutError:
            await self._stop_holder()
            raise self._fail(f"did not start within {self.start_timeout:g} s") from None
        except asyncio.CancelledError:
            await self._stop_holder()
            raise
        except Exception as exc:
            await self._stop_holder()
            where = f" at {clean_text(self.spec.endpoint, 200)}" if self.spec.endpoint else ""  # which one is down
            raise self._fail(f"could not start{where}: {_describe(exc)}") from exc
        self.state = "ready"

    async def _hold(self, stop: asyncio.Event, ready: asyncio.Future[None]) -> None:
        try:
            watcher = ChangeWatcher(self._relist)
            async with sdk_client(self.spec, self._stderr.open(), watcher.on_message) as client:
                listed = await list_tools(client, self.config)
                self.instructions = clean_text(client.instructions or "", self.config.instructions_max_chars)
                self.tools = listed
                self.has_resources = await _offers_resources(client)
                self._client = client
                self.watcher = watcher
                watcher.start(client, listen=_announces_tool_changes(client))
                if not ready.done():
                    ready.set_result(None)
                try:
                    await stop.wait()
                finally:
                    await watcher.stop()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else McpServerError("start was cancelled"))
            elif self.state == "ready" and not stop.is_set():
                self.state, self.note = "failed", f"connection ended: {_describe(exc)}"
            if not isinstance(exc, Exception):
                raise
        finally:
            self._client = None

    async def _relist(self) -> None:
        """The server said its tools changed: list them again (cleaned and capped as at start)."""
        client = self._client
        if client is None:
            return
        self.tools = await asyncio.wait_for(list_tools(client, self.config, cache_mode="refresh"), self.call_timeout)
        if self.on_tools_changed is not None:
            self.on_tools_changed(self)

    def _fail(self, what: str) -> McpServerError:
        tail = self._stderr.tail()
        self.state = "failed"
        self.note = what + (f" (stderr: {tail})" if tail else "")
        return McpServerError(f"MCP server '{self.spec.name}' {self.note}")

    # call --------------------------------------------------------------------------------
    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """The ``CallToolResult`` of one call, restarting the server first when it is down."""
        client = await self._ready_client()
        result = await self._guarded(client.call_tool(tool, arguments))
        if self.watcher is not None:  # the call changed the server's tools: list them before answering
            await self.watcher.settle()
        return result

    async def list_resources(self) -> tuple[list[Any], list[Any]]:
        """The server's resources and resource templates (pages followed up to :data:`MAX_LIST_PAGES`)."""
        client = await self._ready_client()
        resources: list[Any] = []
        templates: list[Any] = []
        for items, method, attr in ((resources, client.list_resources, "resources"),
                                    (templates, client.list_resource_templates, "resource_templates")):
            cursor = None
            for _ in range(MAX_LIST_PAGES):
                try:
                    page = await self._guarded(method(cursor=cursor))
                except McpServerError:
                    if attr == "resource_templates":  # optional: a server without templates may refuse the method
                        break
                    raise
                items.extend(getattr(page, attr, None) or [])
                cursor = page.next_cursor
                if not cursor or len(items) >= self.config.max_tools_per_server:
                    break
        return resources, templates

    async def read_resource(self, uri: str) -> Any:
        """The ``ReadResourceResult`` for ``uri`` (the server decides what it serves)."""
        client = await self._ready_client()
        return await self._guarded(client.read_resource(uri))

    async def _ready_client(self) -> Any:
        await self.ensure_started()
        if _closed(self._client):  # it died while idle: the request was never sent, so start it again first
            self.state, self.note = "failed", "connection ended while idle"
            await self.ensure_started()
        client = self._client
        if client is None:
            raise self._fail("closed its connection before the call")
        return client

    async def _guarded(self, request: Any) -> Any:
        """One request to the server, bounded by the call timeout; every failure a clear error."""
        try:
            return await asyncio.wait_for(request, self.call_timeout)
        except TimeoutError:
            await self._stop_holder()
            raise self._fail(f"did not answer within {self.call_timeout:g} s; it was stopped and will be "
                             "started again on the next call") from None
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED or self._holder is None or self._holder.done():
                await self._stop_holder()
                raise self._fail("stopped during the call; it will be started again on the next call") from exc
            raise McpServerError(f"MCP server '{self.spec.name}' answered with an error: "
                                 f"{clean_text(exc.message, 2_000)}") from exc
        except ValidationError as exc:
            raise McpServerError(f"MCP server '{self.spec.name}' sent a result that is not valid MCP "
                                 f"({exc.error_count()} problems); try again or report it to the server's "
                                 "authors") from exc
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError) as exc:
            await self._stop_holder()
            raise self._fail(f"lost its connection ({_describe(exc)}); it will be started again on the next "
                             "call") from exc

    # stop --------------------------------------------------------------------------------
    async def _stop_holder(self) -> None:
        holder, self._holder = self._holder, None
        if holder is None:
            return
        if self._stop is not None:
            self._stop.set()
        if self._client is None:  # still starting (a hung handshake): nothing to wind down politely
            holder.cancel()
        try:
            await asyncio.wait_for(asyncio.shield(holder), STOP_SECONDS)
        except (TimeoutError, asyncio.CancelledError):
            holder.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(holder, 5)
        except Exception:  # noqa: S110 - the holder recorded its own failure
            pass

    async def close(self) -> None:
        await self._stop_holder()
        if self._all_holders:  # one being stopped elsewhere (a start cut short by Ctrl-C): wait for its end
            await asyncio.wait(set(self._all_holders), timeout=STOP_SECONDS)
        if self.state != "failed" and self.starts:
            self.state = "stopped"
        self._stderr.close()


def _closed(client: Any) -> bool:
    """The connection is known to be closed (the server exited while idle). Reads the SDK's
    dispatcher state; an SDK without it answers False and the call reports the closed connection."""
    session = getattr(client, "_session", None)
    return bool(getattr(getattr(session, "_dispatcher", None), "_closed", False))


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return _describe(exc.exceptions[0]) if exc.exceptions else type(exc).__name__
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {clean_text(exc.filename or exc, 200)}"
    if isinstance(exc, MCPError):
        return clean_text(exc.message, 300)
    text = clean_text(str(exc), 300)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def _offers_resources(client: Any) -> bool:
    """The server declared ``resources`` *and* lists at least one resource or template (the SDK's
    servers declare the capability even with nothing to offer: no resource tools for those)."""
    if getattr(getattr(client, "server_capabilities", None), "resources", None) is None:
        return False
    for method, attr in ((client.list_resources, "resources"), (client.list_resource_templates, "resource_templates")):
        try:
            if getattr(await method(), attr, None):
                return True
        except (MCPError, ValidationError):
            continue
    return False


def _announces_tool_changes(client: Any) -> bool:
    """The server declared ``tools.listChanged`` and speaks the era whose changes come by ``listen``."""
    caps = getattr(client, "server_capabilities", None)
    tools = getattr(caps, "tools", None)
    modern = str(getattr(client, "protocol_version", "") or "") >= "2026-07-28"
    return bool(getattr(tools, "list_changed", False)) and modern
