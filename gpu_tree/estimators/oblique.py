"""Oblique (multivariate) decision trees: scikit-learn estimators whose nodes may split
on a hyperplane ``coefficients @ x <= threshold`` instead of one feature.

How a node is split (gpu_tree.growing.oblique has the details): the best axis-parallel
split is searched first; the node's classes are grouped in two by it (each class goes to
the side holding most of its weight; a regressor's rows by whether their target is above
the midpoint of the two child means); a direction is fitted to that grouping on the
node's standardised rows (``direction``); the rows are projected onto it and the
threshold searched with the same criterion. The oblique split is kept only where it
scores higher than the axis-parallel one (ties: axis-parallel).

The fitted tree is an :class:`gpu_tree.model.oblique.ObliqueTree` in ``tree_``.
``gpu_tree.export_text`` and ``gpu_tree.export_graphviz`` print its oblique splits as
``0.31·x1 − 0.72·x4 ≤ 1.20``; ``save`` / ``gpu_tree.load`` round-trip it. The fit runs
level by level, all the nodes of a level at once, on the CPU (numpy, ``device="cpu"``,
the default) or on the GPU (CuPy, ``device="cuda"``; the CUDA simulator runs the same
code on numpy); ``device="auto"`` picks the GPU where one is usable. Prediction runs on
the CPU. Missing values (NaN) are refused.
"""

from __future__ import annotations

import numbers

import numpy as np

from gpu_tree.backends.cuda import cuda_array_module
from gpu_tree.backends.devices import resolve_device
from gpu_tree.data.validation import (
    check_classification_labels,
    check_sample_weight,
    check_X,
    check_y,
    feature_names_of,
)
from gpu_tree.growing.criteria import check_criterion
from gpu_tree.growing.oblique import (
    CLASSIFIER_DIRECTIONS,
    DEFAULT_ALPHA,
    OBLIQUE_CRITERIA,
    REGRESSOR_DIRECTIONS,
    ObliqueParams,
    grow_oblique_tree,
)
from gpu_tree.model.oblique import checked_oblique_X, refuse_missing_values
from gpu_tree.utils.compat import (
    BaseEstimator,
    ClassifierMixin,
    RegressorMixin,
    check_fitted,
)


