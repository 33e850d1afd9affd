"""One turn runs in few source files: an independent check of how far a call bounces (issue 35).

The second turn of a scripted session (text only), then a turn with one ``read_file`` call, run
under ``sys.setprofile`` and ``threading.setprofile``; every mtagent source file a function is
entered in counts once. ``agent/scripted.py`` is left out: it is this test's fake model, standing
in for the provider. The turns run in a fresh interpreter (this file as a script), so what other
tests imported or registered (``mtagent.eval`` hooks every chat-model call of the process) does
not count. A turn that enters more files than its limit fails with the list of files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

FAKE_MODEL = "agent/scripted.py"
TEXT_TURN_FILES = 35
TOOL_TURN_FILES = 45


def _files_entered(package: str, run: Callable[[], object]) -> list[str]:
    entered: set[str] = set()

    def profile(frame, event, arg):  # type: ignore[no-untyped-def]
        name = frame.f_code.co_filename
        if event == "call" and name.startswith(package):
            entered.add(name[len(package):])

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return sorted(entered - {FAKE_MODEL})


def trace_turns(root: Path) -> dict[str, list[str]]:
    """The files a text-only turn and a one-``read_file`` turn enter, in a session on ``root``."""
    import mtagent
    from mtagent.agent.scripted import ScriptedChatModel, reply, tool_call
    from mtagent.agent.session import AgentSession

    package = str(Path(mtagent.__file__).parent) + os.sep
    (root / "notes.txt").write_text("alpha\nbeta\n")
    model = ScriptedChatModel([reply("hi"), reply("hello again"),
                               tool_call("read_file", {"file_path": "notes.txt"}, id="c1"), reply("done")])
    with AgentSession.create(root, model=model, approval="auto") as session:
        session.run_turn("first")
        text = _files_entered(package, lambda: session.run_turn("second"))
        tool = _files_entered(package, lambda: session.run_turn("read it"))
        messages = session.conversation.messages
        assert messages[-1].content == "done"
        assert any(m.type == "tool" and "alpha" in str(m.content) for m in messages)
    return {"text": text, "tool": tool}


def test_a_text_turn_and_a_one_tool_turn_stay_within_their_source_files(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, __file__, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    turns = json.loads(run.stdout.splitlines()[-1])
    text, tool = turns["text"], turns["tool"]
    assert "agent/graph.py" in text and "tools/files.py" in tool  # the trace saw each turn run
    assert len(text) <= TEXT_TURN_FILES, f"a text-only turn entered {len(text)} files: {text}"
    assert len(tool) <= TOOL_TURN_FILES, f"a one-tool turn entered {len(tool)} files: {tool}"


if __name__ == "__main__":
    print(json.dumps(trace_turns(Path(sys.argv[1]))))
