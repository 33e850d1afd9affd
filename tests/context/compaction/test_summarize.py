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
    fit_summary,
    render_handoff,
)
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


def test_extractive_summary_has_every_handoff_section():
    text = ExtractiveSummarizer().summarize(coding_session())
    sections = F.parse_handoff(text)
    for title in F.HANDOFF_SECTIONS:
        assert f"## {title}" in text
    assert sections[F.SECTION_GOAL][0].startswith("Speed up the tokenizer")
    assert "Never edit files under tests/." in sections[F.SECTION_CONSTRAINTS]
    assert "Only use the standard library." in sections[F.SECTION_CONSTRAINTS]
    assert "不要修改 README.md" in sections[F.SECTION_CONSTRAINTS]
    assert sections[F.SECTION_FILES_READ] == ["src/tok.py"]
    assert sections[F.SECTION_FILES_CHANGED][0].startswith("src/tok.py — Switching to a compiled regex")
    assert "AssertionError" in sections[F.SECTION_FAILED][0]
    assert "pytest -q tests/test_tok.py" in sections[F.SECTION_VERIFICATION][0]
    assert "failed" in sections[F.SECTION_VERIFICATION][0]
    assert sections[F.SECTION_NEXT][0].startswith("Next: fix the regex")


def test_extractive_carries_goal_and_constraints_of_previous_summary():
    first = ExtractiveSummarizer().summarize(coding_session())
    later = [HumanMessage("Now also profile it.", id="h9"),
             AIMessage("Profiling.", id="a9")]
    second = ExtractiveSummarizer().summarize(later, previous_summary=first)
    sections = F.parse_handoff(second)
    assert sections[F.SECTION_GOAL][0].startswith("Speed up the tokenizer")
    assert "Never edit files under tests/." in sections[F.SECTION_CONSTRAINTS]
    assert any(line.startswith("src/tok.py") for line in sections[F.SECTION_FILES_CHANGED])


def test_repeated_extractive_summaries_do_not_grow_the_goal():
    summary = ExtractiveSummarizer().summarize(coding_session())
    for i in range(6):
        summary = ExtractiveSummarizer().summarize([HumanMessage(f"request {i}", id=f"r{i}")],
                                                   previous_summary=summary)
    goal = F.parse_handoff(summary)[F.SECTION_GOAL]
    assert goal[0].startswith("Speed up the tokenizer")
    assert goal.count(F.LATER_REQUESTS) <= 1


def test_summarizers_satisfy_the_protocol():
    assert isinstance(ExtractiveSummarizer(), Summarizer)
    assert isinstance(LLMSummarizer(ScriptedModel("x")), Summarizer)


def test_llm_prompt_carries_template_instructions_and_previous_summary():
    model = ScriptedModel("## User goal\nspeed up")
    out = LLMSummarizer(model).summarize(coding_session(), instructions="focus on the regex",
                                         previous_summary="## User goal\nolder goal")
    assert out == "## User goal\nspeed up"
    system, human = model.requests[0]
    for title in F.HANDOFF_SECTIONS:
        assert f"## {title}" in system.content
    assert "VERBATIM" in system.content
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
