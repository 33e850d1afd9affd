"""``mtagent eval``: every task under every context policy, same model — solve rate × cost, paired.

Task files, policies, the worker, the statistics and the built-in suite live in
:mod:`mtagent.eval`; this module parses options, prints the report (tables that fit the terminal
without cutting a policy name or a number, or ``--json``) and registers the results file for
``mtagent ui``'s evaluation page.
Exit code: 0 when every pair ran (solved or not), 1 when some errored, 2 for usage errors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from mtagent.cli.executor_options import (ExecutorChoice, beside_task_file, executor_option, ray_address_option,
                                         root_option, workers_option)
from mtagent.cli.fit import Column, dropped_note, fit_table
from mtagent.cli.output import console, err_console, table_box, user_errors
from mtagent.errors import UsageError
from mtagent.replay.names import ARMS

BUILTIN_MODEL = "context-test:"
LOCAL_TEST_MODEL = "context-test"  # runs in the process: its dollars are what its tokens would cost
PAIRED_HELP = ("diff = A's solve rate minus B's; 95% CI: Newcombe's interval for diff (paired); p: McNemar's exact "
               "test on A+ vs B+. A verdict names a winner only with p < 0.05 and a 95% CI that excludes 0; "
               "otherwise \"no clear difference\", whatever the rates look like.")


def run_unit(unit: Any) -> list[dict[str, Any]]:
    """The worker function: the model is resolved in the worker (``scripted:``/``context-test:`` too)."""
    from mtagent.cli import scripted_model
    from mtagent.eval.worker import resolve_model, run_unit as run

    def resolve(spec: str | None) -> Any:
        if scripted_model.is_scripted(spec):
            return scripted_model.load_scripted_model(str(spec))
        return resolve_model(spec)

    return run(unit, resolve)


def eval_command(
    tasks_file: Path | None = typer.Argument(None, help="JSONL tasks: mtagent batch lines plus \"check\"/\"setup\", "
                                             "or SWE-bench lines (docs/eval.md). Omit with --suite."),
    policy: list[str] = typer.Option([], "--policy", "-p", help="A context policy: "
                                     f"{', '.join(a.policy for a in ARMS)}, or a settings .toml file. Repeat to "
                                     "compare (default mtagent)."),
    suite: str | None = typer.Option(None, "--suite", help="Run a built-in suite instead of a file: builtin (44 "
                                     "generated tasks that need the session's memory, controls among them) or extra "
                                     "(20 tasks of other shapes)."),
    model: str | None = typer.Option(None, "--model", "-m", help="provider:name for every task (same model under "
                                     "every policy); the built-in suite defaults to the context-test: model."),
    base_url: str | None = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint for --model."),
    chain: int = typer.Option(1, "--chain", min=1, help="Run N consecutive tasks as turns of one session, each "
                              "checked after its turn (long-horizon: compaction and recall happen for real)."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Only the first N tasks."),
    setting: list[str] = typer.Option([], "--setting", "-s", help="section.key=value for every task, over the "
                                      "task's own settings and under the policy's, e.g. context.token_limit=8192."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Results JSONL (default: TASKS.eval.jsonl, or "
                                    "SCRATCH/builtin.eval.jsonl); pairs recorded there as done are skipped."),
    scratch: Path | None = typer.Option(None, "--scratch", help="Where workspaces go (default: TASKS.eval-scratch/ "
                                        "or ./mtagent-eval/ for a suite)."),
    root: Path | None = root_option(),
    repos: Path | None = typer.Option(None, "--repos", help="Local clones for SWE-bench lines: REPOS/owner__name."),
    executor: str = executor_option(),
    ray_address: str | None = ray_address_option(),
    workers: int | None = workers_option(),
    as_json: bool = typer.Option(False, "--json", help="Print the report as one JSON object: per-policy figures, "
                                 "paired comparisons, per-task outcomes."),
    trust_tasks: bool = typer.Option(False, "--trust-tasks", help="Run the task file's setup/check commands and "
                                     "test patches although it lies in a project you have not trusted."),
) -> None:
    """Evaluate context policies closed-loop: every task under every policy, with checks (resumable)."""
    choice = ExecutorChoice(executor, ray_address, workers)
    code = run_eval(tasks_file, policy, suite, model, base_url, chain, limit, out, scratch, root, repos, choice,
                    as_json, setting, trust_tasks)
    raise typer.Exit(code)


@user_errors
def run_eval(tasks_file: Path | None, policy_specs: list[str], suite: str | None, model: str | None,
             base_url: str | None, chain: int, limit: int | None, out: Path | None, scratch: Path | None,
             root: Path | None, repos: Path | None, choice: ExecutorChoice, as_json: bool,
             settings: list[str] | None = None, trust_tasks: bool = False) -> int:
    from mtagent.eval.policies import load_policies, parse_settings
    from mtagent.eval.registry import register_run
    from mtagent.eval.report import report
    from mtagent.eval.runner import finished_pairs, plan_units, run_units
    from mtagent.eval.suite import SUITE_NAMES, builtin_tasks
    from mtagent import trust
    from mtagent.eval.task_trust import refusal
    from mtagent.eval.tasks import read_eval_tasks

    if (tasks_file is None) == (suite is None):
        raise UsageError("give a task file or --suite builtin (one of them)")
    policies = load_policies(policy_specs)
    overrides = parse_settings(settings or [])
    if suite is not None:
        if suite not in SUITE_NAMES:
            raise UsageError(f"unknown suite {suite!r}; suites: {', '.join(SUITE_NAMES)}")
        scratch = (scratch or Path("mtagent-eval")).resolve()
        tasks = builtin_tasks(scratch / suite, name=suite)
        out = out or scratch / f"{suite}.eval.jsonl"
        model = model or BUILTIN_MODEL
    else:
        assert tasks_file is not None
        out, scratch = beside_task_file(tasks_file, root, out, scratch, ".eval.jsonl", ".eval-scratch")
        tasks = read_eval_tasks(tasks_file, root, repos)
        refused = refusal(tasks_file, tasks, trust_tasks=trust_tasks)  # a task file's commands are untrusted input
        if refused:
            raise UsageError(refused)
        for project in {t.batch.cwd for t in tasks if not t.batch.repo and t.batch.cwd}:
            trust.refuse_if_changed(project)
    tasks = tasks[:limit] if limit else tasks
    units, skipped = plan_units(tasks, policies, scratch, model=model, base_url=base_url, chain=chain,
                                done=finished_pairs(out), overrides=overrides)
    show = not as_json and err_console.is_terminal
    records: list[dict[str, Any]] = []
    if units:
        with choice.open() as executor:
            records = run_units(units, executor, out, run_unit,
                                (lambda d, t: err_console.print(f"eval: {d}/{t} sessions", end="\r")) if show else None)
    register_run(out)
    data = report(out, [p.name for p in policies], chain)
    data["ran"], data["skipped"] = len(records), skipped
    if as_json:
        typer.echo(json.dumps(data, ensure_ascii=False))
    else:
        print_report(data)
    return 1 if any(r.get("status") == "error" for r in records) else 0


def _money(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, (int, float)) else "-"


def _count(n: int) -> str:
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(n)


# what a narrow terminal gives up first (lowest ``drop``); policy names, solved and cost stay whole
POLICY_COLUMNS = (Column("policy"), Column("solved", "right"), Column("cost $", "right"),
                  Column("side $", "right", drop=5), Column("tokens", "right", drop=6),
                  Column("calls", "right", drop=3), Column("cmp", "right", drop=4),
                  Column("recall", "right", drop=2), Column("wall s", "right", drop=1))
PAIR_COLUMNS = (Column("A vs B", wrap=True, whole_words=True), Column("A+", "right"), Column("B+", "right"),
                Column("diff", "right"), Column("95% CI", "right", drop=2), Column("p", "right", drop=1),
                Column("verdict", wrap=True, whole_words=True, drop=3))


def _print_fitted(columns: tuple[Column, ...], rows: list[list[str]], title: str) -> None:
    table, dropped = fit_table(console, columns, rows, title=title, title_justify="left", box=table_box(console),
                               pad_edge=False, collapse_padding=True)
    console.print(table)
    note = dropped_note(dropped)
    if note:
        console.print(note)


def print_report(data: dict[str, Any]) -> None:
    """Two tables that fit the terminal (:mod:`mtagent.cli.fit`): per policy, then the paired
    comparisons. Policy names and numbers are never cut; on a narrow terminal the least important
    columns are left out and a line says which (``--json`` has everything)."""
    rows = [[escape(p["policy"]), f"{p['solved']}/{p['tasks']}", _money(p["cost_usd"]), _money(p["side_cost_usd"]),
             _count(p["tokens"] + p["side_tokens"]), str(p["calls"]), str(p["compactions"]), str(p["recalls"]),
             f"{p['wall_s']:.0f}"] for p in data["policies"]]
    _print_fitted(POLICY_COLUMNS, rows, f"eval: {data['ran']} run, {data['skipped']} already done")
    if data["paired"]:
        pairs = [[escape(f"{c['a']} vs {c['b']}"), str(c["only_a"]), str(c["only_b"]), f"{c['diff']:+.2f}",
                  f"{c['ci_low']:+.2f},{c['ci_high']:+.2f}", f"{c['p_value']:.2f}", escape(c["verdict"])]
                 for c in data["paired"]]
        _print_fitted(PAIR_COLUMNS, pairs, "paired: A+/B+ = tasks solved by A only / B only")
        console.print(PAIRED_HELP, highlight=False)
    local = [m for m in data.get("models") or [] if m.split(":", 1)[0].startswith(LOCAL_TEST_MODEL)]
    if local:
        console.print(f"dollars are illustrative: {escape(', '.join(local))} runs locally and costs nothing; its "
                      "tokens are priced at the suite's price row (agent.prices), as a mid-size hosted model "
                      "would bill them", highlight=False)
    limited = [f"{t} ({p['policy']})" for p in data["policies"] for t in p.get("step_limit") or []]
    if limited:
        err_console.print(f"{len(limited)} task(s) ended at the step limit (agent.max_steps) — a loop, not an answer: "
                          f"{escape(', '.join(limited))}", highlight=False)
    unpriced = sum(p["unpriced"] for p in data["policies"])
    if unpriced:
        err_console.print(f"{unpriced} result(s) have no price row (agent.prices): their tokens count, their cost "
                          "does not", highlight=False)
    errors = sum(p["errors"] for p in data["policies"])
    if errors:
        err_console.print(f"{errors} pair(s) errored and are left out; re-run to retry them", highlight=False)
    err_console.print(f"results in {escape(data['results'])}", highlight=False)


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_command)
