"""A context-sensitive fake chat model: it acts only on what its input shows it.

Closed-loop evaluation needs a model whose success depends on the *view*, not on a script: a
scripted model replays its answers whatever it was sent, so every context policy would solve
the same tasks. :class:`ContextTestModel` reads a task written in a small step language (the
built-in suite of :mod:`mtagent.eval` writes its tasks that way; a person can too)::

    TASK t07
    Work in the folder `t07`.                (optional: paths below are relative to it)
    Constraint: OUTPUT_TAG = blue-heron       (a fact stated once, anywhere in the text)
    1. Read `config/limits.py`.
    2. Read the files `src/mod_{00..39}.py`, one by one.
    3. Run `python3 tools/probe.py`.
    4. Write the value of RETRY_LIMIT into `answer.txt`.

and decides every call from its input alone, with no memory between calls:

* the task is the **last** ``TASK`` block visible in any message (the user's, or a summary
  that quoted it); no visible task → it says so and stops;
* the next step is the one after the latest step whose tool call is still visible after the
  task's message (a compaction that kept the tail keeps the place; one that dropped it makes
  the model redo work, as a real model would);
* ``Write the value of NAME`` needs ``NAME = value`` (or ``NAME: value``) visible somewhere. If
  it is not, the model calls ``recall`` with ``NAME`` when that tool is offered; if the recall
  result does not show it either (or there is no recall tool), it writes ``unknown``.

So a fact the policy kept in view, or left recallable, is answered right; one it lost is not.
The model is a :class:`~mtagent.agent.scripted.ScriptedChatModel` (usage counted exactly from what
it was sent; hand-off summaries stay extractive). Its usage also reports the **cache read**: the
tokens of the longest message prefix it shares with the previous call, as a provider's prompt
cache would — so a policy that keeps rewriting the prefix pays for it. Its tool-call ids are
counted (``call_000001``, …), not random: they name the files large results are saved in, which a
preview shows, so the same run sends the same text every time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from pydantic import PrivateAttr

from mtagent.agent.scripted import ScriptedChatModel, reply, tool_call
from mtagent.context.tokens import count_text_tokens, message_text

MODEL_NAME = "context-test"
UNKNOWN = "unknown"
DONE_REPLY = "DONE {task}"
LOST_REPLY = "I cannot see a task to work on any more."

_HEADER = re.compile(r"^TASK ([A-Za-z0-9][A-Za-z0-9._-]*)\s*$", re.M)
_FOLDER = re.compile(r"^Work in the folder `([^`]+)`\.", re.M)
_RANGE = re.compile(r"\{(\d+)\.\.(\d+)\}")
_STEP = re.compile(r"^\s*\d+\.\s+(?:(Read)(?: the files)? `([^`]+)`|(Run) `([^`]+)`"
                   r"|(Write) the value of ([A-Z][A-Z0-9_]*) into `([^`]+)`)", re.M)


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a task: ``read`` a file, ``run`` a command, or ``write`` a fact's value."""

    kind: str
    target: str  # the path read, the command run, or the file written
    fact: str = ""


@dataclass(frozen=True, slots=True)
class Task:
    task_id: str
    folder: str
    steps: tuple[Step, ...]
    message_index: int  # where the task's text is in the input


def parse_task(text: str) -> tuple[str, str, tuple[Step, ...]] | None:
    """The last ``TASK`` block of ``text``: its id, folder and steps (None without one)."""
    headers = list(_HEADER.finditer(text))
    if not headers:
        return None
    block = text[headers[-1].start():]
    folder = _FOLDER.search(block)
    steps: list[Step] = []
    for m in _STEP.finditer(block):
        if m.group(1):
            steps += [Step("read", path) for path in expand(m.group(2))]
        elif m.group(3):
            steps.append(Step("run", m.group(4)))
        else:
            steps.append(Step("write", m.group(7), m.group(6)))
    return headers[-1].group(1), folder.group(1) if folder else "", tuple(steps)


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
    """The most recent ``NAME = value`` / ``NAME: value`` visible in the input."""
    pattern = re.compile(rf"\b{re.escape(name)}\s*[=:]\s*[\"']?([A-Za-z0-9_.:/+-]+)")
    for message in reversed(messages):
        hits = pattern.findall(message_text(message))
        if hits:
            return str(hits[-1])
    return None


