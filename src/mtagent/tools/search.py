"""``grep``, ``glob`` and ``ls`` over the workspace.

``grep`` uses ripgrep when it is installed and a pure-Python search otherwise; both print the
same format — ``path:line:text`` for matches, ``path-line-text`` for context lines, ``--``
between groups — with paths relative to the workspace root, sorted by path. Both skip
:data:`~mtagent.tools.workspace.IGNORED_DIRS` and virtualenvs, search hidden files, and honour
the workspace's ``.gitignore`` files (:mod:`mtagent.tools.ignore`; ``include_ignored=true`` turns
that off). Globs use the one dialect of :mod:`mtagent.globs`. Large results are left to the budgeter,
which persists them and shows a grep preview.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import regex as bounded_re
from pydantic import BaseModel, Field

from mtagent.errors import WorkspacePathError
from mtagent.globs import compile_glob
from mtagent.tools.base import ToolInputError, WorkspaceTool
from mtagent.tools.ignore import RG_GITIGNORE_FLAGS, GitIgnore
from mtagent.tools.text_files import binary_kind, human_size
from mtagent.tools.walk import has_venv_marker, read_workspace_file, walk_files
from mtagent.tools.workspace import IGNORED_DIRS, Workspace, is_ignored_dir

DEFAULT_MAX_RESULTS = 1000
# The pure-Python engine reads a file whole; bigger files are skipped (and reported) rather than
# loaded. ripgrep streams, so it has no such limit.
PY_GREP_MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_CONTEXT_LINES = 20
# The pure-Python engine backtracks: a pattern like (a|aa)+$ on a long line takes hours. All its
# searches of one call share this deadline (ripgrep's engine is linear-time and needs none).
PY_GREP_TIMEOUT_SECONDS = 30.0
GLOB_MAX_RESULTS = 1000
LS_MAX_ENTRIES = 1000


@lru_cache(maxsize=1)
def ripgrep_path() -> str | None:
    """``rg`` on PATH, or beside the running interpreter (the ``ripgrep`` wheel puts it there)."""
    found = shutil.which("rg")
    if found:
        return found
    beside = Path(sys.executable).parent / "rg"
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


def glob_to_regex(pattern: str) -> Any:
    """A compiled glob over '/'-separated relative paths (:mod:`mtagent.globs`, the one dialect).

    A pattern without '/' matches file names at any depth (``*.py``), like ripgrep's --glob.
    """
    try:
        return compile_glob(pattern)
    except ValueError as exc:
        raise ToolInputError(str(exc)) from None


def _in_ignored_dir(ws: Workspace, relative: str, cache: dict[str, bool]) -> bool:
    """Whether a ripgrep hit lies in a folder rg cannot recognise by name (a virtualenv)."""
    parent = relative.rpartition("/")[0]
    if parent not in cache:
        parts = parent.split("/") if parent else []
        cache[parent] = any(is_ignored_dir(ws.root.joinpath(*parts[: i + 1])) for i in range(len(parts)))
    return cache[parent]


def _check_pattern_path(pattern: str) -> None:
    if pattern.startswith("/") or ".." in pattern.split("/"):
        raise ToolInputError(f"glob pattern {pattern!r} must be relative and stay inside the search folder")


class GrepArgs(BaseModel):
    pattern: str = Field(description="Regular expression to search for (Python/ripgrep syntax).")
    path: str = Field(".", description="File or folder to search, relative to the workspace root.")
    glob: str | None = Field(None, description="Only search files matching this glob, e.g. '*.py' or 'src/**/*.ts'.")
    case_insensitive: bool = Field(False, description="Ignore case.")
    context: int = Field(0, ge=0, le=MAX_CONTEXT_LINES, description="Lines of context before and after each match.")
    max_results: int = Field(DEFAULT_MAX_RESULTS, ge=1, description="Stop after this many matching lines.")
    include_ignored: bool = Field(False, description="Also search files .gitignore excludes (skipped by default).")


class GrepTool(WorkspaceTool):
    name: str = "grep"
    description: str = (
        "Search file contents with a regular expression. Prints `path:line:text` per matching "
        "line (context lines as `path-line-text`). Use glob to restrict file types and path to "
        "restrict folders; very large results are saved and previewed."
    )
    args_schema: type[BaseModel] = GrepArgs

    def execute(self, call_id: str, pattern: str, path: str = ".", glob: str | None = None,
                case_insensitive: bool = False, context: int = 0,
                max_results: int = DEFAULT_MAX_RESULTS, include_ignored: bool = False) -> tuple[str, dict[str, Any]]:
        ws = self.context.workspace
        base = ws.resolve(path)
        if not base.exists():
            raise ToolInputError(f"{path} does not exist; use ls or glob to find the right folder")
        if not base.is_dir() and not base.is_file():
            raise ToolInputError(f"{path} is not a regular file or folder (a pipe, socket or device), so searching "
                                 "it could block forever; grep a folder or a regular file instead")
        try:
            regex = re.compile(pattern, re.IGNORECASE if case_insensitive else 0)
        except re.error as exc:
            raise ToolInputError(f"invalid regular expression {pattern!r}: {exc}; escape special characters "
                                 "like ( [ { . * + ? with a backslash for a literal match") from exc
        if glob:
            _check_pattern_path(glob)
        rg = ripgrep_path()
        skipped: list[str] = []
        found, engine = None, "ripgrep"
        if rg is not None:
            try:
                found = _grep_rg(rg, ws, base, pattern, glob, case_insensitive, context, max_results,
                                 gitignore=not include_ignored)
            except _RipgrepRefused:
                found = None
        if found is None:
            timed = _TimedPattern(pattern, case_insensitive, PY_GREP_TIMEOUT_SECONDS)
            try:
                ignore = None if include_ignored or base.is_file() else GitIgnore(ws)
                found, engine = _grep_python(ws, base, timed, glob, context, max_results, skipped, ignore), "python"
            except TimeoutError:
                raise ToolInputError(
                    f"the regular expression {pattern!r} took over {PY_GREP_TIMEOUT_SECONDS:g}s (catastrophic "
                    "backtracking, e.g. nested repeats like (a+)+ or (a|aa)+); simplify it or narrow the path"
                ) from None
        lines, matches, stopped = found
        shown = ws.relative(base)
        result = {"kind": "grep", "pattern": pattern, "path": shown, "num_matches": matches,
                  "num_files": len({_match_path(x) for x in lines if _match_path(x)}),
                  "stopped_early": stopped, "engine": engine}
        note = ""
        if skipped:
            result["skipped_large_files"] = skipped
            note = (f"\n[Skipped {len(skipped)} file(s) over {human_size(PY_GREP_MAX_FILE_BYTES)} "
                    f"(e.g. {skipped[0]}); search them with shell, or install ripgrep.]")
        if not matches:
            scope = f"searched: {shown}" + (f", glob: {glob}" if glob else "")
            return f"No matches for {pattern!r} ({scope}).{note}", result
        text = "\n".join(lines) + note
        if stopped:
            text += (f"\n[Stopped after {max_results} matches; there may be more. "
                     "Narrow the pattern, path or glob, or raise max_results.]")
        return text, result


_MATCH = re.compile(r"^(.+?):\d+:")


def _match_path(line: str) -> str | None:
    m = _MATCH.match(line)
    return m.group(1) if m else None


class _TimedPattern:
    """A pattern whose searches share one deadline, so no pattern can hang the agent."""

    def __init__(self, pattern: str, case_insensitive: bool, seconds: float) -> None:
        self._pattern = bounded_re.compile(pattern, bounded_re.IGNORECASE if case_insensitive else 0)
        self._deadline = time.monotonic() + seconds

    def search(self, text: str) -> Any:
        return self._pattern.search(text, timeout=max(0.001, self._deadline - time.monotonic()))


def _grep_python(ws: Workspace, base: Path, regex: _TimedPattern, glob: str | None, context: int,
                 max_results: int, skipped: list[str], ignore: GitIgnore | None) -> tuple[list[str], int, bool]:
    out: list[str] = []
    matches = 0
    files = _text_files(ws, base, glob_to_regex(glob) if glob else None, ignore)
    for file, text in files:
        if text is None:
            skipped.append(ws.relative(file))
            continue
        lines = text.splitlines()
        hits = [i for i, line in enumerate(lines) if regex.search(line)]
        if not hits:
            continue
        room = max_results - matches
        stopped = len(hits) > room
        hits = hits[:room]
        matches += len(hits)
        shown = ws.relative(file)
        hit_set = set(hits)
        last = -2
        for i in hits:
            lo, hi = max(0, i - context), min(len(lines) - 1, i + context)
            if context and out and lo > last + 1:
                out.append("--")
            for j in range(max(lo, last + 1), hi + 1):
                sep = ":" if j in hit_set else "-"
                out.append(f"{shown}{sep}{j + 1}{sep}{lines[j]}")
            last = max(last, hi)
        if stopped or matches >= max_results:  # 'stopped early' only when a file after this one matches too
            return out, matches, stopped or any(text is not None and regex.search(text) for _, text in files)
    return out, matches, False


def _text_files(ws: Workspace, base: Path, glob_re: Any, ignore: GitIgnore | None) -> Iterator[tuple[Path, str | None]]:
    """The files under ``base`` the Python engine searches (not ignored, matching the glob, not binary), as
    text; None for one over :data:`PY_GREP_MAX_FILE_BYTES` (skipped and reported, not loaded)."""
    for file in walk_files(ws, base):
        if ignore is not None and ignore.ignored(file):
            continue
        if glob_re is not None and not glob_re.match(file.relative_to(base).as_posix() if file != base else file.name):
            continue
        try:
            if file.stat().st_size > PY_GREP_MAX_FILE_BYTES:
                yield file, None
                continue
        except OSError:
            continue
        data = read_workspace_file(ws, file, PY_GREP_MAX_FILE_BYTES)
        if data is not None and binary_kind(data) is None:
            yield file, data.decode("utf-8", errors="replace")


class _RipgrepRefused(Exception):
    """ripgrep rejected a pattern Python's ``re`` accepts (backreferences, look-around)."""


