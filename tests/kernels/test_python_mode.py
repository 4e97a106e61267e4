"""kernels/python_mode.py: small fits run the kernels that have no compiled code as
Python, and grow the very trees the compiled kernels grow."""

import json
import os
import pickle
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
import scipy.sparse

import gpu_tree
from gpu_tree.kernels import python_mode
from gpu_tree.kernels.cpu import categorical as cpu_categorical
from gpu_tree.kernels.cpu import prediction as cpu_prediction
from gpu_tree.kernels.cpu import subtrees as cpu_subtrees
from gpu_tree.testing import assert_tree_equal

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _data(seed=0, n=300, n_features=5, missing=0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    if missing:
        X[rng.random(X.shape) < missing] = np.nan
    signal = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) ** 2
    return X, signal + 0.3 * rng.normal(size=n)


def _classes(signal, n_classes=2):
    return np.digitize(signal, np.quantile(signal, np.linspace(0, 1, n_classes + 1)[1:-1]))


def _categorical_data(seed=1, n=300):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 9, n)
    other = rng.normal(size=n)
    X = np.column_stack([codes, other, rng.normal(size=n)]).astype(float)
    y = (codes % 3) + (other > 0.5)
    return X, y


def _cases():
    X, signal = _data()
    Xm, signal_m = _data(seed=2, missing=0.15)
    Xc, yc = _categorical_data()
    y2 = _classes(signal)
    y3 = _classes(signal, 3)
    weight = np.random.default_rng(4).uniform(0.2, 3.0, X.shape[0])
    DTC, DTR = gpu_tree.DecisionTreeClassifier, gpu_tree.DecisionTreeRegressor
    return {
        "gini": (DTC(), X, y2, None),
        "entropy, depth 4": (DTC(criterion="entropy", max_depth=4), X, y3, None),
        "gain_ratio": (DTC(criterion="gain_ratio"), X, y3, None),
        "misclassification, weights": (DTC(criterion="misclassification"), X, y2, weight),
        "missing values": (DTC(), Xm, _classes(signal_m, 3), None),
        "exact splitter": (DTC(splitter="exact"), X, y2, None),
        "drawn features": (DTC(max_features=2, random_state=7), X, y3, None),
        "categorical subsets": (DTC(categorical_features=[0]), Xc, yc, None),
        "categorical multiway": (
            DTC(categorical_features=[0], categorical_split="multiway"),
            Xc,
            yc,
            None,
        ),
        "squared_error": (DTR(), X, signal, None),
        "squared_error, weights, missing": (DTR(min_samples_leaf=3), Xm, signal_m, weight),
        "random thresholds": (DTR(splitter="random", random_state=3), X, signal, None),
        "absolute_error": (DTR(criterion="absolute_error", max_depth=5), X, signal, None),
        "poisson": (DTR(criterion="poisson", max_depth=6), X, np.exp(signal / 2), None),
        "monotonic": (DTR(monotonic_cst=[1, 0, 0, 0, 0], max_depth=6), X, signal, None),
        "two outputs": (DTR(max_depth=6), X, np.column_stack([signal, -(signal**2)]), None),
    }


CASES = _cases()


@pytest.mark.parametrize("name", list(CASES))
def test_a_tree_grown_in_python_is_the_compiled_tree(name, monkeypatch):
    estimator, X, y, weight = CASES[name]
    compiled = _clone(estimator).fit(X, y, sample_weight=weight)
    calls = _as_python(monkeypatch)
    in_python = _clone(estimator).fit(X, y, sample_weight=weight)
    assert calls, "no kernel ran as Python"
    assert_tree_equal(in_python.tree_, compiled.tree_)
    np.testing.assert_array_equal(in_python.predict(X), compiled.predict(X))


