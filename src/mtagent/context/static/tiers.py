"""Static context: what is injected at the start of every request, built fresh each turn.

Spec 001's two tiers:

* **Tier 1** — the global ``~/.mtagent/CONTEXT.md`` (rules, preferences, its
  ``## Agent Memories``) goes into the system prompt, every turn.
* **Tier 2** — the project's ``CONTEXT.md`` (with ``CONTEXT.local.md``, the rules of
  ``.mtagent/rules/`` that apply, and the project's ``MEMORY.md`` index) goes into a
  ``<session_context>`` human message together with today's date, the OS and the working
  directory. It sits where the first turn's context sits: right after the system prompt.

Neither is ever part of the persistent history, so no compaction can summarize a rule away:
:class:`StaticContext` re-reads the files (hand edits apply on the next turn) and the agent
prepends its two messages to whatever view the context engine prepared. The session's date is
fixed when the session starts, so the prefix stays byte-identical for prompt caching.

Authority (spec 003) lives in :mod:`mtagent.context.static.authority`; a long-term memory that
contradicts a rule is recorded as a conflict and left out of the prompt — the rule wins.
"""

from __future__ import annotations

import datetime as _dt
import logging
import math
import os
import platform
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

from mtagent import paths
from mtagent.config import MemorySettings
from mtagent.context.static import memory, memory_resolve
from mtagent.context.static.authority import Authority, AuthorityItem, Conflict, detect_conflicts
from mtagent.context.static.rules import RuleSet, load_rules
from mtagent.redaction import Redactor, collect_secrets
from mtagent.context.tokens import count_text_tokens
from mtagent.frames import frame, neutralize

log = logging.getLogger(__name__)

SESSION_CONTEXT_ID = "session-context"
SYSTEM_PROMPT_ID = "system-prompt"
STATIC_KIND = "static_context"

SYSTEM_PROMPT_TEMPLATE = """\
You are mtagent, a coding agent that works in the user's project through tools.

Working principles:
- Read before you change: look at the relevant code, tests and rules first.
- Make the smallest change that does the job, then verify it (build, tests, or a run).
- Report what you did and what you saw; never claim a result you did not observe.
- Large tool results are stored in full; you see a preview and can read the rest by path.
- Earlier parts of a long session may be replaced by a summary; trust files and fresh tool
  results over the summary when they disagree.
- Answer in the language the user writes in.

Rules take precedence in this order: system and safety rules, then project rules, then the
user's current instruction, then task state, then verified tool results, then remembered facts,
then summaries of earlier conversation.
{memory_section}{tool_section}{global_context_section}{runtime_context_section}"""


# Said only when save_memory is offered (a small window's compact tool set leaves it out).
SAVE_MEMORY_SECTION = """
Use save_memory only for durable facts worth knowing in a future session (a user preference,
a project convention, a lesson learned the hard way) — not for task progress.
"""


@dataclass(slots=True, frozen=True)
class RuntimeContext:
    """Per-turn fields of the agent state that the system prompt shows when set."""

    optimization_mode: str | None = None
    source_file: str | None = None
    working_directory: str | None = None


def _tool_name_and_description(tool: Any) -> tuple[str, str]:
    if isinstance(tool, dict):
        fn = tool.get("function", tool)
        return str(fn.get("name", "")), str(fn.get("description", "") or "")
    return str(getattr(tool, "name", "")), str(getattr(tool, "description", "") or "")


def render_tool_section(tools: Sequence[Any]) -> str:
    """``## Tools`` with one ``- name: first line of description`` per tool; empty without tools."""
    rows = []
    for tool in tools:
        name, description = _tool_name_and_description(tool)
        if name:
            first = description.strip().splitlines()[0] if description.strip() else ""
            rows.append(f"- {name}: {first}" if first else f"- {name}")
    return "\n## Tools\n" + "\n".join(rows) + "\n" if rows else ""


def render_global_context_section(global_context: str) -> str:
    text = global_context.strip()
    return f"\n## Global context (~/.mtagent/CONTEXT.md)\n{text}\n" if text else ""


def render_runtime_context_section(runtime: RuntimeContext | None) -> str:
    if runtime is None:
        return ""
    rows = [f"- {label}: {value}" for label, value in (
        ("Optimization mode", runtime.optimization_mode),
        ("Source file", runtime.source_file),
        ("Working directory", runtime.working_directory),
    ) if value]
    return "\n## Runtime context\n" + "\n".join(rows) + "\n" if rows else ""


