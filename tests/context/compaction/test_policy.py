from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from mtagent.config import Settings
from mtagent.context.compaction.policy import AutoCompactPolicy
from mtagent.context.model_errors import is_context_length_error, parse_context_length_gap
from mtagent.context.compaction.summarize import ExtractiveSummarizer
from mtagent.context.compaction.trigger import CostTrigger
from mtagent.context.tokens import count_text_tokens
from mtagent.errors import ContextLengthExceeded
from mtagent.context.window import ContextWindowManager
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


# ── sharp tests: each kills a mutant that survived the tests above (docs/mutation.md) ──


class ProviderError(Exception):
    def __init__(self, message: str, *, body: object = None, code: object = None,
                 status_code: int | None = None, response: object = None) -> None:
        super().__init__(message)
        self.body, self.code, self.status_code, self.response = body, code, status_code, response


class Response:
    def __init__(self, status_code: int) -> None:
        self.status_code = status_code


def threshold_settings(**context) -> Settings:
    return Settings(context={"compaction_trigger": "threshold", **context})


# ── classifying provider errors ──────────────────────────────────────────────────────────


def test_a_context_error_found_only_through_cause_or_only_through_context():
    caused = RuntimeError("model call failed")
    caused.__cause__ = ProviderError(ANTHROPIC)
    contextual = RuntimeError("model call failed")
    contextual.__context__ = ProviderError(ANTHROPIC)
    assert is_context_length_error(caused) is True
    assert is_context_length_error(contextual) is True
    assert parse_context_length_gap(caused) == 10_000
    assert parse_context_length_gap(contextual) == 10_000


def _wrapped(depth: int) -> BaseException:
    """The provider error under ``depth - 1`` plain wrappers (so it is the depth-th of the chain)."""
    err: BaseException = ProviderError(ANTHROPIC)
    for i in range(depth - 1):
        outer = RuntimeError(f"layer {i}")
        outer.__cause__ = err
        err = outer
    return err


def test_the_cause_chain_is_followed_eight_deep_and_no_further():
    assert is_context_length_error(_wrapped(8)) is True
    assert parse_context_length_gap(_wrapped(8)) == 10_000
    assert is_context_length_error(_wrapped(9)) is False
    assert parse_context_length_gap(_wrapped(9)) is None


def test_a_cyclic_chain_ends():
    a, b = RuntimeError("a"), RuntimeError("b")
    a.__cause__, b.__cause__ = b, a
    assert is_context_length_error(a) is False
    assert parse_context_length_gap(a) is None


def test_the_body_and_the_code_are_read_too():
    assert is_context_length_error(ProviderError("Bad request", body={"error": {"type": "context_length_exceeded"}}))
    assert is_context_length_error(ProviderError("Bad request", code="context_length_exceeded"))
    assert parse_context_length_gap(ProviderError("Bad request", body=ANTHROPIC)) == 10_000
    assert is_context_length_error(ProviderError("Bad request", body={"error": "rate limited"}, code=429)) is False


def test_413_counts_on_the_error_or_on_its_response_and_nothing_else_does():
    assert is_context_length_error(ProviderError("Payload", status_code=413)) is True
    assert is_context_length_error(ProviderError("Payload", response=Response(413))) is True
    assert is_context_length_error(ProviderError("Payload", status_code=412)) is False
    assert is_context_length_error(ProviderError("Payload", status_code=414)) is False
    assert is_context_length_error(ProviderError("Payload", response=Response(500))) is False
    assert is_context_length_error(ProviderError("Payload")) is False


def test_gaps_with_thousands_separators_and_never_negative():
    openai = ("This model's maximum context length is 131,072 tokens. However, you requested 140,000 tokens.")
    assert parse_context_length_gap(ProviderError(openai)) == 140_000 - 131_072
    under = "This model's maximum context length is 8192 tokens. However, you requested 8000 tokens."
    assert parse_context_length_gap(ProviderError(under)) == 0
    assert parse_context_length_gap(ContextLengthExceeded("x", requested_tokens=100, limit_tokens=200)) == 0
    assert parse_context_length_gap(ContextLengthExceeded("x", requested_tokens=205, limit_tokens=200)) == 5


