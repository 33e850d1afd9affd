"""Facts a hand-off must carry, read straight from messages (no model call).

Both the :class:`~mtagent.context.compaction.summarize.ExtractiveSummarizer` (which renders them as the
hand-off sheet of spec 003 §十) and the hand-off verifier (which checks that any summary keeps
them) read the conversation through :func:`extract_facts`, so "what must survive" is defined
once. A previous summary is parsed back (:func:`parse_handoff`) and merged: a goal or a user
constraint stated before the first compaction survives every later one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from mtagent.context.boundary import is_summary_message
from mtagent.context.tokens import message_text

SECTION_GOAL = "User goal"
SECTION_CONSTRAINTS = "Hard constraints"
SECTION_STATE = "Current state"
SECTION_FACTS = "Key facts"
SECTION_FILES_READ = "Files read"
SECTION_FILES_CHANGED = "Files changed"
SECTION_FAILED = "Failed attempts"
SECTION_VERIFICATION = "Latest verification"
SECTION_NEXT = "Next step"
SECTION_CARRIED = "Carried facts"
LATER_REQUESTS = "Later requests:"
# Headings of the session-memory notes (context/session_memory/notes.py) that a hand-off reader
# understands: a session-memory compaction's summary *is* the notes, and the next compaction reads it.
NOTES_TITLE = "Session Title"
NOTES_TASK_SPEC = "Task specification"
NOTES_FILES = "Files and Functions"
_NOTES_CHANGED = re.compile(r"^(\S+) \(changed(?::\s*(.*))?\)$")
# A notes section's italic description line, and the mark of entries dropped to fit the budget.
NOTES_ASIDE = re.compile(r"[_*].+[_*]|… \d+ older entries omitted.*")
_NOTES_ASIDE = NOTES_ASIDE
HANDOFF_SECTIONS: tuple[str, ...] = (
    SECTION_GOAL,
    SECTION_CONSTRAINTS,
    SECTION_STATE,
    SECTION_FACTS,
    SECTION_FILES_READ,
    SECTION_FILES_CHANGED,
    SECTION_FAILED,
    SECTION_VERIFICATION,
    SECTION_NEXT,
)
NOTES_HEADINGS = frozenset({NOTES_TITLE, "Current State", NOTES_TASK_SPEC, NOTES_FILES, "Workflow",
                            "Errors & Corrections", "Codebase and System Documentation", "Learnings", "Key results",
                            "Worklog"})
# Headings the hand-off ledger (context/ledger) renders beside the sheet's, and the model's part.
SECTION_LAST_REQUEST = "Latest user request"
SECTION_EARLIER_REQUESTS = "Earlier requests"
LEDGER_ONLY_HEADINGS = frozenset({SECTION_LAST_REQUEST, SECTION_EARLIER_REQUESTS, "Plan", "Failed commands",
                                  "Latest error", "Rules in force", "Tools loaded", "Open subagent tasks", "Findings",
                                  "Hypotheses"})
# Only these headings end the user's own words (the goal, the requests, the notes' task
# specification), so a markdown heading the user wrote stays part of them.
KNOWN_HEADINGS = frozenset({*HANDOFF_SECTIONS, SECTION_CARRIED, *NOTES_HEADINGS, *LEDGER_ONLY_HEADINGS})
_KNOWN_HEADINGS = KNOWN_HEADINGS
_USER_WORDS = (SECTION_GOAL, NOTES_TASK_SPEC, SECTION_LAST_REQUEST, SECTION_EARLIER_REQUESTS)

CONSTRAINT_PATTERN = re.compile(
    r"\b(never|always|must|mustn't|don't|do not|dont|only|avoid|should not|shouldn't|cannot|can't"
    r"|make sure|forbidden|not allowed)\b|必须|不要|不能|禁止|务必|只能|不得|不允许|一定要|别",
    re.IGNORECASE,
)
VERIFY_PATTERN = re.compile(
    r"\b(pytest|tests?|make|build|cargo|npm|pnpm|yarn|tsc|mypy|ruff|flake8|lint|ctest|gradle|mvn"
    r"|tox|nox|unittest|go (?:test|build|vet)|check)\b",
    re.IGNORECASE,
)
ERROR_LINE = re.compile(r"(Traceback|Error|Exception|FAILED|FAIL:|error:|fatal:|panic:)")
# The line a hand-off calls "the latest error": a named ``…Error``/``…Exception``, ``Error:``, a
# traceback, ``FAILED``, ``error:``/``fatal:``/``panic:`` — but not a line of source text that merely
# contains such a word (numbered file listings, ``path:line:`` grep hits, comments, tables). Elixir's
# and Erlang's ``** (XError) …`` / ``** exception …`` lines are errors, not comments.
STRICT_ERROR_LINE = re.compile(
    r"(\b\w+(?:Error|Exception)\b|\b(?:Error|Exception)\b:|Traceback|\bFAILED\b|\bFAIL:|\berror[:\[]"
    r"|\bfatal:|\bpanic:|\bSegmentation fault)"
)
SOURCE_LINE = re.compile(r"^\s*\d+(?:→|\t|\||:)|^[\w./-]+:\d+[:-]|^\s*(?!\*\* (?:\(|exception ))[|#/*]")
MIN_ERROR_CHARS = 8
_SUMMARY_BODY = re.compile(r"<conversation_history_summary>\n?(.*?)\n?</conversation_history_summary>", re.DOTALL)
_HEADING = re.compile(r"^#{1,3}\s*(.+?)\s*:?\s*$")

# Tool names compared lowercased, so recorded sessions of other agents (Read, Edit, Bash …) count too.
READ_FILE_TOOLS = frozenset({"read_file", "read", "view"})
WRITE_TOOLS = frozenset({"edit_file", "write_file", "edit", "write", "multiedit", "str_replace_editor", "apply_patch"})
SHELL_TOOLS = frozenset({"shell", "bash", "run_shell", "execute_command", "run_command", "execute_bash"})
# A shell command that writes a file: a redirect (``> f``, ``>> f``, heredocs), ``tee [-a] f`` or
# ``sed -i … f``. Files changed this way must survive a compaction like an edit_file call's.
SHELL_WRITE = re.compile(
    r"(?:^|[\s;&|(])(?:\d?>>?|tee\s+(?:-a\s+)?)\s*['\"]?([\w./~-]+\.\w{1,8})\b"
    r"|\bsed\s+-i\S*\s+(?:'[^']*'|\"[^\"]*\"|\S+)\s+['\"]?([\w./~-]+\.\w{1,8})\b"
)
PATH_KEYS = ("file_path", "path", "filename", "file", "directory", "dir")
MAX_LINE_CHARS = 600
MAX_NEXT_CHARS = 1_000
MAX_FACT_CHARS = 200
# A paraphrased goal still counts as mentioned when this share of its content words appear.
GOAL_WORD_OVERLAP = 0.6


@dataclass(slots=True)
class SessionFacts:
    """What a hand-off must say about a stretch of conversation (lists are oldest first)."""

    goal: str = ""
    first_request: str = ""
    user_requests: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    files_read: list[str] = field(default_factory=list)
    files_changed: dict[str, str] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)
    failed_attempts: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    latest_error_line: str = ""
    facts: list[str] = field(default_factory=list)
    latest_verification: str = ""
    last_action: str = ""
    next_step: str = ""
    message_count: int = 0
    tool_call_count: int = 0

    @property
    def latest_error(self) -> str:
        return self.errors[-1] if self.errors else ""


def _add_unique(items: list[str], value: str) -> None:
    if value and value not in items:
        items.append(value)


def clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def summary_body(text: str) -> str:
    """The hand-off text inside a rendered summary message (or ``text`` itself)."""
    match = _SUMMARY_BODY.search(text)
    return match.group(1).strip() if match else text.strip()


def parse_handoff(text: str) -> dict[str, list[str]]:
    """Sections of a hand-off sheet: heading → its non-empty lines (bullets unmarked).

    The goal's own lines are kept as written (a task's ``- `` lines are part of it), and only a
    heading a hand-off or the notes use ends it, so a user's markdown heading stays in the goal.
    Session-memory notes are read as a hand-off too (:func:`_read_notes`).
    """
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    in_goal = in_user_words = False
    for raw in summary_body(text).splitlines():
        heading = _HEADING.match(raw.strip())
        title = heading.group(1).strip().rstrip(":") if heading else ""
        if heading and not (in_user_words and title not in _KNOWN_HEADINGS):
            current = sections.setdefault(title, [])
            in_goal = title == SECTION_GOAL and not current
            in_user_words = title in _USER_WORDS
            continue
        line = raw.strip()
        if current is None or not line or line == "(none)":
            continue
        if in_goal and line == LATER_REQUESTS:
            in_goal = in_user_words = False
            current.append(line)
        elif in_goal:
            current.append(raw.rstrip())
        else:
            current.append(line[2:].strip() if line.startswith(("- ", "* ")) else line)
    _read_notes(sections)
    return sections


def _read_notes(sections: dict[str, list[str]]) -> None:
    """Add the hand-off sections a session-memory summary states in its notes' words: the user's
    constraints (task specification), files changed (files and functions) and — for notes
    written before a compaction put the goal above them — the first line of the task as goal."""
    spec = [line for line in sections.get(NOTES_TASK_SPEC, []) if not _NOTES_ASIDE.fullmatch(line)]
    if spec and not [line for line in sections.get(SECTION_GOAL, []) if line != "(not stated)"]:
        sections[SECTION_GOAL] = [spec[0]]
    for line in spec:
        if CONSTRAINT_PATTERN.search(line):
            _add_unique(sections.setdefault(SECTION_CONSTRAINTS, []), line)
    for line in sections.get(NOTES_FILES, []):
        match = _NOTES_CHANGED.match(line)
        if match:
            path, why = match.group(1), match.group(2)
            _add_unique(sections.setdefault(SECTION_FILES_CHANGED, []), f"{path} — {why}" if why else path)


def goal_section_span(lines: Sequence[str]) -> tuple[int, int] | None:
    """``(heading, end)`` line indices of the first ``User goal`` section of a hand-off's lines,
    ended as :func:`parse_handoff` ends it; None without one."""
    start: int | None = None
    for index, raw in enumerate(lines):
        heading = _HEADING.match(raw.strip())
        if heading is None:
            continue
        title = heading.group(1).strip().rstrip(":")
        if start is None and title == SECTION_GOAL:
            start = index
        elif start is not None and title in _KNOWN_HEADINGS:
            return start, index
    return (start, len(lines)) if start is not None else None


def handoff_goal(text: str) -> str:
    """The goal a later compaction reads from this hand-off (see :func:`merge_previous`)."""
    facts = SessionFacts()
    merge_previous(facts, parse_handoff(text))
    return facts.goal


def constraint_lines(text: str) -> list[str]:
    """Lines of a user message that state a rule (never/always/must/don't/only/必须/不要 …)."""
    found: list[str] = []
    for line in text.splitlines():
        stripped = line.strip().lstrip("-*• ").strip()
        if stripped and CONSTRAINT_PATTERN.search(stripped):
            _add_unique(found, stripped)  # the user's words: never clipped
    return found


def goal_text(text: str) -> str:
    """A first user message without its rule lines (those are listed as constraints)."""
    rest = [line for line in text.splitlines() if line.strip() and not CONSTRAINT_PATTERN.search(line)]
    return "\n".join(rest).strip() or text


def _is_engine_message(message: BaseMessage) -> bool:
    meta = (message.response_metadata or {}).get("mtagent") or {}
    return bool(meta.get("kind"))


def _args_text(args: dict[str, Any]) -> str:
    return clip(json.dumps(args, ensure_ascii=False, default=str), MAX_FACT_CHARS)


def call_path(args: dict[str, Any]) -> str:
    for key in PATH_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def shell_written_files(command: str) -> list[str]:
    """Files a shell command writes (see :data:`SHELL_WRITE`), in order, without duplicates."""
    found: list[str] = []
    for match in SHELL_WRITE.finditer(command):
        path = match.group(1) or match.group(2)
        if path and not path.startswith("/dev/") and path not in found:
            found.append(path)
    return found


def _describe_call(name: str, args: dict[str, Any]) -> str:
    if name.lower() in SHELL_TOOLS:
        return f"{name}: {clip(str(args.get('command', args.get('cmd', ''))), MAX_FACT_CHARS)}"
    path = call_path(args)
    pattern = args.get("pattern")
    if pattern and path:
        return f"{name} {pattern!r} in {path}"
    if pattern:
        return f"{name} {pattern!r}"
    return f"{name} {path}" if path else f"{name}({_args_text(args)})"


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return clip(line, MAX_FACT_CHARS)
    return ""


def failed_result(message: ToolMessage) -> bool:
    """A tool result that failed: an error status, or a command's non-zero exit code."""
    if message.status == "error":
        return True
    artifact = message.artifact if isinstance(message.artifact, dict) else {}
    code = artifact.get("exit_code", artifact.get("returncode"))
    return isinstance(code, int) and code != 0


def error_line(text: str) -> str:
    """The last line of ``text`` that reports an error (see :data:`STRICT_ERROR_LINE`), or ""."""
    for line in reversed(text.splitlines()):
        stripped = line.strip()
        if len(stripped) >= MIN_ERROR_CHARS and STRICT_ERROR_LINE.search(stripped) and not SOURCE_LINE.match(line):
            return clip(stripped, MAX_FACT_CHARS)
    return ""


def _error_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if ERROR_LINE.search(line)]
    return clip(lines[-1], MAX_FACT_CHARS) if lines else _first_line(text)


