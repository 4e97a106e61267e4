"""What a first run costs on a fresh install: where the compile time goes (issue 44).

Each scenario runs in a child Python with an empty numba cache (``NUMBA_CACHE_DIR`` in a
new temporary folder), as on a fresh install, then once more on the cache the first run
left, as every later run. In the child, numba's ``numba:compile`` events give every
compiled function and signature and how long it took; nested compiles (a kernel's
callees) are counted inside their caller's time and listed under their own names too.

    python bench/first_run.py                      # every scenario, a table
    python bench/first_run.py tree-1000 --json out.json
    python bench/first_run.py --compiled tree-1000   # every kernel compiled, as large fits

The scenarios: ``import`` (``import gpu_tree``); ``tree-1000`` (a depth-5 classifier on
1,000 rows); ``cli-14`` (``gputree train`` on the user guide's 14-row table); ``bench`` (the
quick start's ``gputree bench``, peers included: first minus second is what compiling
cost it); and the first fit of each feature path after ``tree-1000`` in the same process
(``forest``, ``categorical``, ``sparse``, ``absolute-error``), whose compile time is the
path's own. Small fits run their uncompiled kernels as Python (kernels/python_mode.py);
``--compiled`` measures what compiling them costs, as a larger fit pays it.
Seconds are CPU seconds of the child (user + system) and its wall clock; compile seconds
are numba's. Run on a quiet machine, or say that it was loaded.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# The child's code: it records numba's compile events, runs one scenario's stages and
# prints one JSON line.
_CHILD = r"""
import json, os, resource, sys, time

started_wall = time.perf_counter()
import numba.core.event as event

compiles = []
stack = []


class Recorder(event.Listener):
    def on_start(self, ev):
        stack.append(time.process_time())

    def on_end(self, ev):
        began = stack.pop()
        data = ev.data or {}
        dispatcher = data.get("dispatcher")
        name = getattr(getattr(dispatcher, "py_func", None), "__qualname__", str(dispatcher))
        module = getattr(getattr(dispatcher, "py_func", None), "__module__", "")
        compiles.append(
            {
                "function": f"{module}.{name}",
                "signature": str(data.get("args", "")),
                "seconds": time.process_time() - began,
                "nested": len(stack) > 0,
            }
        )


event.register("numba:compile", Recorder())


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


stages = []


def stage(name, run):
    wall, cpu, first = time.perf_counter(), cpu_seconds(), len(compiles)
    run()
    new = compiles[first:]
    stages.append(
        {
            "stage": name,
            "wall_s": time.perf_counter() - wall,
            "cpu_s": cpu_seconds() - cpu,
            "compile_s": sum(c["seconds"] for c in new if not c["nested"]),
            "signatures": len(new),
        }
    )


scenario = sys.argv[1]
state = {}


def import_package():
    import gpu_tree

    state["gpu_tree"] = gpu_tree


def tree_1000():
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 10))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    state["gpu_tree"].DecisionTreeClassifier(max_depth=5).fit(X, y)


def forest():
    import numpy as np

    rng = np.random.default_rng(1)
    X = rng.normal(size=(1000, 10))
    y = (X[:, 0] > 0).astype(int)
    state["gpu_tree"].RandomForestClassifier(n_estimators=5, max_depth=5).fit(X, y)


def categorical():
    import pandas as pd

    frame = pd.DataFrame(
        {
            "outlook": ["sunny", "overcast", "rainy"] * 100,
            "windy": ["yes", "no"] * 150,
            "temp": list(range(300)),
        }
    )
    y = [i % 2 for i in range(300)]
    state["gpu_tree"].DecisionTreeClassifier(max_depth=4).fit(frame, y)


def sparse():
    import numpy as np
    import scipy.sparse

    rng = np.random.default_rng(2)
    X = scipy.sparse.random(1000, 50, density=0.05, format="csr", random_state=2)
    y = rng.integers(0, 2, 1000)
    state["gpu_tree"].DecisionTreeClassifier(max_depth=5).fit(X, y)


def absolute_error():
    import numpy as np

    rng = np.random.default_rng(3)
    X = rng.normal(size=(1000, 10))
    y = X[:, 0] + rng.normal(size=1000)
    state["gpu_tree"].DecisionTreeRegressor(max_depth=5, criterion="absolute_error").fit(X, y)


def cli_14():
    from click.testing import CliRunner

    from gpu_tree.app.cli import main

    folder = os.environ["FIRST_RUN_FOLDER"]
    table = os.path.join(folder, "days.csv")
    with open(table, "w") as f:
        f.write(os.environ["FIRST_RUN_TABLE"])
    result = CliRunner().invoke(
        main, ["train", table, "--target", "play", "--output", os.path.join(folder, "m.json")]
    )
    if result.exit_code != 0:
        raise SystemExit(result.output)


def bench():
    from click.testing import CliRunner

    from gpu_tree.app.cli import main

    result = CliRunner().invoke(main, ["bench"])
    if result.exit_code not in (0, 2):  # 2: the accuracy gate, a verdict on the model
        raise SystemExit(result.output)


