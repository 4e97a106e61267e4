"""Oblique (multivariate) trees against axis-parallel ones: leaves, accuracy, fit time.

For each data set and depth limit: gpu_tree's ObliqueDecisionTreeClassifier (each
direction: logistic, perceptron, svm, lda) or ObliqueDecisionTreeRegressor
(least_squares, lda), gpu_tree's axis-parallel DecisionTreeClassifier/Regressor and
scikit-learn's, all with the same max_depth and defaults otherwise, fitted on a 75 %
split (seed 0) and scored on the rest (accuracy, or R² for regression). Fit times are
wall clock, one fit each, after one untimed warm-up fit of gpu_tree's axis-parallel tree
(numba compilation).

Data: a rotated synthetic set (two classes separated by x1 + x2 <= 0 in 10 Gaussian
features, 5,000 rows), breast cancer (scikit-learn's), and from ../shared/datasets
(skipped, with a note, where absent): letter (20,000 x 16, 26 classes), cal_housing
(20,640 x 8, regression) and the HIGGS sample (LightGBM's 7,000 + 500 rows x 28).

How to run (from the repository root)::

    python bench/bench_oblique.py                 # every set, depths 6 and 10
    python bench/bench_oblique.py --sets rotated,breast_cancer --depths 4
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.tree import DecisionTreeClassifier as SklearnClassifier
from sklearn.tree import DecisionTreeRegressor as SklearnRegressor

from gpu_tree import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ObliqueDecisionTreeClassifier,
    ObliqueDecisionTreeRegressor,
)
from gpu_tree.app.arff import read_arff

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"
CLASSIFIER_DIRECTIONS = ("logistic", "perceptron", "svm", "lda")
REGRESSOR_DIRECTIONS = ("least_squares", "lda")


def _arff(name, target):
    names, _, rows = read_arff(SHARED / name)
    table = np.array(rows, dtype=object)
    k = names.index(target)
    return np.delete(table, k, axis=1).astype(np.float64), table[:, k]


def load(name):
    """(X, y, is_classification), or None where the file is absent."""
    if name == "rotated":
        rng = np.random.default_rng(0)
        X = rng.normal(size=(5000, 10))
        return X, (X[:, 1] + X[:, 2] <= 0).astype(int), True
    if name == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
        return X, y, True
    files = {
        "letter": "letter.arff",
        "cal_housing": "cal_housing.arff",
        "higgs": "higgs_subset_lightgbm_train.tsv",
    }
    if not (SHARED / files[name]).is_file():
        return None
    if name == "letter":
        X, y = _arff("letter.arff", "class")
        return X, y.astype(str), True
    if name == "cal_housing":
        X, y = _arff("cal_housing.arff", "medianHouseValue")
        return X, y.astype(np.float64), False
    tables = [
        np.loadtxt(SHARED / f"higgs_subset_lightgbm_{part}.tsv", delimiter="\t")
        for part in ("train", "test")
        if (SHARED / f"higgs_subset_lightgbm_{part}.tsv").is_file()
    ]
    table = np.concatenate(tables)
    return table[:, 1:], table[:, 0].astype(int), True


def models(is_classification, depth):
    if is_classification:
        out = [
            (f"oblique {d}", ObliqueDecisionTreeClassifier(d, max_depth=depth))
            for d in CLASSIFIER_DIRECTIONS
        ]
        out.append(("gpu_tree axis", DecisionTreeClassifier(max_depth=depth, random_state=0)))
        out.append(("sklearn", SklearnClassifier(max_depth=depth, random_state=0)))
    else:
        out = [
            (f"oblique {d}", ObliqueDecisionTreeRegressor(d, max_depth=depth))
            for d in REGRESSOR_DIRECTIONS
        ]
        out.append(("gpu_tree axis", DecisionTreeRegressor(max_depth=depth, random_state=0)))
        out.append(("sklearn", SklearnRegressor(max_depth=depth, random_state=0)))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="rotated,breast_cancer,letter,cal_housing,higgs")
    parser.add_argument("--depths", default="6,10")
    args = parser.parse_args(argv)
    depths = [int(d) for d in args.depths.split(",")]
    warm = np.random.default_rng(1).normal(size=(200, 3))
    DecisionTreeClassifier().fit(warm, warm[:, 0] > 0)
    print("| data | depth | model | leaves | oblique nodes | test score | fit s |")
    print("|---|---|---|---|---|---|---|")
    for name in args.sets.split(","):
        data = load(name)
        if data is None:
            print(f"| {name} | | skipped: not in {SHARED} | | | | |")
            continue
        X, y, is_classification = data
        stratify = y if is_classification else None
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=0.25, random_state=0, stratify=stratify
        )
        for depth in depths:
            for label, model in models(is_classification, depth):
                start = time.perf_counter()
                model.fit(X_train, y_train)
                seconds = time.perf_counter() - start
                tree = model.tree_
                n_oblique = getattr(tree, "n_oblique", 0)
                print(
                    f"| {name} | {depth} | {label} | {model.get_n_leaves()} | {n_oblique} | "
                    f"{model.score(X_test, y_test):.4f} | {seconds:.2f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
