"""The /context renderers: grid cells, legend numbers, stats, artifacts, explain, demo summary."""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from mtagent.cli.context_render import (
    BUFFER_GLYPH,
    FREE_GLYPH,
    GRID_CELLS,
    USED_GLYPH,
    WindowUsage,
    allocate_cells,
    grid_counts,
    fmt_tokens,
    render_artifacts,
    render_context_grid,
    render_context_stats,
    render_demo_summary,
    render_plan_explain,
)
from mtagent.cli.session_report import read_session_report
from mtagent.context.budget import Bucket, BudgetBuckets
from mtagent.session import schema


def text_of(renderable, width: int = 140) -> str:
    console = Console(record=True, width=width, color_system="truecolor")
    console.print(renderable)
    return console.export_text()


USAGE = WindowUsage(
    token_limit=16_384, threshold=12_000,
    buckets={"system": 900, "tools": 1_500, "rules": 300, "memory": 100, "summary": 800,
             "messages": 3_000, "tool_results": 2_500},
    model="scripted",
)


def test_grid_has_one_hundred_cells_split_by_bucket():
    out = text_of(render_context_grid(USAGE))
    legend = re.compile(r"[⛁⛶⛝] [A-Z][^:]*: [\d,]+ tokens")
    cells = "".join(legend.sub("", line) for line in out.splitlines())
    counts = {g: cells.count(g) for g in (USED_GLYPH, FREE_GLYPH, BUFFER_GLYPH)}
    assert sum(counts.values()) == GRID_CELLS
    for glyph, tokens in ((USED_GLYPH, USAGE.used), (FREE_GLYPH, USAGE.free), (BUFFER_GLYPH, USAGE.buffer)):
        assert abs(counts[glyph] - GRID_CELLS * tokens / USAGE.token_limit) < 1


def test_grid_legend_shows_tokens_and_share_per_bucket():
    out = text_of(render_context_grid(USAGE))
    assert "Messages: 3,000 tokens (18.3%)" in out
    assert "Tool results: 2,500 tokens (15.3%)" in out
    assert "System prompt: 900 tokens (5.5%)" in out
    assert "Compact summary: 800 tokens" in out
    assert "Memory: 100 tokens" in out
    assert "Rules (CONTEXT.md): 300 tokens" in out
    assert "Tool definitions: 1,500 tokens" in out
    assert f"Free space: {12_000 - 9_100:,} tokens" in out
    assert f"Autocompact buffer: {16_384 - 12_000:,} tokens" in out
    assert "9.1k/16.4k tokens (56%)" in out and "auto-compact at 12.0k" in out and "scripted" in out


def test_grid_colours_each_bucket_differently():
    console = Console(record=True, width=140, color_system="truecolor")
    console.print(render_context_grid(USAGE))
    html = console.export_html(inline_styles=True)
    colours = {seg.split(";")[0] for seg in html.split("color: ")[1:]}
    assert len(colours) >= 8


def test_grid_over_threshold_says_so_and_has_no_free_space():
    usage = WindowUsage(10_000, 6_000, {"messages": 7_000})
    out = text_of(render_context_grid(usage))
    assert "over the threshold" in out
    assert "Free space: 0 tokens" in out
    assert usage.buffer == 3_000


def test_window_usage_from_budget_buckets_and_plan_record():
    budget = BudgetBuckets(token_limit=32_000, threshold=20_000)
    budget.add(Bucket.MESSAGES, 5_000)
    budget.add(Bucket.REATTACHED, 700)
    usage = WindowUsage.from_budget(budget)
    assert usage.used == 5_700 and usage.free == 14_300
    out = text_of(render_context_grid(usage))
    assert "Re-attached files: 700 tokens" in out
    rec = {"turn": 3, "tokens": 4_000, "threshold": 9_000, "buckets": {"messages": 4_000}}
    from_rec = WindowUsage.from_plan_record(rec, 16_000)
    assert (from_rec.token_limit, from_rec.threshold, from_rec.used) == (16_000, 9_000, 4_000)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=200_000), min_size=1, max_size=12))
def test_allocate_cells_sums_to_grid_and_shows_every_nonzero_bucket(amounts):
    counts = allocate_cells(amounts)
    if sum(amounts) == 0:
        assert counts == [0] * len(amounts)
        return
    assert sum(counts) == GRID_CELLS
    for amount, count in zip(amounts, counts):
        assert (count > 0) == (amount > 0)


def test_fmt_tokens():
    assert fmt_tokens(999) == "999"
    assert fmt_tokens(131_072) == "131.1k"
    assert fmt_tokens(2_500_000) == "2.50M"


def _write_transcript(path, records):
    with open(path, "wb") as fh:
        for rec in records:
            fh.write(schema.dumps_record(rec))


