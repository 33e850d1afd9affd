"""``--executor ray``: the same units as Ray tasks, on a local instance or an existing cluster.

Without ``--ray-address`` a private local instance is started (``num_cpus`` = the worker count,
no dashboard, loopback only) and shut down at :meth:`RayExecutor.close`; with ``auto`` or
``ray://host:10001`` the job joins that cluster and leaves it running. Every node must have
mtagent installed (the task function is sent by reference) and, for path units, see the same
files — small inputs travel as bytes (see :mod:`mtagent.replay.units`).

Ctrl-C cancels every task still running (``force=True`` kills their worker processes) before
re-raising, so the cluster is left idle, not busy with an abandoned job.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from mtagent.replay.executors.base import Outcome, Progress, attempt, in_order
from mtagent.replay.executors.local import default_workers

CANCEL_ROUNDS = 3  # a task being handed to a worker can miss one cancel
CANCEL_WAIT_S = 1.0


def ray_available() -> bool:
    return importlib.util.find_spec("ray") is not None


class RayExecutor:
    """Units as Ray tasks (one CPU each); outcomes still come back in the units' order."""

    name = "ray"

    def __init__(self, workers: int | None = None, *, address: str | None = None) -> None:
        import ray

        self._ray = ray
        self._started = False
        if not ray.is_initialized():
            if address:
                ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
            else:
                ray.init(num_cpus=workers or default_workers(), include_dashboard=False, log_to_driver=False,
                         logging_level=logging.ERROR, _node_ip_address="127.0.0.1")
            self._started = True
        self.workers = int(ray.cluster_resources().get("CPU", 1))
        self._remote = ray.remote(num_cpus=1, max_retries=0)(attempt)

    def map(self, fn: Callable[[Any], Any], units: Iterable[Any], progress: Progress | None = None) -> Iterator[Outcome]:
        ray = self._ray
        items = list(units)
        fn_ref = ray.put(fn)
        running = {self._remote.remote(fn_ref, u): (i, 1) for i, u in enumerate(items)}
        try:
            yield from in_order(items, running, lambda refs: ray.wait(refs, num_returns=1)[0], ray.get,
                                lambda unit: self._remote.remote(fn_ref, unit), progress)
        except BaseException:  # Ctrl-C, or the consumer stopped early
            self._cancel(list(running))
            raise

    def _cancel(self, refs: list[Any]) -> None:
        """Cancel and kill every task of ``refs``; again for any that a scheduling race let start."""
        ray = self._ray
        for _ in range(CANCEL_ROUNDS):
            for ref in refs:
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # noqa: BLE001 — already finished or gone
                    pass
            _, refs = ray.wait(refs, num_returns=len(refs), timeout=CANCEL_WAIT_S)
            if not refs:
                return

    def close(self) -> None:
        if self._started:
            self._ray.shutdown()
            self._started = False

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
