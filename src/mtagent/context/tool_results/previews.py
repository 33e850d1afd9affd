"""Tool-aware previews: the bounded slice of a large tool result that the model sees.

A persisted result is replaced by a preview chosen for what that kind of output is for:

* ``grep``: a match count, the files with most matches, then the first lines;
* ``shell`` / logs: head and tail, plus the error and warning lines from the middle, with
  ``… lines a-b omitted (N lines) …`` notes so the model knows where to page;
* ``json``: a structural summary (keys, types, array lengths, first items);
* anything else: head and tail.

Every function here is pure and deterministic: the same content gives the same preview, which
is what lets a resumed session rebuild a byte-identical prompt.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mtagent.frames import frame

PreviewKind = Literal["grep", "shell", "json", "text"]

GREP_TOOLS = frozenset({"grep", "rg", "search", "search_files", "find_in_files", "search_code"})
SHELL_TOOLS = frozenset({
    "shell", "bash", "execute_bash", "run", "run_shell", "run_command", "terminal",
    "execute_command", "run_ipython", "execute_ipython_cell",
})

# Lines a reader of a long log wants even when the middle is cut.
ERROR_LINE = re.compile(
    r"\berror\b|Error\b|ERROR|FAILED|\bFAIL\b|Traceback|Exception\b"
    r"|\bpanic\b|\bfatal\b|\bFatal\b|warning:|Warning:|WARNING|Segmentation fault|undefined reference"
)
# Literal parts of ERROR_LINE, for a fast first pass (see _error_lines).
_ERROR_TOKENS = ("error", "Error", "ERROR", "FAIL", "Traceback", "Exception", "panic", "fatal", "Fatal",
                 "warning:", "Warning:", "WARNING", "Segmentation fault", "undefined reference")
GREP_MATCH_LINE = re.compile(r"(?P<path>[^\n]+?):(?P<line>\d+):")

# A single line longer than this is cut in a preview, so one minified blob cannot eat it all.
PREVIEW_LINE_MAX_CHARS = 500
_HEAD_SHARE = 0.4
_ERROR_SHARE = 0.4
_GREP_FILES_LISTED = 8
_JSON_KEYS_LISTED = 40
_JSON_ITEM_CHARS = 300
_JSON_SCALAR_CHARS = 80


def preview_kind(tool_name: str | None, content: str) -> PreviewKind:
    """Which preview fits this result: by tool name first, then by sniffing JSON."""
    name = (tool_name or "").strip().lower()
    if name in GREP_TOOLS:
        return "grep"
    stripped = content.lstrip()
    if stripped[:1] in ("{", "[") and _parse_json(content) is not None:
        return "json"
    if name in SHELL_TOOLS:
        return "shell"
    return "text"


def make_preview(kind: PreviewKind, content: str, max_chars: int) -> str:
    """A preview of ``content`` of about ``max_chars`` characters (never much more)."""
    if len(content) <= max_chars:
        return content
    if kind == "grep":
        return grep_preview(content, max_chars)
    if kind == "json":
        parsed = _parse_json(content)
        if parsed is not None:
            return json_preview(parsed, max_chars)
    if kind == "shell":
        return log_preview(content, max_chars, keep_errors=True)
    return log_preview(content, max_chars, keep_errors=False)


def _cut_line(line: str) -> str:
    if len(line) <= PREVIEW_LINE_MAX_CHARS:
        return line
    return f"{line[:PREVIEW_LINE_MAX_CHARS]}… [line cut, {len(line):,} chars]"


# ── line access without a line list ─────────────────────────────────────────────────────
# A 16 MB log split into a list of lines costs ~4x its size in str objects; these helpers walk
# the string with find/rfind instead, so a preview costs little more than the content itself.


@dataclass(slots=True, frozen=True)
class _Line:
    index: int  # 0-based line number
    start: int
    end: int  # exclusive, before the "\n"

    def text(self, content: str) -> str:
        line = content[self.start:self.end]
        return line[:-1] if line.endswith("\r") else line


def _line_count(content: str) -> int:
    return content.count("\n") + (0 if content.endswith("\n") or not content else 1)


def _iter_lines(content: str, start_pos: int = 0, start_index: int = 0) -> Iterator[_Line]:
    pos, index, size = start_pos, start_index, len(content)
    while pos < size:
        end = content.find("\n", pos)
        if end == -1:
            end = size
        yield _Line(index, pos, end)
        pos, index = end + 1, index + 1


def _iter_lines_backwards(content: str, total: int, floor_pos: int) -> Iterator[_Line]:
    end = len(content) - 1 if content.endswith("\n") else len(content)
    index = total - 1
    while index >= 0:
        start = content.rfind("\n", 0, end) + 1
        if start < floor_pos:
            return
        yield _Line(index, start, end)
        end, index = start - 1, index - 1


# ── grep ───────────────────────────────────────────────────────────────────────────────


def grep_preview(content: str, max_chars: int) -> str:
    """``Found N matches. Showing first K lines:`` + the busiest files + the first lines."""
    per_file: Counter[str] = Counter()
    non_blank = 0
    total_lines = 0
    for line in _iter_lines(content):
        total_lines += 1
        match = GREP_MATCH_LINE.match(content, line.start, line.end)
        if match:
            per_file[match.group("path")] += 1
        elif line.end > line.start and content[line.start:line.end] != "--":
            non_blank += 1
    total = sum(per_file.values()) or non_blank
    files_line = ""
    if per_file:
        busiest = ", ".join(f"{path} ({n})" for path, n in per_file.most_common(_GREP_FILES_LISTED))
        more = len(per_file) - min(len(per_file), _GREP_FILES_LISTED)
        files_line = f"Matches in {len(per_file)} files: {busiest}" + (f", … (+{more} more files)" if more else "")
        files_line = _cut_line(files_line)
    budget = max_chars - len(files_line) - 60
    shown: list[str] = []
    used = 0
    for line in _iter_lines(content):
        cut = _cut_line(line.text(content))
        if shown and used + len(cut) + 1 > budget:
            break
        shown.append(cut)
        used += len(cut) + 1
    header = f"Found {total} matches. Showing first {len(shown)} lines:"
    parts = [header, *([files_line] if files_line else []), *shown]
    if len(shown) < total_lines:
        parts.append(f"… {total_lines - len(shown)} more lines omitted …")
    return "\n".join(parts)


# ── shell / logs / plain text ─────────────────────────────────────────────────────────


def log_preview(content: str, max_chars: int, *, keep_errors: bool) -> str:
    """Head and tail by lines, plus error lines from the middle when ``keep_errors``.

    Up to ``_ERROR_SHARE`` of the preview goes to error lines from the middle (from both ends
    of it: the first failure and the final summary); whatever they leave unused goes to the tail.
    """
    if len(content) <= max_chars:
        return content
    total = _line_count(content)
    if total <= 2:
        return _char_head_tail(content, max_chars)
    error_budget = int(max_chars * _ERROR_SHARE) if keep_errors else 0
    head_budget = int(max_chars * _HEAD_SHARE)
    tail_budget = max_chars - head_budget - error_budget - 80
    head = _take(_iter_lines(content), content, head_budget)
    head_end_pos = head[-1].end + 1 if head else 0
    tail = _take(_iter_lines_backwards(content, total, head_end_pos), content, tail_budget)
    picked: list[_Line] = []
    if error_budget:
        tail_start_pos = tail[-1].start if tail else len(content)
        middle = _error_lines(content, head_end_pos, tail_start_pos, len(head))
        picked = _spread_pick(middle, content, error_budget)
        spare = error_budget - sum(len(_cut_line(line.text(content))) + 40 for line in picked)
        floor = max(line.end for line in picked) + 1 if picked else head_end_pos
        tail = _take(_iter_lines_backwards(content, total, floor), content, tail_budget + spare)
    keep = sorted({line.index: line for line in (*head, *picked, *tail)}.values(), key=lambda line: line.index)
    if len(keep) == total:
        return content if len(content) <= max_chars else _char_head_tail(content, max_chars)
    return _render_with_gaps(content, keep, total)


def _error_lines(content: str, lo: int, hi: int, first_index: int) -> list[_Line]:
    """Error lines between offsets ``lo`` and ``hi`` (line ``first_index`` starts at ``lo``).

    ``str.find`` for each literal token, then :data:`ERROR_LINE` on the candidate lines only:
    a regex alternation scanned over a multi-megabyte log is ~100x slower.
    """
    found: dict[int, _Line] = {}
    for token in _ERROR_TOKENS:
        index, counted_to = first_index, lo
        pos = content.find(token, lo, hi)
        while pos != -1:
            index += content.count("\n", counted_to, pos)
            start = content.rfind("\n", lo, pos) + 1 or lo
            end = content.find("\n", pos, hi)
            end = hi if end == -1 else end
            if index not in found:
                found[index] = _Line(index, max(start, lo), end)
            if end >= hi:
                break
            counted_to, index = end + 1, index + 1
            pos = content.find(token, end + 1, hi)
    return [line for _, line in sorted(found.items()) if ERROR_LINE.search(line.text(content))]


def _take(lines: Iterator[_Line], content: str, budget: int) -> list[_Line]:
    taken: list[_Line] = []
    used = 0
    for line in lines:
        cost = len(_cut_line(line.text(content))) + 1
        if used + cost > budget:
            break
        taken.append(line)
        used += cost
    return taken


def _spread_pick(candidates: list[_Line], content: str, budget: int) -> list[_Line]:
    """Error lines from both ends of the middle: the first failure and the final summary."""
    picked: list[_Line] = []
    used = 0
    left, right = 0, len(candidates) - 1
    from_left = True
    while left <= right:
        line = candidates[left] if from_left else candidates[right]
        cost = len(_cut_line(line.text(content))) + 40
        if used + cost > budget:
            break
        picked.append(line)
        used += cost
        if from_left:
            left += 1
        else:
            right -= 1
        from_left = not from_left
    return picked


def _render_with_gaps(content: str, keep: list[_Line], total: int) -> str:
    out: list[str] = []
    prev = -1
    for line in keep:
        if line.index - prev > 1:
            out.append(_gap_note(prev + 1, line.index - 1))
        out.append(_cut_line(line.text(content)))
        prev = line.index
    if prev < total - 1:
        out.append(_gap_note(prev + 1, total - 1))
    return "\n".join(out)


def _gap_note(first: int, last: int) -> str:
    count = last - first + 1
    return f"… lines {first + 1}-{last + 1} omitted ({count} lines) …"


def _char_head_tail(content: str, max_chars: int) -> str:
    half = max(1, (max_chars - 60) // 2)
    omitted = len(content) - 2 * half
    return f"{content[:half]}\n… {omitted:,} chars omitted …\n{content[-half:]}"


# ── JSON ────────────────────────────────────────────────────────────────────────────────


def _parse_json(content: str) -> Any | None:
    try:
        value = json.loads(content)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, (dict, list)) else None


def _type_name(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return f"array[{len(value)}]"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if value is None:
        return "null"
    return "string"


def _shape(value: Any) -> str:
    """One-line type signature: ``object{id: number, tags: array[3]}``."""
    if isinstance(value, dict):
        keys = list(value)[:_JSON_KEYS_LISTED]
        inner = ", ".join(f"{k}: {_type_name(value[k])}" for k in keys)
        more = ", …" if len(value) > len(keys) else ""
        return f"object{{{inner}{more}}}"
    if isinstance(value, list):
        if not value:
            return "array[0]"
        return f"array[{len(value)}] of {_shape_brief(value[0])}"
    return _type_name(value)


def _shape_brief(value: Any) -> str:
    if isinstance(value, dict):
        keys = list(value)[:12]
        return "object{" + ", ".join(keys) + (", …" if len(value) > len(keys) else "") + "}"
    return _type_name(value)


def _compact(value: Any, limit: int) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} chars)"


def json_preview(value: Any, max_chars: int) -> str:
    """A structural summary of a JSON document that fits ``max_chars``."""
    out: list[str] = []
    used = 0

    def emit(line: str) -> bool:
        nonlocal used
        line = _cut_line(line)
        if used + len(line) + 1 > max_chars - 40:
            return False
        out.append(line)
        used += len(line) + 1
        return True

    if isinstance(value, list):
        emit(f"JSON array of {len(value)} items; items are {_shape_brief(value[0]) if value else 'none'}")
        shown = 0
        for index in _array_sample(len(value)):
            if not emit(f"  [{index}]: {_compact(value[index], _JSON_ITEM_CHARS)}"):
                break
            shown += 1
        if shown < len(value):
            out.append(f"  … {len(value) - shown} more items …")
        return "\n".join(out)
    emit(f"JSON object with {len(value)} keys:")
    listed = 0
    for key, item in value.items():
        if not _emit_member(emit, key, item):
            break
        listed += 1
    if listed < len(value):
        out.append(f"  … {len(value) - listed} more keys …")
    return "\n".join(out)


def _array_sample(length: int) -> list[int]:
    if length <= 4:
        return list(range(length))
    return [0, 1, 2, length - 1]


def _emit_member(emit: Any, key: str, item: Any) -> bool:
    label = json.dumps(key, ensure_ascii=False)
    if isinstance(item, list):
        if not emit(f"  {label}: {_shape(item)}"):
            return False
        for index in _array_sample(len(item))[:2]:
            if not emit(f"    [{index}]: {_compact(item[index], _JSON_ITEM_CHARS)}"):
                return False
        return True
    if isinstance(item, dict):
        if not emit(f"  {label}: {_shape(item)}"):
            return False
        for sub_key, sub in list(item.items())[:6]:
            rendered = _compact(sub, _JSON_SCALAR_CHARS) if not isinstance(sub, (dict, list)) else _shape(sub)
            if not emit(f"    {json.dumps(sub_key, ensure_ascii=False)}: {rendered}"):
                return False
        return True
    return emit(f"  {label}: {_compact(item, _JSON_SCALAR_CHARS)}")


# ── the model-visible wrapper ─────────────────────────────────────────────────────────


def _meta_get(meta: Any, key: str, default: Any = None) -> Any:
    if isinstance(meta, Mapping):
        return meta.get(key, default)
    return getattr(meta, key, default)


def persisted_output(tool_name: str, content: str, artifact_meta: Any, preview: str) -> str:
    """``<persisted-output tool=… path=… original_chars=…>`` + preview + how to read more."""
    path = str(_meta_get(artifact_meta, "path", ""))
    original = int(_meta_get(artifact_meta, "original_chars", len(content)))
    line_count = content.count("\n") + (0 if content.endswith("\n") else 1)
    cut = " The saved copy was cut at the artifact size cap." if _meta_get(artifact_meta, "truncated") else ""
    pointer = (
        f"[Full output ({original:,} chars, {line_count:,} lines) saved to {path}.{cut} "
        f'Page through it with read_tool_result(path="{path}", offset=<line>, limit=<lines>), '
        "or rerun with a narrower query.]"
    )
    return frame("persisted-output", f"{preview}\n{pointer}", tool=tool_name, path=path, original_chars=original)


def truncated_output(tool_name: str, content: str, preview: str) -> str:
    """The wrapper when no artifact store is available: the rest is gone, and it says so."""
    note = "[Output was too large and no session artifact store was available; only this preview was kept.]"
    return frame("truncated-output", f"{preview}\n{note}", tool=tool_name, original_chars=len(content))
