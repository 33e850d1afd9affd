"""Optional end-of-turn memory extraction with a scripted model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from mtagent import paths
from mtagent.config import Settings
from mtagent.context.static import memory
from mtagent.context.static.memory_extract import MemoryExtractor, extract_memories, parse_proposed_facts
from mtagent.context.tokens import count_text_tokens, message_text

ON = Settings(memory={"auto_extract": True})


class Scripted:
    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.requests: list[list[BaseMessage]] = []

    def invoke(self, request: list[BaseMessage], *a: Any, **k: Any) -> AIMessage:
        self.requests.append(request)
        return AIMessage(self.replies.pop(0))


def _turn(i: int, tool: bool = False) -> list[BaseMessage]:
    msgs: list[BaseMessage] = [HumanMessage(f"question {i}", id=f"h{i}")]
    if tool:
        msgs.append(AIMessage("", id=f"a{i}", tool_calls=[{"id": f"c{i}", "name": "ls", "args": {"path": "."}}]))
        msgs.append(ToolMessage("a b", tool_call_id=f"c{i}", id=f"t{i}"))
    else:
        msgs.append(AIMessage(f"answer {i}", id=f"a{i}"))
    return msgs


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_off_by_default_and_never_calls_the_model(tmp_path: Path) -> None:
    model = Scripted("- something")
    result = extract_memories(model, _turn(1), tmp_path)
    assert not result.ran and model.requests == []


def test_extracts_after_turn_without_tool_calls_into_project_memory_only(tmp_path: Path, mtagent_home: Path) -> None:
    (tmp_path / "src").mkdir()
    count_text_tokens("warm")  # the tokenizer's vocabulary cache is the process's first count, not the extraction's
    before_project, before_home = _snapshot(tmp_path), _snapshot(mtagent_home)
    model = Scripted("- Tests run with `make check`.\n- The user wants answers in English.\nsome chatter")
    result = extract_memories(model, _turn(1), tmp_path, ON)
    assert result.ran and result.added == ["Tests run with `make check`.", "The user wants answers in English."]
    assert _snapshot(tmp_path) == before_project  # nothing written in the project
    memory_dir = paths.project_memory_dir(tmp_path)
    changed = [p for p, data in _snapshot(mtagent_home).items()
               if not p.startswith(str(memory_dir)) and before_home.get(p) != data]
    assert changed == []  # nothing outside the memory folder
    assert memory.memory_file("project", tmp_path).active() == result.added


def test_skipped_after_turn_with_tool_calls(tmp_path: Path) -> None:
    model = Scripted("- x")
    assert not extract_memories(model, _turn(1, tool=True)[:2], tmp_path, ON).ran
    assert model.requests == []


def test_cursor_sends_each_message_once_and_known_facts_are_shown(tmp_path: Path) -> None:
    memory.save_memory("already known fact", "project", tmp_path)
    model = Scripted("NONE", "- already known fact\n- new fact")
    ex = MemoryExtractor(model, tmp_path, ON)
    history = _turn(1)
    assert ex.maybe_extract(history).added == []
    history += _turn(2)
    result = ex.maybe_extract(history)
    assert result.added == ["new fact"] and result.skipped == ["already known fact"]
    second = message_text(model.requests[1][1])
    assert "question 2" in second and "question 1" not in second
    assert "- already known fact" in second


def test_fact_contradicting_a_rule_is_not_saved(tmp_path: Path) -> None:
    (tmp_path / "CONTEXT.md").write_text("Never edit files under tests/.")
    model = Scripted("- Always edit tests to make them pass.\n- Benchmarks live in bench/.")
    result = extract_memories(model, _turn(1), tmp_path, ON)
    assert result.added == ["Benchmarks live in bench/."]
    assert result.skipped == ["Always edit tests to make them pass."]


def test_parse_proposed_facts_limits_and_none() -> None:
    assert parse_proposed_facts("NONE", 5) == []
    assert parse_proposed_facts("- a\n- b\n- c", 2) == ["a", "b"]
    assert parse_proposed_facts("* a  b\n- a  b", 5) == ["a b"]
