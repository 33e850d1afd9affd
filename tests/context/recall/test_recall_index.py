"""The recall index: incremental indexing, resume, corruption, freshness, hostile queries."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from mtagent import paths
from mtagent.config import RecallSettings
from mtagent.context.recall import Recaller, RecallIndexer, index_path
from mtagent.context.recall.query import fts_query
from mtagent.context.recall.vectors import reciprocal_rank_fusion
from mtagent.context.static import memory
from mtagent.context.static.memory_meta import FactMeta
from mtagent.session import schema
from mtagent.session.artifacts import ArtifactStore
from mtagent.session.transcript import TranscriptWriter


def _conversation() -> list[BaseMessage]:
    return [
        HumanMessage("fix the login redirect in src/auth/session.ts", id="m1"),
        AIMessage("", id="m2", tool_calls=[{"id": "c1", "name": "read_file", "args": {"path": "src/auth/session.ts"}}]),
        ToolMessage("export function redirectAfterLogin(user) { return user.id }", tool_call_id="c1", id="m3",
                    name="read_file"),
        AIMessage("", id="m4", tool_calls=[{"id": "c2", "name": "edit_file",
                                            "args": {"path": "src/auth/session.ts", "old_string": "a"}}]),
        ToolMessage("TypeError: user.id should be string", tool_call_id="c2", id="m5", name="edit_file"),
    ]


def _write(root: Path, session: str, messages: list[BaseMessage], indexer: RecallIndexer | None) -> None:
    """Write a session's transcript; ``indexer`` then catches up with it, as a session's index does."""
    writer = TranscriptWriter(paths.session_transcript_path(root, session), session_id=session)
    try:
        for m in messages:
            writer.append(schema.message_to_record(m))
            time.sleep(0.002)  # distinct timestamps: freshness compares them
    finally:
        writer.close()
    if indexer is not None:
        indexer.catch_up_file(writer.path)


def test_a_sessions_transcript_is_indexed_by_catching_up_with_it(tmp_path: Path) -> None:
    indexer = RecallIndexer(tmp_path)
    _write(tmp_path, "s1", _conversation()[:3], indexer)
    hits = Recaller(indexer).search("redirectAfterLogin")
    assert [h.message_id for h in hits] == ["m3"]
    assert hits[0].session == "s1" and hits[0].reference == "session s1 message m3"


def test_incremental_indexing_across_resume(tmp_path: Path) -> None:
    first = RecallIndexer(tmp_path)
    _write(tmp_path, "s1", _conversation()[:3], first)
    first.close()
    # The session resumes in another process whose writer has no sink (e.g. another front end).
    _write(tmp_path, "s1", [HumanMessage("now look at ZebraConfigLoader please", id="m6")], None)
    again = RecallIndexer(tmp_path)
    before = again.store.count("message")
    assert again.catch_up() == 1  # only the record appended since; the first three are known
    assert again.store.count("message") == before + 1
    assert again.catch_up() == 0  # the offset moved: nothing is read twice
    assert [h.message_id for h in Recaller(again).search("ZebraConfigLoader")] == ["m6"]


def test_corrupt_index_is_rebuilt_from_the_transcripts(tmp_path: Path) -> None:
    indexer = RecallIndexer(tmp_path)
    _write(tmp_path, "s1", _conversation(), indexer)
    indexer.close()
    db = index_path(tmp_path)
    db.write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    rebuilt = RecallIndexer(tmp_path)
    assert rebuilt.store.rebuilt
    rebuilt.refresh()
    assert [h.message_id for h in Recaller(rebuilt).search("redirectAfterLogin")] == ["m3"]


def test_corruption_while_open_is_not_fatal(tmp_path: Path) -> None:
    indexer = RecallIndexer(tmp_path)
    _write(tmp_path, "s1", _conversation(), indexer)
    indexer.flush()
    indexer.store.run(lambda c: c.execute("DROP TABLE items"), None)
    assert Recaller(indexer).search("redirectAfterLogin") == []  # rebuilt empty, not raised
    indexer.refresh()
    assert Recaller(indexer).search("redirectAfterLogin")


def test_stale_file_read_is_marked_or_filtered(tmp_path: Path) -> None:
    indexer = RecallIndexer(tmp_path)
    _write(tmp_path, "s1", _conversation(), indexer)
    recaller = Recaller(indexer)
    (hit,) = recaller.search("redirectAfterLogin")
    assert hit.freshness == "stale" and "src/auth/session.ts" in (hit.stale_reason or "")
    assert recaller.search("redirectAfterLogin", stale="filter") == []
    fresh = recaller.search("TypeError user.id")
    assert fresh[0].message_id == "m5" and fresh[0].freshness == "fresh"


@pytest.mark.parametrize("query", ['"', '"unbalanced', "NEAR(", "NEAR(a b", "*", "a*", "AND", "OR OR", "col:val",
                                   "^start", "-x", "()", "\x00", "🙂" * 10, "x" * 200_000, "", "   ",
                                   " ".join(f"w{i}" for i in range(5000))])
def test_hostile_queries_never_raise(tmp_path: Path, query: str) -> None:
    indexer = RecallIndexer(tmp_path, in_memory=True)
    _write(tmp_path, "s1", _conversation(), indexer)
    hits = Recaller(indexer).search(query)
    assert isinstance(hits, list)
    expr = fts_query(query)
    assert expr is None or all(part.startswith('"') and part.endswith('"') for part in expr.split(" OR "))


def test_artifacts_are_chunked_with_line_ranges_and_rehydrated(tmp_path: Path) -> None:
    indexer = RecallIndexer(tmp_path, RecallSettings(chunk_lines=10))
    store = ArtifactStore.for_session(tmp_path, "s1")
    lines = [f"line {i} ordinary output" for i in range(1, 36)]
    lines[22] = "line 23 FATAL: QuuxOverflowError in worker"
    meta = store.write_text("tool-results/c9.txt", "\n".join(lines))
    indexer.add_record(schema.tool_result_artifact_record("c9", "shell", meta.path, original_chars=1,
                                                          stored_bytes=1, truncated=False, sha256=None), "s1")
    recaller = Recaller(indexer)
    (hit,) = recaller.search("QuuxOverflowError")
    assert (hit.kind, hit.path, hit.line_start, hit.line_end) == ("artifact", "tool-results/c9.txt", 21, 30)
    assert "lines 21-30" in hit.reference
    full = recaller.rehydrate(hit.ref)
    assert full.splitlines()[0] == "line 21 ordinary output" and len(full.splitlines()) == 10


def test_artifact_record_escaping_its_folder_is_ignored(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRETVALUE")
    indexer = RecallIndexer(tmp_path, in_memory=True)
    record = schema.tool_result_artifact_record("c1", "shell", "../../../../../../" + str(secret), original_chars=1,
                                                stored_bytes=1, truncated=False, sha256=None)
    assert indexer.add_record(record, "s1") == 0
    assert indexer.add_record({"type": "transcript_message", "role": "user", "id": 5, "content": []}, "s1") == 0
    assert indexer.add_record(schema.message_to_record(HumanMessage("x", id="a")), "../evil") == 0
    assert Recaller(indexer).search("TOPSECRETVALUE") == []


def test_compaction_marks_items_cold_and_summaries_are_searchable(tmp_path: Path) -> None:
    indexer = RecallIndexer(tmp_path, in_memory=True)
    for m in _conversation():
        indexer.add_record(schema.message_to_record(m), "s1")
    indexer.add_record(schema.boundary_record(summary="Goal: fix PlumbusRedirect.", first_kept_id="m4"), "s1")
    recaller = Recaller(indexer)
    assert recaller.search("login redirect")[0].temperature == "cold"
    assert recaller.search("TypeError user.id")[0].temperature == "warm"
    assert recaller.search("PlumbusRedirect")[0].kind == "summary"


def test_memory_namespaces_are_indexed_and_expired_facts_flagged(tmp_path: Path) -> None:
    memory.save_memory("deploys go through ArgoRollout", "team", tmp_path)
    memory.save_memory("old VPN host is gatekeeper-7", "project", tmp_path,
                       meta=FactMeta(expires_at=dt.datetime(2020, 1, 1, tzinfo=dt.UTC)))
    indexer = RecallIndexer(tmp_path, in_memory=True)
    indexer.sync_memory()
    recaller = Recaller(indexer)
    (hit,) = recaller.search("ArgoRollout", scope="memory")
    assert hit.namespace == "team" and hit.temperature == "long_term" and hit.authority == "org"
    assert recaller.search("gatekeeper") == []
    assert recaller.search("gatekeeper", include_expired=True)[0].freshness == "expired"
    memory.remove_memory(1, "team", tmp_path)
    indexer.sync_memory()
    assert recaller.search("ArgoRollout") == []


def test_workspace_files_honour_gitignore(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("build/\n*.log\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("def frobnicate_widget():\n    pass\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "gen.py").write_text("def frobnicate_widget_generated(): pass\n")
    (tmp_path / "run.log").write_text("frobnicate_widget called\n")
    indexer = RecallIndexer(tmp_path, RecallSettings(index_workspace=True), in_memory=True)
    indexer.refresh()
    hits = Recaller(indexer).search("frobnicate_widget", scope="files")
    assert [h.path for h in hits] == ["src/app.py"]
    assert indexer.refresh() == 0  # unchanged files are not read again


def test_hybrid_search_finds_what_keywords_miss(tmp_path: Path, embeddings) -> None:
    indexer = RecallIndexer(tmp_path, in_memory=True)
    indexer.add_record(schema.message_to_record(HumanMessage("the car needs new tyres", id="a")), "s1")
    indexer.add_record(schema.message_to_record(HumanMessage("bake bread at noon", id="b")), "s1")
    assert Recaller(indexer).search("automobile") == []
    hybrid = Recaller(indexer, embeddings)
    assert hybrid.vectors is not None and hybrid.vectors.backend in ("python", "sqlite-vec")
    assert hybrid.search("automobile", k=1)[0].message_id == "a"


def test_reciprocal_rank_fusion() -> None:
    fused = reciprocal_rank_fusion([[1, 2, 3], [3, 1]], k=60)
    assert [i for i, _ in fused] == [1, 3, 2]


def test_the_snippet_centres_on_the_most_specific_match_not_the_first_common_word() -> None:
    from mtagent.context.recall.router import snippet

    text = ("Ash.create!(Project, %{name: 'test'}) " + "filler words here " * 40
            + "assert_raise Ash.Error.Invalid, fn -> create(annotation_id) end")
    shown = snippet(text, ["ash", "error", "invalid", "annotation_id"], 120, phrases=["ash.error.invalid"])
    assert "Ash.Error.Invalid" in shown and "annotation_id" in shown
    assert snippet("abc", [], 120) == "abc"


def test_written_file_contents_in_tool_call_arguments_are_searchable_words(tmp_path: Path) -> None:
    """A Write call's content is JSON-escaped in a transcript; its lines must still be words
    (``\\ndefmodule`` must not become the token ``ndefmodule``) and its snippet plain text."""
    indexer = RecallIndexer(tmp_path, in_memory=True)
    call = {"id": "w1", "name": "write_file",
            "args": {"path": "lib/foo.ex", "content": "# header\ndefmodule SpotterFoo do\n  \"quoted\"\nend\n"}}
    indexer.add_record(schema.message_to_record(AIMessage("", id="a1", tool_calls=[call])), "s1")
    hits = Recaller(indexer).search("defmodule SpotterFoo")
    assert [h.message_id for h in hits] == ["a1"] and hits[0].confidence == 1.0
    assert "\\n" not in hits[0].snippet and '\\"' not in hits[0].snippet
    assert "write_file" in hits[0].snippet or "defmodule SpotterFoo" in hits[0].snippet


@pytest.mark.parametrize("command", [["create"], {"op": "view"}, 7])
def test_an_editor_call_with_a_hostile_command_leaves_its_message_searchable(tmp_path: Path, command: object) -> None:
    """A model's tool call is hostile input: a command that is not a string must not lose the message."""
    indexer = RecallIndexer(tmp_path, in_memory=True)
    call = {"id": "e1", "name": "str_replace_editor", "args": {"command": command, "path": "notes.py"}}
    indexer.add_record(schema.message_to_record(AIMessage("the zanzibar constant", id="a1", tool_calls=[call])), "s1")
    assert [h.message_id for h in Recaller(indexer).search("zanzibar")] == ["a1"]


def test_an_item_holding_every_query_word_outranks_one_repeating_a_single_word(tmp_path: Path) -> None:
    """BM25 alone puts a message that repeats one word twenty times above the one that holds
    everything asked for (seen on a real session): keyword hits are ordered by coverage first."""
    indexer = RecallIndexer(tmp_path, in_memory=True)
    noisy = " ".join(f"def handle_event(name_{i}) do end" for i in range(20))
    indexer.add_record(schema.message_to_record(HumanMessage(noisy, id="noisy")), "s1")
    both = ("def handle_event(\"jump_to_error\", params, socket) do\n"
            + "".join(f"  assign(socket, field_{i}: value_{i})\n" for i in range(400)))
    indexer.add_record(schema.message_to_record(HumanMessage(both, id="both")), "s1")
    hits = Recaller(indexer).search("jump_to_error handle_event")
    assert [h.message_id for h in hits] == ["both", "noisy"]
    assert hits[0].confidence == 1.0 and hits[1].confidence == 0.5
