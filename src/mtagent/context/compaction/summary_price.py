"""What a hand-off's summary call costs, in the cost trigger's units (one uncached main-model input token).

The summary is written by ``agent.compact_model`` when one is set. That model's prices come from
``agent.prices`` (:func:`mtagent.pricing.price_for`), and a different model cannot read the main
model's prompt cache: it pays its whole request at its own input price — whereas the main model,
asked with the cache-aligned request, reads the cached prefix at the cache-read price. The cost
trigger (:mod:`mtagent.context.compaction.trigger`) weighs a compaction with these prices, so a
cheap summary model makes compaction pay sooner and a dear one later.

* no ``compact_model`` (or the main model's own name): the main model, cache shared;
* ``compact_model = "extractive"``: no model call — the summary request and its output cost nothing;
* another model: its input and output price relative to the main model's input price, no cache.
  Without a price row for either model the ratios are unknown; the request is then priced whole
  at the main model's ``context.price_input`` / ``price_output`` (still no cache read).
"""

from __future__ import annotations

from dataclasses import dataclass

from mtagent.config import Settings
from mtagent.pricing import price_for

EXTRACTIVE = "extractive"


@dataclass(slots=True, frozen=True)
class SummaryPrice:
    """The summary call's prices per token, in units of one uncached main-model input token.

    ``shares_cache``: the request's prefix is read from the main model's cache (the main model
    itself); otherwise every request token is paid at ``input``.
    """

    input: float
    output: float
    shares_cache: bool
    model: str | None = None

    def request_cost(self, request_tokens: int, output_tokens: int, *, read: float, write: float,
                     instruction_tokens: int) -> float:
        """The summary call: its request (cached prefix + instruction, or whole) and its output."""
        if self.shares_cache:
            request = request_tokens * read + instruction_tokens * write
        else:
            request = (request_tokens + instruction_tokens) * self.input
        return request + output_tokens * self.output


def summary_price(settings: Settings) -> SummaryPrice:
    """The summary call's prices for ``settings`` (see the module docstring)."""
    ctx, agent = settings.context, settings.agent
    unit = ctx.price_input
    main_output = ctx.price_output / unit
    spec = agent.compact_model
    if spec == EXTRACTIVE:
        return SummaryPrice(0.0, 0.0, shares_cache=False, model=EXTRACTIVE)
    if not spec or spec == agent.model:
        return SummaryPrice(1.0, main_output, shares_cache=True, model=agent.model)
    compact_row = price_for(spec, agent.prices)
    main_row = price_for(agent.model, agent.prices)
    if compact_row is None or main_row is None or not main_row.get("input"):
        return SummaryPrice(1.0, main_output, shares_cache=False, model=spec)
    base = float(main_row["input"])
    return SummaryPrice(float(compact_row.get("input", base)) / base,
                        float(compact_row.get("output", base * main_output)) / base,
                        shares_cache=False, model=spec)
