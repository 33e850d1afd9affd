"""Long-term memory: the Agent Memories section, the project MEMORY.md, duplicates, obsolete facts; as
properties, memory edits never rewrite lines they did not change."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mtagent import paths
from mtagent.context.static import memory
from mtagent.errors import UsageError

LINES = st.sampled_from([
    "# Rules", "## Agent Memories", "## Other", "- a rule", "* star item", "  - nested", "text line",
    "", "~~~", "- ~~old~~ (obsolete)", "### Deeper", "1. numbered",
])
FILES = st.lists(LINES, max_size=12).map("\n".join) | st.lists(LINES, max_size=12).map(lambda ls: "\n".join(ls) + "\n")
FACTS = st.text(alphabet="abcdefgh XYZ", min_size=1, max_size=20).filter(lambda s: s.strip())


def test_global_fact_creates_section_and_keeps_rest_of_file_byte_identical() -> None:
    ctx = paths.global_context_path()
    ctx.parent.mkdir(parents=True, exist_ok=True)
    original = "# My rules\r\n\r\n- answer in English\r\nno trailing newline"
    ctx.write_bytes(original.encode())
    memory.save_memory("prefers uv over pip", "global")
    data = ctx.read_bytes().decode()
    assert data.startswith(original)
    assert data.endswith("## Agent Memories\r\n\r\n- prefers uv over pip\r\n")
    assert [e.text for e in memory.list_memories("global")] == ["prefers uv over pip"]


def test_global_fact_goes_after_last_item_of_existing_section() -> None:
    ctx = paths.global_context_path()
    ctx.parent.mkdir(parents=True, exist_ok=True)
    ctx.write_text("# Rules\n\n## Agent Memories\n\n- one\n- two\n\n## Later\n\n- not a memory\n")
    memory.save_memory("three")
    assert ctx.read_text() == "# Rules\n\n## Agent Memories\n\n- one\n- two\n- three\n\n## Later\n\n- not a memory\n"
    assert [e.text for e in memory.list_memories("global")] == ["one", "two", "three"]


def test_duplicate_fact_is_stored_once_ignoring_case_and_spacing() -> None:
    first = memory.save_memory("Tests run with  uv run pytest", "global")
    again = memory.save_memory("tests run with uv run pytest.", "global")
    assert first.added and not again.added
    assert len(memory.list_memories("global")) == 1


def test_project_memory_lives_in_memory_index(tmp_path: Path) -> None:
    memory.save_memory("build with make -j8", "project", tmp_path)
    index = paths.project_memory_dir(tmp_path) / "MEMORY.md"
    assert index.is_file()
    assert "- build with make -j8\n" in index.read_text()
    assert memory.list_memories("global") == []
    assert memory.load_memory_text("project", tmp_path, 200).endswith("- build with make -j8")


def test_remove_by_number_and_by_text(tmp_path: Path) -> None:
    for fact in ("alpha fact", "beta fact", "gamma fact"):
        memory.save_memory(fact, "project", tmp_path)
    assert memory.remove_memory(2, "project", tmp_path).text == "beta fact"
    assert memory.remove_memory("GAMMA fact", "project", tmp_path).text == "gamma fact"
    assert [e.text for e in memory.list_memories("project", tmp_path)] == ["alpha fact"]


def test_ambiguous_or_missing_selector_is_a_usage_error() -> None:
    memory.save_memory("use ruff for lint")
    memory.save_memory("use ruff for format")
    with pytest.raises(UsageError, match="remove by number"):
        memory.remove_memory("use ruff")
    with pytest.raises(UsageError, match="no global memory number 9"):
        memory.remove_memory(9)
    with pytest.raises(UsageError, match="no global memory matches"):
        memory.remove_memory("something else")


def test_obsolete_fact_is_listed_but_not_injected(tmp_path: Path) -> None:
    memory.save_memory("db is postgres 14", "global")
    memory.save_memory("db is postgres 16", "global")
    memory.mark_memory_obsolete(1, "global")
    text = paths.global_context_path().read_text()
    assert "- ~~db is postgres 14~~ (obsolete)\n" in text
    assert memory.memory_file("global").active() == ["db is postgres 16"]
    assert "postgres 14" not in memory.strip_obsolete_memories(text)
    assert "postgres 16" in memory.strip_obsolete_memories(text)


def test_adding_an_obsolete_fact_again_reactivates_it() -> None:
    memory.save_memory("ci uses github actions")
    memory.mark_memory_obsolete("ci uses github actions")
    result = memory.save_memory("CI uses GitHub Actions")
    assert result.reactivated and not result.added
    assert memory.memory_file("global").active() == ["ci uses github actions"]


def test_hand_edits_are_respected_and_untouched_lines_keep_their_bytes(tmp_path: Path) -> None:
    memory.save_memory("first", "project", tmp_path)
    index = paths.project_memory_dir(tmp_path) / "MEMORY.md"
    edited = index.read_text() + "*   hand written  fact \n\nSome prose a person added.\n"
    index.write_text(edited)
    assert [e.text for e in memory.list_memories("project", tmp_path)] == ["first", "hand written  fact"]
    memory.save_memory("second", "project", tmp_path)
    after = index.read_text()
    assert "*   hand written  fact \n" in after
    assert after.endswith("- second\n\nSome prose a person added.\n")


def test_project_index_beyond_line_limit_is_not_loaded(tmp_path: Path) -> None:
    for i in range(12):
        memory.save_memory(f"fact number {i}", "project", tmp_path)
    loaded = memory.load_memory_text("project", tmp_path, index_max_lines=8)
    assert "fact number 0" in loaded and "fact number 11" not in loaded
    assert len(memory.memory_file("project", tmp_path, index_max_lines=8).active()) < 12


def test_empty_fact_is_refused() -> None:
    with pytest.raises(UsageError, match="non-empty fact"):
        memory.save_memory("   \n ")


def test_multiline_fact_becomes_one_line() -> None:
    memory.save_memory("line one\nline two")
    assert memory.list_memories("global")[0].text == "line one line two"


def test_injected_project_memory_omits_the_generated_header(tmp_path: Path) -> None:
    memory.save_memory("fact one", "project", tmp_path)
    index = paths.project_memory_dir(tmp_path) / "MEMORY.md"
    index.write_text(index.read_text() + "See [testing](testing.md) for test notes.\n")
    loaded = memory.load_memory_text("project", tmp_path, 200)
    assert loaded == "- fact one\nSee [testing](testing.md) for test notes."


def _is_subsequence(small: list[str], big: list[str]) -> bool:
    it = iter(big)
    return all(any(line == other for other in it) for line in small)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(original=FILES, fact=FACTS)
def test_add_keeps_every_existing_line_and_is_idempotent(original: str, fact: str) -> None:
    ctx = paths.global_context_path()
    ctx.parent.mkdir(parents=True, exist_ok=True)
    ctx.write_text(original)
    memory.save_memory(fact, "global")
    after = ctx.read_text()
    old_lines = original.split("\n")
    if old_lines and old_lines[-1] == "":
        old_lines.pop()
    assert _is_subsequence(old_lines, after.split("\n"))
    assert memory.clean_fact(fact) in [e.text for e in memory.list_memories("global")]
    assert not memory.save_memory(f"  {fact.upper()} ", "global").added
    assert ctx.read_text() == after


@settings(max_examples=60, deadline=None)
@given(prefix=st.lists(LINES.filter(lambda l: not l.startswith("#")), max_size=5),
       items=st.lists(FACTS, min_size=1, max_size=4, unique_by=memory.normalize_fact),
       suffix=st.lists(st.sampled_from(["## Later", "- not memory", "", "prose"]), max_size=4),
       fact=FACTS)
def test_add_then_remove_restores_the_file_byte_for_byte(prefix: list[str], items: list[str],
                                                          suffix: list[str], fact: str) -> None:
    if any(memory.normalize_fact(fact) == memory.normalize_fact(i) for i in items):
        return
    body = [*prefix, "## Agent Memories", *(f"- {memory.clean_fact(i)}" for i in items), *suffix]
    original = "\n".join(body) + "\n"
    ctx = paths.global_context_path()
    ctx.parent.mkdir(parents=True, exist_ok=True)
    ctx.write_text(original)
    memory.save_memory(fact, "global")
    assert ctx.read_text() != original
    memory.remove_memory(memory.clean_fact(fact), "global")
    assert ctx.read_text() == original
