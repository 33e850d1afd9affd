"""Prefix-cache pricing and fact probes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from mtagent.context.tokens import MessageTokenCounter, count_text_tokens, message_text
from mtagent.replay.cost import (ANTHROPIC, OPENAI, WORKING_CONTEXT_TOKENS, CacheModel, PrefixCache, lower_bounds,
                                 message_key, price, summary_call_cost)
from mtagent.replay.formats import load_trajectory
from mtagent.replay.probes import (
    build_probes,
    changed_files,
    constraint_sentences,
    latest_error_line,
    task_identifiers,
)
from mtagent.replay.trajectory import Trajectory


def _msgs(n: int) -> list:
    out: list = [SystemMessage("system prompt " * 50, id="s")]
    for i in range(n):
        out.append(HumanMessage(f"message number {i} " * 30, id=f"h{i}"))
    return out


def test_appended_request_reads_the_whole_previous_prefix_from_cache() -> None:
    counter = MessageTokenCounter()
    cache = PrefixCache(counter)
    first = cache.request(_msgs(3))
    assert first.shared_tokens == 0
    second = cache.request(_msgs(4))
    assert second.shared_tokens == counter.estimate(_msgs(3))
    assert second.costs["anthropic"] == price(second.tokens, second.shared_tokens, ANTHROPIC)


def test_a_changed_middle_message_breaks_the_cache_from_there_on() -> None:
    counter = MessageTokenCounter()
    cache = PrefixCache(counter)
    base = _msgs(5)
    cache.request(base)
    edited = list(base)
    edited[2] = HumanMessage("completely different " * 30, id="h1")
    again = cache.request(edited)
    assert again.shared_tokens == counter.estimate(base[:2])


def test_common_token_prefix_of_the_first_differing_message_is_shared() -> None:
    counter = MessageTokenCounter()
    cache = PrefixCache(counter)
    a = [HumanMessage("alpha beta gamma " * 100 + "tail one", id="x")]
    b = [HumanMessage("alpha beta gamma " * 100 + "tail two", id="x")]
    cache.request(a)
    shared = cache.request(b).shared_tokens
    assert 250 < shared < counter.estimate(b)


def test_openai_caches_only_from_1024_tokens_in_128_token_blocks() -> None:
    assert price(2000, 1000, OPENAI) == 2000
    assert price(3000, 1100, OPENAI) == 1024 * 0.1 + (3000 - 1024)
    assert price(3000, 1100, ANTHROPIC) == 1100 * 0.1 + 1900 * 1.25
    assert summary_call_cost(1000, 100, ANTHROPIC) == 1000 + 500


def test_probe_extractors() -> None:
    assert "src/app/models.py" in task_identifiers("Fix `parse_date()` in src/app/models.py for issue #1234.")
    assert "#1234" in task_identifiers("Fix `parse_date()` in src/app/models.py for issue #1234.")
    assert "command" not in task_identifiers("Run the `command` here")
    assert latest_error_line("ok\nTraceback (most recent call last):\nValueError: bad date\n") == "ValueError: bad date"
    assert latest_error_line("  12→    raise ValueError('x')\n") is None
    assert constraint_sentences("Please fix it. You must not modify the tests.") == ["you must not modify the tests."]
    call = AIMessage("", tool_calls=[{"id": "1", "name": "Edit", "args": {"file_path": "/repo/src/a.py"}},
                                     {"id": "2", "name": "bash", "args": {"command": "sed -i 's/a/b/' pkg/mod.py"}}])
    assert changed_files(call) == ["src/a.py", "pkg/mod.py"]


def _toy() -> Trajectory:
    msgs = [
        HumanMessage("Fix src/app/models.py. You must not touch tests/ at all.", id="h"),
        AIMessage("", id="a1", tool_calls=[{"id": "c1", "name": "bash", "args": {"command": "pytest"}}]),
        ToolMessage("FAILED\nValueError: bad date in models", id="t1", tool_call_id="c1"),
        AIMessage("", id="a2", tool_calls=[{"id": "c2", "name": "Edit", "args": {"file_path": "src/app/models.py"}}]),
        ToolMessage("ok", id="t2", tool_call_id="c2"),
        AIMessage("done", id="a3"),
    ]
    return Trajectory(msgs, "toy", [1, 3, 5])


def test_probes_activate_as_the_recording_reveals_them_and_raw_retains_everything() -> None:
    traj = _toy()
    probes = build_probes(traj)
    cats = {p.category for p in probes.probes}
    assert cats == {"task", "constraints", "error", "files_changed"}
    for turn, index in enumerate(traj.model_calls):
        assert probes.retention(turn, traj.messages[:index]) == 1.0
    assert probes.retention(2, [traj.messages[0]]) < 1.0
    error_bits = probes.category_masks["error"]
    assert probes.active[0] & error_bits == 0 and probes.active[1] & error_bits


def test_retention_averages_categories_not_probes() -> None:
    traj = _toy()
    probes = build_probes(traj)
    only_error = [ToolMessage("ValueError: bad date in models", id="e", tool_call_id="c1")]
    assert probes.retention(1, only_error) == 1 / 3  # task 0, constraints 0, error 1


def test_probes_on_a_real_session_are_strategy_independent(trajectories: Path) -> None:
    traj = load_trajectory(trajectories / "mini-swe-agent/deepseek_chat_test_1-100__django__django-11099.traj.json")
    a, b = build_probes(traj), build_probes(traj)
    assert [p.text for p in a.probes] == [p.text for p in b.probes]
    assert "UsernameValidator" in [p.text for p in a.probes if p.category == "task"]
    assert any(p.text.endswith("validators.py") for p in a.probes if p.category == "files_changed")


ELIXIR_RUN = """Running ExUnit with seed: 0
  1) test mount renders the review page (ReviewLiveTest)
     test/review_live_test.exs:35
     ** (RuntimeError) Phoenix LiveView requires lazy_html as a test dependency.
     code: {:ok, _view, html} = live(conn, "/projects/1/review")
     stacktrace:
       (phoenix_live_view 1.1.22) lib/phoenix_live_view/test/dom.ex:13: DOM.ensure_loaded!/0
