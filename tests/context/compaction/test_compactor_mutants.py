"""Tests that kill compactor mutants that survived (see docs/mutation.md)."""

from __future__ import annotations

import re

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from mtagent.config import Settings
from mtagent.context.boundary import summary_message
from mtagent.context.compaction import facts as F
from mtagent.context.compaction.compactor import (
    CompactionOptions,
    CompactionResult,
    SummaryOutcome,
    available_tokens,
    build_compaction_result,
    compact,
    compact_from,
    new_boundary_id,
    previous_summaries,
    region_start,
    summarize_with_retry,
    truncate_head_for_ptl_retry,
)
from mtagent.context.compaction.summarize import SummaryRequestTooLong
from mtagent.context.tokens import MessageTokenCounter
from mtagent.errors import CompactionFailed
from mtagent.testing.synthetic import SyntheticSession


def test_the_result_names_its_boundary_and_summary():
    settings = Settings(context={"token_limit": 20_000, "summary_reserved_tokens": 2_000,
                                 "autocompact_buffer_tokens": 1_000, "compression_preserve_min_tokens": 1_500,
                                 "compression_preserve_max_tokens": 4_000})
    history = list(SyntheticSession(seed=3, result_chars=600).grow_to(80))
    result = compact(history, None, CompactionOptions(settings=settings, counter=MessageTokenCounter(),
                                                      trigger="manual"))
    assert result.boundary_id == result.boundary_record["id"] and result.boundary_id


# ── more survivors of the census (docs/mutation.md) ───────────────────────────────────────


def _small() -> Settings:
    return Settings(context={"token_limit": 20_000, "summary_reserved_tokens": 2_000,
                             "autocompact_buffer_tokens": 1_000, "compression_preserve_min_tokens": 1_500,
                             "compression_preserve_max_tokens": 4_000})


def _rounds(n: int) -> list:
    out = []
    for i in range(n):
        out += [HumanMessage(f"question {i} about the parser", id=f"h{i}"), AIMessage(f"answer {i}", id=f"a{i}")]
    return out


class Scripted:
    """A summarizer that raises the scripted errors in turn, then answers; records what it saw."""

    source = "llm"

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.seen: list[int] = []

    def summarize(self, messages, *, instructions=None, previous_summary=None) -> str:
        self.seen.append(len(messages))
        if self.errors:
            raise self.errors.pop(0)
        return "## User goal\nFix the parser."


def _retry(summarizer) -> SummaryOutcome:
    return summarize_with_retry(summarizer, _rounds(10), settings=_small(), counter=MessageTokenCounter())


def test_a_first_try_success_reports_no_retries():
    outcome = _retry(Scripted())
    assert (outcome.source, outcome.ptl_retries, outcome.fallback_reason) == ("llm", 0, None)


def test_a_provider_prompt_too_long_error_is_retried_on_fewer_rounds():
    summarizer = Scripted(RuntimeError("prompt is too long: 30000 tokens > 20000 maximum"))
    outcome = _retry(summarizer)
    assert (outcome.source, outcome.ptl_retries) == ("llm", 1)
    assert summarizer.seen[0] == 20 and summarizer.seen[1] < 20


def test_a_summary_request_too_long_is_retried_with_its_own_gap():
    summarizer = Scripted(SummaryRequestTooLong("over", token_gap=1), SummaryRequestTooLong("over", token_gap=1))
    outcome = _retry(summarizer)
    assert outcome.ptl_retries == 2 and summarizer.seen == [20, 16, 12]  # 20% of 10 rounds each time


def test_any_other_failure_is_not_retried():
    summarizer = Scripted(ConnectionError("provider down"))
    outcome = _retry(summarizer)
    assert summarizer.seen == [20]
    assert (outcome.source, outcome.ptl_retries, outcome.fallback_reason) == \
        ("extractive", 0, "ConnectionError: provider down")


def test_the_region_starts_after_every_leading_system_message():
    assert region_start([SystemMessage("s0", id="s0"), *_rounds(2)]) == 1
    assert region_start([SystemMessage("s0", id="s0"), SystemMessage("s1", id="s1"),
                         SystemMessage("s2", id="s2"), *_rounds(2)]) == 3
    assert region_start(_rounds(2)) == 0


def test_available_room_is_never_below_one_token():
    settings = _small()
    assert available_tokens(settings, None, 10**9) == 1
    assert available_tokens(settings, None, 0) == settings.auto_compact_threshold_tokens(None)


def test_pre_and_post_tokens_count_the_view_s_extra_tokens_once():
    counter = MessageTokenCounter()
    history = list(SyntheticSession(seed=5, result_chars=400).grow_to(60))
    options = CompactionOptions(settings=_small(), counter=counter, extra_tokens=700)
    result = build_compaction_result(history, 40, SummaryOutcome("## User goal\nShip it.", "llm"), options)
    assert result.pre_tokens == counter.estimate(history) + 700
    expected_post = counter.estimate([*result.summary_messages, *result.attachments]) \
        + counter.estimate(result.messages_to_keep) + 700
    assert result.post_tokens == expected_post
    assert result.boundary_record["pre_tokens"] == result.pre_tokens
    assert result.boundary_record["post_tokens"] == result.post_tokens


def test_defaults_of_the_result_types():
    settings = _small()
    options = CompactionOptions(settings=settings, counter=MessageTokenCounter())
    assert (options.trigger, options.extra_tokens, options.pre_tokens, options.token_limit) == ("auto", 0, None, None)
    outcome = SummaryOutcome("text", "llm")
    assert (outcome.ptl_retries, outcome.fallback_reason) == (0, None)
    bare = CompactionResult(boundary_record={"id": "cb"}, summary_messages=[], attachments=[], messages_to_keep=[],
                            pre_tokens=1, post_tokens=1, summary_source="llm", trigger="auto")
    assert (bare.ptl_retries, bare.handoff_missing, bare.summarized_ids, bare.fallback_reason) == (0, [], [], None)


