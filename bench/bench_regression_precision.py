"""How exact are regression trees' statistics at scale? (issue 14's large-scale check)

Fits ``DecisionTreeRegressor`` on ``--rows`` rows (default 10,000,000) of
``y = c + s * (sin(2 x0) + 0.5 x1 + noise)`` for several offsets ``c`` and scales ``s``,
on a lognormal target, and on a target with one outlier, and reports for each fit:

- the worst relative error of ``tree_.impurity`` over every node, against a two-pass
  float64 variance of that node's training rows computed here with numpy (pairwise sums
  over each node's rows less one of them, after subtracting their mean);
- whether the tree equals the tree grown on the same target without its offset (same
  features, thresholds and node sizes), and how far its predictions are from that tree's
  predictions plus the offset;
- the fit time and R² on the training rows.

A benchmark, not a test: 10M rows take minutes on a 2-core machine. Run it before and after
a change to the statistics and record the output in bench/RESULTS.md::

    python bench/bench_regression_precision.py                  # 10M rows, depth 8
    python bench/bench_regression_precision.py --rows 200000 --json /tmp/precision.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from gpu_tree import DecisionTreeRegressor


def make_features(n_rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Four features and the offset-free signal sin(2 x0) + 0.5 x1 + noise."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, size=(n_rows, 4))
    signal = np.sin(2.0 * X[:, 0]) + 0.5 * X[:, 1] + 0.3 * rng.standard_normal(n_rows)
    return X, signal


def targets(signal: np.ndarray, seed: int) -> dict[str, tuple[np.ndarray, float]]:
    """name -> (target, its offset against the base target "offset 0"). R² is reported on
    the rows whose target is below 1e7 in size where that leaves some out (the outlier)."""
    rng = np.random.default_rng(seed + 1)
    found = {}
    for offset in (0.0, 1e4, 1e6, 1e9, 1e12):
        found[f"offset {offset:g}"] = (signal + offset, offset)
    found["scale 1e-6"] = (signal * 1e-6, 0.0)
    found["scale 1e12"] = (signal * 1e12, 0.0)
    found["lognormal (sigma 2)"] = (rng.lognormal(0.0, 2.0, signal.size) * (1.0 + signal**2), 0.0)
    outlier = signal.copy()
    outlier[rng.integers(signal.size)] = 1e8  # one row, about 1e8 times the others' spread
    found["one outlier at 1e8"] = (outlier, 0.0)
    return found


def node_rows(tree, leaves: np.ndarray) -> list[np.ndarray]:
    """Row indices of every node, from each row's leaf (nodes are numbered level by level,
    so a node's rows are the rows of the leaves below it)."""
    order = np.argsort(leaves, kind="stable")
    sorted_leaves = leaves[order]
    rows = [None] * tree.node_count
    for node in range(tree.node_count - 1, -1, -1):
        children = tree.children_of(node)
        if children.size == 0:
            start, end = np.searchsorted(sorted_leaves, [node, node + 1])
            rows[node] = order[start:end]
        else:
            rows[node] = np.concatenate([rows[c] for c in children])
    return rows


def worst_impurity_error(model, X: np.ndarray, y: np.ndarray) -> dict:
    tree = model.tree_
    rows = node_rows(tree, model.apply(X))
    worst, worst_node, spread = 0.0, -1, float(np.var(y))
    for node, r in enumerate(rows):
        # Two-pass, pairwise sums, after subtracting one of the node's values (exact for
        # values this close): near 1e12 float64 values are 1.2e-4 apart, so a mean taken
        # there errs by up to 6e-5 and moves a variance of 0.4 by 1e-8 relative; the mean
        # of the differences has no such floor.
        values = y[r] - y[r[0]]
        variance = float(np.mean((values - np.mean(values)) ** 2))
        # Relative to the node's variance; a node of equal values (variance 0) is judged
        # against the root's spread so that "0 vs 1e-30" is not an infinite error.
        scale = variance if variance > 0 else spread
        error = abs(float(tree.impurity[node]) - variance) / scale if scale > 0 else 0.0
        if error > worst:
            worst, worst_node = error, node
    return {
        "worst_relative_impurity_error": worst,
        "worst_node": worst_node,
        "worst_node_rows": int(tree.n_node_samples[worst_node]) if worst_node >= 0 else 0,
        "root_impurity": float(tree.impurity[0]),
        "root_variance_numpy": float(np.var(y)),
    }


def same_tree(a, b) -> bool:
    """Same features, thresholds and node sizes (values and impurities may differ)."""
    ta, tb = a.tree_, b.tree_
    return (
        ta.node_count == tb.node_count
        and np.array_equal(ta.feature, tb.feature)
        and np.array_equal(ta.threshold, tb.threshold)
        and np.array_equal(ta.n_node_samples, tb.n_node_samples)
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", action="append", default=[], help="run these targets only")
    parser.add_argument("--json", help="write every number here")
    args = parser.parse_args(argv)

    X, signal = make_features(args.rows, args.seed)
    all_targets = targets(signal, args.seed)
    unknown = set(args.only) - set(all_targets)
    if unknown:
        parser.error(f"unknown targets {sorted(unknown)}; choose from {list(all_targets)}")
    base = None
    results = []
    print(f"{args.rows:,} rows x 4 features, max_depth={args.depth}, device={args.device}")
    print(
        f"{'target':<22} {'fit s':>7} {'R2':>8} {'worst impurity err':>19} {'= offset-0 tree':>16}"
    )
    for name, (y, offset) in all_targets.items():
        if args.only and name not in args.only and name != "offset 0":
            continue
        start = time.perf_counter()
        model = DecisionTreeRegressor(max_depth=args.depth, device=args.device).fit(X, y)
        seconds = time.perf_counter() - start
        prediction = model.predict(X)
        ordinary = np.abs(y - offset) < 1e7 if name.startswith("one outlier") else slice(None)
        r2 = 1.0 - float(np.mean((y[ordinary] - prediction[ordinary]) ** 2)) / float(
            np.var(y[ordinary])
        )
        row = {"target": name, "offset": offset, "fit_seconds": seconds, "r2": r2}
        # (for the outlier target: R² on every row but the outlier)
        row |= worst_impurity_error(model, X, y)
        if name == "offset 0":
            base = (model, prediction)
        if base is not None and name.startswith("offset") and name != "offset 0":
            row["same_tree_as_offset_0"] = same_tree(model, base[0])
            row["max_prediction_shift_error"] = float(
                np.max(np.abs(prediction - (base[1] + offset)))
            )
        results.append(row)
        same = row.get("same_tree_as_offset_0")
        print(
            f"{name:<22} {seconds:7.2f} {r2:8.4f} {row['worst_relative_impurity_error']:19.3g} "
            f"{'-' if same is None else ('yes' if same else 'no'):>16}",
            flush=True,
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"rows": args.rows, "depth": args.depth, "results": results}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
