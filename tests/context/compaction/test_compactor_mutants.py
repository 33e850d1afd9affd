"""Tests that kill compactor mutants that survived (see docs/mutation.md)."""

from __future__ import annotations

from mtagent.config import Settings
from mtagent.context.compaction.compactor import CompactionOptions, compact
from mtagent.context.tokens import MessageTokenCounter
from mtagent.testing.synthetic import SyntheticSession


def test_the_result_names_its_boundary_and_summary():
    settings = Settings(context={"token_limit": 20_000, "summary_reserved_tokens": 2_000,
                                 "autocompact_buffer_tokens": 1_000, "compression_preserve_min_tokens": 1_500,
                                 "compression_preserve_max_tokens": 4_000})
    history = list(SyntheticSession(seed=3, result_chars=600).grow_to(80))
    result = compact(history, None, CompactionOptions(settings=settings, counter=MessageTokenCounter(),
                                                      trigger="manual"))
    assert result.boundary_id == result.boundary_record["id"] and result.boundary_id
