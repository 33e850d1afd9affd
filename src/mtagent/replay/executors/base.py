"""The executor seam: run independent work units somewhere, get outcomes back in input order.

Replay, ``replay --tune`` and ``mtagent batch`` are embarrassingly parallel: each unit (a
session × strategy × window × setting, or one batch task) reads its own inputs and returns a
picklable result. An :class:`Executor` maps a module-level function over units; whatever order
the workers finish in, :meth:`Executor.map` yields :class:`Outcome` s in the units' order, so every
report built from them is the same on one process, a local pool or a Ray cluster. A unit that
raises is run once more; if it fails again its outcome carries the error (never dropped).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar


U = TypeVar("U")
R = TypeVar("R")

ATTEMPTS = 2  # a failed unit is retried once
EXECUTOR_NAMES = ("local", "ray")
RAY_INSTALL_HINT = "--executor ray needs Ray, which is not installed: pip install 'mtagent[ray]'"

Progress = Callable[[int, int], None]  # (units finished, units in all)


@dataclass(slots=True)
class UnitError:
    """Why a unit failed on its last attempt (the exception's type and message)."""

    type: str
    message: str

    def __str__(self) -> str:
        return f"{self.type}: {self.message}"


@dataclass(slots=True)
class Outcome(Generic[U, R]):
    """One unit's result (``value``) or failure (``error``), with how many attempts it took."""

    index: int
    unit: U
    value: R | None = None
    error: UnitError | None = None
    attempts: int = 1

    @property
    def ok(self) -> bool:
        return self.error is None


class Executor(Protocol):
    """Maps ``fn`` over ``units``; yields outcomes in the units' order as soon as each is next."""

    name: str
    workers: int

    def map(self, fn: Callable[[Any], Any], units: Iterable[Any], progress: Progress | None = None) -> Iterator[Outcome]: ...

    def close(self) -> None: ...


def attempt(fn: Callable[[Any], Any], unit: Any) -> tuple[bool, Any]:
    """Run one attempt inside a worker; an exception comes back as data (it may not pickle)."""
    try:
        return True, fn(unit)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 — any failure of a unit is reported, not fatal
        return False, UnitError(type(exc).__name__, str(exc)[:2000])


def in_order(items: list[Any], running: dict[Any, tuple[int, int]], wait_any: Callable[[list[Any]], Iterable[Any]],
             result_of: Callable[[Any], tuple[bool, Any]], submit: Callable[[Any], Any],
             progress: Progress | None) -> Iterator[Outcome]:
    """The outcomes of ``running`` (task → (unit index, attempt)) as they finish, released strictly by
    index; a failed attempt is submitted again until :data:`ATTEMPTS`. ``result_of`` raising (the worker
    died: killed, out of memory, or Ray could not run it) is a failed attempt, not a crash of the run.
    ``running`` stays the caller's to cancel when the consumer stops or Ctrl-C comes."""
    early: dict[int, Outcome] = {}
    finished = released = 0
    while running:
        for task in wait_any(list(running)):
            index, tries = running.pop(task)
            try:
                ok, value = result_of(task)
            except Exception as exc:  # noqa: BLE001 — BrokenProcessPool, RayTaskError, WorkerCrashedError, …
                ok, value = False, UnitError(type(exc).__name__, str(exc)[:2000])
            if not ok and tries < ATTEMPTS:
                running[submit(items[index])] = (index, tries + 1)
                continue
            finished += 1
            if progress is not None:
                progress(finished, len(items))
            early[index] = Outcome(index, items[index], value if ok else None, None if ok else value, tries)
            while released in early:
                yield early.pop(released)
                released += 1
