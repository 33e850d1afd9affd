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

A stdio server gets only the environment its config names, on top of the SDK's minimal set
(``PATH``, ``HOME``, ``LOGNAME``, ``SHELL``, ``TERM``, ``USER``); its stderr goes to an unnamed
temporary file, whose last lines explain a failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

import anyio
import anyio.lowlevel
import httpx2
from mcp import Client, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import Implementation
from pydantic import ValidationError

from mtagent import __version__, paths
from mtagent.config import McpSettings
from mtagent.tools.mcp.changes import ChangeWatcher, is_tool_list_changed
from mtagent.tools.mcp.errors import McpServerError
from mtagent.tools import proctree
from mtagent.tools import sandbox as sandboxing
from mtagent.tools.mcp.specs import ServerSpec
from mtagent.tools.mcp.transport import MAX_MESSAGE_BYTES, capped_stdio_client
from mtagent.tools.mcp.untrusted import clean_schema, clean_text

STDERR_TAIL_CHARS = 600
MAX_LIST_PAGES = 50  # tools/list pages followed, at most (a paginator that never ends cannot hang a start)
HTTP_CONNECT_SECONDS = 30.0
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


@dataclass
class ServerConnection:
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
    _stderr: IO[bytes] | None = None

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
            raise self._fail(f"could not start{self._where()}: {_describe(exc)}") from exc
        self.state = "ready"

    async def _hold(self, stop: asyncio.Event, ready: asyncio.Future[None]) -> None:
        try:
            watcher = ChangeWatcher(self._relist)
            async with _client(self.spec, self._stderr_file(), _on_message(watcher)) as client:
                listed = await self._list_tools(client)
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
        self.tools = await asyncio.wait_for(self._list_tools(client, cache_mode="refresh"), self.call_timeout)
        if self.on_tools_changed is not None:
            self.on_tools_changed(self)

    async def _list_tools(self, client: Any, cache_mode: str = "use") -> list[ListedTool]:
        listed: list[ListedTool] = []
        cursor = None
        for _ in range(MAX_LIST_PAGES):
            page = await client.list_tools(cursor=cursor, cache_mode=cache_mode)
            for tool in page.tools:
                if len(listed) >= self.config.max_tools_per_server:
                    return listed
                schema, note = clean_schema(tool.input_schema, description_limit=self.config.description_max_chars,
                                            max_chars=self.config.schema_max_chars)
                listed.append(ListedTool(clean_text(tool.name, 200),
                                         clean_text(tool.description or "", self.config.description_max_chars),
                                         schema, note))
            cursor = page.next_cursor
            if not cursor:
                break
        return listed

    def _stderr_file(self) -> IO[bytes]:
        if self._stderr is None:
            self._stderr = tempfile.TemporaryFile(prefix="mtagent-mcp-")  # noqa: SIM115 - closed in close()
        return self._stderr

    def stderr_tail(self) -> str:
        """The last lines the server wrote to stderr (cleaned), "" when none."""
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(0, 2)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - STDERR_TAIL_CHARS))
            tail = self._stderr.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""
        return clean_text(" | ".join(line.strip() for line in tail.splitlines() if line.strip()), STDERR_TAIL_CHARS)

    def _where(self) -> str:
        """`` at URL`` for an HTTP server (a connection error alone does not say which endpoint is down)."""
        url = self.spec.settings.url if self.spec.settings is not None else None
        return f" at {clean_text(_without_credentials(str(url)), 200)}" if url else ""

    def _fail(self, what: str) -> McpServerError:
        tail = self.stderr_tail()
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
            if _connection_lost(exc) or self._holder is None or self._holder.done():
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
        if self.state != "failed":
            self.state = "stopped" if self.starts else self.state
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


def _closed(client: Any) -> bool:
    """The connection is known to be closed (the server exited while idle). Reads the SDK's
    dispatcher state; an SDK without it answers False and the call reports the closed connection."""
    session = getattr(client, "_session", None)
    return bool(getattr(getattr(session, "_dispatcher", None), "_closed", False))


def _connection_lost(exc: MCPError) -> bool:
    from mcp_types import CONNECTION_CLOSED

    return exc.code == CONNECTION_CLOSED


def _without_credentials(url: str) -> str:
    """The URL without a ``user:password@`` part (a note is shown and written to the transcript)."""
    scheme, sep, rest = url.partition("://")
    host, at, path = rest.partition("@") if "@" in rest.split("/", 1)[0] else ("", "", rest)
    return f"{scheme}{sep}{path}" if at else url


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions]
        return _describe(inner[0]) if inner else type(exc).__name__
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {clean_text(exc.filename or exc, 200)}"
    if isinstance(exc, MCPError):
        return clean_text(exc.message, 300)
    text = clean_text(str(exc), 300)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@contextlib.asynccontextmanager
