from __future__ import annotations

import os
import re

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from mtagent.config import Settings
from mtagent.context.compaction import facts as F
from mtagent.context.boundary import is_summary_message, summary_message, summary_message_from_record
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
from mtagent.context.invariants import find_last_compact_boundary, validate_view
from mtagent.context.compaction.summarize import ExtractiveSummarizer, LLMSummarizer, SummaryRequestTooLong
from mtagent.testing.synthetic import SyntheticSession
from mtagent.context.tokens import MessageTokenCounter, count_text_tokens
from mtagent.errors import CompactionFailed, UsageError

CONSTRAINT = "never edit files under tests/"


def small_settings(**context) -> Settings:
    base = {"token_limit": 20_000, "summary_reserved_tokens": 2_000, "autocompact_buffer_tokens": 1_000,
            "compression_preserve_min_tokens": 1_500, "compression_preserve_max_tokens": 4_000}
    base.update(context)
    return Settings(context=base)


def session(n: int, seed: int = 0, result_chars: int = 600) -> list[BaseMessage]:
    s = SyntheticSession(seed=seed, constraint=CONSTRAINT, result_chars=result_chars)
    return list(s.grow_to(n))


class ProviderLike:
    """A chat model that rejects prompts above ``limit`` tokens the way OpenAI does."""

    def __init__(self, limit: int, reply: str = "## User goal\nMake the parser handle nested blocks.") -> None:
        self.limit = limit
        self.reply = reply
        self.calls = 0

    def invoke(self, messages, *a, **k):
        self.calls += 1
        used = sum(count_text_tokens(str(m.content)) for m in messages)
        if used > self.limit:
            raise RuntimeError(f"Error code: 400 - {{'error': {{'message': \"This model's maximum context length is "
                               f"{self.limit} tokens. However, you requested {used} tokens.\", "
                               f"'code': 'context_length_exceeded'}}}}")
        return AIMessage(self.reply)


class ForgetfulModel:
    """Writes a plausible summary that silently drops every constraint."""

    def invoke(self, messages, *a, **k):
        return AIMessage("## User goal\nMake the parser handle nested blocks and keep the benchmark green.\n"
                         "## Next step\nkeep going")


def test_compaction_keeps_a_valid_tail_within_bounds():
    settings, counter = small_settings(), MessageTokenCounter()
    history = session(120)
    result = compact(history, None, CompactionOptions(settings=settings, counter=counter, trigger="auto"))
    view = result.new_history()
    validate_view(view)
    assert is_summary_message(view[0])
    kept = counter.estimate(result.messages_to_keep)
    assert 1_500 <= kept <= 4_000
    assert result.post_tokens < result.pre_tokens
    assert result.summary_source == "extractive"
    assert result.messages_to_keep == history[len(history) - len(result.messages_to_keep):]


def test_boundary_record_matches_the_summary_message():
    result = compact(session(120), None, CompactionOptions(settings=small_settings(), counter=MessageTokenCounter(), trigger="manual"))
    record = result.boundary_record
    assert record["type"] == "compact_boundary" and record["schema_version"] == 2
    assert record["trigger"] == "manual" and record["summary_source"] == "extractive"
    assert record["first_kept_id"] == result.messages_to_keep[0].id
    assert record["pre_tokens"] == result.pre_tokens and record["post_tokens"] == result.post_tokens
    rebuilt = summary_message_from_record(record)
    assert rebuilt.content == result.summary_messages[0].content


def test_repeated_compactions_only_compact_before_the_newest_boundary():
    settings, counter = small_settings(), MessageTokenCounter()
    sess = SyntheticSession(seed=3, constraint=CONSTRAINT)
    history = list(sess.grow_to(120))
    first = compact(history, None, CompactionOptions(settings=settings, counter=counter))
    history = first.new_history()
    for _ in range(40):
        history += sess.round()
    second = compact(history, None, CompactionOptions(settings=settings, counter=counter))
    view = second.new_history()
    validate_view(view)
    assert find_last_compact_boundary(view) == 0
    assert sum(1 for m in view if is_summary_message(m)) == 1
    assert first.summary_messages[0].id in second.summarized_ids  # the old summary was re-summarized
    assert all(m.id not in second.summarized_ids for m in second.messages_to_keep)