5 tests, 5 failures
"""


def test_an_elixir_or_erlang_exception_line_is_an_error_line_not_a_comment() -> None:
    """``** (RuntimeError) …`` is how Elixir/Erlang report every exception; the comment rule (a line
    starting with ``*``) took it for source text, so the probe kept a fixed, older error as "latest"."""
    assert latest_error_line(ELIXIR_RUN) == (
        "** (RuntimeError) Phoenix LiveView requires lazy_html as a test dependency.")
    assert latest_error_line("** exception error: bad argument\n     in function  foo/1") == (
        "** exception error: bad argument")
    # comments, markdown emphasis and bullets stay source text
    assert latest_error_line(" * Error: the driver returns -EIO here\n") is None
    assert latest_error_line("**Error:** the docs' own heading\n") is None
    assert latest_error_line("* FAILED is printed when a case fails\n") is None


# ── sharp checks of the prefix-cache pricing: exact figures a small bug would change (#22) ──────────

COUNTER = MessageTokenCounter()
FLAT = CacheModel("flat", read_ratio=0.1, write_ratio=1.0, output_ratio=2.0)


def _second(first: list, second: list, counter: MessageTokenCounter = COUNTER) -> int:
    cache = PrefixCache(counter)
    cache.request(first)
    return cache.request(second).shared_tokens


def test_a_model_without_cache_limits_reads_every_shared_token() -> None:
    # min_cached_tokens 0, block 1: an odd shared count is cached in full
    assert price(10, 7, FLAT) == pytest.approx(7 * 0.1 + 3)
    assert price(10, 0, FLAT) == pytest.approx(10)


def test_openai_caches_from_exactly_1024_tokens() -> None:
    assert price(2000, 1024, OPENAI) == pytest.approx(1024 * 0.1 + 976)
    assert price(2000, 1023, OPENAI) == pytest.approx(2000)
    assert price(2000, 1151, OPENAI) == pytest.approx(1024 * 0.1 + 976)  # 1024 + 127: one block
    assert price(2000, 1152, OPENAI) == pytest.approx(1152 * 0.1 + 848)


def test_a_first_message_that_differs_from_its_first_character_shares_nothing() -> None:
    a = [HumanMessage("x" + "same tail of the message " * 40, id="m")]
    b = [HumanMessage("y" + "same tail of the message " * 40, id="m")]
    assert _second(a, b) == 0


def test_the_common_prefix_of_the_first_differing_message_is_counted_exactly() -> None:
    head = "alpha beta gamma delta " * 30
    a = [SystemMessage("sys", id="s"), HumanMessage(head + "one", id="x")]
    b = [SystemMessage("sys", id="s"), HumanMessage(head + "two", id="x")]
    expected = COUNTER.message_tokens(a[0]) + count_text_tokens(head) - 1
    assert _second(a, b) == expected


def test_a_one_token_common_prefix_shares_nothing_of_that_message() -> None:
    # the split may cut the one token the prefixes have in common
    assert _second([HumanMessage("zebra", id="x")], [HumanMessage("zulu", id="x")]) == 0


def test_a_differing_message_of_another_role_shares_no_partial_prefix() -> None:
    text = "alpha beta gamma delta " * 30
    a = [SystemMessage("sys", id="s"), HumanMessage(text + "one", id="x")]
    b = [SystemMessage("sys", id="s"), AIMessage(text + "two", id="x")]
    assert _second(a, b) == COUNTER.message_tokens(a[0])


def test_a_request_that_only_appends_shares_the_whole_previous_request() -> None:
    a = [SystemMessage("sys", id="s"), HumanMessage("question", id="h")]
    b = [*a, AIMessage("answer", id="a")]
    assert _second(a, b) == COUNTER.estimate(a)
    assert _second(b, a) == COUNTER.estimate(a)  # a shorter request shares what it repeats


def test_shared_tokens_never_exceed_the_request() -> None:
    # a coarse counter (1 token a message) against the exact prefix count of a long message
    coarse = MessageTokenCounter(overhead_tokens=0, count_fn=lambda _text: 1)
    a = [HumanMessage("word " * 500 + "one", id="x")]
    b = [HumanMessage("word " * 500 + "two", id="x")]
    cost = PrefixCache(coarse).request(a)
    cache = PrefixCache(coarse)
    cache.request(a)
    second = cache.request(b)
    assert (cost.tokens, second.tokens, second.shared_tokens) == (1, 1, 1)


def test_block_content_and_tool_calls_are_part_of_a_message_key() -> None:
    blocks = [{"type": "text", "text": "look"}, {"type": "image", "url": "x.png"}]
    a = HumanMessage(content=blocks, id="h")
    assert message_key(a) == message_key(HumanMessage(content=list(blocks), id="h"))
    assert message_key(a) != message_key(HumanMessage(content=[{"type": "text", "text": "look"}], id="h"))
    call = AIMessage("", id="a", tool_calls=[{"id": "c1", "name": "bash", "args": {"command": "ls"}}])
    other = AIMessage("", id="a", tool_calls=[{"id": "c1", "name": "bash", "args": {"command": "rm x"}}])
    assert message_key(call) != message_key(other)
    assert message_key(ToolMessage("ok", id="t", tool_call_id="c1")) != message_key(
        ToolMessage("ok", id="t", tool_call_id="c2"))


def test_an_assistant_message_with_other_tool_arguments_breaks_the_cache_there() -> None:
    sys_msg = SystemMessage("sys", id="s")
    a = [sys_msg, AIMessage("", id="a", tool_calls=[{"id": "c1", "name": "bash", "args": {"command": "ls"}}])]
    b = [sys_msg, AIMessage("", id="a", tool_calls=[{"id": "c1", "name": "bash", "args": {"command": "rm"}}])]
    common = os.path.commonprefix([message_text(a[1]), message_text(b[1])])
    assert _second(a, b) == COUNTER.message_tokens(sys_msg) + count_text_tokens(common) - 1
    assert _second(a, a) == COUNTER.estimate(a)


def test_lower_bounds_write_nothing_for_a_fully_shared_request() -> None:
    requests = [(100, 0), (100, 100), (50, 80)]  # repeated, and a recording that claims more than it sent
    written, with_reread = lower_bounds(requests, FLAT, working_tokens=60)
    assert written == pytest.approx(100)
    assert with_reread == pytest.approx(100 + (60 + 60 + 50) * 0.1)
    assert lower_bounds([(20_000, 20_000)], FLAT)[1] == pytest.approx(WORKING_CONTEXT_TOKENS * 0.1)
    assert WORKING_CONTEXT_TOKENS == 10_000
    assert lower_bounds([(20_000, 20_000)], ANTHROPIC)[0] == 0


def test_below_the_minimum_nothing_is_cached_whatever_the_block_size() -> None:
    per_token = CacheModel("min-only", read_ratio=0.1, write_ratio=1.0, output_ratio=2.0, min_cached_tokens=100)
    assert price(200, 99, per_token) == pytest.approx(200)
    assert price(200, 100, per_token) == pytest.approx(100 * 0.1 + 100)


@pytest.mark.timeout(60)  # a scan that stops advancing must fail, not hang the run
def test_two_empty_messages_of_the_same_role_share_no_partial_prefix() -> None:
    assert _second([AIMessage("", id="a")], [AIMessage("", id="b")]) == 0


@pytest.mark.timeout(60)  # a scan that stops advancing must fail, not hang the run
def test_a_common_prefix_longer_than_one_scan_chunk_is_counted_exactly() -> None:
    head = "word " * 1000  # 5,000 characters: more than one 4,096-character chunk
    a = [SystemMessage("sys", id="s"), HumanMessage(head + "one", id="x")]
    b = [SystemMessage("sys", id="s"), HumanMessage(head + "two", id="x")]
    assert _second(a, b) == COUNTER.message_tokens(a[0]) + count_text_tokens(head) - 1
    same = [SystemMessage("sys", id="s"), HumanMessage(head, id="y")]  # same text, another id
    assert _second(a[:1] + [HumanMessage(head, id="x")], same) == COUNTER.message_tokens(a[0]) + count_text_tokens(head) - 1


def test_the_character_scan_stops_at_the_first_difference_even_at_an_odd_index() -> None:
    head = "alpha beta gamma delta " * 30 + "z"  # 691 characters: the texts differ at index 691
    a = [HumanMessage(head + "1111", id="x")]
    b = [HumanMessage(head + "2222", id="x")]
    assert len(head) % 2 == 1
    assert _second(a, b) == count_text_tokens(head) - 1
