"""What a secret is: the one rule by which the redactor collects secrets and the shell withholds them.

By name (:func:`is_secret_name`), by shape (:data:`KEY_SHAPES`, :func:`looks_secret`), inside a
connection string (:func:`passwords_in`), for an environment variable all of these
(:func:`variable_is_secret`), and what an untrusted project's redaction lists may ask for
(:func:`untrusted_redactions`). Pure functions, imported by :mod:`mtagent.redaction` (which applies
them) and by :mod:`mtagent.trust` (which narrows an untrusted project's config) — below both.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from mtagent.config_sections import MIN_SECRET_CHARS

_SECRET_NAME = re.compile(
    r"(KEY|TOKEN|SECRET|PASS(?!THROUGH)|PWD|(?:^|_)PW(?:_|$)|CRED|PRIVATE|AUTH|BEARER|WEBHOOK|SALT|HMAC|DSN|"
    r"DATABASE_URL|CONN(?:ECTION)?_?STR|_URL$|_URI$|COOKIE|SESSION)", re.IGNORECASE)
# Named like a secret but a handle, no key in it: the shell's current and previous folder, and the
# path of the user's ssh agent socket (``git push`` over ssh needs it; Codex CLI passes it too — the
# agent signs, it never hands out a key). ``security.redact_env`` can still withhold them.
HANDLES = frozenset({"PWD", "OLDPWD", "SSH_AUTH_SOCK"})
# An env value this long whose characters look random is treated as a secret whatever its name.
HIGH_ENTROPY_MIN_CHARS = 20
HIGH_ENTROPY_BITS_PER_CHAR = 3.5
# Known credential shapes, redacted wherever they appear (not only when we know the value).
KEY_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("pem", re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.S)),
    ("anthropic", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{16,}")),
    ("openai", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}")),
    ("github", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})")),
    ("aws", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("slack", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
    ("google", re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
    ("stripe", re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}")),
)
# scheme://user:password@host — the password goes, the rest stays readable
_URL_PASSWORD = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]*:)(?P<pw>[^\s@/]+)(?P<at>@)")
# libpq key=value connection strings: password=secret or password='with spaces'
# (and ODBC/ADO.NET ``Password=secret;`` / ``PWD=secret;``: a bare value ends at ``;``)
_KV_PASSWORD = re.compile(r"\b(?:password|pwd)\s*=\s*(?:'(?P<quoted>(?:[^'\\]|\\.)*)'|(?P<bare>[^\s';]+))",
                          re.IGNORECASE)
_IDENTIFIER = re.compile(r"[0-9a-fA-F]+(?:-[0-9a-fA-F]+)*")
def is_secret_name(name: str) -> bool:
    """Whether a name (an environment variable, an option or header key) says its value is a secret.

    Half of the one rule (:func:`variable_is_secret` is the whole): what the redactor collects by
    name is what a shell command is not handed (:func:`mtagent.tools.shell.shell_environment`), so
    no secret reaches a command that could print it in a form (``| rev``, ``| base64``) redaction no
    longer recognises. :data:`HANDLES` are named like secrets but are not."""
    return name.upper() not in HANDLES and bool(_SECRET_NAME.search(name))


def _entropy(value: str) -> float:
    counts: dict[str, int] = {}
    for ch in value:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def looks_secret(value: str) -> bool:
    """A value that is a secret by its shape: a known key format, or long and random-looking.

    Hex digits alone (a commit hash, a digest, a UUID) are an identifier, not a secret by shape:
    tools print them all the time (``git log``, ``sha256sum``), and a ``GIT_COMMIT`` taken for a
    secret would be cut from every log. Named like a secret (or in ``security.redact_env``) it is one."""
    v = value.strip()
    if any(p.search(v) for _, p in KEY_SHAPES):
        return True
    if _IDENTIFIER.fullmatch(v):
        return False
    if len(v) < HIGH_ENTROPY_MIN_CHARS or any(c.isspace() for c in v) or "/" in v.strip("/") and "://" not in v:
        return False
    classes = sum((any(c.islower() for c in v), any(c.isupper() for c in v), any(c.isdigit() for c in v)))
    return classes >= 2 and _entropy(v) >= HIGH_ENTROPY_BITS_PER_CHAR


def passwords_in(value: str) -> list[str]:
    """The passwords inside a connection string: ``scheme://user:PASSWORD@host`` and ``password=…``."""
    found = [m.group("pw") for m in _URL_PASSWORD.finditer(value)]
    found += [m.group("quoted") if m.group("quoted") is not None else m.group("bare")
              for m in _KV_PASSWORD.finditer(value)]
    return [pw for pw in found if pw]


