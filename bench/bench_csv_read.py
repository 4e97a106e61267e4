"""CSV reading (issue 18): the command line's reader on a 1,000,000-row file, pyarrow's
multithreaded reader against the csv-module reader it replaced, with pandas.read_csv and
pyarrow.csv.read_csv alone as references; and the start-up time of ``gputree --help``.

The file is written here (never carried): the Higgs-shaped data of
gpu_tree.datasets.make_higgs_like, ``--rows`` rows of 28 numeric columns (written with 6
significant digits, 5 % of one column missing as "NA") plus two text columns (a colour of
4 values, a city of 50) and the label: about 190 MB at 1M rows. Every reader reads every
column, the text ones as categories, as ``gputree train`` does (read_table with each
column a FEATURE: numbers unless a value is text).

Reported: the median of ``--repeats`` reads, wall clock, each reader's time over the
gpu_tree pyarrow path's time (above 1: the reader is slower), and the rows and columns read
(the same for every reader: the tables are compared once, value by value).

    python bench/bench_csv_read.py --rows 1000000 --repeats 3
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from gpu_tree.app import data_io
from gpu_tree.datasets import make_higgs_like


def write_file(path: Path, rows: int) -> None:
    X, y = make_higgs_like(rows, random_state=0)
    rng = np.random.default_rng(1)
    colour = np.array(["red", "green", "blue", "grey"])[rng.integers(0, 4, rows)]
    city = np.array([f"city {k}" for k in range(50)])[rng.integers(0, 50, rows)]
    text = np.char.mod("%.6g", X).astype(object)
    text[rng.random(rows) < 0.05, 3] = "NA"
    header = ",".join([f"f{j}" for j in range(X.shape[1])] + ["colour", "city", "label"])
    with open(path, "w", encoding="utf-8") as out:
        out.write(header + "\n")
        for start in range(0, rows, 100_000):
            stop = min(rows, start + 100_000)
            block = np.column_stack(
                [text[start:stop], colour[start:stop], city[start:stop], y[start:stop]]
            )
            out.write("\n".join(",".join(map(str, row)) for row in block.tolist()) + "\n")


def read_gpu_tree(path: Path, arrow: bool):
    data_io._ARROW_CSV = arrow
    try:
        return data_io.read_table(path, lambda names: [data_io.FEATURE] * len(names))
    finally:
        data_io._ARROW_CSV = True


def read_pandas(path: Path):
    import pandas as pd

    return pd.read_csv(path)


def read_pyarrow(path: Path):
    import pyarrow.csv as pa_csv

    return pa_csv.read_csv(path)


def timed(function, repeats):
    seconds = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        result = function()
        seconds.append(time.perf_counter() - start)
        del result
    return statistics.median(seconds)


def help_seconds(repeats):
    # The installed console script, as a user starts it.
    command = [str(Path(sys.executable).with_name("gputree")), "--help"]
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "higgs_text.csv"
        write_file(path, args.rows)
        size_mb = path.stat().st_size / 1e6
        arrow_table, old_table = read_gpu_tree(path, True), read_gpu_tree(path, False)
        for a, b in zip(arrow_table.columns, old_table.columns, strict=True):
            assert a.name == b.name and a.categorical == b.categorical, a.name
            if a.values.dtype == object:
                assert a.values.tolist() == b.values.tolist(), a.name
            else:
                np.testing.assert_array_equal(a.values, b.values, err_msg=a.name)
        n_categorical = sum(c.categorical for c in arrow_table.columns)
        del arrow_table, old_table
        readers = {"gpu_tree (pyarrow)": lambda: read_gpu_tree(path, True)}
        readers["gpu_tree (csv module, before)"] = lambda: read_gpu_tree(path, False)
        for name, function in (("pandas.read_csv", read_pandas), ("pyarrow alone", read_pyarrow)):
            try:
                function(path)
            except ImportError:
                continue
            readers[name] = lambda function=function: function(path)
        times = {name: timed(function, args.repeats) for name, function in readers.items()}
    print(
        f"{args.rows:,} rows x 31 columns ({n_categorical} categorical), {size_mb:.0f} MB; "
        f"median of {args.repeats}"
    )
    base = times["gpu_tree (pyarrow)"]
    print("| reader | seconds | / gpu_tree (pyarrow) |\n|---|---:|---:|")
    for name, seconds in times.items():
        print(f"| {name} | {seconds:.2f} | {seconds / base:.2f} |")
    print(f"\ngputree --help: {help_seconds(max(5, args.repeats)):.2f} s (median)")


if __name__ == "__main__":
    main()
