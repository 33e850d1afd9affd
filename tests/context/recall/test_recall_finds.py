"""Recall that finds (#38): its own call never, hand-offs and near-copies once, the chunk with the fact.

At a 12K window recall missed a fact in a 60–110-line file or a 900-line log in 18 of 24 uses: the
in-progress ``recall`` call came back as its own hit #1, each compaction summary (each quoting the
task) was its own hit, and a whole large message ranked behind every short one that named the
same word. Each test here fails on the old code.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from mtagent.context.recall import Recaller, RecallIndexer
from mtagent.context.recall.collapse import collapse, shingles
from mtagent.session import schema

TASK = ("TASK t\nReview this repository step by step.\n1. Read `config/group_0.py`.\n"
        "2. Read the files `src/mod_{00..30}.py`.\n3. Write the value of LEASE_SECONDS into `answer.txt`.")


def _config(lines: int, fact_line: int) -> str:
    body = [f"{'AMBER' if i % 2 else 'CEDAR'}_{i} = {1000 + i}  # tuning knob {i}" for i in range(1, lines + 1)]
    body[fact_line - 1] = "LEASE_SECONDS = 4711"
    return "\n".join(body)


def _index(tmp_path: Path, messages: list[BaseMessage], boundaries: int = 0) -> Recaller:
    indexer = RecallIndexer(tmp_path / "project")
    for m in messages:
        indexer.add_record(schema.message_to_record(m), "s1")
    for n in range(boundaries):  # each hand-off quotes the task, as a summarizer told the task does
        summary = f"## User goal\n{TASK}\n## Progress\n{n * 3} of 33 steps done; files read so far: {n * 3}."
        indexer.add_record(schema.boundary_record(summary=summary, first_kept_id=None, trigger="auto",
                                                  reason="auto", pre_tokens=12_000, post_tokens=4_000,
                                                  summary_source="llm", boundary_id=f"b{n}"), "s1")
    indexer.flush()
    return Recaller(indexer)


def _session(config: str) -> list[BaseMessage]:
    read = {"id": "c1", "name": "read_file", "args": {"file_path": "config/group_0.py"}}
    return [
        HumanMessage(TASK, id="u1"),
        AIMessage("", id="a1", tool_calls=[read]),
        ToolMessage(config, tool_call_id="c1", name="read_file", id="t1"),
        AIMessage("", id="a2", tool_calls=[{"id": "c2", "name": "read_file", "args": {"file_path": "src/mod_00.py"}}]),
        ToolMessage("def helper(value):\n    return value * 3", tool_call_id="c2", name="read_file", id="t2"),
    ]


def _shown(hits: list, text: str) -> int | None:
    return next((n for n, h in enumerate(hits, 1) if text in h.snippet), None)


def test_the_recall_call_in_progress_never_recalls_itself(tmp_path: Path) -> None:
    call = AIMessage("", id="a-recall", tool_calls=[{"id": "c9", "name": "recall", "args": {"query": "LEASE_SECONDS"}}])
    recaller = _index(tmp_path, [*_session(_config(80, 40)), call])
    hits = recaller.search("LEASE_SECONDS", k=5)
    assert "a-recall" not in [h.message_id for h in hits]


def test_a_recall_result_is_not_indexed_again(tmp_path: Path) -> None:
    call = AIMessage("", id="a-recall", tool_calls=[{"id": "c9", "name": "recall", "args": {"query": "LEASE_SECONDS"}}])
    result = ToolMessage("1 recalled item for 'LEASE_SECONDS': … LEASE_SECONDS = 4711 …", tool_call_id="c9",
                         name="recall", id="t-recall")
    recaller = _index(tmp_path, [*_session(_config(80, 40)), call, result])
    assert "t-recall" not in [h.message_id for h in recaller.search("LEASE_SECONDS", k=10)]


@pytest.mark.parametrize("lines,fact_line", [(60, 5), (85, 70), (110, 101)])
def test_the_chunk_holding_a_fact_in_a_large_read_is_in_the_top_five(tmp_path: Path, lines: int,
                                                                      fact_line: int) -> None:
    recaller = _index(tmp_path, _session(_config(lines, fact_line)), boundaries=6)
    hits = recaller.search("LEASE_SECONDS", k=5)
    rank = _shown(hits, "LEASE_SECONDS = 4711")
    assert rank is not None, [h.reference for h in hits]
    hit = hits[rank - 1]
    if lines > 60:  # a message longer than a chunk is indexed in chunks: the hit names the lines
        assert hit.line_start is not None and hit.line_start <= fact_line <= hit.line_end
        assert hit.reference.endswith(f"lines {hit.line_start}-{hit.line_end}")
        assert recaller.rehydrate(hit.ref).count("\n") < 60


def test_a_fact_in_a_900_line_log_is_found(tmp_path: Path) -> None:
    log = [f"[build {i:04d}] compiled module_{i % 97} in {(i * 37) % 1000} ms" for i in range(900)]
    log[611] = "[build] linker warning: ERROR_CODE=E4242 (unresolved symbol)"
    run = {"id": "c1", "name": "shell", "args": {"command": "python3 tools/build.py"}}
    messages = [HumanMessage(TASK.replace("LEASE_SECONDS", "ERROR_CODE"), id="u1"),
                AIMessage("", id="a1", tool_calls=[run]),
                ToolMessage("\n".join(log), tool_call_id="c1", name="shell", id="t1")]
    hits = _index(tmp_path, messages, boundaries=6).search("ERROR_CODE", k=5)
    assert _shown(hits, "ERROR_CODE=E4242") is not None


def test_hand_offs_quoting_the_task_collapse_to_one(tmp_path: Path) -> None:
    hits = _index(tmp_path, _session(_config(80, 40)), boundaries=6).search("LEASE_SECONDS", k=5)
    assert sum(h.kind == "summary" for h in hits) <= 1
    assert sum("Write the value of LEASE_SECONDS" in h.snippet for h in hits) <= 2  # the task, and one hand-off


def test_near_copies_are_shown_once_and_different_items_are_kept() -> None:
    from mtagent.context.recall.store import Doc, Row

    def row(rowid: int, text: str, kind: str = "message", session: str = "s1") -> Row:
        return Row(rowid, Doc(uid=f"u{rowid}", kind=kind, text=text, session=session), False)

    text = "the deploy failed because the lease expired after 30 seconds on the shard coordinator node"
    rows = [row(1, text), row(2, text + " again"), row(3, "a different note about the lease on another node"),
            row(4, "summary one " + text, "summary"), row(5, "a second hand-off entirely new words here", "summary"),
            row(6, "a hand-off of another session with new words", "summary", "s2")]
    kept = [r.rowid for r in collapse(rows)]
    assert kept == [1, 3, 5, 6]  # 4 is a near-copy of 1, so 5 is the first hand-off of s1 shown
    assert shingles("a b") == {("a", "b")} and shingles("") == set()
