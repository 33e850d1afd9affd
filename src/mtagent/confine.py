"""One confinement rule for every reader of project content.

Context files and their ``@path`` includes, rule files, agent profiles, skills, the recall
indexer's workspace files and the files a subagent's brief names are all written by whoever wrote
the repository. They are read here, the one way:

* the path is resolved, and it must lie under the project root — or match a pattern the user
  allowed in *their own* config (``memory.allow_external_includes``; never the project's);
* ``/proc``, ``/dev`` and ``/sys`` are never read, allowed or not (``@/proc/self/environ`` is the
  whole environment, keys included);
* the file is opened the way the file tools open (:mod:`mtagent.safe_open`): walked from the root's
  descriptor with ``O_NOFOLLOW`` on every component, so a folder swapped for a symlink mid-read is
  refused; it must be a regular file with one link (a hard link's other names may be outside);
* at most ``max_bytes`` are read (streamed, then stopped: a 1 GB include costs ``max_bytes``);
* the text is redacted before it is returned, so nothing a caller stores or sends holds a known
  secret or key shape.

Nothing raises: a refusal or a problem is a one-line :attr:`ReadResult.problem` the caller shows.
"""

from __future__ import annotations

import codecs
import fnmatch
import functools
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from mtagent import safe_open
from mtagent.errors import WorkspacePathError
from mtagent.redaction import Redactor, collect_secrets

NEVER_READ = (Path("/proc"), Path("/dev"), Path("/sys"))
DEFAULT_MAX_BYTES = 256 * 1024
_CHUNK = 64 * 1024
MAX_WALK_DEPTH = 32  # folders below a listed folder (rules, skills) that are entered, at most
_BINARY_SNIFF = 8192  # a NUL in the first 8 KiB: a binary file, not context (as git and grep decide)


@dataclass(slots=True, frozen=True)
class ReadResult:
    """What a confined read gave: the (redacted) text, or ``None`` and the reason in ``problem``.

    ``truncated`` text is the first ``max_bytes`` of the file; ``problem`` then says so too.
    """

    path: Path
    text: str | None
    problem: str | None = None
    truncated: bool = False


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def forbidden_tree(path: Path) -> Path | None:
    """The never-read tree (``/proc``, ``/dev``, ``/sys``) ``path`` lies in, if any."""
    for tree in NEVER_READ:
        if _under(path, tree):
            return tree
    return None


def expand_patterns(patterns: Sequence[str]) -> tuple[str, ...]:
    """User patterns as absolute globs: ``~`` expanded, relative ones dropped (they would mean
    "relative to whatever project is open", which is exactly what must not widen)."""
    out = []
    for raw in patterns:
        pattern = os.path.expanduser(raw.strip())
        if os.path.isabs(pattern):
            out.append(os.path.normpath(pattern))
    return tuple(out)


def externally_allowed(path: Path, patterns: Sequence[str]) -> bool:
    """Whether the resolved ``path`` matches one of the user's absolute patterns (``*`` stays in one
    folder, ``**`` crosses folders; a folder pattern ``~/notes/`` allows everything under it)."""
    text = path.as_posix()
    for pattern in expand_patterns(patterns):
        literal = not any(ch in pattern for ch in "*?[")
        if literal and os.path.isdir(pattern):
            if _under(path, Path(pattern)):
                return True
        elif _glob_match(pattern, text):
            return True
    return False


def _glob_match(pattern: str, text: str) -> bool:
    p_parts, t_parts = pattern.split("/"), text.split("/")

    @functools.cache  # "/**/**/**/x" stays polynomial
    def match(i: int, j: int) -> bool:
        if i == len(p_parts):
            return j == len(t_parts)
        if p_parts[i] == "**":
            return any(match(i + 1, k) for k in range(j, len(t_parts) + 1))
        return j < len(t_parts) and fnmatch.fnmatchcase(t_parts[j], p_parts[i]) and match(i + 1, j + 1)

    return match(0, 0)


def default_redactor() -> Redactor:
    """The secrets this process knows of (environment, key shapes) — for callers without a session."""
    return Redactor(collect_secrets())


def real_path(path: str | os.PathLike[str]) -> Path:
    """``os.path.realpath`` that never raises: a link removed mid-resolution (a race) leaves the
    path as spelled (absolute), which the descriptor walk then judges."""
    try:
        return Path(os.path.realpath(path))
    except OSError:
        return Path(os.path.abspath(path))


def _resolve(path: Path) -> Path | None:
    try:
        return Path(os.path.realpath(path, strict=True))
    except (OSError, RuntimeError, ValueError):
        return None


def _read_capped(fh: object, max_bytes: int) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    left = max_bytes + 1
    while left > 0:
        chunk = fh.read(min(_CHUNK, left))  # type: ignore[attr-defined]
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    raw = b"".join(chunks)
    return (raw[:max_bytes], True) if len(raw) > max_bytes else (raw, False)


def _decode(raw: bytes, truncated: bool, errors: str) -> str | None:
    decoder = codecs.getincrementaldecoder("utf-8")(errors)
    try:
        return decoder.decode(raw, final=not truncated)  # a cut inside a character is dropped
    except UnicodeDecodeError:
        return None


