"""Run on Dask workers by the tests (imported there by name, so it imports nothing)."""

from __future__ import annotations


def loaded(names):
    """Which of the module ``names`` this process has imported."""
    import sys

    return [name for name in names if name in sys.modules]


def report_frozen_at_exit(path):
    """At this process's exit, after the exit handlers registered later (they run first),
    write how many objects the garbage collector holds frozen to ``path``."""
    import atexit
    import gc
    from pathlib import Path

    atexit.register(lambda: Path(path).write_text(str(gc.get_freeze_count())))
