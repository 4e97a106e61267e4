"""The compiled split search (``kernels/_split_scan.py``, issue 16's fused scoring kernel)
chooses what the vectorised search chooses, on every criterion.

The vectorised search (``gpu_tree.growing.splitting`` with ``gpu_tree.growing.criteria``)
is the reference. Histograms come from random rows: a few or many, few or many bins,
missing values or none, weights or none, leaf-size limits and feature masks, and nodes
where nothing is allowed, monotonicity constraints and node bounds. The CPU twin runs
here; the CUDA kernel runs the same helpers in whole fits, under the simulator without a
GPU (tests/device/test_cuda_backend.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu_tree.backends.cpu import score_splits_on_cpu
from gpu_tree.data.stats import COUNT_DTYPE, StatsLayout, fixed_point_exponent, to_fixed_point
from gpu_tree.growing.criteria import CLASSIFICATION_CRITERIA, monotonic_value
from gpu_tree.growing.splitting import MonotonicBounds, SplitConstraints, select_splits


def _histograms(rng, *, n_nodes, n_features, n_bins, n_classes, weighted, missing_rate):
    """Random nodes' histograms (n_nodes, n_features, n_bins + 1, n_channels), the last
    bin holding the missing values, and their layout."""
    regression = n_classes == 0
    rows = rng.integers(1, 120, size=n_nodes)
    n = int(rows.sum())
    node = np.repeat(np.arange(n_nodes), rows)
    # Few distinct values per feature sometimes: ties and empty bins.
    levels = rng.integers(1, n_bins + 1, size=n_features)
    bins = (rng.integers(0, 1 << 30, size=(n, n_features)) % levels).astype(np.int64)
    bins = np.minimum(bins * (n_bins // levels), n_bins - 1)
    bins[rng.random((n, n_features)) < missing_rate] = n_bins
    weight = rng.choice([0.5, 1.0, 2.0, 3.25], size=n) if weighted else np.ones(n)
    columns = []
    exponents = []
    if regression:
        y = np.round(rng.normal(size=n), 2) * rng.choice([1.0, 1e3])
        y[rng.random(n) < 0.3] = 0.0  # repeated targets: tied scores
        values = [weight, weight * y]
    else:
        label = rng.integers(0, n_classes, size=n)
        values = [weight * (label == c) for c in range(n_classes)]
    for column in values:
        e = 0 if not weighted and not regression else fixed_point_exponent(column)
        exponents.append(e)
        columns.append(to_fixed_point(column, e))
    if weighted:
        columns.append(np.ones(n, dtype=np.int64))
        exponents.append(0)
    stats = np.stack(columns, axis=1)
    layout = StatsLayout(
        is_classification=not regression,
        n_classes=n_classes,
        has_count_channel=weighted,
        exponents=tuple(exponents) if any(exponents) else (),
    )
    hist = np.zeros((n_nodes, n_features, n_bins + 1, stats.shape[1]), dtype=np.int64)
    for f in range(n_features):
        np.add.at(hist, (node, f, bins[:, f]), stats)
    if not weighted and not regression:
        hist = hist.astype(COUNT_DTYPE)  # as unweighted class counts are held
    return hist, layout


def _assert_same_choice(reference, compiled):
    np.testing.assert_array_equal(compiled.has_split, reference.has_split)
    split = reference.has_split
    for name in ("feature", "bin", "next_bin", "missing_left"):
        np.testing.assert_array_equal(
            getattr(compiled, name)[split], getattr(reference, name)[split], err_msg=name
        )
    np.testing.assert_allclose(compiled.score, reference.score, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(compiled.left_stats[split], reference.left_stats[split])
    np.testing.assert_array_equal(compiled.right_stats[split], reference.right_stats[split])


CRITERIA = [*CLASSIFICATION_CRITERIA, "squared_error"]


@pytest.mark.parametrize("criterion", CRITERIA)
@pytest.mark.parametrize("seed", range(6))
def test_the_compiled_search_chooses_what_the_vectorised_one_does(criterion, seed):
    rng = np.random.default_rng([seed, CRITERIA.index(criterion)])
    regression = criterion == "squared_error"
    n_classes = 0 if regression else int(rng.choice([2, 3, 7]))
    weighted = bool(seed % 2)
    missing_rate = [0.0, 0.1, 0.5][seed % 3]
    n_bins = int(rng.choice([2, 5, 16, 64]))
    hist, layout = _histograms(
        rng,
        n_nodes=int(rng.integers(1, 9)),
        n_features=int(rng.integers(1, 6)),
        n_bins=n_bins,
        n_classes=n_classes,
        weighted=weighted,
        missing_rate=missing_rate,
    )
    present, missing = hist[:, :, :n_bins], hist[:, :, n_bins]
    if missing_rate == 0.0:
        missing = None
    n_nodes, n_features = hist.shape[:2]
    mask = None
    if seed >= 3:
        mask = rng.random((n_nodes, n_features)) < 0.6
    constraints = SplitConstraints(
        min_samples_leaf=int(rng.choice([1, 1, 3, 20])),
        min_weight_leaf=float(rng.choice([0.0, 0.0, 4.0])),
    )
    slots = rng.permutation(n_nodes)[: max(1, n_nodes - 1)]
    common = dict(
        criterion=criterion,
        layout=layout,
        constraints=constraints,
        feature_mask=None if mask is None else mask[: slots.size],
        slots=slots,
        missing=missing,
    )
    reference = select_splits(present, **common)
    compiled = select_splits(present, compiled=score_splits_on_cpu, **common)
    _assert_same_choice(reference, compiled)


def _multi_output_histograms(rng, *, n_nodes, n_features, n_bins, class_counts, weighted):
    """Random nodes' histograms of several outputs, as :func:`_histograms` (the last bin
    the missing values): ``class_counts`` one per output (0: every output a regression
    target, as many as its length)."""
    rows = rng.integers(1, 120, size=n_nodes)
    n = int(rows.sum())
    node = np.repeat(np.arange(n_nodes), rows)
    levels = rng.integers(1, n_bins + 1, size=n_features)
    bins = np.minimum((rng.integers(0, 1 << 30, size=(n, n_features)) % levels), n_bins - 1)
    bins[rng.random((n, n_features)) < 0.1] = n_bins
    weight = rng.choice([0.5, 1.0, 2.0, 3.25], size=n) if weighted else np.ones(n)
    regression = class_counts[0] == 0
    if regression:
        values = [weight]
        for _ in class_counts:
            y = np.round(rng.normal(size=n), 2) * rng.choice([1.0, 1e3])
            y[rng.random(n) < 0.3] = 0.0
            values.append(weight * y)
    else:
        values = []
        for count in class_counts:
            label = rng.integers(0, count, size=n)
            values += [weight * (label == c) for c in range(count)]
    exponents = [fixed_point_exponent(column) if weighted or regression else 0 for column in values]
    columns = [to_fixed_point(column, e) for column, e in zip(values, exponents, strict=True)]
    if weighted:
        columns.append(np.ones(n, dtype=np.int64))
        exponents.append(0)
    stats = np.stack(columns, axis=1)
    layout = StatsLayout(
        is_classification=not regression,
        n_classes=0 if regression else sum(class_counts),
        has_count_channel=weighted,
        exponents=tuple(exponents) if any(exponents) else (),
        n_outputs=len(class_counts),
        class_counts=() if regression else tuple(class_counts),
    )
    hist = np.zeros((n_nodes, n_features, n_bins + 1, stats.shape[1]), dtype=np.int64)
    for f in range(n_features):
        np.add.at(hist, (node, f, bins[:, f]), stats)
    return hist, layout


@pytest.mark.parametrize("criterion", ["gini", "entropy", "misclassification", "squared_error"])
@pytest.mark.parametrize("seed", range(4))
def test_the_compiled_search_scores_several_outputs_as_the_vectorised_one(criterion, seed):
    """Several outputs: each output's impurity (its own class channels, or its own
    weighted sum) averaged over the outputs, and the tolerance of their mean term."""
    rng = np.random.default_rng([seed, 99])
    if criterion == "squared_error":
        class_counts = (0,) * int(rng.integers(2, 4))
    else:
        class_counts = tuple(int(c) for c in rng.choice([2, 3, 5], size=int(rng.integers(2, 4))))
    n_bins = int(rng.choice([5, 16]))
    hist, layout = _multi_output_histograms(
        rng,
        n_nodes=int(rng.integers(1, 7)),
        n_features=int(rng.integers(1, 5)),
        n_bins=n_bins,
        class_counts=class_counts,
        weighted=bool(seed % 2),
    )
    common = dict(
        criterion=criterion,
        layout=layout,
        constraints=SplitConstraints(min_samples_leaf=int(rng.choice([1, 5]))),
        missing=hist[:, :, n_bins],
    )
    present = hist[:, :, :n_bins]
    reference = select_splits(present, **common)
    assert reference.has_split.any()
    compiled = select_splits(present, compiled=score_splits_on_cpu, **common)
    _assert_same_choice(reference, compiled)


def _bounds(rng, hist, layout, slots):
    """Random bounds of the nodes of ``slots`` (in their order) that exclude some
    candidates: quantiles of the values (criteria.monotonic_value) of their non-empty
    bins, missing ones included, or no bound."""
    lower = np.full(slots.size, -np.inf)
    upper = np.full(slots.size, np.inf)
    for i, slot in enumerate(slots):
        stats = hist[slot].reshape(-1, hist.shape[3])
        stats = stats[layout.count(stats) > 0]
        values = monotonic_value(layout, layout.real(stats))
        low, high = rng.choice([0.0, 0.1, 0.3]), rng.choice([1.0, 0.9, 0.7])
        if low > 0.0:
            lower[i] = np.quantile(values, low)
        if high < 1.0:
            upper[i] = np.quantile(values, high)
    return lower, upper


MONOTONIC_CRITERIA = ["gini", "entropy", "gain_ratio", "cart", "misclassification", "squared_error"]


@pytest.mark.parametrize("criterion", MONOTONIC_CRITERIA)
def test_the_compiled_search_checks_monotonic_constraints_as_the_vectorised_one(criterion):
    """Random constraints (+1, -1 or none per feature) and node bounds, binary
    classification and regression, with missing values or none: the same choices, and
    the constraints do change some of them."""
    regression = criterion == "squared_error"
    constrained_away = 0
    for seed in range(12):
        rng = np.random.default_rng([seed, MONOTONIC_CRITERIA.index(criterion), 22])
        weighted = bool(seed % 2)
        missing_rate = [0.0, 0.1, 0.5][seed % 3]
        n_bins = int(rng.choice([2, 5, 16, 64]))
        hist, layout = _histograms(
            rng,
            n_nodes=int(rng.integers(1, 9)),
            n_features=int(rng.integers(1, 6)),
            n_bins=n_bins,
            n_classes=0 if regression else 2,
            weighted=weighted,
            missing_rate=missing_rate,
        )
        present, missing = hist[:, :, :n_bins], hist[:, :, n_bins]
        if missing_rate == 0.0:
            missing = None
        n_nodes, n_features = hist.shape[:2]
        slots = rng.permutation(n_nodes)[: max(1, n_nodes - 1)]
        cst = rng.choice(np.array([-1, 0, 1], dtype=np.int8), size=n_features)
        cst[rng.integers(n_features)] = rng.choice([-1, 1])  # some feature constrained
        lower, upper = _bounds(rng, hist, layout, slots)
        mask = None
        if seed >= 6:
            mask = (rng.random((n_nodes, n_features)) < 0.7)[: slots.size]
        common = dict(
            criterion=criterion,
            layout=layout,
            constraints=SplitConstraints(
                min_samples_leaf=int(rng.choice([1, 1, 3])),
                min_weight_leaf=float(rng.choice([0.0, 0.0, 4.0])),
            ),
            feature_mask=mask,
            slots=slots,
            missing=missing,
        )
        monotonic = MonotonicBounds(cst, lower, upper)
        reference = select_splits(present, monotonic=monotonic, **common)
        compiled = select_splits(
            present, compiled=score_splits_on_cpu, monotonic=monotonic, **common
        )
        _assert_same_choice(reference, compiled)
        free = select_splits(present, **common)
        changed = (free.has_split != reference.has_split) | (free.feature != reference.feature)
        constrained_away += int(np.any(changed | (free.bin != reference.bin)))
    assert constrained_away > 0


# -- no fused multiply-add on the GPU where the CPU rounds twice ------------------------
_FMA_PROBE = r"""
import json, sys
try:
    from numba.cuda.cudadrv import nvvm

    nvvm.NVVM()
