"""Cache-aware cost of a sequence of requests, under a prefix-cache model.

Providers cache the longest prefix a request shares with an earlier one. We compare each view
with the previous request message by message; the shared messages, plus the common token
prefix of the first message that differs (same role only), are **cache reads**; the rest is
written to the cache (Anthropic-style, at a premium) or simply uncached (OpenAI-style, which
also only caches from 1,024 tokens on, in 128-token steps).

Costs are in *input-token equivalents* (an uncached input token costs 1). Summary calls are
charged too: their input is uncached (a one-off prompt) and their output costs
``output_ratio``. The recorded assistant outputs are the same for every strategy and are left
out, so differences between strategies are not diluted.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage

from mtagent.context.tokens import MessageTokenCounter, count_text_tokens, message_text


@dataclass(frozen=True, slots=True)
class CacheModel:
    """Price ratios relative to one uncached input token."""

    name: str
    read_ratio: float
    write_ratio: float
    output_ratio: float
    min_cached_tokens: int = 0
    block_tokens: int = 1


ANTHROPIC = CacheModel("anthropic", read_ratio=0.1, write_ratio=1.25, output_ratio=5.0)
OPENAI = CacheModel("openai", read_ratio=0.1, write_ratio=1.0, output_ratio=4.0, min_cached_tokens=1024, block_tokens=128)
DEFAULT_CACHE_MODELS: tuple[CacheModel, ...] = (ANTHROPIC, OPENAI)


@dataclass(slots=True)
class RequestCost:
    tokens: int
    shared_tokens: int
    costs: dict[str, float]


@dataclass(slots=True)
class PrefixCache:
    """Remembers the previous request and prices the next one against it."""

    counter: MessageTokenCounter
    models: Sequence[CacheModel] = DEFAULT_CACHE_MODELS
    encoding: str = "o200k_base"
    _prev: list[tuple[str, str, str]] = field(default_factory=list)
    _keys: dict[int, tuple[BaseMessage, object, tuple[str, str, str]]] = field(default_factory=dict)

    def _key(self, m: BaseMessage) -> tuple[str, str, str]:
        """(role, digest, text) of a message, memoised per object (held, so ids stay unique)."""
        hit = self._keys.get(id(m))
        if hit is not None and hit[0] is m and hit[1] is m.content:
            return hit[2]
        text = message_text(m)
        calls = getattr(m, "tool_calls", None)
        extra = json.dumps([c.get("id") for c in calls]) if calls else ""
        key = (m.type, hashlib.blake2b((text + extra).encode("utf-8", "replace"), digest_size=16).hexdigest(), text)
        self._keys[id(m)] = (m, m.content, key)
        return key

    def request(self, view: Sequence[BaseMessage]) -> RequestCost:
        keys = [self._key(m) for m in view]
        shared = 0
        k = 0
        while k < len(keys) and k < len(self._prev) and keys[k][:2] == self._prev[k][:2]:
            shared += self.counter.message_tokens(view[k])
            k += 1
        if k < len(keys) and k < len(self._prev) and keys[k][0] == self._prev[k][0]:
            shared += _common_prefix_tokens(keys[k][2], self._prev[k][2], self.encoding)
        total = self.counter.estimate(view)
        shared = min(shared, total)
        self._prev = keys
        if len(self._keys) > 8 * max(len(keys), 1024):
            live = {id(m) for m in view}
            self._keys = {k2: v for k2, v in self._keys.items() if k2 in live}
        return RequestCost(total, shared, {m.name: price(total, shared, m) for m in self.models})


def price(total: int, shared: int, model: CacheModel) -> float:
    cached = shared if shared >= model.min_cached_tokens else 0
    cached -= cached % model.block_tokens
    return cached * model.read_ratio + (total - cached) * model.write_ratio


def summary_call_cost(input_tokens: int, output_tokens: int, model: CacheModel) -> float:
    return float(input_tokens) + output_tokens * model.output_ratio


def _common_prefix_tokens(a: str, b: str, encoding: str) -> int:
    """Tokens of the common character prefix, less one for the token the split may cut."""
    limit = min(len(a), len(b))
    step = 4096
    n = 0
    while n < limit and a[n:n + step] == b[n:n + step]:
        n += step
    if n >= limit:
        n = limit
    else:
        while n < limit and a[n] == b[n]:
            n += 1
    if n == 0:
        return 0
    return max(0, count_text_tokens(a[:n], encoding) - 1)
