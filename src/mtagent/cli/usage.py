"""Tokens and cost of a session: model-call usage summed, priced from ``agent.prices``.

Usage comes from each assistant message's LangChain ``usage_metadata`` as the transcript keeps
it: ``input_tokens`` includes cached tokens, and ``input_token_details`` splits off cache reads
and cache writes, which are priced apart (a cache read costs a tenth of an input token at most
providers, a write more than one). A model absent from the price table has tokens but no cost.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

PRICE_KEYS = ("input", "output", "cache_read", "cache_write")  # USD per million tokens


@dataclass(slots=True)
class Usage:
    calls: int = 0
    input: int = 0  # uncached input tokens
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    def add(self, meta: Mapping[str, Any] | None) -> None:
        if not isinstance(meta, Mapping):
            return
        details = meta.get("input_token_details") if isinstance(meta.get("input_token_details"), Mapping) else {}
        read, write = _count(details.get("cache_read")), _count(details.get("cache_creation"))
        self.calls += 1
        self.cache_read += read
        self.cache_write += write
        self.input += max(_count(meta.get("input_tokens")) - read - write, 0)
        self.output += _count(meta.get("output_tokens"))

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def usage_of_messages(messages: Iterable[Any]) -> Usage:
    """Summed usage of the AI messages among ``messages`` (LangChain messages)."""
    usage = Usage()
    for message in messages:
        if getattr(message, "type", None) == "ai":
            usage.add(getattr(message, "usage_metadata", None))
    return usage


def usage_of_transcript(path: Path) -> Usage:
    """Summed usage of every assistant message a transcript recorded (torn or odd lines skipped)."""
    usage = Usage()
    with open(path, "rb") as fh:
        for line in fh:
            if b'"usage"' not in line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("role") == "assistant":
                usage.add(record.get("usage"))
    return usage


def price_for(model: str | None, prices: Mapping[str, Mapping[str, float]]) -> Mapping[str, float] | None:
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


def usage_by_model(path: Path) -> dict[str | None, Usage]:
    """Usage of a transcript's model calls, per the model that made them (``response_metadata``'s
    ``model_name``; None where a record does not say)."""
    groups: dict[str | None, Usage] = {}
    with open(path, "rb") as fh:
        for line in fh:
            if b'"usage"' not in line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("role") == "assistant":
                meta = record.get("response_metadata")
                name = meta.get("model_name") if isinstance(meta, dict) else None
                groups.setdefault(name if isinstance(name, str) and name else None, Usage()).add(record.get("usage"))
    return groups


def session_cost(path: Path, current_model: str,
                 prices: Mapping[str, Mapping[str, float]]) -> tuple[Usage, float | None]:
    """A transcript's summed usage and its dollars, each call priced with the model that made it
    (so ``/model`` does not reprice earlier calls); calls that do not say are the current model's.
    None when some calls' model has no price."""
    total, dollars = Usage(), 0.0
    priced = True
    for name, usage in usage_by_model(path).items():
        for part in ("calls", "input", "output", "cache_read", "cache_write"):
            setattr(total, part, getattr(total, part) + getattr(usage, part))
        cost = cost_usd(usage, price_for(name or current_model, prices))
        if cost is None:
            priced = False
        else:
            dollars += cost
    return total, dollars if priced else None


def cost_usd(usage: Usage, price: Mapping[str, float] | None) -> float | None:
    """Dollars for ``usage`` at ``price`` (per million tokens); None when the model has no price."""
    if price is None:
        return None
    parts = {"input": usage.input, "output": usage.output, "cache_read": usage.cache_read,
             "cache_write": usage.cache_write}
    return sum(parts[k] * float(price.get(k, price.get("input", 0.0))) for k in PRICE_KEYS) / 1_000_000
