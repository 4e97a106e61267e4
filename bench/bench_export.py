"""Prediction throughput of the exported models (issue 48): onnxruntime, Treelite's GTIL and
TL2cgen's compiled C against gpu_tree's own predict, on the same rows, in the same run.

What it measures
----------------
Each case fits one gpu_tree model on the CPU and predicts ``--rows`` rows (default
1,000,000) with every runtime:

* ``gpu_tree``     the model's own ``predict_proba`` (classifier) or ``predict`` (regressor)
  on the rows as the user has them;
* ``onnxruntime``  ``gpu_tree.export_onnx(model)`` (float64) in an ``InferenceSession``;
* ``treelite_gtil`` ``treelite.gtil.predict`` on ``gpu_tree.export_treelite(model)``;
* ``tl2cgen``      the same Treelite model compiled to C by TL2cgen with the system gcc
  and run by ``tl2cgen.Predictor`` (where tl2cgen is installed: ``pip install tl2cgen``;
  its compile time is reported as its preparation).

The runtimes read ``gpu_tree.export_inputs(model, X)`` (numeric columns as float64,
categories as codes): its time is reported on a row of its own, since a server must
make those rows too. The cases: a forest of ``--trees`` trees and a tree of depth
``--depth`` (classifiers) and a regression tree, on the Higgs-like data of
``bench/bench_cpu.py`` (``make_dataset``: make_classification, 28 features), fitted on
its training part and predicting the first ``--rows`` rows of training and held-out rows
together; and, where ``../shared/datasets`` holds adult, a forest with adult's 8
categorical features and missing values, fitted on adult's training file and predicting
its rows (training and test) repeated to ``--rows``.

Every runtime's predictions are checked against gpu_tree's on all the rows predicted:
equal for a tree, within n_trees x 2**-52 x the largest leaf for a forest (its leaves
summed in another order; the bound docs/guide/export_cli.md states). A runtime that
disagrees makes the run end with exit status 1, naming the case, the runtime, the largest
difference and its row, once the tables are written: a faster wrong answer is no result,
and its row in the table says so.

Times are wall clock (time.perf_counter, gc.collect() before each), the median of
``--repeats`` runs after one untimed warm-up call on 1,000 rows (numba's kernels, the
runtimes' first-call costs); throughput is rows per second of that median, and the ratio
is the runtime's throughput over gpu_tree's in the same case (above 1: faster than
gpu_tree). Every runtime gets ``--threads`` threads (numba's, onnxruntime's intra-op
pool, GTIL's and TL2cgen's nthread; the last two no more than OMP_NUM_THREADS, where it
is set, which they refuse to exceed).

How to run (from the repository root)
-------------------------------------
    pip install ".[export]" tl2cgen
    python bench/bench_export.py                        # 1,000,000 rows, 20 trees depth 10
    python bench/bench_export.py --rows 20000 --trees 3 --repeats 1 --json /tmp/export.json
    python bench/bench_export.py --markdown bench/RESULTS.md   # appends a section
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:  # run as a script or imported from elsewhere
    sys.path.insert(0, str(BENCH))

from bench_cpu import make_dataset, set_numba_threads  # noqa: E402

from gpu_tree.app.machine import machine_info  # noqa: E402
from gpu_tree.app.peers import importable  # noqa: E402

WARMUP_ROWS = 1_000


# -- what every runtime must give -------------------------------------------------------------
def gpu_tree_predict(model):
    """The model's own method that the exports reproduce: ``predict_proba`` for a
    classifier, ``predict`` for a regressor."""
    return model.predict_proba if hasattr(model, "predict_proba") else model.predict


def on_host(predictions) -> np.ndarray:
    """A runtime's output as a float64 numpy array (a CuPy array brought to the host)."""
    if hasattr(predictions, "get"):  # CuPy
        predictions = predictions.get()
    return np.asarray(predictions, dtype=np.float64)


