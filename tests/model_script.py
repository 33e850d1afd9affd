"""A scripted model for the CLI's tests: its steps written to a file, named as ``--model`` takes it."""

import json
from pathlib import Path


def script(folder: Path, steps: list, name: str = "script.json") -> str:
    path = folder / name
    path.write_text(json.dumps(steps), encoding="utf-8")
    return f"scripted:{path}"
