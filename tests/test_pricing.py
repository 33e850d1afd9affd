"""One price lookup for every front end: /cost, run --json, batch and eval price a call the same way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage

from mtagent import pricing
from mtagent.config import DEFAULT_PRICES
from mtagent.eval import report, worker
from mtagent.pricing import Usage, cost_usd, price_for, usage_of_messages

ROW = {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75}


def test_the_cli_and_the_evaluation_use_the_one_lookup():
    assert pricing.usage_of_transcript is worker.usage_of_transcript
    assert pricing.Usage is report.Usage is worker.Usage
    assert report.cost_usd is pricing.cost_usd and worker.price_for is pricing.price_for


def test_a_provider_s_dated_name_finds_its_row_and_the_longest_key_wins():
    prices = {"gpt-4o": {"input": 2.5}, "gpt-4o-mini": {"input": 0.15}}
    assert price_for("openai:gpt-4o-mini-2024-07-18", prices) == {"input": 0.15}
    assert price_for("gpt-4o-2024-08-06", prices) == {"input": 2.5}
    assert price_for("gpt-4", prices) is None and price_for("", prices) is None


def test_exact_key_beats_bare_name_beats_glob():
    prices = {"context-test*": {"input": 1.0}, "context-test": {"input": 2.0}, "x:context-test": {"input": 3.0}}
    assert price_for("x:context-test", prices) == {"input": 3.0}
    assert price_for("y:context-test", prices) == {"input": 2.0}
    assert price_for("y:context-test-big", prices) == {"input": 1.0}
    assert price_for("openai:gpt-4o-mini", DEFAULT_PRICES) == DEFAULT_PRICES["gpt-4o-mini"]


def test_each_kind_has_its_price_and_a_missing_cache_price_is_the_input_price():
    usage = Usage(calls=2, input=1_000_000, output=200_000, cache_read=2_000_000, cache_write=400_000)
    assert cost_usd(usage, ROW) == pytest.approx(3.0 + 3.0 + 0.6 + 1.5)
    assert cost_usd(usage, {"input": 1.0, "output": 2.0}) == pytest.approx(1.0 + 0.4 + 2.0 + 0.4)
    assert cost_usd(usage, None) is None
    assert cost_usd(Usage(), ROW) == 0.0


@pytest.mark.parametrize("meta", [
    {"input_tokens": True, "output_tokens": -4},
    {"input_tokens": "9000", "output_tokens": 1.5e9},
    {"input_tokens": 10, "input_token_details": {"cache_read": 10**9, "cache_creation": -1}},
    {"input_tokens": 10, "input_token_details": ["cache_read", 5]},
])
def test_hostile_usage_metadata_never_counts_negative_or_non_integer_tokens(meta):
    usage = Usage()
    usage.add(meta)
    assert usage.calls == 1
    assert all(isinstance(v, int) and v >= 0 for v in usage.as_dict().values())
    assert usage.input <= 10
    assert usage.output == 0


def test_usage_of_messages_counts_assistant_calls_only_and_round_trips():
    meta = {"input_tokens": 1000, "output_tokens": 50, "total_tokens": 1050,
            "input_token_details": {"cache_read": 600, "cache_creation": 100}}
    usage = usage_of_messages([AIMessage("a", usage_metadata=meta), AIMessage("b"), "not a message"])
    assert usage.as_dict() == {"calls": 1, "input": 300, "output": 50, "cache_read": 600, "cache_write": 100}
    assert Usage.from_dict(usage.as_dict()) == usage and Usage.from_dict({"input": "7", "output": -1}) == Usage()
    assert usage.plus(usage).minus(usage) == usage and usage.tokens == 1050


def test_a_transcript_s_usage_from_an_offset_counts_only_the_calls_recorded_after_it(tmp_path: Path):
    """What eval's worker reads after a turn: the calls since the turn began, torn lines skipped."""
    def call(tokens: int) -> str:
        return json.dumps({"role": "assistant", "usage": {"input_tokens": tokens, "output_tokens": 1}}) + "\n"

    path = tmp_path / "t.jsonl"
    path.write_text(call(1000) + call(2000))
    offset = path.stat().st_size
    with path.open("a") as fh:
        fh.write(call(30) + '{"role": "assistant", "usage": \n' + json.dumps({"role": "user", "usage": {}}) + "\n"
                 + call(40))
    since = pricing.usage_of_transcript(path, offset)
    assert (since.calls, since.input, since.output) == (2, 70, 2)
    assert pricing.usage_of_transcript(path).calls == 4
    assert [r["usage"]["input_tokens"] for r in pricing.assistant_records(path, offset)] == [30, 40]
