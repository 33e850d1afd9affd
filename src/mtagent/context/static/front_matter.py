"""The one front matter reader: rules, agent profiles and skills all start with ``---`` YAML ``---``.

Each of them comes from a repository or a download, so the YAML is hostile input. It is parsed with
PyYAML's safe loader (no tags that build objects) and three more limits, checked while the YAML is
composed, before anything is built:

* no anchors or aliases — a "billion laughs" bomb is a few hundred bytes of ``&a [*b, *b, …]``
  whose value, once anyone walks it (``str()``, a listing, a JSON dump), is billions of items;
  no front matter these files define needs them;
* nesting at most :data:`MAX_DEPTH` deep (``[[[[…`` otherwise ends in a ``RecursionError`` that no
  caller expects), at most :data:`MAX_CHARS` characters (checked before parsing);
* a key may appear once (``name: ok`` … ``name: evil`` further down is refused, not "last wins").

Nothing raises: bad front matter is a one-line ``problem`` the caller reports (a rule then applies
everywhere, a profile or a skill is skipped).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import yaml

MAX_CHARS = 32 * 1024
MAX_DEPTH = 16
_FRONT_MATTER_RE = re.compile(r"\A---[ \t]*\r?\n(?P<meta>.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_QUOTE_HINT = "mapping values are not allowed here"
_LINE = 2  # a YAML mark counts from 0 in the block; the block starts on the file's line 2


class _RefusedYaml(yaml.YAMLError):
    """Valid YAML this reader still refuses (an alias, deep nesting, a repeated key)."""


class _Loader(yaml.SafeLoader):
    """``SafeLoader`` that refuses aliases, deep nesting and repeated keys while composing."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            line = self.peek_event().start_mark.line + _LINE
            raise _RefusedYaml(f"line {line}: aliases (*name) are not allowed in front matter")
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                line = self.peek_event().start_mark.line + _LINE
                raise _RefusedYaml(f"line {line}: nested more than {MAX_DEPTH} levels deep")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_mapping_node(self, anchor: Any) -> Any:
        node = super().compose_mapping_node(anchor)
        seen: set[str] = set()
        for key, _value in node.value:
            if isinstance(key, yaml.ScalarNode):
                if key.value in seen:
                    raise _RefusedYaml(f"line {key.start_mark.line + _LINE}: the key {key.value[:40]!r} appears twice")
                seen.add(key.value)
        return node


@dataclass(slots=True, frozen=True)
class FrontMatter:
    """What :func:`split` found: ``present`` says whether the text starts with a front matter block."""

    meta: dict[str, Any]
    body: str
    problem: str | None
    present: bool


def _describe(exc: yaml.YAMLError) -> str:
    if isinstance(exc, _RefusedYaml):
        return f"front matter refused ({exc})"
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or exc.__class__.__name__
    where = f" at line {mark.line + _LINE}" if mark is not None else ""
    hint = "; put a value that contains ': ' in quotes" if problem == _QUOTE_HINT else ""
    return f"front matter is not valid YAML{where} ({problem}){hint}"


@lru_cache(maxsize=512)
def split(text: str) -> FrontMatter:
    """The front matter of ``text`` as a mapping, and the body after it (see the module docstring).

    Cached by text: rules are re-read every turn and YAML parsing is the slow part. Why not
    python-frontmatter: it would add a dependency for the ``---`` split only, it raises on bad YAML
    where a rule must still apply and report one line, and it also accepts TOML/JSON front matter
    that none of these files define.
    """
    m = _FRONT_MATTER_RE.match(text)
    if not m:
        return FrontMatter({}, text, None, False)
    body = text[m.end():]
    if len(m.group("meta")) > MAX_CHARS:
        return FrontMatter({}, body, f"front matter is longer than {MAX_CHARS:,} characters; it was not read", True)
    try:
        meta = yaml.load(m.group("meta"), Loader=_Loader) or {}  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        return FrontMatter({}, body, _describe(exc), True)
    if not isinstance(meta, dict):
        return FrontMatter({}, body, "front matter must be a mapping of `key: value` lines", True)
    return FrontMatter(meta, body, None, True)


def parse_front_matter(text: str) -> tuple[dict[str, Any], str, str | None]:
    """(metadata, body, problem); a copy of the metadata, so a caller may change it."""
    found = split(text)
    return dict(found.meta), found.body, found.problem
