"""``--executor``, ``--ray-address`` and ``--workers``: shared by ``replay``, ``replay --tune`` and ``batch``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import typer

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


@dataclass(slots=True)
class ExecutorChoice:
    name: str = "local"
    address: str | None = None
    workers: int | None = None

    def open(self) -> Executor:
        """The executor (a one-line usage error for an unknown name or missing Ray)."""
        from mtagent.replay.executors import make_executor

        return make_executor(self.name, workers=self.workers, address=self.address)
