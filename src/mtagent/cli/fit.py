"""Tables that fit the terminal without cutting what users copy or read as numbers.

rich squeezes every column of a table that is too wide, cutting ids and numbers without an
ellipsis (``5,615,57`` for 5,615,578). Here each column says what it can give up: a *whole*
column (an id, a number, a date) is never narrower than its widest cell; a *wrapping* column
(free text such as a model name) folds onto more lines; and when even that does not fit, whole
columns are dropped, least important first, and the caller says which (``--json`` has them all).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

WRAP_MIN_WIDTH = 12  # a wrapping column narrower than this reads as noise
UNBOUNDED = 100_000  # measure a table as if the terminal were endless, then compare


@dataclass(frozen=True, slots=True)
class Column:
    """One column: ``drop`` orders what goes first when the terminal is narrow (0 = never)."""

    name: str
    justify: str = "left"
    drop: int = 0
    wrap: bool = False
    whole_words: bool = False  # a wrapping column never folds inside a word (an id in free text)


def _width(column: Column, cells: Sequence[str]) -> int:
    natural = max([len(column.name), *(Text.from_markup(c).cell_len for c in cells)])
    if column.wrap:
        floor = max([WRAP_MIN_WIDTH, *(len(w) for w in column.name.split())])
        if column.whole_words:
            floor = max([floor, *(Text(w).cell_len for c in cells for w in Text.from_markup(c).plain.split())])
        return min(natural, floor)
    return natural


def _table(columns: Sequence[Column], widths: Sequence[int], rows: Sequence[Sequence[str]],
           **table_kwargs: Any) -> Table:
    table = Table(**table_kwargs)
    for column, width in zip(columns, widths, strict=True):
        if column.wrap:
            table.add_column(column.name, justify=column.justify, overflow="fold", min_width=width)  # type: ignore[arg-type]
        else:
            table.add_column(column.name, justify=column.justify, no_wrap=True, min_width=width)  # type: ignore[arg-type]
    for row in rows:
        table.add_row(*row)
    return table


def fit_table(console: Console, columns: Sequence[Column], rows: Sequence[Sequence[str]],
              **table_kwargs: Any) -> tuple[Table, list[str]]:
    """A table for ``console``'s width, and the names of the columns it had to leave out."""
    keep = list(range(len(columns)))
    widths = [_width(c, [r[i] for r in rows]) for i, c in enumerate(columns)]
    dropped: list[str] = []
    while True:
        shown = [columns[i] for i in keep]
        skeleton = _table(shown, [widths[i] for i in keep], [], **table_kwargs)
        needed = Measurement.get(console, console.options.update_width(UNBOUNDED), skeleton).minimum
        candidates = [i for i in keep if columns[i].drop > 0]
        if needed <= console.width or not candidates:
            break
        out = min(candidates, key=lambda i: columns[i].drop)
        keep.remove(out)
        dropped.append(columns[out].name)
    table = _table([columns[i] for i in keep], [widths[i] for i in keep],
                   [[row[i] for i in keep] for row in rows], **table_kwargs)
    return table, dropped


def dropped_note(dropped: Sequence[str]) -> str | None:
    """One dim line naming the columns a narrow terminal left out, or None."""
    if not dropped:
        return None
    return (f"[dim](narrow terminal: {', '.join(dropped)} not shown — widen it or use --json)[/]")