def _outcome(message: ToolMessage) -> str:
    text = message_text(message)
    tail = [line.strip() for line in text.splitlines() if line.strip()]
    last = clip(tail[-1], MAX_FACT_CHARS) if tail else "(no output)"
    return f"failed: {_error_line(text)}" if failed_result(message) else f"passed: {last}"


def extract_facts(messages: Sequence[BaseMessage], previous_summary: str | None = None) -> SessionFacts:
    """Read goal, constraints, files, commands, errors and next step from ``messages``.

    Summary messages inside ``messages`` count as previous summaries (their facts are merged
    first); ``previous_summary`` is merged before those.
    """
    facts = SessionFacts()
    previous: list[str] = [previous_summary] if previous_summary else []
    previous += [message_text(m) for m in messages if is_summary_message(m)]
    for text in previous:
        merge_previous(facts, parse_handoff(text))
    calls: dict[str, tuple[str, dict[str, Any], str]] = {}
    for message in messages:
        if is_summary_message(message) or _is_engine_message(message):
            continue
        facts.message_count += 1
        if isinstance(message, HumanMessage):
            text = message_text(message).strip()
            if not text:
                continue
            if not facts.goal:
                facts.first_request = text  # verbatim and whole: the hand-off ledger's goal
                facts.goal = goal_text(text)  # its rule lines are listed as constraints
            else:
                facts.user_requests.append(text)
            for line in constraint_lines(text):
                _add_unique(facts.constraints, line)
        elif isinstance(message, AIMessage):
            said = message.content if isinstance(message.content, str) else message_text(message)
            if said.strip():
                facts.next_step = clip(said, MAX_NEXT_CHARS)
            for call in message.tool_calls:
                facts.tool_call_count += 1
                name, args = call["name"], dict(call.get("args") or {})
                calls[str(call.get("id"))] = (name, args, _first_line(said))
                path = call_path(args)
                kind = name.lower()
                if kind in WRITE_TOOLS and path:
                    facts.files_changed.pop(path, None)
                    facts.files_changed[path] = clip(_first_line(said), MAX_FACT_CHARS)
                elif kind in READ_FILE_TOOLS and path:
                    if path in facts.files_read:
                        facts.files_read.remove(path)
                    facts.files_read.append(path)
                elif kind in SHELL_TOOLS:
                    _add_unique(facts.commands, _describe_call(name, args))
                    for written in shell_written_files(str(args.get("command", args.get("cmd", "")))):
                        facts.files_changed.pop(written, None)
                        facts.files_changed[written] = clip(_first_line(said), MAX_FACT_CHARS)
        elif isinstance(message, ToolMessage):
            _read_result(facts, message, calls.get(message.tool_call_id))
    return facts