def test_an_error_with_only_one_count_falls_back_to_its_text():
    only_requested = ContextLengthExceeded("prompt is too long: 300 tokens > 200 maximum", requested_tokens=300)
    assert parse_context_length_gap(only_requested) == 100
    only_limit = ContextLengthExceeded("prompt is too long", limit_tokens=200)
    assert parse_context_length_gap(only_limit) is None


def test_numbers_that_are_not_over_the_limit_are_no_gap():
    assert parse_context_length_gap(ProviderError("prompt is too long: 100 tokens > 200 maximum")) is None
    assert parse_context_length_gap(ProviderError("prompt is too long: 200 tokens > 200 maximum")) is None
    assert parse_context_length_gap(ProviderError("input of 5000 tokens exceeds the limit of 4096")) == 904


# ── the decision ─────────────────────────────────────────────────────────────────────────


def test_a_decision_carries_its_tokens_and_threshold_and_updates_the_stats():
    stats = SessionStats()
    policy = AutoCompactPolicy(threshold_settings(), stats=stats)
    below = policy.decide(1_234)
    assert (below.compact, below.tokens, below.threshold, below.early) == (False, 1_234, 98_072, False)
    assert below.reason == "1234 tokens < threshold 98072"
    assert (stats.last_auto_compact_threshold, stats.last_context_tokens) == (98_072, 1_234)
    at = policy.decide(98_072)
    assert (at.compact, at.tokens, at.reason) == (True, 98_072, "98072 tokens >= threshold 98072")
    assert policy.decide(98_072).compact is True
    assert policy.decide(98_071).compact is False


def test_the_window_is_the_policy_s_own_limit_or_the_settings_one():
    settings = threshold_settings(token_limit=200_000)
    assert AutoCompactPolicy(settings).window == 200_000
    assert AutoCompactPolicy(settings, token_limit=65_536).window == 65_536
    assert AutoCompactPolicy(settings).threshold == settings.auto_compact_threshold_tokens(200_000)


def test_compaction_work_is_skipped_by_prefix_and_a_user_call_is_not():
    policy = AutoCompactPolicy(threshold_settings())
    skipped = policy.decide(200_000, query_source="compact")
    assert skipped.compact is False and "compaction work" in skipped.reason and skipped.tokens == 200_000
    assert policy.decide(200_000, query_source="user").compact is True
    assert policy.decide(200_000, query_source="subagent").compact is True


def test_a_disabled_policy_says_why():
    policy = AutoCompactPolicy(threshold_settings(compact_max_consecutive_failures=1))
    policy.record_failure("boom")
    decision = policy.decide(200_000)
    assert decision.compact is False and "disabled" in decision.reason


def _rounds_policy(every: int = 3) -> AutoCompactPolicy:
    return AutoCompactPolicy(threshold_settings(compact_every_rounds=every, compression_preserve_min_tokens=500,
                                                compression_preserve_max_tokens=1_000))


def _observe(policy: AutoCompactPolicy, n: int) -> None:
    for i in range(n):
        policy.observe_round(HumanMessage(f"q{i}", id=f"h{i}"))


def test_the_round_trigger_fires_at_exactly_every_rounds_between_the_tail_and_the_threshold():
    policy = _rounds_policy(3)
    _observe(policy, 2)
    assert policy.decide(5_000).compact is False
    _observe(policy, 1)
    assert policy.rounds_since_compact == 3
    fired = policy.decide(5_000)
    assert fired.compact is True and "3 rounds since the last compaction" in fired.reason
    assert policy.decide(1_000).compact is False  # not above the recent tail: nothing to summarize
    assert policy.decide(1_001).compact is True
    at = policy.decide(98_072)
    assert at.compact is True and "threshold" in at.reason
    off = _rounds_policy(0)
    _observe(off, 10)
    assert off.decide(5_000).compact is False


def test_a_round_is_a_new_human_message_counted_once():
    policy = _rounds_policy()
    human = HumanMessage("q", id="h1")
    policy.observe_round(human)
    policy.observe_round(human)
    policy.observe_round(AIMessage("a", id="a1"))
    assert policy.rounds_since_compact == 1
    policy.observe_round(HumanMessage("q2", id="h2"))
    assert policy.rounds_since_compact == 2


