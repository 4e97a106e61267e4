"""Targeted mutation testing of gpu_tree's core: do the tests catch the bugs that matter?

Why not mutmut: mutmut 3.8 wraps every undecorated function in a Python trampoline
(``kernels/_binning_search.py``'s ``lookup_cell`` and ``make_bin_code`` included), which
numba cannot compile (``UnsupportedBytecodeError: DICT_MERGE``), so every CPU-backend test
errors; it skips every decorated function, i.e. all ``@njit`` / ``@cuda.jit`` kernels; it
copies the sources to ``mutants/`` where ``kernels/`` is no longer ``gpu_tree.kernels``;
and it generates about 7,800 mutants for these files, far beyond a 2-core machine.

Instead: a hand-written list of mutants, each one change a real bug would make (a
comparison flipped, an off-by-one, a dropped missing-value term, left/right swapped, a
validation skipped, a non-atomic add in a CUDA kernel, ...). For each mutant the script
checks its original snippet occurs exactly once in its file (an error otherwise, so the
list cannot silently rot), applies it in a *separate git worktree* (never the checkout
people edit), runs the test files mapped to that source file with ``pytest -x``, records
killed / survived / timeout / error, and restores the file (content and mtime; stale
``.pyc`` files are removed both ways). Mutants of numba-compiled files run with a fresh
``NUMBA_CACHE_DIR``: numba's on-disk cache tracks only the file a function is defined in,
so a mutated ``_binning_search.py`` would otherwise be hidden behind ``cpu/binning.py``'s cache.
Equivalent mutants (no observable change) stay in the list with the reason; they are
reported, never run, and not counted as survivors.

Usage (from the repository root)::

    python tests/quality/mutation_testing.py --list                  # the mutants, checked
    python tests/quality/mutation_testing.py                         # run all (tens of minutes)
    python tests/quality/mutation_testing.py --only M05 --only S12   # some of them
    python tests/quality/mutation_testing.py --file file_format/checks.py  # one file's
    python tests/quality/mutation_testing.py --resume                # skip ids already in the JSON

The worktree (``--worktree``, default ``$TMPDIR/gpu_tree-mutation-wt``) is created from
HEAD when missing; ``--refresh`` moves it to the current HEAD (to pick up new tests). It
is imported through ``PYTHONPATH`` with a ``gpu_tree/kernels -> ../kernels`` symlink
standing in for pyproject's ``package-dir`` mapping; the script checks that the worktree's
``gpu_tree`` and ``gpu_tree.kernels`` are the ones imported before running anything.
Results: ``--out`` (markdown, default ``tests/quality/out/mutation.md``) and the same path with
``.json``; both are rewritten after every mutant, so an interrupted run keeps its results.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_WORKTREE = Path(tempfile.gettempdir()) / "gpu_tree-mutation-wt"

SPLITTING = "gpu_tree/growing/splitting.py"
CRITERIA = "gpu_tree/growing/criteria.py"
BINNING = "gpu_tree/data/binning.py"
SEARCH = "kernels/_binning_search.py"
# The kernels, a module per stage on each device (kernels/cpu/, kernels/cuda/).
CPU_BINNING = "kernels/cpu/binning.py"
CPU_HISTOGRAMS = "kernels/cpu/histograms.py"
CPU_PARTITION = "kernels/cpu/partition.py"
CPU_PREDICTION = "kernels/cpu/prediction.py"
CPU_ROW_STATISTICS = "kernels/cpu/row_statistics.py"
CPU_KERNELS = (CPU_BINNING, CPU_HISTOGRAMS, CPU_PARTITION, CPU_PREDICTION, CPU_ROW_STATISTICS)
CUDA_BINNING = "kernels/cuda/binning.py"
CUDA_HISTOGRAMS = "kernels/cuda/histograms.py"
CPU_BACKEND = "gpu_tree/backends/cpu.py"
CUDA_BACKEND = "gpu_tree/backends/cuda.py"
GROWER = "gpu_tree/growing/grower.py"
NODE_TABLE = "gpu_tree/growing/node_table.py"
FEATURE_DRAWS = "gpu_tree/growing/feature_draws.py"
SPLIT_EVALUATION = "gpu_tree/growing/split_evaluation.py"
SPLIT_APPLICATION = "gpu_tree/growing/split_application.py"
RANDOM_SPLIT = "kernels/_random_split.py"
SUBTREES = "kernels/cpu/subtrees.py"
CATEGORICAL = "gpu_tree/data/categorical.py"
MODEL_FIELDS = "gpu_tree/model/file_format/fields.py"
MODEL_READING = "gpu_tree/model/file_format/reading.py"
MODEL_CHECKS = "gpu_tree/model/file_format/checks.py"
MODEL_WRITING = "gpu_tree/model/file_format/writing.py"
PACKED_ARRAYS = "gpu_tree/model/packed_arrays.py"
STATS = "gpu_tree/data/stats.py"
ROWS = "gpu_tree/backends/rows.py"
TREE = "gpu_tree/model/tree.py"
SPLIT_SCAN = "kernels/_split_scan.py"
SPARSE_KERNELS = "kernels/cpu/sparse.py"

# Files whose functions numba compiles and caches on disk (see the module docstring).
ABSOLUTE_ERROR_KERNELS = "kernels/cpu/absolute_error.py"
MEDIAN_ERRORS = "kernels/_median_errors.py"
CUDA_ABSOLUTE_ERROR = "kernels/cuda/absolute_error.py"
NUMBA_CACHED = (
    SEARCH,
    *CPU_KERNELS,
    "kernels/_tree_walk.py",
    SPLIT_SCAN,
    SPARSE_KERNELS,
    ABSOLUTE_ERROR_KERNELS,
    MEDIAN_ERRORS,
    CUDA_ABSOLUTE_ERROR,
)

# The test files that exercise each source file, fastest and most direct first (pytest
# -x stops at the first failure, so a killed mutant usually costs a few seconds). Chosen
# so a surviving mutant costs under about two minutes on 2 cores: test_grower.py (a
# minute) runs for the grower only.
FILE_TESTS = {
    SPLITTING: (
        "tests/growing/test_splitting.py",
        "tests/growing/test_missing_values.py",
        "tests/data/test_categorical.py",
    ),
    CRITERIA: ("tests/growing/test_criteria.py", "tests/growing/test_splitting.py"),
    BINNING: (
        "tests/backends/test_histograms.py",
        "tests/data/test_binning.py",
        "tests/growing/test_criteria.py",
        "tests/growing/test_missing_values.py",
        "tests/data/test_categorical.py",
    ),
    SEARCH: (
        "tests/backends/test_histograms.py",
        "tests/data/test_binning.py",
        "tests/device/test_cuda_backend.py",
    ),
    CPU_BINNING: (
        "tests/backends/test_histograms.py",
        "tests/data/test_binning.py",
        "tests/growing/test_missing_values.py",
        "tests/data/test_fixed_point.py",
    ),
    CPU_HISTOGRAMS: (
        "tests/backends/test_histograms.py",
        "tests/data/test_binning.py",
        "tests/growing/test_missing_values.py",
        "tests/data/test_fixed_point.py",
    ),
    CPU_PARTITION: (
        "tests/backends/test_histograms.py",
        "tests/data/test_binning.py",
        "tests/growing/test_missing_values.py",
        "tests/data/test_fixed_point.py",
    ),
    CPU_PREDICTION: (
        "tests/backends/test_histograms.py",
        "tests/data/test_binning.py",
        "tests/growing/test_missing_values.py",
        "tests/data/test_fixed_point.py",
    ),
    CPU_ROW_STATISTICS: (
        "tests/backends/test_histograms.py",
        "tests/data/test_binning.py",
        "tests/growing/test_missing_values.py",
        "tests/data/test_fixed_point.py",
    ),
    CUDA_BINNING: ("tests/device/test_cuda_backend.py",),
    CUDA_HISTOGRAMS: ("tests/device/test_cuda_backend.py",),
    CPU_BACKEND: (
        "tests/backends/test_histograms.py",
        "tests/data/test_binning.py",
        "tests/device/test_cuda_backend.py",
        "tests/data/test_categorical.py",
    ),
    CUDA_BACKEND: ("tests/device/test_cuda_backend.py",),
    GROWER: (
        "tests/growing/test_grower.py",
        "tests/growing/test_missing_values.py",
        "tests/data/test_regression_precision.py",
    ),
    NODE_TABLE: (
        "tests/growing/test_grower.py",
        "tests/growing/test_missing_values.py",
        "tests/data/test_regression_precision.py",
    ),
    FEATURE_DRAWS: (
        "tests/growing/test_grower.py",
        "tests/growing/test_missing_values.py",
        "tests/data/test_regression_precision.py",
    ),
    SPLIT_EVALUATION: (
        "tests/growing/test_grower.py",
        "tests/growing/test_missing_values.py",
        "tests/data/test_regression_precision.py",
    ),
    SPLIT_APPLICATION: (
        "tests/growing/test_grower.py",
        "tests/growing/test_missing_values.py",
        "tests/data/test_regression_precision.py",
    ),
    CATEGORICAL: ("tests/data/test_categorical.py",),
    MODEL_FIELDS: ("tests/model/test_model_file.py", "tests/model/test_packed_arrays.py"),
    MODEL_READING: ("tests/model/test_model_file.py", "tests/model/test_packed_arrays.py"),
    MODEL_CHECKS: ("tests/model/test_model_file.py", "tests/model/test_packed_arrays.py"),
    MODEL_WRITING: ("tests/model/test_model_file.py", "tests/model/test_packed_arrays.py"),
    PACKED_ARRAYS: ("tests/model/test_packed_arrays.py",),
    ROWS: (
        "tests/backends/test_histograms.py",
        "tests/data/test_binning.py",
        "tests/data/test_fixed_point.py",
        "tests/device/test_cuda_backend.py",
        "tests/data/test_categorical.py",
    ),
    TREE: (
        "tests/model/test_model_file.py",
        "tests/growing/test_criteria.py",
        "tests/model/test_pruning.py",
    ),
    STATS: (
        "tests/backends/test_histograms.py",
        "tests/data/test_binning.py",
        "tests/data/test_fixed_point.py",
        "tests/growing/test_criteria.py",
        "tests/data/test_categorical.py",
    ),
}
CATEGORICAL_TESTS = ("tests/data/test_categorical.py", "tests/growing/test_splitting.py")
FILE_TESTS[SPLIT_SCAN] = ("tests/kernels/test_split_scan.py",)
FILE_TESTS[ABSOLUTE_ERROR_KERNELS] = ("tests/growing/test_absolute_error.py",)
FILE_TESTS[MEDIAN_ERRORS] = ("tests/growing/test_absolute_error.py",)
FILE_TESTS[CUDA_ABSOLUTE_ERROR] = ("tests/growing/test_absolute_error.py",)
FILE_TESTS[RANDOM_SPLIT] = (
    "tests/ensemble/test_forest.py",
    "tests/kernels/test_random_split.py",
    "tests/kernels/test_subtree_finisher.py",
)
FILE_TESTS[SUBTREES] = ("tests/kernels/test_subtree_finisher.py",)
FILE_TESTS[SPARSE_KERNELS] = ("tests/backends/test_sparse.py",)
FILE_TESTS["kernels/_tree_walk.py"] = (
    "tests/model/test_prediction_paths.py",
    "tests/backends/test_sparse.py",
)


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str
    original: str  # must occur exactly once in ``file``
    mutated: str
    models: str  # the real bug this stands for
    tests: tuple[str, ...] | None = None  # None: FILE_TESTS[file]
    equivalent: str | None = None  # why nothing observable changes: listed, never run


M = Mutant
# In priority order (split selection, binning and model-file validation first): a run cut
# short has done the most valuable ones.
MUTANTS: list[Mutant] = [
    # -- split selection ------------------------------------------------------------------
    M(
        "S01",
        SPLITTING,
        "present_left = position[None, None, :] < n_nonempty[:, :, None]",
        "present_left = position[None, None, :] <= n_nonempty[:, :, None]",
        "off-by-one: the empty slot past a node's values counts as holding a value (a feature missing at every row of a node can send nothing left and the missing rows right)",
    ),
    M(
        "S02",
        SPLITTING,
        "values_right = position[None, None, :] < (n_nonempty - 1)[:, :, None]",
        "values_right = position[None, None, :] < n_nonempty[:, :, None]",
        "off-by-one: a candidate at the node's last value (empty right side) is allowed",
    ),
    M(
        "S03",
        SPLITTING,
        "    if missing is None:  # the last position cannot be a split: nothing would go right\n        cumulative = cumulative[:, :, :-1]\n",
        "    if missing is None:  # the last position cannot be a split: nothing would go right\n        pass\n",
        "the last slot is not dropped from the candidates",
        equivalent="values_right (position < n_nonempty - 1) already refuses the last position, and argmax keeps the first maximum, so the extra -inf column never wins",
    ),
    M(
        "S04",
        SPLITTING,
        "missing_left = xp.where(tied, more_rows_left, better_left)",
        "missing_left = better_left",
        "tie-break of the missing side: tied scores send missing rows to the side that rounded "
        "higher instead of to the side with more present rows",
    ),
    M(
        "S05",
        SPLITTING,
        "score_left = weighted_split_score(criterion, layout, left + m, right, parent=parent, xp=xp)",
        "score_left = weighted_split_score(criterion, layout, left, right + m, parent=parent, xp=xp)",
        "missing rows scored on the wrong side (both sides scored with missing right)",
    ),
    M(
        "S06",
        SPLITTING,
        "        present_left & (values_right | has_missing),\n        left,\n        right + m,",
        "        present_left & values_right,\n        left,\n        right + m,",
        "the 'every present value left, missing right' candidate is never allowed",
    ),
    M(
        "S07",
        SPLITTING,
        "allowed &= layout.count(right, xp) >= constraints.min_samples_leaf",
        "allowed &= True",
        "min_samples_leaf checked on the left child only",
    ),
    M(
        "S08",
        SPLITTING,
        "allowed = allowed & (layout.weight(left, xp) >= constraints.min_weight_leaf)",
        "allowed = allowed & (layout.weight(left, xp) > constraints.min_weight_leaf)",
        "boundary: a left child weighing exactly min_weight_leaf is refused",
    ),
    M(
        "S09",
        SPLITTING,
        "allowed = allowed & host_to_device(feature_mask, xp)[:, :, None]",
        "allowed = allowed",
        "the feature mask (max_features draw, ID3's used features) is ignored",
    ),
    M(
        "S10",
        SPLITTING,
        "feature = _first_near_max(search, feature_best, parent, feature_divisor)",
        "feature = xp.argmax(feature_best, axis=1)",
        "tie tolerance across features: the feature whose score rounded highest wins instead "
        "of the lowest among scores within rounding",
    ),
    M(
        "S11",
        SPLITTING,
        "best_position = _first_near_max(search, score, parent[:, None], divisor)",
        "best_position = xp.argmax(score, axis=2)",
        "tie tolerance within a feature: the bin whose score rounded highest wins instead of "
        "the lowest among scores within rounding",
    ),
    M(
        "S12",
        SPLITTING,
        "position + 1 < n_nonempty[each_node, feature], chosen_bins",
        "position + 1 <= n_nonempty[each_node, feature], chosen_bins",
        "off-by-one: a split after the last present value reads a bin past the node's values instead of marking 'missing only right' (+inf threshold)",
    ),
    M(
        "S13",
        SPLITTING,
        "goes_left = layout.count(left, xp) >= layout.count(right, xp)",
        "goes_left = layout.count(left, xp) > layout.count(right, xp)",
        "tie-break: missing values unseen in training go right, not left, between equal children",
    ),
    M(
        "S14",
        SPLITTING,
        "chosen.score[chunk] = np.where(has_split, best / np.where(has_split, node_weight, 1.0), -np.inf)",
        "chosen.score[chunk] = np.where(has_split, best, -np.inf)",
        "the winner's weighted score is not divided by the node weight (priorities, min_impurity_decrease)",
    ),
    M(
        "S15",
        SPLITTING,
        "left = left + xp.where(goes_left[:, None], chosen_missing, 0)",
        "left = left",
        "the '+ missing' term dropped: missing rows sent left are not in the left child's stats",
    ),
    M(
        "S16",
        SPLITTING,
        "prefix_end[None, None, :] < (n_nonempty - 1)[:, :, None],",
        "prefix_end[None, None, :] < n_nonempty[:, :, None],",
        "categorical off-by-one: the subset holding every category (empty right) is a candidate",
        tests=("tests/data/test_categorical.py", "tests/growing/test_splitting.py"),
    ),
    M(
        "S17",
        SPLITTING,
        "better = (best > self.best) & ~tied",
        "better = best >= self.best",
        "categorical tie-break: a later candidate family wins ties",
        tests=CATEGORICAL_TESTS,
    ),
    M(
        "S18",
        SPLITTING,
        "allowed = n_nonempty >= 2",
        "allowed = n_nonempty >= 1",
        "multiway: a node holding one category can be 'split' into a single branch",
        tests=("tests/data/test_categorical.py", "tests/growing/test_splitting.py"),
    ),
    M(
        "S19",
        SPLITTING,
        "default = xp.argmax(counts, axis=2)  # the largest branch takes missing rows",
        "default = xp.zeros(counts.shape[:2], dtype=xp.int64)",
        "multiway: missing rows go to the first branch instead of the largest",
        tests=CATEGORICAL_TESTS,
    ),
    M(
        "S20",
        SPLITTING,
        "for size in range(1, min(max_size, n_categories) + 1)",
        "for size in range(1, min(max_size, n_categories))",
        "off-by-one: subsets of exactly max_category_subset categories are never tried",
        tests=CATEGORICAL_TESTS,
    ),
    M(
        "S21",
        SPLITTING,
        "bad = (mid >= upper) | ~np.isfinite(mid)",
        "bad = ~np.isfinite(mid)",
        "threshold rounding guard dropped: a midpoint that rounds onto the upper value sends it "
        "left",
    ),
    # -- model-file validation --------------------------------------------------------------
    M(
        "M01",
        MODEL_READING,
        "if version not in READABLE_VERSIONS:",
        "if False:",
        "format_version not checked",
    ),
    M(
        "M02",
        MODEL_READING,
        'if not isinstance(document, dict) or document.get("format") != FORMAT_NAME:',
        "if not isinstance(document, dict):",
        "the format name is not checked: any JSON object is read as a model",
    ),
    M(
        "M03",
        MODEL_FIELDS,
        "if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):",
        "if not all(isinstance(v, int) for v in values):",
        "integer arrays accept true/false",
    ),
    M(
        "M04",
        MODEL_FIELDS,
        "            and not isinstance(value, kind)\n            or isinstance(value, bool)\n            and kind is int\n",
        "            and not isinstance(value, kind)\n",
        "integer fields accept true/false (format_version: true passes as 1)",
    ),
    M(
        "M05",
        MODEL_CHECKS,
        "if child <= node:",
        "if child < node:",
        "a node that is its own child is accepted: prediction never ends",
    ),
    M(
        "M06",
        MODEL_CHECKS,
        "if not 0 <= child < n:",
        "if not 0 <= child <= n:",
        "off-by-one: child index == node_count accepted",
    ),
    M(
        "M07",
        MODEL_CHECKS,
        "if not 0 <= feature[node] < n_features:",
        "if not 0 <= feature[node] <= n_features:",
        "off-by-one: split feature == n_features accepted (reads past X's columns)",
    ),
    M(
        "M08",
        MODEL_CHECKS,
        '    if parents[0] != 0:\n        read.fail("the root has a parent")\n',
        "",
        "the root-has-a-parent check removed",
        equivalent="children must be numbered after their parent (child > node >= 0), so no "
        "node can name node 0 as a child: the check cannot fire",
    ),
    M(
        "M09",
        MODEL_CHECKS,
        "orphan = np.flatnonzero(parents[1:] != 1)",
        "orphan = np.flatnonzero(parents[1:] > 1)",
        "orphan nodes (no parent) accepted; only shared children refused",
    ),
    M(
        "M10",
        MODEL_CHECKS,
        "if left[node] != right[node] or kind[node] != LEAF:",
        "if left[node] != right[node]:",
        "a leaf whose split kind says it is internal is accepted",
    ),
    M(
        "M11",
        MODEL_CHECKS,
        "if offset < 0 or entries < 1 or offset + entries + 1 > branch_children.size:",
        "if offset < 0 or entries < 1 or offset + entries > branch_children.size:",
        "off-by-one: a multiway branch table one entry short of its default slot accepted",
    ),
    M(
        "M12",
        MODEL_CHECKS,
        "if offset < 0 or offset + n_words > bitsets.size:",
        "if offset + n_words > bitsets.size:",
        "a negative category-set offset accepted (numpy wraps it)",
    ),
    M(
        "M13",
        MODEL_CHECKS,
        "feature.clip(0)])\n        if bad.size:\n",
        "feature.clip(0)])\n        if False:\n",
        "a categorical split on a numeric feature accepted",
    ),
    M(
        "M14",
        MODEL_READING,
        "if labels.ndim != 1 or labels.size != tree.max_n_classes or tree.n_outputs != 1:",
        "if labels.ndim != 1 or tree.n_outputs != 1:",
        "class labels not checked against the tree's number of classes",
    ),
    M(
        "M15",
        MODEL_READING,
        "if n < 1 or n_features < 1 or n_classes < 1 or n_words < 1:",
        "if n_features < 1 or n_classes < 1 or n_words < 1:",
        "node_count 0 accepted (an empty tree)",
    ),
    M(
        "M16",
        MODEL_WRITING,
        'out[k] = "nan" if v != v else "inf" if v > 0 else "-inf"',
        'out[k] = "nan" if v != v else "inf"',
        "writer: -inf saved as inf (round trip changes the model)",
    ),
    M(
        "M17",
        MODEL_CHECKS,
        "    if tree.n_category_words < 1:\n"
        '        read.fail("n_category_words must be at least 1")\n',
        "",
        "the n_category_words check of check_categorical_nodes removed",
        equivalent="_read_tree already refuses n_category_words < 1 before this runs",
    ),
    M(
        "M18",
        MODEL_READING,
        'value = read.floats(doc, "value", n * n_outputs * n_classes)',
        'value = read.floats(doc, "value", None)',
        "the value array's length is not checked",
    ),
    M(
        "M19",
        MODEL_READING,
        "if n_features != tree.n_features:",
        "if False:",
        "n_features_in not checked against the tree",
    ),
    M(
        "M20",
        MODEL_READING,
        "if kind not in registry.classes:",
        "if False:",
        "the estimator name is not checked: any attribute of gpu_tree.estimators.tree is called",
    ),
    M(
        "M21",
        MODEL_READING,
        "if mask[j] != (entry is not None):",
        "if False:",
        "is_categorical and the categories list may disagree",
    ),
    M(
        "M22",
        PACKED_ARRAYS,
        "if size > _MOST_EXPANSION * len(data) + 64:",
        "if False:",
        "a packed array's claimed size is not bounded before it is inflated",
    ),
    M(
        "M23",
        PACKED_ARRAYS,
        "raw = inflater.decompress(data, size + 1)",
        "raw = inflater.decompress(data, size)",
        "a packed array of count 0 inflates without limit (max_length 0 means none)",
    ),
    M(
        "M24",
        PACKED_ARRAYS,
        "complete = inflater.eof and not inflater.unconsumed_tail and not inflater.unused_data",
        "complete = True",
        "bytes after a packed array's values, or its stream cut short, pass unnoticed",
    ),
    # -- binning ----------------------------------------------------------------------------
    M(
        "B01",
        BINNING,
        "if distinct.size <= max_bins:",
        "if distinct.size < max_bins:",
        "boundary: a feature with exactly max_bins distinct values gets quantile edges "
        "instead of one bin per value",
    ),
    M(
        "B02",
        BINNING,
        "return np.where(mid >= values[1:], values[:-1], mid)",
        "return mid",
        "edge rounding guard dropped: an edge can land on the upper value",
    ),
    M(
        "B03",
        BINNING,
        "fractions = np.linspace(0, 100, num=max_bins + 1)[1:-1]",
        "fractions = np.linspace(0, 100, num=max_bins)[1:-1]",
        "off-by-one in the quantile count: one bin fewer than max_bins",
    ),
    M(
        "B04",
        BINNING,
        "return edges[edges < distinct[-1]], False",
        "return edges, False",
        "an edge equal to the largest value is kept (an always-empty last bin)",
    ),
    M(
        "B05",
        BINNING,
        "rng = np.random.default_rng(self.random_state)",
        "rng = np.random.default_rng()",
        "binning row sample not seeded: edges (and trees) change from run to run",
    ),
    M(
        "B06",
        BINNING,
        "return np.sort(rng.choice(n_samples, self.subsample, replace=False))",
        "return rng.choice(n_samples, self.subsample, replace=False)",
        "the sampled rows are not sorted (a distributed fit finds each partition's "
        "share of the sample by searchsorted: tests/dask/test_dask.py, past 200,000 rows)",
    ),
    M(
        "B07",
        BINNING,
        "value_bins = self.max_bins - 1 if self.has_missing_ else self.max_bins",
        "value_bins = self.max_bins",
        "no bin kept for missing values: with NaN, max_bins + 1 bins in all",
    ),
    M(
        "B08",
        BINNING,
        "        self._bounds_from_edges(bin_lower, bin_upper)\n        logger.info(\n"
        '            "binned %s rows x %d features, at most %d bins (%.2f s)",\n',
        "        logger.info(\n"
        '            "binned %s rows x %d features, at most %d bins (%.2f s)",\n',
        "CPU transform forgets the quantile-binned features' bin bounds (thresholds from +-inf)",
    ),
    M(
        "B09",
        BINNING,
        "value_bins = max_bins - 1 if has_missing else max_bins",
        "value_bins = max_bins",
        "category-count check ignores the missing values' bin",
    ),
    M(
        "B10",
        BINNING,
        "n_cells = cpu_binning.LOOKUP_CELLS_PER_EDGE * max(1, self.n_bins_ - 1)",
        "n_cells = 1",
        "the lookup grid has one cell",
        equivalent="the grid only narrows the binary search; with one cell the search runs "
        "over all of the feature's edges and returns the same bin (slower only)",
    ),
    M(
        "B11",
        BINNING,
        "self.n_bins_ = int(self.n_bins_per_feature_.max()) + (1 if self.has_missing_ else 0)",
        "self.n_bins_ = int(self.n_bins_per_feature_.max())",
        "off-by-one: the missing bin shares its code with the last value bin",
    ),
    M(
        "BS1",
        SEARCH,
        "if n_edges == 0 or x <= edges[offset]:",
        "if n_edges == 0 or x < edges[offset]:",
        "boundary of the first-edge fast path",
        equivalent="a value equal to the first edge falls through to the grid search, which "
        "finds edge 0 as the first edge >= x and returns bin 0 as well (also with one edge, "
        "whose lookup row is all zeros)",
    ),
    M(
        "BS2",
        SEARCH,
        "if edges[offset + mid] < x:",
        "if edges[offset + mid] <= x:",
        "a value equal to an edge goes to the bin above it (edges[b-1] <= x < edges[b])",
    ),
    M(
        "BS3",
        SEARCH,
        "n_edges = edge_offsets[f + 1] - offset",
        "n_edges = edge_offsets[f + 1] - offset - 1",
        "off-by-one: a feature's last edge is ignored",
    ),
    # -- criteria ---------------------------------------------------------------------------
    M(
        "C01",
        CRITERIA,
        "squares = squares + class_weights[..., c] * class_weights[..., c]",
        "squares = squares + class_weights[..., c]",
        "Gini: class weights not squared",
    ),
    M(
        "C02",
        CRITERIA,
        "result = result - _plog2p(class_weights[..., c], xp)",
        "result = result + _plog2p(class_weights[..., c], xp)",
        "entropy: sign of the class terms",
    ),
    M(
        "C03",
        CRITERIA,
        "- _weighted_node_impurity(criterion, layout, right, xp)",
        "+ _weighted_node_impurity(criterion, layout, right, xp)",
        "sign of the gain: the right child's impurity added",
    ),
    M(
        "C04",
        CRITERIA,
        "return _safe_divide(decrease, split_info(left_fraction, xp), xp)",
        "return decrease",
        "gain_ratio is plain information gain",
    ),
    M(
        "C05",
        CRITERIA,
        "distance = distance + xp.abs(p_left - p_right)",
        "distance = distance + (p_left - p_right)",
        "CART measure without the absolute value",
    ),
    M(
        "C06",
        CRITERIA,
        "return np.divide(numerator, denominator, out=out, where=denominator > 0)",
        "return np.divide(numerator, denominator, out=out, where=denominator >= 0)",
        "safe division divides by zero (empty sides give inf/nan)",
    ),
    M(
        "C07",
        STATS,
        "for c in range(1, n_channels):",
        "for c in range(1, n_channels - 1):",
        "off-by-one: the unrolled channel sum drops the last class",
    ),
    M(
        "C08",
        TREE,
        '"log_loss": "entropy",',
        '"log_loss": "gini",',
        "log_loss mapped to the wrong impurity",
        tests=("tests/growing/test_criteria.py", "tests/growing/test_splitting.py"),
    ),
    # -- grower -----------------------------------------------------------------------------
    M(
        "G01",
        NODE_TABLE,
        "(tree.depth[nodes] < p.max_depth)",
        "(tree.depth[nodes] <= p.max_depth)",
        "off-by-one: trees one level deeper than max_depth",
    ),
    M(
        "G02",
        NODE_TABLE,
        "            & (count >= 2 * p.min_samples_leaf)\n",
        "",
        "the 2 * min_samples_leaf pre-check removed",
        equivalent="a node with fewer rows has no candidate with min_samples_leaf rows on "
        "both sides (missing rows included, every multiway branch too), so the split search "
        "refuses them all: only time is saved",
    ),
    M(
        "G03",
        NODE_TABLE,
        "ok &= purity < p.min_purity",
        "ok &= purity <= p.min_purity",
        "boundary: a node exactly at min_purity is still split",
    ),
    M(
        "G04",
        SPLIT_EVALUATION,
        "& (priority + EPSILON >= min_decrease)",
        "& (priority >= min_decrease)",
        "no EPSILON slack on min_impurity_decrease (scikit-learn's rule)",
    ),
    M(
        "G05",
        SPLIT_APPLICATION,
        "smaller_is_left = left_count[parents] <= right_count[parents]",
        "smaller_is_left = left_count[parents] >= right_count[parents]",
        "the subtraction trick builds the larger child and derives the smaller",
        equivalent="histograms hold integers, so parent - larger is exactly the "
        "smaller child's histogram: only the cost changes",
    ),
    M(
        "G06",
        SPLIT_APPLICATION,
        "larger = np.where(smaller_is_left, right[parents], left[parents])",
        "larger = np.where(smaller_is_left, left[parents], right[parents])",
        "subtraction trick: the derived histogram is given to the wrong child (left/right swap)",
    ),
    M(
        "G07",
        SPLIT_EVALUATION,
        "threshold = np.where(next_bin < 0, np.inf, threshold)",
        "threshold = np.where(next_bin < 0, threshold, threshold)",
        "'missing only right' splits get a finite threshold: large values go right at predict",
    ),
    M(
        "G08",
        SPLIT_EVALUATION,
        "mask = usable if drawn is None else drawn",
        "mask = usable",
        "max_features draw ignored (every feature searched)",
    ),
    M(
        "G09",
        FEATURE_DRAWS,
        "eligible = filled > 1",
        "eligible = filled > 0",
        "max_features drawn among every feature holding rows, constant ones included",
        tests=("tests/ensemble/test_forest.py",),
    ),
    M(
        "G14",
        FEATURE_DRAWS,
        "taken = take_drawn(eligible, n_drawn, [len(found[k]) for k in pending])",
        "taken = take_drawn(eligible, n_drawn, 0)",
        "drawn-feature histograms: drawing on forgets the features already drawn (too many)",
        tests=("tests/ensemble/test_forest.py",),
    ),
    M(
        "G15",
        FEATURE_DRAWS,
        "listed = np.sort(order[:, :n_drawn], axis=1)",
        "listed = order[:, :n_drawn]",
        "drawn-feature histograms kept in draw order: ties between features break otherwise",
        tests=("tests/ensemble/test_forest.py",),
    ),
    M(
        "G10",
        GROWER,
        "heapq.heappush(heap, (-ev.priority[k], int(ev.nodes[k]), k, ev))",
        "heapq.heappush(heap, (-ev.priority[k], -int(ev.nodes[k]), k, ev))",
        "best-first tie-break: highest node id first",
    ),
    M(
        "G11",
        GROWER,
        "n_leaves += self.tree.node_count - before - 1",
        "n_leaves += self.tree.node_count - before",
        "off-by-one in the leaf count of best-first growth",
    ),
    M(
        "G12",
        SPLIT_APPLICATION,
        "words[subset] = np.where(ev.missing_left[nodes][:, None], ~right, left)",
        "words[subset] = left",
        "categories absent from a node do not follow its missing-left rule",
        tests=CATEGORICAL_TESTS,
    ),
    M(
        "G13",
        GROWER,
        "if ev.kind[k] == MULTIWAY and n_leaves + len(ev.branch_stats[k]) - 1 > (",
        "if ev.kind[k] == MULTIWAY and n_leaves + len(ev.branch_stats[k]) - 1 >= (",
        "boundary: a multiway split reaching exactly max_leaf_nodes is refused",
        tests=CATEGORICAL_TESTS + ("tests/growing/test_grower.py",),
    ),
    # -- categorical ------------------------------------------------------------------------
    M(
        "A01",
        STATS,
        "return max(1, -(-int(n_categories) // CATEGORIES_PER_WORD))",
        "return max(1, int(n_categories) // CATEGORIES_PER_WORD)",
        "bitset words rounded down: categories 64.. of a 65+-category feature lost",
    ),
    M(
        "A02",
        CATEGORICAL,
        'return ("bool", bool(value))',
        'return ("number", float(value))',
        "True and 1 become the same label/category",
    ),
    M(
        "A03",
        CATEGORICAL,
        "if not -n_features <= item < n_features:",
        "if not -n_features <= item <= n_features:",
        "off-by-one: categorical_features index == n_features accepted",
    ),
    M(
        "A04",
        CATEGORICAL,
        "codes[codes < 0] = np.nan",
        "codes[codes < -1] = np.nan",
        "unseen categories keep code -1 (numpy wraps it to the last category) instead of NaN",
    ),
    # -- CPU kernels and backend ------------------------------------------------------------
    M(
        "K01",
        CPU_BINNING,
        "lookup[f, 1] += 1  # edge 0 is in cell 0",
        "pass",
        "lookup grid misses edge 0: searches start one edge late",
    ),
    M(
        "K02",
        CPU_BINNING,
        "bin_lower[f, b] = min(bin_lower[f, b], block_lower[block, f, b])",
        "bin_lower[f, b] = block_lower[block, f, b]",
        "per-block bin minima not reduced: the last row block wins",
    ),
    M(
        "K03",
        CPU_HISTOGRAMS,
        "w = 1 if unit_weight else weight[i]",
        "w = 1",
        "sample weights ignored by the classification histograms",
    ),
    M(
        "K04",
        CPU_PARTITION,
        "goes_left = to_left",
        "goes_left = False",
        "partition ignores missing_left: missing rows always go right",
    ),
    M(
        "K05",
        CPU_HISTOGRAMS,
        "                if b == missing_bin:\n"
        "                    for c in range(n_channels):\n"
        "                        missing[node, f, c] += row_stats[i, c]\n",
        "                if b == missing_bin:\n"
        "                    for c in range(n_channels):\n"
        "                        pass\n",
        "compact code histograms drop the '+ missing' statistics",
    ),
    M(
        "K06",
        CPU_HISTOGRAMS,
        "                for c in range(n_channels):\n"
        "                    node_hist[k, b, c] += row_stats[i, c]",
        "                for c in range(n_channels - 1):\n"
        "                    node_hist[k, b, c] += row_stats[i, c]",
        "off-by-one: dense histograms drop the last statistics channel",
    ),
    M(
        "K07",
        CPU_BINNING,
        "if x > upper[f, b]:",
        "if x >= upper[f, b]:",
        "bin maximum updated on equal values too",
        equivalent="assigning a value equal to the current maximum leaves it unchanged (a -0.0 "
        "for 0.0 compares and averages the same)",
    ),
    M(
        "K08",
        CPU_HISTOGRAMS,
        "if count_channel >= 0:\n                    node_hist[k, b, count_channel] += 1",
        "if count_channel > 0:\n                    node_hist[k, b, count_channel] += 1",
        "count channel test off by one",
        equivalent="the count channel follows the class channels (index n_classes >= 1) or "
        "is -1: it is never 0",
    ),
    M(
        "K09",
        CPU_HISTOGRAMS,
        "while t >= 0 and keys[order[t]] > keys[k]:",
        "while t >= 0 and keys[order[t]] >= keys[k]:",
        "unstable insertion sort of a node's values",
        equivalent="equal values land in the same slot and integer sums do not "
        "depend on their order",
    ),
    M(
        "K10",
        CPU_HISTOGRAMS,
        "if n_present * n_present <= n_bins:",
        "if n_present * n_present < n_bins:",
        "switch point between insertion sort and presence-table scan",
        equivalent="both branches produce the same ascending list of codes; only speed differs",
    ),
    M(
        "K11",
        CPU_PARTITION,
        "value < 0 or value >= n_codes:",
        "value < 0 or value > n_codes:",
        "off-by-one in the multiway partition's code range",
        equivalent="during training every row's code is present at its node and the table "
        "spans 1 + the largest present code, so value == n_codes never occurs",
    ),
    M(
        "K12",
        RANDOM_SPLIT,
        "if b != first and upper[b] <= threshold and b != last:",
        "if b != first and upper[b] <= threshold:",
        "extra trees: the random split may follow the last present bin (an empty right side)",
        tests=("tests/ensemble/test_forest.py", "tests/kernels/test_subtree_finisher.py"),
    ),
    M(
        "K13",
        SUBTREES,
        "                while taken < n_drawn:",
        "                while taken <= n_drawn:",
        "finisher's lazy draw: one feature too many drawn per node",
        tests=("tests/kernels/test_subtree_finisher.py",),
    ),
    M(
        "K14",
        SUBTREES,
        "                        if not met[f] and (at < 0 or draw[f] < draw[at]):",
        "                        if not met[f] and (at < 0 or draw[f] <= draw[at]):",
        "finisher's lazy draw: ties of draw scores go to the higher feature",
        equivalent="two features' 64-bit draw scores tie with probability 2**-64",
        tests=("tests/kernels/test_subtree_finisher.py",),
    ),
    M(
        "K15",
        CPU_PREDICTION,
        "                m = _walk_lockstep_group(X[:end], start, roots[t], steps, threshold, current)",
        "                m = _walk_lockstep_group(X, start, roots[t], steps, threshold, current)",
        "forest lock-step walk: a group of rows runs past its block's end (into another task's)",
        equivalent="FOREST_ROWS (256) is a multiple of LOCKSTEP_ROWS (16): a block's groups "
        "end at its end, so the slice never shortens one",
        tests=("tests/ensemble/test_forest.py",),
    ),
    M(
        "K16",
        RANDOM_SPLIT,
        "if code == first or (code != last and upper[code] <= threshold):",
        "if code == first or upper[code] <= threshold:",
        "extra trees from a node's rows: the split may take the last present code (an "
        "empty right side)",
        tests=("tests/kernels/test_random_split.py", "tests/kernels/test_subtree_finisher.py"),
    ),
    # -- sparse input ---------------------------------------------------------------------
    M(
        "SP1",
        SPARSE_KERNELS,
        "                    if b != zero:\n",
        "                    if True:\n",
        "sparse histograms: the zero bin subtracts its own stored values (explicit zeros, "
        "NaN-free values binned with 0) from the node's totals",
    ),
    M(
        "SP2",
        "kernels/_tree_walk.py",
        "    if lo < indptr[i + 1] and indices[lo] == f:\n        return lo\n",
        "    if lo < indptr[i + 1] and indices[lo] == f + 1:\n        return lo\n",
        "sparse rows: a stored value is missed (read as 0) when routing and predicting",
        tests=("tests/backends/test_sparse.py",),
    ),
    M(
        "SP3",
        BINNING,
        "stored = np.where(after_zeros, positions - n_zeros, np.minimum(positions, split))",
        "stored = np.where(after_zeros, positions, np.minimum(positions, split))",
        "sparse binning: quantiles past a column's zeros read the wrong stored values",
        tests=("tests/backends/test_sparse.py",),
    ),
    M(
        "SP4",
        BINNING,
        "has_zeros = np.bincount(X.indices, minlength=n_features) < n_samples",
        "has_zeros = np.bincount(X.indices, minlength=n_features) < 0",
        "sparse binning: a bin's bounds leave out the zeros not stored (thresholds unlike dense)",
        tests=("tests/backends/test_sparse.py",),
    ),
    # -- absolute error and multi-output (issue 22) ----------------------------------------
    M(
        "AE1",
        ABSOLUTE_ERROR_KERNELS,
        "    n_ranks = sorted_y.size\n",
        "    n_ranks = order.size\n",
        "absolute error: the Fenwick tree sized by the rows added, not by the node's ranks "
        "(a subset's errors read past it: the bug the brute-force tests found)",
        tests=("tests/growing/test_absolute_error.py",),
    ),
    M(
        "AE2",
        MEDIAN_ERRORS,
        "    return score_left > score_right\n",
        "    return score_left < score_right\n",
        "absolute error: missing rows sent to the worse side",
        tests=("tests/growing/test_absolute_error.py",),
    ),
    M(
        "AE3",
        MEDIAN_ERRORS,
        "    if 2 * w_below == total:\n",
        "    if False:\n",
        "absolute error: no mid-point median where the rows before the median weigh exactly "
        "half (an even count of equal weights)",
        tests=("tests/growing/test_absolute_error.py",),
    ),
    M(
        "AE4",
        CUDA_ABSOLUTE_ERROR,
        "                member[LEFT_WITH_MISSING] = is_left or is_missing\n",
        "                member[LEFT_WITH_MISSING] = is_left\n",
        "absolute error on the GPU: the missing rows left out of the left side that takes "
        "them (the scan misses rows its totals count)",
        tests=("tests/growing/test_absolute_error.py",),
    ),
    M(
        "AE5",
        CUDA_ABSOLUTE_ERROR,
        "                if improvement > best + tol:\n",
        "                if improvement >= best:\n",
        "absolute error on the GPU: a later candidate wins a tie within rounding (the CPU "
        "keeps the first)",
        tests=("tests/growing/test_absolute_error.py",),
    ),
    M(
        "MO1",
        CRITERIA,
        "    for k in range(1, 1 + n_outputs):\n",
        "    for k in range(1, 2):\n",
        "multi-output regression: splits scored on the first output only",
        tests=("tests/growing/test_multi_output.py",),
    ),
    M(
        "P01",
        STATS,
        "return FIXED_POINT_BITS - int(exponent)",
        "return FIXED_POINT_BITS + 3 - int(exponent)",
        "fixed point too fine: column totals reach past 2**63 and sums overflow",
    ),
    M(
        "P02",
        ROWS,
        "return fixed, from_fixed_point(fixed, weight_exponent)",
        "return fixed, weight",
        "real weights not the fixed-point ones the histograms count",
    ),
    M(
        "P03",
        ROWS,
        "offsets = np.where(is_subset, np.arange(n_nodes) * words.shape[1], -1)",
        "offsets = np.where(is_subset, np.arange(n_nodes), -1)",
        "category-set offsets ignore the words per set: multi-word bitsets overlap",
    ),
    # -- CUDA kernels and backend -----------------------------------------------------------
    M(
        "U01",
        CUDA_HISTOGRAMS,
        "cuda.atomic.add(target, index + first + c, row_stats[i, c])",
        "target[index + first + c] += row_stats[i, c]",
        "non-atomic add of regression statistics in the histogram kernels",
    ),
    M(
        "U02",
        CUDA_HISTOGRAMS,
        "cuda.atomic.add(target, index + y_class[i], 1 if unit_weight else weight[i])",
        "target[index + y_class[i]] += 1 if unit_weight else weight[i]",
        "non-atomic add of class weights in the histogram kernels",
    ),
    M(
        "U03",
        CUDA_HISTOGRAMS,
        "                    cuda.atomic.add(\n"
        "                        hist_flat,\n"
        "                        ((slot * n_features + first + g) * n_bins + b) * n_channels + c,\n"
        "                        value,\n"
        "                    )",
        "                    hist_flat[((slot * n_features + first + g) * n_bins + b) * n_channels + c] += (\n"
        "                        value\n"
        "                    )",
        "non-atomic merge of block-private shared histograms into global memory",
    ),
    M(
        "U04",
        CUDA_HISTOGRAMS,
        "                shared[k] = 0\n            cuda.syncthreads()\n",
        "                shared[k] = 0\n",
        "missing barrier between zeroing the shared histogram and accumulating into it",
    ),
    M(
        "U05",
        CUDA_BINNING,
        "cuda.atomic.min(bin_lower, (f, b), x)",
        "bin_lower[f, b] = x",
        "bin minimum written without atomic min (last writer wins)",
    ),
    M(
        "U07",
        CUDA_HISTOGRAMS,
        "return min(n_features, entries // per_feature) if per_feature else 0",
        "return min(n_features, entries // per_feature + 1) if per_feature else 0",
        "off-by-one: a block's shared histogram overflows by one feature",
    ),
    M(
        "U08",
        CUDA_BACKEND,
        "tables[goes_left, nodes] = missing_left",
        "tables[goes_left, nodes] = 0",
        "GPU partition ignores missing_left: missing rows always go right",
    ),
    M(
        "U09",
        CUDA_BACKEND,
        "self.unit_weight = not layout.has_count_channel",
        "self.unit_weight = True",
        "GPU histograms ignore sample weights",
    ),
    M(
        "U10",
        CUDA_BACKEND,
        "n_groups = -(-self.n_features // group)",
        "n_groups = self.n_features // group",
        "feature groups rounded down: the last partial group of features gets no histogram",
    ),
    M(
        "U11",
        CUDA_BACKEND,
        "            if self.missing_bin >= 0:\n"
        "                table[k, self.missing_bin] = default_child[k]\n",
        "",
        "multiway table: the missing bin not pointed at the default child",
        equivalent="the table row is filled with the default child first, and a categorical "
        "feature's codes (at most max_bins - 1 with missing values) stop below the missing "
        "bin, so that entry already holds it",
    ),
    # Issue 14: integer statistics, measured node variances, the tie tolerance.
    M(
        "F01",
        ROWS,
        "centre = regression_centre(y)\n            scale =",
        "centre = float(np.mean(y))\n            scale =",
        "regression centred on the mean: an outlier moves it, y + c no longer centres alike",
    ),
    M(
        "F02",
        ROWS,
        "return np.where(lowest < highest, sums, 0.0)",
        "return sums",
        "a node of equal targets reports the last-bit variance of its mean's rounding",
    ),
    M(
        "F04",
        CPU_ROW_STATISTICS,
        "high_sum += q >> _deviations.LOW_BITS",
        "high_sum += q >> (_deviations.LOW_BITS + 1)",
        "the high parts of squared deviations summed at the wrong weight",
    ),
    M(
        "F05",
        NODE_TABLE,
        "return EPSILON if self.layout.is_classification else 0.0",
        "return EPSILON",
        "an absolute purity bound for regression: y * 2**-40 grows a smaller tree than y",
    ),
    M(
        "F06",
        CRITERIA,
        "SCORE_RTOL = 1e-12",
        "SCORE_RTOL = 0.0",
        "no tie tolerance: scores one ulp apart choose by their last bit",
        tests=("tests/growing/test_criteria.py", "tests/growing/test_split_ties.py"),
    ),
    M(
        "F07",
        STATS,
        "    return bound if bound < TARGET_SPREAD_FLOOR_EXPONENT else 0\n",
        "    return 0\n",
        "tiny targets not scaled up: y in {0, 1e-200} grows one node",
        tests=("tests/data/test_regression_precision.py",),
    ),
    M(
        "F08",
        STATS,
        "        return bound - TARGET_SPREAD_LIMIT_EXPONENT\n",
        "        return 0\n",
        "huge targets not scaled down: y = +-1e308 predicts NaN",
        tests=("tests/data/test_regression_precision.py",),
    ),
    M(
        "F09",
        TREE,
        "    beyond = np.flatnonzero(~np.isfinite(impurity) | (split & (impurity == 0)))",
        "    beyond = np.flatnonzero(~np.isfinite(impurity))",
        "importances of impurities below float64's range: all zero, silently",
        tests=("tests/data/test_regression_precision.py",),
    ),
    # The fused split search (issue 16), against the vectorised one.
    M(
        "FS1",
        SPLIT_SCAN,
        "                elif scored[0] >= limit:",
        "                elif scored[0] >= best:",
        "fused search: within a feature the candidate that rounded highest wins, not the first tie",
    ),
    M(
        "FS2",
        SPLIT_SCAN,
        "        missing_left = more_rows_left if tied else better_left",
        "        missing_left = better_left",
        "fused search: tied missing sides go to the side that rounded higher",
    ),
    M(
        "FS3",
        SPLIT_SCAN,
        "        if (values_right or has_missing) and allowed(",
        "        if values_right and allowed(",
        "fused search: 'every present value left, missing right' is never a candidate",
    ),
    M(
        "FS4",
        SPLIT_SCAN,
        "                distance += abs(p_left - p_right)",
        "                distance += p_left - p_right",
        "fused search: the CART measure without the absolute value",
    ),
    M(
        "FS5",
        SPLIT_SCAN,
        "            if results[f, 0] >= limit:",
        "            if results[f, 0] >= best:",
        "fused search: across features the one that rounded highest wins, not the lowest tie",
    ),
    M(
        "FS6",
        SPLIT_SCAN,
        """            if (
                count_of(
                    n_classes, count_channel, prefix, total, missing, right_side, to_right, scale
                )
                < msl
            ):
                return False""",
        """            pass""",
        "fused search: min_samples_leaf checked on the left child only",
    ),
    M(
        "FS7",
        SPLIT_SCAN,
        "                    left[c] += missing[chosen, c]",
        "                    pass",
        "fused search: missing rows sent left are not in the left child's statistics",
    ),
    M(
        "FS8",
        SPLIT_SCAN,
        "            first = outputs[k]\n",
        "            first = first\n",
        "fused search, several outputs' classes: every output's impurity read from the "
        "first channels on",
    ),
    M(
        "FS9",
        SPLIT_SCAN,
        "        within_upper = left_value <= upper and right_value <= upper\n",
        "        within_upper = True\n",
        "fused search, monotonic constraints: the node's upper bound is not checked",
    ),
]
del M


# -- worktree ---------------------------------------------------------------------------------
def _git(*args, cwd=None, check=True, strip=True) -> str:
    """git's output, stripped unless ``strip`` is False (a file's text keeps its last
    newline, which a snippet ending the file includes)."""
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if check and result.returncode:
        raise SystemExit(f"git {' '.join(args)} failed: {result.stderr.strip()}")
    return result.stdout.strip() if strip else result.stdout


def prepare_worktree(path: Path, refresh: bool) -> None:
    """A linked worktree of this repository at ``path``, clean, importable as gpu_tree."""
    head = _git("rev-parse", "HEAD", cwd=REPO)
    if not path.exists():
        _git("worktree", "add", "--detach", str(path), head, cwd=REPO)
    git_dir = Path(_git("rev-parse", "--absolute-git-dir", cwd=path))
    common = Path(_git("rev-parse", "--git-common-dir", cwd=path))
    common = common if common.is_absolute() else (path / common)
    if git_dir.resolve() == common.resolve():
        raise SystemExit(f"{path} is a main checkout, not a linked worktree: refusing to mutate it")
    dirty = _git("status", "--porcelain", "--untracked-files=no", cwd=path)
    if dirty:
        raise SystemExit(
            f"worktree {path} has changes to tracked files (a crashed run?):\n"
            f"{dirty}\nrestore with: git -C {path} checkout -- ."
        )
    if refresh:
        _git("checkout", "--detach", head, cwd=path)
    link = path / "gpu_tree" / "kernels"
    if not link.exists():
        link.symlink_to(Path("..") / "kernels")
    code = (
        "import gpu_tree, gpu_tree.kernels.cpu as c, gpu_tree.kernels.cuda as g; "
        "print(gpu_tree.__file__); print(c.__file__); print(g.__file__)"
    )
    env = _env(path)
    env["NUMBA_ENABLE_CUDASIM"] = "1"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=path, env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    for file in out:
        if not Path(file).resolve().is_relative_to(path.resolve()):
            raise SystemExit(
                f"the worktree is not what gets imported: {file} (expected under "
                f"{path}); check PYTHONPATH and the editable install"
            )


def _env(worktree: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(worktree) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("NUMBA_CACHE_DIR", None)
    return env


# -- mutants ----------------------------------------------------------------------------------
def check_mutants(read, mutants) -> dict:
    """Line of each mutant's snippet; an error naming every mutant that does not apply.

    ``read(file)``: the text of a source file (the worktree's, or HEAD's for --list)."""
    problems, lines, seen = [], {}, set()
    for m in mutants:
        if m.id in seen:
            problems.append(f"{m.id}: duplicate id")
        seen.add(m.id)
        if m.original == m.mutated:
            problems.append(f"{m.id}: the mutation changes nothing")
        if m.file not in FILE_TESTS:
            problems.append(f"{m.id}: no tests mapped for {m.file}")
        text = read(m.file)
        count = text.count(m.original)
        if count != 1:
            problems.append(
                f"{m.id}: the original snippet occurs {count} times in {m.file} "
                f"(must be exactly once): {m.original[:70]!r}"
            )
            continue
        mutated = text.replace(m.original, m.mutated)
        try:
            compile(mutated, m.file, "exec")
        except SyntaxError as exc:
            problems.append(f"{m.id}: the mutated file does not compile ({exc})")
        lines[m.id] = text[: text.index(m.original)].count("\n") + 1
    if problems:
        raise SystemExit("mutant list out of date:\n  " + "\n  ".join(problems))
    return lines


def _purge_bytecode(source: Path) -> None:
    cache = source.parent / "__pycache__"
    for pyc in cache.glob(source.stem + ".*.pyc"):
        pyc.unlink(missing_ok=True)


class _Applied:
    """The mutant in place while the block runs; the file restored (content and mtime) after."""

    def __init__(self, worktree: Path, mutant: Mutant):
        self.path = worktree / mutant.file
        self.mutant = mutant

    def __enter__(self):
        self.text = self.path.read_text()
        self.stat = self.path.stat()
        self.path.write_text(self.text.replace(self.mutant.original, self.mutant.mutated))
        _purge_bytecode(self.path)
        return self

    def __exit__(self, *exc):
        self.path.write_text(self.text)
        os.utime(self.path, ns=(self.stat.st_atime_ns, self.stat.st_mtime_ns))
        _purge_bytecode(self.path)
        return False


def run_tests(worktree: Path, tests, timeout: float, numba_cache: str | None):
    """(status, seconds, output tail): passed / failed / timeout / error."""
    env = _env(worktree)
    if numba_cache:
        env["NUMBA_CACHE_DIR"] = numba_cache
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    start = time.perf_counter()
    process = subprocess.Popen(
        command,
        cwd=worktree,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return "timeout", time.perf_counter() - start, output[-2000:]
    except BaseException:  # interrupted: take the test run down too
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise
    seconds = time.perf_counter() - start
    # 0: passed; 1: a test failed; 2: interrupted (an import or collection error caused by
    # the mutant, since the unmutated baseline collects); 3-5: internal/usage/no tests.
    status = {0: "passed", 1: "failed", 2: "failed"}.get(process.returncode, "error")
    return status, seconds, output[-2000:]


def _summary_line(output: str) -> str:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    for line in lines:
        if line.startswith(("FAILED", "ERROR")):
            return line[:200]
    return lines[-1][:200] if lines else ""


# -- reports ----------------------------------------------------------------------------------
def _cell(text: str) -> str:
    text = " ".join(text.split())
    return text.replace("|", "\\|")


def _code(text: str) -> str:
    text = " ".join(text.split())
    text = text if len(text) <= 90 else text[:87] + "..."
    return "`" + text.replace("`", "'").replace("|", "\\|") + "`"


def write_reports(out: Path, results: dict, lines: dict, mutants, started: float) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    counts = {k: 0 for k in ("killed", "timeout", "survived", "error", "equivalent", "not run")}
    results = {**results, **{m.id: {"status": "equivalent"} for m in mutants if m.equivalent}}
    for m in mutants:
        counts[results.get(m.id, {}).get("status", "not run")] += 1
    detected = counts["killed"] + counts["timeout"]
    scored = detected + counts["survived"]
    score = f"{100.0 * detected / scored:.1f}%" if scored else "n/a"
    elapsed = time.time() - started
    document = {
        "totals": counts,
        "mutation_score": score,
        "run_seconds": round(elapsed, 1),
        "mutants": [
            {**asdict(m), "line": lines.get(m.id), **results.get(m.id, {"status": "not run"})}
            for m in mutants
        ],
    }
    out.with_suffix(".json").write_text(json.dumps(document, indent=1) + "\n")
    rows = [
        "# Mutation testing of gpu_tree's core",
        "",
        f"Mutants: {len(mutants)}; killed {counts['killed']}, timeout {counts['timeout']}, "
        f"survived {counts['survived']}, error {counts['error']}, equivalent (not run) "
        f"{counts['equivalent']}, not run {counts['not run']}. Mutation score (killed + "
        f"timeout over those plus survivors): {score}. Wall time of this run: "
        f"{elapsed / 60:.1f} min.",
        "",
        "| id | file:line | status | s | original | mutated | models | detail |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for m in mutants:
        r = results.get(m.id, {"status": "not run"})
        detail = m.equivalent if r["status"] == "equivalent" else r.get("detail", "")
        rows.append(
            f"| {m.id} | {m.file}:{lines.get(m.id, '?')} | {r['status']} | "
            f"{r.get('seconds', '')} | {_code(m.original)} | {_code(m.mutated) if m.mutated.strip() else '(deleted)'} | "
            f"{_cell(m.models)} | {_cell(detail or '')} |"
        )
    out.write_text("\n".join(rows) + "\n")


# -- main -------------------------------------------------------------------------------------
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="ID",
        help="run only this mutant (repeatable, or comma-separated)",
    )
    parser.add_argument(
        "--file",
        action="append",
        default=[],
        help="run only mutants of source files ending with this",
    )
    parser.add_argument("--worktree", type=Path, default=DEFAULT_WORKTREE)
    parser.add_argument(
        "--refresh", action="store_true", help="move the worktree to this repository's HEAD first"
    )
    parser.add_argument("--out", type=Path, default=Path("tests/quality/out/mutation.md"))
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep results already in the JSON for unchanged mutants",
    )
    parser.add_argument(
        "--timeout-factor",
        type=float,
        default=3.0,
        help="per-mutant limit: this times the baseline of its tests",
    )
    parser.add_argument("--min-timeout", type=float, default=90.0)
    parser.add_argument(
        "--compile-allowance",
        type=float,
        default=120.0,
        help="extra seconds for mutants that make numba recompile",
    )
    args = parser.parse_args(argv)

    only = {i.strip() for item in args.only for i in item.split(",") if i.strip()}
    unknown = only - {m.id for m in MUTANTS}
    if unknown:
        parser.error(f"unknown mutant ids: {sorted(unknown)}")
    selected = [
        m
        for m in MUTANTS
        if (not only or m.id in only)
        and (not args.file or any(m.file.endswith(f) for f in args.file))
    ]

    worktree = args.worktree.resolve()
    if args.list:
        # HEAD's files: the worktree may hold a mutant of a run in progress.
        lines = check_mutants(
            lambda file: _git("show", f"HEAD:{file}", cwd=REPO, strip=False), MUTANTS
        )
        for m in selected:
            tag = "  [equivalent]" if m.equivalent else ""
            tests = ",".join(Path(t).stem for t in (m.tests or FILE_TESTS[m.file]))
            print(f"{m.id:4} {m.file}:{lines[m.id]:<4} {m.models}{tag}  ({tests})")
        runnable = sum(1 for m in selected if not m.equivalent)
        print(f"{len(selected)} mutants, {runnable} to run, {len(selected) - runnable} equivalent")
        return 0

    prepare_worktree(worktree, args.refresh)
    lines = check_mutants(lambda file: (worktree / file).read_text(), MUTANTS)
    out = args.out if args.out.is_absolute() else Path.cwd() / args.out
    results = {}
    if args.resume and out.with_suffix(".json").exists():
        previous = json.loads(out.with_suffix(".json").read_text())["mutants"]
        current = {m.id: m for m in MUTANTS}
        for entry in previous:
            m = current.get(entry["id"])
            if (
                m
                and entry["status"] not in ("not run", "error")
                and (entry["original"], entry["mutated"]) == (m.original, m.mutated)
            ):
                results[m.id] = {k: entry[k] for k in ("status", "seconds", "detail") if k in entry}
    started = time.time()

    def stop(signum, frame):  # restore the file (the with block's __exit__) on kill
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    baselines: dict[tuple, float] = {}
    try:
        for m in selected:
            if m.equivalent:
                results[m.id] = {"status": "equivalent"}
                continue
            if m.id in results:
                continue
            tests = m.tests or FILE_TESTS[m.file]
            if tests not in baselines:
                status, seconds, output = run_tests(worktree, tests, 1800, None)
                print(f"baseline {' '.join(tests)}: {status} in {seconds:.0f} s", flush=True)
                baselines[tests] = seconds if status == "passed" else -1.0
                if status != "passed":
                    print(output, flush=True)
            if baselines[tests] < 0:
                results[m.id] = {"status": "error", "detail": "its tests fail unmutated"}
                write_reports(out, results, lines, MUTANTS, started)
                continue
            compiles = m.file in NUMBA_CACHED
            timeout = max(args.min_timeout, args.timeout_factor * baselines[tests])
            timeout += args.compile_allowance if compiles else 0.0
            with tempfile.TemporaryDirectory(prefix="numba-mutant-") as cache:
                with _Applied(worktree, m):
                    status, seconds, output = run_tests(
                        worktree, tests, timeout, cache if compiles else None
                    )
            verdict = {"passed": "survived", "failed": "killed"}.get(status, status)
            detail = _summary_line(output) if verdict != "survived" else ""
            results[m.id] = {"status": verdict, "seconds": round(seconds, 1), "detail": detail}
            print(
                f"{m.id:4} {verdict:8} {seconds:6.1f} s  {m.file}:{lines[m.id]}  {detail}",
                flush=True,
            )
            write_reports(out, results, lines, MUTANTS, started)
    except KeyboardInterrupt:
        print("interrupted: the mutated file was restored", file=sys.stderr)
    finally:
        write_reports(out, results, lines, MUTANTS, started)
    print(f"report: {out} and {out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
