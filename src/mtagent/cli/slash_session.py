"""``/clear``, ``/model`` and ``/cost``: the session-level slash commands.

``/clear`` starts a new session with the same settings (the old one stays on disk, resumable);
``/model provider:name`` goes on with the same session under another model (the transcript is
the truth, so nothing is lost); ``/cost`` sums the session's model-call usage — input, cache
reads and cache writes apart, output — and prices it from ``agent.prices``.

Importing this module adds the three commands to :data:`mtagent.cli.slash.COMMANDS`.
"""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from mtagent.cli.slash import COMMANDS
from mtagent.cli.slash_host import CommandSpec, CostReport, SlashCommand, SlashHost, SlashOutcome
from mtagent.errors import UsageError


def cmd_clear(host: SlashHost, command: SlashCommand) -> SlashOutcome:
    if command.rest:
        raise UsageError("usage: /clear (starts a new session; /resume goes back)")
    new_id = host.clear()
    host.console.print(f"new session {escape(new_id)} (same settings; the previous one is saved, /resume returns)")
    return SlashOutcome.CONTINUE


def cmd_model(host: SlashHost, command: SlashCommand) -> SlashOutcome:
    words = command.words
    if len(words) != 1:
        raise UsageError("usage: /model provider:name (e.g. /model openai:gpt-4o-mini)")
    name = host.switch_model(words[0])
    host.console.print(f"model is now {escape(name)} (same session)")
    return SlashOutcome.CONTINUE


def cmd_cost(host: SlashHost, command: SlashCommand) -> SlashOutcome:
    if command.rest:
        raise UsageError("usage: /cost")
    report = host.cost()
    if report is None:
        host.console.print("[dim]No model call yet.[/]")
        return SlashOutcome.CONTINUE
    u = report.usage
    # a line of its own, not the table's title: a title wraps to the (narrow) table's width
    host.console.print(f"[italic]Session cost · {escape(report.model)} · {u.calls} model call(s)[/]")
    table = Table()
    table.add_column("tokens")
    table.add_column("count", justify="right")
    for label, value in (("input (uncached)", u.input), ("cache reads", u.cache_read),
                         ("cache writes", u.cache_write), ("output", u.output)):
        table.add_row(label, f"{value:,}")
    host.console.print(table)
    if report.cost_usd is None:
        host.console.print(f"[dim]no price for {escape(report.model)}: add it to agent.prices "
                           "(USD per million tokens: input, output, cache_read, cache_write)[/]")
    else:
        host.console.print(f"cost: ${report.cost_usd:,.4f}")
    return SlashOutcome.CONTINUE


COMMANDS.update({spec.name: spec for spec in (
    CommandSpec("clear", "/clear", "Start a new session with the same settings (this one stays saved).",
                cmd_clear),
    CommandSpec("model", "/model provider:name", "Go on with this session under another model.",
                cmd_model),
    CommandSpec("cost", "/cost", "Tokens and cost of this session (cache reads and writes apart).",
                cmd_cost),
)})
