"""The step language of the context-test model and its decisions: a pure function of the input.

See :mod:`mtagent.agent.context_model` for what the model does and why; this module holds the
parts that decide a main call (the task, its place, a fact's value, the look-ups) and that its
hand-offs (:mod:`mtagent.agent.context_sheets`) reuse.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from mtagent.agent.scripted import reply, tool_call
from mtagent.context.tokens import message_text

MODEL_NAME = "context-test"
UNKNOWN = "unknown"
DONE_REPLY = "DONE {task}"
LOST_REPLY = "I cannot see a task to work on any more."
PROGRESS = "Progress: {done} of {total} steps done (TASK {task})."

_HEADER = re.compile(r"^TASK ([A-Za-z0-9][A-Za-z0-9._-]*)\s*$", re.M)
_FOLDER = re.compile(r"^Work in the folder `([^`]+)`\.", re.M)
_RANGE = re.compile(r"\{(\d+)\.\.(\d+)\}")
_NAMES = r"[A-Z][A-Z0-9_]*(?:(?:,\s*|\s+and\s+)[A-Z][A-Z0-9_]*)*"
_STEP = re.compile(r"^\s*\d+\.\s+(?:(Read)(?: the files)? `([^`]+)`|(Run) `([^`]+)`"
                   rf"|(Write) the values? of ({_NAMES}) into `([^`]+)`)", re.M)
_PLAN_STEP = re.compile(r"^\s*\d+\.\s+(?:(Plan) the stages ((?:`[^`]+`(?:,\s*|\s+and\s+|,\s+and\s+)?)+)"
                        r"|(Mark) the stage `([^`]+)` done|(Write) the stages' statuses into `([^`]+)`)", re.M)
_RENDERED_PLAN = re.compile(r"^- \[[x~ ]\] (.+) \((done|in progress|pending)\)\s*$", re.M)
PLAN_TOOL = "update_plan"
_PROGRESS = re.compile(r"Progress: (\d+) of \d+ steps done \(TASK ([A-Za-z0-9._-]+)\)")
_SAVED = re.compile(r'read_tool_result\(path="([^"]+)"')
_CONTINUE = re.compile(r"Continue with offset=(\d+)")
_USE_LIMIT = re.compile(r"use limit=(\d+)")
PAGE_LINES = 150  # lines a page of a saved output asks for (a refused page's own advice, when smaller, wins)
_RENDERED_CALL = re.compile(r"^\[assistant calls (\w+) id=([^\]]*)\] (\{.*\})\s*$", re.M)
SHOWN_CHARS = 300  # a visible read result longer than this showed the file (a stub or a cleared result is shorter)


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a task: ``read`` a file, ``run`` a command, or ``write`` facts' values."""

    kind: str
    target: str  # the path read, the command run, or the file written
    facts: tuple[str, ...] = ()
    ranged: bool = False  # one of the files a ``{00..39}`` range named (a look-up re-reads only named files)


@dataclass(frozen=True, slots=True)
class Task:
    task_id: str
    folder: str
    steps: tuple[Step, ...]
    message_index: int  # where the task's text is in the input


def parse_task(text: str) -> tuple[str, str, tuple[Step, ...]] | None:
    """The last ``TASK`` block of ``text`` that has steps (a bare ``TASK id`` line, e.g. a notes
    title, is passed over): its id, folder and steps (None without a ``TASK`` line)."""
    headers = list(_HEADER.finditer(text))
    if not headers:
        return None
    block = task_block(text)
    if not block:
        return headers[-1].group(1), "", ()
    folder = _FOLDER.search(block)
    return block.split()[1], folder.group(1) if folder else "", _steps(block)


def _steps(block: str) -> tuple[Step, ...]:
    found: list[tuple[int, list[Step]]] = []
    for m in _STEP.finditer(block):
        if m.group(1):
            paths = expand(m.group(2))
            found.append((m.start(), [Step("read", path, ranged=len(paths) > 1) for path in paths]))
        elif m.group(3):
            found.append((m.start(), [Step("run", m.group(4))]))
        else:
            found.append((m.start(), [Step("write", m.group(7), tuple(re.split(r",\s*|\s+and\s+", m.group(6))))]))
    for m in _PLAN_STEP.finditer(block):  # the plan kept with update_plan (the engine carries it)
        if m.group(1):
            found.append((m.start(), [Step("plan", "", tuple(re.findall(r"`([^`]+)`", m.group(2))))]))
        elif m.group(3):
            found.append((m.start(), [Step("mark", m.group(4))]))
        else:
            found.append((m.start(), [Step("plan-write", m.group(6))]))
    return tuple(step for _, group in sorted(found, key=lambda f: f[0]) for step in group)


