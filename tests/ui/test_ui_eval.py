"""The evaluation page in headless Chromium: a real ``mtagent eval`` run, its tables, hostile input (#29)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mtagent.eval.policies import load_policies
from mtagent.eval.registry import register_run
from mtagent.eval.report import report
from mtagent.eval.runner import plan_units, run_units
from mtagent.eval.suite import builtin_tasks
from mtagent.replay.executors import make_executor
from mtagent.ui.app import UiOptions
from mtagent.ui.server import BackgroundServer

SCRIPT = '<script>window.__pwned = 1</script>'


@pytest.fixture
def eval_home(tmp_path: Path, mtagent_home: Path) -> Path:
    """Two built-in tasks under two policies, run for real, registered in the home; plus a hostile record."""
    tasks = builtin_tasks(tmp_path / "suite")[:2]
    units, _ = plan_units(tasks, load_policies(["mtagent", "threshold"]), tmp_path / "scratch", model="context-test:")
    out = tmp_path / "run.eval.jsonl"
    run_units(units, make_executor("local", workers=1), out)
    with open(out, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"task": SCRIPT, "policy": "mtagent", "chain": 1, "status": "done", "solved": False})
                 + "\n{torn line\n")
    register_run(out)
    return mtagent_home


def test_eval_page_shows_the_run_like_eval_json(chromium_page: Any, eval_home: Path) -> None:
    page = chromium_page
    with BackgroundServer(UiOptions(cwd=eval_home, home=eval_home)) as url:
        page.goto(url + "/")
        page.locator("nav a", has_text="Eval").click()
        page.wait_for_url("**/eval")
        options = page.locator("select[name=run] option")
        assert options.count() == 2 and options.nth(1).inner_text().endswith("run.eval.jsonl")
        page.select_option("select[name=run]", "0")
        page.locator("button", has_text="Show").click()
        page.wait_for_url("**/eval?run=0")
        expected = report(Path(options.nth(1).inner_text()))
        rows = page.locator("table.eval-policies tbody tr")
        assert rows.count() == 2
        for i, p in enumerate(expected["policies"]):
            cells = rows.nth(i).locator("td").all_inner_texts()
            assert cells[0] == p["policy"] and cells[1] == f"{p['solved']}/{p['tasks']}"
            assert cells[3] == f"{p['cost_usd']:.4f}" and cells[6] == f"{p['calls']:,}"
        paired = page.locator("table.eval-paired tbody tr").first.locator("td").all_inner_texts()
        assert paired[0] == "mtagent vs threshold" and paired[6] == expected["paired"][0]["verdict"]
        assert page.locator("table.eval-tasks tbody tr").count() == 3
        assert page.locator("table.eval-tasks", has_text=SCRIPT).count() == 1  # shown as text, never run
        assert page.evaluate("window.__pwned") is None
        for bad in ("../../etc/passwd", "7", "-1"):
            page.goto(url + f"/eval?run={bad}")
            assert "is not one of the 1 evaluation run(s)" in page.locator("main").inner_text()
