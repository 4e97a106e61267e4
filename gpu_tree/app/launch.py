"""The ``gputree`` command's entry point.

The command line imports numpy, numba and the estimators, which takes a second or more.
An interrupt in that time would print Python's traceback, so this module, which imports
nothing heavy, sets the interrupt handlers first and only then loads the command.
"""

from __future__ import annotations

import signal
import sys

from gpu_tree.app.interrupts import INTERRUPTS, Interrupted, raise_interrupted


def main():
    """``gputree``: interrupts raise :class:`Interrupted` from the first moment."""
    for sig in INTERRUPTS:
        signal.signal(sig, raise_interrupted)
    try:
        from gpu_tree.app.cli import main as command

        command()
    except Interrupted as exc:  # before the command's own handling, or after it
        sys.stderr.write(f"gputree: error: {exc.message}\n")
        sys.exit(exc.exit_status)
