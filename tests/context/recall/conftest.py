"""Fixtures of the recall tests."""

from __future__ import annotations

import hashlib

import pytest


class BagOfWordsEmbeddings:
    """Deterministic fake Embeddings: hashed bag of words with a tiny synonym table, 64 dims (no model, no network)."""

    SYNONYMS = {"automobile": "car", "vehicle": "car"}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        vec = [0.0] * 64
        for word in text.lower().split():
            word = self.SYNONYMS.get(word.strip(".,"), word.strip(".,"))
            vec[int(hashlib.sha256(word.encode()).hexdigest(), 16) % 64] += 1.0
        return vec


@pytest.fixture
def embeddings() -> BagOfWordsEmbeddings:
    return BagOfWordsEmbeddings()