def test_a_success_resets_every_counter_and_records_the_sizes():
    stats = SessionStats()
    policy = AutoCompactPolicy(threshold_settings(), stats=stats)
    _observe(policy, 4)
    policy.record_failure("x")
    policy.record_success(90_000, 20_000)
    assert (policy.consecutive_failures, policy.rounds_since_compact) == (0, 0)
    assert (policy.last_pre_tokens, policy.last_post_tokens) == (90_000, 20_000)
    assert (stats.compactions, stats.compression_failure_count, stats.last_context_tokens) == (1, 0, 20_000)


def test_a_success_tells_the_cost_trigger_the_new_size():
    policy = AutoCompactPolicy(Settings())
    policy.decide(10_000)
    assert isinstance(policy.cost, CostTrigger)
    policy.record_success(90_000, 20_000)
    assert policy.cost.last_post_tokens == 20_000


def test_the_cost_trigger_is_created_only_when_enabled():
    assert AutoCompactPolicy(threshold_settings())._cost_estimate(50_000, 0) is None
    policy = AutoCompactPolicy(threshold_settings())
    policy.decide(50_000)
    assert policy.cost is None
    on = AutoCompactPolicy(Settings())
    on.decide(50_000)
    assert on.cost is not None and on.cost.calls == 1
    on.decide(50_000)
    assert on.cost.calls == 2  # the same trigger, not a new one per call


def test_an_early_decision_comes_from_the_cost_trigger():
    policy = AutoCompactPolicy(Settings(context={"cost_min_calls": 1}))
    decisions = [policy.decide(tokens) for tokens in range(20_000, 98_000, 2_000)]
    early = [d for d in decisions if d.compact]
    assert early, "the cost trigger never fired below the threshold"
    first = early[0]
    assert first.early is True and first.estimate is not None and "cost trigger" in first.reason
    assert first.tokens < first.threshold
    ctx = policy.settings.context  # no extra tokens given: the expected post size is summary + tail only
    assert first.estimate.post_tokens == ctx.expected_summary_tokens + (ctx.cost_tail_min_tokens
                                                                        + ctx.cost_tail_max_tokens) // 2


def test_summary_written_feeds_the_cost_trigger_only_with_text():
    settings = Settings()
    policy = AutoCompactPolicy(settings)
    policy.summary_written("no trigger yet")  # no cost trigger: nothing to update, no error
    policy.decide(10_000)
    policy.summary_written("Goal: ship the parser. State: tests green.")
    expected = count_text_tokens("Goal: ship the parser. State: tests green.", settings.context.encoding)
    assert policy.cost.last_summary_tokens == expected
    policy.summary_written(None)
    policy.summary_written("")
    assert policy.cost.last_summary_tokens == expected


def test_a_failed_early_compaction_backs_off_without_counting_toward_the_breaker():
    bus, sink, seen = EventBus(), [], []
    bus.subscribe(lambda e: seen.append((e.type, e.data)))
    policy = AutoCompactPolicy(Settings(context={"compact_max_consecutive_failures": 1}), bus=bus, sink=sink)
    policy.decide(10_000)
    policy.record_failure(RuntimeError("boom"), early=True, tokens=50_000)
    assert policy.consecutive_failures == 0 and not policy.disabled
    assert policy.cost.retry_above == 50_000 + policy.settings.context.cost_tail_min_tokens
    assert seen == [(EventType.COMPACT_FAILED, {"error": "boom", "early": True})]
    assert [(r["event"], r["data"]) for r in sink] == [("compact_failed", {"error": "boom", "early": True})]


def test_an_early_failure_without_a_cost_trigger_counts():
    policy = AutoCompactPolicy(threshold_settings())
    policy.record_failure("boom", early=True, tokens=1)
    assert policy.consecutive_failures == 1


