"""``mtagent tokens PATH…``: exact token counts of files or stdin."""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.table import Table

from mtagent.cli.output import console, user_errors
from mtagent.context.tokens import count_text_tokens, heuristic_text_tokens
from mtagent.errors import UsageError

ENCODINGS = ("o200k_base", "cl100k_base")


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.buffer.read().decode("utf-8", errors="replace")
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"{path} is a directory; pass files (e.g. {path}/*.py) or '-' for stdin")
    try:
        return p.read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError as exc:
        raise UsageError(f"no such file: {path}") from exc
    except PermissionError as exc:
        raise UsageError(f"cannot read {path}: permission denied") from exc


def tokens(
    paths: list[str] = typer.Argument(None, help="Files to count; '-' or nothing reads stdin."),
    encoding: list[str] = typer.Option(
        ["o200k_base"], "--encoding", "-e", help="Encoding(s): o200k_base, cl100k_base. Repeat for several."
    ),
    heuristic: bool = typer.Option(False, "--heuristic", help="Also show the no-tokenizer estimate and its error."),
    total_only: bool = typer.Option(False, "--total", help="Print only the total of the first encoding."),
) -> None:
    """Count tokens exactly (offline) in files or stdin, per encoding."""
    run_tokens(paths or ["-"], encoding, heuristic, total_only)


@user_errors
def run_tokens(paths: list[str], encodings: list[str], heuristic: bool, total_only: bool) -> None:
    for enc in encodings:
        if enc not in ENCODINGS:
            raise UsageError(f"unknown encoding {enc!r}; choose from {', '.join(ENCODINGS)}")
    texts = [(p, _read(p)) for p in paths]
    totals = {enc: 0 for enc in encodings}
    rows = []
    for name, text in texts:
        counts = {enc: count_text_tokens(text, enc) for enc in encodings}
        for enc, n in counts.items():
            totals[enc] += n
        rows.append((name, len(text), counts, heuristic_text_tokens(text) if heuristic else None))
    if total_only:
        console.print(totals[encodings[0]])
        return
    table = Table(title=None, show_footer=len(rows) > 1)
    table.add_column("file", footer="total")
    table.add_column("chars", justify="right", footer=str(sum(r[1] for r in rows)))
    for enc in encodings:
        table.add_column(enc, justify="right", footer=str(totals[enc]))
    if heuristic:
        table.add_column("heuristic", justify="right")
        table.add_column("error", justify="right")
    for name, chars, counts, est in rows:
        cells = [name, str(chars), *(str(counts[e]) for e in encodings)]
        if heuristic:
            exact = counts[encodings[0]]
            err = f"{(est - exact) / exact:+.1%}" if exact else "-"
            cells += [str(est), err]
        table.add_row(*cells)
    console.print(table)


def register(app: typer.Typer) -> None:
    app.command("tokens")(tokens)
