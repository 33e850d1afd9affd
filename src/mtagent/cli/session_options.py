"""The options every agent front end shares, and session-id resolution — kept light on imports.

The root ``mtagent`` command declares these options, so this module is imported for
``mtagent --help``; the config models, the agent and LangChain load only when a session opens.
Session ids accept ``latest`` and any unique prefix (``mtagent sessions show 01JD``), as git does.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from mtagent.errors import ModelConfigError, SessionNotFound, UsageError

if TYPE_CHECKING:
    from mtagent.agent.session import AgentSession
    from mtagent.config import Settings
    from mtagent.events import EventBus

# ``--approval`` speaks the user's words; the policy's modes are ask / auto / never.
APPROVAL_MODES = {"ask": "ask", "allow": "auto", "deny": "never", "auto": "auto", "never": "never"}
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
LATEST = "latest"
NO_MODEL = ("no model configured: pass --model provider:name (e.g. --model openai:gpt-4o-mini with "
            "OPENAI_API_KEY set, or --model ollama:qwen2.5-coder --base-url http://localhost:11434/v1), "
            "set agent.model in ~/.mtagent/config.toml, or try `mtagent demo` which needs no model")


def resume_target(root: Path, settings: Any, given: str | None) -> tuple[str, str | None]:
    """The session ``given`` names (None: the latest, as ``--continue``) and the model it recorded, fast:
    no agent import.

    A session another mtagent holds is refused here (:class:`~mtagent.errors.SessionLocked`), before
    anything is loaded, so the REPL can draw its prompt and open the session behind it."""
    from mtagent import paths
    from mtagent.session.store import shared_store
    from mtagent.session.transcript import probe_lock

    store = shared_store(settings)
    project = paths.project_hash(root)
    ids = store.sessions(project)
    if given is None:
        if not ids:
            raise UsageError(f"no session to continue in {root}; start one with `mtagent`{demo_hint(root)}")
        target = ids[-1]
    else:
        target = resolve_session_id(root, given, ids)
    if store.dsn is None:  # the files backend's writer lock (PostgreSQL's is checked when it opens)
        probe_lock(store.transcript_file(project, target), target)
    model = (store.session_start(project, target) or {}).get("model")
    return target, model if isinstance(model, str) else None


def demo_root() -> Path:
    """The folder ``mtagent demo`` works on without ``--cwd``: the installed package's own source."""
    import mtagent

    return Path(mtagent.__file__).resolve().parent


def demo_hint(root: Path) -> str:
    """Where the demo's sessions are, when ``root`` has none and the demo ran on its own folder."""
    from mtagent import paths

    demo = demo_root()
    if root.resolve() == demo or not any(paths.history_dir(demo).glob("*.jsonl")):
        return ""
    return (f" (`mtagent demo` keeps its sessions with the folder it ran on: "
            f"`mtagent sessions list --cwd {demo}`, or run `mtagent demo --cwd .` here)")


def resolve_session_id(root: Path, given: str, ids: list[str]) -> str:
    """``latest``, a full id or a unique prefix of one of ``ids`` (the project's sessions, oldest first)
    → the full id; else a one-line error that helps."""
    if given == LATEST:
        if not ids:
            raise SessionNotFound(f"no sessions yet for {root}; start one with `mtagent`{demo_hint(root)}")
        return ids[-1]
    if given in ids:
        return given
    matches = [i for i in ids if i.startswith(given)] if given else []
    if len(matches) == 1:
        return matches[0]
    if matches:
        shown = ", ".join(matches[:5]) + (" …" if len(matches) > 5 else "")
        raise UsageError(f"session id prefix {given!r} matches {len(matches)} sessions ({shown}); type more of it")
    from mtagent import paths

    paths.validate_session_id(given)
    raise SessionNotFound(f"no session {given} for {root}; see `mtagent sessions list` (or use `latest`)")


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
        from mtagent.config import load_settings

        overrides: dict[str, dict[str, Any]] = {}
        if self.window is not None:
            overrides["context"] = {"token_limit": self.window}
        return load_settings(self.root, overrides=overrides or None)

    def open_session(self, *, on_token: Callable[[str], None] | None = None,
                     events: EventBus | None = None, session_id: str | None = None,
                     settings: Settings | None = None) -> AgentSession:
        """Create a session, or resume ``session_id`` / ``--resume`` / (``--continue``) the latest.
        ``settings``: :meth:`settings` as the caller read them already (default: read now)."""
        from mtagent.agent.session import AgentSession
        from mtagent.cli import scripted_model

        self.validate()
        settings = settings or self.settings()
        mode = APPROVAL_MODES[self.approval]
        given = session_id or self.resume
        target, recorded = resume_target(self.root, settings, given) if given or self.continue_ else (None, None)
        model: Any = self.model
        if model is None and target is not None:
            model = _recorded_scripted_model(target, recorded)
        if scripted_model.is_scripted(model):
            model = scripted_model.load_scripted_model(model)
        elif not model and not settings.agent.model:
            raise ModelConfigError(NO_MODEL)
        common = dict(model=model, settings=settings, base_url=self.base_url, approval=mode,
                      events=events, on_token=on_token)
        if target is not None:
            return AgentSession.resume(target, self.root, **common)
        return AgentSession.create(self.root, **common)


def _recorded_scripted_model(session_id: str, recorded: str | None) -> str | None:
    """A scripted session resumes with its own script when ``--model`` is not given.

    ``recorded``: the model the session's ``session_start`` names, as the configured store has it."""
    from mtagent.agent.demo import DEMO_MODEL_NAME
    from mtagent.cli import scripted_model

    if recorded == DEMO_MODEL_NAME:
        raise UsageError(f"session {session_id} was run by the demo's scripted policy, which cannot go on; "
                         "pass a model, e.g. --model openai:gpt-4o-mini")
    return recorded if scripted_model.is_scripted(recorded) else None


# ── shared typer options ───────────────────────────────────────────────────────────────

def resume_option() -> Any:
    return typer.Option(None, "--resume", "-r", help="Continue this session: its id, a unique prefix of it, "
                        "or `latest` (see `mtagent sessions list`).")


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


# ── the root command: the REPL ─────────────────────────────────────────────────────────

def root_entry(ctx: typer.Context, options: SessionOptions) -> bool:
    """``mtagent`` alone: True when the REPL should start (a terminal); prints the help otherwise.

    The caller (the app) starts the REPL, so this light module never imports the REPL back."""
    if ctx.invoked_subcommand is not None:
        given = [f"--{name.rstrip('_').replace('_', '-')}" for name in ctx.params
                 if name not in ("version", "ascii_") and ctx.get_parameter_source(name).name == "COMMANDLINE"]
        if given:
            from mtagent.cli.output import fail  # only for this error: completion and commands load no rich here

            fail(f"{', '.join(given)} before the command only applies to the interactive mtagent; "
                 f"put it after the command: mtagent {ctx.invoked_subcommand} {given[0]} …", EXIT_USAGE)
        return False
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        typer.echo(ctx.get_help())
        return False
    return True
