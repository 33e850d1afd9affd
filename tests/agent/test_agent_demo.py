"""The embedded demo: real loop, tools, transcript and engine, with the scripted policy."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from mtagent.agent.demo import POLICY_LABEL, run_demo
from mtagent.agent.scripted import ScriptedChatModel
from mtagent.agent.session import AgentSession
from mtagent.cli.session_options import demo_root
from mtagent.cli.session_report import read_session_report
from mtagent.context.boundary import is_summary_message
from mtagent.session.reader import read_records


def _tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def test_the_demo_explores_the_installed_package_by_default():
    import mtagent

    assert demo_root() == Path(mtagent.__file__).resolve().parent  # where `mtagent demo` runs without --cwd


def test_run_demo_offloads_compacts_edits_a_scratch_copy_and_resumes(tmp_path):
    import mtagent

    package = tmp_path / "mtagent"
    shutil.copytree(Path(mtagent.__file__).resolve().parent, package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    before = _tree_digest(package)
    result = run_demo(package)
    assert result.cwd == package
    assert result.seconds < 60
    assert result.persisted_results >= 1 and result.persisted_tokens_saved > 0
    report = read_session_report(result.transcript_path)
    assert report.compactions and all(c.pre_tokens > c.post_tokens > 0 for c in report.compactions)
    assert report.compaction_tokens_saved > 0  # besides the persisted results' tokens above
    assert result.final_reply.startswith(POLICY_LABEL)
    records = list(read_records(result.transcript_path))
    finished = [r for r in records if r["type"] == "subagent" and r.get("status") == "finished"]
    assert len(finished) == 1  # one explore child surveyed the classes and reported back
    assert _tree_digest(package) == before  # the code base itself is never edited
    copies = list(result.scratch.glob("*.py"))
    assert copies and "edited by the mtagent demo" in copies[0].read_text()

    plans = [r for r in records if r["type"] == "context_plan"]
    assert plans and max(p["tokens"] for p in plans) <= result.window
    assistant = [r for r in records if r["type"] == "transcript_message" and r["role"] == "assistant"]
    assert all(str(r["content"]).startswith(POLICY_LABEL) for r in assistant)

    model = ScriptedChatModel(["resumed fine"])
    with AgentSession.resume(result.session_id, package, model=model) as session:
        assert is_summary_message(session.history[0])
        assert session.run_turn("what did you find?").reply == "resumed fine"


def test_resuming_a_demo_session_without_a_model_says_to_pass_one(tmp_path):
    import pytest

    from mtagent.agent.demo import demo_settings
    from mtagent.errors import ModelError

    root = tmp_path / "code"
    root.mkdir()
    (root / "a.py").write_text("import os\n")
    model = ScriptedChatModel(["hi"], model_name="scripted:demo-policy")
    with AgentSession.create(root, model=model, settings=demo_settings()) as session:
        session.run_turn("hello")
        sid = session.session_id
    with pytest.raises(ModelError, match="scripted demo policy"):
        AgentSession.resume(sid, root, settings=demo_settings())
