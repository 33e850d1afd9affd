"""Shared console helpers: one rich console per stream, and the one-line error exit."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from mtagent.errors import MTAgentError

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

F = TypeVar("F", bound=Callable[..., Any])


def print_error(message: str) -> None:
    """``error: message`` on one line of stderr."""
    err_console.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)


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
