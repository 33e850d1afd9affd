"""Tier 1 / Tier 2 static context, the system prompt sections, rules and memory as their own `/context` buckets,
and authority conflicts (the word index finds exactly the pairs a brute-force comparison finds)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool

from mtagent import paths
from mtagent.config import Settings
from mtagent.context.budget import Bucket
from mtagent.context.static import memory
from mtagent.context.static.authority import Authority, AuthorityItem, _same_subject, detect_conflicts, directives
from mtagent.context.static.tiers import (
    RuntimeContext,
    StaticContext,
    build_session_context,
    build_system_prompt,
)
from mtagent.context.window import ContextWindowManager

VERBS = ["never", "always", "don't", "use", "avoid", "must"]
WORDS = ["edit", "tests", "redis", "cache", "main", "push", "docs", "kernel", "files"]
LINE = st.builds(lambda v, ws: f"{v} {' '.join(ws)}", st.sampled_from(VERBS),
                 st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
ITEM = st.builds(lambda a, lines: (a, "\n".join(lines)),
                 st.sampled_from([Authority.PROJECT_RULES, Authority.LONG_TERM_MEMORY, Authority.SUMMARY]),
                 st.lists(LINE, min_size=1, max_size=3))


@tool
def read_file(file_path: str) -> str:
    """Read a file with line numbers.

    More detail that should not be in the prompt."""
    return ""


def _static(root: Path) -> StaticContext:
    return StaticContext(root, today=dt.date(2026, 11, 29), os_name="Linux 6.1 (x86_64)")


def test_system_prompt_sections_are_omitted_when_empty() -> None:
    bare = build_system_prompt([], "", RuntimeContext())
    assert "## Tools" not in bare and "## Global context" not in bare and "## Runtime context" not in bare
    full = build_system_prompt([read_file], "Be terse.", RuntimeContext(source_file="k.c", working_directory="/w"))
    assert "## Tools\n- read_file: Read a file with line numbers.\n" in full
    assert "More detail" not in full
    assert "## Global context (~/.mtagent/CONTEXT.md)\nBe terse.\n" in full
    assert "- Source file: k.c\n- Working directory: /w" in full
    assert "Optimization mode" not in full


def test_tool_section_accepts_openai_schema_dicts() -> None:
    prompt = build_system_prompt([{"type": "function", "function": {"name": "grep", "description": "Search."}}], "", None)
    assert "- grep: Search." in prompt


def test_session_context_has_date_os_cwd_and_project_context(tmp_path: Path) -> None:
    msg = build_session_context(tmp_path, today=dt.date(2026, 1, 2), os_name="Linux",
                                project_sections=[("CONTEXT.md", "Kernel project.")])
    text = msg.content
    assert text.startswith("<session_context>\nToday's date: 2026-01-02\nOS: Linux\n")
    assert f"Working directory: {tmp_path}" in text
    assert '<project_context source="CONTEXT.md">\nKernel project.\n</project_context>' in text
    assert text.endswith("</session_context>")


def test_tier1_goes_to_system_prompt_and_tier2_to_session_context(tmp_path: Path) -> None:
    paths.global_context_path().parent.mkdir(parents=True, exist_ok=True)
    paths.global_context_path().write_text("# Global\nReply briefly.\n")
    memory.save_memory("likes tables", "global")
    memory.save_memory("old fact", "global")
    memory.mark_memory_obsolete("old fact", "global")
    memory.save_memory("bench with make bench", "project", tmp_path)
    (tmp_path / "CONTEXT.md").write_text("This project optimizes GEMM kernels.")
    parts = _static(tmp_path).build([read_file], RuntimeContext(optimization_mode="latency"))
    system, session = parts.messages
    assert "Reply briefly." in system.content and "- likes tables" in system.content
    assert "old fact" not in system.content
    assert "Optimization mode: latency" in system.content
    assert "GEMM kernels" not in system.content
    assert "GEMM kernels" in session.content and "bench with make bench" in session.content
    assert "Reply briefly." not in session.content


def test_hand_edit_of_context_file_applies_next_turn(tmp_path: Path) -> None:
    static = _static(tmp_path)
    (tmp_path / "CONTEXT.md").write_text("Rule v1")
    assert "Rule v1" in static.build().session_context.content
    (tmp_path / "CONTEXT.md").write_text("Rule v2")
    assert "Rule v2" in static.build().session_context.content


def test_path_scoped_rule_joins_session_context_once_file_touched(tmp_path: Path) -> None:
    rule = tmp_path / ".mtagent/rules/migrations.md"
    rule.parent.mkdir(parents=True)
    rule.write_text('---\npaths: ["db/migrations/**"]\n---\nMigrations are never edited by hand.\n')
    static = _static(tmp_path)
    assert "Migrations are never" not in static.build().session_context.content
    assert "Migrations are never" in static.build(touched=["db/migrations/0003.sql"]).session_context.content
    assert "Migrations are never" in static.build().session_context.content  # stays for the session


def test_static_messages_are_stable_across_turns_for_caching(tmp_path: Path) -> None:
    (tmp_path / "CONTEXT.md").write_text("stable")
    static = _static(tmp_path)
    a, b = static.build([read_file]), static.build([read_file])
    assert [m.content for m in a.messages] == [m.content for m in b.messages]


def test_directives_polarity_and_subject() -> None:
    (neg,) = directives("- Never edit files under tests/")
    (pos,) = directives("Always edit tests directly.")
    assert neg.polarity == -1 and pos.polarity == 1
    assert neg.subject == pos.subject == frozenset({"edit", "test"})
    (label,) = directives("Decision: use Redis for the cache")
    assert label.polarity == 1 and label.subject == frozenset({"use", "redis", "cache"})
    assert directives("The build takes 3 minutes.") == ()


def test_memory_contradicting_rule_is_a_conflict_and_rule_wins() -> None:
    conflicts = detect_conflicts([
        AuthorityItem("rule:CONTEXT.md", Authority.PROJECT_RULES, "Never edit files under tests/."),
        AuthorityItem("memory:1", Authority.LONG_TERM_MEMORY, "User prefers to edit tests directly"),
        AuthorityItem("memory:2", Authority.LONG_TERM_MEMORY, "Use uv for installs"),
    ])
    assert len(conflicts) == 1
    c = conflicts[0]
    assert c.winner == "rule:CONTEXT.md" and c.losers == ("memory:1",) and c.key == "edit test"
    assert "project_rules wins" in c.reason
    assert c.as_dict()["losers"] == ["memory:1"]


def test_summary_contradicting_rule_is_recorded_and_no_conflict_between_agreeing_items() -> None:
    items = [
        AuthorityItem("rule", Authority.PROJECT_RULES, "Don't use Redis."),
        AuthorityItem("summary", Authority.SUMMARY, "Decided: use Redis for the cache."),
    ]
    assert [c.winner for c in detect_conflicts(items)] == ["rule"]
    agreeing = [AuthorityItem("rule", Authority.PROJECT_RULES, "Never push to main."),
                AuthorityItem("memory", Authority.LONG_TERM_MEMORY, "never push to main")]
    assert detect_conflicts(agreeing) == []


def test_conflicting_memory_is_left_out_of_the_prompt(tmp_path: Path) -> None:
    (tmp_path / "CONTEXT.md").write_text("Never edit files under tests/.")
    memory.save_memory("always edit tests when they fail", "global")
    memory.save_memory("kernels live in src/k", "project", tmp_path)
    memory.save_memory("always edit tests to match output", "project", tmp_path)
    parts = _static(tmp_path).build()
    assert len(parts.conflicts) == 1 and len(parts.conflicts[0].losers) == 2
    assert "always edit tests" not in parts.system.content
    assert "always edit tests" not in parts.session_context.content
    assert "kernels live in src/k" in parts.session_context.content
    assert any("contradicts a rule" in w for w in parts.warnings)


def test_rules_and_memories_get_their_own_buckets_and_nothing_is_counted_twice(tmp_path):
    paths.global_context_path().parent.mkdir(parents=True, exist_ok=True)
    paths.global_context_path().write_text("# Global rules\n\nAlways run the tests before committing.\n",
                                           encoding="utf-8")
    memory.save_memory("The cluster login node is slow; benchmark on compute nodes.", "global")
    memory.save_memory("Kernels live under src/kernels.", "project", project_root=tmp_path)
    (tmp_path / "CONTEXT.md").write_text("# Project\n\nNever edit files under tests/.\n" * 5, encoding="utf-8")

    parts = StaticContext(tmp_path).build([], RuntimeContext(working_directory=str(tmp_path)))
    manager = ContextWindowManager(Settings())
    plan = manager.prepare([HumanMessage("optimise the gemm kernel", id="h1")], system=parts.messages).plan
    buckets = plan.buckets.tokens
    assert buckets[Bucket.RULES] > 0 and buckets[Bucket.MEMORY] > 0
    assert buckets[Bucket.SYSTEM] > 0 and buckets[Bucket.SESSION_CONTEXT] > 0
    static_total = sum(manager.counter.message_tokens(m) for m in parts.messages)
    assert sum(buckets[b] for b in (Bucket.SYSTEM, Bucket.RULES, Bucket.MEMORY, Bucket.SESSION_CONTEXT)) == static_total


def _brute(items: list[AuthorityItem]) -> set[tuple[str, str, tuple[str, ...]]]:
    found: dict[tuple[str, str], set[str]] = {}
    for a in items:
        for b in items:
            if a.authority <= b.authority:
                continue
            for ad in directives(a.text):
                for bd in directives(b.text):
                    if ad.polarity != bd.polarity and (shared := _same_subject(ad.subject, bd.subject)):
                        found.setdefault((" ".join(sorted(shared)), a.id), set()).add(b.id)
    return {(k, w, tuple(sorted(ls))) for (k, w), ls in found.items()}


@settings(max_examples=80, deadline=None)
@given(st.lists(ITEM, min_size=2, max_size=6))
def test_indexed_detection_equals_brute_force(raw: list[tuple[Authority, str]]) -> None:
    items = [AuthorityItem(f"i{n}", a, text) for n, (a, text) in enumerate(raw)]
    got = {(c.key, c.winner, c.losers) for c in detect_conflicts(items)}
    assert got == _brute(items)
