"""Tables at 80 and 60 columns: ids and numbers are never cut; columns are dropped or wrapped."""

from __future__ import annotations

import re

import pytest
from rich.console import Console
from typer.testing import CliRunner

from mtagent.cli import replay_cmd
from mtagent.cli.app import app
from mtagent.cli.fit import Column, fit_table

runner = CliRunner()


def _row(strategy: str, tokens: int) -> dict:
    return {"strategy": strategy, "turns": 1_234, "cumulative_tokens": tokens, "ratio_to_raw": 0.123,
            "cached_cost": {"anthropic": 1_234_567.0, "openai": 2_345_678.0}, "peak_tokens": 165_000,
            "overflows": False, "summary_calls": 12, "violations": 0, "retention": 0.875}


@pytest.mark.parametrize("width", [80, 60, 40])
def test_the_replay_table_never_cuts_a_number(monkeypatch, width):
    out = Console(width=width, record=True, color_system=None)
    monkeypatch.setattr(replay_cmd, "console", out)
    group = [_row("baseline", 5_615_578), _row("session-memory+microcompact", 165)]
    out.print(replay_cmd._table("one session", group, both_costs=True))
    text = out.export_text()
    assert max(len(line) for line in text.splitlines()) <= width
    assert "5,615,578" in text and re.search(r"\b165\b", text)
    assert "session-memory+microcompact" in text  # the strategy name whole too
    for cell in re.findall(r"[\d,]{4,}", text):  # every number shown is one of ours, whole
        assert cell in {"5,615,578", "1234", "1,234,567", "2,345,678", "165,000"}, cell
    if width < 100:
        assert "not shown" in " ".join(text.split())  # a dropped column is said, not hidden


@pytest.mark.parametrize("width", [80, 60])
def test_sessions_list_keeps_the_id_whole_and_wraps_or_drops_the_rest(tmp_path, width):
    script = tmp_path / "script.json"
    script.write_text('["ok"]', encoding="utf-8")
    model = f"scripted:{tmp_path / 'a-rather-long-folder-name' / '..' / 'script.json'}"
    for _ in range(2):
        assert runner.invoke(app, ["run", "--cwd", str(tmp_path), "--model", model, "hi"]).exit_code == 0
    result = runner.invoke(app, ["sessions", "list", "--cwd", str(tmp_path)], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= width
    ids = re.findall(r"\b\d{8}T\d{9}-[0-9a-f]{6}\b", result.output)
    assert len(ids) == 2  # whole ids, nothing cut with an ellipsis
    assert "…" not in result.output


def test_a_wrapping_column_folds_and_whole_columns_keep_their_width():
    out = Console(width=50, record=True, color_system=None)
    table, dropped = fit_table(out, [Column("id"), Column("note", wrap=True, drop=1)],
                               [["20261201T131539171-a1b2c3", "a long free text that may wrap"]])
    out.print(table)
    text = out.export_text()
    assert dropped == [] and "20261201T131539171-a1b2c3" in text and "wrap" in text
