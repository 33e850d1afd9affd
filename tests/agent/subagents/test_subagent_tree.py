"""Child transcripts live beside the parent, linked both ways; `sessions show` and `/context` show them."""

from __future__ import annotations

import json

from rich.console import Console
from subagent_helpers import open_session, report_json, subagent_records, task
from typer.testing import CliRunner

from mtagent import paths
from mtagent.agent.scripted import tool_call
from mtagent.agent.subagents.tree import children_usage, nodes_from_records, subagent_tree, tree_lines
from mtagent.cli.app import app
from mtagent.cli.context_render import WindowUsage, render_context_grid, render_context_stats
from mtagent.cli.session_report import read_session_report
from mtagent.session import schema
from mtagent.session.reader import read_records


def _run(code):
    child = [tool_call("grep", {"pattern": "FACT"}), report_json("login redirects to /home")]
    session, _ = open_session(code, [task(id="call_t"), "done"], [child])
    with session:
        session.run_turn("explore")
    return session


def test_the_child_transcript_sits_beside_the_parent_and_both_name_each_other(code):
    session = _run(code)
    started = subagent_records(session.transcript_path)[0]
    child_path = paths.subagent_transcript_path(code, session.session_id, started["child_id"])
    assert child_path == session.transcript_path.parent / session.session_id / "subagents" / f"{started['child_id']}.jsonl"
    first = next(iter(read_records(child_path)))
    assert first["type"] == "session_start" and first["parent_session_id"] == session.session_id
    assert first["parent_tool_call_id"] == "call_t" and first["agent"] == "explore"
    assert started["path"] == f"{session.session_id}/subagents/{started['child_id']}.jsonl"
    assert [p.stem for p in paths.history_dir(code).glob("*.jsonl")] == [session.session_id]  # not a top-level session


def test_the_tree_reads_status_usage_and_summary(code):
    session = _run(code)
    (node,) = subagent_tree(session.transcript_path)
    assert node.status == "finished" and node.summary == "login redirects to /home" and node.children == []
    assert node.usage["model_calls"] == 2 and node.usage["input_tokens"] > 0
    assert children_usage([node])["input_tokens"] == node.usage["input_tokens"]
    lines = tree_lines([node])
    assert lines[0].startswith(f"└─ {node.child_id} [explore] find login — finished (success)")


def test_sessions_show_renders_the_tree(code):
    session = _run(code)
    result = CliRunner().invoke(app, ["sessions", "show", session.session_id, "--cwd", str(code)])
    assert result.exit_code == 0, result.output
    assert "subagents" in result.output and "[explore] find login" in result.output
    assert "login redirects to /home" in result.output


def test_context_stats_counts_children_apart(code):
    session = _run(code)
    report = read_session_report(session.transcript_path)
    console = Console(record=True, width=120)
    console.print(render_context_stats(WindowUsage(131_072, 100_000, {"messages": 1000}), report))
    text = console.export_text()
    total = subagent_tree(session.transcript_path)[0].usage["input_tokens"]
    assert "subagent input tokens (not in this window)" in text and f"{total:,}" in text


def test_the_context_grid_shows_childrens_tokens_on_a_line_of_their_own(code):
    from types import SimpleNamespace

    from mtagent.cli.slash import dispatch

    session = _run(code)
    report = read_session_report(session.transcript_path)
    console = Console(record=True, width=160)
    host = SimpleNamespace(console=console, window_usage=lambda: WindowUsage(131_072, 100_000, {"messages": 1000}),
                           session_report=lambda: report, session_id="s", schemas_said=None, work_plan=lambda: None,
                           mcp_servers=lambda: None, context_warnings=list)
    dispatch(host, "/context")
    text = console.export_text()
    total = subagent_tree(session.transcript_path)[0].usage["input_tokens"]
    line = next(line for line in text.splitlines() if "Subagents" in line)
    assert "1 child" in line and f"{total:,} input tokens" in line and "not in this window" in line
    assert "Messages: 1,000 tokens" in text  # the window's own buckets are unchanged


