"""Bytes a level of the CUDA tree build moves through device memory, and the time floors.

A model, not a measurement: it counts the DRAM bytes each level of
``gpu_tree.backends.cuda.CUDAHistogramBackend`` must read and write, under the algorithm
as it stands (kernels/cuda.py), and two lower floors, so that measured level times can be
set against them (``bench/bench_gpu_matrix.py`` does, with the row counts it measured).

What one level L of the level-wise build does on the device (read from the code):

* histograms: one launch for the nodes built at L (the root at L = 0; below it the
  smaller child of every split, the larger child coming from the subtraction trick).
  Rows are not moved: ``node_of_row`` says where each row is, so the kernel reads every
  row's node id and, for rows of built nodes, their bin codes (uint8, feature-major) and
  label. ``histograms_shared`` (a block-private histogram of 48 KiB per block: 12,288
  int32 entries for unweighted class counts, 6,144 int64 ones weighted) when one feature
  of every built node fits, else ``histograms_global`` (one global atomic per (row,
  feature)). Each feature group of the shared kernel, and each feature sweep of the
  global kernel, reads the node ids again;
* the histogram buffer is zero-filled first (``hist.fill(0)``);
* subtraction: ``take`` of the parents' histograms, then ``-=`` the built siblings';
* split scoring (CuPy, ``gpu_tree.growing.splitting``) reads every histogram of the level at
  least once; how many passes it really makes is left to the measurement;
* partition: ``partition_rows`` reads each row's node id and, for rows of split nodes,
  the one code of its node's split feature, and writes the new node id (the children's
  sizes come from the histograms: no second pass counts them).

Memory moves in 32-byte sectors: a warp reading the codes of rows of built nodes, when
those rows are scattered among others (they are: rows are never regrouped by node),
touches almost every sector. The model counts a sector as read when at least one of its
rows is needed, assuming rows of built nodes spread at random: fraction
``1 - (1 - p) ** rows_per_sector`` of the sectors, p the fraction of rows needed.

Columns it gives per level (bytes):

* ``as_implemented``: the DRAM traffic of the current kernels, as above, with no L2
  reuse across feature sweeps (the H200 reports 60 MB of L2; the 42 MB of node ids of
  10.5M rows may partly stay there, so this can overstate the node-id re-reads);
  histogram atomics are counted in their own column (L2 atomic throughput, not DRAM
  bandwidth, bounds them);
* ``one_pass_floor``: the least any kernel can move with rows laid out as now (not
  grouped by node): every row's codes, label and node id read once, the built histograms
  written once, subtraction and scoring one pass each, the partition one code and one
  node id read and one node id written per row of a split node;
* ``ideal_floor``: rows grouped by node, so that only the rows of built nodes are read
  (each binned row of a built node read once: the subtraction trick's saving in full);
  histogram and partition terms as in the one-pass floor.

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
LABEL_BYTES = 4  # int32 y_class
WEIGHT_BYTES = 8  # int64 fixed-point weight (read only when rows are weighted)
# Histogram entries (gpu_tree.data.stats): int32 counts unweighted, int64 fixed point
# weighted.
COUNT_HIST_VALUE_BYTES = 4
WEIGHTED_HIST_VALUE_BYTES = 8
# kernels/cuda.py: SHARED_HISTOGRAM_BYTES (a block's shared histogram, entries of the
# histogram's type), THREADS_PER_BLOCK, shared_launch_config's rows_per_thread and its cap
# on row blocks. Repeated here so that the model imports without numba;
# tests/test_bench_scripts.py checks they agree with the kernels.
SHARED_HISTOGRAM_BYTES = 48 * 1024
THREADS_PER_BLOCK = 256
ROWS_PER_THREAD = 16
MAX_ROW_BLOCKS = 1024

H200_NOMINAL_GB_S = 4800.0  # HBM3e, the data-sheet figure
# A device-to-device copy as seen on these H200 machines through PyTorch (about 4.3 TB/s,
# bytes read + written; .library/device/KINDS.md): an assumption until this project's
# own bench/bench_gpu_matrix.py measures it.
ASSUMED_COPY_GB_S = 4300.0


@dataclass(frozen=True)
class Shape:
    """A data set as the CUDA backend sees it (classification)."""

    n_rows: int
    n_features: int
    n_bins: int = 256
    n_classes: int = 2
    weighted: bool = False  # weighted rows carry an int64 weight and a count channel
    code_bytes: int = 1  # uint8 bin codes up to 256 bins

    @property
    def n_channels(self) -> int:
        return self.n_classes + (1 if self.weighted else 0)

    @property
    def hist_value_bytes(self) -> int:
        return WEIGHTED_HIST_VALUE_BYTES if self.weighted else COUNT_HIST_VALUE_BYTES

    @property
    def node_hist_bytes(self) -> int:
        """One node's dense histogram: features x bins x channels entries."""
        return self.n_features * self.n_bins * self.n_channels * self.hist_value_bytes

    @property
    def row_label_bytes(self) -> int:
        return LABEL_BYTES + (WEIGHT_BYTES if self.weighted else 0)


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
    histogram_atomics: int = 0  # global-memory float atomics of the histogram kernel

    @property
    def as_implemented_total(self) -> int:
        return int(sum(self.as_implemented.values()))


def sectors_touched(fraction: float, rows_per_sector: int) -> float:
    """Fraction of sectors holding at least one needed row, rows needed at random."""
    fraction = min(max(fraction, 0.0), 1.0)
    return 1.0 - (1.0 - fraction) ** rows_per_sector


