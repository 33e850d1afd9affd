"""Mutation testing of the engine's critical modules: do the tests notice a small realistic bug?

A small AST mutator, in this script so a run needs nothing but pytest: each mutant is one change to
one module — a comparison flipped, an integer constant moved by one, ``and``/``or`` swapped, a
condition negated or a ``not`` dropped, ``+``/``-`` swapped, a return value replaced by ``None``,
a statement removed. Mutants are applied one at a time to a COPY of ``src/`` in a temp dir (the
shared tree is never touched) and the module's own tests run there (``pytest -x -q`` with
``PYTHONPATH`` on the copy). A mutant is *killed* when a test fails (or the run times out) and
*survives* when all pass. The score is killed / (mutants − equivalent ones).

Sites are sampled deterministically (``--seed``) up to ``--max-mutants`` per module, because CPU
is scarce: a full run of every site of every module takes hours. ``--quick`` runs one module.

    python benchmarks/mutation.py --quick
    python benchmarks/mutation.py --module read_state --module artifacts --max-mutants 40
    python benchmarks/mutation.py --list

docs/mutation.md explains how to read a survivor and kill it.
"""

from __future__ import annotations

import argparse
import ast
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"


@dataclass(frozen=True)
class Target:
    """One critical module, the tests that cover it, and (optionally) which functions to mutate."""

    source: str  # relative to src/mtagent
    tests: tuple[str, ...]
    only: tuple[str, ...] = ()  # function/class names; empty = the whole module


TARGETS: dict[str, Target] = {
    "invariants": Target("context/invariants.py",
                         ("tests/context/test_invariants.py", "tests/context/test_planted_split.py")),
    "compactor": Target("context/compaction/compactor.py",
                        ("tests/context/compaction/test_compactor.py", "tests/context/compaction/test_planted_ptl.py")),
    "policy": Target("context/compaction/policy.py",
                     ("tests/context/compaction/test_policy.py", "tests/context/compaction/test_round_trigger.py")),
    "microcompact": Target("context/compaction/microcompact.py",
                           ("tests/context/compaction/test_microcompact.py",)),
    "budgeter": Target("context/tool_results/budgeter.py",
                       ("tests/context/tool_results/test_budgeter_mutants.py",
                        "tests/context/tool_results/test_tool_results.py")),
    "session_memory": Target("context/session_memory/triggers.py",
                             ("tests/context/session_memory/test_session_memory.py",)),
    "transcript": Target("session/transcript.py",
                         ("tests/session/test_transcript_writer.py", "tests/session/test_transcript_schema.py")),
    "artifacts": Target("session/artifacts.py",
                        ("tests/session/test_planted_artifacts.py", "tests/session/test_artifacts.py")),
    "workspace": Target("tools/workspace.py",
                        ("tests/tools/test_workspace.py", "tests/security/test_workspace_escapes.py")),
    "safe_fs": Target("safe_open.py",
                      ("tests/tools/test_workspace.py", "tests/security/test_workspace_escapes.py",
                       "tests/tools/test_edit_write.py")),
    "read_state": Target("tools/read_state.py",
                         ("tests/tools/test_planted_read_state.py", "tests/tools/test_read_file.py",
                          "tests/tools/test_edit_write.py")),
    "approval": Target("agent/approval.py",
                       ("tests/agent/test_approval_policy.py", "tests/security/test_approval_bypasses.py")),
    "at_most_once": Target("context/engine_session.py",
                           ("tests/context/test_engine_session_mutants.py", "tests/agent/test_planted_at_most_once.py",
                            "tests/context/test_front_door.py"),
                           only=("ToolGuard", "tool_started")),
    "redaction": Target("redaction.py", ("tests/test_redaction.py", "tests/security/test_secret_canaries.py")),
    "replay_cost": Target("replay/cost.py", ("tests/replay/test_cost_probes.py", "tests/replay/test_cost_aware.py")),
}
QUICK_MODULE = "artifacts"
QUICK_MUTANTS = 6  # ~35-45 s with the baseline run on the shared machine under load