def _read_result(facts: SessionFacts, message: ToolMessage, call: tuple[str, dict[str, Any], str] | None) -> None:
    name, args = (call[0], call[1]) if call else (message.name or "tool", {})
    described = _describe_call(name, args)
    text = message_text(message)
    facts.last_action = f"{described} → {'error' if failed_result(message) else 'ok'}"
    strict = error_line(text)
    if failed_result(message):
        error = strict or _error_line(text)
        facts.errors.append(f"{described}: {error}")
        facts.latest_error_line = error
        facts.failed_attempts.append(f"{described} → {error}")
    elif strict:
        facts.errors.append(f"{described}: {strict}")
        facts.latest_error_line = strict
    else:
        line = _first_line(text)
        if line:
            facts.facts.append(f"{line} (source: {described})")
    command = str(args.get("command", args.get("cmd", "")))
    if name.lower() in SHELL_TOOLS and VERIFY_PATTERN.search(command):
        facts.latest_verification = f"`{clip(command, MAX_FACT_CHARS)}` {_outcome(message)}"


def split_goal(lines: list[str]) -> tuple[list[str], list[str]]:
    """A parsed ``User goal`` section's lines: (the goal's, the later requests' after ``Later requests:``)."""
    if LATER_REQUESTS in lines:
        cut = lines.index(LATER_REQUESTS)
        return lines[:cut], lines[cut + 1:]
    return lines, []


