"""Tools that arrive after the session opened follow the deferral rule of tools at start.

An MCP server may add tools while it runs (``tools/list_changed``): one tool, or 523. At start the
catalog decides once (``tools.defer = "auto"``: defer when the definitions would take more than
``tools.defer_share`` of the window and at least ``tools.defer_min_tools`` could be deferred); a
catalog that did not defer then used to bind every late tool *loaded* — 523 schemas, 162 KB in
every later request. So the rule is applied again over the catalog as it grows: once it holds, the
catalog starts deferring (``tool_search`` is offered from then on), what was bound stays bound, and
the new tools are deferred — listed by name, loaded when searched or called.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from mtagent.context.toolset.catalog import ToolCatalog, tool_search_schema
from mtagent.context.toolset.entries import entry_for


def add_late_tools(catalog: ToolCatalog, tools: Iterable[Any], *, after_tokens: int = 0) -> tuple[list[str], bool]:
    """Add ``tools`` to ``catalog`` (:meth:`ToolCatalog.add`) after deciding again whether it defers.

    Returns the names added and whether the catalog started deferring now (the caller then offers
    ``tool_search``). ``tools.defer = "never"`` keeps loading; ``"always"`` defers already."""
    tools = list(tools)
    started = False
    with catalog._lock:  # noqa: SLF001 - one decision with the add, under the catalog's own lock
        deferral = catalog.deferral
        fresh = [e for e in (entry_for(t) for t in tools) if e.name not in catalog.by_name]
        if fresh and not deferral.deferring and deferral.setting == "auto":
            all_tokens = deferral.all_tokens + sum(e.tokens for e in fresh)
            candidates = deferral.candidates + len(fresh)
            started = candidates >= deferral.min_tools and all_tokens > deferral.share * deferral.window
            catalog.deferral = dataclasses.replace(deferral, deferring=started, all_tokens=all_tokens,
                                                   candidates=candidates, deferred=len(fresh) if started else 0)
            if started:
                tcfg = catalog.settings.tools
                catalog.core_bound.append(tool_search_schema(tcfg.search_default_k, tcfg.search_max_k))
                catalog.version += 1
        names = catalog.add(tools, after_tokens=after_tokens)
    return names, started
