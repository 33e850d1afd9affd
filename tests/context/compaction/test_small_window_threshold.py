"""A small window's default threshold sits above the view's fixed part (system prompt, tool schemas).

On a real llama-server with ``-c 2048`` the spec floor (0.45 × 2,048 = 921 tokens) was below the system
prompt plus compact tool schemas (1,069 tokens): every call tried a compaction that could not shrink
anything, and a one-line task took minutes."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from mtagent.config import Settings
from mtagent.context.compaction.policy import AutoCompactPolicy
from mtagent.context.compaction.summarize import ExtractiveSummarizer
from mtagent.context.window import ContextWindowManager


def _settings(**context: object) -> Settings:
    return Settings.model_validate({"context": {"token_limit": 2048, **context}})


def test_the_fixed_part_alone_never_reaches_the_default_threshold() -> None:
    policy = AutoCompactPolicy(_settings())
    assert policy.threshold == 921
    assert policy.threshold_for(1069) == 1069 + int((2048 - 1069) * 0.45)
    decision = policy.decide(1200, extra_tokens=1069)  # 131 tokens of conversation
    assert not decision.compact and decision.threshold == 1509
    assert policy.decide(1600, extra_tokens=1069).compact


def test_a_threshold_the_user_set_is_kept_exactly() -> None:
    policy = AutoCompactPolicy(_settings(auto_compact_threshold=900))
    assert policy.threshold_for(1069) == 900
    assert policy.decide(1000, extra_tokens=1069).compact


def test_large_windows_keep_the_spec_threshold() -> None:
    for window, spec in ((131_072, 98_072), (65_536, 32_536)):
        policy = AutoCompactPolicy(Settings.model_validate({"context": {"token_limit": window}}))
        assert policy.threshold_for(3_432) == spec  # the default tools and system prompt
        assert policy.threshold_for(0) == spec


def test_the_plan_shows_the_threshold_the_decision_used() -> None:
    window = ContextWindowManager(_settings(), summarizer=ExtractiveSummarizer())
    system = [SystemMessage("rules " * 700)]
    history = [HumanMessage("hello", id="h1"), AIMessage("hi", id="a1")]
    prepared = window.prepare(history, system=system, tools_tokens=300)
    assert prepared.plan.threshold == window.threshold > 921
    assert prepared.plan.threshold > prepared.plan.tokens  # nothing to compact yet, and none was tried
    assert window.stats is None or window.stats.compactions == 0