def test_predictions_walked_in_python_are_the_compiled_ones(monkeypatch):
    X, signal = _data(seed=5, missing=0.1)
    y = _classes(signal, 3)
    tree = gpu_tree.DecisionTreeClassifier(max_depth=6).fit(X, y)
    forest = gpu_tree.RandomForestClassifier(n_estimators=4, max_depth=5, random_state=0)
    forest.fit(X, y)
    sparse = scipy.sparse.csr_matrix(np.nan_to_num(X))
    expected = [
        tree.predict_proba(X),
        tree.apply(X),
        forest.predict_proba(X),
        tree.predict_proba(sparse),
        forest.predict_proba(sparse),
    ]
    calls = _as_python(monkeypatch)
    found = [
        tree.predict_proba(X),
        tree.apply(X),
        forest.predict_proba(X),
        tree.predict_proba(sparse),
        forest.predict_proba(sparse),
    ]
    assert calls
    for got, want in zip(found, expected, strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "forest_class",
    [gpu_tree.RandomForestClassifier, gpu_tree.ExtraTreesRegressor],
    ids=["random forest", "extra trees"],
)
def test_a_forest_grown_in_python_is_the_compiled_forest(forest_class, monkeypatch):
    X, signal = _data(seed=6, n=200, n_features=4, missing=0.05)
    y = _classes(signal, 3) if forest_class is gpu_tree.RandomForestClassifier else signal
    params = dict(n_estimators=3, max_depth=6, random_state=11)
    compiled = forest_class(**params).fit(X, y)
    calls = _as_python(monkeypatch)
    in_python = forest_class(**params).fit(X, y)
    assert calls
    for ours, theirs in zip(in_python.estimators_, compiled.estimators_, strict=True):
        assert_tree_equal(ours.tree_, theirs.tree_)


def test_a_sparse_fit_in_python_is_the_compiled_fit(monkeypatch):
    rng = np.random.default_rng(8)
    X = scipy.sparse.random(300, 12, density=0.2, format="csr", random_state=8)
    y = (np.asarray(X[:, 0].todense()).ravel() > 0.3).astype(int) ^ rng.integers(0, 2, 300) % 2
    compiled = gpu_tree.DecisionTreeClassifier(max_depth=6).fit(X, y)
    calls = _as_python(monkeypatch)
    in_python = gpu_tree.DecisionTreeClassifier(max_depth=6).fit(X, y)
    assert calls
    assert_tree_equal(in_python.tree_, compiled.tree_)


def _as_python(monkeypatch):
    """From here on, every kernel runs as Python inside ``uncompiled_as_python``, compiled
    code or not; returns the list of kernels twinned."""
    monkeypatch.setenv(python_mode.ENVIRONMENT_SWITCH, "auto")
    monkeypatch.setitem(python_mode._spent, "seconds", 0.0)
    monkeypatch.setattr(python_mode, "has_compiled_code", lambda kernel: False)
    calls = []
    real_twin = python_mode.twin

    def counting_twin(kernel):
        calls.append(kernel)
        return real_twin(kernel)

    monkeypatch.setattr(python_mode, "twin", counting_twin)
    return calls


def _clone(estimator):
    return type(estimator)(**estimator.get_params())


# -- when a fit runs its kernels as Python ---------------------------------------------
def test_only_small_fits_outside_the_switch_and_within_the_budget_may(monkeypatch):
    monkeypatch.setenv(python_mode.ENVIRONMENT_SWITCH, "auto")
    monkeypatch.setitem(python_mode._spent, "seconds", 0.0)
    assert python_mode.small_enough(python_mode.PYTHON_MAX_VALUES)
    assert not python_mode.small_enough(python_mode.PYTHON_MAX_VALUES + 1)
    with python_mode.always_compiled():
        assert not python_mode.small_enough(10)
    assert python_mode.small_enough(10)
    monkeypatch.setitem(python_mode._spent, "seconds", python_mode.PYTHON_SECONDS_BUDGET)
    assert not python_mode.small_enough(10)  # the process has paid for a compile by now
    monkeypatch.setitem(python_mode._spent, "seconds", 0.0)
    monkeypatch.setenv(python_mode.ENVIRONMENT_SWITCH, "never")
    assert not python_mode.small_enough(10)


def test_a_wrong_switch_value_is_named(monkeypatch):
    monkeypatch.setenv(python_mode.ENVIRONMENT_SWITCH, "sometimes")
    with pytest.raises(ValueError, match="GPU_TREE_PYTHON_KERNELS is 'sometimes'.*'never'"):
        gpu_tree.DecisionTreeClassifier().fit([[0.0], [1.0]], [0, 1])


def test_the_time_spent_in_python_counts_against_the_budget(monkeypatch):
    monkeypatch.setitem(python_mode._spent, "seconds", 0.0)
    with python_mode.uncompiled_as_python():
        assert python_mode.active()
        with python_mode.uncompiled_as_python():  # nested: counted once, by the outer
            sum(range(200_000))
    assert not python_mode.active()
    assert python_mode._spent["seconds"] > 0.0
    spent = python_mode._spent["seconds"]
    with python_mode.uncompiled_as_python(enabled=False):
        assert not python_mode.active()
    assert python_mode._spent["seconds"] == spent


