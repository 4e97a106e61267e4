"""Multiclass through binary classifiers: gpu_tree.DAGClassifier's DAG and adaptive DAG
(seed document 002, "Tree-Based Reduction") against one-vs-rest and one multiclass tree.

What it measures
----------------
Methods, each with gpu_tree's DecisionTreeClassifier (default parameters: fully grown,
gini, 256 bins) as the binary or multiclass tree:

* ``DAG``              DAGClassifier(kind="dag"): K - 1 trees, classes grouped by gini;
* ``ADAG``             DAGClassifier(kind="adag"): K(K - 1)/2 pairwise trees, a knockout;
* ``one-vs-rest``      scikit-learn's OneVsRestClassifier around the tree: K trees, each
                       class against all others, every tree evaluated per prediction;
* ``multiclass tree``  one DecisionTreeClassifier on all K classes.

Data (``--datasets``, default both): ``letter`` (../shared/datasets/letter.arff: 20,000
rows x 16 integer features, 26 classes; skipped with a note where the folder is absent)
and scikit-learn's bundled ``digits`` (1,797 rows x 64 features, 10 classes). Each is split
80/20, stratified, with ``--seed``.

Per method: one untimed warm-up fit and prediction (numba's compilation or cache load),
then ``--repeats`` fits on the training rows and predictions of the held-out rows, each
timed (wall clock, gc.collect() before); reported are the held-out accuracy (the same on
every repeat: nothing is random), the median fit and predict times, the classifiers
fitted, and the classifiers a prediction evaluates (DAG: at most ceil(log2 K), and the
mean over the held-out rows; ADAG: K - 1; one-vs-rest: K; the tree: 1).

How to run (from the repository root)
-------------------------------------
    python bench/bench_dag.py --repeats 3
    python bench/bench_dag.py --datasets digits --repeats 1   # seconds

It prints a markdown section (command, machine, versions, a table).
"""

from __future__ import annotations

import argparse
import datetime
import gc
import os
import shlex
import statistics
import sys
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:  # run as a script or imported from elsewhere
    sys.path.insert(0, str(BENCH))

from gpu_tree.app.machine import machine_info  # noqa: E402

DATASETS = ("letter", "digits")
METHODS = ("DAG", "ADAG", "one-vs-rest", "multiclass tree")
TEST_SHARE = 0.2


def load(name: str):
    """X, y and a description of a data set; FileNotFoundError where letter is absent."""
    if name == "digits":
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        return X, y, "scikit-learn digits (1,797 x 64, 10 classes)"
    import _categorical_data as real_data

    dataset = real_data.load_arff("letter.arff", "class")
    X = np.ascontiguousarray(dataset.X.to_numpy(dtype=np.float64))
    return X, dataset.y, "letter.arff (20,000 x 16, 26 classes)"


def make(method: str):
    from sklearn.multiclass import OneVsRestClassifier

    from gpu_tree import DAGClassifier, DecisionTreeClassifier

    if method == "DAG":
        return DAGClassifier(kind="dag")
    if method == "ADAG":
        return DAGClassifier(kind="adag")
    if method == "one-vs-rest":
        return OneVsRestClassifier(DecisionTreeClassifier())
    return DecisionTreeClassifier()


def evaluations(model, predicted) -> tuple[str, float]:
    """(most, mean over the predicted rows) binary classifiers a prediction evaluates."""
    if hasattr(model, "evaluations_by_class_"):
        per_row = model.evaluations_by_class_[np.searchsorted(model.classes_, predicted)]
        return str(model.n_evaluations_per_prediction_), float(per_row.mean())
    if hasattr(model, "estimators_"):  # one-vs-rest: every class's tree
        return str(len(model.estimators_)), float(len(model.estimators_))
    return "1", 1.0


def timed(call):
    gc.collect()
    start = time.perf_counter()
    value = call()
    return time.perf_counter() - start, value


