"""Subagents (spec 003 Boundary, roadmap v1.3): children with their own context, tools and budget.

A session's :class:`SubagentRunner` serves the ``task`` tool: each call starts a child session
from a narrow brief (:mod:`.brief`), with a profile's tools and window (:mod:`.profiles`), runs
it (:mod:`.child`) and hands its structured report (:mod:`.report`) back as the tool's result,
merging its facts into the parent's task state (:mod:`.merge`). :func:`attach` is the one call
a session makes.
"""

from __future__ import annotations

from typing import Any

from mtagent.agent.subagents.child import ChildTools, SubagentCancelled
from mtagent.agent.subagents.profiles import BUILTIN_PROFILES, AgentProfile, load_profiles
from mtagent.agent.subagents.report import SubagentReport, parse_report
from mtagent.agent.subagents.runner import SubagentRunner
from mtagent.tools.task import TASK_TOOL, build_task_tool

from mtagent.agent.engine import EngineParts
from mtagent.agent.host import SessionHost


def attach(session: SessionHost, parts: EngineParts, tools: Any, model: Any) -> SubagentRunner:
    """The session's runner; adds the ``task`` tool when subagents are enabled at this depth.

    A main session gets it with the default tools only (a caller's own tool list stays as given);
    a child (built with :class:`ChildTools`) gets it while below ``subagents.max_depth`` and when
    its profile allows ``task``.
    """
    depth = tools.depth if isinstance(tools, ChildTools) else 0
    runner = SubagentRunner(session, depth, model)
    cfg = session.settings.subagents
    wanted = tools is None or (isinstance(tools, ChildTools) and tools.profile.allows(TASK_TOOL))
    if cfg.enabled and depth < cfg.max_depth and wanted:
        parts.tools.append(build_task_tool(runner, agents=runner.profiles.names))
    return runner


__all__ = ["BUILTIN_PROFILES", "AgentProfile", "SubagentCancelled", "SubagentReport", "SubagentRunner",
           "attach", "load_profiles", "parse_report"]