def test_the_mode_belongs_to_the_thread_that_asked():
    seen = {}
    with python_mode.uncompiled_as_python():
        other = threading.Thread(target=lambda: seen.setdefault("other", python_mode.active()))
        other.start()
        other.join()
        seen["this"] = python_mode.active()
    assert seen == {"this": True, "other": False}


def test_a_kernel_with_compiled_code_runs_it(monkeypatch):
    kernel = cpu_prediction.breadth_first_order
    left = np.array([1, -1, -1])
    right = np.array([2, -1, -1])
    args = (left, right, np.zeros(3, bool), np.array([True, False, False]), 0)
    kernel(*args)  # compiled, or loaded from the cache
    assert python_mode.has_compiled_code(kernel)
    calls = []
    monkeypatch.setattr(python_mode, "twin", lambda k: calls.append(k) or (lambda *a: None))
    with python_mode.uncompiled_as_python():
        np.testing.assert_array_equal(kernel(*args), [0, 1, 2])
    assert calls == []


def test_a_twin_calls_the_twins_of_the_kernels_it_calls():
    finisher = cpu_subtrees.finish_subtrees_numeric.serial
    twin = python_mode.twin(finisher)
    assert twin.__code__ is finisher.py_func.__code__
    callee = twin.__globals__["_compact_feature"]
    assert callee.__code__ is cpu_subtrees._compact_feature.py_func.__code__
    # through a module (``categorical.score_nodes``) and a closure alike
    module = python_mode.twin(cpu_subtrees.categorical)
    assert module.score_nodes.__code__ is cpu_categorical.score_nodes.py_func.__code__
    walk = cpu_prediction._leaf_of_row.py_func
    assert any(hasattr(cell.cell_contents, "signatures") for cell in walk.__closure__)
    cells = [
        cell.cell_contents for cell in python_mode.twin(cpu_prediction._leaf_of_row).__closure__
    ]
    assert not any(hasattr(value, "signatures") for value in cells)


def test_kernels_still_pickle_by_reference():
    kernel = cpu_prediction.breadth_first_order
    assert type(kernel).__name__.startswith("PythonWhenAsked")
    assert pickle.loads(pickle.dumps(kernel)) is kernel


# -- a fresh install ------------------------------------------------------------------
_FRESH = textwrap.dedent(
    """
    import json, sys
    import numba.core.event as event
    import numpy as np

    compiled = []

    class Recorder(event.Listener):
        def on_start(self, ev):
            pass

        def on_end(self, ev):
            compiled.append(ev.data["dispatcher"].py_func.__qualname__)

    event.register("numba:compile", Recorder())
    import pandas as pd
    import gpu_tree

    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 6))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    report = {}
    tree = gpu_tree.DecisionTreeClassifier(max_depth=5).fit(X, y)
    report["tree score"] = float((tree.predict(X) == y).mean())
    forest = gpu_tree.RandomForestClassifier(n_estimators=3, max_depth=4).fit(X, y)
    report["forest score"] = float((forest.predict(X) == y).mean())
    frame = pd.DataFrame({"colour": ["red", "green", "blue"] * 40, "x": np.arange(120.0)})
    gpu_tree.DecisionTreeClassifier(max_depth=3).fit(frame, np.arange(120) % 2)
    report["small fits compiled"] = list(compiled)
    # Outside a fit, a kernel compiles as ever (and the recorder sees it).
    from gpu_tree.kernels.cpu import prediction as cpu_prediction
    cpu_prediction.breadth_first_order(
        np.array([-1]), np.array([-1]), np.zeros(1, bool), np.zeros(1, bool), 0
    )
    report["compiled after"] = compiled[len(report["small fits compiled"]):]
    print(json.dumps(report))
    """
)


def test_a_fresh_install_fits_small_data_without_compiling(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=REPO)
    env[python_mode.ENVIRONMENT_SWITCH] = "auto"
    result = subprocess.run(
        [sys.executable, "-c", _FRESH],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["small fits compiled"] == []
    assert report["tree score"] > 0.9 and report["forest score"] > 0.8
    assert "breadth_first_order" in report["compiled after"]
