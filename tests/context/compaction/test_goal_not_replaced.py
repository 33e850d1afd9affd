"""A later hand-off's goal never replaces the first one — in the facts a hand-off is verified against
(``merge_previous``), in the ledger's merge, and through a chain of compactions whose summarizer
writes a different goal every time."""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from mtagent.config import Settings
from mtagent.context.boundary import summary_message
from mtagent.context.compaction import facts as F
from mtagent.context.compaction.compactor import CompactionOptions, compact
from mtagent.context.ledger import HandoffLedger, ledger_from_messages, merge_ledgers
from mtagent.context.tokens import MessageTokenCounter

FIRST = "Port the billing service to the new queue.\nNever touch the ledger tables."


def test_merge_previous_keeps_the_first_hand_offs_goal() -> None:
    first = summary_message("b1", f"## User goal\n{FIRST}", pre_tokens=1, post_tokens=1, reason="auto")
    later = summary_message("b2", "## User goal\nWrite the release notes.", pre_tokens=1, post_tokens=1, reason="auto")
    facts = F.extract_facts([first, later, HumanMessage("and the changelog", id="u9")])
    assert facts.goal == FIRST
    found = F.SessionFacts()
    F.merge_previous(found, F.parse_handoff(f"## User goal\n{FIRST}"))
    F.merge_previous(found, F.parse_handoff("## User goal\nWrite the release notes."))
    assert found.goal == FIRST


def test_the_ledgers_merge_keeps_the_first_goal_and_makes_a_later_one_a_request() -> None:
    merged = merge_ledgers(HandoffLedger(goal=FIRST), HandoffLedger(goal="Write the release notes."))
    assert merged.goal == FIRST and merged.requests == ["Write the release notes."]
    texts_only = [summary_message("b1", f"## User goal\n{FIRST}", pre_tokens=1, post_tokens=1, reason="auto"),
                  summary_message("b2", "## User goal\nWrite the release notes.", pre_tokens=1, post_tokens=1,
                                  reason="auto")]
    assert ledger_from_messages(texts_only).goal == FIRST


class _GoalRewriter:
    """A summarizer that states a goal of its own every time (as a paraphrasing model might)."""

    def __init__(self) -> None:
        self.calls = 0

    def summarize(self, messages, *, instructions=None, previous_summary=None) -> str:
        self.calls += 1
        return f"## User goal\nShip version {self.calls}.\n\n## Current state\nworking\n\n## Next step\ngo on"


def _round(i: int) -> list[BaseMessage]:
    return [AIMessage("", id=f"a{i}", tool_calls=[{"id": f"c{i}", "name": "read_file", "args": {"file_path": f"f{i}.py"}}]),
            ToolMessage("x = 1\n" * 300, tool_call_id=f"c{i}", name="read_file", id=f"t{i}")]


def test_three_compactions_whose_model_rewrites_the_goal_keep_the_first_request() -> None:
    settings = Settings(context={"token_limit": 40_000, "compression_preserve_min_tokens": 500,
                                 "compression_preserve_max_tokens": 1_500})
    options = CompactionOptions(settings=settings, counter=MessageTokenCounter())
    summarizer = _GoalRewriter()
    history: list[BaseMessage] = [HumanMessage(FIRST, id="u0")]
    for chain in range(3):
        for i in range(chain * 10, chain * 10 + 10):
            history += _round(i)
        history.append(HumanMessage(f"request {chain}", id=f"r{chain}"))
        history += _round(100 + chain)
        history = compact(history, summarizer, options).new_history()
        sections = F.parse_handoff(history[0].content)
        assert "\n".join(sections[F.SECTION_GOAL]) == FIRST, chain
        assert "Ship version" not in history[0].content
        assert ledger_from_messages(history[:1]).goal == FIRST
    assert summarizer.calls == 3
