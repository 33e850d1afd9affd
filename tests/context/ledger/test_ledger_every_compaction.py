"""The ledger is carried whole through every kind of compaction — session-memory, full (auto), manual,
reactive and ``/compact from`` — and through microcompact, which never touches a plan call: the plan and
the latest request, and the latest error line until a newer one replaces it, also when the command that
printed it exited 0 (a crash behind ``| tail``). A resumed view reads them back from the boundary's ledger."""

from __future__ import annotations

import json
from pathlib import Path

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from mtagent.config import Settings
from mtagent.context.boundary import summary_message_from_record
from mtagent.context.compaction.microcompact import maybe_time_based_microcompact
from mtagent.context.ledger import current_plan, ledger_from_messages, missing_from, validate_plan
from mtagent.context.session_memory.manager import SessionMemoryManager
from mtagent.context.session_memory.notes import SECTIONS
from mtagent.context.tokens import message_text
from mtagent.context.view import build_resume_view
from mtagent.context.requested_compaction import manual_compact, partial_compact, reactive_compact
from mtagent.context.window import ContextWindowManager
from mtagent.session import schema

PLAN = {"steps": [{"step": "map the modules", "status": "done"}, {"step": "port module 7", "status": "in_progress"},
                  {"step": "write the report", "status": "pending"}], "note": "module 7 blocks the rest"}
LATEST = "Now port module 7 first.\n## Why\nthe release needs it"
FILLER = "lorem ipsum dolor sit amet consectetur " * 60
CRASH = ("Generated app\n** (Mix) Could not start application opentelemetry: exited in: start/2\n"
         "    ** (EXIT) an exception was raised:\n        ** (BadMapError) expected a map, got:\n"
         "            (erts 16.1.1) :erlang.is_map_key/2\n")
ERROR = "** (BadMapError) expected a map, got:"


def _settings() -> Settings:
    return Settings(context={"token_limit": 48_000, "auto_compact_threshold": 15_000,
                             "compression_preserve_min_tokens": 1_000, "compression_preserve_max_tokens": 3_000},
                    microcompact={"size_trigger_fraction": 1.0})


def _history(rounds: int = 40) -> list[BaseMessage]:
    history: list[BaseMessage] = [HumanMessage("TASK: port every module.\nNever edit vendor/.", id="u0"),
                                  AIMessage("Planning.", id="ap", tool_calls=[{"id": "p1", "name": "update_plan", "args": PLAN}]),
                                  ToolMessage("Plan updated: 1/3 done.", tool_call_id="p1", name="update_plan", id="tp"),
                                  HumanMessage(LATEST, id="u1")]
    for i in range(rounds):
        history += [AIMessage("", id=f"a{i}", tool_calls=[{"id": f"c{i}", "name": "read_file",
                                                           "args": {"file_path": f"src/m{i}.py"}}]),
                    ToolMessage(FILLER, tool_call_id=f"c{i}", name="read_file", id=f"t{i}")]
    return history


def _assert_carried(view: list[BaseMessage]) -> None:
    assert not any(m.id in ("ap", "u1") for m in view)  # summarized away: only the hand-off has them
    plan = current_plan(view)
    assert plan == validate_plan(PLAN["steps"], PLAN["note"])
    text = "\n".join(message_text(m) for m in view)
    assert LATEST in text and "TASK: port every module." in text
    assert "- [~] port module 7 (in progress)" in text and "Note: module 7 blocks the rest" in text
    before = ledger_from_messages(_history())
    assert [m for m in missing_from(before, view) if not m.startswith("file")] == []


def test_full_manual_and_reactive_compactions_carry_the_plan() -> None:
    for kind in ("manual", "reactive", "auto"):
        wm = ContextWindowManager(_settings(), sink=[])
        history = _history()
        if kind == "manual":
            result = manual_compact(wm, history)
        elif kind == "reactive":
            result = reactive_compact(wm, history)
        else:
            prepared = wm.prepare(history)
            assert prepared.compaction is not None
            result = prepared.compaction
        _assert_carried(result.new_history())
        assert result.boundary_record["ledger"]["plan"]["steps"][1] == {"step": "port module 7", "status": "in_progress"}
        # resume rebuilds the summary message from the record: the plan comes back as data
        assert current_plan([summary_message_from_record(result.boundary_record)]) == current_plan(result.new_history())


def test_session_memory_compaction_carries_the_plan_and_a_later_full_one_keeps_it(tmp_path: Path) -> None:
    settings = _settings()
    memory = SessionMemoryManager(tmp_path / "summary.md", settings)
    wm = ContextWindowManager(settings, sink=[], session_memory=memory)
    history = _history(10)
    memory.update_session_memory(history)
    history += _history(40)[4 + 20:]
    first = manual_compact(wm, history)
    assert first.summary_source == "session_memory"
    _assert_carried(first.new_history())
    later = first.new_history()
    for i in range(40):
        later += [AIMessage("", id=f"z{i}", tool_calls=[{"id": f"e{i}", "name": "read_file",
                                                         "args": {"file_path": f"lib/n{i}.py"}}]),
                  ToolMessage(FILLER, tool_call_id=f"e{i}", name="read_file", id=f"y{i}")]
    second = manual_compact(wm, later, instructions="keep the plan")  # instructions: a full compaction
    assert second.summary_source != "session_memory"
    _assert_carried(second.new_history())
    notes = memory.read_notes()
    written = [name for name in SECTIONS if notes.bodies.get(name, "").strip()]
    assert len(written) >= 4
    for name in written:  # every notes section the session-memory hand-off had, not only goal/constraints/files
        assert f"# {name}" in second.summary, name


