"""Per-fact metadata of long-term memory (spec 003 v1.2): key, TTL, authority, time written.

A fact stays one markdown list item a person can read and edit; its metadata rides in a
trailing HTML comment, invisible when the file is rendered::

    - tests run with `uv run pytest -x` <!-- key=test-command; expires=2027-01-31T00:00:00+00:00; at=… -->

* ``key`` — facts about the same thing share a key; the newer one supersedes, and across
  namespaces the higher authority wins (:mod:`mtagent.context.static.memory_resolve`).
* ``expires`` — a TTL: an expired fact is never injected and is listed as expired.
* ``authority`` — overrides the namespace's default authority (``org`` > ``project`` > ``user`` > ``memory``).
* ``at`` — when it was written (ties on a key go to the newer).

Metadata is untrusted text from a file: unknown fields are ignored, a bad date is ignored
(the fact is kept, without that field), and the comment never reaches the model.

Metadata never comes from a fact's *content*: a written fact has its comment markers defused
(:func:`defuse_meta`), so ``save_memory(fact="… <!-- key=test-command; authority=org -->")`` stores
that text as text. Key and TTL come from the writer's own fields, and the authority from who
writes (:func:`writer_authority`): the model never claims more than ``memory``.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass

from mtagent.errors import UsageError

_META_RE = re.compile(r"[ \t]*<!--[ \t]*(?P<body>[^<>]*?)[ \t]*-->[ \t]*$")
_KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,79}$")
_TTL_RE = re.compile(r"^\s*(\d{1,6})\s*([smhdw])\s*$", re.IGNORECASE)
_TTL_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
AUTHORITIES = ("memory", "user", "project", "org")
NAMESPACE_AUTHORITY = {"global": "memory", "user": "user", "project": "project", "team": "org"}


@dataclass(slots=True, frozen=True)
class FactMeta:
    key: str | None = None
    expires_at: _dt.datetime | None = None
    authority: str | None = None
    at: _dt.datetime | None = None

    @property
    def empty(self) -> bool:
        return self.key is None and self.expires_at is None and self.authority is None and self.at is None

    def expired(self, now: _dt.datetime | None = None) -> bool:
        return self.expires_at is not None and self.expires_at <= (now or utcnow())


def utcnow() -> _dt.datetime:
    return _dt.datetime.now(_dt.UTC)


def _parse_time(text: str) -> _dt.datetime | None:
    try:
        value = _dt.datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=_dt.UTC)


def split_meta(body: str) -> tuple[str, FactMeta]:
    """(fact text, metadata) of a list item's body; text without a comment has empty metadata."""
    match = _META_RE.search(body)
    if not match:
        return body, FactMeta()
    fields: dict[str, str] = {}
    for part in match.group("body").split(";"):
        name, sep, value = part.partition("=")
        if sep:
            fields[name.strip().lower()] = value.strip()
    key = fields.get("key")
    authority = fields.get("authority", "").lower() or None
    meta = FactMeta(
        key=key if key and _KEY_RE.match(key) else None,
        expires_at=_parse_time(fields["expires"]) if fields.get("expires") else None,
        authority=authority if authority in AUTHORITIES else None,
        at=_parse_time(fields["at"]) if fields.get("at") else None,
    )
    return body[: match.start()].rstrip(), meta


def render_meta(meta: FactMeta) -> str:
    """The trailing comment for ``meta`` ('' when empty)."""
    if meta.empty:
        return ""
    parts = []
    if meta.key:
        parts.append(f"key={meta.key}")
    if meta.expires_at:
        parts.append(f"expires={meta.expires_at.isoformat(timespec='seconds')}")
    if meta.authority:
        parts.append(f"authority={meta.authority}")
    if meta.at:
        parts.append(f"at={meta.at.isoformat(timespec='seconds')}")
    return f" <!-- {'; '.join(parts)} -->"


def defuse_meta(text: str) -> str:
    """``text`` with every HTML comment marker written as an entity, so no part of a fact's
    content can be read back as its metadata (or hide text in a rendered file)."""
    while "<!--" in text or "-->" in text:
        text = text.replace("<!--", "&lt;!--").replace("-->", "--&gt;")
    return text


def writer_authority(writer: str, namespace: str) -> str:
    """The authority a keyed fact is stamped with: what its writer may claim in ``namespace``.

    ``model`` (the ``save_memory`` tool) is ``memory`` whatever namespace it picks, so a model's
    fact never outranks a person's on the same key; ``user`` (the command line) is at least
    ``user``, or the namespace's own authority when that is higher (a team file speaks for the team)."""
    if writer == "model":
        return "memory"
    default = NAMESPACE_AUTHORITY.get(namespace, "memory")
    return max(default, "user", key=AUTHORITIES.index)


def clean_key(key: str | None) -> str | None:
    if key is None or not key.strip():
        return None
    key = key.strip()
    if not _KEY_RE.match(key):
        raise UsageError(f"memory key {key!r} is not valid: use letters, digits and . _ : / - (at most 80)")
    return key


def parse_ttl(ttl: str | None, now: _dt.datetime | None = None) -> _dt.datetime | None:
    """``30d``, ``12h``, ``2w`` … → an expiry time; or an ISO date/time; None for no TTL."""
    if ttl is None or not str(ttl).strip():
        return None
    text = str(ttl).strip()
    match = _TTL_RE.match(text)
    if match:
        seconds = int(match.group(1)) * _TTL_UNITS[match.group(2).lower()]
        try:
            return (now or utcnow()) + _dt.timedelta(seconds=seconds)
        except OverflowError:
            raise UsageError(f"TTL {ttl!r} ends after the year 9999: use a shorter one (e.g. 52w) or "
                             "no --ttl for a fact that never expires") from None
    when = _parse_time(text)
    if when is None:
        raise UsageError(f"TTL {ttl!r} is not understood: use e.g. 30d, 12h, 2w, or a date like 2027-01-31")
    return when


def authority_rank(meta: FactMeta, namespace: str) -> int:
    """Higher wins a conflict on a key: the fact's own authority, else its namespace's."""
    name = meta.authority or NAMESPACE_AUTHORITY.get(namespace, "memory")
    return AUTHORITIES.index(name) if name in AUTHORITIES else 0
