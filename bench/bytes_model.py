"""Bytes a level of the CUDA tree build moves through device memory, and the time floors.

A model, not a measurement: it counts the DRAM bytes each level of
``gpu_tree.backends.cuda.CUDAHistogramBackend`` reads and writes, under the code as it
stands (``gpu_tree/backends/cuda.py``, ``kernels/cuda/``, ``kernels/_split_scan.py``),
and two lower floors, so that measured level times can be set against them
(``bench/bench_gpu_matrix.py`` does, with the row counts it measured).

What one level L of the level-wise build does on the device (read from the code):

* row list (``_rows_of``): the rows of the nodes a histogram launch builds, in row
  order. Where the built nodes hold every row (the root) it is ``all_rows``, the int32
  row indices, as they are. Otherwise CuPy compacts it over all n rows, one op at a
  time: ``slot_of_node[node_of_row]`` (each row's node id read, its slot gathered from
  the slot table, an int32 per row written), ``>= 0`` (the slots read, the bool mask
  ``listed`` written), ``cumsum(listed, int32)`` (with CuPy's default CUB accelerator:
  ``astype(int32)`` reads the mask and writes an int32 copy, then CUB's single-pass
  scan reads and writes it in place), ``- 1`` (read, write ``place``), ``where(listed,
  place, total)`` (``condition.astype('?')`` copies the mask, then the mask and
  ``place`` read and the int32 target written) and the scatter ``rows[target] =
  all_rows`` (target and ``all_rows`` read, the listed rows' indices written, in order).
  Assumed: the slot table (4 bytes a node) stays in L2, so its gathered entries cost no
  DRAM bytes; the unlisted rows' scatter writes, all to one spare entry, merge in L2;
  no op is fused. 53 bytes per row of n, plus 4 per listed row;
* histograms: one launch for the nodes built at L (the root at L = 0; below it the
  smaller child of every split, the larger child coming from the subtraction trick).
  For each listed row the kernel reads its list entry, its node id (for its slot), its
  label (classification: int32 class, int64 weight if weighted; regression: its int64
  statistics) and its uint8 bin codes (feature-major), visiting the listed rows in
  ascending row order. ``histograms_shared`` (a block-private histogram of 48 KiB per
  block: 12,288 int32 entries for unweighted class counts, 6,144 int64 ones otherwise)
  when one feature of every built node fits, else ``histograms_global`` (one global
  atomic per (row, feature) and channel). Each feature group of the shared kernel, and
  each feature sweep of the global kernel, reads the list, the node ids and the labels
  again;
* the histogram buffer is zero-filled first (``hist.fill(0)``);
* subtraction: ``take`` of the parents' histograms, then ``-=`` the built siblings';
* split scoring: one fused kernel (``score_splits``): per scored node and feature, one
  thread reads the feature's histogram row three times (the totals, then the two
  sweeps of ``score_feature``; the second stops at the winner, counted whole here),
  plus feature 0's row for the node's totals and the chosen feature's prefix, and
  writes small scratch arrays and one winner row per node;
* partition (``partition_rows``, over all n rows): each row's node id, and for rows of
  split nodes the code of their node's split feature; the new node id written.
  Regression: the same rows' centred target (float64) and weight (float64, unless unit
  weights) read too, for pass 1 of the children's squared deviations (three float
  atomics per row: the largest term, lowest and highest target). Nothing is regrouped
  after it: the rows stay in row order;
* regression only: ``squared_deviation_sums``, pass 2 of the children's squared
  deviations, over all n rows: node id, and for the children's rows their centred
  target and weight; two integer atomics per row.

Memory moves in 32-byte sectors: a sector is read when at least one of its entries is
needed. Rows of a node are assumed spread at random among all rows (a random row order),
so visiting p of the rows in ascending order touches ``1 - (1 - p) ** entries_per_sector``
of an array's sectors, each once per sweep (the one L2 reuse the as-implemented count
allows is within a sweep: neighbouring listed rows share sectors).

Columns it gives per level (bytes):

* ``as_implemented``: the DRAM traffic of the code as above, with no L2 reuse across
  sweeps (each feature group's, each feature's). Atomics are counted apart (L2 atomic
  throughput, not DRAM bandwidth, bounds them): the histogram kernel's global atomics,
  and the row atomics of the regression variance passes;
* ``histogram_kernel_l2_kept`` (per-level table, last column): the histogram kernel's
  bytes if L2 kept the row list, node ids and labels one sweep reads for the launch's
  other sweeps (each feature's codes are read once anyway), the low end of what L2 can
  do. The H200 reports 60 MB of L2, the H100 SXM has 50 MB; one sweep of 10.5M rows
  reads up to 105 MB of list, node ids and labels, so on the Higgs shape the
  as-implemented count is the likelier, on small data (Covertype: a few MB a sweep)
  this one;
* ``one_pass_floor``: the least any kernel can move with the rows left where they are
  (codes feature-major, not grouped): every sector holding a built row's codes, label
  and node id read once, visiting the built rows in row order (as the kernels do, but
  in one sweep, and with no row list to build or read), the built histograms written
  once, subtraction (take and subtract: 3 histograms' bytes a derived node) and scoring
  one pass each, the partition one code and one node id read and one node id written
  per row of a split node (regression: its target and weight read once per variance
  pass, two passes);
* ``ideal_floor``: only the built rows' bytes read, each once (their codes and label,
  as if a row's data were contiguous: every byte of a sector used); the groups kept by
  a stable partition of the split nodes' row indices (4 bytes read and 4 written per
  row of a split node, as XGBoost's row partitioner does) instead of a compaction over
  every row; histogram and partition terms as in the one-pass floor. Where every row
  is built (the root) keeping the groups makes it a little more than the one-pass
  floor.

What the model says about row lists by compaction: with no sort and no per-node
segments, a level's row list costs 53 bytes per row of n (plus 4 per listed row)
instead of the regroup sort's 128 a row and the segments' 72 per listed row, and the
kernel's reads of codes, node ids and labels follow the built rows' sector fraction
once per sweep. A full Higgs-shaped tree of depth 10 then moves 30.5 GB (the sort and
segments model: 103.5), still about 6 times the one-pass floor. Most of the rest is
the histogram kernel's sweeps: at every level each built row's list entry, node id and
label are read again for each feature group (3 at the root; from level 5, in the global
kernel, for each of the 28 features), about 20 of the 30.5 GB, where the floor reads
them once. The compaction adds about 0.58 GB a level below the root (5.2 GB a tree),
more than a level's one-pass floor: 53 bytes of CuPy ops for every row, where one
fused pass would read the 4-byte node id. Keeping the list, node ids and labels in L2 across sweeps
(the last column; small data), or reading them once per launch (all of a row's features
in one pass), would remove the first; one fused kernel for the compaction (node ids
read, listed rows written), or a stable partition of the row indices (the ideal floor's
term), would shrink the second. Reaching the ideal floor needs the rows' bytes grouped
too (codes stored in the row order, or row-major).

Run it to print the predictions for the issue-7 matrix (markdown):

    python bench/bytes_model.py                      # 4.8 TB/s nominal, 4.3 TB/s assumed
    python bench/bytes_model.py --bandwidth 4800,3900 --smaller-fraction 0.5
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field

SECTOR_BYTES = 32  # DRAM/L2 transaction granularity
NODE_ID_BYTES = 4  # int32 node_of_row
ROW_INDEX_BYTES = 4  # int32 all_rows, row_list, place and the scatter target
LABEL_BYTES = 4  # int32 y_class
WEIGHT_BYTES = 8  # int64 fixed-point weight (read only when rows are weighted)
STAT_BYTES = 8  # int64 regression statistic (row_stats, histogram entries)
TARGET_BYTES = 8  # float64 centred target, and float64 weight (regression, weighted)
# Histogram entries (gpu_tree.data.stats): int32 counts for unweighted classification,
# int64 fixed point otherwise.
COUNT_HIST_VALUE_BYTES = 4
WEIGHTED_HIST_VALUE_BYTES = 8
# kernels/cuda/histograms.py: SHARED_HISTOGRAM_BYTES (a block's shared histogram, entries of the
# histogram's type), THREADS_PER_BLOCK, shared_launch_config's rows_per_thread and its cap
# on row blocks. Repeated here so that the model imports without numba;
# tests/quality/test_bench_scripts.py checks they agree with the kernels.
SHARED_HISTOGRAM_BYTES = 48 * 1024
THREADS_PER_BLOCK = 256
ROWS_PER_THREAD = 16
MAX_ROW_BLOCKS = 1024
# kernels/_split_scan.py: a winner row is WINNER_FIXED_COLUMNS int64 then the left and
# right statistics; score_splits' scratch per (node, feature) is prefix and totals
# (int64 per channel) and 4 float64 results, per node 2 float64.
WINNER_FIXED_COLUMNS = 6
SCORING_SWEEPS = 3  # per (node, feature): the totals, then score_feature's two sweeps
# Row atomics of the regression passes per row of a split node: pass 1 (in the
# partition) the largest term, lowest and highest target (float, CAS loops); pass 2
# (squared_deviation_sums) the high and low parts of the fixed-point sum (integer).
PASS_1_ATOMICS = 3
PASS_2_ATOMICS = 2

BOOL_BYTES = 1  # the bool mask of listed rows
# _rows_of's compaction (CuPy, one op at a time), per row of n: slot_of_node[node_of_row]
# reads the node id and writes the int32 slot (the slot table itself stays in L2); >= 0
# reads the slot and writes the mask; cumsum(listed, int32), with CuPy's default CUB
# accelerator, first astype(int32) (mask read, int32 written), then CUB's single-pass
# scan in place (read, write; with CUPY_ACCELERATORS empty, CuPy's own scan reads the
# mask twice and writes once: 6 bytes instead of 13); - 1 reads and writes; where copies
# the mask (condition.astype('?'), read and write), then reads it and place and writes
# the int32 target (total, a Python int, keeps int32); the scatter reads the target and
# all_rows. The scatter's writes of the listed rows' indices are counted per listed row;
# the unlisted rows' writes all go to one spare entry (merged in L2: no DRAM bytes).
COMPACTION_BYTES_PER_ROW = (
    (NODE_ID_BYTES + NODE_ID_BYTES)
    + (NODE_ID_BYTES + BOOL_BYTES)
    + (BOOL_BYTES + ROW_INDEX_BYTES)
    + 2 * ROW_INDEX_BYTES
    + 2 * ROW_INDEX_BYTES
    + 2 * BOOL_BYTES
    + (BOOL_BYTES + 2 * ROW_INDEX_BYTES)
    + 2 * ROW_INDEX_BYTES
)
COMPACTION_BYTES_PER_LISTED_ROW = ROW_INDEX_BYTES

H200_NOMINAL_GB_S = 4800.0  # HBM3e, the data-sheet figure
# A device-to-device copy as seen on these H200 machines through PyTorch (about 4.3 TB/s,
# bytes read + written; .library/device/KINDS.md): an assumption until this project's
# own bench/bench_gpu_matrix.py measures it.
ASSUMED_COPY_GB_S = 4300.0


@dataclass(frozen=True)
class Shape:
    """A data set as the CUDA backend sees it: ``n_classes`` 0 is regression (as in
    ``gpu_tree.data.stats.StatsLayout``)."""

    n_rows: int
    n_features: int
    n_bins: int = 256
    n_classes: int = 2
    weighted: bool = False  # weighted rows carry a weight and a count channel
    code_bytes: int = 1  # uint8 bin codes up to 256 bins

    @property
    def is_regression(self) -> bool:
        return self.n_classes == 0

    @property
    def n_channels(self) -> int:
        base = 2 if self.is_regression else self.n_classes  # regression: sum w, sum w*y
        return base + (1 if self.weighted else 0)

    @property
    def hist_value_bytes(self) -> int:
        small = not self.weighted and not self.is_regression
        return COUNT_HIST_VALUE_BYTES if small else WEIGHTED_HIST_VALUE_BYTES

    @property
    def node_hist_bytes(self) -> int:
        """One node's dense histogram: features x bins x channels entries."""
        return self.n_features * self.n_bins * self.n_channels * self.hist_value_bytes

    @property
    def label_arrays(self) -> tuple[int, ...]:
        """Entry bytes of each per-row array the histogram kernel reads besides the codes:
        class and weight, or the regression row statistics (unit weights leave out the
        weight channel)."""
        if self.is_regression:
            return (STAT_BYTES * (self.n_channels - (0 if self.weighted else 1)),)
        return (LABEL_BYTES, WEIGHT_BYTES) if self.weighted else (LABEL_BYTES,)

    @property
    def row_label_bytes(self) -> int:
        return sum(self.label_arrays)

    @property
    def target_arrays(self) -> tuple[int, ...]:
        """Entry bytes of the float64 arrays the regression variance passes read per row:
        the centred target, and the weight unless unit weights; none for classification."""
        if not self.is_regression:
            return ()
        return (TARGET_BYTES, TARGET_BYTES) if self.weighted else (TARGET_BYTES,)

    @property
    def hist_atomics_per_row(self) -> int:
        """Global atomics of one (row, feature) in histograms_global (kernels.cuda.histograms.add_row):
        classification its class (and the count channel), regression every channel."""
        if self.is_regression:
            return self.n_channels
        return 1 + (1 if self.weighted else 0)


