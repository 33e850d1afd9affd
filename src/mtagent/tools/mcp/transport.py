"""How mtagent reaches an MCP server: the SDK client for a spec, and the stdio transport, each message capped.

A stdio server gets only the environment its config names, on top of the SDK's minimal set
(``PATH``, ``HOME``, ``LOGNAME``, ``SHELL``, ``TERM``, ``USER``), starts in the folder discovery chose,
in the shell tool's sandbox when ``sandbox.mcp_servers`` says so, and dies with the thread that
started it (Linux); its stderr goes to an unnamed temporary file, whose last lines explain a failure.

The stdio transport is newline-delimited JSON-RPC, each message capped.
The SDK's ``stdio_client`` decodes the server's stdout to text and joins chunks to a growing string
until a newline comes: a 50 MB result was rebuilt from 64 KiB pieces (quadratic: minutes of CPU)
and held as text, as the joined string and as the parsed message at once (836 MB peak RSS). Here a
line grows in one buffer (linear) and is parsed from bytes; a line past 1 MiB is read by
:class:`~mtagent.tools.mcp.long_strings.LongStrings` (long strings decoded in pieces as they come,
a repeated one kept once); and no message may hold more than :data:`MAX_MESSAGE_BYTES` (nor its line
be more than 3× that): past the cap the rest of the line is read and dropped as it comes, and the
request it answered gets a JSON-RPC error saying so (its id is read from the line's start) — a
server cannot make mtagent hold more than the cap for one message.

Process start and stop are the SDK's own (:mod:`mcp.client.stdio`'s helpers), so a server is started,
stopped and killed exactly as before.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import ExitStack, asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any, TextIO

import anyio
import anyio.lowlevel
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client import stdio as sdk_stdio
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage

from mtagent import __version__, paths
from mtagent.tools import proctree
from mtagent.tools import sandbox as sandboxing
from mtagent.tools.mcp.long_strings import SCAN_FROM, LongStrings
from mtagent.tools.mcp.specs import ServerSpec
from mtagent.tools.mcp.untrusted import clean_text

# One message from a server, at most: the artifact store's cap (a result past it could not be kept whole).
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
MESSAGE_TOO_BIG = -32001  # a JSON-RPC server error code: the message was over the cap
_HEAD_BYTES = 4096  # where a message's id is looked for
_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")')
STDERR_TAIL_CHARS = 600
HTTP_CONNECT_SECONDS = 30.0


def _parse(line: bytes | bytearray | LongStrings) -> SessionMessage | Exception:
    """One message. ``json.loads`` then validation of the objects (which keeps their strings): parsing
    a 100 MB line with ``validate_json`` took 330 MB more, ``json.loads`` about 50. A line read by
    :class:`LongStrings`: its skeleton parsed, the long strings put back."""
    try:
        value = line.parse() if isinstance(line, LongStrings) else json.loads(line)
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(value, by_name=False))
    except (ValueError, RecursionError) as exc:  # the session surfaces it, as the SDK's transport does
        return exc if isinstance(exc, ValueError) else ValueError(f"a message nested too deeply: {exc}")


def too_big(head: bytes, size: int, cap: int) -> SessionMessage | Exception:
    """What the session gets for a line over the cap: an error answer to the request it answered
    (its ``id`` from the line's first bytes), or — no id found — an exception (a notification)."""
    found = _ID.search(head[:_HEAD_BYTES])
    why = (f"the MCP server's message was {size:,} bytes or more, over the cap ({cap:,}); "
           "it was dropped. Ask the tool for less (a narrower query, a page)")
    if found is None:
        return ValueError(why)
    msg_id = json.loads(found.group(1))
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=msg_id,
                                             error=types.ErrorData(code=MESSAGE_TOO_BIG, message=why)))


