"""Two tenants of one PostgreSQL store on one machine keep separate recall indexes (docs/fleet.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from mtagent.config import Settings
from mtagent.context.recall import Recaller, RecallIndexer, index_path
from mtagent.context.recall.sink import session_index
from mtagent.errors import ConfigError
from mtagent.session import schema
from mtagent.session.local import local_home
from mtagent.session.transcript import TranscriptWriter


def test_the_default_tenant_keeps_the_index_file_and_others_get_their_own(tmp_path: Path) -> None:
    default = index_path(tmp_path)
    assert default.name == "recall.sqlite" and index_path(tmp_path, "default") == default
    assert index_path(tmp_path, "acme") == default.with_name("recall.acme.sqlite")


@pytest.mark.parametrize("tenant", ["../evil", "a/b", "", "x" * 65, "a\0b"])
def test_a_hostile_tenant_never_becomes_a_path(tmp_path: Path, tenant: str) -> None:
    with pytest.raises(ConfigError):
        index_path(tmp_path, tenant)


def test_one_tenant_never_recalls_another_tenants_text(tmp_path: Path) -> None:
    """In PostgreSQL mode the transcript lives in the store (its local mirror here), and each
    worker's session index catches the local index of its tenant up with it: tenant b's search on
    the same machine and project finds nothing."""
    def session_of(tenant: str) -> Settings:
        return Settings.model_validate({"storage": {"tenant": tenant}})

    writer = TranscriptWriter(tmp_path / "mirror" / "s-a.jsonl", session_id="s-a")
    writer.append(schema.message_to_record(HumanMessage("the vault code is zebra-canary-4471", id="m1")))
    writer.close()
    index = session_index(tmp_path, "s-a", session_of("acme"), transcript=lambda: writer.path,
                          home=local_home(session_of("acme")))
    assert index is not None
    index.close()
    own = Recaller(RecallIndexer(tmp_path, session_of("acme").recall, tenant="acme")).search("zebra-canary-4471")
    other = Recaller(RecallIndexer(tmp_path, session_of("beta").recall, tenant="beta")).search("zebra-canary-4471")
    default = Recaller(RecallIndexer(tmp_path)).search("zebra-canary-4471")
    assert [h.message_id for h in own] == ["m1"]
    assert other == [] and default == []
