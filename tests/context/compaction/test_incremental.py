"""Incremental hand-offs (merge by section) and the facts every compaction must keep (the verifier carries
what a summary dropped)."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from mtagent.context.compaction import facts as F
from mtagent.context.boundary import summary_message
from mtagent.context.compaction.handoff import compose_handoff, verify_handoff
from mtagent.context.compaction.incremental import merge_handoffs
from mtagent.context.compaction.summarize import ExtractiveSummarizer

PREVIOUS = """## User goal
Port the parser to the new AST.

## Hard constraints
- never edit files under tests/

## Current state
- reading the lexer

## Key facts
- lexer.py has 3 entry points (source: read_file src/lexer.py)

## Files read
- src/lexer.py

## Files changed
- src/parser.py — first draft

## Failed attempts
(none)

## Latest verification
`pytest -q` failed: AssertionError: 3 != 4

## Next step
fix the count

## Carried facts
- Latest error: shell: pytest: AssertionError: 3 != 4"""

DELTA = """## User goal
Also update the docs.

## Hard constraints
- only touch docs/ and src/

## Current state
- docs updated

## Key facts
(none)

## Files read
- docs/ast.md

## Files changed
- src/parser.py — second pass, counts fixed
- docs/ast.md — new section

## Failed attempts
(none)

## Latest verification
(none)

