"""The one reader of project content (``mtagent.confine``), attacked by generated paths and a race:
whatever a hostile repository spells, nothing outside the project is read (#27)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mtagent import confine
from mtagent.config import MemorySettings
from mtagent.context.static.rules import load_rules
from security.test_recall_workspace_confinement import flipping, remove_nested

CANARY = "CANARY-OUTSIDE-prop-77ab"
SEGMENTS = ["..", ".", "~", "outside", "secret.md", "link_out", "link_in", "hard.md", "docs", "ok.md",
            "proc", "self", "environ", "", "link_file", "loop", "dev", "fd", "3"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("confine")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"{CANARY}\n")
    (outside / "ok.md").write_text(f"{CANARY} ok\n")
    project = base / "p"
    (project / "docs").mkdir(parents=True)
    (project / "docs" / "ok.md").write_text("inside text\n")
    (project / "ok.md").write_text("inside text\n")
    (project / "link_out").symlink_to(outside)
    (project / "link_in").symlink_to(project / "docs")
    (project / "link_file").symlink_to(outside / "secret.md")
    (project / "loop").symlink_to(project / "loop")
    os.link(outside / "secret.md", project / "hard.md")
    return project


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=6), absolute=st.booleans())
def test_no_spelling_reads_outside_the_project(tree: Path, parts: list[str], absolute: bool) -> None:
    spelled = "/".join(parts)
    if absolute:
        spelled = "/" + spelled
    result = confine.read_text(tree, os.path.expanduser(spelled) if spelled.startswith("~") else spelled)
    if result.text is not None:
        assert CANARY not in result.text
        assert result.path == tree or tree in result.path.parents
    else:
        assert result.problem


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=5))
def test_no_include_reads_outside_the_project(tree: Path, parts: list[str]) -> None:
    (tree / "CONTEXT.md").write_text(f"@{'/'.join(parts)}\n")
    try:
        rules = load_rules(tree, MemorySettings())
    finally:
        (tree / "CONTEXT.md").unlink()
    assert all(CANARY not in r.text for r in rules.rules)


@pytest.mark.parametrize(("pattern", "path", "allowed"), [
    ("~/notes/*.md", "~/notes/a.md", True),
    ("~/notes/*.md", "~/notes/sub/a.md", False),
    ("~/notes/**/*.md", "~/notes/sub/a.md", True),
    ("~/notes/*.md", "~/notes/a.txt", False),
    ("~/notes/../.ssh/*", "~/.ssh/id_rsa", True),  # normalised: what the user wrote is what they allowed
    ("notes/*.md", "notes/a.md", False),  # relative: would mean "in whatever project is open"
    ("/**", "/etc/hosts", True),
])
def test_external_patterns(pattern: str, path: str, allowed: bool) -> None:
    target = Path(os.path.expanduser(path)).absolute()
    assert confine.externally_allowed(target, [pattern]) is allowed


def test_many_double_stars_stay_fast() -> None:
    import time

    began = time.perf_counter()
    assert not confine.externally_allowed(Path("/a/" + "b/" * 60 + "c"), ["/" + "**/" * 12 + "x"])
    assert time.perf_counter() - began < 1.0


def test_never_read_trees_stay_refused_when_allowed(tree: Path) -> None:
    for spelled in ("/proc/self/environ", "/dev/zero", "/sys/kernel/hostname", "/proc/self/root/etc/hostname"):
        result = confine.read_text(tree, spelled, allow_external=["/**"])
        assert result.text is None and result.problem, spelled


def test_a_folder_swapped_for_a_symlink_during_loads_never_leaks(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.md").write_text(f"{CANARY}\n")
    project = tmp_path / "p"
    (project / "docs").mkdir(parents=True)
    (project / "docs" / "x.md").write_text("inside text\n")
    (project / "CONTEXT.md").write_text("@docs/x.md\n")
    leaks = loads = 0
    deadline = time.monotonic() + 2.0
    with flipping(project / "docs", outside):
        while time.monotonic() < deadline:
            rules = load_rules(project, MemorySettings())
            loads += 1
            leaks += any(CANARY in r.text for r in rules.rules)
    assert loads > 50 and leaks == 0


def test_a_deeply_nested_rules_tree_is_a_short_walk_not_a_crash(tmp_path: Path) -> None:
    folder = tmp_path / "p" / ".mtagent" / "rules"
    (folder / "top.md").parent.mkdir(parents=True)
    (folder / "top.md").write_text("top rule\n")
    try:
        here = folder
        for _ in range(1_400):  # ~2,800 path characters: under PATH_MAX, far past the recursion limit
            here = here / "a"
            here.mkdir()
        (here / "deep.md").write_text("deep rule\n")
        (folder / "a" / "shallow.md").write_text("shallow rule\n")
        rules = load_rules(tmp_path / "p", MemorySettings())
    finally:
        remove_nested(folder)
    assert [r.text for r in rules.rules] == ["shallow rule", "top rule"]


# ── planted-bug tests (#33): the suite stayed green with /sys dropped from the trees never read and with
# the last component's O_NOFOLLOW gone; each of these fails then ──

@pytest.mark.parametrize("special", ["/sys/devices/system/cpu/online", "/proc/self/status", "/dev/null"])
def test_proc_dev_and_sys_are_never_read_even_when_the_user_allows_them(tmp_path: Path, special: str) -> None:
    if not os.path.exists(special):
        pytest.skip(f"{special} does not exist on this machine")
    top = "/" + special.split("/")[1]
    result = confine.read_text(tmp_path, special, allow_external=[f"{top}/**", "/**"])
    assert result.text is None and "never reads" in (result.problem or ""), result


def test_a_file_swapped_for_a_symlink_after_resolution_is_not_followed(tmp_path: Path, monkeypatch) -> None:
    project, outside = tmp_path / "p", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (outside / "secret").write_text("CANARY-outside\n")
    (project / "notes.md").write_text("inside\n")
    resolve = confine._resolve

    def resolve_then_swap(path: Path) -> Path | None:
        resolved = resolve(path)  # what the check sees; the attacker swaps the file right after
        if resolved is not None and resolved.name == "notes.md":
            resolved.unlink()
            resolved.symlink_to(outside / "secret")
        return resolved

    monkeypatch.setattr(confine, "_resolve", resolve_then_swap)
    result = confine.read_text(project, "notes.md")
    assert result.text is None or "CANARY" not in result.text, "the swapped-in symlink was followed"
    assert result.text is None and "refused" in (result.problem or ""), result


def test_open_file_refuses_a_symlink_as_the_last_component(tmp_path: Path) -> None:
    from mtagent import safe_open
    from mtagent.errors import WorkspacePathError

    (tmp_path / "outside").write_text("CANARY\n")
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to(tmp_path / "outside")
    with pytest.raises(WorkspacePathError):
        safe_open.open_file((root,), root / "link")
