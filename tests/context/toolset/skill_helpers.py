"""Helpers of the skills tests: a skill folder on disk."""

from __future__ import annotations

from pathlib import Path


def write_skill(root: Path, name: str, description: str = "Does a thing.", body: str = "Step 1.",
                folder: str = ".mtagent/skills") -> Path:
    path = root / folder / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}\n")
    return path