def current_plan(task: Task, messages: Sequence[BaseMessage]) -> list[tuple[str, str]]:
    """The plan as the input shows it — the newest ``update_plan`` call, or a hand-off's rendered plan
    (``- [x] step (done)``) — else the task's stages, all pending (a lost plan is planned again)."""
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            for call in reversed(message.tool_calls):
                steps = (call.get("args") or {}).get("steps") if call["name"] == PLAN_TOOL else None
                if isinstance(steps, list) and steps:
                    return [(str(s.get("step")), str(s.get("status", "pending"))) for s in steps if isinstance(s, dict)]
        elif not isinstance(message, ToolMessage):
            rendered = _RENDERED_PLAN.findall(message_text(message))
            if rendered:
                return [(text, status.replace(" ", "_")) for text, status in rendered]
    stages = next((step.facts for step in task.steps if step.kind == "plan"), ())
    return [(stage, "pending") for stage in stages]


def _plan_args(plan: list[tuple[str, str]]) -> dict[str, Any]:
    return {"steps": [{"step": text, "status": status} for text, status in plan]}


def _cut(block: str) -> str:
    """A block up to where another speaker or section begins (a rendered transcript's next
    ``[assistant …]`` line, a hand-off's next heading)."""
    ends = [i for marker in ("\n\n[assistant", "\n\n[tool result", "\n\n[user]", "\n</transcript>", "\n## ", "\n# ")
            if (i := block.find(marker)) > 0]
    return block[:min(ends)] if ends else block


def task_block(text: str) -> str:
    """The text of the last ``TASK`` block of ``text`` that has steps."""
    for header in reversed(list(_HEADER.finditer(text))):
        block = _cut(text[header.start():])
        if _steps(block):
            return block
    return ""


def expand(pattern: str) -> list[str]:
    """``src/mod_{00..03}.py`` → the four paths (zero-padded like the first bound); else itself."""
    m = _RANGE.search(pattern)
    if m is None:
        return [pattern]
    first, last = int(m.group(1)), int(m.group(2))
    width = len(m.group(1))
    return [pattern[:m.start()] + str(k).zfill(width) + pattern[m.end():] for k in range(first, last + 1)]


def find_task(messages: Sequence[BaseMessage]) -> Task | None:
    """The last task any message of the input shows (a summary quoting it counts)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, (AIMessage, ToolMessage)):
            continue
        parsed = parse_task(message_text(message))
        if parsed is not None:
            return Task(parsed[0], parsed[1], parsed[2], index)
    return None


def fact_value(name: str, messages: Sequence[BaseMessage]) -> str | None:
    """The most recent ``NAME = v`` / ``NAME: v`` / ``NAME=v`` / ``"NAME": "v"`` visible in the input."""
    pattern = re.compile(rf"\b{re.escape(name)}[\"']?\s*[=:]\s*[\"']?([A-Za-z0-9_.:/+-]+)")
    for message in reversed(messages):
        hits = [hit.rstrip(".:") for hit in pattern.findall(message_text(message))]
        if hits and hits[-1]:
            return hits[-1]
    return None


def progress_floor(task: Task, messages: Sequence[BaseMessage]) -> int:
    """Steps done as recorded by a visible hand-off or note of this task (0 without one)."""
    done = 0
    for message in messages:
        if isinstance(message, (AIMessage, ToolMessage)):
            continue
        for m in _PROGRESS.finditer(message_text(message)):
            if m.group(2) == task.task_id:
                done = max(done, int(m.group(1)))
    return min(done, len(task.steps))


def visible_calls(messages: Sequence[BaseMessage], *, rendered: bool = False) -> list[dict[str, Any]]:
    """The tool calls in the input, in order; ``rendered`` also reads a transcript rendered as text
    (a summary request's ``[assistant calls NAME id=…] {args}`` lines)."""
    calls: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, AIMessage):
            calls += [{"name": c["name"], "args": c.get("args") or {}, "id": c.get("id")} for c in message.tool_calls]
        elif rendered and not isinstance(message, ToolMessage):
            for m in _RENDERED_CALL.finditer(message_text(message)):
                try:
                    args = json.loads(m.group(3))
                except ValueError:
                    continue
                calls.append({"name": m.group(1), "args": args if isinstance(args, dict) else {}, "id": m.group(2)})
    return calls


