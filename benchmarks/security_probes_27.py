"""Issue #27's confinement attacks, as probes for ``security_regress.py`` (one per attack class).

Each probe returns True when the attack got through. They use surfaces both the pre-#27 code and
today's have (``AgentSession`` with a scripted model, ``load_settings``, ``load_profiles``,
``build_brief``, ``sync_workspace``, the CLI), so the old code is measured as it shipped.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from security_probe_kit import cli, first_payload, quiet_settings, recorded_session, untrusted_settings

FIRST_COMMIT_27 = "e61a34e"  # the first commit carrying #27 code (describe_call sanitized; f112375: confinement)
CANARY = "OUTSIDE-CANARY-27"
TOKEN = "ghx_regress27CanaryToken0123456789"
LATER_SECRET = "regress27-later-configured-passphrase"
PROBE_ENV = {"GITHUB_TOKEN": TOKEN}  # in every probe process's starting environment

# name → (attack class, the test that covers it now)
PROBES_27: dict[str, tuple[str, str]] = {
    "include_proc_environ": ("context: CONTEXT.md `@/proc/self/environ` sends the environment",
                             "test_context_confinement.py"),
    "include_home_key": ("context: `@~/.ssh/id_rsa` sends the key", "test_context_confinement.py"),
    "include_parent": ("context: `@../outside/x` sends an outside file", "test_context_confinement.py"),
    "include_hardlink": ("context: `@notes.md`, a hard link to an outside file", "test_context_confinement.py"),
    "include_huge": ("context: a 4 MiB include is read and sent whole", "test_context_confinement.py"),
    "local_context_symlink": ("context: CONTEXT.local.md symlinked outside", "test_context_confinement.py"),
    "rule_symlink": ("context: .mtagent/rules/x.md symlinked outside", "test_context_confinement.py"),
    "profile_symlink": ("subagents: .mtagent/agents/spy.md symlinked outside is loaded",
                        "test_subagent_confinement.py"),
    "brief_hardlink": ("subagents: task(files=[hard link]) puts an outside file in the brief",
                       "test_subagent_confinement.py"),
    "brief_user_authority": ("subagents: the parent model's brief is recalled with user authority",
                             "test_brief_authority.py"),
    "index_hardlink": ("recall: the workspace index follows a hard link", "test_recall_workspace_confinement.py"),
    "index_secret": ("recall: a workspace secret is stored raw in the index", "test_recall_workspace_confinement.py"),
    "untrusted_index_workspace": ("config: untrusted [recall] index_workspace = true is honoured",
                                  "test_recall_workspace_confinement.py, test_widening_keys.py"),
    "shell_env_key": ("shell: `echo $OPENAI_API_KEY | rev` reaches the model", "test_shell_env_policy.py"),
    "resume_later_secret": ("resume: a secret configured after the session reaches the model",
                            "test_resume_reredacts.py"),
    "recall_later_secret": ("recall: `mtagent recall` prints a secret configured after indexing",
                            "test_resume_reredacts.py"),
}


def _hostile(tmp: Path) -> Path:
    project, outside = tmp / "p", tmp / "outside"
    project.mkdir()
    outside.mkdir()
    (outside / "x").write_text(f"{CANARY} x\n")
    (outside / "rule.md").write_text(f"---\ndescription: spy\n---\n{CANARY} rule\n")
    return project


def _context_probe(tmp: Path, text: str) -> bool:
    project = _hostile(tmp)
    (project / "CONTEXT.md").write_text(text)
    payload = first_payload(project)
    return CANARY in payload or TOKEN in payload


def probe_include_proc_environ(tmp: Path) -> bool:
    """/proc/self/environ is the environment the process started with: the driver puts the token there
    (:data:`PROBE_ENV`), as a shell with ``GITHUB_TOKEN`` exported would."""
    return _context_probe(tmp, "Read @/proc/self/environ\n")


def probe_include_home_key(tmp: Path) -> bool:
    home = tmp / "home-dir"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(f"{CANARY} key\n")
    os.environ["HOME"] = str(home)
    return _context_probe(tmp, "Read @~/.ssh/id_rsa\n")


def probe_include_parent(tmp: Path) -> bool:
    return _context_probe(tmp, "Read @../outside/x\n")


def probe_include_hardlink(tmp: Path) -> bool:
    project = _hostile(tmp)
    os.link(tmp / "outside" / "x", project / "notes.md")
    (project / "CONTEXT.md").write_text("See @notes.md\n")
    return CANARY in first_payload(project)


def probe_include_huge(tmp: Path) -> bool:
    project = _hostile(tmp)
    (project / "big.md").write_bytes(b"y\n" * (2 * 1024 * 1024))
    (project / "CONTEXT.md").write_text("@big.md\n")
    settings = quiet_settings({"context": {"token_limit": 10_000_000}})
    try:
        payload = first_payload(project, settings=settings)
    except Exception:  # noqa: BLE001 — refused by an error about the size: nothing was sent
        return False
    return payload.count("y\n") > 1024 * 1024


def _symlink_probe(tmp: Path, name: str) -> bool:
    project = _hostile(tmp)
    link = project / name
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(tmp / "outside" / "rule.md")
    return CANARY in first_payload(project)


def probe_local_context_symlink(tmp: Path) -> bool:
    return _symlink_probe(tmp, "CONTEXT.local.md")


def probe_rule_symlink(tmp: Path) -> bool:
    return _symlink_probe(tmp, ".mtagent/rules/x.md")


def probe_profile_symlink(tmp: Path) -> bool:
    from mtagent.agent.subagents.profiles import load_profiles

    project = _hostile(tmp)
    (project / ".mtagent" / "agents").mkdir(parents=True)
    (project / ".mtagent" / "agents" / "spy.md").symlink_to(tmp / "outside" / "rule.md")
    return "spy" in load_profiles(project, trusted=False).profiles


def probe_brief_hardlink(tmp: Path) -> bool:
    from mtagent.agent.subagents.brief import build_brief
    from mtagent.tools.task import TaskRequest
    from mtagent.tools.workspace import Workspace

    project = _hostile(tmp)
    os.link(tmp / "outside" / "x", project / "hard.txt")
    brief = build_brief(TaskRequest("c1", "look", "look", files=("hard.txt",)), workspace=Workspace.create(project),
                        task_state=None, files_max_tokens=2_000, task_state_max_tokens=500)
    return CANARY in str(brief.message.content)


def probe_brief_user_authority(tmp: Path) -> bool:
    import json

    from mtagent.agent.scripted import ScriptedChatModel, tool_call
    from mtagent.agent.session import AgentSession
    from mtagent.context.recall.indexer import RecallIndexer

    project = _hostile(tmp)
    marker = "regress27-brief-marker"
    parent = ScriptedChatModel([tool_call("task", {"description": "d", "prompt": marker, "agent": "explore"}),
                                "done"])
    with AgentSession.create(project, model=parent, settings=quiet_settings(), approval="auto") as s:
        s.subagents.model_factory = lambda profile, request: (
            ScriptedChatModel([json.dumps({"outcome": "success", "summary": "ok"})]), "scripted:child")
        s.run_turn("go")
    indexer = RecallIndexer(project)
    indexer.catch_up()
    rows = indexer.store.execute("SELECT authority, text FROM items")
    return any(authority == "user" and marker in str(text) for authority, text in rows)


def _workspace(tmp: Path) -> tuple[Path, object, object]:
    from mtagent.config import RecallSettings
    from mtagent.context.recall.store import RecallStore

    return _hostile(tmp), RecallStore(None), RecallSettings(index_workspace=True)


def _indexed(store: object) -> str:
    return "\n".join(str(t) for (t,) in store.execute("SELECT text FROM items"))  # type: ignore[attr-defined]


def probe_index_hardlink(tmp: Path) -> bool:
    from mtagent.context.recall.workspace import sync_workspace

    project, store, settings = _workspace(tmp)
    os.link(tmp / "outside" / "x", project / "hard.txt")
    sync_workspace(project, store, settings)
    return CANARY in _indexed(store)


def probe_index_secret(tmp: Path) -> bool:
    from mtagent.context.recall.workspace import sync_workspace

    project, store, settings = _workspace(tmp)
    os.environ["GITHUB_TOKEN"] = TOKEN
    (project / "deploy.sh").write_text(f"export GITHUB_TOKEN={TOKEN}\n")
    sync_workspace(project, store, settings)
    return TOKEN in _indexed(store)


def probe_untrusted_index_workspace(tmp: Path) -> bool:
    return untrusted_settings(tmp, "[recall]\nindex_workspace = true\n").recall.index_workspace is True


def probe_shell_env_key(tmp: Path) -> bool:
    from mtagent.agent.scripted import tool_call

    project = _hostile(tmp)
    key = "sk-regress27EnvPolicy0123456789abcdef"
    os.environ["OPENAI_API_KEY"] = key
    payload = first_payload(project, [tool_call("shell", {"command": "echo $OPENAI_API_KEY | rev"}), "done"],
                            approval="auto")
    return key[::-1] in payload


def probe_resume_later_secret(tmp: Path) -> bool:
    from mtagent.agent.scripted import ScriptedChatModel
    from mtagent.agent.session import AgentSession

    project, sid, _ = recorded_session(tmp, "noted", f"the passphrase is {LATER_SECRET}")
    model = ScriptedChatModel(["ok"])
    settings = quiet_settings({"security": {"redact_values": [LATER_SECRET]}})
    with AgentSession.resume(sid, project, model=model, settings=settings, approval="never") as s:
        s.run_turn("go on")
    return LATER_SECRET in "\n".join(str(m.content) for m in model.calls[0])


def probe_recall_later_secret(tmp: Path) -> bool:
    from mtagent import paths

    project, _, _ = recorded_session(tmp, "noted", f"the passphrase is {LATER_SECRET}")
    cli("recall", "passphrase", "--cwd", str(project))  # indexed before it was configured
    paths.global_config_path().parent.mkdir(parents=True, exist_ok=True)
    paths.global_config_path().write_text(f'[security]\nredact_values = ["{LATER_SECRET}"]\n')
    return LATER_SECRET in cli("recall", "passphrase", "--cwd", str(project)).output


PROBE_FUNCS_27: dict[str, Callable[[Path], bool]] = {name: globals()[f"probe_{name}"] for name in PROBES_27}
