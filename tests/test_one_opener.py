"""A session is born in one place (DESIGN principle 11, issue 25): only the opener
(``mtagent.context.opener``) builds a transcript writer, the sink chain, the window manager or an
``EngineSession``; the storage layer (``mtagent.session``) builds writers for it. Every front end —
CLI, middleware thread, subagent child, replay — goes through the opener, so a measurement of one
is a measurement of all.

The scan reads the source (AST), so a new front end that wires its own session fails here before
it drifts from the others."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "mtagent"
OPENER = "context/opener/"

# What only the opener may construct (and, for writers, the storage layer it calls).
SESSION_PARTS = frozenset({
    "EngineSession", "ContextWindowManager", "SessionMemoryManager", "RedactingSink", "AuditingSink",
    "SessionIndex", "LockedSink", "session_index", "build_engine_session", "open_session_io",
})
WRITERS = frozenset({"TranscriptWriter", "open_writer", "open_session_writer", "open_in_store"})
STORAGE = "session/"


def constructions(tree: ast.AST) -> list[tuple[str, int]]:
    """``(name, line)`` of every call of a session part or writer, by bare name or attribute."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name in SESSION_PARTS or name in WRITERS:
            found.append((name, node.lineno))
    return found


def defined(tree: ast.AST) -> set[str]:
    """Names a module defines itself (a part's own module may build it: ``session_index`` → ``SessionIndex``)."""
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)}


def offenders(root: Path) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(OPENER):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        own = defined(tree)
        for name, line in constructions(tree):
            if name in own or (rel.startswith(STORAGE) and (name in WRITERS or name == "AuditingSink")):
                continue
            out.append(f"{rel}:{line} builds {name}")
    return out


def test_only_the_opener_builds_writers_sink_chains_and_engine_sessions() -> None:
    found = offenders(SRC)
    assert found == [], "a session is built outside mtagent.context.opener:\n" + "\n".join(found)


@pytest.mark.parametrize("source, name", [
    ("from mtagent.session.transcript import TranscriptWriter\nw = TranscriptWriter(p, session_id='x')\n",
     "TranscriptWriter"),
    ("import mtagent.context.engine_session as es\ns = es.EngineSession(w, b, sink, settings=s)\n", "EngineSession"),
    ("from mtagent.redaction import RedactingSink\nsink = RedactingSink(inner, redactor)\n", "RedactingSink"),
    ("w = store.open_writer(project, sid)\n", "open_writer"),
    ("w = store.open_session_writer(project, sid, artifacts)\n", "open_session_writer"),
    ("from mtagent.context import build_engine_session\ne = build_engine_session(sink=[])\n", "build_engine_session"),
])
def test_the_scan_finds_a_front_end_that_wires_its_own_session(tmp_path: Path, source: str, name: str) -> None:
    front_end = tmp_path / "integrations" / "rogue.py"
    front_end.parent.mkdir()
    front_end.write_text(source, encoding="utf-8")
    assert [f.split(" builds ")[1] for f in offenders(tmp_path)] == [name]


def test_the_opener_and_the_storage_layer_may_build_them(tmp_path: Path) -> None:
    (tmp_path / "context" / "opener").mkdir(parents=True)
    (tmp_path / "context" / "opener" / "open.py").write_text("e = EngineSession(w, b, s)\nw = TranscriptWriter(p)\n")
    (tmp_path / "session").mkdir()
    (tmp_path / "session" / "files_store.py").write_text("w = TranscriptWriter(p)\n")
    (tmp_path / "session" / "rogue.py").write_text("e = EngineSession(w, b, s)\n")
    (tmp_path / "context" / "recall").mkdir()
    (tmp_path / "context" / "recall" / "sink.py").write_text(
        "class SessionIndex: ...\ndef session_index(i): return SessionIndex(i)\n")
    assert offenders(tmp_path) == ["session/rogue.py:1 builds EngineSession"]


# ── the whole session: only the opener opens a tool catalog or the MCP servers (issue 35) ──────

TOOL_OPENERS = ("context/opener/", "agent/opener.py")


def catalog_openers(root: Path) -> list[str]:
    """Calls of ``Toolset.open``, ``McpManager(...)`` or ``McpManager.for_*`` outside the opener."""
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(TOOL_OPENERS):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else None
            if (owner == "Toolset" and func.attr == "open") or (owner == "McpManager" and func.attr.startswith("for_")) \
                    or (isinstance(func, ast.Name) and func.id == "McpManager"):
                out.append(f"{rel}:{node.lineno}")
    return out


