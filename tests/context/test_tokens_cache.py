"""The decoded vocabulary is cached in $MTAGENT_HOME/cache; a damaged or hostile cache is ignored."""

from __future__ import annotations

import marshal

import pytest

from mtagent.context import tokens

HASH = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"  # o200k_base, tiktoken's constant


@pytest.fixture
def fresh(mtagent_home):
    from tiktoken_ext import openai_public  # noqa: F401  (the constructor supplies the real hash)

    return tokens._ranks_cache("o200k_base", HASH)


def test_ranks_are_decoded_once_then_read_back_equal(fresh):
    first = tokens.load_bundled_ranks("o200k_base", HASH)
    assert fresh is not None and fresh.is_file()
    assert tokens.load_bundled_ranks("o200k_base", HASH) == first


@pytest.mark.parametrize("damage", [b"", b"\x00garbage", marshal.dumps({"not": "bytes"}), marshal.dumps([1, 2, 3])])
def test_a_damaged_cache_is_ignored_and_rewritten(fresh, damage):
    fresh.parent.mkdir(parents=True, exist_ok=True)
    fresh.write_bytes(damage)
    ranks = tokens.load_bundled_ranks("o200k_base", HASH)
    assert len(ranks) > 100_000 and isinstance(next(iter(ranks)), bytes)
    assert tokens._read_cached_ranks(fresh) == ranks  # rewritten whole


def test_odd_names_and_hashes_get_no_cache_file():
    assert tokens._ranks_cache("../../etc/passwd", HASH) is None
    assert tokens._ranks_cache("o200k_base", "../x") is None and tokens._ranks_cache("o200k_base", None) is None
