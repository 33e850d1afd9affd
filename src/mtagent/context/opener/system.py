"""The system-prompt context a session owns: its tool catalog and the static context around it.

:class:`EngineSession.call_model` asks :class:`SystemContext` for the system messages of each call,
so the engine never calls back into a front end for its own prompt. A call re-checks only the
stat of each file the last build read or looked for, and rebuilds when one changed (a hand edit
applies on the next call); path-scoped rules switch on for the files a message names
(:meth:`SystemContext.touch`).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from mtagent.context.static.authority import Conflict
from mtagent.context.static.rules import Rule
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
    _built: _Built | None = field(default=None, repr=False)

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
        key = (tuple(offered), tools.list_tools, self.role, self.rules)
        if self._built is None or not self._built.holds(key):
            self._built = self._build_messages(key, offered, tools.list_tools)
        return [*self._built.messages, *tools.context]

    def _build_messages(self, key: tuple[Any, ...], offered: list[Any], list_tools: bool) -> _Built:
        started = time.time_ns()
        if self.role is not None and not self.rules:
            base = build_system_prompt(offered, "", RuntimeContext(working_directory=str(self.root)))
            return _Built(key, [SystemMessage(content=f"{base}{self.role}", id="subagent-system-prompt")])
        parts = self.build(offered, list_tools=list_tools if self.role is None else True)
        self._conflicts = list(parts.conflicts)
        messages: list[BaseMessage] = list(parts.messages)
        if self.role is not None:
            messages[0] = SystemMessage(content=f"{parts.system.content}{self.role}", id=parts.system.id,
                                        response_metadata=dict(parts.system.response_metadata or {}))
        stamps = tuple(map(_stamp, parts.watched))
        settled = all(s is None or s[-1] < started - _SETTLE_NS for s in stamps)
        dormant = tuple(r for r in parts.rules.rules if r.globs and not r.applies_to(self.static.touched_files))
        return _Built(key, messages, parts.watched, stamps, parts.valid_until if settled else 0.0, dormant)

    def conflicts(self) -> Sequence[Conflict]:
        return list(self._conflicts)

    def schema_tokens(self) -> int:
        return self.tools.schema_tokens

    def touch(self, messages: Iterable[BaseMessage]) -> None:
        """Switch on path-scoped rules for files the messages name (incremental, per message); only a
        rule still off makes a rebuild."""
        found = touched_paths(list(messages), self.root)
        self.static.touched_files.update(dict.fromkeys(found))
        if found and self._built is not None and any(rule.applies_to(found) for rule in self._built.dormant):
            self._built = None


PATH_ARG_KEYS = ("file_path", "path", "paths", "filename", "target_file", "directory")


def _paths_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def touched_paths(messages: Sequence[BaseMessage], project_root: str | os.PathLike[str] | None = None) -> list[str]:
    """Files the session's tool calls named, project-relative where possible, first touch first.

    Read from ``file_path`` / ``path``-like arguments of assistant tool calls and from the
    ``file_path`` of tool results' structured metadata, so the agent can pass its history as is.
    """
    root = Path(project_root).resolve() if project_root is not None else None
    found: dict[str, None] = {}

    def add(raw: str) -> None:
        if not raw or "\n" in raw:
            return
        p = Path(raw).expanduser()
        if root is not None:
            absolute = p if p.is_absolute() else root / p
            try:
                found[absolute.resolve().relative_to(root).as_posix()] = None
                return
            except ValueError:
                pass
        found[p.as_posix()] = None

    for m in messages:
        if isinstance(m, AIMessage):
            for call in m.tool_calls:
                for key in PATH_ARG_KEYS:
                    for raw in _paths_in((call.get("args") or {}).get(key)):
                        add(raw)
        elif isinstance(m, ToolMessage) and isinstance(m.artifact, dict):
            for raw in _paths_in(m.artifact.get("file_path")):
                add(raw)
    return list(found)


def _stamp(path: Path) -> tuple[int, ...] | None:
    """What an edit changes about ``path`` (or the file a link names): None when it is not there."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_ctime_ns, st.st_mtime_ns)


@dataclass(slots=True, frozen=True)
class _Built:
    """One build of the static messages, reused while it holds: the same tools and role, no memory it
    shows expired (``until``), every file it read or looked for as it was, and no rule still off
    (``dormant``) switched on by a touched file (:meth:`SystemContext.touch` drops it then).

    A file modified within :data:`_SETTLE_NS` of the build may be modified again inside the same
    timestamp tick with the same size; such a build is used once (``until`` 0), as git treats a
    racily clean index entry."""

    key: tuple[Any, ...]
    messages: list[BaseMessage]
    watched: tuple[Path, ...] = ()
    stamps: tuple[tuple[int, ...] | None, ...] = ()
    until: float = math.inf
    dormant: tuple[Rule, ...] = ()

    def holds(self, key: tuple[Any, ...]) -> bool:
        return key == self.key and time.time() < self.until and tuple(map(_stamp, self.watched)) == self.stamps


_SETTLE_NS = 2_000_000_000  # the coarsest timestamp tick of a common file system (FAT: 2 s)
