"""Subagents (spec 003 Boundary, roadmap v1.3): children with their own context, tools and budget.

A session's :class:`SubagentRunner` serves the ``task`` tool: each call starts a child session
from a narrow brief (:mod:`.brief`), with a profile's tools and window (:mod:`.profiles`), runs
it (:mod:`.child`) and hands its structured report (:mod:`.report`) back as the tool's result,
merging its facts into the parent's task state (:mod:`.merge`). A session makes one runner.
"""

from __future__ import annotations

from mtagent.agent.subagents.child import ChildSpec, SubagentCancelled
from mtagent.agent.subagents.profiles import BUILTIN_PROFILES, AgentProfile, load_profiles
from mtagent.agent.subagents.report import SubagentReport, parse_report
from mtagent.agent.subagents.runner import SubagentRunner

__all__ = ["BUILTIN_PROFILES", "AgentProfile", "ChildSpec", "SubagentCancelled", "SubagentReport", "SubagentRunner",
           "load_profiles", "parse_report"]
