"""Issue 44, item 4: each ``gputree`` command imports only what it needs. The command line
and the commands that read a model file (info, export, predict, evaluate) import no
scikit-learn, SciPy, pandas, pyarrow, polars, dask, matplotlib or numba, nor the training
code: importing them made every command take 2-4 s to start. They read the file into
saved models (gpu_tree.model.saved) instead of the estimators, which must predict as the
estimators do; these tests check that too. No timing here (the tests make no timing
assertions): bench/RESULTS.md has the times."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _cli import run_cli

import gpu_tree
from gpu_tree.model import saved
from gpu_tree.model.file_format.registry import ESTIMATORS

# Libraries whose import took seconds, and the library's training layers (with the
# compiled kernels), none of which reading a model file needs.
HEAVY = ("sklearn", "scipy", "pandas", "pyarrow", "polars", "dask", "matplotlib", "numba")
TRAINING = (
    "gpu_tree.estimators",
    "gpu_tree.ensemble",
    "gpu_tree.growing",
    "gpu_tree.backends",
    "gpu_tree.kernels.cpu",
)
SNAPSHOTS = Path(__file__).resolve().parents[1] / "fixtures" / "model_snapshots"

DAYS = """outlook,humidity,wind,play
sunny,85,weak,no
sunny,90,strong,no
overcast,,weak,yes
rain,96,weak,yes
rain,80,weak,yes
rain,70,strong,no
overcast,65,strong,yes
sunny,95,weak,no
sunny,70,weak,yes
rain,80,weak,yes
sunny,70,strong,yes
overcast,90,strong,yes
overcast,75,weak,yes
rain,91,strong,no
"""

# Runs the command line in a fresh process: argv[1], the modules to look for; argv[2],
# the command's arguments (none: only the import); argv[3], where to write which of the
# modules were imported and the command's exit status.
_CHILD = """
import json, sys
watched, args, report = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
from gpu_tree.app.cli import main
status = None
if args:
    try:
        main(args, prog_name="gputree")
    except SystemExit as exit:
        status = exit.code
with open(report, "w") as out:
    json.dump({"status": status, "imported": [m for m in watched if m in sys.modules]}, out)
