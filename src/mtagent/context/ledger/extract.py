"""Read a :class:`~mtagent.context.ledger.model.HandoffLedger` from messages — no model call.

Built on :func:`mtagent.context.compaction.facts.extract_facts` (goal, requests, constraints, files,
latest verification: one definition of "what must survive"), plus what only the ledger tracks:
the plan, created versus edited versus deleted files, failed commands with their error tail, the
latest error line (of any result, also one that exited 0), tools loaded, open subagent tasks and rule
files. A summary message in the messages stands for everything before it: its ledger (stored as
data on the message, or read back from its text for hand-offs written before there was one) comes
first and the messages after it are merged in.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from mtagent.context.boundary import is_summary_message
from mtagent.context.compaction import facts as F
from mtagent.context.ledger.model import (
    CREATED,
    DELETED,
    EDITED,
    FailedCommand,
    HandoffLedger,
    change_file,
    ledger_from_dict,
    merge_ledgers,
)
from mtagent.context.ledger.render import parse_rendered
from mtagent.context.ledger.workplan import plan_calls
from mtagent.context.tokens import message_text

CREATE_TOOLS = frozenset({"write_file", "write", "create", "create_file"})
DELETE_TOOLS = frozenset({"delete_file", "remove_file", "delete"})
TASK_TOOLS = frozenset({"task", "agent"})
TOOL_SEARCH = "tool_search"
ERROR_TAIL_LINES = 3
MAX_TAIL_LINE_CHARS = 200
MAX_COMMAND_CHARS = 300
_LOADED_LINE = re.compile(r"^- ([\w.:-]+) \(")
_RULE_SOURCE = re.compile(r'<project_context source="([^"\n]{1,300})">')
_SEGMENTS = re.compile(r"&&|\|\||[;|&\n]")
LEDGER_KEY = "ledger"


def stored_ledger(message: BaseMessage) -> HandoffLedger | None:
    """The ledger a summary message carries as data (see :func:`mtagent.context.boundary.summary_message`)."""
    meta = (message.response_metadata or {}).get("mtagent") or {}
    return ledger_from_dict(meta.get(LEDGER_KEY))


def _command(args: dict[str, Any]) -> str:
    return str(args.get("command", args.get("cmd", "")))


def deleted_paths(command: str) -> list[str]:
    """Paths an ``rm`` / ``git rm`` in a shell command removes (flags and globs skipped)."""
    found: list[str] = []
    for segment in _SEGMENTS.split(command):
        try:
            words = shlex.split(segment)
        except ValueError:
            words = segment.split()
        if words[:2] == ["git", "rm"]:
            words = words[1:]
        if not words or words[0] != "rm":
            continue
        found += [w for w in words[1:] if not w.startswith("-") and not any(c in w for c in "*?[")]
    return found


def error_tail(text: str) -> str:
    """The error line of a failed result and its last lines, one ``⏎``-joined line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    tail = [F.clip(line, MAX_TAIL_LINE_CHARS) for line in lines[-ERROR_TAIL_LINES:]]
    strict = F.error_line(text)
    if strict and strict not in tail:
        tail.insert(0, strict)
    return " ⏎ ".join(tail) or "(no output)"


def rule_sources(messages: Sequence[BaseMessage]) -> list[str]:
    """The rule and context files ``messages`` — the system-prompt context of a call (the system message
    and the session-context message that frames the project's files) — carry, by source, in order."""
    found: list[str] = []
    for message in messages:
        found += [s for s in _RULE_SOURCE.findall(message_text(message)) if s not in found]
    return found


