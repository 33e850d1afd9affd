"""``/context stats`` shows the prompt-cache reads and writes the transcript recorded."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage
from rich.console import Console

from mtagent.cli.context_render import WindowUsage, render_context_stats
from mtagent.cli.session_report import read_session_report
from mtagent.context.budget import BudgetBuckets
from mtagent.session.schema import dumps_record, message_to_record


def _transcript(path: Path, replies: list[AIMessage]) -> Path:
    records = [message_to_record(HumanMessage("hi", id="u1"))] + [message_to_record(m) for m in replies]
    path.write_bytes(b"".join(dumps_record(r) + b"\n" for r in records))
    return path


def _usage(total: int, read: int, write: int) -> dict:
    return {"input_tokens": total, "output_tokens": 5, "total_tokens": total + 5,
            "input_token_details": {"cache_read": read, "cache_creation": write}}


def _render(report) -> str:
    console = Console(width=120, record=True)
    console.print(render_context_stats(WindowUsage.from_budget(BudgetBuckets(131_072, 98_072)), report))
    return console.export_text()


def test_cache_reads_and_writes_are_summed_from_the_transcript_and_shown(tmp_path: Path):
    replies = [AIMessage("a", id="a1", usage_metadata=_usage(1_000, 0, 900)),
               AIMessage("b", id="a2", usage_metadata=_usage(1_200, 900, 250))]
    report = read_session_report(_transcript(tmp_path / "s.jsonl", replies))
    assert (report.input_tokens, report.cache_read_tokens, report.cache_write_tokens) == (2_200, 900, 1_150)
    text = _render(report)
    assert "prompt cache reads" in text and "900 (41% of input)" in text
    assert "prompt cache writes" in text and "1,150" in text


def test_no_cache_usage_no_cache_rows(tmp_path: Path):
    replies = [AIMessage("a", id="a1", usage_metadata={"input_tokens": 10, "output_tokens": 1, "total_tokens": 11})]
    report = read_session_report(_transcript(tmp_path / "s.jsonl", replies))
    assert report.cache_read_tokens == 0
    assert "prompt cache" not in _render(report)


def test_a_hostile_usage_record_is_ignored(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    _transcript(path, [AIMessage("a", id="a1", usage_metadata=_usage(100, 50, 10))])
    with path.open("ab") as fh:
        fh.write(b'{"type":"transcript_message","role":"assistant","usage":{"input_tokens":"lots",'
                 b'"input_token_details":{"cache_read":true,"cache_creation":[1]}}}\n')
        fh.write(b'{"type":"transcript_message","role":"assistant","usage":{"input_token_details":"x"}}\n')
    report = read_session_report(path)
    assert (report.input_tokens, report.cache_read_tokens, report.cache_write_tokens) == (100, 50, 10)
