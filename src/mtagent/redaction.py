"""Keep secrets out of model payloads, transcripts, artifacts and every output.

An API key reaches the model client's auth header and nowhere else — but a tool can still
surface one (``env``, ``cat .env``, a stack trace). So the agent collects the secret *values*
it knows of (the key it was given, environment variables whose names look like secrets, and
environment values that look like keys by their shape or randomness) and replaces them — and
every known key shape (``sk-``, ``ghp_``, ``AKIA``, JWTs, PEM private keys, URL passwords …),
known value or not — in every tool result before the model or the transcript sees it, and in
every record and artifact before it is written. The user adds their own in ``[security]``
(``redact_values``, ``redact_env``), and the secrets the settings themselves hold — a storage
DSN's password, a password in ``agent.base_url``, keys and auth headers in ``agent.model_options``
— are added by :func:`settings_secrets`. Limits: a secret the process never saw (in its
environment or settings) that has no known shape (a short password typed in a file) is not recognised.
"""

from __future__ import annotations

import base64
import bisect
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mtagent.config_sections import MIN_SECRET_CHARS  # noqa: F401 - a rule of redaction, named below it
from mtagent.secret_rules import (  # noqa: F401 - the rule, re-exported where callers have always found it
    _URL_PASSWORD,
    HANDLES,
    KEY_SHAPES,
    _entropy,
    is_secret_name,
    looks_secret,
    passwords_in,
    untrusted_redactions,
    variable_is_secret,
)

if TYPE_CHECKING:
    from mtagent.config import Settings

REDACTED = "[redacted]"
# Redactor.deep's nesting limit: two frames a level, so it must stay well under the recursion limit.
MAX_NESTING = 200
# A secret's encoded forms are redacted too; a form shorter than this is too common to replace.
# ``base64`` wraps its output at 76 columns and ``xxd -p`` at 60: those line breaks are forms as well.
_BASE64_COLUMNS = 76
_HEX_COLUMNS = 60
# Redactor.pieces: a long text is redacted a piece of about this many characters at a time.
PIECE_CHARS = 1 << 20
_CUT_AFTER = re.compile(r"[ \t\r\n]")
_BEARER = re.compile(r"^\s*(?:Bearer|Basic|Token)\s+(?P<token>\S+)\s*$", re.IGNORECASE)


def _wrapped(text: str, columns: int) -> str:
    return "\n".join(text[i:i + columns] for i in range(0, len(text), columns))