def _stretch(messages: Sequence[BaseMessage]) -> HandoffLedger:
    """The ledger of messages without summaries in them."""
    found = F.extract_facts(messages)
    ledger = HandoffLedger(goal=found.first_request or found.goal, requests=list(found.user_requests), constraints=list(found.constraints),
                           files_read=list(found.files_read), verification=found.latest_verification)
    ledger.plan = plan_calls(messages).latest
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    seen: set[str] = set(found.files_read)
    for message in messages:
        if isinstance(message, SystemMessage):
            for source in rule_sources([message]):
                if source not in ledger.rules:
                    ledger.rules.append(source)
        elif isinstance(message, AIMessage):
            said = message.content if isinstance(message.content, str) else message_text(message)
            why = F.clip(said.strip().splitlines()[0], F.MAX_FACT_CHARS) if said.strip() else ""
            for call in message.tool_calls:
                name, args = call["name"], dict(call.get("args") or {})
                calls[str(call.get("id"))] = (name, args)
                _note_change(ledger, name.lower(), args, why, seen)
                if name.lower() in TASK_TOOLS:
                    ledger.open_tasks[str(call.get("id"))] = F.clip(
                        str(args.get("description") or args.get("prompt") or name), F.MAX_FACT_CHARS)
        elif isinstance(message, ToolMessage):
            _note_result(ledger, message, calls.get(message.tool_call_id))
    return ledger


def _note_change(ledger: HandoffLedger, kind: str, args: dict[str, Any], why: str, seen: set[str]) -> None:
    path = F.call_path(args)
    if kind in F.WRITE_TOOLS and path:
        new = kind in CREATE_TOOLS and path not in seen and path not in ledger.files_changed
        change_file(ledger.files_changed, path, CREATED if new else EDITED, why)
        seen.add(path)
    elif kind in DELETE_TOOLS and path:
        change_file(ledger.files_changed, path, DELETED)
    elif kind in F.SHELL_TOOLS:
        command = _command(args)
        for written in F.shell_written_files(command):
            change_file(ledger.files_changed, written, EDITED if written in seen else CREATED, why)
            seen.add(written)
        for gone in deleted_paths(command):
            change_file(ledger.files_changed, gone, DELETED)


def _note_result(ledger: HandoffLedger, message: ToolMessage, call: tuple[str, dict[str, Any]] | None) -> None:
    name, args = call if call else (message.name or "", {})
    kind = name.lower()
    error = F.error_line(message_text(message))
    if error:
        ledger.latest_error = error
    if kind in TASK_TOOLS:
        ledger.open_tasks.pop(message.tool_call_id, None)
        ledger.closed_tasks.add(message.tool_call_id)
    if kind == TOOL_SEARCH and not F.failed_result(message):
        for line in message_text(message).splitlines()[1:]:
            match = _LOADED_LINE.match(line)
            if match and match.group(1) not in ledger.tools_loaded:
                ledger.tools_loaded.append(match.group(1))
    if kind not in F.SHELL_TOOLS:
        return
    command = F.clip(_command(args), MAX_COMMAND_CHARS)
    ledger.failed_commands = [f for f in ledger.failed_commands if f.command != command]
    if F.failed_result(message):
        ledger.failed_commands.append(FailedCommand(command, error_tail(message_text(message))))
        ledger.passed_commands.discard(command)
    else:
        ledger.passed_commands.add(command)


def ledger_from_messages(messages: Sequence[BaseMessage], previous: HandoffLedger | None = None) -> HandoffLedger:
    """The ledger of ``messages``: ``previous`` first, then each summary message's ledger and the
    messages after it, in order. The first goal stands through any number of summaries."""
    ledger = previous
    stretch: list[BaseMessage] = []
    for message in messages:
        if is_summary_message(message):
            if stretch:
                ledger = merge_ledgers(ledger, _stretch(stretch))
                stretch = []
            carried = stored_ledger(message) or parse_rendered(message_text(message))
            ledger = merge_ledgers(ledger, carried)
        else:
            stretch.append(message)
    if stretch or ledger is None:
        ledger = merge_ledgers(ledger, _stretch(stretch))
    return ledger


__all__ = ["CREATED", "DELETED", "EDITED", "LEDGER_KEY", "deleted_paths", "error_tail", "ledger_from_messages",
           "stored_ledger"]
