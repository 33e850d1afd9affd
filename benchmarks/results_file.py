"""Where a benchmark writes its report: the tracked ``benchmarks/results/`` only on purpose.

``docs/benchmarks.md`` cites the files in ``benchmarks/results/``; a run — a ``--quick`` one above
all — must not rewrite them as a side effect. Reports go to ``benchmarks/results/local/`` (ignored
by git) unless ``MTAGENT_BENCH_RECORD=1`` says this run is the one to record.
"""

from __future__ import annotations

import os
from pathlib import Path

RECORD_ENV = "MTAGENT_BENCH_RECORD"
RESULTS = Path(__file__).resolve().parent / "results"


def results_file(name: str) -> Path:
    """``benchmarks/results/<name>`` when recording, else ``benchmarks/results/local/<name>``;
    its folder exists."""
    folder = RESULTS if os.environ.get(RECORD_ENV) == "1" else RESULTS / "local"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name
