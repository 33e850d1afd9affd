"""What the recall index holds — :class:`Doc` items, file edits, how far each source was read — and
how it is written and searched, over the self-healing database of :mod:`mtagent.context.recall.database`.
"""

from __future__ import annotations

import operator
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from mtagent.context.recall.database import IndexDamaged, IndexDatabase

REPLACED_KINDS = frozenset({"session_memory"})  # one item per session, rewritten on each update


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
# the SQLite storage class each Doc field may have when read back (None: NULL)
_TEXT, _INT, _NUM = (str, type(None)), (int, type(None)), (int, float, type(None))
_FIELD_TYPES = {f: _TEXT for f in _DOC_FIELDS} | {"line_start": _INT, "line_end": _INT, "seq": _INT,
                                                  "ts": _NUM, "expires_at": _NUM, "uid": (str,),
                                                  "kind": (str,), "text": (str,)}


def _checked_row(r: Sequence[Any]) -> Row:
    values = r[2:]
    for name, value in zip(_DOC_FIELDS, values, strict=True):
        if not isinstance(value, _FIELD_TYPES[name]) or isinstance(value, bool):
            raise IndexDamaged(f"items.{name} of row {r[0]!r} is a {type(value).__name__}")
    if not isinstance(r[0], int) or not isinstance(r[1], int):
        raise IndexDamaged(f"items row {r[0]!r} has a bad rowid or compacted flag")
    return Row(int(r[0]), Doc(*values), bool(r[1]))


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


class RecallStore(IndexDatabase):
    """The project's index: its items, edits and sources, read and written (see the module docstring)."""

    # ---- writing -----------------------------------------------------------------------------

    def add(self, docs: Sequence[Doc]) -> list[int]:
        """Index ``docs``; an item whose uid is already indexed is kept (one of the REPLACED_KINDS is
        replaced) — so feeding the same record twice (two readers catching up with one transcript) is harmless."""
        if not docs:
            return []

        def write(conn: sqlite3.Connection) -> list[int]:
            seqs: dict[str, int] = {}  # each session's last seq, read once a batch (another process may add too)
            conn.execute("BEGIN")
            try:
                for doc in docs:
                    if doc.kind in REPLACED_KINDS:
                        _delete_uid(conn, doc.uid)
                    if doc.seq is None and doc.session is not None:
                        if doc.session not in seqs:
                            seqs[doc.session] = conn.execute("SELECT coalesce(max(seq), 0) FROM items WHERE session=?",
                                                             (doc.session,)).fetchone()[0]
                        seqs[doc.session] = doc.seq = seqs[doc.session] + 1
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