# Mutants that cannot change behaviour, keyed by (module, mutant description): excluded from the
# score, listed with the reason. Add one only after reading the code and convincing yourself.
EQUIVALENT: dict[tuple[str, str], str] = {
    ("approval", "L36 remove Assign"): "`Decision = Literal[...]` is used only in annotations, which "
    "`from __future__ import annotations` leaves unevaluated (dataclass fields included); no module imports it",
    ("approval", "L37 remove Assign"): "`Mode = Literal[...]`: only in annotations, as for Decision",
    ("approval", "L145 1->2"): "a deny rank of 2 instead of 1 still ranks above every other decision's 0; "
    "only the order of ranks matters",
    ("approval", "L145 0->-1"): "every non-deny rank becomes -1 instead of 0: still equal to each other and "
    "below deny's 1, so the same pattern wins",
    ("approval", "L168 remove Return"): "shell_words' `except ValueError: return None` is its last statement; "
    "without it the function falls off the end and returns None all the same",
    ("replay_cost", "L126 4096->4097"): "_common_prefix_tokens' chunk size only sets how many characters are "
    "compared at once before the character-by-character scan; the prefix found is the same",
    ("replay_cost", "L126 4096->4095"): "the chunk size of the prefix scan, as above",
    ("replay_cost", "L128 Add->Sub"): "a mutated slice of the chunk scan (`a[n:n - step]`) equals the other "
    "side's chunk only when the texts share that whole chunk or one ends inside it (then n is cut to the "
    "limit); it never advances past a difference, and the character scan finds the same prefix",
    ("replay_cost", "L131 remove Assign"): "`n = limit` after the chunk scan: n overshoots the limit only when "
    "both texts end inside the same equal chunk (same length), so a[:n] is a[:limit] all the same",
    ("replay_cost", "L135 remove If"): "`if n == 0: return 0` removed: count_text_tokens('') is 0, and "
    "max(0, 0 - 1) is 0 all the same",
    ("replay_cost", "L135 0->1"): "`if n == 1: return 0`: one common character is one token, and "
    "max(0, 1 - 1) is 0 too; n == 0 then reaches max(0, 0 - 1) = 0",
    ("replay_cost", "L135 0->-1"): "`if n == -1` never holds; n == 0 reaches max(0, count('') - 1) = 0",
    ("replay_cost", "L136 remove Return"): "without `return 0`, n == 0 reaches max(0, count('') - 1) = 0",
    ("replay_cost", "L137 0->-1"): "max(-1, count - 1): n >= 1 there (n == 0 returned above), so count >= 1 "
    "and count - 1 >= 0 either way",
    ("safe_fs", "L144 remove Expr"): "os.set_blocking(fd, True) after _check_opened: only a regular file gets "
    "there, and O_NONBLOCK changes nothing for regular-file reads and writes",
    ("approval", "L146 2->3"): "`rank > best[:3]`: the 3-tuple's first two items are the rank; a 2-tuple "
    "equal to them compares smaller, exactly as `rank > best[:2]` is False for equal ranks",
    ("redaction", "L25 negate condition"): "`if TYPE_CHECKING:` guards the annotation-only Settings import; "
    "negated, mtagent.config is imported at run time, which redacts nothing differently",
    ("redaction", "L25 remove If"): "`if TYPE_CHECKING:` removed: the annotation-only import is simply gone",
    ("replay_cost", "L28 negate condition"): "`if TYPE_CHECKING:` guards an import used only in annotations; "
    "negated, summarizer is imported at run time too, which changes no price",
    ("replay_cost", "L28 remove If"): "`if TYPE_CHECKING:` removed: the annotation-only import is simply gone",
    ("replay_cost", "L40 0->1"): "CacheModel.min_cached_tokens default 0 vs 1: a shared count of 0 caches 0 "
    "either way, and any count >= 1 passes both thresholds",
    ("replay_cost", "L40 0->-1"): "min_cached_tokens default 0 vs -1: shared counts are never negative "
    "(PrefixCache clamps to 0..total), so both thresholds pass every count",
    ("compactor", "L59 remove Assign"): "`Trigger = Literal[...]` is used only in annotations, which "
    "`from __future__ import annotations` never evaluates; no module imports it",
    ("compactor", "L377 remove If"): "unreachable: `_pivot` returns a group start at or before the message's "
    "index, which is < len(messages), so the `from` tail always holds at least that message",
    ("microcompact", "L43 remove Assign"): "`Trigger = Literal[...]` is used only in annotations (never "
    "evaluated) and imported nowhere",
    ("microcompact", "L173 1->2"): "`word.split(':', 2)[0]` is the text before the first ':' exactly as "
    "`split(':', 1)[0]` is",
    ("microcompact", "L140 remove Expr"): "`targets.discard(None)` is defensive: compactable_results only "
    "yields messages whose id is truthy, so None is never in targets",
    ("policy", "L108 remove Return"): "parse_context_length_gap's closing `return None`: without it the "
    "function falls off the end and returns None all the same",
    ("policy", "L136 remove AnnAssign"): "`_on_disable` is a dead field: nothing reads or writes it",
}

