"""What a terminal shows: a command run on a pseudo-terminal (its standard output and
error both, as in a user's shell), its bytes played through a VT100 emulator (pyte), and
the screen's lines read back, carriage returns, cursor moves and line wraps applied."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import tempfile
import termios
from typing import NamedTuple

import pytest


class Shown(NamedTuple):
    lines: list[str]  # the screen's non-blank lines, top to bottom, right-trimmed
    raw: bytes  # what the command wrote on the terminal
    returncode: int
    stdout: str | None  # its standard output where that was no terminal, else None


def screen_lines(raw: bytes, columns: int, rows: int = 400) -> list[str]:
    """The non-blank lines a ``columns``-wide terminal shows after ``raw``."""
    pyte = pytest.importorskip("pyte")
    screen = pyte.Screen(columns, rows)
    # a new line returns the carriage too, as a terminal's line discipline makes it
    # (ONLCR) for a program that writes "\n": what a StringIO standing in for one holds
    screen.set_mode(pyte.modes.LNM)
    pyte.ByteStream(screen).feed(raw)
    return [line.rstrip() for line in screen.display if line.strip()]


def run_on_terminal(
    argv, *, cwd, env=None, columns=80, timeout=600, stdout_on_terminal=True
) -> Shown:
    """Run ``argv`` with its standard error (and output, unless ``stdout_on_terminal`` is
    false: then a file's) on a pseudo-terminal of ``columns`` columns; what it showed."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    with tempfile.TemporaryFile() as output:
        child = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=terminal if stdout_on_terminal else output,
            stderr=terminal,
        )
        os.close(terminal)
        written = bytearray()
        try:
            while True:
                try:
                    chunk = os.read(controller, 65536)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                written += chunk
            child.wait(timeout=timeout)
        finally:
            os.close(controller)
            if child.poll() is None:
                child.kill()
                child.wait()
        output.seek(0)
        stdout = None if stdout_on_terminal else output.read().decode()
    raw = bytes(written)
    return Shown(screen_lines(raw, columns), raw, child.returncode, stdout)