@dataclass
class LevelWork:
    """What one level does: from a measured build, or assumed (:func:`assumed_levels`)."""

    level: int
    n_nodes: int  # nodes whose histograms are scored
    n_built: int  # histograms built by the kernel (the others by subtraction)
    built_rows: int  # rows in the built nodes
    split_nodes: int  # nodes split (partitioned) at this level
    split_rows: int  # rows in those nodes
    n_split_features: int = 0  # distinct split features of the level (0: min(split_nodes, F))

    @property
    def n_derived(self) -> int:
        return self.n_nodes - self.n_built


@dataclass
class LevelBytes:
    level: int
    path: str  # "shared", "global" or "-"
    as_implemented: dict = field(default_factory=dict)  # part -> bytes
    one_pass_floor: int = 0
    ideal_floor: int = 0
    histogram_atomics: int = 0  # global-memory integer atomics of the histogram kernel
    row_atomics: int = 0  # regression: the variance passes' per-row atomics
    # The histogram kernel's bytes if L2 kept the row list, node ids and labels one sweep
    # reads for the launch's other sweeps: the low end of what L2 can do
    # (as_implemented: no reuse across sweeps).
    histogram_kernel_l2_kept: int = 0

    @property
    def as_implemented_total(self) -> int:
        return int(sum(self.as_implemented.values()))

    @property
    def histogram_kernel_bytes(self) -> int:
        """The parts named ``hist: ...``: the histogram launch and its zero-fill."""
        return sum(v for k, v in self.as_implemented.items() if k.startswith("hist:"))


