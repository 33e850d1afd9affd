"""A long MCP message read with its long strings taken out as they arrive, each kept once.

A tool result's text comes twice in the message the SDK's servers send (``content[0].text`` and
``structuredContent.result``): a 50 MB result is a 101 MB line. Held whole and parsed, that line
cost the line, both decoded strings and the parser's own copies at once (about 330 MB over the
session's own size). Here a line past :data:`SCAN_FROM` bytes is scanned as it comes: the bytes of
any JSON string longer than :data:`LONG_STRING` are moved out of the line and decoded as they come,
in pieces of about :data:`PIECE` bytes; a string that decodes equal to an earlier one of the same
message becomes *the same* ``str`` object (its pieces are compared and dropped as they come, so the
copy is never held); the text of a new one grows in place. The line keeps a
placeholder — a string with a per-reader random mark no server can guess — that :meth:`parse` puts
the decoded value back into. What the message holds is what :attr:`held` counts, and that is what
the transport caps.
"""

from __future__ import annotations

import json
import re
import secrets
from typing import Any

import orjson

SCAN_FROM = 1024 * 1024  # a line this long is scanned; shorter lines are parsed as they are
LONG_STRING = 64 * 1024  # a string longer than this (raw bytes) is taken out of the line
PIECE = 1024 * 1024  # a long string is decoded in pieces of about this many raw bytes
_STOP = re.compile(rb'["\\]')  # inside a string: where it may end or an escape starts


