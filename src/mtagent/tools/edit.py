"""``write_file`` and ``edit_file``: changes based on what the model has actually read.

Overwriting or editing an existing file requires that the agent read (or wrote) it in this
session and that it has not changed on disk since — otherwise the change would be based on
content the model never saw. Every write marks earlier reads of the file stale
(:meth:`~mtagent.tools.read_state.ReadState.record_write`).
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from mtagent.safe_open import NotRegularFile
from mtagent.tools.base import ToolInputError, WorkspaceTool
from mtagent.tools.read_state import DIGEST_MAX_BYTES, FileStamp, stamp_of_open
from mtagent.tools.text_files import human_size, not_found_message, number_lines

_SNIPPET_CONTEXT = 3
_SNIPPET_MAX_LINES = 30
_CANDIDATES_SHOWN = 3
_CLOSE_CUTOFF = 0.6


class WriteFileArgs(BaseModel):
    file_path: str = Field(description="Path of the file to create or overwrite, relative to the workspace root.")
    content: str = Field(description="The complete new content of the file.")


class EditFileArgs(BaseModel):
    file_path: str = Field(description="Path of the file to edit, relative to the workspace root.")
    old_string: str = Field(description="Exact text to replace (copy it from read_file output, after the tab).")
    new_string: str = Field(description="Text to put in its place.")
    replace_all: bool = Field(False, description="Replace every occurrence instead of requiring exactly one.")


def _write(tool: WorkspaceTool, path: Path, text: str) -> list[str]:
    """Write ``text`` through a descriptor opened race-free (:mod:`~mtagent.safe_open`): never
    through a symlink or a hard link, truncating only after the descriptor passed its checks."""
    ws = tool.context.workspace
    blocking = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        shown = ws.relative(blocking)
        raise ToolInputError(f"{shown} is a file, so it cannot hold {ws.relative(path)}; "
                             "choose another path, or move that file first")
    data = text.encode("utf-8")
    try:
        opened = ws.open_write(path)
    except NotRegularFile as exc:
        raise ToolInputError(f"{ws.relative(path)}: {exc}") from None
    with os.fdopen(opened.fd, "wb") as fh:
        fh.truncate(0)
        fh.write(data)
        fh.flush()
        st = os.fstat(fh.fileno())
    digest = hashlib.sha256(data).hexdigest() if len(data) <= DIGEST_MAX_BYTES else None
    staled = tool.context.read_state.record_write(path, FileStamp(st.st_mtime_ns, st.st_size, digest))
    return [r.tool_call_id for r in staled]


def _stale_note(ids: list[str]) -> str:
    if not ids:
        return ""
    return f" {len(ids)} earlier read(s) of this file are now out of date."


def _load(tool: WorkspaceTool, path: Path, shown: str, verb: str, max_bytes: int | None = None) -> bytes:
    """The file's content, read through a race-free descriptor after checking the agent may change
    it (read before, unchanged since) and that it is not over ``max_bytes``."""
    try:
        with tool.context.workspace.open_read(path) as (fh, st):
            if max_bytes is not None and st.st_size > max_bytes:
                raise ToolInputError(
                    f"refusing to {verb} {shown}: it is {human_size(st.st_size)}, over the "
                    f"{human_size(max_bytes)} edit_file limit (read_file.edit_max_bytes); change it with shell "
                    "(e.g. `sed -i`) or split the file"
                )
            why = tool.context.read_state.check_editable(path, stamp_of_open(fh, st))
            if why:
                raise ToolInputError(f"refusing to {verb} {shown}: {why}")
            return fh.read() if max_bytes is not None else b""
    except NotRegularFile as exc:
        if exc.is_dir:
            raise ToolInputError(f"{shown} is a folder; give a file path") from None
        raise ToolInputError(f"{shown}: {exc}") from None


class WriteFileTool(WorkspaceTool):
    name: str = "write_file"
    description: str = (
        "Create a file, or replace a file's whole content. To change part of an existing file "
        "use edit_file. Overwriting an existing file requires reading it first."
    )
    args_schema: type[BaseModel] = WriteFileArgs

    def execute(self, call_id: str, file_path: str, content: str) -> tuple[str, dict[str, Any]]:
        ws = self.context.workspace
        path = ws.resolve(file_path)
        shown = ws.relative(path)
        existed = ws.lstat(path) is not None
        if existed:
            _load(self, path, shown, "overwrite")
        stale = _write(self, path, content)
        lines = content.count("\n") + (0 if not content or content.endswith("\n") else 1)
        size = len(content.encode("utf-8"))
        verb = "Overwrote" if existed else "Created"
        return (f"{verb} {shown} ({lines} lines, {size} bytes).{_stale_note(stale)}",
                {"kind": "write_file", "file_path": shown, "created": not existed, "num_lines": lines,
                 "bytes": size, "stale_reads": stale})


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _squash(line: str) -> str:
    return re.sub(r"\s+", " ", line.strip())


def closest_match_hint(text: str, old: str) -> str:
    """Where ``old`` almost occurs: a whitespace-insensitive hit, or the most similar lines."""
    lines = text.splitlines()
    old_lines = old.splitlines() or [old]
    width = len(old_lines)
    wanted = [_squash(x) for x in old_lines]
    for i in range(0, max(0, len(lines) - width) + 1):
        if [_squash(x) for x in lines[i:i + width]] == wanted:
            block = number_lines(lines[i:i + width][:_SNIPPET_MAX_LINES], i + 1, 300)
            return (f" It matches lines {i + 1}-{i + width} if whitespace is ignored; copy the exact "
                    f"indentation from read_file output:\n{block}")
    anchor = next((x for x in wanted if x), "")
    scored: list[tuple[float, int]] = []
    for i, line in enumerate(lines):
        squashed = _squash(line)
        if not squashed:
            continue
        matcher = difflib.SequenceMatcher(None, squashed, anchor, autojunk=False)
        if matcher.real_quick_ratio() >= _CLOSE_CUTOFF and matcher.quick_ratio() >= _CLOSE_CUTOFF:
            ratio = matcher.ratio()
            if ratio >= _CLOSE_CUTOFF:
                scored.append((ratio, i))
    if not scored:
        return " No similar lines found; read the file again and copy the text exactly."
    scored.sort(key=lambda t: (-t[0], t[1]))
    shown = []
    for _, i in scored[:_CANDIDATES_SHOWN]:
        shown.append(number_lines(lines[i:i + min(width, 5)], i + 1, 300))
    return " The closest lines are:\n" + "\n---\n".join(shown)


class EditFileTool(WorkspaceTool):
    name: str = "edit_file"
    description: str = (
        "Replace an exact string in a file. old_string must match the file exactly (including "
        "indentation) and be unique unless replace_all=true; add surrounding lines to make it "
        "unique. The file must have been read with read_file first. An empty old_string creates "
        "a new file with new_string as its content."
    )
    args_schema: type[BaseModel] = EditFileArgs

    def execute(self, call_id: str, file_path: str, old_string: str, new_string: str,
                replace_all: bool = False) -> tuple[str, dict[str, Any]]:
        ws = self.context.workspace
        path = ws.resolve(file_path)
        shown = ws.relative(path)
        if old_string == new_string:
            raise ToolInputError("old_string and new_string are identical; there is nothing to change")
        if ws.lstat(path) is None:
            if old_string:
                raise ToolInputError(not_found_message(path, shown))
            stale = _write(self, path, new_string)
            return (f"Created {shown}.{_stale_note(stale)}",
                    {"kind": "edit_file", "file_path": shown, "created": True, "replacements": 0})
        data = _load(self, path, shown, "edit", self.context.settings.read_file.edit_max_bytes)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ToolInputError(f"{shown} is not valid UTF-8 text; edit_file only edits text files") from exc
        if not old_string:
            if text.strip():
                raise ToolInputError(f"old_string is empty but {shown} has content; give the exact text to "
                                     "replace, or use write_file to replace the whole file")
            new_text, count, first = new_string, 1, 0
        else:
            old, new = old_string, new_string
            count = text.count(old)
            if count == 0 and "\r\n" in text and "\n" in old:
                old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
                count = text.count(old)
            if count == 0:
                raise ToolInputError(f"old_string was not found in {shown}." + closest_match_hint(text, old_string))
            if count > 1 and not replace_all:
                starts = [m.start() for m in re.finditer(re.escape(old), text)][:10]
                where = ", ".join(str(_line_of(text, s)) for s in starts)
                raise ToolInputError(
                    f"old_string occurs {count} times in {shown} (at lines {where}); include more "
                    "surrounding lines to make it unique, or set replace_all=true to change them all"
                )
            first = text.index(old)
            new_text = text.replace(old, new) if replace_all else text.replace(old, new, 1)
            new_string = new
        stale = _write(self, path, new_text)
        first_line = _line_of(text, first)
        new_lines = new_text.splitlines()
        span = new_string.count("\n") + 1
        lo = max(1, first_line - _SNIPPET_CONTEXT)
        hi = min(len(new_lines), first_line + span - 1 + _SNIPPET_CONTEXT, lo + _SNIPPET_MAX_LINES - 1)
        snippet = number_lines(new_lines[lo - 1:hi], lo, 300) if new_lines else "(file is now empty)"
        plural = "s" if count != 1 else ""
        return (f"Edited {shown}: replaced {count} occurrence{plural} (first at line {first_line})."
                f"{_stale_note(stale)}\n{snippet}",
                {"kind": "edit_file", "file_path": shown, "created": False, "replacements": count,
                 "start_line": first_line, "stale_reads": stale})
