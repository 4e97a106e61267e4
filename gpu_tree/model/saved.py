"""A model file's fitted model without its estimator class: what the ``gputree`` command
reads, describes, exports and predicts with.

The estimators derive from scikit-learn's ``BaseEstimator`` where it is installed, so
importing one imports scikit-learn (and SciPy and pandas, which it imports), the training
code and the numba kernels: seconds of every command's start. The classes here stand in
for them after a fit, under the estimator's class name: the model-file loader
(:func:`gpu_tree.model.file_format.reading.model_from_document`, every field checked as
for an estimator) sets the same fitted attributes on them, and they predict a host X (a NumPy
array or a SciPy sparse matrix) as the estimator does: the same checks of X and the same
category codes, messages and tree walks, so the same predictions
(tests/app/test_cli_startup.py compares them for every kind of model). Reading a model needs
no kernel. A small batch (:data:`PYTHON_WALK_MAX_STEPS`) is walked in Python, by the
kernels' own walk uncompiled (``gpu_tree.kernels.walk``: the same leaves); a larger one by
the compiled CPU kernels, imported then (numba, and its first call: about a second).

They do not fit, and take no GPU array. Their parameters (``get_params``) are the file's
and the defaults of those a file leaves out, not checked against the estimator's
signature as :func:`gpu_tree.load` checks them; a forest's trees hold the forest's
``criterion`` and their own ``random_state``.
"""

from __future__ import annotations

import numpy as np

from gpu_tree.data.frames import as_pandas_frame
from gpu_tree.data.predict_input import checked_host_X, coded_for_predict, refuse_device_array
from gpu_tree.kernels.walk import leaf_of_row
from gpu_tree.model.file_format import reading
from gpu_tree.model.file_format.registry import EstimatorRegistry
from gpu_tree.model.oblique import OBLIQUE_CODEC, checked_oblique_X
from gpu_tree.model.tree import (
    forest_lockstep_arrays,
    forest_walk_arrays,
    labels_per_output,
    per_output,
    predict_forest,
    predict_forest_lockstep,
)
from gpu_tree.utils.compat import check_fitted
from gpu_tree.utils.threads import numba_threads

# Up to this many node visits (a dense X's rows times each tree's depth plus one, over the
# trees) a saved model walks its trees in Python: about 2 microseconds a node, 0.1 s at
# most, against a second or more to import numba and load the compiled walk, so that a
# ``gputree predict`` of a few rows never imports numba.
PYTHON_WALK_MAX_STEPS = 50_000


def _walks_in_python(trees, X) -> bool:
    steps = X.shape[0] * sum(tree.max_depth + 1 for tree in trees)
    return isinstance(X, np.ndarray) and steps <= PYTHON_WALK_MAX_STEPS


def _leaves(tree, X) -> np.ndarray:
    """The leaf each row of a dense X reaches in ``tree``, walked in Python."""
    arrays = tree.walk_arrays()
    rows = X.shape[0]
    return np.fromiter((leaf_of_row(X, i, *arrays, 0) for i in range(rows)), np.int64, rows)


class SavedModel:
    """A fitted model read from a model file: its parameters as attributes (and from
    ``get_params``), and the fitted attributes the loader sets."""

    _is_classification = True
    # The parameters a model file leaves out (how a fit is shown; monotonic_cst where
    # None: gpu_tree.model.file_format.writing) and the estimators' defaults of them, which a
    # model loaded by gpu_tree.load has. The oblique trees have neither.
    _unsaved_defaults = {"verbose": 0, "monotonic_cst": None}

    # The estimator's parameter names (set per class below): a file saving any other is
    # refused, as the estimator's constructor refuses it for gpu_tree.load.
    _parameters: frozenset = frozenset()

    def __init__(self, **params):
        for name in params:
            if name not in self._parameters:
                raise TypeError(
                    f"{type(self).__name__}.__init__() got an unexpected keyword argument '{name}'"
                )
        self._params = {**self._unsaved_defaults, **params}
        vars(self).update(self._params)

    def get_params(self, deep=True) -> dict:
        return dict(self._params)

    def _host(self, X):
        return refuse_device_array(self, X)


