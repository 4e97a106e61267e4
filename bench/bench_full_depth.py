"""Fully grown trees (max_depth=None, scikit-learn's default): gpu_tree against scikit-learn.

Deep levels hold many small nodes, the case where dense histograms would cost memory and
time per bin rather than per row. Each tool fits in a fresh process, so its peak resident
memory is its own. Reports the median fit time of --repeats fits, leaves, depth, test
accuracy and peak memory.

    python bench/bench_full_depth.py [--rows 200000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time


def run_one(tool: str, rows: int, repeats: int) -> dict:
    """Fit in this process and report (called in a child process)."""
    import numpy as np

    from gpu_tree.datasets import make_higgs_like

    X, y = make_higgs_like(rows, random_state=0)
    n_train = int(0.8 * rows)
    if tool == "gpu_tree":
        from gpu_tree import DecisionTreeClassifier

        DecisionTreeClassifier().fit(X[:2000], y[:2000])  # compile / cache warm-up
        make = DecisionTreeClassifier
    else:
        from sklearn.tree import DecisionTreeClassifier

        def make():
            return DecisionTreeClassifier(random_state=0)

    times = []
    for _ in range(repeats):
        model = make()
        start = time.perf_counter()
        model.fit(X[:n_train], y[:n_train])
        times.append(time.perf_counter() - start)
    accuracy = float(np.mean(model.predict(X[n_train:]) == y[n_train:]))
    return {
        "tool": tool,
        "fit_s": statistics.median(times),
        "fits": times,
        "leaves": int(model.get_n_leaves()),
        "depth": int(model.get_depth()),
        "accuracy": accuracy,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_one(args.child, args.rows, args.repeats)))
        return
    results = []
    for tool in ("gpu_tree", "sklearn"):
        command = [sys.executable, __file__, "--child", tool, "--rows", str(args.rows)]
        command += ["--repeats", str(args.repeats)]
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        results.append(json.loads(output.strip().splitlines()[-1]))
    ours = results[0]["fit_s"]
    print(
        f"{args.rows:,} rows of make_higgs_like (80% train), max_depth=None, median of {args.repeats}"
    )
    print(
        f"{'tool':10s} {'fit s':>8s} {'ratio':>7s} {'leaves':>8s} {'depth':>6s} {'accuracy':>9s} {'peak MB':>8s}"
    )
    for r in results:
        print(
            f"{r['tool']:10s} {r['fit_s']:8.2f} {r['fit_s'] / ours:6.2f}x {r['leaves']:8d} "
            f"{r['depth']:6d} {r['accuracy']:9.4f} {r['peak_rss_mb']:8.0f}"
        )


if __name__ == "__main__":
    main()