def _check_count(name, value, low, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


class _BaseObliqueTree(BaseEstimator):
    _is_classification = True
    _directions = CLASSIFIER_DIRECTIONS

    def _params(self, n_classes) -> ObliqueParams:
        if not isinstance(self.direction, str) or self.direction not in self._directions:
            raise ValueError(
                f"Unknown direction={self.direction!r}; choose one of {list(self._directions)}"
            )
        alpha = self.alpha
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not alpha > 0:
            raise ValueError(f"alpha must be a positive number, got {alpha!r}")
        if not np.isfinite(alpha):
            raise ValueError(f"alpha must be finite, got {alpha!r}")
        criterion = check_criterion(self.criterion, self._is_classification)
        if criterion not in OBLIQUE_CRITERIA:
            raise ValueError(
                f"criterion={criterion!r} is not available for oblique trees; choose one of "
                f"{sorted(OBLIQUE_CRITERIA)}"
            )
        return ObliqueParams(
            direction=self.direction,
            criterion=criterion,
            is_classification=self._is_classification,
            n_classes=n_classes,
            max_depth=_check_count("max_depth", self.max_depth, 0, allow_none=True),
            min_samples_split=_check_count("min_samples_split", self.min_samples_split, 2),
            min_samples_leaf=_check_count("min_samples_leaf", self.min_samples_leaf, 1),
            max_iter=_check_count("direction_max_iter", self.direction_max_iter, 1),
            alpha=float(alpha),
        )

    def _fit(self, X, y, sample_weight):
        names = feature_names_of(X)
        X = check_X(X, estimator_name=type(self).__name__)
        refuse_missing_values(X)
        X = X.astype(np.float64)
        y = check_y(
            y,
            X.shape[0],
            estimator_name=type(self).__name__,
            is_classification=self._is_classification,
        )
        weight = check_sample_weight(sample_weight, X.shape[0])
        if self._is_classification:
            classes, codes = check_classification_labels(y)
            target, n_classes = codes, len(classes)
        else:
            target, n_classes = np.asarray(y, dtype=np.float64), 0
        params = self._params(n_classes)
        device = resolve_device(self.device)
        xp = cuda_array_module() if device == "cuda" else np
        keep = weight > 0  # rows of no weight take no part (nor in the thresholds)
        with np.errstate(divide="ignore", invalid="ignore"):
            tree = grow_oblique_tree(X[keep], target[keep], weight[keep], params, xp)
        if self._is_classification:
            self.classes_, self.n_classes_ = classes, n_classes
        self.n_features_in_ = X.shape[1]
        if names is not None:
            self.feature_names_in_ = np.asarray(names, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.n_outputs_ = 1
        self.device_ = device
        self.tree_ = tree
        return self

    # -- prediction -------------------------------------------------------------------------
    def _check_fitted(self):
        check_fitted(self, hasattr(self, "tree_"))

    def _validate_X_predict(self, X):
        self._check_fitted()
        return checked_oblique_X(self, X)

    def apply(self, X):
        """Index of the leaf each sample ends up in: ndarray of shape (n_samples,).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows, numeric; NaN is refused.

        Returns
        -------
        leaves : ndarray of shape (n_samples,)
            The node index of each row's leaf.
        """
        X = self._validate_X_predict(X)
        return self.tree_.apply(X)

    def decision_path(self, X):
        """Sparse indicator (n_samples, node_count) of the nodes each sample passes through.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows, numeric; NaN is refused.

        Returns
        -------
        indicator : scipy.sparse.csr_matrix of shape (n_samples, node_count)
            1 where a row passes through a node.
        """
        from scipy.sparse import csr_matrix

        X = self._validate_X_predict(X)
        indptr, indices = self.tree_.decision_path_csr(X)
        data = np.ones(indices.size, dtype=np.int64)
        return csr_matrix((data, indices, indptr), shape=(indptr.size - 1, self.tree_.node_count))

    def get_depth(self) -> int:
        """The depth of the tree.

        Returns
        -------
        depth : int
            The depth of the deepest leaf (the root alone: 0).
        """
        self._check_fitted()
        return self.tree_.max_depth

    def get_n_leaves(self) -> int:
        """The number of leaves of the tree.

        Returns
        -------
        n_leaves : int
            The number of leaves.
        """
        self._check_fitted()
        return self.tree_.n_leaves

    def save(self, path):
        """Write the fitted estimator to ``path`` as a versioned JSON model file, atomically
        (a temporary file, then a rename). Read it back with :func:`gpu_tree.load`.

        Parameters
        ----------
        path : str or path-like
            Where to write the model file.
        """
        from gpu_tree.model.file_format.writing import save_model

        save_model(self, path)


class ObliqueDecisionTreeClassifier(ClassifierMixin, _BaseObliqueTree):
    """A decision tree classifier whose nodes may split on a hyperplane.

    Parameters
    ----------
    direction : {"logistic", "perceptron", "svm", "lda"}, default="logistic"
        How a node's hyperplane is fitted to its two groups of classes: L2-regularised
        logistic regression (Newton steps), a batch perceptron (averaged), a linear SVM
        (squared hinge loss, generalised Newton steps starting with lda's direction) or
        Fisher's linear discriminant (closed form). Multiclass nodes group the classes into two by the
        node's best axis-parallel split: each class goes to the side holding most of its
        weight.
    criterion : {"gini", "entropy", "log_loss", "gain_ratio", "cart", "misclassification"}, default="gini"
        The split criterion, for axis-parallel and oblique splits alike.
    max_depth : int or None, default=None
        Deepest level a node may be split at (root is depth 0).
    min_samples_split : int, default=2
        Fewest rows a node needs to be split.
    min_samples_leaf : int, default=1
        Fewest rows each child must keep.
    direction_max_iter : int, default=50
        The most Newton (logistic, svm) or perceptron steps per node.
    alpha : float, default=1e-3
        The ridge penalty of every direction fit (standardised features, weights summing
        to 1).
    random_state : int, RandomState or None, default=None
        Accepted for scikit-learn's interface; the fit draws no random numbers and is
        deterministic.
    device : {"cpu", "cuda", "auto"}, default="cpu"
        Where the fit runs: numpy, or CuPy on an NVIDIA GPU (the CUDA simulator,
        ``NUMBA_ENABLE_CUDASIM=1``, runs the same code on numpy); ``auto``: the GPU where
        one is usable. The tree is the CPU's up to the last bits of the directions (cuBLAS
        and the CPU's BLAS round sums differently). Prediction runs on the CPU.

    Notes
    -----
    An oblique split is kept only where it scores higher by ``criterion`` than the node's
    best axis-parallel split (beyond rounding): ties go to the axis-parallel split.
    ``tree_.n_oblique`` counts the oblique nodes. NaN in X is refused.
    """

    _is_classification = True
    _directions = CLASSIFIER_DIRECTIONS

    def __init__(
        self,
        direction="logistic",
        *,
        criterion="gini",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        direction_max_iter=50,
        alpha=DEFAULT_ALPHA,
        random_state=None,
        device="cpu",
    ):
        self.direction = direction
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.direction_max_iter = direction_max_iter
        self.alpha = alpha
        self.random_state = random_state
        self.device = device

    def fit(self, X, y, sample_weight=None):
        """Build the tree from X (n_samples, n_features) and class labels y (n_samples,).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows, numeric; NaN is refused.
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rows (None: 1 each).

        Returns
        -------
        self
            The fitted estimator.
        """
        return self._fit(X, y, sample_weight)

    def predict_proba(self, X):
        """Weighted class fractions of the leaf each sample reaches: (n_samples, n_classes).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows, numeric; NaN is refused.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            The class fractions of each row's leaf.
        """
        X = self._validate_X_predict(X)
        return self.tree_.predict(X)

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`: (n_samples, n_classes).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows, numeric; NaN is refused.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            The logarithm of :meth:`predict_proba`.
        """
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X):
        """Majority class of the leaf each sample reaches (lowest class index on ties).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows, numeric; NaN is refused.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            The predicted classes.
        """
        proba = self.predict_proba(X)
        return self.classes_.take(np.argmax(proba, axis=1))


class ObliqueDecisionTreeRegressor(RegressorMixin, _BaseObliqueTree):
    """A decision tree regressor whose nodes may split on a hyperplane.

    Parameters
    ----------
    direction : {"least_squares", "logistic", "perceptron", "svm", "lda"}, default="least_squares"
        ``"least_squares"``: the node's ridge regression of the target on the features.
        The others fit the classifier's directions to two groups of rows: those whose
        target is above the midpoint of the two child means of the node's best
        axis-parallel split, and the rest.
    criterion : {"squared_error"}, default="squared_error"
        The split criterion, for axis-parallel and oblique splits alike: the reduction of
        the weighted squared error.
    max_depth : int or None, default=None
        Deepest level a node may be split at (root is depth 0).
    min_samples_split : int, default=2
        Fewest rows a node needs to be split.
    min_samples_leaf : int, default=1
        Fewest rows each child must keep.
    direction_max_iter : int, default=50
        The most Newton (logistic, svm) or perceptron steps per node; least squares and
        lda are closed forms.
    alpha : float, default=1e-3
        The ridge penalty of every direction fit (standardised features, weights summing
        to 1).
    random_state : int, RandomState or None, default=None
        Accepted for scikit-learn's interface; the fit draws no random numbers and is
        deterministic.
    device : {"cpu", "cuda", "auto"}, default="cpu"
        Where the fit runs: numpy, or CuPy on an NVIDIA GPU; ``auto``: the GPU where one
        is usable. The tree is the CPU's up to the last bits of the directions. Prediction
        runs on the CPU.

    Notes
    -----
    An oblique split is kept only where it reduces the squared error more than the
    node's best axis-parallel split (beyond rounding). NaN in X is refused.
    """

    _is_classification = False
    _directions = REGRESSOR_DIRECTIONS

    def __init__(
        self,
        direction="least_squares",
        *,
        criterion="squared_error",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        direction_max_iter=50,
        alpha=DEFAULT_ALPHA,
        random_state=None,
        device="cpu",
    ):
        self.direction = direction
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.direction_max_iter = direction_max_iter
        self.alpha = alpha
        self.random_state = random_state
        self.device = device

    def fit(self, X, y, sample_weight=None):
        """Build the tree from X (n_samples, n_features) and real targets y (n_samples,).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows, numeric; NaN is refused.
        y : array-like of shape (n_samples,)
            Real targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rows (None: 1 each).

        Returns
        -------
        self
            The fitted estimator.
        """
        return self._fit(X, y, sample_weight)

    def predict(self, X):
        """Weighted mean target of the leaf each sample reaches: (n_samples,).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows, numeric; NaN is refused.

        Returns
        -------
        predictions : ndarray of shape (n_samples,)
            The leaves' mean targets.
        """
        X = self._validate_X_predict(X)
        return self.tree_.predict(X)[:, 0]
