"""The second task set (``mtagent eval --suite extra``): shapes the built-in suite does not have.

Written apart from the built-in suite (and not tuned on), so a policy tuned to that suite can be
checked on tasks it has not seen. Same step language and window, other shapes:

* ``huge-file`` — one file of about 11K tokens, nearly the window, the fact near its end: a read
  that does not fit must be bounded and paged, not re-sent after every compaction;
* ``repeat-read`` — the task reads the same file twice, far apart (the second read is answered
  "unchanged"): a model or engine that loops on it never finishes;
* ``grep-only`` — the fact is in a file the task never names, deep in a package: it must be
  looked up;
* ``toml`` / ``env`` — ``NAME = "value"`` in a TOML file, ``NAME=value`` in a ``.env``; both
  deleted;
* ``shell-outputs`` — the fact is in the first of several medium outputs of one-shot scripts;
* ``late-constraint`` — the user states the fact at the very end of a long prompt;
* ``corrected`` — the user states a value, then corrects it further down the prompt;
* ``three`` — three facts from three places, answered together;
* ``control`` — short, every policy must solve it.
"""

from __future__ import annotations

from mtagent.eval.shapes import (ANSWER_FILE, WORDS, SuiteTask, digest, file_fact, fillers, number, one_shot,
                                 prompt_of, reads, word_value)

HUGE_LINES = 450


def huge_file(index: int, task_id: str) -> SuiteTask:
    fact, value = "CATALOG_VERSION", number(index, "huge")
    at = HUGE_LINES - 40 - index % 20
    lines = [f'"""The product catalog of task {index}: one row per item."""', ""]
    for j in range(HUGE_LINES):
        h = digest("huge", index, j)
        if j == at:
            lines.append(f"{fact} = {value}")
        lines.append(f"ITEM_{j:04d} = ('{WORDS[int(h[:2], 16) % 26]}', {int(h[2:6], 16) % 9999}, '{h[6:22]}')")
    return file_fact(index, task_id, "huge-file", fact, value, 4, "data/catalog.py", "\n".join(lines) + "\n",
                     f"the value {fact} has in data/catalog.py")


def repeat_read(index: int, task_id: str) -> SuiteTask:
    fact, value = "LEASE_SECONDS", number(index, "repeat")
    distance = 8 + index % 6
    files = {"config/lease.py": f'"""Lease."""\n\n{fact} = {value}\nLEASE_NAME = "main"\n',
             **fillers(index, 2 * distance)}
    steps = ["Read `config/lease.py`.", reads(0, distance - 1), "Read `config/lease.py`.",
             reads(distance, 2 * distance - 1), f"Write the value of {fact} into `{ANSWER_FILE}`."]
    return SuiteTask(task_id, "repeat-read", fact, value, 2 * distance, files,
                     prompt_of(task_id, steps, f"the value {fact} has in config/lease.py"))


def grep_only(index: int, task_id: str) -> SuiteTask:
    fact, value = "PORT_BASE", number(index, "grep")
    files = {f"pkg/{WORDS[index % 26]}/net/settings.py": f'"""Network settings."""\n\n{fact} = {value}\n',
             **fillers(index, 6)}
    steps = [reads(0, 5), f"Write the value of {fact} into `{ANSWER_FILE}`."]
    return SuiteTask(task_id, "grep-only", fact, value, 6, files,
                     prompt_of(task_id, steps, f"the value of {fact}, set somewhere under pkg/"))


def toml_fact(index: int, task_id: str) -> SuiteTask:
    fact, value = "BATCH_WINDOW", word_value(index, "toml")
    distance = 12 + index % 10
    text = f'[service]\nname = "ingest"\n{fact} = "{value}"\nworkers = {index % 7 + 1}\n'
    return file_fact(index, task_id, "toml", fact, value, distance, "settings.toml", text,
                     f"the value {fact} had in settings.toml (without quotes)", remove=True)


def env_fact(index: int, task_id: str) -> SuiteTask:
    fact, value = "DEPLOY_SLOT", word_value(index, "env")
    distance = 12 + index % 10
    return file_fact(index, task_id, "env", fact, value, distance, ".env",
                     f"APP_NAME=ingest\n{fact}={value}\nLOG_LEVEL=info\n", f"the value {fact} had in .env", remove=True)


