"""The summary's price reaches the cost trigger: agent.compact_model's prices (agent.prices) decide
when a compaction pays, and a model that cannot read the main model's cache pays its whole request."""

from __future__ import annotations

import pytest

from mtagent.config import Settings
from mtagent.context.compaction.summary_price import summary_price
from mtagent.context.compaction.trigger import INSTRUCTION_TOKENS, CostTrigger


def _settings(compact_model: str | None, model: str = "openai:gpt-4o") -> Settings:
    return Settings(agent={"model": model, "compact_model": compact_model})


def test_without_a_compact_model_the_main_model_summarizes_from_its_cache() -> None:
    price = summary_price(_settings(None))
    assert price.shares_cache and price.input == 1.0 and price.output == 5.0


def test_an_extractive_summary_costs_nothing() -> None:
    price = summary_price(_settings("extractive"))
    assert (price.input, price.output, price.shares_cache) == (0.0, 0.0, False)


def test_another_model_pays_its_own_prices_relative_to_the_main_input() -> None:
    price = summary_price(_settings("openai:gpt-4o-mini"))  # 0.15 / 0.6 against gpt-4o's 2.5 input
    assert not price.shares_cache
    assert price.input == pytest.approx(0.15 / 2.5) and price.output == pytest.approx(0.6 / 2.5)


def test_without_price_rows_another_model_still_pays_its_whole_request() -> None:
    price = summary_price(_settings("openai:unknown-model"))
    assert not price.shares_cache and price.input == 1.0
    cost = price.request_cost(40_000, 1_000, read=0.1, write=1.25, instruction_tokens=INSTRUCTION_TOKENS)
    assert cost == pytest.approx((40_000 + INSTRUCTION_TOKENS) * 1.0 + 1_000 * 5.0)


def _first_compaction(settings: Settings, growth: int = 1_500) -> int:
    trigger = CostTrigger(settings)
    for call in range(1, 400):
        tokens = 5_000 + call * growth
        if trigger.decide(tokens, extra_tokens=3_000) is not None:
            return tokens
    return 10**9


def test_the_trigger_decides_with_the_summary_models_prices() -> None:
    main = "anthropic:claude-sonnet-4-5"
    shared = _first_compaction(_settings(None, main))
    free = _first_compaction(_settings("extractive", main))
    cheap = _first_compaction(_settings("anthropic:claude-3-5-haiku-latest", main))
    dear = _first_compaction(_settings("anthropic:claude-opus-4-1", main))
    assert free < shared  # no summary call: compacting pays sooner
    assert dear > shared  # the whole request at five times the input price, no cache: later
    assert cheap > free
    estimate = CostTrigger(_settings("anthropic:claude-opus-4-1", main)).estimate(60_000, 3_000)
    assert estimate.cost > 60_000 * 5.0  # every request token at opus' input price (5× sonnet's)
