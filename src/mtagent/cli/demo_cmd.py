"""``mtagent demo``: the real agent loop, tools, transcript and engine — no model, no key.

A clearly labelled *scripted policy* (``mtagent.agent.demo``) stands in for the model and works
on a real code base (the installed package's own source, or ``--cwd``) with a deliberately small
window, so offloading, microcompact and compaction visibly happen. What the engine did is then
read back from the session's transcript — the same source ``mtagent sessions show`` and
``--resume`` use — and printed, followed by the ``/context`` grid.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from mtagent.cli.context_render import WindowUsage, render_context_grid, render_demo_summary
from mtagent.cli.output import console, user_errors
from mtagent.cli.session_options import demo_root
from mtagent.cli.session_report import SessionReport, read_session_report
from mtagent.errors import UsageError

# Below this the fixed part of every request (system prompt and tool definitions, about 2.4K
# tokens) leaves the scaled tail and summary no room, and the demo would only show failures.
MIN_DEMO_WINDOW = 4_096


def window_usage_of(report: SessionReport, window: int, threshold: int) -> WindowUsage:
    """The window after the last model call, from the last ``context_plan`` record."""
    if report.last_plan is None:
        return WindowUsage(window, threshold, {}, report.model)
    return WindowUsage.from_plan_record(report.last_plan, window, report.model)


def demo(
    cwd: Path = typer.Option(None, "--cwd", help="Code base to explore (default: mtagent's own source)."),
    window: int = typer.Option(None, "--window", show_default=False,
                               help="Context window in tokens (default 16,384: small, so compaction happens)."),
) -> None:
    """Run the agent on a real code base with a scripted policy in place of a model (no key needed)."""
    run_demo_command(cwd, window)


@user_errors
def run_demo_command(cwd: Path | None, window: int | None) -> None:
    from mtagent.agent.demo import DEFAULT_WINDOW, run_demo  # the agent stack loads only here

    window = DEFAULT_WINDOW if window is None else window
    if window < MIN_DEMO_WINDOW:
        raise UsageError(f"--window {window} is too small for the demo; use at least {MIN_DEMO_WINDOW}")
    root = (cwd or demo_root()).expanduser().resolve()
    if not root.is_dir():
        raise UsageError(f"--cwd {root} is not a folder")
    console.print(f"[bold]mtagent demo[/] — a [yellow]scripted policy[/] (not a model) drives the real agent "
                  f"loop over {escape(str(root))} with a {window:,}-token window\n", soft_wrap=True)
    result = _run_live(root, window, run_demo)
    report = read_session_report(result.transcript_path)
    threshold = result.threshold  # what the demo session's engine fires at

    console.print(render_demo_summary(report, tokens_kept_out=result.persisted_tokens_saved))
    console.print(f"Ran in {result.seconds:.1f} s: {result.model_calls} calls to the scripted policy, "
                  f"{result.tool_calls} tool calls")
    _print_subagents(result.transcript_path)
    console.print()
    console.print(render_context_grid(window_usage_of(report, window, threshold), title="Context after the demo",
                                      report=report))  # with the subagent's tokens on a line of their own
    console.print(TERMS, soft_wrap=True, highlight=False)
    sid = escape(report.session_id)
    where = escape(str(root))
    console.print(f"\nsession {sid} · transcript {escape(str(result.transcript_path))}", soft_wrap=True)
    console.print(f"read it back:  [bold]mtagent sessions show {sid} --cwd {where}[/]", soft_wrap=True)
    if cwd is None:  # the demo read mtagent's own installed source: an agent should not work in there
        console.print("try a real model on your own project:  [bold]cd your-project && mtagent --model "
                      "openai:gpt-4o-mini[/]  (OPENAI_API_KEY set; any OpenAI-compatible server with --base-url)",
                      soft_wrap=True)
    else:
        console.print(f"go on with a real model:  [bold]mtagent --cwd {where} --resume {sid} --model "
                      "openai:gpt-4o-mini[/]", soft_wrap=True)


# What the words in the summary and the grid mean, for someone who has just seen them for the first time.
TERMS = (
    "\n[bold]What you saw[/]\n"
    "  [bold]⏺ tool(…)[/]         each tool call with what it does (command, path, pattern); under it, "
    "how it ended: the exit code when not 0 and the first lines of the output\n"
    "  [bold]range read[/]        a file over read_file's limit read a page at a time (offset, limit), "
    "as a capable model does\n"
    "  [bold]offloaded result[/]  a large tool result saved to a file; the model sees a preview and the path\n"
    "  [bold]microcompact[/]      old tool results cleared from what the model sees (the transcript keeps them)\n"
    "  [bold]session memory[/]    notes kept up to date in the background; a compaction can use them instead of "
    "a model call\n"
    "  [bold]compaction[/]        older turns replaced by a hand-off summary, the recent turns kept as they were\n"
    "  [bold]autocompact buffer[/] room kept free below the window: compaction fires when the context reaches it"
)


def _run_live(root: Path, window: int, run_demo: Any) -> Any:
    """Run the demo with the engine's events shown as they happen (tool calls, offloads, compaction)."""
    from mtagent.cli.turn_display import TurnDisplay
    from mtagent.events import EventBus

    bus = EventBus()
    display = TurnDisplay(console=console, activity=console)
    display.attach(bus)
    try:
        return run_demo(root, window=window, events=bus)
    finally:
        display.detach()
        display.end_text()


def _print_subagents(transcript: Path) -> None:
    """The subagent the demo started: what it explored in its own window and what it reported."""
    from mtagent.agent.subagents.tree import subagent_tree, tree_lines
    from mtagent.terminal_text import terminal_safe

    nodes = subagent_tree(transcript)
    if nodes:
        console.print(f"{len(nodes)} subagent(s) explored in their own window and reported back:")
        for line in tree_lines(nodes):
            console.print(escape(terminal_safe(line)), soft_wrap=True, highlight=False)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
