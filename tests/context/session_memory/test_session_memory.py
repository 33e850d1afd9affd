"""Session memory (spec M6): template, triggers, updates, sequential updates, compaction, resume."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from mtagent.config import Settings
from mtagent.context.session_memory import notes as N
from mtagent.context.boundary import is_summary_message, summary_message
from mtagent.context.invariants import validate_view
from mtagent.context.session_memory.manager import (
    DEFAULT_SESSION_MEMORY_TEMPLATE,
    SessionMemoryManager,
    load_session_memory,
    session_memory_for_resume,
)
from mtagent.context.session_memory.triggers import is_text_message
from mtagent.context.tokens import count_text_tokens, message_text
from mtagent.context.view import build_resume_view
from mtagent.session.artifacts import ArtifactStore
from mtagent.session.schema import message_to_record

CONSTRAINT = "never edit files under tests/"
FILLER = "lorem ipsum dolor sit amet consectetur " * 60  # ~ 400+ tokens


class Conversation:
    """Builds a growing, protocol-valid history of tool rounds."""

    def __init__(self) -> None:
        self.n = 0
        self.messages: list[BaseMessage] = [HumanMessage(f"Optimize the GEMM kernel. {CONSTRAINT}.", id="u0")]

    def _id(self, p: str) -> str:
        self.n += 1
        return f"{p}{self.n}"

    def tool_round(self, tool: str = "read_file", path: str = "src/k.c", body: str = FILLER, error: bool = False) -> None:
        cid = self._id("c")
        args = {"command": f"make test {path}"} if tool == "shell" else {"file_path": path}
        self.messages.append(AIMessage("", id=self._id("a"), tool_calls=[{"id": cid, "name": tool, "args": args}]))
        self.messages.append(ToolMessage(body, tool_call_id=cid, name=tool, id=self._id("t"),
                                         status="error" if error else "success"))

    def say(self, user: str, answer: str) -> None:
        self.messages.append(HumanMessage(user, id=self._id("h")))
        self.messages.append(AIMessage(answer, id=self._id("a")))

    def grow(self, rounds: int) -> None:
        for i in range(rounds):
            self.tool_round(path=f"src/file{self.n}_{i}.c")
            if i % 4 == 3:
                self.say(f"continue with step {self.n}", f"done step {self.n}: {FILLER[:200]}")


class FakeModel:
    """Scripted chat model: ``reply(request) -> str``; can be slow; counts concurrency."""

    def __init__(self, reply: Any, delay: float = 0.0) -> None:
        self.reply = reply
        self.delay = delay
        self.active = 0
        self.max_active = 0
        self.requests: list[list[BaseMessage]] = []
        self._lock = threading.Lock()

    def invoke(self, request: list[BaseMessage], *args: Any, **kwargs: Any) -> AIMessage:
        with self._lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            self.requests.append(request)
        try:
            time.sleep(self.delay)
            return AIMessage(self.reply(request) if callable(self.reply) else self.reply)
        finally:
            with self._lock:
                self.active -= 1


@pytest.fixture
def conv() -> Conversation:
    return Conversation()


def _manager(tmp_path: Path, **kw: Any) -> SessionMemoryManager:
    store = ArtifactStore.for_session(tmp_path, "s1")
    return SessionMemoryManager(store.session_memory_path, kw.pop("settings", Settings()), **kw)


def test_template_has_every_section_with_an_italic_description() -> None:
    lines = DEFAULT_SESSION_MEMORY_TEMPLATE.splitlines()
    headings = [line[2:] for line in lines if line.startswith("# ")]
    assert headings == ["Session Title", "Current State", "Task specification", "Files and Functions", "Workflow",
                        "Errors & Corrections", "Codebase and System Documentation", "Learnings", "Key results",
                        "Worklog"]
    for i, line in enumerate(lines):
        if line.startswith("# "):
            assert lines[i + 1].startswith("_") and lines[i + 1].endswith("_")
    assert N.parse_notes(DEFAULT_SESSION_MEMORY_TEMPLATE).is_empty()


def test_first_extraction_at_init_tokens_then_growth_and_tool_calls(tmp_path: Path, conv: Conversation) -> None:
    sm = _manager(tmp_path)
    assert not sm.should_extract_memory(conv.messages, token_count=9_999)
    assert sm.should_extract_memory(conv.messages, token_count=10_000)
    sm.tokens_at_last_update = 10_000
    conv.tool_round()
    conv.tool_round()
    conv.tool_round()
    assert not sm.should_extract_memory(conv.messages, token_count=14_999, tool_call_count=3)
    assert sm.should_extract_memory(conv.messages, token_count=15_000, tool_call_count=3)
    assert not sm.should_extract_memory(conv.messages, token_count=15_000, tool_call_count=2)
    conv.say("and now?", "all done")  # last assistant turn made no tool call
    assert sm.should_extract_memory(conv.messages, token_count=15_000, tool_call_count=0)
    assert sm.tool_calls_since_update(conv.messages) == 3


def test_summary_md_created_on_first_trigger(tmp_path: Path, conv: Conversation) -> None:
    sink: list[dict[str, Any]] = []
    sm = _manager(tmp_path, sink=sink)
    conv.grow(4)
    assert sm.maybe_update(conv.messages) is None and not sm.path.exists()
    conv.grow(24)
    update = sm.maybe_update(conv.messages)
    assert sm.path == ArtifactStore.for_session(tmp_path, "s1").root / "session-memory" / "summary.md"
    assert sm.path.is_file() and update is not None
    text = sm.path.read_text()
    assert CONSTRAINT in text and "src/file" in text
    assert sink[-1]["type"] == "session_memory_update"
    assert sink[-1]["path"] == "session-memory/summary.md"
    assert sink[-1]["last_summarized_message_id"] == conv.messages[-1].id
    assert set(sink[-1]["sections"]) == set(N.SECTIONS)


def test_extractive_update_fills_sections_from_messages(tmp_path: Path, conv: Conversation) -> None:
    sm = _manager(tmp_path)
    conv.tool_round("read_file", "src/gemm.c", "int main() {}")
    conv.tool_round("edit_file", "src/gemm.c", "ok")
    conv.tool_round("shell", "all", "FAILED test_gemm: AssertionError: 3 != 4", error=True)
    conv.say("Use AVX2 only, please.", "Switched to AVX2.")
    sm.update_session_memory(conv.messages)
    notes = sm.read_notes()
    assert notes.bodies["Session Title"].startswith("Optimize the GEMM kernel")
    assert CONSTRAINT in notes.bodies["Task specification"]
    assert "Use AVX2 only" in notes.bodies["Task specification"]
    assert "src/gemm.c (changed" in notes.bodies["Files and Functions"]
    assert "make test all" in notes.bodies["Workflow"]
    assert "AssertionError" in notes.bodies["Errors & Corrections"]
    assert "edit_file src/gemm.c → ok" in notes.bodies["Worklog"]
    assert "Switched to AVX2" in notes.bodies["Current State"]


def test_model_update_changes_only_section_bodies(tmp_path: Path, conv: Conversation) -> None:
    sm = _manager(tmp_path)
    conv.grow(2)
    sm.update_session_memory(conv.messages)
    before = sm.read_notes()
    damaged = (
        "```markdown\n# session title\nGEMM tuning\n\n# Current State\n_I rewrote this description_\n"
        "Tiling the inner loop.\n\n# Task specification\nOptimize the kernel.\n\n"
        "# Worklog\n- tried 8x8 tiles\n```"
    )
    model = FakeModel(damaged)
    sm.model = model
    conv.grow(2)
    update = sm.update_session_memory(conv.messages)
    text = sm.path.read_text()
    for name, desc in N.SECTION_DESCRIPTIONS.items():
        assert f"# {name}\n{desc}\n" in text
    assert "I rewrote this description" not in text
    notes = sm.read_notes()
    assert notes.bodies["Session Title"] == "GEMM tuning"
    assert notes.bodies["Current State"] == "Tiling the inner loop."
    assert notes.bodies["Files and Functions"] == before.bodies["Files and Functions"]  # missing → kept
    assert CONSTRAINT in notes.bodies["Task specification"]  # dropped by the model → restored
    assert update is not None and update.source == "model"
    assert any("restored section" in r for r in update.repairs)
    assert any("user constraint" in r for r in update.repairs)
    assert "<notes>" in message_text(model.requests[0][1]) and "<transcript>" in message_text(model.requests[0][1])


def test_model_failure_falls_back_to_extractive_update(tmp_path: Path, conv: Conversation) -> None:
    def boom(request: list[BaseMessage]) -> str:
        raise RuntimeError("503 upstream")

    sm = _manager(tmp_path, model=FakeModel(boom))
    conv.grow(2)
    update = sm.update_session_memory(conv.messages)
    assert update is not None and update.source == "extractive"
    assert "503" in " ".join(update.repairs)
    assert CONSTRAINT in sm.path.read_text()


def test_sections_and_total_stay_within_budget(tmp_path: Path, conv: Conversation) -> None:
    settings = Settings(session_memory={"section_max_tokens": 300, "total_max_tokens": 1_200})
    sm = _manager(tmp_path, settings=settings)
    for _ in range(60):
        conv.tool_round(path=f"src/deep/very/long/path/module_{conv.n}.c")
    sm.update_session_memory(conv.messages)
    notes = sm.read_notes()
    for name in N.SECTIONS:
        assert count_text_tokens(notes.bodies[name]) <= 300, name
    assert count_text_tokens(sm.path.read_text()) <= 1_200
    assert "older entries omitted" in notes.bodies["Worklog"]
    assert CONSTRAINT in notes.bodies["Task specification"]
    assert "module_" in notes.bodies["Worklog"].splitlines()[-1]  # newest entries kept


def test_concurrent_update_requests_none_lost_never_two_at_once(tmp_path: Path, conv: Conversation) -> None:
    model = FakeModel(lambda req: "# Current State\nworking\n", delay=0.05)
    sm = _manager(tmp_path, model=model)
    conv.grow(40)
    all_messages = list(conv.messages)
    snapshots = [all_messages[: 10 * (k + 1)] for k in range(len(all_messages) // 10)] + [all_messages]
    results: list[Any] = []
    threads = [threading.Thread(target=lambda s=s: results.append(sm.update_session_memory(s))) for s in snapshots]
    for t in threads:
        t.start()
        time.sleep(0.005)
    for t in threads:
        t.join(timeout=10)
    assert model.max_active == 1
    assert sm.wait_idle(1)
    assert sm.last_summarized_message_id == all_messages[-1].id
    seen = "\n".join(message_text(r[1]) for r in model.requests)
    for m in all_messages:
        if isinstance(m, ToolMessage):
            assert f"id={m.tool_call_id} " in seen, m.tool_call_id
    assert len(model.requests) < len(snapshots)  # parked requests were merged into trailing runs
    assert any(r is None for r in results)


def test_background_update_is_awaited_by_compaction(tmp_path: Path, conv: Conversation) -> None:
    model = FakeModel(lambda req: "# Current State\nbackground notes\n# Task specification\n" + CONSTRAINT, delay=0.2)
    sm = _manager(tmp_path, model=model, background_updates=True)
    conv.grow(60)
    thread = sm.maybe_update(conv.messages)
    assert isinstance(thread, threading.Thread)
    result = sm.try_compact(conv.messages)
    assert result is not None and "background notes" in result.summary


def _compacted(conv: Conversation, sm: SessionMemoryManager, **kw: Any):
    result = sm.try_compact(conv.messages, **kw)
    assert result is not None
    return result


def test_session_memory_compact_keeps_unsummarized_messages_and_min_tail(tmp_path: Path, conv: Conversation) -> None:
    sm = _manager(tmp_path)
    conv.grow(80)
    sm.update_session_memory(conv.messages)
    covered = len(conv.messages)
    conv.grow(3)
    result = _compacted(conv, sm)
    history = result.new_history()
    validate_view(history)
    assert is_summary_message(history[0])
    assert result.summary_source == "session_memory"
    assert result.boundary_record["summary_source"] == "session_memory"
    assert result.boundary_record["type"] == "compact_boundary"
    kept = result.messages_to_keep
    assert [m.id for m in conv.messages[covered:]] == [m.id for m in kept[-(len(conv.messages) - covered):]]
    kept_tokens = sm.counter.estimate(kept)
    texts = sum(1 for m in kept if isinstance(m, (HumanMessage, AIMessage)) and isinstance(m.content, str) and m.content.strip())
    assert kept_tokens >= Settings().context.compression_preserve_min_tokens or texts >= 5
    assert kept_tokens <= Settings().context.compression_preserve_max_tokens + 1_000
    assert not isinstance(kept[0], ToolMessage)
    assert result.boundary_record["first_kept_id"] == kept[0].id
    assert CONSTRAINT in result.summary


def test_compact_is_none_without_notes_or_when_still_over_threshold(tmp_path: Path, conv: Conversation) -> None:
    sm = _manager(tmp_path)
    conv.grow(40)
    assert sm.try_compact(conv.messages) is None  # no notes yet
    sm.update_session_memory(conv.messages[:20])
    conv.grow(40)  # ~ 20K unsummarized tokens
    assert sm.try_compact(conv.messages, threshold=15_000) is None
    assert sm.try_compact(conv.messages) is not None


def test_compact_never_splits_a_tool_round(tmp_path: Path, conv: Conversation) -> None:
    sm = _manager(tmp_path)
    conv.grow(40)
    sm.update_session_memory(conv.messages[:-1])  # last summarized = an AIMessage with a pending call
    result = _compacted(conv, sm)
    validate_view(result.new_history())
    assert not isinstance(result.messages_to_keep[0], ToolMessage)


def test_resume_restores_summary_and_recent_messages(tmp_path: Path, conv: Conversation) -> None:
    sink: list[dict[str, Any]] = []
    sm = _manager(tmp_path, sink=sink)
    conv.grow(60)
    records = [message_to_record(m) for m in conv.messages]
    sm.update_session_memory(conv.messages)
    records.append(sink[-1])
    written = len(conv.messages)
    conv.grow(4)
    records += [message_to_record(m) for m in conv.messages[written:]]
    result = _compacted(conv, sm)
    records.append(result.boundary_record)
    conv.grow(1)
    records += [message_to_record(m) for m in conv.messages[-2:]]

    notes = load_session_memory(sm.path)
    assert notes is not None and CONSTRAINT in notes
    view = build_resume_view(records, session_memory=notes)
    ids = [m.id for m in view.messages]
    assert ids[0] == result.summary_messages[0].id
    expected_tail = [m.id for m in result.messages_to_keep] + [m.id for m in conv.messages[-2:]]
    assert ids[-len(expected_tail):] == expected_tail
    assert any(CONSTRAINT in message_text(m) for m in view.messages[:2])

    resumed = SessionMemoryManager(sm.path)
    resumed.restore(records)
    assert resumed.last_summarized_message_id == sm.last_summarized_message_id
    assert resumed.initialized
    assert resumed.tool_calls_since_update(view.messages) == 5  # the 4 + 1 rounds after the update


@pytest.mark.parametrize("with_model", [False, True])
def test_user_constraint_survives_five_session_memory_compactions(tmp_path: Path, with_model: bool, conv: Conversation) -> None:
    # A forgetful model: rewrites the notes without the task specification at all.
    model = FakeModel(lambda req: "# Current State\nstill optimizing\n# Worklog\n- more steps\n") if with_model else None
    sm = _manager(tmp_path, model=model)
    history: list[BaseMessage] = list(conv.messages)
    sources = []
    for _ in range(5):
        start = len(conv.messages)
        conv.grow(60)
        history += conv.messages[start:]
        sm.update_session_memory(history)
        start = len(conv.messages)
        conv.grow(2)
        history += conv.messages[start:]
        result = sm.try_compact(history)
        assert result is not None
        sources.append(result.summary_source)
        history = result.new_history()
        validate_view(history)
        assert not any(m.id == "u0" for m in history)  # the turn-1 message itself is gone
    assert sources == ["session_memory"] * 5
    view_text = "\n".join(message_text(m) for m in history)
    assert CONSTRAINT in view_text


def test_restore_from_session_memory_boundary_when_update_record_is_before_it(tmp_path: Path, conv: Conversation) -> None:
    sm = _manager(tmp_path)
    conv.grow(60)
    sm.update_session_memory(conv.messages)
    conv.grow(3)
    result = _compacted(conv, sm)
    assert result.boundary_record["last_summarized_message_id"] == sm.last_summarized_message_id
    resumed = SessionMemoryManager(sm.path)
    resumed.restore([result.boundary_record])  # records from the last boundary on
    assert resumed.last_summarized_message_id == sm.last_summarized_message_id and resumed.initialized
    fresh = SessionMemoryManager(sm.path)
    fresh.restore([])
    assert fresh.initialized and fresh.last_summarized_message_id is None  # notes exist on disk


def test_notes_shown_on_resume_only_when_they_add_to_the_summary(tmp_path: Path, conv: Conversation) -> None:
    sm = _manager(tmp_path)
    update_rec = {"type": "session_memory_update", "last_summarized_message_id": "x"}
    sm_boundary = {"type": "compact_boundary", "summary_source": "session_memory"}
    llm_boundary = {"type": "compact_boundary", "summary_source": "llm"}
    assert session_memory_for_resume(sm.path, [update_rec]) is None  # no notes yet
    conv.grow(3)
    sm.update_session_memory(conv.messages)
    assert session_memory_for_resume(sm.path, [update_rec, sm_boundary]) is None  # the summary is the notes
    assert session_memory_for_resume(sm.path, [sm_boundary, update_rec]) is not None  # notes moved on
    assert session_memory_for_resume(sm.path, [update_rec, llm_boundary]) is not None
    assert session_memory_for_resume(sm.path, []) is not None


def test_works_with_a_langchain_chat_model(tmp_path: Path, conv: Conversation) -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    model = FakeListChatModel(responses=["# Session Title\nGEMM\n# Current State\nprofiling\n"])
    sm = _manager(tmp_path, model=model)
    conv.grow(2)
    update = sm.update_session_memory(conv.messages)
    assert update is not None and update.source == "model"
    notes = sm.read_notes()
    assert notes.bodies["Session Title"] == "GEMM" and notes.bodies["Current State"] == "profiling"


def test_messages_parked_during_a_failed_update_go_into_the_next_one(tmp_path: Path, conv: Conversation) -> None:
    sm = _manager(tmp_path)
    conv.grow(4)
    calls = {"n": 0}
    real_write = sm._write

    def failing_write(text: str) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            sm.update_session_memory(conv.messages)  # arrives while the first update runs: parked
            raise OSError("disk full")
        real_write(text)

    sm._write = failing_write  # type: ignore[method-assign]
    with pytest.raises(OSError):
        sm.update_session_memory(conv.messages[:4])
    assert sm.wait_idle(0.5)
    update = sm.update_session_memory([])
    assert update is not None and update.last_summarized_message_id == conv.messages[-1].id


# ── which messages count as conversation text for the triggers (mutants that survived: docs/mutation.md) ──


def test_only_user_and_assistant_text_counts():
    assert is_text_message(HumanMessage("fix the parser"))
    assert not is_text_message(HumanMessage("   "))
    assert not is_text_message(ToolMessage("42 lines of output", tool_call_id="c1"))
    assert not is_text_message(summary_message("b1", "earlier work", pre_tokens=1, post_tokens=1, reason="auto"))


def test_block_content_counts_when_a_block_has_text():
    assert is_text_message(AIMessage(content=[{"type": "text", "text": "done"}]))
    assert is_text_message(AIMessage(content=["plain string block"]))
    assert not is_text_message(AIMessage(content=[{"type": "text", "text": "  "}, " "]))
    assert not is_text_message(AIMessage(content=[{"type": "tool_use", "id": "c1", "name": "x", "input": {}}]))
