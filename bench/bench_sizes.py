"""Size sweep (issue 17, "fast at every size"): gpu_tree's CPU tree against its peers from
1,000 to 1,000,000 rows, numeric and categorical data, depth 5, 10 and fully grown.

What it measures
----------------
For every data set, training size (``--rows``, default 1k, 10k, 100k, 1M) and max_depth
(``--depths``, default 5, 10 and ``full``: fully grown), each tool grows one tree on the
same training rows and predicts the same held-out rows:

* ``gpu_tree``  gpu_tree.DecisionTreeClassifier(max_depth, max_bins=256, device="cpu"),
                categorical columns declared (binary subset splits)
* the peers of :mod:`gpu_tree.app.peers` (the project's one definition of them, as
  ``gputree bench`` and bench/bench_cpu.py use it): ``sklearn`` (scikit-learn's exact
  DecisionTreeClassifier, on one-hot columns where the data is categorical: it has no
  categorical splits), ``lightgbm`` (one round) and ``hist_gb`` (HistGradientBoosting,
  one iteration), the boosters with their own categorical splits. For more than two
  classes (nursery) a booster's one round grows one tree per class.

Data sets:

* ``higgs``    gpu_tree.datasets.make_higgs_like: 28 numeric features; ``rows`` training
               rows and rows / 4 held-out rows
* ``cat20``    synthetic: 8 categorical columns of 20 categories (3 % missing) and 4
               numeric ones; the label depends on category subsets, a threshold and 5 %
               flipped labels; ``rows`` training and rows / 4 held-out rows
* ``adult``, ``nursery``  the public data sets in ../shared/datasets (as
               bench/bench_categorical.py reads them; skipped where absent), their own
               held-out split; a training size above the data set's training rows is
               cut to all of them (marked "all"), larger sizes then left out

Every tool gets the same float matrix: categorical columns hold category codes
(0, 1, 2..., NaN for missing), coded before any timing; scikit-learn's tree gets those
columns one-hot (float32, its own type), the encoding not timed.

Reported: fit time (median of ``--repeats`` fits, wall clock, gc.collect() before each),
predict time of the held-out rows (median of ``--repeats``), test accuracy, leaves; and
per peer the ratios peer time / gpu_tree time for fit and predict (above 1: gpu_tree is
faster), measured in the same run. Each tool first fits a small slice of every data set,
untimed (numba compilation or its cache load; first-call costs of the peers). Threads:
``--n-jobs`` (default 2) for numba, LightGBM and HistGradientBoosting's OpenMP;
scikit-learn's tree is single-threaded.

A peer is skipped at a size where its fit would take more than ``--max-fit-seconds``
(default 120), projected from its fit at the previous size of the same data set and
depth (time x (rows ratio)^1.15); the table says so. A peer's repeats stop early once its
fits at one configuration have taken that long.

The grid search: ``GridSearchCV(cv=5)`` over max_depth 1..9 and None (50 fits, refit
off) on penguins (../shared/datasets/penguins.csv), gpu_tree on the DataFrame as it is
(strings, NaN; ``categorical_features=["island", "sex"]``) against scikit-learn's tree in a
Pipeline behind a OneHotEncoder (so both searches start from the same DataFrame);
median wall time of ``--repeats`` searches.

The features × sizes matrix (``--parts features``, issue 49): every case of
bench/_feature_cases.py (extra trees, a random forest, native categorical and multiway
splits on adult, oblique splits, feature costs, exact two-output trees, monotonic
constraints, Poisson, absolute error, prediction) at every ``--rows`` size, gpu_tree
against the reference a user would otherwise reach for, one after the other in this run:
median seconds of the fit (or, for prediction, of predicting the training rows), the
ratio reference / gpu_tree, the quality on held-out rows, and every figure below 1× with
the cause its profile found. Kernels are compiled at every size
(``GPU_TREE_PYTHON_KERNELS=never``). Each side first runs once untimed at each size (numba
compiles, or loads from its cache, the kernels of the paths a size takes on their first
call); a side whose fit is projected past ``--max-fit-seconds`` is skipped, gpu_tree's
too.

How to run (from the repository root)
-------------------------------------
    python bench/bench_sizes.py --quick                  # rows up to 100k, 1 repeat: minutes
    python bench/bench_sizes.py                          # the full sweep, 3 repeats
    python bench/bench_sizes.py --datasets higgs --rows 1000,10000 --depths 5 --json out.json
    python bench/bench_sizes.py --parts gridsearch       # the penguins grid search alone
    python bench/bench_sizes.py --parts features --rows 1k,10k,100k   # the features matrix

It prints a markdown section (date, machine, versions, tables); ``--markdown PATH`` also
writes it to a file, ``--json PATH`` every measurement.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import shlex
import statistics
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:  # run as a script or imported from elsewhere
    sys.path.insert(0, str(BENCH))

import _categorical_data as real_data  # noqa: E402
import _feature_cases as features  # noqa: E402
from bench_cpu import openmp_thread_limit, set_numba_threads  # noqa: E402

from gpu_tree.app.machine import machine_info  # noqa: E402
from gpu_tree.app.peers import PEERS, PeerWork  # noqa: E402

DATASETS = ("higgs", "cat20", "adult", "nursery")
SYNTHETIC = ("higgs", "cat20")
PEER_NAMES = ("sklearn", "lightgbm", "hist_gb")
PEER_SHORT = {"sklearn": "sklearn", "lightgbm": "LightGBM", "hist_gb": "HistGB"}
DEFAULT_ROWS = (1_000, 10_000, 100_000, 1_000_000)
QUICK_ROWS = (1_000, 10_000, 100_000)
DEFAULT_DEPTHS = (5, 10, None)
BINS = 256
WARMUP_ROWS = 500
GROWTH_EXPONENT = 1.15  # fit time ~ rows^1.15 (a little worse than linear): projections
GRID_DEPTHS = [1, 2, 3, 4, 5, 6, 7, 8, 9, None]
GRID_FOLDS = 5


# -- data ---------------------------------------------------------------------------------


@dataclass
class Data:
    """A data set's float matrices: category codes in ``categorical`` columns."""

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    categorical: tuple[int, ...]
    n_categories: tuple[int, ...]  # per categorical column
    description: str
    all_rows: bool = False  # X_train is every training row the data set has