def test_compact_with_nothing_new_since_the_boundary_fails_clearly():
    settings, counter = small_settings(), MessageTokenCounter()
    first = compact(session(120), None, CompactionOptions(settings=settings, counter=counter))
    with pytest.raises(CompactionFailed, match="nothing to compact"):
        compact(first.summary_messages, None, CompactionOptions(settings=settings, counter=counter))
    with pytest.raises(CompactionFailed, match="nothing to compact"):
        compact([], None, CompactionOptions(settings=settings, counter=counter))


def test_a_short_history_still_summarizes_its_oldest_round():
    history = session(3)
    result = compact(history, None, CompactionOptions(settings=small_settings(), counter=MessageTokenCounter()))
    assert result.summarized_ids == [history[0].id]


def test_ptl_retry_compacts_a_history_three_times_the_window():
    settings, counter = small_settings(), MessageTokenCounter()
    history = session(400, result_chars=2_000)
    assert counter.estimate(history) > 3 * settings.context.token_limit
    model = ProviderLike(limit=settings.context.token_limit)
    result = compact(history, LLMSummarizer(model), CompactionOptions(settings=settings, counter=counter, trigger="manual"))
    assert result.summary_source == "llm"
    assert 1 <= result.ptl_retries <= settings.context.ptl_retry_max
    assert CONSTRAINT in result.summary  # dropped rounds' constraint carried by the verifier
    validate_view(result.new_history())


def test_ptl_without_gap_drops_a_fifth_per_retry_then_falls_back_to_extractive():
    class NoGap(ProviderLike):
        def invoke(self, messages, *a, **k):
            self.calls += 1
            raise RuntimeError("prompt is too long")

    settings = small_settings()
    model = NoGap(limit=0)
    result = compact(session(200), LLMSummarizer(model), CompactionOptions(settings=settings, counter=MessageTokenCounter()))
    assert model.calls == settings.context.ptl_retry_max + 1
    assert result.summary_source == "extractive"
    assert result.fallback_reason and "prompt is too long" in result.fallback_reason


def test_truncate_head_covers_the_gap_and_keeps_one_round():
    history = session(60)
    counter = MessageTokenCounter()
    dropped, rest = truncate_head_for_ptl_retry(history, 10**9, token_of=counter.message_tokens, min_drop_fraction=0.2)
    assert rest and dropped + rest == history
    validate_view(rest)
    dropped, rest = truncate_head_for_ptl_retry(history, None, token_of=counter.message_tokens, min_drop_fraction=0.2)
    assert 0 < len(dropped) < len(history)
    assert truncate_head_for_ptl_retry(history[:1], 5, token_of=counter.message_tokens, min_drop_fraction=0.2) is None


def test_model_failure_falls_back_to_extractive():
    class Down:
        def invoke(self, *a, **k):
            raise ConnectionError("provider down")

    result = compact(session(120), LLMSummarizer(Down()), CompactionOptions(settings=small_settings(), counter=MessageTokenCounter()))
    assert result.summary_source == "extractive" and "provider down" in (result.fallback_reason or "")


@pytest.mark.parametrize("summarizer", [None, "forgetful"])
def test_user_constraint_survives_five_compactions(summarizer):
    settings, counter = small_settings(), MessageTokenCounter()
    chosen = LLMSummarizer(ForgetfulModel()) if summarizer == "forgetful" else ExtractiveSummarizer()
    sess = SyntheticSession(seed=7, constraint=CONSTRAINT)
    history = list(sess.grow_to(100))
    for _ in range(5):
        result = compact(history, chosen, CompactionOptions(settings=settings, counter=counter))
        assert CONSTRAINT in result.summary
        history = result.new_history()
        for _ in range(30):
            history += sess.round()
    facts = F.extract_facts(history)
    assert CONSTRAINT in facts.constraints


def write(path, text: str) -> float:
    path.write_text(text)
    return os.stat(path).st_mtime


def read_round(i: int, path: str, mtime: float) -> list[BaseMessage]:
    call = {"id": f"r{i}", "name": "read_file", "args": {"file_path": path}}
    return [AIMessage(f"read {i}", id=f"ra{i}", tool_calls=[call]),
            ToolMessage("     1\tcontent", tool_call_id=f"r{i}", name="read_file", id=f"rt{i}",
                        artifact={"file_path": path, "mtime": mtime})]


