"""The interactive ``mtagent``: a prompt-toolkit REPL over one agent session.

* Input: persistent history in ``$MTAGENT_HOME/repl_history``; Enter sends, Esc+Enter (or a
  line ending in ``\\``) adds a line; Ctrl-C clears the line, Ctrl-D (or ``/exit``) leaves.
* A message streams the model's text as it arrives; tool activity and compaction (with a
  spinner) are shown as they happen (:class:`~mtagent.cli.turn_display.TurnDisplay`).
* Tool calls that need a yes are asked ``[y]es / [n]o / [a]lways``; Ctrl-C there denies.
* Ctrl-C while the model or a tool runs stops the turn cleanly and returns to the prompt; the
  transcript keeps everything, so nothing is lost and the session can go on.
* Lines starting with ``/`` are slash commands (:mod:`mtagent.cli.slash`); ``//`` sends a
  message that starts with a slash.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from prompt_toolkit import PromptSession
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from rich.console import Console
from rich.markup import escape

from mtagent import paths
from mtagent.cli.output import SafeConsole
from mtagent.cli.repl_host import ReplHost
from mtagent.cli.run_cmd import guarded, setup_warnings
from mtagent.cli.session_options import SessionOptions
from mtagent.cli.turn_display import TurnDisplay, make_approver
from mtagent.errors import MTAgentError

if TYPE_CHECKING:
    from mtagent.cli.warmup import Warmup
from mtagent.terminal_text import terminal_safe

log = logging.getLogger(__name__)
HISTORY_FILE = "repl_history"
PROMPT = "› "
HELP_LINE = "[dim]/help for commands · Esc+Enter for a new line · Ctrl-D to exit[/]"
LEAVE = ("/exit", "/quit")  # leaving needs no session: none is opened for it
CONTINUATION = "· "


def _slash() -> Any:
    """The slash commands (with /clear, /model, /cost from slash_session): loaded after the prompt
    is drawn — the warm-up imports them while the user types."""
    from mtagent.cli import slash, slash_session  # noqa: F401

    return slash


SETTLE = "\x00settle"  # what the prompt returns when the session opened behind it waits on an approval


def continue_line(text: str) -> str | None:
    """If ``text`` ends with a line-continuation backslash, the text with it turned into a newline."""
    stripped = text.rstrip(" \t")
    if stripped.endswith("\\") and not stripped.endswith("\\\\"):
        return stripped[:-1] + "\n"
    return None


def message_text(line: str) -> str:
    """What to send to the model for a non-command line (``//x`` sends ``/x``)."""
    stripped = line.strip()
    return stripped[1:] if stripped.startswith("//") else stripped


def key_bindings() -> KeyBindings:
    bindings = KeyBindings()

    @bindings.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @bindings.add("enter")
    def _submit(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if buffer.document.is_cursor_at_the_end:
            joined = continue_line(buffer.text)
            if joined is not None:
                buffer.text = joined
                buffer.cursor_position = len(joined)
                return
        buffer.validate_and_handle()

    return bindings


class Repl:
    """One interactive run. ``prompt_session`` and ``console`` are injectable for tests."""

    def __init__(self, options: SessionOptions, *, console: Console | None = None,
                 prompt_session: PromptSession[str] | None = None,
                 ask: Callable[[str], str] | None = None) -> None:
        self.console = console or SafeConsole(highlight=False)
        self.display = TurnDisplay(console=self.console, activity=self.console)
        self.host = ReplHost(console=self.console, options=options, on_token=self.display.on_token)
        self.prompt = prompt_session or PromptSession(
            history=FileHistory(str(paths.ensure_dir(paths.mtagent_home()) / HISTORY_FILE)),
            key_bindings=key_bindings(), multiline=True,
            prompt_continuation=lambda width, *_: CONTINUATION.rjust(width),  # (width, line number, wrap count)
        )
        self._ask_session: PromptSession[str] | None = None
        self._settle_first = False  # a resumed session's pending approval is asked before anything else
        self._carry = ""
        self.warmup: Warmup | None = None
        self._answer = ask or self._ask
        self.approver = make_approver(self.console, self._answer, before=self.display.end_text)

    def _ask(self, question: str) -> str:
        """Approval questions get their own one-line prompt, kept out of the input history."""
        if self._ask_session is None:
            self._ask_session = PromptSession()
        return self._ask_session.prompt(question)

    def banner(self) -> None:
        session = self.host.session
        assert session is not None
        resumed = " (resumed)" if len(session.history) else ""
        source = session.window_source
        self.console.print(f"[bold]mtagent[/] · {escape(session.model_name)} · window {session.window:,} tokens"
                           + (f" [dim](from {escape(source)})[/]" if source else ""))
        self.console.print(f"[dim]session {escape(session.session_id)}{resumed} · {escape(str(self.host.cwd))}[/]")
        warnings = [*session.resume_warnings, *setup_warnings(session)]
        for warning in filter(None, warnings):
            self.console.print(f"[yellow]warning:[/] {escape(terminal_safe(str(warning)))}", soft_wrap=True)

    # opening: the prompt first, the agent stack imported meanwhile ------------------------------
    def start_early(self) -> None:
        """Check what can fail fast (options, a model configured), start importing the agent stack
        in the background and show the help line: the prompt comes next, within a fraction of a
        second, and the session opens while the user types (:meth:`_open_when_warm`)."""
        from mtagent.cli.read_ahead import MAX_MODULE_FILES, module_files, read_ahead, session_files
        from mtagent.cli.warmup import REPL_STACK, Warmup, modules_for

        options = self.host.options
        options.validate()
        self.host.settings = options.settings()  # read once: the session opens with them
        resuming = ""
        recorded = None
        if options.resume or options.continue_:  # which session, held elsewhere or not: known before the prompt
            from mtagent.cli.session_options import resume_target

            target, recorded = resume_target(options.root, self.host.settings, options.resume)
            options.resume, options.continue_ = target, False
            resuming = f" resuming {target}…"
        spec = options.model or recorded or self.host.settings.agent.model
        if not spec:
            from mtagent.cli.session_options import NO_MODEL
            from mtagent.errors import ModelConfigError

            raise ModelConfigError(NO_MODEL)
        self.warmup = Warmup((*REPL_STACK, *modules_for(spec)))  # started once the prompt is drawn
        read_ahead(module_files(), limit=MAX_MODULE_FILES)
        read_ahead(session_files(options.root, resume=options.resume, latest=options.continue_))
        self.console.print(f"[bold]mtagent[/] · {escape(terminal_safe(str(spec)))} [dim](starting…{escape(resuming)})[/]")
        self.console.print(HELP_LINE)

    def ensure_open(self) -> None:
        """Open the session now if the prompt's idle time did not (the user was quicker)."""
        if self.host.session is None:
            if self.warmup is not None:
                self.warmup.wait()
            self.host.open()
            from mtagent.cli.read_ahead import remember_modules

            remember_modules()
            self.banner()
            self._settle_first = bool(self.host.options.resume)  # asked on the main thread (:meth:`_loop`)

    def _schedule_open(self) -> None:
        """``pre_run`` of the prompt: once it is drawn, import in the background (the imports would
        slow the first drawing down), then open the session between keystrokes."""
        if self.host.session is not None or self.warmup is None:
            return
        from prompt_toolkit.application import get_app

        app, warmup = get_app(), self.warmup

        def drawn(_: Any) -> None:
            app.after_render -= drawn
            warmup.start()

        app.after_render += drawn
        app.create_background_task(self._open_when_warm())

    async def _open_when_warm(self) -> None:
        import asyncio

        from prompt_toolkit.application import get_app, run_in_terminal

        warmup = self.warmup
        assert warmup is not None
        while not warmup.done:  # polled on the prompt's loop: no thread is left waiting if the user leaves
            await asyncio.sleep(0.05)
        if self.host.session is not None:
            return
        try:
            await run_in_terminal(self.ensure_open)
        except Exception as exc:  # a bad model spec, a locked session: end the prompt with it
            get_app().exit(exception=exc)
            return
        if self._settle_first:  # a resumed session may wait on an approval: leave the prompt to look
            app = get_app()
            self._carry = app.current_buffer.text  # what the user had typed comes back in the next prompt
            app.exit(result=SETTLE)

    def ask_project_trust(self) -> None:
        """First run in a project whose own config sets security keys: ask once, store the answer
        in the user's home (``mtagent trust`` changes it later)."""
        from mtagent.cli.trust_cmd import answer_first_run, first_run_question

        question = first_run_question(self.host.cwd)
        if question is None:
            return
        try:
            answer = self._answer(question)
        except (EOFError, KeyboardInterrupt):
            return  # no answer: stays untrusted, asked again next time
        if not answer_first_run(self.host.cwd, answer):
            self.console.print("[dim]not trusted: the project's security settings are ignored[/]")

    def run(self) -> int:
        self.display.attach(self.host.events)
        self.ask_project_trust()
        try:
            self.start_early()  # a resumed session too: the prompt first, the load behind it
            self._loop()
        finally:
            self.display.detach()
            self.host.close()
        return 0

    def _loop(self) -> None:
        while True:
            try:
                carry, self._carry = self._carry, ""
                line = self.prompt.prompt(PROMPT, pre_run=self._schedule_open, default=carry)
            except KeyboardInterrupt:
                continue
            except EOFError:
                self.console.print("[dim]bye[/]")
                return
            if line != SETTLE and not line.strip():
                continue
            if line.strip() not in LEAVE or self.host.options.resume:  # a resumed session is seen before it is left
                self.ensure_open()
            if self._settle_first:
                self._settle_first = False
                self.settle_pending_approval()
                if line == SETTLE:
                    continue
            try:
                slash = _slash()
                outcome = slash.dispatch(self.host, line)
            finally:
                self.display.stop_spinner()  # whatever a command started ends with it
            if outcome is slash.SlashOutcome.EXIT:
                return
            if outcome is slash.SlashOutcome.NOT_A_COMMAND:
                self.turn(message_text(line))
            elif outcome is slash.SlashOutcome.SEND:
                self.turn(self.host.take_pending())

    def settle_pending_approval(self) -> Any:
        """A resumed session stopped while a tool call waited for a yes: ask now, then go on.

        The agent resumes that turn where it paused, so tools that already ran never run again.
        """
        session = self.host.session
        if session is None or not session.pending_approval:
            return None
        self.console.print("[yellow]This session stopped while a tool call waited for your approval.[/]")
        return self.turn(None)

    def turn(self, text: str | None) -> Any:
        """Send one message (None: answer the pending approval); every failure is one line."""
        session = self.host.session
        assert session is not None
        self.display.take_streamed()
        result = None
        try:
            if text is None:
                result = session.resume_approval(self.approver(session.pending_approval), approver=self.approver)
            else:
                result = session.run_turn(text, approver=self.approver)
        except MTAgentError as exc:
            self.display.end_text()
            _slash().error_line(self.console, str(exc))
        except KeyboardInterrupt:
            self.display.end_text()
            self.console.print("[yellow]interrupted[/] — the turn stopped; the session is saved")
        except Exception as exc:  # a provider SDK or tool bug must not end the session
            log.debug("turn failed", exc_info=True)
            self.display.end_text()
            _slash().error_line(self.console, f"{type(exc).__name__}: {exc}")
        finally:
            self.display.stop_spinner()
        if result is None:
            return None
        streamed = self.display.take_streamed()
        self.display.end_text()
        if result.reply and not streamed.strip():
            self.console.print(terminal_safe(result.reply), markup=False)
        if result.status == "interrupted":
            self.console.print("[yellow]interrupted[/] — the turn stopped; the session is saved")
        elif result.status == "max_steps":
            _slash().error_line(self.console, f"stopped after {session.settings.agent.max_steps} model calls "
                                     "(agent.max_steps); send a message to go on")
        elif result.status == "approval_required":
            self.console.print("[yellow]waiting for approval[/]; send a message to continue")
        return result


def launch(options: SessionOptions) -> int:
    """The REPL with every user error as one line and its exit code (the root command's body)."""
    return guarded(lambda: Repl(options).run())
