"""Tokens and cost of a session: model-call usage summed, priced from ``agent.prices``.

Usage comes from each assistant message's LangChain ``usage_metadata`` as the transcript keeps
it; :mod:`mtagent.pricing` counts it (cache reads and writes apart) and prices it — the lookup
``eval`` uses too. A model absent from the price table has tokens but no cost.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from mtagent.pricing import Usage, assistant_records, cost_usd, price_for


def usage_by_model(path: Path) -> dict[str | None, Usage]:
    """Usage of a transcript's model calls, per the model that made them (``response_metadata``'s
    ``model_name``; None where a record does not say)."""
    groups: dict[str | None, Usage] = {}
    for record in assistant_records(path):
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
        total = total.plus(usage)
        cost = cost_usd(usage, price_for(name or current_model, prices))
        if cost is None:
            priced = False
        else:
            dollars += cost
    return total, dollars if priced else None
