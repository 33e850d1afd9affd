"""The REPL's live session, as slash commands see it (:class:`~mtagent.cli.slash.SlashHost`).

It owns the current :class:`~mtagent.agent.session.AgentSession` and swaps it on ``/resume``,
``/clear`` and ``/model``; what ``/context`` reads of it are plain functions of the session
(:mod:`mtagent.cli.window_now`).
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
    from mtagent.cli.slash_host import CompactOutcome, CostReport, SessionListRow
    from mtagent.config import Settings


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

    # views: what /context reads of the session (cli/window_now.py) ----------------------
    def session_report(self) -> SessionReport | None:
        from mtagent.cli.window_now import session_report

        return session_report(self.session) if self.session else None

    def window_usage(self) -> WindowUsage | None:
        from mtagent.cli.window_now import window_usage

        return window_usage(self.session, self.compacted_since_plan) if self.session else None

    def artifact_root(self) -> str | None:
        return str(self.session.artifacts.root) if self.session else None

    def last_plan(self) -> tuple[Mapping[str, Any] | None, str | None]:
        from mtagent.cli.window_now import last_plan

        return last_plan(self.session) if self.session else (None, None)

    def stats_counters(self) -> Mapping[str, int]:
        from mtagent.cli.window_now import stats_counters

        return stats_counters(self.session) if self.session else {}

    def effective_limit(self) -> int | None:
        session = self.session
        if session is None:
            return None
        return max(1, session.window - session.settings.context.summary_reserved_tokens)

    def work_plan(self) -> Any:  # the engine's plan now (update_plan; carried through compactions), or None
        from mtagent.context.ledger import current_plan
        return current_plan(self._live().history)

    def history_rows(self) -> list[tuple[str, str, str]]:
        from mtagent.cli.window_now import history_rows

        return history_rows(self._live())

    # actions ----------------------------------------------------------------------------
    def compact(self, instructions: str | None, from_message_id: str | None = None) -> CompactOutcome:
        """A manual compaction's outcome; one that could not shrink the window changed nothing."""
        from mtagent.cli.slash_host import CompactOutcome
        from mtagent.context.compaction.manual import NothingCompacted

        try:
            result = self._live().compact(instructions, from_message_id=from_message_id)
        except NothingCompacted as exc:
            return CompactOutcome(0, 0, unchanged_reason=str(exc))
        self.compacted_since_plan = True
        return CompactOutcome(result.pre_tokens, result.post_tokens, result.trigger, result.summary_source)

    def resume(self, session_id: str | None) -> str:
        from mtagent.agent.storage import session_ids

        current = self.session_id
        if session_id is None:
            others = [s for s in session_ids(self.options.settings(), self.cwd) if s != current]
            if not others:
                raise UsageError("no other session to resume in this project; /sessions lists them")
            session_id = others[-1]
        if session_id == current:
            raise UsageError(f"session {session_id} is the one open now")
        return self._swap(self.options.open_session(on_token=self.on_token, events=self.events, session_id=session_id))

    def clear(self) -> str:
        return self._swap(replace(self.options, resume=None, continue_=False).open_session(
            on_token=self.on_token, events=self.events))

    def _swap(self, fresh: AgentSession) -> str:
        """Go on in ``fresh``, opened before the old one closes: a bad id leaves the REPL where it was."""
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
        from mtagent.cli.slash_host import SessionListRow
        from mtagent.session.store import shared_store  # files, or the PostgreSQL store

        rows: list[SessionListRow] = []
        for info in shared_store(self.options.settings()).session_infos(paths.project_hash(self.cwd)):
            when = info.last_activity or info.started
            stamp = when.astimezone(UTC).strftime("%Y-%m-%d %H:%M") if when else "-"
            rows.append(SessionListRow(info.session_id, stamp, info.messages, info.compactions, info.model,
                                   current=info.session_id == self.session_id))
        return rows
