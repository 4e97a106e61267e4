"""Access to the public datasets in ../shared/datasets (absent in a user's fresh clone).

Tests that need them skip where they are absent, except where GPU_TREE_REQUIRE_SHARED_DATA
is set (the project's CI sets it): there a missing dataset fails its test, so that the
real-data tests cannot silently stop running.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from gpu_tree.app.arff import read_arff as _read_arff

SHARED_DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"


def dataset_path(name: str) -> Path:
    """Path of a shared dataset; skips the calling test when it is not there."""
    path = SHARED_DATASETS / name
    if not path.is_file():
        message = f"shared dataset {name} not available ({SHARED_DATASETS} absent)"
        if shared_data_required():
            pytest.fail(f"{message}, and GPU_TREE_REQUIRE_SHARED_DATA is set")
        pytest.skip(message)
    return path


def shared_data_required() -> bool:
    return os.environ.get("GPU_TREE_REQUIRE_SHARED_DATA", "") not in ("", "0")


def read_arff(name: str):
    """(attribute names, rows as lists of strings, None for '?') of a shared ARFF file."""
    names, _, rows = _read_arff(dataset_path(name))
    return names, rows


def numeric_arff(name: str, target: str):
    """X (float64) and y (strings) of an ARFF file whose features are all numeric."""
    names, rows = read_arff(name)
    table = np.array(rows, dtype=object)
    k = names.index(target)
    X = np.delete(table, k, axis=1).astype(np.float64)
    return X, table[:, k].astype(str)


def bench_module(name: str):
    """A helper module of bench/ (its data loaders, shared with the benchmarks), imported
    by file path; skips the calling test outside a source checkout."""
    import importlib.util
    import sys

    path = Path(__file__).resolve().parents[1] / "bench" / f"{name}.py"
    if not path.is_file():
        pytest.skip(f"bench/{name}.py not available (not a source checkout)")
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # before exec: dataclasses look their module up
        spec.loader.exec_module(module)
    return sys.modules[name]
