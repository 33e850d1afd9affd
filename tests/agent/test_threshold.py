"""One compaction threshold (issue 25): what ``/context``, the REPL banner, ``run``, demo and replay
show is what the engine's policy fires at — at every window, 2,048 tokens included, before the
first call as after it — and the compactor sizes its tail from the room the fixed part leaves.

In a 2,048-token window with about 1,070 fixed tokens the settings alone say 921 while the policy
fires higher (the fixed part plus ``min_threshold_fraction`` of the room beside it); the compactor
used to size its tail from ``max(1, 921 − fixed) = 1`` token."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from mtagent.agent.scripted import ScriptedChatModel, reply
from mtagent.agent.session import AgentSession
from mtagent.cli.run_cmd import window_warning
from mtagent.config import Settings
from mtagent.context.compaction.compactor import available_tokens
from mtagent.context.tokens import MessageTokenCounter
from mtagent.replay.simulate import simulate
from mtagent.replay.strategy_base import StrategyContext
from mtagent.replay.mtagent_strategy import MTAgentStrategy
from mtagent.replay.trajectory import Trajectory

WINDOWS = (2_048, 8_192, 65_536, 131_072)


def settings_for(window: int) -> Settings:
    return Settings.model_validate({"context": {"token_limit": window}, "session_memory": {"enabled": False},
                                    "memory": {"auto_extract": False}})


@pytest.mark.parametrize("window", WINDOWS)
def test_the_threshold_a_session_shows_is_the_one_its_policy_fires_at(tmp_path: Path, window: int) -> None:
    with AgentSession.create(tmp_path, model=ScriptedChatModel([reply("ok")]), settings=settings_for(window),
                             approval="auto") as session:
        shown_before = session.threshold  # /context, the REPL banner and run's warning read this
        fixed = session.opened.system.fixed_tokens(session.window_manager.counter.estimate)
        assert shown_before == session.settings.auto_compact_threshold_tokens(window, fixed)
        assert session.run_turn("hello").status == "done"
        plan = session.last_plan
        assert plan is not None and plan.threshold == shown_before == session.threshold
        policy = session.window_manager.policy
        at = policy.decide(shown_before, extra_tokens=fixed)
        below = policy.decide(shown_before - 1, extra_tokens=fixed)
        assert at.compact and not at.early and at.threshold == shown_before
        assert not below.compact or below.early  # below the ceiling only the cost trigger may act
        assert fixed < shown_before < window
        room = available_tokens(session.settings, window, fixed)
        assert room == shown_before - fixed and room > 1  # the compactor's tail has real room
        warning = window_warning(session)
        if warning is not None:
            assert f"{shown_before:,} tokens" in warning


def test_in_a_2048_window_the_fixed_part_raises_the_threshold_above_the_settings_floor(tmp_path: Path) -> None:
    settings = settings_for(2_048)
    with AgentSession.create(tmp_path, model=ScriptedChatModel([reply("ok")]), settings=settings,
                             approval="auto") as session:
        fixed = session.opened.system.fixed_tokens(session.window_manager.counter.estimate)
        floor = settings.auto_compact_threshold_tokens(2_048)
        assert fixed > floor  # the case the issue measured: 1,069 fixed against a 921 floor
        assert session.threshold > fixed > floor


@pytest.mark.parametrize("window", WINDOWS)
def test_replay_shows_and_fires_at_the_same_threshold(tmp_path: Path, window: int) -> None:
    system = [SystemMessage("You are a coding agent. " + "Follow the project's rules. " * 150, id="sys")]
    settings = Settings()
    counter = MessageTokenCounter(encoding=settings.context.encoding,
                                  overhead_tokens=settings.context.message_overhead_tokens)
    ctx = StrategyContext(system=system, window=window, counter=counter, settings=settings, workdir=tmp_path)
    strategy = MTAgentStrategy(ctx)
    try:
        strategy.step([HumanMessage("fix the build", id="h1")])
        plan = strategy._session.engine.window.last_plan
        assert plan is not None and plan.threshold == ctx.threshold
    finally:
        strategy.close()
    traj = Trajectory(messages=[*system, HumanMessage("fix the build", id="h1"), reply("done")], model_calls=[2],
                      format="test")
    assert simulate(traj, "mtagent", window=window, settings=settings, workdir=tmp_path).threshold == ctx.threshold
    assert ctx.threshold == settings.auto_compact_threshold_tokens(window, counter.estimate(system))
