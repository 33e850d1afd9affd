"""read_file is bounded by the context window (#38): what does not fit is saved, previewed and paged.

The 25K-token cap ignored the window, so on a 12K window one read of 10K–12.9K tokens filled it,
every compaction dropped it and the model read it again. Now a read over
``read_file.max_window_share`` of the window goes to an artifact, like large shell output.
"""

from __future__ import annotations

from pathlib import Path

from mtagent.config import Settings
from mtagent.events import EventBus, EventType
from mtagent.tools.files import read_cap

from .conftest import Kit

WINDOW = 12_000


def _settings(**read_file: object) -> Settings:
    return Settings(context={"token_limit": WINDOW}, read_file=read_file)


def _module(path: Path, lines: int, fact_line: int | None = None) -> None:
    body = [f"value_{i} = compute({i}, 'padding words for the tokenizer')" for i in range(1, lines + 1)]
    if fact_line is not None:
        body[fact_line - 1] = "LEASE_SECONDS = 4711"
    path.write_text("\n".join(body) + "\n")


def test_the_read_cap_is_the_smaller_of_the_token_cap_and_the_window_share() -> None:
    assert read_cap(_settings()) == 3_000
    assert read_cap(Settings(context={"token_limit": 200_000})) == 25_000  # large windows: unchanged
    assert read_cap(_settings(max_window_share=0.5, max_tokens=4_000)) == 4_000


def test_a_read_larger_than_the_window_allows_is_saved_with_a_preview_and_paging(make_kit) -> None:
    kit: Kit = make_kit(_settings())
    _module(kit.root / "big.py", 900, fact_line=850)
    msg = kit.call("read_file", file_path="big.py")
    assert msg.status == "success"
    assert msg.content.startswith('<persisted-output tool="read_file" path="tool-results/call_1.txt"')
    assert "     1\tvalue_1 = compute(1" in msg.content  # the head, numbered like any read
    assert "LEASE_SECONDS" not in msg.content  # the rest is not sent
    assert 'read_tool_result(path="tool-results/call_1.txt"' in msg.content
    assert 'read_file(file_path="big.py", offset=<line>' in msg.content
    assert len(msg.content) <= Settings().tool_results.preview_chars + 1_000
    saved = kit.artifacts.read_text("tool-results/call_1.txt").splitlines()
    assert len(saved) == 900 and saved[849] == "LEASE_SECONDS = 4711"  # raw lines: line N is line N
    assert msg.artifact["offloaded"] == "window" and msg.artifact["artifact"] == "tool-results/call_1.txt"
    assert any(r.get("type") == "tool_result_artifact" or r.get("path") == "tool-results/call_1.txt"
               for r in kit.sink)  # recorded, so recall indexes the saved read


def test_a_page_of_a_saved_read_is_cut_to_what_the_window_holds(make_kit) -> None:
    kit: Kit = make_kit(_settings())
    _module(kit.root / "big.py", 900, fact_line=850)
    kit.call("read_file", file_path="big.py")
    page = kit.call("read_tool_result", path="tool-results/call_1.txt", offset=1)  # all 900 lines asked
    assert page.status == "success"
    assert 50 < page.content.count("\n") < 200  # ~20 tokens a line: about 135 fit in 3,000 tokens
    assert "Continue with offset=" in page.content
    assert "     1\tvalue_1" in page.content and "LEASE_SECONDS" not in page.content


def test_a_read_within_the_window_share_is_inline_as_before(make_kit) -> None:
    kit: Kit = make_kit(_settings())
    _module(kit.root / "small.py", 60, fact_line=50)
    msg = kit.call("read_file", file_path="small.py")
    assert "<persisted-output" not in msg.content and "LEASE_SECONDS = 4711" in msg.content


def test_without_an_artifact_store_a_read_over_the_window_share_says_how_to_page(tmp_path: Path) -> None:
    from mtagent.tools import ToolSession, default_tools

    root = tmp_path / "ws"
    root.mkdir()
    _module(root / "big.py", 900)
    tools = {t.name: t for t in default_tools(root, ToolSession(), _settings(), include_memory=False)}
    msg = tools["read_file"].invoke({"name": "read_file", "args": {"file_path": "big.py"}, "id": "c1",
                                     "type": "tool_call"})
    assert msg.status == "error" and "12,000-token context window" in msg.content and "limit=" in msg.content


def test_a_re_read_after_a_compaction_that_freed_too_little_is_answered_by_reference(make_kit) -> None:
    bus = EventBus()
    kit: Kit = make_kit(_settings(), events=bus)
    _module(kit.root / "mid.py", 100, fact_line=90)
    first = kit.call("read_file", file_path="mid.py")
    assert "LEASE_SECONDS = 4711" in first.content  # inline: it fits
    bus.emit(EventType.COMPACT_BOUNDARY, id="b1")  # the read left the view
    bus.emit(EventType.COMPACT_FAILED, error="freed too little", low_progress=True)
    again = kit.call("read_file", file_path="mid.py")
    assert "LEASE_SECONDS" not in again.content and "not sent again" in again.content
    assert "call_1" in again.content and "tool-results/call_2.txt" in again.content
    assert "LEASE_SECONDS = 4711" in kit.artifacts.read_text("tool-results/call_2.txt")


def test_after_a_compaction_that_made_room_a_re_read_is_sent_again(make_kit) -> None:
    bus = EventBus()
    kit: Kit = make_kit(_settings(), events=bus)
    _module(kit.root / "mid.py", 100, fact_line=90)
    kit.call("read_file", file_path="mid.py")
    bus.emit(EventType.COMPACT_BOUNDARY, id="b1")
    bus.emit(EventType.COMPACT_FAILED, error="freed too little", low_progress=True)
    bus.emit(EventType.COMPACT_BOUNDARY, id="b2")  # a later compaction made room
    again = kit.call("read_file", file_path="mid.py")
    assert "LEASE_SECONDS = 4711" in again.content


def test_an_unchanged_re_read_of_a_saved_read_points_at_the_saved_copy(make_kit) -> None:
    kit: Kit = make_kit(_settings())
    _module(kit.root / "big.py", 900, fact_line=850)
    kit.call("read_file", file_path="big.py")
    again = kit.call("read_file", file_path="big.py")
    assert again.content.startswith("file_unchanged:") and "tool-results/call_1.txt" in again.content


def test_any_tool_result_is_bounded_by_the_window_too(make_kit) -> None:
    """A 20,000-character shell output is under the 30,000 limit but over a 12K window's share."""
    kit: Kit = make_kit(_settings())
    msg = kit.call("shell", command="python3 -c \"print('x' * 20000)\"")
    assert "<persisted-output" in msg.content and len(msg.content) < 10_000
    big: Kit = make_kit(Settings(context={"token_limit": 200_000}))
    assert "<persisted-output" not in big.call("shell", command="python3 -c \"print('x' * 20000)\"").content