def variable_is_secret(name: str, value: str, known: Iterable[str] = ()) -> bool:
    """The one secret rule for an environment variable: named like a secret (:func:`is_secret_name`),
    or a value the redactor would redact — a key shape or a long random string (:func:`looks_secret`),
    a URL or connection string with a password (:func:`passwords_in`), or a ``known`` secret (the
    configured ones, :func:`settings_secrets`) as the value or inside it. The shell withholds such a
    variable from commands under any name; :func:`collect_secrets` redacts its value everywhere."""
    if is_secret_name(name) or looks_secret(value) or passwords_in(value):
        return True
    return any(secret == value or (len(secret) >= MIN_SECRET_CHARS and secret in value) for secret in known if secret)


# What commands need from the environment: an untrusted project's ``redact_env`` may not withhold it.
COMMAND_ENVIRONMENT = frozenset({
    "PATH", "HOME", "LANG", "LANGUAGE", "TERM", "USER", "LOGNAME", "SHELL", "TMPDIR", "TMP", "TEMP", "TZ",
    "PWD", "OLDPWD", "SSH_AUTH_SOCK", "DISPLAY", "WAYLAND_DISPLAY", "COLUMNS", "LINES", "HOSTNAME",
    "EDITOR", "VISUAL", "PAGER", "VIRTUAL_ENV", "PYTHONPATH", "NODE_PATH", "GOPATH", "JAVA_HOME",
})
_COMMAND_ENVIRONMENT_PREFIXES = ("LC_", "XDG_")


def needed_by_commands(name: str) -> bool:
    """Whether commands need the variable ``name`` (:data:`COMMAND_ENVIRONMENT`, ``LC_*``, ``XDG_*``)."""
    upper = name.upper()
    return upper in COMMAND_ENVIRONMENT or upper.startswith(_COMMAND_ENVIRONMENT_PREFIXES)


def untrusted_redactions(security: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """An untrusted project's ``[security]`` table, narrowed, and what was ignored (``section.key``
    and how many entries, never the entries: they may be secrets).

    A project's redactions are not harmless just because they remove text: ``redact_values =
    ["if user.is_admin: return True"]`` hides a code line from the agent that must review it, and
    ``redact_env = ["HOME", "LANG"]`` breaks every command. So from a project the user has not
    trusted, a ``redact_values`` entry counts only when it looks like a secret by itself
    (:func:`looks_secret`: a key shape, or a long random string), and a ``redact_env`` name only
    when commands do not need it (:func:`needed_by_commands`)."""
    kept = dict(security)
    ignored: list[str] = []
    values, names = security.get("redact_values"), security.get("redact_env")
    if isinstance(values, list):
        kept["redact_values"] = [v for v in values if isinstance(v, str) and looks_secret(v)]
        if dropped := len(values) - len(kept["redact_values"]):
            ignored.append(f"security.redact_values ({dropped} entr{'y' if dropped == 1 else 'ies'} that do not "
                           "look like secrets)")
    if isinstance(names, list):
        kept["redact_env"] = [n for n in names if isinstance(n, str) and not needed_by_commands(n)]
        if dropped_names := [n for n in names if n not in kept["redact_env"]]:
            shown = ", ".join(re.sub(r"[^A-Za-z0-9_]", "?", str(n)[:40]) for n in dropped_names[:6])
            shown += " …" if len(dropped_names) > 6 else ""
            ignored.append(f"security.redact_env ({shown}: commands need them)")
    return kept, ignored
