"""Issue 22's new fits against scikit-learn's: absolute-error trees (medians, searched on
each node's rows) and multi-output trees (one set of splits for several targets).

What it measures
----------------
Data: ``--rows`` rows of ``--features`` standard normal features, generated with
``--seed``. Targets (``--outputs`` of them): Friedman's first function of the first five
features, its later outputs with their roles rotated, plus Student-t noise of 2 degrees of
freedom (heavy tails: where medians beat means); the classification cases cut each target
at its quartiles (4 classes per output).

Cases (``--cases``, default all):

* ``absolute_error``: one regression tree, criterion="absolute_error", first output only;
* ``multi_output_regression``: one regression tree, criterion="squared_error", every
  output;
* ``multi_output_classification``: one classification tree, gini, every output.

For each case, gpu_tree's tree in histogram mode (``hist``, 256 bins) and exact mode
(``best``, the search scikit-learn runs), and scikit-learn's tree, each of depth
``--depth`` and min_samples_leaf ``--min-leaf``. Each fits once on 1,000 rows untimed
(compilation, first calls), then ``--repeats`` times on every row, timed (wall clock);
the table reports the median, the ratio scikit-learn / tool (above 1: faster than
scikit-learn), and the score on ``--rows`` // 4 held-out rows (R² averaged over the
outputs, or the mean accuracy of the outputs).

How to run (from the repository root)
-------------------------------------
    python bench/bench_outputs_and_medians.py --rows 20000 --repeats 1     # seconds
    python bench/bench_outputs_and_medians.py --rows 200000 --outputs 5
    python bench/bench_outputs_and_medians.py --rows 2000000 --gpu     # on a GPU: + cuda

``--gpu`` adds gpu_tree's histogram tree on ``device="cuda"`` to every case (its fit time
includes copying X to the GPU, as a user's fit does).

It prints a markdown section (command, machine, a table); ``--json PATH`` also writes every
measurement.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import statistics
import sys
import time

import numpy as np

CASES = ("absolute_error", "multi_output_regression", "multi_output_classification")


def make_data(n_rows, n_features, n_outputs, seed):
    """(X, Y): features and ``n_outputs`` regression targets (see the module docstring)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, max(n_features, 5)))
    targets = []
    for k in range(n_outputs):
        a, b, c, d, e = (X[:, (k + j) % 5] for j in range(5))
        friedman = 10 * np.sin(np.pi * a * b) + 20 * (c - 0.5) ** 2 + 10 * d + 5 * e
        targets.append(friedman + rng.standard_t(2, n_rows))
    return X, np.column_stack(targets)


def quartile_classes(Y):
    """Each target cut at its quartiles: classes 0..3."""
    return np.column_stack([np.digitize(y, np.quantile(y, [0.25, 0.5, 0.75])) for y in Y.T]).astype(
        np.int64
    )


def estimators(case, depth, min_leaf, gpu=False):
    """(name, make) of each tool of a case; ``gpu``: also gpu_tree's histogram tree on
    device="cuda"."""
    import sklearn.tree

    import gpu_tree

    classify = case == "multi_output_classification"
    ours = gpu_tree.DecisionTreeClassifier if classify else gpu_tree.DecisionTreeRegressor
    theirs = sklearn.tree.DecisionTreeClassifier if classify else sklearn.tree.DecisionTreeRegressor
    criterion = {"absolute_error": "absolute_error"}.get(
        case, "gini" if classify else "squared_error"
    )
    params = dict(criterion=criterion, max_depth=depth, min_samples_leaf=min_leaf)
    tools = (
        ("gpu_tree hist", lambda: ours(splitter="hist", device="cpu", **params)),
        ("gpu_tree exact", lambda: ours(splitter="best", device="cpu", **params)),
        ("scikit-learn", lambda: theirs(random_state=0, **params)),
    )
    if gpu:
        tools = (("gpu_tree hist cuda", lambda: ours(device="cuda", **params)), *tools)
    return tools


def score(model, X, Y, classify):
    predicted = model.predict(X)
    if classify:
        return float(np.mean(predicted == Y))
    Y2, P2 = Y.reshape(len(Y), -1), predicted.reshape(len(Y), -1)
    residual = np.sum((Y2 - P2) ** 2, axis=0)
    spread = np.sum((Y2 - Y2.mean(axis=0)) ** 2, axis=0)
    return float(np.mean(1.0 - residual / spread))


def run_case(case, args):
    X, Y = make_data(args.rows + args.rows // 4, args.features, args.outputs, args.seed)
    classify = case == "multi_output_classification"
    if classify:
        Y = quartile_classes(Y)
    if case == "absolute_error":
        Y = Y[:, 0]
    X_train, X_test = X[: args.rows], X[args.rows :]
    Y_train, Y_test = Y[: args.rows], Y[args.rows :]
    results = []
    for name, make in estimators(case, args.depth, args.min_leaf, args.gpu):
        make().fit(X_train[:1000], Y_train[:1000])  # compilation, first calls
        seconds = []
        for _ in range(args.repeats):
            model = make()
            start = time.perf_counter()
            model.fit(X_train, Y_train)
            seconds.append(time.perf_counter() - start)
        results.append(
            {
                "case": case,
                "tool": name,
                "fit_seconds": seconds,
                "median_seconds": statistics.median(seconds),
                "score": score(model, X_test, Y_test, classify),
                "leaves": int(model.get_n_leaves()),
            }
        )
    reference = next(r["median_seconds"] for r in results if r["tool"] == "scikit-learn")
    for r in results:
        r["speedup_vs_sklearn"] = reference / r["median_seconds"]
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--features", type=int, default=10)
    parser.add_argument("--outputs", type=int, default=3)
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--min-leaf", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--json", default=None)
    parser.add_argument(
        "--gpu", action="store_true", help="also time gpu_tree's histogram trees on the GPU"
    )
    args = parser.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"unknown cases {unknown}; choose among {list(CASES)}")
    from gpu_tree.app.machine import machine_info

    machine = machine_info()
    results = [r for case in cases for r in run_case(case, args)]
    print(f"### {datetime.date.today()}: absolute error and multi-output trees\n")
    print(f"`python bench/bench_outputs_and_medians.py {shlex.join(sys.argv[1:])}`\n")
    print(
        f"Machine: {machine['cpu_model']}, {machine['usable_cores']} usable cores, load "
        f"{machine['load_average_at_start']} at start\n"
    )
    print("| case | tool | fit (median) | scikit-learn / tool | held-out score | leaves |")
    print("|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['case']} | {r['tool']} | {r['median_seconds']:.3f} s | "
            f"{r['speedup_vs_sklearn']:.2f}x | {r['score']:.4f} | {r['leaves']} |"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"options": vars(args), "machine": machine, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
