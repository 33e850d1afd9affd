from __future__ import annotations

import itertools
import random
from dataclasses import FrozenInstanceError

import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from mtagent.config import Settings
from mtagent.context.boundary import is_summary_message
from mtagent.context.compaction import facts as F
from mtagent.context.compaction.compactor import CompactionOptions, SummaryOutcome, build_compaction_result
from mtagent.context.invariants import find_safe_split_index, validate_view
from mtagent.context.compaction.microcompact import CLEARED_PLACEHOLDER
from mtagent.context.model_errors import is_context_length_error
from mtagent.context.compaction.summarize import LLMSummarizer
from mtagent.testing.synthetic import SyntheticSession
from mtagent.context.tokens import MessageTokenCounter, count_text_tokens
from mtagent.context.requested_compaction import manual_compact, partial_compact, reactive_compact
from mtagent.context.static.authority import Authority, AuthorityItem, detect_conflicts
from mtagent.context.window import ContextWindowManager
from mtagent.errors import CompactionFailed
from mtagent.events import EventBus, EventType, SessionStats
from mtagent.replay.formats import load_trajectory

CONSTRAINT = "never edit files under tests/"
CLAUDE_TOOLS = ["Read", "Grep", "Glob", "Bash", "Edit", "Write", "TaskOutput"]


def small_settings(size_trigger: float = 1.0, **context) -> Settings:
    """A 20K window; size-triggered clearing off unless asked, so compaction tests see raw sizes."""
    base = {"token_limit": 20_000, "summary_reserved_tokens": 2_000, "autocompact_buffer_tokens": 1_000,
            "compression_preserve_min_tokens": 1_500, "compression_preserve_max_tokens": 4_000}
    base.update(context)
    return Settings(context=base, microcompact={"size_trigger_fraction": size_trigger})


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def with_usage(message: AIMessage, total: int) -> AIMessage:
    message.usage_metadata = {"input_tokens": total - 10, "output_tokens": 10, "total_tokens": total}
    return message


def grow(manager: ContextWindowManager, sess: SyntheticSession, history: list[BaseMessage], rounds: int,
         **kwargs) -> tuple[list[BaseMessage], list]:
    prepared = []
    for _ in range(rounds):
        history = history + sess.round()
        p = manager.prepare(history, **kwargs)
        validate_view(p.messages)
        prepared.append(p)
        history = p.history
    return history, prepared


def test_no_compaction_below_threshold_and_a_plan_every_call():
    sink: list[dict] = []
    manager = ContextWindowManager(Settings(), sink=sink)
    history = list(SyntheticSession(seed=1).grow_to(40))
    prepared = manager.prepare(history, system=[SystemMessage("You are mtagent.", id="sys")], tools_tokens=500)
    assert prepared.compaction is None and prepared.history is history
    assert prepared.messages[0].id == "sys" and list(prepared.messages[1:]) == history
    assert [r["type"] for r in sink] == ["context_plan"]
    record = sink[0]
    assert record["threshold"] == 98_072 and record["buckets"]["tools"] == 500
    assert len(record["selected"]) <= 3  # an id range, not every id


def test_compaction_fires_at_token_limit_minus_reserve_minus_buffer():
    settings = small_settings()
    threshold = 20_000 - 2_000 - 1_000
    sess = SyntheticSession(seed=2, with_usage=False, constraint=CONSTRAINT)
    history = list(sess.grow_to(60))

    below = ContextWindowManager(settings, sink=[])
    h1 = history + [with_usage(AIMessage("thinking", id="u1"), threshold - 1)]
    assert below.prepare(h1).compaction is None

    sink: list[dict] = []
    at = ContextWindowManager(settings, sink=sink)
    h2 = history + [with_usage(AIMessage("thinking", id="u2"), threshold)]
    prepared = at.prepare(h2)
    assert prepared.compaction is not None and prepared.compaction.trigger == "auto"
    assert prepared.compaction.pre_tokens == threshold
    assert is_summary_message(prepared.history[0]) and prepared.history is not h2
    validate_view(prepared.messages)
    assert [r["type"] for r in sink] == ["compact_boundary", "context_plan"]
    assert prepared.plan.tokens < threshold and not prepared.plan.anchored