def test_only_the_opener_opens_a_tool_catalog_or_mcp_servers() -> None:
    assert catalog_openers(SRC) == [], "tools wired outside the opener"


def test_the_catalog_scan_finds_a_front_end_with_its_own_tools(tmp_path: Path) -> None:
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "tools_cmd.py").write_text(
        "t = Toolset.open(tools, settings)\nm = McpManager.for_project(s, r)\nn = McpManager(specs)\n")
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "opener.py").write_text("m = McpManager.for_project(s, r, e)\n")
    assert catalog_openers(tmp_path) == ["cli/tools_cmd.py:1", "cli/tools_cmd.py:2", "cli/tools_cmd.py:3"]


def test_only_the_catalog_chooses_full_or_compact_schemas() -> None:
    """The CLI's catalog and the middleware's requests get compact schemas by one rule (the catalog's)."""
    callers = sorted(p.relative_to(SRC).as_posix() for p in SRC.rglob("*.py")
                     if "choose_schemas(" in p.read_text(encoding="utf-8"))
    assert callers == ["context/toolset/catalog.py", "context/toolset/schemas.py"]


# ── tools travel with each call: nothing re-binds a model after opening (issue 35) ──────────────

# Where a model meets its tools: the request of one call (the agent's loop, the cache-aligned
# summarizer and notes model), and the cancellable child model that wraps whatever it is bound to.
BINDS_PER_CALL = {"agent/graph.py", "context/opener/wiring.py", "agent/subagents/child.py"}


def rebinders(root: Path) -> list[str]:
    """``x.model = …`` on another object, ``setattr(x, "model", …)``, and ``bind_tools`` outside a per-call binding."""
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Attribute) and t.attr == "model" and not (
                            isinstance(t.value, ast.Name) and t.value.id == "self"):
                        out.append(f"{rel}:{node.lineno} sets .model")
            elif isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Name) and func.id == "setattr" and len(node.args) > 1 and \
                        isinstance(node.args[1], ast.Constant) and node.args[1].value == "model":
                    out.append(f"{rel}:{node.lineno} setattr model")
                if isinstance(func, ast.Attribute) and func.attr == "bind_tools" and rel not in BINDS_PER_CALL:
                    out.append(f"{rel}:{node.lineno} binds tools")
    return out


def test_nothing_rebinds_a_model_after_opening() -> None:
    # ui/ and cli/session_report read records into report rows; replay configures its metered summarizer before opening
    found = [f for f in rebinders(SRC) if not f.startswith(("ui/catalog.py", "cli/session_report.py", "replay/"))]
    assert found == [], "a model is re-bound from the side:\n" + "\n".join(found)


def test_the_rebind_scan_finds_a_listener_that_rebinds(tmp_path: Path) -> None:
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "session.py").write_text(
        "toolset.listeners.append(lambda: setattr(self.runtime, 'model', model.bind_tools(toolset.bound())))\n"
        "opened.summarizer.model = bound\n")
    assert sorted(rebinders(tmp_path)) == ["agent/session.py:1 binds tools", "agent/session.py:1 setattr model",
                                           "agent/session.py:2 sets .model"]


# ── nor does an event listener change a session's tools or models: each request reads them (issue 35) ──

# What a handler on the event bus may not touch: the tool catalog, the tools, a model, the system slot.
STEERING = frozenset({"toolset", "catalog", "tools", "runnable", "bind_tools", "model", "system", "listeners",
                      "compacted", "changed", "caught_up", "source"})