def _path(task: Task, path: str) -> str:
    return f"{task.folder.rstrip('/')}/{path}" if task.folder else path


def _command(task: Task, command: str) -> str:
    return f"cd {task.folder} && {command}" if task.folder else command


def _step_of(task: Task, call: dict[str, Any]) -> int | None:
    """Which step of ``task`` a visible tool call performed (None: not one of its steps)."""
    args = call.get("args") or {}
    for index, step in enumerate(task.steps):
        if step.kind == "read" and call["name"] == "read_file" and args.get("file_path") == _path(task, step.target):
            return index
        if step.kind == "run" and call["name"] == "shell" and args.get("command") == _command(task, step.target):
            return index
        if step.kind == "write" and call["name"] == "write_file" and args.get("file_path") == _path(task, step.target):
            return index
    return None


def _recalled(name: str, messages: Sequence[BaseMessage]) -> bool:
    """Whether a recall for ``name`` was made and its result is visible."""
    asked = {c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls
             if c["name"] == "recall" and name in str((c.get("args") or {}).get("query", ""))}
    return any(isinstance(m, ToolMessage) and m.tool_call_id in asked for m in messages)


def decide(messages: Sequence[BaseMessage], tool_names: Sequence[str]) -> AIMessage:
    """The next reply for ``messages`` (see the module docstring); a pure function of its input."""
    task = find_task(messages)
    if task is None or not task.steps:
        return reply(LOST_REPLY)
    after = messages[task.message_index + 1:]
    done = [i for m in after if isinstance(m, AIMessage) for c in m.tool_calls
            if (i := _step_of(task, c)) is not None]
    index = max(done) + 1 if done else 0
    if index >= len(task.steps):
        return reply(DONE_REPLY.format(task=task.task_id))
    step = task.steps[index]
    if step.kind == "read":
        return tool_call("read_file", {"file_path": _path(task, step.target)})
    if step.kind == "run":
        return tool_call("shell", {"command": _command(task, step.target)})
    value = fact_value(step.fact, messages)
    if value is None and "recall" in tool_names and not _recalled(step.fact, after):
        return tool_call("recall", {"query": step.fact})
    return tool_call("write_file", {"file_path": _path(task, step.target), "content": (value or UNKNOWN) + "\n"})


class ContextTestModel(ScriptedChatModel):
    """See the module docstring; ``--model context-test:`` in the CLI."""

    model_name: str = MODEL_NAME
    _previous: list[tuple[str, str]] = PrivateAttr(default_factory=list)
    _previous_tools: str = PrivateAttr(default="")
    _call_ids: int = PrivateAttr(default=0)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__((), **kwargs)
        self.policy = lambda messages: decide(messages, self.bound_tool_names)

    @property
    def _llm_type(self) -> str:
        return "mtagent-context-test"

    def _with_usage(self, message: AIMessage, messages: list[BaseMessage], tools: list[Any] | None) -> AIMessage:
        message = super()._with_usage(self._counted_ids(message), messages, tools)
        keys = [(m.type, message_text(m)) for m in messages]
        schemas = json.dumps(tools or [], sort_keys=True)
        matched = 0
        while matched < min(len(keys), len(self._previous)) and keys[matched] == self._previous[matched]:
            matched += 1
        shared = sum(count_text_tokens(message_text(m), self.encoding) + 4 for m in messages[:matched])
        if matched and tools and schemas == self._previous_tools:  # the schemas sit before the messages
            shared += count_text_tokens(schemas, self.encoding)
        self._previous, self._previous_tools = keys, schemas
        usage = dict(message.usage_metadata or {})
        usage["input_token_details"] = {"cache_read": min(shared, int(usage.get("input_tokens", 0)))}
        return message.model_copy(update={"usage_metadata": usage})

    def _counted_ids(self, message: AIMessage) -> AIMessage:
        if not message.tool_calls:
            return message
        calls = []
        for call in message.tool_calls:
            self._call_ids += 1
            calls.append({**call, "id": f"call_{self._call_ids:06d}"})
        return message.model_copy(update={"tool_calls": calls})
