"""Categorical features on real data: gpu_tree's native splits against one-hot encoding.

What it measures
----------------
Seven public data sets with categorical columns, read in place from ``../shared/datasets``
beside the checkout by ``bench/_categorical_data.py`` (the loaders the tests use too):
adult, mushroom, car_evaluation, nursery, titanic, penguins, hypothyroid. Adult is scored
on its own test file, the others on a stratified 70/30 split with seed 0. For every
data set and ``--depths`` value, each model grows one tree of that max_depth:

* ``native``     gpu_tree.DecisionTreeClassifier(categorical_features=<the categorical
                 columns>, device="cpu"), binary subset splits, gini; the DataFrame as is
                 (strings, missing as None/NaN; numeric columns in 256 quantile bins)
* ``multiway``   the same with categorical_split="multiway", criterion="gain_ratio" (ID3
                 branches); only on data sets whose features are all categorical
* ``one-hot``    scikit-learn's DecisionTreeClassifier(random_state=0), exact splitter, on
                 OneHotEncoder(handle_unknown="ignore") columns (missing is its own
                 indicator) plus the numeric columns with their NaN

For each: test accuracy, its difference to the one-hot tree's (percentage points), leaves,
depth, and fit time (median of ``--repeats`` fits, wall clock, gc.collect() before each).
gpu_tree's fit time includes learning the categories and coding the DataFrame; the
one-hot tree's excludes the encoding, whose time (fit_transform on the training rows,
median) is in its own column. Each model first fits once untimed per data set (numba
compilation or its cache load). gpu_tree runs ``--n-jobs`` numba threads (default 2);
scikit-learn's tree is single-threaded.

How to run (from the repository root)
-------------------------------------
    python bench/bench_categorical.py                       # depths 4,6,8, 3 repeats
    python bench/bench_categorical.py --datasets car_evaluation,penguins --depths 6
    python bench/bench_categorical.py --out bench/out/categorical.md

It prints a markdown section (date, machine, versions, table) ready for bench/RESULTS.md;
``--out`` also writes it to a file.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import statistics
import sys
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:  # run as a module or imported from elsewhere
    sys.path.insert(0, str(BENCH))

import _categorical_data as data_sets  # noqa: E402
from bench_cpu import set_numba_threads, timed  # noqa: E402

from gpu_tree.app.machine import cpu_model, module_version  # noqa: E402
from gpu_tree.app.peers import PEERS, PeerWork  # noqa: E402

MODELS = ("native", "multiway", "one-hot")
MODEL_LABELS = {
    "native": "gpu_tree native (binary)",
    "multiway": "gpu_tree multiway, gain_ratio",
    "one-hot": "sklearn one-hot",
}
TABLE_HEADER = [
    "data set",
    "max_depth",
    "model",
    "test acc %",
    "Δacc vs one-hot pp",
    "leaves",
    "depth",
    "fit s (median)",
    "one-hot encode s",
]


def make_model(model: str, dataset, depth: int):
    if model == "one-hot":  # scikit-learn's tree, as every benchmark runs it
        return PEERS["sklearn"].make(PeerWork(depth=depth))
    from gpu_tree import DecisionTreeClassifier

    params = dict(max_depth=depth, categorical_features=dataset.categorical, device="cpu")
    if model == "multiway":
        params |= dict(categorical_split="multiway", criterion="gain_ratio")
    return DecisionTreeClassifier(**params)


def median_time(call, repeats: int) -> tuple[float, object]:
    results = [timed(call) for _ in range(repeats)]
    return statistics.median(seconds for seconds, _ in results), results[-1][1]


def bench_dataset(name: str, args) -> list[dict]:
    dataset = data_sets.load(name)
    X_train, y_train, X_test, y_test = dataset.parts()
    data_sets.one_hot(dataset, X_train, X_test)  # warm-up (imports, first calls)
    encode_seconds, (H_train, H_test) = median_time(
        lambda: data_sets.one_hot(dataset, X_train, X_test), args.repeats
    )
    inputs = {
        "native": (X_train, X_test),
        "multiway": (X_train, X_test),
        "one-hot": (H_train, H_test),
    }
    models = [m for m in MODELS if m != "multiway" or dataset.all_categorical]
    print(
        f"{name}: {len(y_train):,} train / {len(y_test):,} test rows, "
        f"{len(dataset.categorical)} categorical + {len(dataset.numeric)} numeric features "
        f"({H_train.shape[1]} after one-hot); {dataset.split}",
        file=sys.stderr,
        flush=True,
    )
    rows = []
    for model_name in models:
        train, test = inputs[model_name]
        make_model(model_name, dataset, args.depths[0]).fit(train, y_train)  # warm-up
        for depth in args.depths:
            seconds, model = median_time(
                lambda d=depth, m=model_name, t=train: make_model(m, dataset, d).fit(t, y_train),
                args.repeats,
            )
            rows.append(
                {
                    "dataset": name,
                    "depth_limit": depth,
                    "model": model_name,
                    "accuracy_percent": 100.0 * float(np.mean(model.predict(test) == y_test)),
                    "leaves": int(model.get_n_leaves()),
                    "depth": int(model.get_depth()),
                    "fit_seconds": seconds,
                    "encode_seconds": encode_seconds if model_name == "one-hot" else None,
                }
            )
            print(f"  {model_name} depth {depth}: fit {seconds:.3f} s", file=sys.stderr)
    for row in rows:
        reference = next(
            r for r in rows if r["model"] == "one-hot" and r["depth_limit"] == row["depth_limit"]
        )
        row["accuracy_diff_pp"] = row["accuracy_percent"] - reference["accuracy_percent"]
    order = {m: i for i, m in enumerate(MODELS)}
    return sorted(rows, key=lambda r: (r["depth_limit"], order[r["model"]]))


def markdown_table(rows: list[dict]) -> str:
    lines = [
        "| " + " | ".join(TABLE_HEADER) + " |",
        "|" + "|".join(["---"] * 3 + ["---:"] * (len(TABLE_HEADER) - 3)) + "|",
    ]
    for r in rows:
        cells = [
            r["dataset"],
            str(r["depth_limit"]),
            MODEL_LABELS[r["model"]],
            f"{r['accuracy_percent']:.2f}",
            "0" if r["model"] == "one-hot" else f"{r['accuracy_diff_pp']:+.2f}",
            str(r["leaves"]),
            str(r["depth"]),
            f"{r['fit_seconds']:.3f}",
            "-" if r["encode_seconds"] is None else f"{r['encode_seconds']:.3f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown_section(rows: list[dict], args, command: str, threads: int) -> str:
    date_utc = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    versions = ", ".join(
        f"{label} {module_version(module)}"
        for label, module in [
            ("numpy", "numpy"),
            ("numba", "numba"),
            ("pandas", "pandas"),
            ("scikit-learn", "sklearn"),
            ("gpu_tree", "gpu_tree"),
        ]
    )
    lines = [
        f"## Categorical features on real data, {date_utc}",
        "",
        f"- Command: `{command}`",
        f"- Machine: {platform.platform()}; CPU {cpu_model()}; {os.cpu_count()} logical cores "
        f"({usable} usable); load average {[round(x, 2) for x in os.getloadavg()]}; "
        f"gpu_tree on {threads} numba threads, scikit-learn's tree single-threaded",
        f"- Versions: Python {platform.python_version()}, {versions}",
        "- Data: ../shared/datasets (MANIFEST.md); adult scored on adult_test.csv, the others "
        f"on a stratified {1 - data_sets.TEST_SIZE:.0%}/{data_sets.TEST_SIZE:.0%} split "
        f"(seed {data_sets.SEED}); missing values kept (NaN/None, learned by both trees)",
        "- Models: gpu_tree `categorical_features=<categorical columns>` with binary subset "
        "splits (gini), and `categorical_split='multiway', criterion='gain_ratio'` where every "
        "feature is categorical; scikit-learn's exact tree on OneHotEncoder("
        "handle_unknown='ignore') columns plus numeric columns (random_state=0)",
        f"- Fit time: median of {args.repeats} fits after one untimed warm-up fit per model "
        "and data set; gpu_tree's includes its category coding, the one-hot tree's excludes "
        "the encoding (own column)",
        "",
        markdown_table(rows),
        "",
    ]
    return "\n".join(lines)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", default="4,6,8", help="comma list of max_depth values")
    parser.add_argument("--repeats", type=int, default=3, help="timed fits per model (median)")
    parser.add_argument(
        "--datasets",
        default=",".join(data_sets.DATASETS),
        help=f"comma list from {','.join(data_sets.DATASETS)}",
    )
    parser.add_argument("--n-jobs", type=int, default=2, help="numba threads for gpu_tree")
    parser.add_argument("--out", metavar="PATH.md", help="also write the markdown section here")
    args = parser.parse_args(argv)
    try:
        args.depths = [int(d) for d in args.depths.split(",") if d.strip()]
    except ValueError:
        parser.error(f"--depths wants integers, got {args.depths!r}")
    if not args.depths or min(args.depths) < 1:
        parser.error("--depths wants at least one depth, each at least 1")
    args.datasets = [n.strip() for n in args.datasets.split(",") if n.strip()]
    unknown = set(args.datasets) - set(data_sets.DATASETS)
    if unknown:
        parser.error(f"unknown data sets {sorted(unknown)}; choose from {data_sets.DATASETS}")
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    command = "python " + shlex.join([os.path.relpath(sys.argv[0]), *sys.argv[1:]])
    threads = set_numba_threads(args.n_jobs)
    rows = []
    for name in args.datasets:
        try:
            rows += bench_dataset(name, args)
        except FileNotFoundError as exc:  # ../shared/datasets is not in a fresh clone
            print(f"{name}: skipped ({exc})", file=sys.stderr)
    if not rows:
        print("no data set found; nothing to report", file=sys.stderr)
        return 1
    section = markdown_section(rows, args, command, threads)
    print(section)
    if args.out:
        Path(args.out).write_text(section)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
