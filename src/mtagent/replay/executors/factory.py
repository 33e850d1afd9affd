"""Pick an executor by name (the ``--executor`` option)."""

from __future__ import annotations

from mtagent.errors import UsageError
from mtagent.replay.executors.base import EXECUTOR_NAMES, RAY_INSTALL_HINT, Executor


def make_executor(name: str = "local", *, workers: int | None = None, address: str | None = None) -> Executor:
    """The executor called ``name``; a one-line :class:`UsageError` for an unknown one or missing Ray."""
    if name == "local":
        if address is not None:
            raise UsageError("--ray-address goes with --executor ray")
        from mtagent.replay.executors.local import LocalExecutor

        return LocalExecutor(workers)
    if name == "ray":
        from mtagent.replay.executors.ray_exec import RayExecutor, ray_available

        if not ray_available():
            raise UsageError(RAY_INSTALL_HINT)
        return RayExecutor(workers, address=address)
    raise UsageError(f"unknown executor {name!r}; choose from {', '.join(EXECUTOR_NAMES)}")
