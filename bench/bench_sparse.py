"""Sparse input: one tree on a sparse X (CSR) against the same tree on the dense X, and
against the peers that take sparse input (scikit-learn's exact tree, one round of
LightGBM and of XGBoost, as :data:`gpu_tree.app.peers.PEERS` defines them).

What it measures
----------------
Data (``--data``):

* ``words`` (default): a bag-of-words-like matrix of ``--rows`` rows and ``--features``
  columns, generated with ``--seed``: column j holds counts (Poisson) in a share of the
  rows that falls off as 1 / (1 + j / 20) (a few common words, many rare ones), scaled so
  that ``--density`` of all values are stored; the label says whether a weighted sum of
  the first 50 columns' counts, plus noise, is above its median.
* ``adult``: the adult census table of ../shared/datasets, its 8 categorical columns one-hot
  encoded by scikit-learn's OneHotEncoder (sparse output) beside its 6 numeric ones.

Tools (``--tools``, default every one installed): ``gpu_tree_sparse`` (gpu_tree's
DecisionTreeClassifier on the CSR matrix), ``gpu_tree_dense`` (the same on
``X.toarray()``: the same tree, node for node), ``sklearn`` (scikit-learn's exact tree on
the CSR matrix), ``lightgbm`` and ``xgboost`` (one round, on the CSR matrix). Every tool
grows a tree of depth ``--depth`` on 256 bins where it bins. ``--device cuda`` fits
gpu_tree's trees on the GPU (the CSR codes copied there as they are; the peers stay on
the CPU), whose fit memory is then the host's only.

Each tool runs in a process of its own, which builds the data, fits once on 1,000 rows
untimed (compilation, first calls), then fits ``--repeats`` times on every row, each fit
timed (wall clock, gc.collect() before); the table reports the median, the ratio
tool / gpu_tree_sparse (above 1: the sparse path is faster), the training accuracy, and
the process's peak resident memory above what it held once the data was built (the
fit's own memory: bins, histograms, copies). The gpu_tree rows also give the bytes of
their binned training data: CSR codes (stored values) against dense codes (every value).

How to run (from the repository root)
-------------------------------------
    python bench/bench_sparse.py --rows 20k --features 500 --repeats 1        # seconds
    python bench/bench_sparse.py --rows 200k --features 2000 --density 0.01
    python bench/bench_sparse.py --data adult
    python bench/bench_sparse.py --rows 1m --features 2000 --device cuda       # on a GPU

It prints a markdown section (command, machine, a table); ``--json PATH`` also writes every
measurement.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import resource
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

from bench_sizes import _row_count  # noqa: E402  (--rows as bench_sizes reads it)

from gpu_tree.app.machine import machine_info  # noqa: E402
from gpu_tree.app.peers import PEERS, PeerWork  # noqa: E402

TOOLS = ("gpu_tree_sparse", "gpu_tree_dense", "sklearn", "lightgbm", "xgboost")
LABELS = {
    "gpu_tree_sparse": "gpu_tree, CSR input",
    "gpu_tree_dense": "gpu_tree, the same X dense",
}
WARMUP_ROWS = 1000


def words_data(rows: int, features: int, density: float, seed: int):
    """The ``words`` matrix (CSR, float64) and its labels."""
    from scipy import sparse

    rng = np.random.default_rng(seed)
    share = 1.0 / (1.0 + np.arange(features) / 20.0)
    share *= density * features / share.sum()
    share = np.minimum(share, 1.0)
    counts = rng.binomial(rows, share)
    row_index = np.concatenate([rng.choice(rows, size=c, replace=False) for c in counts])
    col_index = np.repeat(np.arange(features), counts)
    values = 1.0 + rng.poisson(0.5, size=row_index.size)
    X = sparse.csr_matrix((values, (row_index, col_index)), shape=(rows, features))
    weights = rng.normal(size=min(50, features))
    score = X[:, : weights.size] @ weights + rng.normal(scale=0.5, size=rows)
    return X, (score > np.median(score)).astype(np.int64)


def adult_data():
    """The adult table, its categorical columns one-hot (CSR: the encoder of the other
    benchmarks, with sparse output), and its labels."""
    import _categorical_data

    dataset = _categorical_data.load_adult()
    encoder = _categorical_data.one_hot_encoder(dataset)
    encoder.set_params(sparse_threshold=1.0, onehot__sparse_output=True)
    X = encoder.fit_transform(_categorical_data.nan_for_none(dataset.X, dataset.categorical))
    labels = np.unique(np.asarray(dataset.y), return_inverse=True)[1]  # XGBoost: 0..k-1
    return X.tocsr().astype(np.float64), labels.astype(np.int64)


def build_data(args):
    if args.data == "adult":
        return adult_data()
    return words_data(args.rows, args.features, args.density, args.seed)


def make_model(tool: str, args):
    """An unfitted estimator of ``tool``, and what it must be given as X."""
    if tool.startswith("gpu_tree"):
        from gpu_tree import DecisionTreeClassifier

        model = DecisionTreeClassifier(
            max_depth=args.depth, max_bins=256, random_state=0, device=args.device
        )
        return model, ("dense" if tool == "gpu_tree_dense" else "csr")
    peer = PEERS[tool]
    work = PeerWork(depth=args.depth, bins=256, seed=0, rows=None)
    return peer.make(work), "csr"


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def run_child(args) -> dict:
    """One tool's measurements, in this process."""
    X, y = build_data(args)
    model, kind = make_model(args.child, args)
    if kind == "dense":
        X = np.ascontiguousarray(X.toarray())
    data_rss = peak_rss_bytes()
    warm = min(WARMUP_ROWS, X.shape[0])
    make_model(args.child, args)[0].fit(X[:warm], y[:warm])
    seconds = []
    for _ in range(args.repeats):
        model = make_model(args.child, args)[0]
        gc.collect()
        start = time.perf_counter()
        model.fit(X, y)
        seconds.append(time.perf_counter() - start)
    result = {
        "tool": args.child,
        "fit_seconds": seconds,
        "fit_median": statistics.median(seconds),
        "train_accuracy": float(np.mean(model.predict(X) == y)),
        "fit_memory_bytes": max(0, peak_rss_bytes() - data_rss),
        "rows": X.shape[0],
        "features": X.shape[1],
    }
    if args.child.startswith("gpu_tree"):
        stored = int(X.nnz) if kind == "csr" else int(np.count_nonzero(X))
        itemsize = np.dtype(model._bin_mapper.bin_dtype_).itemsize
        result["dense_codes_bytes"] = X.shape[0] * X.shape[1] * itemsize
        # indices (int64) and codes per stored value, indptr per row
        result["csr_codes_bytes"] = stored * (8 + itemsize) + 8 * (X.shape[0] + 1)
        result["nodes"] = int(model.tree_.node_count)
    return result


