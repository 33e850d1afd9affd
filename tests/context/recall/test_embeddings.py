"""recall.embeddings: provider:model → a LangChain Embeddings, or a clear config error."""

from __future__ import annotations

import pytest

from mtagent.context.recall.embeddings import make_embeddings
from mtagent.errors import ConfigError


def test_unset_means_keyword_search() -> None:
    assert make_embeddings(None) is None and make_embeddings("") is None


@pytest.mark.parametrize("spec", ["text-embedding-3-small", "acme:model", "openai:", ":x"])
def test_bad_specs_say_what_to_write(spec: str) -> None:
    with pytest.raises(ConfigError, match="provider:model"):
        make_embeddings(spec)


def test_openai_embeddings_are_built_without_a_network_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    client = make_embeddings("openai:text-embedding-3-small")
    assert type(client).__name__ == "OpenAIEmbeddings" and client.model == "text-embedding-3-small"
