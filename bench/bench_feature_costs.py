"""Features with costs: what gpu_tree's cost-sensitive split selection (``feature_costs``,
``cost_criterion``, ``cost_weight``) buys in the cost of a prediction, and what it loses
in accuracy (issue 21; seed document 001, "Decision Tree Variants/Extensions").

What it measures
----------------
For each data set, gpu_tree's DecisionTreeClassifier(criterion="entropy") at
``max_depth=6`` and fully grown (``max_depth=None``), each with:

* ``no costs``               the cost-blind tree (costed afterwards by the same costs);
* ``tan_schlimmer``          gain**2 / cost (Tan and Schlimmer, AAAI-90, 1990);
* ``nunez w=0.5``, ``w=1``, ``w=2``
                             (2**gain - 1) / (cost + 1)**w (Núñez, Machine Learning 6, 1991).

Reported per row of the table: the held-out accuracy; the mean prediction cost per
held-out row, ``prediction_cost(X_test).mean()`` (the costs of the distinct features on a
row's path, each paid once; the cost-blind tree through
``prediction_cost(X_test, feature_costs=costs)``); the leaves; the distinct features the
tree tests; the median fit time of ``--repeats`` fits, after one untimed warm-up fit
(numba's compilation or cache load). Nothing is random once the split and the costs are
drawn, so accuracy, cost, leaves and features are the same on every repeat.

Data (``--datasets``, default all; each split 75/25, stratified, seed 0):

* ``breast_cancer``  scikit-learn's (569 x 30, 2 classes); costs by feature group, as in
                     the user guide's example: the 10 "mean" features cost 1, the 10 "error"
                     features 5, the 10 "worst" features 20;
* ``digits``         scikit-learn's (1,797 x 64, 10 classes); costs uniform integers
                     1..20 drawn with numpy.random.default_rng(0);
* ``wine``           scikit-learn's (178 x 13, 3 classes); costs as for digits;
* ``letter``         ../shared/datasets/letter.arff (20,000 x 16, 26 classes); costs as
                     for digits; skipped with a note where the folder is absent.

How to run (from the repository root)
-------------------------------------
    python bench/bench_feature_costs.py                 # all data sets, 3 repeats
    python bench/bench_feature_costs.py --repeats 1 --datasets breast_cancer

It prints a header line with the versions, then one markdown table with a data column.
"""

from __future__ import annotations

import argparse
import gc
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:  # run as a script or imported from elsewhere
    sys.path.insert(0, str(BENCH))

DATASETS = ("breast_cancer", "digits", "wine", "letter")
DEPTHS = (6, None)
# (row label, estimator keyword arguments besides feature_costs); None: no costs.
METHODS = (
    ("no costs", None),
    ("tan_schlimmer", {"cost_criterion": "tan_schlimmer"}),
    ("nunez w=0.5", {"cost_criterion": "nunez", "cost_weight": 0.5}),
    ("nunez w=1", {"cost_criterion": "nunez", "cost_weight": 1.0}),
    ("nunez w=2", {"cost_criterion": "nunez", "cost_weight": 2.0}),
)
TEST_SHARE = 0.25
SEED = 0
COST_SEED = 0


def group_costs() -> np.ndarray:
    """breast cancer's costs: its 10 mean, 10 error and 10 worst features (in that order
    in scikit-learn's columns) cost 1, 5 and 20 (the user guide's example)."""
    return np.repeat([1.0, 5.0, 20.0], 10)


def random_costs(n_features: int) -> np.ndarray:
    """Uniform integer costs 1..20, one per feature, from a fixed seed."""
    return np.random.default_rng(COST_SEED).integers(1, 21, size=n_features).astype(np.float64)


def load(name: str):
    """X, y, costs and a description of a data set; FileNotFoundError where letter's
    shared folder is absent."""
    if name == "breast_cancer":
        from sklearn.datasets import load_breast_cancer

        X, y = load_breast_cancer(return_X_y=True)
        return X, y, group_costs(), "breast cancer (569 x 30), costs 1 / 5 / 20 by group"
    if name in ("digits", "wine"):
        from sklearn import datasets

        X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
        return X, y, random_costs(X.shape[1]), f"{name} ({X.shape[0]:,} x {X.shape[1]})"
    import _categorical_data as real_data

    dataset = real_data.load_arff("letter.arff", "class")
    X = np.ascontiguousarray(dataset.X.to_numpy(dtype=np.float64))
    return X, dataset.y, random_costs(X.shape[1]), f"letter.arff ({X.shape[0]:,} x 16)"


