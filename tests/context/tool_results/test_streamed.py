"""A tool result too big to copy (#33): the artifact holds exactly the whole text redacted, the preview
comes from a redacted sample, and the engine never makes a second whole copy of the text — with a
secret in it, the redacted copy and re.sub's pieces took a 50 MB MCP result from 290 to 350 MB."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
from langchain_core.messages import ToolMessage

from mtagent.context import MemorySink, build_engine_session
from mtagent.context.tool_results import streamed
from mtagent.context.tool_results.budgeter import ToolResultBudgeter, ToolResultPolicy, is_budgeted
from mtagent.redaction import Redactor
from mtagent.session.artifacts import ArtifactStore

SECRET = "hunter2-pw9x-configured"
KEY = "sk-proj-" + "Zq7" * 16
LINE = "0123456789abcdef" * 4 + "\n"


def _budgeter(root: Path, redactor: Redactor) -> ToolResultBudgeter:
    return ToolResultBudgeter(ToolResultPolicy(), artifacts=ArtifactStore(root, redactor=redactor))


def _result(text: str) -> ToolMessage:
    return ToolMessage(text, tool_call_id="c1", name="mcp__fx__big", id="m1")


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streamed, "STREAM_MIN_CHARS", 100_000)
    monkeypatch.setattr(streamed, "SAMPLE_CHARS", 20_000)


def test_the_artifact_is_the_whole_redacted_and_no_secret_reaches_the_preview(tmp_path: Path, small: None) -> None:
    redactor = Redactor((SECRET,))
    # a secret in the head, one in the middle, a key across the sample's edge region, one at the very end
    text = f"start {SECRET}\n" + LINE * 3000 + f"mid {SECRET}\n" + LINE * 3000 + KEY + "\n" + LINE * 200 + SECRET
    assert len(streamed.redacted_sample(redactor, text, streamed.SAMPLE_CHARS)) < len(text) // 4  # a sample
    out = streamed.persist_huge(_budgeter(tmp_path / "a", redactor), redactor, _result(text))
    assert is_budgeted(out) and out.artifact["budget"]["decision"] == "persisted"
    assert (tmp_path / "a" / out.artifact["artifact"]).read_text() == redactor.text(text)
    assert SECRET not in out.content and "Zq7Zq7" not in out.content and out.content.count("[redacted]") >= 2
    assert f"{text.count(chr(10)) + 1:,} lines" in out.content  # the middle's line breaks keep the numbers


def test_without_a_secret_the_preview_is_the_one_the_whole_text_gives(tmp_path: Path, small: None) -> None:
    redactor = Redactor((SECRET,))
    text = "".join(f"{i:06d} " + LINE for i in range(6000))
    out = streamed.persist_huge(_budgeter(tmp_path / "a", redactor), redactor, _result(text))
    whole = _budgeter(tmp_path / "b", redactor).budget(_result(text))
    assert out.content == whole.content and out.artifact["budget"] == whole.artifact["budget"]


def test_a_small_result_a_self_limiting_tool_and_another_stores_redactor_take_the_usual_path(
        tmp_path: Path, small: None) -> None:
    redactor = Redactor((SECRET,))
    budgeter = _budgeter(tmp_path / "a", redactor)
    assert streamed.persist_huge(budgeter, redactor, _result(LINE * 100)).artifact is None
    read = ToolMessage(LINE * 3000, tool_call_id="c2", name="read_file", id="m2")
    assert streamed.persist_huge(budgeter, redactor, read) is read
    other = _result(LINE * 3000)
    assert streamed.persist_huge(budgeter, Redactor(("another-secret-value",)), other) is other


def test_the_engine_makes_no_whole_copy_of_a_big_result_with_a_secret(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streamed, "STREAM_MIN_CHARS", 10_000_000)
    redactor = Redactor((SECRET,))
    engine = build_engine_session(sink=MemorySink(), artifacts=ArtifactStore(tmp_path / "a", redactor=redactor),
                                  redactor=redactor)
    text = LINE * (20_000_000 // len(LINE)) + f"{SECRET}\n{KEY}"
    tracemalloc.start()
    try:
        final = engine.tool_result(_result(text))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert final.artifact["budget"]["decision"] == "persisted" and "Zq7Zq7" not in final.content
    assert peak < 0.4 * len(text), peak  # redacting it whole: 2x (the copy and re.sub's pieces)
