"""The models and rows the ONNX and Treelite export tests run through the runtimes:
synthetic data with missing values, a categorical feature and unseen categories, the
shared datasets (adult, cal_housing, letter, the tennis table) where present, oblique
trees on synthetic data and on cal_housing and letter; the runtimes' answers against
gpu_tree's, within the bounds the formats impose."""

from __future__ import annotations

import numpy as np
import pandas as pd
from _shared_data import dataset_path, numeric_arff, read_arff

import gpu_tree

N_CATEGORIES = 6


def mixed_rows(n, seed):
    """(X, y): three numeric columns with 10% missing, a categorical column 3 (codes
    0..5 as floats, some missing), a class y of three classes."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X[:, 3] = rng.integers(0, N_CATEGORIES, n)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = (np.nan_to_num(X[:, 0]) + (np.nan_to_num(X[:, 3]) % 2) > 0.3).astype(int)
    y = y + (X[:, 3] == 2)
    return X, y


def checked_rows(X_train, seed=1):
    """Rows to check a model on: the training rows, held-out rows, rows all missing, and
    rows with categories never seen in training (column 3: 7 and 40)."""
    held_out, _ = mixed_rows(200, seed)
    missing = np.full((5, X_train.shape[1]), np.nan)
    unseen = held_out[:20].copy()
    unseen[:10, 3] = 7.0
    unseen[10:, 3] = 40.0
    return np.vstack([X_train, held_out, missing, unseen])


def synthetic_models():
    """(label, fitted model, X to check): trees, forests and extra trees, classifiers and
    regressors, one and several outputs, subset and multiway category splits."""
    X, y = mixed_rows(400, 0)
    y_reg = 1.5 * y + np.nan_to_num(X[:, 1])
    two = np.column_stack([y, (np.nan_to_num(X[:, 2]) > 0).astype(int)])
    cats = {"categorical_features": [3]}
    rows = checked_rows(X)
    fits = [
        ("tree", gpu_tree.DecisionTreeClassifier(random_state=0, **cats), y),
        (
            "tree_multiway",
            gpu_tree.DecisionTreeClassifier(categorical_split="multiway", random_state=0, **cats),
            y,
        ),
        ("tree_exact", gpu_tree.DecisionTreeClassifier(splitter="exact", max_depth=6, **cats), y),
        ("tree_regressor", gpu_tree.DecisionTreeRegressor(max_depth=8, **cats), y_reg),
        ("extra_tree", gpu_tree.ExtraTreeRegressor(random_state=0, max_depth=8), y_reg),
        ("forest", gpu_tree.RandomForestClassifier(n_estimators=8, random_state=0, **cats), y),
        ("forest_regressor", gpu_tree.RandomForestRegressor(n_estimators=8, random_state=0), y_reg),
        ("extra_trees", gpu_tree.ExtraTreesClassifier(n_estimators=8, random_state=0), y),
        (
            "extra_trees_regressor",
            gpu_tree.ExtraTreesRegressor(n_estimators=8, random_state=0),
            y_reg,
        ),
        (
            "multi_output_classifier",
            gpu_tree.RandomForestClassifier(n_estimators=4, random_state=0),
            two,
        ),
        (
            "multi_output_regressor",
            gpu_tree.DecisionTreeRegressor(max_depth=6),
            np.column_stack([y_reg, -y_reg]),
        ),
    ]
    return [(label, model.fit(X, target), rows) for label, model, target in fits]


def adult():
    """A tree and a small forest on 3,000 adult rows (8 categorical features, missing
    values '?'), and rows to check: those, 1,000 test rows, and test rows whose
    categories were never seen ('Atlantis')."""
    columns = "workclass,education,marital_status,occupation,relationship,race,sex,native_country"
    categorical = columns.split(",")

    def read(name, n):
        frame = pd.read_csv(
            dataset_path(name), nrows=n, skipinitialspace=True, na_values="?", comment="|"
        )
        frame = frame.dropna(subset=["ltgt50k"])
        y = frame.pop("ltgt50k").str.rstrip(".")
        return frame, y

    X, y = read("adult_train.csv", 3000)
    test, _ = read("adult_test.csv", 1000)
    unseen = test.iloc[:50].copy()
    unseen["native_country"] = "Atlantis"
    unseen["occupation"] = "Astronaut"
    rows = pd.concat([X, test, unseen], ignore_index=True)
    tree = gpu_tree.DecisionTreeClassifier(
        max_depth=10, min_samples_leaf=5, categorical_features=categorical
    ).fit(X, y)
    forest = gpu_tree.RandomForestClassifier(
        n_estimators=5, max_depth=8, categorical_features=categorical, random_state=0
    ).fit(X, y)
    return [("adult_tree", tree, rows), ("adult_forest", forest, rows)]


def cal_housing():
    """A regression tree and extra trees on 3,000 cal_housing rows, checked on 1,000
    others."""
    X, y = numeric_arff("cal_housing.arff", "medianHouseValue")
    y = y.astype(np.float64)
    train, rows = slice(0, 3000), slice(0, 4000)
    tree = gpu_tree.DecisionTreeRegressor(max_depth=10).fit(X[train], y[train])
    extra = gpu_tree.ExtraTreesRegressor(n_estimators=5, max_depth=8, random_state=0)
    extra.fit(X[train], y[train])
    return [("cal_housing_tree", tree, X[rows]), ("cal_housing_extra_trees", extra, X[rows])]


def letter():
    """A forest of 26 classes on 2,000 letter rows, checked on 1,000 others."""
    X, y = numeric_arff("letter.arff", "class")
    forest = gpu_tree.RandomForestClassifier(n_estimators=4, max_depth=8, random_state=0)
    forest.fit(X[:2000], y[:2000])
    return [("letter_forest", forest, X[:3000])]


def tennis():
    """The seeds' ID3 tennis tree (a multiway split at the root and below), checked on
    the 14 days and on days with an unseen outlook or a missing value."""
    names, rows = read_arff("play_tennis_weather_nominal.arff")
    table = pd.DataFrame(rows, columns=names)
    X = table[names[:4]]
    model = gpu_tree.DecisionTreeClassifier(
        criterion="entropy", categorical_features=names[:4], categorical_split="multiway"
    ).fit(X, table["play"])
    odd = X.iloc[:4].copy()
    odd.iloc[0, 0] = "foggy"
    odd.iloc[1, 2] = None
    odd.iloc[2, :] = None
    return [("tennis_multiway", model, pd.concat([X, odd], ignore_index=True))]


SHARED = {"adult": adult, "cal_housing": cal_housing, "letter": letter, "tennis": tennis}


def oblique_models():
    """(label, fitted oblique tree, X to check): a 3-class classifier, a binary one with
    integer labels 3 and 7, and a regressor, on the synthetic rows without missing
    values (oblique trees take none), checked on training and held-out rows."""
    X, y = mixed_rows(400, 0)
    X = np.nan_to_num(X)
    rows = np.vstack([X, np.nan_to_num(mixed_rows(200, 1)[0])])
    y_reg = 1.5 * y + X[:, 1] - 0.7 * X[:, 2]
    fits = [
        ("oblique_classifier", gpu_tree.ObliqueDecisionTreeClassifier(max_depth=6), y),
        (
            "oblique_binary",
            gpu_tree.ObliqueDecisionTreeClassifier("lda", max_depth=5),
            np.where(X[:, 0] + X[:, 1] > 0, 7, 3),
        ),
        ("oblique_regressor", gpu_tree.ObliqueDecisionTreeRegressor(max_depth=6), y_reg),
    ]
    return [(label, model.fit(X, target), rows) for label, model, target in fits]


def oblique_shared():
    """Oblique trees on the shared datasets: a regressor on 3,000 cal_housing rows and a
    26-class classifier on 3,000 letter rows, each checked on all the dataset's rows."""
    X, y = numeric_arff("cal_housing.arff", "medianHouseValue")
    regressor = gpu_tree.ObliqueDecisionTreeRegressor(max_depth=8)
    regressor.fit(X[:3000], y[:3000].astype(np.float64))
    X_letter, y_letter = numeric_arff("letter.arff", "class")
    classifier = gpu_tree.ObliqueDecisionTreeClassifier(max_depth=8)
    classifier.fit(X_letter[:3000], y_letter[:3000])
    return [("cal_housing_oblique", regressor, X), ("letter_oblique", classifier, X_letter)]


