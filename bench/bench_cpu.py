"""CPU benchmark: one depth-limited decision tree from gpu_tree against its peers.

What it measures
----------------
On synthetic binary data from ``sklearn.datasets.make_classification`` (default
1,000,000 rows x 28 features, 14 informative, 4 redundant, 5 % flipped labels), split
80/20 with a fixed seed, every tool grows one tree of depth 10 with 256 bins:

* ``gpu_tree``   gpu_tree.DecisionTreeClassifier, histogram splitter, device="cpu"
* ``sklearn``    scikit-learn's DecisionTreeClassifier (exact splitter), the accuracy reference
* ``lightgbm``   LightGBM, one boosting round
* ``xgboost``    XGBoost tree_method="hist", one boosting round
* ``hist_gb``    scikit-learn's HistGradientBoostingClassifier, one iteration

For binary labels the first boosting round's split gain (G_L^2/H_L + G_R^2/H_R - G^2/H with
a constant hessian) is proportional to the Gini decrease, so with regularisation off and
leaf limits loose the boosters grow the same kind of tree as a Gini decision tree; the
settings each tool ran with are printed and written with the results.

For each tool: fit time (median of ``--repeats`` fits; ``--sklearn-repeats`` for the slow
exact tree), predict time on the test set (median), test accuracy, and the fitted tree's
leaves and depth. Ratios: each tool's fit time / gpu_tree's fit time (above 1: gpu_tree is
faster), and its accuracy minus scikit-learn's tree's, in percentage points. Each tool
first fits and predicts a small slice (``--warmup-rows``); that warm-up is reported in its
own column and left out of the other times (for gpu_tree it is numba JIT compilation or
the on-disk cache load). Times are wall clock (time.perf_counter) with gc.collect() before
each timed call; every parallel tool gets the same thread count (``--n-jobs``, default 2).
The goal lines of the issue are checked at the end: fit at least 40x faster than
scikit-learn's tree, faster than LightGBM, test accuracy within 0.3 points of
scikit-learn's tree.

How to run (from the repository root)
-------------------------------------
    python bench/bench_cpu.py                       # full size; the exact tree takes ~1 min
    python bench/bench_cpu.py --rows 100000 --repeats 1
    python bench/bench_cpu.py --skip sklearn,xgboost --json /tmp/bench.json
    python bench/bench_cpu.py --markdown bench/RESULTS.md   # appends a dated section

Tools that are not installed are reported as "not installed" and skipped.
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
import traceback
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gpu_tree.app.machine import machine_info
from gpu_tree.app.peers import PEERS, PeerWork, importable, shape_of_estimator_tree

GOAL_SPEEDUP_VS_SKLEARN = 40.0
GOAL_MAX_ACCURACY_GAP_PP = 0.3


# -- data ---------------------------------------------------------------------------------


@dataclass
class Dataset:
    X_train: np.ndarray
    X_test: np.ndarray
    y_train: np.ndarray
    y_test: np.ndarray
    description: dict


def make_dataset(args) -> Dataset:
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split

    generator_params = dict(
        n_samples=args.rows,
        n_features=args.features,
        n_informative=min(14, args.features),
        n_redundant=min(4, max(0, args.features - 14)),
        flip_y=0.05,
        random_state=args.seed,
    )
    X, y = make_classification(**generator_params)
    X = X.astype(args.dtype, copy=False)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=args.test_size, random_state=args.seed
    )
    description = {
        "generator": "sklearn.datasets.make_classification",
        "generator_params": generator_params,
        "split": f"train_test_split(test_size={args.test_size}, random_state={args.seed})",
        "dtype": args.dtype,
        "n_train": int(X_train.shape[0]),
        "n_test": int(X_test.shape[0]),
        "positive_fraction_train": round(float(np.mean(y_train)), 4),
    }
    return Dataset(
        np.ascontiguousarray(X_train),
        np.ascontiguousarray(X_test),
        y_train,
        y_test,
        description,
    )


# -- the contenders -------------------------------------------------------------------------


@dataclass
class Contender:
    name: str
    label: str
    module: str
    settings: dict
    make_model: Callable[[dict], object]
    tree_shape: Callable[[object], tuple[int, int]]
    fit_repeats: int
    thread_limit: Callable[[], object] = nullcontext


def openmp_thread_limit(n_threads: int) -> Callable[[], object]:
    def limit():
        from threadpoolctl import threadpool_limits

        return threadpool_limits(limits=n_threads, user_api="openmp")

    return limit


def gpu_tree_model(settings):
    import gpu_tree

    return gpu_tree.DecisionTreeClassifier(**settings)


def peer_contender(name: str, work: PeerWork, fit_repeats: int, **extra) -> Contender:
    """A peer as gpu_tree.app.peers defines it (the same settings as ``gputree bench``)."""
    peer = PEERS[name]
    return Contender(
        name=peer.name,
        label=peer.label,
        module=peer.module,
        settings=peer.settings(work),
        make_model=lambda settings, peer=peer: peer.estimator()(**settings),
        tree_shape=peer.tree_shape,
        fit_repeats=fit_repeats,
        **extra,
    )


def build_contenders(args) -> list[Contender]:
    """gpu_tree first (the reference for fit ratios); the slow exact tree last."""
    depth, bins, n_jobs, seed = args.depth, args.bins, args.n_jobs, args.seed
    work = PeerWork(depth=depth, bins=bins, n_jobs=n_jobs, seed=seed, device="cpu")
    return [
        Contender(
            name="gpu_tree",
            label="gpu_tree (hist, cpu)",
            module="gpu_tree",
            settings=dict(
                criterion="gini", max_depth=depth, max_bins=bins, device="cpu", random_state=seed
            ),
            make_model=gpu_tree_model,
            tree_shape=shape_of_estimator_tree,
            fit_repeats=args.repeats,
        ),
        peer_contender("lightgbm", work, args.repeats),
        peer_contender("xgboost", work, args.repeats),
        peer_contender("hist_gb", work, args.repeats, thread_limit=openmp_thread_limit(n_jobs)),
        peer_contender("sklearn", work, args.sklearn_repeats),
    ]


PEER_NAMES = tuple(name for name in PEERS if PEERS[name].device != "cuda")


# -- timing ---------------------------------------------------------------------------------


@dataclass
class Result:
    name: str
    label: str
    status: str = "ok"
    settings: dict = field(default_factory=dict)
    fit_seconds: list = field(default_factory=list)
    predict_seconds: list = field(default_factory=list)
    warmup_fit_seconds: float | None = None
    warmup_predict_seconds: float | None = None
    accuracy_percent: float | None = None
    n_leaves: int | None = None
    depth: int | None = None
    fit_time_ratio_vs_gpu_tree: float | None = None
    accuracy_diff_vs_sklearn_pp: float | None = None

    @property
    def fit_median(self) -> float | None:
        return statistics.median(self.fit_seconds) if self.fit_seconds else None

    @property
    def predict_median(self) -> float | None:
        return statistics.median(self.predict_seconds) if self.predict_seconds else None

    def as_dict(self) -> dict:
        out = {key: value for key, value in self.__dict__.items()}
        out["fit_median_seconds"] = self.fit_median
        out["predict_median_seconds"] = self.predict_median
        return out


def timed(call: Callable[[], object]) -> tuple[float, object]:
    gc.collect()
    start = time.perf_counter()
    value = call()
    return time.perf_counter() - start, value


def warm_up(contender: Contender, data: Dataset, n_rows: int, result: Result) -> None:
    """Untimed-in-results first fit and predict on a small slice.

    For gpu_tree this is numba compiling its kernels (or loading them from the on-disk
    cache); for the peers, first-call costs such as starting thread pools.
    """
    X_small, y_small = data.X_train[:n_rows], data.y_train[:n_rows]
    model = contender.make_model(contender.settings)
    result.warmup_fit_seconds, _ = timed(lambda: model.fit(X_small, y_small))
    result.warmup_predict_seconds, _ = timed(lambda: model.predict(X_small))
    print(
        f"  {contender.name}: warm-up on {len(y_small):,} rows: fit "
        f"{result.warmup_fit_seconds:.3f} s, predict {result.warmup_predict_seconds:.3f} s",
        flush=True,
    )


def run_contender(contender: Contender, data: Dataset, args) -> Result:
    result = Result(contender.name, contender.label, settings=contender.settings)
    model = None
    with contender.thread_limit():
        warm_up(contender, data, args.warmup_rows, result)
        for run in range(contender.fit_repeats):
            model = None  # free the previous fit before the next one
            model = contender.make_model(contender.settings)
            seconds, _ = timed(lambda model=model: model.fit(data.X_train, data.y_train))
            result.fit_seconds.append(seconds)
            print(
                f"  {contender.name}: fit {run + 1}/{contender.fit_repeats} {seconds:.3f} s",
                flush=True,
            )
        predictions = None
        for _ in range(args.predict_repeats):
            seconds, predictions = timed(lambda: model.predict(data.X_test))
            result.predict_seconds.append(seconds)
    result.accuracy_percent = 100.0 * float(np.mean(predictions == data.y_test))
    try:
        result.n_leaves, result.depth = (int(v) for v in contender.tree_shape(model))
    except Exception as exc:  # tree introspection is a nicety, never a reason to fail
        print(f"  {contender.name}: could not read the tree's shape ({exc})", file=sys.stderr)
    return result


def set_numba_threads(n_threads: int) -> int:
    import numba

    n_threads = max(1, min(n_threads, numba.config.NUMBA_NUM_THREADS))
    numba.set_num_threads(n_threads)
    return n_threads


# -- reporting ------------------------------------------------------------------------------


def fill_comparisons(results: list[Result]) -> None:
    by_name = {r.name: r for r in results if r.status == "ok"}
    reference_fit = by_name["gpu_tree"].fit_median if "gpu_tree" in by_name else None
    sklearn_accuracy = by_name["sklearn"].accuracy_percent if "sklearn" in by_name else None
    for result in by_name.values():
        if reference_fit:
            result.fit_time_ratio_vs_gpu_tree = result.fit_median / reference_fit
        if sklearn_accuracy is not None:
            result.accuracy_diff_vs_sklearn_pp = result.accuracy_percent - sklearn_accuracy


def evaluate_goals(results: list[Result]) -> list[dict]:
    by_name = {r.name: r for r in results if r.status == "ok"}
    sklearn_tree, lightgbm_run, ours = (by_name.get(n) for n in ("sklearn", "lightgbm", "gpu_tree"))

    def goal(text, value, met):
        return {"goal": text, "value": value, "met": met}

    goals = []
    if sklearn_tree and ours:
        speedup = sklearn_tree.fit_time_ratio_vs_gpu_tree
        goals.append(
            goal(
                f"fit at least {GOAL_SPEEDUP_VS_SKLEARN:.0f}x faster than scikit-learn's tree",
                f"{speedup:.1f}x",
                speedup >= GOAL_SPEEDUP_VS_SKLEARN,
            )
        )
        gap = ours.accuracy_diff_vs_sklearn_pp
        goals.append(
            goal(
                f"test accuracy within {GOAL_MAX_ACCURACY_GAP_PP} points of scikit-learn's tree",
                f"{gap:+.3f} pp",
                abs(gap) <= GOAL_MAX_ACCURACY_GAP_PP,
            )
        )
    else:
        goals.append(goal("speed and accuracy vs scikit-learn's tree", "n/a (not run)", None))
    if lightgbm_run and ours:
        ratio = lightgbm_run.fit_time_ratio_vs_gpu_tree
        goals.append(goal("fit faster than LightGBM", f"{ratio:.2f}x", ratio > 1.0))
    else:
        goals.append(goal("fit faster than LightGBM", "n/a (not run)", None))
    return goals


def format_number(value, spec: str, missing: str = "-") -> str:
    return missing if value is None else format(value, spec)


TABLE_HEADER = [
    "tool",
    "fit s (median)",
    "fits",
    "warm-up fit s",
    "predict s",
    "accuracy %",
    "Δacc vs sklearn pp",
    "fit / gpu_tree fit",
    "leaves",
    "depth",
]


def table_rows(results: list[Result]) -> list[list[str]]:
    rows = []
    for r in results:
        if r.status != "ok":
            rows.append([r.label, r.status] + [""] * (len(TABLE_HEADER) - 2))
            continue
        rows.append(
            [
                r.label,
                format_number(r.fit_median, ".3f"),
                str(len(r.fit_seconds)),
                format_number(r.warmup_fit_seconds, ".3f"),
                format_number(r.predict_median, ".3f"),
                format_number(r.accuracy_percent, ".3f"),
                format_number(r.accuracy_diff_vs_sklearn_pp, "+.3f"),
                format_number(r.fit_time_ratio_vs_gpu_tree, ".2f") + "x"
                if r.fit_time_ratio_vs_gpu_tree is not None
                else "-",
                format_number(r.n_leaves, "d"),
                format_number(r.depth, "d"),
            ]
        )
    return rows


def text_table(results: list[Result]) -> str:
    rows = [TABLE_HEADER] + table_rows(results)
    widths = [max(len(row[i]) for row in rows) for i in range(len(TABLE_HEADER))]
    lines = []
    for index, row in enumerate(rows):
        cells = [
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(results: list[Result]) -> str:
    lines = [
        "| " + " | ".join(TABLE_HEADER) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(TABLE_HEADER) - 1)) + "|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in table_rows(results)]
    return "\n".join(lines)


def goal_lines(goals: list[dict]) -> list[str]:
    verdict = {True: "met", False: "NOT met", None: "not measured"}
    return [f"{g['goal']}: {g['value']} -> {verdict[g['met']]}" for g in goals]


def settings_lines(results: list[Result]) -> list[str]:
    return [
        f"{r.name}: " + ", ".join(f"{k}={v!r}" for k, v in r.settings.items())
        for r in results
        if r.settings
    ]


def markdown_section(report: dict, results: list[Result]) -> str:
    machine, data = report["machine"], report["data"]
    versions = ", ".join(f"{k} {v}" for k, v in machine["versions"].items())
    generator_params = ", ".join(f"{k}={v}" for k, v in data["generator_params"].items())
    lines = [
        f"## CPU benchmark, {report['date_utc']}",
        "",
        f"- Command: `{report['command']}`",
        f"- Machine: {machine['platform']}; CPU {machine['cpu_model']}; "
        f"{machine['cpus']} logical cores ({machine['usable_cores']} usable); "
        f"load average at start {machine['load_average_at_start']}; threads per tool "
        f"{report['threads']['requested']} (numba {report['threads']['numba']})",
        f"- Versions: {versions}",
        f"- Data: {data['generator']}({generator_params}), {data['split']}, {data['dtype']}: "
        f"{data['n_train']:,} train / {data['n_test']:,} test rows",
        f"- Warm-up: each tool first fits and predicts {report['args']['warmup_rows']:,} rows "
        "(column 'warm-up fit s', not in the other times); for gpu_tree that is numba "
        "compilation or its cache load",
        "",
        markdown_table(results),
        "",
        "Goals:",
        "",
        *[f"- {line}" for line in goal_lines(report["goals"])],
        "",
        "Settings:",
        "",
        *[f"- {line}" for line in settings_lines(results)],
        "",
    ]
    return "\n".join(lines) + "\n"


# -- main -----------------------------------------------------------------------------------


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description="Time gpu_tree's CPU decision tree against scikit-learn, LightGBM, XGBoost "
        "and HistGradientBoosting on make_classification data."
    )
    parser.add_argument(
        "--rows", type=int, default=1_000_000, help="samples generated (train + test)"
    )
    parser.add_argument("--features", type=int, default=28)
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--bins", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3, help="timed fits per tool (median)")
    parser.add_argument(
        "--sklearn-repeats",
        type=int,
        default=1,
        help="timed fits of scikit-learn's exact tree (slow)",
    )
    parser.add_argument("--predict-repeats", type=int, default=3, help="timed predicts per tool")
    parser.add_argument(
        "--skip", default="", help=f"comma list of peers to skip: {','.join(PEER_NAMES)}"
    )
    parser.add_argument(
        "--n-jobs",
        type=int,
        default=2,
        help="threads for every parallel tool (numba, LightGBM, XGBoost, OpenMP)",
    )
    parser.add_argument(
        "--warmup-rows",
        type=int,
        default=20_000,
        help="rows of each tool's warm-up fit, reported apart from the timed fits",
    )
    parser.add_argument("--test-size", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    parser.add_argument("--json", metavar="PATH", help="write all results as JSON")
    parser.add_argument("--markdown", metavar="PATH", help="append a markdown section")
    args = parser.parse_args(argv)
    args.skip = {name.strip() for name in args.skip.split(",") if name.strip()}
    unknown = args.skip - set(PEER_NAMES)
    if unknown:
        parser.error(f"unknown names in --skip: {sorted(unknown)}; choose from {list(PEER_NAMES)}")
    if min(args.repeats, args.sklearn_repeats, args.predict_repeats) < 1:
        parser.error("repeat counts must be at least 1")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    command = "python " + shlex.join([os.path.relpath(sys.argv[0]), *sys.argv[1:]])
    date_utc = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = machine_info()
    threads = {"requested": args.n_jobs, "numba": set_numba_threads(args.n_jobs)}
    print(
        f"{date_utc}  {machine['cpu_model']}, {machine['usable_cores']} usable cores, "
        f"load {machine['load_average_at_start']}"
    )
    busy_load = machine["load_average_at_start"][0]
    if busy_load > 0.5:
        print(
            f"warning: 1-minute load average {busy_load} before this run: other processes "
            f"compete for the {machine['usable_cores']} cores, so times will be noisy"
        )
    print("versions: " + ", ".join(f"{k} {v}" for k, v in machine["versions"].items()))

    data_seconds, data = timed(lambda: make_dataset(args))
    print(
        f"data: {data.description['n_train']:,} train / {data.description['n_test']:,} test x "
        f"{args.features} features ({args.dtype}), generated in {data_seconds:.1f} s"
    )

    results = []
    for contender in build_contenders(args):
        if contender.name in args.skip:
            results.append(Result(contender.name, contender.label, status="skipped"))
            continue
        if not importable(contender.module):
            results.append(Result(contender.name, contender.label, status="not installed"))
            print(f"  {contender.name}: not installed, skipped")
            continue
        if contender.name == "gpu_tree":  # the reference: a failure here should be loud
            results.append(run_contender(contender, data, args))
            continue
        try:
            results.append(run_contender(contender, data, args))
        except Exception as exc:
            traceback.print_exc()
            status = f"failed: {type(exc).__name__}: {exc}"[:120]
            results.append(Result(contender.name, contender.label, status=status))

    fill_comparisons(results)
    goals = evaluate_goals(results)
    report = {
        "date_utc": date_utc,
        "command": command,
        "args": {k: sorted(v) if isinstance(v, set) else v for k, v in vars(args).items()},
        "machine": machine,
        "threads": threads,
        "data": {**data.description, "generation_seconds": data_seconds},
        "results": [r.as_dict() for r in results],
        "goals": goals,
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
    }

    print()
    print(text_table(results))
    print()
    print("\n".join(goal_lines(goals)))
    print()
    print("settings:")
    print("\n".join("  " + line for line in settings_lines(results)))
    print(f"load average at end: {report['load_average_at_end']}")

    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {args.json}")
    if args.markdown:
        with open(args.markdown, "a") as markdown:
            markdown.write(markdown_section(report, results))
        print(f"appended to {args.markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