def measure(name: str, args) -> dict:
    from sklearn.model_selection import train_test_split

    X, y, source = load(name)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=TEST_SHARE, random_state=args.seed, stratify=y
    )
    entry = {
        "dataset": name,
        "source": source,
        "classes": len(np.unique(y)),
        "rows": (len(y_train), len(y_test)),
        "methods": [],
    }
    for method in METHODS:
        make(method).fit(X_train, y_train).predict(X_test)  # untimed warm-up
        fit_seconds, predict_seconds = [], []
        for _ in range(args.repeats):
            model = make(method)
            seconds, _ = timed(lambda m=model: m.fit(X_train, y_train))
            fit_seconds.append(seconds)
            seconds, predicted = timed(lambda m=model: m.predict(X_test))
            predict_seconds.append(seconds)
        most, mean = evaluations(model, predicted)
        entry["methods"].append(
            {
                "method": method,
                "accuracy_percent": 100.0 * float(np.mean(predicted == y_test)),
                "fit_median": statistics.median(fit_seconds),
                "predict_median": statistics.median(predict_seconds),
                "classifiers": len(getattr(model, "estimators_", [model])),
                "evaluations_most": most,
                "evaluations_mean": mean,
            }
        )
        print(f"  {name} {method}: {entry['methods'][-1]}", file=sys.stderr, flush=True)
    return entry


def table(entries) -> str:
    lines = [
        "| data | method | classifiers | evaluations per prediction (most / mean) | "
        "accuracy % | fit s | predict s |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for entry in entries:
        for m in entry["methods"]:
            lines.append(
                f"| {entry['dataset']} | {m['method']} | {m['classifiers']} | "
                f"{m['evaluations_most']} / {m['evaluations_mean']:.2f} | "
                f"{m['accuracy_percent']:.2f} | {m['fit_median']:.3f} | "
                f"{m['predict_median']:.4f} |"
            )
    return "\n".join(lines)


def markdown_section(report) -> str:
    machine = report["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in machine["versions"].items())
    lines = [
        f"## DAG and adaptive DAG, {report['date_utc']}",
        "",
        f"- Command: `{report['command']}`",
        f"- Machine: {machine['platform']}; CPU {machine['cpu_model']}; {machine['cpus']} "
        f"logical cores ({machine['usable_cores']} usable); load average at start "
        f"{machine['load_average_at_start']}",
        f"- Versions: {versions}",
        "- Trees: gpu_tree DecisionTreeClassifier() (fully grown, gini, 256 bins) in every "
        "method; DAG groups classes by gini",
        f"- Splits: stratified {1 - TEST_SHARE:.0%}/{TEST_SHARE:.0%}, seed "
        f"{report['seed']}; times: medians of {report['repeats']} after one untimed "
        "warm-up per method",
    ]
    for entry in report["datasets"]:
        lines.append(
            f"- {entry['dataset']}: {entry['source']}, {entry['rows'][0]:,} training / "
            f"{entry['rows'][1]:,} held-out rows"
        )
    lines += [f"- {note}" for note in report["notes"]]
    lines += ["", table(report["datasets"]), ""]
    return "\n".join(lines)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--datasets", default=",".join(DATASETS), help=f"from {', '.join(DATASETS)}"
    )
    parser.add_argument("--repeats", type=int, default=3, help="fits per method (median)")
    parser.add_argument("--seed", type=int, default=0, help="of the train/test split")
    args = parser.parse_args(argv)
    args.datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    unknown = set(args.datasets) - set(DATASETS)
    if unknown:
        parser.error(f"unknown data sets {sorted(unknown)}; choose from {list(DATASETS)}")
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    arguments = sys.argv[1:] if argv is None else list(argv)
    report = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python " + shlex.join([os.path.relpath(BENCH / "bench_dag.py"), *arguments]),
        "machine": machine_info(),
        "seed": args.seed,
        "repeats": args.repeats,
        "datasets": [],
        "notes": [],
    }
    for name in args.datasets:
        try:
            report["datasets"].append(measure(name, args))
        except FileNotFoundError as exc:  # ../shared/datasets is not in a fresh clone
            report["notes"].append(f"{name}: skipped ({exc})")
            print(report["notes"][-1], file=sys.stderr)
    print(markdown_section(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
