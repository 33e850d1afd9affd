"""Hostile workspaces: hard links, symlinks and check-then-open races must never let a file tool
read or write outside the roots (issue #13). Every check looks for the outside canary in tool
output and for any change to the outside tree."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from tools.conftest import Kit, kit  # noqa: F401  (the shared tool-test fixture)

CANARY = "CANARY-OUTSIDE-7f3a9"


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + dirnames:
            p = Path(dirpath) / name
            st = p.lstat()
            out[str(p.relative_to(root))] = (p.read_bytes() if p.is_file() and not p.is_symlink() else b"",
                                             st.st_mtime_ns)
    return out


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    (out / "sub").mkdir(parents=True)
    (out / "secret.txt").write_text(f"{CANARY} top\n")
    (out / "f.txt").write_text(f"{CANARY} f\n")
    (out / "sub" / "deep.txt").write_text(f"{CANARY} deep\n")
    return out


def _call_every_tool(kit: Kit, path: str) -> list[str]:
    outputs = []
    calls = [
        ("read_file", {"file_path": path}),
        ("read_file", {"file_path": path, "offset": 1, "limit": 5}),
        ("write_file", {"file_path": path, "content": "pwned\n"}),
        ("edit_file", {"file_path": path, "old_string": "", "new_string": "pwned\n"}),
        ("edit_file", {"file_path": path, "old_string": CANARY, "new_string": "pwned"}),
        ("grep", {"pattern": "CANARY", "path": path}),
        ("glob", {"pattern": "**/*", "path": path}),
        ("ls", {"path": path}),
    ]
    for name, args in calls:
        msg = kit.call(name, **args)
        outputs.append(str(msg.content))
    return outputs


def test_a_hard_link_to_an_outside_file_is_neither_read_nor_written(kit: Kit, outside: Path) -> None:
    os.link(outside / "secret.txt", kit.root / "hl.txt")
    before = _snapshot(outside)
    read = kit.call("read_file", file_path="hl.txt")
    assert read.status == "error" and "hard link" in read.content and CANARY not in read.content
    paged = kit.call("read_file", file_path="hl.txt", offset=1, limit=1)
    assert CANARY not in paged.content
    for msg in (kit.call("grep", pattern="CANARY"), kit.call("grep", pattern="CANARY", path="hl.txt")):
        assert CANARY not in msg.content
    write = kit.call("write_file", file_path="hl.txt", content="overwritten\n")
    assert write.status == "error"
    edit = kit.call("edit_file", file_path="hl.txt", old_string="CANARY", new_string="x")
    assert edit.status == "error"
    assert _snapshot(outside) == before


def test_a_folder_swapped_for_a_symlink_while_every_tool_runs_escapes_nothing(kit: Kit, outside: Path) -> None:
    d = kit.root / "d"
    d.mkdir()
    (d / "f.txt").write_text("inside f\n")
    (d / "sub").mkdir()
    (d / "sub" / "deep.txt").write_text("inside deep\n")
    before = _snapshot(outside)
    stop = threading.Event()
    swaps = 0
    swapper_errors: list[BaseException] = []

    def put_back(parked: Path) -> None:
        """Return the real folder to d/, clearing whatever a tool or the swap left there."""
        while True:
            try:
                os.rename(parked, d)
                return
            except OSError:
                if d.is_symlink():
                    os.unlink(d)
                else:
                    shutil.rmtree(d, ignore_errors=True)

    def swapper() -> None:
        nonlocal swaps
        parked = kit.root / "d_parked"
        try:
            while not stop.is_set():
                try:
                    os.rename(d, parked)
                except OSError:  # d/ is briefly missing or busy; try again
                    time.sleep(0.0005)
                    continue
                try:
                    os.symlink(outside, d)
                except OSError:  # a tool recreated d/ in the gap
                    put_back(parked)
                    continue
                time.sleep(0.0005)
                put_back(parked)
                swaps += 1
                time.sleep(0.0005)
        except BaseException as exc:  # surface it in the test, not as a thread warning
            swapper_errors.append(exc)

    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    outputs: list[str] = []
    deadline = time.monotonic() + 3.0
    i = 0
    try:
        while time.monotonic() < deadline:
            i += 1
            for name, args in (
                ("read_file", {"file_path": "d/f.txt"}),
                ("read_file", {"file_path": "d/sub/deep.txt", "offset": 1, "limit": 3}),
                ("write_file", {"file_path": f"d/new_{i}.txt", "content": "x\n"}),
                ("write_file", {"file_path": f"d/sub/new_{i}.txt", "content": "x\n"}),
                ("edit_file", {"file_path": f"d/e_{i}.txt", "old_string": "", "new_string": "y\n"}),
                ("edit_file", {"file_path": "d/f.txt", "old_string": "f", "new_string": "f"}),
                ("grep", {"pattern": "CANARY|inside", "path": "d"}),
                ("grep", {"pattern": "CANARY", "path": "d/sub/deep.txt"}),
                ("glob", {"pattern": "**/*.txt", "path": "d"}),
                ("ls", {"path": "d/sub"}),
            ):
                outputs.append(str(kit.call(name, **args).content))
    finally:
        stop.set()
        thread.join()
    assert swapper_errors == []
    assert swaps > 20 and i > 5, f"the race barely ran ({swaps} swaps, {i} rounds)"
    leaked = [o for o in outputs if CANARY in o or "secret.txt" in o]
    assert leaked == []
    assert _snapshot(outside) == before, "a write landed outside the workspace"


def _attack_paths(outside: Path, root: Path) -> list[str]:
    o = str(outside)
    rel_out = os.path.relpath(outside, root)
    paths = [
        "../outside/secret.txt", "../outside", "../outside/sub/deep.txt", "../../", "..", "../",
        f"{rel_out}/secret.txt", f"{rel_out}/new.txt", f"{o}/secret.txt", o, f"{o}/new.txt", f"{o}/sub",
        f"/proc/self/root{o}/secret.txt", f"/proc/self/root{o}", f"/proc/self/cwd/{rel_out}/secret.txt",
        "/proc/self/root", "/proc/self/environ", "/proc/self/fd/0", "/dev/stdin", "/dev/zero", "/etc/passwd",
        "/", "//etc/passwd", "./../outside/secret.txt", "a/../../outside/secret.txt", "a/b/../../../outside",
        "link_dir/secret.txt", "link_dir", "link_dir/sub/deep.txt", "link_dir/new.txt", "link_file",
        "link_chain", "link_rel/secret.txt", "link_proc/secret.txt", "loop", "loop/x", "hl.txt", "sub/hl2.txt",
        "link_to_hl", "secret\x00.txt", "../outside/secret.txt\x00.py", "\x00", "~/secret.txt", "~root",
        "..\\outside\\secret.txt", "C:\\Windows", "C:/x", "\\\\server\\share", "%2e%2e/outside/secret.txt",
        "\u2024\u2024/outside/secret.txt", "\uff0e\uff0e/outside/secret.txt", "..\u2215outside\u2215secret.txt",
        "\u202e../outside", "..\u200b/outside/secret.txt", "\u2025/outside", "x" * 300, "a/" * 2500 + "f",
        ("d/" * 1000) + "../" * 1001 + "outside/secret.txt", "../outside/./secret.txt", "....//outside",
        " ../outside/secret.txt", "../outside/secret.txt ", "\n../outside", "fifo", "link_fifo",
        "link_abs_inside_then_out/secret.txt", "sub/../../outside/secret.txt", "sub/link_up/secret.txt",
    ]
    return paths


def test_a_corpus_of_hostile_paths_through_every_file_tool_escapes_nothing(kit: Kit, outside: Path) -> None:
    root = kit.root
    (root / "sub").mkdir()
    (root / "sub" / "ok.txt").write_text("fine\n")
    os.symlink(outside, root / "link_dir")
    os.symlink(outside / "secret.txt", root / "link_file")
    os.symlink("link_file", root / "link_chain")
    os.symlink(os.path.relpath(outside, root), root / "link_rel")
    os.symlink(f"/proc/self/root{outside}", root / "link_proc")
    os.symlink("loop", root / "loop")
    os.link(outside / "secret.txt", root / "hl.txt")
    os.link(outside / "f.txt", root / "sub" / "hl2.txt")
    os.symlink("hl.txt", root / "link_to_hl")
    os.mkfifo(root / "fifo")
    os.mkfifo(outside / "pipe")
    os.symlink(outside / "pipe", root / "link_fifo")
    os.symlink(str(root / "link_dir"), root / "link_abs_inside_then_out")
    os.symlink("../..", root / "sub" / "link_up")
    before = _snapshot(outside)
    paths = _attack_paths(outside, root)
    attempts = 0
    leaks: list[tuple[str, str]] = []
    for path in paths:
        for out in _call_every_tool(kit, path):
            attempts += 1
            if CANARY in out:
                leaks.append((path, out[:200]))
    for pattern in ("../outside/*", "/**/*", "**/../../*", "link_dir/**"):
        attempts += 1
        out = str(kit.call("glob", pattern=pattern).content)
        if "secret.txt" in out or "deep.txt" in out:
            leaks.append((pattern, out[:200]))
    for glob in ("../**", "/etc/*", "link_dir/**"):
        attempts += 1
        out = str(kit.call("grep", pattern="CANARY", glob=glob).content)
        if CANARY in out:
            leaks.append((glob, out[:200]))
    whole = str(kit.call("grep", pattern="CANARY").content)
    attempts += 1
    if CANARY in whole:
        leaks.append((".", whole[:200]))
    assert attempts >= 300
    assert leaks == []
    assert _snapshot(outside) == before
    assert (root / "sub" / "ok.txt").read_text() == "fine\n"
