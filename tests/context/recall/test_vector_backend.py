"""recall.embeddings names a LangChain Embeddings (provider:model) or is a clear config error; which vector
backend answers a hybrid search — sqlite-vec or exact cosine in Python — is explicit (one line in
``mtagent recall`` / ``/recall``), and both give the same answer."""

from __future__ import annotations

import importlib.util
import sqlite3
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from mtagent.context.recall import Recaller, RecallIndexer, driver, vectors
from mtagent.context.recall.driver import SQLITE, choose_driver, vector_fallback_reason
from mtagent.context.recall.embeddings import make_embeddings
from mtagent.context.recall.render import render_hits
from mtagent.errors import ConfigError
from mtagent.session import schema

VEC_READY = vector_fallback_reason(SQLITE) is None


def _indexer(tmp_path: Path) -> RecallIndexer:
    indexer = RecallIndexer(tmp_path, in_memory=True)
    for i, text in enumerate(["the parser drops trailing commas", "deploy staging with argo rollouts",
                              "the cache key misses the tenant", "bake bread at noon"]):
        indexer.add_record(schema.message_to_record(HumanMessage(text, id=f"m{i}")), "s1")
    return indexer


def test_the_python_fallback_is_explicit_and_still_searches(tmp_path: Path, monkeypatch, embeddings) -> None:
    monkeypatch.setattr(vectors, "_try_sqlite_vec", lambda store: False)
    monkeypatch.setattr(vectors, "vector_fallback_reason", lambda d: "this Python's sqlite3 cannot load extensions")
    recaller = Recaller(_indexer(tmp_path), embeddings)
    assert recaller.vectors is not None and recaller.vectors.backend == "python"
    assert recaller.mode == "hybrid (python vectors)"
    assert recaller.vector_backend == ("vector backend: python (exact cosine in Python, because this Python's "
                                       "sqlite3 cannot load extensions)")
    assert recaller.search("tenant cache", k=1)[0].message_id == "m2"
    text = render_hits("tenant cache", recaller.search("tenant cache"), mode=recaller.mode,
                       backend=recaller.vector_backend)
    assert text.splitlines()[-1].startswith("vector backend: python")
    assert "vector backend" not in render_hits("tenant cache", [], mode=recaller.mode)  # the model's tool


def test_keyword_only_says_so_and_what_embeddings_would_use(tmp_path: Path) -> None:
    line = Recaller(_indexer(tmp_path)).vector_backend
    assert line.startswith("vector backend: none (keyword search; recall.embeddings is not set — with it: ")
    assert line.endswith("sqlite-vec)") if VEC_READY else "python cosine, because" in line


@pytest.mark.skipif(not VEC_READY, reason=f"sqlite-vec cannot load here: {vector_fallback_reason(SQLITE)}")
def test_sqlite_vec_answers_when_it_can_load_and_agrees_with_python(tmp_path: Path, embeddings) -> None:
    recaller = Recaller(_indexer(tmp_path), embeddings)
    assert recaller.vectors is not None and recaller.vectors.backend == "sqlite-vec"
    assert recaller.vector_backend == f"vector backend: sqlite-vec (in {SQLITE.name}'s SQLite)"
    recaller.indexer.flush()
    assert recaller.vectors.refresh() == 4
    rows = recaller.store.execute("SELECT count(*) FROM vec_items")
    assert rows[0][0] == 4  # the vectors really are in sqlite-vec's table
    nearest = recaller.vectors.search("deploy argo", 4)
    python = vectors.VectorIndex(recaller.store, embeddings)
    python.backend = "python"
    assert [r for r, _ in nearest] == [r for r, _ in python.search("deploy argo", 4)]
    assert [round(s, 4) for _, s in nearest] == [round(s, 4) for _, s in python.search("deploy argo", 4)]


def test_driver_choice_order(monkeypatch) -> None:
    stdlib_loads = hasattr(sqlite3.Connection, "enable_load_extension")
    monkeypatch.setattr(driver, "_installed", lambda name: False)
    plain = choose_driver()
    assert plain.module is sqlite3 and plain.loads_extensions == stdlib_loads
    assert "sqlite-vec package is not installed" in (vector_fallback_reason(plain) or "")
    monkeypatch.setattr(driver, "_installed", lambda name: name == "sqlite_vec")
    if not stdlib_loads:
        no_pysqlite = choose_driver()
        assert no_pysqlite.module is sqlite3 and not no_pysqlite.loads_extensions
        assert "cannot load extensions" in (vector_fallback_reason(no_pysqlite) or "")
    if not stdlib_loads and importlib.util.find_spec("pysqlite3") is not None:
        monkeypatch.setattr(driver, "_installed", lambda name: True)
        chosen = choose_driver()
        assert chosen.name == "pysqlite3" and chosen.loads_extensions


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
