"""Recall on facts that compaction removed: the shapes where it missed (issue #38).

Sessions of the context-test model run through the real engine (the eval worker, policy
``mtagent``) at a small window on generated tasks whose fact leaves the view:

* ``file`` — ``NAME = v`` in the first of several 60–110-line config files full of other
  constants (distractors), then filler reads, then the files are removed;
* ``log`` — ``ERROR_CODE=E…`` on one line of a 900-line build log a self-deleting script printed
  (saved as an artifact: the shell's preview shows its head and tail);
* ``prompt`` — ``NAME = v`` stated by the user in a long task (every hand-off quotes the task).

After each session, the fact's name is recalled from the project's index exactly as the model's
``recall(query=NAME)`` call is (the index holds the whole session, the model's own recall calls
too), and the rendered top-5 must show ``NAME = v``. The figure is the share of tasks whose
recall shows the value (``hit``) and where the first hit holding it ranks (mean reciprocal rank).
"""

from __future__ import annotations

import hashlib
import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SHAPES = ("file", "log", "prompt")
WORDS = ("amber", "basil", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper")
NAMES = ("LEASE_SECONDS", "POOL_SIZE", "SHARD_COUNT", "QUEUE_DEPTH", "BATCH_WINDOW", "PORT_BASE")
WINDOW = 12_000


def _h(*parts: object) -> int:
    return int(hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:12], 16)


@dataclass(frozen=True, slots=True)
class FactTask:
    task_id: str
    shape: str
    fact: str
    value: str
    files: dict[str, str]
    prompt: str


def _config_file(index: int, k: int, lines: int, fact: tuple[str, str] | None) -> str:
    out = [f'"""Settings group {k} of service {index}."""', ""]
    at = 2 + _h("at", index, k) % max(1, lines - 4)
    for j in range(lines - 2):
        word = WORDS[_h("w", index, k, j) % len(WORDS)].upper()
        out.append(f"{word}_{k}_{j} = {_h('v', index, k, j) % 9000 + 100}  # {word.lower()} tuning")
    if fact is not None:
        out[at] = f"{fact[0]} = {fact[1]}"
    return "\n".join(out) + "\n"


def _filler(index: int, k: int) -> str:
    lines = [f'"""Helpers {k} of task {index}."""']
    for j in range(24):
        lines.append(f"def {WORDS[(index + j) % len(WORDS)]}_{k}_{j}(value):")
        lines.append(f"    return value * {_h('f', index, k, j) % 17 + 1}")
    return "\n".join(lines) + "\n"


def build(index: int) -> FactTask:
    shape = SHAPES[index % len(SHAPES)]
    fact = "ERROR_CODE" if shape == "log" else NAMES[index % len(NAMES)]
    value = f"E{4000 + _h('e', index) % 5000}" if shape == "log" else str(100 + _h("val", index) % 9000)
    task_id = f"f{index + 1:02d}-{shape}"
    distance = 14 + _h("d", index) % 10
    files = {f"src/mod_{k:02d}.py": _filler(index, k) for k in range(distance)}
    head = [f"TASK {task_id}"]
    steps: list[str] = []
    if shape == "file":
        groups = 3 + index % 3
        for k in range(groups):
            lines = 60 + _h("lines", index, k) % 51
            files[f"config/group_{k}.py"] = _config_file(index, k, lines, (fact, value) if k == 0 else None)
        steps.append(f"Read the files `config/group_{{0..{groups - 1}}}.py`, one by one.")
    elif shape == "log":
        at = 100 + _h("line", index) % 700
        files["tools/build.py"] = (
            "import os\n"
            f"for i in range(900):\n"
            f"    print(f'[build {{i:04d}}] step {{i}} compiled module_{{i % 97}} in {{(i * 37) % 1000}} ms')\n"
            f"    if i == {at}:\n"
            f"        print('[build] linker warning: ERROR_CODE={value} (unresolved symbol)')\n"
            "os.remove(__file__)\n")
        steps.append("Run `python3 tools/build.py`.")
    else:
        head += [f"Context: the team's notes for step {i}: keep module {i} as it is." for i in range(1, 25)]
        head.insert(12, f"Constraint (stated once; remember it): {fact} = {value}")
    steps.append(f"Read the files `src/mod_{{00..{distance - 1:02d}}}.py`, one by one.")
    if shape == "file":
        steps.append("Run `rm -r config`.")
    steps.append(f"Write the value of {fact} into `answer.txt`.")
    numbered = [f"{i}. {s}" for i, s in enumerate(steps, 1)]
    prompt = "\n".join([*head, "Review this repository step by step; make no other changes.", *numbered,
                        f"Reply DONE {task_id} when finished."])
    return FactTask(task_id, shape, fact, value, files, prompt)


