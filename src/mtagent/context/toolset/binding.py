"""Keep an opened session's system context in step with its :class:`Toolset`, read as each request is built.

The opener gives every session a :class:`~mtagent.context.opener.SessionTools` slot: the tools the
session can run, which of them are sent with their schema, the schemas' tokens and the context
that travels with them. :func:`bind_toolset` makes the slot read the toolset: a ``tool_search``
load changes what the next request carries (the longer, appended tool list:
:meth:`SessionTools.request_tools`; no model is re-bound), and a compaction of any trigger (auto,
reactive, ``/compact``) is seen in the session's compaction count when the next request is built,
whose listings then carry the post-compaction delta. Nothing listens on the event bus.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from mtagent.context.opener.system import SessionTools, SystemContext
from mtagent.context.toolset.toolset import TOOLS_LOADED, Toolset
from mtagent.session import schema


def session_tools(toolset: Toolset, runnables: Sequence[Any]) -> SessionTools:
    """The slot's value now: ``runnables`` (every tool the session can run, ``tool_search`` and
    ``skill`` included), the names bound in full, their tokens (split by bucket) and the listings."""
    bound = toolset.bound()
    names = frozenset(b["function"]["name"] if isinstance(b, dict) else getattr(b, "name", "") for b in bound)
    full = toolset.catalog.schema_choice.mode == "full"
    return SessionTools(list(runnables), names, list_tools=full, schema_tokens=toolset.tokens(),
                        context=list(toolset.messages()), sent=bound)


def restore_loads(toolset: Toolset, records: Iterable[Mapping[str, Any]]) -> list[str]:
    """Bind again what a resumed session had loaded (its ``tools_loaded`` events, in order; each
    compaction repeats the loads so far, ``carried``, since a resume reads only what follows it)."""
    names = [str(n) for r in records if r.get("type") == schema.EVENT and r.get("event") == TOOLS_LOADED
             for n in ((r.get("data") or {}).get("names") or []) if isinstance(n, str)]
    return toolset.catalog.restore(names)


def bind_toolset(toolset: Toolset, system: SystemContext, runnables: Sequence[Any], *,
                 compactions: Callable[[], int] = lambda: 0, last_tokens: Callable[[], int] | None = None,
                 record_event: Callable[..., None] | None = None) -> None:
    """Give ``system`` the tools of ``toolset`` as each request is built (see the module docstring).

    ``compactions``: the session's compaction count, read then. ``last_tokens``: the last request's
    tokens (the window's plan), so a load is priced by what it makes the provider write again.
    ``record_event(name, **data)`` writes each load to the transcript (``tools_loaded``: names, the
    session's load statistics), and at a compaction the loads so far (``carried``), which
    :func:`restore_loads` reads back on a resume. (A deferred tool the model calls by name without
    searching is loaded by the front end as the call starts: :meth:`Toolset.load_called`.)
    """
    if last_tokens is not None:
        toolset.after_tokens = lambda: max(0, last_tokens() - int(toolset.tokens()))
    toolset.record, toolset.compactions_seen = record_event, compactions()
    catalog = toolset.catalog
    slot = [(catalog.version, len(catalog.entries), toolset.context.compactions), session_tools(toolset, runnables)]

    def now() -> SessionTools:  # rebuilt after a load, a late tool or a compaction, as the old listener did
        toolset.caught_up(compactions())
        if (key := (catalog.version, len(catalog.entries), toolset.context.compactions)) != slot[0]:
            slot[:] = [key, session_tools(toolset, runnables)]
        return slot[1]

    system.source = now
