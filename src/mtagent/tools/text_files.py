"""Reading text files for the model: decoding, binary sniffing, numbered lines, line counts.

Shared by ``read_file`` and ``read_tool_result``, and by the editing tools' snippets.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

SNIFF_BYTES = 8192  # how much of a file's start tells text from binary
_CHUNK = 1 << 20
_MAGIC = (
    (b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"), (b"GIF8", "a GIF image"),
    (b"%PDF", "a PDF document"), (b"PK\x03\x04", "a ZIP archive"), (b"\x7fELF", "an ELF binary"),
    (b"\x1f\x8b", "a gzip archive"), (b"BZh", "a bzip2 archive"), (b"\xfd7zXZ", "an xz archive"),
    (b"\xca\xfe\xba\xbe", "a Mach-O/Java class binary"), (b"MZ", "a Windows executable"),
    (b"SQLite format 3", "an SQLite database"), (b"\x00asm", "a WebAssembly module"),
)


def binary_kind(head: bytes) -> str | None:
    """What a file's first :data:`SNIFF_BYTES` say it is, when it is not text (None for text)."""
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    if b"\x00" in head[:SNIFF_BYTES]:
        return "binary data"
    return None


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} bytes"


def count_lines(fh: BinaryIO, max_bytes: int | None = None) -> int | None:
    """Lines from ``fh``'s position to its end, streamed (a last line without a newline counts);
    None when more than ``max_bytes`` would have to be scanned to know."""
    total = 0
    last = b""
    scanned = 0
    while chunk := fh.read(_CHUNK):
        total += chunk.count(b"\n")
        last = chunk
        scanned += len(chunk)
        if max_bytes is not None and scanned > max_bytes:
            return None
    if last and not last.endswith(b"\n"):
        total += 1
    return total


@dataclass(slots=True)
class LineSlice:
    lines: list[str]
    start_line: int  # 1-based
    total_lines: int | None  # None: the file is too big to count past the page
    undecodable: bool
    cut: dict[int, int] = field(default_factory=dict)  # index in lines → the full line's length in bytes


def _decode(data: bytes) -> tuple[str, bool]:
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), True


def split_lines(data: bytes) -> tuple[list[str], bool]:
    text, bad = _decode(data)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines], bad


def read_slice(fh: BinaryIO, start: int, count: int | None, *, max_line_bytes: int = 1 << 20,
               count_max_bytes: int | None = None) -> LineSlice:
    """Lines ``start .. start+count-1`` (all from ``start`` when count is None) of ``fh``, streamed in
    chunks: memory stays bounded by the page, whatever the file's size or line lengths. A line
    longer than ``max_line_bytes`` keeps only its head (its full length is in ``cut``)."""
    picked: list[bytearray] = []
    lengths: list[int] = []
    line_no = 1
    current: bytearray | None = bytearray() if start == 1 else None
    current_len = 0
    done = False
    saw_tail = False
    while not done and (chunk := fh.read(_CHUNK)):
        pos = 0
        while pos < len(chunk):
            nl = chunk.find(b"\n", pos)
            end = len(chunk) if nl < 0 else nl + 1
            piece = memoryview(chunk)[pos:end]
            if current is not None:
                room = max_line_bytes + 1 - len(current)
                if room > 0:
                    current += piece[:room]
                current_len += len(piece)
            pos = end
            saw_tail = nl < 0
            if nl < 0:
                break
            if current is not None:
                picked.append(current)
                lengths.append(current_len - 1)
            line_no += 1
            current_len = 0
            if count is not None and len(picked) >= count:
                current = None
                done = True
                fh.seek(end - len(chunk), 1)
                break
            current = bytearray() if line_no >= start else None
    if not done and current is not None and saw_tail:
        picked.append(current)
        lengths.append(current_len)
    if done:
        rest = count_lines(fh, count_max_bytes)
        total = None if rest is None else line_no - 1 + rest
    else:
        total = line_no - (0 if saw_tail else 1)
    cut: dict[int, int] = {}
    for i, (raw, body) in enumerate(zip(picked, lengths)):
        if body > max_line_bytes:
            del raw[max_line_bytes:]
            cut[i] = body
    lines, bad = split_lines(b"".join(bytes(r).rstrip(b"\n") + b"\n" for r in picked))
    return LineSlice(lines, start, total, bad, cut)


def number_lines(lines: list[str], start: int, max_line_chars: int, cut: dict[int, int] | None = None) -> str:
    """``cat -n`` style: right-aligned 1-based numbers, a tab, the line (long lines cut)."""
    out = []
    for i, (n, line) in enumerate(zip(range(start, start + len(lines)), lines)):
        if cut and i in cut:
            line = f"{line[:max_line_chars]}… [line cut: {cut[i]:,} bytes]"
        elif len(line) > max_line_chars:
            line = f"{line[:max_line_chars]}… [line cut: {len(line):,} chars]"
        out.append(f"{n:>6}\t{line}")
    return "\n".join(out)


def not_found_message(path: Path, shown: str) -> str:
    parent = path.parent
    hint = ""
    if parent.is_dir():
        try:
            names = [p.name for p in parent.iterdir()]
        except OSError:
            names = []
        close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
        if close:
            hint = " Did you mean: " + ", ".join(close) + "?"
    else:
        hint = f" Its folder {parent.name or '.'}/ does not exist either."
    return f"file not found: {shown}.{hint} Use ls or glob to find the right path."