def shell_outputs(index: int, task_id: str) -> SuiteTask:
    fact, value = "SCHEMA_HASH", f"h{number(index, 'schema')}"
    count = 6 + index % 4
    files: dict[str, str] = {}
    for k in range(count):
        rows = [f"check {k}.{j}: {digest('out', index, k, j)[:24]} ok" for j in range(80)]
        if k == 0:
            rows.insert(37, f"check 0.x: {fact}={value}")
        files[f"tools/check_{k}.py"] = one_shot("\n".join(rows) + "\n")
    steps = [f"Run `python3 tools/check_{k}.py`." for k in range(count)]
    steps.append(f"Write the value of {fact} into `{ANSWER_FILE}`.")
    return SuiteTask(task_id, "shell-outputs", fact, value, count, files,
                     prompt_of(task_id, steps, f"the {fact} the first check printed"))


def late_constraint(index: int, task_id: str) -> SuiteTask:
    fact, value = "OUTPUT_TAG", word_value(index, "late")
    distance = 32 + index % 6
    steps = [f"Read `src/mod_{k:02d}.py` and check its helpers are pure." for k in range(distance)]
    steps.append(f"Write the value of {fact} into `{ANSWER_FILE}`.")
    prompt = prompt_of(task_id, steps, f"the {fact} I give you at the end") + \
        f"\nOne more thing, said once: {fact} = {value}."
    return SuiteTask(task_id, "late-constraint", fact, value, distance, fillers(index, distance), prompt)


def corrected(index: int, task_id: str) -> SuiteTask:
    fact, first, value = "TARGET_ENV", word_value(index, "first"), word_value(index, "second")
    distance = 14 + index % 10
    steps = [reads(0, distance - 1), f"Write the value of {fact} into `{ANSWER_FILE}`."]
    prompt = prompt_of(task_id, steps, f"the corrected {fact}",
                       head=(f"Constraint (stated once; remember it): {fact} = {first}",
                             f"Correction, this one counts: {fact} = {value}"))
    return SuiteTask(task_id, "corrected", fact, value, distance, fillers(index, distance), prompt)


def three_facts(index: int, task_id: str) -> SuiteTask:
    names = ("POOL_SIZE", "ERROR_CODE", "OWNER_TEAM")
    a, b, c = number(index, "p3"), f"E{4000 + int(number(index, 'e3')) % 5000}", word_value(index, "owner")
    distance = 8 + index % 8
    files = {"config/pool.py": f'"""Pool."""\n\n{names[0]} = {a}\n',
             "tools/probe.py": one_shot(f"probe failed; {names[1]}={b}\n"), **fillers(index, distance)}
    steps = ["Read `config/pool.py`.", "Run `python3 tools/probe.py`.", reads(0, distance - 1),
             "Run `rm config/pool.py`.", f"Write the values of {names[0]} and {names[1]} and {names[2]} into "
             f"`{ANSWER_FILE}`."]
    return SuiteTask(task_id, "three", " and ".join(names), f"{a}\n{b}\n{c}", distance, files,
                     prompt_of(task_id, steps, "the three values, one a line",
                               head=(f"Constraint (stated once; remember it): {names[2]} = {c}",)))


def control(index: int, task_id: str) -> SuiteTask:
    fact, value = "RETRY_LIMIT", number(index, "xcontrol")
    return file_fact(index, task_id, "control", fact, value, 2, "settings.toml", f'[retry]\n{fact} = "{value}"\n',
                     f"the value of {fact} in settings.toml (without quotes)")


EXTRA_SHAPES = {"huge-file": huge_file, "repeat-read": repeat_read, "grep-only": grep_only, "toml": toml_fact,
                "env": env_fact, "shell-outputs": shell_outputs, "late-constraint": late_constraint,
                "corrected": corrected, "three": three_facts, "control": control}
EXTRA_ORDER = (*EXTRA_SHAPES, *EXTRA_SHAPES)


def build_extra_task(index: int) -> SuiteTask:
    """Task ``index`` of the second set (0-based): each shape twice."""
    shape = EXTRA_ORDER[index % len(EXTRA_ORDER)]
    return EXTRA_SHAPES[shape](index, f"x{index + 1:02d}-{shape}")