def as_columns(output) -> np.ndarray:
    """:func:`gpu_tree_predict`'s output as (n_rows, n_columns) float64 on the host: several
    outputs' probabilities (a list) side by side, a regressor's one column."""
    if isinstance(output, list):
        return np.hstack([on_host(part) for part in output])
    output = on_host(output)
    return output.reshape(len(output), -1)


def gpu_tree_predictions(model, X) -> np.ndarray:
    """gpu_tree's answer for the rows ``X`` as (n_rows, n_columns) float64."""
    return as_columns(gpu_tree_predict(model)(X))


def agreement(model, got, expected) -> dict:
    """How far a runtime's float64 predictions are from gpu_tree's, and the bound they must
    keep: 0 for a tree (the same leaf, the same value); for a forest, whose leaves the
    runtime adds in its own order, n_trees * 2**-52 * the largest |leaf value|.

    ``agree`` is False also when the shapes differ; ``worst_row`` is the row of the
    largest difference."""
    got, expected = on_host(got), np.asarray(expected, dtype=np.float64)
    trees = [e.tree_ for e in getattr(model, "estimators_", None) or [model]]
    largest = max(float(np.abs(t.value).max()) for t in trees)
    bound = 0.0 if len(trees) == 1 else len(trees) * 2.0**-52 * largest
    report = {"rows": int(len(expected)), "trees": len(trees), "bound": bound}
    # Treelite gives (rows, outputs, classes), nvForest (rows, classes) or (rows, 1):
    # the same numbers row by row as gpu_tree's (rows, columns).
    if got.ndim == 0 or len(got) != len(expected) or got.size != expected.size:
        return {**report, "agree": False, "shapes": [list(got.shape), list(expected.shape)]}
    got = got.reshape(expected.shape)
    difference = np.abs(got - expected)
    # NaN in either (a runtime that lost a row) is a disagreement: NaN > bound is False.
    difference[np.isnan(got) != np.isnan(expected)] = np.inf
    difference = np.nan_to_num(difference, nan=0.0)
    worst = int(np.argmax(difference.max(axis=1))) if difference.size else 0
    largest_difference = float(difference.max()) if difference.size else 0.0
    return {
        **report,
        "max_abs_difference": largest_difference,
        "worst_row": worst,
        "agree": largest_difference <= bound,
    }


# -- the runtimes -----------------------------------------------------------------------------
@dataclass
class Runtime:
    """A way to serve an exported model: ``prepare(model, threads)`` returns a function of
    the exported inputs giving the predictions."""

    name: str
    label: str
    module: str
    prepare: Callable[[object, int], Callable[[np.ndarray], object]]


def prepare_onnxruntime(model, threads):
    import onnxruntime

    import gpu_tree

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        gpu_tree.export_onnx(model).SerializeToString(),
        options,
        providers=["CPUExecutionProvider"],
    )
    output = session.get_outputs()[0].name  # probabilities (classifier) or predictions
    return lambda inputs: session.run([output], {"X": inputs})[0]


def openmp_threads(threads: int) -> int:
    """``threads``, at most what OpenMP may start here (OMP_NUM_THREADS, where set):
    Treelite and TL2cgen refuse more than that."""
    limit = os.environ.get("OMP_NUM_THREADS", "").strip()
    return min(threads, int(limit)) if limit.isdigit() and int(limit) > 0 else threads


def prepare_gtil(model, threads):
    import treelite

    import gpu_tree

    exported = gpu_tree.export_treelite(model)
    threads = openmp_threads(threads)
    return lambda inputs: treelite.gtil.predict(exported, inputs, nthread=threads)


def prepare_tl2cgen(model, threads):
    import tl2cgen

    import gpu_tree

    threads = openmp_threads(threads)
    folder = Path(tempfile.mkdtemp(prefix="gpu_tree_tl2cgen_"))
    library = folder / "model.so"
    tl2cgen.export_lib(
        gpu_tree.export_treelite(model),
        toolchain="gcc",
        libpath=library,
        params={"parallel_comp": max(1, threads)},
        nthread=threads,
    )
    predictor = tl2cgen.Predictor(library, nthread=threads)
    return lambda inputs: predictor.predict(tl2cgen.DMatrix(inputs))