class BrokenMemory:
    def maybe_update(self, history, *, tokens):
        pass

    def try_compact(self, history, **kwargs):
        raise OSError("summary.md unreadable")


def test_three_failures_disable_auto_compaction_and_record_an_event():
    bus, sink, stats = EventBus(), [], SessionStats()
    events = []
    bus.subscribe(lambda e: events.append(e.type))
    manager = ContextWindowManager(small_settings(), sink=sink, bus=bus, stats=stats, session_memory=BrokenMemory())
    history = list(SyntheticSession(seed=3).grow_to(40))
    for i in range(4):
        history = history + [with_usage(AIMessage(f"big {i}", id=f"big{i}"), 18_000)]
        prepared = manager.prepare(history)
        assert prepared.compaction is None
    assert manager.policy.disabled
    assert EventType.AUTO_COMPACT_DISABLED in events
    failures = [r for r in sink if r["type"] == "event" and r["event"] == "compact_failed"]
    assert len(failures) == 3
    assert any(r["type"] == "event" and r["event"] == "auto_compact_disabled" for r in sink)
    assert "disabled" in manager.last_plan.explain()


def test_reactive_compact_after_context_length_error_even_when_disabled():
    sink: list[dict] = []
    manager = ContextWindowManager(small_settings(), sink=sink)
    manager.policy.disabled = True
    history = list(SyntheticSession(seed=4).grow_to(120))
    manager.prepare(history)
    error = RuntimeError("Error code: 400 - This model's maximum context length is 20000 tokens. "
                         "However, you requested 25000 tokens.")
    assert is_context_length_error(error)
    result = reactive_compact(manager, history)
    assert result.trigger == "reactive"
    assert sink[-1]["type"] == "compact_boundary" and sink[-1]["trigger"] == "reactive"
    validate_view(result.new_history())


def test_auto_compaction_keeps_the_view_valid_and_only_compacts_after_the_newest_boundary():
    sink: list[dict] = []
    manager = ContextWindowManager(small_settings(), sink=sink)
    sess = SyntheticSession(seed=5, with_usage=False, constraint=CONSTRAINT)
    history, prepared = grow(manager, sess, sess.start(), 400)
    compactions = [p.compaction for p in prepared if p.compaction]
    assert len(compactions) >= 3
    for earlier, later in itertools.pairwise(compactions):
        assert earlier.summary_messages[0].id in later.summarized_ids
        assert not set(later.summarized_ids) & {m.id for m in earlier.summary_messages[1:]}
    assert sum(1 for m in history if is_summary_message(m)) == 1
    assert CONSTRAINT in compactions[-1].summary


def test_microcompact_after_sixty_minutes_keeps_last_five_and_stays_cleared():
    clock, sink = Clock(), []
    manager = ContextWindowManager(Settings(), sink=sink, clock=clock)
    sess = SyntheticSession(seed=6)
    history, _ = grow(manager, sess, sess.start(), 30)
    clock.now += 61 * 60
    history = history + [HumanMessage("back from lunch", id="lunch")]
    prepared = manager.prepare(history)
    records = [r for r in sink if r["type"] == "microcompact"]
    assert len(records) == 1 and records[0]["trigger"] == "time"
    cleared = set(records[0]["cleared_ids"])
    tool_ids = [m.id for m in history if isinstance(m, ToolMessage)]
    assert set(tool_ids[-5:]).isdisjoint(cleared) and set(tool_ids[:-5]) == cleared
    assert all(m.content.startswith(CLEARED_PLACEHOLDER) for m in prepared.messages if m.id in cleared)
    assert not any(m.content.startswith(CLEARED_PLACEHOLDER) for m in history)  # history untouched
    clock.now += 5
    history = history + sess.round()
    later = manager.prepare(history)
    assert [m.content for m in later.messages[: len(prepared.messages)]] == [m.content for m in prepared.messages]
    assert len([r for r in sink if r["type"] == "microcompact"]) == 1


def test_a_fresh_manager_reapplies_clearing_from_its_state():
    clock = Clock()
    manager = ContextWindowManager(Settings(), sink=[], clock=clock)
    sess = SyntheticSession(seed=8)
    history, _ = grow(manager, sess, sess.start(), 20)
    clock.now += 2 * 3600
    first = manager.prepare(history)
    rebuilt = manager.prepare(list(history))  # a different list with the same messages
    assert [m.content for m in rebuilt.messages] == [m.content for m in first.messages]


