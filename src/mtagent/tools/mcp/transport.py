"""The stdio transport to an MCP server: newline-delimited JSON-RPC, each message capped.

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
import re
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import TextIO

import anyio
import anyio.lowlevel
import mcp_types as types
from mcp.client import stdio as sdk_stdio
from mcp.client.stdio import StdioServerParameters
from mcp.shared.message import SessionMessage

from mtagent.tools.mcp.long_strings import SCAN_FROM, LongStrings

# One message from a server, at most: the artifact store's cap (a result past it could not be kept whole).
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
MESSAGE_TOO_BIG = -32001  # a JSON-RPC server error code: the message was over the cap
_HEAD_BYTES = 4096  # where a message's id is looked for
_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")')


def _parse(line: bytes | bytearray) -> SessionMessage | Exception:
    """One message. ``json.loads`` then validation of the objects (which keeps their strings): parsing
    a 100 MB line with ``validate_json`` took 330 MB more, ``json.loads`` about 50."""
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(json.loads(line), by_name=False))
    except (ValueError, RecursionError) as exc:  # the session surfaces it, as the SDK's transport does
        return exc if isinstance(exc, ValueError) else ValueError(f"a message nested too deeply: {exc}")


def _parse_long(long: LongStrings) -> SessionMessage | Exception:
    """A line read by :class:`LongStrings`: its skeleton parsed, the long strings put back."""
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(long.parse(), by_name=False))
    except (ValueError, RecursionError) as exc:
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
                out.append(_parse_long(long))
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
