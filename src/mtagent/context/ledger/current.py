"""The engine's plan now: the newest plan call in the history, else the plan the last hand-off carried."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage

from mtagent.context.boundary import is_summary_message
from mtagent.context.ledger.extract import ledger_from_text, stored_ledger
from mtagent.context.ledger.workplan import WorkPlan, plan_calls
from mtagent.context.tokens import message_text


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
    carried = stored_ledger(history[start]) or ledger_from_text(message_text(history[start]))
    return carried.plan
