"""The engine on real recorded sessions (skipped where the shared trajectories are absent)."""

from __future__ import annotations

from mtagent.config import Settings
from mtagent.context.compaction import facts as F
from mtagent.context.invariants import validate_view
from mtagent.context.window import ContextWindowManager
from mtagent.replay.formats import load_trajectory

CLAUDE_TOOLS = ["Read", "Grep", "Glob", "Bash", "Edit", "Write", "TaskOutput"]


def test_a_real_claude_code_session_stays_valid_and_keeps_its_goal(trajectories):
    trajectory = load_trajectory(trajectories / "claude-code" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl")
    messages = trajectory.messages
    settings = Settings(
        context={"token_limit": 32_000, "auto_compact_threshold": 0.75,
                 "compression_preserve_min_tokens": 3_000, "compression_preserve_max_tokens": 8_000},
        microcompact={"compactable_tools": CLAUDE_TOOLS},
    )
    sink: list[dict] = []
    manager = ContextWindowManager(settings, sink=sink)
    history: list = []
    fed = 0
    compactions = []
    for index in trajectory.model_calls:
        history = history + messages[fed:index]
        fed = index
        prepared = manager.prepare(history, tools_tokens=1_000)
        validate_view(prepared.messages)
        if prepared.compaction is not None:
            compactions.append(prepared.compaction)
            assert prepared.compaction.post_tokens <= settings.auto_compact_threshold_tokens()
        history = prepared.history
    assert len(compactions) >= 2
    goal = F.extract_facts(messages[:1]).goal
    assert F.mentions_goal(F.normalize(compactions[-1].summary), goal)
    last = compactions[-1]
    first_kept = last.boundary_record["first_kept_id"]
    cut = next(i for i, m in enumerate(messages) if m.id == first_kept) if first_kept else len(messages)
    changed_before = F.extract_facts(messages[:cut]).files_changed
    final = F.normalize(last.summary)
    assert changed_before and all(F.mentions(final, path) for path in changed_before)
    assert {r["type"] for r in sink} >= {"compact_boundary", "context_plan"}
