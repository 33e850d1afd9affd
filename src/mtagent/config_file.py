"""Reading one config file: only a regular file, bounded, with errors naming the file and what to do.

Below :mod:`mtagent.config` and :mod:`mtagent.trust` (which reads a project's config to fingerprint
what its trust covers), so both read a config file the one way.
"""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path
from typing import Any

from mtagent.errors import ConfigError

# config.toml is a few lines; reading stops here, so /dev/zero cannot hang or exhaust memory
MAX_CONFIG_BYTES = 1024 * 1024


def read_toml(path: Path) -> dict[str, Any]:
    """A config file's tables. Only a regular file is read, and at most :data:`MAX_CONFIG_BYTES`
    of it: a config.toml that is a symlink to ``/dev/zero`` or a FIFO is an error, not a hang."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return {}
    except PermissionError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}; fix its permissions") from exc
    except OSError as exc:
        raise ConfigError(f"cannot open config file {path}: {exc.strerror}; point it at a TOML file") from exc
    try:
        with os.fdopen(fd, "rb") as fh:
            if stat.S_ISDIR(os.fstat(fh.fileno()).st_mode):
                raise IsADirectoryError(path)
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise ConfigError(f"config file {path} is not a regular file (a device, pipe or socket); "
                                  "make it a TOML file")
            raw = fh.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            raise ConfigError(f"config file {path} is over {MAX_CONFIG_BYTES // 1024} KB; a config file is a few "
                              "lines of TOML — check that it is the right file")
        return tomllib.loads(raw.decode("utf-8"))
    except RecursionError as exc:
        raise ConfigError(f"config file {path} nests tables or arrays too deeply to read") from exc
    except PermissionError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}; fix its permissions") from exc
    except IsADirectoryError as exc:
        raise ConfigError(f"config file {path} is a directory; it must be a TOML file") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path} is not UTF-8 text") from exc