def gpu_tree_prediction(model, X) -> np.ndarray:
    """What the exports must give, as (n_samples, n_columns): a classifier's
    predict_proba (several outputs' side by side), a regressor's predict."""
    if hasattr(model, "predict_proba"):
        proba = model.predict_proba(X)
        return np.hstack(proba) if isinstance(proba, list) else proba
    return np.asarray(model.predict(X), dtype=np.float64).reshape(np.shape(X)[0], -1)


def model_trees(model) -> list:
    """The trees of a tree estimator (its one) or a forest (its estimators')."""
    return [e.tree_ for e in getattr(model, "estimators_", [model])]


def largest_leaf(model) -> float:
    """The largest |value| of any node of the model's trees."""
    return max(float(np.abs(t.value).max()) for t in model_trees(model))


def float32_bound(model) -> float:
    """How far a float32 export's outputs may be from gpu_tree's: its leaves rounded to
    float32 and added in float32, (n_trees + 2) * 2**-24 * max |leaf value|."""
    return (len(model_trees(model)) + 2) * 2.0**-24 * largest_leaf(model)


def assert_float32_scores_match(model, got, expected, label):
    """The legacy operators' float32 scores of a float64 export against gpu_tree's: the
    leaves added in float64 and the sum rounded once to float32, within 2**-24 of each
    value relative to it, plus a float64 sum's rounding for a forest."""
    assert got.dtype == np.float32, label
    assert got.shape == expected.shape, label
    forest = len(model_trees(model)) * 2.0**-52 * largest_leaf(model)
    excess = np.abs(got - expected) - (2.0**-24 * np.abs(expected) + forest)
    assert excess.max() <= 0, (label, excess.max())


def onnx_outputs(model, X, **options) -> list:
    """onnxruntime's outputs of ``gpu_tree.export_onnx(model, **options)`` on X, the
    scores (the last output) as (n_samples, n_columns)."""
    import onnxruntime

    proto = gpu_tree.export_onnx(model, **options)
    session = onnxruntime.InferenceSession(
        proto.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    inputs = gpu_tree.export_inputs(model, X).astype(options.get("dtype", "float64"))
    outputs = session.run(None, {"X": inputs})
    outputs[-1] = outputs[-1].reshape(outputs[-1].shape[0], -1)
    return outputs


def assert_float64_matches(model, got, expected, label):
    """A runtime's float64 predictions against gpu_tree's: equal for a tree; for a forest,
    within the rounding of a sum in another order, n_trees * 2**-52 * max |leaf value|."""
    trees = model_trees(model)
    if len(trees) == 1:
        np.testing.assert_array_equal(got, expected, err_msg=label)
        return
    assert got.shape == expected.shape, label
    assert np.abs(got - expected).max() <= len(trees) * 2.0**-52 * largest_leaf(model), label
