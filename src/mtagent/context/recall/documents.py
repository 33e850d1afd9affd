"""What each transcript record contributes to the recall index.

A record is untrusted input (a transcript may be edited or damaged): every field is read
defensively, paths named by a record are opened only inside the session's artifact folder
(:class:`~mtagent.session.artifacts.ArtifactStore` refuses anything else), and text is capped.

Freshness needs to know which items *read* a file and which calls *edited* one: the tool calls
of an assistant message are remembered (:class:`CallTracker`) so the tool result that answers
them can be labelled with the file it read, and an edit becomes an ``edits`` row.
"""

from __future__ import annotations

import itertools
import json
import os
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtagent.context.recall.store import Doc
from mtagent.context.tokens import content_text
from mtagent.errors import ArtifactPathError
from mtagent.session.artifacts import ArtifactStore
from mtagent.session.schema import parse_timestamp

READ_TOOLS = frozenset({"read_file", "Read", "open", "view", "NotebookRead"})
EDIT_TOOLS = frozenset({"edit_file", "write_file", "Edit", "MultiEdit", "Write", "NotebookEdit", "create",
                        "edit", "apply_edits", "insert"})
EDITOR_TOOLS = frozenset({"str_replace_editor", "str_replace_based_edit_tool"})
EDITOR_WRITES = frozenset({"create", "str_replace", "insert", "undo_edit", "edit"})
PATH_KEYS = ("file_path", "path", "filename", "file", "notebook_path")
MAX_TRACKED_CALLS = 4096
# Calls that search the index and the results they return are not indexed: a recall's query is
# the words it searches for, so the call in progress came back as its own hit #1, and its result
# is a copy of items already indexed (#38).
SEARCH_TOOLS = frozenset({"recall"})


def text_of(content: Any) -> str:
    """The text of a message's content (a string, or a list of text parts)."""
    if not isinstance(content, str | list):
        return ""
    return content_text(content, lambda part: part["text"] if isinstance(part.get("text"), str) else None)


def record_ts(record: dict[str, Any]) -> float | None:
    parsed = parse_timestamp(record.get("timestamp"))
    return parsed.timestamp() if parsed else None


def file_key(path: str, root: Path | None) -> str | None:
    """A stable name for a workspace file: relative to the project when inside it."""
    if not isinstance(path, str) or not path.strip() or "\x00" in path:
        return None
    raw = path.strip()
    norm = os.path.normpath(raw)
    if root is not None and os.path.isabs(norm):
        try:
            rel = os.path.relpath(norm, root)
        except ValueError:
            rel = norm
        if not rel.startswith(".."):
            norm = rel
    return norm.replace(os.sep, "/")[:1000]


def _call_path(args: Any) -> str | None:
    if not isinstance(args, dict):
        return None
    for key in PATH_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _editor_command(name: str, args: Any) -> str | None:
    """What an editor tool's call does (``view``, ``create``, …); None for any other tool, or a
    command that is not a string (a model's call is hostile: a list is not even hashable)."""
    command = args.get("command") if name in EDITOR_TOOLS and isinstance(args, dict) else None
    return command if isinstance(command, str) else None


def edited_path(name: str, args: Any) -> str | None:
    """The file a tool call writes, if it is an edit."""
    return _call_path(args) if name in EDIT_TOOLS or _editor_command(name, args) in EDITOR_WRITES else None


def read_path(name: str, args: Any) -> str | None:
    """The file a tool call reads, if it is a read."""
    return _call_path(args) if name in READ_TOOLS or _editor_command(name, args) == "view" else None


@dataclass
class CallTracker:
    """Recent tool calls by id (name, args) — bounded, so a huge session cannot grow it forever."""

    calls: OrderedDict[str, tuple[str, Any]] = field(default_factory=OrderedDict)

    def remember(self, call_id: str, name: str, args: Any) -> None:
        self.calls[call_id] = (name, args)
        while len(self.calls) > MAX_TRACKED_CALLS:
            self.calls.popitem(last=False)

    def get(self, call_id: str | None) -> tuple[str, Any] | None:
        return self.calls.get(call_id) if call_id else None