def test_failures_publish_their_count_and_disable_once():
    bus, sink, seen = EventBus(), [], []
    bus.subscribe(lambda e: seen.append((e.type, dict(e.data))))
    stats = SessionStats()
    policy = AutoCompactPolicy(threshold_settings(compact_max_consecutive_failures=2), bus=bus, sink=sink,
                               stats=stats)
    policy.record_failure("one")
    assert not policy.disabled and stats.compression_failure_count == 1
    policy.record_failure(ValueError("two"))
    assert policy.disabled
    policy.record_failure("three")
    assert stats.compression_failure_count == 3
    assert seen == [
        (EventType.COMPACT_FAILED, {"error": "one", "consecutive_failures": 1}),
        (EventType.COMPACT_FAILED, {"error": "two", "consecutive_failures": 2}),
        (EventType.AUTO_COMPACT_DISABLED, {"consecutive_failures": 2, "limit": 2,
                                           "hint": "run /compact manually, or start a new session"}),
        (EventType.COMPACT_FAILED, {"error": "three", "consecutive_failures": 3}),
    ]
    assert [r["event"] for r in sink] == ["compact_failed", "compact_failed", "auto_compact_disabled",
                                         "compact_failed"]


@pytest.mark.parametrize("limit", [1, 3])
def test_the_breaker_opens_at_exactly_the_limit(limit):
    policy = AutoCompactPolicy(threshold_settings(compact_max_consecutive_failures=limit))
    for _ in range(limit - 1):
        policy.record_failure("x")
    assert not policy.disabled
    policy.record_failure("x")
    assert policy.disabled


def test_a_new_policy_starts_from_zero():
    policy = AutoCompactPolicy(threshold_settings())
    assert (policy.consecutive_failures, policy.disabled, policy.last_pre_tokens, policy.last_post_tokens,
            policy.rounds_since_compact, policy.cost) == (0, False, 0, 0, 0, None)


def test_an_early_failure_without_a_size_backs_off_by_one_cost_tail():
    policy = AutoCompactPolicy(Settings())
    policy.decide(10_000)
    policy.record_failure("boom", early=True)
    assert policy.cost.retry_above == policy.settings.context.cost_tail_min_tokens


def small_window(**context: object) -> Settings:
    """A 2,048-token window, as a llama-server with ``-c 2048``: there the spec floor (0.45 × 2,048 = 921 tokens)
    was below the system prompt plus compact tool schemas (1,069 tokens), every call tried a compaction that
    could not shrink anything and a one-line task took minutes; the default threshold sits above that fixed part."""
    return Settings.model_validate({"context": {"token_limit": 2048, **context}})


def test_the_fixed_part_alone_never_reaches_the_default_threshold() -> None:
    policy = AutoCompactPolicy(small_window())
    assert policy.threshold == 921
    assert policy.threshold_for(1069) == 1069 + int((2048 - 1069) * 0.45)
    decision = policy.decide(1200, extra_tokens=1069)  # 131 tokens of conversation
    assert not decision.compact and decision.threshold == 1509
    assert policy.decide(1600, extra_tokens=1069).compact


def test_a_threshold_the_user_set_is_kept_exactly() -> None:
    policy = AutoCompactPolicy(small_window(auto_compact_threshold=900))
    assert policy.threshold_for(1069) == 900
    assert policy.decide(1000, extra_tokens=1069).compact


def test_large_windows_keep_the_spec_threshold() -> None:
    for window, spec in ((131_072, 98_072), (65_536, 32_536)):
        policy = AutoCompactPolicy(Settings.model_validate({"context": {"token_limit": window}}))
        assert policy.threshold_for(3_432) == spec  # the default tools and system prompt
        assert policy.threshold_for(0) == spec


def test_the_plan_shows_the_threshold_the_decision_used() -> None:
    window = ContextWindowManager(small_window(), summarizer=ExtractiveSummarizer())
    system = [SystemMessage("rules " * 700)]
    history = [HumanMessage("hello", id="h1"), AIMessage("hi", id="a1")]
    prepared = window.prepare(history, system=system, tools_tokens=300)
    assert prepared.plan.threshold == window.threshold > 921
    assert prepared.plan.threshold > prepared.plan.tokens  # nothing to compact yet, and none was tried
    assert window.stats is None or window.stats.compactions == 0
