"""``read_file`` and ``read_tool_result``: text for the model, with line numbers and limits (spec M3).

``read_file`` bounds itself instead of being persisted by the budgeter: a file over
``read_file.max_size_bytes`` (256 KB) or a read over ``read_file.max_tokens`` (25,000) without
a range is refused with its size and how to page; an identical re-read of an unchanged file
returns a ``file_unchanged`` stub. ``read_tool_result`` pages through a persisted tool result
in the session's artifact store, so persisting a result loses nothing for the model.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel, Field

from mtagent.context.tokens import count_text_tokens
from mtagent.safe_open import NotRegularFile
from mtagent.tools.base import ToolInputError, WorkspaceTool
from mtagent.tools.read_state import FileStamp, ReadRecord, stamp_of_open
from mtagent.tools.text_files import (
    SNIFF_BYTES,
    binary_kind,
    count_lines,
    human_size,
    not_found_message,
    number_lines,
    read_slice,
    split_lines,
)


class ReadFileArgs(BaseModel):
    file_path: str = Field(description="Path of the file, relative to the workspace root.")
    offset: int | None = Field(None, ge=1, description="First line to read (1-based). Use with limit to page.")
    limit: int | None = Field(None, ge=1, description="How many lines to read from offset.")
    start_line: int | None = Field(None, ge=1, description="Alternative to offset: first line, 1-based, inclusive.")
    end_line: int | None = Field(None, ge=1, description="Alternative to limit: last line, 1-based, inclusive.")


def normalize_range(offset: int | None, limit: int | None, start_line: int | None,
                    end_line: int | None) -> tuple[int | None, int | None]:
    """``start_line``/``end_line`` → ``offset``/``limit`` (the read-state key uses the latter)."""
    if start_line is None and end_line is None:
        return offset, limit
    if offset is not None or limit is not None:
        raise ToolInputError("give either offset/limit or start_line/end_line, not both")
    first = start_line or 1
    if end_line is None:
        return first, None
    if end_line < first:
        raise ToolInputError(f"end_line {end_line} is before start_line {first}")
    return first, end_line - first + 1


class ReadFileTool(WorkspaceTool):
    name: str = "read_file"
    description: str = (
        "Read a text file from the workspace. Output has line numbers (`  12\\t...`); the text "
        "after the tab is the exact file content. Large files must be read in pages with "
        "offset (1-based first line) and limit (number of lines). Re-reading an unchanged file "
        "returns a short 'file_unchanged' note: use the earlier result."
    )
    args_schema: type[BaseModel] = ReadFileArgs

    def execute(self, call_id: str, file_path: str, offset: int | None = None, limit: int | None = None,
                start_line: int | None = None, end_line: int | None = None) -> tuple[str, dict[str, Any]]:
        ctx = self.context
        offset, limit = normalize_range(offset, limit, start_line, end_line)
        path = ctx.workspace.resolve(file_path)
        shown = ctx.workspace.relative(path)
        try:
            with ctx.workspace.open_read(path) as (fh, st):
                return self._read(call_id, fh, st, path, shown, offset, limit)
        except FileNotFoundError:
            raise ToolInputError(not_found_message(path, shown)) from None
        except NotRegularFile as exc:
            if exc.is_dir:
                raise ToolInputError(f"{shown} is a folder, not a file; use ls to list it") from None
            raise ToolInputError(f"{shown} is not a regular file (a pipe, socket or device), so reading it could "
                                 "block forever; inspect it with shell (e.g. `ls -l`, `file`) instead") from None

    def _read(self, call_id: str, fh: BinaryIO, st: os.stat_result, path: Path, shown: str,
              offset: int | None, limit: int | None) -> tuple[str, dict[str, Any]]:
        """Read the opened file: every byte shown comes from this descriptor, never the path again."""
        ctx = self.context
        limits = ctx.settings.read_file
        stamp = stamp_of_open(fh, st)
        prior = ctx.read_state.unchanged_read(path, offset, limit, stamp)
        if prior is not None:
            stub = (f"file_unchanged: {shown} (lines {prior.start_line}-{prior.start_line + prior.num_lines - 1}) "
                    f"has not changed since your read in tool call {prior.tool_call_id}; "
                    "that result is still current, refer to it instead of re-reading.")
            if prior.saved:
                stub += (f" It was saved to {prior.saved}: page it with "
                         f'read_tool_result(path="{prior.saved}", offset=<line>).')
            return stub, {"kind": "file_unchanged", "file_path": shown, "previous_tool_call_id": prior.tool_call_id,
                          "mtime": stamp.mtime}
        head = fh.read(SNIFF_BYTES)
        fh.seek(0)
        kind = binary_kind(head)
        if kind is not None:
            raise ToolInputError(
                f"{shown} is {kind} ({human_size(stamp.size)}), not text; read_file only shows text. "
                "Inspect it with shell (e.g. `file`, `xxd | head`) if you need to."
            )
        ranged = offset is not None or limit is not None
        if not ranged and stamp.size > limits.max_size_bytes:
            total = count_lines(fh, limits.count_lines_max_bytes)
            counted = f"{total:,} lines" if total is not None else "too many lines to count quickly"
            raise ToolInputError(
                f"{shown} is {human_size(stamp.size)} ({counted}), over the "
                f"{human_size(limits.max_size_bytes)} limit for reading a whole file. Read it in pages: "
                f'read_file(file_path="{shown}", offset=1, limit={limits.default_limit_lines}), then '
                f"offset={limits.default_limit_lines + 1}, and so on — or grep for the part you need."
            )
        start = offset or 1
        count = limit if limit is not None else (limits.default_limit_lines if ranged else None)
        cut: dict[int, int] = {}
        if ranged:
            sliced = read_slice(fh, start, count, max_line_bytes=limits.max_line_chars * 4,
                                count_max_bytes=limits.count_lines_max_bytes)
            lines, total, undecodable, cut = sliced.lines, sliced.total_lines, sliced.undecodable, sliced.cut
        else:
            lines, undecodable = split_lines(fh.read(stamp.size))
            total = len(lines)
        if total == 0:
            text = f"{shown} is empty (0 lines)."
        elif not lines:
            raise ToolInputError(f"offset {start} is past the end of {shown}, which has {total:,} lines")
        else:
            text = number_lines(lines, start, limits.max_line_chars, cut)
            tokens = count_text_tokens(text, ctx.settings.context.encoding)
            cap = read_cap(ctx.settings)
            fit = max(1, int(len(lines) * cap / tokens * 0.9)) if tokens > cap else len(lines)
            if tokens > limits.max_tokens:
                raise ToolInputError(
                    f"lines {start}-{start + len(lines) - 1} of {shown} are {tokens:,} tokens, over the "
                    f"{limits.max_tokens:,}-token read limit. Read fewer lines at a time, e.g. "
                    f'read_file(file_path="{shown}", offset={start}, limit={fit}).'
                )
            again = ctx.read_state.reread_after_pressure(path, offset, limit, stamp)
            if tokens > cap or again is not None:
                saved = self._offload(call_id, shown, lines, start, total, tokens, fit, stamp, again)
                if saved is not None:
                    ctx.read_state.record_read(path, call_id, offset=offset, limit=limit, stamp=stamp,
                                               start_line=start, num_lines=len(lines),
                                               saved=saved[1].get("artifact"))
                    return saved
                if tokens > cap:
                    raise ToolInputError(
                        f"lines {start}-{start + len(lines) - 1} of {shown} are {tokens:,} tokens, over the "
                        f"{cap:,} tokens one read may take of this {ctx.settings.context.token_limit:,}-token "
                        f'context window. Read fewer lines at a time, e.g. read_file(file_path="{shown}", '
                        f"offset={start}, limit={fit}).")
            last = start + len(lines) - 1
            if total is None:
                text += (f"\n\n[Showing lines {start}-{last}; the file ({human_size(stamp.size)}) goes on past "
                         f"them. Continue with offset={last + 1}.]")
            elif last < total:
                text += f"\n\n[Showing lines {start}-{last} of {total:,}. Continue with offset={last + 1}.]"
            elif start > 1:
                text += f"\n\n[Showing lines {start}-{last} of {total:,} (end of file).]"
            if undecodable:
                text += "\n[Note: the file is not valid UTF-8; undecodable bytes are shown as U+FFFD (�).]"
        ctx.read_state.record_read(path, call_id, offset=offset, limit=limit, stamp=stamp,
                                   start_line=start, num_lines=len(lines))
        result = {
            "kind": "read_file", "file_path": shown, "content": "\n".join(lines), "start_line": start,
            "num_lines": len(lines), "total_lines": total, "mtime": stamp.mtime, "size_bytes": stamp.size,
            "undecodable": undecodable,
        }
        return text, result


    def _offload(self, call_id: str, shown: str, lines: list[str], start: int, total: int | None, tokens: int,
                 fit: int, stamp: FileStamp, again: ReadRecord | None) -> tuple[str, dict[str, Any]] | None:
        """Save a read that does not fit the window (or a re-read the window could not hold) as an
        artifact; the model sees a preview — none for a re-read — and how to page. None without a store."""
        ctx = self.context
        result: dict[str, Any] = {"kind": "read_file", "file_path": shown, "start_line": start,
                                  "num_lines": len(lines), "total_lines": total, "mtime": stamp.mtime,
                                  "size_bytes": stamp.size, "tokens": tokens,
                                  "offloaded": "reread" if again is not None else "window"}
        meta = ctx.budgeter.save(call_id, self.name, "\n".join(lines), result)
        if meta is None:
            return None
        last = start + len(lines) - 1
        page = (f'Page it with read_tool_result(path="{meta.path}", offset=<line>, limit={fit}) (its line 1 is '
                f'line {start} of the file), or read_file(file_path="{shown}", offset=<line>, limit={fit}).')
        if again is not None:
            text = (f"[{shown} (lines {start}-{last}) has not changed since your read in tool call "
                    f"{again.tool_call_id}, which the last compaction could not keep in view ({tokens:,} tokens). "
                    f"It is not sent again: it is saved to {meta.path}. {page}]")
            return text, {**result, "previous_tool_call_id": again.tool_call_id}
        budget = min(ctx.budgeter.policy.preview_chars, read_cap(ctx.settings) * 2)
        shown_lines: list[str] = []
        used = 0
        for line in lines:
            used += len(line) + 8
            if used > budget and shown_lines:
                break
            shown_lines.append(line)
        limits = ctx.settings.read_file
        preview = number_lines(shown_lines, start, limits.max_line_chars, {})
        more = start + len(shown_lines)
        text = (f'<persisted-output tool="read_file" path="{meta.path}" original_chars="{meta.original_chars}">\n'
                f"{preview}\n[Lines {start}-{last} of {shown} are {tokens:,} tokens, more than one read may take "
                f"of this {ctx.settings.context.token_limit:,}-token context window; lines {start}-{more - 1} are "
                f"shown above and all of them are saved to {meta.path}. Continue from offset={more}: "
                f"{page}]\n</persisted-output>")
        return text, result


def read_cap(settings: Any) -> int:
    """The most tokens one read may return inline: ``read_file.max_tokens``, and never more than
    ``read_file.max_window_share`` of the context window — on a 12K window a 25K cap let one
    read fill the window, so every compaction dropped it and the model read it again."""
    limits = settings.read_file
    return max(1, min(limits.max_tokens, int(settings.context.token_limit * limits.max_window_share)))


class ReadToolResultArgs(BaseModel):
    path: str = Field(description="The path from a <persisted-output path=...> tag, e.g. tool-results/<id>.txt.")
    offset: int = Field(1, ge=1, description="First line to read (1-based).")
    limit: int | None = Field(None, ge=1, description="How many lines to read (default: read_file's page size).")


class ReadToolResultTool(WorkspaceTool):
    name: str = "read_tool_result"
    description: str = (
        "Page through a large tool result that was saved instead of shown in full "
        "(the path in a <persisted-output> tag). Output has line numbers like read_file."
    )
    args_schema: type[BaseModel] = ReadToolResultArgs

    def execute(self, call_id: str, path: str, offset: int = 1,
                limit: int | None = None) -> tuple[str, dict[str, Any]]:
        ctx = self.context
        if ctx.artifacts is None:
            raise ToolInputError("this session has no artifact store, so no tool results were saved")
        limits = ctx.settings.read_file
        stored = ctx.artifacts.resolve(path)
        if not stored.is_file():
            raise ToolInputError(f"no saved tool result at {path}; use the path from a <persisted-output> tag")
        count = limit or limits.default_limit_lines
        with stored.open("rb") as fh:  # streamed: artifacts can be 64 MB
            sliced = read_slice(fh, offset, count, max_line_bytes=limits.max_line_chars * 4)
        page, total, cut = sliced.lines, sliced.total_lines or 0, sliced.cut
        if total and offset > total:
            raise ToolInputError(f"offset {offset} is past the end of {path}, which has {total:,} lines")
        body = number_lines(page, offset, limits.max_line_chars, cut) if page else "(empty result)"
        tokens = count_text_tokens(body, ctx.settings.context.encoding)
        if tokens > limits.max_tokens:
            fit = max(1, int(len(page) * limits.max_tokens / tokens * 0.9))
            raise ToolInputError(f"that page is {tokens:,} tokens, over the {limits.max_tokens:,}-token limit; "
                                 f"use limit={fit}")
        cap = read_cap(ctx.settings)
        while tokens > cap and len(page) > 1:  # a page is cut to what the window holds, not refused
            page = page[:max(1, int(len(page) * cap / tokens * 0.9))]
            body = number_lines(page, offset, limits.max_line_chars, cut)
            tokens = count_text_tokens(body, ctx.settings.context.encoding)
        last = offset + len(page) - 1
        footer = (f"\n\n[Showing lines {offset}-{last} of {total:,}. Continue with offset={last + 1}.]"
                  if last < total else f"\n\n[Lines {offset}-{last} of {total:,} (end).]")
        return body + footer, {"kind": "read_tool_result", "path": path, "start_line": offset,
                               "num_lines": len(page), "total_lines": total}
