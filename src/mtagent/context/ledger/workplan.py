"""The work plan: steps with a status, owned by the engine and carried through every compaction.

The model writes the plan with the ``update_plan`` tool (``tools/update_plan.py``); the plan's
latest state is read back from the conversation — the newest successful plan call, or, when a
compaction has summarized every call away, the plan the hand-off ledger carried
(:mod:`mtagent.context.ledger`). So the plan is engine state without a second store that could
disagree with the transcript.

A plan call is a model's tool call, a hostile input: :func:`validate_plan` bounds the number of
steps, their sizes and their statuses and refuses control characters, with an error the model can
act on. Recorded sessions of other agents wrote plans too; :func:`plan_from_call` reads Claude
Code's ``TodoWrite``, Codex's ``update_plan``, deepagents' ``write_todos`` and OpenHands'
``task_tracker`` into the same shape, leniently (a recorded call is read, never refused).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

PLAN_TOOL = "update_plan"
STATUSES: tuple[str, ...] = ("pending", "in_progress", "done")
MAX_STEPS = 50
MAX_STEP_CHARS = 500
MAX_NOTE_CHARS = 2_000
# Other agents' spellings of a status (lowercased, spaces and dashes as underscores).
_STATUS_ALIASES = {
    "pending": "pending", "todo": "pending", "not_started": "pending", "open": "pending",
    "in_progress": "in_progress", "inprogress": "in_progress", "active": "in_progress", "doing": "in_progress",
    "done": "done", "completed": "done", "complete": "done", "finished": "done",
}
# Tool names (lowercased) whose calls write a plan, in this agent or a recorded one.
PLAN_TOOL_NAMES = frozenset({PLAN_TOOL, "todowrite", "write_todos", "task_tracker", "todo_write"})
# C0/C1 control characters; a step is one line, a note may keep line breaks and tabs.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_NOTE_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_MARK = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]"}


class PlanError(ValueError):
    """A plan call the engine refuses; the message tells the model what to send instead."""


@dataclass(slots=True, frozen=True)
class PlanStep:
    """One step of the plan and where it stands (``pending``, ``in_progress`` or ``done``)."""

    text: str
    status: str = "pending"


@dataclass(slots=True, frozen=True)
class WorkPlan:
    """The plan as the engine holds it: steps in order and an optional note."""

    steps: tuple[PlanStep, ...] = ()
    note: str = ""

    def counts(self) -> dict[str, int]:
        return {status: sum(1 for s in self.steps if s.status == status) for status in STATUSES}

    def render(self) -> str:
        """One line per step — ``[x]`` done, ``[~]`` in progress, ``[ ]`` pending — then the note."""
        lines = [f"- {_MARK[s.status]} {s.text} ({s.status.replace('_', ' ')})" for s in self.steps]
        if self.note:  # one line: a line of the note can never pass for a hand-off heading
            lines.append("Note: " + " ⏎ ".join(line.strip() for line in self.note.splitlines() if line.strip()))
        return "\n".join(lines) if lines else "(empty plan)"

    def summary_line(self) -> str:
        counts = self.counts()
        current = next((s.text for s in self.steps if s.status == "in_progress"), "")
        line = f"{counts['done']}/{len(self.steps)} done"
        return f"{line}; in progress: {current}" if current else line

    def to_dict(self) -> dict[str, Any]:
        return {"steps": [{"step": s.text, "status": s.status} for s in self.steps], "note": self.note}


def validate_plan(steps: Any, note: Any = None) -> WorkPlan:
    """The plan an ``update_plan`` call asks for, or :class:`PlanError` saying what is wrong.

    At most :data:`MAX_STEPS` steps of at most :data:`MAX_STEP_CHARS` characters, each with a status
    of :data:`STATUSES`; a note of at most :data:`MAX_NOTE_CHARS`; no control characters (a step is
    one line). Nothing is clipped silently: the model is told to shorten, so the plan it sees is the
    one it wrote.
    """
    if not isinstance(steps, list):
        raise PlanError("steps must be a list of {step, status} objects")
    if len(steps) > MAX_STEPS:
        raise PlanError(f"a plan has at most {MAX_STEPS} steps (got {len(steps)}); merge small steps")
    parsed: list[PlanStep] = []
    for index, raw in enumerate(steps, 1):
        if not isinstance(raw, Mapping):
            raise PlanError(f"step {index} must be an object with 'step' and 'status'")
        text, status = raw.get("step"), raw.get("status", "pending")
        if not isinstance(text, str) or not text.strip():
            raise PlanError(f"step {index} needs a non-empty 'step' text")
        if len(text) > MAX_STEP_CHARS:
            raise PlanError(f"step {index} is {len(text)} characters; at most {MAX_STEP_CHARS} (put details in the note)")
        if _CONTROL.search(text):
            raise PlanError(f"step {index} contains a control character or line break; write one plain line")
        if not isinstance(status, str) or status not in STATUSES:
            raise PlanError(f"step {index} has status {str(status)[:40]!r}; use one of {', '.join(STATUSES)}")
        parsed.append(PlanStep(text.strip(), status))
    if note is None:
        note = ""
    if not isinstance(note, str):
        raise PlanError("note must be a string")
    if len(note) > MAX_NOTE_CHARS:
        raise PlanError(f"the note is {len(note)} characters; at most {MAX_NOTE_CHARS}")
    if _NOTE_CONTROL.search(note):
        raise PlanError("the note contains a control character; use plain text")
    return WorkPlan(tuple(parsed), note.strip())


def _status(value: Any) -> str:
    key = re.sub(r"[\s-]+", "_", str(value or "").strip().lower())
    return _STATUS_ALIASES.get(key, "pending")


def _clean(text: Any, limit: int) -> str:
    """A recorded step's text, one line and bounded (recorded calls are read leniently)."""
    line = " ".join(_CONTROL.sub(" ", str(text or "")).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _args(args: Any) -> Mapping[str, Any]:
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return {}
    return args if isinstance(args, Mapping) else {}


def plan_from_call(name: str, args: Any) -> WorkPlan | None:
    """The plan a tool call writes, for mtagent's and the recorded agents' plan tools; None for
    any other call (or a task tracker's ``view``)."""
    kind = str(name or "").lower()
    if kind not in PLAN_TOOL_NAMES:
        return None
    args = _args(args)
    if kind == "task_tracker" and str(args.get("command", "plan")).lower() != "plan":
        return None
    items = next((args[key] for key in ("steps", "plan", "todos", "task_list") if isinstance(args.get(key), list)),
                 None)
    if items is None:
        return None
    steps: list[PlanStep] = []
    for raw in items[:MAX_STEPS]:
        if isinstance(raw, str):
            raw = {"step": raw}
        if not isinstance(raw, Mapping):
            continue
        text = next((raw[k] for k in ("step", "content", "title", "task", "description") if raw.get(k)), "")
        text = _clean(text, MAX_STEP_CHARS)
        if text:
            steps.append(PlanStep(text, _status(raw.get("status"))))
    note = args.get("note", args.get("explanation", ""))
    return WorkPlan(tuple(steps), _clean(note, MAX_NOTE_CHARS) if isinstance(note, str) else "")


@dataclass(slots=True)
class PlanCalls:
    """Plan calls found in a stretch of messages: the newest plan and the calls' ids in order."""

    latest: WorkPlan | None = None
    call_ids: list[str] = field(default_factory=list)


def plan_calls(messages: Iterable[BaseMessage]) -> PlanCalls:
    """The newest plan written in ``messages`` (a call whose result was an error does not count)."""
    found = PlanCalls()
    messages = list(messages)
    failed = {m.tool_call_id for m in messages_of(messages, ToolMessage) if m.status == "error"}
    for message in messages_of(messages, AIMessage):
        for call in message.tool_calls:
            plan = _own_plan(call.get("args")) if call["name"] == PLAN_TOOL else plan_from_call(
                call["name"], call.get("args"))
            if plan is None or call.get("id") in failed:
                continue
            found.latest = plan
            found.call_ids.append(str(call.get("id")))
    return found


def _own_plan(args: Any) -> WorkPlan | None:
    """An ``update_plan`` call: mtagent's own (``steps``) only when :func:`validate_plan` accepts it —
    a refused call never becomes the plan, whatever its result says; a recorded Codex call
    (``plan``, ``completed``) is read leniently."""
    args = _args(args)
    if "steps" not in args:
        return plan_from_call(PLAN_TOOL, args)
    try:
        return validate_plan(args.get("steps"), args.get("note"))
    except PlanError:
        return None


def messages_of(messages: Iterable[BaseMessage], kind: type) -> list[Any]:
    return [m for m in messages if isinstance(m, kind)]


def is_plan_call(name: str) -> bool:
    return str(name or "").lower() in PLAN_TOOL_NAMES


def plan_from_dict(data: Any) -> WorkPlan | None:
    """A plan stored by :meth:`WorkPlan.to_dict` (a ledger's data), read leniently."""
    if not isinstance(data, Mapping):
        return None
    return plan_from_call(PLAN_TOOL, data)


def same_plan(a: WorkPlan | None, b: WorkPlan | None) -> bool:
    return (a.steps if a else ()) == (b.steps if b else ())


def plan_lines(plan: WorkPlan | None) -> Sequence[str]:
    return plan.render().splitlines() if plan is not None else ()


# What an older plan call's arguments become once the hand-off shows the plan (no "steps": it is
# never read as a plan again).
COLLAPSED_ARGS = {"collapsed": "superseded: the plan as of the last compaction is in the hand-off above"}


def collapse_plan_calls(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """``messages`` with every plan call's arguments replaced by :data:`COLLAPSED_ARGS` (same ids).

    A compaction renders the newest plan in the hand-off, so the plan calls of the kept tail
    collapse to a short reference, as a re-read file does: the plan is in the view once. It is done
    when a compaction rewrites the prefix anyway (and again on resume), never on a plan update,
    which would rewrite the cached prefix from the oldest plan call on. The transcript keeps every
    call whole. The tool-call arguments are replaced wherever a provider reads them: the tool calls,
    an Anthropic ``tool_use`` content block, an OpenAI-style ``additional_kwargs`` entry.
    """
    out: list[BaseMessage] = []
    for message in messages:
        ids = {str(c.get("id")) for c in message.tool_calls if is_plan_call(c["name"])} if isinstance(
            message, AIMessage) else set()
        if not ids:
            out.append(message)
            continue
        assert isinstance(message, AIMessage)
        calls = [{**c, "args": dict(COLLAPSED_ARGS)} if str(c.get("id")) in ids else c for c in message.tool_calls]
        content = message.content
        if isinstance(content, list):
            content = [{**b, "input": dict(COLLAPSED_ARGS)} if isinstance(b, dict) and b.get("type") == "tool_use"
                       and str(b.get("id")) in ids else b for b in content]
        extra = dict(message.additional_kwargs)
        if isinstance(extra.get("tool_calls"), list):
            extra["tool_calls"] = [_collapsed_raw(c) if isinstance(c, dict) and str(c.get("id")) in ids else c
                                   for c in extra["tool_calls"]]
        out.append(message.model_copy(update={"tool_calls": calls, "content": content, "additional_kwargs": extra}))
    return out


def _collapsed_raw(call: dict[str, Any]) -> dict[str, Any]:
    function = dict(call.get("function") or {})
    function["arguments"] = json.dumps(COLLAPSED_ARGS)
    return {**call, "function": function}

