"""The phase timer: per-level wall time of the growth phases, off unless a timer is given
to the grower (and to ``backends.contract.make_backend`` for the backend's own
sub-phases)."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from gpu_tree.utils.fit_stats import SETUP, FitCounters, enter_level

# -- phase timer ------------------------------------------------------------------------
# The phases the grower records, in the order of a level's work. A backend may record
# parts of them under names of its own ("histogram_kernel": the CUDA launch alone).
# "subtrees": small nodes' whole subtrees grown in one call (the CPU's finish_subtrees),
# recorded at the level of the nodes it started from.
PHASES = ("histograms", "subtraction", "split_scoring", "partition", "subtrees")


@dataclass(frozen=True)
class PhaseRecord:
    """One timed call.

    Attributes
    ----------
    phase : str
        One of :data:`PHASES`, or a backend's sub-phase.
    level : int
        The depth of the nodes it worked on (partition: the parents'; histograms,
        subtraction, split scoring: the nodes whose histograms they are).
    start : float
        ``time.perf_counter()`` when it started (after synchronising the device).
    seconds : float
        Its wall time, the device synchronised before and after.
    n_nodes : int
        Nodes it worked on (histograms: built; subtraction: derived; split scoring:
        searched; partition: split).
    n_rows : int
        Rows in those nodes (histograms: rows read; partition: rows routed).
    n_features : int
        Partition: the distinct split features; 0 otherwise.
    """

    phase: str
    level: int
    start: float
    seconds: float
    n_nodes: int = 0
    n_rows: int = 0
    n_features: int = 0


class PhaseTimer:
    """Wall time of each growth phase, per tree level.

    Give one to :class:`~gpu_tree.growing.grower.Grower` (and to :func:`make_backend`
    for the backend's sub-phases); after ``grow()``, :attr:`records` holds one
    :class:`PhaseRecord` per timed call. Without a timer the grower times nothing.

    Parameters
    ----------
    xp : module
        The backend's array module: a CuPy module's current stream is synchronised at
        each phase's start and end, so that the device's queued work is counted in the
        phase that queued it; numpy (the CPU, the CUDA simulator) needs nothing.
    """

    def __init__(self, xp=np):
        self.xp = xp
        self.records: list[PhaseRecord] = []
        self.level = 0  # the level of the phase under way (sub-phases record under it)

    def synchronize(self):
        if self.xp is not np:
            self.xp.cuda.get_current_stream().synchronize()

    @contextmanager
    def phase(
        self,
        name: str,
        level: int | None = None,
        *,
        n_nodes: int = 0,
        n_rows: int = 0,
        n_features: int = 0,
    ):
        """Time the body as phase ``name`` of ``level`` (None: the enclosing phase's)."""
        if level is not None:
            self.level = int(level)
            enter_level(self.level)  # the structural counters follow the timer's level
        record_level = self.level
        self.synchronize()
        start = time.perf_counter()
        try:
            yield
        finally:
            self.synchronize()
            seconds = time.perf_counter() - start
            self.records.append(
                PhaseRecord(
                    name, record_level, start, seconds, int(n_nodes), int(n_rows), int(n_features)
                )
            )

    def totals(self) -> dict[str, float]:
        """Seconds per phase, over the whole tree."""
        out: dict[str, float] = {}
        for record in self.records:
            out[record.phase] = out.get(record.phase, 0.0) + record.seconds
        return out

    def by_level(self) -> dict[int, dict[str, float]]:
        """Seconds per phase, per level (levels in increasing order)."""
        out: dict[int, dict[str, float]] = {}
        for record in sorted(self.records, key=lambda r: r.level):
            level = out.setdefault(record.level, {})
            level[record.phase] = level.get(record.phase, 0.0) + record.seconds
        return out

    def fit_stats(self, counters: FitCounters) -> list[dict]:
        """``fit_stats_``: per tree level, ``counters``' counts (``utils.fit_stats``) and
        the seconds of each phase this timer recorded."""
        seconds = self.by_level()
        levels = sorted({*seconds, *(k for k in counters.by_level if k is not SETUP)})
        return [
            {"level": level, **counters.at(level), "seconds": seconds.get(level, {})}
            for level in levels
        ]

    def levels(self, phase: str) -> list[int]:
        """The levels at which ``phase`` ran, in increasing order."""
        return sorted({record.level for record in self.records if record.phase == phase})