_FLIP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.LtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
    ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}
_REMOVABLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Raise, ast.Return, ast.If, ast.For,
              ast.With, ast.Try, ast.Delete)


@dataclass(frozen=True)
class Site:
    """Where a mutant goes: the n-th node of a kind in walk order, and what it does there."""

    index: int  # position in the module's ordered site list
    line: int
    operator: str
    description: str


@dataclass
class MutantOutcome:
    site: Site
    killed: bool
    seconds: float
    equivalent: str | None = None


@dataclass
class ModuleResult:
    name: str
    outcomes: list[MutantOutcome] = field(default_factory=list)
    total_sites: int = 0
    baseline_ok: bool = True
    baseline_output: str = ""

    @property
    def counted(self) -> list[MutantOutcome]:
        return [o for o in self.outcomes if o.equivalent is None]

    @property
    def score(self) -> float:
        counted = self.counted
        return sum(o.killed for o in counted) / len(counted) if counted else 1.0


def _docstring_nodes(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = getattr(node, "body", [])
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                out.add(id(body[0]))
    return out


def _in_scope(tree: ast.Module, only: tuple[str, ...]) -> list[ast.AST]:
    """The nodes mutants may touch: those inside the named functions/classes (or all)."""
    if not only:
        return [tree]
    return [n for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name in only]


def _skip_node(node: ast.AST) -> bool:
    """Annotations, imports, ``__all__`` and logging are not behaviour worth mutating."""
    return isinstance(node, (ast.Import, ast.ImportFrom)) or (
        isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets))


def _walk(roots: list[ast.AST]) -> Iterator[ast.AST]:
    """Nodes in a stable order, skipping annotations and type-only parts."""
    seen: set[int] = set()
    stack = list(reversed(roots))
    while stack:
        node = stack.pop()
        if id(node) in seen or _skip_node(node):
            continue
        seen.add(id(node))
        yield node
        children = []
        for name, value in ast.iter_fields(node):
            if name in ("annotation", "returns", "decorator_list", "type_comment"):
                continue
            items = value if isinstance(value, list) else [value]
            children += [v for v in items if isinstance(v, ast.AST)]
        stack.extend(reversed(children))


def _candidates(node: ast.AST, docstrings: set[int]) -> list[tuple[str, str]]:
    """The (operator, description) mutants possible at ``node``."""
    out: list[tuple[str, str]] = []
    line = getattr(node, "lineno", 0)
    if isinstance(node, ast.Compare):
        for k, op in enumerate(node.ops):
            if type(op) in _FLIP:
                out.append(("compare", f"L{line} {type(op).__name__}->{_FLIP[type(op)].__name__} #{k}"))
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        out += [("const", f"L{line} {node.value}->{node.value + 1}"), ("const", f"L{line} {node.value}->{node.value - 1}")]
    elif isinstance(node, ast.BoolOp):
        out.append(("boolop", f"L{line} {type(node.op).__name__}->{'Or' if isinstance(node.op, ast.And) else 'And'}"))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        out.append(("not", f"L{line} drop not"))
    elif isinstance(node, (ast.If, ast.While, ast.IfExp)):
        out.append(("negate", f"L{line} negate condition"))
    elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        out.append(("arith", f"L{line} {type(node.op).__name__}->{'Sub' if isinstance(node.op, ast.Add) else 'Add'}"))
    if isinstance(node, ast.Return) and node.value is not None and not (
            isinstance(node.value, ast.Constant) and node.value.value is None):
        out.append(("return", f"L{line} return None"))
    if isinstance(node, _REMOVABLE) and id(node) not in docstrings:
        out.append(("remove", f"L{line} remove {type(node).__name__}"))
    return out


