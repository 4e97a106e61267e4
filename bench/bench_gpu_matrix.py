"""Issue 7's whole GPU matrix in one script: bandwidth, gpu_tree per level, peers, goals.

What one invocation measures (each part optional, see --only):

* ``bandwidth``: device-to-device copy of a large buffer (bytes read + written, median
  of repeats), and host-to-device / device-to-host copies from pageable numpy memory;
* ``higgs`` / ``covertype``: gpu_tree on a Higgs-shaped binary set (10,500,000 x 28,
  ``gpu_tree.datasets.make_higgs_like``) and a Covertype-shaped 7-class set (581,012 x
  54: 10 numeric and 44 one-hot columns, Covertype's class shares; generated here), at
  each of --depths (8, 10, 12) with --bins (256):
  - end-to-end fit from host numpy (binning on the device included) and from a CuPy
    array already on the device;
  - the device tree build alone (the grower on codes binned on the device beforehand,
    its backend built beforehand too): no input, label or weight copy is in this time.
    Those copies are timed apart: the input's (X, host to device, pageable) and the
    backend's set-up (the per-row labels, weights or row statistics it copies; an
    unweighted fit copies no weights), each its own column;
  - one more build with the grower's phase timer on (``PhaseTimer``, which synchronises
    the device around each phase): per level the histogram step (of which the histogram
    kernel launch, timed by the CUDA backend), the subtraction, split scoring, partition
    (the children's sizes come from the histograms), the host work left over, and the kernel launches and
    host<->device copies (count and bytes, from gpu_tree's own counters, the ones
    ``fit_stats_`` reports). Those syncs add a little time: the plain build is the figure
    to quote, the per-level split is for where time goes;
  - the bytes each level moves according to ``bench/bytes_model.py``, with the rows and
    nodes this build really had, against the floors, at the copy bandwidth measured;
  - prediction of --predict-rows rows already on the device;
* ``forest``: ``bench/bench_forest.py`` on the device (gpu_tree's forest against
  XGBoost's random forest on the GPU and cuML's, where installed), Higgs-shaped rows,
  depth 10, its tables written to ``forest.md`` and ``forest.json`` in --out;
* ``peers``: in a child process per (data set, tool), so that a crash, a hang (timeout)
  or a missing package is recorded and the run goes on: scikit-learn's
  DecisionTreeClassifier (exact; on at most --sklearn-tree-max-rows rows) and
  HistGradientBoostingClassifier(max_iter=1), LightGBM and XGBoost hist on the CPU's
  --threads cores, XGBoost with device="cuda", cuML's RandomForestClassifier with one
  tree and no bootstrap if cuML is installed. All with the same depth and bins (255 for
  HistGradientBoosting, its most); the boosters grow one tree per class per round on the
  7-class set. For the boosters two times: the fit from numpy (binning included) and one
  round on bins already built (XGBoost's QuantileDMatrix, on the device for
  device="cuda"; LightGBM's Dataset), the latter set against gpu_tree's device build.

Outputs in --out: ``matrix.md`` (markdown tables for bench/RESULTS.md, ending with the
issue's goals: measured, goal, met?), ``matrix.json`` (every raw number; times are medians
of --repeats, the single runs kept too) and ``levels.csv`` (one row per level). Progress
goes to stderr.

On the H200, in calls of at most 10 minutes (about 2, 5 and 3 minutes expected):

    python bench/bench_gpu_matrix.py --only bandwidth,higgs --out $OUT/a
    python bench/bench_gpu_matrix.py --only peers --datasets higgs --out $OUT/b
    python bench/bench_gpu_matrix.py --only covertype,peers --datasets covertype --out $OUT/c
    python bench/bench_gpu_matrix.py --merge A/matrix.json B/matrix.json C/matrix.json \\
        --out bench/out/matrix                      # anywhere: renders the joined tables

--quick runs smaller sizes (1M and 100k rows); --smoke tiny ones, which run under
NUMBA_ENABLE_CUDASIM=1 in seconds (the times then mean nothing: a check that every path
runs and every table renders).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bytes_model  # noqa: E402  (bench/ is not a package)

from gpu_tree.app.peers import PEERS, PeerWork  # noqa: E402

START = time.perf_counter()
DATASETS = ("higgs", "covertype")
PARTS = ("bandwidth", "higgs", "covertype", "peers", "forest")
GOAL_DEPTH = 10

SIZES = {
    "full": dict(
        higgs=(10_500_000, 28),
        covertype=(581_012, 54),
        predict_rows=10_000_000,
        depths=(8, 10, 12),
        bins=256,
        repeats=5,
        peer_repeats=1,
        bandwidth_bytes=2 << 30,
        host_bandwidth_bytes=1 << 30,
        sklearn_tree_max_rows=1_000_000,
        warmup_rows=20_000,
        forest=(10_000_000, 100),  # rows, trees (depth 10, max_features="sqrt")
    ),
    "quick": dict(
        higgs=(1_000_000, 28),
        covertype=(100_000, 54),
        predict_rows=1_000_000,
        depths=(8, 10),
        bins=256,
        repeats=3,
        peer_repeats=1,
        bandwidth_bytes=512 << 20,
        host_bandwidth_bytes=256 << 20,
        sklearn_tree_max_rows=200_000,
        warmup_rows=5_000,
        forest=(1_000_000, 100),
    ),
    "smoke": dict(
        higgs=(600, 5),
        covertype=(500, 10),
        predict_rows=700,
        depths=(3,),
        bins=16,
        repeats=1,
        peer_repeats=1,
        bandwidth_bytes=1 << 20,
        host_bandwidth_bytes=1 << 20,
        sklearn_tree_max_rows=400,
        warmup_rows=200,
        forest=(600, 3),
    ),
}


def log(message):
    print(f"[matrix {time.perf_counter() - START:7.1f}s] {message}", file=sys.stderr, flush=True)


# -- data ---------------------------------------------------------------------------------
# Covertype's classes, in the order of the elevations where they mostly grow (low to
# high: cottonwood/willow, ponderosa pine, Douglas-fir, aspen, lodgepole pine,
# spruce/fir, krummholz), with their shares of the 581,012 rows; labels 0..6 as
# Covertype's 1..7.
_COVER_ORDER = (3, 2, 5, 4, 1, 0, 6)
_COVER_SHARE = {0: 0.3646, 1: 0.4876, 2: 0.0615, 3: 0.0047, 4: 0.0163, 5: 0.0299, 6: 0.0353}


def make_covertype_like(n_samples=581_012, n_features=54, random_state=0):
    """A 7-class set shaped like Covertype: 10 numeric columns (elevation, aspect, slope,
    distances, hillshades), 4 one-hot wilderness areas and 40 one-hot soil types (fewer
    of each when ``n_features`` < 54), float64; the class follows elevation bands moved
    by area, soil, slope and noise, with Covertype's class shares."""
    rng = np.random.default_rng(random_state)
    n_numeric = max(2, min(10, n_features - 6))
    n_binary = n_features - n_numeric
    n_area = min(4, max(1, n_binary // 4))
    n_soil = n_binary - n_area
    X = np.zeros((n_samples, n_features))
    elevation = rng.normal(2960, 280, n_samples)
    numeric = [
        elevation,
        rng.uniform(0, 360, n_samples),
        rng.gamma(3.0, 4.7, n_samples),
        rng.exponential(270, n_samples),
        rng.normal(46, 58, n_samples),
        rng.exponential(2350, n_samples),
        np.clip(rng.normal(212, 27, n_samples), 0, 254),
        np.clip(rng.normal(223, 20, n_samples), 0, 254),
        np.clip(rng.normal(142, 38, n_samples), 0, 254),
        rng.exponential(1980, n_samples),
    ]
    for j in range(n_numeric):
        X[:, j] = np.round(numeric[j])
    area = rng.choice(
        n_area, n_samples, p=np.arange(n_area, 0, -1) / np.arange(n_area, 0, -1).sum()
    )
    X[np.arange(n_samples), n_numeric + area] = 1.0
    if n_soil:
        soil = np.minimum(rng.zipf(1.6, n_samples) - 1, n_soil - 1)
        X[np.arange(n_samples), n_numeric + n_area + soil] = 1.0
        soil_shift = rng.normal(0, 90, n_soil)[soil]
    else:
        soil_shift = 0.0
    score = (
        elevation
        + 120 * (area - n_area / 2)
        + soil_shift
        + 2.0 * (X[:, 2] - 14 if n_numeric > 2 else 0)
        + rng.normal(0, 110, n_samples)
    )
    shares = np.array([_COVER_SHARE[c] for c in _COVER_ORDER])
    cuts = np.quantile(score, np.cumsum(shares)[:-1])
    y = np.asarray(_COVER_ORDER)[np.searchsorted(cuts, score)].astype(np.int64)
    if n_samples >= len(_COVER_ORDER):  # tiny sets: every class present (peers need it)
        for k, c in enumerate(np.setdiff1d(_COVER_ORDER, y)):
            y[k] = c
    return X, y


def make_data(name, n_rows, n_features):
    from gpu_tree.datasets import make_higgs_like

    if name == "higgs":
        return make_higgs_like(n_rows, n_features, random_state=0)
    return make_covertype_like(n_rows, n_features, random_state=0)


# -- device helpers ---------------------------------------------------------------------
def synchronize(xp):
    if xp is not np:
        xp.cuda.Device().synchronize()


def timed(xp, function, *args, **kwargs):
    synchronize(xp)
    start = time.perf_counter()
    result = function(*args, **kwargs)
    synchronize(xp)
    return result, time.perf_counter() - start


def median_time(xp, repeats, function, *args, **kwargs):
    times = [timed(xp, function, *args, **kwargs)[1] for _ in range(repeats)]
    return statistics.median(times), times


def measure_bandwidth(xp, n_bytes, host_bytes, repeats):
    """Copy bandwidths in GB/s (1e9 bytes/s): device-to-device counts read + write."""
    source = xp.ones(max(1, n_bytes // 8))
    target = xp.empty_like(source)
    d2d, d2d_runs = median_time(xp, max(5, repeats), xp.copyto, target, source)
    host = np.ones(max(1, host_bytes // 8))
    simulated = xp is np  # numpy stands in: copies in host memory
    h2d, _ = median_time(xp, max(3, repeats), np.array if simulated else xp.asarray, host)
    device = xp.asarray(host)
    d2h, _ = median_time(xp, max(3, repeats), device.copy if simulated else device.get)
    d2d, h2d, d2h = (max(t, 1e-9) for t in (d2d, h2d, d2h))
    return {
        "device_to_device_gb_s": 2 * source.nbytes / d2d / 1e9,
        "device_to_device_bytes": int(source.nbytes),
        "device_to_device_runs_s": d2d_runs,
        "host_to_device_pageable_gb_s": host.nbytes / h2d / 1e9,
        "device_to_host_pageable_gb_s": host.nbytes / d2h / 1e9,
        "host_bytes": int(host.nbytes),
    }


# -- per-level instrumentation -----------------------------------------------------------
# The grower's phase timer (gpu_tree.utils.phase_timer.PhaseTimer) times each phase with
# the device synchronised before and after; its records become one row per level here.
PHASE_COLUMNS = {
    "histograms": "hist",
    "histogram_kernel": "hist_kernel",
    "subtraction": "subtract",
    "split_scoring": "scoring",
    "partition": "partition",
}


def _no_transfers() -> dict:
    """A level's transfer counters, zero: copies and bytes each way, and kernel launches."""
    return {"h2d_count": 0, "h2d_bytes": 0, "d2h_count": 0, "d2h_bytes": 0, "launches": 0}


def _empty_level(level):
    return {
        "level": level,
        "nodes": 0,
        "built": 0,
        "derived": 0,
        "built_rows": 0,
        "split_nodes": 0,
        "split_rows": 0,
        "split_features": 0,
        **{f"{column}_s": 0.0 for column in PHASE_COLUMNS.values()},
        **_no_transfers(),
    }


def rows_per_level(timer, transfers, end_time):
    """Per-level rows from a PhaseTimer's records (and the transfers counted per level),
    with the level's wall time (from its first phase to the next level's) and the host
    work left over."""
    levels, starts = {}, {}
    for record in timer.records:
        row = levels.setdefault(record.level, _empty_level(record.level))
        starts[record.level] = min(starts.get(record.level, record.start), record.start)
        row[f"{PHASE_COLUMNS[record.phase]}_s"] += record.seconds
        if record.phase == "histograms":
            row["built"] += record.n_nodes
            row["built_rows"] += record.n_rows
        elif record.phase == "subtraction":
            row["derived"] += record.n_nodes
        elif record.phase == "split_scoring":
            row["nodes"] += record.n_nodes
        elif record.phase == "partition":
            row["split_nodes"] += record.n_nodes
            row["split_rows"] += record.n_rows
            row["split_features"] = record.n_features
    for level, counts in transfers.items():
        levels.setdefault(level, _empty_level(level)).update(counts)
    order = sorted(levels)
    out = []
    for k, level in enumerate(order):
        row = levels[level]
        stop = starts.get(order[k + 1], end_time) if k + 1 < len(order) else end_time
        row["level_s"] = stop - starts.get(level, stop)
        phases = row["hist_s"] + row["subtract_s"] + row["scoring_s"] + row["partition_s"]
        row["other_s"] = row["level_s"] - phases
        out.append(row)
    return out


def level_transfers(counters) -> dict:
    """Per level, the copies and launches gpu_tree's own counters (``fit_stats_``, in
    ``gpu_tree.utils.fit_stats``) recorded: the columns of the level tables."""
    out = {}
    for level, counts in counters.by_level.items():
        if level is None:
            continue  # the set-up: its copies are timed as the input's, separately
        out[level] = {
            "h2d_count": counts["host_to_device_copies"],
            "h2d_bytes": counts["host_to_device_bytes"],
            "d2h_count": counts["device_to_host_copies"],
            "d2h_bytes": counts["device_to_host_bytes"],
            "launches": counts["kernel_launches"],
        }
    return out


def model_level_bytes(shape, row):
    """bytes_model for a measured level row."""
    work = bytes_model.LevelWork(
        level=row["level"],
        n_nodes=row["nodes"],
        n_built=row["built"],
        built_rows=row["built_rows"],
        split_nodes=row["split_nodes"],
        split_rows=row["split_rows"],
        n_split_features=row["split_features"],
    )
    return bytes_model.level_bytes(shape, work)


# -- gpu_tree -----------------------------------------------------------------------------
def run_gpu_tree(
    name, X, y, depths, bins, repeats, predict_rows, warmup_rows, xp, copy_gb_s, on_depth=None
):
    from gpu_tree import DecisionTreeClassifier
    from gpu_tree.backends.factory import make_backend
    from gpu_tree.backends.rows import RowData
    from gpu_tree.data.stats import StatsLayout
    from gpu_tree.growing.grower import Grower, GrowthParams
    from gpu_tree.training.binning import bin_features
    from gpu_tree.utils.fit_stats import FitCounters, counting
    from gpu_tree.utils.phase_timer import PhaseTimer

    simulated = xp is np
    n_classes = int(y.max()) + 1
    shape = bytes_model.Shape(X.shape[0], X.shape[1], bins, n_classes)
    results, level_rows = {}, []
    log(f"{name}: moving {X.nbytes / 1e9:.2f} GB to the device")
    X_device, input_copy_s = timed(xp, xp.asarray, X)
    _, binned = bin_features(X, max_bins=bins, device="cuda")  # as fit does from numpy
    row_data = RowData(
        StatsLayout(True, n_classes, has_count_channel=False),
        weight=np.ones(len(y)),
        y_class=y.astype(np.int64),
    )
    model = DecisionTreeClassifier(max_depth=min(depths), max_bins=bins, device="cuda")
    _, warmup = timed(xp, model.fit, X[:warmup_rows], y[:warmup_rows])
    log(f"{name}: warm-up fit (kernel compilation) {warmup:.2f} s")
    for depth in depths:
        log(f"{name}: depth {depth}")
        entry = results[str(depth)] = {
            "depth": depth,
            "bins": bins,
            "rows": X.shape[0],
            "features": X.shape[1],
            "classes": n_classes,
            "input_copy_s": input_copy_s,
        }
        try:
            model = DecisionTreeClassifier(max_depth=depth, max_bins=bins, device="cuda")
            entry["fit_host_s"], entry["fit_host_runs_s"] = median_time(
                xp, repeats, model.fit, X, y
            )
            if not simulated:
                entry["fit_device_s"], entry["fit_device_runs_s"] = median_time(
                    xp, repeats, model.fit, X_device, y
                )
            tree = model.tree_
            entry["leaves"] = int(model.get_n_leaves())
            entry["depth_reached"] = int(tree.max_depth)
            sample = slice(0, min(200_000, X.shape[0]))
            entry["train_accuracy"] = float(
                np.mean(np.asarray(model.predict(X[sample])) == y[sample])
            )

            params = GrowthParams(criterion="gini", max_depth=depth)

            def setup(timer=None):
                # The backend, which copies the per-row labels (and weights or row
                # statistics where the fit has them) to the device.
                return make_backend(binned, row_data, device="cuda", timer=timer)

            def build(timer=None, params=params, backend=None):
                # The estimators' own builder (fit's path once X is binned on the device).
                backend = setup(timer) if backend is None else backend
                return Grower(backend, row_data.layout, params, X.shape[1], timer=timer).grow()

            if not simulated:
                build()  # CuPy's kernels for this depth's shapes
            # The build without the set-up's copies, each run on a fresh backend (a build
            # moves its rows); the set-up timed apart.
            setup_runs, build_runs = [], []
            for _ in range(repeats):
                backend, setup_s = timed(xp, setup)
                build_runs.append(timed(xp, build, backend=backend)[1])
                setup_runs.append(setup_s)
                del backend
            entry["device_build_s"] = statistics.median(build_runs)
            entry["device_build_runs_s"] = build_runs
            entry["setup_copy_s"] = statistics.median(setup_runs)
            entry["setup_copy_runs_s"] = setup_runs
            timer = PhaseTimer(xp)
            with counting(FitCounters("cuda")) as counters:
                start = time.perf_counter()
                timed(xp, build, timer)
                end = time.perf_counter()
            entry["instrumented_build_s"] = end - start
            totals = {"as_implemented": 0, "one_pass_floor": 0, "ideal_floor": 0}
            for row in rows_per_level(timer, level_transfers(counters), end):
                lv = model_level_bytes(shape, row)
                row.update(
                    dataset=name,
                    depth=depth,
                    kernel=lv.path,
                    model_as_implemented_bytes=lv.as_implemented_total,
                    model_one_pass_floor_bytes=lv.one_pass_floor,
                    model_ideal_floor_bytes=lv.ideal_floor,
                    model_histogram_kernel_bytes=sum(
                        v
                        for k, v in lv.as_implemented.items()
                        if k.startswith("hist:") and "fill" not in k and "result" not in k
                    ),
                    floor_s_at_copy=lv.one_pass_floor / (copy_gb_s * 1e9) if copy_gb_s else None,
                )
                totals["as_implemented"] += lv.as_implemented_total
                totals["one_pass_floor"] += lv.one_pass_floor
                totals["ideal_floor"] += lv.ideal_floor
                level_rows.append(row)
            entry["model_bytes"] = totals
            if copy_gb_s:
                entry["one_pass_floor_s"] = totals["one_pass_floor"] / (copy_gb_s * 1e9)
                entry["ideal_floor_s"] = totals["ideal_floor"] / (copy_gb_s * 1e9)
            root = [r for r in level_rows if r["depth"] == depth and r["dataset"] == name]
            if root and root[0]["hist_kernel_s"] > 0:
                # Bytes the root histogram must read (codes, labels, node ids of all rows).
                root_bytes = X.shape[0] * (
                    X.shape[1] * shape.code_bytes
                    + bytes_model.LABEL_BYTES
                    + bytes_model.NODE_ID_BYTES
                )
                entry["root_hist_kernel_s"] = root[0]["hist_kernel_s"]
                entry["root_hist_gb_s"] = root_bytes / root[0]["hist_kernel_s"] / 1e9

            n_predict = min(predict_rows, X.shape[0])
            X_predict = X_device[:n_predict]
            model.predict(X_predict[:1000])
            entry["predict_rows"] = int(n_predict)
            entry["predict_s"], entry["predict_runs_s"] = median_time(
                xp, repeats, model.predict, X_predict
            )
            log(
                f"{name} depth {depth}: fit {entry['fit_host_s']:.3f} s, device build "
                f"{entry['device_build_s'] * 1e3:.1f} ms, predict {entry['predict_s'] * 1e3:.1f} "
                f"ms, {entry['leaves']} leaves"
            )
        except Exception as exc:  # noqa: BLE001 - record, go on with the matrix
            entry["error"] = f"{type(exc).__name__}: {exc}"
            log(f"{name} depth {depth} failed: {entry['error']}\n{traceback.format_exc()}")
        if on_depth is not None:  # outputs so far, in case a later depth is cut off
            on_depth(results, level_rows)
    return results, level_rows


# -- peers (child processes) ----------------------------------------------------------------
def _versions(names):
    from importlib import metadata

    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def peer_worker(args):
    """One peer on one data set, every depth: prints one JSON object (child process)."""
    X = np.load(Path(args.data) / "X.npy")
    y = np.load(Path(args.data) / "y.npy")
    name, bins, threads = args.peer_worker, args.bins, args.threads
    depths = [int(d) for d in args.depths.split(",")]
    n_classes = int(y.max()) + 1
    out = {"peer": name, "by_depth": {}}
    if name == "selftest_crash":  # tests that a dying peer is recorded
        os._exit(3)
    if (
        name == "sklearn_tree"
        and args.sklearn_tree_max_rows
        and X.shape[0] > args.sklearn_tree_max_rows
    ):
        X, y = X[: args.sklearn_tree_max_rows], y[: args.sklearn_tree_max_rows]
        out["rows_used"] = int(X.shape[0])
    # The warm-up slice holds every class (the boosters want them all).
    warm = np.union1d(
        np.arange(min(args.warmup_rows, X.shape[0])), np.unique(y, return_index=True)[1]
    )
    sample = slice(0, min(200_000, X.shape[0]))
    for depth in depths:
        make_fit, one_round, leaves = _peer_setup(name, depth, bins, threads, n_classes)
        make_fit().fit(X[warm], y[warm])
        runs, model = [], None
        for _ in range(args.repeats):
            model = make_fit()
            start = time.perf_counter()
            model.fit(X, y)
            runs.append(time.perf_counter() - start)
        row = {
            "fit_s": statistics.median(runs),
            "fit_runs_s": runs,
            "train_accuracy": float(np.mean(np.asarray(model.predict(X[sample])) == y[sample])),
            "leaves": leaves(model),
        }
        if one_round is not None:
            row.update(one_round(X, y, args.repeats))
        out["by_depth"][str(depth)] = row
        print(f"{name} depth {depth}: {row}", file=sys.stderr, flush=True)
    out["versions"] = _versions(
        ["scikit-learn", "lightgbm", "xgboost", "cuml", "cupy", "cupy-cuda12x", "cupy-cuda13x"]
    )
    print(json.dumps(out))


# The matrix's peer columns: (peer of gpu_tree.app.peers, device asked for).
MATRIX_PEERS = {
    "sklearn_tree": ("sklearn", "cpu"),
    "hist_gb": ("hist_gb", "cpu"),
    "lightgbm": ("lightgbm", "cpu"),
    "xgboost_cpu": ("xgboost", "cpu"),
    "xgboost_cuda": ("xgboost", "cuda"),
    "cuml": ("cuml", "cuda"),
}


def _peer_setup(name, depth, bins, threads, n_classes):
    """(factory of a fresh estimator, one-round timer or None, leaf counter) for a peer.

    The estimators' settings are the shared ones (gpu_tree.app.peers); the one-round timers
    pass the same settings to the boosters' training functions, on bins built beforehand.
    """
    if name not in MATRIX_PEERS:
        raise ValueError(f"unknown peer {name!r}")
    key, device = MATRIX_PEERS[name]
    peer = PEERS[key]
    work = PeerWork(depth=depth, bins=bins, n_jobs=threads, device=device)
    settings = peer.settings(work)

    def make():
        return peer.make(work)

    if key == "sklearn":
        return make, None, lambda m: int(m.get_n_leaves())
    if key == "hist_gb":

        def leaves(m):
            return int(sum(p.get_n_leaf_nodes() for p in m._predictors[0]))

        return make, None, leaves
    if key == "lightgbm":
        import lightgbm

        def one_round(X, y, repeats):
            objective = "binary" if n_classes == 2 else "multiclass"
            # The estimator's settings under their training-function names (aliases).
            train = {k: v for k, v in settings.items() if k not in ("n_estimators", "max_bin")}
            train.update(objective=objective, **({"num_class": n_classes} if n_classes > 2 else {}))
            data = lightgbm.Dataset(
                X,
                y,
                params={
                    "max_bin": bins,
                    "verbose": -1,
                    "min_data_in_leaf": 1,
                    "feature_pre_filter": False,
                },
            ).construct()
            runs = []
            for _ in range(repeats):
                start = time.perf_counter()
                lightgbm.train(train, data, num_boost_round=1)
                runs.append(time.perf_counter() - start)
            return {"one_round_s": statistics.median(runs), "one_round_runs_s": runs}

        def leaves(m):
            return int(sum(t["num_leaves"] for t in m.booster_.dump_model()["tree_info"]))

        return make, one_round, leaves
    if key == "xgboost":
        import xgboost

        def one_round(X, y, repeats):
            result = {}
            data_X = X
            if settings["device"] == "cuda":
                import cupy

                data_X = cupy.asarray(X)
            dtrain = xgboost.QuantileDMatrix(data_X, y, max_bin=bins)
            objective = (
                {"objective": "binary:logistic"}
                if n_classes == 2
                else {"objective": "multi:softprob", "num_class": n_classes}
            )
            # The estimator's settings under their training-function names.
            renamed = {"n_jobs": "nthread", "random_state": "seed"}
            train = {renamed.get(k, k): v for k, v in settings.items() if k != "n_estimators"}
            train.update(objective)
            xgboost.train(train, dtrain, num_boost_round=1)
            runs = []
            for _ in range(repeats):
                start = time.perf_counter()  # train returns with the tree on the host
                booster = xgboost.train(train, dtrain, num_boost_round=1)
                runs.append(time.perf_counter() - start)
            try:
                config = json.loads(booster.save_config())
                result["device_used"] = config["learner"]["generic_param"].get("device", "?")
            except (KeyError, ValueError):
                result["device_used"] = "?"
            result.update(one_round_s=statistics.median(runs), one_round_runs_s=runs)
            return result

        def leaves(m):
            return sum(tree.count("leaf=") for tree in m.get_booster().get_dump())

        return make, one_round, leaves
    return make, None, lambda m: None  # cuML: no public view of its tree


def run_peers(name, X, y, peers, args, simulated, cfg):
    """Each peer in its own child process; failures become recorded reasons."""
    results = {}
    tmp_root = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    folder = tempfile.mkdtemp(prefix="gpu_tree_matrix_", dir=tmp_root)
    try:
        np.save(Path(folder) / "X.npy", X)
        np.save(Path(folder) / "y.npy", y)
        for peer in peers:
            if peer in ("xgboost_cuda", "cuml") and simulated:
                results[peer] = {"skipped": "no GPU here (CUDA simulator run)"}
                log(f"{name}: {peer} skipped (simulator)")
                continue
            command = [
                sys.executable,
                str(Path(__file__).resolve()),
                "--peer-worker",
                peer,
                "--data",
                folder,
                "--depths",
                ",".join(map(str, cfg["depths"])),
                "--bins",
                str(cfg["bins"]),
                "--repeats",
                str(cfg["peer_repeats"]),
                "--threads",
                str(args.threads),
                "--sklearn-tree-max-rows",
                str(cfg["sklearn_tree_max_rows"]),
                "--warmup-rows",
                str(cfg["warmup_rows"]),
            ]
            env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
            env.pop("NUMBA_ENABLE_CUDASIM", None)
            log(f"{name}: {peer} (child process, timeout {args.peer_timeout} s)")
            start = time.perf_counter()
            try:
                child = subprocess.run(
                    command, capture_output=True, text=True, env=env, timeout=args.peer_timeout
                )
            except subprocess.TimeoutExpired:
                results[peer] = {"failed": f"timed out after {args.peer_timeout} s"}
                log(f"{name}: {peer} timed out")
                continue
            lines = child.stdout.strip().splitlines()
            if child.returncode != 0 or not lines:
                tail = (child.stderr.strip().splitlines() or ["(no output)"])[-1]
                if "ModuleNotFoundError" in child.stderr or "ImportError" in child.stderr:
                    results[peer] = {"skipped": f"not installed: {tail[:200]}"}
                else:
                    results[peer] = {"failed": f"exit {child.returncode}: {tail[:300]}"}
                log(f"{name}: {peer}: {next(iter(results[peer].values()))}")
                continue
            results[peer] = json.loads(lines[-1])
            results[peer]["wall_s"] = time.perf_counter() - start
            device_used = [r.get("device_used") for r in results[peer]["by_depth"].values()]
            if peer == "xgboost_cuda" and any(d and "cuda" not in d for d in device_used):
                results[peer]["failed"] = f"XGBoost ran on {device_used[0]}, not the GPU"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return results


# -- rendering ------------------------------------------------------------------------------
def _table_row(cells, n_columns):
    """A markdown table row of exactly ``n_columns`` cells (missing ones empty)."""
    cells = [str(c).replace("|", "/") for c in cells] + [""] * (n_columns - len(cells))
    return "| " + " | ".join(cells) + " |"


def _ms(value):
    return "–" if value is None else f"{value * 1e3:.2f}"


def _s(value):
    return "–" if value is None else f"{value:.3f}"


def render(results):
    """matrix.md text from the results dict (also used by --merge)."""
    meta = results.get("meta", {})
    lines = [f"### Issue 7 GPU matrix · {meta.get('date', '?')} · {meta.get('device', '?')}", ""]
    for key in ("commands", "versions", "sizes"):
        if meta.get(key):
            value = meta[key]
            text = (
                "; ".join(f"`{c}`" for c in value)
                if key == "commands"
                else (
                    ", ".join(f"{k} {v}" for k, v in value.items())
                    if isinstance(value, dict)
                    else str(value)
                )
            )
            lines.append(f"{key.capitalize()}: {text}.")
    if meta.get("simulated"):
        lines += ["", "**CUDA simulator run (smoke test): the times mean nothing.**"]
    bw = results.get("bandwidth")
    if bw:
        lines += [
            "",
            "| copy | GB/s | bytes |",
            "|---|---:|---:|",
            f"| device → device (read + write) | {bw['device_to_device_gb_s']:.1f} | "
            f"{bw['device_to_device_bytes']:,} |",
            f"| host → device (pageable numpy) | {bw['host_to_device_pageable_gb_s']:.1f} | "
            f"{bw['host_bytes']:,} |",
            f"| device → host (pageable numpy) | {bw['device_to_host_pageable_gb_s']:.1f} | "
            f"{bw['host_bytes']:,} |",
        ]
    gpu = results.get("gpu_tree", {})
    if gpu:
        lines += [
            "",
            "gpu_tree (medians; build = the grower on codes and per-row arrays already on "
            "the device, no copy in it; input copy = X host to device; set-up copies = the "
            "labels and any weights the backend copies; floor = the bytes model's one-pass "
            "floor at the measured copy bandwidth):",
            "",
            "| data | depth | fit from numpy s | fit from device s | device build ms | "
            "input copy ms | set-up copies ms | instrumented ms | floor ms | build / floor | "
            "predict rows | predict ms | leaves | train acc. |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for name, by_depth in gpu.items():
            for depth, e in sorted(by_depth.items(), key=lambda kv: int(kv[0])):
                if "error" in e:
                    lines.append(_table_row([name, depth, f"failed: {e['error'][:120]}"], 14))
                    continue
                floor = e.get("one_pass_floor_s")
                ratio = f"{e['device_build_s'] / floor:.0f}×" if floor else "–"
                lines.append(
                    f"| {name} | {depth} | {_s(e.get('fit_host_s'))} | {_s(e.get('fit_device_s'))} "
                    f"| {_ms(e.get('device_build_s'))} | {_ms(e.get('input_copy_s'))} "
                    f"| {_ms(e.get('setup_copy_s'))} | {_ms(e.get('instrumented_build_s'))} | "
                    f"{_ms(floor)} | {ratio} | {e.get('predict_rows', 0):,} | "
                    f"{_ms(e.get('predict_s'))} | {e.get('leaves', '–')} | "
                    f"{e.get('train_accuracy', float('nan')):.4f} |"
                )
    levels = results.get("levels", [])
    groups = {}
    for row in levels:
        groups.setdefault((row["dataset"], row["depth"]), []).append(row)
    for (name, depth), rows in groups.items():
        lines += [
            "",
            f"Per level, {name}, depth {depth} (ms; copies are inside the phases; "
            "model MB: as implemented / one-pass floor):",
            "",
            "| level | nodes | built | kernel | hist | of which kernel | subtract | scoring "
            "| partition | host other | level | launches | H2D n / KB | D2H n / KB | "
            "model MB | floor ms | level / floor |",
            "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|---:|---:|",
        ]
        for r in rows:
            floor = r.get("floor_s_at_copy")
            lines.append(
                f"| {r['level']} | {r['nodes']} | {r['built']} | {r['kernel']} | {_ms(r['hist_s'])} "
                f"| {_ms(r['hist_kernel_s'])} | {_ms(r['subtract_s'])} | {_ms(r['scoring_s'])} | "
                f"{_ms(r['partition_s'])} | {_ms(r['other_s'])} | {_ms(r['level_s'])} | "
                f"{r['launches']} | {r['h2d_count']} / {r['h2d_bytes'] / 1e3:.1f} | "
                f"{r['d2h_count']} / {r['d2h_bytes'] / 1e3:.1f} | "
                f"{r['model_as_implemented_bytes'] / 1e6:.1f} / "
                f"{r['model_one_pass_floor_bytes'] / 1e6:.1f} | {_ms(floor)} | "
                + (f"{r['level_s'] / floor:.0f}× |" if floor else "– |")
            )
    peers = results.get("peers", {})
    if peers:
        lines += [
            "",
            "Peers (fit from numpy; one round = on bins already built; boosters grow "
            "one tree per class per round on 7 classes):",
            "",
            "| data | tool | depth | fit s | one round s | train acc. | leaves | note |",
            "|---|---|---:|---:|---:|---:|---:|---|",
        ]
        for name, by_peer in peers.items():
            for peer, r in by_peer.items():
                note = r.get("failed") or r.get("skipped") or ""
                if r.get("rows_used"):
                    note = (note + "; " if note else "") + f"on the first {r['rows_used']:,} rows"
                if "by_depth" not in r:
                    lines.append(_table_row([name, peer, "–", "–", "–", "–", "–", note], 8))
                    continue
                for depth, d in sorted(r["by_depth"].items(), key=lambda kv: int(kv[0])):
                    extra = f" (ran on {d['device_used']})" if d.get("device_used") else ""
                    lines.append(
                        f"| {name} | {peer} | {depth} | {_s(d.get('fit_s'))} | "
                        f"{_s(d.get('one_round_s'))} | {d.get('train_accuracy', float('nan')):.4f} "
                        f"| {d.get('leaves', '–')} | {note}{extra} |"
                    )
    lines += [
        "",
        "Goals (issue 7, one H200; Higgs shape, depth 10, 256 bins unless said):",
        "",
        "| goal | measured | goal | met? |",
        "|---|---:|---:|---|",
    ]
    for goal, measured, target, met in goals(results):
        lines.append(f"| {goal} | {measured} | {target} | {met} |")
    return "\n".join(lines) + "\n"


def goals(results):
    """(goal, measured, target, met) rows from whatever the results hold."""
    gpu = results.get("gpu_tree", {})
    peers = results.get("peers", {})
    bw = results.get("bandwidth", {})
    rows = []

    def entry(name, depth=GOAL_DEPTH):
        e = gpu.get(name, {}).get(str(depth))
        return None if e is None or "error" in e else e

    def xgb_round(name, depth=GOAL_DEPTH):
        r = peers.get(name, {}).get("xgboost_cuda", {})
        if "failed" in r or "by_depth" not in r:
            return None, r.get("failed") or r.get("skipped") or "not measured"
        d = r["by_depth"].get(str(depth))
        return (d.get("one_round_s"), None) if d else (None, "not measured at this depth")

    def verdict(value, ok):
        return "not measured" if value is None else ("yes" if ok else "**no**")

    higgs = entry("higgs")
    build = higgs and higgs.get("device_build_s")
    rows.append(
        (
            "device tree build, Higgs depth 10",
            _ms(build) + " ms" if build else "–",
            "≤ 20 ms",
            verdict(build, build is not None and build <= 0.020),
        )
    )
    for name, label in (("higgs", "Higgs"), ("covertype", "7-class")):
        e = entry(name)
        mine = e and e.get("device_build_s")
        theirs, why = xgb_round(name)
        ratio = theirs / mine if mine and theirs else None
        rows.append(
            (
                f"build vs XGBoost device='cuda' one round, {label} depth 10",
                f"{ratio:.2f}×" if ratio else f"– ({why or 'gpu_tree not measured'})",
                "≥ 2×" + (" (more)" if name == "covertype" else ""),
                verdict(ratio, ratio is not None and ratio >= 2),
            )
        )
    fit = higgs and higgs.get("fit_host_s")
    rows.append(
        (
            "end-to-end fit from host numpy, Higgs depth 10",
            _s(fit) + " s" if fit else "–",
            "≤ 0.5 s",
            verdict(fit, fit is not None and fit <= 0.5),
        )
    )
    fit_device = higgs and higgs.get("fit_device_s")
    rows.append(
        (
            "end-to-end fit from a device array, Higgs depth 10",
            _s(fit_device) + " s" if fit_device else "–",
            "≤ 0.5 s",
            verdict(fit_device, fit_device is not None and fit_device <= 0.5),
        )
    )
    predict = higgs and higgs.get("predict_s")
    n = higgs.get("predict_rows", 0) if higgs else 10_000_000
    rows.append(
        (
            f"predict {n:,} rows on the device",
            _ms(predict) + " ms" if predict else "–",
            "≤ 5 ms (10M rows)",
            verdict(predict, predict is not None and predict <= 0.005 and n >= 10_000_000),
        )
    )
    root = higgs and higgs.get("root_hist_gb_s")
    copy = bw.get("device_to_device_gb_s")
    share = root / copy if root and copy else None
    rows.append(
        (
            "root histogram kernel / copy bandwidth",
            f"{share:.0%} ({root:.0f} of {copy:.0f} GB/s)" if share else "–",
            "≥ 30%",
            verdict(share, share is not None and share >= 0.30),
        )
    )
    return rows


LEVEL_COLUMNS = (
    "dataset",
    "depth",
    "level",
    "nodes",
    "built",
    "derived",
    "built_rows",
    "split_nodes",
    "split_rows",
    "split_features",
    "kernel",
    "hist_s",
    "hist_kernel_s",
    "subtract_s",
    "scoring_s",
    "partition_s",
    "other_s",
    "level_s",
    "launches",
    "h2d_count",
    "h2d_bytes",
    "d2h_count",
    "d2h_bytes",
    "model_as_implemented_bytes",
    "model_one_pass_floor_bytes",
    "model_ideal_floor_bytes",
    "model_histogram_kernel_bytes",
    "floor_s_at_copy",
)


def write_outputs(results, out: Path):
    out.mkdir(parents=True, exist_ok=True)
    (out / "matrix.json").write_text(json.dumps(results, indent=1, default=float))
    with open(out / "levels.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=LEVEL_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(results.get("levels", []))
    text = render(results)
    (out / "matrix.md").write_text(text)
    log(f"wrote {out / 'matrix.md'}, matrix.json, levels.csv")
    return text


def merge(paths):
    """Join several matrix.json files (later ones win where they overlap)."""
    joined = {"meta": {"commands": []}, "gpu_tree": {}, "peers": {}, "levels": []}
    for path in paths:
        part = json.loads(Path(path).read_text())
        meta = part.get("meta", {})
        for key, value in meta.items():
            if key == "commands":
                joined["meta"]["commands"] += value
            elif key == "versions":
                joined["meta"].setdefault("versions", {}).update(value)
            else:
                joined["meta"][key] = value
        if part.get("bandwidth"):
            joined["bandwidth"] = part["bandwidth"]
        for key in ("gpu_tree", "peers"):
            for name, value in part.get(key, {}).items():
                joined[key].setdefault(name, {}).update(value)
        done = {(r["dataset"], r["depth"]) for r in part.get("levels", [])}
        joined["levels"] = [r for r in joined["levels"] if (r["dataset"], r["depth"]) not in done]
        joined["levels"] += part.get("levels", [])
    return joined


# -- main ------------------------------------------------------------------------------------
def parse_args(argv):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", default="bench/out/matrix", help="folder for the outputs")
    parser.add_argument(
        "--only",
        default="bandwidth,higgs,covertype,peers",
        help=f"parts to run, comma-separated: {', '.join(PARTS)}",
    )
    parser.add_argument(
        "--datasets",
        default=None,
        help="data sets for the peers (default: those named in --only, or both)",
    )
    parser.add_argument("--peers", default=",".join(MATRIX_PEERS), help="comma-separated peers")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="smaller sizes (1M / 100k rows)")
    size.add_argument("--smoke", action="store_true", help="tiny sizes (CUDA simulator)")
    parser.add_argument("--depths", default=None, help="comma-separated (default 8,10,12)")
    parser.add_argument("--bins", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--peer-repeats", type=int, default=None)
    parser.add_argument("--predict-rows", type=int, default=None)
    parser.add_argument(
        "--sklearn-tree-max-rows",
        type=int,
        default=None,
        help="rows for scikit-learn's exact tree (0: all)",
    )
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--peer-timeout", type=int, default=420, help="seconds per peer and set")
    parser.add_argument("--merge", nargs="+", metavar="JSON", help="join matrix.json files")
    # The peer child process.
    parser.add_argument("--peer-worker", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--warmup-rows", type=int, default=None, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.peer_worker:
        peer_worker(args)
        return 0
    out = Path(args.out)
    if args.merge:
        print(write_outputs(merge(args.merge), out), end="")
        return 0

    cfg = dict(SIZES["smoke" if args.smoke else "quick" if args.quick else "full"])
    for key in ("bins", "repeats", "peer_repeats", "predict_rows", "sklearn_tree_max_rows"):
        if getattr(args, key) is not None:
            cfg[key] = getattr(args, key)
    if args.depths:
        cfg["depths"] = tuple(int(d) for d in args.depths.split(","))
    parts = [p.strip() for p in args.only.split(",") if p.strip()]
    unknown = sorted(set(parts) - set(PARTS))
    peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    bad_peers = sorted(set(peers) - set(MATRIX_PEERS) - {"selftest_crash"})
    if unknown or bad_peers:
        raise SystemExit(f"unknown parts {unknown} or peers {bad_peers}")
    named = [d for d in DATASETS if d in parts]
    peer_sets = (
        [d.strip() for d in args.datasets.split(",")] if args.datasets else named or list(DATASETS)
    )

    from gpu_tree import __version__
    from gpu_tree.backends.cuda import cuda_status

    usable, reason, xp = cuda_status()
    need_device = any(p in parts for p in ("bandwidth", "higgs", "covertype"))
    if need_device and not usable:
        raise SystemExit(f"bench_gpu_matrix: the CUDA backend is not usable here: {reason}")
    simulated = xp is np
    device = reason
    if usable and not simulated:
        props = xp.cuda.runtime.getDeviceProperties(0)
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        device = (
            f"{name}, {props['multiProcessorCount']} SMs, "
            f"{props['totalGlobalMem'] / 2**30:.0f} GiB; CUDA runtime "
            f"{xp.cuda.runtime.runtimeGetVersion()}, driver "
            f"{xp.cuda.runtime.driverGetVersion()}"
        )
    command = "python bench/bench_gpu_matrix.py " + " ".join(sys.argv[1:] if argv is None else argv)
    results = {
        "meta": {
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "device": device,
            "simulated": simulated,
            "commands": [command],
            "host": f"{platform.node()}, {os.cpu_count()} CPUs, threads {args.threads}",
            "versions": {
                "gpu_tree": __version__,
                "python": platform.python_version(),
                **_versions(
                    ["numpy", "numba", "numba-cuda", "cupy-cuda12x", "cupy-cuda13x", "cupy"]
                ),
            },
            "sizes": {k: (list(v) if isinstance(v, tuple) else v) for k, v in cfg.items()},
        },
        "gpu_tree": {},
        "peers": {},
        "levels": [],
    }
    copy_gb_s = None
    if "bandwidth" in parts:
        log("copy bandwidth")
        results["bandwidth"] = measure_bandwidth(
            xp, cfg["bandwidth_bytes"], cfg["host_bandwidth_bytes"], cfg["repeats"]
        )
        copy_gb_s = results["bandwidth"]["device_to_device_gb_s"]
        log(f"device-to-device copy {copy_gb_s:.1f} GB/s")
    for name in DATASETS:
        if name not in named and name not in peer_sets:
            continue
        if name not in named and "peers" not in parts:
            continue
        n_rows, n_features = cfg[name]
        log(f"{name}: generating {n_rows:,} x {n_features}")
        X, y = make_data(name, n_rows, n_features)
        if name in named:
            earlier = list(results["levels"])

            def on_depth(by_depth, levels, name=name, earlier=earlier):
                results["gpu_tree"][name] = by_depth
                results["levels"] = earlier + levels
                write_outputs(results, out)

            by_depth, levels = run_gpu_tree(
                name,
                X,
                y,
                cfg["depths"],
                cfg["bins"],
                cfg["repeats"],
                cfg["predict_rows"],
                cfg["warmup_rows"],
                xp,
                copy_gb_s or bytes_model.ASSUMED_COPY_GB_S,
                on_depth,
            )
            results["levels"] = earlier
            if copy_gb_s is None:
                results["meta"]["floor_bandwidth"] = (
                    f"{bytes_model.ASSUMED_COPY_GB_S:g} GB/s assumed (bandwidth not measured)"
                )
            results["gpu_tree"][name] = by_depth
            results["levels"] += levels
        if "peers" in parts and name in peer_sets:
            results["peers"][name] = run_peers(name, X, y, peers, args, simulated, cfg)
            for r in results["peers"][name].values():
                results["meta"]["versions"].update(r.get("versions", {}))
        del X, y
        write_outputs(results, out)  # after each data set: a cut-off run keeps its part
    if "forest" in parts:
        run_forest(cfg, args, out, simulated)
    text = write_outputs(results, out)
    print(text, end="")
    return 0


def run_forest(cfg, args, out: Path, simulated: bool):
    """The forest case: bench/bench_forest.py on the device, in a child process (its own
    peers' definitions: gpu_tree.app.peers.FOREST_PEERS); its tables in ``out``."""
    rows, trees = cfg["forest"]
    # Under the simulator only gpu_tree runs: the peers' GPU builds need a real device.
    tools = "gpu_tree" if simulated else "gpu_tree,xgboost,cuml"
    command = [
        sys.executable,
        str(Path(__file__).with_name("bench_forest.py")),
        "--device",
        "cuda",
        "--rows",
        str(rows),
        "--trees",
        str(trees),
        "--depth",
        "3" if simulated else "10",
        "--repeats",
        str(cfg["repeats"]),
        "--tools",
        tools,
        "--accuracy",
        "--json",
        str(out / "forest.json"),
        "--markdown",
        str(out / "forest.md"),
    ]
    log(f"forest: {rows:,} rows, {trees} trees")
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(command, check=True, timeout=args.peer_timeout * 4)


if __name__ == "__main__":
    sys.exit(main())
