"""Agent profiles: which tools, model, window and instructions a child gets.

Three are built in — ``explore`` and ``review`` (read-only) and ``general`` (every tool, under the
parent's approvals). More come from markdown files with front matter::

    ---
    description: Finds where a symbol is defined and used
    tools: [read_file, grep, glob]
    model: openai:gpt-4o-mini
    window: 32000
    ---
    You are a code search specialist. …

``~/.mtagent/agents/*.md`` are the user's own and trusted. ``<project>/.mtagent/agents/*.md`` come
with the repository, which is untrusted until its user trusts it (``mtagent trust``): an untrusted
project profile keeps its instructions but gets read-only tools only, cannot choose a model, and
cannot replace a built-in profile. A file that cannot be read as a profile is skipped with a
warning, never a crash.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtagent import confine, paths, trust
from mtagent.context.static.rules import parse_front_matter
from mtagent.errors import ConfigError

READ_ONLY_TOOLS: frozenset[str] = frozenset({"read_file", "grep", "glob", "ls", "read_tool_result", "recall"})
WRITE_TOOLS: frozenset[str] = frozenset({"write_file", "edit_file", "shell", "save_memory"})
ALL_TOOLS = "*"
PROFILE_DIR = "agents"
PROFILE_MAX_BYTES = 64 * 1024
log = logging.getLogger(__name__)
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,47}$")

EXPLORE_INSTRUCTIONS = """You are an exploration subagent. Search and read the code base to answer the \
brief. You cannot change anything. Prefer grep and glob to find things, then read only what you need. \
Stop as soon as you can answer; cite file paths (and line numbers) as evidence."""
REVIEW_INSTRUCTIONS = """You are a review subagent. Read the code or change named in the brief critically: \
bugs, missed cases, broken contracts, tests that cannot fail. You cannot change anything. Report each \
problem as a finding with its evidence (file:line) and how sure you are."""
GENERAL_INSTRUCTIONS = """You are a general-purpose subagent working on one self-contained task from \
the brief. You may edit files and run commands (the same approvals apply as for the main agent). Keep \
to the brief; report what you changed and how you verified it."""


@dataclass(slots=True, frozen=True)
class AgentProfile:
    """One kind of child. ``tools`` is a set of tool names, or ``None`` for every tool."""

    name: str
    instructions: str
    tools: frozenset[str] | None
    description: str = ""
    model: str | None = None
    window: int | None = None
    source: str = "built-in"
    trusted: bool = True

    def allows(self, tool: str) -> bool:
        return self.tools is None or tool in self.tools


BUILTIN_PROFILES: dict[str, AgentProfile] = {
    "explore": AgentProfile("explore", EXPLORE_INSTRUCTIONS, READ_ONLY_TOOLS,
                            "read-only search and reading of the code base"),
    "review": AgentProfile("review", REVIEW_INSTRUCTIONS, READ_ONLY_TOOLS, "read-only critique of code or a change"),
    "general": AgentProfile("general", GENERAL_INSTRUCTIONS, None,
                            "edits and commands under the parent's approvals"),
}


@dataclass(slots=True)
class ProfileSet:
    """The profiles a session can start, and what was skipped while loading them."""

    profiles: dict[str, AgentProfile] = field(default_factory=lambda: dict(BUILTIN_PROFILES))
    warnings: list[str] = field(default_factory=list)

    def get(self, name: str) -> AgentProfile | None:
        return self.profiles.get(name)

    @property
    def names(self) -> list[str]:
        return list(self.profiles)


def _tools_from(raw: Any) -> frozenset[str] | None | str:
    """The front matter's ``tools``: a list or comma string of names, or ``*``; else an error text."""
    if raw is None or raw == ALL_TOOLS:
        return None
    if isinstance(raw, str):
        items = [part.strip() for part in raw.split(",")]
    elif isinstance(raw, list) and all(isinstance(x, str) for x in raw):
        items = [x.strip() for x in raw]
    else:
        return "`tools` must be a list of tool names or '*'"
    if ALL_TOOLS in items:
        return None
    return frozenset(x for x in items if x)


def parse_profile(name: str, text: str, *, source: str, trusted: bool) -> tuple[AgentProfile | None, str | None]:
    """(profile, problem). An untrusted profile is narrowed to read-only tools and no model choice."""
    meta, body, problem = parse_front_matter(text)
    if problem:
        return None, problem
    tools = _tools_from(meta.get("tools"))
    if isinstance(tools, str):
        return None, tools
    window = meta.get("window")
    if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window <= 0):
        return None, "`window` must be a positive number of tokens"
    model = meta.get("model")
    if model is not None and not isinstance(model, str):
        return None, "`model` must be a provider:name string"
    instructions = body.strip()
    if not instructions:
        return None, "the profile has no instructions (the markdown body is empty)"
    description = str(meta.get("description") or "")[:200]
    if not trusted:
        tools = (tools or READ_ONLY_TOOLS) & READ_ONLY_TOOLS
        model = None
    return AgentProfile(name, instructions, tools, description, model, window, source, trusted), None


def _read_profiles(root: Path, folder: str, *, trusted: bool, into: ProfileSet) -> None:
    """Profiles in ``root/folder``, read under :mod:`mtagent.confine`'s rule: a symlinked folder is
    not entered, a profile symlinked or hard-linked outside ``root`` is refused, the text redacted."""
    reader = confine.ProjectReader.create(root, max_bytes=PROFILE_MAX_BYTES)
    for path in reader.files(folder):
        name = path.stem.lower()
        where = f"{path}"
        if not _NAME_RE.match(name):
            into.warnings.append(f"agent profile {where} skipped: name it with letters, digits, '-' or '_'")
            continue
        if not trusted and name in BUILTIN_PROFILES:
            into.warnings.append(f"agent profile {where} skipped: an untrusted project cannot replace the "
                                 f"built-in {name!r} profile (run `mtagent trust` to allow it)")
            continue
        result = reader.read(path, label=where)
        if result.text is None or result.truncated:
            into.warnings.append(f"agent profile skipped: {result.problem}" if not result.truncated else
                                 f"agent profile {where} skipped: not under {PROFILE_MAX_BYTES // 1024} KiB")
            continue
        text = result.text
        profile, problem = parse_profile(name, text, source=where, trusted=trusted)
        if profile is None:
            into.warnings.append(f"agent profile {where} skipped: {problem}")
            continue
        into.profiles[name] = profile


def project_trusted(project_root: Path) -> bool:
    """Whether the user trusts this project's own configuration (``mtagent trust``).

    A damaged trust file is the trust module's error to report; here it means "not trusted".
    """
    try:
        return trust.is_trusted(project_root)
    except ConfigError as exc:
        log.warning("%s", exc)
        return False


def load_profiles(project_root: Path, *, trusted: bool | None = None) -> ProfileSet:
    """Built-ins, then the user's ``~/.mtagent/agents``, then the project's ``.mtagent/agents``."""
    found = ProfileSet()
    _read_profiles(paths.mtagent_home(), PROFILE_DIR, trusted=True, into=found)
    is_trusted = project_trusted(project_root) if trusted is None else trusted
    _read_profiles(Path(project_root), f".mtagent/{PROFILE_DIR}", trusted=is_trusted, into=found)
    return found
