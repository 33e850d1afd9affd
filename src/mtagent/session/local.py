"""Where one tenant's local state lives on this machine.

Beside the store, a session keeps some state on local disk: the project's long-term memory as
files (the system prompt and ``save_memory`` read and write them), the recall index, the artifact
cache and the locks beside them. All of it sits under the tenant's *local home*, fixed when the
session opens:

* files backend: ``$MTAGENT_HOME`` itself — one user, the classic layout;
* PostgreSQL: ``$MTAGENT_HOME/mirror/<tenant>-<hash of server and tenant>`` — the same folder the
  readers' mirror uses, so two tenants (or two databases) on one machine never share a path.

Nothing is shared between tenants, so nothing is ever swapped or renamed: any number of processes
of any tenants run side by side (issue 25: a shared ``memory`` folder renamed per tenant failed 6
of 40 concurrent runs with ``Directory not empty``).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from mtagent import paths
from mtagent.session.store_types import validate_tenant

MIRROR_DIR = "mirror"


def redact_dsn(dsn: str) -> str:
    """The DSN without its password, for messages and for names on disk."""
    dsn = re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", dsn)
    return re.sub(r"(password\s*=\s*)\S+", r"\1***", dsn, flags=re.IGNORECASE)


def tenant_key(where: str, tenant: str) -> str:
    """``<tenant>-<hash of where and tenant>``: names what this machine keeps for one tenant of one store."""
    digest = hashlib.sha256(f"{where}\0{validate_tenant(tenant)}".encode()).hexdigest()[:12]
    return f"{tenant}-{digest}"


def shared_home(where: str, tenant: str) -> Path:
    """The local home of a tenant of a shared store at ``where`` (its name never holds a password)."""
    return paths.mtagent_home() / MIRROR_DIR / tenant_key(where, tenant)


def local_home(settings: Any) -> Path:
    """The local home of the tenant ``settings.storage`` names, without opening the store.

    Equal to the ``local_home`` of the store :func:`~mtagent.session.store.open_store` would open,
    so a tool or command that has only the settings finds the same folders as the session."""
    storage = settings.storage
    if storage.backend == "files" or not storage.dsn:
        return paths.mtagent_home()
    return shared_home(redact_dsn(storage.dsn), storage.tenant)
