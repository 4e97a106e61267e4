"""Peak memory of one fit (issue 49): gpu_tree's CPU tree against LightGBM's and XGBoost's
one tree (and scikit-learn's, if asked) on the same rows, each in a fresh child process.

What it measures
----------------
Each tool runs in its own child Python, so that its peak is its own: the child builds
``gpu_tree.datasets.make_higgs_like(rows)`` (float64, as a user's numpy array), imports
the tool, fits the tree once untimed (numba's compiles or cache loads, the peers' first
calls, whose memory is not the fit's), reads its resident set size (the data, the
imports), resets the kernel's record of its peak (``/proc/self/clear_refs``), fits the
depth-``--depth`` tree again on all the rows, and reads the peak since (``VmHWM`` in
``/proc/self/status``). The table gives that peak, what the fit added to the resident
size before it (the fit's own working memory above the data and the imports), and the
fit's seconds. Linux only.

Peers: gpu_tree.app.peers' definitions (one round of the boosters on ``--bins`` bins,
the same depth), ``--n-jobs`` threads for every tool.

    python bench/bench_memory.py                          # 5M × 28, depth 10
    python bench/bench_memory.py --rows 1M --tools gpu_tree,lightgbm --repeats 1

``--repeats`` runs every tool that many times (a fresh child each) and reports the
medians. Memory readings do not depend on the machine's load; the seconds do.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

from bench_sizes import _row_count  # noqa: E402

TOOLS = ("gpu_tree", "lightgbm", "xgboost", "sklearn")

_CHILD = r"""
import gc, json, sys, time
import numpy as np

tool, rows, depth, bins, n_jobs, seed = sys.argv[1], *map(int, sys.argv[2:7])
from gpu_tree.datasets import make_higgs_like

X, y = make_higgs_like(rows, random_state=seed)
if tool == "gpu_tree":
    import numba
    from gpu_tree import DecisionTreeClassifier

    numba.set_num_threads(min(n_jobs, numba.config.NUMBA_NUM_THREADS))
    make = lambda: DecisionTreeClassifier(max_depth=depth, max_bins=bins, device="cpu")
    fit = lambda m, X, y: m.fit(X, y)
else:
    from gpu_tree.app.peers import PEERS, PeerWork

    peer = PEERS[tool]
    work = PeerWork(depth=depth, bins=bins, n_jobs=n_jobs, seed=seed, rows=rows)
    make = lambda: peer.make(work)
    fit = lambda m, X, y: peer.fit(m, X, y, work)
def status_kib(field):
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith(field + ":"))
    return int(line.split()[1])

fit(make(), X, y)
gc.collect()
before = status_kib("VmRSS")
with open("/proc/self/clear_refs", "w") as clear:
    clear.write("5")  # the peak resident size (VmHWM) restarts from the current one
model = make()
start = time.perf_counter()
fit(model, X, y)
seconds = time.perf_counter() - start
peak = status_kib("VmHWM")
print(json.dumps({"peak_before_mib": before / 1024, "peak_after_mib": peak / 1024,
                  "fit_seconds": seconds}))
"""


def run_child(tool: str, args) -> dict:
    command = [sys.executable, "-c", _CHILD, tool]
    command += [str(v) for v in (args.rows, args.depth, args.bins, args.n_jobs, args.seed)]
    env = dict(os.environ, OMP_NUM_THREADS=str(args.n_jobs))
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=3600)
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:]
        return {"status": f"failed: {tail[0] if tail else result.returncode}"}
    return {"status": "ok", **json.loads(result.stdout.strip().splitlines()[-1])}


def measure(args) -> dict:
    results = {}
    for tool in args.tools:
        runs = [run_child(tool, args) for _ in range(args.repeats)]
        ok = [r for r in runs if r["status"] == "ok"]
        if not ok:
            results[tool] = {"status": runs[0]["status"]}
        else:
            results[tool] = {
                "status": "ok",
                "runs": ok,
                **{
                    key: statistics.median(r[key] for r in ok)
                    for key in ("peak_before_mib", "peak_after_mib", "fit_seconds")
                },
            }
        print(f"{tool}: {results[tool]}", file=sys.stderr, flush=True)
    return results


def table(results: dict) -> str:
    ours = results.get("gpu_tree", {})
    lines = [
        "| tool | peak RSS during the fit MiB | added by the fit MiB | fit s | peak / gpu_tree's |",
        "|---|---:|---:|---:|---:|",
    ]
    for tool, r in results.items():
        if r["status"] != "ok":
            lines.append(f"| {tool} | {r['status']} | | | |")
            continue
        ratio = (
            f"{r['peak_after_mib'] / ours['peak_after_mib']:.2f}"
            if ours.get("status") == "ok"
            else "-"
        )
        lines.append(
            f"| {tool} | {r['peak_after_mib']:.0f} | "
            f"{r['peak_after_mib'] - r['peak_before_mib']:.0f} | {r['fit_seconds']:.2f} | "
            f"{ratio} |"
        )
    return "\n".join(lines)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="5M", help="training rows (1M, 5M...)")
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--bins", type=int, default=256)
    parser.add_argument("--tools", default="gpu_tree,lightgbm,xgboost")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="write the measurements here")
    args = parser.parse_args(argv)
    try:
        args.rows = _row_count(args.rows)
    except argparse.ArgumentTypeError as error:
        parser.error(f"--rows: {error}")
    args.tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    unknown = sorted(set(args.tools) - set(TOOLS))
    if unknown:
        parser.error(f"unknown tools {unknown}; choose from {list(TOOLS)}")
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    results = measure(args)
    print(
        f"{args.rows:,} × 28 rows (float64), depth {args.depth}, {args.bins} bins, "
        f"{args.n_jobs} threads, median of {args.repeats} child process(es) per tool; "
        f"load average {os.getloadavg()[0]:.1f}\n"
    )
    print(table(results))
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "results": results}, indent=2))
    return 0 if all(r["status"] == "ok" for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
