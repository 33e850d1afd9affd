"""Property tests: memory edits never rewrite lines they did not change."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mtagent import paths
from mtagent.context.static import memory

LINES = st.sampled_from([
    "# Rules", "## Agent Memories", "## Other", "- a rule", "* star item", "  - nested", "text line",
    "", "~~~", "- ~~old~~ (obsolete)", "### Deeper", "1. numbered",
])
FILES = st.lists(LINES, max_size=12).map("\n".join) | st.lists(LINES, max_size=12).map(lambda ls: "\n".join(ls) + "\n")
FACTS = st.text(alphabet="abcdefgh XYZ", min_size=1, max_size=20).filter(lambda s: s.strip())


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
