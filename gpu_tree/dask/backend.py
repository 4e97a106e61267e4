"""The client's side of a distributed fit: a histogram backend (the grower's contract,
:class:`gpu_tree.backends.contract.DenseHistogramBackend`) whose every operation fans out
to the workers' shards (:mod:`gpu_tree.dask.shards`). The grower is the in-memory one,
unchanged: it asks for histograms, gets the workers' integer histograms summed (a tree
reduction through Dask: exact, so in any order), chooses the splits, and the workers
route their own rows. Node sizes are the client's bookkeeping (the split statistics say
them); no row crosses the wire after setup.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from gpu_tree.backends.contract import (
    BackendCapabilities,
    CompactHistograms,
    DenseHistograms,
    FinishedSubtrees,
)
from gpu_tree.backends.cpu import (
    CPUHistogramBackend,
    SubtreeRows,
    grow_subtrees,
    score_splits_on_cpu,
)
from gpu_tree.backends.rows import compact_from_dense
from gpu_tree.dask import shards
from gpu_tree.kernels.cpu import row_statistics as cpu_row_statistics
from gpu_tree.utils.fit_stats import current_level

# Histograms summed per reduction task (a tree reduction: log_fan_in(workers) rounds).
REDUCTION_FAN_IN = 4
# Seconds between checks, while waiting on the workers, that those holding the fit's
# rows are still there: a lost worker fails the fit in about this long, not at timeout.
WORKER_CHECK_SECONDS = 1.0


class WorkerLostError(RuntimeError):
    """A worker holding rows of a distributed fit left mid-fit: its rows (binned, routed
    to their nodes) are gone, so the fit stops; the client stays usable: fit again."""


def results_from_workers(client, futures, addresses, timeout):
    """The results of ``futures`` (tasks pinned to the workers at ``addresses``).

    A task pinned to a worker that died would wait forever for it to come back, so the
    wait checks every WORKER_CHECK_SECONDS that those workers are still known to the
    scheduler, and raises :class:`WorkerLostError` naming the lost ones; past
    ``timeout`` seconds it raises TimeoutError. A task's own error is raised as it is.
    """
    from distributed import wait

    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        try:
            with client.as_current():  # wait() asks the current client, not the futures'
                wait(futures, timeout=max(0.0, min(WORKER_CHECK_SECONDS, remaining)))
            break
        except TimeoutError:
            lost = sorted(set(addresses) - set(client.nthreads()))
            if lost:
                raise WorkerLostError(
                    f"worker {', '.join(lost)} left during the distributed fit, and the rows "
                    "it held with it; fit again (the client and the other workers are usable)"
                ) from None
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"the workers did not answer within timeout={timeout:g} s; a worker may be "
                    "stuck or overloaded (give fit a larger timeout for very slow calls)"
                ) from None
    return client.gather(futures)


class ShardGroup:
    """The shards of one fit (``keys``: (fit id, worker address), one per worker holding
    rows) and how the client runs a function of :mod:`gpu_tree.dask.shards` on each.

    Routing the rows to the children (a *write*: :meth:`submit_write`) is not waited
    for: the next task on each shard runs after that shard's last write (a Dask
    dependency, resolved on the worker), and the writes' results come back with the next
    results the client waits for. A level of growth is then one round trip (its
    histograms) instead of two (the partition, then the histograms)."""

    def __init__(self, client, keys, timeout):
        self.client = client
        self.keys = keys
        self.timeout = timeout
        # The writes not yet waited for: (futures, one per shard, and the check of
        # their results, or None).
        self._writes: list = []

    def submit(self, function, *args, each=None):
        """Futures of ``function(key, *args, *each[i])`` on each shard's worker, each run
        after the shard's last write."""
        last = self._writes[-1][0] if self._writes else None
        return [
            self.client.submit(
                *((shards.after, last[i], function) if last else (function,)),
                key,
                *args,
                *(each[i] if each else ()),
                workers=[key[1]],
                pure=False,
            )
            for i, key in enumerate(self.keys)
        ]

    def submit_write(self, function, *args, check=None, each=None):
        """Runs ``function`` on every shard (as :meth:`submit`) without waiting; its
        results, a list in the order of ``keys``, are passed to ``check`` once the client
        next waits for results (:meth:`results`, :meth:`settle`)."""
        self._writes.append((self.submit(function, *args, each=each), check))

    def results(self, futures):
        """The results of ``futures``, gathered in one round trip with the writes'
        (whose checks run first)."""
        writes, self._writes = self._writes, []
        waited = [f for fs, _ in writes for f in fs]
        addresses = [key[1] for key in self.keys]
        try:
            gathered = results_from_workers(self.client, waited + futures, addresses, self.timeout)
        finally:
            for f in waited:
                f.release()
        n = len(self.keys)
        for k, (_, check) in enumerate(writes):
            if check is not None:
                check(gathered[k * n : (k + 1) * n])
        return gathered[len(waited) :]

    def settle(self):
        """Waits for the writes not yet waited for, and checks their results."""
        self.results([])

    def run(self, function, *args, each=None):
        """``function``'s results on every shard, in the order of ``keys``."""
        futures = self.submit(function, *args, each=each)
        try:
            return self.results(futures)
        finally:
            for f in futures:
                f.release()

    def release(self):
        """Drop the shards from the workers' memory (not waited on: a lost worker has
        nothing to drop), after the writes not waited for."""
        for future in self.submit(shards.release):
            future.release()
        self._writes = []


