from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from mtagent.context.compaction import facts as F
from mtagent.context.compaction.summarize import (
    ExtractiveSummarizer,
    LLMSummarizer,
    Summarizer,
    SummarizerFailed,
    SummaryRequestTooLong,
    MODEL_SECTIONS,
    fit_summary,
    render_handoff,
)
from mtagent.context.boundary import summary_message
from mtagent.context.compaction.handoff import compose_handoff
from mtagent.context.tokens import count_text_tokens


def coding_session() -> list[BaseMessage]:
    return [
        HumanMessage("Speed up the tokenizer in src/tok.py.\nNever edit files under tests/.\n"
                     "Only use the standard library.", id="h1"),
        AIMessage("Reading the tokenizer first.", id="a1",
                  tool_calls=[{"id": "c1", "name": "read_file", "args": {"file_path": "src/tok.py"}}]),
        ToolMessage("def tokenize(s):\n    return s.split()", tool_call_id="c1", name="read_file", id="t1"),
        AIMessage("Switching to a compiled regex.", id="a2",
                  tool_calls=[{"id": "c2", "name": "edit_file", "args": {"file_path": "src/tok.py"}}]),
        ToolMessage("edited", tool_call_id="c2", name="edit_file", id="t2"),
        AIMessage("Running the tests.", id="a3",
                  tool_calls=[{"id": "c3", "name": "shell", "args": {"command": "pytest -q tests/test_tok.py"}}]),
        ToolMessage("E   AssertionError: expected 3 tokens\n1 failed", tool_call_id="c3", name="shell", id="t3",
                    status="error"),
        HumanMessage("不要修改 README.md", id="h2"),
        AIMessage("Next: fix the regex to keep punctuation as separate tokens.", id="a4"),
    ]


class ScriptedModel:
    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.requests: list[list[BaseMessage]] = []

    def invoke(self, messages, *args, **kwargs):
        self.requests.append(messages)
        return AIMessage(self.reply)


class ProviderLike:
    """Rejects prompts above ``limit`` tokens with an OpenAI-style 400 message."""

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def invoke(self, messages, *args, **kwargs):
        used = sum(count_text_tokens(str(m.content)) for m in messages)
        if used > self.limit:
            raise RuntimeError(f"Error code: 400 - This model's maximum context length is {self.limit} tokens. "
                               f"However, you requested {used} tokens.")
        return AIMessage("## User goal\nok")


def _handoff(messages: list[BaseMessage], summarizer: Summarizer | None = None) -> str:
    """The hand-off a compaction of ``messages`` writes: the ledger + the summarizer's part."""
    model_part = (summarizer or ExtractiveSummarizer()).summarize(messages)
    return compose_handoff(model_part, messages).summary


def test_the_extractive_part_is_only_what_a_model_would_add() -> None:
    text = ExtractiveSummarizer().summarize(coding_session())
    assert [title for title in F.parse_handoff(text)] == list(MODEL_SECTIONS)
    assert "Never edit files under tests/." not in text  # the ledger states it, for free
    assert F.parse_handoff(text)[F.SECTION_NEXT][0].startswith("Next: fix the regex")


def test_extractive_hand_off_has_every_section() -> None:
    text = _handoff(coding_session())
    sections = F.parse_handoff(text)
    assert sections[F.SECTION_GOAL][0].startswith("Speed up the tokenizer")
    assert "Never edit files under tests/." in sections[F.SECTION_CONSTRAINTS]
    assert "Only use the standard library." in sections[F.SECTION_CONSTRAINTS]
    assert "不要修改 README.md" in sections[F.SECTION_CONSTRAINTS]
    assert sections[F.SECTION_LAST_REQUEST] == ["不要修改 README.md"]
    assert sections[F.SECTION_FILES_READ] == ["src/tok.py"]
    assert sections[F.SECTION_FILES_CHANGED][0].startswith("src/tok.py — edited: Switching to a compiled regex")
    assert "AssertionError" in sections["Failed commands"][0]
    assert "pytest -q tests/test_tok.py" in sections[F.SECTION_VERIFICATION][0]
    assert "failed" in sections[F.SECTION_VERIFICATION][0]
    assert sections[F.SECTION_NEXT][0].startswith("Next: fix the regex")


