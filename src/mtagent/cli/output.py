"""Shared console helpers: one rich console per stream, and the one-line error exit.

Output that does not go to a terminal (a pipe, a file, ``$(…)``) is read by scripts and other
tools, so it is never cut to a guessed width: no truncation, no ellipses in numbers, plain ASCII
table borders and no wrapping of long lines. ``COLUMNS`` still wins when set, as it asks for a width.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any, NoReturn, TypeVar

import typer
from rich import box
from rich.console import Console, ConsoleDimensions, ConsoleOptions, RenderableType
from rich.markup import escape
from rich.segment import Segment

from mtagent.errors import MTAgentError
from mtagent.terminal_text import terminal_safe

PIPE_WIDTH = 2000  # wide enough that no table column of ours is ever squeezed in a pipe


class SafeConsole(Console):
    """A rich console that never emits a control character it was given as text.

    Every printer also sanitizes what it prints (:func:`mtagent.terminal_text.terminal_safe`, so
    a table measures what is shown); this is the backstop for the one that forgets: each text
    segment is made terminal-safe after rendering, while rich's own control segments (cursor moves
    of a spinner) and the style codes added at output pass untouched.
    """

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or not segment.text or not segment.text.strip("\r\n"):
                yield segment  # rich's own codes, or a print's end (``end="\r"`` redraws a progress line)
            else:
                yield Segment(terminal_safe(segment.text), segment.style, None)


class StreamConsole(SafeConsole):
    """A rich console that decides terminal or not at every print (stdout may be swapped later)."""

    def _piped(self) -> bool:
        return self._width is None and not self.is_terminal and not self._environ.get("COLUMNS")

    @property
    def size(self) -> ConsoleDimensions:
        if self._piped():
            return ConsoleDimensions(PIPE_WIDTH, self._height or 25)
        return super().size

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size

    @property
    def encoding(self) -> str:
        # rich draws ASCII table borders when the encoding is not UTF-8: plain tables in a pipe
        return "ascii" if not self.is_terminal and not self.record else super().encoding

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if kwargs.get("soft_wrap") is None and self._piped():
            kwargs["soft_wrap"] = True
        super().print(*objects, **kwargs)


# a header rule only, in ASCII: what a table looks like in a pipe or a log
PLAIN_HEAD = box.Box("    \n    \n -- \n    \n    \n    \n    \n    \n", ascii=True)


def table_box(out: Console) -> box.Box:
    """Box-drawing header rule on a terminal, its ASCII twin elsewhere."""
    return box.SIMPLE_HEAD if out.is_terminal else PLAIN_HEAD


console = StreamConsole(highlight=False)
err_console = StreamConsole(stderr=True, highlight=False)

F = TypeVar("F", bound=Callable[..., Any])


def print_error(message: str) -> None:
    """``error: message`` on one line of stderr."""
    # one line in a pipe (scripts read it); on a terminal wrapped at words, not mid-word at the edge
    err_console.print(f"[bold red]error:[/] {escape(terminal_safe(message))}", soft_wrap=not err_console.is_terminal)


def fmt_size(n_bytes: int) -> str:
    """``512 B``, ``1.5 KB``, ``12.0 MB``, ``2.1 GB``: a stored size as a listing shows it."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n_bytes >= size:
            return f"{n_bytes / size:.1f} {unit}"
    return f"{n_bytes} B"


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``error: message`` on one line to stderr and exit with ``code`` (inside a command)."""
    print_error(message)
    raise typer.Exit(code)


def user_errors(func: F) -> F:
    """Turn :class:`MTAgentError` raised by a command into a clean one-line exit."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except MTAgentError as exc:
            fail(str(exc), exc.exit_code)

    return wrapper  # type: ignore[return-value]


def bare_group_help(group: typer.Typer) -> None:
    """A command group called without a subcommand prints its help and exits 0 (asking is not an error)."""

    @group.callback(invoke_without_command=True)
    def _bare(ctx: typer.Context) -> None:
        if ctx.invoked_subcommand is None:
            typer.echo(ctx.get_help())
            raise typer.Exit(0)
