"""The replay progress bar: files, then each session × strategy replay, on stderr in a terminal.

Loading a big file (the aider history holds hundreds of sessions) and replaying every strategy
takes tens of seconds; a bar says what is running and how far it is. Off a terminal, or with
``--quiet``, nothing is drawn (stdout stays the tables or the JSON).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn


class BarProgress:
    """:class:`~mtagent.replay.report.ReplayProgress` drawn as two rich bars (files; replays of this file)."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.files: TaskID | None = None
        self.replays: TaskID | None = None

    def file_started(self, path: Path, index: int, count: int) -> None:
        if self.files is None:
            self.files = self.progress.add_task("files", total=count)
            self.replays = self.progress.add_task("replays", total=None)
        self.progress.update(self.files, completed=index, description=f"file {path.name} (loading)")
        self.progress.reset(self.replays, total=None, description="replays")  # type: ignore[arg-type]

    def file_loaded(self, path: Path, sessions: int, replays: int) -> None:
        self.progress.update(self.files, description=f"file {path.name}: {sessions} session(s)")  # type: ignore[arg-type]
        self.progress.reset(self.replays, total=replays, description="replays")  # type: ignore[arg-type]

    def replay_done(self, label: str, strategy: str) -> None:
        self.progress.update(self.replays, advance=1, description=f"{label} · {strategy}")  # type: ignore[arg-type]
        task = self.progress.tasks[self.replays] if self.replays is not None else None  # type: ignore[index]
        if task is not None and task.total is not None and task.completed >= task.total and self.files is not None:
            self.progress.advance(self.files)


@contextmanager
def replay_progress(console: Console, *, enabled: bool) -> Iterator[BarProgress | None]:
    """A live progress bar while the block runs, or None (no drawing) when not enabled."""
    if not enabled:
        yield None
        return
    columns = (TextColumn("{task.description}", style="dim"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        yield BarProgress(progress)
