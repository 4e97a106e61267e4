"""Structural counters of a fit, per tree level: what the device was asked to do.

For each level: the nodes whose histograms were built, the CUDA kernel launches, the copies
between host and device (how many, how many bytes, each way) and the rows the histogram
kernels read. These are what a GPU tree's speed is made of (XGBoost's ``gpu_hist`` is
judged the same way), and unlike times they are exact and the same under numba's CUDA
simulator as on a GPU, so tests can hold the CUDA backend to them without one.

A fit makes a :class:`FitCounters` and installs it with :func:`counting`; kernels are
launched through :func:`launch`, and the code that crosses between host and device calls
:func:`count_copy` (``device_to_host`` / ``host_to_device`` in
:mod:`gpu_tree.data.validation`, which the split search uses too). The grower's phase timer says which level the work is for
(:func:`enter_level`). Work before level 0 (binning, the input's copies) is the set-up.
Copies are counted only in a CUDA fit: on the CPU the same calls move nothing.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# The counted quantities, in the order ``fit_stats_`` lists them.
COUNTS = (
    "nodes_built",
    "kernel_launches",
    "device_to_host_copies",
    "device_to_host_bytes",
    "host_to_device_copies",
    "host_to_device_bytes",
    "rows_read",
)

SETUP = None  # the "level" of work done before the tree's first level


class FitCounters:
    """The counts of one fit, by level (:data:`SETUP` for the work before level 0).

    Parameters
    ----------
    device : {"cpu", "cuda"}
        The fit's device: copies count on "cuda" only (the simulator's too).
    """

    def __init__(self, device: str):
        self.device = device
        self.level = SETUP
        self.by_level: dict[int | None, dict[str, int]] = {}

    def add(self, quantity: str, amount: int = 1) -> None:
        entry = self.by_level.get(self.level)
        if entry is None:
            entry = self.by_level[self.level] = dict.fromkeys(COUNTS, 0)
        entry[quantity] += int(amount)

    def at(self, level) -> dict[str, int]:
        """The counts of ``level`` (zeros where nothing was counted)."""
        return dict(self.by_level.get(level, dict.fromkeys(COUNTS, 0)))


_ACTIVE: ContextVar[FitCounters | None] = ContextVar("gpu_tree_fit_counters", default=None)


@contextmanager
def counting(counters: FitCounters) -> Iterator[FitCounters]:
    """Count into ``counters`` in the body (this thread or task only)."""
    token = _ACTIVE.set(counters)
    try:
        yield counters
    finally:
        _ACTIVE.reset(token)


def count(quantity: str, amount: int = 1) -> None:
    """Add ``amount`` to ``quantity`` at the current level (nothing outside a fit)."""
    counters = _ACTIVE.get()
    if counters is not None:
        counters.add(quantity, amount)


def count_per_level(quantity: str, levels, amounts) -> None:
    """Add ``amounts[i]`` to ``quantity`` at level ``levels[i]``, for every i: work
    spread over many levels at once (a finished subtree's nodes), counted without
    moving the current level."""
    counters = _ACTIVE.get()
    if counters is None:
        return
    if len(levels) != len(amounts):  # before any count: nothing half-added
        raise ValueError(f"{len(levels)} levels but {len(amounts)} amounts of {quantity}")
    by_level = counters.by_level
    for level, amount in zip(levels, amounts, strict=True):
        entry = by_level.get(level)
        if entry is None:
            entry = by_level[level] = dict.fromkeys(COUNTS, 0)
        entry[quantity] += int(amount)


# numba-cuda warns (NumbaPerformanceWarning) whenever a grid has fewer than 128 blocks.
# gpu_tree sizes its grids to the work on purpose (a block per node at the tree's first
# levels, a thread per row of a small node), so its own launches would warn on every fit;
# the warning is ignored around them alone, and users' launches still warn. The text
# starts with a terminal colour code, hence the leading ".*".
SMALL_GRID_WARNING = r".*Grid size \d+ will likely result in GPU under-utilization"


def launch(kernel, config, *args) -> None:
    """``kernel[config](*args)``, counted as a kernel launch: every CUDA launch of a fit
    goes through here (``config``: grid, block and stream)."""
    count("kernel_launches")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=SMALL_GRID_WARNING)
        kernel[config](*args)


def count_copy(direction: str, nbytes: int) -> None:
    """One copy of ``nbytes`` bytes, ``direction`` "device_to_host" or "host_to_device",
    counted in a CUDA fit only."""
    counters = _ACTIVE.get()
    if counters is not None and counters.device == "cuda":
        counters.add(f"{direction}_copies")
        counters.add(f"{direction}_bytes", nbytes)


def current_level():
    """The tree level the work is counted at now (:data:`SETUP` outside a fit's levels,
    or outside a fit)."""
    counters = _ACTIVE.get()
    return SETUP if counters is None else counters.level


def enter_level(level) -> None:
    """The work from here on is for tree level ``level``."""
    counters = _ACTIVE.get()
    if counters is not None:
        counters.level = level
