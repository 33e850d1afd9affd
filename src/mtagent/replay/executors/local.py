"""``--executor local``: a process pool sized to the machine (or the caller's process for one worker).

Workers ignore SIGINT: on Ctrl-C the parent alone decides, cancels what has not started,
terminates the workers and re-raises, so no half-dead pool or orphan process is left behind.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from mtagent.replay.executors.base import ATTEMPTS, Outcome, Progress, attempt, in_order


def default_workers() -> int:
    """Every CPU this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class LocalExecutor:
    """A :class:`~concurrent.futures.ProcessPoolExecutor`; ``workers=1`` runs units in this process."""

    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers if workers and workers > 0 else default_workers()
        self._pool: ProcessPoolExecutor | None = None
        self.last_pids: list[int] = []  # the workers stopped by the last cancellation (tests check them)

    def map(self, fn: Callable[[Any], Any], units: Iterable[Any], progress: Progress | None = None) -> Iterator[Outcome]:
        items = list(units)
        if self.workers == 1:
            yield from self._inline(fn, items, progress)
            return
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=self.workers, initializer=_ignore_sigint)
        pool = self._pool
        running = {pool.submit(attempt, fn, u): (i, 1) for i, u in enumerate(items)}
        try:
            yield from in_order(items, running, lambda futures: wait(futures, return_when=FIRST_COMPLETED)[0],
                                Future.result, lambda unit: pool.submit(attempt, fn, unit), progress)
        except BaseException:  # Ctrl-C, or the consumer stopped early: stop every worker now
            for future in running:
                future.cancel()
            self._terminate()
            raise

    def _inline(self, fn: Callable[[Any], Any], items: list[Any], progress: Progress | None) -> Iterator[Outcome]:
        for index, unit in enumerate(items):
            for tries in range(1, ATTEMPTS + 1):
                ok, value = attempt(fn, unit)
                if ok:
                    break
            if progress is not None:
                progress(index + 1, len(items))
            yield Outcome(index, unit, value if ok else None, None if ok else value, tries)

    def _terminate(self) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        processes = list((getattr(pool, "_processes", None) or {}).values())
        self.last_pids = [p.pid for p in processes]
        for process in processes:
            if process.is_alive():
                process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