def test_recently_read_unchanged_files_are_reattached(tmp_path):
    fresh = tmp_path / "fresh.py"
    stale = tmp_path / "stale.py"
    m_fresh = write(fresh, "print('fresh')\n")
    m_stale = write(stale, "old\n")
    history: list[BaseMessage] = [HumanMessage("go", id="h")]
    history += read_round(1, str(fresh), m_fresh) + read_round(2, str(stale), m_stale)
    history += session(120)[1:]
    os.utime(stale, (m_stale + 10, m_stale + 10))
    result = compact(history, None, CompactionOptions(settings=small_settings(), counter=MessageTokenCounter()))
    assert len(result.attachments) == 1
    text = result.attachments[0].content
    assert "fresh.py" in text and "print('fresh')" in text and "stale.py" not in text
    validate_view(result.new_history())


def test_reattachment_respects_file_and_token_limits(tmp_path):
    history: list[BaseMessage] = [HumanMessage("go", id="h")]
    for i in range(8):
        path = tmp_path / f"f{i}.py"
        history += read_round(i, str(path), write(path, f"x{i} = 1\n" * 50))
    history += session(120)[1:]
    settings = small_settings(reattach_max_files=5)
    result = compact(history, None, CompactionOptions(settings=settings, counter=MessageTokenCounter()))
    assert result.attachments[0].content.count("<reattached_file") == 5
    assert "f7.py" in result.attachments[0].content  # newest first
    tight = compact(history, None, CompactionOptions(settings=small_settings(reattach_max_tokens=120), counter=MessageTokenCounter()))
    assert not tight.attachments or count_text_tokens(tight.attachments[0].content) <= 200


def test_reattachment_uses_the_read_state_when_given(tmp_path):
    path = tmp_path / "state.py"
    mtime = write(path, "state = True\n")

    class ReadState:
        def recent_reads(self):
            return [{"file_path": str(path), "mtime": mtime}]

    result = compact(session(120), None, CompactionOptions(settings=small_settings(), counter=MessageTokenCounter(),
                     read_state=ReadState()))
    assert "state = True" in result.attachments[0].content


def test_partial_compact_up_to_keeps_the_message_and_after():
    settings, counter = small_settings(), MessageTokenCounter()
    history = session(80)
    pivot = next(m for m in history[40:] if isinstance(m, ToolMessage))
    result = compact_from(history, pivot.id, None, CompactionOptions(settings=settings, counter=counter, trigger="manual"))
    view = result.new_history()
    validate_view(view)
    kept_ids = [m.id for m in result.messages_to_keep]
    assert pivot.id in kept_ids
    assert isinstance(result.messages_to_keep[0], AIMessage)  # moved back to its round's start


def test_partial_compact_from_keeps_the_prefix_and_summarizes_the_rest():
    settings, counter = small_settings(), MessageTokenCounter()
    history = session(80)
    pivot = history[40]
    result = compact_from(history, pivot.id, None, CompactionOptions(settings=settings, counter=counter, trigger="manual"), direction="from")
    view = result.new_history()
    validate_view(view)
    assert view[: len(result.kept_prefix)] == result.kept_prefix
    assert is_summary_message(view[len(result.kept_prefix)])
    assert result.boundary_record["direction"] == "from"
    assert result.boundary_record["first_kept_id"] == history[0].id


def test_partial_compact_rejects_unknown_or_pre_boundary_ids():
    settings, counter = small_settings(), MessageTokenCounter()
    history = session(120)
    with pytest.raises(UsageError, match="no message"):
        compact_from(history, "nope", None, CompactionOptions(settings=settings, counter=counter, trigger="manual"))
    first = compact(history, None, CompactionOptions(settings=settings, counter=counter))
    with pytest.raises(UsageError, match="before the last compact boundary"):
        compact_from(first.new_history(), first.summary_messages[0].id, None, CompactionOptions(settings=settings, counter=counter, trigger="manual"))


# ── sharp tests: each kills a mutant that survived the tests above (docs/mutation.md) ──