def test_the_context_grid_has_no_subagent_line_without_children(code):
    session, _ = open_session(code, ["hello"], [])
    with session:
        session.run_turn("hi")
    console = Console(record=True, width=160)
    console.print(render_context_grid(WindowUsage(131_072, 100_000, {"messages": 1000}),
                                      report=read_session_report(session.transcript_path)))
    assert "Subagents" not in console.export_text()


def test_a_forged_link_is_shown_broken_and_never_opened(tmp_path):
    secret = tmp_path / "secret.jsonl"
    secret.write_text(json.dumps(schema.session_start_record("x", "/", None, "0")) + "\n")
    records = [schema.subagent_record("agent-1", "finished", tool_call_id="c", agent="explore", path="../secret.jsonl"),
               schema.subagent_record("agent-2", "started", tool_call_id="d", agent="explore",
                                      path="/etc/passwd")]
    nodes = nodes_from_records(records, tmp_path / "history")
    assert all(n.path is None and "not followed" in (n.problem or "") for n in nodes)


def test_a_childs_transcript_is_recallable_live_and_after_a_catch_up(code):
    from mtagent.context.recall import Recaller, RecallIndexer, index_path

    child = [tool_call("read_file", {"file_path": "routes.py"}), report_json("routes read")]
    session, _ = open_session(code, [task(), "done"], [child])
    with session:
        session.run_turn("explore")
    child_id = subagent_records(session.transcript_path)[0]["child_id"]
    live = Recaller(RecallIndexer(code))  # another reader, as `mtagent recall` is
    live.indexer.refresh()
    hits = live.search("home_view")
    assert child_id in {h.session for h in hits}
    index_path(code).unlink()
    fresh = RecallIndexer(code)
    assert fresh.catch_up() > 0 and child_id in {h.session for h in Recaller(fresh).search("home_view")}


def test_sessions_show_reads_a_child_transcript_by_its_id(code):
    session = _run(code)
    child_id = subagent_records(session.transcript_path)[0]["child_id"]
    result = CliRunner().invoke(app, ["sessions", "show", child_id, "--cwd", str(code)])
    assert result.exit_code == 0, result.output
    assert f"session {child_id} started" in result.output and "grep" in result.output
    forged = CliRunner().invoke(app, ["sessions", "show", "agent-*", "--cwd", str(code)])
    assert forged.exit_code != 0 and "invalid session id" in forged.output


def test_hostile_text_in_a_subagent_record_is_shown_not_run(code):
    session = _run(code)
    hostile = schema.subagent_record("agent-evil", "finished", tool_call_id="x", agent="explore\x1b[2J",
                                     path=f"{session.session_id}/subagents/agent-evil.jsonl",
                                     description="\x1b]0;pwned\x07", report={"outcome": "success",
                                                                             "summary": "\x9b31m red"})
    with session.transcript_path.open("ab") as fh:
        fh.write(schema.dumps_record(hostile))
    result = CliRunner().invoke(app, ["sessions", "show", session.session_id, "--cwd", str(code)])
    assert result.exit_code == 0 and "agent-evil" in result.output
    assert not any(seq in result.output for seq in ("\x1b", "\x9b", "\x07"))


def test_child_ids_are_counted_inside_sequential_ids_so_eval_runs_repeat_byte_for_byte(code):
    """The parent's ``task`` result names its child: a random id there changes the next request."""
    from mtagent.session.ids import sequential_ids

    with sequential_ids("unit-1"):
        session = _run(code)
    started = subagent_records(session.transcript_path)[0]
    assert started["child_id"].startswith("agent-unit-1-")
    assert paths.validate_session_id(started["child_id"]) == started["child_id"]
    random_again = subagent_records(_run(code).transcript_path)[0]["child_id"]
    assert random_again.startswith("agent-") and not random_again.startswith("agent-unit-1-")
