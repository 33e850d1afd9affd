"""``mtagent replay``: table, JSON and the self-contained HTML report (rendered in Chromium if present); its
choices (kept light for `mtagent --help`) match the real implementations."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtagent.cli.app import app
from mtagent.replay import names
from mtagent.replay.strategies import REGISTRY

runner = CliRunner()
SMALL = "mini-swe-agent/tests__test_data__github_issue.traj.json"
CHROMIUM = Path("/usr/bin/chromium")
TIGHT_ENV = {"MTAGENT_CONTEXT__SUMMARY_RESERVED_TOKENS": "500", "MTAGENT_CONTEXT__AUTOCOMPACT_BUFFER_TOKENS": "500",
             "MTAGENT_CONTEXT__COMPRESSION_PRESERVE_MIN_TOKENS": "500",
             "MTAGENT_CONTEXT__COMPRESSION_PRESERVE_MAX_TOKENS": "1500"}


def test_json_output_has_one_result_per_session_and_strategy(trajectories: Path) -> None:
    result = runner.invoke(
        app, ["replay", str(trajectories / SMALL), str(trajectories / "claude-code/tool_heavy.jsonl"),
              "-s", "raw", "-s", "masking", "-s", "mtagent", "--window", "65536", "--json"],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    rows = data["results"]
    assert len(rows) == 6
    keys = {"file", "format", "strategy", "turns", "cumulative_tokens", "ratio_to_raw", "cached_cost",
            "peak_tokens", "summary_calls", "violations", "retention"}
    assert keys <= set(rows[0])
    raw = next(r for r in rows if r["strategy"] == "raw" and r["format"] == "claude-code")
    assert raw["ratio_to_raw"] == 1.0 and set(raw["cached_cost"]) == {"anthropic", "openai"}
    assert raw["recorded_input_tokens"] > raw["cumulative_tokens"]


def test_table_output_names_every_strategy(trajectories: Path) -> None:
    result = runner.invoke(app, ["replay", str(trajectories / SMALL), "-s", "threshold-compact"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "threshold-compact" in result.output and "raw" in result.output


def test_unknown_strategy_and_bad_file_are_one_line_errors(tmp_path: Path, trajectories: Path) -> None:
    bad = runner.invoke(app, ["replay", str(trajectories / SMALL), "-s", "magic"])
    assert bad.exit_code == 2 and "unknown strategy 'magic'" in bad.output
    junk = tmp_path / "junk.json"
    junk.write_text('{"x": 1}')
    result = runner.invoke(app, ["replay", str(junk)])
    assert result.exit_code == 2 and "cannot tell the format" in result.output
    assert "Traceback" not in result.output
    small = runner.invoke(app, ["replay", str(trajectories / SMALL), "--window", "512"])
    assert small.exit_code == 2 and "--window" in small.output


def test_html_report_is_self_contained_with_a_chart_per_session(tmp_path: Path, trajectories: Path) -> None:
    out = tmp_path / "report.html"
    result = runner.invoke(app, ["replay", str(trajectories / SMALL), "--window", "2048", "--html", str(out), "--json"], env=TIGHT_ENV)
    assert result.exit_code == 0, result.output
    html = out.read_text()
    assert html.count("<svg") == 2 and "<polyline" in html and 'class="compaction"' in html
    assert not re.search(r"<script|<link|src=\"http|href=\"http", html)


@pytest.mark.skipif(not CHROMIUM.exists(), reason="headless Chromium not installed at /usr/bin/chromium (apt-get install chromium)")
def test_html_report_renders_in_headless_chromium(tmp_path: Path, trajectories: Path) -> None:
    out = tmp_path / "report.html"
    runner.invoke(app, ["replay", str(trajectories / SMALL), "--window", "2048", "--html", str(out), "--json"], env=TIGHT_ENV)
    png = tmp_path / "shot.png"
    cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
           f"--screenshot={png}", "--window-size=1000,900", out.as_uri()]
    subprocess.run(cmd, capture_output=True, timeout=120, check=False)
    assert png.exists() and png.stat().st_size > 5_000


def test_table_stays_readable_in_an_80_column_terminal(trajectories: Path) -> None:
    result = runner.invoke(app, ["replay", str(trajectories / SMALL)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert all(len(line) <= 80 for line in result.output.splitlines())
    for name in ("lc-clear-tool-uses", "threshold-compact", "mtagent-sm"):
        assert re.search(rf"^ ?{re.escape(name)}\s", result.output, flags=re.M), name
    assert "…" not in result.output


def test_many_sessions_end_with_one_overall_table_and_quiet_drops_the_notes(trajectories: Path) -> None:
    files = [str(trajectories / SMALL), str(trajectories / "claude-code/short.jsonl")]
    result = runner.invoke(app, ["replay", *files, "-s", "masking"])
    assert result.exit_code == 0, result.output
    assert result.output.count("strategy") == 1 and "overall: 2 sessions from 2 file(s)" in result.output
    assert "--per-session" in result.output
    masking = next(line for line in result.output.splitlines() if line.strip().startswith("masking"))
    assert re.search(r"\s\d\.\d{3}\s", masking), masking  # × raw of the sums, not "-" (raw is not listed)
    each = runner.invoke(app, ["replay", *files, "-s", "masking", "--per-session", "--quiet"])
    assert each.output.count("strategy") == 3 and "sum.:" not in each.output and "replay at" not in each.output


def test_overall_rows_sum_tokens_and_divide_the_sums() -> None:
    from mtagent.replay.report import overall_rows

    def r(file, strategy, tokens, ret):
        return {"file": file, "strategy": strategy, "turns": 2, "cumulative_tokens": tokens, "retention": ret,
                "cached_cost": {"anthropic": tokens / 10}, "peak_tokens": tokens // 2, "overflows": 0,
                "summary_calls": 1, "violations": 0}

    rows = [r("a", "raw", 1000, 1.0), r("a", "m", 500, 0.5), r("b", "raw", 3000, 1.0), r("b", "m", 1500, None)]
    overall = {o["strategy"]: o for o in overall_rows(rows, ["raw", "m"])}
    assert overall["m"]["cumulative_tokens"] == 2000 and overall["m"]["ratio_to_raw"] == 0.5
    assert overall["m"]["retention"] == 0.5 and overall["m"]["sessions"] == 2 and overall["m"]["turns"] == 4
    assert overall["raw"]["cached_cost"] == {"anthropic": 400.0}


def test_progress_bar_counts_files_and_replays_on_a_terminal(trajectories: Path) -> None:
    import io

    from rich.console import Console

    from mtagent.cli.replay_progress import replay_progress
    from mtagent.config import Settings
    from mtagent.replay.executors.local import LocalExecutor
    from mtagent.replay.names import DEFAULT_WINDOW
    from mtagent.replay.units import replay_parallel

    out = io.StringIO()
    term = Console(file=out, force_terminal=True, width=100)
    with replay_progress(term, enabled=True) as progress:
        replay_parallel([trajectories / SMALL, trajectories / "claude-code/short.jsonl"], ["masking"], DEFAULT_WINDOW, None,
                        Settings(), LocalExecutor(1), progress)
        tasks = {t.description.split(" ")[0]: t for t in progress.progress.tasks}
        assert tasks["file"].completed == 2 and tasks["file"].total == 2
    with replay_progress(term, enabled=False) as none:
        assert none is None


def test_format_names_match_the_converters():
    from mtagent.replay import formats

    modules = (formats.aider, formats.claude_code, formats.mini_swe, formats.mtagent_transcript, formats.openhands,
               formats.swe_agent)
    assert set(names.FORMAT_NAMES) == {v for m in modules for k, v in vars(m).items() if k.startswith("FORMAT")}


def test_every_strategy_name_builds_a_strategy_and_peers_are_strategies():
    assert set(names.PEERS) <= set(names.STRATEGY_NAMES)
    assert set(REGISTRY) == set(names.STRATEGY_NAMES)
