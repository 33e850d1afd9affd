"""A memory that contradicts a project rule: the rule wins, and the plan records the conflict."""

from __future__ import annotations

from langchain_core.messages import HumanMessage

from mtagent.config import Settings
from mtagent.context.static.authority import Authority, AuthorityItem, detect_conflicts
from mtagent.context.window import ContextWindowManager


def test_conflicts_from_the_static_context_are_recorded_in_the_plan():
    items = [
        AuthorityItem("rule:CONTEXT.md:3", Authority.PROJECT_RULES, "Never run the benchmarks on the login node."),
        AuthorityItem("memory:global:1", Authority.LONG_TERM_MEMORY, "Always run the benchmarks on the login node."),
    ]
    conflicts = detect_conflicts(items)
    assert conflicts and conflicts[0].winner == "rule:CONTEXT.md:3"

    sink: list[dict] = []
    manager = ContextWindowManager(Settings(), sink=sink)
    prepared = manager.prepare([HumanMessage("benchmark the kernel", id="h1")], conflicts=conflicts)
    assert prepared.plan.conflicts == conflicts
    record = [r for r in sink if r["type"] == "context_plan"][-1]
    assert record["conflicts"][0]["winner"] == "rule:CONTEXT.md:3"
    assert "memory:global:1" in record["conflicts"][0]["losers"]
    assert "Conflicts" in prepared.plan.explain()


def test_a_plan_without_conflicts_records_none():
    sink: list[dict] = []
    ContextWindowManager(Settings(), sink=sink).prepare([HumanMessage("hi", id="h1")])
    assert [r for r in sink if r["type"] == "context_plan"][-1]["conflicts"] == []
