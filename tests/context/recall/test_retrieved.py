"""Recall after compaction: the retrieved bucket, bounded, recorded in the plan."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from mtagent.config import Settings
from mtagent.context.budget import Bucket
from mtagent.context.recall import CompactedRecall, Recaller, RecallIndexer, SessionIndex
from mtagent.context.tokens import count_text_tokens
from mtagent.context.requested_compaction import manual_compact
from mtagent.context.window import ContextWindowManager
from mtagent.session import schema
from mtagent.session.transcript import TranscriptWriter


class FixedSummarizer:
    def summarize(self, messages, *, instructions=None, previous_summary=None) -> str:
        return "Goal: keep going. State: several files were inspected."


def _settings(**recall: object) -> Settings:
    return Settings.model_validate({
        "context": {"token_limit": 60_000, "compression_preserve_min_tokens": 500,
                    "compression_preserve_max_tokens": 1_500},
        "session_memory": {"enabled": False},
        "recall": recall,
    })


def _history() -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i in range(20):
        body = f"class Widget{i}Handler:\n" + "\n".join(f"    line {j} of module {i}" for j in range(60))
        if i == 3:
            body += "\n    def frobnicate_quux_total(self): return 42"
        out += [HumanMessage(f"look at module {i}", id=f"h{i}"),
                AIMessage("", id=f"a{i}", tool_calls=[{"id": f"c{i}", "name": "shell",
                                                       "args": {"command": f"cat mod{i}.txt"}}]),
                ToolMessage(body, tool_call_id=f"c{i}", id=f"t{i}", name="shell")]
    return out


def _engine(tmp_path: Path, settings: Settings) -> tuple[ContextWindowManager, TranscriptWriter]:
    """The window manager writing the transcript of session s1; its retrieved bucket catches the
    index up from that transcript before it searches (as the opener wires it)."""
    writer = TranscriptWriter(tmp_path / "s1.jsonl", session_id="s1")
    index = SessionIndex(RecallIndexer(tmp_path, settings.recall, in_memory=True), "s1", lambda: writer.path)
    retriever = CompactedRecall(Recaller(index.indexer), settings.recall, count_text_tokens, "s1",
                                catch_up=index.catch_up)
    engine = ContextWindowManager(settings, summarizer=FixedSummarizer(), sink=writer, retriever=retriever)
    return engine, writer


def _compacted(tmp_path: Path, settings: Settings) -> tuple[ContextWindowManager, list[BaseMessage]]:
    engine, writer = _engine(tmp_path, settings)
    history = _history()
    for m in history:  # the agent records every message through the same sink
        writer.append(schema.message_to_record(m))
    engine.prepare(history)
    result = manual_compact(engine, history)
    return engine, result.new_history()


def test_a_new_message_naming_a_compacted_identifier_gets_the_retrieved_bucket(tmp_path: Path) -> None:
    engine, history = _compacted(tmp_path, _settings())
    assert "frobnicate_quux_total" not in "".join(str(m.content) for m in history)
    history.append(HumanMessage("where did frobnicate_quux_total come from?", id="q1"))
    prepared = engine.prepare(history)
    last = prepared.messages[-1]
    assert last.id == "retrieved-context" and "frobnicate_quux_total" in str(last.content)
    assert "session s1 message t3" in str(last.content)
    plan = prepared.plan
    assert plan.retrieved and plan.retrieved["items"][0]["ref"] == "msg:s1:t3:61"  # the chunk holding it (#38)
    assert plan.buckets.tokens[Bucket.RETRIEVED] == plan.retrieved["tokens"] > 0
    assert "Retrieved" in plan.explain() and plan.to_dict()["retrieved"]["items"]
    assert prepared.history[-1].id == "q1"  # ephemeral: never part of the history
    # Tool rounds of the same turn keep it; the next user message without such names clears it.
    history += [AIMessage("", id="a-x", tool_calls=[{"id": "cx", "name": "shell", "args": {"command": "ls"}}]),
                ToolMessage("ok", tool_call_id="cx", id="t-x", name="shell")]
    assert engine.prepare(history).messages[-1].id == "retrieved-context"
    history.append(HumanMessage("thanks, carry on", id="q2"))
    assert engine.prepare(history).messages[-1].id == "q2"


def test_the_call_after_a_compaction_catches_the_index_up(tmp_path: Path) -> None:
    """A compaction is a natural batch point: the next call indexes the transcript (so a session's
    close, or a search, has only the tail since to read) — no question needed."""
    engine, history = _compacted(tmp_path, _settings())
    indexer = engine.retriever.recaller.indexer  # type: ignore[union-attr]
    assert indexer.store.count() == 0
    engine.prepare([*history, HumanMessage("carry on", id="q0")])
    assert indexer.store.count("message") >= 60 and indexer.store.count("summary") == 1


def test_nothing_is_retrieved_for_names_still_in_view_or_never_compacted(tmp_path: Path) -> None:
    engine, history = _compacted(tmp_path, _settings())
    history.append(HumanMessage("now check brand_new_function_name and module 19", id="q1"))
    prepared = engine.prepare(history)
    assert prepared.messages[-1].id == "q1" and prepared.plan.retrieved is None


def test_the_bucket_is_bounded_and_drops_are_recorded(tmp_path: Path) -> None:
    engine, history = _compacted(tmp_path, _settings(retrieved_max_fraction=0.0001))
    history.append(HumanMessage("where did frobnicate_quux_total come from?", id="q1"))
    prepared = engine.prepare(history)
    assert prepared.messages[-1].id == "q1"
    assert prepared.plan.retrieved and prepared.plan.retrieved["items"] == []
    assert prepared.plan.retrieved["dropped"][0]["ref"] == "msg:s1:t3:61"


def test_temperature_labels_in_the_plan(tmp_path: Path) -> None:
    engine, history = _compacted(tmp_path, _settings())
    history.append(HumanMessage("where did frobnicate_quux_total come from?", id="q1"))
    plan = engine.prepare(history).plan
    temps = {item.id: item.temperature for item in plan.selected}
    assert temps["q1"] == "hot"
    assert set(temps.values()) <= {"hot", "warm", "cold", "frozen", "long_term"}
    assert "warm" in temps.values()  # the summary
    assert "Temperature:" in plan.explain()


def test_context_explain_shows_temperature_and_the_retrieved_bucket(tmp_path: Path) -> None:
    from rich.console import Console

    from mtagent.cli.context_render import render_plan_explain

    engine, history = _compacted(tmp_path, _settings())
    history.append(HumanMessage("where did frobnicate_quux_total come from?", id="q1"))
    plan = engine.prepare(history).plan
    console = Console(record=True, width=200)
    console.print(render_plan_explain(plan.to_dict(), plan.explain()))
    text = console.export_text()
    assert "Temperature:" in text and "hot" in text
    assert "Retrieved (hot)" in text and "frobnicate_quux_total" in text


def test_a_compaction_summary_is_not_a_new_message_that_triggers_recall(tmp_path: Path) -> None:
    """The summary names compacted-away identifiers by design, and an auto compaction can drop
    the message the previous call ended with: neither may make the summary (or the whole kept
    tail) look "new" and pull a retrieved bucket into every later request."""
    from mtagent.context.boundary import summary_message

    settings = _settings()
    engine, _ = _compacted(tmp_path, settings)
    retriever = engine.retriever
    assert retriever is not None
    before = _history()
    retriever.step(before, window=60_000, room=30_000)  # the previous call ended with t19
    summary = summary_message("cb-1", "Goal: keep going. frobnicate_quux_total lives in module 3; see mod3.txt.",
                              pre_tokens=9_000, post_tokens=500, reason="auto")
    after = [summary,
             AIMessage("", id="a-new", tool_calls=[{"id": "cn", "name": "shell", "args": {"command": "ls"}}]),
             ToolMessage("ok", tool_call_id="cn", id="t-new", name="shell")]
    retrieval = retriever.step(after, window=60_000, room=30_000)
    assert retrieval.items == [] and retrieval.dropped == []


def test_a_name_still_in_the_views_tool_call_arguments_is_not_recalled(tmp_path: Path) -> None:
    """A failed tool result that names an argument of a call still in view (``new_string`` of an
    edit, seen on a real Claude Code session) must not pull the compacted-away item that also
    named it: the view's tool calls count as what the view shows."""
    engine, history = _compacted(tmp_path, _settings())
    retriever = engine.retriever
    assert retriever is not None
    retriever.step(history, window=60_000, room=30_000)
    history += [AIMessage("", id="a-e", tool_calls=[{"id": "ce", "name": "edit_file",
                                                     "args": {"frobnicate_quux_total": "x"}}]),
                ToolMessage("Error: frobnicate_quux_total not found in file", tool_call_id="ce", id="t-e",
                            name="edit_file", status="error")]
    retrieval = retriever.step(history, window=60_000, room=30_000)
    assert retrieval.items == [] and retrieval.dropped == []


def test_before_a_compaction_nothing_is_searched_and_the_index_is_not_touched(tmp_path: Path) -> None:
    """Only what a compaction of this session removed is retrieved: until the view has held a
    summary, a message naming a name the view lacks costs no catch-up and no search (a turn's
    path never reaches the index); the first view with a summary does search."""
    settings = _settings()
    caught: list[int] = []
    indexer = RecallIndexer(tmp_path, settings.recall, in_memory=True)
    retriever = CompactedRecall(Recaller(indexer), settings.recall, count_text_tokens, "s1",
                                catch_up=lambda: caught.append(1))
    history = [*_history(), HumanMessage("where is frobnicate_quux_total_elsewhere defined?", id="q1")]
    assert retriever.step(history, window=60_000, room=30_000).items == [] and caught == []
    from mtagent.context.boundary import summary_message

    summary = summary_message("cb-1", "Goal: keep going.", pre_tokens=9_000, post_tokens=500, reason="auto")
    later = [summary, *history[-4:], HumanMessage("and zorblax_widget_factory?", id="q2")]
    retriever.step(later, window=60_000, room=30_000)
    assert caught == [1, 1]  # the compaction the summary stands for, then the search
