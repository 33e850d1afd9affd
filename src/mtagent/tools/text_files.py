"""Reading text files for the model: decoding, binary sniffing, numbered lines, line counts.

Shared by ``read_file`` and ``read_tool_result``, and by the editing tools' snippets.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

_SNIFF_BYTES = 8192
_CHUNK = 1 << 20
_MAGIC = (
    (b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"), (b"GIF8", "a GIF image"),
    (b"%PDF", "a PDF document"), (b"PK\x03\x04", "a ZIP archive"), (b"\x7fELF", "an ELF binary"),
    (b"\x1f\x8b", "a gzip archive"), (b"BZh", "a bzip2 archive"), (b"\xfd7zXZ", "an xz archive"),
    (b"\xca\xfe\xba\xbe", "a Mach-O/Java class binary"), (b"MZ", "a Windows executable"),
    (b"SQLite format 3", "an SQLite database"), (b"\x00asm", "a WebAssembly module"),
)


def binary_kind(head: bytes) -> str | None:
    """What a file's first bytes say it is, when it is not text (None for text)."""
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    if b"\x00" in head:
        return "binary data"
    return None


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} bytes"


def count_lines(path: Path) -> int:
    """Lines in a file, streamed (a last line without a newline counts)."""
    total = 0
    last = b""
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            total += chunk.count(b"\n")
            last = chunk
    if last and not last.endswith(b"\n"):
        total += 1
    return total


@dataclass(slots=True)
class LineSlice:
    lines: list[str]
    start_line: int  # 1-based
    total_lines: int
    undecodable: bool


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


def read_slice(path: Path, start: int, count: int | None) -> LineSlice:
    """Lines ``start .. start+count-1`` (all from ``start`` when count is None), streamed."""
    picked: list[bytes] = []
    total = 0
    with path.open("rb") as fh:
        for raw in fh:
            total += 1
            if total >= start and (count is None or len(picked) < count):
                picked.append(raw)
            elif count is not None and len(picked) >= count:
                break
        rest_newlines = 0
        last = b""
        while chunk := fh.read(_CHUNK):
            rest_newlines += chunk.count(b"\n")
            last = chunk
        total += rest_newlines + (1 if last and not last.endswith(b"\n") else 0)
    lines, bad = split_lines(b"".join(picked))
    return LineSlice(lines, start, total, bad)


def number_lines(lines: list[str], start: int, max_line_chars: int) -> str:
    """``cat -n`` style: right-aligned 1-based numbers, a tab, the line (long lines cut)."""
    out = []
    for n, line in enumerate(lines, start):
        if len(line) > max_line_chars:
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