## Next step
run the docs build"""


def test_merge_keeps_the_goal_and_unions_constraints_and_files():
    merged = F.parse_handoff(merge_handoffs(PREVIOUS, DELTA))
    assert merged[F.SECTION_GOAL][0] == "Port the parser to the new AST."
    assert "Also update the docs." in merged[F.SECTION_GOAL]  # a later request
    assert merged[F.SECTION_CONSTRAINTS] == ["never edit files under tests/", "only touch docs/ and src/"]
    assert merged[F.SECTION_FILES_CHANGED] == ["src/parser.py — second pass, counts fixed", "docs/ast.md — new section"]
    assert merged[F.SECTION_FILES_READ] == ["src/lexer.py", "docs/ast.md"]
    assert merged[F.SECTION_STATE] == ["docs updated"]
    assert merged[F.SECTION_NEXT] == ["run the docs build"]
    # the delta says nothing about verification: the previous result stands
    assert merged[F.SECTION_VERIFICATION] == ["`pytest -q` failed: AssertionError: 3 != 4"]
    assert F.SECTION_CARRIED not in merged


def test_merge_without_a_previous_hand_off_is_the_delta():
    assert merge_handoffs(None, DELTA) == DELTA
    assert merge_handoffs("  ", DELTA) == DELTA


def test_the_verifier_re_carries_what_the_merge_dropped():
    merged = merge_handoffs(PREVIOUS, DELTA.replace("`", ""))
    check = verify_handoff(merged, [], previous_summary=PREVIOUS)
    assert "never edit files under tests/" in check.summary
    assert "AssertionError: 3 != 4" in check.summary


def test_a_merged_sheet_can_be_merged_again():
    once = merge_handoffs(PREVIOUS, DELTA)
    twice = F.parse_handoff(merge_handoffs(once, "## User goal\n(not stated)\n\n## Files changed\n- setup.cfg — pin"))
    assert twice[F.SECTION_GOAL][0] == "Port the parser to the new AST."
    assert twice[F.SECTION_FILES_CHANGED][-1] == "setup.cfg — pin"
    assert "only touch docs/ and src/" in twice[F.SECTION_CONSTRAINTS]


def test_files_written_by_shell_commands_are_files_changed():
    assert F.shell_written_files("cat > repro.py << 'EOF'\nprint(1)\nEOF") == ["repro.py"]
    assert F.shell_written_files("sed -i 's/a/b/' django/db/models.py && python x.py") == ["django/db/models.py"]
    assert F.shell_written_files("echo x | tee -a notes.md; ls > /dev/null 2>&1") == ["notes.md"]
    assert F.shell_written_files("grep -n foo src/a.py 2>&1 | head") == []
    msgs = [
        HumanMessage("fix it", id="u"),
        AIMessage("write a repro", id="a", tool_calls=[
            {"id": "c1", "name": "bash", "args": {"command": "cat > repro_case.py << 'EOF'\nx\nEOF"}}]),
        ToolMessage("", tool_call_id="c1", id="t"),
    ]
    found = F.extract_facts(msgs)
    assert "repro_case.py" in found.files_changed
    check = verify_handoff("## User goal\nfix it", msgs)
    assert "File changed: repro_case.py" in check.summary


def test_the_latest_error_is_a_real_error_line_not_source_text():
    text = "  12→    raise ValueError('bad')\nsrc/x.py:40: # FAILED case\nTraceback (most recent call last):\n" \
           "KeyError: 'missing'\n"
    assert F.error_line(text) == "KeyError: 'missing'"
    assert F.error_line("  12→    raise ValueError('bad')\n# Error: in a comment") == ""
    msgs = [
        HumanMessage("run the tests", id="u"),
        AIMessage("", id="a", tool_calls=[{"id": "c1", "name": "Read", "args": {"file_path": "log.txt"}}]),
        ToolMessage("ok\nerror: undefined function get/2 (expected Foo to define it)\nmore", tool_call_id="c1", id="t"),
    ]
    found = F.extract_facts(msgs)
    assert found.latest_error_line == "error: undefined function get/2 (expected Foo to define it)"
    # an extractive sheet that mentions only part of the line does not pass: the full line is carried
    check = verify_handoff("## User goal\nrun the tests\n\nundefined function get/2", msgs)
    assert "error: undefined function get/2 (expected Foo to define it)" in check.summary


def test_an_elixir_exception_line_is_the_latest_error_not_source_text():
    """Elixir prints ``** (XError) …``: not a comment, but the error a fix is judged against."""
    text = ("error: undefined function get/2\n  1) test mount (ReviewTest)\n"
            "     ** (RuntimeError) no :secret_key_base configuration found in Endpoint.\n"
            "     stacktrace:\n       (phoenix 1.8.3) lib/phoenix/token.ex:266: Token.key/1\n")
    assert F.error_line(text) == "** (RuntimeError) no :secret_key_base configuration found in Endpoint."
    assert F.error_line(" * Error: in a block comment\n**Error:** a markdown heading") == ""


def test_extractive_delta_then_merge_keeps_the_first_goal():
    task = [HumanMessage("Port the parser. never edit tests/", id="u1")]
    first = compose_handoff(ExtractiveSummarizer().summarize(task), task).summary
    later = [summary_message("b1", first, pre_tokens=1, post_tokens=1, reason="auto"),
             HumanMessage("now the docs", id="u2")]
    delta = ExtractiveSummarizer().summarize(later)
    merged = F.parse_handoff(compose_handoff(merge_handoffs(first, delta), later, previous_summary=first).summary)
    assert merged[F.SECTION_GOAL][0].startswith("Port the parser.")
    assert merged[F.SECTION_LAST_REQUEST] == ["now the docs"]


def test_a_carried_section_stands_before_the_delta_s_fresh_value_and_is_named_earlier():
    """A setting changed between two hand-offs: the notes' old value is carried (nothing is lost) but
    before the delta's new one and named as earlier — eval's b29-changed read the stale value, which
    stood below the fresh one."""
    previous = "## Key results\n- QUEUE_DEPTH = 7057 (read from config/queue.py)\n"
    delta = "## Key facts\n- QUEUE_DEPTH = 7511 (after the migration)\n"
    merged = merge_handoffs(previous, delta)
    assert merged.index("7057") < merged.index("7511")
    assert "## Key results (earlier)" in merged and "## Key facts" in merged
    again = merge_handoffs(merged, "## Next step\n- write the answer\n")
    assert "(earlier) (earlier)" not in again and again.index("7057") < again.index("7511")


def test_a_carried_ledger_section_keeps_its_heading_so_the_engine_renders_it_once():
    """The plan (a ledger section the engine renders afresh) is never carried as '(earlier)': the hand-off
    would show two plans (eval's plan tasks wrote every stage twice)."""
    from mtagent.context.ledger.render import SECTION_RULES

    previous = f"## Plan\n- audit quartz (done)\n\n## {SECTION_RULES}\n- CONTEXT.md\n\n## Key results\n- X = 1\n"
    merged = merge_handoffs(previous, "## Next step\n- go on\n")
    assert "## Plan (earlier)" not in merged and f"## {SECTION_RULES} (earlier)" not in merged
    assert "## Key results (earlier)" in merged


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
