"""``IndexingSink``: a record sink that indexes every record after the inner sink stored it.

Wrap the transcript writer with it (under any redaction, so only what the transcript holds is
indexed): ``RedactingSink(IndexingSink(writer, indexer, session_id), redactor)`` — or use
:func:`recall_sink`; the opener hands the window manager :func:`compacted_recall` of the sink it built. The inner
sink's write comes first and its result is returned unchanged; indexing can never lose or
delay-fail a record, because :meth:`RecallIndexer.add_record` never raises.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtagent.config import Settings
from mtagent.context.recall.indexer import RecallIndexer
from mtagent.context.recall.retrieved import CompactedRecall
from mtagent.context.recall.router import Recaller
from mtagent.context.tokens import count_text_tokens
from mtagent.redaction import Redactor, collect_secrets
from mtagent.session import schema
from mtagent.session.local import local_home
from mtagent.session.transcript import RecordSink


@dataclass(slots=True)
class IndexingSink:
    inner: RecordSink
    indexer: RecallIndexer
    session_id: str

    def append(self, record: dict[str, Any]) -> object:
        result = self.inner.append(record)
        self.indexer.add_record(record, self.session_id)
        if ends_a_round(record):  # the model has answered: what this turn said is searchable now
            self.indexer.flush()
        return result

    def end_turn(self) -> None:
        end = getattr(self.inner, "end_turn", None)
        if end is not None:
            end()
        self.indexer.flush()

    def close(self) -> None:
        """Close the inner sink, then write the indexer's pending batch and close the index."""
        try:
            close = getattr(self.inner, "close", None)
            if close is not None:
                close()
        finally:
            self.indexer.close()

    def __getattr__(self, name: str) -> Any:
        """Everything else (``path`` …) is the inner sink's."""
        if name in ("inner", "indexer", "session_id"):
            raise AttributeError(name)
        return getattr(self.inner, name)


def ends_a_round(record: dict[str, Any]) -> bool:
    """An assistant message without tool calls (a turn's answer) or a compaction boundary."""
    if record.get("type") == schema.COMPACT_BOUNDARY:
        return True
    return (record.get("type") == schema.TRANSCRIPT_MESSAGE and record.get("role") == "assistant"
            and not record.get("tool_calls"))


def recall_sink(inner: RecordSink, project_root: str | os.PathLike[str], session_id: str,
                settings: Settings, *, home: Path | None = None) -> RecordSink:
    """``inner`` wrapped so every record is also indexed (``inner`` itself when recall is off).

    Put it *inside* any redacting sink, so the index holds only what the transcript holds. ``home``:
    the local home of the session's store (default: the one ``settings`` name), where the index lives.
    """
    if not settings.recall.enabled:
        return inner
    return IndexingSink(inner, RecallIndexer(project_root, settings.recall, tenant=settings.storage.tenant,
                                               home=home or local_home(settings),
                                               redactor=Redactor(collect_secrets(settings=settings))),
                        session_id)


def compacted_recall(sink: object, settings: Settings) -> CompactedRecall | None:
    """The retrieved-bucket helper for the session whose records ``sink`` (the opener's indexing sink)
    indexes, or None (recall off: ``sink`` is not an :class:`IndexingSink`)."""
    if not isinstance(sink, IndexingSink) or not settings.recall.retrieve_after_compaction:
        return None
    return CompactedRecall(Recaller(sink.indexer), settings.recall,
                           lambda text: count_text_tokens(text, settings.context.encoding), sink.session_id)