def merge_previous(facts: SessionFacts, sections: dict[str, list[str]]) -> None:
    """Fold a parsed previous hand-off into ``facts`` (earlier facts first)."""
    goal_lines, later = split_goal(sections.get(SECTION_GOAL, []))
    for line in later:
        _add_unique(facts.user_requests, line)
    if goal_lines and not facts.goal and goal_lines != ["(not stated)"]:
        facts.goal = "\n".join(goal_lines)
    for line in sections.get(SECTION_CONSTRAINTS, []):
        _add_unique(facts.constraints, line)
    for line in sections.get(SECTION_FILES_READ, []):
        _add_unique(facts.files_read, line)
    for line in sections.get(SECTION_FILES_CHANGED, []):
        path, _, why = line.partition(" — ")
        facts.files_changed.setdefault(path.strip(), why.strip())
    for line in sections.get(SECTION_FAILED, []):
        _add_unique(facts.failed_attempts, line)
    for line in sections.get(SECTION_VERIFICATION, []):
        facts.latest_verification = line
    for line in sections.get(SECTION_CARRIED, []):
        kind, _, value = line.partition(":")
        value = value.strip()
        kind = kind.strip().lower()
        if kind == "goal" and not facts.goal:  # hand-offs written before the goal got its own section
            facts.goal = value
        elif kind == "constraint":
            _add_unique(facts.constraints, value)
        elif kind == "file changed":
            facts.files_changed.setdefault(value, "")
        elif kind == "latest error":
            facts.errors.append(value)
            facts.latest_error_line = value


def normalize(text: str) -> str:
    """Case- and whitespace-insensitive form used to check that a summary mentions a fact."""
    return " ".join(text.casefold().replace("`", "").split())


def mentions(haystack_normalized: str, needle: str) -> bool:
    return normalize(needle) in haystack_normalized


def content_words(text: str) -> list[str]:
    return [w for w in re.findall(r"[\w./-]{4,}", text.casefold())]


def mentions_goal(haystack_normalized: str, goal: str) -> bool:
    """The goal counts as mentioned verbatim, or when most of its content words appear."""
    if mentions(haystack_normalized, goal):
        return True
    words = content_words(goal)
    if not words:
        return True
    present = sum(1 for w in words if w in haystack_normalized)
    return present / len(words) >= GOAL_WORD_OVERLAP


def tail(items: Iterable[str], count: int) -> list[str]:
    items = list(items)
    return items[-count:] if count > 0 else []