def _path(task: Task, path: str) -> str:
    return f"{task.folder.rstrip('/')}/{path}" if task.folder else path


def _command(task: Task, command: str) -> str:
    return f"cd {task.folder} && {command}" if task.folder else command


def _matches(task: Task, step: Step, call: dict[str, Any]) -> bool:
    args = call.get("args") or {}
    if step.kind in ("plan", "mark"):
        planned = args.get("steps") if call["name"] == PLAN_TOOL else None
        if not isinstance(planned, list):
            return False
        pairs = [(s.get("step"), s.get("status")) for s in planned if isinstance(s, dict)]
        if step.kind == "plan":
            return [text for text, _ in pairs] == list(step.facts)
        return (step.target, "done") in pairs
    if step.kind == "read":
        return call["name"] == "read_file" and args.get("file_path") == _path(task, step.target)
    if step.kind == "run":
        return call["name"] == "shell" and args.get("command") == _command(task, step.target)
    return call["name"] == "write_file" and args.get("file_path") == _path(task, step.target)


def align(task: Task, calls: Sequence[dict[str, Any]], floor: int = 0) -> tuple[int, int]:
    """(steps done, index of the first call after the last one that did a step): each call does
    the first step at or after the current place that it matches — in order, so a path read
    twice is two steps and a look-up re-read of an earlier file does not move the place back."""
    place, after = floor, 0
    for index, call in enumerate(calls):
        for j in range(place, len(task.steps)):
            if _matches(task, task.steps[j], call):
                place, after = j + 1, index + 1
                break
    return place, after


def saved_outputs(messages: Sequence[BaseMessage]) -> list[str]:
    """Paths of saved outputs the input points at (``read_tool_result(path="…")``), newest first."""
    found: list[str] = []
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            continue
        for path in reversed(_SAVED.findall(message_text(message))):
            if path not in found:
                found.append(path)
    return found


_RENDERED_RESULT = re.compile(r"^\[tool result \w* id=([^ \]]*) status=[^\]]*\]\n(.*?)(?=\n\n\[|\n</transcript>|\Z)",
                              re.M | re.S)
_LOOKED = re.compile(r"Looked up at step (\d+) \(TASK ([A-Za-z0-9._-]+)\): (\[.*\])\s*$", re.M)
_PAGED = re.compile(r'read_tool_result\(path="([^"]+)"\) pages a saved output; '
                    r"(?:continue at offset=(\d+)|read to the end)")


def tool_results(messages: Sequence[BaseMessage]) -> dict[str, str]:
    """Tool results by call id: the input's tool messages and a rendered transcript's results."""
    found: dict[str, str] = {}
    for m in messages:
        if isinstance(m, ToolMessage):
            found[m.tool_call_id] = message_text(m)
        elif not isinstance(m, AIMessage):
            found.update((i, body) for i, body in _RENDERED_RESULT.findall(message_text(m)))
    return found


def _notes(messages: Sequence[BaseMessage]) -> str:
    return "\n".join(message_text(m) for m in messages if not isinstance(m, (AIMessage, ToolMessage)))


def next_page(path: str, calls: Sequence[dict[str, Any]], results: dict[str, str],
              messages: Sequence[BaseMessage] = ()) -> tuple[int, int] | None:
    """(offset, limit) of the next page of ``path`` (offset 1 when no page is visible); None when a
    visible page — or a hand-off's note — says it was read to the end, or the same page was refused
    twice (the model does not send one failing call again and again)."""
    offset, limit, refused = 1, PAGE_LINES, 0
    for m in _PAGED.finditer(_notes(messages)):
        if m.group(1) == path:
            if m.group(2) is None:
                return None
            offset = max(offset, int(m.group(2)))
    for call in calls:
        args = call.get("args") or {}
        if call["name"] != "read_tool_result" or args.get("path") != path:
            continue
        text = results.get(str(call.get("id")), "")
        if "(end)" in text:
            return None
        advice = [int(n) for n in _USE_LIMIT.findall(text)]
        if advice:
            limit = min(limit, *advice)
        if not _CONTINUE.search(text) and text.startswith("Error") and args.get("offset", 1) >= offset:
            refused += 1
        offset = max([offset, *(int(n) for n in _CONTINUE.findall(text))])
    return None if refused >= 2 else (offset, limit)


