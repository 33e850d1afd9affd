"""The file tools' race-free open: :mod:`mtagent.safe_open`, re-exported under its old name.

The primitive moved below the engine so every reader of project content (rules, agent profiles,
the recall indexer, skills) opens files the same way the tools do (see :mod:`mtagent.confine`).
"""

from mtagent.safe_open import NotRegularFile, Opened, lstat_in, open_dir, open_file, reading, split_under

__all__ = ["NotRegularFile", "Opened", "lstat_in", "open_dir", "open_file", "reading", "split_under"]
