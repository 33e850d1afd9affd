"""What a user sees while a turn runs: streamed text, tool activity, compaction, approvals.

Shared by the REPL and ``mtagent run``. The agent session calls :meth:`TurnDisplay.on_token`
with each piece of the model's text and emits engine events on its bus; :meth:`attach`
subscribes to the ones worth showing. A compaction gets a rich spinner from
``COMPACT_STARTED`` until ``COMPACT_BOUNDARY`` (or ``COMPACT_FAILED``), then one line with its
before/after tokens. Tool activity goes to the *activity* console (stderr for ``run``, so the
answer alone is on stdout).

:func:`make_approver` asks ``Run shell command `…`? [y]es / [n]o / [a]lways`` for each tool
call the approval policy put to the user, and answers in the form
``AgentSession.resume_approval`` reads. Ctrl-C or end of input at that question denies.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.status import Status

from mtagent.cli.glyphs import glyphs
from mtagent.cli.stream_wrap import StreamWrap
from mtagent.cli.tool_lines import call_line, exit_code_of, report_lines, result_lines
from mtagent.events import Event, EventBus, EventType
from mtagent.terminal_text import terminal_safe

ARGS_PREVIEW_CHARS = 160
ReadLine = Callable[[str], str]


def describe_call(tool: str, args: dict[str, Any]) -> str:
    """One line naming what a tool call will do (the shell command itself for shell).

    The model wrote every part of it, so escapes and bidi controls are shown, never run: a
    question that could rewrite itself on the terminal could get a "y" for another command."""
    if tool == "shell" and "command" in args:
        return terminal_safe(f"shell command `{args['command']}`")
    path = args.get("file_path") or args.get("path")
    if path and tool in ("write_file", "edit_file", "read_file"):
        return terminal_safe(f"{tool} on {path}")
    text = json.dumps(args, ensure_ascii=False, default=str)
    if len(text) > ARGS_PREVIEW_CHARS:
        text = text[:ARGS_PREVIEW_CHARS] + "…"
    return terminal_safe(f"{tool} {text}")


@dataclass
class TurnDisplay:
    """Prints one session's turns; keep one per session (it holds the open line state)."""

    console: Console
    activity: Console
    spinner: bool = True
    _status: Status | None = field(default=None, init=False, repr=False)
    _midline: bool = field(default=False, init=False, repr=False)
    _held_cr: str = field(default="", init=False, repr=False)
    _unsubscribe: list[Callable[[], None]] = field(default_factory=list, init=False, repr=False)
    streamed: list[str] = field(default_factory=list, init=False, repr=False)
    _wrap: StreamWrap | None = field(default=None, init=False, repr=False)  # word-wrap on a terminal
    _shown_calls: set[str] = field(default_factory=set, init=False, repr=False)

    # text ---------------------------------------------------------------------------------
    def on_token(self, text: str) -> None:
        self.stop_spinner()
        self.streamed.append(text)
        shown = self._held_cr + text  # a CR ending one piece may be the first half of a CRLF
        self._held_cr = "\r" if shown.endswith("\r") else ""
        shown = terminal_safe(shown[:-1] if self._held_cr else shown)
        if self.console.is_terminal:  # a terminal would wrap a long line mid-word; a pipe gets the text as is
            self._wrap = self._wrap or StreamWrap(self.console.width)
            shown = self._wrap.feed(shown)
        self.console.print(shown, end="", markup=False, highlight=False, soft_wrap=True, emoji=False)
        self._midline = not text.endswith("\n")

    def end_text(self) -> None:
        """Close the streamed line so whatever follows starts on its own line."""
        self._wrap = None  # what follows starts on a line of its own
        if self._held_cr:  # the stream ended on a lone CR: show it
            self._held_cr = ""
            self.console.print(terminal_safe("\r"), end="", markup=False, highlight=False, soft_wrap=True)
        if self._midline:
            self.console.print()
            self._midline = False

    def take_streamed(self) -> str:
        text = "".join(self.streamed)
        self.streamed.clear()
        return text

    # events -------------------------------------------------------------------------------
    def attach(self, bus: EventBus) -> None:
        handlers = {
            EventType.COMPACT_STARTED: self._compact_started,
            EventType.COMPACT_BOUNDARY: self._compact_ended,
            EventType.COMPACT_FAILED: self._compact_ended,
            EventType.AUTO_COMPACT_DISABLED: self._auto_disabled,
            EventType.TOOL_STARTED: self._tool_started,
            EventType.TOOL_FINISHED: self._tool_finished,
            EventType.TOOL_RESULT_PERSISTED: self._persisted,
            EventType.MICRO_COMPACTED: self._microcompacted,
            EventType.MODEL_RETRY: self._retry,
            EventType.MCP_SERVER: self._mcp_server,
        }
        for event_type, handler in handlers.items():
            self._unsubscribe.append(bus.subscribe(handler, event_type))

    def detach(self) -> None:
        for undo in self._unsubscribe:
            undo()
        self._unsubscribe.clear()
        self.stop_spinner()

    def _note(self, markup: str) -> None:
        self.stop_spinner()
        self.end_text()
        self.activity.print(terminal_safe(markup), soft_wrap=True, highlight=False)

    def _compact_started(self, event: Event) -> None:
        self.end_text()
        what = f"compacting the conversation ({event.data.get('trigger', 'auto')}, " \
               f"{int(event.data.get('tokens') or 0):,} tokens)…"
        if self.spinner and self.activity.is_terminal:
            self.stop_spinner()
            self._status = self.activity.status(what, spinner="dots")
            self._status.start()
        else:
            self.activity.print(f"[dim]{escape(what)}[/]")

    def _compact_ended(self, event: Event) -> None:
        if event.data.get("trigger") == "manual":  # /compact prints its own line: the saving, or why not
            self.stop_spinner()
        elif event.type is EventType.COMPACT_FAILED:
            self._note(f"[yellow]compaction failed:[/] {escape(str(event.data.get('error', '')))}")
        else:
            pre = int(event.data.get("pre_tokens") or 0)
            post = int(event.data.get("post_tokens") or 0)
            source = event.data.get("summary_source")
            self._note(f"[green]compacted[/] ({escape(str(event.data.get('trigger', '')))}"
                       f"{', summary from ' + escape(str(source)) if source else ''}): "
                       f"{pre:,} → {post:,} tokens")

    def _auto_disabled(self, event: Event) -> None:
        self._note(f"[yellow]auto compaction disabled after {event.data.get('consecutive_failures')} "
                   f"failures;[/] {escape(str(event.data.get('hint', 'run /compact manually')))}")

    def _tool_started(self, event: Event) -> None:
        call_id = event.data.get("tool_call_id")
        if call_id is not None:
            key = f"{event.data.get('subagent') or ''}:{call_id}"
            if key in self._shown_calls:
                return  # the same call announced again after an approval pause: shown once
            self._shown_calls.add(key)
        args = event.data.get("args")
        indent, who = _child(event)
        line = call_line(str(event.data.get("tool", "?")), args if isinstance(args, dict) else {},
                         self.activity.width - 2 - len(indent) - len(who))
        self._note(f"{indent}{glyphs().tool} {escape(who)}{escape(line)}")

    def _tool_finished(self, event: Event) -> None:
        """How the call ended: a denial or failure with its whole reason, else the exit code and a
        preview of the output (a large result's offload has its own line, :meth:`_persisted`)."""
        tool = str(event.data.get("tool", "?"))
        indent, _ = _child(event)
        failed = event.data.get("status") == "error"
        content = str(event.data.get("content") or event.data.get("error") or "")
        first = str(event.data.get("error") or "")
        if failed and (denial_reason(first) is not None or not content.strip()):
            self._note(f"{indent}[dim]  {glyphs().result}[/] {trouble_markup(tool, first)}")
            return
        if "<persisted-output" in content:
            return
        lines = (tool == "task" and not failed and report_lines(content, self.activity.width - 4 - len(indent))) \
            or result_lines(content, failed=failed, exit_code=exit_code_of(event.data.get("artifact")),
                            width=self.activity.width - 4 - len(indent), tool=tool)
        bad = failed or bool(exit_code_of(event.data.get("artifact")))
        style = "red" if bad else "dim"
        pad = indent + " " * (len(glyphs().result) + 3)
        body = "\n".join(f"{pad if i else ''}{escape(line)}" for i, line in enumerate(lines))
        self._note(f"{indent}[dim]  {glyphs().result}[/] [{style}]{body}[/]")

    def _persisted(self, event: Event) -> None:
        original = int(event.data.get("original_chars") or 0)
        shown = int(event.data.get("preview_chars") or 0)
        where = event.data.get("path") or "(not stored)"
        self._note(f"[dim]  {glyphs().result} {original:,} chars saved to {escape(str(where))}; the model sees "
                   f"{shown:,}[/]")

    def _microcompacted(self, event: Event) -> None:
        cleared = len(event.data.get("cleared_ids") or [])
        self._note(f"[dim]microcompact ({escape(str(event.data.get('trigger', '')))}): "
                   f"{cleared} old tool result(s) cleared from the view[/]")

    def _retry(self, event: Event) -> None:
        self._note(f"[yellow]model call failed ({escape(str(event.data.get('kind', '')))}); retry "
                   f"{event.data.get('attempt')} in {float(event.data.get('wait_seconds') or 0):.1f}s[/]")

    def _mcp_server(self, event: Event) -> None:
        """A server the session did not wait for: starting, failed and why, or ready with its tools."""
        name = escape(terminal_safe(str(event.data.get("server", "?"))))
        note = escape(terminal_safe(str(event.data.get("note") or "")))
        state = event.data.get("state")
        if state == "failed":
            self._note(f"[yellow]MCP server {name} failed:[/] {note} [dim](/mcp)[/]")
        elif state == "starting":
            self._note(f"[dim]MCP server {name} is starting: {note} (/mcp)[/]")
        else:
            self._note(f"[dim]MCP server {name} ready: {note}[/]")

    def stop_spinner(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None


def _child(event: Event) -> tuple[str, str]:
    """(indent, ``[agent] ``) for a subagent's tool call shown under its parent's, else ("", "")."""
    agent = event.data.get("subagent")
    return ("  ", f"[{terminal_safe(str(agent))[:24]}] ") if agent else ("", "")


def denial_reason(first_line: str) -> str | None:
    """Why a call was denied, from its result's first line (``Not run: X was denied (why). …``); None
    when the line is not a denial. The reason is kept whole, parentheses and all."""
    if not first_line.startswith("Not run:") or " was denied" not in first_line:
        return None
    why = first_line.split(" was denied", 1)[1].split(". Nothing was executed", 1)[0].strip()
    if why.startswith("(") and why.endswith(")"):
        why = why[1:-1]
    return why.strip() or "denied"


def denial_markup(tool: str, why: str) -> str:
    """One line saying a tool call was denied and why, as markup (the one wording for every denial)."""
    return f"[yellow]denied[/] {escape(terminal_safe(tool))}: {escape(terminal_safe(why))}"


def trouble_markup(tool: str, first_line: str) -> str:
    """One line saying why a tool call failed or was denied (its result's first line), as markup."""
    why = denial_reason(first_line)
    if why is not None:
        return denial_markup(tool, why)
    name = escape(terminal_safe(tool))
    if not first_line:
        return f"[red]{name} failed[/]"
    return f"[red]{name} failed:[/] {escape(terminal_safe(first_line[:300]))}"


def parse_approval_answer(text: str) -> tuple[str, bool] | None:
    """``y``/``yes`` → allow, ``n``/``no`` → deny, ``a``/``always`` → allow and remember."""
    word = text.strip().lower()
    if word in ("y", "yes"):
        return "allow", False
    if word in ("n", "no"):
        return "deny", False
    if word in ("a", "always"):
        return "allow", True
    return None


def make_approver(console: Console, read_line: ReadLine, *,
                  before: Callable[[], None] | None = None) -> Callable[[Sequence[Any]], dict[str, Any]]:
    """An approver for ``AgentSession.run_turn``: asks per request, returns ``{call_id: decision}``."""

    def approve(requests: Sequence[Any]) -> dict[str, Any]:
        if before is not None:
            before()
        answers: dict[str, Any] = {}
        for i, request in enumerate(requests):
            rule = str(getattr(request, "rule", ""))
            asker = rule.split(":")[0] if rule.startswith("subagent ") else ""
            question = terminal_safe(f"{asker + ' asks: ' if asker else ''}Run "
                                     f"{describe_call(request.tool, dict(request.args))}? [y]es / [n]o / [a]lways ")
            while True:
                try:
                    reply = parse_approval_answer(read_line(question))
                except (KeyboardInterrupt, EOFError):
                    for rest in requests[i:]:
                        answers[rest.tool_call_id] = {"decision": "deny", "reason": "the user interrupted"}
                    console.print("[yellow]denied[/]")
                    return answers
                if reply is not None:
                    break
                console.print("answer y, n or a")
            decision, remember = reply
            answers[request.tool_call_id] = {"decision": decision, "remember": remember}
        return answers

    return approve
