"""``/clear``, ``/model`` and ``/cost``: the session-level slash commands.

``/clear`` starts a new session with the same settings (the old one stays on disk, resumable);
``/model provider:name`` goes on with the same session under another model (the transcript is
the truth, so nothing is lost); ``/cost`` sums the session's model-call usage — input, cache
reads and cache writes apart, output — and prices it from ``agent.prices``.

Importing this module adds the three commands to :data:`mtagent.cli.slash.COMMANDS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from rich.markup import escape
from rich.table import Table

from mtagent.cli.slash import COMMANDS, CommandSpec, SlashOutcome, SlashCommand
from mtagent.cli.usage import Usage
from mtagent.errors import UsageError


@dataclass(slots=True, frozen=True)
class CostReport:
    model: str
    usage: Usage
    cost_usd: float | None


class SessionCommandsHost(Protocol):
    console: object

    def clear(self) -> str:
        """Open a new session with the same settings; return its id."""

    def switch_model(self, spec: str) -> str:
        """Go on with this session under ``spec``; return the model's display name."""

    def cost(self) -> CostReport | None:
        """This session's usage and price so far; None before the first message."""


def cmd_clear(host: SessionCommandsHost, command: SlashCommand) -> SlashOutcome:
    if command.rest:
        raise UsageError("usage: /clear (starts a new session; /resume goes back)")
    new_id = host.clear()
    host.console.print(f"new session {escape(new_id)} (same settings; the previous one is saved, /resume returns)")  # type: ignore[attr-defined]
    return SlashOutcome.CONTINUE


def cmd_model(host: SessionCommandsHost, command: SlashCommand) -> SlashOutcome:
    words = command.words
    if len(words) != 1:
        raise UsageError("usage: /model provider:name (e.g. /model openai:gpt-4o-mini)")
    name = host.switch_model(words[0])
    host.console.print(f"model is now {escape(name)} (same session)")  # type: ignore[attr-defined]
    return SlashOutcome.CONTINUE


def cmd_cost(host: SessionCommandsHost, command: SlashCommand) -> SlashOutcome:
    if command.rest:
        raise UsageError("usage: /cost")
    report = host.cost()
    if report is None:
        host.console.print("[dim]No model call yet.[/]")  # type: ignore[attr-defined]
        return SlashOutcome.CONTINUE
    u = report.usage
    # a line of its own, not the table's title: a title wraps to the (narrow) table's width
    host.console.print(f"[italic]Session cost · {escape(report.model)} · {u.calls} model call(s)[/]")  # type: ignore[attr-defined]
    table = Table()
    table.add_column("tokens")
    table.add_column("count", justify="right")
    for label, value in (("input (uncached)", u.input), ("cache reads", u.cache_read),
                         ("cache writes", u.cache_write), ("output", u.output)):
        table.add_row(label, f"{value:,}")
    host.console.print(table)  # type: ignore[attr-defined]
    if report.cost_usd is None:
        host.console.print(f"[dim]no price for {escape(report.model)}: add it to agent.prices "  # type: ignore[attr-defined]
                           "(USD per million tokens: input, output, cache_read, cache_write)[/]")
    else:
        host.console.print(f"cost: ${report.cost_usd:,.4f}")  # type: ignore[attr-defined]
    return SlashOutcome.CONTINUE


COMMANDS.update({spec.name: spec for spec in (
    CommandSpec("clear", "/clear", "Start a new session with the same settings (this one stays saved).",
                cmd_clear),  # type: ignore[arg-type]
    CommandSpec("model", "/model provider:name", "Go on with this session under another model.",
                cmd_model),  # type: ignore[arg-type]
    CommandSpec("cost", "/cost", "Tokens and cost of this session (cache reads and writes apart).",
                cmd_cost),  # type: ignore[arg-type]
)})
