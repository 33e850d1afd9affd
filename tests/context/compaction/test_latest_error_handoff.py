"""The latest error line rides every hand-off until a newer one replaces it — also when the command
that printed it exited 0 (a crash behind ``| tail``), so no failed command or verification carries it."""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from mtagent.config import Settings
from mtagent.context.boundary import summary_message_from_record
from mtagent.context.ledger import ledger_from_messages
from mtagent.context.tokens import message_text
from mtagent.context.requested_compaction import manual_compact
from mtagent.context.window import ContextWindowManager

CRASH = ("Generated app\n** (Mix) Could not start application opentelemetry: exited in: start/2\n"
         "    ** (EXIT) an exception was raised:\n        ** (BadMapError) expected a map, got:\n"
         "            (erts 16.1.1) :erlang.is_map_key/2\n")
ERROR = "** (BadMapError) expected a map, got:"
FILLER = "lorem ipsum dolor sit amet consectetur " * 60


def _settings() -> Settings:
    return Settings(context={"token_limit": 48_000, "auto_compact_threshold": 15_000,
                             "compression_preserve_min_tokens": 1_000, "compression_preserve_max_tokens": 3_000},
                    microcompact={"size_trigger_fraction": 1.0})


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
