"""Project rules: ``CONTEXT.md``, the untracked ``CONTEXT.local.md``, and ``.mtagent/rules/*.md``.

A rule file under ``.mtagent/rules/`` may start with front matter that scopes it to paths::

    ---
    paths: ["src/**/*.py", "tests/*.py"]
    ---
    Use type hints on every public function.

Such a rule is injected only once a matching file has been touched (read, written, edited,
searched in) during the session — "situational constraints" in spec 003's terms, so a big
project's rules do not all crowd every prompt. Files without ``paths`` always apply.

Any rule file may pull in another with an ``@path`` reference (relative to the including file,
``~/`` for home). Includes nest up to ``memory.include_max_depth``; a cycle or a missing file is
reported in :attr:`RuleSet.warnings`, never raised.

Every file here — the context files, rule files and what they include — is read under
:mod:`mtagent.confine`'s rule: inside the project (or a pattern of the user's own
``memory.allow_external_includes``), never ``/proc``, ``/dev`` or ``/sys``, no hard links, no
symlink leaving the project, at most ``memory.context_file_max_bytes`` each, redacted. A refusal
is a warning, so a cloned repository's ``@~/.ssh/id_rsa`` is shown to the user, not sent. When all rules together exceed
``memory.rules_max_chars`` a warning says so (spec 003: very long rule files get ignored).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from mtagent.config_sections import MemorySettings
from mtagent.confine import ProjectReader, real_path
from mtagent.context.static.front_matter import parse_front_matter
from mtagent.globs import glob_match as shared_glob_match
from mtagent.paths import LOCAL_CONTEXT_FILE, PROJECT_CONTEXT_FILES, RULES_DIR
from mtagent.redaction import Redactor

_INCLUDE_RE = re.compile(r"(?:(?<=\s)|^)@(?P<path>[\w.~/-]+)")
_FENCE_RE = re.compile(r"^\s*(```|~~~)")


@dataclass(slots=True, frozen=True)
class Rule:
    """One rule file after its includes were expanded."""

    source: str  # path relative to the project root (or absolute when outside it)
    kind: str  # "project" | "local" | "rule"
    text: str
    globs: tuple[str, ...] = ()

    def applies_to(self, touched: Iterable[str]) -> bool:
        return not self.globs or any(glob_match(g, p) for g in self.globs for p in touched)


@dataclass(slots=True)
class RuleSet:
    """Every rule of a project, plus what went wrong while loading them (nothing raises).

    ``watched``: every path the load looked at — the context files (there or not), the rule
    folders listed, each file read and each include — so a caller can tell when to load again."""

    rules: list[Rule] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    cycles: list[list[str]] = field(default_factory=list)
    watched: list[Path] = field(default_factory=list)

    def active(self, touched: Iterable[str] = ()) -> list[Rule]:
        """Unconditional rules, then the path-scoped rules a touched file matches, in load order."""
        paths = [_norm(p) for p in touched]
        return [r for r in self.rules if r.applies_to(paths)]

    @property
    def total_chars(self) -> int:
        return sum(len(r.text) for r in self.rules)


def _globs_from(meta: dict[str, Any]) -> tuple[tuple[str, ...], str | None]:
    raw = meta.get("paths", meta.get("globs"))
    if raw is None:
        return (), None
    if isinstance(raw, str):
        items = [part.strip() for part in raw.split(",")]
    elif isinstance(raw, list) and all(isinstance(x, str) for x in raw):
        items = [x.strip() for x in raw]
    else:
        return (), "`paths` must be a glob or a list of globs"
    return tuple(x for x in items if x), None


def glob_match(pattern: str, path: str) -> bool:
    """Whether a project-relative ``path`` matches a rule's glob (gitignore's dialect, :mod:`mtagent.globs`)."""
    try:
        return shared_glob_match(_norm(pattern.strip()), _norm(path))
    except ValueError:  # a brace bomb matches nothing
        return False


def _norm(path: str) -> str:
    path = path.replace(os.sep, "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def _display(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


@lru_cache(maxsize=512)
def _include_targets(text: str) -> tuple[str, ...]:
    """``@path`` references outside fenced code blocks, in order (cached by text)."""
    found: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if _FENCE_RE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for m in _INCLUDE_RE.finditer(re.sub(r"`[^`]*`", "", line)):
            ref = m.group("path").rstrip(".,;:")
            if "/" in ref or re.search(r"\.[A-Za-z0-9]+$", ref):
                found.append(ref)
    return tuple(found)


def _spell_include(ref: str, base_dir: Path) -> Path:
    """Where ``@ref`` points as written (``~/`` is home); :mod:`mtagent.confine` decides on it."""
    if ref.startswith("~/"):
        return Path(ref).expanduser()
    return base_dir / ref


def expand_includes(text: str, source: Path, *, root: Path, max_depth: int,
                    warnings: list[str], cycles: list[list[str]], reader: ProjectReader | None = None,
                    _stack: tuple[Path, ...] = (), _seen: set[Path] | None = None) -> str:
    """``text`` followed by the files its ``@path`` references name (depth-first, each once).

    ``source`` is the including file's resolved path; each include is read through ``reader``
    (confined to ``root`` unless the user allowed more), and a refusal becomes a warning.
    """
    reader = reader or ProjectReader.create(root)
    seen = _seen if _seen is not None else set()
    stack = (*_stack, source)
    seen.add(source)
    parts = [text.rstrip("\n")]
    for ref in _include_targets(text):
        spelled = _spell_include(ref, source.parent)
        target = real_path(spelled)
        chain = [_display(p, root) for p in stack] + [_display(target, root)]
        if target in stack:
            cycles.append(chain)
            warnings.append(f"include cycle {' -> '.join(chain)}: {_display(target, root)} was not included again")
            continue
        if target in seen:
            continue
        if len(stack) > max_depth:
            warnings.append(f"include depth limit ({max_depth}) reached at {' -> '.join(chain)}; "
                            "flatten the includes or raise memory.include_max_depth")
            continue
        result = reader.read(spelled, label=f"@{ref} in {_display(source, root)}")
        if result.problem:
            warnings.append(result.problem)
        if result.text is None:
            continue
        target = result.path
        seen.add(target)
        body = expand_includes(result.text, target, root=root, max_depth=max_depth, warnings=warnings,
                               cycles=cycles, reader=reader, _stack=stack, _seen=seen)
        parts.append(f"\n<!-- included from {_display(target, root)} -->\n{body}")
    return "\n".join(parts)


def _load_one(path: Path, kind: str, root: Path, max_depth: int, out: RuleSet, reader: ProjectReader) -> None:
    result = reader.read(path, label=_display(path, root))
    if result.problem:
        out.warnings.append(result.problem)
    if result.text is None:
        return
    raw = result.text
    globs: tuple[str, ...] = ()
    body = raw
    if kind == "rule":
        meta, body, problem = parse_front_matter(raw)
        globs, glob_problem = _globs_from(meta)
        for issue in (problem, glob_problem):
            if issue:
                out.warnings.append(f"{_display(path, root)}: {issue}; the rule applies to every file")
    text = expand_includes(body.strip("\n"), result.path, root=root, max_depth=max_depth,
                           warnings=out.warnings, cycles=out.cycles, reader=reader)
    if text.strip():
        out.rules.append(Rule(_display(path, root), kind, text, globs))


def load_rules(project_root: str | os.PathLike[str], settings: MemorySettings, redactor: Redactor | None = None
               ) -> RuleSet:
    """Read the project's rules fresh from disk (cheap: a handful of small files), as the ``[memory]``
    settings say (include depth, size caps; ``allow_external_includes`` are the user's patterns, never
    the project's); ``redactor`` cleans every text read (default: the secrets of this process).
    """
    root = real_path(project_root)
    out = RuleSet(watched=[root / name for name in (*PROJECT_CONTEXT_FILES, LOCAL_CONTEXT_FILE)])
    reader = ProjectReader.create(root, max_bytes=settings.context_file_max_bytes,
                                  allow_external=settings.allow_external_includes, redactor=redactor, seen=out.watched)
    for name in (*PROJECT_CONTEXT_FILES, LOCAL_CONTEXT_FILE):
        if os.path.lexists(root / name):
            _load_one(root / name, "local" if name == LOCAL_CONTEXT_FILE else "project", root,
                      settings.include_max_depth, out, reader)
    for path in reader.files(RULES_DIR, recursive=True):
        _load_one(path, "rule", root, settings.include_max_depth, out, reader)
    if out.total_chars > settings.rules_max_chars:
        out.warnings.append(
            f"project rules total {out.total_chars:,} chars, more than memory.rules_max_chars="
            f"{settings.rules_max_chars:,}; long rule files get ignored by models — split them into "
            f"path-scoped files under {RULES_DIR}/"
        )
    return out

