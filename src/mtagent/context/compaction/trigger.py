"""The cost-aware compaction trigger: compact when it pays for itself under prompt caching.

With a prompt cache, a long context is cheap to *keep* (every call re-reads it at the cache-read
price) and costly to *change* (a compaction writes a new prefix at the cache-write price and asks
a model for a summary, whose output is the dearest token there is). Compacting at the window's
threshold is therefore late: long before it, every call re-reads tens of thousands of tokens
that a summary would replace. The trigger weighs, on every call::

    saving  = expected_calls × (V − P) × read          (reads avoided on the calls still to come)
    cost    = V × read + I × write + S × output        (the cache-aligned summary request)
            + (P − X) × write + X × read               (the next request writes the new prefix)

where ``V`` is this request's tokens, ``P`` the tokens after a compaction (the last one's real
result, else system + tools ``X`` + the expected summary ``S`` + the middle of the cost tail),
``I`` the appended instruction and ``expected_calls`` the calls this session has made so far —
a session that has run *k* calls is, absent other knowledge, expected to run about *k* more. It
compacts when ``saving > cost``. Prices come from ``context.price_*`` (uncached input = 1); the
summary request is priced at ``agent.compact_model``'s prices when one is set — a model that cannot
read the main model's cache pays its whole request (:mod:`mtagent.context.compaction.summary_price`).

A second test keeps it from compacting too often: with growth ``g`` tokens per call, compacting
every ``E`` tokens costs ``cost·g/E`` per call in compactions and ``E/2·read`` in extra reads, least
at ``E* = √(2·cost·g/read)`` (the square-root law of batch sizes), so it waits until ``V − P ≥ E*``.

With the defaults (read 0.1, write 1.25, output 5, a 2K–6K cost tail) and 3K of system prompt
and tools, ``P`` ≈ 9K and compacting a 40K request costs ≈ 22.6K: it pays after ≈ 8 more calls.
A session adding 1.5K tokens a call compacts at ≈ 35K (``E*`` ≈ 26K); one adding 500 at ≈ 23K.
Short sessions never pay and keep their full context.

The spec's threshold stays the hard ceiling (the policy compacts there whatever this says), and a
user's exact ``context.auto_compact_threshold`` switches this trigger off: the user asked for a
number, not an estimate. Each :meth:`CostTrigger.decide` is O(1), so it costs nothing per turn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mtagent.config import Settings
from mtagent.context.compaction.summary_price import SummaryPrice, summary_price

# Tokens of the instruction appended to the cached prefix (the hand-off prompt).
INSTRUCTION_TOKENS = 600


@dataclass(slots=True, frozen=True)
class Prices:
    """Price ratios per token relative to one uncached input token."""

    read: float = 0.1
    write: float = 1.25
    input: float = 1.0
    output: float = 5.0

    @classmethod
    def from_settings(cls, settings: Settings) -> Prices:
        ctx = settings.context
        unit = ctx.price_input
        return cls(ctx.price_cache_read / unit, ctx.price_cache_write / unit, 1.0, ctx.price_output / unit)


@dataclass(slots=True, frozen=True)
class CostEstimate:
    """Why the trigger fired or not, in input-token equivalents (kept on the decision)."""

    saving: float
    cost: float
    post_tokens: int
    expected_calls: int

    @property
    def pays(self) -> bool:
        return self.saving > self.cost


def compaction_cost(tokens: int, post_tokens: int, extra_tokens: int, summary_tokens: int, prices: Prices,
                    summary: SummaryPrice | None = None) -> float:
    """What compacting a ``tokens`` request costs: the summary request and the new prefix.

    ``summary``: the summary model's prices (:mod:`.summary_price`); without it the main model
    writes the summary from its cache."""
    if summary is None:
        request = tokens * prices.read + INSTRUCTION_TOKENS * prices.write + summary_tokens * prices.output
    else:
        request = summary.request_cost(tokens, summary_tokens, read=prices.read, write=prices.write,
                                       instruction_tokens=INSTRUCTION_TOKENS)
    rewrite = max(0, post_tokens - extra_tokens) * prices.write + extra_tokens * prices.read
    return request + rewrite


@dataclass(slots=True)
class CostTrigger:
    """Per-session state of the cost-aware trigger (see the module docstring)."""

    settings: Settings
    calls: int = 0
    last_post_tokens: int | None = None
    last_summary_tokens: int | None = None
    retry_above: int = 0
    base_tokens: int = 0
    base_calls: int = 0

    @property
    def prices(self) -> Prices:
        return Prices.from_settings(self.settings)

    def expected_post(self, extra_tokens: int) -> int:
        if self.last_post_tokens is not None:
            return self.last_post_tokens
        ctx = self.settings.context
        tail = (ctx.cost_tail_min_tokens + ctx.cost_tail_max_tokens) // 2
        return extra_tokens + ctx.expected_summary_tokens + tail

    def estimate(self, tokens: int, extra_tokens: int = 0) -> CostEstimate:
        ctx = self.settings.context
        prices = self.prices
        post = self.expected_post(extra_tokens)
        summary = self.last_summary_tokens if self.last_summary_tokens is not None else min(
            ctx.expected_summary_tokens, ctx.summary_output_tokens)  # the output: the model writes its part only
        expected = self.calls
        saving = expected * max(0, tokens - post) * prices.read
        cost = compaction_cost(tokens, post, extra_tokens, summary, prices, summary_price(self.settings))
        return CostEstimate(saving, cost, post, expected)

    def growth(self, tokens: int) -> float:
        """Mean tokens a call adds, since the session start or the last compaction."""
        calls = self.calls - self.base_calls
        return max(1.0, (tokens - self.base_tokens) / calls) if calls > 0 else float(tokens)

    def decide(self, tokens: int, extra_tokens: int = 0) -> CostEstimate | None:
        """Count this call; the estimate when compacting now pays, else None.

        Two tests, both needed: the compaction pays for itself over the calls still expected
        (``saving > cost``), and the context has grown past the economic cycle size — with
        growth ``g`` per call, compacting every ``E`` tokens costs ``cost·g/E`` per call in
        compactions plus ``E/2·read`` in extra reads, least at ``E* = √(2·cost·g/read)`` (the
        square-root law of batch sizes). Compacting earlier than ``E*`` pays the compaction
        more often than the reads it avoids.
        """
        self.calls += 1
        if self.base_calls == 0 and self.calls == 1:
            self.base_tokens = tokens
        if self.calls < self.settings.context.cost_min_calls or tokens <= self.retry_above:
            return None
        estimate = self.estimate(tokens, extra_tokens)
        if not estimate.pays:
            return None
        read = max(self.prices.read, 1e-9)
        cycle = math.sqrt(2 * estimate.cost * self.growth(tokens) / read)
        return estimate if tokens - estimate.post_tokens >= cycle else None

    def failed(self, tokens: int) -> None:
        """An early compaction failed at ``tokens``: wait for another cost tail of growth."""
        self.retry_above = tokens + self.settings.context.cost_tail_min_tokens

    def compacted(self, post_tokens: int, summary_tokens: int | None = None) -> None:
        """Learn the real size after a compaction (the next estimate of ``P``)."""
        self.last_post_tokens = post_tokens
        self.base_tokens, self.base_calls = post_tokens, self.calls
        if summary_tokens is not None:
            self.last_summary_tokens = summary_tokens


def cost_trigger_enabled(settings: Settings) -> bool:
    """The cost trigger runs unless the user chose ``threshold`` or set an exact threshold."""
    ctx = settings.context
    return ctx.compaction_trigger == "cost" and ctx.auto_compact_threshold is None


def early_compaction_settings(settings: Settings) -> Settings:
    """``settings`` with the cost tail as the compaction tail (an early compaction keeps less:
    the threshold's 10K–40K tail would leave little to save)."""
    ctx = settings.context
    update = {
        "compression_preserve_min_tokens": ctx.cost_tail_min_tokens,
        "compression_preserve_max_tokens": max(ctx.cost_tail_min_tokens, ctx.cost_tail_max_tokens),
    }
    return settings.model_copy(update={"context": ctx.model_copy(update=update)})
