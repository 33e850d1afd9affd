"""Prefix-cache pricing and fact probes."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from mtagent.context.tokens import MessageTokenCounter
from mtagent.replay.cost import ANTHROPIC, OPENAI, PrefixCache, price, summary_call_cost
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