RUNTIMES = (
    Runtime(
        "onnxruntime", "onnxruntime (export_onnx, float64)", "onnxruntime", prepare_onnxruntime
    ),
    Runtime("treelite_gtil", "Treelite GTIL (export_treelite)", "treelite", prepare_gtil),
    Runtime("tl2cgen", "TL2cgen, compiled with gcc", "tl2cgen", prepare_tl2cgen),
)


# -- the cases ---------------------------------------------------------------------------------
@dataclass
class Case:
    name: str
    description: str
    model: object  # fitted
    X: object  # the rows predicted, as the user has them (ndarray or DataFrame)
    fit_seconds: float


def timed(call: Callable[[], object]) -> tuple[float, object]:
    gc.collect()
    start = time.perf_counter()
    value = call()
    return time.perf_counter() - start, value


def higgs_like_cases(args) -> list[Case]:
    """A forest, a tree and a regression tree on bench_cpu.py's data: fitted on its
    training part, predicting ``args.rows`` rows of training and held-out rows."""
    import gpu_tree

    data = make_dataset(
        SimpleNamespace(rows=args.rows, features=28, dtype="float64", seed=args.seed, test_size=0.2)
    )
    X = np.concatenate([data.X_train, data.X_test])[: args.rows]
    target = data.y_train + data.X_train[:, 0]  # a regression target the features explain
    shape = f"{len(data.y_train):,} x 28 make_classification rows (bench_cpu.py's data)"
    fits = [
        (
            "forest",
            f"RandomForestClassifier, {args.trees} trees, depth {args.depth}, on {shape}",
            gpu_tree.RandomForestClassifier(
                n_estimators=args.trees, max_depth=args.depth, random_state=args.seed
            ),
            data.y_train,
        ),
        (
            "tree",
            f"DecisionTreeClassifier, depth {args.depth}, on {shape}",
            gpu_tree.DecisionTreeClassifier(max_depth=args.depth),
            data.y_train,
        ),
        (
            "tree_regressor",
            f"DecisionTreeRegressor, depth {args.depth}, on {shape} (y + x0)",
            gpu_tree.DecisionTreeRegressor(max_depth=args.depth),
            target,
        ),
    ]
    cases = []
    for name, description, model, y in fits:
        seconds, _ = timed(lambda model=model, y=y: model.fit(data.X_train, y))
        print(f"  fitted {name} in {seconds:.1f} s", flush=True)
        cases.append(Case(name, description, model, X, seconds))
    return cases


