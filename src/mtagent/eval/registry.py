"""Which evaluation results files exist: ``$MTAGENT_HOME/eval/runs.jsonl``, for ``mtagent ui``.

The UI's evaluation page offers only the results files ``mtagent eval`` wrote (by their index
in this list), never a path typed into a URL — the same rule as the replay page's sources.
"""

from __future__ import annotations

import json
from pathlib import Path

from mtagent import paths
from mtagent.agent.batch import result_records

RUNS_FILE = "runs.jsonl"
MAX_RUNS = 200


def runs_path(home: Path | None = None) -> Path:
    return (home or paths.mtagent_home()) / "eval" / RUNS_FILE


def list_runs(home: Path | None = None) -> list[Path]:
    """Registered results files that still exist, newest registration first, each once."""
    seen: list[Path] = []
    for record in reversed(list(result_records(runs_path(home)))):
        value = record.get("results")
        if isinstance(value, str) and Path(value) not in seen and Path(value).is_file():
            seen.append(Path(value))
    return seen[:MAX_RUNS]


def register_run(results: Path) -> None:
    """Remember ``results`` (absolute) unless it is already the newest entry."""
    resolved = results.resolve()
    runs = list_runs()
    if runs and runs[0] == resolved:
        return
    path = runs_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"results": str(resolved)}) + "\n")
