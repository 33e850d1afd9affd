"""The compact boundary as the model sees it — one function, so compaction and resume agree.

A compaction appends a ``compact_boundary`` record holding the hand-off summary; the view then
starts with one human message::

    <compact_boundary pre_tokens="…" post_tokens="…" reason="auto" />
    <conversation_history_summary>
    …
    </conversation_history_summary>

followed by the kept recent tail. Both :mod:`mtagent.context.compaction.compactor` (live) and
:mod:`mtagent.context.view` (resume) build it here, so the prompt prefix is byte-identical.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage

SUMMARY_KIND = "compact_summary"


def summary_message_id(boundary_id: str) -> str:
    return f"summary-{boundary_id}"


def render_summary(summary: str, *, pre_tokens: int, post_tokens: int, reason: str) -> str:
    return (
        f'<compact_boundary pre_tokens="{pre_tokens}" post_tokens="{post_tokens}" reason="{reason}" />\n'
        f"<conversation_history_summary>\n{summary.strip()}\n</conversation_history_summary>"
    )


def summary_message(
    boundary_id: str, summary: str, *, pre_tokens: int, post_tokens: int, reason: str,
    ledger: dict[str, Any] | None = None,
) -> HumanMessage:
    """The message that stands for everything before a boundary. ``ledger``: the hand-off's work
    state as data (:mod:`mtagent.context.ledger`), which the next compaction reads instead of the text."""
    meta: dict[str, Any] = {"kind": SUMMARY_KIND, "boundary_id": boundary_id}
    if ledger is not None:
        meta["ledger"] = ledger
    return HumanMessage(
        content=render_summary(summary, pre_tokens=pre_tokens, post_tokens=post_tokens, reason=reason),
        id=summary_message_id(boundary_id),
        response_metadata={"mtagent": meta},
    )


def summary_message_from_record(record: dict[str, Any]) -> HumanMessage:
    """Rebuild the summary message from a ``compact_boundary`` transcript record."""
    return summary_message(
        str(record["id"]),
        str(record.get("summary", "")),
        pre_tokens=int(record.get("pre_tokens", 0)),
        post_tokens=int(record.get("post_tokens", 0)),
        reason=str(record.get("trigger", record.get("reason", "auto"))),
        ledger=record["ledger"] if isinstance(record.get("ledger"), dict) else None,
    )


def is_summary_message(message: BaseMessage) -> bool:
    meta = (message.response_metadata or {}).get("mtagent") or {}
    return meta.get("kind") == SUMMARY_KIND