class LineReader:
    """Splits a byte stream into lines: :meth:`feed` returns the messages the chunk completed (parsed,
    or :func:`too_big` for a line over the cap, whose bytes are not kept). A line grows in one buffer
    (never a list of chunks joined at the end: that held it twice); past :data:`SCAN_FROM` bytes it is
    read by :class:`LongStrings`, and the cap is on what the message holds (its long strings each
    once) — a result's text sent twice counts once — while the line itself may be at most
    ``LINE_FACTOR`` times the cap."""

    LINE_FACTOR = 3

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.line = bytearray()
        self.size = 0
        self.head = b""
        self.long: LongStrings | None = None
        self.failed: SessionMessage | Exception | None = None  # what this line answers, decided early

    def _over(self) -> bool:
        held = self.long.held if self.long is not None else len(self.line)
        return held > self.cap or self.size > self.cap * self.LINE_FACTOR

    def _take(self, piece: bytes) -> None:
        if self.long is None and len(self.line) + len(piece) > min(SCAN_FROM, self.cap):
            self.long = LongStrings()
            self.long.feed(self.line)
            self.line = bytearray()
        if self.long is not None:
            self.long.feed(piece)
        else:
            self.line += piece

    def feed(self, chunk: bytes) -> list[SessionMessage | Exception]:
        out: list[SessionMessage | Exception] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if len(self.head) < _HEAD_BYTES:
                self.head += piece[:_HEAD_BYTES - len(self.head)]
            self.size += len(piece)
            if self.failed is None:
                try:
                    self._take(piece)
                    if self._over():  # the rest of the line is read and dropped
                        self.failed = too_big(self.head, self.size, self.cap)
                except ValueError as exc:  # a long string that does not decode: the line's error
                    self.failed = exc
                if self.failed is not None:
                    self.line, self.long = bytearray(), None
            if end < 0:
                return out
            if self.failed is not None:
                out.append(self.failed)
            elif self.long is not None:
                long, self.long = self.long, None
                out.append(_parse(long))
                del long
            elif self.size:
                line, self.line = self.line, bytearray()
                out.append(_parse(line))
                del line
            self.line, self.size, self.head, self.long, self.failed = bytearray(), 0, b"", None, None
            start = end + 1


@asynccontextmanager
async def capped_stdio_client(server: StdioServerParameters, errlog: TextIO = sys.stderr, *,
                              max_message_bytes: int) -> AsyncGenerator[tuple[object, object], None]:
    """``stdio_client`` with each message capped at ``max_message_bytes`` (see the module docstring)."""
    command = await sdk_stdio._get_executable_command(server.command)  # noqa: SLF001 - the SDK's own start
    process = await sdk_stdio._create_platform_compatible_process(  # noqa: SLF001
        command=command, args=server.args, env=sdk_stdio.get_default_environment() | (server.env or {}),
        errlog=errlog, cwd=server.cwd)
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    shutting_down = False
    writer_done = anyio.Event()

    async def stdout_reader() -> None:
        assert process.stdout is not None
        lines = LineReader(max_message_bytes)
        try:
            async with read_writer:
                try:
                    async for chunk in process.stdout:
                        for message in lines.feed(chunk):
                            try:
                                await read_writer.send(message)
                            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                                return
                finally:
                    await sdk_stdio._drain_stdout(process)  # noqa: SLF001
        except anyio.ClosedResourceError:
            pass
        except (anyio.BrokenResourceError, ConnectionError):
            if not shutting_down:
                sdk_stdio.logger.exception("Reading from the MCP server's stdout failed mid-session")

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for session_message in write_reader:
                    data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((data + "\n").encode(server.encoding, server.encoding_error_handler))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()
        finally:
            writer_done.set()

    async def shutdown() -> None:
        read_stream.close()
        write_stream.close()
        with anyio.move_on_after(sdk_stdio._WRITER_FLUSH_TIMEOUT):  # noqa: SLF001
            await writer_done.wait()
        await sdk_stdio._stop_server_process(process)  # noqa: SLF001
        await sdk_stdio._aclose_all(read_stream, write_stream, read_writer, write_reader)  # noqa: SLF001
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(stdout_reader)
        tg.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            shutting_down = True
            with anyio.CancelScope(shield=True):
                await shutdown()
            tg.cancel_scope.cancel()
    await anyio.lowlevel.cancel_shielded_checkpoint()