class _Tree(SavedModel):
    def _check_fitted(self):
        check_fitted(self, hasattr(self, "tree_"))

    def get_depth(self) -> int:
        self._check_fitted()
        return self.tree_.max_depth

    def get_n_leaves(self) -> int:
        self._check_fitted()
        return self.tree_.n_leaves

    def _validate_X_predict(self, X):
        """X checked, and its categorical columns coded, as the tree estimators check a
        host X before predicting."""
        self._check_fitted()
        X = self._host(as_pandas_frame(X))
        return checked_host_X(self, coded_for_predict(self, X))

    def apply(self, X) -> np.ndarray:
        X = self._validate_X_predict(X)
        if _walks_in_python([self.tree_], X):
            return _leaves(self.tree_, X)
        return self.tree_.apply(X)

    def _leaf_values(self, X) -> np.ndarray:
        return self.tree_.values_of(self.apply(X))


class _TreeClassifier(_Tree):
    def predict_proba(self, X):
        values = self._leaf_values(X)
        return values if self.n_outputs_ == 1 else per_output(values, self.n_classes_)

    def predict(self, X) -> np.ndarray:
        codes = self.tree_.classes_of(self.apply(X))
        if self.n_outputs_ > 1:
            return labels_per_output(self.classes_, codes)
        return self.classes_.take(codes)


class _TreeRegressor(_Tree):
    _is_classification = False

    def predict(self, X) -> np.ndarray:
        return self._leaf_values(X)[..., 0]


class _ObliqueTree(_Tree):
    _unsaved_defaults = {}

    def _validate_X_predict(self, X):
        """X checked as the oblique estimators check it (no missing values)."""
        self._check_fitted()
        return checked_oblique_X(self, self._host(X))

    def apply(self, X) -> np.ndarray:
        return self.tree_.apply(self._validate_X_predict(X))

    def _leaf_values(self, X) -> np.ndarray:
        return self.tree_.predict(self._validate_X_predict(X))


class _ObliqueClassifier(_ObliqueTree):
    def predict_proba(self, X) -> np.ndarray:
        return self._leaf_values(X)

    def predict(self, X) -> np.ndarray:
        return self.classes_.take(np.argmax(self.predict_proba(X), axis=1))


class _ObliqueRegressor(_ObliqueTree):
    _is_classification = False

    def predict(self, X) -> np.ndarray:
        return self._leaf_values(X)[:, 0]


class _Forest(SavedModel):
    def _check_fitted(self):
        check_fitted(self, bool(getattr(self, "estimators_", None)))

    def _mean_leaf_values(self, X) -> np.ndarray:
        """The trees' leaf values averaged, (n_samples, n_values), as the forests walk
        a host X (numeric splits of a dense X in lock step, others by the general walk),
        a small batch in Python: per row the trees' values added in order, then divided
        by their number, as the kernels add them (the same bits)."""
        self._check_fitted()
        X = self.estimators_[0]._validate_X_predict(X)
        trees = [estimator.tree_ for estimator in self.estimators_]
        if _walks_in_python(trees, X):
            out = np.zeros((X.shape[0], trees[0].value[0].size))
            for tree in trees:
                out += tree.value.reshape(tree.node_count, -1)[_leaves(tree, X)]
            out /= len(trees)
            return out
        with numba_threads(getattr(self, "n_jobs", None)):
            lockstep = forest_lockstep_arrays(trees) if isinstance(X, np.ndarray) else None
            if lockstep is not None:
                return predict_forest_lockstep(lockstep, X)
            return predict_forest(forest_walk_arrays(trees), X)


class _ForestClassifier(_Forest):
    def predict_proba(self, X):
        values = self._mean_leaf_values(X)
        return values if self.n_outputs_ == 1 else per_output(values, self.n_classes_)

    def predict(self, X) -> np.ndarray:
        proba = self.predict_proba(X)
        if self.n_outputs_ > 1:
            codes = np.column_stack([p.argmax(axis=1) for p in proba])
            return labels_per_output(self.classes_, codes)
        return self.classes_.take(proba.argmax(axis=1))


class _ForestRegressor(_Forest):
    _is_classification = False

    def predict(self, X) -> np.ndarray:
        values = self._mean_leaf_values(X)
        return values[:, 0] if self.n_outputs_ == 1 else values


