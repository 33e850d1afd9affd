"""``SessionIndex``: one session's way into the project's recall index — off the record path.

No record is indexed as it is written: the transcript is the truth, and the index catches up from
it (from the byte offset it reached last time) when recall is queried — the retrieved bucket after
a compaction, the ``recall`` tool, ``mtagent recall`` — and when the session closes. A turn writes
its records and nothing else; a crash loses nothing the next catch-up will not read; the index
holds only what the transcript holds, so only text already redacted.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mtagent.config import Settings
from mtagent.context.recall.indexer import RecallIndexer
from mtagent.context.recall.retrieved import CompactedRecall
from mtagent.context.recall.router import Recaller
from mtagent.context.tokens import count_text_tokens
from mtagent.redaction import Redactor, collect_secrets
from mtagent.session.local import local_home
from mtagent.session.store import recall_history

log = logging.getLogger(__name__)


@dataclass(slots=True)
class SessionIndex:
    """The project's index and where one session's transcript can be read (``transcript``: a file
    path; for a store that is not files, a mirror brought up to date by the call)."""

    indexer: RecallIndexer
    session_id: str
    transcript: Callable[[], Path]

    def catch_up(self) -> int:
        """Index what the session's transcript holds beyond what was indexed. Never raises."""
        try:
            return self.indexer.catch_up_file(self.transcript())
        except Exception as exc:  # noqa: BLE001 - the index is a cache; the next catch-up reads it again
            log.warning("recall: could not catch up session %s: %s", self.session_id, exc)
            return 0

    def close(self) -> None:
        """Catch up (the session's last records), then close the index."""
        try:
            self.catch_up()
        finally:
            self.indexer.close()


def project_recaller(project_root: Path, settings: Settings) -> Recaller:
    """A reader's way in (the ``recall`` tool, ``/recall``, ``mtagent recall``): the project's index in
    the tenant's local home, caught up from the configured store's transcripts (PostgreSQL: a mirror),
    hits redacted with today's secrets, hybrid with ``recall.embeddings`` when set."""
    from mtagent.context.recall.embeddings import make_embeddings

    return Recaller(RecallIndexer(project_root, settings.recall, tenant=settings.storage.tenant,
                                  redactor=Redactor(collect_secrets(settings=settings)), home=local_home(settings),
                                  history=recall_history(settings, project_root)),
                    make_embeddings(settings.recall.embeddings))


def session_index(project_root: str | os.PathLike[str], session_id: str, settings: Settings, *,
                  transcript: Callable[[], Path], home: Path) -> SessionIndex | None:
    """The session's :class:`SessionIndex` (None when recall is off); ``home``: the local home of
    the session's store, where the index lives (one per tenant)."""
    if not settings.recall.enabled:
        return None
    return SessionIndex(RecallIndexer(project_root, settings.recall, tenant=settings.storage.tenant, home=home,
                                      redactor=Redactor(collect_secrets(settings=settings))),
                        session_id, transcript)


def compacted_recall(index: SessionIndex | None, settings: Settings) -> CompactedRecall | None:
    """The retrieved-bucket helper of the session ``index`` serves (None: recall or the bucket off);
    it catches the index up before it searches."""
    if index is None or not settings.recall.retrieve_after_compaction:
        return None
    return CompactedRecall(Recaller(index.indexer), settings.recall,
                           lambda text: count_text_tokens(text, settings.context.encoding), index.session_id,
                           catch_up=index.catch_up)