def read_text(root: str | os.PathLike[str], path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES,
              allow_external: Sequence[str] = (), redactor: Redactor | None = None,
              label: str | None = None, decode_errors: str = "strict") -> ReadResult:
    """Read the UTF-8 text file ``path`` (absolute, or relative to ``root``) under the rule above.

    ``decode_errors="replace"`` keeps a file that is not quite UTF-8 (an indexer's choice); by
    default such a file is a problem, not text."""
    root_path = real_path(root)
    spelled = Path(path) if os.path.isabs(path) else root_path / path
    name = label or str(path)
    target = _resolve(spelled)
    if target is None:
        return ReadResult(spelled, None, f"{name} does not exist or cannot be resolved; it was skipped")
    tree = forbidden_tree(target)
    if tree is not None or forbidden_tree(spelled.absolute()) is not None:
        return ReadResult(target, None, f"{name} is under {tree or spelled} — mtagent never reads /proc, /dev or "
                                        "/sys for context; it was refused")
    inside = _under(target, root_path)
    if not inside and not externally_allowed(target, allow_external):
        # the way on is named, never the line that would allow it: the repository chose this path
        return ReadResult(target, None, f"{name} is outside the project ({target}); it was refused. Files outside "
                                        "a project are read only when you list them yourself in "
                                        "[memory] allow_external_includes of your own ~/.mtagent/config.toml")
    walk_root = root_path if inside else Path(target.anchor)
    try:
        with safe_open.reading((walk_root,), target) as (fh, _st):
            raw, truncated = _read_capped(fh, max_bytes)
    except safe_open.NotRegularFile:
        return ReadResult(target, None, f"{name} is not a regular file; it was skipped")
    except WorkspacePathError as exc:
        return ReadResult(target, None, f"{name} was refused: {exc}")
    except OSError as exc:
        return ReadResult(target, None, f"{name} cannot be read ({exc.strerror or exc}); it was skipped")
    text = _decode(raw, truncated, decode_errors)
    if text is None:
        return ReadResult(target, None, f"{name} is not UTF-8 text; it was skipped")
    if "\x00" in text[:_BINARY_SNIFF]:
        return ReadResult(target, None, f"{name} is a binary file (NUL bytes); it was skipped")
    text = (redactor or default_redactor()).text(text)
    problem = (f"{name} is larger than {max_bytes:,} bytes; only the first {max_bytes:,} were read"
               if truncated else None)
    return ReadResult(target, text, problem, truncated)


def list_files(root: str | os.PathLike[str], folder: str | os.PathLike[str], *, suffix: str = ".md",
               recursive: bool = False, max_files: int = 10_000, max_depth: int = MAX_WALK_DEPTH,
               entered: list[Path] | None = None) -> Iterator[Path]:
    """Files named ``*suffix`` in ``folder`` (under ``root``), sorted, walked through descriptors.

    A folder that is a symlink is never entered (inside the root or not); a file that is a symlink
    is listed, and :func:`read_text` decides on what it points at. Nothing outside ``root`` is
    listed, whatever the links say; folders deeper than ``max_depth`` below ``folder`` are not
    entered and at most ``max_files`` are listed (a hostile tree of 1,400 nested folders is a
    short walk, not a RecursionError). ``entered``: every folder listed is appended to it.
    """
    root_path = real_path(root)
    left = max_files
    pending: list[tuple[Path, int, Iterator[tuple[str, int]]]] = []
    entered = [] if entered is None else entered
    entered.append(root_path / folder)
    pending.append((entered[-1], 0, iter(_entries(root_path, entered[-1]))))
    while pending and left > 0:
        here, depth, entries = pending[-1]
        item = next(entries, None)
        if item is None:
            pending.pop()
            continue
        name, mode = item
        if stat.S_ISDIR(mode):
            if recursive and depth < max_depth:
                entered.append(here / name)
                pending.append((here / name, depth + 1, iter(_entries(root_path, here / name))))
        elif name.endswith(suffix) and (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            left -= 1
            yield here / name


def _entries(root: Path, folder: Path) -> list[tuple[str, int]]:
    """(name, lstat mode) of ``folder``'s entries, sorted, read through its descriptor."""
    try:
        fd = safe_open.open_dir((root,), folder)
    except (OSError, WorkspacePathError):
        return []
    try:
        out = []
        for name in sorted(os.listdir(fd)):
            try:
                out.append((name, os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode))
            except OSError:
                continue
        return out
    finally:
        os.close(fd)


@dataclass(slots=True, frozen=True)
class ProjectReader:
    """:func:`read_text` and :func:`list_files` bound to one project and the user's settings.

    Build one per load (rules, profiles, skills, an index refresh) and hand it down; ``allow_external``
    must come from the *user's* config only (:data:`mtagent.trust.USER_ONLY_KEYS` keeps the
    project's config from setting it). ``seen`` collects every path read and folder listed, as
    spelled (what a load depends on: the static context re-checks exactly these before reloading).
    """

    root: Path
    max_bytes: int = DEFAULT_MAX_BYTES
    allow_external: tuple[str, ...] = ()
    redactor: Redactor | None = None
    seen: list[Path] | None = None

    @classmethod
    def create(cls, root: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES,
               allow_external: Sequence[str] = (), redactor: Redactor | None = None,
               seen: list[Path] | None = None) -> ProjectReader:
        return cls(real_path(root), max_bytes, tuple(allow_external), redactor or default_redactor(), seen)

    def read(self, path: str | os.PathLike[str], *, label: str | None = None) -> ReadResult:
        if self.seen is not None:
            self.seen.append(self.root / path)
        return read_text(self.root, path, max_bytes=self.max_bytes, allow_external=self.allow_external,
                         redactor=self.redactor, label=label)

    def files(self, folder: str | os.PathLike[str], *, suffix: str = ".md", recursive: bool = False) -> list[Path]:
        return list(list_files(self.root, folder, suffix=suffix, recursive=recursive, entered=self.seen))