class ProviderLike:
    def __init__(self, limit: int) -> None:
        self.limit = limit

    def invoke(self, messages, *a, **k):
        used = sum(count_text_tokens(str(m.content)) for m in messages)
        if used > self.limit:
            raise RuntimeError(f"This model's maximum context length is {self.limit} tokens. "
                               f"However, you requested {used} tokens.")
        return AIMessage("## User goal\nMake the parser handle nested blocks.\n## Next step\ncontinue")


def test_manual_compact_of_a_history_three_times_the_window_succeeds_via_ptl_retry():
    settings = small_settings()
    manager = ContextWindowManager(settings, summarizer=LLMSummarizer(ProviderLike(20_000)), sink=[])
    history = list(SyntheticSession(seed=9, result_chars=2_000, constraint=CONSTRAINT).grow_to(400))
    assert manager.counter.estimate(history) > 3 * 20_000
    result = manual_compact(manager, history, instructions="focus on the parser")
    assert result.summary_source == "llm" and result.ptl_retries >= 1
    assert CONSTRAINT in result.summary
    assert result.post_tokens < settings.auto_compact_threshold_tokens()
    validate_view(result.new_history())


class FakeMemory:
    """Session memory that compacts at the safe split with a fixed summary."""

    def __init__(self, settings: Settings, counter: MessageTokenCounter, summary: str = "## User goal\nmemory") -> None:
        self.settings, self.counter, self.summary = settings, counter, summary
        self.updates = 0
        self.compacts = 0

    def maybe_update(self, history, *, tokens):
        self.updates += 1

    def try_compact(self, history, *, trigger, tokens, threshold, extra_tokens):
        self.compacts += 1
        split = find_safe_split_index(history, token_of=self.counter.message_tokens, min_tokens=1_500,
                                      max_tokens=4_000)
        options = CompactionOptions(settings=self.settings, counter=self.counter, trigger=trigger,
                                    pre_tokens=tokens, extra_tokens=extra_tokens)
        return build_compaction_result(history, split, SummaryOutcome(self.summary, "session_memory"), options)


def test_session_memory_is_tried_first_for_auto_and_plain_manual_compaction():
    settings, counter = small_settings(), MessageTokenCounter()
    memory = FakeMemory(settings, counter)
    manager = ContextWindowManager(settings, counter=counter, session_memory=memory, sink=[])
    sess = SyntheticSession(seed=10, with_usage=False)
    history, prepared = grow(manager, sess, sess.start(), 150)
    sources = {p.compaction.summary_source for p in prepared if p.compaction}
    assert sources == {"session_memory"}
    assert memory.updates == 150
    assert manual_compact(manager, history).summary_source == "session_memory"
    calls = memory.compacts
    assert manual_compact(manager, history, instructions="keep the regex notes").summary_source == "extractive"
    assert memory.compacts == calls  # instructions → full compact, memory skipped


def test_session_memory_result_above_threshold_falls_back_to_full_compact():
    settings, counter = small_settings(), MessageTokenCounter()
    # the notes' task specification holds the user's words: never cut to fit, so this result stays too large
    memory = FakeMemory(settings, counter, summary="# Task specification\n" + "entry " * 30_000)
    manager = ContextWindowManager(settings, counter=counter, session_memory=memory, sink=[])
    history = list(SyntheticSession(seed=11).grow_to(120))
    result = manual_compact(manager, history)
    assert memory.compacts == 1 and result.summary_source == "extractive"


def test_compact_from_through_the_manager_records_a_boundary():
    sink: list[dict] = []
    manager = ContextWindowManager(small_settings(), sink=sink)
    history = list(SyntheticSession(seed=12).grow_to(80))
    manager.prepare(history)
    result = partial_compact(manager, history, history[50].id)
    assert sink[-1]["type"] == "compact_boundary" and sink[-1]["trigger"] == "manual"
    validate_view(result.new_history())


def test_nothing_to_compact_is_a_typed_error():
    manager = ContextWindowManager(small_settings(), sink=[])
    with pytest.raises(CompactionFailed):
        manual_compact(manager, [])


