"""The system-prompt context a session owns: its tool catalog and the static context around it.

:class:`EngineSession.call_model` asks :class:`SystemContext` for the system messages of each call,
so the engine never calls back into a front end for its own prompt. The Tier 1/2 files are
re-read on every build (hand edits apply), and path-scoped rules switch on for the files a message
names (:meth:`SystemContext.touch`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage

from mtagent.context.static.authority import Conflict
from mtagent.context.static.rules import touched_paths
from mtagent.context.static.tiers import RuntimeContext, StaticContext, StaticParts, build_system_prompt


@dataclass(slots=True)
class SessionTools:
    """The tool catalog's place in a session: what the model may call, and the context that comes with it.

    ``tools``: every tool the session can run (LangChain ``BaseTool``s; built-in, MCP, skills).
    ``offered``: the names sent with their schema this call (``None``: all of ``tools``); the rest
    are deferred. ``list_tools``: the system prompt lists the tools (full schemas; compact schemas
    leave the list out). ``schema_tokens``: tokens of the schemas bound to the model (they fill the
    window like history). ``context``: extra context buckets that travel with the catalog (MCP
    server instructions, a skills listing), sent after the static context on every call and counted
    as part of the view's fixed part. ``sent``: the tool definitions as the next request carries them
    (the catalog's core tools then its loads, in load order; compact schemas in a small window) —
    ``None``: the offered tools as they are.

    A front end that builds tools (the agent, an MCP client, the skills loader) fills this and
    hands it to :func:`~mtagent.context.opener.open_engine_session` as ``tools=`` (or gives the opened
    session's :attr:`SystemContext.source` a reader of it once the tools exist). The toolset's catalog
    (:mod:`mtagent.context.toolset`) plugs in here: its bound tools → ``tools``/``offered``, its
    schema tokens → ``schema_tokens``, its listings and deltas → ``context``.
    """

    tools: list[Any] = field(default_factory=list)
    offered: frozenset[str] | None = None
    list_tools: bool = True
    schema_tokens: int = 0
    context: list[BaseMessage] = field(default_factory=list)
    sent: list[Any] | None = None

    def offered_tools(self) -> list[Any]:
        return [t for t in self.tools if self.offered is None or t.name in self.offered]

    def request_tools(self) -> list[Any]:
        """What the next model request carries with its messages (a load changes it from the next call)."""
        return list(self.sent) if self.sent is not None else self.offered_tools()


class SystemPrompt:
    """What the engine needs of a system prompt: this call's messages and the conflicts they resolved."""

    def messages(self) -> list[BaseMessage]:
        raise NotImplementedError

    def conflicts(self) -> Sequence[Conflict]:
        return ()

    def schema_tokens(self) -> int:
        """Tokens of the tool schemas bound to the model (none for a prompt without a catalog)."""
        return 0

    def fixed_tokens(self, estimate: Any) -> int:
        """Tokens of the view's fixed part (system messages + bound schemas), by ``estimate(messages)``."""
        return int(estimate(self.messages())) + self.schema_tokens()


@dataclass(slots=True)
class FixedSystem(SystemPrompt):
    """A system prompt that never changes (a recorded one, in replay)."""

    fixed: list[BaseMessage] = field(default_factory=list)

    def messages(self) -> list[BaseMessage]:
        return list(self.fixed)


@dataclass(slots=True)
class SystemContext(SystemPrompt):
    """The session's static context (:class:`StaticContext`) rendered with its :class:`SessionTools`.

    ``source``: the session's tools, or what reads them as each request is built (a bound toolset:
    :func:`~mtagent.context.toolset.binding.bind_toolset`). ``role``: a subagent's role, appended to
    the system prompt; ``rules=False`` (a child the parent did not hand its rules) sends the base
    prompt only, without Tier 1/2 context.
    """

    static: StaticContext
    root: Path
    source: SessionTools | Callable[[], SessionTools] = field(default_factory=SessionTools)
    role: str | None = None
    rules: bool = True
    _conflicts: list[Conflict] = field(default_factory=list)

    @property
    def tools(self) -> SessionTools:
        """The tools as the request being built carries them (read now, not pushed by a listener)."""
        return self.source() if callable(self.source) else self.source

    def build(self, tools: Sequence[Any], *, list_tools: bool = True) -> StaticParts:
        """The static parts for ``tools`` (re-read from disk)."""
        return self.static.build(list(tools), RuntimeContext(working_directory=str(self.root)), list_tools=list_tools)

    def messages(self) -> list[BaseMessage]:
        tools = self.tools
        offered = tools.offered_tools()
        if self.role is None:
            parts = self.build(offered, list_tools=tools.list_tools)
            self._conflicts = list(parts.conflicts)
            return [*parts.messages, *tools.context]
        if not self.rules:
            base = build_system_prompt(offered, "", RuntimeContext(working_directory=str(self.root)))
            return [SystemMessage(content=f"{base}{self.role}", id="subagent-system-prompt"), *tools.context]
        parts = self.build(offered)
        self._conflicts = list(parts.conflicts)
        system = SystemMessage(content=f"{parts.system.content}{self.role}", id=parts.system.id,
                               response_metadata=dict(parts.system.response_metadata or {}))
        return [system, parts.session_context, *tools.context]

    def conflicts(self) -> Sequence[Conflict]:
        return list(self._conflicts)

    def schema_tokens(self) -> int:
        return self.tools.schema_tokens

    def touch(self, messages: Iterable[BaseMessage]) -> None:
        """Switch on path-scoped rules for files the messages name (incremental, per message)."""
        self.static.touch(touched_paths(list(messages), self.root))
