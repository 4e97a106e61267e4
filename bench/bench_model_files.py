"""Model-file sizes and load times: packed arrays (format 2, what ``save`` writes) against
JSON lists (the arrays as format 1 wrote them), for one tree and for a forest.

Fits a full-depth DecisionTreeRegressor and a RandomForestRegressor on diamonds (the
shared datasets; a synthetic table of the same shape where they are absent), saves each
both ways, and loads each file ``--repeats`` times: the median load time (read, parse,
every check, the estimator built) and each file's size. A loaded model's predictions are
checked against the fitted one's, so a fast load of a wrong model cannot pass.

    python bench/bench_model_files.py                       # a tree and 100 trees
    python bench/bench_model_files.py --trees 10 --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DIAMONDS = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "diamonds.csv"


def _diamonds(rows):
    """diamonds' numeric columns and price (or a synthetic stand-in), first ``rows`` rows."""
    path = DIAMONDS
    if path.is_file():
        import pandas as pd

        frame = pd.read_csv(path)
        y = frame.pop("price").to_numpy(np.float64)
        X = frame.select_dtypes("number").to_numpy(np.float64)
        source = "diamonds.csv (numeric columns)"
    else:
        rng = np.random.default_rng(0)
        X = rng.normal(size=(53_940, 6))
        y = np.exp(X[:, 0]) * 1000 + X[:, 1] * 300 + rng.normal(scale=100, size=len(X))
        source = "synthetic, diamonds' shape"
    return X[:rows], y[:rows], source


def _measure(model, X, folder: Path, repeats: int) -> dict:
    import gpu_tree
    from gpu_tree.model.file_format.writing import save_model

    expected = model.predict(X)
    out = {}
    for form, packed in (("lists", False), ("packed", True)):
        path = folder / f"{form}.json"
        started = time.perf_counter()
        save_model(model, path, packed)  # lists: the arrays as format 1 wrote them
        save_s = time.perf_counter() - started
        loads = []
        for _ in range(repeats):
            started = time.perf_counter()
            loaded = gpu_tree.load(path)
            loads.append(time.perf_counter() - started)
        if not np.array_equal(loaded.predict(X), expected):
            raise SystemExit(f"{form}: the loaded model predicts differently")
        out[form] = {
            "bytes": path.stat().st_size,
            "save_s": save_s,
            "load_s": statistics.median(loads),
            "loads": loads,
        }
        path.unlink()
    out["size_ratio"] = out["lists"]["bytes"] / out["packed"]["bytes"]
    out["load_speedup"] = out["lists"]["load_s"] / out["packed"]["load_s"]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=53_940)
    parser.add_argument("--trees", type=int, default=100, help="the forest's trees")
    parser.add_argument("--repeats", type=int, default=3, help="loads per file (median)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)

    import gpu_tree

    X, y, source = _diamonds(args.rows)
    models = {
        "tree": gpu_tree.DecisionTreeRegressor(device="cpu", random_state=0),
        f"forest of {args.trees}": gpu_tree.RandomForestRegressor(
            n_estimators=args.trees, device="cpu", random_state=0, n_jobs=-1
        ),
    }
    results = {"data": f"{source}, {len(X):,} rows x {X.shape[1]} features", "models": {}}
    print(f"# model files: {results['data']}; load time = median of {args.repeats}")
    print("| model | nodes | lists: MB | load s | packed: MB | load s | smaller | load faster |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as folder:
        for name, model in models.items():
            model.fit(X, y)
            trees = getattr(model, "estimators_", [model])
            nodes = sum(t.tree_.node_count for t in trees)
            row = _measure(model, X, Path(folder), args.repeats)
            row["nodes"] = nodes
            results["models"][name] = row
            lists, packed = row["lists"], row["packed"]
            print(
                f"| {name} | {nodes:,} | {lists['bytes'] / 1e6:.2f} | {lists['load_s']:.3f} "
                f"| {packed['bytes'] / 1e6:.2f} | {packed['load_s']:.3f} "
                f"| {row['size_ratio']:.1f}x | {row['load_speedup']:.1f}x |",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