class DistributedBackend:
    """Histogram search over rows held by Dask workers.

    Parameters
    ----------
    group : ShardGroup, the shards holding the rows
    bin_lower, bin_upper : ndarray (n_features, n_bins), the global bins' bounds
    root : ndarray (n_channels,), the statistics of every row
    n_samples : int
    missing_bin : int
    layout : StatsLayout
    finishes_subtrees : bool
        Whether nodes below :attr:`finish_below_rows` rows (0: none) are gathered to the
        client and grown there by the CPU's subtree finisher (every shard on the CPU; a
        fit with CUDA shards grows level by level to the end).
    """

    capabilities = BackendCapabilities(
        device="cpu", exact=False, subtraction=True, compiled_search=True
    )
    # Nodes below this many rows (all workers' together) are finished on the client:
    # their rows (codes and statistics, about n_features + 16 bytes a row) cross once,
    # instead of a round trip per level below them. Level-wise, a level cost about
    # 85 ms of Dask's scheduling at 200,000 rows (bench/RESULTS.md); the grower's own
    # threshold (FINISH_BELOW_ROWS) is set for a machine's memory, not a network.
    finish_below_rows = 1 << 15
    # The most rows one gathering brings to the client (its memory: about 100 MB at 28
    # features); a finishing call with more nodes gathers them in turns.
    most_gathered_rows = 1 << 21
    # How the workers' histograms are summed: "tree" (on the workers, the total to the
    # client) or "client" (each worker's to the client). Measured: bench/RESULTS.md.
    reduction = "tree"
    xp = np
    score_splits = staticmethod(score_splits_on_cpu)

    def __init__(
        self,
        group,
        bin_lower,
        bin_upper,
        root,
        n_samples,
        missing_bin,
        layout,
        finishes_subtrees=True,
    ):
        if finishes_subtrees and self.finish_below_rows:
            self.capabilities = dataclasses.replace(
                self.capabilities,
                subtree_finisher=True,
                finish_below_rows=self.finish_below_rows,
            )
        self.group = group
        self.bin_lower = bin_lower
        self.bin_upper = bin_upper
        self.n_bins = bin_lower.shape[1]
        self.small_node_size = self.n_bins
        self.missing_bin = missing_bin
        self.layout = layout
        self._root = root
        self._sizes = np.zeros(16, dtype=np.int64)
        self._sizes[0] = n_samples
        # Bytes of histograms gathered (each worker's and each reduction's), per call.
        self.wire_log: list[dict] = []

    def _log(self, kind, n_nodes, nbytes):
        self.wire_log.append(
            {
                "level": current_level(),
                "kind": kind,
                "n_nodes": int(n_nodes),
                "bytes": int(nbytes),
            }
        )

    def bytes_per_level(self) -> dict:
        """{level: bytes on the wire} over the fit's calls (histograms, split decisions
        and the counts coming back)."""
        totals: dict = {}
        for entry in self.wire_log:
            totals[entry["level"]] = totals.get(entry["level"], 0) + entry["bytes"]
        return totals

    # -- the grower's contract --------------------------------------------------------------
    def root_stats(self):
        return self._root

    def node_sizes(self, nodes):
        return self._sizes[np.asarray(nodes, dtype=np.int64)]

    def _record_sizes(self, children, sizes):
        children = np.asarray(children, dtype=np.int64)
        top = int(children.max(initial=0)) + 1
        if top > self._sizes.size:
            self._sizes = np.resize(self._sizes, max(top, 2 * self._sizes.size))
        self._sizes[children] = sizes

    def histograms(self, nodes, out=None) -> DenseHistograms:
        nodes = np.asarray(nodes, dtype=np.int64)
        futures = self.group.submit(shards.histograms, nodes)
        one = self.empty_histograms(nodes.size).nbytes
        if self.reduction == "client":
            # Every worker's histograms to the client, summed there.
            try:
                parts = self.group.results(futures)
            finally:
                for f in futures:
                    f.release()
            hist = shards.sum_arrays(*parts)
            self._log("histograms", nodes.size, one * len(parts))
        else:
            hist = self._tree_reduced(futures)
            # On the wire: every worker's histograms but those summed where they were
            # made (counted as sent: an upper bound), and the total to the client.
            self._log("histograms", nodes.size, one * (len(futures) - 1) + one)
        if out is not None:
            out[...] = hist
            hist = out
        return DenseHistograms(hist, self.bin_lower[None], self.bin_upper[None])

    def _tree_reduced(self, futures):
        """The sum of the workers' histograms by a tree reduction on the workers: each
        worker's histograms travel once, to a summing task; only the total comes to
        the client."""
        level = futures
        while len(level) > 1:
            level = [
                self.group.client.submit(
                    shards.sum_arrays, *level[i : i + REDUCTION_FAN_IN], pure=False
                )
                for i in range(0, len(level), REDUCTION_FAN_IN)
            ]
        try:
            (hist,) = self.group.results(level)
        finally:
            for f in futures + level:
                f.release()
        return hist

    def empty_histograms(self, n_nodes):
        shape = (n_nodes, self.bin_lower.shape[0], self.n_bins, self.layout.n_channels)
        return np.empty(shape, dtype=self.layout.dtype)

    subtract = staticmethod(CPUHistogramBackend.subtract)  # host histograms, as the CPU's

    def compact_histograms(self, nodes) -> CompactHistograms:
        """The shards' compact histograms merged: per node and feature, the bin codes
        present on any worker, in order, their summed statistics."""
        nodes = np.asarray(nodes, dtype=np.int64)
        parts = self.group.run(shards.compact_histograms, nodes)
        self._log("compact", nodes.size, sum(sum(a.nbytes for a in p) for p in parts))
        n_features = self.bin_lower.shape[0]
        n_channels = self.layout.n_channels
        dense = np.zeros((nodes.size, n_features, self.n_bins, n_channels), self.layout.dtype)
        missing = self.layout.zeros((nodes.size, n_features))
        for hist, code, miss in parts:
            missing += miss
            k, f, c = np.nonzero(code >= 0)
            np.add.at(dense, (k, f, code[k, f, c]), hist[k, f, c])
        # The bins with rows on any worker (the missing values are apart already).
        hist, codes, _ = compact_from_dense(dense, -1)
        feature = np.arange(n_features)[None, :, None]
        present = codes >= 0
        lower = np.where(present, self.bin_lower[feature, np.maximum(codes, 0)], np.inf)
        upper = np.where(present, self.bin_upper[feature, np.maximum(codes, 0)], np.inf)
        return CompactHistograms(hist, lower, upper, codes, missing)

    def squared_deviation_sums(self, nodes, means):
        nodes = np.asarray(nodes, dtype=np.int64)
        means = np.ascontiguousarray(means, dtype=np.float64)
        extremes = self.group.run(shards.squared_deviation_extremes, nodes, means)
        largest = np.max([e[0] for e in extremes], axis=0)
        lowest = np.min([e[1] for e in extremes], axis=0)
        highest = np.max([e[2] for e in extremes], axis=0)
        parts = self.group.run(shards.squared_deviation_parts, nodes, means, largest)
        exponent = parts[0][0]
        high = np.sum([p[1] for p in parts], axis=0)
        low = np.sum([p[2] for p in parts], axis=0)
        self._log("deviations", nodes.size, 48 * nodes.size * len(self.group.keys))
        sums = cpu_row_statistics.combine_squared_deviation_parts(high, low, exponent)
        return np.where(lowest < highest, sums, 0.0)

    def partition(
        self,
        nodes,
        feature,
        bin_threshold,
        threshold,
        missing_left,
        left_children,
        right_children,
        category_sets=None,
        *,
        sizes,
        child_means=None,
    ):
        decisions = (
            np.asarray(nodes, dtype=np.int64),
            np.asarray(feature, dtype=np.int64),
            np.asarray(bin_threshold, dtype=np.int64),
            np.asarray(missing_left, dtype=np.uint8),
            np.asarray(left_children, dtype=np.int64),
            np.asarray(right_children, dtype=np.int64),
            category_sets,
        )
        expected_left = np.array(sizes[0], dtype=np.int64)

        def check(n_left):
            if not np.array_equal(np.sum(n_left, axis=0), expected_left):
                raise RuntimeError("internal error: partition disagrees with the histogram counts")

        self.group.submit_write(shards.partition, *decisions, check=check)
        # category_sets: None, or (subset, words) per node; each shard returns its rows
        # sent left per node.
        sent = sum(np.asarray(a).nbytes for a in _flat(decisions)) + 8 * decisions[0].size
        self._log("partition", decisions[0].size, sent * len(self.group.keys))
        self._record_sizes(left_children, sizes[0])
        self._record_sizes(right_children, sizes[1])

    def finish_subtrees(
        self,
        nodes,
        depth,
        impurity,
        criterion,
        rules,
        categories=None,
        keys=None,
        used=None,
        bounds=None,
    ) -> FinishedSubtrees:
        """The CPU backend's :meth:`~CPUHistogramBackend.finish_subtrees` on the
        nodes' rows gathered from every worker (at most :attr:`most_gathered_rows` a
        turn). The tree is the level-wise one: the finisher's histograms and measures are
        integer sums, which no order of the rows changes."""
        nodes = np.asarray(nodes, dtype=np.int64)
        depth, impurity = np.asarray(depth), np.asarray(impurity)
        sizes = self.node_sizes(nodes)
        turns, turn_rows = [], 0
        for k in range(nodes.size):
            if not turns or turn_rows + sizes[k] > self.most_gathered_rows:
                turns.append([])
                turn_rows = 0
            turns[-1].append(k)
            turn_rows += int(sizes[k])
        parts = []
        for turn in turns:
            turn = np.asarray(turn, dtype=np.int64)
            rows = self._gathered_rows(nodes[turn])
            parts.append(
                grow_subtrees(
                    rows,
                    self.layout,
                    (
                        self.n_bins,
                        int(self.missing_bin),
                        self.missing_bin,
                        self.bin_lower,
                        self.bin_upper,
                    ),
                    turn.size,
                    depth[turn],
                    impurity[turn],
                    criterion,
                    rules,
                    categories,
                    None if keys is None else np.asarray(keys)[turn],
                    None if used is None else np.asarray(used)[turn],
                    None if bounds is None else np.asarray(bounds)[turn],
                )
            )
        return _concatenated(parts)

    def _gathered_rows(self, nodes) -> SubtreeRows:
        """Every worker's rows of ``nodes``, each node's together (workers in order)."""
        parts = self.group.run(shards.subtree_rows, nodes)
        codes = np.concatenate([p[0] for p in parts], axis=1)
        counts = np.array([p[4] for p in parts], dtype=np.int64)  # (workers, nodes)
        # Each worker's rows come grouped by node: a stable sort by node puts every
        # node's rows together, workers in order.
        node_of_row = np.concatenate([np.repeat(np.arange(nodes.size), c) for c in counts])
        sample_indices = np.argsort(node_of_row, kind="stable")
        end = np.cumsum(counts.sum(axis=0))
        regression = not self.layout.is_classification
        self._log("subtree rows", nodes.size, codes.nbytes + sum(p[1].nbytes for p in parts))
        return SubtreeRows(
            codes,
            sample_indices,
            end - counts.sum(axis=0),
            end,
            np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] for p in parts]) if regression else None,
            np.concatenate([p[3] for p in parts]) if regression else None,
        )

    def partition_multiway(self, nodes, feature, child_of_code, default_child, children, *, sizes):
        first = np.array([c[0] for c in children], dtype=np.int64)
        decisions = (
            np.asarray(nodes, dtype=np.int64),
            np.asarray(feature, dtype=np.int64),
            np.asarray(child_of_code) - first[:, None],
            np.asarray(default_child) - first,
        )
        self.group.submit_write(shards.partition_multiway, *decisions, children)
        sent = sum(a.nbytes for a in decisions) + sum(np.asarray(c).nbytes for c in children)
        self._log("partition", decisions[0].size, sent * len(self.group.keys))
        for ids, counts in zip(children, sizes, strict=True):
            self._record_sizes(ids, counts)


def _concatenated(parts) -> FinishedSubtrees:
    """FinishedSubtrees of several finishing turns as one (positions offset)."""
    if len(parts) == 1:
        return parts[0]
    offsets = np.cumsum([0] + [p.parent.size for p in parts[:-1]])
    joined = {}
    for name in FinishedSubtrees._fields:
        arrays = [getattr(p, name) for p in parts]
        if name in ("parent", "left"):  # positions within a turn's result
            arrays = [np.where(a >= 0, a + o, a) for a, o in zip(arrays, offsets, strict=True)]
        joined[name] = np.concatenate(arrays)
    return FinishedSubtrees(**joined)


def _flat(items):
    for item in items:
        if isinstance(item, tuple):
            yield from _flat(item)
        elif item is not None:
            yield item
