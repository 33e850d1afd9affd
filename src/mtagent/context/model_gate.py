"""Background model work yields to the main call.

A one-slot server (llama-server with one slot, Ollama with ``OLLAMA_NUM_PARALLEL=1``) answers
requests in arrival order: a session-memory update sent while the main call is on its way makes
the main call wait for the whole update, and it timed out. The gate lets the session-memory
model call start only when no main call is in flight or about to be sent; a main call that
starts meanwhile is served first, and the update runs right after it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class CallGate:
    """Counts main calls in flight; background calls wait until there are none."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._main = 0

    @contextmanager
    def main_call(self) -> Iterator[None]:
        with self._cond:
            self._main += 1
        try:
            yield
        finally:
            with self._cond:
                self._main -= 1
                self._cond.notify_all()

    @contextmanager
    def background_call(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: self._main == 0)
        yield

    @property
    def main_in_flight(self) -> int:
        with self._cond:
            return self._main


GATE = CallGate()  # one per process: every session's main calls outrank every background call


class BackgroundModel:
    """A chat model whose ``invoke`` waits at the gate first (session-memory updates use ``invoke``)."""

    def __init__(self, model: Any, gate: CallGate = GATE) -> None:
        self._model, self._gate = model, gate

    def invoke(self, *args: Any, **kwargs: Any) -> Any:
        with self._gate.background_call():
            return self._model.invoke(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)


def background(model: Any | None, gate: CallGate = GATE) -> Any | None:
    """``model`` behind the gate (None stays None: the extractive path makes no call)."""
    return None if model is None else BackgroundModel(model, gate)
