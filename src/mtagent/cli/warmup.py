"""Import the agent stack in a background thread while the user types (or ``run`` reads its input).

Most of the time between ``mtagent`` and a usable session is importing LangChain, LangGraph and
the provider SDK (seconds on a busy machine). None of it is needed to draw the prompt, so the REPL
shows the prompt first and imports meanwhile; the session opens (on the main thread) once they are
in. Only the modules the chosen model needs are imported: a scripted model loads no provider SDK.

Importing in two threads at once is safe for modules without import cycles (ours have none); the
main thread imports nothing of the agent while a warm-up runs — it waits for it (:meth:`wait`).
"""

from __future__ import annotations

import importlib
import logging
import threading

log = logging.getLogger(__name__)

AGENT_STACK = ("mtagent.agent.session",)
REPL_STACK = ("mtagent.cli.slash_session", "mtagent.cli.context_render", "mtagent.cli.window_now")
OPENAI_STACK = ("mtagent.agent.profiled_openai", "mtagent.agent.deadline")
ANTHROPIC_STACK = ("langchain_anthropic",)


def modules_for(spec: str | None) -> tuple[str, ...]:
    """What opening a session with model ``spec`` will import (a scripted model: no provider SDK)."""
    text = (spec or "").strip().lower()
    if not text or text.startswith("scripted:"):
        return AGENT_STACK if text else ()
    if text.startswith(("anthropic:", "claude")):
        return (*AGENT_STACK, *ANTHROPIC_STACK)
    return (*AGENT_STACK, *OPENAI_STACK)


class Warmup:
    """One background thread importing ``modules``; failures are left for the real import to report."""

    def __init__(self, modules: tuple[str, ...]) -> None:
        self.modules = modules
        self._done = threading.Event()
        self._started = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="mtagent-warmup", daemon=True)

    def start(self) -> Warmup:
        """Start the imports (once; later calls do nothing)."""
        with self._lock:
            if self._started.is_set():
                return self
            self._started.set()
        if self.modules:
            self._thread.start()
        else:
            self._done.set()
        return self

    def _run(self) -> None:
        try:
            for name in self.modules:
                try:
                    importlib.import_module(name)
                except Exception:  # noqa: BLE001 — the session's own import says what is wrong
                    log.debug("warm-up import of %s failed", name, exc_info=True)
        finally:
            self._done.set()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the imports; a warm-up never started returns at once (the caller imports itself)."""
        if not self._started.is_set():
            return True
        return self._done.wait(timeout)
