"""GPU benchmark of the CUDA backend (issue 3): one tree on a Higgs-shaped binary set.

Measures, in one run on one GPU:

- end-to-end fit from host numpy (binning on the device included), median of --repeats;
- the device tree build alone: the grower on bin codes already on the device;
- prediction of --predict-rows rows already on the device;
- the bandwidth floor: the bytes the level histograms must read (each level reads the
  node id of every row, and the codes and label of every row in a node it builds: the
  root and, below it, the smaller child of each split), over the device-to-device copy
  bandwidth measured in the same run;
- optionally XGBoost with device="cuda" (one round, same depth and bins) when installed.

    python bench/bench_gpu.py                       # 10,500,000 x 28, depth 10, 256 bins
    python bench/bench_gpu.py --json out.json --markdown bench/RESULTS.md

Under NUMBA_ENABLE_CUDASIM=1 (no GPU) it runs end to end on small sizes as a smoke test;
its times then mean nothing.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from datetime import datetime, timezone

import numpy as np

from gpu_tree import DecisionTreeClassifier, __version__
from gpu_tree.app.peers import PEERS, PeerWork
from gpu_tree.backends.cuda import cuda_status
from gpu_tree.backends.factory import make_backend
from gpu_tree.backends.rows import RowData
from gpu_tree.data.stats import StatsLayout
from gpu_tree.datasets import make_higgs_like
from gpu_tree.growing.grower import Grower, GrowthParams
from gpu_tree.training.binning import bin_features
from gpu_tree.utils.phase_timer import PhaseTimer


def synchronize(xp):
    if xp is not np:
        xp.cuda.Device().synchronize()


def timed(xp, function, *args):
    synchronize(xp)
    start = time.perf_counter()
    result = function(*args)
    synchronize(xp)
    return result, time.perf_counter() - start


def copy_bandwidth(xp, n_bytes: int, repeats: int = 5) -> float:
    """Device-to-device copy bandwidth in bytes/s (bytes read + bytes written)."""
    source = xp.ones(n_bytes // 8)
    target = xp.empty_like(source)
    times = []
    for _ in range(repeats):
        _, seconds = timed(xp, lambda: target.__setitem__(slice(None), source))
        times.append(seconds)
    return 2 * source.nbytes / statistics.median(times)


def histogram_floor_bytes(tree, n_samples: int, n_features: int, code_bytes: int) -> int:
    """Bytes the level histograms must read, from the fitted tree's node sizes."""
    total = 0
    internal = np.flatnonzero(tree.children_left >= 0)
    built_rows = {0: tree.n_node_samples[0]}  # depth -> rows of the nodes built there
    for node in internal:
        left, right = tree.children_left[node], tree.children_right[node]
        depth = int(tree.depth[node]) + 1
        if tree.children_left[left] >= 0 or tree.children_left[right] >= 0:
            smaller = min(tree.n_node_samples[left], tree.n_node_samples[right])
            built_rows[depth] = built_rows.get(depth, 0) + int(smaller)
    for rows in built_rows.values():
        total += n_samples * 4 + int(rows) * (n_features * code_bytes + 4)
    return int(total)