def test_compact_from_and_microcompact_keep_the_plan() -> None:
    wm = ContextWindowManager(_settings(), sink=[])
    history = _history()
    result = partial_compact(wm, history, "a30")
    _assert_carried(result.new_history())
    cleared = maybe_time_based_microcompact(history, 10_000.0, 0.0, settings=_settings().microcompact)
    assert cleared.cleared_ids  # it did clear results, and the plan call stays
    assert current_plan(cleared.messages) == validate_plan(PLAN["steps"], PLAN["note"])


def _view_text(view: list[BaseMessage]) -> str:
    parts = [message_text(m) for m in view]
    parts += [json.dumps(c["args"]) for m in view if isinstance(m, AIMessage) for c in m.tool_calls]
    return "\n".join(parts)


def test_after_a_compaction_the_plan_is_in_the_view_once_live_and_on_resume() -> None:
    history = _history(30)
    newer = {**PLAN, "steps": [*PLAN["steps"][:2], {"step": "write the report", "status": "in_progress"}]}
    history += [AIMessage("Replanning.", id="aq", tool_calls=[{"id": "p2", "name": "update_plan", "args": PLAN},
                                                              {"id": "p3", "name": "update_plan", "args": newer}]),
                ToolMessage("Plan updated.", tool_call_id="p2", name="update_plan", id="tq2"),
                ToolMessage("Plan updated.", tool_call_id="p3", name="update_plan", id="tq3"),
                AIMessage("", id="ar", tool_calls=[{"id": "cr", "name": "read_file", "args": {"file_path": "x.py"}}]),
                ToolMessage("x = 1", tool_call_id="cr", name="read_file", id="tr")]
    wm = ContextWindowManager(_settings(), sink=[])
    result = manual_compact(wm, history)
    live = result.new_history()
    assert any(m.id == "aq" for m in live)  # the plan calls are in the kept tail …
    assert _view_text(live).count("write the report") == 1  # … collapsed: the plan is shown once, in the hand-off
    assert current_plan(live) == validate_plan(newer["steps"], newer["note"])
    records = [schema.message_to_record(m) for m in history] + [result.boundary_record]
    resumed = build_resume_view(records).messages
    assert [(m.id, getattr(m, "tool_calls", None)) for m in resumed] == [
        (m.id, getattr(m, "tool_calls", None)) for m in live if m not in result.attachments]
    assert any(r.get("tool_calls") and r["tool_calls"][0]["args"] == PLAN for r in records)  # the transcript is whole


def _reads(start: int, count: int) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i in range(start, start + count):
        out += [AIMessage("", id=f"a{i}", tool_calls=[{"id": f"c{i}", "name": "read_file",
                                                       "args": {"file_path": f"src/m{i}.ex"}}]),
                ToolMessage(FILLER, tool_call_id=f"c{i}", name="read_file", id=f"t{i}")]
    return out


def _text(view: list[BaseMessage]) -> str:
    return "\n".join(message_text(m) for m in view)


def test_a_crash_line_from_a_command_that_exited_0_survives_two_compactions() -> None:
    wm = ContextWindowManager(_settings(), sink=[])
    history: list[BaseMessage] = [
        HumanMessage("Wire up tracing.", id="u0"),
        AIMessage("Run the tests.", id="ar", tool_calls=[{"id": "s1", "name": "shell",
                                                          "args": {"command": "mix test 2>&1 | tail -50"}}]),
        ToolMessage(CRASH, tool_call_id="s1", name="shell", id="ts"),
        *_reads(0, 20)]
    first = manual_compact(wm, history)
    view = first.new_history()
    assert not any(m.id == "ts" for m in view) and ERROR in _text(view)
    assert first.boundary_record["ledger"]["latest_error"] == ERROR
    second = manual_compact(wm, [*view, *_reads(20, 20)])  # a stretch without any error
    view = second.new_history()
    assert ERROR in _text(view)
    # resume rebuilds the summary from the record: the line comes back as data
    assert ledger_from_messages([summary_message_from_record(second.boundary_record)]).latest_error == ERROR


def test_the_line_is_the_ledger_s_and_the_model_s_part_does_not_repeat_it() -> None:
    """Rendered once, by the engine: the model's part (priced as output) leaves it out, and the
    prompt tells a model that mtagent states it."""
    from mtagent.context.compaction.handoff import compose_handoff
    from mtagent.context.compaction.summarize import ExtractiveSummarizer, handoff_prompt

    messages = [HumanMessage("Wire up tracing.", id="u0"),
                AIMessage("Run the tests.", id="ar", tool_calls=[{"id": "s1", "name": "shell",
                                                                  "args": {"command": "mix test 2>&1 | tail -50"}}]),
                ToolMessage(CRASH, tool_call_id="s1", name="shell", id="ts")]
    part = ExtractiveSummarizer().summarize(messages)
    assert ERROR not in part
    check = compose_handoff(part, messages)
    assert check.summary.count(ERROR) == 1 and f"## Latest error\n{ERROR}" in check.summary
    assert check.complete  # the verifier finds the latest error in the ledger's section
    assert "the latest error line" in " ".join(handoff_prompt().split())
