"""Task shapes for the evaluation suites: where a fact sits, and what happens to it before the answer.

The first built-in tasks (``constant``, ``error``, ``constraint``) all hide the fact the same way —
deleted, or said once — which favours a policy that can recall. These shapes vary that, so that no
policy is favoured by construction; each is a function ``(index, task_id) -> SuiteTask``:

* ``first-of-many`` — the fact is in the first of a dozen large files (60–110 lines), all still on
  disk: any policy can look it up again;
* ``log`` — the fact is in the middle of a 900-line build log a one-shot script prints (it removes
  itself): the output is saved, not shown, and only paging it finds the fact;
* ``long-prompt`` — the user states the fact inside a long prompt (30-odd numbered steps), after
  its first 2,000 characters;
* ``changed`` — the fact is read, then a migration changes it (on disk and in its output): the
  answer is the new value, and a stale copy of the old one is a trap;
* ``json`` / ``yaml`` — the fact is ``"NAME": "value"`` in a JSON file (then deleted) or
  ``NAME: value`` in a YAML file (kept);
* ``two`` — two facts from two places (a file, deleted; a probe's output), answered together;
* ``control`` — read a small file, answer at once: every policy must solve it (a policy that
  fails a control is broken, not frugal);
* ``plan`` — four stages planned with ``update_plan``, two marked done far apart: the answer is
  the plan's state at the end, which needs the plan kept through the compactions.

Everything is derived from the index (no randomness, no clock), as in :mod:`mtagent.eval.suite`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass

ANSWER_FILE = "answer.txt"
WORDS = ("amber", "basil", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper", "kelp",
         "lumen", "maple", "nectar", "onyx", "pepper", "quartz", "raven", "sable", "tundra", "umber", "velvet",
         "willow", "xenon", "yarrow", "zephyr")
FILLER_LINES = 28
LOG_LINES = 900


@dataclass(frozen=True, slots=True)
class SuiteTask:
    """One generated task before it is written: its files, prompt and the expected answer.

    ``fact`` names what is asked (``A and B`` for two facts); ``value`` is the answer file's
    expected text, one value a line."""

    task_id: str
    kind: str
    fact: str
    value: str
    distance: int
    files: dict[str, str]
    prompt: str


def digest(*parts: object) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()


def number(index: int, salt: str) -> str:
    return str(100 + int(digest("number", salt, index), 16) % 9000)


def word_value(index: int, salt: str) -> str:
    h = int(digest("word", salt, index), 16)
    return f"{WORDS[h % len(WORDS)]}-{WORDS[(h // 31) % len(WORDS)]}-{h % 97}"


def filler(index: int, k: int) -> str:
    """A module that looks like code and holds other constants (distractors), never the fact."""
    lines = [f'"""Module {k} of task {index}: helpers for the {WORDS[(index + k) % len(WORDS)]} service."""', ""]
    for j in range(FILLER_LINES):
        h = digest("filler", index, k, j)
        word = WORDS[int(h[:4], 16) % len(WORDS)]
        if j % 7 == 0:
            lines.append(f"{word.upper()}_LEVEL_{j} = {int(h[4:8], 16) % 1000}")
        else:
            lines.append(f"def {word}_{k}_{j}(value):  # {h[8:24]}")
            lines.append(f"    return value * {int(h[24:28], 16) % 17 + 1} + {int(h[28:32], 16) % 23}")
    return "\n".join(lines) + "\n"


def fillers(index: int, count: int, start: int = 0) -> dict[str, str]:
    return {f"src/mod_{k:02d}.py": filler(index, k) for k in range(start, start + count)}


def large_table(index: int, k: int, fact: str | None = None, value: str = "") -> str:
    """A 60–110-line data module; the fact (when given) sits near its top, among lookalikes."""
    rows = 60 + int(digest("rows", index, k), 16) % 51
    lines = [f'"""Lookup table {k} of task {index}."""', ""]
    for j in range(rows):
        h = digest("table", index, k, j)
        if fact and j == 3:
            lines.append(f"{fact} = {value}")
        lines.append(f"{WORDS[int(h[:4], 16) % len(WORDS)].upper()}_{k}_{j} = ({int(h[4:8], 16) % 9999}, "
                     f"'{h[8:28]}', {int(h[28:32], 16) % 77})")
    return "\n".join(lines) + "\n"


def one_shot(body: str) -> str:
    """A Python script that prints ``body`` (stdout) and removes itself: its output is seen once."""
    return f"import os\nprint({body!r}, end='')\nos.remove(__file__)\n"


def build_log(index: int, fact: str, value: str) -> str:
    """A 900-line build log with ``fact=value`` in its middle (line 430-ish), not its head or tail."""
    at = 380 + int(digest("log-at", index), 16) % 100
    lines = []
    for j in range(LOG_LINES):
        h = digest("log", index, j)
        if j == at:
            lines.append(f"[{j:04d}] build: resolved {fact}={value} for the release")
        lines.append(f"[{j:04d}] step {WORDS[int(h[:2], 16) % len(WORDS)]}: compiled {h[2:14]}.o in "
                     f"{int(h[14:18], 16) % 900} ms (cache {h[18:24]})")
    return "\n".join(lines) + "\n"


def prompt_of(task_id: str, steps: list[str], what: str, head: tuple[str, ...] = (),
              lines_between: dict[int, str] | None = None) -> str:
    """The step-language prompt (see :mod:`mtagent.agent.context_model`); ``lines_between`` puts a
    line of text after step N (the user saying something in the middle of a long list)."""
    body: list[str] = []
    for i, step in enumerate(steps, 1):
        body.append(f"{i}. {step}")
        if lines_between and i in lines_between:
            body.append(lines_between[i])
    return "\n".join([f"TASK {task_id}", *head, "Review this repository step by step; make no other changes.",
                      *body, f"The answer is {what}; write only the value. Reply DONE {task_id} when finished."])


def reads(first: int, last: int, prefix: str = "src/mod_") -> str:
    return f"Read the files `{prefix}{{{first:02d}..{last:02d}}}.py`, one by one."


def file_fact(index: int, task_id: str, kind: str, fact: str, value: str, distance: int, path: str, text: str,
              what: str, remove: bool = False) -> SuiteTask:
    """The fact in ``path``, read first; then ``distance`` filler modules (then ``rm path`` when ``remove``)."""
    steps = [f"Read `{path}`.", reads(0, distance - 1), *([f"Run `rm {path}`."] if remove else []),
             f"Write the value of {fact} into `{ANSWER_FILE}`."]
    return SuiteTask(task_id, kind, fact, value, distance, {path: text, **fillers(index, distance)},
                     prompt_of(task_id, steps, what))


def first_of_many(index: int, task_id: str) -> SuiteTask:
    fact, value = "SHARD_COUNT", number(index, "first")
    count = 10 + index % 4
    files = {f"data/table_{k:02d}.py": large_table(index, k, fact if k == 0 else None, value) for k in range(count)}
    steps = [reads(0, count - 1, "data/table_"), f"Write the value of {fact} into `{ANSWER_FILE}`."]
    return SuiteTask(task_id, "first-of-many", fact, value, count, files,
                     prompt_of(task_id, steps, f"the value {fact} has in data/table_00.py"))


def log(index: int, task_id: str) -> SuiteTask:
    fact, value = "BUILD_ID", f"b{number(index, 'log')}x{index}"
    distance = 6 + index % 5
    files = {"tools/build.py": one_shot(build_log(index, fact, value)), **fillers(index, distance)}
    steps = ["Run `python3 tools/build.py`.", reads(0, distance - 1),
             f"Write the value of {fact} into `{ANSWER_FILE}`."]
    return SuiteTask(task_id, "log", fact, value, distance, files,
                     prompt_of(task_id, steps, f"the {fact} the build log printed"))


def long_prompt(index: int, task_id: str) -> SuiteTask:
    fact, value = "RELEASE_TAG", word_value(index, "long")
    distance = 30 + index % 8
    steps = [f"Read `src/mod_{k:02d}.py` and note which of its helpers are pure functions." for k in range(distance)]
    steps.append(f"Write the value of {fact} into `{ANSWER_FILE}`.")
    said = {distance - 4: f"(By the way: {fact} = {value}. I say it once; remember it.)"}
    prompt = prompt_of(task_id, steps, f"the {fact} I gave you between the steps", lines_between=said)
    return SuiteTask(task_id, "long-prompt", fact, value, distance, fillers(index, distance), prompt)


def changed(index: int, task_id: str) -> SuiteTask:
    fact, old, new = "QUEUE_DEPTH", number(index, "old"), number(index, "new")
    if new == old:
        new = str(int(old) + 1)
    distance = 8 + index % 6
    config = f'"""Queue settings."""\n\n{fact} = {old}\nQUEUE_NAME = "jobs"\n'
    migrate = ("import pathlib, os\n"
               "p = pathlib.Path('config/queue.py')\n"
               f"p.write_text(p.read_text().replace('{fact} = {old}', '{fact} = {new}'))\n"
               f"print('migrated config/queue.py: {fact} = {new} (before the migration it was {old})')\n"
               "os.remove(__file__)\n")
    files = {"config/queue.py": config, "tools/migrate.py": migrate, **fillers(index, 2 * distance)}
    steps = ["Read `config/queue.py`.", reads(0, distance - 1), "Run `python3 tools/migrate.py`.",
             reads(distance, 2 * distance - 1), f"Write the value of {fact} into `{ANSWER_FILE}`."]
    return SuiteTask(task_id, "changed", fact, new, 2 * distance, files,
                     prompt_of(task_id, steps, f"the value {fact} has after the migration"))


def json_fact(index: int, task_id: str) -> SuiteTask:
    fact, value = "API_VERSION", word_value(index, "json")
    distance = 10 + index % 12
    data = {"SERVICE": "billing", "API_TIMEOUT": int(number(index, "timeout")), fact: value,
            "API_REGION": word_value(index, "region"), "FEATURES": ["audit", "export"]}
    return file_fact(index, task_id, "json", fact, value, distance, "config/service.json",
                     json.dumps(data, indent=2) + "\n", f"the value {fact} had in config/service.json", remove=True)


def yaml_fact(index: int, task_id: str) -> SuiteTask:
    fact, value = "REGION_CODE", word_value(index, "yaml")
    distance = 10 + index % 12
    text = (f"service: billing\nreplicas: {index % 5 + 2}\n{fact}: {value}\nREGION_NAME: {WORDS[index % 26]}\n"
            "limits:\n  cpu: 2\n  memory: 4Gi\n")
    return file_fact(index, task_id, "yaml", fact, value, distance, "deploy/values.yaml", text,
                     f"the {fact} of deploy/values.yaml")


def two_facts(index: int, task_id: str) -> SuiteTask:
    first, second = "POOL_SIZE", "ERROR_CODE"
    a, b = number(index, "pool"), f"E{4000 + int(number(index, 'err')) % 5000}"
    distance = 10 + index % 10
    files = {"config/pool.py": f'"""Pool."""\n\n{first} = {a}\nPOOL_NAME = "main"\n',
             "tools/probe.py": one_shot(f"probe failed: connection refused; {second}={b}\n"),
             **fillers(index, distance)}
    steps = ["Read `config/pool.py`.", "Run `python3 tools/probe.py`.", reads(0, distance - 1),
             "Run `rm config/pool.py`.", f"Write the values of {first} and {second} into `{ANSWER_FILE}`."]
    return SuiteTask(task_id, "two", f"{first} and {second}", f"{a}\n{b}", distance, files,
                     prompt_of(task_id, steps, f"{first} from config/pool.py and the {second} the probe printed, "
                               "one a line"))


def control(index: int, task_id: str) -> SuiteTask:
    """Short: no compaction needed; the fact is in a file, as JSON, or said in the prompt."""
    variant = index % 3
    if variant == 0:
        fact, value = "RETRY_LIMIT", number(index, "control")
        files = {"config/limits.py": f'"""Limits."""\n\n{fact} = {value}\n'}
        steps = ["Read `config/limits.py`.", f"Write the value of {fact} into `{ANSWER_FILE}`."]
        return SuiteTask(task_id, "control", fact, value, 0, files,
                         prompt_of(task_id, steps, f"the value of {fact} in config/limits.py"))
    if variant == 1:
        fact, value = "CACHE_TTL", number(index, "control")
        return file_fact(index, task_id, "control", fact, value, 2, "config/cache.json",
                         json.dumps({"CACHE_NAME": "edge", fact: value}, indent=2) + "\n",
                         f"the value of {fact} in config/cache.json")
    fact, value = "OUTPUT_TAG", word_value(index, "control")
    steps = [reads(0, 2), f"Write the value of {fact} into `{ANSWER_FILE}`."]
    return SuiteTask(task_id, "control", fact, value, 3, fillers(index, 3),
                     prompt_of(task_id, steps, f"the {fact} I gave you above",
                               head=(f"Constraint (stated once; remember it): {fact} = {value}",)))


def plan(index: int, task_id: str) -> SuiteTask:
    """Stages planned with ``update_plan`` and marked done far apart: the answer is the plan's state
    at the end, which only a plan kept through the compactions still shows."""
    stages = [f"{verb} {WORDS[(index + k) % len(WORDS)]}" for k, verb in enumerate(("audit", "check", "tidy", "sign"))]
    chunk = 8 + index % 5
    steps = ["Plan the stages " + ", ".join(f"`{s}`" for s in stages) + ".", reads(0, chunk - 1),
             f"Mark the stage `{stages[0]}` done.", reads(chunk, 2 * chunk - 1), f"Mark the stage `{stages[2]}` done.",
             reads(2 * chunk, 3 * chunk - 1), f"Write the stages' statuses into `{ANSWER_FILE}`."]
    value = "\n".join(f"{s}: {'done' if k in (0, 2) else 'pending'}" for k, s in enumerate(stages))
    return SuiteTask(task_id, "plan", "the plan", value, 3 * chunk, fillers(index, 3 * chunk),
                     prompt_of(task_id, steps, "each stage and its status (done or pending), one a line, as "
                               "`stage: status`"))


Shape = Callable[[int, str], SuiteTask]
SHAPES: dict[str, Shape] = {"first-of-many": first_of_many, "log": log, "long-prompt": long_prompt,
                            "changed": changed, "json": json_fact, "yaml": yaml_fact, "two": two_facts,
                            "control": control, "plan": plan}
