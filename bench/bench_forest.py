"""Random forests: gpu_tree.RandomForestClassifier against scikit-learn's, LightGBM's,
XGBoost's and cuML's random forests, on the same rows, with the same trees asked of each.

What it measures
----------------
Data: ``gpu_tree.datasets.make_higgs_like`` (``--features`` float features, default 28,
binary label), ``--rows`` training rows (10k, 1M...) and rows / 4 more held out (a 20 %
test split of the whole), generated once with ``--seed``.

Tools (``--tools``, default every one installed; a missing library is left out with a
note):

* ``gpu_tree``  gpu_tree.RandomForestClassifier(n_estimators=--trees, max_depth=--depth,
                max_features=--max-features, max_bins=256, device=--device,
                n_jobs=--n-jobs): bootstrap samples, features drawn per node;
* the forest peers of :data:`gpu_tree.app.peers.FOREST_PEERS` (their one definition):
  ``sklearn`` (RandomForestClassifier, exact splits, bootstrap), ``lightgbm``
  (boosting_type="rf": one round of --trees trees on 63.2 % subsamples),
  ``xgboost`` (XGBRFClassifier, hist: one round of --trees parallel trees on 63.2 %
  subsamples; on the GPU for ``--device cuda`` where its build has CUDA) and ``cuml``
  (RandomForestClassifier on the GPU, where cuML imports). Every tool draws as many
  features per node as scikit-learn reads ``--max-features`` (sqrt of 28: 5), the
  boosters through the fraction that gives that count; all grow depth ``--depth`` trees
  with no minimum leaf size, on 256 bins where they bin.

Each tool first fits two forests of 2 trees, untimed: on 1,000 of the rows, then on all of
them (numba's compilation or its cache load at the timed sizes, CUDA set-up, the peers'
first-call costs). Then ``--repeats`` times:
a fresh forest is fitted on the training rows and predicts the held-out rows, each timed
(wall clock, gc.collect() before). Reported: the median fit and predict times, the
ratios peer time / gpu_tree time measured in the same run (above 1: gpu_tree is faster),
and gpu_tree's ``n_batches_`` (how many batches its trees grew in, each batch's levels in
one histogram pass); with ``--accuracy`` also each tool's accuracy on the held-out rows.
Threads: ``--n-jobs`` (default: the usable cores) for every CPU tool.

``--extra-trees``: extremely randomised trees instead, gpu_tree.ExtraTreesClassifier
against scikit-learn's ExtraTreesClassifier (the one peer that has them), both with the
settings above and every row per tree (their default, no bootstrap).

``--datasets [NAMES]``: instead of the timing above, accuracy on real data read in place
from ../shared/datasets (skipped, with a note, where that folder is absent): ``higgs``
(the 7,000 + 500-row HIGGS sample of LightGBM's examples, one table), ``adult`` and
``letter``, through the loaders bench/_categorical_data.py gives the other benchmarks
(higgs through gpu_tree.app.data_io's reader). For each of ``--seeds`` seeds (default 3):
a stratified 80/20 split with that seed, and gpu_tree's and scikit-learn's
RandomForestClassifier fitted with that seed and the same settings (--trees, --depth,
--max-features); the accuracies are averaged over the seeds. On adult, whose columns are
partly categorical, gpu_tree takes the table as it is with ``categorical_features`` (its
own category splits) and scikit-learn takes those columns one-hot; gpu_tree on the same
one-hot matrix is a third row (the features per node then differ: sqrt of 14 columns
against sqrt of 108).

How to run (from the repository root)
-------------------------------------
    python bench/bench_forest.py --rows 20k --trees 20 --repeats 1 --accuracy   # seconds
    python bench/bench_forest.py --rows 1M --accuracy --json /tmp/forest.json
    python bench/bench_forest.py --rows 1M --device cuda --tools gpu_tree,xgboost,cuml
    python bench/bench_forest.py --rows 100k --trees 10 --depth full --extra-trees
    python bench/bench_forest.py --datasets                      # higgs, adult, letter
    python bench/bench_forest.py --datasets letter --depth full --seeds 5

It prints a markdown section (command, machine, versions, a table); ``--markdown PATH``
also writes it to a file, ``--json PATH`` every measurement.
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
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:  # run as a script or imported from elsewhere
    sys.path.insert(0, str(BENCH))

from bench_sizes import _row_count  # noqa: E402  (--rows as bench_sizes reads it)

from gpu_tree.app.machine import machine_info  # noqa: E402
from gpu_tree.app.peers import FOREST_PEERS, ForestWork, PeerWork  # noqa: E402

TOOLS = ("gpu_tree", *FOREST_PEERS)
EXTRA_TREES_TOOLS = ("gpu_tree", "sklearn")  # the peers with extremely randomised trees
BINS = 256
WARMUP_ROWS = 1_000
WARMUP_TREES = 2
REAL_DATASETS = ("higgs", "adult", "letter")
TEST_SHARE = 0.2


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


# -- the tools ----------------------------------------------------------------------------------


def gpu_tree_forest(args, categorical=None, trees=None):
    from gpu_tree import ExtraTreesClassifier, RandomForestClassifier

    forest = ExtraTreesClassifier if getattr(args, "extra_trees", False) else RandomForestClassifier
    return forest(
        n_estimators=args.trees if trees is None else trees,
        max_depth=args.depth,
        max_features=args.max_features,
        max_bins=BINS,
        n_jobs=args.n_jobs,
        random_state=args.seed,
        device=args.device,
        categorical_features=categorical,
    )


def forest_work(args, n_features: int, rows: int, trees=None) -> ForestWork:
    tree = PeerWork(
        depth=args.depth,
        bins=BINS,
        n_jobs=args.n_jobs,
        seed=args.seed,
        device=args.device,
        rows=rows,
    )
    return ForestWork(tree, args.trees if trees is None else trees, n_features, args.max_features)


def make_tool(name: str, args, n_features: int, rows: int):
    """(trees=None) -> an unfitted forest of tool ``name`` (of --trees trees, or
    ``trees``), and the device it runs on."""
    if name == "gpu_tree":
        return (lambda trees=None: gpu_tree_forest(args, trees=trees)), args.device
    if args.extra_trees:  # scikit-learn's (parse_args allows no other peer)
        return (lambda trees=None: sklearn_extra_trees(args, n_features, rows, trees)), "cpu"
    peer = FOREST_PEERS[name]
    work = forest_work(args, n_features, rows)
    return (lambda trees=None: peer.make(forest_work(args, n_features, rows, trees))), (
        peer.device_for(work)
    )


def sklearn_extra_trees(args, n_features: int, rows: int, trees=None):
    """scikit-learn's ExtraTreesClassifier with its random forest's settings here, every
    row per tree (its default, as gpu_tree's)."""
    from sklearn.ensemble import ExtraTreesClassifier

    settings = FOREST_PEERS["sklearn"].settings(forest_work(args, n_features, rows, trees))
    return ExtraTreesClassifier(**{**settings, "bootstrap": False})


def label(name: str, extra_trees: bool = False) -> str:
    if extra_trees:
        return {"gpu_tree": "gpu_tree", "sklearn": "scikit-learn"}[name] + " ExtraTreesClassifier"
    if name == "gpu_tree":
        return "gpu_tree RandomForestClassifier"
    return FOREST_PEERS[name].label


# -- timing -------------------------------------------------------------------------------------


@dataclass
class Measured:
    tool: str
    label: str
    device: str
    status: str = "ok"  # or why it did not run
    fit_seconds: list = field(default_factory=list)
    predict_seconds: list = field(default_factory=list)
    accuracy_percent: float | None = None
    n_batches: int | None = None  # gpu_tree's n_batches_
    fit_ratio: float | None = None  # this tool's median / gpu_tree's: above 1, gpu_tree faster
    predict_ratio: float | None = None

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


def _on_device(X):
    """``X`` in the CUDA backend's array module: a CuPy copy on a GPU, the rows as they
    are under the simulator (where CuPy may be installed without a device)."""
    from gpu_tree.backends.cuda import cuda_status

    usable, _, xp = cuda_status()
    return xp.asarray(X) if usable else X


def _to_host(values) -> np.ndarray:
    """Predictions as a numpy array, brought back from the GPU where they are there."""
    return np.asarray(values.get() if hasattr(values, "get") else values)


def measure(name, make, device, data, repeats, extra_trees=False) -> Measured:
    X_train, y_train, X_test, y_test = data
    out = Measured(name, label(name, extra_trees), device)
    try:
        # Untimed warm-up: a small forest on a slice, then a forest of WARMUP_TREES on
        # every training row (compilation or its cache load for the sizes of the timed
        # fits, CUDA set-up, the peers' first-call costs).
        n = min(WARMUP_ROWS, len(y_train))
        make(WARMUP_TREES).fit(X_train[:n], y_train[:n]).predict(X_test[:n])
        make(WARMUP_TREES).fit(X_train, y_train).predict(X_test)
        # On a GPU, tools predict rows already on the device (copied once, untimed): the
        # time of the prediction kernel, not of a host loop or of the copy in.
        X_predict = _on_device(X_test) if device == "cuda" else X_test
        for _ in range(repeats):
            model = None  # the previous forest freed first
            model = make()
            seconds, _ = timed(lambda m=model: m.fit(X_train, y_train))
            out.fit_seconds.append(seconds)
            seconds, predicted = timed(lambda m=model: _to_host(m.predict(X_predict)).ravel())
            out.predict_seconds.append(seconds)
    except Exception as exc:  # a tool failing is reported, not fatal
        out.status = f"failed: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        return out
    out.accuracy_percent = 100.0 * float(np.mean(predicted == y_test))
    out.n_batches = getattr(model, "n_batches_", None)
    return out


def fill_ratios(results: list[Measured]) -> None:
    ours = next((r for r in results if r.tool == "gpu_tree" and r.status == "ok"), None)
    if ours is None:
        return
    for r in results:
        if r.status == "ok":
            r.fit_ratio = r.fit / ours.fit
            r.predict_ratio = r.predict / ours.predict


def synthetic(args) -> dict:
    from gpu_tree.datasets import make_higgs_like

    n_test = max(args.rows // 4, 250)
    X, y = make_higgs_like(args.rows + n_test, args.features, random_state=args.seed)
    data = (
        np.ascontiguousarray(X[: args.rows]),
        y[: args.rows],
        np.ascontiguousarray(X[args.rows :]),
        y[args.rows :],
    )
    del X
    results = []
    for name in args.tools:
        make, device = make_tool(name, args, args.features, args.rows)
        result = measure(name, make, device, data, args.repeats, args.extra_trees)
        results.append(result)
        print(f"  {name}: {_progress(result)}", file=sys.stderr, flush=True)
    fill_ratios(results)
    return {
        "rows": args.rows,
        "test_rows": n_test,
        "features": args.features,
        "features_per_node": forest_work(args, args.features, args.rows).features_per_node(),
        "results": [
            {**asdict(r), "fit_median": r.fit, "predict_median": r.predict} for r in results
        ],
    }


def _progress(r: Measured) -> str:
    if r.status != "ok":
        return r.status
    batches = "" if r.n_batches is None else f", n_batches_ {r.n_batches}"
    return (
        f"fit {r.fit:.3f} s, predict {r.predict:.4f} s, accuracy "
        f"{r.accuracy_percent:.2f} %{batches}"
    )


# -- real data sets (--datasets) ----------------------------------------------------------------


@dataclass
class RealData:
    name: str
    X: object  # DataFrame (adult, letter) or float array (higgs)
    y: np.ndarray
    categorical: list  # the categorical columns of X (names)
    dataset: object = None  # the CategoricalDataset, for its one-hot encoder
    source: str = ""


def load_real(name: str) -> RealData:
    """A whole data set from ../shared/datasets; FileNotFoundError where it is absent."""
    import _categorical_data as real_data

    if name == "higgs":
        from gpu_tree.app.data_io import NUMBER, feature_matrix, read_table

        parts = []
        for file in ("higgs_subset_lightgbm_train.tsv", "higgs_subset_lightgbm_test.tsv"):
            table = read_table(
                real_data.shared_path(file), lambda names: [NUMBER] * len(names), header=False
            )
            parts.append(feature_matrix(table.columns))
        table = np.vstack(parts)
        return RealData(
            name,
            np.ascontiguousarray(table[:, 1:]),
            table[:, 0].astype(np.int64),
            [],
            source="higgs_subset_lightgbm_train.tsv + _test.tsv (7,500 x 28)",
        )
    if name == "letter":
        dataset = real_data.load_arff("letter.arff", "class")
        X = np.ascontiguousarray(dataset.X.to_numpy(dtype=np.float64))
        return RealData(name, X, dataset.y, [], dataset, "letter.arff (20,000 x 16, 26 classes)")
    dataset = real_data.load(name)  # adult: both files, one table
    return RealData(
        name,
        dataset.X,
        dataset.y,
        list(dataset.categorical),
        dataset,
        f"{name} ({len(dataset.y):,} x {dataset.X.shape[1]}, "
        f"{len(dataset.categorical)} categorical columns)",
    )


def real_tools(data: RealData, args) -> list[tuple[str, str, object]]:
    """(key, label, (X_train, X_test, seed) -> (model, X_train, X_test)) per tool."""
    from sklearn.ensemble import RandomForestClassifier as SklearnForest

    def seeded(seed):
        return argparse.Namespace(**{**vars(args), "seed": seed})

    def one_hot(X_train, X_test):
        import _categorical_data as real_data

        return real_data.one_hot(data.dataset, X_train, X_test)

    def ours(X_train, X_test, seed):
        return gpu_tree_forest(seeded(seed), data.categorical or None), X_train, X_test

    def ours_one_hot(X_train, X_test, seed):
        return (gpu_tree_forest(seeded(seed)), *one_hot(X_train, X_test))

    def sklearn(X_train, X_test, seed):
        if data.categorical:
            X_train, X_test = one_hot(X_train, X_test)
        work = forest_work(seeded(seed), X_train.shape[1], len(X_train))
        return SklearnForest(**FOREST_PEERS["sklearn"].settings(work)), X_train, X_test

    if not data.categorical:
        return [("gpu_tree", "gpu_tree", ours), ("sklearn", "scikit-learn", sklearn)]
    return [
        ("gpu_tree", "gpu_tree (categorical_features)", ours),
        ("gpu_tree_one_hot", "gpu_tree (one-hot)", ours_one_hot),
        ("sklearn", "scikit-learn (one-hot)", sklearn),
    ]


def _rows(X, index):
    return X.iloc[index].reset_index(drop=True) if hasattr(X, "iloc") else X[index]


def compare_real(name: str, args) -> dict:
    from sklearn.model_selection import train_test_split

    data = load_real(name)
    tools = real_tools(data, args)
    every = np.arange(len(data.y))
    entry = {"dataset": name, "source": data.source, "rows": len(data.y), "tools": {}}
    splits = [
        train_test_split(every, test_size=TEST_SHARE, random_state=args.seed + k, stratify=data.y)
        for k in range(args.seeds)
    ]
    for key, text, build in tools:
        # An untimed warm-up fit (compilation, first-call costs) on a slice of the first
        # split's training rows.
        few = splits[0][0][:WARMUP_ROWS]
        model, X_few, _ = build(_rows(data.X, few), _rows(data.X, few), args.seed)
        model.fit(X_few, data.y[few])
        accuracies, fit_seconds, batches = [], [], []
        for k, (train, test) in enumerate(splits):
            seed = args.seed + k
            model, X_train, X_test = build(_rows(data.X, train), _rows(data.X, test), seed)
            seconds, _ = timed(lambda m=model, X=X_train, y=data.y[train]: m.fit(X, y))
            fit_seconds.append(seconds)
            accuracies.append(100.0 * float(np.mean(model.predict(X_test) == data.y[test])))
            if hasattr(model, "n_batches_"):
                batches.append(model.n_batches_)
        entry["train_rows"], entry["test_rows"] = len(train), len(test)
        entry["tools"][key] = {
            "label": text,
            "accuracy_percent": accuracies,
            "accuracy_mean": statistics.fmean(accuracies),
            "fit_seconds": fit_seconds,
            "fit_median": statistics.median(fit_seconds),
            "n_batches": batches or None,
            "features": int(X_train.shape[1]),
        }
        print(
            f"  {name} {key}: accuracy {statistics.fmean(accuracies):.2f} % "
            f"({', '.join(f'{a:.2f}' for a in accuracies)}), fit "
            f"{statistics.median(fit_seconds):.2f} s",
            file=sys.stderr,
            flush=True,
        )
    return entry


# -- reporting ----------------------------------------------------------------------------------


def _seconds(value) -> str:
    if value is None:
        return "-"
    return f"{value * 1e3:.1f} ms" if value < 1 else f"{value:.2f} s"


def _ratio(value) -> str:
    return "-" if value is None else f"{value:.2f}x"


def synthetic_table(report: dict, accuracy: bool) -> str:
    header = ["tool", "device", "fit (median)", "predict (median)"]
    header += ["acc %"] if accuracy else []
    header += ["fit: tool / gpu_tree", "predict: tool / gpu_tree"]
    lines = ["| " + " | ".join(header) + " |", "|---|---|" + "---:|" * (len(header) - 2)]
    for r in report["results"]:
        if r["status"] != "ok":
            status = r["status"].replace("|", "/")  # a table cell
            cells = [r["label"], r["device"], status] + ["-"] * (len(header) - 3)
        else:
            cells = [
                r["label"],
                r["device"],
                _seconds(r["fit_median"]),
                _seconds(r["predict_median"]),
            ]
            cells += [f"{r['accuracy_percent']:.2f}"] if accuracy else []
            cells += [_ratio(r["fit_ratio"]), _ratio(r["predict_ratio"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def datasets_table(entries: list[dict]) -> str:
    lines = [
        "| data set | train / test rows | tool | columns | accuracy % (mean) | per seed | "
        "Δ vs scikit-learn pp | fit (median) | n_batches_ |",
        "|---|---:|---|---:|---:|---|---:|---:|---:|",
    ]
    for e in entries:
        theirs = e["tools"]["sklearn"]["accuracy_mean"]
        for key, t in e["tools"].items():
            diff = "-" if key == "sklearn" else f"{t['accuracy_mean'] - theirs:+.2f}"
            lines.append(
                f"| {e['dataset']} | {e['train_rows']:,} / {e['test_rows']:,} | {t['label']} | "
                f"{t['features']} | {t['accuracy_mean']:.2f} | "
                + ", ".join(f"{a:.2f}" for a in t["accuracy_percent"])
                + f" | {diff} | {_seconds(t['fit_median'])} | "
                + ("-" if not t["n_batches"] else str(max(t["n_batches"])))
                + " |"
            )
    return "\n".join(lines)


def markdown_section(report: dict) -> str:
    machine = report["machine"]
    args = report["args"]
    versions = ", ".join(f"{k} {v}" for k, v in machine["versions"].items())
    depth = "none (fully grown)" if args["depth"] is None else args["depth"]
    kind = "extremely randomised trees (no bootstrap), " if args.get("extra_trees") else ""
    lines = [
        f"## Random forests, {report['date_utc']}",
        "",
        f"- Command: `{report['command']}`",
        f"- Machine: {machine['platform']}; CPU {machine['cpu_model']}; {machine['cpus']} "
        f"logical cores ({machine['usable_cores']} usable); load average at start "
        f"{machine['load_average_at_start']}; {args['n_jobs']} threads for every CPU tool",
        f"- Versions: {versions}",
        f"- Forests: {kind}{args['trees']} trees, max_depth {depth}, max_features "
        f"{args['max_features']!r}, 256 bins (where a tool bins)",
    ]
    for note in report["notes"]:
        lines.append(f"- {note}")
    synth = report.get("synthetic")
    if synth:
        ours = next((r for r in synth["results"] if r["tool"] == "gpu_tree"), None)
        lines += [
            f"- Data: make_higgs_like(random_state={args['seed']}), {synth['rows']:,} training "
            f"rows x {synth['features']} features ({synth['features_per_node']} drawn per "
            f"node), {synth['test_rows']:,} held out; fit and predict times are medians of "
            f"{args['repeats']} after untimed warm-up fits (2 trees) per tool; ratios are "
            "the tool's time / gpu_tree's (above 1: gpu_tree is faster)",
            "",
            synthetic_table(synth, args["accuracy"]),
            "",
        ]
        if ours is not None and ours["n_batches"] is not None:
            lines.append(
                f"gpu_tree n_batches_: {ours['n_batches']} (its {args['trees']} trees grown "
                f"in {ours['n_batches']} batch{'es' if ours['n_batches'] != 1 else ''})"
            )
            lines.append("")
    if report.get("datasets"):
        lines += [
            f"- Real data (../shared/datasets): stratified {1 - TEST_SHARE:.0%}/"
            f"{TEST_SHARE:.0%} splits with seeds {args['seed']}..{args['seed'] + args['seeds'] - 1}"
            ", each forest fitted with the split's seed; accuracy averaged over the seeds; "
            "fit time the median over the seeds (one warm-up fit first)",
            "- Sources: " + "; ".join(e["source"] for e in report["datasets"]),
            "",
            datasets_table(report["datasets"]),
            "",
        ]
    return "\n".join(lines) + "\n"


# -- main ---------------------------------------------------------------------------------------


def _depth(text: str):
    if text.strip().lower() in ("full", "none"):
        return None
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("--depth must be at least 1 (or full)")
    return value


def _max_features(text: str):
    text = text.strip()
    if text in ("sqrt", "log2"):
        return text
    if text.lower() in ("none", "all"):
        return None
    try:
        return float(text) if "." in text else int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"sqrt, log2, all, an integer or a fraction, not {text!r}"
        ) from None


def _rows_arg(text: str) -> int:
    rows = _row_count(text)
    if rows < 10:
        raise argparse.ArgumentTypeError("--rows must be at least 10")
    return rows


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=_rows_arg, default=1_000_000, help="training rows (1M)")
    parser.add_argument("--features", type=int, default=28)
    parser.add_argument("--trees", type=int, default=100, help="n_estimators")
    parser.add_argument("--depth", type=_depth, default=10, help="max_depth, or full")
    parser.add_argument("--max-features", type=_max_features, default="sqrt")
    parser.add_argument("--repeats", type=int, default=3, help="fits per tool (median)")
    parser.add_argument("--tools", help=f"from {', '.join(TOOLS)} (default: every one)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument(
        "--accuracy", action="store_true", help="also report accuracy on the held-out 20 %%"
    )
    parser.add_argument(
        "--datasets",
        nargs="?",
        const=",".join(REAL_DATASETS),
        help="instead: accuracy on real data sets against scikit-learn "
        f"(default {','.join(REAL_DATASETS)})",
    )
    parser.add_argument(
        "--extra-trees",
        action="store_true",
        help="ExtraTreesClassifier against scikit-learn's (tools: gpu_tree, sklearn)",
    )
    parser.add_argument("--seeds", type=int, default=3, help="--datasets: splits averaged")
    parser.add_argument("--n-jobs", type=int, default=usable_cores(), help="CPU threads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="PATH", help="write every measurement as JSON")
    parser.add_argument("--markdown", metavar="PATH", help="also write the section here")
    args = parser.parse_args(argv)
    choices = EXTRA_TREES_TOOLS if args.extra_trees else TOOLS
    tools = ",".join(choices) if args.tools is None else args.tools
    args.tools = [t.strip() for t in tools.split(",") if t.strip()]
    unknown = set(args.tools) - set(choices)
    if unknown:
        parser.error(f"unknown tools {sorted(unknown)}; choose from {list(choices)}")
    if args.extra_trees and args.datasets is not None:
        parser.error("--extra-trees times the synthetic rows only, not --datasets")
    if args.datasets is not None:
        args.datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
        unknown = set(args.datasets) - set(REAL_DATASETS)
        if unknown:
            parser.error(f"unknown data sets {sorted(unknown)}; choose from {REAL_DATASETS}")
    if args.repeats < 1 or args.seeds < 1 or args.trees < 1 or args.features < 2:
        parser.error("--repeats, --seeds and --trees must be at least 1, --features 2")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    command = "python " + shlex.join([os.path.relpath(sys.argv[0]), *sys.argv[1:]])
    notes = []
    if args.datasets is None:
        missing = [t for t in args.tools if t != "gpu_tree" and not FOREST_PEERS[t].available()]
        for name in missing:
            notes.append(
                f"{FOREST_PEERS[name].label}: {FOREST_PEERS[name].module} not importable, left out"
            )
            print(notes[-1], file=sys.stderr)
        args.tools = [t for t in args.tools if t not in missing]
    report = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": command,
        "machine": machine_info(),
        "args": {k: v for k, v in vars(args).items() if k not in ("json", "markdown")},
        "notes": notes,
        "synthetic": None,
        "datasets": [],
        "skipped_datasets": {},
    }
    if args.datasets is None:
        report["synthetic"] = synthetic(args)
        failed = [r for r in report["synthetic"]["results"] if r["status"] != "ok"]
    else:
        failed = []
        for name in args.datasets:
            try:
                report["datasets"].append(compare_real(name, args))
            except FileNotFoundError as exc:  # ../shared/datasets is not in a fresh clone
                report["skipped_datasets"][name] = str(exc)
                notes.append(f"{name}: skipped ({exc})")
                print(notes[-1], file=sys.stderr)
    section = markdown_section(report)
    print(section)
    if args.markdown:
        Path(args.markdown).write_text(section)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, default=str) + "\n")
    return 1 if any(r["tool"] == "gpu_tree" for r in failed) else 0


if __name__ == "__main__":
    sys.exit(main())