except Exception as exc:  # no libNVVM here: nothing to compile with
    print(json.dumps({"skip": f"libNVVM is not available ({type(exc).__name__})"}))
    sys.exit(0)
from types import SimpleNamespace

from numba.cuda import dispatcher

from gpu_tree.kernels.cuda import split_scan as cuda_split_scan
from gpu_tree.kernels.cuda.api import cuda

# A device function compiles for the current device's compute capability, which needs a
# driver; without one, it is told sm_90's (as bench/kernel_resources.py does).
if hasattr(dispatcher, "get_current_device"):
    dispatcher.get_current_device = lambda: SimpleNamespace(compute_capability=(9, 0))
product = cuda_split_scan._product  # the split scan's, as kernels/cuda/split_scan.py hands it over

def plain(out):
    out[0] = out[1] + out[2] * out[3]

def through_product(out):
    out[0] = out[1] + product(out[2], out[3])

counts = {}
for function in (plain, through_product):
    ptx, _ = cuda.compile_ptx(function, "void(float64[:])", cc=(9, 0))
    counts[function.__name__] = ptx.count("fma.rn")
print(json.dumps(counts))
"""


def test_gpu_products_feeding_additions_are_not_fused(tmp_path):
    """NVVM fuses ``a + b * c`` into one fused multiply-add (rounded once) where the CPU
    rounds twice; the split scan's ``product`` on the GPU (libdevice's dmul_rn) is never
    fused. Compiled to sm_90 PTX in a child process (libNVVM, no GPU); the plain
    expression is compiled too, so that the check sees a fusion where there is one."""
    import json
    import os
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-c", _FMA_PROBE],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "NUMBA_ENABLE_CUDASIM": "0"},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    counts = json.loads(result.stdout.strip().splitlines()[-1])
    if "skip" in counts:
        pytest.skip(counts["skip"])
    assert counts == {"plain": 1, "through_product": 0}