def shared_features_per_block(n_hist_slots: int, shape: Shape) -> int:
    """As kernels.cuda.shared_features_per_block for ``n_hist_slots`` nodes' histograms
    built at once: 0 means the global-memory kernel."""
    per_feature = n_hist_slots * shape.n_bins * shape.n_channels
    entries = SHARED_HISTOGRAM_BYTES // shape.hist_value_bytes
    return min(shape.n_features, entries // per_feature) if per_feature else 0


def row_blocks(n_rows: int) -> int:
    """Row blocks of one feature group of the shared kernel (kernels.cuda)."""
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


def level_bytes(shape: Shape, work: LevelWork) -> LevelBytes:
    """The model's bytes for one level (see the module's docstring)."""
    N, F = shape.n_rows, shape.n_features
    H = shape.node_hist_bytes
    codes_per_sector = SECTOR_BYTES // shape.code_bytes
    p_built = work.built_rows / N if N else 0.0
    out = LevelBytes(work.level, "-")
    parts = out.as_implemented
    if work.n_built:
        group = shared_features_per_block(work.n_built, shape)
        touched_codes = sectors_touched(p_built, codes_per_sector)
        touched_labels = sectors_touched(p_built, SECTOR_BYTES // LABEL_BYTES)
        touched_weights = sectors_touched(p_built, SECTOR_BYTES // WEIGHT_BYTES)
        label_read = N * LABEL_BYTES * touched_labels
        if shape.weighted:
            label_read += N * WEIGHT_BYTES * touched_weights
        extra_channel = 1 if shape.weighted else 0
        if group > 0:
            out.path = "shared"
            sweeps = -(-F // group)  # feature groups: each reads node ids and labels
            entries = work.n_built * F * shape.n_bins * shape.n_channels
            out.histogram_atomics = row_blocks(N) * entries  # upper bound: non-zero only
        else:
            out.path = "global"
            sweeps = F  # one sweep of all rows per feature
            out.histogram_atomics = work.built_rows * F * (1 + extra_channel)
        parts["hist: node ids"] = sweeps * N * NODE_ID_BYTES
        parts["hist: codes"] = F * N * shape.code_bytes * touched_codes
        parts["hist: labels"] = sweeps * label_read
        parts["hist: zero fill"] = work.n_built * H
        parts["hist: result"] = work.n_built * H
    parts["subtraction"] = 5 * work.n_derived * H  # take: r+w; -=: 2 r + 1 w
    parts["scoring (>= 1 read)"] = work.n_nodes * H
    if work.split_nodes:
        p_split = work.split_rows / N if N else 0.0
        k = work.n_split_features or min(work.split_nodes, F)
        k = min(k, F)
        parts["partition: node ids r/w"] = (
            N * NODE_ID_BYTES * (1 + sectors_touched(p_split, SECTOR_BYTES // NODE_ID_BYTES))
        )
        # Each of the k split features is read for its share of the split rows.
        parts["partition: codes"] = (
            k * N * shape.code_bytes * sectors_touched(p_split / k, codes_per_sector)
        )
    for name, value in parts.items():
        parts[name] = int(round(value))

    histogram_terms = work.n_built * H + 3 * work.n_derived * H + work.n_nodes * H
    partition_min = work.split_rows * (shape.code_bytes + 2 * NODE_ID_BYTES)
    per_row = F * shape.code_bytes + shape.row_label_bytes
    out.one_pass_floor = int(
        (N * (per_row + NODE_ID_BYTES) if work.n_built else 0) + histogram_terms + partition_min
    )
    out.ideal_floor = int(work.built_rows * per_row + histogram_terms + partition_min)
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
    }
    result["ms"] = {
        bw: {name: 1e3 * seconds(value, bw) for name, value in totals.items()} for bw in bandwidths
    }
    return result


MATRIX_SHAPES = {
    "Higgs-shaped 10,500,000 x 28, 2 classes": Shape(10_500_000, 28, 256, 2),
    "Covertype-shaped 581,012 x 54, 7 classes": Shape(581_012, 54, 256, 7),
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
        f"play), smaller child = {smaller_fraction:g} of its parent's rows, 256 bins, unit "
        f"weights, uint8 codes; times = bytes / bandwidth at {bw_names}.",
        "",
        "| shape | depth | as implemented GB | one-pass floor GB | ideal floor GB | "
        + " | ".join(f"as impl. / one-pass / ideal ms @ {bw / 1000:g} TB/s" for bw in bandwidths)
        + " | hist. atomics (M) |",
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
                + f" | {s['histogram_atomics'] / 1e6:.1f} |"
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
            "ideal ms |",
            "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for work, lv in zip(
            assumed_levels(shape, deepest, smaller_fraction), s["levels"], strict=True
        ):
            kernel = sum(v for k, v in lv.as_implemented.items() if k.startswith("hist:"))
            lines.append(
                f"| {lv.level} | {work.n_nodes} | {work.n_built} | {lv.path} | "
                f"{lv.as_implemented_total / 1e6:.1f} | {kernel / 1e6:.1f} | "
                f"{lv.one_pass_floor / 1e6:.1f} | {lv.ideal_floor / 1e6:.1f} | "
                f"{1e3 * seconds(lv.as_implemented_total, bw):.3f} | "
                f"{1e3 * seconds(lv.one_pass_floor, bw):.3f} | "
                f"{1e3 * seconds(lv.ideal_floor, bw):.3f} |"
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