def make(depth, costs, options):
    from gpu_tree import DecisionTreeClassifier

    if options is None:
        return DecisionTreeClassifier(criterion="entropy", max_depth=depth)
    return DecisionTreeClassifier(
        criterion="entropy", max_depth=depth, feature_costs=costs, **options
    )


def features_used(model) -> int:
    """Distinct features tested at the tree's split nodes."""
    from gpu_tree.model.tree import TREE_LEAF

    tree = model.tree_
    internal = np.asarray(tree.children_left) != TREE_LEAF
    return int(np.unique(np.asarray(tree.feature)[internal]).size)


def timed_fit(model, X, y) -> float:
    gc.collect()
    start = time.perf_counter()
    model.fit(X, y)
    return time.perf_counter() - start


def measure(name: str, repeats: int) -> dict:
    from sklearn.model_selection import train_test_split

    X, y, costs, source = load(name)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=TEST_SHARE, random_state=SEED, stratify=y
    )
    rows = []
    for depth in DEPTHS:
        for label, options in METHODS:
            make(depth, costs, options).fit(X_train, y_train)  # untimed warm-up
            seconds = []
            for _ in range(repeats):
                model = make(depth, costs, options)
                seconds.append(timed_fit(model, X_train, y_train))
            rows.append(
                {
                    "dataset": name,
                    "depth": "full" if depth is None else str(depth),
                    "method": label,
                    "accuracy": float(model.score(X_test, y_test)),
                    "mean_cost": float(model.prediction_cost(X_test, feature_costs=costs).mean()),
                    "leaves": int(model.get_n_leaves()),
                    "features": features_used(model),
                    "fit_seconds": statistics.median(seconds),
                }
            )
    return {"dataset": name, "source": source, "rows": rows, "split": (len(y_train), len(y_test))}


def versions() -> str:
    import sklearn

    import gpu_tree

    return (
        f"python {platform.python_version()}, numpy {np.__version__}, "
        f"scikit-learn {sklearn.__version__}, gpu_tree {getattr(gpu_tree, '__version__', '?')}"
    )


def table(entries) -> str:
    lines = [
        "| data | max_depth | cost criterion | accuracy | mean cost / row | leaves | "
        "features used | fit s (median) |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for entry in entries:
        for r in entry["rows"]:
            lines.append(
                f"| {r['dataset']} | {r['depth']} | {r['method']} | {r['accuracy']:.3f} | "
                f"{r['mean_cost']:.2f} | {r['leaves']} | {r['features']} | "
                f"{r['fit_seconds']:.4f} |"
            )
    return "\n".join(lines)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--datasets", default=",".join(DATASETS), help=f"comma-separated, from {DATASETS}"
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed fits per row (median)")
    args = parser.parse_args(argv)
    args.datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    unknown = sorted(set(args.datasets) - set(DATASETS))
    if unknown:
        parser.error(f"unknown data sets {unknown}; choose from {list(DATASETS)}")
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    entries, notes = [], []
    for name in args.datasets:
        try:
            entries.append(measure(name, args.repeats))
        except FileNotFoundError as exc:  # ../shared/datasets is not in a fresh clone
            notes.append(f"{name}: skipped ({exc})")
            print(notes[-1], file=sys.stderr)
    print(f"Feature costs, gpu_tree DecisionTreeClassifier(criterion='entropy'); {versions()}")
    print()
    print(
        f"Stratified {1 - TEST_SHARE:.0%}/{TEST_SHARE:.0%} split, seed {SEED}; fit times: "
        f"median of {args.repeats} after one untimed warm-up; mean cost / row: "
        "prediction_cost(X_test).mean(), the cost-blind tree costed by the same costs."
    )
    for entry in entries:
        print(
            f"- {entry['dataset']}: {entry['source']}; {entry['split'][0]:,} training / "
            f"{entry['split'][1]:,} held-out rows"
        )
    for note in notes:
        print(f"- {note}")
    print()
    print(table(entries))
    return 0


if __name__ == "__main__":
    sys.exit(main())
