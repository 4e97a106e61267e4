"""Distributed fits on Dask (issue 19): gpu_tree.dask against xgboost.dask and
lightgbm.dask, one tree each, from the same Parquet files, on a LocalCluster of 1 and of
2 worker processes.

What it measures
----------------
Data: ``gpu_tree.datasets.make_higgs_like`` (28 float features, binary label), written
once as Parquet partitions of ``--partition-rows`` rows (float32 features ``f00``..
``f27``, int32 ``label``) under ``--data-dir`` (default /tmp/gpu_tree_bench_dask; never
the repository), each partition generated with its own seed (``[seed, partition]``) so
that 10M rows never sit in one process. Later runs with the same rows, partition size
and seed reuse the files.

A *case* is one tool fitted once on one cluster size. Every case gets a fresh
``LocalCluster(n_workers, threads_per_worker=1, processes=True)`` so that its workers'
peak memory is its own. Worker processes get ``NUMBA_NUM_THREADS=1`` and
``OMP_NUM_THREADS=1`` (one thread per worker, for every tool: the peers get ``n_jobs=1``).
In each case:

1. warm-up (untimed): the tool fits 400,000 other rows read from Parquet the same way
   (numba's compilation or cache load on the workers, for the same dtypes and memory
   layout as the timed fit's; the peers' first-call costs);
2. read: ``dask.dataframe.read_parquet`` of the files, X (the 28 feature columns) and y
   persisted on the workers and waited for (``read s``: the same for every tool);
3. fit (``fit s``, wall clock on the client) on the persisted collections;
4. memory: each worker's ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` (the process's
   peak RSS since it started: warm-up, read and fit; its RSS after the warm-up is shown
   as the baseline), and the client's RSS sampled with psutil every 20 ms during read
   and fit (the client process also generated data and ran earlier cases, so its own
   ru_maxrss would say nothing about one case);
5. train accuracy and tree shape (leaves, depth), after the memory readings.

Tools: ``gpu_tree`` (gpu_tree.dask.DecisionTreeClassifier(max_depth, max_bins,
device="cpu")) and the peers of :data:`gpu_tree.app.peers.DASK_PEERS` (xgboost.dask and
lightgbm.dask with the one-round settings of their in-memory twins in
:data:`gpu_tree.app.peers.PEERS`, so every tool grows one tree of the same depth on the
same bins). ``gpu_tree_local`` (1 worker only, ``--reference``) is the in-memory
gpu_tree.DecisionTreeClassifier fitted inside one worker on the same Parquet files read
with pandas: the fit with no Dask in it, timed inside the worker, to show what the
distribution costs.

For gpu_tree.dask the case also records:

* histogram bytes per level: ``distributed_stats_["wire"]`` lists one entry per backend
  call (``histograms``: dense histograms of the nodes built at a level, the smaller
  child of each split, the larger by subtraction; ``compact``: the compact histograms of
  small nodes). Each entry is given the tree level of its call: the script wraps
  ``DistributedBackend._log`` to read the level the fit's counters are at
  (``gpu_tree.utils.fit_stats``; the grower's phase timer enters a level before its
  histogram calls), and the bytes are summed per level;
* where the time goes: the grower's phase seconds per level (``fit_stats_``; measured
  on the client, so they include Dask's round trips) against the seconds the workers
  spent computing each kind of task (``distributed.get_task_stream``: the ``compute``
  intervals of histograms, sum_arrays, partition, compact_histograms, load, build...).

Reported: per tool and cluster size the median fit time over ``--repeats`` cases, the
ratio peer time / gpu_tree time (above 1: gpu_tree is faster), read time, peak RSS per
worker and on the client, train accuracy, leaves and depth; for gpu_tree the bytes per
level and the time split. Load averages (``os.getloadavg``) before and after are printed:
the machine is shared.

How to run (from the repository root)
-------------------------------------
    python bench/bench_dask.py --rows 200k --repeats 1          # a quick check
    python bench/bench_dask.py --rows 10M --repeats 3 --json /tmp/dask10M.json
    python bench/bench_dask.py --rows 1M --workers 2 --tools gpu_tree --repeats 1

It prints a markdown section; ``--markdown PATH`` writes it, ``--json PATH`` every
measurement. ``--model`` prints only the on-paper model of 1B rows on 8 GPUs (given
``--bytes-per-node``), see :func:`paper_model`.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gc
import json
import os
import platform
import shlex
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))  # bytes_model, for the on-paper GPU model

N_FEATURES = 28
FEATURES = [f"f{j:02d}" for j in range(N_FEATURES)]
# The warm-up's rows and partitions are big enough to take the compiled kernels' parallel
# paths (e.g. check_X's from 2**22 values a partition), as the timed fits do.
WARM_UP_ROWS = 400_000
WARM_UP_PARTITION_ROWS = 200_000
CLIENT_SAMPLE_SECONDS = 0.02
# One thread per worker process for every tool: Dask's threads_per_worker=1 says nothing
# to numba's or OpenMP's thread pools, which would otherwise take every core.
WORKER_ENV = {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
TOOLS = ("gpu_tree", "xgboost", "lightgbm")


def parse_rows(text: str) -> int:
    text = text.strip().lower().replace("_", "")
    scale = {"k": 1_000, "m": 1_000_000, "b": 1_000_000_000}.get(text[-1:], 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


# -- the data ---------------------------------------------------------------------------------


def write_parquet(rows: int, partition_rows: int, seed: int, data_dir: Path) -> list[Path]:
    """The Parquet partitions of ``rows`` Higgs-shaped rows (reused when already there)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from gpu_tree.datasets import make_higgs_like

    n_parts = max(2, -(-rows // partition_rows))
    sizes = [rows // n_parts + (1 if i < rows % n_parts else 0) for i in range(n_parts)]
    folder = data_dir / f"higgs_{rows}_p{n_parts}_s{seed}"
    files = [folder / f"part-{i:05d}.parquet" for i in range(n_parts)]
    done = folder / "complete.json"
    if done.is_file() and all(f.is_file() for f in files):
        return files
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    for i, (size, path) in enumerate(zip(sizes, files, strict=True)):
        X, y = make_higgs_like(size, N_FEATURES, random_state=[seed, i], dtype=np.float32)
        columns = {name: X[:, j] for j, name in enumerate(FEATURES)}
        columns["label"] = y.astype(np.int32)
        pq.write_table(pa.table(columns), path)
        del X, y, columns
    done.write_text(json.dumps({"rows": rows, "partitions": n_parts, "seed": seed}))
    print(f"wrote {n_parts} partitions to {folder} in {time.perf_counter() - started:.1f} s")
    return files


def read_persisted(client, files):
    """X and y read from ``files`` by the workers, persisted there."""
    import dask.dataframe as dd
    from distributed import wait

    frame = dd.read_parquet([str(f) for f in files])
    X, y = client.persist([frame[FEATURES], frame["label"]])
    wait([X, y])
    return X, y


# -- memory ----------------------------------------------------------------------------------


def _worker_rss() -> int:
    import psutil

    return psutil.Process().memory_info().rss


def _worker_peak_rss() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


class ClientMemory:
    """The client process's peak RSS while the block runs, sampled with psutil."""

    def __init__(self, interval=CLIENT_SAMPLE_SECONDS):
        import psutil

        self._process = psutil.Process()
        self._interval = interval
        self.peak = 0
        self._stop = threading.Event()

    def _sample(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self._process.memory_info().rss)
            self._stop.wait(self._interval)

    def __enter__(self):
        self.peak = self._process.memory_info().rss
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._process.memory_info().rss)


# -- the tools --------------------------------------------------------------------------------


def peer_work(args):
    from gpu_tree.app.peers import PeerWork

    return PeerWork(depth=args.depth, bins=args.bins, n_jobs=1, seed=args.seed)


def make_model(tool, args, client):
    if tool == "gpu_tree":
        from gpu_tree.dask import DecisionTreeClassifier

        return DecisionTreeClassifier(max_depth=args.depth, max_bins=args.bins, device="cpu")
    from gpu_tree.app.peers import DASK_PEERS

    return DASK_PEERS[tool].make(peer_work(args), client)


def tree_shape(tool, model) -> tuple[int, int]:
    if tool in ("gpu_tree", "gpu_tree_local"):
        return int(model.tree_.n_leaves), int(model.tree_.max_depth)
    from gpu_tree.app.peers import DASK_PEERS

    return DASK_PEERS[tool].tree_shape(model)


def warm_up(tool, args, client, warm_up_files):
    """One untimed fit on small Parquet files, read as the timed fit's are: the same
    dtypes and memory layout (pandas' columns of float32), so that numba's compilations
    (or cache loads) for them happen here."""
    if tool == "gpu_tree_local":
        client.run(_local_fit_in_worker, [str(f) for f in warm_up_files], args.depth, args.bins)
        return
    X, y = read_persisted(client, warm_up_files)
    make_model(tool, args, client).fit(X, y)


def _local_fit_in_worker(files, depth, bins):
    """The in-memory fit inside a worker (no Dask in the fit) of the rows of ``files``:
    its seconds, leaves, depth and train accuracy."""
    import pandas as pd

    from gpu_tree import DecisionTreeClassifier

    frame = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    X = frame[FEATURES].to_numpy()
    y = frame["label"].to_numpy()
    del frame
    started = time.perf_counter()
    model = DecisionTreeClassifier(max_depth=depth, max_bins=bins, device="cpu").fit(X, y)
    seconds = time.perf_counter() - started
    accuracy = float(np.mean(model.predict(X) == y))
    return seconds, int(model.tree_.n_leaves), int(model.tree_.max_depth), accuracy


def task_seconds(task_stream) -> dict:
    """Seconds the workers spent computing each kind of task (by function name), and
    how many there were."""
    from dask.utils import key_split

    totals: dict = {}
    for task in task_stream:
        name = key_split(task["key"])
        seconds = sum(
            s["stop"] - s["start"] for s in task["startstops"] if s["action"] == "compute"
        )
        entry = totals.setdefault(name, {"tasks": 0, "seconds": 0.0})
        entry["tasks"] += 1
        entry["seconds"] += seconds
    return totals


def gpu_tree_details(model, task_stream) -> dict:
    wire = model.distributed_stats_["wire"]
    by_level: dict = {}
    for entry in wire:
        level = by_level.setdefault(entry.get("level"), {"calls": 0})
        kind = entry["kind"] if entry["kind"] in ("histograms", "compact") else "other"
        level[f"{kind}_nodes"] = level.get(f"{kind}_nodes", 0) + entry["n_nodes"]
        level[f"{kind}_bytes"] = level.get(f"{kind}_bytes", 0) + entry["bytes"]
        level["calls"] += 1
    dense = [e for e in wire if e["kind"] == "histograms"]
    phases: dict = {}
    for level in model.fit_stats_:
        for phase, seconds in level["seconds"].items():
            phases[phase] = phases.get(phase, 0.0) + seconds
    return {
        "wire": wire,
        "wire_by_level": {str(k): v for k, v in sorted(by_level.items(), key=lambda kv: kv[0])},
        # A dense call's bytes: each worker's histograms once (to the reduction, or to
        # the client where there is one worker) and the total to the client.
        "dense_bytes_per_node_and_transfer": (
            sum(e["bytes"] for e in dense)
            / max(1, sum(e["n_nodes"] for e in dense))
            / model.distributed_stats_["n_workers"]
        ),
        "levels": len(model.fit_stats_),
        "phase_seconds": phases,
        "task_seconds": task_seconds(task_stream),
    }


def run_case(tool, n_workers, files, warm_up_files, args) -> dict:
    """One fit of ``tool`` on a fresh cluster of ``n_workers`` processes."""
    from distributed import Client, LocalCluster, get_task_stream

    cluster = LocalCluster(
        n_workers=n_workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        memory_limit=args.worker_memory,
        env=WORKER_ENV,
    )
    client = Client(cluster)
    result = {"tool": tool, "workers": n_workers}
    try:
        warm_up(tool, args, client, warm_up_files)
        baseline = client.run(_worker_rss)
        gc.collect()
        if tool == "gpu_tree_local":
            with ClientMemory() as client_memory:
                (seconds, leaves, depth, accuracy) = next(
                    iter(client.run(_local_fit_in_worker, files, args.depth, args.bins).values())
                )
            result.update(read_s=None, fit_s=seconds, leaves=leaves, depth=depth)
            result["train_accuracy"] = accuracy
        else:
            with ClientMemory() as client_memory:
                started = time.perf_counter()
                X, y = read_persisted(client, files)
                result["read_s"] = time.perf_counter() - started
                model = make_model(tool, args, client)
                with get_task_stream(client) as stream:
                    started = time.perf_counter()
                    model.fit(X, y)
                    result["fit_s"] = time.perf_counter() - started
        result["worker_peak_rss"] = sorted(client.run(_worker_peak_rss).values())
        result["worker_baseline_rss"] = sorted(baseline.values())
        result["client_peak_rss"] = client_memory.peak
        if tool != "gpu_tree_local":
            result["leaves"], result["depth"] = tree_shape(tool, model)
            predicted = np.asarray(model.predict(X).compute()).ravel()
            truth = y.compute().to_numpy()
            result["train_accuracy"] = float(np.mean(predicted == truth))
            if tool == "gpu_tree":
                result["gpu_tree"] = gpu_tree_details(model, stream.data)
    finally:
        client.close()
        cluster.close()
    return result


# -- the on-paper model: 1B rows on 8 H100 ---------------------------------------------------


def paper_model(
    rows=1_000_000_000,
    gpus=8,
    depth=10,
    features=N_FEATURES,
    bins=256,
    hist_bytes_per_node=None,
    hbm_gb_s=3000.0,
    link_gb_s=370.0,
    allreduce_latency_s=30e-6,
    host_seconds_per_level=2e-3,
    pcie_gb_s=50.0,
) -> dict:
    """Predicted fit time of one depth-``depth`` tree on ``rows`` rows over ``gpus`` GPUs:
    a model, not a measurement.

    Each GPU holds ``rows / gpus`` rows as uint8 bin codes (feature-major), already
    resident. A level costs, in sequence:

    * device work at ``hbm_gb_s`` (an H100 SXM's achievable streaming bandwidth; atomics
      assumed hidden behind it), two ways from bench/bytes_model.py's counts for those
      rows and a full tree (smaller child: half its parent's rows): ``floor``, its
      one-pass floor (each built row's 28 code bytes, label and node id read once, the
      histograms written once, subtraction, scoring, the partition's code and node id per
      row), and ``as_implemented``, the CUDA backend as it stands (row-list compaction,
      one sweep of list, node ids and labels per feature group);
    * an allreduce of the level's built histograms (``hist_bytes_per_node`` each; the
      larger children come by subtraction after it): ring, 2 (p - 1) / p x bytes over
      ``link_gb_s`` (NVLink 4's achievable NCCL bus bandwidth) plus
      ``allreduce_latency_s``;
    * ``host_seconds_per_level`` of the grower's host work (one round of Python,
      launches and the split decisions' broadcast per level).

    Set-up: one binning pass per GPU (float32 read, uint8 written) at ``hbm_gb_s``; the
    float32 rows' host-to-device copy over PCIe (``pcie_gb_s``) is given apart.
    """
    import bytes_model

    per_gpu = -(-rows // gpus)
    shape = bytes_model.Shape(per_gpu, features, bins, 2)
    if hist_bytes_per_node is None:
        hist_bytes_per_node = shape.node_hist_bytes
    works = bytes_model.assumed_levels(shape, depth)
    bandwidth = hbm_gb_s * 1e9
    table = []
    for lv, work in zip(bytes_model.tree_bytes(shape, works), works, strict=True):
        reduce_bytes = work.n_built * hist_bytes_per_node
        reduce_s = 2 * (gpus - 1) / gpus * reduce_bytes / (link_gb_s * 1e9) + allreduce_latency_s
        table.append(
            {
                "level": work.level,
                "built": work.n_built,
                "built_rows": work.built_rows,
                "floor_bytes": lv.one_pass_floor,
                "floor_s": lv.one_pass_floor / bandwidth,
                "implemented_bytes": lv.as_implemented_total,
                "implemented_s": lv.as_implemented_total / bandwidth,
                "reduce_bytes": reduce_bytes,
                "reduce_s": reduce_s,
                "host_s": host_seconds_per_level,
            }
        )
    binning_s = per_gpu * features * (4 + 1) / bandwidth
    common = binning_s + sum(t["reduce_s"] + t["host_s"] for t in table)
    return {
        "rows": rows,
        "gpus": gpus,
        "rows_per_gpu": per_gpu,
        "depth": depth,
        "hist_bytes_per_node": hist_bytes_per_node,
        "assumptions": {
            "hbm_gb_s": hbm_gb_s,
            "link_gb_s": link_gb_s,
            "allreduce_latency_s": allreduce_latency_s,
            "host_seconds_per_level": host_seconds_per_level,
            "pcie_gb_s": pcie_gb_s,
        },
        "levels": table,
        "binning_s": binning_s,
        "fit_s_floor": common + sum(t["floor_s"] for t in table),
        "fit_s_as_implemented": common + sum(t["implemented_s"] for t in table),
        "host_to_device_s": per_gpu * features * 4 / (pcie_gb_s * 1e9),
    }


def paper_model_markdown(model: dict) -> str:
    a = model["assumptions"]
    lines = [
        f"Model: {model['rows']:,} rows on {model['gpus']} GPUs ({model['rows_per_gpu']:,} "
        f"rows each), depth {model['depth']}; HBM {a['hbm_gb_s']:.0f} GB/s, allreduce "
        f"{a['link_gb_s']:.0f} GB/s + {a['allreduce_latency_s'] * 1e6:.0f} µs, host "
        f"{a['host_seconds_per_level'] * 1e3:.1f} ms per level, "
        f"{model['hist_bytes_per_node']:,} histogram bytes per node.",
        "",
        "| level | built nodes | built rows per GPU | floor GB | floor ms | as implemented GB "
        "| as implemented ms | allreduce MB | allreduce ms | host ms |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for t in model["levels"]:
        lines.append(
            f"| {t['level']} | {t['built']} | {t['built_rows']:,} | {t['floor_bytes'] / 1e9:.2f}"
            f" | {t['floor_s'] * 1e3:.2f} | {t['implemented_bytes'] / 1e9:.2f} | "
            f"{t['implemented_s'] * 1e3:.2f} | {t['reduce_bytes'] / 1e6:.2f} | "
            f"{t['reduce_s'] * 1e3:.3f} | {t['host_s'] * 1e3:.1f} |"
        )
    lines += [
        "",
        f"Binning pass {model['binning_s'] * 1e3:.1f} ms. Predicted fit: "
        f"**{model['fit_s_floor']:.3f} s** at the one-pass floor, "
        f"**{model['fit_s_as_implemented']:.3f} s** with the CUDA backend as it stands "
        f"(host-to-device copy of the float32 rows, apart: {model['host_to_device_s']:.2f} s "
        f"per GPU at {a['pcie_gb_s']:.0f} GB/s).",
    ]
    return "\n".join(lines)


# -- reporting --------------------------------------------------------------------------------


def _gib(n) -> str:
    return f"{n / 2**30:.2f}"


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarize(results, tools, worker_counts) -> list[dict]:
    rows = []
    for n_workers in worker_counts:
        base = _median(
            r["fit_s"] for r in results if r["tool"] == "gpu_tree" and r["workers"] == n_workers
        )
        for tool in tools:
            cases = [r for r in results if r["tool"] == tool and r["workers"] == n_workers]
            if not cases:
                continue
            fit = _median(r["fit_s"] for r in cases)
            rows.append(
                {
                    "tool": tool,
                    "workers": n_workers,
                    "runs": len(cases),
                    "fit_s": fit,
                    "fit_s_all": [r["fit_s"] for r in cases],
                    "ratio": None if base is None or tool == "gpu_tree" else fit / base,
                    "read_s": _median(r["read_s"] for r in cases),
                    "worker_peak_rss": max(max(r["worker_peak_rss"]) for r in cases),
                    "worker_baseline_rss": max(max(r["worker_baseline_rss"]) for r in cases),
                    "client_peak_rss": max(r["client_peak_rss"] for r in cases),
                    "train_accuracy": cases[-1]["train_accuracy"],
                    "leaves": cases[-1]["leaves"],
                    "depth": cases[-1]["depth"],
                }
            )
    return rows


LABELS = {
    "gpu_tree": "gpu_tree.dask DecisionTreeClassifier",
    "gpu_tree_local": "gpu_tree in memory, inside one worker (reference)",
}


def _label(tool):
    if tool in LABELS:
        return LABELS[tool]
    from gpu_tree.app.peers import DASK_PEERS

    return DASK_PEERS[tool].label


def markdown(report) -> str:
    args = report["args"]
    out = [
        f"## {report['date']} · Dask fits, {args['rows']:,} × {N_FEATURES}, depth "
        f"{args['depth']}, {args['bins']} bins · {report['machine']}",
        "",
        f"Command: `{report['command']}`. Versions: {report['versions']}.",
        f"Load average (1, 5, 15 min) before {report['load_before']}, after "
        f"{report['load_after']}; {report['elapsed_s'] / 60:.1f} min in all.",
        "",
        "| workers | tool | fit s (median) | runs | fit / gpu_tree | read s | peak RSS per "
        "worker GiB (baseline) | client peak GiB | train acc % | leaves | depth |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in report["summary"]:
        ratio = (
            "1.00×"
            if r["tool"] == "gpu_tree"
            else ("–" if r["ratio"] is None else f"{r['ratio']:.2f}×")
        )
        read = "–" if r["read_s"] is None else f"{r['read_s']:.1f}"
        runs = ", ".join(f"{v:.2f}" for v in r["fit_s_all"])
        out.append(
            f"| {r['workers']} | {_label(r['tool'])} | {r['fit_s']:.2f} | {runs} | {ratio} | "
            f"{read} | {_gib(r['worker_peak_rss'])} ({_gib(r['worker_baseline_rss'])}) | "
            f"{_gib(r['client_peak_rss'])} | {100 * r['train_accuracy']:.2f} | {r['leaves']} | "
            f"{r['depth']} |"
        )
    last = {r["workers"]: r for r in report["results"] if r["tool"] == "gpu_tree"}
    for r in last.values():  # the last repeat's details
        g = r["gpu_tree"]
        out += [
            "",
            f"gpu_tree.dask, {r['workers']} worker(s), fit {r['fit_s']:.2f} s (last repeat): "
            f"bytes gathered per level ({g['dense_bytes_per_node_and_transfer']:,.0f} bytes "
            "per dense node and transfer)",
            "",
            "| level | dense nodes | dense bytes | compact nodes | compact bytes | other bytes "
            "| calls |",
            "|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for level, v in g["wire_by_level"].items():
            out.append(
                f"| {level} | {v.get('histograms_nodes', 0)} | {v.get('histograms_bytes', 0):,} "
                f"| {v.get('compact_nodes', 0)} | {v.get('compact_bytes', 0):,} | "
                f"{v.get('other_bytes', 0):,} | {v['calls']} |"
            )
        phases = ", ".join(f"{k} {v:.2f}" for k, v in g["phase_seconds"].items())
        tasks = ", ".join(
            f"{k} {v['seconds']:.2f} ({v['tasks']})"
            for k, v in sorted(g["task_seconds"].items(), key=lambda kv: -kv[1]["seconds"])
        )
        out += [
            "",
            f"Grower phases on the client (s, all levels): {phases}.",
            f"Worker compute by task (s, (tasks)): {tasks}.",
        ]
    return "\n".join(out)


def versions() -> str:
    import dask
    import distributed

    import gpu_tree

    parts = [f"python {platform.python_version()}", f"numpy {np.__version__}"]
    parts += [f"dask {dask.__version__}", f"distributed {distributed.__version__}"]
    for module in ("xgboost", "lightgbm"):
        with contextlib.suppress(ImportError):
            parts.append(f"{module} {__import__(module).__version__}")
    parts.append(f"gpu_tree {gpu_tree.__version__}")
    return ", ".join(parts)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="1M", help="training rows (200k, 1M, 10M...)")
    parser.add_argument("--partition-rows", default="500k", help="rows per Parquet file")
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--bins", type=int, default=256)
    parser.add_argument("--workers", default="1,2", help="cluster sizes, comma separated")
    parser.add_argument("--tools", default=",".join(TOOLS), help="of " + ", ".join(TOOLS))
    parser.add_argument(
        "--reference",
        action="store_true",
        help="also fit gpu_tree in memory inside one worker (1-worker clusters)",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", default="/tmp/gpu_tree_bench_dask")
    parser.add_argument(
        "--worker-memory", default="auto", help="LocalCluster memory_limit per worker"
    )
    parser.add_argument("--json", help="write every measurement here")
    parser.add_argument("--markdown", help="write the markdown section here")
    parser.add_argument(
        "--model",
        action="store_true",
        help="print only the on-paper model of 1B rows on 8 H100 and exit",
    )
    parser.add_argument(
        "--bytes-per-node",
        type=int,
        default=None,
        help="histogram bytes per node for the model's allreduce (default: the CUDA "
        "backend's int32 histograms)",
    )
    parser.add_argument(
        "--warm-up-rows",
        default=str(WARM_UP_ROWS),
        help="rows of the untimed warm-up fit in each case (compiles the kernels first)",
    )
    parser.add_argument(
        "--reduction",
        choices=["tree", "client"],
        default="tree",
        help="how gpu_tree.dask sums the workers' histograms: a tree reduction on the "
        "workers (the default) or every worker's histograms to the client",
    )
    args = parser.parse_args(argv)
    from gpu_tree.dask.backend import DistributedBackend

    DistributedBackend.reduction = args.reduction
    if args.model:
        print(paper_model_markdown(paper_model(hist_bytes_per_node=args.bytes_per_node)))
        return
    args.rows = parse_rows(args.rows)
    args.partition_rows = parse_rows(args.partition_rows)
    tools = [t for t in args.tools.split(",") if t]
    unknown = set(tools) - set(TOOLS)
    if unknown:
        parser.error(f"unknown tools {sorted(unknown)}; known: {', '.join(TOOLS)}")
    worker_counts = [int(w) for w in args.workers.split(",")]
    files = write_parquet(args.rows, args.partition_rows, args.seed, Path(args.data_dir))
    warm_up_rows = parse_rows(args.warm_up_rows)
    warm_up_files = write_parquet(
        warm_up_rows, min(warm_up_rows, WARM_UP_PARTITION_ROWS), args.seed + 1, Path(args.data_dir)
    )

    load_before = os.getloadavg()
    started = time.perf_counter()
    results = []
    for repeat in range(args.repeats):
        for n_workers in worker_counts:
            case_tools = list(tools)
            if args.reference and n_workers == 1:
                case_tools.append("gpu_tree_local")
            for tool in case_tools:
                result = run_case(tool, n_workers, files, warm_up_files, args)
                result["repeat"] = repeat
                results.append(result)
                print(
                    f"repeat {repeat}, {n_workers} worker(s), {tool}: fit {result['fit_s']:.2f} s,"
                    f" worker peak {[_gib(v) for v in result['worker_peak_rss']]} GiB, "
                    f"accuracy {result['train_accuracy']:.4f}, leaves {result['leaves']}, "
                    f"load {os.getloadavg()[0]:.2f}",
                    flush=True,
                )
                if args.json:  # so far: a run cut short keeps its cases
                    Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    all_tools = tools + (["gpu_tree_local"] if args.reference else [])
    report = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
        "machine": f"{os.cpu_count()}-core {platform.machine()}",
        "command": "python bench/bench_dask.py "
        + shlex.join(sys.argv[1:] if argv is None else argv),
        "versions": versions(),
        "args": vars(args),
        "load_before": tuple(round(v, 2) for v in load_before),
        "load_after": tuple(round(v, 2) for v in os.getloadavg()),
        "elapsed_s": time.perf_counter() - started,
        "results": results,
        "summary": summarize(results, all_tools, worker_counts),
    }
    text = markdown(report)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