"""


def _imported_by(tmp_path, *args):
    """Which of HEAVY and TRAINING a fresh process running ``gputree args`` imported."""
    report = tmp_path / "report.json"
    result = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(HEAVY + TRAINING), json.dumps(args), report],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(report.read_text())
    assert found["status"] in (None, 0), result.stderr[-3000:]
    return found["imported"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """days.csv (README's example), a tree and a forest trained on it by the command."""
    folder = tmp_path_factory.mktemp("startup")
    data = folder / "days.csv"
    data.write_text(DAYS)
    for name, options in (("model.json", []), ("forest.json", ["--forest", "5"])):
        result = run_cli("train", data, "-t", "play", "-o", folder / name, *options)
        assert result.exit_code == 0, result.stderr
    return folder


def test_importing_the_command_line_imports_no_heavy_library(tmp_path):
    assert _imported_by(tmp_path) == []


@pytest.mark.parametrize(
    "command",
    [
        ["info", "model.json"],
        ["info", "forest.json", "--tree", "1"],
        ["export", "model.json"],
        ["export", "forest.json", "--tree", "0", "--format", "dot", "-o", "{out}/tree.dot"],
        ["predict", "model.json", "days.csv", "-o", "{out}/predictions.csv", "--proba"],
        ["predict", "forest.json", "days.csv", "-o", "{out}/predictions.csv", "--proba"],
        ["evaluate", "model.json", "days.csv", "-t", "play"],
    ],
    ids=lambda command: " ".join(command[:2]),
)
def test_commands_reading_a_model_import_no_heavy_library(models, tmp_path, command):
    args = [a.format(out=tmp_path) for a in command]
    args = [str(models / a) if (models / a).exists() else a for a in args]
    assert _imported_by(tmp_path, *args) == []


def test_a_large_batch_is_predicted_by_the_kernels_without_the_estimators(models, tmp_path):
    # Past PYTHON_WALK_MAX_STEPS node visits the compiled walk is worth numba's import.
    header, *rows = DAYS.splitlines()
    many = tmp_path / "many.csv"
    many.write_text("\n".join([header, *rows * 1000]) + "\n")  # 14,000 rows, depth 4
    args = ["predict", str(models / "model.json"), str(many), "-o", str(tmp_path / "p.csv")]
    imported = set(_imported_by(tmp_path, *args))
    # numba's first kernel call imports SciPy's BLAS (numba.np.arraymath) where installed.
    assert imported - {"scipy"} == {"numba", "gpu_tree.kernels.cpu"}
    lines = (tmp_path / "p.csv").read_text().splitlines()
    assert len(lines) == 14_001 and lines[1:15] * 1000 == lines[1:]


# -- saved models predict as the estimators do ---------------------------------------------
def _categorical_X(n=300, seed=0):
    """A text category (one unseen in some rows), numbers with NaN, and plain numbers."""
    rng = np.random.default_rng(seed)
    X = np.empty((n, 3), dtype=object)
    X[:, 0] = rng.choice(["red", "green", "blue", "grey"], size=n)
    numbers = rng.normal(size=n)
    numbers[rng.random(n) < 0.15] = np.nan
    X[:, 1] = numbers
    X[:, 2] = rng.normal(size=n)
    return X


def _targets(X, seed=0):
    rng = np.random.default_rng(seed)
    signal = (X[:, 0] == "red") * 1.0 + np.nan_to_num(X[:, 1].astype(float)) + X[:, 2]
    y = np.where(signal + rng.normal(scale=0.5, size=len(X)) > 0.5, "yes", "no")
    return y, signal.astype(float)


def _fitted_models():
    X = _categorical_X()
    labels, amounts = _targets(X)
    numeric = np.asarray(X[:, 1:], dtype=float)
    clean = np.nan_to_num(numeric)
    two = np.column_stack([labels, np.where(amounts > 1, "high", "low")])
    tree = {"categorical_features": [0], "device": "cpu", "max_depth": 6}
    return {
        "binary subsets": (gpu_tree.DecisionTreeClassifier(**tree).fit(X, labels), X),
        "multiway": (
            gpu_tree.DecisionTreeClassifier(
                **tree, categorical_split="multiway", criterion="entropy"
            ).fit(X, labels),
            X,
        ),
        "regressor": (gpu_tree.DecisionTreeRegressor(**tree).fit(X, amounts), X),
        "extra tree": (
            gpu_tree.ExtraTreeClassifier(device="cpu", random_state=1).fit(numeric, labels),
            numeric,
        ),
        "multi-output classifier": (
            gpu_tree.DecisionTreeClassifier(device="cpu", max_depth=5).fit(numeric, two),
            numeric,
        ),
        "multi-output regressor": (
            gpu_tree.DecisionTreeRegressor(device="cpu", max_depth=5).fit(
                numeric, np.column_stack([amounts, -amounts])
            ),
            numeric,
        ),
        "forest classifier": (
            gpu_tree.RandomForestClassifier(n_estimators=7, oob_score=True, **tree).fit(X, labels),
            X,
        ),
        "forest regressor": (
            gpu_tree.RandomForestRegressor(n_estimators=5, n_jobs=1, device="cpu").fit(
                numeric, amounts
            ),
            numeric,
        ),
        "extra trees": (
            gpu_tree.ExtraTreesClassifier(n_estimators=4, device="cpu").fit(numeric, two),
            numeric,
        ),
        "oblique classifier": (
            gpu_tree.ObliqueDecisionTreeClassifier(max_depth=4).fit(clean, labels),
            clean,
        ),
        "oblique regressor": (
            gpu_tree.ObliqueDecisionTreeRegressor(max_depth=4).fit(clean, amounts),
            clean,
        ),
    }


_FITTED = None


def _fitted(name):
    global _FITTED
    if _FITTED is None:
        _FITTED = _fitted_models()
    return _FITTED[name]


def _assert_same_output(a, b):
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _assert_same_output(x, y)
        return
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)  # the same bits, NaN where NaN


