from __future__ import annotations

import pytest

from mtagent.config import Settings
from mtagent.context.compaction.policy import AutoCompactPolicy
from mtagent.context.model_errors import is_context_length_error, parse_context_length_gap
from mtagent.errors import ContextLengthExceeded
from mtagent.events import EventBus, EventType, SessionStats


class FakeBadRequest(Exception):
    """Shaped like openai.BadRequestError: a message, a status code and a code."""

    def __init__(self, message: str, code: str | None = None, status_code: int = 400) -> None:
        super().__init__(message)
        self.code = code
        self.status_code = status_code


OPENAI = ("This model's maximum context length is 131072 tokens. However, you requested 140000 tokens "
          "(139000 in the messages, 1000 in the completion). Please reduce the length of the messages.")
ANTHROPIC = "prompt is too long: 210000 tokens > 200000 maximum"


def test_no_compaction_below_threshold():
    policy = AutoCompactPolicy(Settings())
    assert policy.threshold == 98_072
    assert not policy.decide(98_071).compact


def test_compaction_at_token_limit_minus_reserve_minus_buffer():
    settings = Settings()
    policy = AutoCompactPolicy(settings)
    ctx = settings.context
    assert policy.decide(ctx.token_limit - ctx.summary_reserved_tokens - ctx.autocompact_buffer_tokens).compact


def test_threshold_follows_a_model_specific_window():
    assert AutoCompactPolicy(Settings(), token_limit=65_536).threshold == 32_536


def test_compaction_requests_are_never_compacted():
    policy = AutoCompactPolicy(Settings())
    assert not policy.decide(200_000, query_source="compact").compact
    assert not policy.decide(200_000, query_source="session_memory_update").compact


def test_three_consecutive_failures_disable_auto_compaction_and_emit_event():
    bus, sink, stats = EventBus(), [], SessionStats()
    seen = []
    bus.subscribe(lambda e: seen.append(e.type))
    policy = AutoCompactPolicy(Settings(), bus=bus, sink=sink, stats=stats)
    for _ in range(3):
        assert policy.decide(120_000).compact
        policy.record_failure(RuntimeError("boom"))
    assert policy.disabled
    assert not policy.decide(120_000).compact
    assert EventType.AUTO_COMPACT_DISABLED in seen
    events = [r for r in sink if r["type"] == "event"]
    assert events[-1]["event"] == "auto_compact_disabled"
    assert stats.compression_failure_count == 3


def test_a_success_resets_the_failure_count():
    policy = AutoCompactPolicy(Settings())
    policy.record_failure("x")
    policy.record_failure("x")
    policy.record_success(100_000, 20_000)
    policy.record_failure("x")
    assert not policy.disabled and policy.consecutive_failures == 1


@pytest.mark.parametrize("exc", [
    FakeBadRequest(OPENAI, code="context_length_exceeded"),
    FakeBadRequest("Error code: 400 - {'error': {'code': 'context_length_exceeded'}}"),
    FakeBadRequest(ANTHROPIC),
    FakeBadRequest("Request too large", status_code=413),
    ContextLengthExceeded("too long"),
])
def test_context_length_errors_are_recognised(exc):
    assert is_context_length_error(exc)


def test_wrapped_context_length_error_is_recognised():
    try:
        try:
            raise FakeBadRequest(ANTHROPIC)
        except FakeBadRequest as inner:
            raise RuntimeError("model call failed") from inner
    except RuntimeError as outer:
        assert is_context_length_error(outer)


@pytest.mark.parametrize("exc", [FakeBadRequest("rate limit reached", status_code=429), ValueError("bad json")])
def test_other_errors_are_not_context_length_errors(exc):
    assert not is_context_length_error(exc)


def test_token_gap_is_parsed_from_openai_and_anthropic_messages():
    assert parse_context_length_gap(FakeBadRequest(OPENAI)) == 140_000 - 131_072
    assert parse_context_length_gap(FakeBadRequest(ANTHROPIC)) == 10_000
    assert parse_context_length_gap(ContextLengthExceeded("x", requested_tokens=12, limit_tokens=10)) == 2
    assert parse_context_length_gap(FakeBadRequest("prompt too long")) is None
