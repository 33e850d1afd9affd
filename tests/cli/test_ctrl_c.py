"""Ctrl-C is given back only to a process the user is typing at (mtagent.cli.ctrl_c)."""

from __future__ import annotations

import io
import os
import signal

import pytest

from mtagent.cli import ctrl_c


class Tty(io.StringIO):
    def fileno(self) -> int:
        return 0


@pytest.fixture
def sigint_ignored():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    yield
    signal.signal(signal.SIGINT, previous)


def _terminal(monkeypatch, *, tty: bool, foreground: bool) -> None:
    monkeypatch.setattr(os, "isatty", lambda fd: tty)
    monkeypatch.setattr(os, "tcgetpgrp", lambda fd: os.getpgrp() if foreground else os.getpgrp() + 1)


def test_an_inherited_ignore_is_undone_for_the_terminals_foreground_process(sigint_ignored, monkeypatch):
    _terminal(monkeypatch, tty=True, foreground=True)
    assert ctrl_c.restore_ctrl_c(Tty()) is True
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.parametrize(("tty", "foreground"), [(False, True), (True, False)])
def test_a_background_job_or_a_process_without_a_terminal_keeps_the_ignore(sigint_ignored, monkeypatch,
                                                                           tty, foreground):
    _terminal(monkeypatch, tty=tty, foreground=foreground)
    assert ctrl_c.restore_ctrl_c(Tty()) is False
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_a_handler_someone_set_is_left_alone(monkeypatch):
    _terminal(monkeypatch, tty=True, foreground=True)
    mine = lambda signum, frame: None  # noqa: E731
    previous = signal.signal(signal.SIGINT, mine)
    try:
        assert ctrl_c.restore_ctrl_c(Tty()) is False
        assert signal.getsignal(signal.SIGINT) is mine
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_stream_without_a_descriptor_is_not_a_terminal():
    assert ctrl_c.user_is_typing_here(io.StringIO()) is False