def device_tree_build(X, y, depth, bins, xp):
    """Bin X on the device once, then time the grower alone (through the estimators' own
    builder, ``make_backend``), and once more with its phase timer on.

    Returns the median build time, the bin mapper and the seconds per phase of the timed
    build (histograms, of which the kernel, subtraction, split scoring, partition)."""
    mapper, binned = bin_features(X, max_bins=bins, device="cuda")
    row_data = RowData(layout=StatsLayout(True, 2, False), weight=np.ones(len(y)), y_class=y)
    params = GrowthParams(criterion="gini", max_depth=depth)

    def build(timer=None):
        backend = make_backend(binned, row_data, device="cuda", timer=timer)
        return Grower(backend, row_data.layout, params, X.shape[1], timer=timer).grow()

    build()  # warm-up: kernel compilation
    times = []
    for _ in range(3):
        _, seconds = timed(xp, build)
        times.append(seconds)
    timer = PhaseTimer(xp)
    build(timer)
    return statistics.median(times), mapper, timer.totals()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_500_000)
    parser.add_argument("--features", type=int, default=28)
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--bins", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--predict-rows", type=int, default=10_000_000)
    parser.add_argument("--no-xgboost", action="store_true")
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--markdown", metavar="PATH")
    args = parser.parse_args()

    usable, reason, xp = cuda_status()
    if not usable:
        raise SystemExit(f"bench_gpu: the CUDA backend is not usable here: {reason}")
    simulated = xp is np
    X, y = make_higgs_like(args.rows, args.features, random_state=0)
    results = {
        "rows": args.rows,
        "features": args.features,
        "depth": args.depth,
        "bins": args.bins,
        "device": reason,
        "simulated": simulated,
    }

    model = DecisionTreeClassifier(max_depth=args.depth, max_bins=args.bins, device="cuda")
    _, warmup = timed(xp, model.fit, X[:20000], y[:20000])
    fits = [timed(xp, model.fit, X, y)[1] for _ in range(args.repeats)]
    results.update(fit_end_to_end_s=statistics.median(fits), fits_s=fits, warmup_s=warmup)
    results["leaves"] = int(model.get_n_leaves())
    results["train_accuracy"] = float(np.mean(model.predict(X[:200000]) == y[:200000]))

    results["device_tree_build_s"], mapper, phases = device_tree_build(
        X, y, args.depth, args.bins, xp
    )
    results["device_tree_build_phases_s"] = phases
    X_predict = xp.asarray(make_higgs_like(min(args.predict_rows, args.rows), args.features, 1)[0])
    model.predict(X_predict[:1000])
    predicts = [timed(xp, model.predict, X_predict)[1] for _ in range(args.repeats)]
    results["predict_rows"] = int(X_predict.shape[0])
    results["predict_s"] = statistics.median(predicts)

    bandwidth = copy_bandwidth(xp, min(2 << 30, 64 * args.rows))
    floor_bytes = histogram_floor_bytes(
        model.tree_, args.rows, args.features, np.dtype(mapper.bin_dtype_).itemsize
    )
    results.update(
        copy_bandwidth_gb_s=bandwidth / 1e9,
        histogram_floor_bytes=int(floor_bytes),
        histogram_floor_s=floor_bytes / bandwidth,
    )

    if not args.no_xgboost and not simulated:
        try:
            peer = PEERS["xgboost"]
            booster = peer.make(PeerWork(depth=args.depth, bins=args.bins, device="cuda"))
            if booster.get_params()["device"] != "cuda":
                raise RuntimeError("this XGBoost build has no CUDA support")
            booster.fit(X[:20000], y[:20000])
            times = [timed(xp, booster.fit, X, y)[1] for _ in range(args.repeats)]
            results["xgboost_cuda_fit_s"] = statistics.median(times)
        except Exception as exc:  # noqa: BLE001 - report any failure, keep the run
            results["xgboost_cuda"] = f"not measured: {exc}"

    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"{when}  {reason}  gpu_tree {__version__}  python {platform.python_version()}",
        f"data: {args.rows:,} x {args.features} Higgs-shaped, depth {args.depth}, {args.bins} bins",
        f"end-to-end fit from host numpy: {results['fit_end_to_end_s']:.4f} s (median of {args.repeats}; warm-up {warmup:.2f} s)",
        f"device tree build alone:        {results['device_tree_build_s']:.4f} s",
        "  phases (timed build, device synchronised): "
        + ", ".join(f"{name} {seconds * 1e3:.2f} ms" for name, seconds in phases.items()),
        f"predict {results['predict_rows']:,} rows on the device: {results['predict_s']:.4f} s",
        f"copy bandwidth {results['copy_bandwidth_gb_s']:.1f} GB/s; histogram floor "
        f"{floor_bytes / 1e9:.3f} GB -> {results['histogram_floor_s'] * 1e3:.2f} ms",
        f"leaves {results['leaves']}, train accuracy (first 200k rows) {results['train_accuracy']:.4f}",
    ]
    if "xgboost_cuda_fit_s" in results:
        lines.append(f"XGBoost device='cuda' one round: {results['xgboost_cuda_fit_s']:.4f} s")
    if simulated:
        lines.append("(CUDA simulator: a smoke run, the times mean nothing)")
    print("\n".join(lines))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=2)
    if args.markdown:
        with open(args.markdown, "a", encoding="utf-8") as handle:
            handle.write("\n```\n" + "\n".join(lines) + "\n```\n")


if __name__ == "__main__":
    main()
