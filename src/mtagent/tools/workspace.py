"""Path confinement: every path a tool touches must stay inside the workspace roots.

A model-supplied path is untrusted. :meth:`Workspace.resolve` refuses, with a
:class:`~mtagent.errors.WorkspacePathError` that says what to do instead:

* NUL bytes, control and invisible format characters (bidi overrides, zero-width spaces),
  and look-alikes of ``.``, ``/``, ``\\`` or ``:`` (full-width dots, division slashes, …);
* ``~`` (no home expansion), backslashes, Windows drive letters and UNC paths;
* paths whose *spelling* leaves the roots (``../x``, ``/etc/passwd``), and paths whose
  *resolution* leaves them (a symlink inside pointing out); a path spelled outside that a
  symlink leads back in is refused too, since the spelling is what the user reviews;
* components longer than the filesystem allows, and very long paths.

The workspace root and any ``extra_roots`` (``Settings.agent.workspace_extra_roots``) are
resolved once, so a root that is itself a symlink works.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from mtagent import safe_open
from mtagent.errors import WorkspacePathError

IGNORED_DIRS = frozenset({
    ".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", ".eggs", ".idea", ".gradle",
})
MAX_PATH_CHARS = 4096
MAX_COMPONENT_BYTES = 255
_DRIVE = re.compile(r"^[A-Za-z]:")
_PATH_SYNTAX = frozenset("./\\:~")
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"})
# Characters that look like path syntax without normalising to it.
_LOOKALIKES = frozenset("\u2215\u2044\u29f8\u29f9\u2216\u244a\u2024\u2025\u2026\u3002\uff61\u0338\u2afd")


def is_ignored_dir(path: Path) -> bool:
    """Folders tools skip: VCS data, dependency trees, caches and virtualenvs."""
    return path.name in IGNORED_DIRS or (path / "pyvenv.cfg").is_file()


def _check_spelling(raw: str) -> None:
    if "\x00" in raw:
        raise WorkspacePathError(f"path {raw!r} contains a NUL byte; give a plain relative path")
    if not raw.strip():
        raise WorkspacePathError("path is empty; give a path relative to the workspace root, e.g. 'src/app.py'")
    if len(raw) > MAX_PATH_CHARS:
        raise WorkspacePathError(
            f"path is {len(raw):,} chars long (limit {MAX_PATH_CHARS:,}); use a shorter path"
        )
    for ch in raw:
        if ord(ch) < 128:
            continue
        category = unicodedata.category(ch)
        if category in _REFUSED_CATEGORIES or (category == "Zs" and ch != " "):
            raise WorkspacePathError(
                f"path {raw!r} contains the invisible or control character U+{ord(ch):04X} "
                f"({unicodedata.name(ch, 'unnamed')}); retype the path in plain characters"
            )
        folded = unicodedata.normalize("NFKC", ch)
        if ch in _LOOKALIKES or any(c in _PATH_SYNTAX for c in folded):
            raise WorkspacePathError(
                f"path {raw!r} contains U+{ord(ch):04X} ({unicodedata.name(ch, 'unnamed')}), which looks "
                "like path punctuation; use plain '.' and '/'"
            )
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in raw):
        raise WorkspacePathError(f"path {raw!r} contains a control character; retype the path")
    if raw.startswith("~"):
        raise WorkspacePathError(
            f"path {raw!r} starts with '~'; home folders are not expanded and are outside the "
            "workspace — give a path relative to the workspace root"
        )
    if "\\" in raw:
        raise WorkspacePathError(f"path {raw!r} contains a backslash; use '/' as the separator")
    if _DRIVE.match(raw):
        raise WorkspacePathError(f"path {raw!r} names a Windows drive; give a path relative to the workspace root")
    for part in raw.split("/"):
        if len(part.encode("utf-8", errors="surrogatepass")) > MAX_COMPONENT_BYTES:
            raise WorkspacePathError(
                f"a component of path {raw[:80]!r}… is longer than {MAX_COMPONENT_BYTES} bytes; "
                "file names cannot be that long"
            )


@dataclass(slots=True)
class Workspace:
    """The folders tools may read and write."""

    root: Path
    extra_roots: tuple[Path, ...] = ()
    roots: tuple[Path, ...] = field(init=False, repr=False)  # the root first, then the extra roots

    def __post_init__(self) -> None:
        root = Path(self.root).expanduser()
        if not root.is_dir():
            raise WorkspacePathError(f"workspace root {root} is not a folder")
        self.root = root.resolve()
        extras: list[Path] = []
        for extra in self.extra_roots:
            p = Path(extra).expanduser()
            if not p.is_absolute():
                p = self.root / p
            if p.is_dir():
                extras.append(p.resolve())
        self.extra_roots = tuple(extras)
        self.roots = (self.root, *self.extra_roots)

    @classmethod
    def create(cls, root: str | os.PathLike[str], extra_roots: Iterable[str | os.PathLike[str]] = ()) -> Workspace:
        return cls(Path(root), tuple(Path(p) for p in extra_roots))

    def _inside(self, path: Path) -> bool:
        return any(path == root or root in path.parents for root in self.roots)

    def resolve(self, raw: str | os.PathLike[str]) -> Path:
        """The absolute, symlink-free path for ``raw``, or :class:`WorkspacePathError`."""
        if isinstance(raw, os.PathLike):
            raw = os.fspath(raw)
        if not isinstance(raw, str):
            raise WorkspacePathError(f"path must be a string, got {type(raw).__name__}")
        _check_spelling(raw)
        spelled = Path(os.path.normpath(raw if os.path.isabs(raw) else os.path.join(self.root, raw)))
        if not self._inside(spelled):
            raise WorkspacePathError(self._outside_message(raw))
        try:
            resolved = spelled.resolve()
        except (OSError, RuntimeError) as exc:  # symlink loops, name too long
            raise WorkspacePathError(f"path {raw!r} cannot be resolved ({exc}); check for symlink loops") from exc
        if not self._inside(resolved):
            raise WorkspacePathError(
                f"path {raw!r} leads outside the workspace through a symlink (to {resolved}); "
                "tools may only touch files under " + self._roots_text()
            )
        return resolved

    def open_read(self, path: Path) -> AbstractContextManager[tuple[BinaryIO, os.stat_result]]:
        """``with ws.open_read(path) as (fh, st)``: the resolved ``path`` opened race-free
        (:mod:`~mtagent.safe_open`): a regular file with one link, or WorkspacePathError."""
        return safe_open.reading(self.roots, path)  # type: ignore[return-value]

    def open_write(self, path: Path) -> safe_open.Opened:
        """The resolved ``path`` opened for writing race-free, creating it and its folders."""
        return safe_open.open_file(self.roots, path, write=True, create=True)

    def open_dir(self, path: Path) -> int:
        """A descriptor of the resolved folder ``path``, walked without following symlinks."""
        return safe_open.open_dir(self.roots, path)

    def lstat(self, path: Path) -> os.stat_result | None:
        """``lstat`` through the parent's descriptor; None when ``path`` does not exist."""
        return safe_open.lstat_in(self.roots, path)

    def relative(self, path: Path) -> str:
        """How a path is shown to the model: relative to the root when it is under it."""
        try:
            rel = path.relative_to(self.root)
        except ValueError:
            return str(path)
        return rel.as_posix() or "."

    def _roots_text(self) -> str:
        return ", ".join(str(r) for r in self.roots)

    def _outside_message(self, raw: str) -> str:
        return (
            f"path {raw!r} is outside the workspace; tools may only touch files under "
            f"{self._roots_text()}. Use a path relative to the workspace root "
            "(add folders with agent.workspace_extra_roots)."
        )