def run_tool(tool: str, args) -> dict | None:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", tool]
    command += ["--data", args.data, "--rows", str(args.rows), "--features", str(args.features)]
    command += ["--density", str(args.density), "--depth", str(args.depth)]
    command += ["--repeats", str(args.repeats), "--seed", str(args.seed)]
    command += ["--device", args.device]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        print(f"note: {tool} failed:\n{done.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def available(tool: str) -> bool:
    return tool.startswith("gpu_tree") or PEERS[tool].available()


def markdown(report: dict) -> str:
    results = report["results"]
    base = next((r["fit_median"] for r in results if r["tool"] == "gpu_tree_sparse"), None)
    lines = [
        f"### Sparse input: {report['data']} ({results[0]['rows']:,} rows x "
        f"{results[0]['features']:,} features, {report['stored']:,} values stored)",
        "",
        f"Command: `{report['command']}`; {report['machine']['cpu_model']}, "
        f"{report['machine']['usable_cores']} cores; median of {report['args']['repeats']} fits.",
        "",
        "| tool | fit s (median) | tool / gpu_tree CSR | train acc % | fit memory MiB | binned data |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        ratio = f"{r['fit_median'] / base:.2f}x" if base else "-"
        binned = (
            f"CSR codes {r['csr_codes_bytes'] / 2**20:.1f} MiB, dense codes "
            f"{r['dense_codes_bytes'] / 2**20:.1f} MiB"
            if "csr_codes_bytes" in r
            else "-"
        )
        label = LABELS.get(r["tool"]) or PEERS[r["tool"]].label
        lines.append(
            f"| {label} | {r['fit_median']:.3f} | {ratio} | {100 * r['train_accuracy']:.2f} "
            f"| {r['fit_memory_bytes'] / 2**20:.0f} | {binned} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", choices=("words", "adult"), default="words")
    parser.add_argument("--rows", type=_row_count, default=100_000)
    parser.add_argument("--features", type=int, default=1000)
    parser.add_argument("--density", type=float, default=0.01)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tools", default=",".join(TOOLS))
    # gpu_tree's device: "cuda" keeps the CSR codes on the GPU (the peers stay on the CPU).
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(run_child(args)))
        return 0
    tools = [t for t in args.tools.split(",") if t]
    unknown = sorted(set(tools) - set(TOOLS))
    if unknown:
        parser.error(f"unknown tools {unknown}; choose from {list(TOOLS)}")
    results = []
    for tool in tools:
        if not available(tool):
            print(f"note: {tool} is not installed; left out", file=sys.stderr)
            continue
        measured = run_tool(tool, args)
        if measured is not None:
            results.append(measured)
    if not results:
        print("no tool ran", file=sys.stderr)
        return 1
    X, _ = build_data(args)
    report = {
        "date": datetime.date.today().isoformat(),
        "command": "python bench/bench_sparse.py " + shlex.join(argv or sys.argv[1:]),
        "machine": machine_info(),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "data": args.data,
        "stored": int(X.nnz),
        "results": results,
    }
    print(markdown(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
