"""Real data sets with categorical features, as pandas DataFrames (shared by
bench/bench_categorical.py and tests/integration/test_categorical_real.py).

The files are the public copies in ``../shared/datasets`` beside the checkout (see its
MANIFEST.md); they are read in place, never copied. Every loader gives the whole table
(``X``: categorical columns as Python strings with missing values as ``None`` (ARFF files)
or ``NaN`` (CSV files, as pandas reads them), numeric columns as float64 with NaN) and one
fixed held-out split: adult's own test file, else a stratified 70/30 split with seed 0.

A loader takes ``path_of(file name) -> Path``; the default looks in ``SHARED_DATASETS`` and
raises FileNotFoundError when the file is absent (the tests pass a function that skips).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from gpu_tree.app.arff import read_arff

SHARED_DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"
TEST_SIZE = 0.3
SEED = 0


def shared_path(name: str) -> Path:
    path = SHARED_DATASETS / name
    if not path.is_file():
        raise FileNotFoundError(f"shared dataset {name} not found in {SHARED_DATASETS}")
    return path


@dataclass
class CategoricalDataset:
    name: str
    X: object  # pandas DataFrame, all rows
    y: np.ndarray  # class labels (strings or ints)
    categorical: list[str]  # names of the categorical columns of X
    train: np.ndarray  # row indices of the held-out split
    test: np.ndarray
    split: str  # how train/test were chosen, in words

    @property
    def numeric(self) -> list[str]:
        return [c for c in self.X.columns if c not in self.categorical]

    @property
    def all_categorical(self) -> bool:
        return not self.numeric

    def parts(self):
        """X_train, y_train, X_test, y_test of the held-out split."""
        X = self.X
        return (
            X.iloc[self.train].reset_index(drop=True),
            self.y[self.train],
            X.iloc[self.test].reset_index(drop=True),
            self.y[self.test],
        )


# -- reading ------------------------------------------------------------------------------


def _stratified_split(y: np.ndarray):
    from sklearn.model_selection import train_test_split

    index = np.arange(len(y))
    train, test = train_test_split(index, test_size=TEST_SIZE, random_state=SEED, stratify=y)
    return np.sort(train), np.sort(test)


def load_arff(file: str, target: str, path_of: Callable[[str], Path] = shared_path):
    import pandas as pd

    names, nominal, rows = read_arff(path_of(file))
    frame = pd.DataFrame(rows, columns=names, dtype=object)
    y = frame.pop(target).to_numpy(dtype=str)
    categorical = []
    for name, is_nominal in zip(names, nominal, strict=True):
        if name == target:
            continue
        if is_nominal:
            categorical.append(name)
        else:
            frame[name] = pd.to_numeric(frame[name]).astype(np.float64)
    train, test = _stratified_split(y)
    return CategoricalDataset(
        file.removesuffix(".arff"),
        frame,
        y,
        categorical,
        train,
        test,
        f"stratified {1 - TEST_SIZE:.0%}/{TEST_SIZE:.0%} split, seed {SEED}",
    )


def load_adult(path_of: Callable[[str], Path] = shared_path):
    import pandas as pd

    frames = [
        pd.read_csv(path_of(name), skipinitialspace=True, na_values="?", keep_default_na=False)
        for name in ("adult_train.csv", "adult_test.csv")
    ]
    frame = pd.concat(frames, ignore_index=True)
    y = frame.pop("ltgt50k").str.rstrip(".").to_numpy(dtype=str)  # test labels end in '.'
    categorical = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    numeric = [c for c in frame.columns if c not in categorical]
    frame[numeric] = frame[numeric].astype(np.float64)
    n_train = len(frames[0])
    return CategoricalDataset(
        "adult",
        frame,
        y,
        categorical,
        np.arange(n_train),
        np.arange(n_train, len(frame)),
        "adult_train.csv / adult_test.csv (the data set's own split)",
    )


def _load_csv(file, target, categorical, numeric, path_of):
    import pandas as pd

    frame = pd.read_csv(path_of(file))
    frame = frame[frame[target].notna()].reset_index(drop=True)
    y = frame[target].to_numpy()
    X = frame[categorical + numeric].copy()
    X[numeric] = X[numeric].astype(np.float64)
    train, test = _stratified_split(y)
    return CategoricalDataset(
        file.removesuffix(".csv"),
        X,
        y,
        list(categorical),
        train,
        test,
        f"stratified {1 - TEST_SIZE:.0%}/{TEST_SIZE:.0%} split, seed {SEED}",
    )


def load_titanic(path_of: Callable[[str], Path] = shared_path):
    numeric = ["pclass", "age", "sibsp", "parch", "fare"]
    return _load_csv("titanic_raw.csv", "survived", ["sex", "embarked"], numeric, path_of)


def load_penguins(path_of: Callable[[str], Path] = shared_path):
    numeric = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]
    return _load_csv("penguins.csv", "species", ["island", "sex"], numeric, path_of)


LOADERS: dict[str, Callable] = {
    "adult": load_adult,
    "mushroom": partial(load_arff, "mushroom.arff", "class"),
    "car_evaluation": partial(load_arff, "car_evaluation.arff", "class"),
    "nursery": partial(load_arff, "nursery.arff", "class"),
    "titanic": load_titanic,
    "penguins": load_penguins,
    # TBG is missing in every row; it stays, as a numeric column of NaN only.
    "hypothyroid": partial(load_arff, "hypothyroid.arff", "Class"),
}
DATASETS = tuple(LOADERS)


def load(name: str, path_of: Callable[[str], Path] = shared_path) -> CategoricalDataset:
    return LOADERS[name](path_of)


# -- the one-hot baseline -------------------------------------------------------------------


def one_hot_encoder(dataset: CategoricalDataset):
    """One-hot for the categorical columns (missing is its own indicator column; a category
    unseen in training is all zeros), numeric columns passed through with their NaN (the
    trees of scikit-learn >= 1.3 learn where missing values go)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder

    return ColumnTransformer(
        [
            (
                "onehot",
                OneHotEncoder(handle_unknown="ignore", sparse_output=False),
                dataset.categorical,
            )
        ],
        remainder="passthrough",
        sparse_threshold=0.0,
    )


def one_hot(dataset: CategoricalDataset, X_train, X_test):
    """Dense float arrays of X_train and X_test, the encoder fitted on X_train."""
    encoder = one_hot_encoder(dataset)
    # None and NaN both mean missing; OneHotEncoder wants one of them per column.
    X_train = nan_for_none(X_train, dataset.categorical)
    X_test = nan_for_none(X_test, dataset.categorical)
    return (
        encoder.fit_transform(X_train).astype(np.float64),
        encoder.transform(X_test).astype(np.float64),
    )


def nan_for_none(X, columns):
    X = X.copy()
    for column in columns:
        X[column] = X[column].where(X[column].notna(), np.nan).astype(object)
    return X
