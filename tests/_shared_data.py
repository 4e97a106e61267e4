"""Access to the public datasets in ../shared/datasets (absent in a user's fresh clone)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

SHARED_DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"


def dataset_path(name: str) -> Path:
    """Path of a shared dataset; skips the calling test when it is not there."""
    path = SHARED_DATASETS / name
    if not path.is_file():
        pytest.skip(f"shared dataset {name} not available ({SHARED_DATASETS} absent)")
    return path


def read_arff(name: str):
    """(attribute names, rows as lists of strings) of an ARFF file; '?' stays '?'."""
    names, rows, in_data = [], [], False
    with open(dataset_path(name), encoding="utf-8", errors="replace") as handle:
        for line in handle:
            text = line.strip()
            if not text or text.startswith("%"):
                continue
            lowered = text.lower()
            if not in_data:
                if lowered.startswith("@attribute"):
                    names.append(text.split()[1].strip("'\""))
                elif lowered.startswith("@data"):
                    in_data = True
                continue
            rows.extend(csv.reader([text], quotechar="'", skipinitialspace=True))
    return names, rows


def numeric_arff(name: str, target: str):
    """X (float64) and y (strings) of an ARFF file whose features are all numeric."""
    names, rows = read_arff(name)
    table = np.array(rows, dtype=object)
    k = names.index(target)
    X = np.delete(table, k, axis=1).astype(np.float64)
    return X, table[:, k].astype(str)
