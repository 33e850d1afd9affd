"""The built-in suite (``mtagent eval --suite builtin``): small tasks that need the session's memory.

Every task is a generated repository and a task written in the step language of
:mod:`mtagent.agent.context_model` (readable by a person and a real model alike). Each needs
one fact the session saw earlier and cannot see again:

* ``constant`` — a constant in a file read first; the file is removed by a later step;
* ``error`` — the code in an error message a one-shot probe script printed (it removes itself);
* ``constraint`` — a value the user stated once, in the task's first lines.

Between seeing the fact and answering, the task reads ``distance`` filler modules (8 to 40 tool
calls), so on the suite's small window a policy must compact, and what its compaction kept — or
what it can recall — decides the answer. The check compares ``answer.txt`` with the fact.

Those 24 favour a policy that recalls (the fact is gone from disk and said once). The tasks after
them (:data:`LATER_SHAPES`, built by :mod:`mtagent.eval.shapes`) vary where the fact sits — still
on disk, in a saved 900-line log, in a long prompt, changed later, in JSON or YAML, two at once —
and add **controls** every policy must solve.

Everything is derived from the task index (no randomness, no clock), so every machine, executor
and policy sees byte-identical repositories. The window is small (``context.token_limit``) so
compaction happens within a task; a real endpoint's window is overridden the same way.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from mtagent.eval.shapes import ANSWER_FILE, SHAPES, WORDS, SuiteTask, digest, filler
from mtagent.eval.shapes_extra import EXTRA_ORDER, build_extra_task
from mtagent.eval.tasks import EvalTask, read_eval_tasks

SUITE_NAMES = ("builtin", "extra")
FIRST_KINDS = ("constant", "error", "constraint")
FIRST_SIZE = 24
LATER_SHAPES = ("control", "first-of-many", "log", "long-prompt", "changed", "json", "yaml", "two", "control",
                "first-of-many", "log", "long-prompt", "changed", "json", "yaml", "two", "control", "control", "plan",
                "plan")
SUITE_SIZE = FIRST_SIZE + len(LATER_SHAPES)
KINDS = (*FIRST_KINDS, *dict.fromkeys(LATER_SHAPES))
DISTANCES = (8, 40, 14, 32, 20, 26, 10, 36, 16, 28, 22, 34, 12, 38, 18, 30, 24, 40, 8, 20, 32, 14, 26, 36)
FACT_NAMES = ("RETRY_LIMIT", "CACHE_TTL", "SHARD_COUNT", "PORT_BASE", "BATCH_WINDOW", "QUEUE_DEPTH", "LEASE_SECONDS",
              "POOL_SIZE")
SUITE_SETTINGS: dict[str, dict[str, Any]] = {
    "context": {"token_limit": 12_000, "summary_reserved_tokens": 1_500, "autocompact_buffer_tokens": 500,
                "compression_preserve_min_tokens": 1_500, "compression_preserve_max_tokens": 3_000,
                "cost_tail_min_tokens": 1_000, "cost_tail_max_tokens": 2_500, "expected_summary_tokens": 600,
                "reattach_max_tokens": 1_500},
    "agent": {"max_steps": 120, "tool_schemas": "full",
              # the test model is priced like a mid-size hosted model so cost figures mean something
              "prices": {"context-test*": {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75}}},
    "subagents": {"enabled": False},
}


def _value(index: int, kind: str) -> str:
    h = int(digest("value", index), 16)
    if kind == "constraint":
        return f"{WORDS[h % len(WORDS)]}-{WORDS[(h // 31) % len(WORDS)]}-{h % 97}"
    if kind == "error":
        return f"E{4000 + h % 5000}"
    return str(100 + h % 9000)


def build_task(index: int) -> SuiteTask:
    """Task ``index`` of the suite (0-based)."""
    if index >= FIRST_SIZE:
        shape = LATER_SHAPES[(index - FIRST_SIZE) % len(LATER_SHAPES)]
        return SHAPES[shape](index, f"b{index + 1:02d}-{shape}")
    kind = FIRST_KINDS[index % len(FIRST_KINDS)]
    fact = FACT_NAMES[index % len(FACT_NAMES)] if kind == "constant" else ("ERROR_CODE" if kind == "error"
                                                                              else "OUTPUT_TAG")
    value = _value(index, kind)
    distance = DISTANCES[index % len(DISTANCES)]
    task_id = f"b{index + 1:02d}-{kind}"
    files = {f"src/mod_{k:02d}.py": filler(index, k) for k in range(distance)}
    files["README.md"] = f"# Task {task_id}\n\nA generated repository of mtagent's built-in evaluation suite.\n"
    head = [f"TASK {task_id}"]
    steps: list[str] = []
    if kind == "constant":
        others = "\n".join(f"{n}_DEFAULT = {int(digest(index, n)[:4], 16) % 500}" for n in FACT_NAMES[:3])
        files["config/limits.py"] = f'"""Limits of the service."""\n\n{fact} = {value}\n{others}\n'
        steps.append("Read `config/limits.py`.")
    elif kind == "error":
        files["tools/probe.py"] = ("import os, sys\n"
                                   f"print('probe failed: connection refused; ERROR_CODE={value}', file=sys.stderr)\n"
                                   "os.remove(__file__)\nsys.exit(1)\n")
        steps.append("Run `python3 tools/probe.py`.")
    else:
        head.append(f"Constraint (stated once; remember it): {fact} = {value}")
    steps.append(f"Read the files `src/mod_{{00..{distance - 1:02d}}}.py`, one by one.")
    if kind == "constant":
        steps.append("Run `rm config/limits.py`.")
    steps.append(f"Write the value of {fact} into `{ANSWER_FILE}`.")
    what = {"constant": f"the value {fact} had in config/limits.py",
            "error": f"the ERROR_CODE the probe printed", "constraint": f"the {fact} I gave you above"}[kind]
    numbered = [f"{i}. {s}" for i, s in enumerate(steps, 1)]
    prompt = "\n".join([*head, "Review this repository step by step; make no other changes.", *numbered,
                        f"The answer is {what}; write only the value. Reply DONE {task_id} when finished."])
    return SuiteTask(task_id, kind, fact, value, distance, files, prompt)


def _check_command(value: str) -> str:
    script = f"import sys; sys.exit(0 if open({ANSWER_FILE!r}).read().strip() == {value!r} else 1)"
    return "python3 -c " + shlex.quote(script)


def suite_size(name: str = "builtin") -> int:
    return SUITE_SIZE if name == "builtin" else len(EXTRA_ORDER)


def suite_task(name: str, index: int) -> SuiteTask:
    """Task ``index`` of suite ``name`` (``builtin`` or ``extra``, the second set)."""
    if name not in SUITE_NAMES:
        raise ValueError(f"unknown suite {name!r}; suites: {', '.join(SUITE_NAMES)}")
    return build_task(index) if name == "builtin" else build_extra_task(index)


def write_builtin_suite(dest: Path, count: int | None = None, name: str = "builtin") -> Path:
    """Write the suite's repositories and its task file (``tasks.jsonl``) under ``dest``; the file's path."""
    repos = dest / "repos"
    lines: list[str] = []
    for index in range(count if count is not None else suite_size(name)):
        task = suite_task(name, index)
        folder = repos / task.task_id
        for rel, text in task.files.items():
            path = folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        lines.append(json.dumps({"id": task.task_id, "task": task.prompt, "cwd": f"repos/{task.task_id}",
                                 "approval": "allow", "settings": SUITE_SETTINGS, "check": _check_command(task.value),
                                 "check_timeout": 30}))
    path = dest / "tasks.jsonl"
    dest.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def builtin_tasks(dest: Path, count: int | None = None, name: str = "builtin") -> list[EvalTask]:
    """Suite ``name`` written under ``dest`` and read back through the task-file checks."""
    return read_eval_tasks(write_builtin_suite(dest, count, name))
