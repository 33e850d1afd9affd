"""Ctrl-C that lands while the shell tool forks ends the turn at once (not when the command ends),
answers the call as interrupted, leaves no process behind and the session usable."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest
from langchain_core.messages import ToolMessage

from agent_helpers import agent_settings
from interrupts import live_descendants, wait_for
from mtagent.agent.scripted import ScriptedChatModel, tool_call
from mtagent.agent.session import AgentSession
from mtagent.tools import proctree

PROMPT_SECONDS = 10.0  # generous for a loaded 2-core box; the command would run 30 s


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to find processes left behind")
def test_ctrl_c_while_the_shell_forks_interrupts_the_turn_promptly(project, sigint_delivered, monkeypatch):
    real = proctree.die_with_parent

    def and_press_ctrl_c() -> None:  # in the forked child: lands before Popen has returned
        real()
        os.kill(os.getppid(), signal.SIGINT)

    monkeypatch.setattr(proctree, "die_with_parent", and_press_ctrl_c)
    model = ScriptedChatModel([tool_call("shell", {"command": "sleep 30"}, id="s1"), "after the stop"])
    suite = live_descendants(os.getpid())  # the suite's own services (PostgreSQL, Ray) are not the call's
    with AgentSession.create(project, model=model, settings=agent_settings(), approval="auto") as session:
        began = time.monotonic()
        first = session.run_turn("wait")
        took = time.monotonic() - began
        monkeypatch.setattr(proctree, "die_with_parent", real)
        assert first.status == "interrupted" and took < PROMPT_SECONDS, (first.status, took)
        answer = next(m for m in session.history if isinstance(m, ToolMessage) and m.tool_call_id == "s1")
        assert answer.status == "error" and "Ctrl-C" in answer.content
        wait_for(lambda: not live_descendants(os.getpid()) - suite, "no process left behind by the call",
                 timeout=PROMPT_SECONDS)
        assert session.run_turn("go on").reply == "after the stop"
