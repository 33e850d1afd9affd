"""Dollars of model calls: summed usage, the price row of a model, and the price of the usage.

One lookup for every front end that reports money — ``/cost``, ``run --json``, ``batch`` and
``eval`` — over the one price table, ``agent.prices`` (USD per million tokens, defaults in
:mod:`mtagent.config_sections`). It sits at the bottom layer so the CLI and the evaluation, which
may not import each other, price a call the same way.

Usage comes from LangChain's ``usage_metadata``: ``input_tokens`` includes cached tokens, and
``input_token_details`` splits off cache reads and cache writes, which are priced apart (a cache
read costs a tenth of an input token at most providers, a write more than one); ``input`` here is
the uncached rest. A model without a price row has tokens but no cost (None, never 0).

The engine's own cost reasoning (when to compact, what replay charges) works in price *ratios*
(``context.price_*``, :mod:`mtagent.replay.cost`), not in a model's dollars, and is not this.
"""

from __future__ import annotations

import fnmatch
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

PRICE_KEYS = ("input", "output", "cache_read", "cache_write")  # USD per million tokens
PriceTable = Mapping[str, Mapping[str, float]]


@dataclass(slots=True)
class Usage:
    """Summed usage of some model calls; ``input`` is the uncached part."""

    calls: int = 0
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    def add(self, meta: Mapping[str, Any] | None) -> None:
        """Count one call's ``usage_metadata`` (anything else is ignored)."""
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
        """A usage read back from JSON; anything not a positive int counts 0."""
        data = data if isinstance(data, Mapping) else {}
        return cls(*(_count(data.get(f.name)) for f in fields(cls)))


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def usage_of_messages(messages: Iterable[Any]) -> Usage:
    """Summed usage of the AI messages among ``messages`` (LangChain messages)."""
    usage = Usage()
    for message in messages:
        if getattr(message, "type", None) == "ai":
            usage.add(getattr(message, "usage_metadata", None))
    return usage


def assistant_records(path: str | os.PathLike[str], offset: int = 0) -> Iterator[dict[str, Any]]:
    """The assistant records with usage of a JSONL transcript, from byte ``offset`` on (torn or odd
    lines skipped): every model call it recorded, also those a compaction took out of the history."""
    with open(path, "rb") as fh:
        fh.seek(offset)
        for line in fh:
            if b'"usage"' not in line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("role") == "assistant":
                yield record


def usage_of_transcript(path: str | os.PathLike[str], offset: int = 0) -> Usage:
    """Summed usage of the assistant messages a transcript recorded from byte ``offset`` on."""
    usage = Usage()
    for record in assistant_records(path, offset):
        usage.add(record.get("usage"))
    return usage


def price_for(model: str | None, prices: PriceTable) -> Mapping[str, float] | None:
    """The price row for ``provider:name``: exact key, then the bare name, then a glob key, then the
    longest key the name extends with a dash (a provider's dated name, ``gpt-4o-mini-2024-07-18``)."""
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
    dated = [key for key in prices if bare.startswith(key.split(":", 1)[-1] + "-")]
    return prices[max(dated, key=len)] if dated else None


def cost_usd(usage: Usage, price: Mapping[str, float] | None) -> float | None:
    """Dollars for ``usage`` at ``price`` (per million tokens; a missing cache price is the input
    price); None when the model has no price."""
    if price is None:
        return None
    return sum(getattr(usage, k) * float(price.get(k, price.get("input", 0.0))) for k in PRICE_KEYS) / 1_000_000
