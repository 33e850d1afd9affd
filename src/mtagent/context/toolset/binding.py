"""Keep an opened session's system context and bound model in step with its :class:`Toolset`.

The opener gives every session a :class:`~mtagent.context.opener.SessionTools` slot: the tools the
session can run, which of them are sent with their schema, the schemas' tokens and the context
that travels with them. :func:`bind_toolset` fills that slot from a toolset and refills it whenever
the toolset changes — a ``tool_search`` load (the next request carries the longer, appended tool
list: :meth:`SessionTools.request_tools`; no model is re-bound) or a compaction (seen on the
session's event bus, from any trigger: auto, reactive, ``/compact``), after which the listings carry
the post-compaction delta.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from mtagent.context.opener.system import SessionTools, SystemContext
from mtagent.context.toolset.toolset import Toolset
from mtagent.events import EventBus, EventType
from mtagent.session import schema


def session_tools(toolset: Toolset, runnables: Sequence[Any]) -> SessionTools:
    """The slot's value now: ``runnables`` (every tool the session can run, ``tool_search`` and
    ``skill`` included), the names bound in full, their tokens (split by bucket) and the listings."""
    bound = toolset.bound()
    names = frozenset(b["function"]["name"] if isinstance(b, dict) else getattr(b, "name", "") for b in bound)
    full = toolset.catalog.schema_choice.mode == "full"
    return SessionTools(list(runnables), names, list_tools=full, schema_tokens=toolset.tokens(),
                        context=list(toolset.messages()), sent=bound)


TOOLS_LOADED = "tools_loaded"  # the transcript event of a load: names, tokens, cache cost


def restore_loads(toolset: Toolset, records: Iterable[Mapping[str, Any]]) -> list[str]:
    """Bind again what a resumed session had loaded (its ``tools_loaded`` events, in order; each
    compaction repeats the loads so far, ``carried``, since a resume reads only what follows it)."""
    names = [str(n) for r in records if r.get("type") == schema.EVENT and r.get("event") == TOOLS_LOADED
             for n in ((r.get("data") or {}).get("names") or []) if isinstance(n, str)]
    return toolset.catalog.restore(names)


def bind_toolset(toolset: Toolset, system: SystemContext, runnables: Sequence[Any], *, events: EventBus | None = None,
                 last_tokens: Callable[[], int] | None = None,
                 record_event: Callable[..., None] | None = None) -> Callable[[], None]:
    """Fill ``system.tools`` from ``toolset`` and keep it filled (see the module docstring).

    ``last_tokens``: the last request's tokens (the window's plan), so a load is priced by what it
    makes the provider write again. ``record_event(name, **data)`` writes each load to the transcript
    (``tools_loaded``: names, the session's load statistics), which :func:`restore_loads` reads back
    on a resume. (A deferred tool the model calls by name without searching is loaded by the front end
    as the call starts: :meth:`Toolset.load_called`.) Returns a function that detaches the subscription.
    """
    seen = [len(toolset.catalog.loaded)]

    def refresh() -> None:
        system.tools = session_tools(toolset, runnables)
        loaded = toolset.catalog.loaded
        if record_event is not None and len(loaded) > seen[0]:
            record_event(TOOLS_LOADED, names=list(loaded[seen[0]:]), **toolset.catalog.stats.to_dict())
        seen[0] = len(loaded)

    if last_tokens is not None:
        toolset.after_tokens = lambda: max(0, last_tokens() - int(toolset.tokens()))
    toolset.listeners.append(refresh)
    system.tools = session_tools(toolset, runnables)
    if events is None:
        return lambda: None
    ref = weakref.ref(toolset)  # a bus shared across sessions (the REPL's, over /resume) must not keep it alive

    def on_compaction(_event: Any) -> None:
        alive = ref()
        if alive is None:
            return
        alive.compacted()
        if record_event is not None and alive.catalog.loaded:  # resume reads from here on: carry the loads over
            record_event(TOOLS_LOADED, names=list(alive.catalog.loaded), carried=True)

    return events.subscribe(on_compaction, EventType.COMPACT_BOUNDARY)