def _sample_transcript(tmp_path):
    from langchain_core.messages import ToolMessage

    tm = ToolMessage(content="<persisted-output>…</persisted-output>", tool_call_id="call_big", name="grep",
                     artifact={"kind": "text", "artifact": "tool-results/call_big.txt",
                               "original_chars": 90_000, "preview_chars": 4_000, "truncated": True})
    records = [
        schema.session_start_record("s1", str(tmp_path), "scripted", "0.1.0"),
        schema.message_to_record(tm),
        schema.tool_result_artifact_record("call_big", "grep", "tool-results/call_big.txt",
                                           original_chars=90_000, stored_bytes=90_000, truncated=False,
                                           sha256="0" * 64),
        schema.microcompact_record("time", ["m1", "m2"]),
        schema.boundary_record(summary="s", first_kept_id=None, trigger="auto", pre_tokens=11_000,
                               post_tokens=3_000),
        schema.context_plan_record({"turn": 4, "tokens": 3_500, "threshold": 9_000,
                                    "buckets": {"messages": 2_000, "summary": 1_500},
                                    "selected": ["a", "b"],
                                    "compressed": [{"id": "call_big", "from_tokens": 22_000, "to_tokens": 1_000,
                                                    "method": "persisted_output"}],
                                    "dropped": [{"id": "old", "reason": "before the compact boundary"}]}),
    ]
    path = tmp_path / "s1.jsonl"
    _write_transcript(path, records)
    return path


def test_session_report_reads_artifacts_compactions_and_last_plan(tmp_path):
    report = read_session_report(_sample_transcript(tmp_path))
    assert report.session_id == "s1" and report.model == "scripted"
    assert [p.tool_call_id for p in report.persisted] == ["call_big"]
    assert report.persisted[0].preview_chars == 4_000 and report.chars_kept_out == 86_000
    assert report.compactions[0].pre_tokens == 11_000 and report.compaction_tokens_saved == 8_000
    assert report.cleared_results == 2
    assert report.last_plan is not None and report.last_plan["turn"] == 4


def test_session_report_skips_a_torn_last_line(tmp_path):
    path = _sample_transcript(tmp_path)
    with open(path, "ab") as fh:
        fh.write(b'{"type":"compact_boundary","id":"x"')
    report = read_session_report(path)
    assert report.skipped_lines == 1 and len(report.compactions) == 1


def test_stats_show_threshold_tokens_left_and_compaction_history(tmp_path):
    report = read_session_report(_sample_transcript(tmp_path))
    out = text_of(render_context_stats(USAGE, report, effective_limit=14_000, counters={"model_calls": 7}))
    assert "auto-compact threshold" in out and "12,000" in out
    assert "tokens left before auto compact" in out and "2,900" in out
    assert "effective limit" in out and "14,000" in out
    assert "model calls" in out
    assert "Compaction history" in out and "11,000" in out and "3,000" in out and "8,000" in out
    assert "2 old tool result(s) cleared" in out
    assert "total used" in out and "9,100" in out


def test_artifacts_table_lists_id_tool_size_and_path(tmp_path):
    report = read_session_report(_sample_transcript(tmp_path))
    out = text_of(render_artifacts(report, "/home/x/artifacts/s1"), width=200)
    assert "call_big" in out and "grep" in out and "87.9 KB" in out
    assert "/home/x/artifacts/s1/tool-results/call_big.txt" in out


def test_explain_lists_compressed_and_dropped_with_reasons(tmp_path):
    report = read_session_report(_sample_transcript(tmp_path))
    out = text_of(render_plan_explain(report.last_plan, "engine says: 2 selected"))
    assert "engine says: 2 selected" in out
    assert "2 messages (+ 0 system) selected, 1 compressed, 1 dropped" in out
    assert "22,000" in out and "persisted_output" in out
    assert "before the compact boundary" in out
    assert "send a message first" in text_of(render_plan_explain(None))


def test_explain_counts_selected_messages_not_id_ranges():
    plan = {"turn": 4, "tokens": 4_637, "threshold": 98_072,
            "selected": ["system:2", "msg-a..msg-g (7)", "msg-h"], "compressed": [], "dropped": []}
    out = text_of(render_plan_explain(plan))
    assert "8 messages (+ 2 system) selected, 0 compressed, 0 dropped" in out  # as the engine counts them


def test_demo_summary_names_persisted_results_compactions_and_savings(tmp_path):
    report = read_session_report(_sample_transcript(tmp_path))
    out = text_of(render_demo_summary(report))
    assert "Persisted tool results: 1" in out and "90,000" in out
    assert "Compactions: 1" in out and "11,000 tokens" in out and "3,000 tokens" in out
    assert "Saved: 8,000 tokens by compaction; 86,000 characters" in out
    json.dumps(report.last_plan)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=50_000), min_size=1, max_size=9),
       st.integers(min_value=0, max_value=200_000), st.integers(min_value=0, max_value=50_000))
def test_grid_counts_fill_the_grid_and_show_every_bucket_that_holds_tokens(buckets, free, buffer):
    counts = grid_counts([*buckets, free, buffer])
    if sum(buckets) + free + buffer == 0:
        return
    assert sum(counts) == GRID_CELLS
    for amount, count in zip(buckets, counts):
        assert (count > 0) == (amount > 0)
