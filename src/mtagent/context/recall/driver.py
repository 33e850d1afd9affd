"""Which SQLite the recall index opens, and whether ``sqlite-vec`` can be loaded into it.

``sqlite-vec`` is a loadable extension, and many Python builds (pyenv's and some distributions')
compile ``sqlite3`` without ``enable_load_extension``. The index then prefers, in order:

1. the standard ``sqlite3`` when it can load extensions;
2. ``pysqlite3`` (the ``pysqlite3-binary`` wheel: its own SQLite with FTS5 and extension
   loading) when it and ``sqlite-vec`` are installed — ``pip install 'mtagent[vec]'``;
3. the standard ``sqlite3`` without extensions: vectors are then compared in Python (exact
   cosine), which :func:`vector_fallback_reason` explains in one line for ``mtagent recall``.

Nothing here is fatal: a driver that fails to import is simply not chosen.
"""

from __future__ import annotations

import importlib
import importlib.util
import sqlite3
from dataclasses import dataclass
from types import ModuleType

__all__ = ["SQLITE", "SqliteDriver", "choose_driver", "vector_fallback_reason"]


@dataclass(frozen=True, slots=True)
class SqliteDriver:
    module: ModuleType  # a DB-API module: connect, Error, DatabaseError, OperationalError
    name: str  # "sqlite3" or "pysqlite3"
    loads_extensions: bool


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def choose_driver() -> SqliteDriver:
    """The driver the recall index uses (see the module docstring for the order)."""
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return SqliteDriver(sqlite3, "sqlite3", True)
    if _installed("sqlite_vec") and _installed("pysqlite3"):
        try:
            module = importlib.import_module("pysqlite3.dbapi2")
        except Exception:  # noqa: BLE001 - a broken wheel: fall back to the standard module
            module = None
        if module is not None and hasattr(module.Connection, "enable_load_extension"):
            return SqliteDriver(module, "pysqlite3", True)
    return SqliteDriver(sqlite3, "sqlite3", False)


def vector_fallback_reason(driver: SqliteDriver) -> str | None:
    """Why vectors are searched in Python rather than with sqlite-vec; None when sqlite-vec can load."""
    if not _installed("sqlite_vec"):
        return "the sqlite-vec package is not installed (pip install 'mtagent[vec]')"
    if not driver.loads_extensions:
        return ("this Python's sqlite3 cannot load extensions (no enable_load_extension) and pysqlite3 "
                "is not installed (pip install 'mtagent[vec]')")
    return None


SQLITE = choose_driver()