def _site_nodes(tree: ast.Module, only: tuple[str, ...]) -> Iterator[tuple[ast.AST, str, str]]:
    """(node, operator, description) of every site in walk order: a site's index is its position here."""
    docstrings = _docstring_nodes(tree)
    for node in _walk(_in_scope(tree, only)):
        for operator, description in _candidates(node, docstrings):
            yield node, operator, description


def list_sites(source: str, only: tuple[str, ...]) -> list[Site]:
    return [Site(index, getattr(node, "lineno", 0), operator, description)
            for index, (node, operator, description) in enumerate(_site_nodes(ast.parse(source), only))]


def _apply(node: ast.AST, operator: str, description: str) -> ast.AST | None:
    """Mutate ``node`` in place (or return its replacement)."""
    if operator == "compare":
        k = int(description.rsplit("#", 1)[1])
        assert isinstance(node, ast.Compare)
        node.ops[k] = _FLIP[type(node.ops[k])]()
    elif operator == "const":
        assert isinstance(node, ast.Constant)
        node.value = int(description.rsplit("->", 1)[1])
    elif operator == "boolop":
        assert isinstance(node, ast.BoolOp)
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif operator == "not":
        assert isinstance(node, ast.UnaryOp)
        return node.operand
    elif operator == "negate":
        assert isinstance(node, (ast.If, ast.While, ast.IfExp))
        node.test = ast.UnaryOp(op=ast.Not(), operand=node.test)
    elif operator == "arith":
        assert isinstance(node, ast.BinOp)
        node.op = ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()
    elif operator == "return":
        assert isinstance(node, ast.Return)
        node.value = ast.Constant(value=None)
    elif operator == "remove":
        return ast.Pass()
    return None


class _Mutator(ast.NodeTransformer):
    def __init__(self, target: Site, only: tuple[str, ...], tree: ast.Module) -> None:
        self.node, operator, description = next(itertools.islice(_site_nodes(tree, only), target.index, None))
        assert (operator, description) == (target.operator, target.description)
        self.site = target

    def generic_visit(self, node: ast.AST) -> ast.AST:
        super().generic_visit(node)
        if node is self.node:
            replacement = _apply(node, self.site.operator, self.site.description)
            if replacement is not None:
                return replacement
        return node


def mutate(source: str, site: Site, only: tuple[str, ...]) -> str:
    tree = ast.parse(source)
    mutator = _Mutator(site, only, tree)
    new = mutator.visit(tree)
    ast.fix_missing_locations(new)
    return ast.unparse(new)


_WARM = ("pytest", "pydantic", "pydantic_settings", "hypothesis", "langchain_core.messages",
         "langchain_core.tools", "langchain_core.language_models", "langgraph.graph", "tiktoken")


def _warm_up() -> None:
    """Import the heavy third-party libraries once, so each forked mutant run skips their import
    (most of a small test file's time on a busy machine). ``mtagent`` itself is never imported
    here: each child imports it fresh from its mutated copy."""
    import importlib

    for name in _WARM:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    assert "mtagent" not in sys.modules