def _grep_rg(rg: str, ws: Workspace, base: Path, pattern: str, glob: str | None, case_insensitive: bool,
             context: int, max_results: int, *, gitignore: bool) -> tuple[list[str], int, bool]:
    """Run ripgrep with ``--null`` (path, NUL, ``N:text`` or ``N-text``) and render our format."""
    target = ws.relative(base)
    cmd = [rg, "--line-number", "--with-filename", "--no-heading", "--null", "--color", "never",
           "--sort", "path", "--hidden", "--no-messages", "--no-follow"]
    cmd += RG_GITIGNORE_FLAGS if gitignore and not base.is_file() else ["--no-ignore"]
    if case_insensitive:
        cmd.append("--ignore-case")
    if context:
        cmd += ["--context", str(context)]
    for name in sorted(IGNORED_DIRS):
        cmd += ["--glob", f"!{name}"]
    if glob:
        cmd += ["--glob", glob]
    cmd += ["--regexp", pattern, "--", target]
    proc = subprocess.Popen(cmd, cwd=ws.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
    rows: list[tuple[str, int, bool, str] | None] = []  # None is a "--" group separator
    matches = 0
    stopped = False
    ignored_cache: dict[str, bool] = {}
    assert proc.stdout is not None
    try:
        for raw in proc.stdout:
            line = raw.decode("utf-8", errors="replace").rstrip("\n").rstrip("\r")
            if "\x00" not in line:
                rows.append(None)
                continue
            path, rest = line.split("\x00", 1)
            path = path.removeprefix("./")
            if _in_ignored_dir(ws, path, ignored_cache):
                continue
            digits = len(rest) - len(rest.lstrip("0123456789"))
            is_match = rest[digits:digits + 1] == ":"
            if is_match and matches >= max_results:
                stopped = True
                break
            rows.append((path, int(rest[:digits] or 0), is_match, rest[digits + 1:]))
            matches += is_match
    finally:
        if stopped:
            proc.kill()
        proc.stdout.close()
        errors = proc.stderr.read() if proc.stderr is not None else b""
        proc.wait()
    if proc.returncode == 2 and not rows and b"regex parse error" in errors:
        raise _RipgrepRefused
    rows = _verified(ws, rows)
    matches = sum(1 for r in rows if r is not None and r[2])
    if stopped:
        rows = _trim_after_last_match(rows, context)
    while rows and rows[-1] is None:
        rows.pop()
    out = ["--" if r is None else f"{r[0]}{':' if r[2] else '-'}{r[1]}{':' if r[2] else '-'}{r[3]}" for r in rows]
    return out, matches, stopped


def _verified(ws: Workspace, rows: list[tuple[str, int, bool, str] | None]) -> list[tuple[str, int, bool, str] | None]:
    """Only the rows whose text is really on that line of the file as opened race-free now.

    ripgrep opens files by path, so a folder swapped for a symlink mid-search can make it read
    outside the workspace, and it reads hard links like any file. Every reported line is
    re-read through :meth:`Workspace.open_read`; a file that cannot be (outside, hard link) or
    whose line differs contributes nothing."""
    wanted: dict[str, set[int]] = {}
    for r in rows:
        if r is not None:
            wanted.setdefault(r[0], set()).add(r[1])
    actual: dict[str, dict[int, str] | None] = {}
    for rel, numbers in wanted.items():
        actual[rel] = _lines_at(ws, rel, numbers)
    out: list[tuple[str, int, bool, str] | None] = []
    for r in rows:
        if r is None:
            if out and out[-1] is not None:
                out.append(None)
            continue
        found = actual.get(r[0])
        if found is not None and found.get(r[1]) == r[3]:
            out.append(r)
    return out


def _lines_at(ws: Workspace, rel: str, numbers: set[int]) -> dict[int, str] | None:
    try:
        real = ws.resolve(rel)
        found: dict[int, str] = {}
        last = max(numbers)
        with ws.open_read(real) as (fh, _st):
            for n, raw in enumerate(fh, 1):
                if n in numbers:
                    found[n] = raw.decode("utf-8", errors="replace").rstrip("\n").rstrip("\r")
                if n >= last:
                    break
        return found
    except (OSError, WorkspacePathError):
        return None


def _trim_after_last_match(rows: list[tuple[str, int, bool, str] | None],
                           context: int) -> list[tuple[str, int, bool, str] | None]:
    """Drop the leading context of the first match not shown (the Python engine never prints it)."""
    last = max((i for i, r in enumerate(rows) if r is not None and r[2]), default=-1)
    if last < 0:
        return []
    anchor = rows[last]
    assert anchor is not None
    keep = rows[: last + 1]
    for row in rows[last + 1:]:
        if row is None or row[0] != anchor[0] or row[1] > anchor[1] + context:
            break
        keep.append(row)
    return keep


class GlobArgs(BaseModel):
    pattern: str = Field(description="Glob such as '**/*.py' or 'src/*.ts'; without '/' it matches names at any depth.")
    path: str = Field(".", description="Folder to search in, relative to the workspace root.")
    include_ignored: bool = Field(False, description="Also list files .gitignore excludes (skipped by default).")


class GlobTool(WorkspaceTool):
    name: str = "glob"
    description: str = "Find files by name pattern. Prints matching paths relative to the workspace root, sorted."
    args_schema: type[BaseModel] = GlobArgs

    def execute(self, call_id: str, pattern: str, path: str = ".",
                include_ignored: bool = False) -> tuple[str, dict[str, Any]]:
        ws = self.context.workspace
        base = ws.resolve(path)
        if not base.is_dir():
            raise ToolInputError(f"{path} is not a folder; give the folder to search in")
        _check_pattern_path(pattern)
        regex = glob_to_regex(pattern)
        ignore = None if include_ignored else GitIgnore(ws)
        found: list[str] = []
        total = 0
        for file in walk_files(ws, base):
            if regex.match(file.relative_to(base).as_posix()) and not (ignore and ignore.ignored(file)):
                total += 1
                if len(found) < GLOB_MAX_RESULTS:
                    found.append(ws.relative(file))
        result = {"kind": "glob", "pattern": pattern, "path": ws.relative(base), "num_files": total,
                  "truncated": total > len(found)}
        if not found:
            return f"No files match {pattern!r} (searched: {ws.relative(base)}).", result
        text = "\n".join(found)
        if total > len(found):
            text += f"\n[{total - len(found)} more files not shown; use a narrower pattern or path.]"
        return text, result


class LsArgs(BaseModel):
    path: str = Field(".", description="Folder to list, relative to the workspace root.")


class LsTool(WorkspaceTool):
    name: str = "ls"
    description: str = (
        "List a folder: sub-folders first (ending in '/'), then files with sizes. Skips .git, "
        "node_modules, __pycache__ and virtualenvs."
    )
    args_schema: type[BaseModel] = LsArgs

    def execute(self, call_id: str, path: str = ".") -> tuple[str, dict[str, Any]]:
        ws = self.context.workspace
        base = ws.resolve(path)
        shown = ws.relative(base)
        if not base.exists():
            raise ToolInputError(f"{path} does not exist")
        if not base.is_dir():
            raise ToolInputError(f"{shown} is a file; use read_file to read it")
        dirs: list[str] = []
        files: list[str] = []
        skipped: list[str] = []
        fd = ws.open_dir(base)
        try:
            with os.scandir(fd) as it:
                listed = sorted(it, key=lambda e: e.name)
            for entry in listed:
                if entry.is_symlink():
                    files.append(f"{entry.name} -> {os.readlink(entry.name, dir_fd=fd)}")
                elif entry.is_dir(follow_symlinks=False):
                    if entry.name in IGNORED_DIRS or has_venv_marker(fd, entry.name):
                        skipped.append(entry.name)
                    else:
                        dirs.append(entry.name + "/")
                else:
                    try:
                        files.append(f"{entry.name} ({human_size(entry.stat(follow_symlinks=False).st_size)})")
                    except OSError:
                        files.append(entry.name)
        finally:
            os.close(fd)
        entries = dirs + files
        lines = [f"{shown}/" if shown != "." else "./"] + [f"  {e}" for e in entries[:LS_MAX_ENTRIES]]
        if len(entries) > LS_MAX_ENTRIES:
            lines.append(f"  … {len(entries) - LS_MAX_ENTRIES} more entries; use glob to narrow")
        if not entries:
            lines.append("  (empty)")
        if skipped:
            lines.append(f"  (skipped: {', '.join(skipped)})")
        return "\n".join(lines), {"kind": "ls", "path": shown, "num_dirs": len(dirs), "num_files": len(files),
                                  "skipped": skipped}
