"""Progress through the standard ``logging`` module: lines, or bars drawn from the same
records.

The library logs to the ``"gpu_tree"`` logger (file read, binning done, each tree level
grown, each benchmark fit) and attaches only a ``NullHandler``, so a program that uses
gpu_tree sees nothing unless it asks: ``verbose=1`` on an estimator draws progress bars
during its fit, ``verbose=2`` prints the records as lines, or a program configures logging
itself, e.g. ``logging.getLogger("gpu_tree").addHandler(logging.StreamHandler())`` with
level INFO. The ``gputree`` command line draws bars on standard error when that is a
terminal, prints lines with ``--verbose``, and nothing with ``--quiet``.

A record that moves a stage forward carries ``extra={"progress": step(...)}``: the
stage's name, the step reached, the total where known (growing to ``max_depth``: its
levels; a file: its bytes), and whether the stage is done. :class:`_BarHandler` turns them
into tqdm bars (rate, elapsed time and, where the total is known, ETA); the line handler
prints them as the messages they are. So the library says what happened once, and each
display shows it its own way.
"""

from __future__ import annotations

import contextlib
import logging
import sys
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


def step(stage: str, reached: int, total: int | None = None, *, unit="step", done=False):
    """The ``progress`` a record carries: ``stage`` has reached step ``reached`` of
    ``total`` (None: not known ahead), counted in ``unit``; ``done``: the stage ended."""
    return {
        "progress": {"stage": stage, "reached": reached, "total": total, "unit": unit, "done": done}
    }


class _ElapsedFormatter(logging.Formatter):
    """``gputree [  1.23 s] message``: seconds since the handler was installed."""

    def __init__(self, prefix="gputree"):
        super().__init__()
        self.prefix = prefix
        self.start = time.perf_counter()

    def format(self, record):
        elapsed = time.perf_counter() - self.start
        return f"{self.prefix} [{elapsed:7.2f} s] {record.getMessage()}"


# tqdm's layout without the rate: "stage: 40%|####      | 2/5 [00:01<00:01]" (a total
# known), "stage: 7 level [00:03]" (none).
_COUNT_BAR = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}]"
_OPEN_COUNT = "{desc}: {n_fmt} {unit} [{elapsed}]"


class _BarHandler(logging.Handler):
    """Progress records as tqdm bars, one per stage at a time; other records as lines
    written above the bars (tqdm.write), so neither garbles the other."""

    def __init__(self, stream, prefix):
        super().__init__(logging.INFO)
        self.stream = stream
        self.setFormatter(_ElapsedFormatter(prefix))
        self.prefix = prefix
        self.bars = {}

    def emit(self, record):
        try:
            progress = getattr(record, "progress", None)
            if progress is None:
                from tqdm import tqdm

                tqdm.write(self.format(record), file=self.stream)
                return
            if self._advance(progress):  # a stage's last record: its message stays
                from tqdm import tqdm

                tqdm.write(self.format(record), file=self.stream)
        except Exception:  # a display must never stop the work
            self.handleError(record)

    def _advance(self, progress):
        from tqdm import tqdm

        stage, total = progress["stage"], progress["total"]
        bar = self.bars.get(stage)
        if bar is None:
            bytes_ = progress["unit"] == "B"
            bar = tqdm(
                desc=f"{self.prefix}: {stage}",
                total=total,
                unit=progress["unit"],
                unit_scale=bytes_,
                unit_divisor=1024 if bytes_ else 1000,
                file=self.stream,
                dynamic_ncols=True,
                # A bar inside another (a tree's levels in a forest) is cleared when done:
                # tqdm redraws a finished inner bar over the outer one's line, and its
                # done record's message says what it reached.
                leave=not self.bars,
                # A rate of levels, features or trees read as noise ("170879.05feature/s"):
                # only bytes show theirs.
                **({} if bytes_ else {"bar_format": _COUNT_BAR if total else _OPEN_COUNT}),
            )
            self.bars[stage] = bar
        if total is not None and bar.total != total:
            bar.total = total
        reached = progress["reached"]
        if progress["done"]:
            bar.total = reached  # where growth stopped early too, the bar ends full
        bar.update(max(0, reached - bar.n))
        if progress["done"]:
            bar.close()
            del self.bars[stage]
            return True
        return False

    def close(self):
        for bar in self.bars.values():
            bar.close()
        self.bars.clear()
        super().close()


def _line_handler(stream, prefix, level):
    handler = logging.StreamHandler(stream)
    handler.setFormatter(_ElapsedFormatter(prefix))
    handler.setLevel(level)
    return handler


def _attach(handler, level):
    """Add ``handler`` to the library's logger at ``level``; returns its removal."""
    previous_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(level)

    def remove():
        logger.removeHandler(handler)
        handler.close()
        logger.setLevel(previous_level)

    return remove


def install_handler(stream, *, verbose: bool, quiet: bool):
    """The command line's display: bars on ``stream`` when it is a terminal, lines of every
    record (DEBUG up) when ``verbose``, nothing when ``quiet`` or when neither. Returns a
    function that removes what was installed."""
    if quiet:
        return lambda: None
    if verbose:
        return _attach(_line_handler(stream, "gputree", logging.DEBUG), logging.DEBUG)
    if bool(getattr(stream, "isatty", lambda: False)()):
        return _attach(_BarHandler(stream, "gputree"), logging.INFO)
    return lambda: None


def check_verbose(verbose) -> int:
    """An estimator's ``verbose``: 0 (silent), 1 (bars) or 2 (every record as a line)."""
    if isinstance(verbose, bool):  # scikit-learn's habit: True for some output
        return int(verbose)
    if not isinstance(verbose, int) or not 0 <= verbose <= 2:
        raise ValueError(
            f"verbose={verbose!r}: choose 0 (silent), 1 (progress bars) or 2 (a line per "
            "step: binning, each level, the tree)"
        )
    return verbose


@contextlib.contextmanager
def estimator_display(verbose: int, stream=None):
    """What an estimator with ``verbose`` shows while it fits, on ``stream`` (standard
    error by default): nothing (0), bars (1), lines of every record (2). Only a display
    the estimator installed is removed after, so a program's own logging is untouched."""
    stream = sys.stderr if stream is None else stream
    if verbose == 0:
        yield
        return
    if verbose == 1:  # a program's own lower threshold (DEBUG) is kept
        remove = _attach(
            _BarHandler(stream, "gpu_tree"), min(logger.level or logging.INFO, logging.INFO)
        )
    else:
        remove = _attach(_line_handler(stream, "gpu_tree", logging.DEBUG), logging.DEBUG)
    try:
        yield
    finally:
        remove()
