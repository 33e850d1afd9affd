"""The cost-aware compaction trigger and its place under the threshold (the hard ceiling); the summary's price
reaches it: agent.compact_model's prices (agent.prices) decide when a compaction pays, and a model that
cannot read the main model's cache pays its whole request."""

from __future__ import annotations

import math

import pytest
from langchain_core.messages import BaseMessage, SystemMessage

from mtagent.config import Settings
from mtagent.context.compaction.policy import AutoCompactPolicy
from mtagent.context.compaction.summary_price import summary_price
from mtagent.context.compaction.trigger import (
    INSTRUCTION_TOKENS,
    CostTrigger,
    Prices,
    compaction_cost,
    cost_trigger_enabled,
    early_compaction_settings,
)
from mtagent.context.window import ContextWindowManager
from mtagent.events import EventBus, EventType
from mtagent.testing.synthetic import SyntheticSession

WINDOW = 131_072


def test_compaction_cost_is_the_cached_summary_request_plus_the_new_prefix():
    prices = Prices()
    cost = compaction_cost(60_000, 15_000, 5_000, 2_000, prices)
    expected = 60_000 * 0.1 + INSTRUCTION_TOKENS * 1.25 + 2_000 * 5 + 10_000 * 1.25 + 5_000 * 0.1
    assert math.isclose(cost, expected)


def test_prices_come_from_settings_relative_to_uncached_input():
    s = Settings(context={"price_input": 2.0, "price_cache_read": 0.5, "price_cache_write": 2.5, "price_output": 8.0})
    assert Prices.from_settings(s) == Prices(read=0.25, write=1.25, input=1.0, output=4.0)


def grow(trigger: CostTrigger, start: int, step: int, calls: int) -> list[int]:
    """Token counts of the calls at which the trigger fired."""
    fired = []
    tokens = start
    for _ in range(calls):
        if trigger.decide(tokens, extra_tokens=3_000) is not None:
            fired.append(tokens)
            trigger.compacted(14_000)
            tokens = 14_000
        tokens += step
    return fired


def test_a_long_growing_session_compacts_well_below_the_threshold():
    fired = grow(CostTrigger(Settings()), 5_000, 1_500, 200)
    threshold = Settings().auto_compact_threshold_tokens(WINDOW)
    assert fired and max(fired) < threshold / 2


def test_a_short_session_never_pays_for_a_compaction():
    assert grow(CostTrigger(Settings()), 5_000, 1_500, 7) == []  # under cost_min_calls
    assert grow(CostTrigger(Settings(context={"cost_min_calls": 1})), 5_000, 100, 30) == []


def test_the_cycle_grows_with_the_compaction_cost():
    cheap = grow(CostTrigger(Settings(context={"price_output": 1.0})), 5_000, 1_500, 300)
    dear = grow(CostTrigger(Settings(context={"price_output": 20.0})), 5_000, 1_500, 300)
    assert len(cheap) > len(dear) > 0


def test_the_threshold_setting_and_an_exact_override_switch_the_cost_trigger_off():
    assert cost_trigger_enabled(Settings())
    assert not cost_trigger_enabled(Settings(context={"compaction_trigger": "threshold"}))
    assert not cost_trigger_enabled(Settings(context={"auto_compact_threshold": 50_000}))
    policy = AutoCompactPolicy(Settings(context={"auto_compact_threshold": 50_000}), WINDOW)
    for _ in range(100):
        assert not policy.decide(49_999, extra_tokens=3_000).compact
    assert policy.decide(50_000).compact


def test_the_threshold_is_the_hard_ceiling_even_when_the_cost_model_says_no():
    policy = AutoCompactPolicy(Settings(), WINDOW)
    decision = policy.decide(policy.threshold)  # the first call: the cost trigger cannot fire yet
    assert decision.compact and not decision.early


