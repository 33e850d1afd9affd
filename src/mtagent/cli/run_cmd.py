"""``mtagent run "task"`` (one shot) and the options every agent front end shares.

Common options — ``--resume ID`` / ``--continue``, ``--model provider:name``, ``--base-url``,
``--cwd``, ``--approval ask|allow|deny``, ``--window N`` — are parsed into
:class:`SessionOptions`, which opens the :class:`~mtagent.agent.session.AgentSession`. The
root ``mtagent`` (the REPL) takes the same options.

Exit codes of ``run``: 0 the task finished; 1 the model or a tool failed (or the step limit was
hit); 2 a usage or configuration error; 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape

from mtagent.cli import scripted_model
from mtagent.cli.output import console, err_console, fail, user_errors
from mtagent.cli.turn_display import TurnDisplay, make_approver
from mtagent.config import Settings, load_settings
from mtagent.errors import MTAgentError, UsageError

if TYPE_CHECKING:
    from mtagent.agent.session import AgentSession, TurnResult
    from mtagent.events import EventBus

# ``--approval`` speaks the user's words; the policy's modes are ask / auto / never.
APPROVAL_MODES = {"ask": "ask", "allow": "auto", "deny": "never", "auto": "auto", "never": "never"}
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


@dataclass(slots=True)
class SessionOptions:
    cwd: Path
    model: str | None = None
    base_url: str | None = None
    approval: str = "ask"
    window: int | None = None
    resume: str | None = None
    continue_: bool = False

    def validate(self) -> None:
        if self.approval not in APPROVAL_MODES:
            raise UsageError(f"--approval {self.approval!r} is not one of ask, allow, deny")
        if self.window is not None and self.window <= 0:
            raise UsageError(f"--window must be a positive number of tokens, got {self.window}")
        if self.resume and self.continue_:
            raise UsageError("use either --resume ID or --continue, not both")
        if not self.cwd.is_dir():
            raise UsageError(f"--cwd {self.cwd} is not a folder")

    @property
    def root(self) -> Path:
        return self.cwd.expanduser().resolve()

    def settings(self) -> Settings:
        overrides: dict[str, dict[str, Any]] = {}
        if self.window is not None:
            overrides["context"] = {"token_limit": self.window}
        return load_settings(self.root, overrides=overrides or None)

    def open_session(self, *, on_token: Callable[[str], None] | None = None,
                     events: EventBus | None = None, session_id: str | None = None,
                     latest: bool = False) -> AgentSession:
        """Create a session, or resume ``session_id`` / ``--resume`` / (``latest``, ``--continue``)."""
        from mtagent.agent.session import AgentSession, latest_session_id

        self.validate()
        settings = self.settings()
        mode = APPROVAL_MODES[self.approval]
        target = session_id or self.resume
        if target is None and (latest or self.continue_):
            target = latest_session_id(self.root)
            if target is None:
                raise UsageError(f"no session to continue in {self.root}; start one with `mtagent`")
        model: Any = self.model
        if model is None and target is not None:
            model = _recorded_scripted_model(self.root, target)
        if scripted_model.is_scripted(model):
            model = scripted_model.load_scripted_model(model)
        common = dict(model=model, settings=settings, base_url=self.base_url, approval=mode,
                      events=events, on_token=on_token)
        if target is not None:
            return AgentSession.resume(target, self.root, **common)
        return AgentSession.create(self.root, **common)


def window_warning(session: AgentSession) -> str | None:
    """Say so when a window is too small for the spec's summary reserve and buffer.

    Then the threshold comes from ``context.min_threshold_fraction`` (or, with that at 0,
    is 1 token: compaction on every call).
    """
    ctx = session.settings.context
    if session.window > ctx.summary_reserved_tokens + ctx.autocompact_buffer_tokens:
        return None
    threshold = session.settings.auto_compact_threshold_tokens(session.window)
    reserve = (f"context.summary_reserved_tokens ({ctx.summary_reserved_tokens:,}) + "
               f"context.autocompact_buffer_tokens ({ctx.autocompact_buffer_tokens:,})")
    if threshold <= 1:
        return (f"a {session.window:,}-token window leaves no room above {reserve}: auto compaction will "
                "fire on every call; set context.auto_compact_threshold (e.g. 0.75) or lower those two settings")
    return (f"a {session.window:,}-token window is smaller than {reserve}; auto compaction fires at "
            f"{threshold:,} tokens ({threshold / session.window:.0%} of the window); "
            "set context.auto_compact_threshold to choose another point")


def _recorded_scripted_model(root: Path, session_id: str) -> str | None:
    """A scripted session resumes with its own script when ``--model`` is not given."""
    from mtagent import paths
    from mtagent.session.transcript import read_first_record

    path = paths.session_transcript_path(root, session_id)
    first = read_first_record(path) if path.exists() else None
    recorded = (first or {}).get("model")
    from mtagent.agent.demo import DEMO_MODEL_NAME

    if recorded == DEMO_MODEL_NAME:
        raise UsageError(f"session {session_id} was run by the demo's scripted policy, which cannot go on; "
                         "pass a model, e.g. --model openai:gpt-4o-mini")
    return recorded if scripted_model.is_scripted(recorded) else None


# ── shared typer options ───────────────────────────────────────────────────────────────

def resume_option() -> Any:
    return typer.Option(None, "--resume", "-r", help="Continue the session with this id (see `mtagent sessions list`).")


def continue_option() -> Any:
    return typer.Option(False, "--continue", "-c", help="Continue the latest session of this project.")


def model_option() -> Any:
    return typer.Option(None, "--model", "-m", help="provider:name, e.g. openai:gpt-4o-mini, ollama:qwen2.5-coder, "
                        "or scripted:FILE (a JSON script, no network). Default: agent.model from config.")


def base_url_option() -> Any:
    return typer.Option(None, "--base-url", help="OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp, DeepSeek).")


def cwd_option() -> Any:
    return typer.Option(Path("."), "--cwd", help="Project folder the agent works in (default: here).")


def approval_option() -> Any:
    return typer.Option("ask", "--approval", help="Default for tools that change things (shell, write_file, "
                        "edit_file): ask, allow or deny. Rules in agent.approval still apply.")


def window_option() -> Any:
    return typer.Option(None, "--window", help="Context window in tokens (default: the model's, from config).")


# ── mtagent run ────────────────────────────────────────────────────────────────────────

def _read_stdin_line(prompt: str) -> str:
    err_console.print(prompt, end="", markup=False, highlight=False, soft_wrap=True)
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line


def run_once(options: SessionOptions, task: str) -> int:
    """Run one task to the end; returns the exit code (see the module docstring)."""
    if not task.strip():
        raise UsageError('the task is empty; e.g. mtagent run "add a --verbose flag to cli.py"')
    display = TurnDisplay(console=console, activity=err_console)
    from mtagent.events import EventBus

    bus = EventBus()
    display.attach(bus)
    session = options.open_session(on_token=display.on_token, events=bus)
    interactive = sys.stdin.isatty()
    approver = make_approver(err_console, _read_stdin_line, before=display.end_text) if interactive else None
    try:
        err_console.print(f"[dim]session {escape(session.session_id)} · {escape(session.model_name)}[/]")
        if (warning := window_warning(session)) is not None:
            err_console.print(f"[yellow]warning:[/] {escape(warning)}", soft_wrap=True)
        pending = session.pending_approval
        if pending:
            err_console.print("[yellow]this session stopped while a tool call waited for approval; "
                              "settling that first[/]")
            answer = approver(pending) if approver is not None else _settle_unattended(pending, options.approval)
            settled = session.resume_approval(answer, approver=approver)
            if settled.status == "interrupted":
                return _finish(display, settled, session)
            display.take_streamed()
            display.end_text()
        result = session.run_turn(task, approver=approver)
        while result.status == "approval_required":
            result = session.resume_approval(_deny_all(result.approvals))
        return _finish(display, result, session)
    finally:
        display.detach()
        session.close()


def _settle_unattended(requests: list[Any], approval: str) -> dict[str, Any]:
    """A call paused under ``ask``, resumed with no terminal: ``--approval allow|deny`` decides it."""
    mode = APPROVAL_MODES[approval]
    if mode == "auto":
        return {r.tool_call_id: "allow" for r in requests}
    if mode == "never":
        return {r.tool_call_id: {"decision": "deny", "reason": "denied by --approval deny"} for r in requests}
    return _deny_all(requests)


def _deny_all(requests: list[Any]) -> dict[str, Any]:
    """Without a terminal nobody can say yes: refuse, and tell the model and the user why."""
    for request in requests:
        err_console.print(f"[yellow]denied[/] {escape(request.tool)}: no terminal to ask "
                          "(use --approval allow or deny)")
    return {r.tool_call_id: {"decision": "deny", "reason": "no one to ask (stdin is not a terminal); "
                             "rerun with --approval allow to let it run"} for r in requests}


def _finish(display: TurnDisplay, result: TurnResult, session: AgentSession) -> int:
    streamed = display.take_streamed()
    if result.reply and not streamed.strip():
        console.print(result.reply, markup=False, highlight=False)
    display.end_text()
    if result.status == "interrupted":
        err_console.print(f"interrupted; continue with: mtagent --resume {session.session_id}")
        return EXIT_INTERRUPTED
    if result.status == "max_steps":
        err_console.print(f"[bold red]error:[/] stopped after {session.settings.agent.max_steps} model calls "
                          "(agent.max_steps) without finishing; raise it or split the task")
        return EXIT_FAILED
    return EXIT_OK


def run(
    task: str = typer.Argument(..., help="What the agent should do."),
    resume: str = resume_option(),
    continue_: bool = continue_option(),
    model: str = model_option(),
    base_url: str = base_url_option(),
    cwd: Path = cwd_option(),
    approval: str = approval_option(),
    window: int = window_option(),
) -> None:
    """Run one task to the end and exit (0 done, 1 failed, 2 usage error, 130 interrupted)."""
    options = SessionOptions(cwd=cwd, model=model, base_url=base_url, approval=approval, window=window,
                             resume=resume, continue_=continue_)
    code = _guarded(lambda: run_once(options, task))
    raise typer.Exit(code)


@user_errors
def _guarded(body: Callable[[], int]) -> int:
    try:
        return body()
    except KeyboardInterrupt:
        err_console.print("interrupted")
        return EXIT_INTERRUPTED
    except MTAgentError:
        raise
    except Exception as exc:  # a provider SDK or tool bug: one line, not a traceback
        fail(f"{type(exc).__name__}: {exc}", EXIT_FAILED)


def register(app: typer.Typer) -> None:
    app.command("run")(run)


# ── the root command: the REPL ─────────────────────────────────────────────────────────

def root_entry(ctx: typer.Context, options: SessionOptions) -> None:
    """``mtagent`` alone starts the REPL in a terminal and prints the help otherwise."""
    if ctx.invoked_subcommand is not None:
        given = [f"--{name.rstrip('_').replace('_', '-')}" for name in ctx.params
                 if name != "version" and ctx.get_parameter_source(name).name == "COMMANDLINE"]
        if given:
            fail(f"{', '.join(given)} before the command only applies to the interactive mtagent; "
                 f"put it after the command: mtagent {ctx.invoked_subcommand} {given[0]} …", EXIT_USAGE)
        return
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        typer.echo(ctx.get_help())
        return
    from mtagent.cli.repl import start_repl

    raise typer.Exit(_guarded(lambda: start_repl(options)))