def call_key(call: dict[str, Any]) -> str:
    return json.dumps([call["name"], call.get("args") or {}], sort_keys=True)


def looked_up(task: Task, step: int, messages: Sequence[BaseMessage]) -> set[str]:
    """Look-ups a visible hand-off of ``task`` says were made at ``step`` (so a compaction does not
    make the model repeat them for ever)."""
    keys: set[str] = set()
    for m in _LOOKED.finditer(_notes(messages)):
        if m.group(2) == task.task_id and int(m.group(1)) == step:
            try:
                keys.update(json.dumps(item, sort_keys=True) for item in json.loads(m.group(3)))
            except ValueError:
                continue
    return keys


def look_up(task: Task, name: str, messages: Sequence[BaseMessage], stretch: Sequence[dict[str, Any]],
            after: Sequence[dict[str, Any]], tool_names: Sequence[str], tried: set[str]) -> AIMessage | None:
    """The next way to find ``name`` again (see the module docstring), or None when all were tried."""
    results = tool_results(messages)
    tried = tried | {call_key(c) for c in stretch}

    def untried(tool: str, args: dict[str, Any]) -> AIMessage | None:
        return None if call_key({"name": tool, "args": args}) in tried else tool_call(tool, args)

    for step in task.steps:
        if step.kind != "read" or step.ranged:
            continue
        path = _path(task, step.target)
        shown = any(len(results.get(str(c.get("id")), "")) > SHOWN_CHARS for c in after
                    if c["name"] == "read_file" and (c.get("args") or {}).get("file_path") == path)
        if not shown and (found := untried("read_file", {"file_path": path})):
            return found
    if "grep" in tool_names and (found := untried("grep", {"pattern": name, "path": task.folder or "."})):
        return found
    if "read_tool_result" in tool_names:
        for saved in saved_outputs(messages):
            page = next_page(saved, after, results, messages)
            if page is not None:
                return tool_call("read_tool_result", {"path": saved, "offset": page[0], "limit": page[1]})
    if "recall" in tool_names and (found := untried("recall", {"query": name})):
        return found
    return None


def decide(messages: Sequence[BaseMessage], tool_names: Sequence[str]) -> AIMessage:
    """The next reply for ``messages`` (see the module docstring); a pure function of its input."""
    task = find_task(messages)
    if task is None or not task.steps:
        return reply(LOST_REPLY)
    calls = visible_calls(messages[task.message_index + 1:])
    index, first_after = align(task, calls, progress_floor(task, messages))
    if index >= len(task.steps):
        return reply(DONE_REPLY.format(task=task.task_id))
    step = task.steps[index]
    if step.kind == "read":
        return tool_call("read_file", {"file_path": _path(task, step.target)})
    if step.kind == "run":
        return tool_call("shell", {"command": _command(task, step.target)})
    if step.kind == "plan":
        return tool_call(PLAN_TOOL, _plan_args([(stage, "pending") for stage in step.facts]))
    if step.kind == "mark":
        plan = [(text, "done" if text == step.target else status) for text, status in current_plan(task, messages)]
        return tool_call(PLAN_TOOL, _plan_args(plan))
    if step.kind == "plan-write":
        content = "".join(f"{text}: {status}\n" for text, status in current_plan(task, messages))
        return tool_call("write_file", {"file_path": _path(task, step.target), "content": content})
    values = {name: fact_value(name, messages) for name in step.facts}
    tried = looked_up(task, index, messages)
    for name in (n for n, v in values.items() if v is None):
        found = look_up(task, name, messages, calls[first_after:], calls, tool_names, tried)
        if found is not None:
            return found
    content = "\n".join(values[name] or UNKNOWN for name in step.facts) + "\n"
    return tool_call("write_file", {"file_path": _path(task, step.target), "content": content})
