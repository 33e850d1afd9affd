"""``recall.embeddings = "provider:model"`` → a LangChain ``Embeddings`` (or None: keyword only).

Only providers whose LangChain package is installed can be named; nothing is downloaded. A
library user can pass any ``Embeddings`` object to :class:`~mtagent.context.recall.Recaller`.
"""

from __future__ import annotations

import importlib

from mtagent.context.recall.vectors import Embeddings
from mtagent.errors import ConfigError

PROVIDERS: dict[str, tuple[str, str]] = {
    "openai": ("langchain_openai", "OpenAIEmbeddings"),
    "ollama": ("langchain_ollama", "OllamaEmbeddings"),
}


def make_embeddings(spec: str | None) -> Embeddings | None:
    """The embedding client ``spec`` names, or None when recall should search by keywords only."""
    if not spec:
        return None
    provider, _, model = spec.partition(":")
    if provider not in PROVIDERS or not model:
        raise ConfigError(f"recall.embeddings {spec!r} is not provider:model; use one of "
                          f"{', '.join(p + ':<model>' for p in PROVIDERS)} (or unset it for keyword search)")
    module_name, class_name = PROVIDERS[provider]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"recall.embeddings needs the {module_name.replace('_', '-')} package: "
                          f"pip install {module_name.replace('_', '-')}") from exc
    try:
        return getattr(module, class_name)(model=model)  # type: ignore[no-any-return]
    except Exception as exc:  # noqa: BLE001 - e.g. a missing API key: say what to fix
        raise ConfigError(f"recall.embeddings {spec!r} could not be set up: {exc}") from exc