def make_higgs(rows: int, seed: int) -> Data:
    from gpu_tree.datasets import make_higgs_like

    n_test = max(rows // 4, 250)
    X, y = make_higgs_like(rows + n_test, random_state=seed)
    return Data(
        "higgs",
        np.ascontiguousarray(X[:rows]),
        y[:rows],
        np.ascontiguousarray(X[rows:]),
        y[rows:],
        (),
        (),
        f"make_higgs_like(random_state={seed}): 28 numeric features",
    )


def make_cat20(rows: int, seed: int, n_categorical=8, n_categories=20, n_numeric=4) -> Data:
    """Categorical columns of ``n_categories`` codes each (3 % missing) and numeric ones;
    the label: whether a row's first two categories fall in random halves of their codes,
    XOR a numeric threshold, OR a third column's subset, with 5 % of labels flipped."""
    n_test = max(rows // 4, 250)
    n = rows + n_test
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, n_categories, size=(n, n_categorical)).astype(np.float64)
    numeric = rng.normal(size=(n, n_numeric))
    halves = [rng.permutation(n_categories)[: n_categories // 2] for _ in range(3)]
    inside = [np.isin(codes[:, k], halves[k]) for k in range(3)]
    y = ((inside[0] & inside[1]) ^ (numeric[:, 0] > 0.3)) | (inside[2] & (numeric[:, 1] > 1.0))
    y ^= rng.random(n) < 0.05
    codes[rng.random(codes.shape) < 0.03] = np.nan
    X = np.ascontiguousarray(np.hstack([codes, numeric]))
    y = y.astype(np.int64)
    return Data(
        "cat20",
        X[:rows],
        y[:rows],
        X[rows:],
        y[rows:],
        tuple(range(n_categorical)),
        (n_categories,) * n_categorical,
        f"synthetic (seed {seed}): {n_categorical} categorical columns of {n_categories} "
        f"categories (3 % missing) and {n_numeric} numeric",
    )


def load_real(name: str, seed: int):
    """The whole real data set as float matrices, categories coded over all its rows."""
    import pandas as pd

    dataset = real_data.load(name)
    X_train, y_train, X_test, y_test = dataset.parts()
    frame = pd.concat([X_train, X_test], ignore_index=True)
    columns, categorical, n_categories = [], [], []
    for j, column in enumerate(frame.columns):
        values = frame[column]
        if column in dataset.categorical:
            codes, uniques = pd.factorize(values.where(values.notna(), None), sort=True)
            columns.append(np.where(codes < 0, np.nan, codes).astype(np.float64))
            categorical.append(j)
            n_categories.append(len(uniques))
        else:
            columns.append(values.to_numpy(dtype=np.float64, na_value=np.nan))
    X = np.ascontiguousarray(np.column_stack(columns))
    n_train = len(y_train)
    order = np.random.default_rng(seed).permutation(n_train)  # training sizes: a prefix
    return Data(
        name,
        X[:n_train][order],
        y_train[order],
        X[n_train:],
        y_test,
        tuple(categorical),
        tuple(n_categories),
        f"../shared/datasets, {dataset.split}; {len(categorical)} categorical + "
        f"{X.shape[1] - len(categorical)} numeric columns",
    )


def real_at(full: Data, rows: int) -> Data:
    n = min(rows, len(full.y_train))
    return Data(
        full.name,
        np.ascontiguousarray(full.X_train[:n]),
        full.y_train[:n],
        full.X_test,
        full.y_test,
        full.categorical,
        full.n_categories,
        full.description,
        all_rows=n == len(full.y_train),
    )


def one_hot(data: Data):
    """X_train, X_test with the categorical columns one-hot (float32), for the peers
    without categorical splits; the encoder fitted on the training rows."""
    if not data.categorical:
        return data.X_train, data.X_test
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder

    encoder = ColumnTransformer(
        [("onehot", OneHotEncoder(handle_unknown="ignore"), list(data.categorical))],
        remainder="passthrough",
        sparse_threshold=0.0,
    )
    return (
        np.ascontiguousarray(encoder.fit_transform(data.X_train), dtype=np.float32),
        np.ascontiguousarray(encoder.transform(data.X_test), dtype=np.float32),
    )


# -- the tools ------------------------------------------------------------------------------


@dataclass
class Tool:
    name: str
    label: str
    make: object  # () -> unfitted model
    fit: object  # (model, X, y) -> fitted model
    one_hot: bool  # takes categorical columns one-hot
    thread_limit: object = None  # () -> context manager


def gpu_tree_tool(depth, data: Data, args) -> Tool:
    from gpu_tree import DecisionTreeClassifier

    def make():
        return DecisionTreeClassifier(
            max_depth=depth,
            max_bins=BINS,
            device="cpu",
            random_state=args.seed,
            categorical_features=list(data.categorical) or None,
        )

    return Tool("gpu_tree", "gpu_tree (hist, cpu)", make, lambda m, X, y: m.fit(X, y), False)


def peer_tool(name: str, depth, data: Data, args) -> Tool:
    peer = PEERS[name]
    one_hot_input = peer.categorical_input == "one-hot"
    work = PeerWork(
        depth=depth,
        bins=BINS,
        n_jobs=args.n_jobs,
        seed=args.seed,
        # one-hot columns are not categorical to the peer that takes them
        categorical=() if one_hot_input else data.categorical,
        rows=len(data.y_train),
    )
    limit = openmp_thread_limit(args.n_jobs) if name == "hist_gb" else None
    return Tool(
        name,
        peer.label,
        lambda: peer.make(work),
        lambda m, X, y: peer.fit(m, X, y, work),
        one_hot_input and bool(data.categorical),
        limit,
    )


# -- timing ---------------------------------------------------------------------------------


@dataclass
class Measured:
    tool: str
    status: str = "ok"  # or why it did not run
    fit_seconds: list = field(default_factory=list)
    predict_seconds: list = field(default_factory=list)
    accuracy_percent: float | None = None
    leaves: int | None = None
    depth: int | None = None

    @property
    def fit(self):
        return statistics.median(self.fit_seconds) if self.fit_seconds else None

    @property
    def predict(self):
        return statistics.median(self.predict_seconds) if self.predict_seconds else None


def timed(call):
    gc.collect()
    start = time.perf_counter()
    value = call()
    return time.perf_counter() - start, value


def threads_of(tool: Tool):
    return tool.thread_limit() if tool.thread_limit else nullcontext()


def measure(tool: Tool, X_train, y_train, X_test, y_test, args) -> Measured:
    out = Measured(tool.name)
    model = None
    with threads_of(tool):
        for _ in range(args.repeats):
            model = None  # free the previous fit first
            model = tool.make()
            seconds, _ = timed(lambda m=model: tool.fit(m, X_train, y_train))
            out.fit_seconds.append(seconds)
            if sum(out.fit_seconds) > args.max_fit_seconds:
                break  # enough: the median of what ran
        predicted = None
        for _ in range(len(out.fit_seconds)):
            seconds, predicted = timed(lambda: model.predict(X_test))
            out.predict_seconds.append(seconds)
    out.accuracy_percent = 100.0 * float(np.mean(np.asarray(predicted) == y_test))
    try:
        out.leaves, out.depth = (int(v) for v in _tree_shape(tool, model))
    except Exception as exc:  # the shape is a nicety
        print(f"    {tool.name}: could not read the tree's shape ({exc})", file=sys.stderr)
    return out


def _tree_shape(tool: Tool, model):
    if tool.name == "gpu_tree":
        return model.get_n_leaves(), model.get_depth()
    return PEERS[tool.name].tree_shape(model)


def warm_up(tool: Tool, data: Data, encoded) -> None:
    X, X_test = encoded if tool.one_hot else (data.X_train, data.X_test)
    n = min(WARMUP_ROWS, len(data.y_train))
    model = tool.make()
    with threads_of(tool):
        tool.fit(model, X[:n], data.y_train[:n])
        model.predict(X_test[:n])


def projected_seconds(history: list, rows: int) -> float:
    """A fit's time at ``rows`` from the last (rows, seconds) measured."""
    if not history:
        return 0.0
    last_rows, last_seconds = history[-1]
    return last_seconds * (rows / last_rows) ** GROWTH_EXPONENT


def depth_label(depth) -> str:
    return "full" if depth is None else str(depth)


def sweep_dataset(name: str, args) -> tuple[list[dict], str]:
    """The sweep's entries for one data set, and the data set in words."""
    full = load_real(name, args.seed) if name not in SYNTHETIC else None
    rows_list = []
    for rows in args.rows:
        if full is not None and rows > len(full.y_train):
            rows = len(full.y_train)
            if rows in rows_list:
                continue
        rows_list.append(rows)
    history = {}  # (tool, depth) -> [(rows, fit seconds)]
    warmed = set()
    entries = []
    for rows in rows_list:
        if name == "higgs":
            data = make_higgs(rows, args.seed)
        elif name == "cat20":
            data = make_cat20(rows, args.seed)
        else:
            data = real_at(full, rows)
        needs_one_hot = bool(data.categorical) and any(
            PEERS[p].categorical_input == "one-hot" for p in args.peers
        )
        encoded = one_hot(data) if needs_one_hot else (data.X_train, data.X_test)
        print(
            f"{name}: {len(data.y_train):,} training rows, {len(data.y_test):,} held out, "
            f"{data.X_train.shape[1]} columns ({encoded[0].shape[1]} one-hot)",
            file=sys.stderr,
            flush=True,
        )
        for depth in args.depths:
            tools = [gpu_tree_tool(depth, data, args)]
            tools += [peer_tool(p, depth, data, args) for p in args.peers]
            results = {}
            for tool in tools:
                key = (tool.name, depth)
                projected = projected_seconds(history.get(key, []), rows)
                if tool.name != "gpu_tree" and projected > args.max_fit_seconds:
                    results[tool.name] = Measured(
                        tool.name,
                        status=f"skipped: a fit projected at {projected:.0f} s "
                        f"(> --max-fit-seconds {args.max_fit_seconds:g})",
                    )
                    print(f"  {tool.name}: {results[tool.name].status}", file=sys.stderr)
                    continue
                if (tool.name, depth) not in warmed:
                    warm_up(tool, data, encoded)
                    warmed.add((tool.name, depth))
                X_train, X_test = encoded if tool.one_hot else (data.X_train, data.X_test)
                try:
                    result = measure(tool, X_train, data.y_train, X_test, data.y_test, args)
                except Exception as exc:  # a peer failing is reported, not fatal
                    result = Measured(tool.name, status=f"failed: {type(exc).__name__}: {exc}")
                results[tool.name] = result
                if result.fit is not None:
                    history.setdefault(key, []).append((rows, result.fit))
                print(
                    f"  depth {depth_label(depth)} {tool.name}: "
                    + (
                        f"fit {result.fit:.4f} s, predict {result.predict:.4f} s, "
                        f"accuracy {result.accuracy_percent:.2f} %, {result.leaves} leaves"
                        if result.status == "ok"
                        else result.status
                    ),
                    file=sys.stderr,
                    flush=True,
                )
            entries.append(entry(data, depth, results))
    held_out = "" if full is not None else "; rows / 4 held out"
    return entries, data.description + held_out


def entry(data: Data, depth, results: dict) -> dict:
    ours = results["gpu_tree"]
    tools = {}
    for name, r in results.items():
        item = {
            "status": r.status,
            "fit_seconds": r.fit_seconds,
            "predict_seconds": r.predict_seconds,
            "fit_median_seconds": r.fit,
            "predict_median_seconds": r.predict,
            "accuracy_percent": r.accuracy_percent,
            "leaves": r.leaves,
            "depth": r.depth,
        }
        if name != "gpu_tree" and r.status == "ok" and ours.status == "ok":
            item["fit_ratio"] = r.fit / ours.fit  # above 1: gpu_tree is faster
            item["predict_ratio"] = r.predict / ours.predict
            item["accuracy_diff_pp"] = ours.accuracy_percent - r.accuracy_percent
        tools[name] = item
    return {
        "dataset": data.name,
        "rows": int(len(data.y_train)),
        "all_rows": data.all_rows,
        "test_rows": int(len(data.y_test)),
        "features": int(data.X_train.shape[1]),
        "categorical_columns": list(data.categorical),
        "max_depth": depth_label(depth),
        "tools": tools,
    }


# -- the features × sizes matrix --------------------------------------------------------


def feature_data(kind: str, rows: int, args, adult: list) -> Data:
    """The data of :mod:`_feature_cases`' kinds at ``rows`` training rows (adult: all its
    rows at most; ``adult`` caches the whole set, read once)."""
    if kind == "adult":
        if not adult:
            adult.append(load_real("adult", args.seed))
        return real_at(adult[0], rows)
    data = make_higgs(rows, args.seed)
    if kind == "counts":
        data.y_train = features.counts_target(data.X_train, args.seed)
        data.y_test = features.counts_target(data.X_test, args.seed + 1)
    elif kind == "two_labels":
        data.y_train = np.column_stack([data.y_train, features.second_label(data.X_train)])
        data.y_test = np.column_stack([data.y_test, features.second_label(data.X_test)])
    return data


def measure_case(case, make, data: Data, args) -> Measured:
    """Median fit (or predict) seconds of ``args.repeats`` runs after one untimed run at
    the same size (numba compiles a kernel for the paths a size takes, or loads it from
    its cache, on the first call: not the work measured here), and the model's quality
    on the held-out rows."""
    out = Measured(case.name)
    model = make(data, args).fit(data.X_train, data.y_train)
    model.predict(data.X_train)
    for _ in range(args.repeats):
        if case.timed == "fit":
            model = None
            model = make(data, args)
            seconds, _ = timed(lambda m=model: m.fit(data.X_train, data.y_train))
        else:
            seconds, _ = timed(lambda m=model: m.predict(data.X_train))
        out.fit_seconds.append(seconds)
        if sum(out.fit_seconds) > args.max_fit_seconds:
            break
    out.accuracy_percent = features.quality(model, data.X_test, data.y_test, case.regression)
    return out


def feature_matrix(args) -> list[dict]:
    """Every case of :data:`_feature_cases.CASES` at every size: gpu_tree's and its
    reference's median seconds, measured one after the other in this run."""
    # Kernels compiled at every size: a small fit may otherwise run a kernel that has no
    # compiled code yet as Python (kernels/python_mode.py), a fresh install's first
    # minutes, not the steady state measured here.
    os.environ["GPU_TREE_PYTHON_KERNELS"] = "never"
    adult = []
    entries = []
    for case in features.CASES:
        if args.cases and case.key not in args.cases:
            continue
        history = {"gpu_tree": [], "reference": []}
        sizes_done = set()
        for rows in args.rows:
            try:
                data = feature_data(case.data, rows, args, adult)
            except FileNotFoundError as exc:
                print(f"{case.name}: skipped ({exc})", file=sys.stderr)
                break
            n = len(data.y_train)
            if n in sizes_done:
                continue
            sizes_done.add(n)
            results = {}
            for side, make in (("gpu_tree", case.ours), ("reference", case.theirs)):
                projected = projected_seconds(history[side], n)
                if projected > args.max_fit_seconds:
                    results[side] = Measured(side, status=f"skipped: projected {projected:.0f} s")
                    continue
                try:
                    results[side] = measure_case(case, make, data, args)
                except Exception as exc:  # a failure is reported, not fatal
                    results[side] = Measured(side, status=f"failed: {type(exc).__name__}: {exc}")
                if results[side].fit is not None:
                    history[side].append((n, results[side].fit))
            ours, theirs = results["gpu_tree"], results["reference"]
            ratio = theirs.fit / ours.fit if ours.fit and theirs.fit else None
            entries.append(
                {
                    "case": case.name,
                    "key": case.key,
                    "reference": case.reference,
                    "timed": case.timed,
                    "rows": n,
                    "all_rows": data.all_rows,
                    "gpu_tree_seconds": ours.fit_seconds,
                    "reference_seconds": theirs.fit_seconds,
                    "gpu_tree_status": ours.status,
                    "reference_status": theirs.status,
                    "ratio": ratio,
                    "quality": "R² %" if case.regression else "accuracy %",
                    "gpu_tree_quality": ours.accuracy_percent,
                    "reference_quality": theirs.accuracy_percent,
                    "cause": case.cause,
                }
            )
            print(
                f"{case.name}, {n:,} rows: gpu_tree {_seconds(ours.fit)}, reference "
                f"{_seconds(theirs.fit)}"
                + (f", {ratio:.2f}x" if ratio else f" ({ours.status}; {theirs.status})"),
                file=sys.stderr,
                flush=True,
            )
    return entries


def feature_table(entries: list[dict]) -> str:
    lines = [
        "| feature | reference | rows | timed | gpu_tree | reference | ratio | quality: ours / ref |",
        "|---|---|---:|---|---:|---:|---:|---|",
    ]
    for e in entries:
        ours = statistics.median(e["gpu_tree_seconds"]) if e["gpu_tree_seconds"] else None
        theirs = statistics.median(e["reference_seconds"]) if e["reference_seconds"] else None
        ratio = "-" if e["ratio"] is None else f"{e['ratio']:.2f}x"
        quality = "-"
        if e["gpu_tree_quality"] is not None and e["reference_quality"] is not None:
            quality = f"{e['gpu_tree_quality']:.2f} / {e['reference_quality']:.2f} {e['quality']}"
        rows = f"{e['rows']:,}" + (" (all)" if e["all_rows"] else "")
        lines.append(
            f"| {e['case']} | {e['reference']} | {rows} | {e['timed']} | {_seconds(ours)} | "
            f"{_seconds(theirs)} | {ratio} | {quality} |"
        )
    return "\n".join(lines)


def unmet_lines(entries: list[dict]) -> list[str]:
    """Each figure below 1× (gpu_tree slower than its reference), with its cause."""
    return [
        f"{e['case']}, {e['rows']:,} rows: {e['ratio']:.2f}x"
        + (f"; cause: {e['cause']}" if e["cause"] else "; cause: not yet profiled")
        for e in entries
        if e["ratio"] is not None and e["ratio"] < 1.0
    ]


# -- the penguins grid search --------------------------------------------------------------


def grid_search(args) -> dict:
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import Pipeline

    from gpu_tree import DecisionTreeClassifier

    dataset = real_data.load("penguins")
    X, y = dataset.X, dataset.y
    ours = DecisionTreeClassifier(device="cpu", categorical_features=dataset.categorical)
    theirs = Pipeline(
        [
            ("onehot", real_data.one_hot_encoder(dataset)),
            ("tree", PEERS["sklearn"].make(PeerWork(depth=None, seed=args.seed))),
        ]
    )
    searches = {
        "gpu_tree": (ours, {"max_depth": GRID_DEPTHS}, X),
        "sklearn": (theirs, {"tree__max_depth": GRID_DEPTHS}, X),
    }
    report = {
        "dataset": "penguins",
        "rows": int(len(y)),
        "folds": GRID_FOLDS,
        "candidates": len(GRID_DEPTHS),
        "fits": GRID_FOLDS * len(GRID_DEPTHS),
        "tools": {},
    }
    for name, (estimator, grid, data) in searches.items():
        search = GridSearchCV(estimator, grid, cv=GRID_FOLDS, refit=False, n_jobs=1)
        search.fit(data, y)  # warm-up: compilation, imports
        seconds = [timed(lambda s=search, d=data: s.fit(d, y))[0] for _ in range(args.repeats)]
        report["tools"][name] = {
            "seconds": seconds,
            "median_seconds": statistics.median(seconds),
            "best_params": {k: v for k, v in search.best_params_.items()},
            "best_cv_accuracy_percent": 100.0 * float(search.best_score_),
        }
        print(f"  grid search {name}: {statistics.median(seconds):.3f} s", file=sys.stderr)
    tools = report["tools"]
    tools["sklearn"]["ratio"] = (
        tools["sklearn"]["median_seconds"] / tools["gpu_tree"]["median_seconds"]
    )
    return report


# -- reporting ------------------------------------------------------------------------------


def _seconds(value) -> str:
    if value is None:
        return "-"
    return f"{value * 1e3:.1f} ms" if value < 1 else f"{value:.2f} s"


def _ratio_cell(item: dict | None, key: str) -> str:
    if item is None:
        return "-"
    if item["status"] != "ok":
        return "skipped" if item["status"].startswith("skipped") else "failed"
    return f"{item[key]:.2f}x"


def sweep_header(peers) -> list[str]:
    header = ["data", "rows", "depth", "gpu_tree fit", "gpu_tree predict", "leaves", "acc %"]
    for p in peers:
        header += [f"{PEER_SHORT[p]} fit ×", f"{PEER_SHORT[p]} predict ×"]
    if "sklearn" in peers:
        header.append("Δacc vs sklearn pp")
    return header


def sweep_table(entries: list[dict], peers) -> str:
    header = sweep_header(peers)
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|",
    ]
    for e in entries:
        ours = e["tools"]["gpu_tree"]
        rows = f"{e['rows']:,}" + (" (all)" if e["all_rows"] else "")
        cells = [
            e["dataset"],
            rows,
            e["max_depth"],
            _seconds(ours["fit_median_seconds"]),
            _seconds(ours["predict_median_seconds"]),
            "-" if ours["leaves"] is None else str(ours["leaves"]),
            "-" if ours["accuracy_percent"] is None else f"{ours['accuracy_percent']:.2f}",
        ]
        for p in peers:
            item = e["tools"].get(p)
            cells += [_ratio_cell(item, "fit_ratio"), _ratio_cell(item, "predict_ratio")]
        if "sklearn" in peers:
            item = e["tools"].get("sklearn")
            ok = item is not None and item["status"] == "ok"
            cells.append(f"{item['accuracy_diff_pp']:+.2f}" if ok else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def skipped_lines(entries: list[dict]) -> list[str]:
    lines = []
    for e in entries:
        for name, item in e["tools"].items():
            if item["status"] != "ok":
                lines.append(
                    f"{e['dataset']}, {e['rows']:,} rows, depth {e['max_depth']}: "
                    f"{PEERS[name].label if name in PEERS else name}: {item['status']}"
                )
    return lines


def grid_table(report: dict) -> str:
    lines = [
        "| tool | search s (median) | ratio vs gpu_tree | best max_depth | best CV acc % |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, item in report["tools"].items():
        depth = next(iter(item["best_params"].values()))
        ratio = item.get("ratio")
        lines.append(
            f"| {name} | {item['median_seconds']:.3f} | "
            + ("1" if name == "gpu_tree" else f"{ratio:.2f}x")
            + f" | {depth_label(depth)} | {item['best_cv_accuracy_percent']:.2f} |"
        )
    return "\n".join(lines)


def markdown_section(report: dict) -> str:
    machine = report["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in machine["versions"].items())
    args = report["args"]
    lines = [
        f"## Size sweep, {report['date_utc']}",
        "",
        f"- Command: `{report['command']}`",
        f"- Machine: {machine['platform']}; CPU {machine['cpu_model']}; {machine['cpus']} "
        f"logical cores ({machine['usable_cores']} usable); load average at start "
        f"{machine['load_average_at_start']}; {args['n_jobs']} threads for numba, LightGBM "
        "and HistGradientBoosting, scikit-learn's tree single-threaded",
        f"- Versions: {versions}",
        f"- Fit and predict times: median of up to {args['repeats']} (a tool's repeats stop "
        f"once its fits at one configuration took {args['max_fit_seconds']:g} s), after one "
        "untimed warm-up fit per tool and data set; predict is the held-out rows",
    ]
    if report.get("sweep"):
        lines += [
            "- Peers (gpu_tree.app.peers): "
            + "; ".join(f"{PEER_SHORT[p]} = {PEERS[p].label}" for p in args["peers"])
            + "; ratios are the peer's time / gpu_tree's (above 1: gpu_tree is faster); "
            "scikit-learn's tree gets categorical columns one-hot (encoding not timed), "
            "the boosters their codes declared categorical; for more than two classes a "
            "booster's one round grows a tree per class",
            "- Data: " + "; ".join(f"{name}: {text}" for name, text in report["data"].items()),
            "",
            sweep_table(report["sweep"], args["peers"]),
            "",
        ]
        skipped = skipped_lines(report["sweep"])
        if skipped:
            lines += ["Not measured:", "", *[f"- {line}" for line in skipped], ""]
    if report.get("features"):
        lines += [
            "",
            "Features × sizes: each gpu_tree feature against the reference a user would "
            "otherwise reach for (bench/_feature_cases.py), measured one after the other; "
            "ratio = reference seconds / gpu_tree seconds (above 1: gpu_tree is faster); "
            "quality on the held-out rows:",
            "",
            feature_table(report["features"]),
            "",
        ]
        unmet = unmet_lines(report["features"])
        if unmet:
            lines += ["Below 1×:", "", *[f"- {line}" for line in unmet], ""]
    if report.get("grid_search"):
        grid = report["grid_search"]
        lines += [
            "",
            f"Penguins grid search: GridSearchCV(cv={grid['folds']}) over max_depth "
            f"1..9 and None ({grid['fits']} fits, refit off, {grid['rows']} rows); gpu_tree "
            "on the DataFrame with categorical_features=['island', 'sex'], scikit-learn's "
            "tree in a Pipeline behind a OneHotEncoder:",
            "",
            grid_table(grid),
            "",
        ]
    return "\n".join(lines) + "\n"


# -- main -----------------------------------------------------------------------------------


_SIZE_SUFFIXES = {"k": 1_000, "m": 1_000_000}


def _row_count(text: str) -> int:
    """One size from --rows: a number, optionally with k (thousands) or M (millions)."""
    text = text.strip()
    scale = _SIZE_SUFFIXES.get(text[-1:].lower(), 1)
    number = text[:-1] if scale != 1 else text
    try:
        rows = int(float(number) * scale)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a row count: {text!r} (try 1000, 10k or 1M)"
        ) from None
    if rows < 1:
        raise argparse.ArgumentTypeError(f"row counts must be positive, got {text!r}")
    return rows


def _int_list(text: str) -> list[int]:
    return [_row_count(v) for v in text.split(",") if v.strip()]


def _depth_list(text: str) -> list:
    return [None if v.strip() in ("full", "none", "None") else int(v) for v in text.split(",")]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", help="training sizes, comma list (default 1k,10k,100k,1M)")
    parser.add_argument("--depths", default="5,10,full", help="max_depth values; full: none")
    parser.add_argument("--datasets", default=",".join(DATASETS), help=f"from {DATASETS}")
    parser.add_argument("--peers", default=",".join(PEER_NAMES), help=f"from {PEER_NAMES}")
    parser.add_argument("--repeats", type=int, default=3, help="fits per tool (median)")
    parser.add_argument(
        "--quick", action="store_true", help="rows up to 100k, 1 repeat (a few minutes)"
    )
    parser.add_argument("--max-fit-seconds", type=float, default=120.0)
    parser.add_argument("--parts", default="sweep,gridsearch", help="sweep, gridsearch, features")
    parser.add_argument(
        "--cases",
        help="the features part's cases, comma list (default all): "
        + ", ".join(c.key for c in features.CASES),
    )
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="PATH", help="write every measurement as JSON")
    parser.add_argument("--markdown", metavar="PATH", help="also write the section here")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats = 1
    try:
        args.rows = (
            _int_list(args.rows) if args.rows else list(QUICK_ROWS if args.quick else DEFAULT_ROWS)
        )
    except argparse.ArgumentTypeError as error:
        parser.error(f"--rows: {error}")
    try:
        args.depths = _depth_list(args.depths)
    except ValueError:
        parser.error(f"--depths wants integers or 'full', got {args.depths!r}")
    args.datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    args.peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    args.parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    args.cases = [c.strip() for c in (args.cases or "").split(",") if c.strip()]
    for what, chosen, allowed in [
        ("data sets", args.datasets, DATASETS),
        ("peers", args.peers, PEER_NAMES),
        ("parts", args.parts, ("sweep", "gridsearch", "features")),
        ("cases", args.cases, [c.key for c in features.CASES]),
    ]:
        unknown = set(chosen) - set(allowed)
        if unknown:
            parser.error(f"unknown {what} {sorted(unknown)}; choose from {list(allowed)}")
    if args.repeats < 1 or not args.rows or min(args.rows) < 10:
        parser.error("--repeats must be at least 1 and --rows at least 10")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    command = "python " + shlex.join([os.path.relpath(sys.argv[0]), *sys.argv[1:]])
    threads = set_numba_threads(args.n_jobs)
    missing = [p for p in args.peers if not PEERS[p].available()]
    for name in missing:
        print(f"{PEERS[name].label}: not installed, left out", file=sys.stderr)
    args.peers = [p for p in args.peers if p not in missing]
    report = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": command,
        "machine": machine_info(),
        "threads": {"requested": args.n_jobs, "numba": threads},
        "args": {
            "rows": args.rows,
            "depths": [depth_label(d) for d in args.depths],
            "datasets": args.datasets,
            "peers": args.peers,
            "repeats": args.repeats,
            "max_fit_seconds": args.max_fit_seconds,
            "n_jobs": args.n_jobs,
            "seed": args.seed,
            "quick": args.quick,
        },
        "peer_labels": {p: PEERS[p].label for p in args.peers},
        "not_installed": missing,
        "data": {},
        "sweep": [],
        "skipped_datasets": {},
        "grid_search": None,
        "features": [],
    }
    if "sweep" in args.parts:
        for name in args.datasets:
            try:
                entries, description = sweep_dataset(name, args)
            except FileNotFoundError as exc:  # ../shared/datasets is not in a fresh clone
                report["skipped_datasets"][name] = str(exc)
                print(f"{name}: skipped ({exc})", file=sys.stderr)
                continue
            report["sweep"] += entries
            report["data"][name] = description
    if "gridsearch" in args.parts:
        try:
            report["grid_search"] = grid_search(args)
        except FileNotFoundError as exc:
            report["skipped_datasets"]["penguins"] = str(exc)
            print(f"penguins grid search: skipped ({exc})", file=sys.stderr)
    if "features" in args.parts:
        report["features"] = feature_matrix(args)
    if not report["sweep"] and not report["grid_search"] and not report["features"]:
        print("nothing measured (no data set found)", file=sys.stderr)
        return 1
    section = markdown_section(report)
    print(section)
    if args.markdown:
        Path(args.markdown).write_text(section)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
