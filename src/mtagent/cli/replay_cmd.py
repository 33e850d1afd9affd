"""``mtagent replay FILE…``: replay recorded agent sessions through context strategies.

Prints a table per session and strategy (tokens sent, ratio to raw, cache-aware cost, peak,
summary calls, protocol violations, fact retention); ``--json`` prints one object instead;
``--html`` also writes a self-contained report with a chart per session. Settings (thresholds,
tool-result limits) come from the usual config files and ``MTAGENT_*`` variables.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from mtagent.cli.executor_options import ExecutorChoice, executor_option, ray_address_option, workers_option
from mtagent.cli.fit import Column, dropped_note, fit_table
from mtagent.cli.output import console, err_console, table_box, user_errors
from mtagent.cli.replay_progress import replay_progress
from mtagent.config import load_settings
from mtagent.errors import UsageError
from mtagent.replay.names import DEFAULT_WINDOW, FORMAT_NAMES, STRATEGY_NAMES
from mtagent.terminal_text import json_text, terminal_safe

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
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar and no notes: only the tables."),
    per_session: bool = typer.Option(False, "--per-session", help="A table for every session before the overall "
                                     "one (the default when there is only one session)."),
    summary_price: float = typer.Option(1.0, "--summary-price", min=0.0, max=100.0, help="Price summary calls at this "
                                        "share of the main model (0.25: a compact model at a quarter of the price)."),
    tune: bool = typer.Option(False, "--tune", help="Search the context policy's knobs (trigger, tail sizes, "
                              "clearing) on these sessions; print the best setting as a config snippet."),
    executor: str = executor_option(),
    ray_address: str | None = ray_address_option(),
    workers: int | None = workers_option(),
) -> None:
    """Replay sessions open-loop: what each strategy would have sent at every model call."""
    run = ExecutorChoice(executor, ray_address, workers)
    if tune:
        run_tune(files, window, fmt, as_json, quiet=quiet, run=run)
        return
    run_replay(files, strategy, window, fmt, as_json, html, quiet=quiet, per_session=per_session, run=run,
               summary_price=summary_price)


@user_errors
def run_tune(files: list[Path], window: int, fmt: str | None, as_json: bool, *, quiet: bool = False,
             run: ExecutorChoice | None = None) -> None:
    """``--tune``: every candidate of :data:`mtagent.replay.tune.GRID` on the sessions (see that module)."""
    if fmt is not None and fmt not in FORMAT_NAMES:
        raise UsageError(f"unknown format {fmt!r}; choose from {', '.join(FORMAT_NAMES)}")
    from mtagent.replay.formats import load_trajectories
    from mtagent.replay.tune import best, report_lines, to_json, tune

    from mtagent.replay.units import refs_for

    show = not quiet and not as_json and err_console.is_terminal

    def progress(done: int, total: int) -> None:
        if show:
            err_console.print(f"tuning: {done}/{total} replays", end="\r")

    with (run or ExecutorChoice()).open() as executor:
        sessions = [ref for path in files
                    for ref in refs_for(path, len(load_trajectories(path, fmt)), fmt, inline=executor.name != "local")]
        scores = tune(sessions, load_settings(Path.cwd()), window=window, progress=progress, executor=executor)
    chosen = best(scores)
    if as_json:
        typer.echo(json_text(to_json(scores, chosen)))
        return
    for line in report_lines(scores, chosen, window=window, cache_model="anthropic"):
        typer.echo(terminal_safe(line))  # session labels come from transcript file names


@user_errors
def run_replay(
    files: list[Path], strategies: list[str], window: int, fmt: str | None, as_json: bool, html: Path | None,
    *, quiet: bool = False, per_session: bool = False, run: ExecutorChoice | None = None, summary_price: float = 1.0,
) -> None:
    unknown = [s for s in strategies if s not in STRATEGY_NAMES]
    if unknown:
        raise UsageError(f"unknown strategy {unknown[0]!r}; choose from {', '.join(STRATEGY_NAMES)}")
    if fmt is not None and fmt not in FORMAT_NAMES:
        raise UsageError(f"unknown format {fmt!r}; choose from {', '.join(FORMAT_NAMES)}")
    from mtagent.replay.report import overall_rows, rows  # the engine and LangChain load here
    from mtagent.replay.units import replay_parallel

    names = list(dict.fromkeys(strategies))
    with ((run or ExecutorChoice()).open() as executor,
          replay_progress(err_console, enabled=not quiet and err_console.is_terminal) as progress):
        sessions, failures = replay_parallel(files, names, window, fmt, load_settings(Path.cwd()), executor,
                                             progress=progress, summary_price=summary_price)
    for failure in failures:
        err_console.print(f"[red]failed[/] {escape(failure.label)} · {escape(failure.strategy)} after "
                          f"{failure.attempts} attempts: {escape(str(failure.error))}", highlight=False, soft_wrap=True)
    table_rows = rows(sessions, names)
    with_raw = names if "raw" in names else [*names, "raw"]  # raw is always replayed: the overall ratio needs it
    overall = [r for r in overall_rows(rows(sessions, with_raw), with_raw) if r["strategy"] in names]
    if html is not None:
        from mtagent.replay.report_html import write_report

        write_report(html, sessions, names)
    if as_json:
        typer.echo(json_text({"results": table_rows, "overall": overall,
                              "failures": [f.as_dict() for f in failures]}))
        if failures:
            raise typer.Exit(1)
        return
    both_costs = console.width >= 100
    if not quiet:
        console.print(f"replay at a {window:,}-token window · cost in input-token equivalents "
                      + ("(A: Anthropic-style cache, O: OpenAI-style)" if both_costs
                         else "with an Anthropic-style cache (--json or a wider terminal adds OpenAI-style)")
                      + (f" · summary calls at {summary_price:g}× the main model's price" if summary_price != 1.0 else ""))
    by_file: dict[str, list[dict]] = {}
    for r in table_rows:
        by_file.setdefault(str(r["file"]), []).append(r)
    if per_session or len(by_file) == 1:
        for name, group in by_file.items():
            console.print(_table(name, group, both_costs))
    if len(by_file) > 1:
        title = f"overall: {len(by_file)} sessions from {len(files)} file(s) (tokens, costs summed; × raw of the sums)"
        console.print(_table(title, overall, both_costs))
    if not quiet:
        console.print("sum.: summary calls · viol.: tool-pairing violations · ret.: fact retention"
                      + (" (mean)" if len(by_file) > 1 else "") + " · work: work-state items lost / checked at "
                      "compactions · ⚠: over the window")
        if len(by_file) > 1 and not per_session:
            console.print("--per-session adds a table for each session")
    if html is not None:
        err_console.print(f"report written to {html}")
    if failures:
        raise typer.Exit(1)


# strategy names and numbers are never cut; a narrow terminal drops columns, least needed first
REPLAY_COLUMNS = (Column("strategy"), Column("turns", "right", drop=5), Column("tokens", "right"),
                  Column("× raw", "right", drop=7), Column("cost A", "right", drop=8),
                  Column("cost O", "right", drop=1), Column("peak", "right", drop=6),
                  Column("sum.", "right", drop=3), Column("viol.", "right", drop=2), Column("ret.", "right", drop=4),
                  Column("work", "right", drop=9))


def _table(title: str, group: list[dict], both_costs: bool) -> Table:
    """Strategy rows under a title; names and numbers stay whole at any width (see cli.fit)."""
    columns = [c for c in REPLAY_COLUMNS if both_costs or c.name != "cost O"]
    rows = []
    for r in group:
        costs = r["cached_cost"]
        cells = [
            escape(str(r["strategy"])), str(r["turns"]), f"{r['cumulative_tokens']:,}",
            f"{r['ratio_to_raw']:.3f}" if r["ratio_to_raw"] is not None else "-",
            f"{costs.get('anthropic', 0):,.0f}", f"{costs.get('openai', 0):,.0f}",
            f"{r['peak_tokens']:,}" + (" ⚠" if r["overflows"] else ""), str(r["summary_calls"]),
            str(r["violations"]), f"{r['retention']:.3f}" if r["retention"] is not None else "-",
            _work(r.get("work_state")),
        ]
        if not both_costs:
            del cells[5]
        rows.append(cells)
    table, dropped = fit_table(console, columns, rows, title=escape(title), title_justify="left",
                               box=table_box(console), pad_edge=False, collapse_padding=True)
    note = dropped_note(dropped)
    if note:
        table.caption, table.caption_justify = note, "left"
    return table


def _work(state: dict | None) -> str:
    """``lost/checked`` work-state items; ``-`` when nothing was checked (no compaction)."""
    if not state or not state.get("checked"):
        return "-"
    return f"{state['lost']}/{state['checked']}"


def register(app: typer.Typer) -> None:
    app.command("replay")(replay)
