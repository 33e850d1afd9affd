"""``mtagent replay FILE…``: replay recorded agent sessions through context strategies.

Prints a table per session and strategy (tokens sent, ratio to raw, cache-aware cost, peak,
summary calls, protocol violations, fact retention); ``--json`` prints one object instead;
``--html`` also writes a self-contained report with a chart per session. Settings (thresholds,
tool-result limits) come from the usual config files and ``MTAGENT_*`` variables.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich import box
from rich.table import Table

from mtagent.cli.output import console, user_errors
from mtagent.config import load_settings
from mtagent.errors import UsageError
from mtagent.replay.names import DEFAULT_WINDOW, FORMAT_NAMES, STRATEGY_NAMES

DEFAULT_STRATEGIES = list(STRATEGY_NAMES)


def replay(
    files: list[Path] = typer.Argument(..., help="Recorded sessions: Claude Code JSONL, mini-swe-agent, SWE-agent, OpenHands, aider, mtagent."),
    strategy: list[str] = typer.Option(
        DEFAULT_STRATEGIES, "--strategy", "-s", help=f"Strategy to replay (repeat): {', '.join(STRATEGY_NAMES)}."
    ),
    window: int = typer.Option(DEFAULT_WINDOW, "--window", "-w", min=1024, help="Context window in tokens."),
    fmt: str | None = typer.Option(None, "--format", "-f", help=f"Input format (default: detect): {', '.join(FORMAT_NAMES)}."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object {\"results\": [...]} instead of a table."),
    html: Path | None = typer.Option(None, "--html", help="Also write a self-contained HTML report to this file."),
) -> None:
    """Replay sessions open-loop: what each strategy would have sent at every model call."""
    run_replay(files, strategy, window, fmt, as_json, html)


@user_errors
def run_replay(
    files: list[Path], strategies: list[str], window: int, fmt: str | None, as_json: bool, html: Path | None
) -> None:
    unknown = [s for s in strategies if s not in STRATEGY_NAMES]
    if unknown:
        raise UsageError(f"unknown strategy {unknown[0]!r}; choose from {', '.join(STRATEGY_NAMES)}")
    if fmt is not None and fmt not in FORMAT_NAMES:
        raise UsageError(f"unknown format {fmt!r}; choose from {', '.join(FORMAT_NAMES)}")
    from mtagent.replay.report import replay_files, rows  # loads the engine and LangChain only here

    names = list(dict.fromkeys(strategies))
    sessions = replay_files(files, names, window, fmt, load_settings(Path.cwd()))
    table_rows = rows(sessions, names)
    if html is not None:
        from mtagent.replay.report_html import write_report

        write_report(html, sessions, names)
    if as_json:
        typer.echo(json.dumps({"results": table_rows}, ensure_ascii=False))
        return
    _print_table(table_rows, window)
    if html is not None:
        console.print(f"report written to {html}")


def _print_table(table_rows: list[dict], window: int) -> None:
    """One compact table per session, so strategy names and numbers stay readable at 80 columns."""
    both_costs = console.width >= 100
    console.print(f"replay at a {window:,}-token window · cost in input-token equivalents "
                  + ("(A: Anthropic-style cache, O: OpenAI-style)" if both_costs
                     else "with an Anthropic-style cache (--json or a wider terminal adds OpenAI-style)"))
    sessions: dict[str, list[dict]] = {}
    for r in table_rows:
        sessions.setdefault(str(r["file"]), []).append(r)
    for name, group in sessions.items():
        table = Table(title=name, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
        table.add_column("strategy", no_wrap=True)
        columns = ("turns", "tokens", "× raw", "cost A", "cost O", "peak", "sum.", "viol.", "ret.")
        for col in columns if both_costs else [c for c in columns if c != "cost O"]:
            table.add_column(col, justify="right", no_wrap=True)
        for r in group:
            costs = r["cached_cost"]
            cells = [
                r["strategy"], str(r["turns"]), f"{r['cumulative_tokens']:,}",
                f"{r['ratio_to_raw']:.3f}" if r["ratio_to_raw"] is not None else "-",
                f"{costs.get('anthropic', 0):,.0f}", f"{costs.get('openai', 0):,.0f}",
                f"{r['peak_tokens']:,}" + (" ⚠" if r["overflows"] else ""), str(r["summary_calls"]),
                str(r["violations"]), f"{r['retention']:.3f}" if r["retention"] is not None else "-",
            ]
            if not both_costs:
                del cells[5]
            table.add_row(*cells)
        console.print(table)
    console.print("sum.: summary calls · viol.: tool-pairing violations · ret.: fact retention · "
                  "⚠: over the window")


def register(app: typer.Typer) -> None:
    app.command("replay")(replay)