def sectors_touched(fraction: float, rows_per_sector: float) -> float:
    """Fraction of sectors holding at least one needed row, rows needed at random."""
    fraction = min(max(fraction, 0.0), 1.0)
    return 1.0 - (1.0 - fraction) ** rows_per_sector


def gathered_bytes(n_rows: int, needed: float, entry_bytes: int) -> float:
    """DRAM bytes of reading (or writing) the entries of ``needed`` random rows of an
    array of ``n_rows`` entries, in one ascending sweep (neighbouring rows merged)."""
    if not n_rows or not needed:
        return 0.0
    per_sector = SECTOR_BYTES / entry_bytes
    return n_rows * entry_bytes * sectors_touched(needed / n_rows, per_sector)


def shared_features_per_block(n_hist_slots: int, shape: Shape) -> int:
    """As kernels.cuda.histograms.shared_features_per_block for ``n_hist_slots`` nodes' histograms
    built at once: 0 means the global-memory kernel."""
    per_feature = n_hist_slots * shape.n_bins * shape.n_channels
    entries = SHARED_HISTOGRAM_BYTES // shape.hist_value_bytes
    return min(shape.n_features, entries // per_feature) if per_feature else 0


def row_blocks(n_rows: int) -> int:
    """Row blocks of one feature group of the shared kernel over ``n_rows`` listed rows
    (kernels.cuda.histograms.shared_launch_config)."""
    return max(1, min(MAX_ROW_BLOCKS, -(-n_rows // (THREADS_PER_BLOCK * ROWS_PER_THREAD))))


def assumed_levels(shape: Shape, depth: int, smaller_fraction: float = 0.5) -> list[LevelWork]:
    """A full binary tree of ``depth``: every node of levels 0..depth-1 is scored and
    split, every row stays in play, the smaller child holds ``smaller_fraction`` of its
    parent's rows (0.5, the default, bounds the ideal floor from above)."""
    levels = []
    for level in range(depth):
        n_nodes = 2**level
        n_built = 1 if level == 0 else n_nodes // 2
        built_rows = shape.n_rows if level == 0 else round(smaller_fraction * shape.n_rows)
        levels.append(LevelWork(level, n_nodes, n_built, built_rows, n_nodes, shape.n_rows))
    return levels


def histogram_launch(shape: Shape, work: LevelWork) -> tuple[str, int, int]:
    """(path, sweeps, global atomics) of the level's histogram launch: the shared
    kernel reads the list, node ids and labels once per feature group, the global one
    once per feature."""
    F, rows = shape.n_features, work.built_rows
    group = shared_features_per_block(work.n_built, shape)
    if group > 0:
        entries = work.n_built * F * shape.n_bins * shape.n_channels
        # Each row block merges its non-zero entries: an upper bound.
        return "shared", -(-F // group), row_blocks(rows) * entries
    return "global", F, rows * F * shape.hist_atomics_per_row


def histogram_parts(shape: Shape, work: LevelWork, sweeps: int) -> dict:
    """The histogram launch's bytes: the list, node ids and labels read once per sweep
    (``sweeps`` 1: as if L2 kept them for the other sweeps), the codes once per feature,
    each array's sectors as the built rows, in row order, touch them."""
    N, rows = shape.n_rows, work.built_rows
    labels = sum(gathered_bytes(N, rows, size) for size in shape.label_arrays)
    H = shape.node_hist_bytes
    return {
        "hist: row list reads": sweeps * rows * ROW_INDEX_BYTES,
        "hist: node ids": sweeps * gathered_bytes(N, rows, NODE_ID_BYTES),
        "hist: codes": shape.n_features * gathered_bytes(N, rows, shape.code_bytes),
        "hist: labels": sweeps * labels,
        "hist: zero fill": work.n_built * H,
        "hist: result": work.n_built * H,
    }


def row_list_bytes(shape: Shape, work: LevelWork) -> int:
    """_rows_of: ``all_rows`` as it is when the built nodes hold every row, else CuPy's
    compaction over all n node ids (COMPACTION_BYTES_PER_ROW), writing the listed rows."""
    if not work.n_built or work.built_rows >= shape.n_rows:
        return 0
    return (
        shape.n_rows * COMPACTION_BYTES_PER_ROW + work.built_rows * COMPACTION_BYTES_PER_LISTED_ROW
    )


def scoring_bytes(shape: Shape, work: LevelWork) -> dict:
    """score_splits: each scored node's histogram read SCORING_SWEEPS times, plus two
    feature rows (the node's totals, the winner's left side); scratch and winners
    written once (their repeated updates stay in cache)."""
    H, F, C = shape.node_hist_bytes, shape.n_features, shape.n_channels
    scratch = F * (2 * C * STAT_BYTES + 4 * 8) + 2 * 8
    winner = (WINNER_FIXED_COLUMNS + 2 * C) * STAT_BYTES
    return {
        "scoring: histogram reads": work.n_nodes * (SCORING_SWEEPS * H + 2 * H // F),
        "scoring: scratch, winners": work.n_nodes * (scratch + winner),
    }


def partition_parts(shape: Shape, work: LevelWork) -> dict:
    """partition_rows over all rows (regression: with pass 1 of the children's squared
    deviations), and regression's pass 2 (squared_deviation_sums); nothing is regrouped
    after them."""
    N, p_rows = shape.n_rows, work.split_rows
    k = min(work.n_split_features or min(work.split_nodes, shape.n_features), shape.n_features)
    targets = sum(gathered_bytes(N, p_rows, size) for size in shape.target_arrays)
    parts = {
        "partition: node ids r/w": N * NODE_ID_BYTES + gathered_bytes(N, p_rows, NODE_ID_BYTES),
        # Each of the k split features is read for its share of the split rows.
        "partition: codes": k * gathered_bytes(N, p_rows / k, shape.code_bytes),
    }
    if shape.is_regression:
        parts["partition: targets (pass 1)"] = targets
        # squared_deviation_sums: every node id, the children's rows' targets.
        parts["squared deviations (pass 2)"] = N * NODE_ID_BYTES + targets
    return parts


def floors(shape: Shape, work: LevelWork) -> tuple[int, int]:
    """(one_pass_floor, ideal_floor) of a level: see the module's docstring."""
    N, H = shape.n_rows, shape.node_hist_bytes
    histogram_terms = work.n_built * H + 3 * work.n_derived * H + work.n_nodes * H
    target_bytes = sum(shape.target_arrays)
    partition_min = work.split_rows * (
        shape.code_bytes + 2 * NODE_ID_BYTES + 2 * target_bytes  # two variance passes
    )
    in_row_order = 0.0
    if work.n_built:
        arrays = (NODE_ID_BYTES, *shape.label_arrays)
        in_row_order = shape.n_features * gathered_bytes(N, work.built_rows, shape.code_bytes)
        in_row_order += sum(gathered_bytes(N, work.built_rows, size) for size in arrays)
    per_row = shape.n_features * shape.code_bytes + shape.row_label_bytes
    keep_groups = work.split_rows * 2 * ROW_INDEX_BYTES  # stable partition of the indices
    one_pass = in_row_order + histogram_terms + partition_min
    ideal = work.built_rows * per_row + histogram_terms + partition_min + keep_groups
    return int(round(one_pass)), int(round(ideal))


def level_bytes(shape: Shape, work: LevelWork) -> LevelBytes:
    """The model's bytes for one level (see the module's docstring)."""
    out = LevelBytes(work.level, "-")
    parts = out.as_implemented
    if work.n_built:
        out.path, sweeps, out.histogram_atomics = histogram_launch(shape, work)
        parts["row list: compaction (CuPy)"] = row_list_bytes(shape, work)
        parts.update(histogram_parts(shape, work, sweeps))
        kept = histogram_parts(shape, work, 1)
        out.histogram_kernel_l2_kept = int(round(sum(kept.values())))
    parts["subtraction"] = 5 * work.n_derived * shape.node_hist_bytes  # take r+w; -= 2r+1w
    parts.update(scoring_bytes(shape, work))
    if work.split_nodes:
        parts.update(partition_parts(shape, work))
        if shape.is_regression:
            out.row_atomics = work.split_rows * (PASS_1_ATOMICS + PASS_2_ATOMICS)
    for name, value in parts.items():
        parts[name] = int(round(value))
    out.one_pass_floor, out.ideal_floor = floors(shape, work)
    return out


def tree_bytes(shape: Shape, levels: list[LevelWork]) -> list[LevelBytes]:
    return [level_bytes(shape, work) for work in levels]


def seconds(n_bytes: float, bandwidth_gb_s: float) -> float:
    """Time to move ``n_bytes`` at ``bandwidth_gb_s`` (1 GB = 1e9 bytes)."""
    return n_bytes / (bandwidth_gb_s * 1e9)


def summary(shape: Shape, depth: int, bandwidths, smaller_fraction: float = 0.5) -> dict:
    """Totals per tree for an assumed full tree, in bytes and milliseconds."""
    levels = tree_bytes(shape, assumed_levels(shape, depth, smaller_fraction))
    totals = {
        "as_implemented": sum(lv.as_implemented_total for lv in levels),
        "one_pass_floor": sum(lv.one_pass_floor for lv in levels),
        "ideal_floor": sum(lv.ideal_floor for lv in levels),
    }
    result = {
        "depth": depth,
        "bytes": totals,
        "levels": levels,
        "histogram_atomics": sum(lv.histogram_atomics for lv in levels),
        "row_atomics": sum(lv.row_atomics for lv in levels),
    }
    result["ms"] = {
        bw: {name: 1e3 * seconds(value, bw) for name, value in totals.items()} for bw in bandwidths
    }
    return result


MATRIX_SHAPES = {
    "Higgs-shaped 10,500,000 x 28, 2 classes": Shape(10_500_000, 28, 256, 2),
    "Covertype-shaped 581,012 x 54, 7 classes": Shape(581_012, 54, 256, 7),
    # The same rows as a regression: the variance passes' bytes and atomics.
    "Higgs-shaped 10,500,000 x 28, regression": Shape(10_500_000, 28, 256, 0),
}


def _gb(value: float) -> str:
    return f"{value / 1e9:.3f}"


def predictions_markdown(
    depths=(8, 10, 12),
    bandwidths=(H200_NOMINAL_GB_S, ASSUMED_COPY_GB_S),
    smaller_fraction: float = 0.5,
    shapes=None,
) -> str:
    """Markdown tables: per tree, and per level at the deepest depth, for each shape."""
    shapes = MATRIX_SHAPES if shapes is None else shapes
    bw_names = ", ".join(f"{bw / 1000:g} TB/s" for bw in bandwidths)
    lines = [
        f"Assumptions: full binary tree (every node of levels 0..depth-1 split, every row in "
        f"play), smaller child = {smaller_fraction:g} of its parent's rows, rows of a node "
        f"spread at random, 256 bins, unit weights, uint8 codes, every feature searched, "
        f"row lists compacted in row order by CuPy (CUB scan), no L2 reuse across sweeps; "
        f"times = bytes / "
        f"bandwidth at {bw_names}.",
        "",
        "| shape | depth | as implemented GB | one-pass floor GB | ideal floor GB | "
        + " | ".join(f"as impl. / one-pass / ideal ms @ {bw / 1000:g} TB/s" for bw in bandwidths)
        + " | hist. / row atomics (M) |",
        "|---|---:|---:|---:|---:|" + "---:|" * len(bandwidths) + "---:|",
    ]
    for name, shape in shapes.items():
        for depth in depths:
            s = summary(shape, depth, bandwidths, smaller_fraction)
            b = s["bytes"]
            cells = [
                " / ".join(
                    f"{s['ms'][bw][k]:.2f}"
                    for k in ("as_implemented", "one_pass_floor", "ideal_floor")
                )
                for bw in bandwidths
            ]
            lines.append(
                f"| {name} | {depth} | {_gb(b['as_implemented'])} | {_gb(b['one_pass_floor'])} "
                f"| {_gb(b['ideal_floor'])} | "
                + " | ".join(cells)
                + f" | {s['histogram_atomics'] / 1e6:.1f} / {s['row_atomics'] / 1e6:.1f} |"
            )
    deepest = max(depths)
    bw = bandwidths[-1]
    for name, shape in shapes.items():
        s = summary(shape, deepest, bandwidths, smaller_fraction)
        lines += [
            "",
            f"Per level, {name}, depth {deepest}, at {bw / 1000:g} TB/s:",
            "",
            "| level | nodes | built | kernel | as implemented MB | of which histogram "
            "kernel MB | one-pass floor MB | ideal floor MB | as impl. ms | one-pass ms | "
            "ideal ms | histogram kernel MB, list/node ids/labels kept in L2 across sweeps |",
            "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for work, lv in zip(
            assumed_levels(shape, deepest, smaller_fraction), s["levels"], strict=True
        ):
            lines.append(
                f"| {lv.level} | {work.n_nodes} | {work.n_built} | {lv.path} | "
                f"{lv.as_implemented_total / 1e6:.1f} | {lv.histogram_kernel_bytes / 1e6:.1f} | "
                f"{lv.one_pass_floor / 1e6:.1f} | {lv.ideal_floor / 1e6:.1f} | "
                f"{1e3 * seconds(lv.as_implemented_total, bw):.3f} | "
                f"{1e3 * seconds(lv.one_pass_floor, bw):.3f} | "
                f"{1e3 * seconds(lv.ideal_floor, bw):.3f} | "
                f"{lv.histogram_kernel_l2_kept / 1e6:.1f} |"
            )
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--bandwidth",
        default=f"{H200_NOMINAL_GB_S:g},{ASSUMED_COPY_GB_S:g}",
        help="GB/s, comma-separated (default: H200 nominal, assumed copy)",
    )
    parser.add_argument("--depths", default="8,10,12")
    parser.add_argument("--smaller-fraction", type=float, default=0.5)
    args = parser.parse_args(argv)
    bandwidths = tuple(float(b) for b in args.bandwidth.split(","))
    depths = tuple(int(d) for d in args.depths.split(","))
    if not 0 < args.smaller_fraction <= 0.5 or any(b <= 0 or math.isnan(b) for b in bandwidths):
        parser.error("need 0 < --smaller-fraction <= 0.5 and positive bandwidths")
    print(predictions_markdown(depths, bandwidths, args.smaller_fraction), end="")


if __name__ == "__main__":
    main()
