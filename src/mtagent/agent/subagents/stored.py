"""A child's transcript in a shared store (``storage.backend = "postgres"``).

The child's live, append-only transcript is a file beside its parent's files
(``<history>/<parent-id>/subagents/<child-id>.jsonl``); the parent session's artifacts, in
PostgreSQL mode, go through the store. When a child ends (finished, interrupted or failed) its
transcript is written there too — through the Store's public ``write_artifact``, as an artifact of
the parent session at :func:`stored_relative` — so a worker on another machine (or the mirror
``sessions show`` reads in PostgreSQL mode) has it. A child is deliberately not a session of its
own in the store: it would be listed, and picked as "the latest session", beside real ones.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def stored_relative(child_id: str) -> str:
    """Where a child's transcript sits among its parent's artifacts."""
    return f"subagents/{child_id}.jsonl"


def keep_in_store(artifacts: Any, child_id: str, transcript: Path) -> bool:
    """Write the ended child's transcript into the parent's store, when the parent has one.

    ``artifacts`` is the parent session's artifact store: only a store-backed one (it carries
    ``store``, ``project`` and ``session_id``) has somewhere to send it. A failure is logged —
    the local transcript stays the truth and the parent's turn goes on.
    """
    store = getattr(artifacts, "store", None)
    if store is None or not transcript.is_file():
        return False
    try:
        store.write_artifact(artifacts.project, artifacts.session_id, stored_relative(child_id),
                             transcript.read_text(encoding="utf-8", errors="replace"))
    except Exception as exc:  # noqa: BLE001 - the store being down must not cost the parent its report
        log.warning("could not keep subagent %s's transcript in the store: %s", child_id, exc)
        return False
    return True


def mirrored_path(history_dir: Path, link: str) -> Path:
    """Where a mirror of the parent's artifacts puts the child ``link`` names (``<sid>/subagents/<child>.jsonl``)."""
    owner, _, name = link.split("/", 2)
    return history_dir / "artifacts" / owner / "subagents" / name