def adult_case(args) -> Case | None:
    """A forest on adult (8 categorical features, missing values), predicting its rows
    repeated to ``args.rows``; None when the shared datasets are absent."""
    import _categorical_data as real_data
    import pandas as pd

    import gpu_tree

    try:
        dataset = real_data.load("adult")
    except FileNotFoundError as exc:
        print(f"  adult left out: {exc}")
        return None
    X_train, y_train, _, _ = dataset.parts()
    model = gpu_tree.RandomForestClassifier(
        n_estimators=args.trees,
        max_depth=args.depth,
        categorical_features=dataset.categorical,
        random_state=args.seed,
    )
    seconds, _ = timed(lambda: model.fit(X_train, y_train))
    print(f"  fitted adult_forest in {seconds:.1f} s", flush=True)
    repeats = -(-args.rows // len(dataset.X))
    X = pd.concat([dataset.X] * repeats, ignore_index=True).iloc[: args.rows]
    description = (
        f"RandomForestClassifier, {args.trees} trees, depth {args.depth}, "
        f"{len(dataset.categorical)} categorical features, on adult's {len(X_train):,} "
        f"training rows; its {len(dataset.X):,} rows repeated"
    )
    return Case("adult_forest", description, model, X, seconds)


# -- measuring ---------------------------------------------------------------------------------
@dataclass
class Row:
    case: str
    runtime: str
    label: str
    status: str = "ok"
    prepare_seconds: float | None = None
    predict_seconds: list = field(default_factory=list)
    rows: int = 0
    agreement: dict | None = None
    ratio_to_gpu_tree: float | None = None

    @property
    def median(self) -> float | None:
        return statistics.median(self.predict_seconds) if self.predict_seconds else None

    @property
    def rows_per_second(self) -> float | None:
        return self.rows / self.median if self.median else None

    def as_dict(self) -> dict:
        return {
            **self.__dict__,
            "median_seconds": self.median,
            "rows_per_second": self.rows_per_second,
        }


def _slice(X, n):
    return X.iloc[:n] if hasattr(X, "iloc") else X[:n]


def measure(label_row: Row, predict: Callable, inputs, repeats: int):
    """One untimed warm-up call on WARMUP_ROWS rows, then ``repeats`` timed calls on all;
    the last call's predictions."""
    predict(_slice(inputs, WARMUP_ROWS))
    predictions = None
    for _ in range(repeats):
        predictions = None  # free the last output before the next call
        seconds, predictions = timed(lambda: predict(inputs))
        label_row.predict_seconds.append(seconds)
    label_row.rows = len(inputs)
    return predictions


def run_case(case: Case, args) -> list[Row]:
    import gpu_tree

    print(f"case {case.name}: {case.description}", flush=True)
    reference = Row(case.name, "gpu_tree", "gpu_tree predict_proba / predict (CPU)")
    expected = measure(
        reference, lambda X: gpu_tree_predictions(case.model, X), case.X, args.repeats
    )
    encoding = Row(case.name, "export_inputs", "gpu_tree.export_inputs (the runtimes' rows)")
    inputs = measure(
        encoding, lambda X: gpu_tree.export_inputs(case.model, X), case.X, args.repeats
    )
    rows = [reference, encoding]
    for runtime in RUNTIMES:
        row = Row(case.name, runtime.name, runtime.label)
        rows.append(row)
        if runtime.name in args.skip:
            row.status = "skipped"
            continue
        if not importable(runtime.module):
            row.status = f"not installed (pip install {runtime.module})"
            continue
        try:
            row.prepare_seconds, predict = timed(
                lambda runtime=runtime: runtime.prepare(case.model, args.threads)
            )
        except Exception as exc:  # noqa: BLE001 - a runtime that cannot load the model: recorded
            row.status = f"failed to prepare: {type(exc).__name__}: {exc}"[:300]
            print(f"  {runtime.name}: {row.status}", flush=True)
            continue
        got = measure(row, predict, inputs, args.repeats)
        row.agreement = agreement(case.model, got, expected)
        if not row.agreement["agree"]:  # timed, recorded, and the run will fail
            row.status = "DISAGREES with gpu_tree"
            print(f"  {runtime.name}: {row.status}: {row.agreement}", flush=True)
    for row in rows:
        if row.runtime != "export_inputs" and row.rows_per_second and reference.rows_per_second:
            row.ratio_to_gpu_tree = row.rows_per_second / reference.rows_per_second
        if row.median is not None:
            print(
                f"  {row.runtime}: median {row.median:.3f} s over {len(row.predict_seconds)} "
                f"runs, {row.rows_per_second:,.0f} rows/s, x{_number(row.ratio_to_gpu_tree, '.2f')}",
                flush=True,
            )
    return rows


# -- reporting ---------------------------------------------------------------------------------
def _number(value, spec, missing="-"):
    return missing if value is None else format(value, spec)


def markdown_table(rows: list[Row]) -> str:
    lines = [
        "| case | runtime | prepare s | predict s (median) | rows/s | x gpu_tree | max abs diff (bound) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        if row.median is None:  # not run: not installed, skipped, failed to load
            lines.append(f"| {row.case} | {row.label} | {row.status} | | | | |")
            continue
        check = row.agreement or {}
        if "max_abs_difference" in check:
            difference = f"{check['max_abs_difference']:.1e} ({check['bound']:.1e})"
        elif check:
            difference = f"shapes {check['shapes']}"
        else:
            difference = {"gpu_tree": "reference", "export_inputs": "-"}[row.runtime]
        if row.status != "ok":
            difference = f"**{row.status}**: {difference}"
        lines.append(
            f"| {row.case} | {row.label} | {_number(row.prepare_seconds, '.2f')} | "
            f"{_number(row.median, '.3f')} | {_number(row.rows_per_second, ',.0f')} | "
            f"{_number(row.ratio_to_gpu_tree, '.2f')} | {difference} |"
        )
    return "\n".join(lines)


def uptime() -> str:
    """``uptime``'s line (its load averages), or the load averages alone."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return f"load average {os.getloadavg()}"


def markdown_section(report: dict, rows: list[Row]) -> str:
    machine = report["machine"]
    cases = "\n".join(f"- `{name}`: {text}" for name, text in report["cases"].items())
    versions = ", ".join(f"{k} {v}" for k, v in report["versions"].items())
    return (
        f"\n## {report['date_utc'][:10]} · prediction throughput of the exported models "
        f"(issue 48) · {machine['usable_cores']}-core {machine['cpu_model']}, load "
        f"{report['uptime_at_start'].split('load average:')[-1].strip()}\n\n"
        f"`{report['command']}` at {report['date_utc']}; {report['threads']} threads for every "
        f"runtime; medians of {report['args']['repeats']} runs on {report['args']['rows']:,} "
        f"rows after a warm-up call. `uptime` at start: {report['uptime_at_start']}; at end: "
        f"{report['uptime_at_end']}. Versions: {versions}.\n\n{cases}\n\n"
        f"{markdown_table(rows)}\n"
    )


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows predicted per case")
    parser.add_argument("--trees", type=int, default=20, help="trees of the forests")
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5, help="timed predictions (median)")
    parser.add_argument("--threads", type=int, default=2, help="threads for every runtime")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--skip",
        default="",
        help=f"comma list of runtimes to leave out: {','.join(r.name for r in RUNTIMES)}",
    )
    parser.add_argument("--no-adult", action="store_true", help="leave out the adult case")
    parser.add_argument("--json", metavar="PATH", help="write all results as JSON")
    parser.add_argument("--markdown", metavar="PATH", help="append a markdown section")
    args = parser.parse_args(argv)
    args.skip = {name.strip() for name in args.skip.split(",") if name.strip()}
    unknown = args.skip - {r.name for r in RUNTIMES}
    if unknown:
        parser.error(f"unknown runtimes in --skip: {sorted(unknown)}")
    if args.repeats < 1 or args.rows < 1:
        parser.error("--repeats and --rows must be at least 1")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    report = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python " + shlex.join([os.path.relpath(sys.argv[0]), *sys.argv[1:]]),
        "args": {k: sorted(v) if isinstance(v, set) else v for k, v in vars(args).items()},
        "uptime_at_start": uptime(),
        "machine": machine_info(),
        "threads": set_numba_threads(args.threads),
    }
    report["versions"] = {
        name: module_version(name) for name in ("onnxruntime", "treelite", "tl2cgen", "numba")
    }
    print(f"{report['date_utc']}  {report['uptime_at_start']}", flush=True)
    cases = higgs_like_cases(args)
    adult = None if args.no_adult else adult_case(args)
    cases += [adult] if adult else []
    report["cases"] = {case.name: case.description for case in cases}
    rows = []
    for case in cases:
        rows += run_case(case, args)
    report["uptime_at_end"] = uptime()
    report["results"] = [row.as_dict() for row in rows]
    section = markdown_section(report, rows)
    print(section)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, default=str) + "\n")
        print(f"wrote {args.json}")
    if args.markdown:
        with open(args.markdown, "a") as markdown:
            markdown.write(section)
        print(f"appended to {args.markdown}")
    wrong = [row for row in rows if row.agreement and not row.agreement["agree"]]
    for row in wrong:
        print(
            f"error: {row.case}: {row.runtime} disagrees with gpu_tree: {row.agreement}",
            file=sys.stderr,
        )
    return 1 if wrong else 0


def module_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


if __name__ == "__main__":
    sys.exit(main())
