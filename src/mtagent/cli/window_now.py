"""What ``/context`` reads of the REPL's live session: the window, the last plan, the counters, the messages.

The window is the engine's last plan when this process has made a model call, else the last
``context_plan`` record of the transcript — so a just-resumed session shows where it stood — else
nothing yet. Right after ``/compact`` the last plan measured the window before the compaction: its
fixed parts (system prompt, tool schemas, rules, memory) do not change with a compaction; the
conversation parts do, so they are recounted from the history the session now holds: summary,
re-attached files, tool results and other messages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage, SystemMessage, ToolMessage

from mtagent.cli.context_render import WindowUsage
from mtagent.cli.session_report import SessionReport, read_session_report
from mtagent.context.boundary import is_summary_message
from mtagent.context.budget import Bucket
from mtagent.context.compaction.reattach import REATTACHED_KIND
from mtagent.context.toolset.toolset import describe

if TYPE_CHECKING:
    from mtagent.agent.session import AgentSession

# What only the loop counts (tools run, retries), and the session's statistics (model calls, the engine's
# work); shown in SHOWN_FIELDS order. The compaction history is shown from the transcript, not here.
STAT_FIELDS = ("model_calls", "microcompactions", "tool_results_persisted", "tool_result_chars_saved",
               "compression_failure_count")
SHOWN_FIELDS = ("model_calls", "tool_executions", "retries", *STAT_FIELDS[1:])
CONVERSATION = (Bucket.SUMMARY.value, Bucket.MESSAGES.value, Bucket.TOOL_RESULTS.value, Bucket.REATTACHED.value,
                Bucket.RETRIEVED.value)


def _bucket(message: BaseMessage) -> str | None:
    if is_summary_message(message):
        return Bucket.SUMMARY.value
    meta = (message.response_metadata or {}).get("mtagent") or {}
    if isinstance(meta, Mapping) and meta.get("kind") == REATTACHED_KIND:
        return Bucket.REATTACHED.value
    if isinstance(message, SystemMessage):
        return None  # counted in the plan's fixed buckets
    return Bucket.TOOL_RESULTS.value if isinstance(message, ToolMessage) else Bucket.MESSAGES.value


def current_buckets(planned: Mapping[str, int], history: Iterable[BaseMessage],
                    tokens_of: Callable[[BaseMessage], int]) -> dict[str, int]:
    """``planned`` with its conversation buckets recounted from ``history``."""
    out = {key: value for key, value in planned.items() if key not in CONVERSATION}
    out.update({key: 0 for key in CONVERSATION})
    for message in history:
        bucket = _bucket(message)
        if bucket is not None:
            out[bucket] += tokens_of(message)
    return out


def window_usage(session: AgentSession, compacted_since_plan: bool) -> WindowUsage | None:
    """The window (recounted now when a compaction came after the last plan), with where its size
    came from and which tool schemas are sent; None before any plan."""
    plan = session.last_plan
    if plan is not None:
        usage = replace(WindowUsage.from_budget(plan.buckets, session.model_name), basis=f"as of call {plan.turn}")
        if compacted_since_plan:
            usage = replace(usage, buckets=current_buckets(usage.buckets, session.history,
                                                           session.window_manager.counter.message_tokens),
                            basis="estimated now")
    else:
        report = session_report(session)
        if report is None or report.last_plan is None:
            return None
        # the record's window and threshold are of the window it ran with; show this one's
        usage = replace(WindowUsage.from_plan_record(report.last_plan, session.window, session.model_name),
                        token_limit=session.window, threshold=session.threshold,
                        basis=f"as of call {report.last_plan.get('turn', '?')}")
    lines = [session.schema_choice.describe(), describe(session.parts.toolset)]
    return replace(usage, window_source=session.window_source, schemas="\n".join(lines))


def session_report(session: AgentSession) -> SessionReport | None:
    """The transcript's facts (persisted results, compactions); None before it exists."""
    return read_session_report(session.transcript_path) if session.transcript_path.exists() else None


def last_plan(session: AgentSession) -> tuple[Mapping[str, Any] | None, str | None]:
    """The last plan as a record dict, and the engine's explanation when this process made it."""
    plan = session.last_plan
    if plan is not None:
        return plan.to_dict(), plan.explain()
    report = session_report(session)
    return (report.last_plan if report else None), None


def stats_counters(session: AgentSession) -> dict[str, int]:
    counters, stats = session.runtime.engine.counters, session.stats
    values = {"tool_executions": len(counters.executed), "retries": counters.retries,
              **{name: getattr(stats, name) for name in STAT_FIELDS}}
    return {name: int(values[name]) for name in SHOWN_FIELDS}


def history_rows(session: AgentSession) -> list[tuple[str, str, str]]:
    """(id, role, first line) of each message the engine plans from, for ``/compact from``."""
    rows: list[tuple[str, str, str]] = []
    for message in session.history:
        text = message.text
        calls = getattr(message, "tool_calls", None) or []
        if not text.strip() and calls:
            text = "→ " + ", ".join(str(c.get("name")) for c in calls)
        rows.append((message.id or "-", message.type, " ".join(text.split())[:80]))
    return rows
