"""``open_catalog``: the one place a session's tool catalog (:class:`~mtagent.context.toolset.Toolset`) is opened.

A CLI session, ``mtagent tools list`` and the middleware's per-thread catalog all open theirs here,
so they decide alike: the same skills, the same deferral behind ``tool_search``, schema sizes
measured with the system prompt each schema set goes with (``system``, counted by ``counter``: the
configured encoding), and one fallback when ``recall.embeddings`` cannot be set up (keyword-only
search; ``warn`` tells the front end's user).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

from mtagent.config import Settings
from mtagent.context.opener.system import SystemContext
from mtagent.context.recall.embeddings import make_embeddings
from mtagent.context.tokens import MessageTokenCounter
from mtagent.context.toolset import Toolset
from mtagent.errors import ConfigError


class ToolSource(Protocol):
    """Tools that come from elsewhere (the project's MCP servers), with the instructions they bring."""

    def tools(self) -> list[Any]: ...

    def instructions(self) -> dict[str, str]: ...


def open_catalog(tools: Iterable[Any], settings: Settings, root: Path | None, *, window: int,
                 system: SystemContext | None = None, counter: MessageTokenCounter | None = None,
                 source: ToolSource | None = None, warn: Callable[[ConfigError], None] | None = None,
                 agent: bool = True) -> Toolset:
    """The catalog of ``tools`` (+ ``source``'s) for a window of ``window`` tokens.

    ``agent=False``: a ``create_agent``'s catalog — the caller's tools, none of them core, no skills
    (it cannot run the ``skill`` tool), no embeddings, schemas measured without a system prompt."""
    if not agent:
        return Toolset.open(list(tools), settings, project_root=root, drop=(), window=window, builtin_core=False,
                            skills=False)
    counter = counter or MessageTokenCounter(encoding=settings.context.encoding,
                                             overhead_tokens=settings.context.message_overhead_tokens)

    def system_tokens(offered: Sequence[Any], mode: str) -> int:
        return counter.estimate(system.build(offered, list_tools=mode == "full").messages) if system else 0

    try:
        embeddings = make_embeddings(settings.recall.embeddings)
    except ConfigError as exc:  # tool_search still has BM25
        if warn is not None:
            warn(exc)
        embeddings = None
    return Toolset.open([*tools, *(source.tools() if source is not None else [])], settings, project_root=root,
                        window=window, system_tokens=system_tokens, embeddings=embeddings,
                        instructions=source.instructions() if source is not None else None)
