"""
The benchmark figures as charts
===============================

The charts of the :doc:`/benchmarks` page, drawn from the tables that
``bench/readme_figures.py`` writes into that page (between its ``figures`` markers) and
from the first GPU run's record in ``bench/gpu_runs/``: nothing here is typed in, so the
charts follow the figures whenever they are measured again.
"""

import json
import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

# The folder of this script: sphinx-gallery runs it from there, without ``__file__``.
HERE = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
DOCS = HERE.parent
ROOT = DOCS.parent
PAGE = (DOCS / "benchmarks.md").read_text(encoding="utf-8")


def figures_block(name):
    """The text between a block's ``figures`` markers."""
    begin, end = f"<!-- figures:{name} begin -->", f"<!-- figures:{name} end -->"
    return PAGE[PAGE.index(begin) + len(begin) : PAGE.index(end)]


def table(block):
    """A Markdown table's header and rows, each a list of cells."""
    lines = [line for line in block.splitlines() if line.startswith("|")]
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]
    return cells[0], [row for row in cells[2:]]


def ratio(cell):
    """``1.86× (1.78–2.06×)`` -> (1.86, 1.78, 2.06); ``1×`` -> (1, 1, 1)."""
    numbers = [float(n) for n in re.findall(r"\d+(?:\.\d+)?", cell.replace(",", ""))]
    return (numbers[0], min(numbers), max(numbers))


# %%
# Fit time of each peer relative to gpu_tree's (above 1: gpu_tree is faster), the median
# over the runs, with the range over the runs as error bars.

charts = [
    ("cpu-1m", "fit time relative to gpu_tree", "1,000,000 × 28 rows, depth 10"),
    ("full-depth", "relative to gpu_tree", "fully grown, 160,000 rows"),
    ("quick-start", "fit ratio", "gputree bench (the quick start)"),
]
fig, axes = plt.subplots(len(charts), 1, figsize=(9, 8.5))
for ax, (name, column, title) in zip(axes, charts, strict=True):
    header, rows = table(figures_block(name))
    index = header.index(column)
    names = [re.sub(r":.*$", "", row[0]) for row in rows]
    values = np.array([ratio(row[index]) for row in rows])
    errors = np.abs(values[:, 1:].T - values[:, 0])
    ax.barh(names, values[:, 0], xerr=errors, color="tab:blue", capsize=3)
    ax.axvline(1, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("peer fit time / gpu_tree fit time (log scale)")
    print(name, {n: float(v) for n, v in zip(names, values[:, 0], strict=True)})
    assert names[0].startswith("gpu_tree") and values[0, 0] == 1
fig.tight_layout()
plt.show()

# %%
# The first fit on an H200 GPU (1,000,000 × 28 rows, depth 10, from host numpy)
# compiles every CUDA kernel the fit needs; the fits after it read them from the cache.

run = json.loads((ROOT / "bench" / "gpu_runs" / "2026-11-27-h200-first-run.json").read_text())
fits = run["fit_1M_x_28_depth10_gini"]["gpu_fit_host_numpy_s"]
fig, ax = plt.subplots(figsize=(7, 2.6))
labels = ["first fit (compiles)"] + [f"fit {k + 2}" for k in range(len(fits) - 1)]
ax.barh(labels, fits, color=["tab:orange"] + ["tab:green"] * (len(fits) - 1))
ax.set_xscale("log")
ax.invert_yaxis()
ax.set_xlabel("seconds (log scale)")
ax.set_title(f"{run['device'].split(',')[0]}, {run['date']}", fontsize=10)
for y, seconds in enumerate(fits):
    ax.annotate(f"{seconds:g} s", (seconds, y), xytext=(4, -3), textcoords="offset points")
fig.tight_layout()
plt.show()
print(dict(zip(labels, fits, strict=True)))
assert fits[0] > 10 * max(fits[1:])
