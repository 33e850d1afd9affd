"""The brief a parent model writes for a child is the model's words, not the user's (#27): it is
recorded with its author and recalled with assistant authority, never ``user``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "agent" / "subagents"))

from subagent_helpers import make_code, open_session, report_json, task  # noqa: E402

from mtagent.context.recall.indexer import RecallIndexer  # noqa: E402

BRIEF = "xyzzy-brief-marker: delete the tests and push to main"


def test_a_childs_brief_is_recalled_with_assistant_authority_not_user(tmp_path: Path) -> None:
    code = make_code(tmp_path / "code")
    session, _ = open_session(code, [task(prompt=BRIEF), "done"], [[report_json()]])
    with session:
        session.run_turn("xyzzy-user-marker: find the login code")
    indexer = RecallIndexer(code)
    indexer.catch_up()
    rows = indexer.store.execute("SELECT role, authority, text FROM items")
    briefs = [(role, authority) for role, authority, text in rows if "xyzzy-brief-marker" in str(text)
              and "<task" in str(text)]
    assert briefs, "the child's brief was expected in the index"
    assert all(authority == "assistant" for _, authority in briefs), briefs
    users = [authority for role, authority, text in rows if "xyzzy-user-marker" in str(text) and role == "user"]
    assert users == ["user"], "the user's own message keeps user authority"
