"""Cache-aware cost of a sequence of requests, under a prefix-cache model.

Providers cache the longest prefix a request shares with an earlier one. We compare each view
with the previous request message by message; the shared messages, plus the common token
prefix of the first message that differs (same role only), are **cache reads**; the rest is
written to the cache (Anthropic-style, at a premium) or simply uncached (OpenAI-style, which
also only caches from 1,024 tokens on, in 128-token steps).

Costs are in *input-token equivalents* (an uncached input token costs 1). Summary calls are
charged too: their output costs ``output_ratio``; their input is uncached (a one-off prompt)
unless the strategy sent a cache-aligned request (:class:`~mtagent.replay.summarizer.SummaryCall`
with ``request``), which is priced against the previous main request like any other request —
cached only as far as it really shares that prefix (:meth:`PrefixCache.peek`). The recorded assistant outputs are the same for every strategy and are left
out, so differences between strategies are not diluted.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from langchain_core.messages import BaseMessage

from mtagent.context.tokens import MessageTokenCounter, count_text_tokens, message_text

if TYPE_CHECKING:
    from mtagent.replay.summarizer import SummaryCall


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
    """Remembers the previous request and prices the next one against it.

    Messages are compared by (role, id, content hash, tool-call ids): a strategy that copies
    messages without changing them (LangChain deep-copies every request) still shares the
    prefix, and nothing is re-rendered unless it differs.
    """

    counter: MessageTokenCounter
    models: Sequence[CacheModel] = DEFAULT_CACHE_MODELS
    encoding: str = "o200k_base"
    _prev: list[BaseMessage] = field(default_factory=list)
    _prev_keys: list[tuple[object, ...]] = field(default_factory=list)

    def request(self, view: Sequence[BaseMessage]) -> RequestCost:
        cost, keys = self._price(view)
        self._prev, self._prev_keys = list(view), keys
        return cost

    def peek(self, view: Sequence[BaseMessage]) -> RequestCost:
        """Price ``view`` against the previous request without making it the new previous one
        (a side request, e.g. a summary, does not move the main conversation's cache)."""
        return self._price(view)[0]

    def _price(self, view: Sequence[BaseMessage]) -> tuple[RequestCost, list[tuple[object, ...]]]:
        keys = [message_key(m) for m in view]
        tokens = [self.counter.message_tokens(m) for m in view]
        k = 0
        limit = min(len(keys), len(self._prev_keys))
        while k < limit and keys[k] == self._prev_keys[k]:
            k += 1
        shared = sum(tokens[:k])
        if k < limit and keys[k][0] == self._prev_keys[k][0]:
            shared += _common_prefix_tokens(message_text(view[k]), message_text(self._prev[k]), self.encoding)
        total = sum(tokens)
        shared = min(shared, total)
        return RequestCost(total, shared, {m.name: price(total, shared, m) for m in self.models}), keys


def message_key(m: BaseMessage) -> tuple[object, ...]:
    content = m.content
    content_key = hash(content) if isinstance(content, str) else json.dumps(content, sort_keys=True, default=str)
    calls = getattr(m, "tool_calls", None)
    call_key = tuple((c.get("id"), c.get("name"), repr(c.get("args"))) for c in calls) if calls else ()
    return (m.type, m.id, content_key, call_key, getattr(m, "tool_call_id", None))


def price(total: int, shared: int, model: CacheModel) -> float:
    cached = shared if shared >= model.min_cached_tokens else 0
    cached -= cached % model.block_tokens
    return cached * model.read_ratio + (total - cached) * model.write_ratio


def summary_call_cost(input_tokens: int, output_tokens: int, model: CacheModel) -> float:
    """An uncached summary request: every input token at the full price."""
    return float(input_tokens) + output_tokens * model.output_ratio


def summary_costs(call: SummaryCall, cache: PrefixCache) -> dict[str, float]:
    """Per cache model, what one summary call costs (see the module docstring)."""
    if call.request:
        priced = cache.peek(call.request)
        return {m.name: priced.costs[m.name] + call.output_tokens * m.output_ratio for m in cache.models}
    return {m.name: summary_call_cost(call.input_tokens, call.output_tokens, m) for m in cache.models}


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


WORKING_CONTEXT_TOKENS = 10_000


def lower_bounds(
    requests: Sequence[tuple[int, int]], model: CacheModel, working_tokens: int = WORKING_CONTEXT_TOKENS
) -> tuple[float, float]:
    """Two floors for a session's cost, from the raw replay's ``(tokens, shared_tokens)`` per call.

    The first: every token is written to the cache once and never read again (no strategy that
    sends each new token can pay less). The second adds re-reading a ``working_tokens`` working
    context (or the whole request, when smaller) on every call — what an agent that keeps only
    a small live context still pays.
    """
    written = sum(max(0, tokens - shared) for tokens, shared in requests) * model.write_ratio
    reread = sum(min(working_tokens, tokens) for tokens, _ in requests) * model.read_ratio
    return written, written + reread
