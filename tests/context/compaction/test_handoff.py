from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from mtagent.context.compaction import facts as F
from mtagent.context.compaction.handoff import verify_handoff


def session():
    return [
        HumanMessage("Port the kernel to the new DMA API.\nnever edit files under tests/", id="h1"),
        AIMessage("Editing.", id="a1", tool_calls=[{"id": "c1", "name": "edit_file", "args": {"file_path": "src/dma.c"}}]),
        ToolMessage("ok", tool_call_id="c1", name="edit_file", id="t1"),
        AIMessage("Build.", id="a2", tool_calls=[{"id": "c2", "name": "shell", "args": {"command": "make"}}]),
        ToolMessage("dma.c:12: error: unknown type dma_desc_t", tool_call_id="c2", name="shell", id="t2", status="error"),
    ]


def test_complete_summary_is_left_unchanged():
    summary = ("## User goal\nPort the kernel to the new DMA API.\n## Hard constraints\n- never edit files under tests/\n"
               "## Files changed\n- src/dma.c\n## Latest verification\nmake: dma.c:12: error: unknown type dma_desc_t")
    check = verify_handoff(summary, session())
    assert check.complete and check.summary == summary


def test_missing_constraint_file_and_error_are_carried():
    check = verify_handoff("## User goal\nPort the kernel to the new DMA API.\n## Next step\ncontinue", session())
    assert not check.complete
    carried = F.parse_handoff(check.summary)[F.SECTION_CARRIED]
    assert "Constraint: never edit files under tests/" in carried
    assert "File changed: src/dma.c" in carried
    assert any(line.startswith("Latest error:") and "dma_desc_t" in line for line in carried)
    assert not any(line.startswith("Goal:") for line in carried)


def test_paraphrased_goal_counts_as_mentioned_but_dropped_goal_is_carried():
    para = verify_handoff("We port the kernel over to the new DMA API now.", session()[:1])
    assert not any(m.startswith("Goal") for m in para.missing)
    dropped = verify_handoff("Work is ongoing.", session()[:1])
    assert any(m.startswith("Goal: Port the kernel") for m in dropped.missing)


def test_constraint_match_ignores_case_and_spacing():
    check = verify_handoff("Port the kernel to the new DMA API. NEVER  edit files under tests/", session()[:1])
    assert check.complete


def test_constraints_of_the_previous_summary_are_required_too():
    previous = "## User goal\nold goal\n## Hard constraints\n- only use C99"
    check = verify_handoff("## User goal\nold goal", [HumanMessage("go on", id="h")], previous_summary=previous)
    assert "Constraint: only use C99" in check.missing


def test_carried_block_is_parsed_back_by_the_next_compaction():
    check = verify_handoff("nothing useful", session())
    found = F.extract_facts([], previous_summary=check.summary)
    assert "never edit files under tests/" in found.constraints
    assert "src/dma.c" in found.files_changed
    assert found.goal.startswith("Port the kernel")