def steering_subscribers(root: Path) -> list[str]:
    """``bus.subscribe(handler, …)`` whose handler (a lambda, or a function or method of that name in
    the package) names any of :data:`STEERING` (an attribute, a name or a string)."""
    trees = {p.relative_to(root).as_posix(): ast.parse(p.read_text(encoding="utf-8")) for p in sorted(root.rglob("*.py"))}
    defs: dict[str, list[ast.AST]] = {}
    for node in (n for tree in trees.values() for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        defs.setdefault(node.name, []).append(node)
    out = []
    for rel, node in ((r, n) for r, tree in trees.items() for n in ast.walk(tree)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "subscribe":
            handler = node.args[0]
            name = getattr(handler, "id", None) or getattr(handler, "attr", None)
            words = {getattr(n, "attr", None) or getattr(n, "id", None) or getattr(n, "value", None)
                     for body in ([handler] if isinstance(handler, ast.Lambda) else defs.get(name, []))
                     for n in ast.walk(body) if isinstance(n, ast.Attribute | ast.Name | ast.Constant)}
            if touched := sorted(w for w in words if isinstance(w, str) and w in STEERING):
                out.append(f"{rel}:{node.lineno} {name or 'lambda'} touches {', '.join(touched)}")
    return out


def test_no_event_listener_changes_tools_or_models() -> None:
    found = steering_subscribers(SRC)
    assert found == [], "tools or a model steered from an event listener:\n" + "\n".join(found)


def test_the_listener_scan_finds_a_compaction_listener_that_refreshes_the_tools(tmp_path: Path) -> None:
    (tmp_path / "context").mkdir()
    (tmp_path / "context" / "binding.py").write_text(
        "def on_compaction(event):\n    alive = ref()\n    alive.compacted()\n\n"
        "def bind(toolset, events):\n    events.subscribe(on_compaction, COMPACT_BOUNDARY)\n"
        "    events.subscribe(lambda e: setattr(runtime, 'model', m), TOOL_STARTED)\n"
        "    events.subscribe(self.shown, CONTEXT_PLANNED)\n\n"
        "def shown(self, event):\n    print(event.data['tokens'])\n")
    assert steering_subscribers(tmp_path) == ["context/binding.py:6 on_compaction touches compacted",
                                              "context/binding.py:7 lambda touches model"]


def test_a_load_changes_the_next_request_and_rebinds_nothing(tmp_path: Path) -> None:
    """A ``tool_search`` load inside a tool call: the next request carries the loaded tool, while the
    runtime's model and the summarizer stay the objects the session was opened with (tests/agent/test_prompt_cache.py:
    the cache-aligned summarizer binds the tools of the request it extends)."""
    from langchain_core.tools import StructuredTool

    from mtagent.agent.scripted import ScriptedChatModel, reply, tool_call
    from mtagent.agent.session import AgentSession
    from mtagent.config import Settings
    from mtagent.tools import default_tools

    def op(target: str) -> str:
        return f"rotated {target}"

    extra = [StructuredTool.from_function(op, name=f"mcp__fake__op_{i}", description=f"Rotate widget kind {i}.")
             for i in range(40)]
    model = ScriptedChatModel([tool_call("tool_search", {"query": "rotate widget kind 7", "k": 1}),
                               tool_call("mcp__fake__op_7", {"target": "gear"}), reply("done")])
    settings = Settings.model_validate({"tools": {"defer": "always"}, "session_memory": {"enabled": False}})
    with AgentSession.create(tmp_path, model=model, settings=settings, approval="auto",
                             tools=lambda ctx: [*default_tools(ctx.workspace.root, context=ctx), *extra]) as session:
        runtime_model, summarizer = session.runtime.model, session.window_manager.summarizer
        assert session.run_turn("rotate kind 7").reply == "done"
        assert session.runtime.model is runtime_model is model
        assert session.window_manager.summarizer is summarizer
    sent = [[t["function"]["name"] for t in tools] for tools in model.call_tools]
    assert "mcp__fake__op_7" not in sent[0] and sent[1][-1] == "mcp__fake__op_7"


def test_tools_list_and_the_middleware_count_tool_schemas_alike_in_the_configured_encoding(tmp_path: Path,
                                                                                             monkeypatch) -> None:
    """One catalog opening, one count: ``mtagent tools list`` counted schemas in the default encoding while
    the middleware counted the same schemas in ``context.encoding``."""
    import json

    from langchain_core.utils.function_calling import convert_to_openai_tool
    from typer.testing import CliRunner

    from mtagent.cli.app import app
    from mtagent.config import load_settings
    from mtagent.context.tokens import count_text_tokens
    from mtagent.integrations.engine import ToolsTokens
    from mtagent.tools import default_tools

    monkeypatch.setenv("MTAGENT_CONTEXT__ENCODING", "'cl100k_base'")
    root = tmp_path / "project"
    root.mkdir()
    result = CliRunner().invoke(app, ["tools", "list", "--cwd", str(root), "--no-mcp", "--json"])
    assert result.exit_code == 0, result.output
    tools = default_tools(root, settings=load_settings(root))
    schemas = [json.dumps(convert_to_openai_tool(t), sort_keys=True) for t in tools]
    expected = sum(count_text_tokens(s, "cl100k_base") for s in schemas)
    assert expected != sum(count_text_tokens(s, "o200k_base") for s in schemas)
    listed = {row["name"]: row["tokens"] for row in json.loads(result.stdout)["tools"]}  # + read_tool_result, task
    assert sum(listed[t.name] for t in tools) == expected
    assert ToolsTokens(load_settings(root).context.encoding)(tools) == expected