def test_the_result_names_its_boundary_and_summary():
    history = list(SyntheticSession(seed=3, result_chars=600).grow_to(80))
    result = compact(history, None, CompactionOptions(settings=small_settings(), counter=MessageTokenCounter(),
                                                      trigger="manual"))
    assert result.boundary_id == result.boundary_record["id"] and result.boundary_id


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
    return summarize_with_retry(summarizer, _rounds(10), settings=small_settings(), counter=MessageTokenCounter())


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
    settings = small_settings()
    assert available_tokens(settings, None, 10**9) == 1
    assert available_tokens(settings, None, 0) == settings.auto_compact_threshold_tokens(None)


def test_pre_and_post_tokens_count_the_view_s_extra_tokens_once():
    counter = MessageTokenCounter()
    history = list(SyntheticSession(seed=5, result_chars=400).grow_to(60))
    options = CompactionOptions(settings=small_settings(), counter=counter, extra_tokens=700)
    result = build_compaction_result(history, 40, SummaryOutcome("## User goal\nShip it.", "llm"), options)
    assert result.pre_tokens == counter.estimate(history) + 700
    expected_post = counter.estimate([*result.summary_messages, *result.attachments]) \
        + counter.estimate(result.messages_to_keep) + 700
    assert result.post_tokens == expected_post
    assert result.boundary_record["pre_tokens"] == result.pre_tokens
    assert result.boundary_record["post_tokens"] == result.post_tokens


def test_defaults_of_the_result_types():
    settings = small_settings()
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
    outcome = summarize_with_retry(summarizer, one_round, settings=small_settings(), counter=MessageTokenCounter())
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
    compact(history, summarizer, CompactionOptions(settings=small_settings(), counter=MessageTokenCounter()))
    assert summarizer.previous == "## User goal\nKeep the parser fast."


def test_every_ptl_retry_drops_at_least_one_round():
    dropped, remaining = truncate_head_for_ptl_retry(_rounds(3), None, token_of=lambda m: 1, min_drop_fraction=0.0)
    assert len(dropped) == 1 and len(remaining) == 5  # the oldest API round, not none


def test_boundary_ids_are_cb_and_sixteen_hex_digits():
    ids = {new_boundary_id() for _ in range(3)}
    assert len(ids) == 3 and all(re.fullmatch(r"cb-[0-9a-f]{16}", i) for i in ids)


def test_a_split_outside_the_compactable_region_is_refused():
    history = [*_rounds(2), _summary("cb-1"), *_rounds(3)]
    options = CompactionOptions(settings=small_settings(), counter=MessageTokenCounter())
    outcome = SummaryOutcome("## User goal\nFix the parser.", "llm")
    with pytest.raises(CompactionFailed, match="outside the compactable region"):
        build_compaction_result(history, 2, outcome, options)  # before the last summary
    with pytest.raises(CompactionFailed, match="outside the compactable region"):
        build_compaction_result(history, len(history) + 1, outcome, options)


def test_without_a_given_previous_summary_the_old_summary_s_facts_are_carried():
    old = summary_message("cb-1", "## User goal\nFix the parser.", pre_tokens=1, post_tokens=1, reason="auto")
    history = [old, *_rounds(6)]
    options = CompactionOptions(settings=small_settings(), counter=MessageTokenCounter())
    result = build_compaction_result(history, 9, SummaryOutcome("## User goal\nShip it.", "llm"), options)
    # the ledger states the first goal; a goal the model wrote is dropped, never a replacement
    assert F.parse_handoff(result.summary)[F.SECTION_GOAL] == ["Fix the parser."]
    assert "Ship it." not in result.summary


def test_a_from_compaction_counts_the_kept_head_in_its_post_tokens():
    counter = MessageTokenCounter()
    history = list(SyntheticSession(seed=6, result_chars=400).grow_to(40))
    pivot_id = history[20].id
    result = compact_from(history, pivot_id, None, CompactionOptions(settings=small_settings(), counter=counter,
                                                                     extra_tokens=300), direction="from")
    head = result.kept_prefix
    assert head and result.messages_to_keep == []
    assert result.pre_tokens == counter.estimate(history) + 300
    assert result.post_tokens == counter.estimate(head) + counter.estimate(
        [*result.summary_messages, *result.attachments]) + 300
