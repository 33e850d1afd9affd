"""The evaluation page: ``mtagent eval`` results — per-policy figures, paired comparisons, per task.

Only results files that ``mtagent eval`` registered (:mod:`mtagent.eval.registry`) can be shown,
chosen by their index in that list — never a path typed into the URL. The figures are exactly
``mtagent eval --json``'s (:func:`mtagent.eval.report.report`), read from the results JSONL.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mtagent.errors import UsageError
from mtagent.eval.registry import list_runs
from mtagent.eval.report import report


def eval_context(home: Path | None, ref: str) -> dict[str, Any]:
    """Template data: the registered runs and, when ``ref`` names one, its report."""
    runs = list_runs(home)
    chosen: dict[str, Any] | None = None
    if ref:
        if not ref.isdigit() or int(ref) >= len(runs):
            raise UsageError(f"run={ref!r} is not one of the {len(runs)} evaluation run(s) listed on /eval")
        chosen = report(runs[int(ref)])
    return {"runs": [{"ref": str(i), "label": str(p)} for i, p in enumerate(runs)], "ref": ref, "data": chosen}
