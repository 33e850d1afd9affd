"""What loading a deferred tool mid-session costs under prompt caching.

Providers cache the longest unchanged prefix of a request, and tool definitions come first (before
the system prompt and the messages). A load *appends* its schema to the bound tools — never a
reorder, so the definitions already sent stay a cached prefix — but everything after the tools
(system prompt, listings, the whole conversation) now follows a changed prefix and is written to
the cache again on the next call instead of read from it::

    cost = after × (write − read) + added × write        (input-token equivalents)

where ``after`` is the request's tokens behind the tool definitions and ``added`` the new schemas'
tokens. Loading several tools in one ``tool_search`` call pays ``after`` once, which is why a search
loads all its hits together. Prices are ``context.price_*`` (uncached input = 1), the same ratios the
cost-aware compaction trigger uses.
"""

from __future__ import annotations

from dataclasses import dataclass

from mtagent.context.compaction.trigger import Prices


@dataclass(slots=True, frozen=True)
class LoadCost:
    """One load's price (see the module docstring)."""

    after_tokens: int
    added_tokens: int
    cost: float  # input-token equivalents

    def to_dict(self) -> dict[str, float | int]:
        return {"after_tokens": self.after_tokens, "added_tokens": self.added_tokens, "cost": round(self.cost, 2)}


def load_cost(after_tokens: int, added_tokens: int, prices: Prices) -> LoadCost:
    """The price of appending ``added_tokens`` of schemas before ``after_tokens`` cached tokens."""
    after = max(0, after_tokens)
    added = max(0, added_tokens)
    return LoadCost(after, added, after * max(0.0, prices.write - prices.read) + added * prices.write)


@dataclass(slots=True)
class LoadStats:
    """How often loads changed the cached prefix this session, and what that cost."""

    loads: int = 0  # tool_search calls (or /skill-free loads) that bound new schemas
    tools_loaded: int = 0
    cache_invalidations: int = 0  # loads that changed a prefix a provider had cached
    cache_cost: float = 0.0  # their price, input-token equivalents

    def add(self, tools: int, cost: LoadCost) -> None:
        self.loads += 1
        self.tools_loaded += tools
        if cost.after_tokens:
            self.cache_invalidations += 1
        self.cache_cost += cost.cost

    def to_dict(self) -> dict[str, float | int]:
        return {"loads": self.loads, "tools_loaded": self.tools_loaded,
                "cache_invalidations": self.cache_invalidations, "cache_cost": round(self.cache_cost, 2)}