def test_a_failed_early_compaction_does_not_trip_the_breaker_but_backs_off():
    bus = EventBus()
    seen = []
    bus.subscribe(seen.append, EventType.COMPACT_FAILED)
    policy = AutoCompactPolicy(Settings(), WINDOW, bus=bus)
    for _ in range(200):
        decision = policy.decide(60_000, extra_tokens=3_000)
    assert decision.compact and decision.early
    for _ in range(5):
        policy.record_failure(RuntimeError("model down"), early=True, tokens=60_000)
    assert not policy.disabled and policy.consecutive_failures == 0 and seen
    assert not policy.decide(60_000 + 1_000).compact  # waits for another cost tail of growth
    assert policy.decide(60_000 + Settings().context.cost_tail_min_tokens + 1).compact


def test_early_compaction_settings_use_the_cost_tail():
    s = early_compaction_settings(Settings(context={"cost_tail_min_tokens": 3_000, "cost_tail_max_tokens": 9_000}))
    assert (s.context.compression_preserve_min_tokens, s.context.compression_preserve_max_tokens) == (3_000, 9_000)


def drive(settings: Settings, rounds: int) -> list[tuple[int, int, int]]:
    """(pre_tokens, threshold, kept tail tokens) of each auto compaction of a synthetic session."""
    manager = ContextWindowManager(settings, token_limit=WINDOW)
    system: list[BaseMessage] = [SystemMessage("You are a coding agent.", id="sys")]
    sess = SyntheticSession(seed=7, result_chars=2_500, with_usage=False)
    history: list[BaseMessage] = []
    out = []
    for _ in range(rounds):
        history = history + sess.round()
        prepared = manager.prepare(history, system=system)
        if prepared.compaction is not None:
            kept = manager.counter.estimate(prepared.compaction.messages_to_keep)
            out.append((prepared.compaction.pre_tokens, manager.threshold, kept))
        history = prepared.history
    return out


def test_the_engine_compacts_early_with_the_cost_tail_and_only_at_the_threshold_otherwise():
    early = drive(Settings(), 160)
    assert early and all(pre < threshold for pre, threshold, _ in early)
    assert all(kept <= Settings().context.cost_tail_max_tokens * 1.3 for _, _, kept in early)
    late = drive(Settings(context={"compaction_trigger": "threshold"}), 160)
    assert all(pre >= threshold for pre, threshold, _ in late)
    assert len(late) < len(early)


def _priced_settings(compact_model: str | None, model: str = "openai:gpt-4o") -> Settings:
    return Settings(agent={"model": model, "compact_model": compact_model})


def test_without_a_compact_model_the_main_model_summarizes_from_its_cache() -> None:
    price = summary_price(_priced_settings(None))
    assert price.shares_cache and price.input == 1.0 and price.output == 5.0


def test_an_extractive_summary_costs_nothing() -> None:
    price = summary_price(_priced_settings("extractive"))
    assert (price.input, price.output, price.shares_cache) == (0.0, 0.0, False)


def test_another_model_pays_its_own_prices_relative_to_the_main_input() -> None:
    price = summary_price(_priced_settings("openai:gpt-4o-mini"))  # 0.15 / 0.6 against gpt-4o's 2.5 input
    assert not price.shares_cache
    assert price.input == pytest.approx(0.15 / 2.5) and price.output == pytest.approx(0.6 / 2.5)


def test_without_price_rows_another_model_still_pays_its_whole_request() -> None:
    price = summary_price(_priced_settings("openai:unknown-model"))
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
    shared = _first_compaction(_priced_settings(None, main))
    free = _first_compaction(_priced_settings("extractive", main))
    cheap = _first_compaction(_priced_settings("anthropic:claude-3-5-haiku-latest", main))
    dear = _first_compaction(_priced_settings("anthropic:claude-opus-4-1", main))
    assert free < shared  # no summary call: compacting pays sooner
    assert dear > shared  # the whole request at five times the input price, no cache: later
    assert cheap > free
    estimate = CostTrigger(_priced_settings("anthropic:claude-opus-4-1", main)).estimate(60_000, 3_000)
    assert estimate.cost > 60_000 * 5.0  # every request token at opus' input price (5× sonnet's)
