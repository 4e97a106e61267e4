"""Compile the CPU kernels ahead of time: ``gputree warm-up``, which hands this module the
command line to run (``command``: the ``gputree`` click group).

The Docker image runs this at build time, so that its numba cache holds the kernels and
the container's first ``gputree train`` starts in about a second instead of compiling
for tens. numba compiles one version of a kernel per kind of argument (float or integer
arrays, 8- or 16-bit bin codes, int32 or int64 histograms) and gpu_tree runs the serial
twin of each parallel kernel on small data (``kernels/cpu/launch.py``, ``SERIAL_MAX_ELEMENTS``):
so this trains and predicts through the command line itself, on a small and a large
synthetic file, for classification and regression, with missing values and a
categorical column, binary and multiway splits; and runs ``gputree bench`` (the image's
default command) on a smaller sample. Kinds it does not cover (a model with
sample weights, more than 256 bins) compile on their first use, as without it.

The CUDA kernels are not compiled here: numba compiles them for the GPU it runs on
(its compute capability is part of their cache key), and a ``docker build`` has none.
"""

from __future__ import annotations

import contextlib
import csv
import io
import tempfile
import time
from pathlib import Path

import numpy as np

from gpu_tree.kernels.cpu import launch as cpu_launch
from gpu_tree.kernels.python_mode import always_compiled

COLOURS = ("red", "green", "blue", "grey")
BENCH_ROWS = 200_000


def _write_table(path: Path, n_rows: int, seed: int = 0):
    """Numeric features with missing values, a categorical one and two targets: a class
    label and an amount."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, 4))
    X[rng.random(X.shape) < 0.05] = np.nan
    colour = rng.integers(len(COLOURS), size=n_rows)
    label = np.where(np.nan_to_num(X[:, 0]) + colour > 1.5, "yes", "no")
    amount = np.nan_to_num(X[:, 1]) * 3 + colour
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["a", "b", "c", "d", "colour", "label", "amount"])
        for i in range(n_rows):
            values = ["" if np.isnan(v) else f"{v:.6g}" for v in X[i]]
            writer.writerow([*values, COLOURS[colour[i]], label[i], f"{amount[i]:.6g}"])


def _run(command, *args: str):
    with contextlib.redirect_stdout(io.StringIO()):  # its reports would fill the build log
        code = command(["--quiet", *args], standalone_mode=False)
    if code:
        raise SystemExit(f"gputree {' '.join(args)} failed (status {code})")


@contextlib.contextmanager
def _every_kernel_parallel(wanted: bool):
    """Within it (where ``wanted``), every kernel with a serial twin runs its parallel
    version: kernels whose measured serial time decides (the binning kernels) stay
    serial up to a few milliseconds of work, more than the large file gives them."""
    limit = cpu_launch.SERIAL_MAX_ELEMENTS
    if wanted:
        cpu_launch.SERIAL_MAX_ELEMENTS = -1
    try:
        yield
    finally:
        cpu_launch.SERIAL_MAX_ELEMENTS = limit


def warm_up(command, folder: Path):
    # Small enough for the serial twins, and large enough for the parallel kernels (the
    # kernels over rows alone included); shallow trees, so that it takes seconds.
    large_rows = cpu_launch.SERIAL_MAX_ELEMENTS + 1000
    for n_rows in (200, large_rows):
        data = folder / f"data-{n_rows}.csv"
        _write_table(data, n_rows)
        model = folder / "model.json"
        with _every_kernel_parallel(n_rows == large_rows):
            for target, ignore, extra in (
                ("label", "amount", ()),
                ("label", "amount", ("--categorical-split", "multiway")),
                ("amount", "label", ()),
            ):
                _run(
                    command, "train", str(data), "-t", target, "--ignore", ignore, "-c",
                    "colour", "--device", "cpu", "--max-depth", "6", "-o", str(model), *extra,
                )  # fmt: skip
                _run(
                    command, "predict", str(model), str(data), "-o", str(folder / "predictions.csv")
                )
    # The image's default command: its depth-10 Higgs-shaped fit and its predictions of
    # 50,000 rows (the parallel lock-step walk, which the files above are too small for).
    _run(
        command,
        "bench",
        "--rows",
        str(BENCH_ROWS),
        "--no-peers",
        "--repeats",
        "1",
        "--device",
        "cpu",
    )


def main(command):
    start = time.perf_counter()
    # Its fits are small: compiled all the same, for the runs to come.
    with always_compiled(), tempfile.TemporaryDirectory(prefix="gputree-warm-up-") as folder:
        warm_up(command, Path(folder))
    print(f"gputree: kernels compiled and cached ({time.perf_counter() - start:.0f} s)")
    return 0