@pytest.mark.parametrize("walk", ["python", "compiled"])
@pytest.mark.parametrize(
    "name",
    [
        "binary subsets",
        "multiway",
        "regressor",
        "extra tree",
        "multi-output classifier",
        "multi-output regressor",
        "forest classifier",
        "forest regressor",
        "extra trees",
        "oblique classifier",
        "oblique regressor",
    ],
)
def test_a_saved_model_predicts_as_its_estimator(tmp_path, monkeypatch, name, walk):
    estimator, X = _fitted(name)
    path = tmp_path / "model.json"
    estimator.save(path)
    loaded, stand_in = gpu_tree.load(path), saved.load_saved_model(path)
    assert type(stand_in).__name__ == type(estimator).__name__
    assert stand_in.get_params() == loaded.get_params()
    for attribute in ("n_features_in_", "n_outputs_", "device_", "oob_score_"):
        assert getattr(stand_in, attribute, None) == getattr(loaded, attribute, None)
    for attribute in ("feature_names_in_", "classes_", "n_classes_"):
        _assert_same_output(
            np.asarray(getattr(stand_in, attribute, [])), np.asarray(getattr(loaded, attribute, []))
        )
    if hasattr(loaded, "estimators_"):
        assert [type(e).__name__ for e in stand_in.estimators_] == [
            type(e).__name__ for e in loaded.estimators_
        ]
        for ours, theirs in zip(stand_in.estimators_, loaded.estimators_, strict=True):
            assert ours.get_depth() == theirs.get_depth()
            assert ours.criterion == theirs.criterion
    else:
        assert (stand_in.get_depth(), stand_in.get_n_leaves()) == (
            loaded.get_depth(),
            loaded.get_n_leaves(),
        )
        ours, theirs = (getattr(m, "categories_", None) or [] for m in (stand_in, loaded))
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            assert (a is None and b is None) or np.array_equal(a, b)
    if walk == "compiled":  # every batch through the kernels
        monkeypatch.setattr(saved, "PYTHON_WALK_MAX_STEPS", -1)
    else:
        trees = [e.tree_ for e in getattr(stand_in, "estimators_", [stand_in])]
        assert saved._walks_in_python(trees, X)
    if X.dtype == object:
        X = X.copy()
        X[::13, 0] = "purple"  # a category the fit never saw: the missing rule
    methods = ["predict", "predict_proba", "apply"]
    for method in methods:
        if not hasattr(loaded, method) or (method == "apply" and hasattr(loaded, "estimators_")):
            continue
        _assert_same_output(getattr(stand_in, method)(X), getattr(loaded, method)(X))
    # A wrong X: the same message.
    with pytest.raises(ValueError) as ours:
        stand_in.predict(X[:, :-1])
    with pytest.raises(ValueError) as theirs:
        loaded.predict(X[:, :-1])
    assert str(ours.value) == str(theirs.value)


def test_the_python_walk_reaches_the_kernels_leaves():
    # Subset and multiway splits, NaN (missing), unseen categories, codes out of range.
    from gpu_tree.kernels import walk
    from gpu_tree.kernels.cpu import prediction as cpu_prediction

    assert walk.WALK_NODE_COLUMNS == cpu_prediction.WALK_NODE_COLUMNS
    for name in ("binary subsets", "multiway", "multi-output classifier"):
        estimator, X = _fitted(name)
        fresh = _categorical_X(500, seed=3)  # categories in rows the fit never saw
        if X.dtype != object:
            fresh = np.asarray(fresh[:, 1:], dtype=float)
        else:
            fresh[::13, 0] = "purple"
        X = estimator._validate_X_predict(fresh)
        X[::11, 0] = 97.0  # a code past every category set and branch table
        np.testing.assert_array_equal(saved._leaves(estimator.tree_, X), estimator.tree_.apply(X))


def test_the_saved_models_stand_in_for_every_registered_estimator():
    import gpu_tree.ensemble  # noqa: F401  (registers the forests and trees)

    registered = ESTIMATORS
    assert sorted(saved.REGISTRY.classes) == sorted(registered.classes)
    assert sorted(saved.REGISTRY.tree_estimators) == sorted(registered.tree_estimators)
    assert saved.REGISTRY.codecs == registered.codecs
    for name, estimator_class in registered.classes.items():
        stand_in = saved.REGISTRY.classes[name]
        assert stand_in.__name__ == name
        assert stand_in._is_classification == getattr(estimator_class, "_is_classification", True)
        names = set(inspect.signature(estimator_class.__init__).parameters) - {"self"}
        assert stand_in._parameters == names, name


def test_a_parameter_the_estimator_does_not_take_is_refused_alike(tmp_path):
    """A model file saving a parameter its estimator has no such name for: gpu_tree.load
    and the command line refuse it with the same message."""
    X = np.arange(20.0).reshape(10, 2)
    path = tmp_path / "model.json"
    gpu_tree.DecisionTreeClassifier(max_depth=2).fit(X, np.arange(10) % 2).save(path)
    document = json.loads(path.read_text())
    document["params"]["max_dpth"] = 3
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match="unexpected keyword argument 'max_dpth'") as loaded:
        gpu_tree.load(path)
    with pytest.raises(ValueError) as read:
        saved.load_saved_model(path)
    assert str(read.value) == str(loaded.value)


@pytest.mark.skipif(not SNAPSHOTS.is_dir(), reason="no model snapshots")
def test_the_snapshots_load_as_saved_models_alike(tmp_path):
    import gzip

    paths = sorted(SNAPSHOTS.iterdir())
    assert paths
    for path in paths:
        text = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        model = tmp_path / "model.json"
        model.write_bytes(text)
        loaded, stand_in = gpu_tree.load(model), saved.load_saved_model(model)
        assert type(stand_in).__name__ == type(loaded).__name__, path.name
        assert stand_in.get_params() == loaded.get_params(), path.name
        assert stand_in.get_depth() == loaded.get_depth(), path.name
