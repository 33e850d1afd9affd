"""The model's streamed answer wraps at words on a terminal, never mid-word (issue 36)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from mtagent.cli.stream_wrap import StreamWrap
from mtagent.cli.turn_display import TurnDisplay

TEXT = ("The quick brown fox jumps over the lazy dog and keeps running far away from the farmer's field.\n"
        "A second paragraph, with supercalifragilisticexpialidocious-and-then-some words.")


def _stream(text: str, width: int, size: int) -> str:
    wrap = StreamWrap(width)
    return "".join(wrap.feed(text[i:i + size]) for i in range(0, len(text), size))


def test_no_line_is_longer_than_the_width_unless_one_word_is() -> None:
    out = _stream(TEXT, 30, 500)  # whole words in a piece: every break falls between words
    for line in out.split("\n"):
        assert len(line.rstrip()) <= 30 or " " not in line.strip(), line
    assert "field." in out and "supercalifragilisticexpialidocious-and-then-some" in out


@given(st.text(alphabet=st.sampled_from("ab cd\nefghé中 "), max_size=300), st.integers(1, 9),
       st.integers(5, 40))
def test_wrapping_only_turns_spaces_into_line_breaks(text: str, size: int, width: int) -> None:
    out = _stream(text, width, size)
    assert re.sub(r"\s+", " ", out).strip() == re.sub(r"\s+", " ", text).strip()
    assert [w for w in re.split(r"\s+", out) if w] == [w for w in re.split(r"\s+", text) if w]  # no word split


def test_a_terminal_display_wraps_at_words_and_a_pipe_gets_the_text_as_it_came() -> None:
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho"
    tty = Console(width=40, force_terminal=True, record=True, color_system=None)
    display = TurnDisplay(console=tty, activity=tty)
    for piece in re.findall(r" ?\S+", words):  # as a model streams: a word with the space before it
        display.on_token(piece)
    display.end_text()
    shown = tty.export_text()
    assert all(len(line.rstrip()) <= 40 for line in shown.splitlines())
    assert set(re.split(r"\s+", shown.strip())) == set(words.split())
    pipe = Console(width=40, force_terminal=False, record=True)
    plain = TurnDisplay(console=pipe, activity=pipe)
    for i in range(0, len(words), 5):
        plain.on_token(words[i:i + 5])
    plain.end_text()
    assert pipe.export_text().strip() == words