def write_tasks(dest: Path, count: int) -> tuple[Path, list[FactTask]]:
    from mtagent.eval.suite import SUITE_SETTINGS

    tasks = [build(i) for i in range(count)]
    lines = []
    for task in tasks:
        for rel, text in task.files.items():
            path = dest / "repos" / task.task_id / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        check = "python3 -c " + shlex.quote(f"import sys; sys.exit(0 if open('answer.txt').read().strip() == "
                                            f"{task.value!r} else 1)")
        lines.append(json.dumps({"id": task.task_id, "task": task.prompt, "cwd": f"repos/{task.task_id}",
                                 "approval": "allow", "settings": SUITE_SETTINGS, "check": check}))
    path = dest / "tasks.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, tasks


def probe(project: Path, task: FactTask, session: str) -> tuple[bool, int | None]:
    """Recall ``task.fact`` from the project's index as the model does; (value in the top 5, its rank).

    The model's call is in the transcript (so in the index) before the tool runs: it is added
    first, as the session's sink would, so a recall that finds its own call shows it."""
    from langchain_core.messages import AIMessage

    from mtagent.context.recall import Recaller, RecallIndexer
    from mtagent.session.schema import message_to_record

    indexer = RecallIndexer(project, store=_store_of(session))
    try:
        call = AIMessage("", id=f"probe-{task.task_id}",
                         tool_calls=[{"id": "probe-call", "name": "recall", "args": {"query": task.fact}}])
        indexer.add_record(message_to_record(call), session)
        hits = Recaller(indexer).search(task.fact, k=5)
    finally:
        indexer.close()
    needle = f"{task.fact} = {task.value}", f"{task.fact}={task.value}"
    rank = next((n for n, h in enumerate(hits, 1) if any(x in h.snippet for x in needle)), None)
    return rank is not None, rank


def _store_of(session: str) -> Any:
    """The recall index that holds ``session``: the eval worker runs a unit in a lane folder (its
    path is not the scratch copy's), so the index is found by the session it holds."""
    from mtagent import paths
    from mtagent.context.recall.store import RecallStore

    for candidate in sorted(paths.mtagent_home().glob("projects/*/recall.sqlite")):
        store = RecallStore(candidate)
        if store.execute("SELECT 1 FROM items WHERE session = ? LIMIT 1", (session,)):
            return store
        store.close()
    raise RuntimeError(f"no recall index holds session {session}")


def run(dest: Path, count: int) -> list[dict[str, Any]]:
    from mtagent.eval.policies import load_policy
    from mtagent.eval.tasks import read_eval_tasks
    from mtagent.eval.worker import EvalUnit, run_unit, session_id_for

    path, built = write_tasks(dest, count)
    rows = []
    for task, eval_task in zip(built, read_eval_tasks(path), strict=True):
        unit = EvalUnit(load_policy("mtagent"), (eval_task,), str(dest / "scratch"), model="context-test:", slot="p0")
        record = run_unit(unit)[0]
        project = dest / "scratch" / "p0" / eval_task.id / eval_task.id
        hit, rank = probe(project, task, session_id_for(unit))
        rows.append({"task": task.task_id, "shape": task.shape, "hit": hit, "rank": rank,
                     "solved": bool(record.get("solved")), "calls": record.get("calls"),
                     "compactions": record.get("compactions"), "recalls": record.get("recalls")})
    return rows
