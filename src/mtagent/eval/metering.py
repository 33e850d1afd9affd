"""Tokens and dollars of an evaluated session: main calls and side calls (summaries) apart.

The main calls are the assistant messages of the conversation. Side calls — hand-off summaries,
session-memory notes, subagents — never enter it, so every chat-model call of the process is
also counted by a LangChain callback (registered once, armed only while a unit runs; it sees
background threads too). Side usage is the difference.

Prices come from ``agent.prices`` (USD per million tokens, the table ``/cost`` uses): input,
output, cache_read and cache_write priced apart, so a policy that breaks the provider's prompt
cache pays for it. A model without a price row has tokens but no cost.
"""

from __future__ import annotations

import fnmatch
import threading
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from dataclasses import asdict, dataclass, fields
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.tracers.context import register_configure_hook

PRICE_KEYS = ("input", "output", "cache_read", "cache_write")


@dataclass(slots=True)
class Usage:
    """Summed usage of some model calls; ``input`` is the uncached part."""

    calls: int = 0
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    def add(self, meta: Mapping[str, Any] | None) -> None:
        if not isinstance(meta, Mapping):
            return
        details = meta.get("input_token_details")
        details = details if isinstance(details, Mapping) else {}
        read, write = _count(details.get("cache_read")), _count(details.get("cache_creation"))
        self.calls += 1
        self.cache_read += read
        self.cache_write += write
        self.input += max(_count(meta.get("input_tokens")) - read - write, 0)
        self.output += _count(meta.get("output_tokens"))

    def minus(self, other: Usage) -> Usage:
        return Usage(*(max(getattr(self, f.name) - getattr(other, f.name), 0) for f in fields(self)))

    def plus(self, other: Usage) -> Usage:
        return Usage(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    @property
    def tokens(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> Usage:
        data = data if isinstance(data, Mapping) else {}
        return cls(*(_count(data.get(f.name)) for f in fields(cls)))


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def usage_of(messages: Iterable[Any]) -> Usage:
    """Summed usage of the assistant messages among ``messages``."""
    usage = Usage()
    for message in messages:
        if getattr(message, "type", None) == "ai":
            usage.add(getattr(message, "usage_metadata", None))
    return usage


def price_row(model: str | None, prices: Mapping[str, Mapping[str, float]]) -> Mapping[str, float] | None:
    """The row for ``provider:name``: exact key, then the bare name, then a glob key (as ``/cost``)."""
    if not model:
        return None
    bare = model.split(":", 1)[-1]
    for key in (model, bare):
        if key in prices:
            return prices[key]
    for pattern, row in prices.items():
        if any(ch in pattern for ch in "*?[") and (fnmatch.fnmatchcase(model, pattern)
                                                   or fnmatch.fnmatchcase(bare, pattern)):
            return row
    return None


def cost_usd(usage: Usage, row: Mapping[str, float] | None) -> float | None:
    """Dollars for ``usage`` at ``row`` (USD per million tokens); None without a price."""
    if row is None:
        return None
    return sum(getattr(usage, k) * float(row.get(k, row.get("input", 0.0))) for k in PRICE_KEYS) / 1_000_000


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
