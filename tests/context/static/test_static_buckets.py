"""`/context` shows rules and memory as their own buckets, split out of the static messages."""

from __future__ import annotations

from langchain_core.messages import HumanMessage

from mtagent import paths
from mtagent.config import Settings
from mtagent.context.static import memory
from mtagent.context.budget import Bucket
from mtagent.context.static.tiers import RuntimeContext, StaticContext
from mtagent.context.window import ContextWindowManager


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
