"""The recall index's database file: one SQLite database per project (FTS5, BM25 ranking) that heals itself.

Why SQLite FTS5: it is embedded (no server), ships with Python's ``sqlite3``, ranks with BM25
and updates row by row, so every appended record is searchable at once. The index is a cache of
the transcripts, artifacts and memory files — never the truth — so it is written without fsync
and a lost or corrupt database is simply recreated (:attr:`IndexDatabase.rebuilt` tells the indexer
to fill it again from the transcripts); no error from here ever reaches a turn. Every kind of
damage counts: an unreadable file, a missing table (a dropped FTS index would otherwise be
recreated empty while ``sources`` says everything was indexed), a row of the wrong type. What is
not ours at the path — a symlink, a directory, another program's database — is set aside, never
opened for writing (:mod:`mtagent.context.recall.store_file`). What the tables hold and how they
are read and written is :mod:`mtagent.context.recall.store`.

Tables: ``items`` (one searchable piece with its reference: session, message id, artifact path
and line range, authority, timestamp), ``items_fts`` (the FTS5 index over ``items.text``),
``edits`` (file edits, for the freshness filter), ``sources`` (how far each transcript was read),
``vectors`` (embeddings, when a model is configured).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from mtagent.context.recall.driver import SQLITE
from mtagent.context.recall.store_file import APPLICATION_ID, claim, database_uri, remove_own

log = logging.getLogger(__name__)
db: Any = SQLITE.module  # sqlite3, or pysqlite3 where only it can load sqlite-vec (driver.py)

SCHEMA_VERSION = "2"  # 2: tool-call arguments indexed as text, not JSON (documents._args_text)
CACHE_KIB = 32_768  # page cache per connection: FTS5 segment merges stay in memory
T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS items(
  rowid INTEGER PRIMARY KEY,
  uid TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL,
  session TEXT, message_id TEXT, path TEXT, line_start INTEGER, line_end INTEGER,
  role TEXT, tool TEXT, authority TEXT, ts REAL, seq INTEGER,
  file_key TEXT, namespace TEXT, expires_at REAL,
  compacted INTEGER NOT NULL DEFAULT 0,
  text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS items_session ON items(session, seq);
CREATE INDEX IF NOT EXISTS items_message ON items(session, message_id);
CREATE VIRTUAL TABLE IF NOT EXISTS items_fts USING fts5(
  text, content='items', content_rowid='rowid', tokenize='unicode61 remove_diacritics 2'
);
CREATE TABLE IF NOT EXISTS edits(file_key TEXT NOT NULL, ts REAL NOT NULL, session TEXT, message_id TEXT);
CREATE INDEX IF NOT EXISTS edits_key ON edits(file_key, ts);
CREATE TABLE IF NOT EXISTS sources(source TEXT PRIMARY KEY, offset INTEGER NOT NULL, size INTEGER, mtime REAL);
CREATE TABLE IF NOT EXISTS vectors(rowid INTEGER PRIMARY KEY, vec BLOB NOT NULL);
"""
TABLES = frozenset({"meta", "items", "items_fts", "edits", "sources", "vectors"})


class IndexDamaged(db.DatabaseError):  # type: ignore[misc, name-defined]
    """The index holds what it never writes (a row of the wrong type): rebuild it."""


def _is_corruption(exc: sqlite3.DatabaseError) -> bool:
    if isinstance(exc, db.OperationalError):
        text = str(exc).lower()
        return "malformed" in text or "no such table" in text or "not a database" in text
    return True


def _prepare(conn: sqlite3.Connection, on_disk: bool) -> None:
    """Pragmas and schema; a database that lacks some of our tables is damaged, not new."""
    conn.execute("PRAGMA busy_timeout=2000")
    found = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    if found and not TABLES <= found:  # CREATE … IF NOT EXISTS would bring them back empty
        raise IndexDamaged(f"tables missing: {', '.join(sorted(TABLES - found))}")
    if not found:
        conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
    if on_disk:
        conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=OFF")  # a cache of the transcripts: losing it only costs a rebuild
    conn.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
    conn.executescript(_SCHEMA)
    row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    if row is None:
        conn.execute("INSERT INTO meta(key, value) VALUES('schema_version', ?)", (SCHEMA_VERSION,))
    elif row[0] != SCHEMA_VERSION:
        raise db.DatabaseError(f"recall index schema {row[0]} is not {SCHEMA_VERSION}")
    conn.execute("SELECT count(*) FROM items_fts WHERE items_fts MATCH 'probe'").fetchone()


class IndexDatabase:
    """The open database, recreated empty when damaged. Thread-safe; every call degrades to "nothing" on errors."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.rebuilt = False
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._open()

    def _connect(self, *, claimed: bool = False) -> sqlite3.Connection:
        """Open the database; ``claimed``: the path was just made free (:func:`remove_own`), so it
        is not checked again."""
        target = ":memory:" if self.path is None else database_uri(self.path)
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            note = None if claimed else claim(self.path)
            if note is not None:
                log.warning("recall index: %s", note)
                self.rebuilt = True
        conn = db.connect(target, check_same_thread=False, timeout=2.0, isolation_level=None, uri=True)
        try:
            _prepare(conn, self.path is not None)
        except BaseException:
            conn.close()
            raise
        return conn

    def _open(self) -> None:
        try:
            self._conn = self._connect()
        except (db.DatabaseError, OSError) as exc:
            self._recreate(exc)

    def _recreate(self, exc: BaseException) -> None:
        """Replace an unreadable database with an empty one (the indexer refills it)."""
        log.warning("recall index %s cannot be used as it is (%s); rebuilding it from the transcripts",
                    self.path, exc)
        if self._conn is not None:
            try:
                self._conn.close()
            except db.Error:
                pass
            self._conn = None
        self.rebuilt = True
        try:
            if self.path is not None:
                remove_own(self.path)
            self._conn = self._connect(claimed=True)
        except (db.Error, OSError) as again:  # e.g. the folder is not writable: work in memory
            log.warning("recall index %s cannot be recreated (%s); using an in-memory index", self.path, again)
            self.path = None
            self._conn = self._connect()

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def run(self, fn: Callable[[sqlite3.Connection], T], default: T) -> T:
        """Run ``fn`` under the lock; corruption rebuilds the database, other errors give ``default``."""
        with self._lock:
            for attempt in range(2):
                if self._conn is None:
                    self._open()
                try:
                    try:
                        return fn(self._conn)  # type: ignore[arg-type]
                    except (ValueError, TypeError) as bad:  # a value no write of ours produces
                        raise IndexDamaged(f"unexpected value in the index: {bad}") from bad
                except db.DatabaseError as exc:
                    if attempt == 0 and _is_corruption(exc):
                        self._recreate(exc)
                        continue
                    log.warning("recall index: %s", exc)
                    return default
                except db.Error as exc:
                    log.warning("recall index: %s", exc)
                    return default
            return default
