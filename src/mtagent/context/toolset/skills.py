"""Agent Skills: found on disk, listed by name and description, the body loaded when invoked.

A skill is a folder with a ``SKILL.md`` (YAML front matter ``name`` and ``description``, then
Markdown instructions) and any files it bundles. Where they are found, first name wins:

* ``$MTAGENT_HOME/skills/*/SKILL.md`` — the user's own (``~/.mtagent/skills``);
* ``<project>/.mtagent/skills/*/SKILL.md`` and ``<project>/.claude/skills/*/SKILL.md`` — the
  project's, **only when the project is trusted** (``mtagent trust``): a cloned repository's skill
  is text it wants the model to follow.

Only the listing (name + one description line) sits in the context (the ``skills`` bucket). The
``skill`` tool (or ``/skill NAME``) reads the body fresh — through :mod:`mtagent.confine`, the one
confinement rule for project content (inside its root, no hard links, no symlinked folder entered,
bounded, redacted) — and returns it as the tool's result, so it is pinned in the
conversation until the next compaction; after one, :meth:`SkillBook.compacted` names the skills
that were loaded so the model can load them again by name. Bundled files are read on demand with
``skill(name, file=…)`` under the same rule, confined to the skill's folder (a user skill's folder
is outside the workspace the file tools may touch).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mtagent import confine, paths, trust
from mtagent.config import SkillsSettings
from mtagent.context.toolset.frontmatter import FrontMatterError, clean, parse
from mtagent.frames import frame
from mtagent.redaction import Redactor

SKILL_FILE = "SKILL.md"
NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")  # the open format: lowercase, digits, hyphens
PROJECT_DIRS = ((".mtagent", "skills"), (".claude", "skills"))
USER_DIRS = (("skills",),)


@dataclass(slots=True, frozen=True)
class Skill:
    """One discovered skill: where it is (a base folder and the parts below it) and its listing."""

    name: str
    description: str
    scope: str  # "user" or "project"
    base: Path
    parts: tuple[str, ...]  # below base, ending in SKILL.md

    @property
    def path(self) -> Path:
        return self.base.joinpath(*self.parts)

    @property
    def folder(self) -> Path:
        return self.base.joinpath(*self.parts[:-1])

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "description": self.description, "scope": self.scope, "path": str(self.path)}


@dataclass(slots=True)
class Discovery:
    skills: list[Skill] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # one line each: what and why
    untrusted: list[str] = field(default_factory=list)  # the project's skill folders, not loaded: not trusted


def skill_files(base: Path, folder: Sequence[str]) -> list[tuple[str, ...]]:
    """``folder…/<skill>/SKILL.md`` under ``base`` (resolved first), as parts below it, sorted.

    Listed by :func:`mtagent.confine.list_files`, the walk every context file gets: through
    descriptors, never entering a symlinked folder (a ``skills`` or ``.mtagent`` linked elsewhere, a
    skill folder linked to ``/proc``), one level of skill folders only, bounded. A SKILL.md that is
    itself a symlink is listed and :func:`read_skill_file` judges what it points at."""
    root = confine.real_path(base)
    depth = len(folder) + 2
    out = []
    for path in confine.list_files(root, Path(*folder), suffix=SKILL_FILE, recursive=True, max_depth=1):
        parts = path.relative_to(root).parts
        if len(parts) == depth and parts[-1] == SKILL_FILE:
            out.append(parts)
    return out


def read_skill_file(skill_base: Path, parts: Sequence[str], cfg: SkillsSettings,
                    redactor: Redactor | None = None) -> str:
    """The text of ``skill_base/parts…`` under :mod:`mtagent.confine`; ``OSError`` saying why not."""
    result = confine.read_text(skill_base, Path(*parts), max_bytes=cfg.max_file_bytes, redactor=redactor,
                               label="/".join(parts))
    if result.text is None or result.truncated:
        raise OSError(result.problem or "unreadable")
    return result.text


def _read_skill(base: Path, parts: tuple[str, ...], scope: str, cfg: SkillsSettings,
                redactor: Redactor | None) -> Skill | str:
    """The skill at ``base/parts`` or why it was skipped."""
    where = "/".join(parts)
    try:
        doc = parse(read_skill_file(base, parts, cfg, redactor))
    except FrontMatterError as exc:
        return f"{where}: {exc}"
    except OSError as exc:
        return str(exc)
    name, description = doc.fields.get("name", ""), doc.fields.get("description", "")
    if not NAME.match(name):
        return f"{where}: name {clean(name, 80)!r} is not lowercase letters, digits and hyphens (at most 64)"
    if not description:
        return f"{where}: no description in its front matter"
    return Skill(name, clean(description, cfg.description_max_chars), scope, base, parts)


def discover(project_root: Path | None, cfg: SkillsSettings, *, home: Path | None = None,
             trusted: bool | None = None, redactor: Redactor | None = None) -> Discovery:
    """Every skill the session may list (see the module docstring), user skills first."""
    found = Discovery()
    if not cfg.enabled:
        return found
    places: list[tuple[Path, tuple[str, ...], str]] = [(home or paths.mtagent_home(), d, "user") for d in USER_DIRS]
    if project_root is not None:
        is_trusted = trust.is_trusted(project_root) if trusted is None else trusted
        if is_trusted:
            places += [(project_root, d, "project") for d in PROJECT_DIRS]
        else:
            found.untrusted = sorted({clean(parts[-2], 64) for d in PROJECT_DIRS for parts in skill_files(project_root, d)})
            if found.untrusted:
                found.skipped.append(f"project skills ({', '.join(found.untrusted)}): not loaded, the project is not "
                                     "trusted or changed since it was (mtagent trust)")
    names: set[str] = set()
    unread = 0
    for base, folder, scope in places:
        for parts in skill_files(base, folder):
            if len(found.skills) >= cfg.max_skills:
                unread += 1
                continue
            result = _read_skill(base, parts, scope, cfg, redactor)
            if isinstance(result, str):
                found.skipped.append(result)
            elif result.name in names:
                found.skipped.append(f"{'/'.join(result.parts)}: a skill named {result.name!r} was found earlier")
            else:
                names.add(result.name)
                found.skills.append(result)
    if unread:
        found.skipped.append(f"{unread} more skills not read: over skills.max_skills ({cfg.max_skills})")
    return found


class SkillBook:
    """The session's skills: the listing, the bodies loaded since the last compaction."""

    def __init__(self, discovery: Discovery, cfg: SkillsSettings, redactor: Redactor | None = None) -> None:
        self.discovery = discovery
        self.cfg = cfg
        self.redactor = redactor
        self.by_name = {s.name: s for s in discovery.skills}
        self.pinned: list[str] = []  # loaded since the last compaction, in order
        self.before_compaction: list[str] = []  # loaded before the last compaction (re-attachable)
        self._lock = threading.Lock()

    @property
    def skills(self) -> list[Skill]:
        return self.discovery.skills

    def load(self, name: str) -> str:
        """The body of skill ``name`` with a header naming its folder; raises ``KeyError`` for an
        unknown name and ``OSError`` when the file can no longer be read safely."""
        skill = self.by_name[str(name)]
        body = parse(read_skill_file(skill.base, skill.parts, self.cfg, self.redactor)).body
        with self._lock:
            if skill.name not in self.pinned:
                self.pinned.append(skill.name)
        return frame("skill", f"Files this skill mentions are relative to its folder: read one with "
                     f"skill(name=\"{skill.name}\", file=\"<path>\") when you need it.\n\n{body}",
                     name=skill.name, folder=skill.folder)

    def read_file(self, name: str, file: str) -> str:
        """A file the skill bundles (``file`` relative to its folder), read under the same rule as the
        SKILL.md: inside the skill's folder, no symlink out, no hard link, bounded, redacted. A user
        skill lives outside the workspace, where the file tools do not reach. ``KeyError``: unknown
        skill; ``OSError``: the file may not be read (the message says why)."""
        skill = self.by_name[str(name)]
        result = confine.read_text(skill.folder, str(file), max_bytes=self.cfg.max_file_bytes, redactor=self.redactor,
                                   label=f"{skill.name}/{str(file)[:200]}")
        if result.text is None:
            raise OSError(result.problem or "unreadable")
        note = f"\n[{result.problem}]" if result.truncated else ""
        return frame("skill-file", f"{result.text}{note}", skill=skill.name, path=str(file)[:200])

    def compacted(self) -> None:
        """A compaction summarized the loaded bodies away: they may be loaded again by name."""
        with self._lock:
            self.before_compaction = list(dict.fromkeys([*self.before_compaction, *self.pinned]))
            self.pinned = []

    def state(self, name: str) -> str:
        return "loaded" if name in self.pinned else "deferred"