async def _http_transport(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    timeout = httpx2.Timeout(HTTP_CONNECT_SECONDS, read=None)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            yield streams


# Linux: the server is started through this launcher, which asks the kernel to SIGKILL it when the
# thread that started it (the session's loop thread) dies — so even a server that ignores its closed
# stdin cannot outlive an mtagent killed outright. It then execs the server (same pid, same env).
_LAUNCHER = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG\n"
    "if os.getppid() == 1:\n    sys.exit(1)  # the parent is already gone\n"
    "if sys.argv.pop(1) == 'drop':\n    os.environ.pop('LC_CTYPE', None)  # Python's own locale coercion\n"
    "try:\n    os.execvp(sys.argv[1], sys.argv[1:])\n"
    "except OSError as exc:\n"
    "    sys.stderr.write(f'command not found: {sys.argv[1]} ({exc.strerror})\\n')\n    sys.exit(127)\n"
)


def _with_parent_death_signal(command: str, args: list[str], env: dict[str, str]) -> tuple[str, list[str]]:
    if not sys.platform.startswith("linux"):
        return command, args
    return sys.executable, ["-I", "-S", "-c", _LAUNCHER, "keep" if "LC_CTYPE" in env else "drop", command, *args]


@contextlib.asynccontextmanager
async def _sandboxed_stdio(spec: ServerSpec, stderr: IO[bytes]) -> AsyncIterator[Any]:
    """A stdio server in the shell tool's sandbox (``sandbox.mcp_servers``): bubblewrap around the
    runner around the server, its proxy open as long as the server runs."""
    settings, workdir = spec.settings, _workdir(spec)
    assert settings is not None and settings.command is not None and spec.sandbox is not None
    own = Path(os.path.realpath(workdir))  # made just now by _workdir: discovery cannot bind what was not there
    policy = replace(spec.sandbox, writable=tuple(dict.fromkeys([own, *spec.sandbox.writable])),
                     protected=(*spec.sandbox.protected, *_named_under_tmp(settings, spec.sandbox.hidden)))
    with sandboxing.SandboxedCall(policy, own) as call:
        argv = call.argv(proctree.contained([settings.command, *settings.args], 1.0, bridge=call.bridge))
        command, args = _with_parent_death_signal(argv[0], argv[1:], settings.env)
        params = StdioServerParameters(command=command, args=args, env=dict(settings.env), cwd=workdir,
                                       encoding_error_handler="replace")
        async with stdio_client(params, errlog=stderr) as streams:
            yield streams


def _named_under_tmp(settings: Any, hidden: tuple[Path, ...]) -> tuple[Path, ...]:
    """Folders of the files a server's command line names that lie under ``/tmp``: the sandbox's private
    ``/tmp`` would hide them (a server script in a checkout under /tmp), so they are bound read-only —
    never one inside a hidden path."""
    folders = []
    for part in [settings.command, *settings.args]:
        if os.path.isabs(part) and os.path.isfile(part):
            folder = Path(os.path.realpath(part)).parent
            if folder.is_relative_to("/tmp") and not any(folder.is_relative_to(h) for h in hidden):
                folders.append(folder)
    return tuple(dict.fromkeys(folders))


def _on_message(watcher: ChangeWatcher) -> Any:
    """The SDK's message handler: a handshake-era tools/list_changed marks the list stale."""
    async def handle(message: Any) -> None:
        if is_tool_list_changed(message):
            watcher.mark()
        await anyio.lowlevel.checkpoint()
    return handle


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


def _workdir(spec: ServerSpec) -> str:
    """The folder discovery chose (:func:`~mtagent.tools.mcp.specs.discover_servers`), made when it is
    the server's own folder under ``$MTAGENT_HOME``; never the project by default."""
    own = paths.mcp_server_workdir(spec.key)
    workdir = spec.workdir or str(own)
    if Path(workdir) == own:
        own.mkdir(parents=True, exist_ok=True, mode=0o700)
    return workdir


def _announces_tool_changes(client: Any) -> bool:
    """The server declared ``tools.listChanged`` and speaks the era whose changes come by ``listen``."""
    caps = getattr(client, "server_capabilities", None)
    tools = getattr(caps, "tools", None)
    modern = str(getattr(client, "protocol_version", "") or "") >= "2026-07-28"
    return bool(getattr(tools, "list_changed", False)) and modern


def _client(spec: ServerSpec, stderr: IO[bytes], on_message: Any = None) -> Client:
    settings = spec.settings
    assert settings is not None
    info = Implementation(name="mtagent", version=__version__)
    if settings.command is not None and spec.sandbox is not None:
        return Client(_sandboxed_stdio(spec, stderr), client_info=info, message_handler=on_message)  # type: ignore[arg-type]
    if settings.command is not None:
        command, args = _with_parent_death_signal(settings.command, list(settings.args), settings.env)
        params = StdioServerParameters(command=command, args=args, env=dict(settings.env),
                                       cwd=_workdir(spec), encoding_error_handler="replace")
        return Client(capped_stdio_client(params, errlog=stderr, max_message_bytes=MAX_MESSAGE_BYTES), client_info=info,  # type: ignore[arg-type]
                      message_handler=on_message)
    return Client(_http_transport(str(settings.url), dict(settings.headers)), client_info=info,
                  message_handler=on_message)
