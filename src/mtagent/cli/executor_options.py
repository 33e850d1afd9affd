"""Options of the commands that run work on an executor — ``--executor``, ``--ray-address`` and
``--workers`` for ``replay``, ``replay --tune``, ``batch`` and ``eval``; ``--root`` and the
``--out``/``--scratch`` defaults beside a task file for ``batch`` and ``eval``."""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from mtagent.errors import UsageError

if TYPE_CHECKING:
    from mtagent.replay.executors import Executor


def executor_option() -> Any:
    return typer.Option("local", "--executor", "-e", help="Where the work runs: local (a process pool sized "
                        "to this machine) or ray (a local Ray instance, or the cluster at --ray-address).")


def ray_address_option() -> Any:
    return typer.Option(None, "--ray-address", help="With --executor ray: auto (the cluster this machine "
                        "belongs to) or ray://HEAD:10001; without it a private local instance is started.")


def workers_option() -> Any:
    return typer.Option(None, "--workers", "-j", min=1, help="Worker processes (default: every CPU; "
                        "1 runs in this process; for a new local Ray instance its num_cpus).")


def root_option() -> Any:
    return typer.Option(None, "--root", help="Folder that task paths must stay inside (default: the task file's "
                        "folder).")


def beside_task_file(tasks_file: Path, root: Path | None, out: Path | None, scratch: Path | None,
                     out_suffix: str, scratch_suffix: str) -> tuple[Path, Path]:
    """``--out`` and ``--scratch`` (made absolute), defaulting to ``TASKS<suffix>`` beside the task
    file, after checking that ``--root`` is a folder."""
    if root is not None and not root.is_dir():
        raise UsageError(f"--root {root} is not a folder")
    stem = tasks_file.with_suffix("")
    scratch = scratch or stem.with_name(stem.name + scratch_suffix)
    return out or stem.with_name(stem.name + out_suffix), scratch.resolve()


@dataclass(slots=True)
class ExecutorChoice:
    name: str = "local"
    address: str | None = None
    workers: int | None = None

    def open(self) -> closing[Executor]:
        """The executor, closed after the ``with`` (a one-line usage error for an unknown name or missing Ray)."""
        from mtagent.replay.executors import make_executor

        return closing(make_executor(self.name, workers=self.workers, address=self.address))
