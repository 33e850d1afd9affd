"""README and docs/: every link stays inside the repository and points at a file that exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)|<(https?://[^>]+)>")


def _links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)  # code is not a link
    return [next(g for g in m.groups() if g) for m in LINK.finditer(text)]


def test_no_link_leaves_the_repository():
    outside = [(p.name, link) for p in PAGES for link in _links(p) if re.match(r"^[a-z][a-z0-9+.-]*:", link)]
    assert outside == []


def test_every_relative_link_resolves():
    broken = []
    for page in PAGES:
        for link in _links(page):
            target = link.split("#", 1)[0]
            if target and not (page.parent / target).resolve().exists():
                broken.append((page.name, link))
    assert broken == []


def test_the_readme_indexes_every_docs_page():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [p.name for p in PAGES[1:] if f"(docs/{p.name})" not in readme]
    assert missing == []
