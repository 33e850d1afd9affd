"""``IndexingSink``: a record sink that indexes every record after the inner sink stored it.

Wrap the transcript writer with it (under any redaction, so only what the transcript holds is
indexed): ``RedactingSink(IndexingSink(writer, indexer, session_id), redactor)``. The inner
sink's write comes first and its result is returned unchanged; indexing can never lose or
delay-fail a record, because :meth:`RecallIndexer.add_record` never raises.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mtagent.context.recall.indexer import RecallIndexer
from mtagent.session.transcript import RecordSink


@dataclass(slots=True)
class IndexingSink:
    inner: RecordSink
    indexer: RecallIndexer
    session_id: str

    def append(self, record: dict[str, Any]) -> object:
        result = self.inner.append(record)
        self.indexer.add_record(record, self.session_id)
        return result

    def __getattr__(self, name: str) -> Any:
        """Everything else (``end_turn``, ``close``, ``path`` …) is the inner sink's."""
        if name in ("inner", "indexer", "session_id"):
            raise AttributeError(name)
        return getattr(self.inner, name)