def _decode(raw: bytearray) -> str:
    """One JSON string literal (quotes included) as ``str``. orjson refuses lone surrogates, which
    ``json`` accepts (a server may send them): then ``json`` decides."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        value = json.loads(raw)
    if not isinstance(value, str):  # cannot happen for a scanned string literal
        raise ValueError("a long string in the MCP message did not decode to text")
    return value


class LongStrings:
    """One line, fed in chunks (see the module docstring)."""

    def __init__(self) -> None:
        self.mark = "\x00mtagent-long-" + secrets.token_hex(12) + "-"
        self._mark_json = json.dumps(self.mark)[1:-1].encode()  # the mark as it is written in JSON
        self.out = bytearray()  # the line, long strings replaced by placeholders
        self.values: list[str] = []
        self._raw_held = 0  # raw bytes of the distinct long strings
        self._longest = 0  # the longest of them
        self._in_string = False
        self._escaped = False  # the chunk ended on a backslash inside a string
        self._start = 0  # where the current string's bytes begin in ``out``
        self._long: bytearray | None = None  # the current long string's raw bytes not decoded yet
        self._long_raw = 0  # its raw bytes decoded so far
        self._text = ""  # its text decoded so far ("" while it matches an earlier one)
        self._offset = 0  # its decoded length so far
        self._matching: list[int] = []  # earlier long strings it equals so far
        self._next_try = PIECE  # raw bytes pending at which the next piece is decoded

    @property
    def held(self) -> int:
        """Bytes this message holds: the line without its long strings, and each distinct one once.
        The string being read counts only past the longest earlier one (it may be that one's copy,
        known when it ends); once it ends and is new, it counts whole."""
        current = self._long_raw + len(self._long) if self._long is not None else 0
        return len(self.out) + self._raw_held + max(0, current - self._longest)

    def feed(self, data: bytes | bytearray) -> None:
        pos, n = 0, len(data)
        while pos < n:
            if not self._in_string:
                quote = data.find(b'"', pos)
                if quote < 0:
                    self.out += data[pos:]
                    return
                self.out += data[pos:quote + 1]
                pos = quote + 1
                self._in_string, self._start, self._long = True, len(self.out), None
                continue
            if self._escaped:  # the escaped byte opens this chunk
                self._take(data[pos:pos + 1])
                pos += 1
                self._escaped = False
                continue
            stop = _STOP.search(data, pos)
            if stop is None:
                self._take(data[pos:])
                return
            end = stop.start()
            if data[end] == 0x5C:  # a backslash: it and the byte it escapes stay in the string
                if end + 1 < n:
                    self._take(data[pos:end + 2])
                    pos = end + 2
                else:
                    self._take(data[pos:end + 1])
                    self._escaped = True
                    pos = end + 1
                continue
            self._take(data[pos:end])
            pos = end + 1
            self._close()

    def _take(self, piece: bytes | bytearray) -> None:
        if self._long is not None:
            self._long += piece
            if len(self._long) >= self._next_try:
                self._decode_some()
            return
        self.out += piece
        if len(self.out) - self._start > LONG_STRING:
            self._long = bytearray(memoryview(self.out)[self._start:])
            self._long_raw, self._text, self._offset = 0, "", 0
            self._matching = list(range(len(self.values)))
            del self.out[self._start:]
            self._decode_some()

    def _decode_some(self) -> None:
        """Decode the current string's raw bytes but its last few (an escape or a character may go on in
        the next chunk): a cut the decoder refuses — inside an escape, a UTF-8 character or a surrogate
        pair — moves back; no clean cut in 16 bytes (lone surrogates): wait for the string's end."""
        raw = self._long
        assert raw is not None
        cut = len(raw) - 12
        slash = raw.rfind(b"\\", max(0, cut - 12), cut)
        cut = slash if slash > 0 else cut
        self._next_try = len(raw) + PIECE  # no clean cut: try again a piece later
        for _ in range(16):
            while cut > 0 and 0x80 <= raw[cut] < 0xC0:  # never inside a UTF-8 character
                cut -= 1
            if cut <= 0:
                return
            try:
                text = orjson.loads(b'"' + raw[:cut] + b'"')
            except orjson.JSONDecodeError:
                cut -= 1
                continue
            self._long_raw += cut
            del raw[:cut]
            self._next_try = PIECE
            self._keep(text)
            return

    def _keep(self, text: str) -> None:
        """One decoded piece: dropped while it matches an earlier long string of this message at the same
        place (the result's text sent again), kept otherwise."""
        end = self._offset + len(text)
        if self._matching:
            still = [i for i in self._matching if self.values[i][self._offset:end] == text]
            if not still and self._offset:  # different after all: the matched prefix is its start
                self._text = self.values[self._matching[0]][:self._offset]
            self._matching = still
        if not self._matching:
            self._append(text)
        self._offset = end

    def _append(self, text: str) -> None:
        """``self._text += text`` in place: a local ``str`` no one else holds is grown by CPython without
        a copy (realloc), so a 50 MB text never exists twice (joining its pieces at the end did)."""
        grown, self._text = self._text, ""
        grown += text
        self._text = grown

    def _close(self) -> None:
        self._in_string = False
        raw, self._long = self._long, None
        if raw is None:
            self.out += b'"'
            return
        size = self._long_raw + len(raw)
        tail = _decode(b'"' + raw + b'"')
        del raw
        if tail:
            self._keep(tail)
        same = [i for i in self._matching if len(self.values[i]) == self._offset]
        if same:
            index = same[0]
        else:
            if self._matching:  # a prefix of an earlier one
                self._text = self.values[self._matching[0]][:self._offset]
            index = len(self.values)
            self.values.append(self._text)
            self._raw_held += size
            self._longest = max(self._longest, size)
        self._text, self._matching = "", []
        self.out += self._mark_json + str(index).encode() + b'"'

    def parse(self) -> Any:
        """The message: the line parsed, each placeholder replaced by its decoded string."""
        if self._in_string:
            raise ValueError("the MCP message ended inside a string")
        message = json.loads(self.out)
        self.out = bytearray()
        return self._restore(message) if self.values else message

    def _restore(self, value: Any, depth: int = 0) -> Any:
        if isinstance(value, str):
            if value.startswith(self.mark):
                index = value[len(self.mark):]
                if index.isdigit() and int(index) < len(self.values):
                    return self.values[int(index)]
            return value
        if depth > 200:
            raise RecursionError("the MCP message is nested too deeply")
        if isinstance(value, dict):
            return {self._restore(k, depth + 1): self._restore(v, depth + 1) for k, v in value.items()}
        if isinstance(value, list):
            return [self._restore(item, depth + 1) for item in value]
        return value
