"""Print pip constraints pinning every dependency to the lower bound pyproject.toml declares.

``.ci/run`` installs the package with these constraints in a separate venv and runs the CLI's
smoke tests there, so a lower bound that does not really work (``typer>=0.12`` once) fails CI.

    python ci/min_versions.py [--extras dev,anthropic] > /tmp/min.txt
    pip install -c /tmp/min.txt -e '.[dev]'
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*>=\s*([^,;\s]+)")


def lower_bounds(extras: list[str]) -> dict[str, str]:
    """name → lowest allowed version, for the dependencies and the named extras."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    optional = project.get("optional-dependencies", {})
    requirements = list(project["dependencies"])
    pending, seen = list(extras), set()
    while pending:
        extra = pending.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for requirement in optional.get(extra, []):
            own = re.match(rf"^{re.escape(project['name'])}\[([^\]]*)\]$", requirement.strip())
            if own:  # "mtagent[postgres]": our own extra, expanded in place
                pending += [e.strip() for e in own.group(1).split(",")]
            else:
                requirements.append(requirement)
    out: dict[str, str] = {}
    for requirement in requirements:
        match = _REQ.match(requirement)
        if match is None:
            raise SystemExit(f"no lower bound (name>=X) in dependency {requirement!r}")
        out[match.group(1).lower()] = match.group(3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extras", default="", help="comma-separated extras to include, e.g. dev")
    args = parser.parse_args()
    extras = [e for e in args.extras.split(",") if e]
    for name, version in sorted(lower_bounds(extras).items()):
        sys.stdout.write(f"{name}=={version}\n")


if __name__ == "__main__":
    main()
