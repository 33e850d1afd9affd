"""Manual compaction: every /compact and /compact from leaves fewer tokens, or changes nothing and says why.

The property runs over random synthetic sessions (length, window, the message picked for
``/compact from``, a second compaction after the first) with the extractive summarizer and
re-attachment of files the session read.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings as hsettings, strategies as st
from langchain_core.messages import SystemMessage

from mtagent.config import Settings
from mtagent.context.compaction.compactor import CompactionResult
from mtagent.context.compaction.manual import NothingCompacted, shrink_or_explain
from mtagent.context.requested_compaction import manual_compact, partial_compact
from mtagent.context.window import ContextWindowManager
from mtagent.errors import MTAgentError
from mtagent.testing.synthetic import SyntheticSession

SYSTEM = [SystemMessage("You are mtagent, a coding agent.", id="sys")]


def _manager(window: int, sink: list) -> ContextWindowManager:
    settings = Settings.model_validate({"context": {
        "token_limit": window, "summary_reserved_tokens": window // 8, "autocompact_buffer_tokens": window // 10,
        "compression_preserve_min_tokens": window // 16, "compression_preserve_max_tokens": window // 5}})
    return ContextWindowManager(settings, sink=sink, token_limit=window)


def _one(manager, sink, history, op, pick, instructions):
    before = len([r for r in sink if r.get("type") == "compact_boundary"])
    try:
        if op == "compact":
            result = manual_compact(manager, history, instructions=instructions, system=SYSTEM, tools_tokens=300)
        else:
            ids = [m.id for m in history if m.id and not isinstance(m, SystemMessage)]
            result = partial_compact(manager, history, ids[int(pick * (len(ids) - 1))], system=SYSTEM,
                                          tools_tokens=300)
    except MTAgentError as exc:
        message = str(exc)
        assert message and "\n" not in message and len(message) < 400
        assert len([r for r in sink if r.get("type") == "compact_boundary"]) == before  # nothing recorded
        return history
    assert result.post_tokens < result.pre_tokens, (op, result.pre_tokens, result.post_tokens)
    assert len([r for r in sink if r.get("type") == "compact_boundary"]) == before + 1
    return result.new_history()


@hsettings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), rounds=st.integers(3, 70), window=st.sampled_from([8_000, 16_000, 40_000]),
       ops=st.lists(st.tuples(st.sampled_from(["compact", "from"]), st.floats(0, 1), st.booleans()),
                    min_size=1, max_size=3),
       more=st.integers(0, 20))
def test_every_manual_compaction_shrinks_or_changes_nothing_and_says_why(seed, rounds, window, ops, more):
    sink: list[dict] = []
    manager = _manager(window, sink)
    session = SyntheticSession(seed=seed, result_chars=400)
    history = list(session.grow_to(rounds))
    for op, pick, with_instructions in ops:
        manager.prepare(history, system=SYSTEM, tools_tokens=300)
        history = _one(manager, sink, history, op, pick, "keep the parser decisions" if with_instructions else None)
        for _ in range(more):
            history = [*history, *session.round()]


def test_compact_from_works_after_an_earlier_compaction():
    sink: list[dict] = []
    manager = _manager(40_000, sink)
    session = SyntheticSession(seed=7, result_chars=400)
    history = list(session.grow_to(60))
    history = manual_compact(manager, history, system=SYSTEM, tools_tokens=300).new_history()
    for _ in range(40):
        history = [*history, *session.round()]
    late = [m.id for m in history if m.id][-6]
    result = partial_compact(manager, history, late, system=SYSTEM, tools_tokens=300)
    assert result.post_tokens < result.pre_tokens
    assert sum(1 for r in sink if r["type"] == "compact_boundary") == 2


def _fake(post: int, attachments: int) -> CompactionResult:
    return CompactionResult(boundary_record={"id": "cb"}, summary_messages=[], attachments=[object()] * attachments,
                            messages_to_keep=[], pre_tokens=1000, post_tokens=post, summary_source="extractive",
                            trigger="manual")


def test_tries_without_reattachment_then_a_tighter_summary_then_explains():
    seen: list[tuple[int, int]] = []

    def attempt(s: Settings) -> CompactionResult:
        seen.append((s.context.reattach_max_files, s.context.summary_reserved_tokens))
        return _fake(1200 if len(seen) < 3 else 900, attachments=1 if s.context.reattach_max_files else 0)

    result = shrink_or_explain(attempt, Settings(), 1000, lambda r: 2000)
    assert result.post_tokens == 900
    assert seen == [(5, 20_000), (0, 20_000), (0, 1000)]

    def never(s: Settings) -> CompactionResult:
        return _fake(1500, 0)

    try:
        shrink_or_explain(never, Settings(), 1000, lambda r: 300)
    except NothingCompacted as exc:
        assert str(exc).startswith("nothing compacted: the window stays at 1,000 tokens")
    else:
        raise AssertionError("expected NothingCompacted")


def test_a_refused_manual_compaction_ends_with_compact_failed():
    """A display shows a spinner from COMPACT_STARTED until COMPACT_BOUNDARY or COMPACT_FAILED;
    a refusal ("nothing compacted") must send the second, or the spinner never stops."""
    from mtagent.events import EventBus, EventType

    bus = EventBus()
    seen: list = []
    bus.subscribe(lambda e: seen.append((e.type, e.data.get("trigger"))))
    settings = Settings.model_validate({"context": {"token_limit": 40_000}})
    manager = ContextWindowManager(settings, sink=[], token_limit=40_000, bus=bus)
    history = list(SyntheticSession(seed=3, result_chars=100).grow_to(2))
    try:
        manual_compact(manager, history, system=SYSTEM)
    except NothingCompacted:
        pass
    else:
        raise AssertionError("a two-round session should have nothing to compact")
    kinds = [kind for kind, _ in seen if kind in (EventType.COMPACT_STARTED, EventType.COMPACT_FAILED)]
    assert kinds == [EventType.COMPACT_STARTED, EventType.COMPACT_FAILED]
    assert ("compact_failed", "manual") in [(k.value, t) for k, t in seen]
