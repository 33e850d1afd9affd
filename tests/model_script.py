"""A scripted model for the CLI's tests: its steps written to a file, named as ``--model`` takes it, and
the REPL run by it from a pipe."""

import json
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from mtagent.cli.repl import Repl, key_bindings
from mtagent.cli.session_options import SessionOptions


def script(folder: Path, steps: list, name: str = "script.json") -> str:
    path = folder / name
    path.write_text(json.dumps(steps), encoding="utf-8")
    return f"scripted:{path}"


def scripted_repl(project: Path, folder: Path, steps: list, pipe, answers: list[str] | None = None, *,
                  width: int = 140, echo: bool = True, **options) -> tuple[Repl, Console, list[str]]:
    """The REPL in ``project`` reading ``pipe``; ``answers`` answer its questions in turn, each question is
    kept (the list returned third) and, with ``echo``, printed as the terminal would show it."""
    console = Console(record=True, width=width, force_terminal=False)
    session = PromptSession(input=pipe, output=DummyOutput(), key_bindings=key_bindings(), multiline=True)
    pending, asked = list(answers or []), []

    def ask(question: str) -> str:
        asked.append(question)
        if echo:
            console.print(question, markup=False)
        return pending.pop(0)

    repl = Repl(SessionOptions(cwd=project, model=script(folder, steps), **options), console=console,
                prompt_session=session, ask=ask)
    return repl, console, asked
