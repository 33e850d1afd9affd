"""Message, compaction-boundary and subagent ids: random by default, counted inside :func:`sequential_ids`.

Recall results show ids to the model, so random ones make two runs of the same session send
requests that differ by a few tokens — enough to move a compaction by one call and change what
the model can still see. ``mtagent eval`` runs each unit inside :func:`sequential_ids`, so a
deterministic model gets byte-identical requests on every run and every executor.
"""

from __future__ import annotations

import itertools
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["new_boundary_id", "new_child_id", "new_message_id", "sequential_ids"]

_SOURCES: list[Callable[[str], str]] = []  # the innermost sequential_ids block last


def new_message_id() -> str:
    return _SOURCES[-1]("msg") if _SOURCES else f"msg-{uuid.uuid4().hex}"


def new_boundary_id() -> str:
    return _SOURCES[-1]("cb") if _SOURCES else f"cb-{uuid.uuid4().hex[:16]}"


def new_child_id() -> str:
    """A subagent's session id (the parent's ``task`` result names it to the model)."""
    return _SOURCES[-1]("agent") if _SOURCES else f"agent-{uuid.uuid4().hex[:12]}"


@contextmanager
def sequential_ids(prefix: str) -> Iterator[None]:
    """Ids ``<kind>-<prefix>-<n>`` (``n`` counted from 1) in this process while the block runs.

    ``prefix`` keeps them unique where sessions meet (one project's recall index): give each
    session its own. Counting is thread-safe; ids are in call order, so they repeat from run to
    run only when the calls do.
    """
    counter = itertools.count(1)
    lock = threading.Lock()

    def make(kind: str) -> str:
        with lock:
            return f"{kind}-{prefix}-{next(counter):06d}"

    _SOURCES.append(make)
    try:
        yield
    finally:
        _SOURCES.remove(make)