def sdk_client(spec: ServerSpec, stderr: IO[bytes], on_message: Any = None) -> Client:
    """The SDK's client for ``spec``: a stdio server (:func:`_stdio`) or an HTTP endpoint; entering it starts
    the server or connects."""
    settings = spec.settings
    assert settings is not None
    streams = (_stdio(spec, stderr) if settings.command is not None
               else _http_transport(str(settings.url), dict(settings.headers)))
    info = types.Implementation(name="mtagent", version=__version__)
    return Client(streams, client_info=info, message_handler=on_message)  # type: ignore[arg-type]


@dataclass(slots=True)
class StderrLog:
    """A server's stderr: an unnamed temporary file, made on first use, whose last lines explain a failure."""

    file: IO[bytes] | None = None

    def open(self) -> IO[bytes]:
        if self.file is None:
            self.file = tempfile.TemporaryFile(prefix="mtagent-mcp-")  # noqa: SIM115 - closed in close()
        return self.file

    def tail(self) -> str:
        """The last lines the server wrote to stderr (cleaned), "" when none."""
        if self.file is None:
            return ""
        try:
            self.file.seek(0, 2)
            size = self.file.tell()
            self.file.seek(max(0, size - STDERR_TAIL_CHARS))
            tail = self.file.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""
        return clean_text(" | ".join(line.strip() for line in tail.splitlines() if line.strip()), STDERR_TAIL_CHARS)

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None


def _workdir(spec: ServerSpec) -> str:
    """The folder discovery chose (:func:`~mtagent.tools.mcp.specs.discover_servers`), made when it is
    the server's own folder under ``$MTAGENT_HOME``; never the project by default."""
    own = paths.mcp_server_workdir(spec.key)
    workdir = spec.workdir or str(own)
    if Path(workdir) == own:
        own.mkdir(parents=True, exist_ok=True, mode=0o700)
    return workdir


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


@asynccontextmanager
async def _stdio(spec: ServerSpec, stderr: IO[bytes]) -> AsyncIterator[Any]:
    """A stdio server's streams, each message capped (:func:`capped_stdio_client`); with ``sandbox.mcp_servers``
    in the shell tool's sandbox: bubblewrap around the runner around the server, its proxy open as long as
    the server runs."""
    settings, workdir = spec.settings, _workdir(spec)
    assert settings is not None and settings.command is not None
    argv = [settings.command, *settings.args]
    with ExitStack() as stack:
        if spec.sandbox is not None:
            own = Path(os.path.realpath(workdir))  # made just now by _workdir: discovery cannot bind what was not there
            policy = replace(spec.sandbox, writable=tuple(dict.fromkeys([own, *spec.sandbox.writable])),
                             protected=(*spec.sandbox.protected, *_named_under_tmp(settings, spec.sandbox.hidden)))
            call = stack.enter_context(sandboxing.SandboxedCall(policy, own))
            argv = call.argv(proctree.contained(argv, 1.0, bridge=call.bridge))
        command, args = _with_parent_death_signal(argv[0], argv[1:], settings.env)
        params = StdioServerParameters(command=command, args=args, env=dict(settings.env), cwd=workdir,
                                       encoding_error_handler="replace")
        async with capped_stdio_client(params, errlog=stderr, max_message_bytes=MAX_MESSAGE_BYTES) as streams:
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


@asynccontextmanager
async def _http_transport(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    timeout = httpx2.Timeout(HTTP_CONNECT_SECONDS, read=None)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            yield streams
