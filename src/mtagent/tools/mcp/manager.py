"""A session's MCP servers: started together on first need, called from the sync agent, stopped at close.

:class:`McpManager` is what a session opener holds. It is the ``ToolSource`` the catalog's
opener (``context/opener/catalog.py``) takes: the tools (``mcp__<server>__<tool>``, source
``mcp:<server>``), each server's instructions (quoted as the server's words) and each server's
state. No thread, loop or process exists until something asks for the tools or a call; then
every startable server starts *in parallel*, each bounded by its start timeout, and a server that
fails is a state and a note, not an exception. :meth:`close` stops every server (their process
groups) and the loop; an ``atexit`` hook does the same if the session is never closed.

Tools a server adds later reach :class:`ServerTools`' listeners (the opener puts them in the catalog);
servers that offer resources add the ``mcp_list_resources`` / ``mcp_read_resource`` tools.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import threading
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool

from mtagent.config import McpSettings, Settings
from mtagent.events import EventBus, EventType
from mtagent.tools.mcp.adapter import McpTool
from mtagent.tools.mcp.errors import McpServerError
from mtagent.tools.mcp.resources import resource_tools
from mtagent.tools.mcp.specs import ServerSpec, discover_servers
from mtagent.tools.mcp.untrusted import clean_text, quoted_instructions, tool_name

CLOSE_SECONDS = 15.0  # stopping every server: the SDK's stdin close + SIGTERM + SIGKILL steps, bounded
SAFETY_SECONDS = 15.0  # added to a server's own bound when the agent thread waits for the loop


@dataclass(frozen=True, slots=True)
class McpServerStatus:
    """One server as ``/mcp``, ``mtagent mcp list`` and ``/context`` show it."""

    name: str
    source: str  # "user config" | "project config" | ".mcp.json"
    trusted: bool
    transport: str  # "stdio" | "http"
    state: str  # "not started" | "starting" | "ready" | "failed" | "stopped" | "untrusted" | "disabled" | "invalid"
    note: str
    tool_count: int
    command: str  # what runs, or where it connects
    instructions: str  # the server's instructions, cleaned and cut ("" when none)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source, "trusted": self.trusted, "transport": self.transport,
                "state": self.state, "note": self.note, "tools": self.tool_count, "command": self.command,
                "instructions_chars": len(self.instructions)}


class McpManager:
    """See the module docstring. Build with :meth:`for_project`."""

    def __init__(self, specs: list[ServerSpec], config: McpSettings, notes: list[str] | None = None,
                 events: EventBus | None = None) -> None:
        self.specs = specs
        self.config = config
        self.notes = list(notes or [])
        self._connections: dict[str, Any] = {}
        self._loop_box: list[Any] = []  # the LoopThread, once one runs (shared with the finalizer)
        self.offered = ServerTools(self, config, self.notes)
        self._lock = threading.Lock()
        self._closed = False
        self._missing = ""  # why no server can start at all (the SDK is not installed)
        self.events = events  # a session's bus: told of each server a bounded start went on without
        self.ready_wait = config.ready_wait_seconds if events is not None else None  # None: wait for every server
        self._starting: concurrent.futures.Future[None] | None = None  # a bounded start still going on
        # a session never closed (a crash, a forgotten close) still stops its servers at exit
        self._finalizer = weakref.finalize(self, _close_quietly, self._connections, self._loop_box)

    @classmethod
    def for_project(cls, settings: Settings, project_root: str | os.PathLike[str],
                    events: EventBus | None = None) -> McpManager:
        """The project's servers. With a session's ``events``: its first request waits at most
        ``mcp.ready_wait_seconds`` for them, and each server it went on without is told there
        (``EventType.MCP_SERVER``) for the front end."""
        root = Path(project_root).resolve()
        specs, notes = discover_servers(settings, root)
        return cls(specs, settings.mcp, notes, events)

    @property
    def startable(self) -> list[ServerSpec]:
        return [s for s in self.specs if s.startable]

    # starting ----------------------------------------------------------------------------
    def _ensure_loop(self) -> Any:
        if self._closed:
            raise McpServerError("the session's MCP servers were shut down with the session")
        if not self._loop_box:
            from mtagent.tools.mcp.loop import LoopThread
            from mtagent.tools.mcp.server import ServerConnection

            for spec in self.startable:
                self._connections[spec.name] = ServerConnection(spec, self.config, on_tools_changed=self._tools_changed)
            self._loop_box.append(LoopThread())
        return self._loop_box[0]

    def start(self) -> None:
        """Start every startable server at once and wait for all (each bounded by its start timeout),
        or, with :attr:`ready_wait` set (a session), at most that long: a server still starting then
        goes on in the background and its tools reach :attr:`offered`'s listeners when it is ready,
        so a slow or hung server never holds the first request. :attr:`events` hears about each
        server that is still starting or failed, and when a late one is ready or fails."""
        with self._lock:
            if self.offered.listed is not None or not self.startable:
                return
            try:
                loop = self._ensure_loop()
            except ImportError as exc:
                self._missing = (f"the MCP SDK is not installed ({exc.name}); install it: "
                                 "pip install 'mtagent[mcp]'")
                self.offered.listed = []
                return
            bound = max(c.start_timeout for c in self._connections.values()) + SAFETY_SECONDS
            connections = list(self._connections.values())
            try:
                if self.ready_wait is None:
                    loop.run(_start_all(connections), bound)
                else:
                    started = asyncio.run_coroutine_threadsafe(_start_all(connections, self._started_late),
                                                               loop.loop)
                    self._starting = started
                    try:
                        started.result(min(self.ready_wait, bound))
                    except concurrent.futures.TimeoutError:
                        pass  # the rest start in the background (not cancelled)
            except TimeoutError:
                self.notes.append(f"MCP servers were still starting after {bound:g} s")
            self.offered.start(connections)
            for conn in connections:
                if conn.spec.name in self.offered.pending:
                    self._tell(conn.spec, "starting", "its tools arrive when it is ready")
                elif conn.state == "failed":
                    self._tell(conn.spec, "failed", conn.note)

    def _tell(self, spec: ServerSpec, state: str, note: str) -> None:
        if self.events is not None:
            self.events.emit(EventType.MCP_SERVER, server=clean_text(spec.name, 64), state=state, note=note,
                             transport=spec.transport)

    def _started_late(self, conn: Any) -> None:
        """One server's start ended (on the loop thread); if the session went on without it, its tools
        join now through the late-tools path, or its failure is told."""
        fresh = None if self._closed else self.offered.arrived(conn, late=True)
        if fresh is None:
            return  # start() is still waiting and builds from the fresh state, or it was not late
        if conn.state == "ready":
            self._tell(conn.spec, "ready", f"{len(fresh)} tool{'s' if len(fresh) != 1 else ''} added")
        else:
            self._tell(conn.spec, "failed", conn.note)

    def _tools_changed(self, conn: Any) -> None:
        """A server re-listed its tools (on the loop thread): keep the new ones, hand them on."""
        if not self._closed:
            self.offered.arrived(conn)

    # the seam ----------------------------------------------------------------------------
    def tools(self) -> list[BaseTool]:
        self.start()
        return list(self.offered.listed or [])

    def instructions(self) -> dict[str, str]:
        self.start()
        return {name: quoted_instructions(name, conn.instructions)
                for name, conn in self._connections.items() if conn.instructions}

    def servers(self) -> list[McpServerStatus]:
        return [server_status(spec, self._connections.get(spec.name), self._missing) for spec in self.specs]

    # calling -----------------------------------------------------------------------------
    def call(self, server: str, tool: str, arguments: dict[str, Any]) -> Any:
        """The server's ``CallToolResult``; :class:`McpServerError` with a clear message on any failure."""
        return self._run(server, lambda conn: conn.call(tool, arguments))

    def resource_servers(self) -> list[str]:
        """Servers that offer resources (the capability and something listed at start)."""
        return [name for name, conn in self._connections.items() if conn.has_resources]

    def list_resources(self, server: str) -> tuple[list[Any], list[Any]]:
        """A server's resources and resource templates (``mcp_list_resources``)."""
        return self._run(server, lambda conn: conn.list_resources(), requests=2)

    def read_resource(self, server: str, uri: str) -> Any:
        """A server's ``ReadResourceResult`` for ``uri`` (``mcp_read_resource``); the server decides."""
        return self._run(server, lambda conn: conn.read_resource(uri))

    def _run(self, server: str, work: Callable[[Any], Any], requests: int = 1) -> Any:
        conn = self._connections.get(server)
        if conn is None:
            raise McpServerError(f"MCP server '{server}' is not running in this session")
        loop = self._ensure_loop()
        bound = conn.start_timeout + requests * conn.call_timeout + SAFETY_SECONDS
        with self.offered.during_call():
            try:
                return loop.run(work(conn), bound)
            except TimeoutError as exc:
                raise McpServerError(f"MCP server '{server}' did not answer within {bound:g} s") from exc

    # stopping ----------------------------------------------------------------------------
    def close(self) -> None:
        """Stop every server and the loop; safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._finalizer.detach()
            if self._starting is not None:  # a server still starting in the background: stop waiting for it
                self._starting.cancel()
            _close_quietly(self._connections, self._loop_box)

    def __enter__(self) -> McpManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ServerTools:
    """The catalog entries a session's servers bring, ``mcp__<server>__<tool>`` (each calls through the
    manager): those of the servers up when the start returned, then those of a server that was still
    starting or re-listed its tools. Tools that arrive during a call reach :meth:`on_new_tools`
    listeners when it returns (the catalog has them before the call's result is read), else at once."""

    def __init__(self, manager: McpManager, config: McpSettings, notes: list[str]) -> None:
        self.manager = manager
        self.config = config
        self.notes = notes
        self.lock = threading.Lock()  # not the manager's: its start() holds that while the loop runs
        self.listed: list[BaseTool] | None = None  # None until the start returned
        self.pending: set[str] = set()  # servers still starting after a bounded start (their tools come late)
        self._late: list[BaseTool] = []  # tools a server added after start, not yet handed on
        self._listeners: list[Callable[[list[BaseTool]], None]] = []
        self._calls = 0  # calls in flight: tools that arrive during one are handed on when it returns

    def start(self, connections: list[Any]) -> None:
        """The tools of the servers that are up (a re-list arriving now waits, then sees these as known);
        the others' come through :meth:`arrived`."""
        with self.lock:
            self.pending = {c.spec.name for c in connections if c.state not in ("ready", "failed")}
            taken: set[str] = set()
            self.listed = [t for c in connections if c.spec.name not in self.pending for t in self._entries(c, taken)]
            if any(conn.has_resources for conn in connections):
                self.listed += resource_tools(self.manager)

    def arrived(self, conn: Any, *, late: bool = False) -> list[BaseTool] | None:
        """The tools ``conn`` brings that are new (``late``: its start ended after the session went on
        without it; else it re-listed), at most ``mcp.max_tools_per_server`` over its life; None before
        the start returned, or when ``late`` and the server was not."""
        with self.lock:
            if self.listed is None or (late and conn.spec.name not in self.pending):
                return None
            if late:
                self.pending.discard(conn.spec.name)
            fresh: list[BaseTool] = []
            if not late or conn.state == "ready":
                own = sum(1 for t in self.listed if getattr(t, "server", None) == conn.spec.name)
                fresh = self._entries(conn, {t.name for t in self.listed},
                                      budget=max(0, self.config.max_tools_per_server - own))
                self.listed.extend(fresh)
                self._late.extend(fresh)
            idle = self._calls == 0
        if idle:  # the tools are in the catalog before anyone is told they are ready
            self._deliver()
        return fresh

    def on_new_tools(self, listener: Callable[[list[BaseTool]], None]) -> None:
        """Call ``listener(tools)`` with the tools a server adds after start (``tools/list_changed``).

        Tools a server removes stay (the bound schemas are the provider's cached prefix); calling one
        returns the server's error. A server never brings more than ``mcp.max_tools_per_server``
        tools over its life. The listener runs on the agent's thread when a call made the change
        (before that call's result is returned), else on the MCP loop's thread.
        """
        self._listeners.append(listener)

    @contextlib.contextmanager
    def during_call(self) -> Iterator[None]:
        """A call in flight: the tools that arrive meanwhile are handed on when it returns."""
        with self.lock:
            self._calls += 1
        try:
            yield
        finally:
            with self.lock:
                self._calls -= 1
            self._deliver()

    def _deliver(self) -> None:
        with self.lock:
            late, self._late = self._late, []
        if not late:
            return
        for listener in list(self._listeners):
            try:
                listener(late)
            except Exception as exc:  # a front end's failure must not take the MCP loop down
                self.notes.append(f"tools added by an MCP server could not be offered: {exc}")

    def _entries(self, conn: Any, taken: set[str], *, budget: int | None = None) -> list[BaseTool]:
        """``conn``'s listed tools whose names are not in ``taken`` (added to it), at most ``budget``."""
        spec, tools = conn.spec, list[BaseTool]()
        for listed in conn.tools:
            name = tool_name(spec.key, listed.name)
            if name in taken:
                if budget is None:  # at start a repeat is a clash; on a re-list it is a tool already known
                    conn.note = (conn.note + "; " if conn.note else "") + f"tool {listed.name!r} skipped (name clash)"
                continue
            if budget is not None and len(tools) >= budget:
                conn.note = f"tools past {self.config.max_tools_per_server} added after start were skipped"
                break
            taken.add(name)
            if listed.note:
                self.notes.append(f"MCP server {clean_text(spec.name, 64)}: tool {listed.name}: {listed.note}")
            description = listed.description or f"Tool {listed.name} of the MCP server {spec.name}."
            tools.append(McpTool(name=name, description=description, args_schema=listed.schema,
                                 server=spec.name, remote_name=listed.name, caller=self.manager,
                                 metadata={"source": f"mcp:{spec.name}", "mcp_server": spec.name,
                                           "mcp_tool": listed.name}))
        return tools


def server_status(spec: ServerSpec, conn: Any, missing: str) -> McpServerStatus:
    """One server as ``/mcp`` shows it: its connection's state, or why it has none."""
    if conn is not None:
        (state, note), count, instr = conn.status, len(conn.tools), conn.instructions
    elif not spec.trusted:
        state, note, count, instr = "untrusted", "project not trusted: run `mtagent trust` to allow it", 0, ""
    elif spec.error:
        state, note, count, instr = "invalid", spec.error, 0, ""
    elif spec.settings is not None and not spec.settings.enabled:
        state, note, count, instr = "disabled", "enabled = false", 0, ""
    elif missing:
        state, note, count, instr = "failed", missing, 0, ""
    else:
        state, note, count, instr = "not started", "", 0, ""
    return McpServerStatus(clean_text(spec.name, 64), spec.source, spec.trusted, spec.transport, state,
                           note, count, spec.describe(), instr)


async def _start_all(connections: list[Any], on_done: Callable[[Any], None] | None = None) -> None:
    async def one(conn: Any) -> None:
        try:
            await conn.ensure_started()
        finally:
            if on_done is not None:
                on_done(conn)

    results = await asyncio.gather(*(one(c) for c in connections), return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, Exception):
            raise result


async def _close_all(connections: list[Any]) -> None:
    await asyncio.gather(*(c.close() for c in connections), return_exceptions=True)


def _close_quietly(connections: dict[str, Any], loop_box: list[Any]) -> None:
    """Stop the servers and the loop (also run by the finalizer at interpreter exit)."""
    if not loop_box:
        return
    loop = loop_box.pop()
    try:
        if loop.alive:
            loop.run(_close_all(list(connections.values())), CLOSE_SECONDS)
    except BaseException:  # noqa: S110 - closing must not raise; the SDK killed what it could
        pass
    finally:
        loop.stop()

