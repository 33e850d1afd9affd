"""Ctrl-C for the person at the terminal, whatever started the process.

A non-interactive shell starts ``… &`` with SIGINT set to "ignore", and a process inherits that.
When such a process is nevertheless the one the user is typing at — stdin is a terminal whose
foreground process group is ours (a script's ``mtagent & wait`` in a terminal, a test harness) —
the ignore is an accident of how it was started, not a wish: the REPL promises that Ctrl-C stops
the turn, and ``run`` that it exits 130. A real background job (not the terminal's foreground
group) or a process without a terminal keeps the ignore its starter chose.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import TextIO


def user_is_typing_here(stream: TextIO | None = None) -> bool:
    """Whether ``stream`` (stdin) is a terminal and this process is in its foreground group."""
    stream = sys.stdin if stream is None else stream
    try:
        fd = stream.fileno()
        return os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp()
    except (AttributeError, OSError, ValueError):
        return False


def restore_ctrl_c(stream: TextIO | None = None) -> bool:
    """Give SIGINT back its KeyboardInterrupt when it was inherited as ignored and the user is
    typing at this process; True when it did."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN or not user_is_typing_here(stream):
        return False
    signal.signal(signal.SIGINT, signal.default_int_handler)
    return True
