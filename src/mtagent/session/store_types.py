"""Plain types and checks shared by every :class:`~mtagent.session.store.Store` backend.

They live apart from the Protocol so the backends can use them without importing the module
that chooses between the backends (which would be an import cycle).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from mtagent.errors import ConfigError, UsageError
from mtagent.session.reader import Entry

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_TENANT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def validate_name(kind: str, value: str) -> str:
    """Project keys, memory names and collection names become file names or keys: a safe alphabet only."""
    if not isinstance(value, str) or not _NAME_RE.match(value) or ".." in value:
        raise UsageError(f"invalid {kind} {value!r}: use letters, digits, '.', '_' or '-' (at most 128)")
    return value


def validate_tenant(tenant: str) -> str:
    if not isinstance(tenant, str) or not _TENANT_RE.match(tenant):
        raise ConfigError(f"invalid storage.tenant {tenant!r}: use letters, digits, '.', '_' or '-' (at most 64)")
    return tenant


@dataclass(slots=True)
class ResumeRead:
    """What resume needs: the records from the last boundary's first kept message on."""

    entries: list[Entry]
    boundary_id: str | None = None
    boundary_position: int | None = None
    start: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def records(self) -> list[dict[str, Any]]:
        return [e.record for e in self.entries]
