"""Cache-aligned summary requests: the last main request, byte-identical, plus one instruction."""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, messages_to_dict

from mtagent.config import Settings
from mtagent.context.boundary import is_summary_message
from mtagent.context.compaction.cache_align import (
    DELTA_NOTE,
    FULL_NOTE,
    INSTRUCTION_ID,
    AlignedSummarizer,
    aligned_request,
)
from mtagent.context.compaction.summarize import ExtractiveSummarizer, LLMSummarizer, SummaryRequestTooLong
from mtagent.context.window import ContextWindowManager
from mtagent.testing.synthetic import SyntheticSession

SYSTEM = [SystemMessage("You are a coding agent.", id="sys-0")]


class RecordingModel:
    """A summarizing chat model that records every request and answers with an extractive sheet."""

    def __init__(self) -> None:
        self.requests: list[list[BaseMessage]] = []

    def invoke(self, request, *args, **kwargs) -> AIMessage:
        self.requests.append(list(request))
        body = [m for m in request if not isinstance(m, SystemMessage) and m.id != INSTRUCTION_ID]
        return AIMessage(ExtractiveSummarizer().summarize(body))


def wire(messages: list[BaseMessage]) -> str:
    """What a provider would receive, as bytes (ids, content, calls, metadata)."""
    return json.dumps(messages_to_dict(messages), sort_keys=True, default=str)


def settings(**context) -> Settings:
    base = {"token_limit": 20_000, "summary_reserved_tokens": 2_000, "autocompact_buffer_tokens": 1_000,
            "compression_preserve_min_tokens": 1_500, "compression_preserve_max_tokens": 4_000,
            "compaction_trigger": "threshold"}
    base.update(context)
    return Settings(context=base, microcompact={"size_trigger_fraction": 1.0})


def run_until_compactions(manager: ContextWindowManager, count: int) -> tuple[list[list[BaseMessage]], list]:
    """Drive a synthetic session; returns every main request (copied) and the compactions."""
    sess = SyntheticSession(seed=3, result_chars=900)
    history: list[BaseMessage] = []
    sent: list[list[BaseMessage]] = []
    compactions = []
    for _ in range(400):
        history = history + sess.round()
        prepared = manager.prepare(history, system=SYSTEM)
        sent.append(list(prepared.messages))
        history = prepared.history
        if prepared.compaction is not None:
            compactions.append((len(sent) - 1, prepared.compaction))
            if len(compactions) >= count:
                break
    return sent, compactions


def test_a_compaction_request_is_the_previous_main_request_byte_for_byte_plus_one_instruction():
    model = RecordingModel()
    manager = ContextWindowManager(settings(), summarizer=LLMSummarizer(model, cache_aligned=True))
    sent, compactions = run_until_compactions(manager, 1)
    assert compactions, "the session never compacted"
    call, _ = compactions[0]
    previous_main = sent[call - 1]
    request = model.requests[0]
    assert wire(request[:len(previous_main)]) == wire(previous_main)
    assert len(request) > len(previous_main)
    assert request[-1].id == INSTRUCTION_ID and isinstance(request[-1], HumanMessage)
    assert all(m.id != INSTRUCTION_ID for m in request[:-1])
    assert FULL_NOTE in request[-1].content


def test_the_second_compaction_asks_for_the_delta_and_merges_it_into_the_previous_hand_off():
    model = RecordingModel()
    manager = ContextWindowManager(settings(), summarizer=LLMSummarizer(model, cache_aligned=True))
    sent, compactions = run_until_compactions(manager, 2)
    assert len(compactions) == 2
    second_call, second = compactions[1]
    request = model.requests[1]
    assert wire(request[:len(sent[second_call - 1])]) == wire(sent[second_call - 1])
    assert DELTA_NOTE in request[-1].content
    assert is_summary_message(request[1])  # the previous hand-off is in the cached prefix
    assert "never edit files under tests/" in second.summary  # carried by the merge / verifier


def test_an_unaligned_summarizer_gets_the_classic_request():
    model = RecordingModel()
    manager = ContextWindowManager(settings(), summarizer=LLMSummarizer(model))
    _, compactions = run_until_compactions(manager, 1)
    assert compactions
    request = model.requests[0]
    assert [type(m) for m in request] == [SystemMessage, HumanMessage]
    assert "<transcript>" in request[1].content


def test_cache_aligned_summaries_off_sends_the_classic_request_even_to_an_aligned_model():
    model = RecordingModel()
    manager = ContextWindowManager(settings(cache_aligned_summaries=False),
                                   summarizer=LLMSummarizer(model, cache_aligned=True))
    _, compactions = run_until_compactions(manager, 1)
    assert compactions and "<transcript>" in model.requests[0][-1].content


def test_a_prompt_too_long_retry_falls_back_to_the_classic_request():
    class TooLongOnce(RecordingModel):
        def invoke(self, request, *args, **kwargs):
            self.requests.append(list(request))
            if len(self.requests) == 1:
                raise SummaryRequestTooLong("prompt is too long", token_gap=100)
            return AIMessage("## User goal\nfix it")

    model = TooLongOnce()
    sess = SyntheticSession(seed=1)
    history = []
    for _ in range(12):
        history += sess.round()
    summarizer = AlignedSummarizer(LLMSummarizer(model, cache_aligned=True), prefix=[*SYSTEM, *history])
    from mtagent.context.compaction.compactor import summarize_with_retry
    from mtagent.context.tokens import MessageTokenCounter

    outcome = summarize_with_retry(summarizer, history, settings=Settings(), counter=MessageTokenCounter())
    assert outcome.ptl_retries == 1 and outcome.text.startswith("## User goal")
    assert model.requests[0][-1].id == INSTRUCTION_ID
    assert "<transcript>" in model.requests[1][-1].content


def test_aligned_request_keeps_the_prefix_message_for_message():
    a = [*SYSTEM, HumanMessage("hi", id="u1"), AIMessage("ok", id="a1")]
    request = aligned_request(a, delta=False)
    assert len(request) == len(a) + 1 and all(x is y for x, y in zip(request, a, strict=False))


class AlignedNotesModel:
    """A notes-writing model that shares the main request's cache; records requests, writes nothing
    (the updater then falls back to its extractive notes, which is fine here)."""

    cache_aligned = True

    def __init__(self) -> None:
        self.requests: list[list[BaseMessage]] = []

    def invoke(self, request, *args, **kwargs) -> AIMessage:
        self.requests.append(list(request))
        return AIMessage("")


def test_a_session_memory_update_request_is_the_previous_main_request_plus_one_instruction(tmp_path):
    from mtagent.context.session_memory.manager import SessionMemoryManager
    from mtagent.context.session_memory.updater import UPDATE_INSTRUCTION_ID

    cfg = settings()
    model = AlignedNotesModel()
    memory = SessionMemoryManager(path=tmp_path / "summary.md", settings=cfg, model=model, token_limit=20_000)
    manager = ContextWindowManager(cfg, session_memory=memory)
    sess = SyntheticSession(seed=5, result_chars=900)
    history: list[BaseMessage] = []
    sent: list[list[BaseMessage]] = []
    for _ in range(200):
        history = history + sess.round()
        before = len(model.requests)
        prepared = manager.prepare(history, system=SYSTEM)
        if len(model.requests) > before and sent:
            request = model.requests[-1]
            previous = sent[-1]
            assert wire(request[:len(previous)]) == wire(previous)
            assert request[-1].id == UPDATE_INSTRUCTION_ID and "<notes>" in request[-1].content
            break
        sent.append(list(prepared.messages))
        history = prepared.history
    else:
        raise AssertionError("session memory never updated")
