"""Session usage and cost: cache reads and writes apart, prices by exact name, bare name or glob."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from mtagent.pricing import Usage, cost_usd, price_for, usage_of_messages, usage_of_transcript
from mtagent.config import DEFAULT_PRICES

META = {"input_tokens": 1000, "output_tokens": 50, "total_tokens": 1050,
        "input_token_details": {"cache_read": 600, "cache_creation": 100}}


def test_cache_reads_and_writes_are_counted_apart_from_input():
    usage = usage_of_messages([HumanMessage("q"), AIMessage("a", usage_metadata=META), AIMessage("b")])
    assert usage.as_dict() == {"calls": 1, "input": 300, "output": 50, "cache_read": 600, "cache_write": 100}


def test_cost_prices_each_kind():
    price = {"input": 1.0, "output": 10.0, "cache_read": 0.1, "cache_write": 2.0}
    usage = Usage(calls=1, input=1_000_000, output=100_000, cache_read=1_000_000, cache_write=500_000)
    assert cost_usd(usage, price) == 1.0 + 1.0 + 0.1 + 1.0
    assert cost_usd(usage, None) is None


def test_price_lookup_exact_bare_and_glob():
    assert price_for("openai:gpt-4o-mini", DEFAULT_PRICES) == DEFAULT_PRICES["gpt-4o-mini"]
    assert price_for("anthropic:claude-sonnet-4-5", DEFAULT_PRICES) == DEFAULT_PRICES["claude-sonnet-4*"]
    assert price_for("ollama:qwen2.5-coder", DEFAULT_PRICES) is None and price_for(None, DEFAULT_PRICES) is None


def test_transcript_usage_skips_hostile_lines(tmp_path: Path):
    path = tmp_path / "t.jsonl"
    lines = [json.dumps({"type": "transcript_message", "role": "assistant", "usage": META}),
             '{"role": "assistant", "usage": ', json.dumps({"role": "assistant", "usage": {"input_tokens": -5,
                                                                                      "output_tokens": "x"}}),
             json.dumps({"role": "user", "usage": META})]
    path.write_text("\n".join(lines) + "\n")
    usage = usage_of_transcript(path)
    assert (usage.input, usage.cache_read, usage.output) == (300, 600, 50) and usage.calls == 2


def test_each_call_is_priced_with_the_model_that_made_it(tmp_path: Path):
    """Six gpt-4o-mini calls, then /model gpt-4o and one more: the six keep their own price."""
    from mtagent.cli.usage import session_cost

    def call(model: str | None) -> str:
        meta = {"model_name": model} if model else {}
        return json.dumps({"type": "transcript_message", "role": "assistant", "response_metadata": meta,
                           "usage": {"input_tokens": 1_000_000, "output_tokens": 0}})

    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([call("gpt-4o-mini-2024-07-18")] * 6 + [call("gpt-4o")]) + "\n")
    usage, dollars = session_cost(path, "openai:gpt-4o", DEFAULT_PRICES)
    mini, big = DEFAULT_PRICES["gpt-4o-mini"]["input"], DEFAULT_PRICES["gpt-4o"]["input"]
    assert usage.calls == 7 and dollars == pytest.approx(6 * mini + big)
    path.write_text(call(None) + "\n")  # a record that does not say: the current model's price
    assert session_cost(path, "openai:gpt-4o", DEFAULT_PRICES)[1] == pytest.approx(big)
    path.write_text(call("qwen2.5-coder") + "\n" + call("gpt-4o") + "\n")  # one call without a price
    assert session_cost(path, "openai:gpt-4o", DEFAULT_PRICES)[1] is None
