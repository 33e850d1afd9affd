"""Issues #13's, #27's and #33's attacks against the code before each security wave and against today's code.

    python benchmarks/security_regress.py [--quick] [--wave 13|27|33] [--old COMMIT] [--old27 COMMIT] [--old33 COMMIT]

For each wave, makes a git worktree of its "old" commit (``--old``: the parent of the first #13
commit; ``--old27``: the parent of the first #27 commit — the code each issue was filed against),
runs one probe per attack class in a subprocess against that tree's ``src`` and against this
checkout's ``src``, prints which attacks got through where, and removes the worktree. #27's probes
live in ``security_probes_27.py`` and ``security_probes_27b.py``; #33's (``--old33``: the parent of the
lead's first #33 commit) in ``security_probes_33_trust.py`` and ``security_probes_33_secrets.py``. A probe is an attack through public surfaces both versions have (``AgentSession`` with a
scripted model, ``load_settings``, the CLI), so old code is measured as it shipped; the tests in
``tests/security/`` go further (races, 300+ path corpus, fuzzing) and import modules the old code
lacks. ``--quick`` is the same run (each probe takes seconds); ``RESULT`` lines close the output.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from security_probe_kit import (cli, empty_project, first_payload, payload_text, quiet_settings, recorded_session,
                                untrusted_settings)
from security_probes_27 import FIRST_COMMIT_27, PROBE_ENV, PROBE_FUNCS_27, PROBES_27
from security_probes_27b import PROBE_FUNCS_27B, PROBES_27B
from security_probes_33_secrets import PROBE_FUNCS_33_SECRETS, PROBES_33_SECRETS
from security_probes_33_trust import FIRST_COMMIT_33, PROBE_FUNCS_33_TRUST, PROBES_33_TRUST

REPO = Path(__file__).resolve().parents[1]
FIRST_SECURITY_COMMIT = "85ebb51"  # tools: open every workspace file through directory descriptors (#13)
PROBE_TIMEOUT = 120
# name → (attack class, the test that covers it now)
PROBES: dict[str, tuple[str, str]] = {
    "hardlink_read": ("workspace: hard link to an outside file, read_file", "test_workspace_escapes.py"),
    "project_allows_shell": ("approvals: untrusted project config sets shell=allow, roots=/",
                             "test_trust_cli.py, test_config_hostile.py"),
    "duplicate_ids": ("approvals: two calls share an id, shell runs under deny", "test_approval_bypasses.py"),
    "global_memory_deny": ("approvals: save_memory writes global CONTEXT.md under deny", "test_approval_bypasses.py"),
    "allow_pattern_operators": ("approvals: `shell:echo *` lets `echo hi & touch x` run",
                                "test_approval_bypasses.py"),
    "resume_deletes_record": ("nothing lost: --resume deletes a complete unparsable last line",
                              "test_resume_keeps_records.py"),
    "replay_traceback": ("no traceback: `mtagent replay` on 10k-deep nesting", "test_hostile_transcripts.py"),
    "terminal_escape": ("no traceback: `sessions show` prints an OSC title sequence raw",
                        "test_hostile_transcripts.py"),
    "config_dev_zero": ("bounded: config.toml -> /dev/zero hangs `config show`", "test_bounded_resources.py"),
    "setsid_survivor": ("bounded: a shell call's setsid child outlives the call", "test_shell_tree.py"),
    "env_secret_payload": ("secrets: OPENAI_KEY value reaches the model payload", "test_secret_canaries.py"),
    "config_range": ("config: token_limit = 1e29 accepted", "test_config_hostile.py"),
    "configured_secret": ("secrets: a value configured in [security] reaches the payload",
                          "test_configured_secrets.py"),
    "typed_secret": ("secrets: an env secret typed into a message reaches the payload",
                     "test_configured_secrets.py"),
}


# ── probes: each returns True when the attack got through ──────────────────────────────────────

def probe_hardlink_read(tmp: Path) -> bool:
    from mtagent.agent.scripted import tool_call

    outside, project = tmp / "outside.txt", tmp / "project"
    outside.write_text("OUTSIDE-CANARY\n")
    project.mkdir()
    os.link(outside, project / "link.txt")
    return "OUTSIDE-CANARY" in first_payload(project, [tool_call("read_file", {"file_path": "link.txt"}), "done"],
                                             approval="auto")


def probe_project_allows_shell(tmp: Path) -> bool:
    agent = untrusted_settings(tmp, '[agent]\napproval = { "shell" = "allow" }\nworkspace_extra_roots = ["/"]\n').agent
    return agent.approval.get("shell") == "allow" or "/" in agent.workspace_extra_roots


def probe_duplicate_ids(tmp: Path) -> bool:
    from langchain_core.messages import AIMessage

    project, marker = tmp / "project", tmp / "dup-marker"
    project.mkdir()
    (project / "a.txt").write_text("a\n")
    calls = [{"name": "shell", "args": {"command": f"touch {marker}"}, "id": "same", "type": "tool_call"},
             {"name": "read_file", "args": {"file_path": "a.txt"}, "id": "same", "type": "tool_call"}]
    try:
        first_payload(project, [AIMessage(content="", tool_calls=calls), "done"])
    except Exception:  # noqa: BLE001 — a refusal by error is not an escape
        pass
    return marker.exists()


def probe_global_memory_deny(tmp: Path) -> bool:
    from mtagent import paths
    from mtagent.agent.scripted import tool_call

    project = empty_project(tmp)
    first_payload(project, [tool_call("save_memory", {"fact": "INJECTED-FOREVER", "scope": "global"}), "done"])
    context = paths.mtagent_home() / "CONTEXT.md"
    return context.exists() and "INJECTED-FOREVER" in context.read_text()


def probe_allow_pattern_operators(tmp: Path) -> bool:
    from mtagent.agent.scripted import tool_call

    project, marker = tmp / "project", tmp / "op-marker"
    project.mkdir()
    settings = quiet_settings({"agent": {"approval": {"shell:echo *": "allow"}}})
    first_payload(project, [tool_call("shell", {"command": f"echo hi & touch {marker}"}), "done"], settings)
    return marker.exists()


def probe_resume_deletes_record(tmp: Path) -> bool:
    from mtagent.agent.scripted import ScriptedChatModel
    from mtagent.agent.session import AgentSession

    project, sid, path = recorded_session(tmp, "one")
    bad = b'{"type": "transcript_message", "content": "\xff\xfe"}\n'
    with path.open("ab") as fh:
        fh.write(bad)
    try:
        with AgentSession.resume(sid, project, model=ScriptedChatModel(["two"]), settings=quiet_settings()) as s:
            s.run_turn("again")
    except Exception:  # noqa: BLE001 — refusing to resume keeps the record; only deletion counts
        pass
    return bad not in path.read_bytes()


def probe_replay_traceback(tmp: Path) -> bool:
    _, _, path = recorded_session(tmp, "one")
    with path.open("ab") as fh:  # a real transcript, then one complete record nested 10k deep
        fh.write(b"[" * 10_000 + b"]" * 10_000 + b"\n")
    result = cli("replay", str(path))
    return result.exception is not None and not isinstance(result.exception, SystemExit)  # type: ignore[attr-defined]


def probe_terminal_escape(tmp: Path) -> bool:
    project, sid, _ = recorded_session(tmp, "title \x1b]0;PWNED\x07 set")
    result = cli("sessions", "show", sid, "--cwd", str(project))
    return "\x1b]0;PWNED" in result.output  # type: ignore[attr-defined]


def probe_config_dev_zero(tmp: Path) -> bool:
    from mtagent import paths

    home_config = paths.global_config_path()
    home_config.parent.mkdir(parents=True, exist_ok=True)
    home_config.symlink_to("/dev/zero")
    code = "from mtagent.config import load_settings\ntry:\n    load_settings()\nexcept Exception:\n    pass\n"
    try:
        subprocess.run([sys.executable, "-c", code], timeout=15, env=os.environ.copy(),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return True  # subprocess.run killed the child it started
    return False


def probe_setsid_survivor(tmp: Path) -> bool:
    from mtagent.agent.scripted import tool_call

    project = empty_project(tmp)
    tag = f"{time.time_ns() % 10**6}.{os.getpid() % 1000}"  # a unique sleep length marks our child
    first_payload(project, [tool_call("shell", {"command": f"setsid sleep 9{tag} >/dev/null 2>&1 < /dev/null &"}),
                            "done"], approval="auto")
    survivors: set[int] = set()
    deadline = time.monotonic() + 3.0  # the call has returned: anything of ours still alive escaped
    while time.monotonic() < deadline and not survivors:
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    cmd = (entry / "cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                if f"9{tag}".encode() in cmd and cmd[0] in (b"sleep", b"setsid"):
                    survivors.add(int(entry.name))
        time.sleep(0.2)
    for pid in survivors:  # only the process this probe started, found by its unique argument
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    return bool(survivors)


def probe_env_secret_payload(tmp: Path) -> bool:
    from mtagent.agent.scripted import tool_call

    project = empty_project(tmp)
    os.environ["OPENAI_KEY"] = "sk-canaryRegress0123456789abcdef"
    sent = first_payload(project, [tool_call("shell", {"command": "env"}), "done"], approval="auto")
    return "sk-canaryRegress0123456789abcdef" in sent


def probe_config_range(tmp: Path) -> bool:
    try:
        quiet_settings({"context": {"token_limit": 10**29}})
    except Exception:  # noqa: BLE001
        return False
    return True


def probe_configured_secret(tmp: Path) -> bool:
    from mtagent import paths
    from mtagent.agent.scripted import ScriptedChatModel, tool_call

    project = empty_project(tmp)
    (project / "notes.txt").write_text("horse battery staple canary\n")
    paths.global_config_path().parent.mkdir(parents=True, exist_ok=True)
    paths.global_config_path().write_text('[security]\nredact_values = ["horse battery staple canary"]\n'
                                          '[agent]\nretry_base_seconds = 0.0\n[session_memory]\nenabled = false\n')
    from mtagent.agent.session import AgentSession

    try:
        model = ScriptedChatModel([tool_call("read_file", {"file_path": "notes.txt"}), "done"])
        with AgentSession.create(project, model=model, approval="auto") as s:
            s.run_turn("go")
    except Exception:  # noqa: BLE001 — the setting does not exist there: the user cannot protect the value
        return True
    return "horse battery staple canary" in payload_text(model)


def probe_typed_secret(tmp: Path) -> bool:
    project = empty_project(tmp)
    os.environ["SERVICE_TOKEN"] = "tok-typed-regress-canary"
    return "tok-typed-regress-canary" in first_payload(project, prompt="deploy with tok-typed-regress-canary please")


PROBE_FUNCS: dict[str, Callable[[Path], bool]] = {name: globals()[f"probe_{name}"] for name in PROBES}
PROBE_FUNCS.update(PROBE_FUNCS_27)
PROBE_FUNCS.update(PROBE_FUNCS_27B)
PROBE_FUNCS.update(PROBE_FUNCS_33_TRUST)
PROBE_FUNCS.update(PROBE_FUNCS_33_SECRETS)
WAVES: dict[str, dict[str, tuple[str, str]]] = {"13": PROBES, "27": {**PROBES_27, **PROBES_27B},
                                               "33": {**PROBES_33_TRUST, **PROBES_33_SECRETS}}


# ── driver ──────────────────────────────────────────────────────────────────────────────────────

def run_probe(name: str) -> None:
    """Child mode: one probe against whatever ``mtagent`` is importable; one JSON line on stdout."""
    with tempfile.TemporaryDirectory(prefix=f"mt-regress-{name}-") as tmp:
        os.environ["MTAGENT_HOME"] = str(Path(tmp) / "home")
        try:
            outcome = "escaped" if PROBE_FUNCS[name](Path(tmp)) else "blocked"
        except Exception as exc:  # noqa: BLE001 — an unexpected error is reported, not counted as blocked
            outcome = f"error: {type(exc).__name__}: {str(exc)[:80]}"
    print(json.dumps({"probe": name, "outcome": outcome}))


def probe_in(src: Path, name: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTAGENT_")}
    env["PYTHONPATH"] = str(src)
    env["HOME"] = tempfile.gettempdir()
    env.update(PROBE_ENV)
    try:
        done = subprocess.run([sys.executable, __file__, "--probe", name], env=env, capture_output=True,
                              text=True, timeout=PROBE_TIMEOUT, cwd=tempfile.gettempdir())
    except subprocess.TimeoutExpired:
        return "timeout"
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return f"error: exit {done.returncode}: {done.stderr.strip().splitlines()[-1:] or ''}"
    return json.loads(lines[-1])["outcome"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="same probes (each takes seconds)")
    parser.add_argument("--old", default=f"{FIRST_SECURITY_COMMIT}^", help="#13's 'before' commit")
    parser.add_argument("--old27", default=f"{FIRST_COMMIT_27}^", help="#27's 'before' commit")
    parser.add_argument("--old33", default=f"{FIRST_COMMIT_33}^", help="#33's 'before' commit")
    parser.add_argument("--wave", choices=sorted(WAVES), help="only this wave's attacks")
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        run_probe(args.probe)
        return 0
    olds = {"13": args.old, "27": args.old27, "33": args.old33}
    rows = []
    for wave in [args.wave] if args.wave else sorted(WAVES):
        rows += run_wave(wave, olds[wave])
    escaped_old = sum(1 for r in rows if r[3] == "escaped")
    blocked_now = sum(1 for r in rows if r[4] == "blocked")
    for wave in sorted({r[0] for r in rows}):
        mine = [r for r in rows if r[0] == wave]
        print(f"RESULT wave{wave}_attacks={len(mine)} escaped_on_old={sum(r[3] == 'escaped' for r in mine)} "
              f"blocked_now={sum(r[4] == 'blocked' for r in mine)}")
    print(f"RESULT attacks={len(rows)}")
    print(f"RESULT escaped_on_old={escaped_old}")
    print(f"RESULT blocked_now={blocked_now}")
    return 0 if blocked_now == len(rows) else 1


def run_wave(wave: str, old_ref: str) -> list[tuple[str, str, str, str, str]]:
    """(wave, attack, test, old outcome, now outcome) for each of ``wave``'s probes; prints its table."""
    old = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", old_ref], capture_output=True,
                         text=True, check=True).stdout.strip()
    tree = Path(tempfile.mkdtemp(prefix="mt-security-old-")) / "tree"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(tree), old], check=True)
    rows = []
    try:
        for name, (attack, test) in WAVES[wave].items():
            before, now = probe_in(tree / "src", name), probe_in(REPO / "src", name)
            rows.append((wave, attack, test, before, now))
            print(f"{name:<26} old {before:<10} now {now}", file=sys.stderr, flush=True)
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], check=False)
    print(f"\n#{wave}: | attack class | covered now by (tests/security/) | old commit {old} | now |")
    print("|---|---|---|---|")
    for _, attack, test, before, now in rows:
        print(f"| {attack} | {test} | {before} | {now} |")
    return rows


if __name__ == "__main__":
    sys.exit(main())