def _module_name(source: str) -> str:
    """``context/tokens.py`` → ``mtagent.context.tokens`` (a package's ``__init__`` → the package)."""
    parts = ["mtagent", *Path(source).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_time_imports(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """Import statements that run when the module is imported: not those inside functions nor
    under ``if TYPE_CHECKING``."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            if "TYPE_CHECKING" not in ast.unparse(node.test):
                yield from _import_time_imports(node.body)
            yield from _import_time_imports(node.orelse)
        elif isinstance(node, (ast.Try, ast.With, ast.ClassDef)):
            for part in ("body", "orelse", "finalbody"):
                yield from _import_time_imports(getattr(node, part, []))
            for handler in getattr(node, "handlers", []):
                yield from _import_time_imports(handler.body)


def _imports_of(name: str, path: Path) -> set[str]:
    """The ``mtagent`` modules importing ``name`` imports: its import-time import statements (a
    name imported from a package counts as a possible submodule) and its parent packages."""
    out = {".".join(name.split(".")[:k]) for k in range(1, name.count(".") + 1)}
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in _import_time_imports(ast.parse(path.read_text(encoding="utf-8")).body):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        else:
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names}
    return {m for m in out if m == "mtagent" or m.startswith("mtagent.")}


def _independent_modules(copy_src: Path, target: str, loaded: list[str]) -> list[str]:
    """The ``mtagent`` modules the baseline run imported whose import cannot import ``target``, so
    they cannot hold the unmutated code; what they import lazily (in a function, by a package's
    ``__getattr__``) is imported in the child, from the mutated copy. :func:`_preload` checks."""
    files: dict[str, Path] = {}
    for name in loaded:
        rel = Path(*name.split(".")[1:]) if "." in name else Path()
        for candidate in (copy_src / "mtagent" / rel / "__init__.py", (copy_src / "mtagent" / rel).with_suffix(".py")):
            if name.startswith("mtagent") and candidate.is_file():
                files[name] = candidate
                break
    edges = {name: _imports_of(name, path) for name, path in files.items()}
    tainted = {target}
    changed = True
    while changed:
        changed = False
        for name, deps in edges.items():
            if name not in tainted and deps & tainted:
                tainted.add(name)
                changed = True
    return [name for name in loaded if name in files and name not in tainted]


# Functions whose result a module caches for the process: called once in the runner so each
# mutant's child inherits it (building the o200k tokenizer costs seconds per child otherwise).
_WARM_CALLS: tuple[tuple[str, str, tuple[object, ...]], ...] = (
    ("mtagent.context.tokens", "get_encoding", ("o200k_base",)),  # lru_cache: keyed by the args as passed
)


def _preload(copy_src: Path, target: str, loaded: list[tuple[str, str]]) -> None:
    """In the per-module runner process: import what every mutant's tests would import anyway.

    Third-party and stdlib modules the baseline run loaded, then the ``mtagent`` modules that cannot
    reach the mutated one. If the mutated module got imported all the same (an import by string),
    every ``mtagent`` module is dropped again and each child imports it fresh — slower, still right.
    """
    import importlib

    tests_dir = str(ROOT / "tests")
    for name, file in loaded:
        if name == "__main__" or name.startswith("mtagent") or (file and file.startswith(tests_dir)):
            continue
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a module that will not import here is simply not preloaded
            pass
    sys.path.insert(0, str(copy_src))
    failed = False
    try:
        for name in _independent_modules(copy_src, target, [n for n, _ in loaded]):
            importlib.import_module(name)
        for module, function, args in _WARM_CALLS:
            if module in sys.modules:
                getattr(sys.modules[module], function)(*args)
    except Exception:  # noqa: BLE001 - purge below: correctness over speed
        failed = True
    if failed or target in sys.modules:
        for name in [n for n in sys.modules if n == "mtagent" or n.startswith("mtagent.")]:
            del sys.modules[name]


def _pytest_forked(copy_src: Path, tests: tuple[str, ...], timeout: float,
                   record: Path | None = None) -> tuple[int, str]:
    """Run pytest in a forked child that puts the mutated copy first on ``sys.path``.

    The baseline run (``record`` given) writes the modules it ended with (name and file, import
    order) for :func:`_preload`. Mutant runs use ``--assert=plain``: rewriting the test modules'
    asserts only improves failure messages, nobody reads them here, and it costs a second a run.
    """
    log = copy_src.parent / "pytest.log"
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.chdir(ROOT)
            os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
            sys.dont_write_bytecode = True
            if str(copy_src) not in sys.path:
                sys.path.insert(0, str(copy_src))
            import pytest

            plain = [] if record is not None else ["--assert=plain"]
            code = int(pytest.main(["-x", "-q", "-p", "no:cacheprovider", *plain,
                                    "-W", "ignore::pytest.PytestAssertRewriteWarning", *tests]))
            if record is not None:
                rows = [(n, str(getattr(m, "__file__", "") or "")) for n, m in list(sys.modules.items())]
                record.write_text(json.dumps(rows), encoding="utf-8")
        finally:
            os._exit(code)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return -1, "timeout"
        time.sleep(0.05)
    return os.waitstatus_to_exitcode(status), log.read_text(errors="replace")[-3000:]


def _pytest(copy_src: Path, tests: tuple[str, ...], timeout: float) -> tuple[int, str]:
    if hasattr(os, "fork"):
        return _pytest_forked(copy_src, tests, timeout)
    env = dict(os.environ, PYTHONPATH=str(copy_src), PYTHONDONTWRITEBYTECODE="1")
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    try:
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, "timeout"
    return done.returncode, (done.stdout + done.stderr)[-3000:]


def _run_mutants(name: str, source: str, copy_src: Path, tests: tuple[str, ...], sample: list[Site],
                 timeout: float) -> list[tuple[int, bool, float]]:
    """Each sampled mutant written into the copy in turn, its tests run; (site index, killed, s)."""
    target = TARGETS[name]
    copy_file = copy_src / "mtagent" / target.source
    rows: list[tuple[int, bool, float]] = []
    for site in sample:
        try:
            copy_file.write_text(mutate(source, site, target.only), encoding="utf-8")
        except (AssertionError, SyntaxError, ValueError):
            continue  # a site the unparser cannot express; not counted
        begun = time.monotonic()
        # The first test file (the module's sharp tests) alone first: most mutants die there,
        # without collecting the slower files; a mutant it misses then meets every file.
        rc, _ = _pytest(copy_src, tests[:1], timeout=timeout)
        if rc == 0 and len(tests) > 1:
            rc, _ = _pytest(copy_src, tests, timeout=timeout)
        seconds = time.monotonic() - begun
        rows.append((site.index, rc != 0, seconds))
        copy_file.write_text(source, encoding="utf-8")
        print(f"  {name:<15} {site.description:<40} {'killed' if rc != 0 else 'SURVIVED':<9} {seconds:5.1f}s", flush=True)
    return rows


def _run_mutants_in_runner(name: str, source: str, copy_src: Path, tests: tuple[str, ...],
                           sample: list[Site], timeout: float,
                           loaded: list[tuple[str, str]]) -> list[tuple[int, bool, float]]:
    """:func:`_run_mutants` in a forked runner that first preloads what the tests import (the
    parent stays free of ``mtagent`` for the next module); the rows come back through a file."""
    rows_file = copy_src.parent / "rows.json"
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            begun = time.monotonic()
            _preload(copy_src, _module_name(TARGETS[name].source), loaded)
            print(f"  {name:<15} preloaded in {time.monotonic() - begun:.1f}s", flush=True)
            rows = _run_mutants(name, source, copy_src, tests, sample, timeout)
            rows_file.write_text(json.dumps(rows), encoding="utf-8")
            code = 0
        finally:
            sys.stdout.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"the mutation runner for {name} failed (exit {os.waitstatus_to_exitcode(status)})")
    return [(int(i), bool(k), float(s)) for i, k, s in json.loads(rows_file.read_text(encoding="utf-8"))]


def run_module(name: str, max_mutants: int, seed: int, workdir: Path,
               only_mutants: tuple[str, ...] = ()) -> ModuleResult:
    target = TARGETS[name]
    result = ModuleResult(name)
    source = (SRC / "mtagent" / target.source).read_text(encoding="utf-8")
    copy_src = workdir / name / "src"
    shutil.copytree(SRC, copy_src, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    tests = tuple(t for t in target.tests if (ROOT / t).exists())
    record = workdir / name / "modules.json"
    started = time.monotonic()
    forked = hasattr(os, "fork")
    rc, out = _pytest_forked(copy_src, tests, 600, record) if forked else _pytest(copy_src, tests, 600)
    baseline = time.monotonic() - started
    print(f"  {name:<15} baseline tests {'pass' if rc == 0 else 'FAIL'} in {baseline:.1f}s", flush=True)
    if rc != 0:
        result.baseline_ok, result.baseline_output = False, out
        return result
    sites = list_sites(source, target.only)
    result.total_sites = len(sites)
    sample = sorted(random.Random(f"{seed}:{name}").sample(sites, min(max_mutants, len(sites))),
                    key=lambda s: s.index)
    if only_mutants:  # re-check chosen mutants (e.g. after writing the test that should kill them)
        sample = [s for s in sites if s.description in only_mutants]
    timeout = max(60.0, 4 * baseline)
    if forked:
        loaded = [tuple(row) for row in json.loads(record.read_text(encoding="utf-8"))]
        rows = _run_mutants_in_runner(name, source, copy_src, tests, sample, timeout, loaded)  # type: ignore[arg-type]
    else:
        rows = _run_mutants(name, source, copy_src, tests, sample, timeout)
    by_index = {s.index: s for s in sample}
    for index, killed, seconds in rows:
        site = by_index[index]
        result.outcomes.append(MutantOutcome(site, killed, seconds, EQUIVALENT.get((name, site.description))))
    return result


def _snippet(name: str, site: Site) -> str:
    lines = (SRC / "mtagent" / TARGETS[name].source).read_text(encoding="utf-8").splitlines()
    return lines[site.line - 1].strip()[:90] if 0 < site.line <= len(lines) else ""


def report(results: list[ModuleResult]) -> None:
    print()
    print(f"{'module':<15} {'sites':>6} {'sampled':>8} {'killed':>7} {'survived':>9} {'equiv':>6} {'score':>7}")
    for r in results:
        if not r.baseline_ok:
            print(f"{r.name:<15} baseline tests fail — not measured")
            continue
        counted = r.counted
        killed = sum(o.killed for o in counted)
        print(f"{r.name:<15} {r.total_sites:>6} {len(r.outcomes):>8} {killed:>7} {len(counted) - killed:>9} "
              f"{len(r.outcomes) - len(counted):>6} {r.score:>7.2f}")
    for r in results:
        for o in r.outcomes:
            if not o.killed:
                tag = f"equivalent: {o.equivalent}" if o.equivalent else "SURVIVOR"
                print(f"{tag}: {r.name} {TARGETS[r.name].source}:{o.site.line} {o.site.description} | {_snippet(r.name, o.site)}")
        if not r.baseline_ok:
            print(f"baseline failure in {r.name}:\n{r.baseline_output}")
    measured = [r for r in results if r.baseline_ok]
    for r in measured:
        print(f"RESULT mutation_score_{r.name}={r.score:.3f}")
    counted = [o for r in measured for o in r.counted]
    overall = sum(o.killed for o in counted) / len(counted) if counted else 0.0
    print(f"RESULT mutation_score={overall:.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"one module ({QUICK_MODULE}), {QUICK_MUTANTS} mutants: under a minute on a busy 2-core machine")
    parser.add_argument("--module", action="append", choices=sorted(TARGETS), help="repeatable; default all")
    parser.add_argument("--max-mutants", type=int, default=30, help="sampled mutants per module (default 30)")
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument("--list", action="store_true", help="list modules, their tests and site counts")
    parser.add_argument("--mutant", action="append", default=[], metavar="DESC",
                        help="run only this mutant of each --module, by its description (e.g. 'L40 0->1'); repeatable")
    args = parser.parse_args(argv)
    if args.list:
        for name, target in TARGETS.items():
            sites = list_sites((SRC / "mtagent" / target.source).read_text(encoding="utf-8"), target.only)
            print(f"{name:<15} {target.source:<40} {len(sites):>4} sites  {' '.join(target.tests)}")
        return 0
    names = [QUICK_MODULE] if args.quick else (args.module or list(TARGETS))
    max_mutants = QUICK_MUTANTS if args.quick and args.max_mutants == 30 else args.max_mutants
    _warm_up()
    with tempfile.TemporaryDirectory(prefix="mtagent-mutation-") as tmp:
        results = [run_module(name, max_mutants, args.seed, Path(tmp), tuple(args.mutant)) for name in names]
    report(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
