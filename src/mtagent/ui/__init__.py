"""The explain UI (spec 003): sessions, model calls and context plans in a local browser page.

``create_app(UiOptions(...))`` is the ASGI app; ``mtagent ui`` serves it with uvicorn
(:func:`mtagent.ui.server.serve`). The web stack is the optional ``[ui]`` extra, so nothing
here is imported by the rest of mtagent.
"""

from __future__ import annotations

from mtagent.ui.app import UiOptions, create_app

__all__ = ["UiOptions", "create_app"]
