"""Subagents (spec 003 Boundary, roadmap v1.3): children with their own context, tools and budget.

A session's :class:`SubagentRunner` serves the ``task`` tool: each call starts a child session
from a narrow brief (:mod:`.brief`), with a profile's tools and window (:mod:`.profiles`), runs
it (:mod:`.child`) and hands its structured report (:mod:`.report`) back as the tool's result,
merging its facts into the parent's task state (:mod:`.merge`). :func:`attach` is the one call
a session makes.
"""

from __future__ import annotations

from typing import Any

from mtagent.agent.subagents.child import ChildSpec, ChildTools, SubagentCancelled
from mtagent.agent.subagents.profiles import BUILTIN_PROFILES, AgentProfile, load_profiles
from mtagent.agent.subagents.report import SubagentReport, parse_report
from mtagent.agent.subagents.runner import SubagentRunner
from mtagent.tools.task import TASK_TOOL

from mtagent.agent.host import SubagentParent


def attach(session: SubagentParent, tools: Any, model: Any, child: ChildSpec | None = None) -> SubagentRunner:
    """The session's runner; it hosts the ``task`` tool (:meth:`SubagentRunner.hosted_tools`) when
    subagents are enabled at this depth.

    A main session gets it with the default tools only (a caller's own tool list stays as given);
    a child (``child``) gets it while below ``subagents.max_depth`` and when its profile allows ``task``,
    and shares its parent's model choice, ``max_parallel`` slots and Ctrl-C.
    """
    depth = child.link.depth if child is not None else 0
    runner = SubagentRunner(session, depth, model, child)
    cfg = session.settings.subagents
    wanted = child.profile.allows(TASK_TOOL) if child is not None else tools is None
    runner.hosting = cfg.enabled and depth < cfg.max_depth and wanted
    return runner


__all__ = ["BUILTIN_PROFILES", "AgentProfile", "ChildSpec", "SubagentCancelled", "SubagentReport", "SubagentRunner",
           "attach", "load_profiles", "parse_report"]
