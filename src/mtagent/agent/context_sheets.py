"""The context-test model as a summarizer told the task: hand-off sheets and session notes.

A real model asked for a hand-off reads the task and keeps what it needs: where the work stands,
the values of the facts the task asks for, and where a saved output can be paged. The extractive
hand-off keeps none of that on purpose (it knows no task), so a test model whose sessions stayed
extractive was harsher on summarizing policies than a real model, and its summary calls cost
nothing — hiding the side cost of a policy that summarizes or keeps notes more often.

:func:`summary_reply` recognises the engine's two side requests by their instructions (the
hand-off prompt, the session-notes prompt — taken from the engine, not copied) and answers from
the request alone, deterministically:

* a **hand-off sheet** — ``## User goal`` with the task block verbatim (when the prompt asks for
  that heading), ``## Current state`` with ``Progress: k of n steps done (TASK id).`` and the next
  step, ``## Key facts`` with ``NAME = value`` for each fact the task's write steps name that the
  request shows (the newest value), and the saved outputs it could page;
* **session notes** — the notes file it was given, every heading and italic line kept, with the
  task block under *Task specification* and the same state, facts and saved outputs under
  *Current State* and *Key results*.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.messages import BaseMessage, SystemMessage

from mtagent.agent.context_steps import (PROGRESS, Task, align, call_key, fact_value, find_task, looked_up,
                                         next_page, progress_floor, saved_outputs, task_block, tool_results,
                                         visible_calls)
from mtagent.context.compaction.summarize import HANDOFF_PROMPT, bullets
from mtagent.context.session_memory.notes import CURRENT_STATE, KEY_RESULTS, SESSION_MEMORY_SYSTEM_PROMPT, TASK_SPEC
from mtagent.context.tokens import message_text

HANDOFF_MARK = HANDOFF_PROMPT.split(".")[0]
NOTES_MARK = SESSION_MEMORY_SYSTEM_PROMPT.split(".")[0]
MAX_SAVED = 3
_NOTES = re.compile(r"<notes>\n(.*?)</notes>", re.S)


def _instructions(messages: Sequence[BaseMessage]) -> str:
    """Where a side request's instructions are: its system message, or (cache-aligned) its last message."""
    parts = [message_text(m) for m in messages[:1] if isinstance(m, SystemMessage)]
    parts += [message_text(messages[-1])] if messages else []
    return "\n".join(parts)


def summary_reply(messages: Sequence[BaseMessage]) -> str | None:
    """The sheet or notes a side request asks for; None for an ordinary (main) request."""
    said = _instructions(messages)
    if HANDOFF_MARK in said:
        return handoff_sheet(messages[:-1] if _is_last(messages, HANDOFF_MARK) else messages, said)
    if NOTES_MARK in said:
        return session_notes(messages, said)
    return None


def _is_last(messages: Sequence[BaseMessage], mark: str) -> bool:
    return bool(messages) and not isinstance(messages[-1], SystemMessage) and mark in message_text(messages[-1]) \
        and len(messages) > 1 and not (isinstance(messages[0], SystemMessage) and mark in message_text(messages[0]))


def _state(task: Task, messages: Sequence[BaseMessage],
           earlier: Sequence[BaseMessage] = ()) -> tuple[list[str], list[str], list[str]]:
    """(state lines, ``NAME = value`` facts, saved-output lines) for ``task`` from the request;
    ``earlier``: what the request quotes from before it (the notes being updated) — a value there
    counts only when the conversation does not show a newer one."""
    calls = visible_calls(messages, rendered=True)
    done, first_after = align(task, calls, progress_floor(task, messages))
    state = [PROGRESS.format(done=done, total=len(task.steps), task=task.task_id)]
    if done < len(task.steps):
        step = task.steps[done]
        state.append(f"Next step: {done + 1}, {step.kind} {step.target}.")
        tried = sorted(looked_up(task, done, messages) | {call_key(c) for c in calls[first_after:]})
        if tried:
            state.append(f"Looked up at step {done} (TASK {task.task_id}): [{', '.join(tried)}]")
    names = dict.fromkeys(name for step in task.steps if step.kind == "write" for name in step.facts)
    facts = [f"{name} = {value}" for name in names
             if (value := fact_value(name, messages) or fact_value(name, earlier)) is not None]
    results = tool_results(messages)
    saved = []
    for path in saved_outputs(messages)[:MAX_SAVED]:
        page = next_page(path, calls, results, messages)
        where = "read to the end" if page is None else f"continue at offset={page[0]}"
        saved.append(f'read_tool_result(path="{path}") pages a saved output; {where}')
    return state, facts, saved


def handoff_sheet(messages: Sequence[BaseMessage], prompt: str) -> str:
    task = find_task(messages)
    if task is None:
        return "## Current state\nNo task in the conversation.\n"
    state, facts, saved = _state(task, messages)
    parts = []
    if "## User goal" in prompt:
        parts.append(f"## User goal\n{task_block(message_text(messages[task.message_index])).strip()}")
    parts += [f"## Current state\n{chr(10).join(state)}", f"## Key facts\n{bullets(facts)}"]
    if saved:
        parts.append(f"## Saved outputs\n{bullets(saved)}")
    return "\n\n".join(parts) + "\n"


def _sections(notes: str) -> list[tuple[str, list[str]]]:
    """The notes as (heading line, lines below it) pairs, in order."""
    out: list[tuple[str, list[str]]] = []
    for line in notes.splitlines():
        if line.startswith("# "):
            out.append((line, []))
        elif out:
            out[-1][1].append(line)
    return out


def session_notes(messages: Sequence[BaseMessage], prompt: str) -> str:
    found = _NOTES.search(prompt) or _NOTES.search("\n".join(message_text(m) for m in messages))
    notes = found.group(1) if found else ""
    if _is_last(messages, NOTES_MARK):  # cache-aligned: the notes come last but are older than the conversation
        messages, earlier = messages[:-1], messages[-1:]
    else:
        earlier = []
    task = find_task(messages) or find_task(earlier)
    if task is None:
        return notes
    state, facts, saved = _state(task, messages, earlier)
    source = messages if find_task(messages) else earlier
    bodies = {TASK_SPEC: task_block(message_text(source[task.message_index])).strip(),
              CURRENT_STATE: "\n".join([*state, *(f"- {s}" for s in saved)]), KEY_RESULTS: bullets(facts)}
    out: list[str] = []
    for heading, lines in _sections(notes):
        name = heading[2:].strip()
        italic = [line for line in lines[:1] if line.startswith("_")]
        body = bodies.get(name)
        kept = "\n".join(lines[len(italic):]).strip() if body is None else body
        out.append("\n".join([heading, *italic, *([kept] if kept else [])]))
    return "\n\n".join(out) + "\n"
