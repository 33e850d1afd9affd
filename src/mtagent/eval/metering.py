"""Tokens and dollars of an evaluated session: main calls and side calls (summaries) apart.

The main calls are the assistant messages of the conversation. Side calls — hand-off summaries,
session-memory notes, subagents — never enter it, so every chat-model call of the process is
also counted by a LangChain callback (registered once, armed only while a unit runs; it sees
background threads too). Side usage is the difference.

Usage and prices are :mod:`mtagent.pricing`'s — the lookup ``/cost`` uses, over ``agent.prices``:
input, output, cache_read and cache_write priced apart, so a policy that breaks the provider's
prompt cache pays for it. A model without a price row has tokens but no cost.
"""

from __future__ import annotations

import threading
from contextvars import ContextVar
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.tracers.context import register_configure_hook

from mtagent.pricing import Usage


class CallMeter(BaseCallbackHandler):
    """Every chat-model call's usage while armed (thread-safe)."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._armed = False
        self.usage = Usage()

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        if not self._armed:
            return
        for generations in response.generations:
            for generation in generations[:1]:
                if isinstance(generation, ChatGeneration):
                    with self._lock:
                        self.usage.add(getattr(generation.message, "usage_metadata", None))

    def arm(self) -> None:
        with self._lock:
            self.usage, self._armed = Usage(), True

    def snapshot(self) -> Usage:
        with self._lock:
            return Usage(**self.usage.as_dict())

    def disarm(self) -> Usage:
        with self._lock:
            self._armed = False
            return Usage(**self.usage.as_dict())


METER = CallMeter()
_METER_VAR: ContextVar[CallMeter | None] = ContextVar("mtagent_eval_meter", default=METER)
register_configure_hook(_METER_VAR, inheritable=True)
