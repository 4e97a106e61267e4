"""Growing oblique trees on the CPU (gpu_tree/growing/oblique.py): the compiled kernels
and the presorted features grow the tree of the array code a GPU runs (CuPy's path, run
here on numpy) up to rounding; the presorted features grow the tree of a sort per node,
and the kernels run as Python (a small fit) the compiled kernels' tree, bit for bit."""

import numpy as np
import pytest

from gpu_tree.growing import oblique
from gpu_tree.growing.oblique import ObliqueParams, grow_oblique_tree

TREE_ARRAYS = ("children_left", "children_right", "feature", "threshold", "coefficients")


class _NumpyAsAnotherDevice:
    """numpy under another name: ``xp is np`` is false, so the growing code takes the
    path it takes for CuPy (einsum, matmul, argsort, cumsum) instead of the CPU kernels."""

    def __getattr__(self, name):
        return getattr(np, name)


def _data(task, seed=5, n=700):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, 4)), 2)  # ties in the values
    weight = rng.integers(1, 4, size=n).astype(float)
    if task == "classification":
        y = (X[:, 0] - 2 * X[:, 1] + 0.3 * rng.normal(size=n) > 0).astype(int) + (X[:, 2] > 1)
        return X, y, weight
    return X, X[:, 0] - 2 * X[:, 1] + 0.1 * rng.normal(size=n), weight


def _params(task, direction):
    classification = task == "classification"
    return ObliqueParams(
        direction=direction,
        criterion="gini" if classification else "squared_error",
        is_classification=classification,
        n_classes=3 if classification else 0,
        max_depth=6,
        min_samples_split=2,
        min_samples_leaf=1,
        max_iter=50,
    )


CASES = [
    ("classification", "logistic"),
    ("classification", "svm"),
    ("classification", "perceptron"),
    ("classification", "lda"),
    ("regression", "least_squares"),
]


@pytest.mark.parametrize(("task", "direction"), CASES)
def test_presorted_features_grow_the_tree_of_a_sort_per_node(monkeypatch, task, direction):
    X, y, weight = _data(task)
    params = _params(task, direction)
    presorted = grow_oblique_tree(X, y, weight, params)
    monkeypatch.setattr(oblique, "_PresortedFeatures", lambda X: None)
    sorted_per_node = grow_oblique_tree(X, y, weight, params)
    assert presorted.n_oblique > 0
    for name in (*TREE_ARRAYS, "value"):
        np.testing.assert_array_equal(
            getattr(presorted, name), getattr(sorted_per_node, name), err_msg=name
        )


@pytest.mark.parametrize(("task", "direction"), CASES)
def test_cpu_kernels_grow_the_tree_of_the_array_code(task, direction):
    """The kernels sum in their own fixed order, BLAS in its own: the same tree, its
    directions and thresholds equal up to rounding (as a GPU's, tests/estimators)."""
    X, y, weight = _data(task)
    params = _params(task, direction)
    kernels = grow_oblique_tree(X, y, weight, params)
    array_code = grow_oblique_tree(X, y, weight, params, xp=_NumpyAsAnotherDevice())
    assert kernels.n_oblique > 0
    for name in ("children_left", "children_right", "feature"):
        np.testing.assert_array_equal(getattr(kernels, name), getattr(array_code, name), name)
    for name in ("threshold", "coefficients", "value"):
        np.testing.assert_allclose(
            getattr(kernels, name), getattr(array_code, name), rtol=1e-9, atol=1e-12
        )


@pytest.mark.parametrize(("task", "direction"), [CASES[0], CASES[1], CASES[4]])
def test_a_small_fit_runs_its_kernels_as_python_with_the_same_tree(monkeypatch, task, direction):
    """A small fit in a fresh environment runs the kernels as Python instead of compiling
    them (kernels/python_mode.py): the compiled kernels' tree, bit for bit."""
    from gpu_tree.kernels import python_mode

    X, y, weight = _data(task, n=150)
    params = _params(task, direction)
    compiled = grow_oblique_tree(X, y, weight, params)
    monkeypatch.setenv(python_mode.ENVIRONMENT_SWITCH, "auto")
    monkeypatch.setitem(python_mode._spent, "seconds", 0.0)
    monkeypatch.setattr(python_mode, "has_compiled_code", lambda kernel: False)
    twinned = []
    real_twin = python_mode.twin
    monkeypatch.setattr(
        python_mode, "twin", lambda kernel: twinned.append(kernel) or real_twin(kernel)
    )
    in_python = grow_oblique_tree(X, y, weight, params)
    assert twinned, "no kernel ran as Python"
    for name in (*TREE_ARRAYS, "value"):
        np.testing.assert_array_equal(getattr(in_python, name), getattr(compiled, name), name)
