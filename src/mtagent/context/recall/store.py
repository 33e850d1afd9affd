"""The recall index on disk: one SQLite database per project, FTS5 with BM25 ranking.

Why SQLite FTS5: it is embedded (no server), ships with Python's ``sqlite3``, ranks with BM25
and updates row by row, so every appended record is searchable at once. The index is a cache of
the transcripts, artifacts and memory files — never the truth — so it is written without fsync
and a lost or corrupt database is simply recreated (:attr:`RecallStore.rebuilt` tells the indexer
to fill it again from the transcripts); no error from here ever reaches a turn. Every kind of
damage counts: an unreadable file, a missing table (a dropped FTS index would otherwise be
recreated empty while ``sources`` says everything was indexed), a row of the wrong type. What is
not ours at the path — a symlink, a directory, another program's database — is set aside, never
opened for writing (:mod:`mtagent.context.recall.store_file`).

Tables: ``items`` (one searchable piece with its reference: session, message id, artifact path
and line range, authority, timestamp), ``items_fts`` (the FTS5 index over ``items.text``),
``edits`` (file edits, for the freshness filter), ``sources`` (how far each transcript was read),
``vectors`` (embeddings, when a model is configured).
"""

from __future__ import annotations

import logging
import operator
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, TypeVar

from mtagent.context.recall.driver import SQLITE
from mtagent.context.recall.store_file import APPLICATION_ID, claim, database_uri, remove_own

log = logging.getLogger(__name__)
db: Any = SQLITE.module  # sqlite3, or pysqlite3 where only it can load sqlite-vec (driver.py)

SCHEMA_VERSION = "2"  # 2: tool-call arguments indexed as text, not JSON (documents._args_text)
CACHE_KIB = 32_768  # page cache per connection: FTS5 segment merges stay in memory
REPLACED_KINDS = frozenset({"session_memory"})  # one item per session, rewritten on each update
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


@dataclass(slots=True)
class Doc:
    """One searchable piece of the project's history, with where it came from."""

    uid: str
    kind: str  # message | artifact | summary | session_memory | memory | file
    text: str
    session: str | None = None
    message_id: str | None = None
    path: str | None = None
    line_start: int | None = None
    line_end: int | None = None
    role: str | None = None
    tool: str | None = None
    authority: str = "task_state"
    ts: float | None = None
    seq: int | None = None
    file_key: str | None = None
    namespace: str | None = None
    expires_at: float | None = None


_DOC_FIELDS = [f.name for f in fields(Doc)]
_doc_values = operator.attrgetter(*_DOC_FIELDS)


@dataclass(slots=True)
class Row:
    """An indexed item read back (``compacted``: a compaction removed it from the view)."""

    rowid: int
    doc: Doc
    compacted: bool


_INSERT_ITEM = (f"INSERT OR IGNORE INTO items({', '.join(_DOC_FIELDS)}) "
                f"VALUES({', '.join('?' * len(_DOC_FIELDS))})")
TABLES = frozenset({"meta", "items", "items_fts", "edits", "sources", "vectors"})
# the SQLite storage class each Doc field may have when read back (None: NULL)
_TEXT, _INT, _NUM = (str, type(None)), (int, type(None)), (int, float, type(None))
_FIELD_TYPES = {f: _TEXT for f in _DOC_FIELDS} | {"line_start": _INT, "line_end": _INT, "seq": _INT,
                                                  "ts": _NUM, "expires_at": _NUM, "uid": (str,),
                                                  "kind": (str,), "text": (str,)}


class IndexDamaged(db.DatabaseError):  # type: ignore[misc, name-defined]
    """The index holds what it never writes (a row of the wrong type): rebuild it."""


def _checked_row(r: Sequence[Any]) -> Row:
    values = r[2:]
    for name, value in zip(_DOC_FIELDS, values, strict=True):
        if not isinstance(value, _FIELD_TYPES[name]) or isinstance(value, bool):
            raise IndexDamaged(f"items.{name} of row {r[0]!r} is a {type(value).__name__}")
    if not isinstance(r[0], int) or not isinstance(r[1], int):
        raise IndexDamaged(f"items row {r[0]!r} has a bad rowid or compacted flag")
    return Row(int(r[0]), Doc(*values), bool(r[1]))


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