def _summary(boundary_id: str, direction: str | None = None):
    message = summary_message(boundary_id, "## User goal\nFix the parser.", pre_tokens=1, post_tokens=1, reason="auto")
    if direction:
        meta = {**message.response_metadata["mtagent"], "direction": direction}
        message = message.model_copy(update={"response_metadata": {"mtagent": meta}})
    return message


def test_the_region_starts_at_the_last_full_summary_wherever_it_is():
    pinned = HumanMessage("pinned instruction", id="pin")
    assert region_start([_summary("cb-1"), *_rounds(2)]) == 0
    assert region_start([pinned, _summary("cb-1"), *_rounds(2)]) == 1
    assert region_start([pinned, _summary("cb-1"), HumanMessage("next", id="n")]) == 1
    assert region_start([*_rounds(1), _summary("cb-1")]) == 2  # a history that ends in its summary
    assert region_start([SystemMessage("s", id="s"), _summary("cb-1"), *_rounds(1), _summary("cb-2", "from"),
                         *_rounds(1)]) == 1  # a partial "from" summary is not where the region starts
    assert region_start([pinned, _summary("cb-2", "from"), *_rounds(1)]) == 0


def test_a_single_round_too_long_to_summarize_falls_back_without_cutting():
    summarizer = Scripted(SummaryRequestTooLong("over", token_gap=10))
    one_round = [HumanMessage("a huge pasted log " * 50, id="h0")]
    outcome = summarize_with_retry(summarizer, one_round, settings=_small(), counter=MessageTokenCounter())
    assert summarizer.seen == [1]
    assert outcome.source == "extractive" and outcome.ptl_retries == 0
    assert "SummaryRequestTooLong" in (outcome.fallback_reason or "")


def test_previous_summaries_are_the_bodies_of_every_summary_or_none():
    first = summary_message("cb-1", "## User goal\nFix the parser.", pre_tokens=1, post_tokens=1, reason="auto")
    second = summary_message("cb-2", "## User goal\nShip it.", pre_tokens=1, post_tokens=1, reason="auto")
    assert previous_summaries([first, *_rounds(1), second]) == "## User goal\nFix the parser.\n\n## User goal\nShip it."
    assert previous_summaries(_rounds(2)) is None


class Recording(Scripted):
    def summarize(self, messages, *, instructions=None, previous_summary=None) -> str:
        self.previous = previous_summary
        return super().summarize(messages, instructions=instructions, previous_summary=previous_summary)


def test_a_recompaction_hands_the_old_summary_to_the_summarizer():
    old = summary_message("cb-1", "## User goal\nKeep the parser fast.", pre_tokens=1, post_tokens=1, reason="auto")
    history = [old, *SyntheticSession(seed=4, result_chars=600).grow_to(80)]
    summarizer = Recording()
    compact(history, summarizer, CompactionOptions(settings=_small(), counter=MessageTokenCounter()))
    assert summarizer.previous == "## User goal\nKeep the parser fast."


def test_every_ptl_retry_drops_at_least_one_round():
    dropped, remaining = truncate_head_for_ptl_retry(_rounds(3), None, token_of=lambda m: 1, min_drop_fraction=0.0)
    assert len(dropped) == 1 and len(remaining) == 5  # the oldest API round, not none


def test_boundary_ids_are_cb_and_sixteen_hex_digits():
    ids = {new_boundary_id() for _ in range(3)}
    assert len(ids) == 3 and all(re.fullmatch(r"cb-[0-9a-f]{16}", i) for i in ids)


def test_a_split_outside_the_compactable_region_is_refused():
    history = [*_rounds(2), _summary("cb-1"), *_rounds(3)]
    options = CompactionOptions(settings=_small(), counter=MessageTokenCounter())
    outcome = SummaryOutcome("## User goal\nFix the parser.", "llm")
    with pytest.raises(CompactionFailed, match="outside the compactable region"):
        build_compaction_result(history, 2, outcome, options)  # before the last summary
    with pytest.raises(CompactionFailed, match="outside the compactable region"):
        build_compaction_result(history, len(history) + 1, outcome, options)


def test_without_a_given_previous_summary_the_old_summary_s_facts_are_carried():
    old = summary_message("cb-1", "## User goal\nFix the parser.", pre_tokens=1, post_tokens=1, reason="auto")
    history = [old, *_rounds(6)]
    options = CompactionOptions(settings=_small(), counter=MessageTokenCounter())
    result = build_compaction_result(history, 9, SummaryOutcome("## User goal\nShip it.", "llm"), options)
    # the ledger states the first goal; a goal the model wrote is dropped, never a replacement
    assert F.parse_handoff(result.summary)[F.SECTION_GOAL] == ["Fix the parser."]
    assert "Ship it." not in result.summary


def test_a_from_compaction_counts_the_kept_head_in_its_post_tokens():
    counter = MessageTokenCounter()
    history = list(SyntheticSession(seed=6, result_chars=400).grow_to(40))
    pivot_id = history[20].id
    result = compact_from(history, pivot_id, None, CompactionOptions(settings=_small(), counter=counter,
                                                                     extra_tokens=300), direction="from")
    head = result.kept_prefix
    assert head and result.messages_to_keep == []
    assert result.pre_tokens == counter.estimate(history) + 300
    assert result.post_tokens == counter.estimate(head) + counter.estimate(
        [*result.summary_messages, *result.attachments]) + 300
