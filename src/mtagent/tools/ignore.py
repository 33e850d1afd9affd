"""``.gitignore`` for the workspace tools: grep and glob skip what git would ignore, by default.

Every ``.gitignore`` from the workspace root down to a file's folder applies to it, with paths
relative to that ``.gitignore``'s folder and later (deeper) files able to re-include with ``!``,
as git does; a file inside an ignored folder is ignored. Specs load lazily, once per folder per
call. ``include_ignored=true`` on the tools turns this off. ripgrep is told the same thing
(``.gitignore`` files only: no global excludes, no ``.ignore``), so both back ends agree.
"""

from __future__ import annotations

from pathlib import Path

import pathspec

from mtagent.tools.workspace import Workspace

MAX_GITIGNORE_BYTES = 1_000_000  # a larger .gitignore is not read (treated as absent)
RG_GITIGNORE_FLAGS = ["--no-ignore-dot", "--no-ignore-global", "--no-ignore-exclude", "--no-require-git"]


class GitIgnore:
    """Answers "would git ignore this path?" for paths under ``ws.root``."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self._specs: dict[str, pathspec.GitIgnoreSpec | None] = {}
        self._dirs: dict[str, bool] = {}

    def _spec(self, folder: str) -> pathspec.GitIgnoreSpec | None:
        if folder not in self._specs:
            spec = None
            path = self.ws.root.joinpath(*folder.split("/"), ".gitignore")  # "" is the root's
            try:
                if path.is_file() and not path.is_symlink() and path.stat().st_size <= MAX_GITIGNORE_BYTES:
                    spec = pathspec.GitIgnoreSpec.from_lines(
                        path.read_text(encoding="utf-8", errors="replace").splitlines())
            except OSError:
                spec = None
            self._specs[folder] = spec
        return self._specs[folder]

    def _matches(self, rel: str, is_dir: bool) -> bool:
        parts = rel.split("/")
        ignored = False
        for depth in range(len(parts)):
            folder = "/".join(parts[:depth])
            spec = self._spec(folder)
            if spec is None:
                continue
            sub = "/".join(parts[depth:]) + ("/" if is_dir else "")
            include = spec.check_file(sub).include  # a "!" re-include is told apart from no match
            if include is not None:
                ignored = bool(include)
        return ignored

    def _dir_ignored(self, rel_dir: str) -> bool:
        if rel_dir not in self._dirs:
            parent = rel_dir.rpartition("/")[0]
            self._dirs[rel_dir] = (bool(parent) and self._dir_ignored(parent)) or self._matches(rel_dir, True)
        return self._dirs[rel_dir]

    def ignored(self, path: Path) -> bool:
        """Whether ``path`` (a file under the workspace root) is ignored by a ``.gitignore``."""
        try:
            rel = path.relative_to(self.ws.root).as_posix()
        except ValueError:
            return False
        parent = rel.rpartition("/")[0]
        return (bool(parent) and self._dir_ignored(parent)) or self._matches(rel, False)