def _delete_uid(conn: sqlite3.Connection, uid: str) -> None:
    row = conn.execute("SELECT rowid, text FROM items WHERE uid=?", (uid,)).fetchone()
    if row is not None:
        conn.execute("INSERT INTO items_fts(items_fts, rowid, text) VALUES('delete', ?, ?)", row)
        conn.execute("DELETE FROM items WHERE rowid=?", (row[0],))
        conn.execute("DELETE FROM vectors WHERE rowid=?", (row[0],))


def _read_source(conn: sqlite3.Connection, source: str) -> tuple[int, int | None, float | None] | None:
    row = conn.execute("SELECT offset, size, mtime FROM sources WHERE source=?", (source,)).fetchone()
    if row is None:
        return None
    if not isinstance(row[0], int) or not isinstance(row[1], (int, type(None))):
        raise IndexDamaged(f"sources row {source!r} holds {row!r}")
    return int(row[0]), row[1], row[2]


class RecallStore:
    """The project's index database. Thread-safe; every call degrades to "nothing" on errors."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.rebuilt = False
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._seq: dict[str, int] = {}
        self._open()

    # ---- lifecycle ---------------------------------------------------------------------------

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
        self._seq.clear()
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

    # ---- writing -----------------------------------------------------------------------------

    def add(self, docs: Sequence[Doc], *, replace: bool = False) -> list[int]:
        """Index ``docs``; an item whose uid is already indexed is kept (or replaced) — so feeding
        the same record twice (two readers catching up with one transcript) is harmless."""
        if not docs:
            return []

        def write(conn: sqlite3.Connection) -> list[int]:
            conn.execute("BEGIN")
            try:
                for doc in docs:
                    if replace or doc.kind in REPLACED_KINDS:
                        _delete_uid(conn, doc.uid)
                    if doc.seq is None and doc.session is not None:
                        doc.seq = self._next_seq(conn, doc.session)
                # rowids grow past the largest, so the new items are exactly those above it
                last = conn.execute("SELECT coalesce(max(rowid), 0) FROM items").fetchone()[0]
                conn.executemany(_INSERT_ITEM, map(_doc_values, docs))
                conn.execute("INSERT INTO items_fts(rowid, text) SELECT rowid, text FROM items WHERE rowid > ?",
                             (last,))
                added = [int(r[0]) for r in conn.execute("SELECT rowid FROM items WHERE rowid > ?", (last,))]
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            return added

        return self.run(write, [])

    def _next_seq(self, conn: sqlite3.Connection, session: str) -> int:
        if session not in self._seq:
            row = conn.execute("SELECT max(seq) FROM items WHERE session=?", (session,)).fetchone()
            self._seq[session] = int(row[0]) if row and row[0] is not None else 0
        self._seq[session] += 1
        return self._seq[session]

    def delete_where(self, uid_prefix: str, keep: Iterable[str] = ()) -> int:
        """Delete items whose uid starts with ``uid_prefix`` except those in ``keep``."""
        keep_set = set(keep)

        def write(conn: sqlite3.Connection) -> int:
            uids = [r[0] for r in conn.execute("SELECT uid FROM items WHERE substr(uid, 1, ?) = ?",
                                                 (len(uid_prefix), uid_prefix))]
            gone = [u for u in uids if u not in keep_set]
            conn.execute("BEGIN")
            for uid in gone:
                _delete_uid(conn, uid)
            conn.execute("COMMIT")
            return len(gone)

        return self.run(write, 0)

    def mark_compacted(self, session: str, first_kept_id: str | None) -> int:
        """Mark a session's messages before ``first_kept_id`` (all, when None) as compacted away."""

        def write(conn: sqlite3.Connection) -> int:
            limit = None
            if first_kept_id:
                row = conn.execute("SELECT min(seq) FROM items WHERE session=? AND message_id=?",
                                   (session, first_kept_id)).fetchone()
                limit = row[0] if row else None
            if limit is None:
                cur = conn.execute("UPDATE items SET compacted=1 WHERE session=? AND kind IN ('message','artifact') "
                                   "AND compacted=0", (session,))
            else:
                cur = conn.execute("UPDATE items SET compacted=1 WHERE session=? AND kind IN ('message','artifact') "
                                   "AND seq < ? AND compacted=0", (session, limit))
            return cur.rowcount

        return self.run(write, 0)

    def add_edit(self, file_key: str, ts: float, session: str | None, message_id: str | None) -> None:
        self.run(lambda c: c.execute("INSERT INTO edits(file_key, ts, session, message_id) VALUES(?,?,?,?)",
                                     (file_key, ts, session, message_id)), None)

    def source_state(self, source: str) -> tuple[int, int | None, float | None]:
        return self.run(lambda c: _read_source(c, source), None) or (0, None, None)

    def set_source_state(self, source: str, offset: int, size: int | None = None, mtime: float | None = None) -> None:
        self.run(lambda c: c.execute("INSERT OR REPLACE INTO sources(source, offset, size, mtime) VALUES(?,?,?,?)",
                                     (source, offset, size, mtime)), None)

    # ---- reading -----------------------------------------------------------------------------

    def search(self, match: str, *, kinds: Sequence[str] = (), session: str | None = None,
               limit: int = 20, exclude_message_ids: Sequence[str] = ()) -> list[tuple[int, float]]:
        """(rowid, bm25) of the best matches, best first (bm25 is lower-is-better in SQLite)."""
        if not kinds and not session and not exclude_message_ids:  # FTS5 alone: no join per match
            return self.run(lambda c: [(int(r[0]), float(r[1])) for r in c.execute(
                "SELECT rowid, rank FROM items_fts WHERE items_fts MATCH ? ORDER BY rank LIMIT ?",
                (match, int(limit)))], [])
        where, params = ["items_fts MATCH ?"], [match]
        if kinds:
            where.append(f"items.kind IN ({', '.join('?' * len(kinds))})")
            params += list(kinds)
        if session:
            where.append("items.session = ?")
            params.append(session)
        excluded = list(exclude_message_ids)[:900]
        if excluded:
            where.append(f"(items.message_id IS NULL OR items.message_id NOT IN ({', '.join('?' * len(excluded))}))")
            params += excluded
        sql = ("SELECT items.rowid, bm25(items_fts) AS score FROM items_fts "
               "JOIN items ON items.rowid = items_fts.rowid "
               f"WHERE {' AND '.join(where)} ORDER BY score LIMIT ?")
        params.append(int(limit))
        return self.run(lambda c: [(int(r[0]), float(r[1])) for r in c.execute(sql, params)], [])

    def rows(self, rowids: Sequence[int]) -> list[Row]:
        if not rowids:
            return []
        ids = list(rowids)

        def read(conn: sqlite3.Connection) -> list[Row]:
            cols = ", ".join(_DOC_FIELDS)
            found: dict[int, Row] = {}
            for start in range(0, len(ids), 500):
                part = ids[start:start + 500]
                for r in conn.execute(f"SELECT rowid, compacted, {cols} FROM items WHERE rowid IN "
                                      f"({', '.join('?' * len(part))})", part):
                    row = _checked_row(r)
                    found[row.rowid] = row
            return [found[i] for i in ids if i in found]

        return self.run(read, [])

    def by_uid(self, uid: str) -> Row | None:
        row = self.run(lambda c: c.execute("SELECT rowid FROM items WHERE uid=?", (uid,)).fetchone(), None)
        if row is None:
            return None
        found = self.rows([int(row[0])])
        return found[0] if found else None

    def last_edits(self, file_keys: Iterable[str]) -> dict[str, float]:
        """Latest edit time of each file key that was edited."""
        keys = sorted(set(file_keys))
        if not keys:
            return {}

        def read(conn: sqlite3.Connection) -> dict[str, float]:
            return {str(k): float(t) for k, t in conn.execute(
                f"SELECT file_key, max(ts) FROM edits WHERE file_key IN ({', '.join('?' * len(keys))}) "
                "GROUP BY file_key", keys)}

        return self.run(read, {})

    def count(self, kind: str | None = None) -> int:
        sql, params = ("SELECT count(*) FROM items", ()) if kind is None else (
            "SELECT count(*) FROM items WHERE kind=?", (kind,))
        return int(self.run(lambda c: c.execute(sql, params).fetchone()[0], 0))

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """A read-only query for the vector store and tests."""
        return self.run(lambda c: list(c.execute(sql, params)), [])
