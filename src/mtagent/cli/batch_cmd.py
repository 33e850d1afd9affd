"""``mtagent batch TASKS.jsonl``: run the agent on many tasks in parallel, resumably.

The task file format and the checks on it are in :mod:`mtagent.agent.batch`. Tasks run on the
same executors as ``replay`` (``--executor local|ray``); each gets its own session in the
configured store. Results are appended to ``--out`` (default ``TASKS.results.jsonl`` next to the
task file) as they come; a re-run skips the tasks recorded there as done. The summary is a
table, or with ``--json`` one object; the exit code is 0 when every task is done, else 1.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from mtagent.cli.executor_options import (ExecutorChoice, beside_task_file, executor_option, ray_address_option,
                                         root_option, workers_option)
from mtagent.cli.output import console, err_console, table_box, user_errors
from mtagent.errors import UsageError
from mtagent.terminal_text import json_text


def run_unit(unit: Any) -> dict[str, Any]:
    """The worker function: one task, its model resolved here (scripts load in the worker)."""
    from mtagent.agent.batch import run_task
    from mtagent.cli import scripted_model
    from mtagent.pricing import cost_usd, price_for, usage_of_messages

    spec = unit.task.model
    model = scripted_model.load_scripted_model(spec) if scripted_model.is_scripted(spec) else spec
    record = run_task(unit, model)
    messages = record.pop("messages")
    usage = usage_of_messages(messages)
    from mtagent.config import load_settings

    prices = load_settings(Path(record["workdir"])).agent.prices
    record["tokens"] = usage.as_dict()
    record["cost_usd"] = cost_usd(usage, price_for(record["model"], prices))
    return record


def batch(
    tasks_file: Path = typer.Argument(..., help="JSONL, one task per line: {\"id\", \"task\", \"cwd\" or "
                                      "\"repo\"+\"commit\", \"model\", \"approval\", \"settings\"} (docs/scale.md)."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Results JSONL (default: TASKS.results.jsonl beside "
                                    "the task file); tasks recorded there as done are skipped on a re-run."),
    root: Path | None = root_option(),
    scratch: Path | None = typer.Option(None, "--scratch", help="Where repo tasks are cloned (default: "
                                        "TASKS.scratch/ beside the task file)."),
    executor: str = executor_option(),
    ray_address: str | None = ray_address_option(),
    workers: int | None = workers_option(),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object {\"tasks\": [...], \"skipped\": N}: "
                                 "status, steps, tokens, cost_usd and session_id per task."),
    trust_tasks: bool = typer.Option(False, "--trust-tasks", help="Run \"approval\": \"allow\" tasks although the "
                                     "file lies in a project you have not trusted."),
) -> None:
    """Run the agent on every task of a JSONL file, in parallel, each in its own session (resumable)."""
    code = run_batch(tasks_file, out, root, scratch, ExecutorChoice(executor, ray_address, workers), as_json,
                     trust_tasks)
    raise typer.Exit(code)


@user_errors
def run_batch(tasks_file: Path, out: Path | None, root: Path | None, scratch: Path | None, choice: ExecutorChoice,
              as_json: bool, trust_tasks: bool = False) -> int:
    from mtagent.agent.batch import TaskUnit, append_result, finished_ids, read_tasks
    from mtagent.eval.task_trust import refusal

    out, scratch = beside_task_file(tasks_file, root, out, scratch, ".results.jsonl", ".scratch")
    tasks = read_tasks(tasks_file, root)
    refused = refusal(tasks_file, tasks, trust_tasks=trust_tasks)  # a task file is untrusted input
    if refused:
        raise UsageError(refused)
    done = finished_ids(out)
    todo = [t for t in tasks if t.id not in done]
    env = {k: v for k, v in os.environ.items() if k.startswith("MTAGENT_")}
    units = [TaskUnit(t, str(scratch), env) for t in todo]
    records: list[dict[str, Any]] = []
    show = not as_json and err_console.is_terminal

    def progress(finished: int, total: int) -> None:
        if show:
            err_console.print(f"batch: {finished}/{total} tasks", end="\r")

    if units:
        with choice.open() as executor:
            for outcome in executor.map(run_unit, units, progress):
                task = outcome.unit.task
                if outcome.ok:
                    record = {"line": task.line, **outcome.value, "attempts": outcome.attempts}
                else:
                    record = {"id": task.id, "line": task.line, "status": "error", "error": str(outcome.error),
                              "attempts": outcome.attempts}
                append_result(out, record)
                records.append(record)
    if as_json:
        typer.echo(json_text({"tasks": records, "skipped": len(tasks) - len(todo), "results": str(out)}))
    else:
        _summary(records, len(tasks) - len(todo), out)
    return 0 if all(r["status"] == "done" for r in records) else 1


def _summary(records: list[dict[str, Any]], skipped: int, out: Path) -> None:
    table = Table(title=f"batch: {len(records)} task(s) run, {skipped} already done", title_justify="left",
                  box=table_box(console), pad_edge=False)
    for col, justify in (("id", "left"), ("status", "left"), ("steps", "right"), ("tokens", "right"),
                         ("cost $", "right"), ("session", "left")):
        table.add_column(col, justify=justify, no_wrap=col != "status")  # type: ignore[arg-type]
    for r in records:
        tokens = r.get("tokens") or {}
        cost = r.get("cost_usd")
        status = r["status"] if r["status"] != "error" else f"error: {r.get('error', '')[:120]}"
        table.add_row(escape(r["id"]), escape(status), str(r.get("steps", "-")),
                      f"{sum(tokens.values()) - tokens.get('calls', 0):,}" if tokens else "-",
                      f"{cost:.4f}" if isinstance(cost, (int, float)) else "-", escape(r.get("session_id", "-")))
    console.print(table)
    err_console.print(f"results appended to {escape(str(out))}", highlight=False)


def register(app: typer.Typer) -> None:
    app.command("batch")(batch)
