"""On a one-slot server, background model work (session-memory notes) never gets ahead of a
main call that is in flight or waiting: the stub serves one request at a time, in arrival order."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from agent_helpers import agent_settings
from mtagent.context.model_gate import GATE, CallGate, background
from mtagent.agent.models import create_chat_model
from mtagent.agent.session import AgentSession
from stub_openai import StubOpenAI


def _reply(body: dict) -> dict:
    return {"content": "ok", "sleep": 0.6}


def _until(done, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < end, "the stub never got there"
        time.sleep(0.01)


class WatchedGate(CallGate):
    """A gate that says when a background call has come to it (to wait there)."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived = threading.Event()

    @contextmanager
    def background_call(self) -> Iterator[None]:
        self.arrived.set()
        with super().background_call():
            yield


def _run_order(gate: WatchedGate | None) -> list[str]:
    settings = agent_settings()
    with StubOpenAI(responder=_reply, one_slot=True) as stub:
        def model():
            return create_chat_model("openai:m", settings=settings, base_url=stub.base_url, environ={})

        main, notes = model(), model()
        if gate is not None:
            notes = background(notes, gate)

        def main_call(text: str) -> None:
            if gate is None:
                main.invoke(text)
                return
            with gate.main_call():
                main.invoke(text)

        threads = [threading.Thread(target=main_call, args=("main-1",)),
                   threading.Thread(target=notes.invoke, args=("notes",)),
                   threading.Thread(target=main_call, args=("main-2",))]
        threads[0].start()  # main-1 is in flight, then the notes are sent, then main-2
        _until(lambda: len(stub.requests) == 1)
        threads[1].start()
        if gate is None:
            _until(lambda: stub.arrivals == 2)  # the notes are queued at the server
        else:
            assert gate.arrived.wait(60), "the notes never reached the gate"  # they wait there now
        threads[2].start()
        for thread in threads:
            thread.join(10)
        return [r["messages"][-1]["content"] for r in stub.requests]


def test_notes_wait_for_the_main_calls_on_a_one_slot_server() -> None:
    assert _run_order(WatchedGate()) == ["main-1", "main-2", "notes"]


def test_without_the_gate_the_notes_get_ahead_of_the_main_call() -> None:
    """The one-slot mode reproduces the quirk the gate exists for."""
    assert _run_order(None) == ["main-1", "notes", "main-2"]


def test_the_agent_holds_the_gate_during_its_main_calls(project) -> None:
    seen: list[int] = []

    def responder(body: dict) -> dict:
        seen.append(GATE.main_in_flight)
        return {"content": "done"}

    settings = agent_settings()
    with StubOpenAI(responder=responder) as stub:
        model = create_chat_model("openai:m", settings=settings, base_url=stub.base_url, environ={})
        with AgentSession.create(project, model=model, settings=settings) as session:
            assert session.run_turn("hi").status == "done"
    assert seen and all(n >= 1 for n in seen)
    assert GATE.main_in_flight == 0