def build_system_prompt(tools: Sequence[Any], global_context: str, runtime: RuntimeContext | None,
                        *, list_tools: bool = True) -> str:
    """The system prompt: the fixed template plus its sections (each omitted when empty).

    ``list_tools=False`` leaves out the ``## Tools`` list (the compact tool-schema mode: the
    schemas already name every tool); the save_memory advice appears only when that tool is offered.
    """
    names = {_tool_name_and_description(t)[0] for t in tools}
    return SYSTEM_PROMPT_TEMPLATE.format(
        memory_section=SAVE_MEMORY_SECTION if not tools or "save_memory" in names else "",
        tool_section=render_tool_section(tools) if list_tools else "",
        global_context_section=render_global_context_section(global_context),
        runtime_context_section=render_runtime_context_section(runtime),
    ).rstrip() + "\n"


def load_global_context(path: Path | None = None) -> str:
    """Tier 1 text as injected: the global CONTEXT.md without obsolete memories ('' if absent)."""
    target = path or paths.global_context_path()
    try:
        text = target.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    return memory.strip_obsolete_memories(text)


def describe_os() -> str:
    return f"{platform.system() or os.name} {platform.release()} ({platform.machine() or 'unknown arch'})".strip()


def build_session_context(
    working_directory: str | os.PathLike[str],
    *,
    today: _dt.date,
    os_name: str,
    project_sections: Sequence[tuple[str, str]] = (),
) -> HumanMessage:
    """The ``<session_context>`` message: date, OS, working directory, then Tier 2 sections.

    ``project_sections`` are ``(source label, text)`` pairs: project CONTEXT.md, local rules,
    path-scoped rules that apply, and the project memory index.
    """
    lines = [
        "<session_context>",
        f"Today's date: {today.isoformat()}",
        f"OS: {os_name}",
        f"Working directory: {neutralize(str(Path(working_directory)))}",
    ]
    for source, text in project_sections:  # the repository's words: they cannot close either frame
        if text.strip():
            lines += ["", frame("project_context", text.strip(), source=source)]
    lines.append("</session_context>")
    return HumanMessage(
        content="\n".join(lines),
        id=SESSION_CONTEXT_ID,
        response_metadata={"mtagent": {"kind": STATIC_KIND, "part": "session_context", "bucket": "session_context"}},
    )