# The estimator classes a model file may name (gpu_tree.estimators and gpu_tree.ensemble
# register the same names: tests/app/test_cli_startup.py checks it), each by the saved-model
# class that stands in for it; a forest's, with the class name of its trees.
_TREES = {
    "DecisionTreeClassifier": _TreeClassifier,
    "DecisionTreeRegressor": _TreeRegressor,
    "ExtraTreeClassifier": _TreeClassifier,
    "ExtraTreeRegressor": _TreeRegressor,
    "ObliqueDecisionTreeClassifier": _ObliqueClassifier,
    "ObliqueDecisionTreeRegressor": _ObliqueRegressor,
}
_FORESTS = {
    "RandomForestClassifier": (_ForestClassifier, "DecisionTreeClassifier"),
    "RandomForestRegressor": (_ForestRegressor, "DecisionTreeRegressor"),
    "ExtraTreesClassifier": (_ForestClassifier, "DecisionTreeClassifier"),
    "ExtraTreesRegressor": (_ForestRegressor, "DecisionTreeRegressor"),
}


# The estimators' parameter names (tests/app/test_cli_startup.py checks them against their
# signatures): those of every axis-parallel tree, a classifier's own, a forest's own and
# the tree parameters a forest does not take; the oblique trees'.
_TREE_PARAMETERS = frozenset(
    {
        "categorical_features", "categorical_split", "ccp_alpha", "cost_criterion",
        "cost_weight", "criterion", "device", "feature_costs", "max_bins",
        "max_category_subset", "max_depth", "max_features", "max_leaf_nodes",
        "min_impurity_decrease", "min_samples_leaf", "min_samples_split",
        "min_weight_fraction_leaf", "monotonic_cst", "random_state", "splitter", "verbose",
    }
)  # fmt: skip
_CLASSIFIER_PARAMETERS = frozenset({"class_weight", "min_purity"})
_FOREST_PARAMETERS = frozenset(
    {"bootstrap", "max_samples", "n_estimators", "n_jobs", "oob_score", "warm_start"}
)
_NOT_FOREST_PARAMETERS = frozenset({"cost_criterion", "cost_weight", "feature_costs"})
_OBLIQUE_PARAMETERS = frozenset(
    {
        "alpha", "criterion", "device", "direction", "direction_max_iter", "max_depth",
        "min_samples_leaf", "min_samples_split", "random_state",
    }
)  # fmt: skip


def _parameters_of(base: type) -> frozenset:
    if issubclass(base, _ObliqueTree):
        return _OBLIQUE_PARAMETERS
    names = _TREE_PARAMETERS
    if issubclass(base, _Forest):
        names = (names - _NOT_FOREST_PARAMETERS) | _FOREST_PARAMETERS
    return names | _CLASSIFIER_PARAMETERS if base._is_classification else names


def _named(name: str, base: type) -> type:
    """``base`` under an estimator's class name, which messages and ``gputree info`` show,
    with that estimator's parameter names."""
    namespace = {"__module__": __name__, "__qualname__": name, "_parameters": _parameters_of(base)}
    return type(name, (base,), namespace)


CLASSES = {name: _named(name, base) for name, base in _TREES.items()}
CLASSES.update({name: _named(name, base) for name, (base, _) in _FORESTS.items()})


def _tree_estimator(forest, index):
    """Tree ``index`` of ``forest``, unfitted: the loader gives it the fitted state."""
    params = {"random_state": index}
    if hasattr(forest, "criterion"):
        params["criterion"] = forest.criterion
    return CLASSES[_FORESTS[type(forest).__name__][1]](**params)


REGISTRY = EstimatorRegistry(
    classes=CLASSES,
    tree_estimators={name: _tree_estimator for name in _FORESTS},
    codecs={name: OBLIQUE_CODEC for name in _TREES if name.startswith("Oblique")},
)


def model_from_document(document, source="model") -> SavedModel:
    """The saved model a parsed model file describes, checked as
    :func:`gpu_tree.model.file_format.reading.model_from_document` checks an
    estimator's."""
    return reading.model_from_document(document, source, REGISTRY)


def load_saved_model(path) -> SavedModel:
    """The saved model in the model file ``path``; a ``ValueError`` says what is wrong
    with a bad file, as :func:`gpu_tree.load` says it."""
    return model_from_document(reading.read_model_document(path), str(path))
