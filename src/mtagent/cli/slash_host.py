"""What a slash command is, and :class:`SlashHost`, what commands may ask of the running session (the
REPL implements it over the agent session, tests with a small fake); every command module imports it."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from rich.console import Console

from mtagent.cli.context_render import WindowUsage
from mtagent.cli.session_report import SessionReport
from mtagent.errors import UsageError

if TYPE_CHECKING:
    from mtagent.pricing import Usage


class SlashOutcome(str, Enum):
    CONTINUE = "continue"
    EXIT = "exit"
    NOT_A_COMMAND = "not_a_command"
    SEND = "send"  # send the host's pending message as the next turn (/skill)


@dataclass(slots=True, frozen=True)
class SlashCommand:
    name: str
    rest: str = ""

    @property
    def words(self) -> list[str]:
        """``rest`` split like a shell would, except that only double quotes group words: an
        apostrophe (``don't``) is part of its word, as facts for ``/memory add`` need."""
        lexer = shlex.shlex(self.rest, posix=True)
        lexer.whitespace_split = True
        lexer.quotes = '"'
        lexer.commenters = ""
        try:
            return list(lexer)
        except ValueError as exc:
            raise UsageError(f"/{self.name}: {exc} (close the quote)") from None


@dataclass(slots=True, frozen=True)
class CompactOutcome:
    """What a manual compaction did (before/after are the history's token estimate)."""

    pre_tokens: int
    post_tokens: int
    trigger: str = "manual"
    summary_source: str | None = None
    unchanged_reason: str | None = None  # set when nothing was compacted: the one line saying why


@dataclass(slots=True, frozen=True)
class CostReport:
    model: str
    usage: Usage
    cost_usd: float | None


@dataclass(slots=True, frozen=True)
class SessionListRow:
    session_id: str
    updated: str
    messages: int
    compactions: int = 0
    model: str | None = None
    current: bool = False


class SlashHost(Protocol):
    """What slash commands need from the running session (the REPL implements it)."""

    console: Console
    cwd: Path
    schemas_said: tuple[str | None, str | None] | None  # the tool-schema line /context last showed, and where

    @property
    def session_id(self) -> str | None: ...

    def window_usage(self) -> WindowUsage | None:
        """Tokens per bucket of the last (or next) view, against the window; None before any."""

    def session_report(self) -> SessionReport | None:
        """This session's transcript facts (persisted results, compactions); None if none yet."""

    def artifact_root(self) -> str | None: ...

    def last_plan(self) -> tuple[Mapping[str, Any] | None, str | None]:
        """The last context plan as a record dict, and the engine's own explanation if any."""

    def stats_counters(self) -> Mapping[str, int]: ...

    def effective_limit(self) -> int | None: ...

    def compact(self, instructions: str | None, from_message_id: str | None = None) -> CompactOutcome:
        """``/compact [instructions]``, or from ``from_message_id`` on (``/compact from <id>``)."""

    def resume(self, session_id: str | None) -> str:
        """Switch to ``session_id`` (None: the latest other session); return the id resumed."""

    def list_sessions(self) -> list[SessionListRow]: ...

    def history_rows(self) -> list[tuple[str, str, str]]:
        """(message id, role, first line) of the history the engine plans from."""

    def work_plan(self) -> Any:
        """The engine's plan now (``update_plan``), or None."""

    def context_warnings(self) -> list[str]:
        """What building the session's context refused or cut so far."""

    def mcp_servers(self) -> tuple[list[Any], list[str]] | None:
        """The session's MCP servers and notes; None when it has no MCP client."""

    def prepare_skill(self, name: str, request: str) -> None:
        """Make the skill's instructions (and the request) the next message, or raise a ``UsageError``."""

    def clear(self) -> str:
        """Open a new session with the same settings; return its id."""

    def switch_model(self, spec: str) -> str:
        """Go on with this session under ``spec``; return the model's display name."""

    def cost(self) -> CostReport | None:
        """This session's usage and price so far; None before the first message."""


Handler = Callable[[SlashHost, SlashCommand], SlashOutcome]


@dataclass(slots=True, frozen=True)
class CommandSpec:
    name: str
    usage: str
    summary: str
    handler: Handler
    details: tuple[str, ...] = field(default_factory=tuple)