def test_prepare_only_counts_appended_messages():
    counted: list[str] = []
    counter = MessageTokenCounter(count_fn=lambda text: counted.append(text) or len(text) // 4)
    manager = ContextWindowManager(Settings(), counter=counter, sink=[])
    sess = SyntheticSession(seed=13)
    history = list(sess.grow_to(500))
    manager.prepare(history)
    counted.clear()
    new = sess.round()
    manager.prepare(history + new)
    assert len(counted) == len(new)


def test_a_view_is_immutable_and_exact_when_the_system_changes():
    manager = ContextWindowManager(Settings(), sink=[])
    sess = SyntheticSession(seed=16)
    history = list(sess.grow_to(30))
    system = [SystemMessage("one", id="s")]
    first = manager.prepare(history, system=system)
    with pytest.raises(FrozenInstanceError):
        first.messages = ()  # type: ignore[misc]
    history = history + sess.round()
    assert manager.prepare(history, system=system).messages == (*system, *history)
    other = [SystemMessage("two", id="s")]
    assert manager.prepare(history, system=other).messages == (*other, *history)


def test_usage_anchor_is_not_taken_from_messages_kept_by_a_compaction():
    settings = small_settings()
    manager = ContextWindowManager(settings, sink=[])
    history = list(SyntheticSession(seed=14).grow_to(100))
    history.append(with_usage(AIMessage("done", id="anchor"), 19_000))
    prepared = manager.prepare(history)
    assert prepared.compaction is not None
    assert prepared.compaction.messages_to_keep[-1].id == "anchor"
    assert not prepared.plan.anchored and prepared.plan.tokens < 19_000
    nxt = manager.prepare(prepared.history + [with_usage(AIMessage("next", id="fresh"), 6_000)])
    assert nxt.plan.anchored and nxt.plan.tokens == 6_000


def test_plan_explains_buckets_and_compressions():
    settings = small_settings()
    settings.microcompact.compactable_tools = []  # nothing clearable: the compaction must act
    manager = ContextWindowManager(settings, sink=[])
    history = list(SyntheticSession(seed=15, with_usage=False).grow_to(300))
    system = [SystemMessage("rules", id="r", response_metadata={"mtagent": {"bucket": "rules"}})]
    prepared = manager.prepare(history, system=system, tools_tokens=300)
    plan = prepared.plan
    assert plan.compressed and plan.dropped and plan.compressed[0].method == "extractive"
    text = plan.explain()
    assert "summary" in text and "rules" in text and "tools" in text and "Dropped this call" in text
    kinds = {item.kind for item in plan.selected}
    assert {"summary", "tool_result", "instruction"} <= kinds
    assert plan.buckets.used == sum(item.tokens for item in plan.selected) + 300


# ---- property: random histories, random windows -------------------------------------------------

def random_round(rng: random.Random, i: int, max_chars: int) -> list[BaseMessage]:
    roll = rng.random()
    if roll < 0.15:
        return [HumanMessage(("do this; never touch tests/ " if rng.random() < 0.2 else "ok ") * rng.randint(1, 20),
                             id=f"h{i}")]
    if roll < 0.3:
        return [AIMessage("thinking " * rng.randint(1, 30), id=f"a{i}")]
    calls = [{"id": f"c{i}-{k}", "name": rng.choice(["read_file", "grep", "shell", "edit_file"]),
              "args": {"file_path": f"src/x{rng.randint(0, 9)}.py"}} for k in range(rng.randint(1, 3))]
    ai = AIMessage("calling", id=f"a{i}", tool_calls=calls)
    if rng.random() < 0.3:
        ai.usage_metadata = {"input_tokens": rng.randint(100, 30_000), "output_tokens": 5, "total_tokens": 0}
        ai.usage_metadata["total_tokens"] = ai.usage_metadata["input_tokens"] + 5
    results = [ToolMessage("r" * rng.randint(1, max_chars), tool_call_id=c["id"], name=c["name"], id=f"t{i}-{k}")
               for k, c in enumerate(calls)]
    rng.shuffle(results)
    return [ai, *results]


def test_one_thousand_random_histories_give_valid_views_within_budget():
    rng = random.Random(20261129)
    for case in range(1_000):
        limit = rng.randint(4_000, 40_000)
        settings = Settings(context={
            "token_limit": limit,
            "summary_reserved_tokens": limit // rng.randint(5, 10),
            "autocompact_buffer_tokens": limit // rng.randint(8, 20),
            "compression_preserve_min_tokens": rng.randint(0, limit // 8),
            "compression_preserve_max_tokens": rng.randint(limit // 8, limit // 3),
        })
        counter = MessageTokenCounter(count_fn=lambda text: len(text) // 4 + 1)
        clock = Clock()
        manager = ContextWindowManager(settings, counter=counter, sink=[], clock=clock)
        history: list[BaseMessage] = []
        for step in range(rng.randint(1, 4)):
            for j in range(rng.randint(1, 8)):
                history = history + random_round(rng, step * 100 + j, max_chars=limit // 10)
            clock.now += rng.choice([1, 60, 4_000])
            prepared = manager.prepare(history, tools_tokens=rng.randint(0, limit // 50))
            validate_view(prepared.messages)
            assert prepared.plan.tokens <= limit, (case, step, prepared.plan.tokens, limit)
            if prepared.compaction is not None:
                assert prepared.compaction.post_tokens <= settings.auto_compact_threshold_tokens(), case
            history = prepared.history


def test_conflicts_from_the_static_context_are_recorded_in_the_plan():
    items = [
        AuthorityItem("rule:CONTEXT.md:3", Authority.PROJECT_RULES, "Never run the benchmarks on the login node."),
        AuthorityItem("memory:global:1", Authority.LONG_TERM_MEMORY, "Always run the benchmarks on the login node."),
    ]
    conflicts = detect_conflicts(items)
    assert conflicts and conflicts[0].winner == "rule:CONTEXT.md:3"

    sink: list[dict] = []
    manager = ContextWindowManager(Settings(), sink=sink)
    prepared = manager.prepare([HumanMessage("benchmark the kernel", id="h1")], conflicts=conflicts)
    assert prepared.plan.conflicts == conflicts
    record = [r for r in sink if r["type"] == "context_plan"][-1]
    assert record["conflicts"][0]["winner"] == "rule:CONTEXT.md:3"
    assert "memory:global:1" in record["conflicts"][0]["losers"]
    assert "Conflicts" in prepared.plan.explain()


def test_a_plan_without_conflicts_records_none():
    sink: list[dict] = []
    ContextWindowManager(Settings(), sink=sink).prepare([HumanMessage("hi", id="h1")])
    assert [r for r in sink if r["type"] == "context_plan"][-1]["conflicts"] == []


def test_a_real_claude_code_session_stays_valid_and_keeps_its_goal(trajectories):
    trajectory = load_trajectory(trajectories / "claude-code" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl")
    messages = trajectory.messages
    settings = Settings(
        context={"token_limit": 32_000, "auto_compact_threshold": 0.75,
                 "compression_preserve_min_tokens": 3_000, "compression_preserve_max_tokens": 8_000},
        microcompact={"compactable_tools": CLAUDE_TOOLS},
    )
    sink: list[dict] = []
    manager = ContextWindowManager(settings, sink=sink)
    history: list = []
    fed = 0
    compactions = []
    for index in trajectory.model_calls:
        history = history + messages[fed:index]
        fed = index
        prepared = manager.prepare(history, tools_tokens=1_000)
        validate_view(prepared.messages)
        if prepared.compaction is not None:
            compactions.append(prepared.compaction)
            assert prepared.compaction.post_tokens <= settings.auto_compact_threshold_tokens()
        history = prepared.history
    assert len(compactions) >= 2
    goal = F.extract_facts(messages[:1]).goal
    assert F.mentions_goal(F.normalize(compactions[-1].summary), goal)
    last = compactions[-1]
    first_kept = last.boundary_record["first_kept_id"]
    cut = next(i for i, m in enumerate(messages) if m.id == first_kept) if first_kept else len(messages)
    changed_before = F.extract_facts(messages[:cut]).files_changed
    final = F.normalize(last.summary)
    assert changed_before and all(F.mentions(final, path) for path in changed_before)
    assert {r["type"] for r in sink} >= {"compact_boundary", "context_plan"}
