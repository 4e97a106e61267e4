"""Progress messages through the standard ``logging`` module.

The library logs to the ``"gpu_tree"`` logger (binning done, each tree level grown, each
benchmark fit) and attaches only a ``NullHandler``, so a program that uses gpu_tree sees
nothing unless it configures logging itself, e.g.
``logging.getLogger("gpu_tree").addHandler(logging.StreamHandler())`` with level INFO.
The ``gputree`` command line installs a handler on standard error (:func:`install_handler`)
when that is a terminal or ``--verbose`` is given, and none with ``--quiet``.
"""

from __future__ import annotations

import contextlib
import logging
import time

logger = logging.getLogger("gpu_tree")
if not any(isinstance(handler, logging.NullHandler) for handler in logger.handlers):
    logger.addHandler(logging.NullHandler())
# Children, so that a caller can tune them apart: each tree level, and binning.
grower_logger = logging.getLogger("gpu_tree.grower")
binning_logger = logging.getLogger("gpu_tree.binning")


@contextlib.contextmanager
def quieter(*loggers, level=logging.WARNING):
    """Raise ``loggers``' threshold to ``level`` for a while (a benchmark's many fits)."""
    before = [one.level for one in loggers]
    for one in loggers:
        one.setLevel(level)
    try:
        yield
    finally:
        for one, old in zip(loggers, before, strict=True):
            one.setLevel(old)


class _ElapsedFormatter(logging.Formatter):
    """``gputree [  1.23 s] message``: seconds since the handler was installed."""

    def __init__(self):
        super().__init__()
        self.start = time.perf_counter()

    def format(self, record):
        elapsed = time.perf_counter() - self.start
        return f"gputree [{elapsed:7.2f} s] {record.getMessage()}"


def install_handler(stream, *, verbose: bool, quiet: bool):
    """Show progress on ``stream`` when it is a terminal (INFO) or when ``verbose`` (DEBUG);
    nothing when ``quiet``. Returns a function that removes what was installed."""
    if quiet:
        return lambda: None
    is_terminal = bool(getattr(stream, "isatty", lambda: False)())
    if not (verbose or is_terminal):
        return lambda: None
    handler = logging.StreamHandler(stream)
    handler.setFormatter(_ElapsedFormatter())
    level = logging.DEBUG if verbose else logging.INFO
    handler.setLevel(level)
    previous_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(level)

    def remove():
        logger.removeHandler(handler)
        logger.setLevel(previous_level)

    return remove
