"""Session memory through the ContextWindowManager: used first for auto compaction, and the
static context (rules, Tier 1/2) survives every compaction because it is never history."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from mtagent.config import Settings
from mtagent.context.invariants import validate_view
from mtagent.context.session_memory.manager import SessionMemoryManager
from mtagent.context.static.tiers import StaticContext
from mtagent.context.tokens import message_text
from mtagent.context.window import ContextWindowManager
from mtagent.session.artifacts import ArtifactStore

CONSTRAINT = "never edit files under tests/"
RULE = "Kernels must stay bit-exact with the reference implementation."
FILLER = "lorem ipsum dolor sit amet consectetur " * 60


def _settings(**session_memory: Any) -> Settings:
    # size-triggered microcompact off: this test is about compaction, not clearing
    return Settings(context={"token_limit": 48_000, "auto_compact_threshold": 15_000}, microcompact={"size_trigger_fraction": 1.0},
                    session_memory=session_memory)


def _run(tmp_path: Path, sm: SessionMemoryManager | None, turns: int) -> tuple[list[Any], list[dict[str, Any]],
                                                                             list[BaseMessage], list[BaseMessage]]:
    (tmp_path / "CONTEXT.md").write_text(RULE)
    static = StaticContext(tmp_path, today=dt.date(2026, 11, 29), os_name="Linux")
    sink: list[dict[str, Any]] = []
    settings = sm.settings if sm is not None else _settings()
    wm = ContextWindowManager(settings, sink=sink, session_memory=sm)
    history: list[BaseMessage] = [HumanMessage(f"Speed up the GEMM kernel; {CONSTRAINT}.", id="u0")]
    compactions = []
    sent: list[BaseMessage] = []
    for turn in range(turns):
        for r in range(3):
            cid = f"c{turn}_{r}"
            history.append(AIMessage("", id=f"a{turn}_{r}",
                                     tool_calls=[{"id": cid, "name": "read_file", "args": {"file_path": f"src/k{turn}.c"}}]))
            history.append(ToolMessage(FILLER, tool_call_id=cid, name="read_file", id=f"t{turn}_{r}"))
        history.append(AIMessage(f"step {turn} done", id=f"a{turn}_end"))
        prepared = wm.prepare(history, system=static.build().messages)
        history = prepared.history
        sent = prepared.messages
        validate_view(sent[2:])
        if prepared.compaction is not None:
            compactions.append(prepared.compaction)
        history.append(HumanMessage(f"continue {turn}", id=f"h{turn}"))
    return compactions, sink, history, sent


def test_auto_compaction_uses_session_memory_first(tmp_path: Path) -> None:
    store = ArtifactStore.for_session(tmp_path, "s-engine")
    sm = SessionMemoryManager(store.session_memory_path, _settings())
    compactions, sink, history, sent = _run(tmp_path, sm, turns=40)
    assert len(compactions) >= 5
    assert {c.summary_source for c in compactions} == {"session_memory"}
    boundaries = [r for r in sink if r["type"] == "compact_boundary"]
    assert len(boundaries) == len(compactions)
    assert all(b["summary_source"] == "session_memory" for b in boundaries)
    assert sm.path.is_file() and CONSTRAINT in sm.path.read_text()
    view = "\n".join(message_text(m) for m in sent)
    assert CONSTRAINT in view  # stated in turn 1, still in the view after 5+ compactions
    assert not any(m.id == "u0" for m in history)


def test_without_session_memory_notes_the_engine_falls_back_to_full_compact(tmp_path: Path) -> None:
    store = ArtifactStore.for_session(tmp_path, "s-off")
    sm = SessionMemoryManager(store.session_memory_path, _settings(enabled=False))
    compactions, _, _, _ = _run(tmp_path, sm, turns=20)
    assert compactions and all(c.summary_source != "session_memory" for c in compactions)
    assert not sm.path.exists()


def test_rules_and_tier2_context_survive_every_compaction(tmp_path: Path) -> None:
    store = ArtifactStore.for_session(tmp_path, "s-rules")
    sm = SessionMemoryManager(store.session_memory_path, _settings())
    compactions, _, history, sent = _run(tmp_path, sm, turns=40)
    assert len(compactions) >= 5
    system, session_context = sent[0], sent[1]
    assert "<session_context>" in message_text(session_context) and RULE in message_text(session_context)
    assert "You are mtagent" in message_text(system)
    assert not any(RULE in message_text(m) for m in history)  # never part of the summarized history