@dataclass(slots=True)
class Edit:
    file_key: str
    ts: float
    message_id: str | None


@dataclass(slots=True)
class Extracted:
    docs: list[Doc] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)
    compacted_before: str | None = None  # a boundary: first kept message id ("" = everything)
    stream: Iterator[Doc] | None = None  # more docs, read as they are written (an artifact's chunks)

    def drain(self) -> Iterator[Doc]:
        """Every doc, each let go once taken (a 50 MB artifact is 13,000 chunks: never all at once)."""
        docs, self.docs = self.docs[::-1], []
        while docs:
            yield docs.pop()
        if self.stream is not None:
            stream, self.stream = self.stream, None
            yield from stream


def _calls_text(calls: Any, tracker: CallTracker) -> str:
    parts: list[str] = []
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict):
            continue
        name = str(call.get("name") or "")
        args = call.get("args")
        if isinstance(call.get("id"), str):
            tracker.remember(call["id"], name, args)
        if name not in SEARCH_TOOLS:
            parts.append(f"{name}({_args_text(args)})")
    return "\n".join(parts)


def _args_text(args: Any) -> str:
    """A call's arguments as text to search: string values verbatim (a written file's lines stay
    lines — JSON would turn ``\\ndefmodule`` into the one token ``ndefmodule``), others as JSON."""
    if isinstance(args, dict):
        return "\n".join(f"{key}: {value if isinstance(value, str) else _json(value)}"
                         for key, value in sorted(args.items(), key=lambda kv: str(kv[0])))
    return _json(args)


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


def from_message(record: dict[str, Any], session: str, root: Path | None, tracker: CallTracker,
                 max_chars: int, chunk: int = 0) -> Extracted:
    """A message's item — in chunks of ``chunk`` lines when it is longer (a read of a 110-line file,
    a log), so the chunk holding a fact ranks, not the whole message behind short ones."""
    out = Extracted()
    mid = record.get("id")
    if not isinstance(mid, str) or not mid:
        return out
    role = str(record.get("role") or "")
    ts = record_ts(record)
    text = text_of(record.get("content"))
    tool = record.get("name") if isinstance(record.get("name"), str) else None
    reads: str | None = None
    if role == "assistant":
        calls = record.get("tool_calls") or []
        calls_text = _calls_text(calls, tracker)
        text = f"{text}\n{calls_text}".strip() if calls_text else text
        for call in calls if isinstance(calls, list) else []:
            if isinstance(call, dict):
                path = edited_path(str(call.get("name") or ""), call.get("args"))
                key = file_key(path, root) if path else None
                if key and ts is not None:
                    out.edits.append(Edit(key, ts, mid))
    elif role == "tool":
        known = tracker.get(record.get("tool_call_id"))
        if known is not None:
            tool = tool or known[0]
            path = read_path(known[0], known[1])
            reads = file_key(path, root) if path else None
        if tool in SEARCH_TOOLS:
            return out
    elif role == "system":
        return out
    if not text.strip():
        return out
    authority = {"user": "user", "tool": "retrieval"}.get(role, "task_state")
    if role == "user" and _author(record) not in (None, "user"):
        authority = "assistant"  # a model wrote it (a subagent's brief): never recalled as the user's word
    text = text[:max_chars]
    pieces = chunk_lines(text, chunk) if chunk and text.count("\n") >= chunk else []
    if len(pieces) < 2:
        out.docs.append(Doc(uid=f"msg:{session}:{mid}", kind="message", text=text, session=session,
                            message_id=mid, role=role, tool=tool, authority=authority, ts=ts, file_key=reads))
        return out
    for first, last, body in pieces:
        out.docs.append(Doc(uid=f"msg:{session}:{mid}:{first}", kind="message", text=body, session=session,
                            message_id=mid, role=role, tool=tool, authority=authority, ts=ts, file_key=reads,
                            line_start=first, line_end=last))
    return out


