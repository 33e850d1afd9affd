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

import html
import json
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any, Literal

PreviewKind = Literal["grep", "shell", "json", "text"]

GREP_TOOLS = frozenset({"grep", "rg", "search", "search_files", "find_in_files", "search_code"})
SHELL_TOOLS = frozenset({
    "shell", "bash", "execute_bash", "run", "run_shell", "run_command", "terminal",
    "execute_command", "run_ipython", "execute_ipython_cell",
})

# Lines a reader of a long log wants even when the middle is cut.
ERROR_LINE = re.compile(
    r"\berror\b|\bError\b|ERROR|FAILED|\bFAIL\b|Traceback|\bException\b|\w+Exception\b|\w+Error\b"
    r"|\bpanic\b|\bfatal\b|\bFatal\b|warning:|Warning:|WARNING|Segmentation fault|undefined reference"
)
GREP_MATCH_LINE = re.compile(r"^(?P<path>[^\n]+?):(?P<line>\d+):")

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


# ── grep ───────────────────────────────────────────────────────────────────────────────


def grep_preview(content: str, max_chars: int) -> str:
    """``Found N matches. Showing first K lines:`` + the busiest files + the first lines."""
    lines = content.splitlines()
    per_file: Counter[str] = Counter()
    for line in lines:
        match = GREP_MATCH_LINE.match(line)
        if match:
            per_file[match.group("path")] += 1
    total = sum(per_file.values()) or sum(1 for line in lines if line.strip() and line != "--")
    files_line = ""
    if per_file:
        busiest = ", ".join(f"{path} ({n})" for path, n in per_file.most_common(_GREP_FILES_LISTED))
        more = len(per_file) - min(len(per_file), _GREP_FILES_LISTED)
        files_line = f"Matches in {len(per_file)} files: {busiest}" + (f", … (+{more} more files)" if more else "")
        files_line = _cut_line(files_line)
    budget = max_chars - len(files_line) - 60
    shown: list[str] = []
    used = 0
    for line in lines:
        cut = _cut_line(line)
        if shown and used + len(cut) + 1 > budget:
            break
        shown.append(cut)
        used += len(cut) + 1
    header = f"Found {total} matches. Showing first {len(shown)} lines:"
    parts = [header, *([files_line] if files_line else []), *shown]
    if len(shown) < len(lines):
        parts.append(f"… {len(lines) - len(shown)} more lines omitted …")
    return "\n".join(parts)


# ── shell / logs / plain text ─────────────────────────────────────────────────────────


def log_preview(content: str, max_chars: int, *, keep_errors: bool) -> str:
    """Head and tail by lines, plus error lines from the middle when ``keep_errors``.

    Up to ``_ERROR_SHARE`` of the preview goes to error lines from the middle (from both ends
    of it: the first failure and the final summary); whatever they leave unused goes to the tail.
    """
    lines = content.splitlines()
    if len(lines) <= 2:
        return _char_head_tail(content, max_chars)
    error_budget = int(max_chars * _ERROR_SHARE) if keep_errors else 0
    head_budget = int(max_chars * _HEAD_SHARE)
    tail_budget = max_chars - head_budget - error_budget - 80
    head = _take(range(len(lines)), lines, head_budget)
    head_end = head[-1] + 1 if head else 0
    tail = _take(range(len(lines) - 1, head_end - 1, -1), lines, tail_budget)
    tail_start = min(tail) if tail else len(lines)
    picked: list[int] = []
    if error_budget:
        middle = [i for i in range(head_end, tail_start) if ERROR_LINE.search(lines[i])]
        picked = _spread_pick(middle, lines, error_budget)
        spare = error_budget - sum(len(_cut_line(lines[i])) + 40 for i in picked)
        floor = max(picked) + 1 if picked else head_end
        tail = _take(range(len(lines) - 1, floor - 1, -1), lines, tail_budget + spare)
    keep = sorted({*head, *picked, *tail})
    if len(keep) == len(lines):
        return content if len(content) <= max_chars else _char_head_tail(content, max_chars)
    return _render_with_gaps(lines, keep)


def _take(indices: range, lines: list[str], budget: int) -> list[int]:
    taken: list[int] = []
    used = 0
    for i in indices:
        cost = len(_cut_line(lines[i])) + 1
        if used + cost > budget:
            break
        taken.append(i)
        used += cost
    return taken


def _spread_pick(candidates: list[int], lines: list[str], budget: int) -> list[int]:
    """Error lines from both ends of the middle: the first failure and the final summary."""
    picked: list[int] = []
    used = 0
    left, right = 0, len(candidates) - 1
    from_left = True
    while left <= right:
        i = candidates[left] if from_left else candidates[right]
        cost = len(_cut_line(lines[i])) + 40
        if used + cost > budget:
            break
        picked.append(i)
        used += cost
        if from_left:
            left += 1
        else:
            right -= 1
        from_left = not from_left
    return picked


def _render_with_gaps(lines: list[str], keep: list[int]) -> str:
    out: list[str] = []
    prev = -1
    for i in keep:
        if i - prev > 1:
            out.append(_gap_note(prev + 1, i - 1))
        out.append(_cut_line(lines[i]))
        prev = i
    if prev < len(lines) - 1:
        out.append(_gap_note(prev + 1, len(lines) - 1))
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
    attrs = (
        f'tool="{html.escape(tool_name, quote=True)}" path="{html.escape(path, quote=True)}" '
        f'original_chars="{original}"'
    )
    cut = " The saved copy was cut at the artifact size cap." if _meta_get(artifact_meta, "truncated") else ""
    pointer = (
        f"[Full output ({original:,} chars, {line_count:,} lines) saved to {path}.{cut} "
        f'Page through it with read_tool_result(path="{path}", offset=<line>, limit=<lines>), '
        "or rerun with a narrower query.]"
    )
    return f"<persisted-output {attrs}>\n{preview}\n{pointer}\n</persisted-output>"


def truncated_output(tool_name: str, content: str, preview: str) -> str:
    """The wrapper when no artifact store is available: the rest is gone, and it says so."""
    attrs = f'tool="{html.escape(tool_name, quote=True)}" original_chars="{len(content)}"'
    note = "[Output was too large and no session artifact store was available; only this preview was kept.]"
    return f"<truncated-output {attrs}>\n{preview}\n{note}\n</truncated-output>"
