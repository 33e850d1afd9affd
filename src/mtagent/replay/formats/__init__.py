"""Recorded agent sessions → :class:`~mtagent.replay.trajectory.Trajectory`, one module per source.

:func:`detect_format` looks at a file's name and first bytes; :func:`load_trajectories` converts
every session a file holds (an aider history or an OpenHands resolver JSONL holds several);
:func:`load_trajectory` returns one. Unknown or malformed input raises
:class:`~mtagent.errors.ReplayFormatError` naming the format that was expected.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mtagent.errors import ReplayFormatError
from mtagent.replay.formats import aider, claude_code, mini_swe, mtagent_transcript, openhands, swe_agent
from mtagent.replay.names import FORMAT_NAMES
from mtagent.replay.trajectory import Trajectory

_HEAD_BYTES = 65_536
# What a converter raises on input it was not written for: bad bytes, nesting, wrong field types.
_MALFORMED = (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError, OverflowError)


def _head(path: Path) -> str:
    try:
        with path.open("rb") as fh:
            return fh.read(_HEAD_BYTES).decode("utf-8", errors="replace")
    except FileNotFoundError as exc:
        raise ReplayFormatError(f"no such trajectory file: {path}") from exc
    except IsADirectoryError as exc:
        raise ReplayFormatError(f"{path} is a directory; pass trajectory files") from exc


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None


def detect_format(path: str | Path) -> str:
    """The format name of ``path`` (one of :data:`~mtagent.replay.names.FORMAT_NAMES`), or ReplayFormatError."""
    p = Path(path)
    head = _head(p)
    try:
        return _sniff(p, head)
    except ReplayFormatError:
        raise
    except _MALFORMED as exc:  # a sniffer met JSON nested past the recursion limit, or worse
        raise ReplayFormatError(f"cannot tell the format of {p} ({type(exc).__name__}); pass --format to "
                                "choose one") from None


def _sniff(p: Path, head: str) -> str:
    if aider.sniff(p, head):
        return aider.FORMAT
    if p.suffix in (".yaml", ".yml"):
        return swe_agent.FORMAT
    if mtagent_transcript.sniff(head):
        return mtagent_transcript.FORMAT
    if claude_code.sniff(p, head):
        return claude_code.FORMAT
    if p.suffix == ".jsonl" and openhands.sniff_resolver(head):
        return openhands.FORMAT_RESOLVER
    data = _json(p)
    if data is not None:
        if mini_swe.sniff_v2(data):
            return mini_swe.FORMAT_V2
        if swe_agent.sniff(data):
            return swe_agent.FORMAT
        if openhands.sniff_events(data):
            return openhands.FORMAT
        if mini_swe.sniff_v1(data):
            return mini_swe.FORMAT_V1
    raise ReplayFormatError(
        f"cannot tell the format of {p}; expected one of {', '.join(FORMAT_NAMES)} (pass --format to choose one)"
    )


def load_trajectories(path: str | Path, format: str | None = None) -> list[Trajectory]:
    """Every session in ``path`` as trajectories (most files hold exactly one).

    A recorded session is untrusted input: invalid UTF-8, JSON nested past the recursion limit,
    fields of the wrong type or absurd numbers become one :class:`ReplayFormatError` naming the
    file and the format, never a traceback."""
    p = Path(path)
    fmt = format or detect_format(p)
    _head(p)
    try:
        return _convert(p, fmt)
    except ReplayFormatError:
        raise
    except _MALFORMED as exc:
        what = "nests too deeply" if isinstance(exc, RecursionError) else f"{type(exc).__name__}: {str(exc)[:160]}"
        raise ReplayFormatError(f"{p} is not a readable {fmt} trajectory ({what}); check the file or pass "
                                "--format") from None


def _convert(p: Path, fmt: str) -> list[Trajectory]:
    if fmt == claude_code.FORMAT:
        return claude_code.load(p)
    if fmt == aider.FORMAT:
        return aider.load(p)
    if fmt == openhands.FORMAT_RESOLVER:
        return openhands.load_resolver(p)
    if fmt == mtagent_transcript.FORMAT:
        return mtagent_transcript.load(p)
    if fmt == swe_agent.FORMAT:
        return swe_agent.load(p, swe_agent.parse(p))
    if fmt in (mini_swe.FORMAT_V1, mini_swe.FORMAT_V2, openhands.FORMAT):
        data = _json(p)
        if data is None:
            raise ReplayFormatError(f"{p} is not JSON; expected a {fmt} trajectory")
        if fmt == mini_swe.FORMAT_V2:
            return mini_swe.load_v2(p, data)
        if fmt == mini_swe.FORMAT_V1:
            return mini_swe.load_v1(p, data)
        return openhands.load_events(p, data)
    raise ReplayFormatError(f"unknown trajectory format {fmt!r}; choose one of {', '.join(FORMAT_NAMES)}")


def load_trajectory(path: str | Path, format: str | None = None, index: int = 0) -> Trajectory:
    """The ``index``-th session of ``path`` (the only one, for most formats)."""
    sessions = load_trajectories(path, format)
    if not -len(sessions) <= index < len(sessions):
        raise ReplayFormatError(f"{path} holds {len(sessions)} session(s); index {index} is out of range")
    return sessions[index]


__all__ = ["Trajectory", "detect_format", "load_trajectories", "load_trajectory"]
