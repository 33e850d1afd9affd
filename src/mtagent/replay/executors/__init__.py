"""Where parallel work runs: ``local`` (a process pool) or ``ray`` (a local instance or a cluster)."""

from mtagent.replay.executors.base import EXECUTOR_NAMES, RAY_INSTALL_HINT, Executor, Outcome, UnitError
from mtagent.replay.executors.factory import make_executor

__all__ = ["EXECUTOR_NAMES", "RAY_INSTALL_HINT", "Executor", "Outcome", "UnitError", "make_executor"]
