"""A child with a small window (subagents.window_tokens) gets the compact tool schemas, and its
system prompt names only the tools it is offered."""

from __future__ import annotations

from subagent_helpers import open_session, report_json, settings, task

from mtagent.context.tokens import message_text


def _child(code, cfg):
    session, children = open_session(code, [task(agent="general"), "done"], [[report_json()]], cfg=cfg)
    with session:
        session.run_turn("go")
    return message_text(children[0].calls[0][0]), children[0]._tool_names


def test_a_small_child_window_offers_and_names_the_compact_set(code):
    system, tools = _child(code, settings(window_tokens=4096))
    assert "recall" not in tools and "save_memory" not in tools and "read_file" in tools
    assert "- recall:" not in system and "save_memory" not in system
    system, tools = _child(code, settings())
    assert "recall" in tools and "- recall:" in system