def test_a_later_hand_off_carries_goal_and_constraints_of_the_previous_one() -> None:
    first = _handoff(coding_session())
    later = [summary_message("b1", first, pre_tokens=1, post_tokens=1, reason="auto"),
             HumanMessage("Now also profile it.", id="h9"), AIMessage("Profiling.", id="a9")]
    sections = F.parse_handoff(_handoff(later))
    assert sections[F.SECTION_GOAL][0].startswith("Speed up the tokenizer")
    assert "Never edit files under tests/." in sections[F.SECTION_CONSTRAINTS]
    assert any(line.startswith("src/tok.py") for line in sections[F.SECTION_FILES_CHANGED])
    assert sections[F.SECTION_LAST_REQUEST] == ["Now also profile it."]


def test_repeated_hand_offs_do_not_grow_the_goal() -> None:
    summary = _handoff(coding_session())
    for i in range(6):
        summary = _handoff([summary_message(f"b{i}", summary, pre_tokens=1, post_tokens=1, reason="auto"),
                            HumanMessage(f"request {i}", id=f"r{i}")])
    sections = F.parse_handoff(summary)
    assert "\n".join(sections[F.SECTION_GOAL]).startswith("Speed up the tokenizer")
    assert summary.count("## User goal") == 1 and "request 5" in sections[F.SECTION_LAST_REQUEST]


def test_summarizers_satisfy_the_protocol():
    assert isinstance(ExtractiveSummarizer(), Summarizer)
    assert isinstance(LLMSummarizer(ScriptedModel("x")), Summarizer)


def test_llm_prompt_carries_template_instructions_and_previous_summary():
    model = ScriptedModel("## Current state\nspeed up")
    out = LLMSummarizer(model, output_tokens=321).summarize(coding_session(), instructions="focus on the regex",
                                                            previous_summary="## User goal\nolder goal")
    assert out == "## Current state\nspeed up"
    system, human = model.requests[0]
    for title in MODEL_SECTIONS:
        assert f"## {title}" in system.content
    assert "## User goal" not in system.content and "Do NOT" in system.content  # the ledger has it
    assert "at most 321 tokens" in system.content
    assert "focus on the regex" in human.content
    assert "older goal" in human.content
    assert "[assistant calls edit_file id=c2]" in human.content


def test_llm_context_length_rejection_becomes_typed_error_with_gap():
    summarizer = LLMSummarizer(ProviderLike(limit=200))
    with pytest.raises(SummaryRequestTooLong) as info:
        summarizer.summarize(coding_session() * 3)
    assert info.value.token_gap and info.value.token_gap > 0


def test_other_model_failures_are_typed():
    class Broken:
        def invoke(self, messages, *a, **k):
            raise RuntimeError("connection reset")

    with pytest.raises(SummarizerFailed, match="extractive"):
        LLMSummarizer(Broken()).summarize(coding_session())


def test_fit_summary_trims_unprotected_sections_and_keeps_constraints():
    facts = "\n".join(f"- fact {i} " + "detail " * 20 for i in range(60))
    text = (f"## {F.SECTION_GOAL}\ngoal\n\n## {F.SECTION_CONSTRAINTS}\n- never touch tests/\n\n"
            f"## {F.SECTION_FACTS}\n{facts}")
    fitted = fit_summary(text, 200, count_text_tokens)
    assert count_text_tokens(fitted) <= 200
    assert "- never touch tests/" in fitted and "goal" in fitted


@pytest.mark.parametrize("first", [
    "Fix the parser bug in parser.py so that nested lists parse",
    "Fix the parser bug in parser.py so that nested lists parse " + "and keep the error messages stable " * 40,
])
def test_the_goal_is_not_repeated_under_later_requests(first):
    """The first request is the goal (clipped when long); only the requests after it are 'later'."""
    history = [HumanMessage(first, id="u1"), AIMessage("on it", id="a1"),
               HumanMessage("also add a test for it", id="u2"), AIMessage("ok", id="a2"),
               HumanMessage("run the tests", id="u3")]
    sheet = render_handoff(F.extract_facts(history))
    goal_section = sheet.split("## Hard constraints", 1)[0]
    later = goal_section.split(F.LATER_REQUESTS, 1)[1] if F.LATER_REQUESTS in goal_section else ""
    assert "nested lists" not in later
    assert "- also add a test for it" in later
