"""The REPL's live session, as slash commands see it (:class:`~mtagent.cli.slash.SlashHost`).

It owns the current :class:`~mtagent.agent.session.AgentSession` and swaps it on ``/resume``.
The window shown by ``/context`` is the engine's last plan when this process has made a model
call, else the last ``context_plan`` record of the transcript — so a just-resumed session shows
where it stood — else nothing yet.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from mtagent.cli.session_options import SessionOptions
from mtagent.errors import UsageError
from mtagent.events import Event, EventBus, EventType
from mtagent.terminal_text import terminal_safe

if TYPE_CHECKING:  # the rest loads on first use: the REPL's prompt is drawn before any of it (cli/warmup.py)
    from mtagent.agent.session import AgentSession
    from mtagent.cli.context_render import WindowUsage
    from mtagent.cli.session_report import SessionReport
    from mtagent.cli.slash import CompactOutcome, SessionListRow
    from mtagent.cli.slash_host import CostReport
    from mtagent.config import Settings

# What only the loop counts, and the session's statistics (model calls, the engine's work);
# shown in SHOWN_FIELDS order. The compaction history is shown from the transcript, not here.
RUN_FIELDS = ("tool_executions", "retries", "reactive_compacts")
STAT_FIELDS = ("model_calls", "microcompactions", "tool_results_persisted", "tool_result_chars_saved",
               "compression_failure_count")
SHOWN_FIELDS = ("model_calls", *RUN_FIELDS, *STAT_FIELDS[1:])


def _refuse_untrusted_skill(toolset: Any, name: str) -> None:
    """``/skill NAME`` of a skill the project has but is not trusted for says so (not "no skills found")."""
    untrusted = toolset.skills.discovery.untrusted
    if untrusted and (name in untrusted or not toolset.skills.skills):
        raise UsageError(f"{terminal_safe(name) if name in untrusted else 'this project has skills'} "
                         f"({', '.join(untrusted)}): the project is not trusted (or changed since it was), so "
                         "its skills are not loaded; `mtagent trust` shows what trusting it covers")


@dataclass
class ReplHost:
    """Implements :class:`~mtagent.cli.slash.SlashHost`; ``session`` is swapped by ``/resume``."""

    console: Console
    options: SessionOptions
    on_token: Callable[[str], None] | None = None
    events: EventBus = field(default_factory=EventBus)
    session: AgentSession | None = None
    compacted_since_plan: bool = False
    schemas_said: tuple[str | None, str | None] | None = field(default=None, repr=False)  # by /context
    pending: str = ""  # a message a slash command prepared (/skill), sent as the next turn
    settings: Settings | None = field(default=None, repr=False)  # read at start; the first session opens with it

    def __post_init__(self) -> None:
        self.events.subscribe(self._planned, EventType.CONTEXT_PLANNED)

    def _planned(self, event: Event) -> None:
        self.compacted_since_plan = False

    @property
    def cwd(self) -> Path:
        return self.options.root

    def open(self) -> AgentSession:
        """Start (or resume, per the options) the first session of this REPL."""
        settings, self.settings = self.settings, None  # later sessions (/resume, /new) read the config afresh
        self.session = self.options.open_session(on_token=self.on_token, events=self.events, settings=settings)
        return self.session

    def close(self) -> None:
        """Close the session; one that never got a message is not kept (a REPL opened and left, or
        /clear right after /clear), so it never becomes ``latest``."""
        if self.session is not None:
            session, self.session = self.session, None
            empty = not session.history
            session.close()
            if empty:
                from mtagent import paths
                from mtagent.session.store import shared_store

                shared_store(session.settings).discard_empty(paths.project_hash(self.options.root),
                                                             session.session_id)

    def _live(self) -> AgentSession:
        if self.session is None:
            raise UsageError("no session is open")
        return self.session

    @property
    def session_id(self) -> str | None:
        return self.session.session_id if self.session else None

    # views ------------------------------------------------------------------------------
    def _plan(self) -> Any:
        session = self.session
        return session.last_plan if session is not None else None

    def session_report(self) -> SessionReport | None:
        if self.session is None or not self.session.transcript_path.exists():
            return None
        from mtagent.cli.session_report import read_session_report

        return read_session_report(self.session.transcript_path)

    def window_usage(self) -> WindowUsage | None:
        usage = self._window_usage()
        session = self.session
        if usage is None or session is None:
            return usage
        from mtagent.context.toolset.toolset import describe

        lines = [session.schema_choice.describe(), describe(session.parts.toolset)]
        return replace(usage, window_source=session.window_source, schemas="\n".join(lines))

    def _window_usage(self) -> WindowUsage | None:
        from mtagent.cli.context_render import WindowUsage
        from mtagent.cli.window_now import current_buckets

        session = self.session
        if session is None:
            return None
        plan = self._plan()
        if plan is not None:
            usage = replace(WindowUsage.from_budget(plan.buckets, session.model_name),
                            basis=f"as of call {plan.turn}")
            if self.compacted_since_plan:
                usage = replace(usage, buckets=current_buckets(usage.buckets, session.history,
                                                               session.window_manager.counter.message_tokens),
                                basis="estimated now")
            return usage
        report = self.session_report()
        if report is None or report.last_plan is None:
            return None
        recorded = WindowUsage.from_plan_record(report.last_plan, session.window, session.model_name)
        # the record's window and threshold are of the window it ran with; show this one's
        return replace(recorded, token_limit=session.window, threshold=session.threshold,
                       basis=f"as of call {report.last_plan.get('turn', '?')}")

    def artifact_root(self) -> str | None:
        return str(self.session.artifacts.root) if self.session else None

    def last_plan(self) -> tuple[Mapping[str, Any] | None, str | None]:
        plan = self._plan()
        if plan is not None:
            return plan.to_dict(), plan.explain()
        report = self.session_report()
        return (report.last_plan if report else None), None

    def stats_counters(self) -> Mapping[str, int]:
        if self.session is None:
            return {}
        counters = self.session.runtime.counters
        stats = self.session.stats
        values = {**{name: getattr(counters, name) for name in RUN_FIELDS},
                  **{name: getattr(stats, name) for name in STAT_FIELDS}}
        return {name: int(values[name]) for name in SHOWN_FIELDS}

    def effective_limit(self) -> int | None:
        session = self.session
        if session is None:
            return None
        return max(1, session.window - session.settings.context.summary_reserved_tokens)

    def work_plan(self) -> Any:  # the engine's plan now (update_plan; carried through compactions), or None
        from mtagent.context.ledger import current_plan
        return current_plan(self._live().history)

    def history_rows(self) -> list[tuple[str, str, str]]:
        """(id, role, first line) of each message the engine plans from, for ``/compact from``."""
        rows: list[tuple[str, str, str]] = []
        for message in self._live().history:
            text = message.text
            calls = getattr(message, "tool_calls", None) or []
            if not text.strip() and calls:
                text = "→ " + ", ".join(str(c.get("name")) for c in calls)
            rows.append((message.id or "-", message.type, " ".join(text.split())[:80]))
        return rows

    # actions ----------------------------------------------------------------------------
    def compact(self, instructions: str | None) -> CompactOutcome:
        return self._compacted(lambda: self._live().compact(instructions))

    def compact_from(self, message_id: str) -> CompactOutcome:
        return self._compacted(lambda: self._live().compact(from_message_id=message_id))

    def _compacted(self, run: Callable[[], Any]) -> CompactOutcome:
        """A manual compaction's outcome; one that could not shrink the window changed nothing."""
        from mtagent.cli.slash import CompactOutcome
        from mtagent.context.compaction.manual import NothingCompacted

        try:
            result = run()
        except NothingCompacted as exc:
            return CompactOutcome(0, 0, unchanged_reason=str(exc))
        self.compacted_since_plan = True
        return CompactOutcome(result.pre_tokens, result.post_tokens, result.trigger, result.summary_source)

    def resume(self, session_id: str | None) -> str:
        from mtagent.agent.storage import session_ids

        current = self.session_id
        target = session_id
        if target is None:
            others = [s for s in session_ids(self.options.settings(), self.cwd) if s != current]
            target = others[-1] if others else None
            if target is None:
                raise UsageError("no other session to resume in this project; /sessions lists them")
        if target == current:
            raise UsageError(f"session {target} is the one open now")
        # Open the new one before closing the old: a bad id leaves the REPL where it was.
        fresh = self.options.open_session(on_token=self.on_token, events=self.events, session_id=target)
        self.close()
        self.session = fresh
        self.compacted_since_plan = False
        return fresh.session_id

    def clear(self) -> str:
        fresh = replace(self.options, resume=None, continue_=False).open_session(
            on_token=self.on_token, events=self.events)
        self.close()
        self.session = fresh
        self.compacted_since_plan = False
        return fresh.session_id

    def switch_model(self, spec: str) -> str:
        """Reopen this session under ``spec``; a bad spec reopens it as it was and says why."""
        current = self._live().session_id
        options = replace(self.options, model=spec, resume=None, continue_=False)
        self.close()  # the transcript has one writer: release it before reopening
        try:
            self.session = options.open_session(on_token=self.on_token, events=self.events, session_id=current)
        except Exception:
            self.session = self.options.open_session(on_token=self.on_token, events=self.events, session_id=current)
            raise
        self.options = options
        return self.session.model_name

    def cost(self) -> CostReport | None:
        from mtagent.cli.slash_host import CostReport
        from mtagent.cli.usage import session_cost

        session = self.session
        if session is None or not session.transcript_path.exists():
            return None
        usage, dollars = session_cost(session.transcript_path, session.model_name, session.settings.agent.prices)
        if not usage.calls:
            return None
        return CostReport(session.model_name, usage, dollars)

    def prepare_skill(self, name: str, request: str) -> None:
        """``/skill NAME [request]``: the skill's instructions (and the request) become the next message."""
        toolset = self._live().parts.toolset
        _refuse_untrusted_skill(toolset, name)
        if not toolset.skills.skills:
            raise UsageError("no skills found: add one as .mtagent/skills/<name>/SKILL.md (a trusted project) "
                             "or ~/.mtagent/skills/<name>/SKILL.md")
        body = toolset.run_skill(name)
        if body.startswith("Error: "):
            raise UsageError(body[len("Error: "):])
        self.pending = f"{body}\n\n{request or f'Use the {name} skill above for what comes next.'}"

    def take_pending(self) -> str:
        text, self.pending = self.pending, ""
        return text

    def mcp_servers(self) -> tuple[list[Any], list[str]] | None:
        """The session's MCP servers and notes (``/mcp``); None when it has no MCP client."""
        manager = self.session.parts.mcp if self.session is not None else None
        return None if manager is None else (manager.servers(), list(manager.notes))

    def context_warnings(self) -> list[str]:
        """What building the session's context refused or cut so far (``/context`` lists it)."""
        return list(self.session.static.shown_warnings) if self.session is not None else []

    def list_sessions(self) -> list[SessionListRow]:
        from mtagent import paths
        from mtagent.cli.slash import SessionListRow
        from mtagent.session.store import shared_store  # files, or the PostgreSQL store

        rows: list[SessionListRow] = []
        for info in shared_store(self.options.settings()).session_infos(paths.project_hash(self.cwd)):
            when = info.last_activity or info.started
            stamp = when.astimezone(UTC).strftime("%Y-%m-%d %H:%M") if when else "-"
            rows.append(SessionListRow(info.session_id, stamp, info.messages, info.compactions, info.model,
                                   current=info.session_id == self.session_id))
        return rows