def encoded_forms(secret: str) -> set[str]:
    """``secret`` and the forms a command turns it into: reversed, hex (both cases, and as ``xxd -p``
    wraps it), base64 and URL-safe base64 (whole, wrapped as ``base64`` prints it, and the part fixed
    by the secret alone when it starts at any of the three byte offsets inside a longer text).
    Forms shorter than :data:`MIN_SECRET_CHARS` are left out."""
    raw = secret.encode("utf-8", errors="replace")
    hexed = raw.hex()
    forms = {secret, secret[::-1], hexed, hexed.upper(), _wrapped(hexed, _HEX_COLUMNS)}
    for pad in range(3):
        encoded = base64.b64encode(bytes(pad) + raw).decode("ascii")
        first, end = -(-8 * pad // 6), 8 * (pad + len(raw)) // 6  # the characters no other byte touches
        for text in (encoded[first:end], *((encoded, encoded.rstrip("="), _wrapped(encoded, _BASE64_COLUMNS))
                                           if pad == 0 else ())):
            forms.update((text, text.translate(_URLSAFE)))
    return {form for form in forms if len(form.strip()) >= MIN_SECRET_CHARS}


_URLSAFE = str.maketrans("+/", "-_")


def _option_secrets(value: Any, named_secret: bool = False, _depth: int = 0) -> Iterable[str]:
    """Strings under keys named like secrets (``api_key``, ``Authorization`` …) in nested options."""
    if isinstance(value, str) and named_secret:
        yield value
        bearer = _BEARER.match(value)
        if bearer:
            yield bearer.group("token")
    elif isinstance(value, dict) and _depth < 20:
        for key, inner in value.items():
            yield from _option_secrets(inner, named_secret or is_secret_name(str(key)), _depth + 1)
    elif isinstance(value, (list, tuple)) and _depth < 20:
        for inner in value:
            yield from _option_secrets(inner, named_secret, _depth + 1)


def settings_secrets(settings: Settings, environ: Mapping[str, str] | None = None) -> list[str]:
    """What the settings say is secret: ``security.redact_values``, the values of the variables
    named in ``security.redact_env``, the storage DSN's password, a password in ``agent.base_url``,
    strings under secret-named keys of ``agent.model_options`` and of MCP servers' ``env``/``headers``."""
    env = os.environ if environ is None else environ
    security = settings.security
    found = list(security.redact_values)
    found += [env[name] for name in security.redact_env if env.get(name)]
    for url in (settings.storage.dsn, settings.agent.base_url):
        found += passwords_in(url or "")
    found += _option_secrets(settings.agent.model_options)
    for server in settings.mcp.servers.values():  # GITHUB_TOKEN in env, Authorization in headers
        found += [*_option_secrets({"env": server.env, "headers": server.headers}), *passwords_in(server.url or "")]
    return found


def collect_secrets(environ: Mapping[str, str] | None = None, extra: Iterable[str | None] = (),
                    settings: Settings | None = None) -> tuple[str, ...]:
    """Secret values: ``extra`` (keys in use), what ``settings`` names (:func:`settings_secrets`),
    env vars named like secrets (``*_API_KEY``, ``*TOKEN*``, ``DATABASE_URL`` …), env values shaped
    like keys or long random strings whatever their name, and the password of every URL among them."""
    env = os.environ if environ is None else environ
    if settings is not None:
        extra = [*extra, *settings_secrets(settings, env)]
    found: set[str] = set()
    for name, value in env.items():
        if len(value) < MIN_SECRET_CHARS:
            continue
        if is_secret_name(name) or looks_secret(value):
            found.add(value)
        found.update(pw for pw in passwords_in(value) if len(pw) >= 4)
    for value in extra:
        if value and len(value) >= MIN_SECRET_CHARS:
            found.add(value)
        if value:
            found.update(pw for pw in passwords_in(value) if len(pw) >= 4)
    return tuple(sorted(found, key=len, reverse=True))


# Literals a key shape cannot match without: a text holding none of a shape's is not searched for it
# (nine regex scans of every character were most of the cost of redacting a record or a tool result).
SHAPE_LITERALS: dict[str, tuple[str, ...]] = {
    "pem": ("-----BEGIN ",), "anthropic": ("sk-ant-",), "openai": ("sk-",),
    "github": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"), "aws": ("AKIA", "ASIA"), "slack": ("xox",),
    "google": ("AIza",), "jwt": ("eyJ",), "stripe": ("k_live_", "k_test_"),
}
_SHAPES = tuple((SHAPE_LITERALS[name], pattern) for name, pattern in KEY_SHAPES)  # a new shape needs its literals


def _shapes_in(value: str) -> list[re.Pattern[str]]:
    """The key shapes that can match in ``value``: one of their literals occurs in it."""
    return [pattern for literals, pattern in _SHAPES if any(literal in value for literal in literals)]


def redact_shapes(value: str) -> str:
    """``value`` with every known key shape and URL password replaced (no secret list needed)."""
    for pattern in _shapes_in(value):  # a replacement adds no shape's literal: the list holds for the result
        value = pattern.sub(REDACTED, value)
    if "://" in value:
        value = _URL_PASSWORD.sub(lambda m: f"{m.group('head')}{REDACTED}{m.group('at')}", value)
    return value


@dataclass(slots=True, frozen=True)
class Redactor:
    """Replaces known secret values and every known key shape. Applied to tool results before the
    model sees them, to every transcript record, to artifacts as they are written and to exports."""

    secrets: tuple[str, ...] = ()
    # every secret in its encoded forms too (:func:`encoded_forms`), longest first
    forms: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        forms = {form for secret in self.secrets if secret for form in encoded_forms(secret)}
        forms.update(secret for secret in self.secrets if secret)  # a short configured value: as given
        object.__setattr__(self, "forms", tuple(sorted(forms, key=len, reverse=True)))

    def text(self, value: str) -> str:
        for secret in self.forms:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return redact_shapes(value)

    def __call__(self, value: str) -> str:
        return self.text(value)

    def pieces(self, value: str, size: int = PIECE_CHARS) -> Iterator[str]:
        """:meth:`text` of ``value`` a piece at a time (``"".join`` of them is ``text(value)``), so a
        50 MB tool result is written redacted without a second whole copy beside it (#33)."""
        cuts = self.cuts(value, size)
        for start, end in zip(cuts, cuts[1:]):
            yield self.text(value[start:end])

    def cuts(self, value: str, size: int = PIECE_CHARS) -> list[int]:
        """Offsets (from 0 to ``len(value)``) that cut ``value`` into pieces of about ``size``
        characters, each of which redacts as it does inside the whole. A cut falls right after a
        whitespace character outside every match of a secret form, a key shape and a URL password in
        ``value``: no match crosses it, the patterns' classes never take whitespace, and ``\\b`` sees
        a non-word character there either way. A stretch with no such place stays one piece."""
        end = len(value)
        out = [0]
        if end > size:
            starts, ends = self._match_spans(value)
            while end - out[-1] > size:
                cut = _cut_after(value, out[-1] + size, starts, ends)
                if cut >= end:
                    break
                out.append(cut)
        out.append(end)
        return out

    def _match_spans(self, value: str) -> tuple[list[int], list[int]]:
        """Where :meth:`text` would replace something in ``value``, merged: (starts, ends)."""
        spans: list[tuple[int, int]] = []
        for secret in self.forms:
            at = value.find(secret)
            while at != -1:
                spans.append((at, at + len(secret)))
                at = value.find(secret, at + len(secret))
        for pattern in (*_shapes_in(value), _URL_PASSWORD):
            spans += [m.span() for m in pattern.finditer(value)]
        starts: list[int] = []
        ends: list[int] = []
        for start, stop in sorted(spans):
            if ends and start < ends[-1]:
                ends[-1] = max(ends[-1], stop)
            else:
                starts.append(start)
                ends.append(stop)
        return starts, ends

    def deep(self, value: Any, _depth: int = 0) -> Any:
        """``value`` with every string inside (dict keys and values, lists) redacted. All its text is
        looked at once, joined by NUL (a non-word character no pattern needs at a string's edge, so
        whatever matches in one string matches there too): a record holding nothing to redact — most
        do — is only copied; one that holds something is redacted string by string."""
        if not isinstance(value, str):
            strings: list[str] = []
            copy = _copied(value, strings, _depth)
            if copy is not _ODD and self.text(joined := "\x00".join(strings)) == joined:
                return copy  # text() changes a joined text whenever it would change one of its strings
        return self._deep(value, _depth)

    def _deep(self, value: Any, _depth: int) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if _depth > MAX_NESTING:
            return REDACTED  # too deep to look inside: fail closed, never pass it through
        inner = _depth + 1
        if isinstance(value, dict):
            return {self._deep(k, inner): self._deep(v, inner) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._deep(v, inner) for v in value]
        return value


_ODD = object()


def _copied(value: Any, strings: list[str], depth: int) -> Any:
    """``value`` copied as :meth:`Redactor.deep` copies it when no string changes (tuples as lists),
    every string in it (keys too) added to ``strings`` — or ``_ODD`` where ``deep`` would do more:
    a value past the nesting limit, a key that is not a string. One loop, no call per item."""
    out: list[Any] = [None]
    todo: list[tuple[Any, Any, Any, int]] = [(out, 0, value, depth)]
    while todo:
        parent, slot, item, level = todo.pop()
        if isinstance(item, str):
            strings.append(item)
        elif level > MAX_NESTING:
            return _ODD
        elif isinstance(item, dict):
            copy: Any = dict.fromkeys(item)  # the keys in their order; the values fill in below
            for key, inner in item.items():
                if not isinstance(key, str):
                    return _ODD
                strings.append(key)
                todo.append((copy, key, inner, level + 1))
            item = copy
        elif isinstance(item, (list, tuple)):
            copy = [None] * len(item)
            for index, inner in enumerate(item):
                todo.append((copy, index, inner, level + 1))
            item = copy
        parent[slot] = item
    return out[0]


def _cut_after(value: str, at: int, starts: list[int], ends: list[int]) -> int:
    """The first place at or after ``at`` right after whitespace and inside no span (else ``len(value)``)."""
    while True:
        found = _CUT_AFTER.search(value, at)
        if found is None:
            return len(value)
        cut = found.end()
        inside = bisect.bisect_left(starts, cut) - 1
        if inside < 0 or ends[inside] <= cut:
            return cut
        at = ends[inside] - 1


def redact_messages(redactor: Redactor, messages: Sequence[Any]) -> list[Any]:
    """Messages read back from a transcript, redacted with ``redactor``'s (today's) secrets.

    A transcript was redacted with the secrets known when it was written; a key configured since
    (``security.redact_values``, a new environment variable) is still in it. Resume passes its
    history through here before anything is sent. A message with nothing to redact is returned as
    is (same object); otherwise a copy with content, tool-call arguments and artifact redacted.
    """
    out = []
    for msg in messages:
        update: dict[str, Any] = {}
        content = redactor.deep(msg.content)
        if content != msg.content:
            update["content"] = content
        calls = getattr(msg, "tool_calls", None)
        if calls:
            cleaned = [{**call, "args": redactor.deep(call.get("args") or {})} for call in calls]
            if cleaned != calls:
                update["tool_calls"] = cleaned
        artifact = getattr(msg, "artifact", None)
        if artifact is not None:
            cleaned_artifact = redactor.deep(artifact)
            if cleaned_artifact != artifact:
                update["artifact"] = cleaned_artifact
        out.append(msg.model_copy(update=update) if update else msg)
    return out


@dataclass(slots=True)
class RedactingSink:
    """A record sink that redacts every record before passing it on."""

    inner: Any
    redactor: Redactor

    def append(self, record: dict[str, Any]) -> object:
        return self.inner.append(self.redactor.deep(record))
