"""The one glob dialect of mtagent: gitignore's (pathspec), plus ``{a,b}`` alternatives.

Used by the ``grep``/``glob`` tools' ``glob`` argument and by path-scoped rules' ``paths:``; the
``.gitignore`` handling of the tools reads the same dialect. A pattern without ``/`` matches a
name at any depth (``*.py``); ``**`` crosses folders, ``*`` and ``?`` stay inside one; a leading
``/`` anchors at the root; ``dir/`` means the folder and everything in it; ``[!x]`` negates a
class. Matching is by pathspec's ``GitIgnoreSpec`` rather than a hand-written translator.
"""

from __future__ import annotations

import re
from functools import lru_cache

import pathspec

_BRACES = re.compile(r"\{([^{}]*)\}")
MAX_ALTERNATIVES = 64  # a hostile "{a,b}{c,d}…" cannot blow up into millions of patterns


def expand_braces(pattern: str) -> list[str]:
    """``src/{a,b}/*.py`` → ``["src/a/*.py", "src/b/*.py"]`` (nested groups expand left to right)."""
    out = [pattern]
    while any(_BRACES.search(p) for p in out):
        nxt: list[str] = []
        for p in out:
            m = _BRACES.search(p)
            if m is None:
                nxt.append(p)
                continue
            nxt += [p[: m.start()] + alt + p[m.end():] for alt in m.group(1).split(",")]
        if len(nxt) > MAX_ALTERNATIVES:
            raise ValueError(f"glob {pattern!r} expands to more than {MAX_ALTERNATIVES} patterns")
        out = nxt
    return out


class Glob:
    """A compiled glob; ``match(path)`` takes a '/'-separated relative path (like ``re.Pattern.match``)."""

    __slots__ = ("pattern", "_spec")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._spec = pathspec.GitIgnoreSpec.from_lines(expand_braces(pattern))

    def match(self, path: str) -> bool:
        return self._spec.match_file(path)


@lru_cache(maxsize=1024)
def compile_glob(pattern: str) -> Glob:
    return Glob(pattern)


def glob_match(pattern: str, path: str) -> bool:
    """Whether a '/'-separated relative ``path`` matches ``pattern``."""
    return compile_glob(pattern).match(path)
