"""Fit time and peak memory of multiclass categorical splits as categories grow (issue 15).

Each run fits ``DecisionTreeClassifier(max_depth=3, categorical_features=[0])`` on
``max(4 K, 20000)`` rows of two integer features with K categories each and a 5-class
target, in a fresh process (so that its peak RSS is its own), and prints the fit time,
the peak resident memory, the leaves and the training accuracy. Before issue 15 the
subsets were enumerated in a Python list growing as K^2: 3.3 GiB at K = 8,000 and a
MemoryError at 65,000.

    python bench/bench_many_categories.py                 # K = 1,000, 8,000, 65,000
    python bench/bench_many_categories.py --categories 40 --max-subset 20
"""

from __future__ import annotations

import argparse
import subprocess
import sys

_ONE_RUN = r"""
import resource, sys, time
import numpy as np
from gpu_tree import DecisionTreeClassifier
K, max_subset = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
n = max(4 * K, 20000)
X = rng.integers(0, K, size=(n, 2)).astype(float)
y = (X[:, 0].astype(int) * 7 + rng.integers(0, 2, n)) % 5
model = DecisionTreeClassifier(
    max_depth=3, categorical_features=[0], max_bins=65535, max_category_subset=max_subset
)
start = time.perf_counter()
model.fit(X, y)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"| {K:,} | {max_subset} | {n:,} | {seconds:.2f} | {peak:.0f} | {model.get_n_leaves()} "
      f"| {model.score(X, y):.3f} |")
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--categories", type=int, action="append", default=[])
    parser.add_argument("--max-subset", type=int, default=2)
    args = parser.parse_args(argv)
    print("| categories | max_category_subset | rows | fit s | peak RSS MiB | leaves | accuracy |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for k in args.categories or [1000, 8000, 65000]:
        result = subprocess.run(
            [sys.executable, "-c", _ONE_RUN, str(k), str(args.max_subset)],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            print(f"| {k:,} | {args.max_subset} | failed: {result.stderr.strip()[-200:]} |")
        else:
            print(result.stdout.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