def _author(record: dict[str, Any]) -> str | None:
    """Who wrote a ``user`` record that the user did not (``response_metadata.mtagent.author``)."""
    meta = record.get("response_metadata")
    inner = meta.get("mtagent") if isinstance(meta, dict) else None
    author = inner.get("author") if isinstance(inner, dict) else None
    return author if isinstance(author, str) else None


def chunk_lines(text: str, size: int) -> list[tuple[int, int, str]]:
    """(first line, last line, text) chunks of ``size`` lines, 1-based and inclusive."""
    lines = text.splitlines()
    out: list[tuple[int, int, str]] = []
    for start in range(0, len(lines), max(1, size)):
        part = lines[start:start + size]
        body = "\n".join(part)
        if body.strip():
            out.append((start + 1, start + len(part), body))
    return out


def _chunk_stream(lines: Iterable[str], size: int, max_chars: int) -> Iterator[tuple[int, int, str]]:
    """:func:`chunk_lines` of a stream of lines, each chunk's text cut at ``max_chars``."""
    size = max(1, size)
    part: list[str] = []
    first = number = 1
    for number, line in enumerate(lines, 1):
        part.append(line)
        if len(part) == size:
            body = "\n".join(part)
            if body.strip():
                yield first, number, body[:max_chars]
            part, first = [], number + 1
    if part:
        body = "\n".join(part)
        if body.strip():
            yield first, number, body[:max_chars]


def from_artifact(record: dict[str, Any], session: str, artifacts: ArtifactStore, tracker: CallTracker,
                  root: Path | None, chunk: int, max_chars: int) -> Extracted:
    out = Extracted()
    rel, call_id = record.get("path"), record.get("tool_call_id")
    if not isinstance(rel, str) or not isinstance(call_id, str):
        return out
    chunks = _chunk_stream(artifacts.read_lines(rel), chunk, max_chars)  # never the whole text at once
    try:
        head = next(chunks, None)  # a missing or refused artifact: nothing
    except (ArtifactPathError, OSError):
        return out
    known = tracker.get(call_id)
    reads = None
    if known is not None:
        path = read_path(known[0], known[1])
        reads = file_key(path, root) if path else None
    tool = record.get("tool") if isinstance(record.get("tool"), str) else (known[0] if known else None)
    ts = record_ts(record)

    def docs() -> Iterator[Doc]:
        for first, last, body in itertools.chain([head] if head else [], chunks):
            yield Doc(uid=f"art:{session}:{rel}:{first}", kind="artifact", text=body, session=session, path=rel,
                      line_start=first, line_end=last, role="tool", tool=tool, authority="retrieval", ts=ts,
                      file_key=reads)

    out.stream = docs()
    return out


def from_session_memory(record: dict[str, Any], session: str, artifacts: ArtifactStore,
                        max_chars: int) -> Extracted:
    out = Extracted()
    rel = record.get("path")
    if not isinstance(rel, str):
        return out
    try:
        text = artifacts.read_text(rel)
    except (ArtifactPathError, OSError):
        return out
    if text.strip():
        out.docs.append(Doc(uid=f"sm:{session}", kind="session_memory", text=text[:max_chars], session=session,
                            path=rel, authority="task_state", ts=record_ts(record)))
    return out


def from_boundary(record: dict[str, Any], session: str, max_chars: int) -> Extracted:
    out = Extracted()
    bid = record.get("id")
    summary = record.get("summary")
    if isinstance(bid, str) and isinstance(summary, str) and summary.strip():
        out.docs.append(Doc(uid=f"sum:{session}:{bid}", kind="summary", text=summary[:max_chars], session=session,
                            message_id=bid, role="summary", authority="summary", ts=record_ts(record)))
    first = record.get("first_kept_id")
    out.compacted_before = first if isinstance(first, str) and first else ""
    return out