PATHS = {
    "forest": forest,
    "categorical": categorical,
    "sparse": sparse,
    "absolute-error": absolute_error,
}
stage("import gpu_tree", import_package)
if scenario == "tree-1000":
    stage("1,000-row tree", tree_1000)
elif scenario == "cli-14":
    stage("gputree train, 14 rows", cli_14)
elif scenario == "bench":
    stage("gputree bench", bench)
elif scenario in PATHS:
    stage("1,000-row tree", tree_1000)
    stage(f"first {scenario} fit", PATHS[scenario])
print(
    json.dumps(
        {
            "scenario": scenario,
            "wall_s": time.perf_counter() - started_wall,
            "cpu_s": cpu_seconds(),
            "stages": stages,
            "compiles": compiles,
        }
    )
)
"""

SCENARIOS = (
    "import",
    "tree-1000",
    "cli-14",
    "forest",
    "categorical",
    "sparse",
    "absolute-error",
    "bench",
)


def readme_table() -> str:
    """The 14-row table of the command-line example (days.csv) of the user guide's page
    on the command line."""
    text = (REPO / "docs" / "guide" / "export_cli.md").read_text()
    opening = "cat > days.csv <<'CSV'\n"
    start = text.index(opening) + len(opening)
    return text[start : text.index("\nCSV", start) + 1]


def run_child(scenario: str, cache: str, folder: str, compiled: bool = False) -> dict:
    env = {
        **os.environ,
        "NUMBA_CACHE_DIR": cache,
        "FIRST_RUN_FOLDER": folder,
        "FIRST_RUN_TABLE": readme_table(),
    }
    if compiled:
        env["GPU_TREE_PYTHON_KERNELS"] = "never"
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, scenario],
        env=env,
        capture_output=True,
        text=True,
        cwd=folder,
    )
    if done.returncode != 0:
        raise RuntimeError(f"scenario {scenario} failed:\n{done.stderr[-3000:]}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    report["process_wall_s"] = time.perf_counter() - started
    return report


def measure(scenario: str, compiled: bool = False) -> dict:
    """The scenario on an empty cache (``first``), then on the cache it left
    (``second``)."""
    with tempfile.TemporaryDirectory(prefix="gpu_tree-first-run-") as folder:
        cache = os.path.join(folder, "numba-cache")
        first = run_child(scenario, cache, folder, compiled)
        second = run_child(scenario, cache, folder, compiled)
    return {"scenario": scenario, "first": first, "second": second}


def top_compiles(report: dict, n: int = 12) -> list[tuple[str, float, int]]:
    """The functions whose compiles took longest (outermost time, nested callees listed
    in their own right), with how many signatures each compiled."""
    seconds: dict[str, float] = {}
    counts: dict[str, int] = {}
    for c in report["compiles"]:
        seconds[c["function"]] = seconds.get(c["function"], 0.0) + c["seconds"]
        counts[c["function"]] = counts.get(c["function"], 0) + 1
    ranked = sorted(seconds.items(), key=lambda item: -item[1])[:n]
    return [(name, s, counts[name]) for name, s in ranked]


def format_table(results: list[dict]) -> str:
    lines = [
        "| scenario | stage | first: CPU s | first: wall s | compile s | signatures "
        "| second: CPU s | second: wall s |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for result in results:
        for first, second in zip(
            result["first"]["stages"], result["second"]["stages"], strict=True
        ):
            lines.append(
                f"| {result['scenario']} | {first['stage']} | {first['cpu_s']:.1f} "
                f"| {first['wall_s']:.1f} | {first['compile_s']:.1f} | {first['signatures']} "
                f"| {second['cpu_s']:.2f} | {second['wall_s']:.2f} |"
            )
    for result in results:
        lines.append("")
        lines.append(f"Longest compiles, {result['scenario']} (inclusive s, signatures):")
        for name, seconds, count in top_compiles(result["first"]):
            lines.append(f"- {name}: {seconds:.1f} s, {count}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", metavar="scenario", help=", ".join(SCENARIOS))
    parser.add_argument("--json", help="also write every measurement to this file")
    parser.add_argument(
        "--compiled",
        action="store_true",
        help="compile every fit's kernels (GPU_TREE_PYTHON_KERNELS=never): what a fit "
        "too large to run its kernels as Python pays",
    )
    args = parser.parse_args(argv)
    unknown = sorted(set(args.scenarios) - set(SCENARIOS))
    if unknown:
        parser.error(f"unknown scenario {', '.join(unknown)}; choose from {', '.join(SCENARIOS)}")
    results = [measure(s, args.compiled) for s in (args.scenarios or SCENARIOS)]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    kernels = "compiled" if args.compiled else "small fits' kernels as Python"
    print(f"first run on an empty numba cache ({kernels}); {os.cpu_count()} CPUs, load {load:.1f}")
    print(format_table(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
