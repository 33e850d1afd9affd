"""Word-wrap for text that arrives a piece at a time (the model's streamed answer) on a terminal.

A terminal wraps a long line wherever the column ends, in the middle of a word; rich wraps whole
texts but not a stream. :class:`StreamWrap` remembers the column the last piece ended at and starts
a new line before a word that would cross the edge. Nothing is held back (whatever else is printed
between two pieces stays in order) and nothing is added inside a word: a word longer than the
line, or one whose piece continues a word already printed, is left to the terminal; a line break
the model wrote resets the column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rich.cells import cell_len

_TOKEN = re.compile(r"\n|[ \t]+|[^\s]+")


@dataclass
class StreamWrap:
    width: int
    column: int = 0
    _in_word: bool = False  # the last piece ended inside a word: a piece that goes on with it is not a new word

    def feed(self, text: str) -> str:
        """What to print for ``text``: the same characters, with a line break before a word that
        would cross the edge (the spaces before it stay at the end of the line)."""
        out: list[str] = []
        for token in _TOKEN.findall(text):
            if token == "\n":
                self.column, self._in_word = 0, False
            elif token.isspace():
                self._in_word = False
            else:
                if not self._in_word and self.column and self.column + cell_len(token) > self.width:
                    out.append("\n")
                    self.column = 0
                self._in_word = True
            if token != "\n":
                self.column += cell_len(token)
            out.append(token)
        return "".join(out)
