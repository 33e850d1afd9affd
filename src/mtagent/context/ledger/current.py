"""The engine's plan now: the newest plan call in the history, else the plan the last hand-off carried
— from messages (:func:`current_plan`), transcript records or a transcript file (front ends)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from mtagent.context.boundary import is_summary_message
from mtagent.context.ledger.extract import stored_ledger
from mtagent.context.ledger.model import ledger_from_dict
from mtagent.context.ledger.render import parse_rendered
from mtagent.context.ledger.workplan import WorkPlan, is_plan_call, plan_calls
from mtagent.context.tokens import message_text
from mtagent.session import schema
from mtagent.session.index import parse_line


def current_plan(history: Sequence[BaseMessage]) -> WorkPlan | None:
    """The plan as the model last wrote it, through any number of compactions; None without one.

    Walks back to the last summary message only: O(messages since the last compaction).
    """
    start = 0
    for index in range(len(history) - 1, -1, -1):
        if is_summary_message(history[index]):
            start = index
            break
    latest = plan_calls(history[start:]).latest
    if latest is not None or not history or not is_summary_message(history[start]):
        return latest
    carried = stored_ledger(history[start]) or parse_rendered(message_text(history[start]))
    return carried.plan


def plan_from_records(records: Iterable[Mapping[str, Any]]) -> WorkPlan | None:
    """The plan as of the end of a transcript's ``records`` (dicts): the newest successful plan call
    of an assistant ``transcript_message``, or the plan a newer ``compact_boundary`` ledger carried.
    For front ends that read a transcript without rebuilding messages (sessions show, the explain UI)."""
    plan: WorkPlan | None = None
    pending: dict[str, WorkPlan] = {}
    for record in records:
        kind = record.get("type")
        if kind == schema.COMPACT_BOUNDARY:
            carried = ledger_from_dict(record.get("ledger"))
            if carried is not None and carried.plan is not None:
                plan = carried.plan
        elif kind == schema.TRANSCRIPT_MESSAGE and record.get("role") == "assistant":
            for call in record.get("tool_calls") or ():
                if not isinstance(call, Mapping) or not is_plan_call(str(call.get("name"))) or not isinstance(
                        call.get("args"), Mapping):
                    continue
                found = plan_calls([AIMessage("", tool_calls=[{"id": str(call.get("id")), "name": str(call.get("name")),
                                                                "args": dict(call["args"])}])]).latest
                if found is not None:
                    pending[str(call.get("id"))] = found
        elif kind == schema.TRANSCRIPT_MESSAGE and record.get("role") == "tool":
            found = pending.pop(str(record.get("tool_call_id")), None)
            if found is not None and record.get("status") != "error":
                plan = found
    return plan


# Bytes that a line holding a plan call, its result or a boundary's ledger must contain.
_PLAN_LINE_MARKS = (b'"compact_boundary"', *(name.encode() for name in ("update_plan", "TodoWrite", "todowrite",
                                                                       "write_todos", "task_tracker", "todo_write")))


def plan_from_transcript(path: Path) -> WorkPlan | None:
    """:func:`plan_from_records` over a transcript file, parsing only the lines that can matter."""
    def records() -> Iterator[dict[str, Any]]:
        with open(path, "rb") as fh:
            for line in fh:
                if any(mark in line for mark in _PLAN_LINE_MARKS):
                    record = parse_line(line)
                    if record is not None:
                        yield record

    return plan_from_records(records())