@dataclass(slots=True)
class StaticParts:
    """One turn's static context and what building it found.

    ``watched``: every file and folder the build read or looked for; ``valid_until`` (a Unix time):
    when the first memory it shows expires. Until then, the same files give the same parts."""

    system: SystemMessage
    session_context: HumanMessage
    rules: RuleSet
    conflicts: list[Conflict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    watched: tuple[Path, ...] = ()
    valid_until: float = math.inf

    @property
    def messages(self) -> list[SystemMessage | HumanMessage]:
        """Prepend these to the engine's view: system prompt, then ``<session_context>``."""
        return [self.system, self.session_context]


@dataclass
class StaticContext:
    """The static context of one session, read from disk by :meth:`build` (a session's
    :class:`~mtagent.context.opener.system.SystemContext` builds again only when a file it read changed).

    ``touched`` paths (see :func:`mtagent.context.opener.system.touched_paths`) switch on the
    path-scoped rules; once a file was touched its rules stay for the rest of the session
    (``touched_files``, first touch first).
    ``redactor`` cleans every project file read (the session's, with its configured secrets; by
    default the secrets of this process's environment and every known key shape).
    """

    project_root: Path
    settings: MemorySettings = field(default_factory=MemorySettings)
    home: Path | None = None  # the tenant's local home (session.local); $MTAGENT_HOME by default
    today: _dt.date = field(default_factory=_dt.date.today)
    os_name: str = field(default_factory=describe_os)
    redactor: Redactor = field(default_factory=lambda: Redactor(collect_secrets()), repr=False)
    touched_files: dict[str, None] = field(default_factory=dict, init=False, repr=False)
    _warned: dict[str, None] = field(default_factory=dict, init=False, repr=False)

    def build(self, tools: Sequence[Any] = (), runtime: RuntimeContext | None = None,
              touched: Iterable[str] = (), *, list_tools: bool = True) -> StaticParts:
        """Read Tier 1, rules and memories from disk and render this turn's two messages."""
        self.touched_files.update(dict.fromkeys(touched))
        rules = load_rules(self.project_root, self.settings, self.redactor)
        active_rules = rules.active(self.touched_files)
        global_text = load_global_context()
        project_memory = memory.load_memory_text("project", self.project_root, self.settings.index_max_lines,
                                                 home=self.home)

        rule_items = [AuthorityItem(f"rule:{r.source}", Authority.PROJECT_RULES, r.text) for r in active_rules]
        rule_items.append(AuthorityItem("rule:~/.mtagent/CONTEXT.md", Authority.PROJECT_RULES,
                                        _without_memories(global_text)))
        resolution = memory_resolve.resolve(self.project_root, index_max_lines=self.settings.index_max_lines,
                                            home=self.home)
        memory_items = [AuthorityItem(memory_resolve.entry_id(e), Authority.LONG_TERM_MEMORY, e.text)
                        for entries in resolution.active.values() for e in entries]
        conflicts = detect_conflicts([*rule_items, *memory_items])
        lost_ids = {loser for c in conflicts for loser in c.losers}
        losing = {item.text for item in memory_items if item.id in lost_ids}
        losing |= {e.text for e in resolution.superseded}
        if losing:
            global_text = _drop_facts(global_text, losing)
            project_memory = _drop_facts(project_memory, losing)
        namespace_memory = {ns: _drop_facts(memory.load_memory_text(ns, self.project_root,
                                                                    self.settings.index_max_lines, home=self.home),
                                        losing)
                            for ns in ("user", "team")}

        sections = [(r.source, r.text) for r in active_rules]
        sections.append((f"{memory.PROJECT_INDEX_NAME} (project memory)", project_memory))
        sections += [(f"{ns} memory", text) for ns, text in namespace_memory.items()]
        global_rules = _without_memories(global_text)
        system = SystemMessage(
            content=build_system_prompt(tools, global_text, runtime, list_tools=list_tools),
            id=SYSTEM_PROMPT_ID,
            response_metadata={"mtagent": {"kind": STATIC_KIND, "part": "system", "split": {
                "rules": count_text_tokens(global_rules),
                "memory": count_text_tokens(global_text) - count_text_tokens(global_rules),
            }}},
        )
        session = build_session_context(self.project_root, today=self.today, os_name=self.os_name,
                                         project_sections=sections)
        session.response_metadata["mtagent"]["split"] = {
            "rules": sum(count_text_tokens(r.text) for r in active_rules),
            "memory": count_text_tokens(project_memory) + sum(count_text_tokens(t) for t in namespace_memory.values()),
        }
        warnings = list(rules.warnings) + [f"memory contradicts a rule and is not used: {c.reason}"
                                           for c in conflicts]
        for w in warnings:
            if w not in self._warned:
                self._warned[w] = None
                log.warning("%s", w)
        shown = [e for entries in resolution.active.values() for e in entries] + resolution.superseded
        expiries = [e.meta.expires_at.timestamp() for e in shown if e.meta.expires_at is not None]
        watched = [memory.memory_path(ns, self.project_root, home=self.home) for ns in memory.SCOPES]
        return StaticParts(system, session, rules, conflicts + resolution.conflicts, warnings,
                           tuple(dict.fromkeys([*watched, *rules.watched])), min(expiries, default=math.inf))

    @property
    def shown_warnings(self) -> list[str]:
        """Every warning building the context has shown so far (a refused ``@include`` …), first first:
        printed once when it happens, listed again by ``/context``."""
        return list(self._warned)


def _without_memories(global_text: str) -> str:
    """The global CONTEXT.md minus its Agent Memories list (those are memories, not rules)."""
    lines = global_text.splitlines(keepends=True)
    span = memory.section_span(lines, memory.AGENT_MEMORIES_HEADING)
    if span is None:
        return global_text
    return "".join(lines[:span[0] - 1] + lines[span[1]:])


def _drop_facts(text: str, facts: set[str]) -> str:
    keys = {memory.normalize_fact(f) for f in facts}
    kept = []
    for line in text.splitlines(keepends=True):
        parsed = memory.parse_item(line)
        if parsed and memory.normalize_fact(parsed[0]) in keys:
            continue
        kept.append(line)
    return "".join(kept)
