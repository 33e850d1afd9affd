"""The ``mtagent`` script's entry point: answers ``--version`` before anything heavy loads.

Importing typer and rich alone costs more than a tenth of a second, so the version is printed
from here; everything else goes to :func:`mtagent.cli.app.main`.
"""

from __future__ import annotations

import sys

from mtagent import __version__


def main() -> None:
    if sys.argv[1:] in (["--version"], ["-V"]):
        sys.stdout.write(f"mtagent {__version__}\n")
        sys.exit(0)
    from mtagent.cli.app import main as app_main

    app_main()
